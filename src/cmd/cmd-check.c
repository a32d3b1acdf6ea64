/*
 * gpudoctor check: diagnose this machine (or a snapshot) and print what is wrong, the evidence
 * and the fix. The same rules run on a live collection and on `--from FILE`.
 */
#include "cmd/cmd.h"
#include "render/json.h"
#include "render/text.h"
#include "rules/rules.h"
#include "util/xalloc.h"

#include <getopt.h>
#include <jansson.h>
#include <stdlib.h>

static void print_json(const struct snapshot *s, const struct findings *f, int status)
{
    json_t *j = render_check_json(s, f, status);
    char *text = json_dumps(j, JSON_INDENT(2) | JSON_REAL_PRECISION(10));

    json_decref(j);
    if (text == NULL)
        fatal("out of memory serialising the report");
    puts(text); /* a failure is in stdout's error flag: cmd_finish_stdout says it */
    free(text);
}

static const struct cmd_option options[] = {
    { "error", 'e', required_argument, "TEXT",
      N_("the error a program printed (\"CUDA error: system not yet initialized\"), as evidence; "
         "repeatable. Recognised CUDA, PyTorch, NCCL and container-toolkit errors lead to their "
         "causes (docs/reported-errors.md); the text is only matched, never run") },
    { NULL, 0, 0, NULL, NULL },
};

static int exec(int argc, char **argv)
{
    struct cmd_reported rep = { "check", NULL, 0 };
    struct cmd_front f;
    struct findings findings = { 0 };
    struct snapshot *s = NULL;
    int rc;

    rc = cmd_front_parse(&f, &cmd_check, argc, argv, cmd_reported_option, &rep);
    if (rc != CMD_GO)
        goto out;
    s = cmd_front_snapshot(&f);
    if (s == NULL) {
        rc = EXIT_UNKNOWN;
        goto out;
    }
    cmd_reported_apply(&rep, s);
    rules_run(s, NULL, &f.config.rules, &findings);
    rc = rules_exit_status(s, &findings);
    if (f.json) {
        print_json(s, &findings, rc);
    } else {
        struct render_out w;

        render_report(render_out_begin(&w, stdout, &f.render), s, &findings, &f.render);
        render_out_end(&w);
    }
    if (cmd_finish_stdout("check") != 0)
        rc = EXIT_UNKNOWN;
    cmd_front_record_state(&f, s); /* after the report: a full disk never costs the diagnosis */
out:
    findings_free(&findings);
    snapshot_free(s);
    cmd_front_free(&f);
    cmd_reported_free(&rep);
    return rc;
}

const struct cmd cmd_check = {
    .name = "check",
    .synopsis = "[options]",
    .summary = N_("diagnose this machine now: ranked findings, evidence, fixes"),
    .about = N_("Diagnose this machine: collect the evidence (NVML, GPU processes, host pressure,\n"
                "PCIe, driver and kernel log, CUDA stack), then print what is wrong, the evidence\n"
                "and the fix.\n"),
    .options = options,
    .groups = CMD_G_COLLECT | CMD_G_ONLY | CMD_G_FROM | CMD_G_CONFIG | CMD_G_JSON | CMD_G_COLOR |
              CMD_G_WIDTH | CMD_G_ASCII | CMD_G_STATE,
    .window_ms = 2000,
    .epilogue =
        N_("Exit status: 0 healthy, 1 warning, 2 critical, 3 could not check (or write the\n"
           "report), 64 usage error. 'gpudoctor explain ID' tells what a finding means;\n"
           "'explain --list' lists them all.\n"),
    .exec = exec,
};
