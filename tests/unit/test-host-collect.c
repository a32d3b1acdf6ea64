/*
 * The host collector on fixture trees (tests/fixtures/host): what it fills, what it notes, the
 * window, free space by filesystem, and the byte-identical JSON round trip of its section.
 */
#include "collect/collect.h"
#include "util/xalloc.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cmocka.h>

#define FIX TEST_FIXTURES "/host/"

struct run {
    struct collect_opts opts;
    struct collect_ctx ctx;
    struct snapshot *s;
    void *state;
};

static void run_start(struct run *r, const char *root, int64_t window_ms)
{
    char *cause = NULL;

    memset(r, 0, sizeof(*r));
    r->opts.root = root;
    r->opts.window_ms = window_ms;
    r->opts.timeout_ms = 10000;
    r->ctx.opts = &r->opts;
    if (sysroot_open(&r->ctx.root, root, &cause) != 0)
        fail_msg("%s", cause);
    r->s = snapshot_new();
}

static void run_collector(struct run *r)
{
    r->state = collector_host.start(&r->ctx, r->s);
    collector_host.sample(&r->ctx, r->state, r->s, snapshot_add_sample(r->s, 0));
}

static void run_finish(struct run *r)
{
    collector_host.finish(&r->ctx, r->state, r->s);
    sysroot_close(&r->ctx.root);
}

/* The procs section is not ours: free what the test put there before the snapshot goes. */
static void run_free(struct run *r)
{
    proc_table_free(&r->s->procs);
    free(r->s->driver.events);
    r->s->driver.events = NULL;
    r->s->driver.n_events = 0;
    snapshot_free(r->s);
}

static const struct collector_status *status(const struct run *r)
{
    return &r->s->collectors[COLLECTOR_HOST];
}

static bool has_note(const struct run *r, const char *text)
{
    for (size_t i = 0; i < status(r)->n_notes; i++) {
        if (strstr(status(r)->notes[i], text) != NULL)
            return true;
    }
    return false;
}

static void assert_note(const struct run *r, const char *text)
{
    if (!has_note(r, text)) {
        for (size_t i = 0; i < status(r)->n_notes; i++)
            print_message("note: %s\n", status(r)->notes[i]);
        fail_msg("no note contains \"%s\"", text);
    }
}

static void add_proc(struct snapshot *s, int32_t pid, const char *cwd)
{
    struct proc *p;

    s->procs.procs = xreallocarray(s->procs.procs, s->procs.n_procs + 1, sizeof(*p));
    p = &s->procs.procs[s->procs.n_procs++];
    memset(p, 0, sizeof(*p));
    p->pid = pid;
    p->cwd = cwd ? xstrdup(cwd) : NULL;
    if (cwd)
        p->valid = 1u << PROC_S_CWD;
}

static const struct host_fs *fs_with_mount(const struct host_info *h, const char *mount)
{
    for (size_t i = 0; i < h->n_fs; i++) {
        if (h->fs[i].mount != NULL && strcmp(h->fs[i].mount, mount) == 0)
            return &h->fs[i];
    }
    fail_msg("no filesystem mounted on %s", mount);
    return NULL;
}

static void assert_paths(const struct host_fs *f, const char *const *want, size_t n)
{
    assert_int_equal(f->n_paths, n);
    for (size_t i = 0; i < n; i++)
        assert_string_equal(f->paths[i], want[i]);
}

