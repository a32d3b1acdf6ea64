/*
 * gpudoctor check: diagnose this machine (or a snapshot) and print what is wrong.
 * Until the rule engine lands, it renders what was collected and what could not be.
 */
#include "cmd/cmd.h"
#include "render/text.h"
#include "util/xalloc.h"

#include <getopt.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEFAULT_WINDOW_MS 2000

static void usage(FILE *out)
{
    fputs(
        "Usage: gpudoctor check [options]\n"
        "\n"
        "Diagnose this machine: collect the evidence (NVML, GPU processes, host pressure, PCIe,\n"
        "driver and kernel log, CUDA stack), then print what is wrong, the evidence and the fix.\n"
        "\n"
        "Options:\n"
        "  --window DUR      sample over DUR before judging (default 2s; 0 = one reading)\n"
        "  --from FILE       analyse a snapshot written by 'gpudoctor snapshot' ('-' = stdin)\n"
        "  --json            print the findings and the snapshot as JSON\n"
        "  --no-color        do not colour the output (also: NO_COLOR=1)\n" COMMON_COLLECT_HELP
        "  -h, --help        show this help\n"
        "\n"
        "Exit status: 0 healthy, 1 warning, 2 critical, 3 could not check, 64 usage error.\n",
        out);
}

/* Until the rule engine lands: "could not check" when NVML did not answer. */
static int exit_status(const struct snapshot *s)
{
    return s->collectors[COLLECTOR_NVML].state == CS_OK ? EXIT_HEALTHY : EXIT_UNKNOWN;
}

static int print_json(const struct snapshot *s)
{
    json_t *j = json_object();
    char *text;
    int rc;

    json_object_set_new(j, "schema", json_string("gpudoctor.check/1"));
    json_object_set_new(j, "findings", json_array());
    json_object_set_new(j, "snapshot", snapshot_to_jansson(s));
    text = json_dumps(j, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
    json_decref(j);
    if (text == NULL)
        fatal("out of memory serialising the report");
    rc = puts(text) == EOF || fflush(stdout) == EOF ? -1 : 0;
    free(text);
    if (rc != 0)
        cmd_error("check", "cannot write to standard output");
    return rc;
}

static void print_text(const struct snapshot *s, const struct render_opts *ro)
{
    render_gpu_table(stdout, s, ro);
    if (s->n_gpus > 0)
        putchar('\n');
    render_gpu_processes(stdout, s, ro);
    putchar('\n');
    render_collectors(stdout, s, ro);
}

static int exec(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "from", required_argument, NULL, OPT_FROM },
        { "json", no_argument, NULL, OPT_JSON },
        { "no-color", no_argument, NULL, OPT_NO_COLOR },
        { "help", no_argument, NULL, 'h' },
        COMMON_COLLECT_LONGOPTS,
        { NULL, 0, NULL, 0 },
    };
    struct collect_opts opts;
    struct render_opts ro;
    const char *from = NULL;
    bool json = false, no_color = false;
    struct snapshot *s;
    char *cause = NULL;
    int opt, rc;

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
        case 'h':
            usage(stdout);
            return EXIT_HEALTHY;
        default:
            rc = cmd_collect_option(&opts, opt, optarg);
            if (rc == 0)
                return cmd_usage_error(&cmd_check);
            if (rc < 0)
                return EXIT_USAGE;
        }
    }
    if (optind < argc) {
        cmd_error("check", "unexpected argument '%s'", argv[optind]);
        return cmd_usage_error(&cmd_check);
    }
    opts.progress = !json && isatty(STDERR_FILENO);
    s = from ? snapshot_load(from, &cause) : collect_snapshot(&opts, &cause);
    if (s == NULL) {
        cmd_error("check", "%s", cause);
        free(cause);
        return EXIT_UNKNOWN;
    }
    if (json) {
        rc = print_json(s) == 0 ? exit_status(s) : EXIT_UNKNOWN;
    } else {
        render_opts_init(&ro, stdout, no_color);
        print_text(s, &ro);
        rc = fflush(stdout) == 0 ? exit_status(s) : EXIT_UNKNOWN;
    }
    snapshot_free(s);
    return rc;
}

const struct cmd cmd_check = {
    "check", "[options]", "diagnose this machine now: ranked findings, evidence, fixes",
    exec,    usage,
};
