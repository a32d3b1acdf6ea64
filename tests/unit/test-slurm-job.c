/*
 * What the Slurm prolog and epilog decide from a snapshot (src/cmd/slurm-job.c): the job's GPUs
 * from SLURM_JOB_GPUS / CUDA_VISIBLE_DEVICES (device minors, UUIDs), whose each GPU process is
 * (this job, another running job, a leftover), what a holder that has ended since the epilog's
 * first look was, memory no process accounts for, the drain reason, when slurm-check may lift it,
 * the job from the environment, and the drain itself through a recording scontrol. The snapshot is
 * JSON, as `check --from` reads it.
 */
#include "cmd/cmd.h"
#include "cmd/slurm.h"
#include "snapshot/snapshot.h"
#include "util/xalloc.h"

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

#define GIB 1073741824ull

/* A process of the node: pid, ppid, user, cgroup, the job the cgroup names (JSON: "null" for
 * none) and command line. */
#define PROC(pid, ppid, user, cgroup, job, cmd)                                                    \
    PROC_AS(pid, ppid, user, 1000, "x", cgroup, job, cmd)
/* A Slurm step daemon: root's, named slurmstepd. */
#define STEPD(pid, ppid, cgroup, job, cmd)                                                         \
    PROC_AS(pid, ppid, "root", 0, "slurmstepd", cgroup, job, cmd)
#define PROC_AS(pid, ppid, user, uid, comm, cgroup, job, cmd)                                      \
    "{\"pid\": " #pid ", \"ppid\": " #ppid ", \"user\": \"" user "\", \"uid\": " #uid ", "         \
    "\"comm\": \"" comm "\", "                                                                     \
    "\"cmdline\": \"" cmd "\", \"cgroup\": \"" cgroup "\", \"slurm_job_id\": " job ", "            \
    "\"cuda_visible_devices\": null, \"container_runtime\": null, \"container_id\": null, "        \
    "\"pod_uid\": null}"

/*
 * Four GPUs. NVML index 0 and 1 swap their device minors (gres.conf's /dev/nvidia1 is index 0);
 * GPU 2 is minor 2; GPU 3's minor is unknown (matched by its index).
 *  GPU 0: 101, a running job's (5001: a slurmstepd above it, its cgroup names the job); 400, this
 *         job's own (cgroup job_5002); 900, a process under another job's step daemon whose
 *         cgroup names no job (proctrack/linuxproc).
 *  GPU 1: 200, an ended job's (4999, no step daemon above it: its parent 220 took a step
 *         daemon's command line, but is alice's and not named slurmstepd); 600, the MPS server;
 *         700, a pid /proc does not have.
 *  GPU 2: 300, outside Slurm; 800, in a ppid loop (a hostile snapshot).
 *  GPU 3: 20 GiB used, no process listed.
 */
static const char tree[] = "{\"schema\": \"gpudoctor.snapshot/1\", \"gpus\": ["
                           "{\"index\": 0, \"uuid\": \"GPU-aaaa0000\", \"minor_number\": 1, "
                           "\"mem_used_bytes\": 42949672960, \"processes\": ["
                           "{\"pid\": 101, \"used_bytes\": 21474836480, \"type\": [\"compute\"]},"
                           "{\"pid\": 400, \"used_bytes\": 10737418240, \"type\": [\"compute\"]},"
                           "{\"pid\": 900, \"used_bytes\": 10737418240, \"type\": [\"compute\"]}]},"
                           "{\"index\": 1, \"uuid\": \"GPU-bbbb1111\", \"minor_number\": 0, "
                           "\"mem_used_bytes\": 53687091200, \"processes\": ["
                           "{\"pid\": 200, \"used_bytes\": 42949672960, \"type\": [\"compute\"]},"
                           "{\"pid\": 600, \"used_bytes\": 1073741824, \"type\": [\"mps\"]},"
                           "{\"pid\": 700, \"used_bytes\": 8589934592, \"type\": [\"compute\"]}]},"
                           "{\"index\": 2, \"uuid\": \"GPU-cccc2222\", \"minor_number\": 2, "
                           "\"mem_used_bytes\": 6442450944, \"processes\": ["
                           "{\"pid\": 300, \"used_bytes\": 5368709120, \"type\": [\"compute\"]},"
                           "{\"pid\": 800, \"used_bytes\": 1073741824, \"type\": [\"compute\"]}]},"
                           "{\"index\": 3, \"uuid\": \"GPU-dddd3333\", \"minor_number\": null, "
                           "\"mem_used_bytes\": 21474836480, \"processes\": []}"
                           "], \"processes\": {\"processes\": ["
    /* clang-format off */
    PROC(1, 0, "root", "/", "null", "/sbin/init") ","
    STEPD(100, 1, "/system.slice/slurmstepd.scope/job_5001", "\"5001\"",
          "slurmstepd: [5001.0]") ","
    PROC(101, 100, "alice", "/system.slice/slurmstepd.scope/job_5001/step_0/user/task_0",
         "\"5001\"", "/usr/bin/python train.py") ","
    PROC(400, 1, "alice", "/system.slice/slurmstepd.scope/job_5002/step_0/user/task_0",
         "\"5002\"", "/opt/conda/bin/python eval.py") ","
    STEPD(150, 1, "/", "null", "slurmstepd: [5003.batch]") ","
    PROC(900, 150, "carol", "/", "null", "python job3.py") ","
    PROC(200, 220, "alice", "/slurm/uid_1000/job_4999/step_0", "\"4999\"", "python old.py") ","
    PROC(220, 1, "alice", "/slurm/uid_1000/job_4999/step_0", "\"4999\"",
         "slurmstepd: [4999.0]") ","
    PROC(600, 1, "root", "/", "null", "nvidia-cuda-mps-server") ","
    PROC(300, 1, "bob", "/user.slice/user-1001.slice/session-4.scope", "null",
         "python notebook.py") ","
    PROC(800, 801, "bob", "/", "null", "loop a") ","
    PROC(801, 800, "bob", "/", "null", "loop b")
    /* clang-format on */
    "]}}";

