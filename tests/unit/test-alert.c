/*
 * Alerts of `watch` (src/watch/alert.c): the spec syntax and its error messages; episodes that
 * fire exactly once, wait their `for` duration, survive a short gap, clear once after the clear
 * delay, with hysteresis on readings; and commands run by execve with an argument vector and the
 * alert in the environment, reaped, and killed after their timeout.
 */
#include "rules/rules.h"
#include "util/timeutil.h"
#include "util/xalloc.h"
#include "watch/alert.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

/* ---- parsing ---- */

static struct alert_spec parse_ok(const char *text)
{
    struct alert_spec a;
    char *cause = NULL;

    if (alert_spec_parse(&a, text, &cause) != 0)
        fail_msg("'%s' did not parse: %s", text, cause);
    return a;
}

static void parse_fails(const char *text, const char *want)
{
    struct alert_spec a;
    char *cause = NULL;

    if (alert_spec_parse(&a, text, &cause) == 0)
        fail_msg("'%s' parsed", text);
    if (strstr(cause, want) == NULL)
        fail_msg("'%s': message \"%s\" lacks \"%s\"", text, cause, want);
    free(cause);
}

static void test_parse_findings(void **state)
{
    struct alert_spec a;

    (void)state;
    a = parse_ok("mem.leak");
    assert_int_equal(a.kind, ALERT_RULE);
    assert_string_equal(a.pattern, "mem.leak");
    assert_string_equal(a.text, "mem.leak");
    assert_null(a.argv);
    assert_int_equal(a.for_ms, 0);
    alert_spec_free(&a);

    a = parse_ok(" proc.* for 2m :/bin/true");
    assert_int_equal(a.kind, ALERT_RULE);
    assert_string_equal(a.pattern, "proc.*");
    assert_string_equal(a.text, "proc.*");
    assert_int_equal(a.for_ms, 120000);
    assert_string_equal(a.path, "/bin/true");
    assert_string_equal(a.argv[0], "/bin/true");
    assert_null(a.argv[1]);
    alert_spec_free(&a);

    /* A severity, and a command found through $PATH with its arguments as they are written. */
    a = parse_ok("warning:true $HOME;rm  -rf");
    assert_int_equal(a.kind, ALERT_SEVERITY);
    assert_int_equal(a.min_severity, SEV_WARNING);
    assert_true(strlen(a.path) > 5 && strcmp(a.path + strlen(a.path) - 5, "/true") == 0);
    assert_string_equal(a.argv[0], "true");
    assert_string_equal(a.argv[1], "$HOME;rm");
    assert_string_equal(a.argv[2], "-rf");
    assert_null(a.argv[3]);
    alert_spec_free(&a);
}

static void test_parse_metrics(void **state)
{
    struct alert_spec a;

    (void)state;
    a = parse_ok("mem_used_pct>95 for 60s:/bin/echo paged now");
    assert_int_equal(a.kind, ALERT_METRIC);
    assert_string_equal(a.metric->name, "mem_used_pct");
    assert_int_equal(a.op, ALERT_GT);
    assert_true(a.value == 95);
    assert_int_equal(a.for_ms, 60000);
    assert_string_equal(a.text, "mem_used_pct>95");
    assert_string_equal(a.argv[1], "paged");
    assert_string_equal(a.argv[2], "now");
    alert_spec_free(&a);

    a = parse_ok("temp_c >= 85.5");
    assert_int_equal(a.op, ALERT_GE);
    assert_true(a.value == 85.5);
    alert_spec_free(&a);
    a = parse_ok("util_gpu_pct<5 for 10m");
    assert_int_equal(a.op, ALERT_LT);
    assert_int_equal(a.for_ms, 600000);
    alert_spec_free(&a);
    a = parse_ok("temp_margin_c<=3");
    assert_int_equal(a.op, ALERT_LE);
    alert_spec_free(&a);
}

