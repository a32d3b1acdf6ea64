/*
 * The verdict on a GPU process (src/facts: facts_judge), which `procs` shows and `reap` selects
 * by, is the process rules' own judgement: over every snapshot of the scenario corpus, a process
 * is stopped, defunct, orphaned or an idle holder exactly when the rule of that name reports it.
 * Plus the verdicts of hand-made cases the corpus does not have, and the skips: a rule says it
 * lacks a sampling window exactly for a process whose verdict a window would decide its way.
 */
#include "facts/facts.h"
#include "rules/config.h"
#include "rules/rules.h"
#include "util/fileio.h"
#include "util/xalloc.h"

#include <dirent.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define CORPUS TEST_SOURCE_DIR "/tests/scenarios"

struct rule_verdict {
    const char *rule;
    enum facts_verdict verdict;
};

static const struct rule_verdict pairs[] = {
    { "proc.stopped-holder", FACTS_VERDICT_STOPPED },
    { "proc.zombie-holder", FACTS_VERDICT_DEFUNCT },
    { "proc.orphan-holder", FACTS_VERDICT_ORPHANED },
    { "proc.idle-holder", FACTS_VERDICT_IDLE_HOLDER },
};

static bool reported(const struct findings *f, const char *rule, int32_t pid)
{
    for (size_t i = 0; i < f->n; i++) {
        if (f->items[i].subject.pid == pid && strcmp(f->items[i].rule->id, rule) == 0)
            return true;
    }
    return false;
}

/* stopped-holder reports a stopped job once, at its top process: a stopped parent speaks for it. */
static bool parent_stopped(const struct snapshot *s, const struct facts_judgement *j, size_t n,
                           int32_t pid)
{
    const struct proc *p = proc_table_find(&s->procs, pid);
    const struct facts_judgement *pj = p ? facts_judgement_find(j, n, p->ppid) : NULL;

    return pj != NULL && pj->verdict == FACTS_VERDICT_STOPPED;
}

/* Asserts that verdicts and findings agree on s; counts stale verdicts. Returns the processes. */
static size_t agree(const char *name, const struct snapshot *s, size_t *stale)
{
    struct findings f = { 0 };
    struct facts_judgement *j = NULL;
    struct config cfg;
    size_t n;

    config_init(&cfg);
    rules_run(s, NULL, &cfg.rules, &f);
    n = facts_judge_snapshot(s, NULL, &cfg.rules.th, &j);
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k < ARRAY_SIZE(pairs); k++) {
            bool is = j[i].verdict == pairs[k].verdict;
            bool rep = reported(&f, pairs[k].rule, j[i].pid);

            if (is && !rep && pairs[k].verdict == FACTS_VERDICT_STOPPED &&
                parent_stopped(s, j, n, j[i].pid))
                continue;
            if (is != rep)
                fail_msg("%s: pid %d has verdict %s, but %s %s it", name, (int)j[i].pid,
                         facts_verdict_names[j[i].verdict], pairs[k].rule,
                         rep ? "reports" : "does not report");
            *stale += is;
        }
    }
    /* Every process a process rule reports has a verdict. */
    for (size_t i = 0; i < f.n; i++) {
        if (strncmp(f.items[i].rule->id, "proc.", 5) == 0 && f.items[i].subject.pid >= 0 &&
            strcmp(f.items[i].rule->id, "proc.cuda-visible-devices") != 0)
            assert_non_null(facts_judgement_find(j, n, f.items[i].subject.pid));
    }
    free(j);
    findings_free(&f);
    config_free(&cfg);
    return n;
}

static size_t check_case(const char *name, size_t *stale)
{
    char *path = xasprintf("%s/%s/snapshot.json", CORPUS, name), *cause = NULL;
    struct snapshot *s = snapshot_load(path, &cause);
    size_t n;

    free(path);
    if (s == NULL) { /* a live case (scenario.json + root/) has no snapshot */
        free(cause);
        return 0;
    }
    n = agree(name, s, stale);
    snapshot_free(s);
    return n;
}

static void test_corpus_agrees_with_rules(void **state)
{
    DIR *d = opendir(CORPUS);
    struct dirent *e;
    size_t procs = 0, stale = 0;

    (void)state;
    assert_non_null(d);
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] != '.')
            procs += check_case(e->d_name, &stale);
    }
    closedir(d);
    /* The corpus has GPU processes, and stale ones of each kind: the loop above judged them. */
    assert_true(procs >= 50);
    assert_true(stale >= 5);
}

