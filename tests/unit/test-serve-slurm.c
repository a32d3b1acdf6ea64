/*
 * slurm-check's parts: reading `scontrol show node -o` as Slurm 22.05 writes it, the drain and
 * resume decisions, the reason text, which findings drain a node (node faults, not a job's
 * problems, unless slurm_drain says otherwise), and running a program through execve with a
 * deadline.
 */
#include "cmd/cmd.h"
#include "cmd/slurm.h"
#include "rules/config.h"
#include "util/fileio.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* Real output of Slurm 22.05 (scontrol show node -o), a drained node and an idle one. */
#define HEAD                                                                                       \
    "NodeName=gpu07 Arch=x86_64 CoresPerSocket=1  CPUAlloc=0 CPUEfctv=1 CPUTot=1 CPULoad=0.96 "    \
    "AvailableFeatures=(null) ActiveFeatures=(null) Gres=(null) NodeAddr=127.0.0.1 "               \
    "NodeHostName=gpu07 Version=22.05.8 OS=Linux 6.1.0 #1 SMP PREEMPT_DYNAMIC @0  RealMemory=1 "   \
    "AllocMem=0 FreeMem=22763 Sockets=1 Boards=1 "
#define TAIL                                                                                       \
    " ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A Partitions=debug  "              \
    "BootTime=2026-12-02T09:19:00 SlurmdStartTime=2026-12-02T10:19:32 "                            \
    "LastBusyTime=2026-12-02T10:19:32 CfgTRES=cpu=1,mem=1M,billing=1 AllocTRES= CapWatts=n/a "     \
    "CurrentWatts=0 AveWatts=0 ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s"

static void test_parse(void **state)
{
    struct slurm_node n;
    char *cause = NULL;

    (void)state;
    assert_int_equal(slurm_parse_node(HEAD "State=IDLE" TAIL "\n", &n, &cause), 0);
    assert_string_equal(n.name, "gpu07");
    assert_string_equal(n.state, "IDLE");
    assert_null(n.reason);
    assert_false(n.drain);
    slurm_node_free(&n);

    assert_int_equal(slurm_parse_node(HEAD "State=IDLE+DRAIN" TAIL
                                           " Reason=gpudoctor: GPU 3 [lost] x=y "
                                           "[root@2026-12-02T10:19:37]\n",
                                      &n, &cause),
                     0);
    assert_string_equal(n.state, "IDLE+DRAIN");
    assert_true(n.drain);
    assert_string_equal(n.reason, "gpudoctor: GPU 3 [lost] x=y");
    assert_true(slurm_reason_is_ours(n.reason));
    slurm_node_free(&n);

    assert_int_equal(slurm_parse_node(HEAD "State=MIXED+DRAIN+NOT_RESPONDING" TAIL
                                           " Reason=Kill task failed [slurm@2026-01-01T00:00:00]",
                                      &n, &cause),
                     0);
    assert_true(n.drain);
    assert_string_equal(n.reason, "Kill task failed");
    assert_false(slurm_reason_is_ours(n.reason));
    slurm_node_free(&n);

    /* a reason without Slurm's stamp, and the (null) Slurm prints for none */
    assert_int_equal(slurm_parse_node("NodeName=a State=DOWN Reason=maintenance", &n, &cause), 0);
    assert_string_equal(n.reason, "maintenance");
    assert_false(n.drain);
    slurm_node_free(&n);
    assert_int_equal(slurm_parse_node("NodeName=a State=DRAINING Reason=(null)", &n, &cause), 0);
    assert_null(n.reason);
    assert_true(n.drain);
    slurm_node_free(&n);
    /* someone else's reason is printed in our line: made safe */
    assert_int_equal(
        slurm_parse_node("NodeName=a State=DOWN Reason=x\x1b[2J\xc2\x9by\r", &n, &cause), 0);
    assert_string_equal(n.reason, "x?[2J??y?");
    slurm_node_free(&n);
    /* NextState= is not State= */
    assert_int_equal(slurm_parse_node("NodeName=a NextState=DRAIN State=IDLE", &n, &cause), 0);
    assert_string_equal(n.state, "IDLE");
    slurm_node_free(&n);

    assert_int_equal(slurm_parse_node("Node gpu99 not found\n", &n, &cause), -1);
    assert_non_null(strstr(cause, "NodeName"));
    free(cause);
    cause = NULL;
    assert_int_equal(slurm_parse_node("NodeName=a Arch=x86_64", &n, &cause), -1);
    assert_non_null(strstr(cause, "State"));
    free(cause);
    cause = NULL;
    /* What an answer that is not one quotes reaches the terminal: escapes and the line's end shown,
     * not sent */
    assert_int_equal(slurm_parse_node("\x1b[2J\x1b]0;OWNED\x07 garbage\nmore", &n, &cause), -1);
    assert_string_equal(cause, "scontrol's answer has no NodeName: "
                               "'\\x1b[2J\\x1b]0;OWNED\\x07 garbage\\x0amore'");
    free(cause);
}