static struct snapshot *load(const char *text)
{
    char *cause = NULL;
    struct snapshot *s = snapshot_from_json(text, strlen(text), "tree.json", &cause);

    if (s == NULL)
        fail_msg("%s", cause);
    return s;
}

/* slurm_job_gpus on spec: "" and the cause on failure, else the indices as "0,3". */
static char *gpus_of(const struct snapshot *s, const char *spec)
{
    int32_t *v = NULL;
    size_t n = 0;
    char *cause = NULL, *out;

    if (slurm_job_gpus(s, spec, &v, &n, &cause) != 0) {
        assert_null(v);
        out = xasprintf("error: %s", cause);
        free(cause);
        return out;
    }
    out = xstrdup("");
    for (size_t i = 0; i < n; i++) {
        char *more = xasprintf("%s%s%d", out, i ? "," : "", (int)v[i]);

        free(out);
        out = more;
    }
    free(v);
    return out;
}

#define GPUS_EQ(s, spec, want)                                                                     \
    do {                                                                                           \
        char *got_ = gpus_of(s, spec);                                                             \
        assert_string_equal(got_, want);                                                           \
        free(got_);                                                                                \
    } while (0)

static void test_job_gpus(void **state)
{
    struct snapshot *s = load(tree);

    (void)state;
    /* numbers are device minors, as gres.conf's File=/dev/nvidiaN names them */
    GPUS_EQ(s, "1", "0");
    GPUS_EQ(s, "0", "1");
    GPUS_EQ(s, "2", "2");
    /* a GPU whose minor is unknown is matched by its index */
    GPUS_EQ(s, "3", "3");
    /* sorted, each once; commas and spaces both separate */
    GPUS_EQ(s, "3,1, 2,1", "0,2,3");
    GPUS_EQ(s, "GPU-dddd3333,GPU-aaaa0000", "0,3");
    GPUS_EQ(s, "GPU-bbbb1111,0", "1");
    /* what names no GPU here: said, nothing returned */
    GPUS_EQ(s, "7", "error: '7' is no GPU of this node");
    GPUS_EQ(s, "0,MIG-1234", "error: 'MIG-1234' is no GPU of this node");
    GPUS_EQ(s, "GPU-ffff", "error: 'GPU-ffff' is no GPU of this node");
    GPUS_EQ(s, "-1", "error: '-1' is no GPU of this node");
    GPUS_EQ(s, " , ", "error: no GPU named");
    snapshot_free(s);
}

static const struct slurm_holder *holder(const struct slurm_holder *h, size_t n, int32_t pid)
{
    for (size_t i = 0; i < n; i++) {
        if (h[i].pid == pid)
            return &h[i];
    }
    fail_msg("pid %d is not a holder", (int)pid);
    abort(); /* not reached: fail_msg ends the test */
}