static struct snapshot *load_case(const char *name)
{
    char *path = xasprintf("%s/%s/snapshot.json", CORPUS, name), *cause = NULL;
    struct snapshot *s = snapshot_load(path, &cause);

    if (s == NULL)
        fail_msg("%s: %s", path, cause);
    free(path);
    return s;
}

static enum facts_verdict verdict_of(const char *name, int32_t pid, int64_t *idle_for_ms)
{
    struct snapshot *s = load_case(name);
    struct facts_judgement *j = NULL;
    struct thresholds th;
    const struct facts_judgement *pj;
    enum facts_verdict v;
    size_t n;

    thresholds_init(&th);
    n = facts_judge_snapshot(s, NULL, &th, &j);
    pj = facts_judgement_find(j, n, pid);
    if (pj == NULL)
        fail_msg("%s: no verdict for pid %d", name, (int)pid);
    v = pj->verdict;
    if (idle_for_ms)
        *idle_for_ms = pj->idle_for_ms;
    free(j);
    snapshot_free(s);
    return v;
}

static void test_named_cases(void **state)
{
    int64_t idle_ms = 0;

    (void)state;
    assert_int_equal(verdict_of("stopped-holder", 4121, NULL), FACTS_VERDICT_STOPPED);
    assert_int_equal(verdict_of("zombie-holder", 5120, NULL), FACTS_VERDICT_DEFUNCT);
    assert_int_equal(verdict_of("zombie-holder", 6000, NULL), FACTS_VERDICT_ACTIVE);
    assert_int_equal(verdict_of("orphan-holder", 9301, &idle_ms), FACTS_VERDICT_ORPHANED);
    assert_true(idle_ms > 0); /* the snapshot's window proves it */
    assert_int_equal(verdict_of("idle-holder", 7001, NULL), FACTS_VERDICT_IDLE_HOLDER);
    /* Without a window nothing proves idleness. */
    assert_int_equal(verdict_of("idle-holder-no-window", 7001, &idle_ms), FACTS_VERDICT_UNKNOWN);
    assert_int_equal(idle_ms, -1);
}

static struct proc *proc_of(struct snapshot *s, int32_t pid)
{
    struct proc *p = proc_table_find(&s->procs, pid);

    if (p == NULL)
        fail_msg("no process %d", (int)pid);
    return p;
}

static enum facts_verdict judge(const struct snapshot *s, int32_t pid)
{
    struct facts_judgement *j = NULL;
    struct thresholds th;
    size_t n;
    enum facts_verdict v;

    thresholds_init(&th);
    n = facts_judge_snapshot(s, NULL, &th, &j);
    assert_non_null(facts_judgement_find(j, n, pid));
    v = facts_judgement_find(j, n, pid)->verdict;
    free(j);
    return v;
}

/* Cases at the edges of each test, where the corpus has nothing: both must still agree. */
static void test_edges_agree(void **state)
{
    struct snapshot *s;
    size_t stale = 0;

    (void)state;
    /* An idle notebook that started a minute ago is idle, not (yet) an idle holder. */
    s = load_case("idle-holder");
    proc_of(s, 7001)->start_time_ms = s->time_ms - 60000;
    assert_int_equal(judge(s, 7001), FACTS_VERDICT_IDLE);
    agree("idle-holder, young", s, &stale);
    snapshot_free(s);

    /* The same notebook busy on the CPU is active. */
    s = load_case("idle-holder");
    proc_of(s, 7001)->cpu_pct = 85.0;
    assert_int_equal(judge(s, 7001), FACTS_VERDICT_ACTIVE);
    agree("idle-holder, busy", s, &stale);
    snapshot_free(s);

    /* An orphan holding less than holder_min_mib is only idle. */
    s = load_case("orphan-holder");
    for (size_t g = 0; g < s->n_gpus; g++) {
        for (size_t k = 0; k < s->gpus[g].n_procs; k++) {
            if (s->gpus[g].procs[k].pid == 9301)
                s->gpus[g].procs[k].used_bytes = 1048576;
        }
    }
    for (size_t k = 0; k < proc_of(s, 9301)->n_gpus; k++)
        proc_of(s, 9301)->gpus[k].used_bytes = 1048576;
    assert_int_equal(judge(s, 9301), FACTS_VERDICT_IDLE);
    agree("orphan-holder, small", s, &stale);
    snapshot_free(s);

    /* A stopped process that is also an orphan is stopped first. */
    s = load_case("orphan-holder");
    proc_of(s, 9301)->state = 'T';
    assert_int_equal(judge(s, 9301), FACTS_VERDICT_STOPPED);
    agree("orphan-holder, stopped", s, &stale);
    snapshot_free(s);

    /* A process whose stat was not read is not visible. */
    s = load_case("zombie-holder");
    proc_of(s, 6000)->valid &= ~(PROC_BIT(PROC_S_STAT) | PROC_STAT_FIELDS);
    assert_int_equal(judge(s, 6000), FACTS_VERDICT_NOT_VISIBLE);
    agree("zombie-holder, unreadable", s, &stale);
    snapshot_free(s);
}

