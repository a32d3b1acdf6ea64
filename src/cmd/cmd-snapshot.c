/* gpudoctor snapshot: capture everything gpudoctor sees into one versioned JSON document. */
#include "cmd/cmd.h"
#include "snapshot-doc.h"
#include "util/xalloc.h"

#include <getopt.h>
#include <stdlib.h>

static void usage(FILE *out)
{
    fputs("Usage: gpudoctor snapshot [options]\n"
          "\n"
          "Capture everything gpudoctor sees (NVML, GPU processes, host pressure, PCIe,\n"
          "driver and kernel log, CUDA stack) into one JSON document, schema\n"
          "gpudoctor.snapshot/1.\n"
          "Analyse it later, anywhere, with 'gpudoctor check --from FILE'.\n"
          "\n"
          "Options:\n"
          "  -o, --output FILE write to FILE (atomically) instead of standard output\n"
          "  --window DUR      sample over DUR for rates and trends (default 0: one\n"
          "                    reading)\n"
          "  --describe        print every field of the snapshot as Markdown\n"
          "                    (docs/snapshot.md) and exit\n" COMMON_COLLECT_HELP
          "  -h, --help        show this help\n"
          "\n"
          "Exit status: 0 written, 3 could not collect or write, 64 usage error.\n",
          out);
}

static int exec(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "output", required_argument, NULL, 'o' },
        { "help", no_argument, NULL, 'h' },
        { "describe", no_argument, NULL, 'D' },
        COMMON_COLLECT_LONGOPTS,
        { NULL, 0, NULL, 0 },
    };
    struct collect_opts opts;
    const char *output = NULL;
    struct snapshot *s;
    char *cause = NULL, *text;
    int opt, rc;

    cmd_collect_defaults(&opts, 0);
    while ((opt = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
        switch (opt) {
        case 'o':
            output = optarg;
            break;
        case 'h':
            usage(stdout);
            return EXIT_HEALTHY;
        case 'D':
            snapshot_describe(stdout);
            return fflush(stdout) == 0 ? EXIT_HEALTHY : EXIT_UNKNOWN;
        default:
            rc = cmd_collect_option("snapshot", &opts, opt, optarg);
            if (rc == 0)
                return cmd_usage_error(&cmd_snapshot);
            if (rc < 0)
                return EXIT_USAGE;
        }
    }
    if (optind < argc) {
        cmd_error("snapshot", "unexpected argument '%s'", argv[optind]);
        return cmd_usage_error(&cmd_snapshot);
    }
    s = collect_snapshot(&opts, &cause);
    if (s == NULL) {
        cmd_error("snapshot", "%s", cause);
        free(cause);
        return EXIT_UNKNOWN;
    }
    text = snapshot_to_json(s);
    rc = cmd_write_output("snapshot", output, text) == 0 ? EXIT_HEALTHY : EXIT_UNKNOWN;
    free(text);
    snapshot_free(s);
    return rc;
}

const struct cmd cmd_snapshot = {
    "snapshot",
    "[-o FILE] [options]",
    "capture everything gpudoctor sees into one JSON document",
    exec,
    usage,
};
