/*
 * The reap plan on the scenario corpus (what a policy selects, what the filters keep, what the
 * safety checks refuse, what a named pid gets) and on fixture /proc trees for the defunct cases:
 * a thread stuck in D (nothing helps: advice), a live thread (the process itself), a worker still
 * holding the device, a parent that does not reap, init as the parent (advice). Then the text
 * and JSON of a plan, and the memory freed.
 */
#include "reap/reap.h"
#include "rules/config.h"
#include "util/xalloc.h"

#include <fcntl.h>
#include <regex.h>
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

#define CORPUS TEST_SOURCE_DIR "/tests/scenarios"
#define GIB    1073741824ull

static int32_t no_ancestors[] = { 1 };

/* A guard for a gpudoctor that is none of the corpus's processes. */
static void guard(struct reap_guard *g, uint32_t uid, bool all_users)
{
    memset(g, 0, sizeof(*g));
    g->self = 999999;
    g->ancestors = no_ancestors;
    g->n_ancestors = 1;
    g->uid = uid;
    snprintf(g->user, sizeof(g->user), uid == 0 ? "root" : "uid %u", (unsigned)uid);
    g->root = uid == 0;
    g->all_users = all_users;
}

static struct proc *proc_of(struct snapshot *s, int32_t pid)
{
    struct proc *p = proc_table_find(&s->procs, pid);