static void test_server_instant(void **state)
{
    static const char *const root_paths[] = { "/", "/home/bob" };
    static const char *const data_paths[] = { "/data/jobs/alice" };
    struct run r;
    const struct host_info *h;
    const struct host_fs *f;

    (void)state;
    run_start(&r, FIX "server", 0);
    add_proc(r.s, 101, "/data/jobs/alice");
    add_proc(r.s, 102, "/home/bob");
    add_proc(r.s, 103, NULL);
    add_proc(r.s, 104, "/gone/away");
    add_proc(r.s, 105, "/scratch space/run1");
    add_proc(r.s, 106, "/home/bob"); /* twice the same cwd: one path */
    /* The kernel log saw two OOM kills and an XID. */
    r.s->collectors[COLLECTOR_KLOG].state = CS_OK;
    r.s->driver.events = xcalloc(3, sizeof(*r.s->driver.events));
    r.s->driver.n_events = 3;
    r.s->driver.events[0].kind = KLOG_OOM_KILL;
    r.s->driver.events[1].kind = KLOG_XID;
    r.s->driver.events[2].kind = KLOG_OOM_KILL;
    run_collector(&r);
    run_finish(&r);
    h = &r.s->host;

    assert_int_equal(h->cpus, 4);
    assert_true(host_valid(h, HOST_S_CPUS));
    assert_true(h->load1 == 3.5 && h->load5 == 2.25 && h->load15 == 1.0);
    assert_true(h->uptime_s == 86400.25);
    assert_string_equal(h->kernel_release, "5.15.0-91-generic");
    assert_int_equal(h->mem_total_bytes, 263840476ULL * 1024);
    assert_int_equal(h->mem_available_bytes, 4194304ULL * 1024);
    assert_int_equal(h->swap_total_bytes, 8388604ULL * 1024);
    assert_int_equal(h->swap_free_bytes, 2097148ULL * 1024);
    assert_true(h->psi_cpu_some_avg10_pct == 12.5 && h->psi_cpu_some_avg60_pct == 8.25);
    assert_true(h->psi_mem_some_avg10_pct == 1.5 && h->psi_mem_full_avg10_pct == 0.5);
    assert_true(h->psi_io_some_avg10_pct == 40.0 && h->psi_io_full_avg60_pct == 15.25);
    assert_true(host_valid(h, HOST_S_PSI_CPU) && host_valid(h, HOST_S_PSI_MEM) &&
                host_valid(h, HOST_S_PSI_IO));
    assert_int_equal(h->oom_kills, 2);
    assert_true(host_valid(h, HOST_S_OOM));
    assert_true(host_valid(h, HOST_S_SUSPEND));
    assert_int_equal(h->suspend_count, 3);
    /* gpudoctor's own limits (proc/self/limits of the tree) */
    assert_true(host_valid(h, HOST_S_NOFILE) && host_valid(h, HOST_S_MEMLOCK));
    assert_int_equal(h->open_files_limit, 1024);
    assert_int_equal(h->memlock_limit, 8388608);
    /* interfaces up: eth0 and ib0 (state unknown counts as up); not docker0 (down), not lo */
    assert_true(host_valid(h, HOST_S_NET));
    assert_int_equal(strlen(h->net_up), strlen("eth0 ib0"));
    assert_non_null(strstr(h->net_up, "eth0"));
    assert_non_null(strstr(h->net_up, "ib0"));
    assert_null(strstr(h->net_up, "docker0"));
    /* An instant reading has no window: rates are invalid, not 0. */
    assert_false(host_valid(h, HOST_S_CPU_PCT));
    assert_false(host_valid(h, HOST_S_SWAP_RATE));
    assert_false(host_valid(h, HOST_S_PSI_IO_WINDOW));
    assert_false(r.s->samples[0].host.valid & (1u << HOST_SMP_S_CPU));
    assert_true(r.s->samples[0].host.valid & (1u << HOST_SMP_S_MEM));
    assert_int_equal(r.s->samples[0].host.mem_available_bytes, 4194304ULL * 1024);

    /* Whole disks only: partitions, loop, zram, sr0 and the unused dm-1 left out; dm-0 holds /. */
    assert_true(host_valid(h, HOST_S_DISKS));
    assert_int_equal(h->n_disks, 3);
    assert_string_equal(h->disks[0].name, "sda");
    assert_true(h->disks[0].rotational);
    assert_string_equal(h->disks[1].name, "nvme0n1");
    assert_false(h->disks[1].rotational);
    assert_string_equal(h->disks[2].name, "dm-0");
    for (size_t i = 0; i < h->n_disks; i++)
        assert_int_equal(h->disks[i].valid, 1u << DISK_S_ROTATIONAL);

    /* One entry per filesystem, with every path that lives on it. */
    assert_true(host_valid(h, HOST_S_FS));
    assert_int_equal(h->n_fs, 4);
    f = fs_with_mount(h, "/");
    assert_string_equal(f->device, "/dev/mapper/vg0-root");
    assert_string_equal(f->fstype, "ext4");
    assert_paths(f, root_paths, 2);
    assert_true(f->valid & (1u << FS_S_SPACE));
    assert_true(f->total_bytes > 0 && f->avail_bytes <= f->total_bytes);
    f = fs_with_mount(h, "/tmp");
    assert_string_equal(f->fstype, "tmpfs");
    assert_string_equal(f->paths[0], "/tmp");
    f = fs_with_mount(h, "/data");
    assert_string_equal(f->device, "/dev/sda1");
    assert_paths(f, data_paths, 1);
    f = fs_with_mount(h, "/scratch space");
    assert_string_equal(f->paths[0], "/scratch space/run1");

    assert_int_equal(status(&r)->state, CS_PARTIAL);
    assert_note(&r, "free space of the cwd of pid 104: /gone/away: No such file or directory");
    assert_int_equal(status(&r)->n_notes, 1);
    run_free(&r);
}

