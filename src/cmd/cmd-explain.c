/*
 * gpudoctor explain: what a finding means, how it is detected (with the thresholds in force),
 * and how to fix it. Also lists the catalogue and prints it as Markdown (docs/rules.md).
 */
#include "cmd/cmd.h"
#include "render/text.h"
#include "rules/docs.h"
#include "rules/rules.h"
#include "rules/suggest.h"
#include "util/xalloc.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

enum { OPT_LIST = OPT__COMMON_END, OPT_MARKDOWN, OPT_THRESHOLDS };

static const struct cmd_option options[] = {
    { "list", OPT_LIST, no_argument, NULL, N_("every rule: id, severity, title") },
    { "thresholds", OPT_THRESHOLDS, no_argument, NULL,
      N_("every threshold: value now, default, meaning") },
    { "markdown", OPT_MARKDOWN, no_argument, NULL,
      N_("the whole catalogue as Markdown (docs/rules.md); with --thresholds, the threshold table "
         "of docs/config.md") },
    { NULL, 0, 0, NULL, NULL },
};

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
        fprintf(out, _(" (set in %s; default %s)\n"), th->origin[id], def);
    else
        fputs(_(" (default)\n"), out);
}

static void link_line(FILE *out, const struct render_opts *ro, const char *id,
                      const struct rule_link *l)
{
    char *text = l->when
                     ? xasprintf(_("%s (%s, when %s): %s"), id, _(link_scope_names[l->scope]),
                                 _(l->when), _(l->how))
                     : xasprintf(_("%s (%s): %s"), id, _(link_scope_names[l->scope]), _(l->how));

    if (l->fix == LINK_FIX_IN_CAUSE) {
        char *more = xasprintf(_("%s; fixed by the cause's fix"), text);

        free(text);
        text = more;
    }

    fputs("  ", out);
    render_wrap(out, ro, 2, 4, text);
    free(text);
}

/* The causal links: what this rule's findings explain, and what can explain them. */
static void explain_links(FILE *out, const struct render_opts *ro, const struct rule *r)
{
    bool head = false;

    for (size_t k = 0; r->explains != NULL && r->explains[k].rule_id != NULL; k++) {
        const struct rule_link *l = &r->explains[k];

        if (!head)
            fprintf(out, _("\n%sExplains%s (ranked after this one, marked \"caused by\")\n"),
                    render_bold(ro), render_reset(ro));
        head = true;
        link_line(out, ro, l->rule_id, l);
    }
    head = false;
    for (size_t i = 0; i < n_rules; i++) {
        const struct rule_link *l = rule_link_find(rule_table[i], r);

        if (l == NULL)
            continue;
        if (!head)
            fprintf(out, _("\n%sCan be caused by%s\n"), render_bold(ro), render_reset(ro));
        head = true;
        link_line(out, ro, rule_table[i]->id, l);
    }
}

static void explain_rule(FILE *out, const struct render_opts *ro, const struct rule *r,
                         const struct config *cfg)
{
    fprintf(out, "%s%s%s — %s\n", render_bold(ro), r->id, render_reset(ro), _(r->title));
    fprintf(out, _("severity: %s, category: %s%s\n"), severity_names[r->severity],
            category_names[r->category],
            cfg->rules.disabled && cfg->rules.disabled[rule_position(r)]
                ? _(" (disabled by the configuration)")
                : "");
    section(out, ro, _("What it means"), _(r->explanation));
    section(out, ro, _("How it is detected"), _(r->detection));
    if (r->thresholds[0] != TH__COUNT) {
        fprintf(out, _("\n%sThresholds%s\n"), render_bold(ro), render_reset(ro));
        for (size_t k = 0; r->thresholds[k] != TH__COUNT; k++)
            threshold_line(out, &cfg->rules.th, r->thresholds[k]);
    }
    if (r->yields_to) {
        fprintf(out, _("\n%sGives way to%s\n"), render_bold(ro), render_reset(ro));
        for (size_t k = 0; r->yields_to[k]; k++)
            fprintf(out, "  %s\n", r->yields_to[k]);
        fputs(_("  (a finding of one of those about the same GPU replaces this one)\n"), out);
    }
    explain_links(out, ro, r);
    section(out, ro, _("How to fix it"), _(r->fix));
}

