/*
 * The processes collector on the fixture trees of tests/fixtures/procs (see make-fixtures.sh
 * there for what each process is): the values parsed, the join with NVML's lists, CPU % over a
 * window, and the JSON codec of the process table.
 */
#include "collect/collect.h"
#include "collect/procfs-scan.h"
#include "nvml/nvml-abi.h"
#include "snapshot/snapshot.h"
#include "util/xalloc.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#define GIB        (1024ULL * 1024 * 1024)
#define BOOT_MS    1764662400000LL
#define DOCKER_ID  "4f1c2a9be0d3c7a85e6f1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f6a"
#define BIT(slot)  (UINT64_C(1) << (slot))
#define HAS(p, s)  (((p)->valid & BIT(s)) != 0)
#define GHAS(g, s) (((g)->valid & BIT(s)) != 0)

struct run {
    struct collect_opts opts;
    struct collect_ctx ctx;
    void *state;
};

static void run_start(struct run *r, const char *fixture, struct snapshot *s, int64_t window_ms)
{
    char root[512], *cause = NULL;

    snprintf(root, sizeof(root), "%s/procs/%s", TEST_FIXTURES, fixture);
    memset(r, 0, sizeof(*r));
    r->opts.root = root;
    r->opts.window_ms = window_ms;
    r->opts.timeout_ms = 10000;
    r->ctx.opts = &r->opts;
    if (sysroot_open(&r->ctx.root, root, &cause) != 0)
        fail_msg("%s", cause);
    r->state = collector_procs.start(&r->ctx, s);
}

static void run_finish(struct run *r, struct snapshot *s)
{
    collector_procs.finish(&r->ctx, r->state, s);
    sysroot_close(&r->ctx.root);
}

static struct snapshot *scan(const char *fixture, struct snapshot *s)
{
    struct run r;

    run_start(&r, fixture, s, 0);
    collector_procs.sample(&r.ctx, r.state, s, snapshot_add_sample(s, 0));
    run_finish(&r, s);
    return s;
}

static const struct proc *get(const struct snapshot *s, int32_t pid)
{
    const struct proc *p = proc_table_find(&s->procs, pid);

    if (p == NULL) {
        fail_msg("pid %d has no record", pid);
        abort(); /* fail_msg does not return; the compiler does not know */
    }
    return p;
}

static bool has_note(const struct snapshot *s, const char *part)
{
    const struct collector_status *c = &s->collectors[COLLECTOR_PROCS];

    for (size_t i = 0; i < c->n_notes; i++) {
        if (strstr(c->notes[i], part) != NULL)
            return true;
    }
    return false;
}

/* What NVML would say of the host fixture: 4 GPUs, index and minor differ for 2 and 3. */
static void add_gpu_proc(struct gpu *g, uint32_t pid, uint32_t type, uint64_t used, bool used_ok,
                         int util)
{
    struct gpu_proc *p;

    g->procs = xreallocarray(g->procs, g->n_procs + 1, sizeof(*g->procs));
    p = &g->procs[g->n_procs++];
    memset(p, 0, sizeof(*p));
    p->pid = pid;
    p->type_mask = type;
    p->used_bytes = used;
    if (used_ok)
        p->valid |= BIT(GPU_PROC_S_USED);
    if (util >= 0) {
        p->sm_util_pct = (uint32_t)util;
        p->valid |= BIT(GPU_PROC_S_UTIL);
    }
}

static struct snapshot *snapshot_with_nvml(void)
{
    static const uint32_t minors[] = { 0, 1, 3, 2 };
    struct snapshot *s = snapshot_new();

    s->gpus = xcalloc(4, sizeof(*s->gpus));
    s->n_gpus = 4;
    for (uint32_t i = 0; i < 4; i++) {
        gpu_init(&s->gpus[i], i);
        s->gpus[i].minor_number = minors[i];
        gpu_set_rc(&s->gpus[i], GPU_S_MINOR, 0);
        gpu_set_rc(&s->gpus[i], GPU_S_PROCESSES, 0);
    }
    add_gpu_proc(&s->gpus[0], 2100, GPU_PROC_COMPUTE, 20 * GIB, true, 87);
    add_gpu_proc(&s->gpus[0], 1500, GPU_PROC_GRAPHICS, 50ULL << 20, true, -1);
    add_gpu_proc(&s->gpus[0], 3500, GPU_PROC_COMPUTE, 0, false, -1); /* VALUE_NOT_AVAILABLE */
    add_gpu_proc(&s->gpus[0], 9999, GPU_PROC_COMPUTE, 1 * GIB, true, 3);
    add_gpu_proc(&s->gpus[1], 2100, GPU_PROC_COMPUTE, 18 * GIB, true, -1);
    add_gpu_proc(&s->gpus[1], 2700, GPU_PROC_COMPUTE, 10 * GIB, true, 0);
    add_gpu_proc(&s->gpus[1], 3600, GPU_PROC_COMPUTE | GPU_PROC_MPS, 2 * GIB, true, -1);
    add_gpu_proc(&s->gpus[2], 2600, GPU_PROC_COMPUTE, 4 * GIB, true, 0);
    add_gpu_proc(&s->gpus[3], 2400, GPU_PROC_COMPUTE, 2 * GIB, true, -1);
    add_gpu_proc(&s->gpus[3], 3100, GPU_PROC_COMPUTE, 20 * GIB, true, 95);
    return s;
}