static char *copy_tree(const char *src)
{
    char tmpl[] = "/tmp/gpudoctor-host-XXXXXX", cmd[1024];
    char *dir = mkdtemp(tmpl);

    assert_non_null(dir);
    snprintf(cmd, sizeof(cmd), "cp -a '%s/.' '%s/'", src, dir);
    assert_int_equal(system(cmd), 0);
    return xstrdup(dir);
}

static void remove_tree(char *dir)
{
    char cmd[1024];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
    free(dir);
}

static void add_gpu_proc(struct snapshot *s, int32_t pid, const char *cwd)
{
    struct proc *p;

    add_proc(s, pid, cwd);
    p = &s->procs.procs[s->procs.n_procs - 1];
    p->gpus = xcalloc(1, sizeof(*p->gpus));
    p->n_gpus = 1;
}

static void shm_sizes(const char *dir, const char *rel, uint64_t *total, uint64_t *avail)
{
    char path[1024];
    struct statvfs v;

    snprintf(path, sizeof(path), "%s/%s", dir, rel);
    assert_int_equal(statvfs(path, &v), 0);
    *total = (uint64_t)v.f_blocks * v.f_frsize;
    *avail = (uint64_t)v.f_bavail * v.f_frsize;
}

/*
 * /dev/shm here and as each GPU process sees it: one in another mount namespace through
 * /proc/PID/root; a process whose root is not there, one whose cwd was not read and one with no
 * GPU are left unknown, without a note.
 */