static void test_parse_errors(void **state)
{
    (void)state;
    parse_fails("no.such-rule", "'no.such-rule' is not a known rule");
    parse_fails("zz.*", "a pattern no rule id matches");
    parse_fails("bogus", "is not a known rule");
    parse_fails("nosuch_metric>5", "unknown reading 'nosuch_metric' (known: util_gpu_pct,");
    parse_fails("mem_used_pct>abc", "expected a number after '>'");
    parse_fails("mem_used_pct>", "expected a number");
    parse_fails("mem.leak for soon", "'soon' is not a duration");
    parse_fails("mem.leak:", "nothing after ':'");
    parse_fails("mem.leak:   ", "nothing after ':'");
    parse_fails(":/bin/true", "no condition");
    parse_fails("", "no condition");
    parse_fails("mem.leak:/nonexistent/page", "command '/nonexistent/page': No such file");
    parse_fails("mem.leak:no-such-command-xyz", "'no-such-command-xyz' not found in PATH");
}

/* ---- the engine on findings ---- */

/* Findings of rule id about (gpu, pid) pairs; n pairs in subjects. */
static void make_findings(struct findings *f, const char *id, const int32_t (*subjects)[2],
                          size_t n, enum severity sev)
{
    memset(f, 0, sizeof(*f));
    f->items = xcalloc(n ? n : 1, sizeof(*f->items));
    f->cap = n ? n : 1;
    for (size_t i = 0; i < n; i++) {
        struct finding *x = &f->items[f->n++];

        x->rule = rule_find(id);
        assert_non_null(x->rule);
        x->severity = sev;
        x->subject.gpu_index = subjects[i][0];
        x->subject.pid = subjects[i][1];
        x->subject.object = NULL;
        x->title = xasprintf("%s on GPU %d", id, (int)subjects[i][0]);
    }
}

struct tally {
    size_t firing, cleared;
    char last[256];
};

static void eval(struct alert_engine *e, const struct findings *f, int64_t now, struct tally *t)
{
    struct alert_events ev = { 0 };

    alert_engine_eval(e, NULL, NULL, f, now, &ev);
    for (size_t i = 0; i < ev.n; i++) {
        if (ev.items[i].firing)
            t->firing++;
        else
            t->cleared++;
        snprintf(t->last, sizeof(t->last), "%s %s %s gpu=%d pid=%d sev=%s: %s",
                 ev.items[i].firing ? "firing" : "cleared", ev.items[i].id, ev.items[i].subject,
                 (int)ev.items[i].gpu, (int)ev.items[i].pid, ev.items[i].severity,
                 ev.items[i].title);
    }
    alert_events_free(&ev);
}

static void test_one_firing_per_episode(void **state)
{
    static const int32_t one[][2] = { { 0, 4121 } };
    struct alert_spec a = parse_ok("mem.leak");
    struct alert_engine *e = alert_engine_new(&a, 1, 3000);
    struct findings on, off = { 0 };
    struct tally t = { 0 };

    (void)state;
    make_findings(&on, "mem.leak", one, 1, SEV_WARNING);
    /* Present for 6 s, gone for 1 s (shorter than the clear delay), present again: one episode. */
    for (int64_t ms = 0; ms <= 6000; ms += 1000)
        eval(e, &on, ms, &t);
    assert_int_equal(t.firing, 1);
    assert_string_equal(t.last, "firing mem.leak gpu=0 pid=4121 gpu=0 pid=4121 sev=warning: "
                                "mem.leak on GPU 0");
    eval(e, &off, 7000, &t);
    eval(e, &on, 8000, &t);
    assert_int_equal(t.firing, 1);
    assert_int_equal(t.cleared, 0);
    assert_int_equal(alert_engine_firing(e), 1);
    /* Gone for good: cleared once, 3 s after it went. */
    eval(e, &off, 9000, &t);
    eval(e, &off, 11000, &t);
    assert_int_equal(t.cleared, 0);
    eval(e, &off, 12000, &t);
    assert_int_equal(t.cleared, 1);
    assert_non_null(strstr(t.last, "cleared mem.leak gpu=0 pid=4121"));
    for (int64_t ms = 13000; ms <= 20000; ms += 1000)
        eval(e, &off, ms, &t);
    assert_int_equal(t.firing, 1);
    assert_int_equal(t.cleared, 1);
    assert_int_equal(alert_engine_firing(e), 0);
    /* A new episode fires again. */
    eval(e, &on, 21000, &t);
    assert_int_equal(t.firing, 2);
    alert_engine_free(e);
    findings_free(&on);
    alert_spec_free(&a);
}

