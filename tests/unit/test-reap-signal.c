/*
 * reap_execute and reap_one on real child processes: one that ends on SIGTERM, one that
 * ignores it (SIGKILL after the grace period), a stopped one (SIGCONT after SIGTERM), a planned
 * start time that is not the live one (nothing sent), a process already gone, a target the plan
 * refused, and (as root) a process whose owner changed after the plan (refused on the live
 * re-check), and a parent whose defunct child is not the one selected any more. Then watch's
 * entry, reap_one, on a snapshot that lists a child as a GPU process, and a plan that changed
 * between the confirmation and the answer.
 */
#include "reap/reap.h"
#include "util/fileio.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <fcntl.h>
#include <jansson.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

enum child_kind { PLAIN, IGNORE_TERM, AS_NOBODY };

/* A child that pauses forever, ready (its handlers set) when this returns. */
static pid_t child(enum child_kind kind)
{
    int fds[2];
    pid_t pid;
    char c;

    assert_int_equal(pipe(fds), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        if (kind == IGNORE_TERM)
            signal(SIGTERM, SIG_IGN);
        if (kind == AS_NOBODY && (setgid(65534) != 0 || setuid(65534) != 0))
            _exit(1);
        if (write(fds[1], "r", 1) != 1)
            _exit(1);
        for (;;)
            pause();
    }
    close(fds[1]);
    assert_int_equal(read(fds[0], &c, 1), 1);
    close(fds[0]);
    return pid;
}

/* A target for pid as the plan would make it: its live identity, to be signalled. */
static void target_of(struct reap_target *t, pid_t pid)
{
    int proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    struct reap_facts f;

    assert_int_equal(reap_facts_read(proc_fd, (int32_t)pid, &f, NULL), 0);
    close(proc_fd);
    memset(t, 0, sizeof(*t));
    t->pid = (int32_t)pid;
    t->start_ticks = f.start_ticks;
    t->start_time_ms = -1;
    t->disposition = REAP_SIGNAL;
    t->state = f.state;
    t->have_uid = true;
    t->uid = f.uid;
    t->user = (char *)"me";
    t->command = (char *)"test child";
    reap_facts_free(&f);
}

/* How the child ended: the signal that killed it, or -1 when it is still there. */
static int ended_by(pid_t pid)
{
    int status;

    if (waitpid(pid, &status, WNOHANG) != pid)
        return -1;
    return WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}