static void test_shm(void **state)
{
    char *dir = copy_tree(FIX "server"), cmd[2048];
    uint64_t total, avail;
    const struct proc *p;
    struct run r;

    (void)state;
    snprintf(cmd, sizeof(cmd),
             "cd '%s' && mkdir -p dev/shm proc/201/root/dev/shm proc/self/ns proc/201/ns "
             "proc/203/ns && ln -s 'mnt:[4026531840]' proc/self/ns/mnt && "
             "ln -s 'mnt:[4026532600]' proc/201/ns/mnt && ln -s 'mnt:[4026532601]' proc/203/ns/mnt",
             dir);
    assert_int_equal(system(cmd), 0);
    run_start(&r, dir, 0);
    add_gpu_proc(r.s, 201, "/workspace");
    add_gpu_proc(r.s, 202, NULL);         /* its cwd unreadable: its root too */
    add_gpu_proc(r.s, 203, "/workspace"); /* another namespace whose root is not there */
    add_proc(r.s, 204, "/");              /* no GPU: not a job's */
    run_collector(&r);
    run_finish(&r);

    assert_true(host_valid(&r.s->host, HOST_S_SHM));
    shm_sizes(dir, "dev/shm", &total, &avail);
    assert_int_equal(r.s->host.shm_total_bytes, total);
    assert_true(r.s->host.shm_avail_bytes <= r.s->host.shm_total_bytes);
    p = proc_table_find(&r.s->procs, 201);
    assert_true(p->valid & PROC_BIT(PROC_S_SHM));
    shm_sizes(dir, "proc/201/root/dev/shm", &total, &avail);
    assert_int_equal(p->shm_total_bytes, total);
    assert_false(proc_table_find(&r.s->procs, 202)->valid & PROC_BIT(PROC_S_SHM));
    assert_false(proc_table_find(&r.s->procs, 203)->valid & PROC_BIT(PROC_S_SHM));
    assert_false(proc_table_find(&r.s->procs, 204)->valid & PROC_BIT(PROC_S_SHM));
    for (size_t i = 0; i < status(&r)->n_notes; i++)
        assert_null(strstr(status(&r)->notes[i], "shm"));
    run_free(&r);
    remove_tree(dir);
}

/* start() on server/, the counters of later/ copied in, finish(): the window's breakdown. */
static void test_server_window(void **state)
{
    char *dir = copy_tree(FIX "server"), cmd[1024];
    struct run r;
    const struct host_info *h;

    (void)state;
    run_start(&r, dir, 2000);
    run_collector(&r);
    snprintf(cmd, sizeof(cmd), "cp -a '%s/.' '%s/'", FIX "later", dir);
    assert_int_equal(system(cmd), 0);
    /* Enough time for a sample to measure (samples need 50 ms between readings). */
    usleep(60000);
    collector_host.sample(&r.ctx, r.state, r.s, snapshot_add_sample(r.s, 60));
    run_finish(&r);
    h = &r.s->host;

    /* Shares of CPU time do not depend on how long the window really was. */
    assert_true(host_valid(h, HOST_S_CPU_PCT));
    assert_true(h->cpu_user_pct > 39.999 && h->cpu_user_pct < 40.001);
    assert_true(h->cpu_system_pct > 19.999 && h->cpu_system_pct < 20.001);
    assert_true(h->cpu_iowait_pct > 14.999 && h->cpu_iowait_pct < 15.001);
    assert_true(h->cpu_steal_pct > 4.999 && h->cpu_steal_pct < 5.001);
    assert_true(h->cpu_idle_pct > 19.999 && h->cpu_idle_pct < 20.001);
    /* The second sample sees the same counters move: busy 60 %, iowait 15 %, steal 5 %. */
    assert_true(r.s->samples[1].host.valid & (1u << HOST_SMP_S_CPU));
    assert_true(r.s->samples[1].host.cpu_busy_pct > 59.999 &&
                r.s->samples[1].host.cpu_busy_pct < 60.001);
    assert_true(r.s->samples[1].host.cpu_iowait_pct > 14.999);
    /* Rates over the real elapsed time: twice as many pages in as out; sda's await is exact. */
    assert_true(host_valid(h, HOST_S_SWAP_RATE));
    assert_true(h->swap_in_pages_per_s > 0);
    assert_true(h->swap_in_pages_per_s > 1.999 * h->swap_out_pages_per_s &&
                h->swap_in_pages_per_s < 2.001 * h->swap_out_pages_per_s);
    assert_true(host_valid(h, HOST_S_PSI_IO_WINDOW));
    assert_string_equal(h->disks[0].name, "sda");
    assert_true(h->disks[0].valid & (1u << DISK_S_AWAIT));
    assert_true(h->disks[0].await_ms > 9.999 && h->disks[0].await_ms < 10.001);
    assert_true(h->disks[0].util_pct > 0 && h->disks[0].util_pct <= 100);
    assert_false(h->disks[1].valid & (1u << DISK_S_AWAIT));
    assert_true(h->disks[1].valid & (1u << DISK_S_RATES));
    /* No procs collector or kernel log here: OOM kills unknown, and said so. */
    assert_false(host_valid(h, HOST_S_OOM));
    assert_note(&r, "OOM kills unknown: the kernel log was not read (kernel_log: not_run)");
    run_free(&r);
    remove_tree(dir);
}