static void list_rules(FILE *out, const struct render_opts *ro)
{
    const char *cat = NULL;
    size_t idw = 0;

    for (size_t i = 0; i < n_rules; i++)
        idw = strlen(rule_table[i]->id) > idw ? strlen(rule_table[i]->id) : idw;
    for (size_t i = 0; i < n_rules; i++) {
        const struct rule *r = rule_table[i];

        if (cat != category_names[r->category]) {
            cat = category_names[r->category];
            fprintf(out, "%s%s%s%s\n", i ? "\n" : "", render_bold(ro), cat, render_reset(ro));
        }
        fprintf(out, "  %-*s %-8s ", (int)idw, r->id, severity_names[r->severity]);
        render_wrap(out, ro, idw + 12, idw + 12, _(r->title));
    }
}

static void list_thresholds(FILE *out, const struct config *cfg)
{
    for (int id = 0; id < TH__COUNT; id++) {
        threshold_line(out, &cfg->rules.th, id);
        fprintf(out, "      %s\n", threshold_defs[id].help);
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
        fputs(_("Did you mean:\n"), stderr);
        for (size_t i = 0; i < k; i++)
            fprintf(stderr, "  %s\n", near[i]);
    }
    fputs(_("'gpudoctor explain --list' lists every rule.\n"), stderr);
    return EXIT_USAGE;
}

struct opts {
    bool list, markdown, thresholds;
};

static int option(void *ctx, int key, char *arg)
{
    struct opts *o = ctx;

    (void)arg;
    o->list |= key == OPT_LIST;
    o->markdown |= key == OPT_MARKDOWN;
    o->thresholds |= key == OPT_THRESHOLDS;
    return 0;
}

static int exec(int argc, char **argv)
{
    struct opts o = { false, false, false };
    struct cmd_front f;
    struct render_out w;
    const char *id;
    FILE *out;
    int rc;

    rc = cmd_front_parse(&f, &cmd_explain, argc, argv, option, &o);
    if (rc != CMD_GO)
        goto out;
    id = f.n_operands ? f.operands[0] : NULL;
    if (o.list + o.markdown + o.thresholds + (id != NULL) == 0 ||
        (id && (o.list || o.markdown || o.thresholds)) ||
        (o.list && (o.markdown || o.thresholds))) {
        cmd_error("explain", "give one rule id, or --list, --thresholds or --markdown");
        rc = cmd_usage_error(&cmd_explain);
        goto out;
    }
    if (id && rule_find(id) == NULL) {
        rc = unknown_rule(id);
        goto out;
    }
    /* The Markdown is the committed documentation: defaults only, never a local config, UTF-8. */
    if (o.markdown) {
        char *text = o.thresholds ? thresholds_markdown() : rules_markdown();

        fputs(text, stdout);
        free(text);
    } else {
        out = render_out_begin(&w, stdout, &f.render);
        if (o.list)
            list_rules(out, &f.render);
        else if (o.thresholds)
            list_thresholds(out, &f.config);
        else
            explain_rule(out, &f.render, rule_find(id), &f.config);
        render_out_end(&w);
    }
    rc = cmd_finish_stdout("explain") == 0 ? EXIT_HEALTHY : EXIT_UNKNOWN;
out:
    cmd_front_free(&f);
    return rc;
}

const struct cmd cmd_explain = {
    .name = "explain",
    .synopsis = "[options] ID\n--list\n--thresholds\n--markdown",
    .summary = N_("what a finding means, how it is detected, how to fix it"),
    .about = N_("Explain a finding of 'gpudoctor check': what it means, how it is detected and\n"
                "with which thresholds (their values now, after the config file), and how to fix\n"
                "it.\n"),
    .options = options,
    .groups = CMD_G_CONFIG | CMD_G_COLOR | CMD_G_WIDTH | CMD_G_ASCII,
    .max_operands = 1,
    .epilogue =
        N_("Exit status: 0 explained, 3 output could not be written, 64 unknown id or usage\n"
           "error.\n"),
    .exec = exec,
};