static void test_for_duration_and_subjects(void **state)
{
    static const int32_t two[][2] = { { 0, 11 }, { 1, 22 } };
    struct alert_spec a = parse_ok("mem.* for 5s");
    struct alert_engine *e = alert_engine_new(&a, 1, 1000);
    struct findings on, off = { 0 };
    struct tally t = { 0 };

    (void)state;
    make_findings(&on, "mem.leak", two, 2, SEV_WARNING);
    /* Shorter than its `for`: never fires, and nothing clears. */
    for (int64_t ms = 0; ms <= 4000; ms += 1000)
        eval(e, &on, ms, &t);
    eval(e, &off, 5000, &t);
    eval(e, &off, 9000, &t);
    assert_int_equal(t.firing + t.cleared, 0);
    /* Long enough: each subject is its own episode. */
    for (int64_t ms = 10000; ms <= 16000; ms += 1000)
        eval(e, &on, ms, &t);
    assert_int_equal(t.firing, 2);
    /* Clearing waits the `for` duration too (5 s, more than the 1 s minimum). */
    eval(e, &off, 17000, &t);
    eval(e, &off, 21000, &t);
    assert_int_equal(t.cleared, 0);
    eval(e, &off, 22000, &t);
    assert_int_equal(t.cleared, 2);
    alert_engine_free(e);
    findings_free(&on);
    alert_spec_free(&a);
}

static void test_severity_alerts(void **state)
{
    static const int32_t one[][2] = { { 2, -1 } };
    struct alert_spec a = parse_ok("warning");
    struct alert_engine *e = alert_engine_new(&a, 1, 0);
    struct findings info, crit;
    struct tally t = { 0 };

    (void)state;
    make_findings(&info, "clock.persistence-off", one, 1, SEV_INFO);
    make_findings(&crit, "health.xid", one, 1, SEV_CRITICAL);
    eval(e, &info, 0, &t);
    assert_int_equal(t.firing, 0);
    eval(e, &crit, 1000, &t);
    assert_int_equal(t.firing, 1);
    assert_non_null(strstr(t.last, "health.xid gpu=2 gpu=2 pid=-1 sev=critical"));
    alert_engine_free(e);
    findings_free(&info);
    findings_free(&crit);
    alert_spec_free(&a);
}

/* ---- the engine on readings ---- */

static void test_metric_hysteresis(void **state)
{
    /* temp_c's band is 2 °C: once above 85, it clears only below 83. */
    static const uint32_t temps[] = { 80, 86, 84, 83, 86, 82, 82, 82, 82, 90 };
    struct alert_spec a = parse_ok("temp_c>85");
    struct alert_engine *e = alert_engine_new(&a, 1, 2000);
    struct snapshot *s = snapshot_new();
    struct sample smp = { 0 };
    struct gpu g;
    size_t firing = 0, cleared = 0;
    char last[512] = "";

    (void)state;
    gpu_init(&g, 0);
    g.handle_rc = 0;
    gpu_set_rc(&g, GPU_S_TEMP, 0);
    smp.gpus = &g;
    smp.n_gpus = 1;
    for (size_t i = 0; i < ARRAY_SIZE(temps); i++) {
        struct alert_events ev = { 0 };

        g.temp_c = temps[i];
        alert_engine_eval(e, s, &smp, NULL, (int64_t)i * 1000, &ev);
        for (size_t k = 0; k < ev.n; k++) {
            firing += ev.items[k].firing;
            cleared += !ev.items[k].firing;
            snprintf(last, sizeof(last), "%zu %s %s gpu=%d value=%s: %s", i, ev.items[k].id,
                     ev.items[k].firing ? "firing" : "cleared", (int)ev.items[k].gpu,
                     ev.items[k].value, ev.items[k].title);
        }
        if (i == 1)
            assert_string_equal(last, "1 temp_c firing gpu=0 value=86: GPU 0 temp_c 86 °C > 85");
        alert_events_free(&ev);
    }
    /* 84 stays inside the band; 83 starts clearing but 86 resumes the same episode; 82 from
       t=5 s clears at t=7 s (the 2 s delay); 90 is a new episode. */
    assert_int_equal(firing, 2);
    assert_int_equal(cleared, 1);
    assert_string_equal(last, "9 temp_c firing gpu=0 value=90: GPU 0 temp_c 90 °C > 85");
    alert_engine_free(e);
    snapshot_free(s);
    alert_spec_free(&a);
}