/* Whether rule recorded a skip that names a sampling window. */
static bool window_skipped(const struct findings *f, const char *rule)
{
    for (size_t i = 0; i < f->n_skips; i++) {
        if (strcmp(f->skips[i].rule->id, rule) == 0 && strstr(f->skips[i].reason, "window"))
            return true;
    }
    return false;
}

/*
 * pid's verdict and what it would be once idle, and whether the orphan and idle-holder rules
 * skip for want of a window: they must, exactly when the verdict is unknown and a window would
 * make it theirs.
 */
static void check_skips(const char *name, const struct snapshot *s, int32_t pid,
                        enum facts_verdict want, enum facts_verdict want_if_idle)
{
    struct thresholds th;
    struct findings f = { 0 };
    struct config cfg;
    struct facts *fa;
    const struct facts_use *u;

    thresholds_init(&th);
    fa = facts_create(s, NULL, &th);
    u = facts_use_find(fa, pid);
    if (u == NULL)
        fail_msg("%s: pid %d uses no GPU", name, (int)pid);
    assert_int_equal(u->verdict, want);
    assert_int_equal(u->if_idle, want_if_idle);
    config_init(&cfg);
    rules_run(s, NULL, &cfg.rules, &f);
    assert_int_equal(window_skipped(&f, "proc.orphan-holder"),
                     want == FACTS_VERDICT_UNKNOWN && want_if_idle == FACTS_VERDICT_ORPHANED);
    assert_int_equal(window_skipped(&f, "proc.idle-holder"),
                     want == FACTS_VERDICT_UNKNOWN && want_if_idle == FACTS_VERDICT_IDLE_HOLDER);
    findings_free(&f);
    config_free(&cfg);
    facts_free(fa);
}

static void test_window_skips(void **state)
{
    struct snapshot *s;

    (void)state;
    /* No window: the notebook would be an idle holder, the rule says what it lacks. */
    s = load_case("idle-holder-no-window");
    check_skips("idle-holder-no-window", s, 7001, FACTS_VERDICT_UNKNOWN, FACTS_VERDICT_IDLE_HOLDER);
    /* Too young to be an idle holder even once idle: nothing to skip. */
    proc_of(s, 7001)->start_time_ms = s->time_ms - 60000;
    check_skips("idle-holder-no-window, young", s, 7001, FACTS_VERDICT_UNKNOWN, FACTS_VERDICT_IDLE);
    snapshot_free(s);

    /* The orphan's CPU use unknown: a window would decide; proven idle, it is reported. */
    s = load_case("orphan-holder");
    check_skips("orphan-holder", s, 9301, FACTS_VERDICT_ORPHANED, FACTS_VERDICT_ORPHANED);
    proc_of(s, 9301)->valid &= ~PROC_BIT(PROC_S_CPU_PCT);
    check_skips("orphan-holder, CPU unknown", s, 9301, FACTS_VERDICT_UNKNOWN,
                FACTS_VERDICT_ORPHANED);
    snapshot_free(s);
}

static void test_names(void **state)
{
    (void)state;
    assert_string_equal(facts_verdict_names[FACTS_VERDICT_ACTIVE], "active");
    assert_string_equal(facts_verdict_names[FACTS_VERDICT_IDLE_HOLDER], "idle-holder");
    assert_string_equal(facts_verdict_names[FACTS_VERDICT_NOT_VISIBLE], "not-visible");
    assert_string_equal(facts_verdict_names[FACTS_VERDICT_UNKNOWN], "unknown");
    assert_null(facts_verdict_names[FACTS_VERDICT_UNKNOWN + 1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_corpus_agrees_with_rules),
        cmocka_unit_test(test_named_cases),
        cmocka_unit_test(test_edges_agree),
        cmocka_unit_test(test_window_skips),
        cmocka_unit_test(test_names),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