static void test_holders(void **state)
{
    struct snapshot *s = load(tree);
    struct slurm_holder *h;
    const struct slurm_holder *x;
    size_t n = slurm_gpu_holders(s, "5002", NULL, 0, &h);
    int32_t gpu0[] = { 0 }, gpu12[] = { 1, 2 };

    (void)state;
    /* every listed process but the MPS server (600) */
    assert_int_equal(n, 7);
    for (size_t i = 0; i < n; i++)
        assert_int_not_equal(h[i].pid, 600);

    /* a running job's process: its cgroup names its job, a step daemon is above it */
    x = holder(h, n, 101);
    assert_int_equal(x->kind, SLURM_HOLDER_RUNNING_JOB);
    assert_string_equal(x->job, "5001");
    assert_int_equal(x->gpu, 0);
    assert_true(x->used_valid);
    assert_int_equal(x->used_bytes, 20 * GIB);
    assert_non_null(x->p);
    /* this job's own: its cgroup names the job */
    x = holder(h, n, 400);
    assert_int_equal(x->kind, SLURM_HOLDER_THIS_JOB);
    assert_string_equal(x->job, "5002");
    /* no job in its cgroup, but a step daemon above it: that job's, still running */
    x = holder(h, n, 900);
    assert_int_equal(x->kind, SLURM_HOLDER_RUNNING_JOB);
    assert_string_equal(x->job, "5003");
    /* an ended job's: its cgroup names a job, no step daemon above it (its parent's command line
     * says "slurmstepd: [4999.0]", but that process is alice's, not the step daemon) */
    x = holder(h, n, 200);
    assert_int_equal(x->kind, SLURM_HOLDER_LEFTOVER);
    assert_string_equal(x->job, "4999");
    assert_int_equal(x->gpu, 1);
    /* a pid /proc does not have: nobody's, a leftover */
    x = holder(h, n, 700);
    assert_int_equal(x->kind, SLURM_HOLDER_LEFTOVER);
    assert_null(x->p);
    assert_null(x->job);
    /* outside Slurm */
    x = holder(h, n, 300);
    assert_int_equal(x->kind, SLURM_HOLDER_LEFTOVER);
    assert_null(x->job);
    /* a ppid loop ends */
    x = holder(h, n, 800);
    assert_int_equal(x->kind, SLURM_HOLDER_LEFTOVER);
    slurm_holders_free(h, n);

    /* the job's own process in the prolog of another job is that job's leftover... */
    n = slurm_gpu_holders(s, "6000", gpu0, 1, &h);
    assert_int_equal(n, 3);
    assert_int_equal(holder(h, n, 400)->kind, SLURM_HOLDER_LEFTOVER);
    /* ...and the running job stays running, whoever asks */
    assert_int_equal(holder(h, n, 101)->kind, SLURM_HOLDER_RUNNING_JOB);
    slurm_holders_free(h, n);

    /* only the job's GPUs are looked at */
    n = slurm_gpu_holders(s, "5002", gpu12, 2, &h);
    assert_int_equal(n, 4);
    for (size_t i = 0; i < n; i++)
        assert_true(h[i].gpu == 1 || h[i].gpu == 2);
    slurm_holders_free(h, n);

    /* no job given (a holder's cgroup never matches) */
    n = slurm_gpu_holders(s, NULL, gpu0, 1, &h);
    assert_int_equal(holder(h, n, 400)->kind, SLURM_HOLDER_LEFTOVER);
    slurm_holders_free(h, n);
    snapshot_free(s);
}

static void test_unaccounted(void **state)
{
    struct snapshot *s = load(tree);
    struct slurm_gpu_memory *m;
    int32_t gpu3[] = { 3 }, gpu01[] = { 0, 1 };
    size_t n;
    char *t;

    (void)state;
    /* GPU 1: 50 GiB used, 49 GiB listed (the MPS server's too); GPU 3: 20 GiB, none listed */
    n = slurm_unaccounted(s, NULL, 0, 1 * GIB, &m);
    assert_int_equal(n, 2);
    assert_int_equal(m[0].gpu, 1);
    assert_int_equal(m[0].used_bytes, 50 * GIB);
    assert_int_equal(m[0].unaccounted_bytes, 1 * GIB);
    assert_int_equal(m[1].gpu, 3);
    assert_int_equal(m[1].unaccounted_bytes, 20 * GIB);
    free(m);
    /* below the threshold: not counted */
    n = slurm_unaccounted(s, NULL, 0, 1 * GIB + 1, &m);
    assert_int_equal(n, 1);
    assert_int_equal(m[0].gpu, 3);
    free(m);
    n = slurm_unaccounted(s, gpu01, 2, 2 * GIB, &m);
    assert_int_equal(n, 0);
    free(m);
    n = slurm_unaccounted(s, gpu3, 1, 20 * GIB, &m);
    assert_int_equal(n, 1);
    free(m);
    n = slurm_unaccounted(s, gpu3, 1, 20 * GIB + 1, &m);
    assert_int_equal(n, 0);
    free(m);
    snapshot_free(s);

    /* a process whose use NVML does not say, or a used memory it does not say: cannot tell */
    t = xasprintf("{\"schema\": \"gpudoctor.snapshot/1\", \"gpus\": ["
                  "{\"index\": 0, \"mem_used_bytes\": 42949672960, \"processes\": ["
                  "{\"pid\": 5, \"used_bytes\": null, \"type\": [\"compute\"]}]},"
                  "{\"index\": 1, \"mem_used_bytes\": null, \"processes\": []},"
                  "{\"index\": 2, \"mem_used_bytes\": 42949672960, \"processes\": null}]}");
    s = load(t);
    n = slurm_unaccounted(s, NULL, 0, 1, &m);
    assert_int_equal(n, 0);
    free(m);
    snapshot_free(s);
    free(t);
}