static void test_host_without_nvml(void **state)
{
    /* GPU processes, their workers, and their ancestors below init (2200, 2700, 3050). */
    static const int32_t want[] = { 1500, 2100, 2101, 2102, 2103, 2104, 2200, 2300, 2400, 2600,
                                    2700, 2701, 3050, 3100, 3200, 3300, 3400, 3500, 3600, 3800 };
    struct snapshot *s = scan("host", snapshot_new());
    const struct proc_table *t = &s->procs;
    const struct proc *p;

    (void)state;
    assert_int_equal(s->collectors[COLLECTOR_PROCS].state, CS_PARTIAL);
    assert_true(has_note(s, "stat of 2 processes could not be parsed, skipped (first: pid 250"));
    assert_true(has_note(s, "command line, environment and maps of 3 processes with a thread "
                            "in uninterruptible sleep (D) not read"));
    assert_int_equal(t->scanned, 25);
    assert_int_equal(t->garbled, 2);
    assert_int_equal(t->vanished, 0);
    assert_int_equal(t->fd_denied, 0);
    assert_int_equal(t->clk_tck, 100);
    assert_int_equal(t->boot_time_ms, BOOT_MS);
    assert_int_equal(t->n_procs, ARRAY_SIZE(want));
    for (size_t i = 0; i < ARRAY_SIZE(want); i++)
        assert_int_equal(t->procs[i].pid, want[i]);

    /* The training job, in full. */
    p = get(s, 2100);
    assert_int_equal(p->ppid, 1);
    assert_int_equal(p->state, 'S');
    assert_int_equal(p->start_ticks, 360000);
    assert_int_equal(p->start_time_ms, BOOT_MS + 3600 * 1000);
    assert_int_equal(proc_age_ms(p, BOOT_MS + 7200 * 1000), 3600 * 1000);
    assert_string_equal(p->comm, "python");
    assert_string_equal(p->cmdline, "python train.py --epochs 100");
    assert_string_equal(p->exe, "/usr/bin/python3.11");
    assert_string_equal(p->cwd, "/home/alice/llm");
    assert_int_equal(p->uid, 1000);
    assert_string_equal(p->user, "alice");
    assert_int_equal(p->cpu_time_ms, 7560000);
    assert_false(HAS(p, PROC_S_CPU_PCT)); /* no window */
    assert_int_equal(p->rss_bytes, 8 * GIB);
    assert_int_equal(p->threads, 48);
    assert_true(HAS(p, PROC_S_FDS));
    assert_true(p->holds_ctl);
    assert_true(p->holds_uvm);
    /* every descriptor counted, and its soft limit on them from /proc/2100/limits */
    assert_true(HAS(p, PROC_S_OPEN_FILES));
    assert_int_equal(p->open_files, 11);
    assert_true(HAS(p, PROC_S_NOFILE));
    assert_int_equal(p->open_files_limit, 1024);
    assert_true(HAS(p, PROC_S_MEMLOCK));
    assert_int_equal(p->memlock_limit, 8388608);
    assert_int_equal(p->n_gpus, 2);
    assert_int_equal(p->gpus[0].minor, 0);
    assert_int_equal(p->gpus[1].minor, 1);
    for (size_t i = 0; i < 2; i++) {
        assert_int_equal(p->gpus[i].gpu_index, UINT32_MAX); /* no NVML: known by minor only */
        assert_true(p->gpus[i].holds_device);
        assert_false(p->gpus[i].nvml_listed);
        assert_false(GHAS(&p->gpus[i], PROC_GPU_S_USED));
    }
    assert_int_equal(p->n_children, 4);
    for (size_t i = 0; i < 4; i++)
        assert_int_equal(p->children[i], 2101 + (int32_t)i);
    assert_true(HAS(p, PROC_S_ENV));
    assert_true(p->cuda_visible_devices_set);
    assert_string_equal(p->cuda_visible_devices, "0,1");
    /* The CPUs it may run on, and only the NCCL settings kept: the API key is never seen. */
    assert_true(HAS(p, PROC_S_CPUS));
    assert_string_equal(p->cpus_allowed, "0-63");
    assert_true(HAS(p, PROC_S_NCCL));
    assert_string_equal(p->nccl_p2p_disable, "1");
    assert_string_equal(p->nccl_ib_hca, "mlx5_0");
    assert_string_equal(p->nccl_debug, "INFO?[31m");
    assert_null(p->nccl_ib_disable);
    assert_null(p->nccl_shm_disable);
    {
        json_t *pj = proc_table_to_json(&s->procs);
        char *text = json_dumps(pj, JSON_COMPACT);

        assert_null(strstr(text, "s3cret"));
        assert_null(strstr(text, "WANDB"));
        assert_null(strstr(text, "DISABLEX"));
        assert_non_null(strstr(text, "\"nccl\":{\"NCCL_P2P_DISABLE\":\"1\""));
        free(text);
        json_decref(pj);
    }
    assert_string_equal(p->cgroup, "/user.slice/user-1000.slice/session-3.scope");
    assert_null(p->container_id);
    assert_null(p->container_runtime);
    assert_null(p->pod_uid);
    assert_null(p->slurm_job_id);
    assert_int_equal(p->ns_pid, 2100);
    assert_int_equal(p->ns_depth, 0);
    assert_true(HAS(p, PROC_S_MAPS));
    assert_int_equal(p->n_libs, 10);
    assert_string_equal(p->libs[0].kind, "cuda");
    assert_string_equal(p->libs[0].version, "550.54.15");
    assert_string_equal(p->libs[8].kind, "cudart");
    assert_string_equal(p->libs[8].version, "12.4.127");
    assert_string_equal(p->libs[9].path, "/tmp/libnccl.so.2.21.5");

    /* Its workers: in the table, holding no GPU; one is waiting on the disk. */
    p = get(s, 2103);
    assert_int_equal(p->ppid, 2100);
    assert_int_equal(p->state, 'D');
    assert_int_equal(p->n_gpus, 0);
    assert_true(HAS(p, PROC_S_FDS));
    assert_false(p->holds_ctl);
    assert_int_equal(p->cpu_time_ms, 300000 + 5000);
    /* In D state its command line, environment and maps are not read: that could hang. */
    assert_false(HAS(p, PROC_S_CMDLINE) || HAS(p, PROC_S_ENV) || HAS(p, PROC_S_MAPS));
    assert_true(HAS(p, PROC_S_CGROUP) && HAS(p, PROC_S_USER) && HAS(p, PROC_S_EXE));
    /* Its main thread sleeps, another is in D: the same, the mm files are not read. */
    p = get(s, 2104);
    assert_int_equal(p->state, 'S');
    assert_false(HAS(p, PROC_S_CMDLINE) || HAS(p, PROC_S_ENV) || HAS(p, PROC_S_MAPS));
    assert_true(HAS(p, PROC_S_CGROUP) && HAS(p, PROC_S_USER));
    assert_string_equal(get(s, 2102)->cuda_visible_devices, "0,1");
    assert_string_equal(get(s, 2102)->cmdline, "python train.py --epochs 100");
    assert_int_equal(get(s, 2101)->n_children, 1); /* the grandchild, listed but not recorded */
    assert_int_equal(get(s, 2101)->children[0], 2105);
    assert_null(proc_table_find(t, 2105));
    assert_null(proc_table_find(t, 1));
    assert_null(proc_table_find(t, 2));        /* kernel thread */
    assert_null(proc_table_find(t, 2500));     /* garbage stat */
    assert_null(proc_table_find(t, 2501));     /* truncated stat */
    assert_int_equal(get(s, 2700)->n_gpus, 0); /* the zombie holds nothing; NVML not asked */

    /* The hung nvidia-smi: a driver client without a GPU. */
    p = get(s, 2300);
    assert_int_equal(p->state, 'D');
    assert_false(HAS(p, PROC_S_CMDLINE));
    assert_true(p->holds_ctl);
    assert_false(p->holds_uvm);
    assert_int_equal(p->n_gpus, 0);
    assert_string_equal(p->user, "root");

    /* The name that looks like more fields. */
    p = get(s, 2400);
    assert_string_equal(p->comm, "a) R 9 (b c");
    assert_int_equal(p->state, 'S');
    assert_int_equal(p->ppid, 1);
    assert_int_equal(p->start_ticks, 400000);
    assert_int_equal(p->n_gpus, 1);
    assert_int_equal(p->gpus[0].minor, 2);
    assert_string_equal(p->user, "bob");
    assert_false(HAS(p, PROC_S_ENV)); /* an empty environment: unknown, not unset */
    assert_false(HAS(p, PROC_S_EXE));

    p = get(s, 2600);
    assert_int_equal(p->state, 'T');
    assert_int_equal(p->gpus[0].minor, 3);
    assert_string_equal(p->cuda_visible_devices, "GPU-5e2f6c1d-0000-1111-2222-333344445555");

    p = get(s, 2701); /* "/dev/nvidia1 (deleted)" */
    assert_int_equal(p->ppid, 2700);
    assert_int_equal(p->n_gpus, 1);
    assert_int_equal(p->gpus[0].minor, 1);
    assert_true(p->holds_ctl);

    /* Docker, from the host. */
    p = get(s, 3100);
    assert_int_equal(p->state, 'R');
    assert_string_equal(p->container_runtime, "docker");
    assert_string_equal(p->container_id, DOCKER_ID);
    assert_string_equal(p->cgroup, "/docker/" DOCKER_ID);
    assert_int_equal(p->ns_pid, 42);
    assert_int_equal(p->ns_depth, 1);
    assert_int_equal(p->uid, 2000);
    assert_true(HAS(p, PROC_S_USER));
    assert_false(HAS(p, PROC_S_USER_NAME)); /* the image's user: no name on the host */
    assert_null(p->user);
    assert_true(HAS(p, PROC_S_ENV));
    assert_false(p->cuda_visible_devices_set);
    assert_null(p->cuda_visible_devices);
    assert_int_equal(p->n_libs, 1); /* the line cut by a bounded read is not trusted */
    assert_int_equal(p->ppid, 3050);

    p = get(s, 3200);
    assert_string_equal(p->container_runtime, "containerd");
    assert_string_equal(p->pod_uid, "0f5b3c1e-8a2d-4f6b-9c3e-7d1a2b3c4d5e");
    assert_int_equal(p->ns_pid, 1);
    assert_int_equal(p->ns_depth, 1);
    p = get(s, 3300);
    assert_string_equal(p->container_runtime, "cri-o");
    assert_string_equal(p->pod_uid, "7c9e6679-7425-40de-944b-e07fc1f90ae7");
    assert_int_equal(p->ns_pid, 5);
    assert_int_equal(p->ns_depth, 2);
    p = get(s, 3400);
    assert_string_equal(p->container_runtime, "podman");
    assert_string_equal(p->container_id,
                        "ab12cd34ef56ab12cd34ef56ab12cd34ef56ab12cd34ef56ab12cd34ef56ab12");
    assert_string_equal(get(s, 3500)->slurm_job_id, "4242");
    assert_null(get(s, 3500)->container_id);
    assert_string_equal(get(s, 3600)->slurm_job_id, "4243");

    /* The shell of the hung nvidia-smi: context for the tree, read lightly (no environ, maps
     * or links); init and the worker's own child are not in the table. */
    p = get(s, 2200);
    assert_int_equal(p->n_gpus, 0);
    assert_string_equal(p->cmdline, "-bash");
    assert_string_equal(p->user, "alice");
    assert_true(HAS(p, PROC_S_STAT) && HAS(p, PROC_S_CGROUP) && HAS(p, PROC_S_FDS));
    assert_false(HAS(p, PROC_S_ENV) || HAS(p, PROC_S_MAPS) || HAS(p, PROC_S_EXE) ||
                 HAS(p, PROC_S_CWD));
    assert_int_equal(p->n_children, 1);
    assert_int_equal(p->children[0], 2300);
    assert_true(proc_table_context_only(t, p));
    assert_false(proc_table_context_only(t, get(s, 2101))); /* a worker */
    assert_false(proc_table_context_only(t, get(s, 2300)));
    assert_string_equal(get(s, 3050)->comm, "containerd-shim");
    assert_true(proc_table_context_only(t, get(s, 3050)));
    assert_int_equal(get(s, 2700)->state, 'Z'); /* the zombie above a holder: no GPU of its own */
    assert_null(proc_table_find(t, 1));
    assert_null(proc_table_find(t, 2105));

    /* Garbage status, unsafe bytes: what can be read is, the rest is invalid, nothing crashes. */
    p = get(s, 3800);
    assert_true(HAS(p, PROC_S_STAT));
    assert_false(HAS(p, PROC_S_USER));
    assert_false(HAS(p, PROC_S_NSPID));
    assert_false(HAS(p, PROC_S_RSS));
    assert_false(HAS(p, PROC_S_CGROUP));
    assert_string_equal(p->cmdline, "python -c print(\"?[31m\") ??");
    assert_string_equal(p->cuda_visible_devices, "?]0;pwned?");
    assert_int_equal(p->n_gpus, 1); /* /dev/nvidiafoo and /dev/nvidia007 are not devices */
    assert_int_equal(p->gpus[0].minor, 0);
    snapshot_free(s);
}