static void end_child(pid_t pid)
{
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

static struct reap_guard g;

static int setup(void **state)
{
    (void)state;
    reap_guard_init(&g, false);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    reap_guard_free(&g);
    return 0;
}

static void test_sigterm(void **state)
{
    struct reap_exec x = { 2000, 2000, &g, false };
    struct reap_target t;
    struct reap_result r;
    pid_t pid = child(PLAIN);

    (void)state;
    target_of(&t, pid);
    reap_execute(&t, &x, &r);
    assert_int_equal(r.outcome, REAP_OUT_EXITED);
    assert_int_equal(r.last_signal, SIGTERM);
    assert_true(reap_outcome_ended(r.outcome));
    assert_non_null(strstr(r.detail, "exited after SIGTERM"));
    assert_int_equal(ended_by(pid), SIGTERM);
    reap_result_free(&r);
}

static void test_sigkill_after_grace(void **state)
{
    struct reap_exec x = { 300, 2000, &g, false };
    struct reap_target t;
    struct reap_result r;
    pid_t pid = child(IGNORE_TERM);

    (void)state;
    target_of(&t, pid);
    reap_execute(&t, &x, &r);
    assert_int_equal(r.outcome, REAP_OUT_KILLED);
    assert_int_equal(r.last_signal, SIGKILL);
    assert_true(r.elapsed_ms >= 300);
    assert_string_equal(r.detail, "killed: it ignored SIGTERM for 0.3 s");
    assert_int_equal(ended_by(pid), SIGKILL);
    reap_result_free(&r);
}

static void test_stopped(void **state)
{
    struct reap_exec x = { 2000, 2000, &g, false };
    struct reap_target t;
    struct reap_result r;
    pid_t pid = child(PLAIN);
    int status;

    (void)state;
    kill(pid, SIGSTOP);
    assert_int_equal(waitpid(pid, &status, WUNTRACED), pid);
    assert_true(WIFSTOPPED(status));
    target_of(&t, pid);
    assert_int_equal(t.state, 'T');
    /* Without the SIGCONT that follows, SIGTERM would wait, and SIGKILL would come at 2 s. */
    reap_execute(&t, &x, &r);
    assert_int_equal(r.outcome, REAP_OUT_EXITED);
    assert_true(r.elapsed_ms < 1500);
    assert_int_equal(ended_by(pid), SIGTERM);
    reap_result_free(&r);
}

static void test_changed_identity(void **state)
{
    struct reap_exec x = { 200, 200, &g, false };
    struct reap_target t;
    struct reap_result r;
    pid_t pid = child(PLAIN);
    char *want;

    (void)state;
    target_of(&t, pid);
    t.start_ticks += 1; /* what was planned is not what runs at that pid now */
    reap_execute(&t, &x, &r);
    assert_int_equal(r.outcome, REAP_OUT_CHANGED);
    assert_int_equal(r.last_signal, 0);
    want = xasprintf("pid %d is another process now (start time %llu, the one selected: %llu): "
                     "not signalled",
                     (int)pid, (unsigned long long)t.start_ticks - 1,
                     (unsigned long long)t.start_ticks);
    assert_string_equal(r.detail, want);
    free(want);
    time_sleep_ms(100);
    assert_int_equal(ended_by(pid), -1); /* untouched */
    end_child(pid);
    reap_result_free(&r);
}

static void test_gone_and_refused(void **state)
{
    struct reap_exec x = { 200, 200, &g, false };
    struct reap_target t;
    struct reap_result r;
    pid_t pid = child(PLAIN);

    (void)state;
    target_of(&t, pid);
    end_child(pid);
    reap_execute(&t, &x, &r);
    assert_int_equal(r.outcome, REAP_OUT_GONE);
    assert_true(reap_outcome_ended(r.outcome));
    reap_result_free(&r);

    /* A target the plan refused is never signalled, whatever else holds. */
    pid = child(PLAIN);
    target_of(&t, pid);
    t.disposition = REAP_REFUSED;
    t.advice = (char *[]){ (char *)"protected: Xorg" };
    t.n_advice = 1;
    reap_execute(&t, &x, &r);
    assert_int_equal(r.outcome, REAP_OUT_REFUSED);
    assert_string_equal(r.detail, "not signalled: protected: Xorg");
    time_sleep_ms(100);
    assert_int_equal(ended_by(pid), -1);
    end_child(pid);
    reap_result_free(&r);

    /* gpudoctor itself, were it ever planned: the live check refuses it. */
    target_of(&t, getpid());
    reap_execute(&t, &x, &r);
    assert_int_equal(r.outcome, REAP_OUT_REFUSED);
    assert_string_equal(r.detail, "not signalled: gpudoctor itself");
    reap_result_free(&r);
}

/* As root: a process whose owner is not the one planned is refused on the live re-check. */
static void test_owner_rechecked(void **state)
{
    struct reap_exec x = { 200, 200, &g, false };
    struct reap_target t;
    struct reap_result r;
    pid_t pid;

    (void)state;
    if (geteuid() != 0)
        skip();
    pid = child(AS_NOBODY);
    target_of(&t, pid);
    t.uid = 0; /* planned as root's own */
    reap_execute(&t, &x, &r);
    assert_int_equal(r.outcome, REAP_OUT_REFUSED);
    assert_non_null(strstr(r.detail, "belongs to uid 65534, not to you"));
    time_sleep_ms(100);
    assert_int_equal(ended_by(pid), -1);
    end_child(pid);
    reap_result_free(&r);
}

/* A snapshot (from the corpus) whose one GPU process is the child pid, as it runs now. */
static struct snapshot *snapshot_with(pid_t pid, uint64_t start_ticks, uint32_t uid)
{
    json_error_t e;
    json_t *root =
        json_load_file(TEST_SOURCE_DIR "/tests/scenarios/zombie-holder/snapshot.json", 0, &e);
    json_t *procs, *rec = NULL, *gp;
    struct snapshot *s;
    char *text, *cause = NULL;
    size_t i;

    assert_non_null(root);
    procs = json_object_get(json_object_get(root, "processes"), "processes");
    json_array_foreach(procs, i, gp)
    {
        if (json_integer_value(json_object_get(gp, "pid")) == 6000)
            rec = json_incref(gp);
    }
    assert_non_null(rec);
    json_object_set_new(rec, "pid", json_integer(pid));
    json_object_set_new(rec, "ppid", json_integer(getpid()));
    json_object_set_new(rec, "start_ticks", json_integer((json_int_t)start_ticks));
    json_object_set_new(rec, "uid", json_integer(uid));
    json_array_clear(procs);
    json_array_append_new(procs, rec);
    json_array_foreach(json_object_get(root, "gpus"), i, gp)
    {
        json_t *list = json_object_get(gp, "processes");

        if (i == 1)
            json_object_set_new(json_array_get(list, 0), "pid", json_integer(pid));
        else
            json_array_clear(list);
    }
    text = json_dumps(root, 0);
    s = snapshot_from_json(text, strlen(text), "test", &cause);
    if (s == NULL)
        fail_msg("%s", cause);
    free(text);
    json_decref(root);
    return s;
}

/* A child that does not reap its own child, which has exited: *zombie is the defunct one. */
static pid_t zombie_parent(pid_t *zombie)
{
    int fds[2];
    pid_t pid, z;
    char path[64], buf[256];

    assert_int_equal(pipe(fds), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        z = fork();
        if (z == 0)
            _exit(0);
        if (write(fds[1], &z, sizeof(z)) != (ssize_t)sizeof(z))
            _exit(1);
        for (;;)
            pause();
    }
    close(fds[1]);
    assert_int_equal(read(fds[0], zombie, sizeof(*zombie)), (ssize_t)sizeof(*zombie));
    close(fds[0]);
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)*zombie);
    for (int i = 0; i < 200; i++) { /* until it has exited */
        FILE *f = fopen(path, "r");
        char *rp = f && fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;

        if (f)
            fclose(f);
        if (rp && rp[1] == ' ' && rp[2] == 'Z')
            break;
        usleep(10000);
    }
    return pid;
}