/* The reason for the holders of the job's GPUs in the prolog of job (leftovers only). */
static char *prolog_reason(const struct snapshot *s, const char *job, const int32_t *gpus,
                           size_t n_gpus)
{
    struct slurm_holder *h;
    struct slurm_gpu_memory *m;
    const struct slurm_holder **left;
    size_t n = slurm_gpu_holders(s, job, gpus, n_gpus, &h), n_left = 0, n_m;
    char *r;

    left = xcalloc(n + 1, sizeof(*left));
    for (size_t i = 0; i < n; i++) {
        if (h[i].kind == SLURM_HOLDER_LEFTOVER)
            left[n_left++] = &h[i];
    }
    n_m = slurm_unaccounted(s, gpus, n_gpus, 2 * GIB, &m);
    r = slurm_leftover_reason(s, left, n_left, m, n_m);
    free(m);
    free(left);
    slurm_holders_free(h, n);
    return r;
}

static void test_reason(void **state)
{
    struct snapshot *s = load(tree);
    int32_t gpu0[] = { 0 }, gpu1[] = { 1 }, gpu2[] = { 2 }, gpu3[] = { 3 }, gpu23[] = { 2, 3 };
    char *r, *t, *big;

    (void)state;
    /* a running job's process and the job's own are no leftovers: nothing to say */
    assert_null(prolog_reason(s, "5002", gpu0, 1));
    r = prolog_reason(s, "5002", gpu1, 1);
    assert_string_equal(r, "gpudoctor: GPU 1 held by leftover pid 200 (job 4999, alice: python "
                           "old.py) (+1 more)");
    free(r);
    r = prolog_reason(s, "5002", gpu2, 1);
    assert_string_equal(r, "gpudoctor: GPU 2 held by leftover pid 300 (bob: python notebook.py) "
                           "(+1 more)");
    free(r);
    r = prolog_reason(s, "5002", gpu3, 1);
    assert_string_equal(r, "gpudoctor: GPU 3 held by leftover memory: 20.0 GiB, no process listed");
    free(r);
    /* a process first, memory counted among the rest */
    r = prolog_reason(s, "5002", gpu23, 2);
    assert_string_equal(r, "gpudoctor: GPU 2 held by leftover pid 300 (bob: python notebook.py) "
                           "(+2 more)");
    free(r);
    /* the program's directory goes; the job's own process is another job's leftover */
    r = prolog_reason(s, "6000", gpu0, 1);
    assert_string_equal(r, "gpudoctor: GPU 0 held by leftover pid 400 (job 5002, alice: python "
                           "eval.py)");
    free(r);
    assert_null(slurm_leftover_reason(s, NULL, 0, NULL, 0));
    snapshot_free(s);

    /* a pid /proc does not have: named alone; a hostile command line: one line, cut at the
     * limit with the count kept */
    big = xcalloc(400, 1);
    memset(big, 'a', 399);
    t = xasprintf(
        "{\"schema\": \"gpudoctor.snapshot/1\", \"gpus\": [{\"index\": 0, "
        "\"mem_used_bytes\": 2147483648, \"processes\": ["
        "{\"pid\": 70, \"used_bytes\": 1073741824, \"type\": [\"compute\"]},"
        "{\"pid\": 71, \"used_bytes\": 1073741824, \"type\": [\"compute\"]}]},"
        "{\"index\": 1, \"mem_used_bytes\": 1073741824, \"processes\": ["
        "{\"pid\": 72, \"used_bytes\": 1073741824, \"type\": [\"compute\"]}]}],"
        "\"processes\": {\"processes\": [" PROC(71, 1, "eve", "/", "null", "x\\ty\\nz %s") "]}}",
        big);
    s = load(t);
    r = prolog_reason(s, "1", gpu1, 1);
    assert_string_equal(r, "gpudoctor: GPU 1 held by leftover pid 72");
    free(r);
    r = prolog_reason(s, "1", NULL, 0);
    assert_string_equal(r, "gpudoctor: GPU 0 held by leftover pid 70 (+2 more)");
    free(r);
    {
        struct slurm_holder *h;
        size_t n = slurm_gpu_holders(s, "1", gpu0, 1, &h);
        const struct slurm_holder *one[] = { holder(h, n, 71), holder(h, n, 70) };

        r = slurm_leftover_reason(s, one, 2, NULL, 0);
        assert_int_equal(strlen(r), SLURM_REASON_MAX);
        assert_memory_equal(r, "gpudoctor: GPU 0 held by leftover pid 71 (eve: x?y?z aaa", 56);
        assert_string_equal(r + SLURM_REASON_MAX - 13, "... (+1 more)");
        assert_null(strpbrk(r, "\t\n"));
        free(r);
        slurm_holders_free(h, n);
    }
    snapshot_free(s);
    free(t);
    free(big);
}