static void test_old_kernel(void **state)
{
    struct run r;
    const struct host_info *h;

    (void)state;
    run_start(&r, FIX "old", 0);
    run_collector(&r);
    run_finish(&r);
    h = &r.s->host;
    /* No sysfs CPU list: the cpuN lines of /proc/stat count them. */
    assert_int_equal(h->cpus, 2);
    assert_string_equal(h->kernel_release, "3.10.0-1160.el7.x86_64");
    assert_false(host_valid(h, HOST_S_PSI_CPU));
    assert_false(host_valid(h, HOST_S_PSI_MEM));
    assert_false(host_valid(h, HOST_S_PSI_IO));
    assert_false(host_valid(h, HOST_S_MEM_AVAILABLE));
    assert_false(host_valid(h, HOST_S_SUSPEND)); /* no /sys/power: unknown, no note */
    assert_true(host_valid(h, HOST_S_MEM));
    assert_true(host_valid(h, HOST_S_SWAP));
    assert_int_equal(h->swap_total_bytes, 0);
    assert_int_equal(h->n_disks, 1);
    assert_string_equal(h->disks[0].name, "sda");
    assert_int_equal(h->n_fs, 1);
    assert_int_equal(h->fs[0].n_paths, 2);
    assert_int_equal(status(&r)->state, CS_PARTIAL);
    assert_note(&r, "PSI not available: /proc/pressure/cpu: missing");
    assert_note(&r, "/proc/meminfo: no MemAvailable (kernel before 3.14)");
    /* One note for missing PSI, not one per file. */
    assert_int_equal(status(&r)->n_notes, 3);
    run_free(&r);
}

static void test_garbage(void **state)
{
    static const char *const notes[] = {
        "/proc/stat: malformed: line 1: the \"cpu\" line has 3 numbers",
        "/proc/vmstat: malformed: line 1: expected a page count, got \"x\"",
        "/proc/diskstats: 4 malformed lines skipped, the first: line 1:",
        "/proc/pressure/cpu: malformed: line 1: expected a number after the '='",
        "/proc/pressure/memory: malformed: line 1: avg10, avg60, avg300 and total expected",
        ("/proc/pressure/io: malformed: line 1: expected \"some\" or \"full\", got "
         "\"\\x01\\x02\\xff\""),
        "/sys/devices/system/cpu/online: malformed: expected a CPU number or range",
        "/proc/loadavg: malformed: line 1: expected a load average, got \"load?\"",
        "/proc/uptime: malformed: empty",
        "/proc/sys/kernel/osrelease: malformed: empty",
        "/proc/meminfo: malformed: line 2: MemAvailable has no \"kB\" unit (truncated?)",
        "/proc/self/mountinfo: 3 malformed lines skipped",
        "/sys/block/sda/queue/rotational: malformed: expected 0 or 1, got \"maybe\"",
        "/sys/power/suspend_stats/success: malformed: \"many\" is not a count",
        "/proc/self/limits: malformed: no 'Max open files' line",
        "/proc/self/limits: malformed: no 'Max locked memory' line",
    };
    struct run r;
    const struct host_info *h;
    char *json, *cause = NULL;
    struct snapshot *back;

    (void)state;
    run_start(&r, FIX "garbage", 1000);
    run_collector(&r);
    run_finish(&r);
    h = &r.s->host;
    for (size_t i = 0; i < ARRAY_SIZE(notes); i++)
        assert_note(&r, notes[i]);
    assert_int_equal(status(&r)->state, CS_PARTIAL);
    /* What parsed is kept, the rest is invalid. */
    assert_true(host_valid(h, HOST_S_MEM));
    assert_int_equal(h->mem_total_bytes, 16384000ULL * 1024);
    assert_false(host_valid(h, HOST_S_MEM_AVAILABLE));
    assert_false(host_valid(h, HOST_S_CPUS));
    assert_false(host_valid(h, HOST_S_LOAD));
    assert_false(host_valid(h, HOST_S_UPTIME));
    assert_false(host_valid(h, HOST_S_KERNEL));
    assert_false(host_valid(h, HOST_S_CPU_PCT));
    assert_false(host_valid(h, HOST_S_SWAP_RATE));
    assert_false(host_valid(h, HOST_S_PSI_CPU));
    assert_false(host_valid(h, HOST_S_PSI_IO_WINDOW));
    assert_false(host_valid(h, HOST_S_SUSPEND));
    assert_false(host_valid(h, HOST_S_NOFILE) || host_valid(h, HOST_S_MEMLOCK));
    assert_false(host_valid(h, HOST_S_NET)); /* no /sys/class/net: unknown */
    assert_int_equal(h->n_disks, 1);
    assert_int_equal(h->disks[0].valid & (1u << DISK_S_ROTATIONAL), 0);
    assert_string_equal(h->fs[0].device, "/dev/root");
    /* The notes quote garbage bytes, and the snapshot stays valid JSON that reads back. */
    json = snapshot_to_json(r.s);
    back = snapshot_from_json(json, strlen(json), "garbage", &cause);
    if (back == NULL)
        fail_msg("%s", cause);
    assert_int_equal(back->collectors[COLLECTOR_HOST].n_notes, status(&r)->n_notes);
    snapshot_free(back);
    free(json);
    run_free(&r);
}