static const struct proc_gpu *gpu_of(const struct proc *p, uint32_t index)
{
    for (size_t i = 0; i < p->n_gpus; i++) {
        if (p->gpus[i].gpu_index == index)
            return &p->gpus[i];
    }
    fail_msg("pid %d: no entry for GPU %u", p->pid, index);
    abort();
}

static void test_host_joined_with_nvml(void **state)
{
    struct snapshot *s = scan("host", snapshot_with_nvml());
    const struct proc *p;
    const struct proc_gpu *g;

    (void)state;
    /* The training job: both GPUs held and listed, memory and utilisation from NVML. */
    p = get(s, 2100);
    assert_int_equal(p->n_gpus, 2);
    g = &p->gpus[0];
    assert_int_equal(g->gpu_index, 0);
    assert_int_equal(g->minor, 0);
    assert_true(g->holds_device && g->nvml_listed);
    assert_int_equal(g->type_mask, GPU_PROC_COMPUTE);
    assert_int_equal(g->used_bytes, 20 * GIB);
    assert_true(GHAS(g, PROC_GPU_S_USED));
    assert_int_equal(g->sm_util_pct, 87);
    assert_true(GHAS(g, PROC_GPU_S_UTIL));
    g = &p->gpus[1];
    assert_int_equal(g->gpu_index, 1);
    assert_int_equal(g->used_bytes, 18 * GIB);
    assert_false(GHAS(g, PROC_GPU_S_UTIL));

    g = gpu_of(get(s, 1500), 0);
    assert_int_equal(g->type_mask, GPU_PROC_GRAPHICS);
    assert_true(g->holds_device);
    assert_false(GHAS(gpu_of(get(s, 3500), 0), PROC_GPU_S_USED)); /* NVML had no value */

    /* The zombie: in the table because NVML lists it, with its worker as its child. */
    p = get(s, 2700);
    assert_int_equal(p->state, 'Z');
    assert_false(HAS(p, PROC_S_CMDLINE));
    assert_false(HAS(p, PROC_S_RSS));
    assert_false(HAS(p, PROC_S_ENV));
    assert_int_equal(p->n_children, 1);
    assert_int_equal(p->children[0], 2701);
    assert_int_equal(p->n_gpus, 1);
    g = &p->gpus[0];
    assert_int_equal(g->gpu_index, 1);
    assert_int_equal(g->minor, 1);
    assert_false(g->holds_device);
    assert_true(g->nvml_listed);
    assert_int_equal(g->used_bytes, 10 * GIB);
    g = gpu_of(get(s, 2701), 1);
    assert_true(g->holds_device);
    assert_false(g->nvml_listed);

    /* Minor 3 is NVML's GPU 2, minor 2 its GPU 3. */
    g = gpu_of(get(s, 2600), 2);
    assert_int_equal(g->minor, 3);
    assert_true(g->holds_device && g->nvml_listed);
    g = gpu_of(get(s, 3100), 3);
    assert_int_equal(g->minor, 2);
    assert_true(g->holds_device && g->nvml_listed);
    assert_int_equal(g->sm_util_pct, 95);
    g = gpu_of(get(s, 3200), 3);
    assert_true(g->holds_device);
    assert_false(g->nvml_listed);
    g = gpu_of(get(s, 3600), 1);
    assert_int_equal(g->type_mask, GPU_PROC_COMPUTE | GPU_PROC_MPS);

    /* NVML lists a pid /proc does not show: a record with what NVML knows, and a note. */
    p = get(s, 9999);
    assert_int_equal(p->valid, 0);
    assert_int_equal(p->n_gpus, 1);
    assert_int_equal(p->gpus[0].gpu_index, 0);
    assert_int_equal(p->gpus[0].used_bytes, 1 * GIB);
    assert_true(p->gpus[0].nvml_listed);
    assert_false(p->gpus[0].holds_device);
    assert_true(has_note(s, "NVML lists 1 process that /proc does not show (pid 9999)"));
    assert_int_equal(s->procs.n_procs, 21); /* with the ancestors 2200 and 3050 */
    snapshot_free(s);
}

