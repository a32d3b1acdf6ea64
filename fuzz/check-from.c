/* fuzz_check_from: the analysis a loaded snapshot goes through, for the reader harnesses. */
#include "fuzz.h"
#include "render/json.h"
#include "render/metrics.h"
#include "render/procs.h"
#include "render/text.h"
#include "rules/config.h"
#include "rules/rules.h"
#include "snapshot/snapshot.h"

void fuzz_check_from(const struct snapshot *s)
{
    static FILE *devnull; /* one for the process: opening it per input costs a system call */
    struct config cfg;
    struct findings f = { 0 };
    struct render_opts ro = { .color = false, .width = 80 };
    struct metrics_cycle cyc = { .duration_s = 0.1, .success = true, .cycles = 1 };
    struct metrics_opts mo = { .top_processes = 20 };
    struct facts_judgement *j = NULL;
    struct procs_view v = { 0 };
    json_t *doc;
    char *text;
    size_t len, n_j;
    int status;

    if (devnull == NULL)
        devnull = fopen("/dev/null", "w");
    FUZZ_ASSERT(devnull != NULL, "cannot open /dev/null");
    config_init(&cfg);
    rules_run(s, NULL, &cfg.rules, &f);
    status = rules_exit_status(s, &f);
    FUZZ_ASSERT(status >= 0 && status <= 3, "exit status %d", status);

    render_report(devnull, s, &f, &ro);
    doc = render_check_json(s, &f, status);
    text = json_dumps(doc, JSON_COMPACT);
    FUZZ_ASSERT(text != NULL, "the check report does not serialise");
    free(text);
    json_decref(doc);

    cyc.check_status = status;
    text = metrics_render(s, &f, &cyc, &mo, &len);
    FUZZ_ASSERT(text != NULL && strlen(text) == len, "metrics length %zu", len);
    free(text);

    n_j = facts_judge_snapshot(s, NULL, &cfg.rules.th, &j);
    procs_view_build(&v, s, j, n_j, NULL, PROCS_SORT_MEM, true);
    procs_render_table(devnull, &v, s, &ro, 80);
    doc = procs_render_json(&v, s);
    json_decref(doc);
    procs_view_free(&v);
    free(j);

    findings_free(&f);
    config_free(&cfg);
}