static void test_empty_root(void **state)
{
    char tmpl[] = "/tmp/gpudoctor-host-XXXXXX";
    char *dir = mkdtemp(tmpl);
    struct run r;

    (void)state;
    assert_non_null(dir);
    run_start(&r, dir, 0);
    run_collector(&r);
    run_finish(&r);
    assert_int_equal(status(&r)->state, CS_UNAVAILABLE);
    assert_non_null(strstr(status(&r)->detail, "nothing could be read under"));
    assert_note(&r, "/proc/stat: No such file or directory");
    assert_int_equal(r.s->host.valid & ~((1u << HOST_S_FS)), 0);
    run_free(&r);
    rmdir(dir);
}

/* The container gpudoctor runs in, from the marks runtimes leave, first mark first. */
static void test_container(void **state)
{
    static const struct {
        const char *make; /* shell commands run in a copy of server/ */
        const char *want, *sign;
    } cases[] = {
        { ":", "none", NULL },
        { "touch .dockerenv && mkdir -p run && touch run/.containerenv", "docker", "/.dockerenv" },
        { "mkdir -p run && touch run/.containerenv", "podman", "/run/.containerenv" },
        { "mkdir -p run/systemd && echo lxc >run/systemd/container", "lxc",
          "/run/systemd/container" },
        /* not one word: no mark */
        { "mkdir -p run/systemd && printf 'lx c; rm -rf /' >run/systemd/container", "none", NULL },
        { "mkdir -p proc/self && printf '12:devices:/docker/%s\\n0::/\\n' "
          "\"$(printf 'ab%.0s' $(seq 32))\" >proc/self/cgroup",
          "docker", "/proc/self/cgroup" },
        { "mkdir -p proc/self && printf '0::/kubepods/burstable/"
          "pod0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0/%s\\n' \"$(printf 'cd%.0s' $(seq 32))\" "
          ">proc/self/cgroup",
          "kubernetes", "/proc/self/cgroup" },
        { "mkdir -p proc/self && echo '0::/user.slice/session-3.scope' >proc/self/cgroup && "
          "mkdir -p var/run/secrets/kubernetes.io/serviceaccount",
          "kubernetes", "/var/run/secrets/kubernetes.io" },
    };

    (void)state;
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        char *dir = copy_tree(FIX "server"), cmd[1024];
        struct run r;

        snprintf(cmd, sizeof(cmd), "cd '%s' && { %s; }", dir, cases[i].make);
        assert_int_equal(system(cmd), 0);
        run_start(&r, dir, 0);
        run_collector(&r);
        run_finish(&r);
        assert_true(host_valid(&r.s->host, HOST_S_CONTAINER));
        if (strcmp(r.s->host.container, cases[i].want) != 0)
            fail_msg("case %zu: container %s, want %s", i, r.s->host.container, cases[i].want);
        if (cases[i].sign == NULL) {
            assert_null(r.s->host.container_sign);
            assert_null(host_container(&r.s->host));
        } else {
            assert_string_equal(r.s->host.container_sign, cases[i].sign);
            assert_string_equal(host_container(&r.s->host), cases[i].want);
        }
        run_free(&r);
        remove_tree(dir);
    }
}