/* A process as /proc showed it: state and start time too. */
#define PROC_AT(pid, state, ticks, user, cgroup, job, cmd)                                         \
    "{\"pid\": " #pid ", \"ppid\": 1, \"state\": \"" state "\", \"start_ticks\": " #ticks ", "     \
    "\"user\": \"" user "\", \"comm\": \"x\", \"cmdline\": " cmd ", \"cgroup\": \"" cgroup "\", "  \
    "\"slurm_job_id\": " job ", \"cuda_visible_devices\": null, \"container_runtime\": null, "     \
    "\"container_id\": null, \"pod_uid\": null}"

/* One GPU, its processes listed by NVML: the epilog's look before the reap and after it. */
#define LOOK(procs)                                                                                \
    "{\"schema\": \"gpudoctor.snapshot/1\", \"gpus\": [{\"index\": 0, "                            \
    "\"mem_used_bytes\": 4294967296, \"processes\": ["                                             \
    "{\"pid\": 40, \"used_bytes\": 1073741824, \"type\": [\"compute\"]},"                          \
    "{\"pid\": 41, \"used_bytes\": 1073741824, \"type\": [\"compute\"]},"                          \
    "{\"pid\": 42, \"used_bytes\": 1073741824, \"type\": [\"compute\"]},"                          \
    "{\"pid\": 43, \"used_bytes\": 1073741824, \"type\": [\"compute\"]}]}], "                      \
    "\"processes\": {\"processes\": [" procs "]}}"

/* 40 and 41 the job's own, 42 another ended job's, 43 outside Slurm */
static const char look_before[] = LOOK(
    /* clang-format off */
    PROC_AT(40, "S", 400, "alice", "/slurm/uid_1000/job_5002/step_0", "\"5002\"",
            "\"python train.py\"") ","
    PROC_AT(41, "S", 410, "alice", "/slurm/uid_1000/job_5002/step_0", "\"5002\"",
            "\"python w.py\"") ","
    PROC_AT(42, "S", 420, "bob", "/slurm/uid_1001/job_4999/step_0", "\"4999\"",
            "\"python old.py\"") ","
    PROC_AT(43, "S", 430, "bob", "/", "null", "\"python nb.py\""));
/* clang-format on */
/*
 * After the reap: 40 gone from /proc (NVML still lists it); 41 defunct (its cgroup and command
 * line went with it); 42 defunct too; 43's pid is a new process's (another start time), defunct.
 */
static const char look_after[] = LOOK(
    /* clang-format off */
    PROC_AT(41, "Z", 410, "alice", "/", "null", "null") ","
    PROC_AT(42, "Z", 420, "bob", "/", "null", "null") ","
    PROC_AT(43, "Z", 999, "carol", "/", "null", "null"));
/* clang-format on */

static void test_recall(void **state)
{
    struct snapshot *before = load(look_before), *after = load(look_after);
    struct slurm_holder *h;
    size_t n = slurm_gpu_holders(after, "5002", NULL, 0, &h);
    const struct slurm_holder *x;
    char line[256];

    (void)state;
    assert_int_equal(n, 4);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(h[i].kind, SLURM_HOLDER_LEFTOVER);
    slurm_holders_recall(h, n, before, "5002");
    x = holder(h, n, 40);
    assert_int_equal(x->kind, SLURM_HOLDER_THIS_JOB);
    slurm_holder_line(line, sizeof(line), x);
    assert_string_equal(line, "GPU 0: pid 40 (job 5002, alice: python train.py), 1.0 GiB");
    x = holder(h, n, 41);
    assert_int_equal(x->kind, SLURM_HOLDER_THIS_JOB);
    assert_string_equal(x->job, "5002");
    /* another job's stays a leftover, now with its job and command */
    x = holder(h, n, 42);
    assert_int_equal(x->kind, SLURM_HOLDER_LEFTOVER);
    slurm_holder_line(line, sizeof(line), x);
    assert_string_equal(line, "GPU 0: pid 42 (job 4999, bob: python old.py), 1.0 GiB");
    /* another process on the pid: described as it is now */
    x = holder(h, n, 43);
    assert_int_equal(x->kind, SLURM_HOLDER_LEFTOVER);
    slurm_holder_line(line, sizeof(line), x);
    assert_string_equal(line, "GPU 0: pid 43 (no job, carol: x), 1.0 GiB");
    slurm_holders_free(h, n);
    snapshot_free(after);
    snapshot_free(before);
}