static void test_container_seen_from_inside(void **state)
{
    struct snapshot *s = snapshot_new();
    const struct proc *p;

    (void)state;
    /* NVML answers with host pids: 3100 is the container's 42. */
    s->gpus = xcalloc(4, sizeof(*s->gpus));
    s->n_gpus = 4;
    for (uint32_t i = 0; i < 4; i++) {
        gpu_init(&s->gpus[i], i);
        s->gpus[i].minor_number = i == 3 ? 2 : i == 2 ? 3 : i;
        gpu_set_rc(&s->gpus[i], GPU_S_MINOR, 0);
        gpu_set_rc(&s->gpus[i], GPU_S_PROCESSES, 0);
    }
    add_gpu_proc(&s->gpus[3], 3100, GPU_PROC_COMPUTE, 20 * GIB, true, 95);
    scan("container", s);

    assert_int_equal(s->procs.n_procs, 3);
    p = get(s, 42);
    assert_int_equal(p->ns_pid, 42);
    assert_int_equal(p->ns_depth, 0); /* the container's /proc: its own namespace */
    assert_string_equal(p->user, "trainer");
    assert_string_equal(p->cgroup, "/");
    assert_null(p->container_id);
    assert_int_equal(p->n_gpus, 1);
    assert_int_equal(p->gpus[0].gpu_index, 3);
    assert_int_equal(p->gpus[0].minor, 2);
    assert_true(p->gpus[0].holds_device);
    assert_false(p->gpus[0].nvml_listed);
    assert_int_equal(p->n_children, 1);
    assert_int_equal(p->children[0], 43);
    assert_int_equal(get(s, 43)->ppid, 42);

    p = get(s, 3100);
    assert_int_equal(p->valid, 0);
    assert_true(p->gpus[0].nvml_listed);
    assert_int_equal(p->gpus[0].used_bytes, 20 * GIB);
    assert_true(has_note(s, "NVML lists 1 process that /proc does not show (pid 3100): another "
                            "PID namespace"));
    snapshot_free(s);
}