static void test_decide(void **state)
{
    char n[] = "n", idle_s[] = "IDLE", drain_s[] = "IDLE+DRAIN", ours_r[] = "gpudoctor: GPU 3 lost",
         theirs_r[] = "bad DIMM", old_r[] = "gpudoctor: old";
    struct slurm_node idle = { n, idle_s, NULL, false };
    struct slurm_node ours = { n, drain_s, ours_r, true };
    struct slurm_node theirs = { n, drain_s, theirs_r, true };
    struct slurm_node ours_undrained = { n, idle_s, old_r, false };
    const char *why = NULL;

    (void)state;
    assert_int_equal(slurm_decide(&idle, EXIT_CRITICAL, "gpudoctor: GPU 3 lost", &why),
                     SLURM_DRAIN);
    assert_int_equal(slurm_decide(&ours, EXIT_CRITICAL, "gpudoctor: GPU 3 lost", &why),
                     SLURM_NOTHING);
    assert_int_equal(slurm_decide(&ours, EXIT_CRITICAL, "gpudoctor: XID 79", &why), SLURM_DRAIN);
    assert_int_equal(slurm_decide(&theirs, EXIT_CRITICAL, "gpudoctor: XID 79", &why),
                     SLURM_NOTHING);
    assert_non_null(strstr(why, "someone else"));
    /* healthy, or only warnings: undo our own drain, never another's */
    assert_int_equal(slurm_decide(&ours, EXIT_HEALTHY, NULL, &why), SLURM_RESUME);
    assert_int_equal(slurm_decide(&ours, EXIT_WARNING, NULL, &why), SLURM_RESUME);
    assert_int_equal(slurm_decide(&theirs, EXIT_HEALTHY, NULL, &why), SLURM_NOTHING);
    assert_int_equal(slurm_decide(&idle, EXIT_HEALTHY, NULL, &why), SLURM_NOTHING);
    assert_int_equal(slurm_decide(&ours_undrained, EXIT_HEALTHY, NULL, &why), SLURM_NOTHING);
    /* critical, but only jobs' problems (no reason): no drain; our own drain is undone */
    assert_int_equal(slurm_decide(&idle, EXIT_CRITICAL, NULL, &why), SLURM_NOTHING);
    assert_non_null(strstr(why, "jobs only"));
    assert_int_equal(slurm_decide(&ours, EXIT_CRITICAL, NULL, &why), SLURM_RESUME);
    assert_int_equal(slurm_decide(&theirs, EXIT_CRITICAL, NULL, &why), SLURM_NOTHING);
    /* could not check: leave it as it is, whoever drained it */
    assert_int_equal(slurm_decide(&ours, EXIT_UNKNOWN, NULL, &why), SLURM_NOTHING);
    assert_int_equal(slurm_decide(&idle, EXIT_UNKNOWN, NULL, &why), SLURM_NOTHING);
}

static struct rule fake_rule = { .id = "health.test", .title = "generic title" };

static void add(struct findings *f, enum severity sev, const char *title)
{
    xgrow(&f->items, &f->cap, f->n + 1, sizeof(*f->items));
    memset(&f->items[f->n], 0, sizeof(f->items[0]));
    f->items[f->n].rule = &fake_rule;
    f->items[f->n].severity = sev;
    f->items[f->n].title = title ? xstrdup(title) : NULL;
    f->items[f->n].subject.gpu_index = -1;
    f->items[f->n].subject.pid = -1;
    f->n++;
}