static void test_cleared(void **state)
{
    struct snapshot *s = load(tree);

    (void)state;
    /* the pid is still on that GPU: not cleared; gone from it (on another one): cleared */
    assert_int_equal(slurm_leftover_cleared(s,
                                            "gpudoctor: GPU 1 held by leftover pid 200 (job "
                                            "4999, alice: python old.py)",
                                            2 * GIB),
                     0);
    assert_int_equal(slurm_leftover_cleared(s, "gpudoctor: GPU 0 held by leftover pid 200", 0), 1);
    assert_int_equal(slurm_leftover_cleared(s,
                                            "gpudoctor: GPU 2 held by leftover pid 300 (+3 "
                                            "more)",
                                            0),
                     0);
    /* "(+N more)": the named leftover gone is not enough while another is left (pid 200 on
     * GPU 1, pid 300 on GPU 2) */
    assert_int_equal(
        slurm_leftover_cleared(s, "gpudoctor: GPU 2 held by leftover pid 555 (+1 more)", 0), 0);
    /* a GPU the node does not have: cannot see it, not cleared */
    assert_int_equal(slurm_leftover_cleared(s, "gpudoctor: GPU 9 held by leftover pid 1", 0), 0);
    /* memory: held while the unaccounted part is at least the threshold */
    assert_int_equal(slurm_leftover_cleared(s,
                                            "gpudoctor: GPU 3 held by leftover memory: 20.0 "
                                            "GiB, no process listed",
                                            2 * GIB),
                     0);
    assert_int_equal(slurm_leftover_cleared(s,
                                            "gpudoctor: GPU 3 held by leftover memory: 20.0 "
                                            "GiB, no process listed",
                                            21 * GIB),
                     1);
    assert_int_equal(
        slurm_leftover_cleared(s, "gpudoctor: GPU 2 held by leftover memory: 1.0 GiB", 2 * GIB), 1);
    /* not a leftover's reason */
    assert_int_equal(slurm_leftover_cleared(s, NULL, 0), -1);
    assert_int_equal(slurm_leftover_cleared(s, "gpudoctor: GPU 3 lost from the bus", 0), -1);
    assert_int_equal(slurm_leftover_cleared(s, "gpudoctor: GPU held by leftover pid 3", 0), -1);
    assert_int_equal(slurm_leftover_cleared(s, "bad fan", 0), -1);
    snapshot_free(s);
}

/* A node after its leftovers went: GPU 0 held by a running job's process, GPU 1 idle; $MEM is
 * GPU 1's used memory. */
#define CLEAN(mem)                                                                                 \
    "{\"schema\": \"gpudoctor.snapshot/1\", \"gpus\": ["                                           \
    "{\"index\": 0, \"mem_used_bytes\": 21474836480, \"processes\": ["                             \
    "{\"pid\": 101, \"used_bytes\": 21474836480, \"type\": [\"compute\"]}]},"                      \
    "{\"index\": 1, \"mem_used_bytes\": " #mem ", \"processes\": []}"                              \
    "], \"processes\": {\"processes\": [" STEPD(                                                   \
        100, 1, "/", "null", "slurmstepd: [5001.0]") "," PROC(101, 100, "alice", "/", "\"5001\"",  \
                                                              "python train.py") "]}}"

static void test_cleared_more(void **state)
{
    static const char reason[] = "gpudoctor: GPU 1 held by leftover pid 200 (job 4999, alice: "
                                 "python old.py) (+2 more)";
    struct snapshot *s = load(CLEAN(0));

    (void)state;
    /* every leftover gone, the running job's process is not one: cleared */
    assert_int_equal(slurm_leftover_cleared(s, reason, 2 * GIB), 1);
    snapshot_free(s);
    /* memory no process accounts for on another GPU: one of the "more" may be it */
    s = load(CLEAN(21474836480));
    assert_int_equal(slurm_leftover_cleared(s, reason, 2 * GIB), 0);
    /* without "(+N more)" the named leftover is all the reason spoke of */
    assert_int_equal(
        slurm_leftover_cleared(s, "gpudoctor: GPU 0 held by leftover pid 200", 2 * GIB), 1);
    snapshot_free(s);
}

