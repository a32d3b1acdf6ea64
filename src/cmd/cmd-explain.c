/*
 * gpudoctor explain: what a finding means, how it is detected (with the thresholds in force),
 * and how to fix it. Also lists the catalogue and prints it as Markdown (docs/rules.md).
 */
#include "cmd/cmd.h"
#include "render/text.h"
#include "rules/config.h"
#include "rules/docs.h"
#include "rules/rules.h"
#include "rules/suggest.h"
#include "util/xalloc.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

enum { OPT_LIST = OPT__COMMON_END, OPT_MARKDOWN, OPT_THRESHOLDS, OPT_SET };

static void usage(FILE *out)
{
    fputs("Usage: gpudoctor explain [options] ID\n"
          "       gpudoctor explain --list\n"
          "       gpudoctor explain --thresholds\n"
          "       gpudoctor explain --markdown\n"
          "\n"
          "Explain a finding of 'gpudoctor check': what it means, how it is detected and\n"
          "with which thresholds (their values now, after the config file), and how to fix\n"
          "it.\n"
          "\n"
          "Options:\n"
          "  --list            every rule: id, severity, title\n"
          "  --thresholds      every threshold: value now, default, meaning\n"
          "  --markdown        the whole catalogue as Markdown (docs/rules.md); with\n"
          "                    --thresholds, the threshold table of docs/config.md\n"
          "  --config FILE     read thresholds from FILE (default /etc/gpudoctor.conf)\n"
          "  --set KEY=VALUE   override one threshold (repeatable)\n"
          "  -h, --help        show this help\n"
          "\n"
          "Exit status: 0 explained, 3 output could not be written, 64 unknown id or usage\n"
          "error.\n",
          out);
}

static void section(FILE *out, const struct render_opts *ro, const char *head, const char *text)
{
    fprintf(out, "\n%s%s%s\n  ", render_bold(ro), head, render_reset(ro));
    render_wrap(out, ro, 2, 2, text);
}

static void threshold_line(FILE *out, const struct thresholds *th, int id)
{
    char now[48], def[48];

    threshold_format(now, sizeof(now), id, th->v[id]);
    threshold_format(def, sizeof(def), id, threshold_defs[id].def);
    fprintf(out, "  %s = %s", threshold_defs[id].name, now);
    if (th->origin[id])
        fprintf(out, " (set in %s; default %s)\n", th->origin[id], def);
    else
        fprintf(out, " (default)\n");
}

static void explain_rule(const struct rule *r, const struct config *cfg)
{
    struct render_opts ro;

    render_opts_init(&ro, stdout, RENDER_AUTO, 0, RENDER_NEVER);
    printf("%s%s%s — %s\n", render_bold(&ro), r->id, render_reset(&ro), r->title);
    printf("severity: %s, category: %s%s\n", severity_names[r->severity],
           category_names[r->category],
           cfg->rules.disabled && cfg->rules.disabled[rule_position(r)]
               ? " (disabled by the configuration)"
               : "");
    section(stdout, &ro, "What it means", r->explanation);
    section(stdout, &ro, "How it is detected", r->detection);
    if (r->thresholds[0] != TH__COUNT) {
        printf("\n%sThresholds%s\n", render_bold(&ro), render_reset(&ro));
        for (size_t k = 0; r->thresholds[k] != TH__COUNT; k++)
            threshold_line(stdout, &cfg->rules.th, r->thresholds[k]);
    }
    if (r->yields_to) {
        printf("\n%sGives way to%s\n", render_bold(&ro), render_reset(&ro));
        for (size_t k = 0; r->yields_to[k]; k++)
            printf("  %s\n", r->yields_to[k]);
        printf("  (a finding of one of those about the same GPU replaces this one)\n");
    }
    section(stdout, &ro, "How to fix it", r->fix);
}

static void list_rules(void)
{
    const char *cat = NULL;
    struct render_opts ro;
    size_t idw = 0;

    render_opts_init(&ro, stdout, RENDER_AUTO, 0, RENDER_NEVER);
    for (size_t i = 0; i < n_rules; i++)
        idw = strlen(rule_table[i]->id) > idw ? strlen(rule_table[i]->id) : idw;
    for (size_t i = 0; i < n_rules; i++) {
        const struct rule *r = rule_table[i];

        if (cat != category_names[r->category]) {
            cat = category_names[r->category];
            printf("%s%s%s%s\n", i ? "\n" : "", render_bold(&ro), cat, render_reset(&ro));
        }
        printf("  %-*s %-8s ", (int)idw, r->id, severity_names[r->severity]);
        render_wrap(stdout, &ro, idw + 12, idw + 12, r->title);
    }
}