    if (p == NULL) {
        fail_msg("no process %d", (int)pid);
        abort();
    }
    return p;
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

/* The plan for snapshot s under pol and g, read from proc_fd (-1: the snapshot only). */
static void plan_of(struct reap_plan *plan, const struct snapshot *s, const struct reap_policy *pol,
                    const struct reap_guard *g, int proc_fd)
{
    struct facts_judgement *j = NULL;
    struct thresholds th;
    size_t n;

    thresholds_init(&th);
    n = facts_judge_snapshot(s, NULL, &th, &j);
    reap_plan_build(plan, s, j, n, pol, g, proc_fd);
    free(j);
}

static const struct reap_target *target(const struct reap_plan *plan, int32_t pid)
{
    for (size_t i = 0; i < plan->n; i++) {
        if (plan->targets[i].pid == pid)
            return &plan->targets[i];
    }
    fail_msg("no target %d in the plan", (int)pid);
    abort(); /* fail_msg does not return */
}

static bool in_plan(const struct reap_plan *plan, int32_t pid)
{
    for (size_t i = 0; i < plan->n; i++) {
        if (plan->targets[i].pid == pid)
            return true;
    }
    return false;
}

static bool has_note(const struct reap_plan *plan, const char *text)
{
    for (size_t i = 0; i < plan->n_notes; i++) {
        if (strstr(plan->notes[i], text))
            return true;
    }
    return false;
}

static bool has_evidence(const struct reap_target *t, const char *text)
{
    for (size_t i = 0; i < t->n_evidence; i++) {
        if (strstr(t->evidence[i], text))
            return true;
    }
    return false;
}

/* ---- policies and filters ---- */

static void test_default_policy_stopped(void **state)
{
    struct snapshot *s = load_case("stopped-holder");
    struct reap_policy pol = { 0 };
    struct reap_guard g;
    struct reap_plan plan;
    const struct reap_target *t;

    (void)state;
    guard(&g, 0, true);
    plan_of(&plan, s, &pol, &g, -1);
    /* The stopped job and its stopped child; the eight busy ranks are not touched. */
    assert_int_equal(plan.n, 2);
    t = target(&plan, 4121);
    assert_int_equal(t->disposition, REAP_SIGNAL);
    assert_int_equal(t->role, REAP_ROLE_SELF);
    assert_int_equal(t->verdict, FACTS_VERDICT_STOPPED);
    assert_int_equal(t->state, 'T');
    assert_string_equal(t->user, "alice");
    assert_string_equal(t->command, "python train.py --lr 3e-4");
    assert_int_equal(t->n_gpus, 1);
    assert_int_equal(t->gpus[0], 3);
    assert_string_equal(t->why, "stopped (state T: Ctrl-Z or SIGSTOP), holding 71.2 GiB on GPU 3");
    assert_true(has_evidence(t, "started 2h13m ago"));
    assert_true(has_evidence(t, "CPU 0.0 % over the 2s window"));
    assert_int_equal(target(&plan, 4122)->disposition, REAP_SIGNAL);
    assert_int_equal(reap_plan_count(&plan, REAP_SIGNAL), 2);
    reap_plan_free(&plan);

    /* root without --all-users: alice's processes are refused, with the reason. */
    guard(&g, 0, false);
    plan_of(&plan, s, &pol, &g, -1);
    t = target(&plan, 4121);
    assert_int_equal(t->disposition, REAP_REFUSED);
    assert_int_equal(t->refusal, REAP_REFUSE_OTHER_USER);
    assert_string_equal(t->advice[0], "belongs to alice (uid 1000), not to you (root): add "
                                      "--all-users to end other users' processes");
    reap_plan_free(&plan);

    /* alice herself, not root: her own. */
    guard(&g, 1000, false);
    plan_of(&plan, s, &pol, &g, -1);
    assert_int_equal(reap_plan_count(&plan, REAP_SIGNAL), 2);
    reap_plan_free(&plan);

    /* Stopped by a debugger or tracer (t): someone's session, only with --stopped. */
    guard(&g, 0, true);
    proc_of(s, 4121)->state = 't';
    plan_of(&plan, s, &pol, &g, -1);
    assert_false(in_plan(&plan, 4121));
    assert_true(has_note(&plan, "pid 4121: stopped by a debugger or tracer (state t), not "
                                "selected: --stopped selects it"));
    reap_plan_free(&plan);
    pol.stopped = true;
    plan_of(&plan, s, &pol, &g, -1);
    assert_int_equal(target(&plan, 4121)->disposition, REAP_SIGNAL);
    reap_plan_free(&plan);

    /* Stopped in a Slurm job, which Slurm may have suspended: only with --stopped. */
    memset(&pol, 0, sizeof(pol));
    proc_of(s, 4121)->state = 'T';
    proc_of(s, 4121)->slurm_job_id = xstrdup("4411");
    plan_of(&plan, s, &pol, &g, -1);
    assert_false(in_plan(&plan, 4121));
    assert_true(has_note(&plan, "pid 4121: stopped in Slurm job 4411, which Slurm may have "
                                "suspended"));
    reap_plan_free(&plan);
    free(proc_of(s, 4121)->slurm_job_id);
    proc_of(s, 4121)->slurm_job_id = NULL;

    /* In T at the end but it used the CPU over the window (resumed, or stopped just now; strace
       stops a process at each system call): not stopped, and not selected. */
    memset(&pol, 0, sizeof(pol));
    proc_of(s, 4121)->state = 'T';
    proc_of(s, 4121)->cpu_pct = 23.0;
    plan_of(&plan, s, &pol, &g, -1);
    assert_false(in_plan(&plan, 4121));
    reap_plan_free(&plan);
    snapshot_free(s);
}

static size_t selected(const char *name, struct reap_policy *pol, int32_t *pids, size_t max)
{
    struct snapshot *s = load_case(name);
    struct reap_guard g;
    struct reap_plan plan;
    size_t n;

    guard(&g, 0, true);
    plan_of(&plan, s, pol, &g, -1);
    n = plan.n;
    for (size_t i = 0; i < n && i < max; i++)
        pids[i] = plan.targets[i].pid;
    reap_plan_free(&plan);
    snapshot_free(s);
    return n;
}

static void test_filters(void **state)
{
    struct reap_policy pol;
    int32_t pids[16];
    int32_t three = 3, zero = 0;
    char *pyth = (char *)"pyth*", *other = (char *)"java";
    regex_t re;

    (void)state;
    memset(&pol, 0, sizeof(pol));
    pol.has_min_mem = true;
    pol.min_mem_bytes = GIB; /* 4122 holds 410 MiB */
    assert_int_equal(selected("stopped-holder", &pol, pids, 16), 1);
    assert_int_equal(pids[0], 4121);

    memset(&pol, 0, sizeof(pol));
    pol.gpus = &three;
    pol.n_gpus = 1;
    assert_int_equal(selected("stopped-holder", &pol, pids, 16), 2);
    pol.gpus = &zero;
    assert_int_equal(selected("stopped-holder", &pol, pids, 16), 0);

    memset(&pol, 0, sizeof(pol));
    pol.user = "alice";
    assert_int_equal(selected("stopped-holder", &pol, pids, 16), 2);
    pol.user = "1000";
    assert_int_equal(selected("stopped-holder", &pol, pids, 16), 2);
    pol.user = "bob";
    assert_int_equal(selected("stopped-holder", &pol, pids, 16), 0);

    memset(&pol, 0, sizeof(pol));
    pol.names = &pyth;
    pol.n_names = 1;
    assert_int_equal(selected("stopped-holder", &pol, pids, 16), 2);
    pol.names = &other;
    assert_int_equal(selected("stopped-holder", &pol, pids, 16), 0);

    memset(&pol, 0, sizeof(pol));
    assert_int_equal(regcomp(&re, "--lr [0-9e-]+$", REG_EXTENDED | REG_NOSUB), 0);
    pol.match = &re;
    assert_int_equal(selected("stopped-holder", &pol, pids, 16), 2);
    regfree(&re);
    assert_int_equal(regcomp(&re, "--rank", REG_EXTENDED | REG_NOSUB), 0);
    assert_int_equal(selected("stopped-holder", &pol, pids, 16), 0);
    regfree(&re);
}

static void test_policies(void **state)
{
    struct reap_policy pol;
    struct snapshot *s;
    struct reap_guard g;
    struct reap_plan plan;
    int32_t pids[16];

    (void)state;
    guard(&g, 0, true);
    /* Orphans: the two idle workers, not the nohup job that works. */
    memset(&pol, 0, sizeof(pol));
    pol.orphaned = true;
    assert_int_equal(selected("orphan-holder", &pol, pids, 16), 2);
    assert_int_equal(pids[0], 9301);
    assert_int_equal(pids[1], 9302);
    /* --stopped alone does not take orphans, nor does the default: a job left to init by a
       closed session (nohup, a tmux pane) may be between two bursts of work. */
    memset(&pol, 0, sizeof(pol));
    pol.stopped = true;
    assert_int_equal(selected("orphan-holder", &pol, pids, 16), 0);
    memset(&pol, 0, sizeof(pol));
    assert_int_equal(selected("orphan-holder", &pol, pids, 16), 0);
    s = load_case("orphan-holder");
    plan_of(&plan, s, &pol, &g, -1);
    assert_true(has_note(&plan, "pid 9301: orphaned and idle, not selected: --orphaned or --idle"));
    reap_plan_free(&plan);
    snapshot_free(s);

    /* Idle holders only with --idle, and only for what the window proves. */
    s = load_case("idle-holder");
    memset(&pol, 0, sizeof(pol));
    plan_of(&plan, s, &pol, &g, -1);
    assert_int_equal(plan.n, 0);
    assert_true(has_note(&plan, "pid 7001: an idle holder, not selected: --idle DUR"));
    reap_plan_free(&plan);
    pol.idle = true;
    pol.idle_ms = 1000;
    plan_of(&plan, s, &pol, &g, -1);
    assert_int_equal(plan.n, 1);
    assert_int_equal(plan.targets[0].pid, 7001);
    assert_int_equal(plan.targets[0].verdict, FACTS_VERDICT_IDLE_HOLDER);
    reap_plan_free(&plan);
    pol.idle_ms = 600000;
    plan_of(&plan, s, &pol, &g, -1);
    assert_int_equal(plan.n, 0);
    assert_true(has_note(&plan, "pid 7001: idle over the 2s window, less than the 10m --idle"));
    reap_plan_free(&plan);
    /* The batch clean-up: idle and over a memory threshold, in one plan. */
    pol.idle_ms = 1000;
    pol.has_min_mem = true;
    pol.min_mem_bytes = 40 * GIB;
    plan_of(&plan, s, &pol, &g, -1);
    assert_int_equal(plan.n, 0); /* 7001 holds 31 GiB */
    reap_plan_free(&plan);
    pol.min_mem_bytes = 30 * GIB;
    plan_of(&plan, s, &pol, &g, -1);
    assert_int_equal(plan.n, 1);
    reap_plan_free(&plan);
    snapshot_free(s);

    /* Without a window idleness is unknown: nothing is selected, and the note says why. */
    s = load_case("idle-holder-no-window");
    memset(&pol, 0, sizeof(pol));
    pol.idle = true;
    pol.idle_ms = 1000;
    plan_of(&plan, s, &pol, &g, -1);
    assert_int_equal(plan.n, 0);
    assert_true(has_note(&plan, "idleness unknown"));
    reap_plan_free(&plan);
    snapshot_free(s);
}

static void test_named_pids(void **state)
{
    struct snapshot *s = load_case("stopped-holder");
    int32_t pids[] = { 48211, 1, 99999, 4121 };
    struct reap_policy pol = { 0 };
    struct reap_guard g;
    struct reap_plan plan;
    const struct reap_target *t;

    (void)state;
    guard(&g, 0, true);
    pol.pids = pids;
    pol.n_pids = ARRAY_SIZE(pids);
    plan_of(&plan, s, &pol, &g, -1);
    assert_int_equal(plan.n, 4); /* 4122 is not named: not taken */
    t = target(&plan, 48211);
    assert_int_equal(t->disposition, REAP_SIGNAL);
    assert_true(t->named);
    assert_true(has_evidence(t, "named by --pid: it is active, not stale"));
    t = target(&plan, 1);
    assert_int_equal(t->refusal, REAP_REFUSE_PID1);
    t = target(&plan, 99999);
    assert_int_equal(t->refusal, REAP_REFUSE_NOT_GPU);
    assert_int_equal(target(&plan, 4121)->disposition, REAP_SIGNAL);
    reap_plan_free(&plan);

    /* A named pid the filters reject is noted, not taken. */
    pol.pids = pids;
    pol.n_pids = 1;
    pol.has_min_mem = true;
    pol.min_mem_bytes = 70 * GIB;
    plan_of(&plan, s, &pol, &g, -1);
    assert_int_equal(plan.n, 0);
    assert_true(has_note(&plan, "pid 48211 (named by --pid): not selected: holds 62.0 GiB, less "
                                "than --min-mem 70.0 GiB"));
    reap_plan_free(&plan);

    /* A process NVML lists that /proc does not show: refused, with where to run instead. */
    proc_of(s, 48212)->valid = 0;
    pol.pids = (int32_t[]){ 48212 };
    pol.has_min_mem = false;
    plan_of(&plan, s, &pol, &g, -1);
    t = target(&plan, 48212);
    assert_int_equal(t->refusal, REAP_REFUSE_NOT_VISIBLE);
    assert_non_null(strstr(t->advice[0], "--pid=host"));
    reap_plan_free(&plan);
    snapshot_free(s);
}

/* Named processes in the table that use no GPU: a worker, a parent. */
static void test_named_related(void **state)
{
    struct snapshot *s = load_case("zombie-holder");
    int32_t pids[] = { 5100, 5121 };
    struct reap_policy pol = { .pids = pids, .n_pids = 2 };
    struct reap_guard g;
    struct reap_plan plan;

    (void)state;
    guard(&g, 0, true);
    plan_of(&plan, s, &pol, &g, -1);
    assert_int_equal(plan.n, 2);
    assert_string_equal(target(&plan, 5100)->why, "named by --pid: the parent of GPU process 5120");
    assert_string_equal(target(&plan, 5121)->why, "named by --pid: a worker of GPU process 5120");
    assert_int_equal(target(&plan, 5121)->disposition, REAP_SIGNAL);
    reap_plan_free(&plan);
    snapshot_free(s);
}

/*
 * NVML down (or the GPU lost): nothing is NVML-judged, and a device file held is all there is
 * to see. A named process that holds one is a GPU process; one that holds nothing is not.
 */
static void test_named_device_holder(void **state)
{
    struct snapshot *s = load_case("idle-holder");
    int32_t pids[] = { 7001 };
    struct reap_policy pol = { .pids = pids, .n_pids = 1 };
    struct reap_guard g;
    struct reap_plan plan;
    struct proc *p;

    (void)state;
    for (size_t i = 0; i < s->n_gpus; i++)
        s->gpus[i].n_procs = 0; /* NVML lists nothing */
    p = proc_of(s, 7001);
    for (size_t k = 0; k < p->n_gpus; k++) { /* its minor known, not which NVML index */
        p->gpus[k].nvml_listed = false;
        p->gpus[k].gpu_index = UINT32_MAX;
        p->gpus[k].valid &= ~(UINT64_C(1) << PROC_GPU_S_INDEX);
    }
    guard(&g, 0, true);
    plan_of(&plan, s, &pol, &g, -1);
    assert_int_equal(plan.n, 1);
    assert_int_equal(target(&plan, 7001)->disposition, REAP_SIGNAL);
    assert_string_equal(target(&plan, 7001)->why,
                        "named by --pid: has NVIDIA device files open, which NVML does not list");
    reap_plan_free(&plan);
    /* the same holding nothing: not a GPU process */
    p->holds_ctl = p->holds_uvm = false;
    for (size_t k = 0; k < p->n_gpus; k++)
        p->gpus[k].holds_device = false;
    plan_of(&plan, s, &pol, &g, -1);
    assert_int_equal(target(&plan, 7001)->disposition, REAP_REFUSED);
    assert_int_equal(target(&plan, 7001)->refusal, REAP_REFUSE_NOT_GPU);
    reap_plan_free(&plan);
    snapshot_free(s);
}

/* ---- defunct processes, on a fixture /proc ---- */

struct fixture {
    char dir[64];
    int proc_fd;
};

static void put(const struct fixture *fx, const char *rel, const char *text)
{
    char path[256];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", fx->dir, rel);
    for (char *p = strchr(path + strlen(fx->dir) + 1, '/'); p; p = strchr(p + 1, '/')) {
        *p = '\0';
        mkdir(path, 0755);
        *p = '/';
    }
    f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* /proc/PID/stat (and task/TID/stat for each thread state given) of a process. */
static void put_proc(const struct fixture *fx, int pid, const char *comm, char state, int ppid,
                     unsigned long long start, const char *threads, unsigned uid)
{
    char rel[64], text[512];

    snprintf(text, sizeof(text),
             "%d (%s) %c %d %d %d 0 -1 4194560 0 0 0 0 10 5 0 0 20 0 %zu 0 %llu 1000 100 "
             "18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n",
             pid, comm, state, ppid, pid, pid, strlen(threads), start);
    snprintf(rel, sizeof(rel), "%d/stat", pid);
    put(fx, rel, text);
    for (size_t i = 0; threads[i]; i++) {
        char t[512];
        int tid = pid + (int)i;

        snprintf(t, sizeof(t), "%d (%s) %c %s", tid, comm, threads[i], strchr(text, ')') + 4);
        snprintf(rel, sizeof(rel), "%d/task/%d/stat", pid, tid);
        put(fx, rel, t);
    }
    snprintf(text, sizeof(text), "Name:\t%s\nUid:\t%u\t%u\t%u\t%u\n", comm, uid, uid, uid, uid);
    snprintf(rel, sizeof(rel), "%d/status", pid);
    put(fx, rel, text);
}

static void fixture_open(struct fixture *fx)
{
    snprintf(fx->dir, sizeof(fx->dir), "/tmp/test-reap-plan.XXXXXX");
    assert_non_null(mkdtemp(fx->dir));
    fx->proc_fd = -1;
}

static void fixture_ready(struct fixture *fx)
{
    fx->proc_fd = open(fx->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    assert_true(fx->proc_fd >= 0);
}

static void fixture_close(struct fixture *fx)
{
    char *cmd = xasprintf("rm -rf '%s'", fx->dir);

    close(fx->proc_fd);
    assert_int_equal(system(cmd), 0);
    free(cmd);
}

#define ZOMBIE_START 16920000ull /* as the zombie-holder snapshot has them */

static void test_defunct(void **state)
{
    struct snapshot *s = load_case("zombie-holder");
    struct reap_policy pol = { .defunct = true };
    struct reap_guard g;
    struct reap_plan plan;
    struct fixture fx;
    const struct reap_target *t;
    struct proc *worker;

    (void)state;
    guard(&g, 0, true);

    /* From the snapshot alone: the parent, with the checks left for the live process. */
    plan_of(&plan, s, &pol, &g, -1);
    assert_int_equal(plan.n, 1);
    t = target(&plan, 5100);
    assert_int_equal(t->role, REAP_ROLE_PARENT);
    assert_int_equal(t->gpu_pid, 5120);
    assert_int_equal(t->disposition, REAP_SIGNAL);
    assert_string_equal(t->why, "parent of defunct process 5120 (holding 18.0 GiB on GPU 0), "
                                "which it does not reap: ending it lets init reap 5120 and free "
                                "the memory");
    assert_true(has_note(&plan, "pid 5120: thread states unknown"));
    reap_plan_free(&plan);

    /* A thread stuck in D: no signal reaches it, nothing is signalled, the advice says what can. */
    fixture_open(&fx);
    put_proc(&fx, 5120, "python", 'Z', 5100, ZOMBIE_START, "ZD", 1000);
    put_proc(&fx, 5100, "bash", 'S', 4990, ZOMBIE_START, "S", 1000);
    fixture_ready(&fx);
    plan_of(&plan, s, &pol, &g, fx.proc_fd);
    assert_int_equal(plan.n, 1);
    t = target(&plan, 5120);
    assert_int_equal(t->disposition, REAP_CANNOT_HELP);
    assert_non_null(strstr(t->why, "with 1 thread stuck in the kernel (state D"));
    assert_string_equal(t->advice[0], "sudo nvidia-smi --gpu-reset -i 0   # only once no other "
                                      "process uses GPU 0 (gpudoctor procs --gpu 0)");
    /* what to stop when the reset is refused as in use, then comments, never a reboot command */
    assert_non_null(strstr(t->advice[1], "'In use by another client'"));
    assert_int_equal(strncmp(t->advice[1], "# ", 2), 0);
    assert_int_equal(strncmp(t->advice[2], "# ", 2), 0);
    assert_non_null(strstr(t->advice[2], "drain the node, then sudo reboot"));
    reap_plan_free(&plan);
    fixture_close(&fx);

    /* A thread that still runs: the process itself is the target. */
    fixture_open(&fx);
    put_proc(&fx, 5120, "python", 'Z', 5100, ZOMBIE_START, "ZS", 1000);
    fixture_ready(&fx);
    plan_of(&plan, s, &pol, &g, fx.proc_fd);
    assert_int_equal(plan.n, 1);
    t = target(&plan, 5120);
    assert_int_equal(t->role, REAP_ROLE_SELF);
    assert_int_equal(t->disposition, REAP_SIGNAL);
    assert_non_null(strstr(t->why, "main thread exited but 1 other thread still runs"));
    reap_plan_free(&plan);
    fixture_close(&fx);

    /* All threads gone: its worker that holds the device, and the parent that does not reap. */
    worker = proc_of(s, 5121);
    free(worker->gpus); /* an empty list in the snapshot */
    worker->gpus = xcalloc(1, sizeof(*worker->gpus));
    worker->n_gpus = 1;
    worker->gpus[0].holds_device = true;
    worker->gpus[0].minor = 0;
    worker->gpus[0].gpu_index = 0;
    worker->gpus[0].valid = (1u << PROC_GPU_S_INDEX) | (1u << PROC_GPU_S_MINOR);
    fixture_open(&fx);
    put_proc(&fx, 5120, "python", 'Z', 5100, ZOMBIE_START, "Z", 1000);
    put_proc(&fx, 5100, "bash", 'S', 4990, ZOMBIE_START, "S", 1000);
    put_proc(&fx, 5121, "python", 'S', 1, worker->start_ticks, "S", 1000);
    fixture_ready(&fx);
    plan_of(&plan, s, &pol, &g, fx.proc_fd);
    assert_int_equal(plan.n, 2);
    t = target(&plan, 5121);
    assert_int_equal(t->role, REAP_ROLE_WORKER);
    assert_int_equal(t->gpu_pid, 5120);
    assert_int_equal(t->disposition, REAP_SIGNAL);
    t = target(&plan, 5100);
    assert_int_equal(t->role, REAP_ROLE_PARENT);
    assert_int_equal(t->disposition, REAP_SIGNAL);
    assert_true(has_evidence(t, "5120 is in state Z; its parent 5100 (bash) is in state S"));
    reap_plan_free(&plan);

    /* The parent is another user's (not --all-users): refused, and what to do instead. */
    guard(&g, 0, false);
    plan_of(&plan, s, &pol, &g, fx.proc_fd);
    t = target(&plan, 5100);
    assert_int_equal(t->refusal, REAP_REFUSE_OTHER_USER);
    assert_non_null(strstr(t->advice[1], "ps -o pid,stat,args -p 5100"));
    reap_plan_free(&plan);
    fixture_close(&fx);

    /* Init is the parent: it reaps at once, so the exit is stuck; advice only. */
    guard(&g, 0, true);
    proc_of(s, 5120)->ppid = 1;
    fixture_open(&fx);
    put_proc(&fx, 5120, "python", 'Z', 1, ZOMBIE_START, "Z", 1000);
    fixture_ready(&fx);
    worker->n_gpus = 0;
    plan_of(&plan, s, &pol, &g, fx.proc_fd);
    assert_int_equal(plan.n, 1);
    t = target(&plan, 5120);
    assert_int_equal(t->disposition, REAP_CANNOT_HELP);
    assert_non_null(strstr(t->why, "its parent is init, which reaps at once"));
    reap_plan_free(&plan);
    fixture_close(&fx);

    /* The zombie's pid is another process's now: left alone, with a note. */
    fixture_open(&fx);
    put_proc(&fx, 5120, "python", 'S', 1, ZOMBIE_START + 5, "S", 1000);
    fixture_ready(&fx);
    plan_of(&plan, s, &pol, &g, fx.proc_fd);
    assert_int_equal(plan.n, 0);
    assert_true(has_note(&plan, "pid 5120: another process than the one scanned"));
    reap_plan_free(&plan);
    fixture_close(&fx);
    snapshot_free(s);
}

/* ---- reports ---- */

static void test_text_and_json(void **state)
{
    struct snapshot *s = load_case("stopped-holder");
    struct reap_policy pol = { 0 };
    struct reap_guard g;
    struct reap_plan plan;
    struct reap_exec x = { 10000, 5000, NULL, false };
    struct reap_result res[2];
    char *text = NULL, *dump;
    size_t len = 0;
    FILE *out;
    json_t *j;

    (void)state;
    guard(&g, 0, true);
    plan_of(&plan, s, &pol, &g, -1);
    out = open_memstream(&text, &len);
    reap_plan_print(out, &plan, &x, true);
    fclose(out);
    assert_non_null(strstr(text, "Would signal 2 processes:\n  pid 4121 (alice) python train.py "
                                 "--lr 3e-4\n    stopped (state T: Ctrl-Z or SIGSTOP), holding "
                                 "71.2 GiB on GPU 3\n"));
    assert_non_null(strstr(text, "    SIGTERM and SIGCONT (it is stopped), then SIGKILL after "
                                 "10s if it is still there\n"));
    assert_non_null(strstr(text, "Dry run: nothing was signalled. Add --kill to do it.\n"));
    free(text);

    memset(res, 0, sizeof(res));
    res[0].outcome = REAP_OUT_KILLED;
    res[0].last_signal = 9;
    res[0].detail = (char *)"killed";
    res[1].outcome = REAP_OUT_CHANGED;
    res[1].detail = (char *)"pid 4122 is another process now";
    j = reap_plan_json(&plan, res, NULL, 0, false, 2);
    dump = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
    assert_non_null(strstr(dump, "\"schema\":\"gpudoctor.reap/1\""));
    assert_non_null(strstr(dump, "\"dry_run\":false,\"exit_status\":2"));
    assert_non_null(strstr(dump, "\"disposition\":\"signal\""));
    assert_non_null(strstr(dump, "\"outcome\":\"killed\""));
    assert_non_null(strstr(dump, "\"outcome\":\"changed\""));
    assert_non_null(strstr(dump, "\"used_bytes\":76450417868"));
    assert_non_null(strstr(dump, "\"role\":\"self\""));
    assert_non_null(strstr(dump, "\"verdict\":\"stopped\""));
    free(dump);
    json_decref(j);
    reap_plan_free(&plan);
    snapshot_free(s);
}

static void test_freed(void **state)
{
    struct snapshot *before = load_case("stopped-holder"), *after = load_case("stopped-holder");
    struct reap_policy pol = { 0 };
    struct reap_guard g;
    struct reap_plan plan;
    struct reap_result res[2];
    struct reap_freed *f = NULL;
    char line[160];
    size_t n;

    (void)state;
    guard(&g, 0, true);
    plan_of(&plan, before, &pol, &g, -1);
    snapshot_gpu(after, 3)->mem_used_bytes = 400 * 1048576ull;
    memset(res, 0, sizeof(res));
    res[0].outcome = REAP_OUT_EXITED;
    res[1].outcome = REAP_OUT_DECLINED;
    n = reap_freed_compute(before, after, &plan, res, &f);
    assert_int_equal(n, 1);
    assert_int_equal(f[0].gpu_index, 3);
    assert_true(f[0].before_valid && f[0].after_valid);
    assert_int_equal(f[0].after_bytes, 400 * 1048576ull);
    reap_freed_line(line, sizeof(line), &f[0]);
    assert_string_equal(line, "GPU 3: 71.6 GiB \u2192 400 MiB (71.2 GiB freed)");
    free(f);
    /* Nothing ended: nothing to report. */
    res[0].outcome = REAP_OUT_STUCK;
    assert_int_equal(reap_freed_compute(before, after, &plan, res, &f), 0);
    free(f);
    reap_plan_free(&plan);
    snapshot_free(before);
    snapshot_free(after);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_policy_stopped),
        cmocka_unit_test(test_filters),
        cmocka_unit_test(test_policies),
        cmocka_unit_test(test_named_pids),
        cmocka_unit_test(test_named_related),
        cmocka_unit_test(test_named_device_holder),
        cmocka_unit_test(test_defunct),
        cmocka_unit_test(test_text_and_json),
        cmocka_unit_test(test_freed),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