/* Host memory errors from the EDAC tree: sums, the DIMMs with uncorrectable ones, garbage. */
static void test_edac(void **state)
{
    static const char mk[] =
        "e=sys/devices/system/edac/mc && mkdir -p $e/mc0/dimm0 $e/mc0/dimm1 $e/mc1/rank3 "
        "$e/mc1/csrow0 $e/power && "
        "echo 0 >$e/mc0/ue_count && echo 3 >$e/mc0/ce_count && echo 86400 "
        ">$e/mc0/seconds_since_reset && "
        "echo 2 >$e/mc1/ue_count && echo 5 >$e/mc1/ce_count && echo 7200 "
        ">$e/mc1/seconds_since_reset && "
        "echo 'P1-DIMMA1' >$e/mc0/dimm0/dimm_label && echo 0 >$e/mc0/dimm0/dimm_ue_count && "
        "echo 1 >$e/mc0/dimm1/dimm_ue_count && "
        "printf 'P2-DIMMF1\\033[2J\\n' >$e/mc1/rank3/dimm_label && echo 2 "
        ">$e/mc1/rank3/dimm_ue_count";
    char *dir = copy_tree(FIX "server"), cmd[2048];
    const struct host_info *h;
    struct run r;

    (void)state;
    /* the server fixture has no EDAC driver: unknown, and no note for it */
    run_start(&r, FIX "server", 0);
    run_collector(&r);
    run_finish(&r);
    assert_false(host_valid(&r.s->host, HOST_S_EDAC));
    assert_false(has_note(&r, "edac"));
    run_free(&r);

    snprintf(cmd, sizeof(cmd), "cd '%s' && { %s; }", dir, mk);
    assert_int_equal(system(cmd), 0);
    run_start(&r, dir, 0);
    run_collector(&r);
    run_finish(&r);
    h = &r.s->host;
    assert_true(host_valid(h, HOST_S_EDAC));
    assert_int_equal(h->edac_controllers, 2);
    assert_int_equal(h->mem_ue_count, 2);
    assert_int_equal(h->mem_ce_count, 8);
    assert_true(h->edac_since_s == 7200);
    /* mc0 had no uncorrectable error: its DIMMs are not looked at (dimm1's count is stale) */
    assert_true(host_valid(h, HOST_S_EDAC_DIMMS));
    assert_string_equal(h->mem_ue_dimms, "P2-DIMMF1\\x1b[2J (2)"); /* the escape made text */
    run_free(&r);

    /* a counter that is not a number: noted, that controller left out */
    snprintf(cmd, sizeof(cmd),
             "cd '%s' && echo lots >sys/devices/system/edac/mc/mc1/ue_count && echo 1 "
             ">sys/devices/system/edac/mc/mc0/ue_count",
             dir);
    assert_int_equal(system(cmd), 0);
    run_start(&r, dir, 0);
    run_collector(&r);
    run_finish(&r);
    h = &r.s->host;
    assert_note(&r, "mc1/ue_count: malformed: expected a count");
    assert_int_equal(h->edac_controllers, 1);
    assert_int_equal(h->mem_ue_count, 1);
    /* dimm1 has no label: named by where it is */
    assert_string_equal(h->mem_ue_dimms, "mc0/dimm1 (1)");
    run_free(&r);
    remove_tree(dir);
}

