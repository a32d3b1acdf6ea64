/*
 * gpudoctor check: diagnose this machine (or a snapshot) and print what is wrong, the evidence
 * and the fix. The same rules run on a live collection and on `--from FILE`.
 */
#include "cmd/cmd.h"
#include "render/json.h"
#include "render/text.h"
#include "rules/config.h"
#include "rules/rules.h"
#include "util/xalloc.h"
#include "watch/recording.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEFAULT_WINDOW_MS 2000

enum { OPT_SET = OPT__COMMON_END };

static void usage(FILE *out)
{
    fputs("Usage: gpudoctor check [options]\n"
          "\n"
          "Diagnose this machine: collect the evidence (NVML, GPU processes, host pressure,\n"
          "PCIe, driver and kernel log, CUDA stack), then print what is wrong, the evidence\n"
          "and the fix.\n"
          "\n"
          "Options:\n"
          "  --window DUR      sample over DUR before judging (default 2s; 0 = one reading)\n"
          "  --from FILE       analyse a snapshot written by 'gpudoctor snapshot', or a\n"
          "                    recording of 'gpudoctor watch --record' ('-' = stdin)\n"
          "  --json            print the findings and the snapshot as JSON (docs/check.md)\n"
          "  --no-color        do not colour the output (also: NO_COLOR=1)\n"
          "  --config FILE     read thresholds from FILE (default /etc/gpudoctor.conf,\n"
          "                    or $GPUDOCTOR_CONFIG, when it exists)\n"
          "  --set KEY=VALUE   override one threshold, or disable=RULE-ID "
          "(repeatable)\n" COMMON_COLLECT_HELP "  -h, --help        show this help\n"
          "\n"
          "Exit status: 0 healthy, 1 warning, 2 critical, 3 could not check (or write the\n"
          "report), 64 usage error. 'gpudoctor explain ID' tells what a finding means;\n"
          "'explain --list' lists them all.\n",
          out);
}

static int print_json(const struct snapshot *s, const struct findings *f, int status)
{
    json_t *j = render_check_json(s, f, status);
    char *text = json_dumps(j, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
    int rc;

    json_decref(j);
    if (text == NULL)
        fatal("out of memory serialising the report");
    rc = puts(text) == EOF ? -1 : 0;
    free(text);
    if (rc != 0)
        cmd_error("check", "cannot write to standard output: %s", strerror(errno));
    else
        rc = cmd_finish_stdout("check");
    return rc;
}

static int exec(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "from", required_argument, NULL, OPT_FROM },
        { "json", no_argument, NULL, OPT_JSON },
        { "no-color", no_argument, NULL, OPT_NO_COLOR },
        { "config", required_argument, NULL, OPT_CONFIG },
        { "set", required_argument, NULL, OPT_SET },
        { "help", no_argument, NULL, 'h' },
        COMMON_COLLECT_LONGOPTS,
        { NULL, 0, NULL, 0 },
    };
    struct collect_opts opts;
    struct render_opts ro;
    struct config cfg;
    struct findings findings = { 0 };
    const char *from = NULL, *config_path = NULL;
    char **sets = xcalloc((size_t)argc + 1, sizeof(*sets));
    size_t n_sets = 0;
    bool json = false, no_color = false;
    struct snapshot *s = NULL;
    char *cause = NULL;
    int opt, rc = EXIT_USAGE;

    config_init(&cfg);
    cmd_collect_defaults(&opts, DEFAULT_WINDOW_MS);
    while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (opt) {
        case OPT_FROM:
            from = optarg;
            break;
        case OPT_JSON:
            json = true;
            break;
        case OPT_NO_COLOR:
            no_color = true;
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
            rc = cmd_collect_option("check", &opts, opt, optarg);
            if (rc == 0) {
                rc = cmd_usage_error(&cmd_check);
                goto out;
            }
            if (rc < 0) {
                rc = EXIT_USAGE;
                goto out;
            }
        }
    }
    rc = EXIT_USAGE;
    if (optind < argc) {
        cmd_error("check", "unexpected argument '%s'", argv[optind]);
        rc = cmd_usage_error(&cmd_check);
        goto out;
    }
    if (cmd_load_config("check", &cfg, config_path, sets, n_sets) != 0)
        goto out;
    opts.progress = !json && isatty(STDERR_FILENO);
    /* --from: a snapshot, or a recording of watch --record (its samples are the history). */
    s = from ? recording_load(from, &cause) : collect_snapshot(&opts, &cause);
    if (s == NULL) {
        cmd_error("check", "%s", cause);
        free(cause);
        rc = EXIT_UNKNOWN;
        goto out;
    }
    rules_run(s, NULL, &cfg.rules, &findings);
    rc = rules_exit_status(s, &findings);
    if (json) {
        if (print_json(s, &findings, rc) != 0)
            rc = EXIT_UNKNOWN;
    } else {
        render_opts_init(&ro, stdout, no_color ? RENDER_NEVER : RENDER_AUTO, 0, RENDER_NEVER);
        render_report(stdout, s, &findings, &ro);
        if (cmd_finish_stdout("check") != 0)
            rc = EXIT_UNKNOWN;
    }
out:
    findings_free(&findings);
    snapshot_free(s);
    config_free(&cfg);
    free(sets);
    return rc;
}

const struct cmd cmd_check = {
    "check", "[options]", "diagnose this machine now: ranked findings, evidence, fixes",
    exec,    usage,
};