/*
 * A parent is signalled for its defunct children only while one of them is still there, the same
 * one and defunct: not when each pid it was selected for is another process, or not defunct; and
 * that is not counted as ended (the parent is still there). One of two still there is enough.
 */
static void test_parent_rechecks_zombie(void **state)
{
    struct reap_exec x = { 2000, 2000, &g, false };
    struct reap_target t, zt, lt;
    struct reap_child kids[2];
    struct reap_result r;
    pid_t z, live = child(PLAIN), parent = zombie_parent(&z);

    (void)state;
    target_of(&zt, z);
    target_of(&lt, live);
    target_of(&t, parent);
    t.role = REAP_ROLE_PARENT;
    t.gpu_pid = (int32_t)z;
    t.defunct = kids;

    /* The start time the plan saw is not the defunct process's now: not signalled. */
    kids[0] = (struct reap_child){ (int32_t)z, zt.start_ticks + 1 };
    t.n_defunct = 1;
    reap_execute(&t, &x, &r);
    assert_int_equal(r.outcome, REAP_OUT_CHANGED);
    assert_false(reap_outcome_ended(r.outcome));
    assert_non_null(strstr(r.detail, "is no longer there as it was selected"));
    assert_int_equal(ended_by(parent), -1);
    reap_result_free(&r);

    /* The pids are a live process, not a defunct one (reaped, the pid reused), and the same
     * defunct one with another start time: not signalled. */
    kids[0] = (struct reap_child){ (int32_t)live, lt.start_ticks };
    kids[1] = (struct reap_child){ (int32_t)z, zt.start_ticks + 1 };
    t.n_defunct = 2;
    reap_execute(&t, &x, &r);
    assert_int_equal(r.outcome, REAP_OUT_CHANGED);
    assert_non_null(strstr(r.detail, "are no longer there as they were selected"));
    assert_int_equal(ended_by(parent), -1);
    reap_result_free(&r);

    /* The first is gone, the second is still its defunct child: the parent is ended. */
    kids[1].start_ticks = zt.start_ticks;
    reap_execute(&t, &x, &r);
    assert_int_equal(r.outcome, REAP_OUT_EXITED);
    assert_int_equal(ended_by(parent), SIGTERM);
    reap_result_free(&r);
    end_child(live);
}