static void test_sampling_over_a_window(void **state)
{
    struct snapshot *s = snapshot_with_nvml();
    const struct sample *smp;
    struct run r;

    (void)state;
    run_start(&r, "host", s, 1000);
    collector_procs.sample(&r.ctx, r.state, s, snapshot_add_sample(s, 0));
    collector_procs.sample(&r.ctx, r.state, s, snapshot_add_sample(s, 1000));
    run_finish(&r, s);

    smp = &s->samples[1];
    /* Every record that has a stat, in pid order; not the NVML-only one. */
    assert_int_equal(smp->n_procs, s->procs.n_procs - 1);
    for (size_t i = 1; i < smp->n_procs; i++)
        assert_true(smp->procs[i - 1].pid < smp->procs[i].pid);
    assert_int_equal(smp->procs[1].pid, 2100);
    assert_int_equal(smp->procs[1].start_ticks, 360000);
    assert_int_equal(smp->procs[1].cpu_time_ms, 7560000);
    /* A fixture does not run: 0 % over the window, and valid. */
    assert_true(HAS(get(s, 2100), PROC_S_CPU_PCT));
    assert_true(get(s, 2100)->cpu_pct == 0.0);
    assert_false(HAS(get(s, 9999), PROC_S_CPU_PCT));
    snapshot_free(s);
}

/* A bare record with a stat. */
static void add_proc(struct snapshot *s, int32_t pid, uint64_t start)
{
    struct proc *p;

    s->procs.procs = xreallocarray(s->procs.procs, s->procs.n_procs + 1, sizeof(*p));
    p = &s->procs.procs[s->procs.n_procs++];
    memset(p, 0, sizeof(*p));
    p->pid = pid;
    p->start_ticks = start;
    p->state = 'S';
    p->comm = xstrdup("x");
    p->valid = BIT(PROC_S_STAT);
}