/* The host section written, read and written again gives the same bytes. */
static void test_round_trip(void **state)
{
    char *dir = copy_tree(FIX "server"), cmd[1024], *first, *second, *cause = NULL;
    struct snapshot *back;
    struct run r;

    (void)state;
    run_start(&r, dir, 2000);
    add_proc(r.s, 7, "/data/jobs/alice");
    r.s->collectors[COLLECTOR_KLOG].state = CS_OK;
    run_collector(&r);
    snprintf(cmd, sizeof(cmd), "cp -a '%s/.' '%s/'", FIX "later", dir);
    assert_int_equal(system(cmd), 0);
    usleep(60000);
    collector_host.sample(&r.ctx, r.state, r.s, snapshot_add_sample(r.s, 60));
    run_finish(&r);
    /* A string that needs escaping, and a disk whose rates are partly invalid. */
    free(r.s->host.fs[0].paths[0]);
    r.s->host.fs[0].paths[0] = xstrdup("/home/\"quoted\" \\ dir/日本");

    first = snapshot_to_json(r.s);
    back = snapshot_from_json(first, strlen(first), "first", &cause);
    if (back == NULL)
        fail_msg("%s", cause);
    second = snapshot_to_json(back);
    assert_string_equal(first, second);
    assert_int_equal(back->host.valid, r.s->host.valid);
    assert_int_equal(back->host.n_disks, 3);
    assert_int_equal(back->host.disks[1].valid, r.s->host.disks[1].valid);
    assert_int_equal(back->host.n_fs, r.s->host.n_fs);
    assert_string_equal(back->host.fs[0].paths[0], "/home/\"quoted\" \\ dir/日本");
    assert_int_equal(back->samples[1].host.valid, r.s->samples[1].host.valid);
    free(first);
    free(second);
    snapshot_free(back);
    run_free(&r);
    remove_tree(dir);
}

/* A hand-written host section with mistakes: errors name the place. */
static void test_read_errors(void **state)
{
    static const struct {
        const char *host, *want;
    } cases[] = {
        { "{\"cpus\": -1}", "host.cpus: -1 is out of range" },
        { "{\"disks\": {}}", "host: disks: expected an array" },
        { "{\"disks\": [{\"name\": \"sda\", \"util_pct\": \"high\"}]}",
          "host.disks[0].util_pct: expected a number" },
        { "{\"disks\": [{\"util_pct\": 3}]}", "host.disks[0]: missing required key \"name\"" },
        { "{\"filesystems\": [{\"paths\": [3]}]}",
          "host.filesystems[0].paths[0]: expected a string" },
        { "{\"load1\": 1, \"loadavg\": 2}", "unknown key \"loadavg\" in host" },
    };

    (void)state;
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        char *text =
            xasprintf("{\"schema\": \"gpudoctor.snapshot/1\", \"host\": %s}", cases[i].host);
        char *cause = NULL;
        struct snapshot *s = snapshot_from_json(text, strlen(text), "t.json", &cause);

        assert_null(s);
        if (strstr(cause, cases[i].want) == NULL)
            fail_msg("case %zu: \"%s\" does not contain \"%s\"", i, cause, cases[i].want);
        free(cause);
        free(text);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_server_instant), cmocka_unit_test(test_server_window),
        cmocka_unit_test(test_old_kernel),     cmocka_unit_test(test_garbage),
        cmocka_unit_test(test_empty_root),     cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_read_errors),    cmocka_unit_test(test_container),
        cmocka_unit_test(test_edac),           cmocka_unit_test(test_shm),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