static void list_thresholds(const struct config *cfg)
{
    for (int id = 0; id < TH__COUNT; id++) {
        threshold_line(stdout, &cfg->rules.th, id);
        printf("      %s\n", threshold_defs[id].help);
    }
}

static int unknown_rule(const char *id)
{
    const char *ids[128], *near[5];
    size_t n = 0, k;

    for (size_t i = 0; i < n_rules && n < ARRAY_SIZE(ids); i++)
        ids[n++] = rule_table[i]->id;
    k = suggest_pick(id, ids, n, near, ARRAY_SIZE(near));
    cmd_error("explain", "no rule '%s'", id);
    if (k > 0) {
        fputs("Did you mean:\n", stderr);
        for (size_t i = 0; i < k; i++)
            fprintf(stderr, "  %s\n", near[i]);
    }
    fputs("'gpudoctor explain --list' lists every rule.\n", stderr);
    return EXIT_USAGE;
}

static int print_owned(char *text)
{
    int rc = fputs(text, stdout) == EOF ? -1 : 0;

    free(text);
    if (rc != 0)
        cmd_error("explain", "cannot write to standard output: %s", strerror(errno));
    else
        rc = cmd_finish_stdout("explain");
    return rc == 0 ? EXIT_HEALTHY : EXIT_UNKNOWN;
}

static int exec(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "list", no_argument, NULL, OPT_LIST },
        { "markdown", no_argument, NULL, OPT_MARKDOWN },
        { "thresholds", no_argument, NULL, OPT_THRESHOLDS },
        { "config", required_argument, NULL, OPT_CONFIG },
        { "set", required_argument, NULL, OPT_SET },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    bool list = false, markdown = false, thresholds = false;
    const char *config_path = NULL;
    char **sets = xcalloc((size_t)argc + 1, sizeof(*sets));
    size_t n_sets = 0;
    struct config cfg;
    int opt, rc = EXIT_USAGE;

    config_init(&cfg);
    while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (opt) {
        case OPT_LIST:
            list = true;
            break;
        case OPT_MARKDOWN:
            markdown = true;
            break;
        case OPT_THRESHOLDS:
            thresholds = true;
            break;
        case OPT_CONFIG:
            config_path = optarg;
            break;
        case OPT_SET:
            sets[n_sets++] = optarg;
            break;
        case 'h':
            usage(stdout);
            rc = EXIT_HEALTHY;
            goto out;
        default:
            rc = cmd_usage_error(&cmd_explain);
            goto out;
        }
    }
    if (list + markdown + thresholds + (optind < argc) == 0 || argc - optind > 1 ||
        (optind < argc && (list || markdown || thresholds)) || (list && (markdown || thresholds))) {
        cmd_error("explain", "give one rule id, or --list, --thresholds or --markdown");
        rc = cmd_usage_error(&cmd_explain);
        goto out;
    }
    /* The Markdown is the committed documentation: defaults only, never a local config. */
    if (markdown) {
        rc = print_owned(thresholds ? thresholds_markdown() : rules_markdown());
        goto out;
    }
    if (cmd_load_config("explain", &cfg, config_path, sets, n_sets) != 0) {
        rc = EXIT_USAGE;
        goto out;
    }
    rc = EXIT_HEALTHY;
    if (list) {
        list_rules();
    } else if (thresholds) {
        list_thresholds(&cfg);
    } else {
        const struct rule *r = rule_find(argv[optind]);

        if (r == NULL)
            rc = unknown_rule(argv[optind]);
        else
            explain_rule(r, &cfg);
    }
    if (rc == EXIT_HEALTHY && cmd_finish_stdout("explain") != 0)
        rc = EXIT_UNKNOWN;
    goto out;
out:
    config_free(&cfg);
    free(sets);
    return rc;
}

const struct cmd cmd_explain = {
    "explain",
    "ID | --list | --thresholds | --markdown",
    "what a finding means, how it is detected, how to fix it",
    exec,
    usage,
};