static void test_reap_one(void **state)
{
    struct reap_one_opts o = { 300, false, true, false, 0 };
    struct reap_target t;
    struct reap_result r;
    struct snapshot *s;
    pid_t pid = child(IGNORE_TERM);

    (void)state;
    target_of(&t, pid);
    s = snapshot_with(pid, t.start_ticks, (uint32_t)geteuid());

    /* Dry run: what would be done, nothing done. */
    assert_int_equal(reap_one(s, (int32_t)pid, t.start_ticks, &o, &r), 0);
    assert_int_equal(r.outcome, REAP_OUT_DECLINED);
    assert_non_null(strstr(r.detail, "would send SIGTERM (SIGKILL after 0 s) to pid"));
    assert_int_equal(ended_by(pid), -1);
    reap_result_free(&r);

    /* A view that shows another start time for that pid: refused, nothing sent. */
    o.dry_run = false;
    assert_int_equal(reap_one(s, (int32_t)pid, t.start_ticks + 9, &o, &r), -1);
    assert_int_equal(r.outcome, REAP_OUT_CHANGED);
    reap_result_free(&r);
    assert_int_equal(ended_by(pid), -1);

    /* The plan the dry run showed is not the one reap would carry out now: nothing sent. */
    o.dry_run = true;
    assert_int_equal(reap_one(s, (int32_t)pid, t.start_ticks, &o, &r), 0);
    o.expect_plan = r.plan_id;
    assert_true(o.expect_plan != 0);
    reap_result_free(&r);
    o.dry_run = false;
    o.expect_plan ^= 1;
    assert_int_equal(reap_one(s, (int32_t)pid, t.start_ticks, &o, &r), -1);
    assert_int_equal(r.outcome, REAP_OUT_CHANGED);
    assert_non_null(strstr(r.detail, "changed since it was shown"));
    assert_int_equal(ended_by(pid), -1);
    reap_result_free(&r);
    o.expect_plan ^= 1;

    /* For real: SIGTERM is ignored, SIGKILL after the grace period ends it. */
    assert_int_equal(reap_one(s, (int32_t)pid, t.start_ticks, &o, &r), 0);
    assert_int_equal(r.outcome, REAP_OUT_KILLED);
    assert_int_equal(ended_by(pid), SIGKILL);
    reap_result_free(&r);
    snapshot_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sigterm),
        cmocka_unit_test(test_sigkill_after_grace),
        cmocka_unit_test(test_stopped),
        cmocka_unit_test(test_changed_identity),
        cmocka_unit_test(test_gone_and_refused),
        cmocka_unit_test(test_owner_rechecked),
        cmocka_unit_test(test_parent_rechecks_zombie),
        cmocka_unit_test(test_reap_one),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