static void add_reading(struct sample *smp, int32_t pid, uint64_t start, uint64_t cpu_ms)
{
    smp->procs = xreallocarray(smp->procs, smp->n_procs + 1, sizeof(*smp->procs));
    smp->procs[smp->n_procs].pid = pid;
    smp->procs[smp->n_procs].start_ticks = start;
    smp->procs[smp->n_procs].cpu_time_ms = cpu_ms;
    smp->n_procs++;
}

static void test_cpu_pct(void **state)
{
    struct snapshot *s = snapshot_new();
    struct sample *a, *b, *c;
    struct run r;

    (void)state;
    memset(&r, 0, sizeof(r));
    add_proc(s, 10, 100); /* 500 ms of CPU in 1 s: 50 % */
    add_proc(s, 11, 100); /* counter went down: saturates at 0 % */
    add_proc(s, 12, 100); /* its pid is another process's later: one reading only */
    add_proc(s, 13, 100); /* seen from 500 ms on: 800 ms of CPU in 500 ms = 1.6 cores */
    add_proc(s, 14, 100); /* never sampled */
    a = snapshot_add_sample(s, 0);
    add_reading(a, 10, 100, 1000);
    add_reading(a, 11, 100, 5000);
    add_reading(a, 12, 100, 100);
    b = snapshot_add_sample(s, 500);
    add_reading(b, 13, 100, 200);
    c = snapshot_add_sample(s, 1000);
    add_reading(c, 13, 100, 1000); /* out of pid order on purpose */
    add_reading(c, 10, 100, 1500);
    add_reading(c, 11, 100, 4000);
    add_reading(c, 12, 999, 900000);
    collector_procs.finish(&r.ctx, NULL, s);

    assert_true(HAS(&s->procs.procs[0], PROC_S_CPU_PCT));
    assert_true(s->procs.procs[0].cpu_pct == 50.0);
    assert_true(HAS(&s->procs.procs[1], PROC_S_CPU_PCT));
    assert_true(s->procs.procs[1].cpu_pct == 0.0);
    assert_false(HAS(&s->procs.procs[2], PROC_S_CPU_PCT));
    assert_true(HAS(&s->procs.procs[3], PROC_S_CPU_PCT));
    assert_true(s->procs.procs[3].cpu_pct == 160.0);
    assert_false(HAS(&s->procs.procs[4], PROC_S_CPU_PCT));
    snapshot_free(s);
}

static void test_window_zero_reads_nothing_more(void **state)
{
    struct snapshot *s = scan("host", snapshot_new());

    (void)state;
    assert_int_equal(s->n_samples, 1);
    assert_int_equal(s->samples[0].n_procs, s->procs.n_procs);
    assert_false(HAS(get(s, 2100), PROC_S_CPU_PCT));
    snapshot_free(s);
}

static void test_no_proc_directory(void **state)
{
    struct snapshot *s = snapshot_new();
    struct run r;

    (void)state;
    run_start(&r, "..", s, 0); /* tests/fixtures has no proc/ */
    assert_null(r.state);
    assert_int_equal(s->collectors[COLLECTOR_PROCS].state, CS_UNAVAILABLE);
    assert_non_null(strstr(s->collectors[COLLECTOR_PROCS].detail, "/proc: No such file"));
    run_finish(&r, s);
    snapshot_free(s);
}

static void test_round_trip(void **state)
{
    struct snapshot *s = scan("host", snapshot_with_nvml()), *back;
    char *first, *second, *cause = NULL;
    const struct proc *p;

    (void)state;
    get(s, 2100); /* the table is filled */
    s->procs.procs[1].cpu_pct = 33.333333333333336;
    s->procs.procs[1].valid |= BIT(PROC_S_CPU_PCT);
    first = snapshot_to_json(s);
    back = snapshot_from_json(first, strlen(first), "first", &cause);
    if (back == NULL)
        fail_msg("%s", cause);
    second = snapshot_to_json(back);
    assert_string_equal(first, second);

    /* What the text cannot show by itself survives too. */
    assert_int_equal(back->procs.n_procs, s->procs.n_procs);
    for (size_t i = 0; i < s->procs.n_procs; i++)
        assert_int_equal(back->procs.procs[i].valid, s->procs.procs[i].valid);
    p = proc_table_find(&back->procs, 2700);
    assert_int_equal(p->state, 'Z');
    assert_int_equal(p->children[0], 2701);
    p = proc_table_find(&back->procs, 2100);
    assert_true(GHAS(&p->gpus[0], PROC_GPU_S_USED));
    assert_false(GHAS(&p->gpus[1], PROC_GPU_S_UTIL));
    assert_int_equal(p->n_libs, 10);
    assert_null(p->libs[7].version);
    p = proc_table_find(&back->procs, 2400);
    assert_int_equal(p->gpus[0].gpu_index, 3);
    p = proc_table_find(&back->procs, 3100);
    assert_false(p->cuda_visible_devices_set); /* read, unset */
    assert_true(HAS(p, PROC_S_ENV));
    assert_true(HAS(p, PROC_S_NCCL)); /* read, none set */
    assert_null(p->nccl_p2p_disable);
    p = proc_table_find(&back->procs, 2100);
    assert_true(HAS(p, PROC_S_NCCL));
    assert_string_equal(p->nccl_p2p_disable, "1");
    assert_string_equal(p->nccl_debug, "INFO?[31m");
    assert_string_equal(p->cpus_allowed, "0-63");
    p = proc_table_find(&back->procs, 2400);
    assert_false(HAS(p, PROC_S_ENV));  /* unknown */
    assert_false(HAS(p, PROC_S_NCCL)); /* not collected, never "none set" */
    assert_int_equal(back->samples[0].n_procs, s->samples[0].n_procs);
    assert_int_equal(back->samples[0].procs[1].cpu_time_ms, 7560000);
    assert_int_equal(back->procs.boot_time_ms, BOOT_MS);

    free(first);
    free(second);
    snapshot_free(back);
    snapshot_free(s);
}