static void test_reason(void **state)
{
    struct findings f = { 0 };
    char long_title[400], *r;

    (void)state;
    add(&f, SEV_WARNING, "only a warning");
    assert_null(slurm_reason(&f, NULL));
    add(&f, SEV_CRITICAL, "GPU 3 fell off the bus\n(XID 79)");
    r = slurm_reason(&f, NULL);
    assert_string_equal(r, "gpudoctor: GPU 3 fell off the bus (XID 79)");
    free(r);
    add(&f, SEV_CRITICAL, NULL);
    add(&f, SEV_CRITICAL, "third");
    r = slurm_reason(&f, NULL);
    assert_string_equal(r, "gpudoctor: GPU 3 fell off the bus (XID 79) (+2 more)");
    findings_free(&f);
    free(r);

    /* no control byte reaches scontrol: C0 become spaces, C1 (CSI) and invalid UTF-8 '?' */
    memset(&f, 0, sizeof(f));
    add(&f, SEV_CRITICAL,
        "pid 7 (\x1b[31mroot\x07\r\xc2\x9b"
        "2J\xff)");
    r = slurm_reason(&f, NULL);
    assert_string_equal(r, "gpudoctor: pid 7 ( [31mroot  ??2J?)");
    findings_free(&f);
    free(r);

    /* long titles are cut on a character boundary */
    memset(&f, 0, sizeof(f));
    memset(long_title, 'x', sizeof(long_title));
    for (size_t i = 180; i + 3 < sizeof(long_title); i += 3)
        memcpy(long_title + i, "\xe2\x82\xac", 3); /* € */
    long_title[sizeof(long_title) - 1] = '\0';
    add(&f, SEV_CRITICAL, long_title);
    r = slurm_reason(&f, NULL);
    assert_true(strlen(r) <= SLURM_REASON_MAX);
    assert_true(strncmp(r + strlen(r) - 3, "...", 3) == 0);
    assert_true(((unsigned char)r[strlen(r) - 4] & 0xc0) != 0xc0); /* no cut lead byte */
    assert_true(strncmp(r, SLURM_REASON_PREFIX "xxx", strlen(SLURM_REASON_PREFIX) + 3) == 0);
    free(r);
    findings_free(&f);
}

/* Every rule of the catalogue is a node fault or a job problem, and the table names no other. */
static void test_scope_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < n_rules; i++) {
        if (slurm_rule_scope(rule_table[i]) < 0)
            fail_msg("rule %s is neither a node fault nor a job problem in cmd-slurm.c's table",
                     rule_table[i]->id);
    }
    assert_int_equal(slurm_rule_scopes(), n_rules); /* no id the catalogue lacks, none twice */
    assert_int_equal(slurm_rule_scope(rule_find("health.gpu-lost")), 1);
    assert_int_equal(slurm_rule_scope(rule_find("fabric.switch-not-initialized")), 1);
    assert_int_equal(slurm_rule_scope(rule_find("proc.stopped-holder")), 0);
    assert_int_equal(slurm_rule_scope(&fake_rule), -1);
}

/* The line of text that starts with prefix, as a new string; fails the test when none does. */
static char *line_of(const char *text, const char *prefix)
{
    for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        if (strncmp(p, prefix, strlen(prefix)) == 0)
            return xstrndup(p, strcspn(p, "\n"));
    }
    fail_msg("docs/slurm.md has no line starting '%s'", prefix);
    return NULL;
}

/* docs/slurm.md's table says what the code does: each rule in the row of its kind, only there. */
static void test_scope_docs(void **state)
{
    char *text = NULL, *node, *job;

    (void)state;
    assert_true(file_slurp_at(AT_FDCWD, TEST_SOURCE_DIR "/docs/slurm.md", 1u << 20, &text) > 0);
    node = line_of(text, "| node fault: drains |");
    job = line_of(text, "| job problem: does not drain |");
    for (size_t i = 0; i < n_rules; i++) {
        char *quoted = xasprintf("`%s`", rule_table[i]->id);
        bool is_node = slurm_rule_scope(rule_table[i]) == 1;

        if (strstr(is_node ? node : job, quoted) == NULL || strstr(is_node ? job : node, quoted))
            fail_msg("docs/slurm.md: %s belongs in the %s row, and only there", rule_table[i]->id,
                     is_node ? "node fault" : "job problem");
        free(quoted);
    }
    free(node);
    free(job);
    free(text);
}

/* A finding of rule id at severity sev. */
static struct finding finding_of(const char *id, enum severity sev)
{
    struct finding f;

    memset(&f, 0, sizeof(f));
    f.rule = rule_find(id);
    assert_non_null(f.rule);
    f.severity = sev;
    return f;
}

static struct config policy(const char *value)
{
    struct config c;
    char *set = xasprintf("slurm_drain=%s", value), *cause = NULL;

    config_init(&c);
    if (config_set(&c, set, &cause) != 0)
        fail_msg("%s: %s", set, cause);
    free(set);
    return c;
}