static void test_job_env(void **state)
{
    struct slurm_job_opts o = { 0 };
    struct slurm_job_run r;
    struct snapshot *s = load(tree);
    char text[64];

    (void)state;
    unsetenv("SLURM_JOB_ID");
    unsetenv("SLURM_JOB_GPUS");
    unsetenv("CUDA_VISIBLE_DEVICES");
    /* the job: --job, else $SLURM_JOB_ID; a number */
    assert_int_equal(slurm_job_begin(&r, "slurm-prolog", &o), EXIT_USAGE);
    setenv("SLURM_JOB_ID", "", 1);
    assert_int_equal(slurm_job_begin(&r, "slurm-prolog", &o), EXIT_USAGE);
    setenv("SLURM_JOB_ID", "4400_7", 1); /* an array task's display form, not its id */
    assert_int_equal(slurm_job_begin(&r, "slurm-prolog", &o), EXIT_USAGE);
    setenv("SLURM_JOB_ID", "4400", 1);
    assert_int_equal(slurm_job_begin(&r, "slurm-prolog", &o), 0);
    assert_string_equal(r.job, "4400");
    slurm_job_end(&r);
    o.job = "77";
    assert_int_equal(slurm_job_begin(&r, "slurm-prolog", &o), 0);
    assert_string_equal(r.job, "77");

    /* the GPUs: none named is every GPU */
    slurm_job_gpus_of(&r, s, &o);
    assert_null(r.gpus);
    assert_null(r.gpus_from);
    slurm_job_gpu_text(&r, text, sizeof(text));
    assert_string_equal(text, "every GPU");
    /* CUDA_VISIBLE_DEVICES, then SLURM_JOB_GPUS over it, then --gpus over both */
    setenv("CUDA_VISIBLE_DEVICES", "2", 1);
    slurm_job_gpus_of(&r, s, &o);
    assert_string_equal(r.gpus_from, "CUDA_VISIBLE_DEVICES");
    assert_int_equal(r.n_gpus, 1);
    assert_int_equal(r.gpus[0], 2);
    setenv("SLURM_JOB_GPUS", "0,1,3", 1); /* minors: indices 1, 0, 3 */
    slurm_job_gpus_of(&r, s, &o);
    assert_string_equal(r.gpus_from, "SLURM_JOB_GPUS");
    slurm_job_gpu_text(&r, text, sizeof(text));
    assert_string_equal(text, "GPUs 0, 1, 3");
    o.gpus = "GPU-cccc2222";
    slurm_job_gpus_of(&r, s, &o);
    assert_string_equal(r.gpus_from, "--gpus");
    slurm_job_gpu_text(&r, text, sizeof(text));
    assert_string_equal(text, "GPU 2");
    /* an empty variable is not set; a list that names no GPU here: every GPU */
    o.gpus = NULL;
    setenv("SLURM_JOB_GPUS", "", 1);
    slurm_job_gpus_of(&r, s, &o);
    assert_string_equal(r.gpus_from, "CUDA_VISIBLE_DEVICES");
    setenv("SLURM_JOB_GPUS", "12", 1);
    slurm_job_gpus_of(&r, s, &o);
    assert_null(r.gpus);
    assert_null(r.gpus_from);
    slurm_job_end(&r);
    unsetenv("SLURM_JOB_ID");
    unsetenv("SLURM_JOB_GPUS");
    unsetenv("CUDA_VISIBLE_DEVICES");
    snapshot_free(s);
}

static void test_holder_line(void **state)
{
    struct snapshot *s = load(tree);
    struct slurm_holder *h;
    size_t n = slurm_gpu_holders(s, "5002", NULL, 0, &h);
    char line[256];

    (void)state;
    slurm_holder_line(line, sizeof(line), holder(h, n, 200));
    assert_string_equal(line, "GPU 1: pid 200 (job 4999, alice: python old.py), 40.0 GiB");
    slurm_holder_line(line, sizeof(line), holder(h, n, 300));
    assert_string_equal(line, "GPU 2: pid 300 (no job, bob: python notebook.py), 5.0 GiB");
    slurm_holder_line(line, sizeof(line), holder(h, n, 700));
    assert_string_equal(line, "GPU 1: pid 700 (no job), 8.0 GiB");
    slurm_holders_free(h, n);
    snapshot_free(s);
}

/*
 * slurm_job_drain through a scontrol that records its arguments: `show node` prints the node as
 * *node_line says; `update` exits with update_rc.
 */
static char dir[] = "/tmp/test-slurm-job.XXXXXX";

static void write_scontrol(const char *state, const char *reason, int update_rc)
{
    char *path = xasprintf("%s/scontrol", dir);
    FILE *f = fopen(path, "w");

    assert_non_null(f);
    fprintf(f,
            "#!/bin/sh\n"
            "printf '%%s\\n' \"$*\" >>%s/log\n"
            "if [ \"$1\" = show ]; then\n"
            "  echo 'NodeName=n1 Arch=x86_64 State=%s Reason=%s'\n"
            "  exit 0\n"
            "fi\n"
            "echo 'slurm_update error: Invalid node name specified' >&2\n"
            "exit %d\n",
            dir, state, reason, update_rc);
    fclose(f);
    assert_int_equal(chmod(path, 0755), 0);
    free(path);
    path = xasprintf("%s/log", dir);
    unlink(path);
    free(path);
}