static void test_round_trip_without_nvml_minor(void **state)
{
    struct snapshot *s = scan("host", snapshot_new()), *back;
    char *text, *cause = NULL;

    (void)state;
    text = snapshot_to_json(s);
    assert_non_null(strstr(text, "\"gpu_index\": null"));
    back = snapshot_from_json(text, strlen(text), "t", &cause);
    assert_non_null(back);
    /* null in the file, the sentinel in the struct */
    assert_int_equal(proc_table_find(&back->procs, 2100)->gpus[0].gpu_index, UINT32_MAX);
    free(text);
    snapshot_free(back);
    snapshot_free(s);
}

static void expect_error(const char *processes, const char *want)
{
    char text[2048], *cause = NULL;
    struct snapshot *s;

    snprintf(text, sizeof(text), "{\"schema\": \"gpudoctor.snapshot/1\", \"processes\": %s}",
             processes);
    s = snapshot_from_json(text, strlen(text), "bad.json", &cause);
    if (s != NULL)
        fail_msg("accepted: %s", processes);
    if (strstr(cause, want) == NULL)
        fail_msg("\"%s\" does not say \"%s\"", cause, want);
    free(cause);
}

#define REC                                                                                        \
    "\"pid\": 7, \"cuda_visible_devices\": null, \"container_runtime\": null, "                    \
    "\"container_id\": null, \"pod_uid\": null, \"slurm_job_id\": null"

/* The table a scan with so many threads for its first pass makes, as JSON text. */
static char *scan_with_threads(unsigned threads)
{
    struct snapshot *s = snapshot_with_nvml();
    struct procfs_scan_opts o;
    char root[512];
    json_t *j;
    char *text;

    snprintf(root, sizeof(root), "%s/procs/host", TEST_FIXTURES);
    memset(&o, 0, sizeof(o));
    o.root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
    o.threads = threads;
    assert_int_equal(procfs_scan(&o, s, &s->collectors[COLLECTOR_PROCS]), 0);
    close(o.root_fd);
    assert_int_equal(s->procs.n_procs, 21);
    j = proc_table_to_json(&s->procs);
    text = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    snapshot_free(s);
    return text;
}

static void test_threads_give_the_same_table(void **state)
{
    char *one = scan_with_threads(1);

    (void)state;
    for (unsigned t = 2; t <= 8; t *= 2) {
        char *many = scan_with_threads(t);

        assert_string_equal(one, many);
        free(many);
    }
    free(one);
}

/* ---- a /proc tree written at run time: shapes too big or too odd for the fixtures ---- */

static void write_file(const char *dir, const char *name, const char *text, size_t len)
{
    char *path = xasprintf("%s/%s", dir, name);
    FILE *f = fopen(path, "w");

    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
    free(path);
}

static void write_text(const char *dir, const char *name, const char *text)
{
    write_file(dir, name, text, strlen(text));
}

/* /proc/<pid> with a stat, a status, a cgroup, a command line "c<pid> x" and an fd directory
 * that holds /dev/nvidia0 when gpu. */
static void write_proc(const char *root, int32_t pid, int32_t ppid, bool gpu)
{
    char *dir = xasprintf("%s/proc/%d", root, pid), *fd = xasprintf("%s/fd", dir);
    char *stat = xasprintf("%d (c%d) S %d %d %d 0 -1 4194560 1200 0 3 0 10 10 0 0 20 0 1 0 %d "
                           "1234567890 100 18446744073709551615 1 1 1 0 0 0 0 0 0 0 0 0 17 3 0 "
                           "0 0 0 0\n",
                           pid, pid, ppid, pid, pid, 1000 + pid);
    char *cmdline = xasprintf("c%d%cx", pid, '\0');

    assert_int_equal(mkdir(dir, 0755), 0);
    assert_int_equal(mkdir(fd, 0755), 0);
    write_file(dir, "stat", stat, strlen(stat));
    write_text(dir, "status", "Name:\tc\nUid:\t0\t0\t0\t0\n");
    write_text(dir, "cgroup", "0::/user.slice\n");
    write_file(dir, "cmdline", cmdline, strlen(cmdline) + 3); /* "c<pid>", NUL, "x", NUL */
    write_file(dir, "environ", "HOME=/\0", 8);
    if (gpu) {
        char *link = xasprintf("%s/3", fd);

        assert_int_equal(symlink("/dev/nvidia0", link), 0);
        free(link);
    }
    free(cmdline);
    free(stat);
    free(fd);
    free(dir);
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)type;
    (void)ftw;
    return remove(path);
}