static void test_policy(void **state)
{
    struct finding stopped = finding_of("proc.stopped-holder", SEV_CRITICAL);
    struct finding lost = finding_of("health.gpu-lost", SEV_CRITICAL);
    struct finding xid_warning = finding_of("health.xid", SEV_WARNING);
    struct finding zombie = finding_of("proc.zombie-holder", SEV_CRITICAL);
    struct findings f = { 0 };
    struct config c;
    char *cause = NULL, *r;

    (void)state;
    /* the default: node faults drain, a job's stopped process does not, warnings never */
    assert_true(slurm_drains(&lost, NULL));
    assert_false(slurm_drains(&stopped, NULL));
    assert_false(slurm_drains(&xid_warning, NULL));
    c = policy("node-faults");
    assert_true(slurm_drains(&lost, &c.slurm_drain));
    assert_false(slurm_drains(&stopped, &c.slurm_drain));
    config_free(&c);
    /* critical: every critical finding, as before; minus one rule */
    c = policy("critical, -proc.zombie-holder");
    assert_true(slurm_drains(&stopped, &c.slurm_drain));
    assert_true(slurm_drains(&lost, &c.slurm_drain));
    assert_false(slurm_drains(&zombie, &c.slurm_drain));
    assert_false(slurm_drains(&xid_warning, &c.slurm_drain));
    config_free(&c);
    /* node faults, plus a job rule, minus a node rule */
    c = policy("node-faults proc.zombie-holder -health.gpu-lost");
    assert_true(slurm_drains(&zombie, &c.slurm_drain));
    assert_false(slurm_drains(&lost, &c.slurm_drain));
    assert_false(slurm_drains(&stopped, &c.slurm_drain));
    config_free(&c);
    /* the reason names the first finding that drains, counts only those */
    c = policy("node-faults");
    xgrow(&f.items, &f.cap, 3, sizeof(*f.items));
    f.items[0] = stopped;
    f.items[0].title = xstrdup("GPU 3 memory held by stopped process 4121");
    f.items[1] = lost;
    f.items[1].title = xstrdup("GPU 5 has fallen off the bus");
    f.items[2] = finding_of("proc.zombie-holder", SEV_CRITICAL);
    f.items[2].title = xstrdup("GPU 1 memory held by a zombie");
    f.n = 3;
    r = slurm_reason(&f, &c.slurm_drain);
    assert_string_equal(r, "gpudoctor: GPU 5 has fallen off the bus");
    free(r);
    f.items[1].severity = SEV_WARNING;
    assert_null(slurm_reason(&f, &c.slurm_drain)); /* critical, but jobs' only: no drain */
    findings_free(&f);
    config_free(&c);
    /* bad values: said, the policy kept */
    config_init(&c);
    assert_int_equal(config_set(&c, "slurm_drain=everything", &cause), -1);
    assert_non_null(strstr(cause, "'everything' is not node-faults, critical, a rule id"));
    free(cause);
    assert_int_equal(config_set(&c, "slurm_drain=proc.zombie-holder", &cause), -1);
    assert_non_null(strstr(cause, "name node-faults or critical"));
    free(cause);
    assert_int_equal(config_set(&c, "slurm_drain=critical,node-faults", &cause), -1);
    free(cause);
    assert_int_equal(config_set(&c, "slurm_drian=critical", &cause), -1);
    assert_non_null(strstr(cause, "did you mean 'slurm_drain'"));
    free(cause);
    assert_null(c.slurm_drain.rules);
    assert_false(c.slurm_drain.every_critical);
    config_free(&c);
}

static void test_run(void **state)
{
    const char *echo[] = { "/bin/echo", "a b", "Reason=x y", NULL };
    const char *sh_fail[] = { "/bin/sh", "-c", "echo oops >&2; exit 4", NULL };
    const char *slow[] = { "/bin/sleep", "10", NULL };
    const char *quiet_slow[] = { "/bin/sh", "-c", "exec >/dev/null 2>&1; sleep 10", NULL };
    const char *missing[] = { "/nonexistent/scontrol", NULL };
    char *out = NULL, *cause = NULL;
    int64_t t0;

    (void)state;
    /* arguments arrive as given: no shell splits them */
    assert_int_equal(slurm_run(echo, 5000, &out, &cause), 0);
    assert_string_equal(out, "a b Reason=x y\n");
    free(out);
    assert_int_equal(slurm_run(sh_fail, 5000, &out, &cause), 4);
    assert_string_equal(out, "oops\n");
    free(out);
    t0 = time_mono_ms();
    assert_int_equal(slurm_run(slow, 300, &out, &cause), -1);
    assert_true(time_mono_ms() - t0 < 3000);
    assert_non_null(strstr(cause, "did not finish"));
    free(cause);
    cause = NULL;
    /* its output closed is not its end: the deadline holds until it exits */
    t0 = time_mono_ms();
    assert_int_equal(slurm_run(quiet_slow, 300, &out, &cause), -1);
    assert_true(time_mono_ms() - t0 < 3000);
    assert_non_null(strstr(cause, "did not finish"));
    free(cause);
    cause = NULL;
    assert_int_equal(slurm_run(missing, 5000, &out, &cause), -1);
    assert_non_null(strstr(cause, "/nonexistent/scontrol"));
    free(cause);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),      cmocka_unit_test(test_decide),
        cmocka_unit_test(test_reason),     cmocka_unit_test(test_scope_table),
        cmocka_unit_test(test_scope_docs), cmocka_unit_test(test_policy),
        cmocka_unit_test(test_run),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