/* ---- running commands ---- */

static char tmpdir[64];

static int make_tmp(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/test-alert-XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int remove_tmp(void **state)
{
    char cmd[128];

    (void)state;
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

static void wait_idle(struct alert_runner *r, int64_t limit_ms)
{
    struct alert_runner_stats st;
    int64_t end = time_mono_ms() + limit_ms;

    do {
        alert_runner_poll(r, time_mono_ms());
        alert_runner_stats(r, &st);
        if (st.running == 0)
            return;
        time_sleep_ms(20);
    } while (time_mono_ms() < end);
    fail_msg("alert commands still running after %lld ms", (long long)limit_ms);
}

static char *read_text(const char *path)
{
    FILE *f = fopen(path, "r");
    char *buf = xcalloc(4096, 1);

    if (f == NULL)
        return buf;
    if (fread(buf, 1, 4095, f) == 0)
        buf[0] = '\0';
    fclose(f);
    return buf;
}

static void test_runner_environment_and_argv(void **state)
{
    char script[128], out[128], spec[512], *text, *cause = NULL;
    char id[] = "mem.leak", sev[] = "critical", subject[] = "gpu=0 pid=4121", value[] = "";
    char title[] = "pid 4121 on GPU 0 grows 600 MiB/min";
    struct alert_spec a;
    struct alert_event ev = { 0 };
    struct alert_runner *r = alert_runner_new(5000, "node7");
    struct alert_runner_stats st;
    FILE *f;

    (void)state;
    snprintf(script, sizeof(script), "%s/hook", tmpdir);
    snprintf(out, sizeof(out), "%s/out", tmpdir);
    f = fopen(script, "w");
    assert_non_null(f);
    fprintf(f,
            "#!/bin/sh\necho \"$GPUDOCTOR_ALERT_STATE|$GPUDOCTOR_ALERT_ID|"
            "$GPUDOCTOR_ALERT_SEVERITY|$GPUDOCTOR_ALERT_GPU|$GPUDOCTOR_ALERT_PID|"
            "$GPUDOCTOR_ALERT_TITLE|$GPUDOCTOR_ALERT_VALUE|$GPUDOCTOR_ALERT_HOST|"
            "$GPUDOCTOR_ALERT_SPEC|$1|$2\" >> \"%s\"\n",
            out);
    fclose(f);
    chmod(script, 0755);
    snprintf(spec, sizeof(spec), "mem.leak:%s $HOME;rm *", script);
    if (alert_spec_parse(&a, spec, &cause) != 0)
        fail_msg("%s", cause);
    /* A stale variable of the caller's environment is replaced, not inherited. */
    setenv("GPUDOCTOR_ALERT_PID", "999", 1);
    ev.spec = &a;
    ev.firing = true;
    ev.id = id;
    ev.severity = sev;
    ev.subject = subject;
    ev.gpu = 0;
    ev.pid = 4121;
    ev.title = title;
    ev.value = value;
    alert_runner_submit(r, &ev, time_mono_ms());
    ev.firing = false;
    ev.pid = -1;
    alert_runner_submit(r, &ev, time_mono_ms());
    wait_idle(r, 5000);
    unsetenv("GPUDOCTOR_ALERT_PID");
    text = read_text(out);
    /* Two lines; order may vary as the two run at once. */
    assert_non_null(strstr(text, "firing|mem.leak|critical|0|4121|pid 4121 on GPU 0 grows 600 "
                                 "MiB/min||node7|mem.leak|$HOME;rm|*\n"));
    assert_non_null(strstr(text, "cleared|mem.leak|critical|0||pid 4121"));
    alert_runner_stats(r, &st);
    assert_int_equal(st.started, 2);
    assert_int_equal(st.failed, 0);
    assert_int_equal(st.fired, 1);
    assert_int_equal(st.cleared, 1);
    free(text);
    alert_runner_finish(r, time_mono_ms());
    alert_spec_free(&a);
}

static void test_runner_failures_and_timeout(void **state)
{
    char id[] = "health.xid", sev[] = "critical", subject[] = "gpu=1", title[] = "XID 79";
    char value[] = "";
    struct alert_spec fails, slow;
    struct alert_event ev = { 0 };
    struct alert_runner *r = alert_runner_new(300, "");
    struct alert_runner_stats st;
    char *cause = NULL;
    int64_t t0;

    (void)state;
    if (alert_spec_parse(&fails, "critical:/bin/false", &cause) != 0 ||
        alert_spec_parse(&slow, "critical:/bin/sleep 30", &cause) != 0)
        fail_msg("%s", cause);
    ev.id = id;
    ev.severity = sev;
    ev.subject = subject;
    ev.gpu = 1;
    ev.pid = -1;
    ev.title = title;
    ev.value = value;
    ev.firing = true;
    ev.spec = &fails;
    alert_runner_submit(r, &ev, time_mono_ms());
    wait_idle(r, 5000);
    assert_non_null(strstr(alert_runner_last_error(r), "/bin/false exited with status 1"));
    /* The submit returns at once; the loop's polls kill the command after its timeout. */
    ev.spec = &slow;
    t0 = time_mono_ms();
    alert_runner_submit(r, &ev, t0);
    assert_true(time_mono_ms() - t0 < 200);
    wait_idle(r, 5000);
    assert_non_null(strstr(alert_runner_last_error(r), "ran too long and was killed by signal 15"));
    alert_runner_stats(r, &st);
    assert_int_equal(st.started, 2);
    assert_int_equal(st.failed, 2);
    /* At exit a running command gets its grace, then is killed. */
    alert_runner_submit(r, &ev, time_mono_ms());
    t0 = time_mono_ms();
    alert_runner_finish(r, t0 + 100);
    assert_true(time_mono_ms() - t0 < 2000);
    alert_spec_free(&fails);
    alert_spec_free(&slow);
}

/* docs/watch.md lists every reading an alert can compare, with its band, and every variable. */
static void test_docs_list_readings_and_variables(void **state)
{
    static const char *const vars[] = { "STATE", "ID",      "SEVERITY", "GPU",  "PID", "TITLE",
                                        "VALUE", "SUBJECT", "SPEC",     "HOST", "TIME" };
    char path[512], *text = NULL;
    FILE *f;
    size_t len = 0;
    char buf[4096];
    size_t n;

    (void)state;
    snprintf(path, sizeof(path), "%s/docs/watch.md", TEST_SOURCE_DIR);
    f = fopen(path, "r");
    assert_non_null(f);
    while ((n = fread(buf, 1, sizeof(buf), f)) > 0) {
        text = xrealloc(text, len + n + 1);
        memcpy(text + len, buf, n);
        len += n;
    }
    fclose(f);
    assert_non_null(text);
    text[len] = '\0';
    for (size_t i = 0; i < n_alert_metrics; i++) {
        char row[128];

        snprintf(row, sizeof(row), "| `%s` | %s | %g |", alert_metrics[i].name,
                 alert_metrics[i].unit, alert_metrics[i].band);
        if (strstr(text, row) == NULL)
            fail_msg("docs/watch.md has no row \"%s\"", row);
    }
    for (size_t i = 0; i < ARRAY_SIZE(vars); i++) {
        char row[64];

        snprintf(row, sizeof(row), "| `GPUDOCTOR_ALERT_%s` |", vars[i]);
        if (strstr(text, row) == NULL)
            fail_msg("docs/watch.md has no row \"%s\"", row);
    }
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_findings),
        cmocka_unit_test(test_parse_metrics),
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_one_firing_per_episode),
        cmocka_unit_test(test_for_duration_and_subjects),
        cmocka_unit_test(test_severity_alerts),
        cmocka_unit_test(test_metric_hysteresis),
        cmocka_unit_test(test_runner_environment_and_argv),
        cmocka_unit_test(test_runner_failures_and_timeout),
        cmocka_unit_test(test_docs_list_readings_and_variables),
    };

    return cmocka_run_group_tests(tests, make_tmp, remove_tmp);
}