/*
 * A GPU process 1,000 levels below init, and one under a loop of parent links (51's parent 52,
 * 52's parent 51): every ancestor below init is in the table, read lightly, and the walk up the
 * loop ends.
 */
static void test_ancestors_deep_and_looped(void **state)
{
    enum { DEPTH = 1000 };
    char root[] = "/tmp/gpudoctor-test-procs-XXXXXX";
    struct snapshot *s = snapshot_new();
    struct procfs_scan_opts o;
    char *proc;
    const struct proc *p;

    (void)state;
    assert_non_null(mkdtemp(root));
    proc = xasprintf("%s/proc", root);
    assert_int_equal(mkdir(proc, 0755), 0);
    write_text(proc, "stat", "btime 1764662400\n");
    write_proc(root, 1, 0, false);
    for (int32_t i = 0; i < DEPTH; i++)
        write_proc(root, 10000 + i, i ? 10000 + i - 1 : 1, false);
    write_proc(root, 9000, 10000 + DEPTH - 1, true);
    write_proc(root, 50, 51, true);
    write_proc(root, 51, 52, false);
    write_proc(root, 52, 51, false);

    memset(&o, 0, sizeof(o));
    o.root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
    assert_int_equal(procfs_scan(&o, s, &s->collectors[COLLECTOR_PROCS]), 0);
    close(o.root_fd);

    assert_int_equal(s->procs.n_procs, DEPTH + 4); /* the chain, 9000, 50, 51, 52: not init */
    assert_null(proc_table_find(&s->procs, 1));
    for (int32_t i = 0; i < DEPTH; i++) {
        p = get(s, 10000 + i);
        assert_int_equal(p->ppid, i ? 10000 + i - 1 : 1);
        assert_true(HAS(p, PROC_S_CMDLINE) && HAS(p, PROC_S_USER) && HAS(p, PROC_S_CGROUP));
        assert_false(HAS(p, PROC_S_ENV) || HAS(p, PROC_S_MAPS));
        assert_int_equal(p->n_children, 1);
    }
    assert_string_equal(get(s, 10000 + DEPTH - 1)->cmdline, "c10999 x");
    assert_int_equal(get(s, 10000 + DEPTH - 1)->children[0], 9000);
    assert_int_equal(get(s, 9000)->n_gpus, 1);
    assert_true(HAS(get(s, 9000), PROC_S_ENV)); /* a GPU process is read in full */
    assert_false(HAS(get(s, 51), PROC_S_ENV));
    assert_int_equal(get(s, 51)->ppid, 52);
    assert_int_equal(get(s, 52)->ppid, 51);
    assert_int_equal(get(s, 52)->children[0], 51);

    snapshot_free(s);
    assert_int_equal(nftw(root, remove_entry, 16, FTW_DEPTH | FTW_PHYS), 0);
    free(proc);
}

static void test_codec_errors(void **state)
{
    char *cause = NULL;
    struct snapshot *s;
    const char *ok = "{\"schema\": \"gpudoctor.snapshot/1\", \"processes\": {}}";

    (void)state;
    /* An empty section (an older writer) loads as an empty table that was not scanned. */
    s = snapshot_from_json(ok, strlen(ok), "ok.json", &cause);
    assert_non_null(s);
    assert_int_equal(s->procs.n_procs, 0);
    assert_int_equal(s->procs.valid, 0);
    snapshot_free(s);

    expect_error("{\"processes\": [{" REC ", \"state\": \"ZZ\"}]}",
                 "bad.json:1:202: processes.processes[0].state: expected one letter");
    expect_error("{\"processes\": [{" REC ", \"children\": [\"x\"]}]}",
                 "processes.processes[0].children[0]: expected a process id");
    expect_error("{\"processes\": [{" REC ", \"gpus\": {}}]}", "gpus: expected an array");
    expect_error("{\"processes\": [{" REC ", \"libs\": [{\"kind\": \"cuda\"}]}]}",
                 "processes.processes[0].libs[0]: a library needs \"kind\" and \"path\"");
    expect_error("{\"processes\": [{" REC ", \"gpus\": [{\"minor\": -1}]}]}",
                 "processes.processes[0].gpus[0].minor");
    expect_error("{\"processes\": [{" REC ", \"colour\": 1}]}", "unknown key \"colour\"");
    expect_error("{\"processes\": [{\"ppid\": 1}]}", "missing required key \"pid\"");
    expect_error("{\"scanned\": -3}", "processes.scanned: -3 is out of range");
    expect_error("{\"processes\": 5}", "processes: expected an array");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_host_without_nvml),
        cmocka_unit_test(test_host_joined_with_nvml),
        cmocka_unit_test(test_container_seen_from_inside),
        cmocka_unit_test(test_sampling_over_a_window),
        cmocka_unit_test(test_cpu_pct),
        cmocka_unit_test(test_window_zero_reads_nothing_more),
        cmocka_unit_test(test_no_proc_directory),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_round_trip_without_nvml_minor),
        cmocka_unit_test(test_codec_errors),
        cmocka_unit_test(test_threads_give_the_same_table),
        cmocka_unit_test(test_ancestors_deep_and_looped),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