/* What scontrol was asked, one line a call. */
static char *scontrol_log(void)
{
    char *path = xasprintf("%s/log", dir), buf[4096];
    FILE *f = fopen(path, "r");
    size_t n = 0;

    free(path);
    if (f == NULL)
        return xstrdup("");
    n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return xstrdup(buf);
}

static void test_drain(void **state)
{
    char job[] = "5002";
    struct slurm_job_run r = { .cmd = "slurm-epilog", .job = job };
    char *sc = xasprintf("%s/scontrol", dir), *log;
    struct slurm_job_opts o = { .node = "n1", .scontrol = sc };
    const char *why = "gpudoctor: GPU 1 held by leftover pid 200 (job 4999, alice: python old.py)";

    (void)state;
    /* an idle node: drained with the reason, as one argument */
    write_scontrol("IDLE", "(null)", 0);
    assert_int_equal(slurm_job_drain(&r, &o, why), 0);
    log = scontrol_log();
    assert_string_equal(log, "show node -o n1\nupdate NodeName=n1 State=DRAIN Reason=gpudoctor: "
                             "GPU 1 held by leftover pid 200 (job 4999, alice: python old.py)\n");
    free(log);
    /* scontrol cannot drain it: -1 (the epilog then exits 1 and Slurm drains it) */
    write_scontrol("IDLE", "(null)", 1);
    assert_int_equal(slurm_job_drain(&r, &o, why), -1);
    log = scontrol_log();
    assert_non_null(strstr(log, "update NodeName=n1 State=DRAIN"));
    free(log);
    /* someone else's drain is kept */
    write_scontrol("IDLE+DRAIN", "bad fan [admin@2026-12-01T10:00:00]", 0);
    assert_int_equal(slurm_job_drain(&r, &o, why), 0);
    log = scontrol_log();
    assert_string_equal(log, "show node -o n1\n");
    free(log);
    /* our own drain with the same reason is not repeated; with another reason it is replaced */
    write_scontrol("IDLE+DRAIN",
                   "gpudoctor: GPU 1 held by leftover pid 200 (job 4999, alice: "
                   "python old.py) [root@2026-12-01T10:00:00]",
                   0);
    assert_int_equal(slurm_job_drain(&r, &o, why), 0);
    log = scontrol_log();
    assert_string_equal(log, "show node -o n1\n");
    free(log);
    write_scontrol("IDLE+DRAIN", "gpudoctor: GPU 2 held by leftover pid 300", 0);
    assert_int_equal(slurm_job_drain(&r, &o, why), 0);
    log = scontrol_log();
    assert_non_null(strstr(log, "update NodeName=n1 State=DRAIN Reason=gpudoctor: GPU 1 held"));
    free(log);
    /* scontrol cannot show the node: -1, nothing updated */
    write_scontrol("IDLE", "(null)", 0);
    {
        char *path = xasprintf("%s/scontrol", dir);
        FILE *f = fopen(path, "w");

        fprintf(f, "#!/bin/sh\nprintf '%%s\\n' \"$*\" >>%s/log\nexit 1\n", dir);
        fclose(f);
        free(path);
    }
    assert_int_equal(slurm_job_drain(&r, &o, why), -1);
    log = scontrol_log();
    assert_string_equal(log, "show node -o n1\n");
    free(log);
    /* a relative --scontrol, or a dry run: scontrol never runs */
    o.scontrol = "scontrol";
    assert_int_equal(slurm_job_drain(&r, &o, why), -1);
    o.scontrol = sc;
    o.dry_run = true;
    assert_int_equal(slurm_job_drain(&r, &o, why), 0);
    log = scontrol_log();
    assert_string_equal(log, "show node -o n1\n");
    free(log);
    free(sc);
}

static int setup(void **state)
{
    (void)state;
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    char *cmd = xasprintf("rm -rf '%s'", dir);
    int rc;

    (void)state;
    rc = system(cmd);
    free(cmd);
    return rc == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_job_gpus),    cmocka_unit_test(test_holders),
        cmocka_unit_test(test_unaccounted), cmocka_unit_test(test_reason),
        cmocka_unit_test(test_recall),      cmocka_unit_test(test_cleared),
        cmocka_unit_test(test_job_env),     cmocka_unit_test(test_holder_line),
        cmocka_unit_test(test_drain),       cmocka_unit_test(test_cleared_more),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
