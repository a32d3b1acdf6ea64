/* gpudoctor snapshot: capture everything gpudoctor sees into one versioned JSON document. */
#include "cmd/cmd.h"
#include "snapshot/snapshot-doc.h"
#include "util/xalloc.h"

#include <getopt.h>
#include <stdlib.h>

enum { OPT_DESCRIBE = OPT__COMMON_END };

static const struct cmd_option options[] = {
    { "output", 'o', required_argument, "FILE",
      N_("write to FILE (atomically, mode 0600: it holds every user's command lines) instead of "
         "standard output") },
    { "error", 'e', required_argument, "TEXT",
      N_("record the error a program printed in the snapshot (repeatable; "
         "docs/reported-errors.md)") },
    { "describe", OPT_DESCRIBE, no_argument, NULL,
      N_("print every field of the snapshot as Markdown (docs/snapshot.md) and exit") },
    { NULL, 0, 0, NULL, NULL },
};

struct opts {
    const char *output;
    bool describe;
    struct cmd_reported rep;
};

static int option(void *ctx, int key, char *arg)
{
    struct opts *o = ctx;

    if (key == 'e')
        return cmd_reported_option(&o->rep, key, arg);
    if (key == 'o')
        o->output = arg;
    else
        o->describe = true;
    return 0;
}

static int exec(int argc, char **argv)
{
    struct opts o = { NULL, false, { "snapshot", NULL, 0 } };
    struct cmd_front f;
    struct snapshot *s;
    char *text;
    int rc;

    rc = cmd_front_parse(&f, &cmd_snapshot, argc, argv, option, &o);
    if (rc != CMD_GO)
        goto out;
    if (o.describe) {
        snapshot_describe(stdout);
        rc = cmd_finish_stdout("snapshot") == 0 ? EXIT_HEALTHY : EXIT_UNKNOWN;
        goto out;
    }
    rc = cmd_check_output("snapshot", o.output);
    if (rc != 0)
        goto out;         /* said before minutes of collection, not after */
    f.no_progress = true; /* as before: the output is for programs */
    s = cmd_front_snapshot(&f);
    if (s == NULL) {
        rc = EXIT_UNKNOWN;
        goto out;
    }
    cmd_reported_apply(&o.rep, s);
    text = snapshot_to_json(s);
    rc = cmd_write_output("snapshot", o.output, text) == 0 ? EXIT_HEALTHY : EXIT_UNKNOWN;
    free(text);
    snapshot_free(s);
out:
    cmd_front_free(&f);
    cmd_reported_free(&o.rep);
    return rc;
}

const struct cmd cmd_snapshot = {
    .name = "snapshot",
    .synopsis = "[-o FILE] [options]",
    .summary = N_("capture everything gpudoctor sees into one JSON document"),
    .about = N_("Capture everything gpudoctor sees (NVML, GPU processes, host pressure, PCIe,\n"
                "driver and kernel log, CUDA stack) into one JSON document, schema\n"
                "gpudoctor.snapshot/1.\n"
                "Analyse it later, anywhere, with 'gpudoctor check --from FILE'. With --from,\n"
                "convert evidence from elsewhere (nvidia-smi output, a kernel log, an\n"
                "nvidia-bug-report.log) into a snapshot instead (docs/import.md).\n"),
    .options = options,
    .groups = CMD_G_COLLECT | CMD_G_ONLY | CMD_G_FROM |
              CMD_G_STATE, /* reads the state, never writes it */
    .window_ms = 0,
    .epilogue = N_("Exit status: 0 written, 3 could not collect or write, 64 usage error.\n"),
    .exec = exec,
};
