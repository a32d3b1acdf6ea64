/*
 * The process scan on real processes: holders of something that looks like /dev/nvidia0 (each
 * holder gets a private /dev: its own mount namespace with a tmpfs there, so the host's /dev is
 * untouched and the fd link still reads "/dev/nvidia0"), their workers, a stopped holder,
 * processes that vanish at each step of the scan, and a scan as a user that is not root.
 * Needs root (mount namespaces, setuid); skipped otherwise.
 */
#include "collect/procfs-scan.h"
#include "snapshot/snapshot.h"
#include "util/fileio.h"
#include "util/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#define NOBODY    65534
#define MAX_WORK  4
#define BIT(slot) (UINT64_C(1) << (slot))
#define HAS(p, s) (((p)->valid & BIT(s)) != 0)

struct holder {
    pid_t pid;
    pid_t workers[MAX_WORK];
    int n_workers;
};

/*
 * Every process a test starts, so that the teardown ends them even when an assertion failed
 * half-way (cmocka leaves the test function at the failed assertion).
 */
static pid_t started[64];
static size_t n_started;

static void remember(pid_t pid)
{
    if (pid > 0 && n_started < sizeof(started) / sizeof(started[0]))
        started[n_started++] = pid;
}

/* Once reaped, a pid may go to someone else's process: it must never be signalled again. */
static void forget(pid_t pid)
{
    for (size_t i = 0; i < n_started; i++) {
        if (started[i] == pid)
            started[i] = started[--n_started];
    }
}

static void exec_sleep(const char *cvd)
{
    char *const argv[] = { (char *)"sleep", (char *)"120", NULL };
    char env_cvd[128];
    char *envp[] = { (char *)"PATH=/usr/bin:/bin", NULL, NULL };

    if (cvd != NULL) {
        snprintf(env_cvd, sizeof(env_cvd), "CUDA_VISIBLE_DEVICES=%s", cvd);
        envp[1] = env_cvd;
    }
    execve("/bin/sleep", argv, envp);
    execve("/usr/bin/sleep", argv, envp);
}

/* In the forked holder: a private /dev, the device open, workers, then sleep. Never returns. */
static void become_holder(int out, uid_t uid, const char *cvd, int n_workers, bool hold_in_workers)
{
    char msg[256];
    int len, fd, ctl, null = open("/dev/null", O_RDWR);

    /* Never the test runner's output: a holder left behind would keep ctest waiting. */
    if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(null, 2) < 0) {
        dprintf(out, "fail /dev/null: %s", strerror(errno));
        _exit(1);
    }
    close(null);
    if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
        mount("none", "/dev", "tmpfs", 0, "mode=755") != 0) {
        dprintf(out, "fail private /dev: %s", strerror(errno));
        _exit(1);
    }
    fd = open("/dev/nvidia0", O_RDWR | O_CREAT, 0666);
    ctl = open("/dev/nvidiactl", O_RDWR | O_CREAT, 0666);
    if (fd < 0 || ctl < 0) {
        dprintf(out, "fail open: %s", strerror(errno));
        _exit(1);
    }
    len = snprintf(msg, sizeof(msg), "ok");
    for (int i = 0; i < n_workers; i++) {
        pid_t w = fork();

        if (w == 0) {
            if (!hold_in_workers) {
                close(fd);
                close(ctl);
            }
            exec_sleep(NULL);
            _exit(127);
        }
        len += snprintf(msg + len, sizeof(msg) - (size_t)len, " %d", (int)w);
    }
    if (uid != 0 && (setgroups(0, NULL) != 0 || setresgid(uid, uid, uid) != 0 ||
                     setresuid(uid, uid, uid) != 0)) {
        dprintf(out, "fail setuid: %s", strerror(errno));
        _exit(1);
    }
    if (write(out, msg, (size_t)len) != len)
        _exit(1);
    exec_sleep(cvd); /* the pipe is close-on-exec: EOF tells the parent we are there */
    _exit(127);
}

static bool spawn_holder(struct holder *h, uid_t uid, const char *cvd, int n_workers)
{
    char msg[256];
    size_t len = 0;
    int p[2];
    ssize_t n;

    memset(h, 0, sizeof(*h));
    if (pipe2(p, O_CLOEXEC) != 0)
        return false;
    h->pid = fork();
    if (h->pid == 0) {
        close(p[0]);
        become_holder(p[1], uid, cvd, n_workers, false);
    }
    remember(h->pid);
    close(p[1]);
    while (len < sizeof(msg) - 1 && (n = read(p[0], msg + len, sizeof(msg) - 1 - len)) > 0)
        len += (size_t)n;
    close(p[0]);
    msg[len] = '\0';
    if (strncmp(msg, "ok", 2) != 0) {
        print_message("holder: %s\n", msg);
        return false;
    }
    for (char *tok = strtok(msg + 2, " "); tok && h->n_workers < MAX_WORK;
         tok = strtok(NULL, " ")) {
        h->workers[h->n_workers] = (pid_t)atoi(tok);
        remember(h->workers[h->n_workers++]);
    }
    return true;
}

/*
 * Ends one of our processes. It stays a zombie, and its pid reserved, until it is reaped here:
 * we are its parent, or its subreaper once its parent is gone.
 */
static void reap(pid_t pid)
{
    kill(pid, SIGKILL);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
    forget(pid);
}

/* After each test: whatever it started is ended (stopped ones too) and reaped. */
static int end_all(void **state)
{
    (void)state;
    for (size_t i = 0; i < n_started; i++) {
        kill(started[i], SIGCONT);
        kill(started[i], SIGKILL);
    }
    for (size_t i = 0; i < n_started; i++)
        waitpid(started[i], NULL, 0);
    n_started = 0;
    while (waitpid(-1, NULL, WNOHANG) > 0) /* orphans handed to us */
        ;
    return 0;
}

static void end_holder(struct holder *h)
{
    /* Workers come back to us when their parent dies: we are the subreaper. */
    reap(h->pid);
    for (int i = 0; i < h->n_workers; i++)
        reap(h->workers[i]);
}

static uint64_t start_ticks_of(pid_t pid)
{
    char path[64], buf[2048], *close_paren;
    unsigned long long start = 0;
    int field = 2;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    if (file_read_at(AT_FDCWD, path, buf, sizeof(buf)) < 0)
        return 0;
    close_paren = strrchr(buf, ')');
    for (char *tok = strtok(close_paren + 1, " "); tok; tok = strtok(NULL, " ")) {
        if (++field == 22) {
            start = strtoull(tok, NULL, 10);
            break;
        }
    }
    return start;
}

/*
 * Waits (up to 5 s) until pid sleeps: just after exec a loaded machine may still show it running
 * (R) on its way into sleep(1)'s nanosleep, which is not what the test is about.
 */
static void wait_asleep(pid_t pid)
{
    char path[64], buf[512], *close_paren;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    for (int i = 0; i < 500; i++) {
        if (file_read_at(AT_FDCWD, path, buf, sizeof(buf)) > 0 &&
            (close_paren = strrchr(buf, ')')) != NULL && close_paren[1] == ' ' &&
            close_paren[2] == 'S')
            return;
        usleep(10000);
    }
}

struct kill_at {
    pid_t pid;
    enum procfs_step step;
    pid_t also; /* its parent, killed first so that we reap it */
    bool done;
};

struct hook_arg {
    struct kill_at *targets;
    size_t n;
};

static void kill_hook(int32_t pid, enum procfs_step step, void *arg)
{
    struct hook_arg *h = arg;

    for (size_t i = 0; i < h->n; i++) {
        struct kill_at *k = &h->targets[i];

        if (k->pid != pid || k->step != step || k->done)
            continue;
        if (k->also > 0)
            reap(k->also);
        reap(k->pid);
        k->done = true;
    }
}

static int scan_live_threads(struct snapshot *s, struct hook_arg *arg, unsigned threads)
{
    struct procfs_scan_opts o;
    int fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC), r;

    memset(&o, 0, sizeof(o));
    o.root_fd = fd;
    o.live = true;
    o.threads = threads;
    if (arg != NULL) {
        o.hook = kill_hook;
        o.hook_arg = arg;
    }
    r = procfs_scan(&o, s, &s->collectors[COLLECTOR_PROCS]);
    close(fd);
    return r;
}

static int scan_live(struct snapshot *s, struct hook_arg *arg)
{
    return scan_live_threads(s, arg, 0);
}

static const struct proc *must_find(const struct snapshot *s, pid_t pid)
{
    const struct proc *p = proc_table_find(&s->procs, (int32_t)pid);

    if (p == NULL) {
        fail_msg("pid %d has no record", (int)pid);
        abort();
    }
    return p;
}

static bool can_spawn; /* root, and allowed a private /dev */

static int setup(void **state)
{
    struct holder h;

    (void)state;
    /* A private /dev needs CAP_SYS_ADMIN, which some containers withhold: try once. */
    if (geteuid() == 0 && spawn_holder(&h, 0, NULL, 0)) {
        end_holder(&h);
        can_spawn = true;
    } else {
        print_message("not root, or no mount namespaces here: the live tests are skipped\n");
    }
    return 0;
}

#define NEED_ROOT()                                                                                \
    do {                                                                                           \
        (void)state;                                                                               \
        if (!can_spawn)                                                                            \
            skip();                                                                                \
    } while (0)

static void test_holder_with_workers(void **state)
{
    struct snapshot *s = snapshot_new();
    struct holder h, stopped;
    const struct proc *p;

    NEED_ROOT();
    assert_true(spawn_holder(&h, 0, "1,0", 2));
    assert_true(spawn_holder(&stopped, 0, NULL, 0));
    kill(stopped.pid, SIGSTOP);
    while (waitpid(stopped.pid, NULL, WUNTRACED) < 0 && errno == EINTR)
        ;
    wait_asleep(h.pid);
    assert_int_equal(scan_live(s, NULL), 0);

    p = must_find(s, h.pid);
    assert_int_equal(p->ppid, getpid());
    assert_int_equal(p->start_ticks, start_ticks_of(h.pid));
    assert_true(HAS(p, PROC_S_START_TIME));
    assert_int_equal(p->state, 'S');
    assert_string_equal(p->comm, "sleep");
    assert_string_equal(p->cmdline, "sleep 120");
    assert_int_equal(p->uid, 0);
    assert_string_equal(p->user, "root");
    assert_int_equal(p->n_gpus, 1);
    assert_int_equal(p->gpus[0].minor, 0);
    assert_int_equal(p->gpus[0].gpu_index, UINT32_MAX);
    assert_true(p->gpus[0].holds_device);
    assert_true(p->holds_ctl);
    assert_false(p->holds_uvm);
    assert_true(p->cuda_visible_devices_set);
    assert_string_equal(p->cuda_visible_devices, "1,0");
    assert_int_equal(p->ns_pid, h.pid); /* gpudoctor and the holder share a PID namespace */
    assert_int_equal(p->ns_depth, 0);
    assert_true(HAS(p, PROC_S_EXE) && HAS(p, PROC_S_CWD) && HAS(p, PROC_S_RSS));
    assert_true(HAS(p, PROC_S_CGROUP));
    assert_int_equal(p->n_children, 2);
    assert_int_equal(p->children[0], h.workers[0] < h.workers[1] ? h.workers[0] : h.workers[1]);

    for (int i = 0; i < 2; i++) {
        p = must_find(s, h.workers[i]);
        assert_int_equal(p->ppid, h.pid);
        assert_int_equal(p->n_gpus, 0);
        assert_true(HAS(p, PROC_S_FDS));
        assert_false(p->holds_ctl);
        assert_false(p->cuda_visible_devices_set);
    }
    p = must_find(s, stopped.pid);
    assert_int_equal(p->state, 'T');
    assert_int_equal(p->gpus[0].minor, 0);
    /* The test itself holds nothing: it is there as the holders' parent, for the tree, with
     * its command line but not its environment, maps or links. */
    p = must_find(s, getpid());
    assert_int_equal(p->n_gpus, 0);
    assert_true(HAS(p, PROC_S_STAT) && HAS(p, PROC_S_USER) && HAS(p, PROC_S_CGROUP));
    assert_true(HAS(p, PROC_S_CMDLINE));
    assert_false(HAS(p, PROC_S_ENV) || HAS(p, PROC_S_MAPS) || HAS(p, PROC_S_EXE) ||
                 HAS(p, PROC_S_CWD));
    assert_true(proc_table_context_only(&s->procs, p));
    assert_false(proc_table_context_only(&s->procs, must_find(s, h.workers[0])));
    assert_false(proc_table_context_only(&s->procs, must_find(s, h.pid)));
    /* Its ancestors up to init, not init. */
    assert_null(proc_table_find(&s->procs, 1));
    for (int32_t pid = p->ppid; pid > 1;) {
        const struct proc *a = must_find(s, pid);

        assert_int_equal(a->n_gpus, 0);
        pid = a->ppid;
    }
    assert_true(s->procs.scanned > 3);

    /* The first pass on four threads finds the same holders, workers and states. */
    {
        struct snapshot *s4 = snapshot_new();
        const struct proc *q;

        assert_int_equal(scan_live_threads(s4, NULL, 4), 0);
        q = must_find(s4, h.pid);
        assert_int_equal(q->n_gpus, 1);
        assert_int_equal(q->n_children, 2);
        assert_string_equal(q->cuda_visible_devices, "1,0");
        assert_int_equal(must_find(s4, stopped.pid)->state, 'T');
        assert_int_equal(must_find(s4, h.workers[1])->ppid, h.pid);
        snapshot_free(s4);
    }

    kill(stopped.pid, SIGCONT);
    end_holder(&stopped);
    end_holder(&h);
    snapshot_free(s);
}

static void test_processes_vanish_mid_scan(void **state)
{
    struct snapshot *s = snapshot_new();
    struct holder a, b, c;
    struct kill_at targets[4];
    struct hook_arg arg = { targets, 4 };
    pid_t plain;

    NEED_ROOT();
    assert_true(spawn_holder(&a, 0, NULL, 0)); /* dies before its stat is read */
    assert_true(spawn_holder(&b, 0, NULL, 0)); /* dies between its stat and its fds */
    assert_true(spawn_holder(&c, 0, NULL, 1)); /* dies before its details; its worker too */
    plain = fork();
    if (plain == 0) {
        pause();
        _exit(0);
    }
    remember(plain);
    memset(targets, 0, sizeof(targets));
    targets[0] = (struct kill_at){ a.pid, PROCFS_STEP_OPEN, 0, false };
    targets[1] = (struct kill_at){ b.pid, PROCFS_STEP_FDS, 0, false };
    targets[2] = (struct kill_at){ c.pid, PROCFS_STEP_DETAILS, 0, false };
    targets[3] = (struct kill_at){ plain, PROCFS_STEP_FDS, 0, false };
    assert_int_equal(scan_live(s, &arg), 0);

    for (size_t i = 0; i < 4; i++) {
        if (!targets[i].done)
            fail_msg("target %zu (pid %d) was not reached", i, (int)targets[i].pid);
        assert_null(proc_table_find(&s->procs, (int32_t)targets[i].pid));
    }
    assert_true(s->procs.vanished >= 4);
    assert_int_equal(s->procs.garbled, 0);
    /* c's worker lost its parent; it holds nothing, so it is no one's child in the table */
    assert_null(proc_table_find(&s->procs, (int32_t)c.workers[0]));
    reap(c.workers[0]);
    snapshot_free(s);
}

static void test_child_vanishes_before_its_details(void **state)
{
    struct snapshot *s = snapshot_new();
    struct holder h;
    struct kill_at target;
    struct hook_arg arg = { &target, 1 };
    const struct proc *p;

    NEED_ROOT();
    assert_true(spawn_holder(&h, 0, NULL, 2));
    /*
     * A worker dies after pass 1 saw it as the holder's child. Its parent (sleep) would never
     * reap it, so the holder goes too: the worker comes back to us and we reap it. The holder's
     * record was whole when it was read, and stays.
     */
    target = (struct kill_at){ h.workers[0], PROCFS_STEP_CHILD, h.pid, false };
    assert_int_equal(scan_live(s, &arg), 0);
    assert_true(target.done);
    assert_null(proc_table_find(&s->procs, (int32_t)h.workers[0]));
    assert_true(s->procs.vanished >= 1);
    p = must_find(s, h.pid);
    /* Only the worker that left is not listed. */
    assert_int_equal(p->n_children, 1);
    assert_int_equal(p->children[0], h.workers[1]);
    must_find(s, h.workers[1]);
    end_holder(&h);
    snapshot_free(s);
}

static void test_not_root(void **state)
{
    struct holder mine, theirs;
    char out[512] = "";
    size_t len = 0;
    ssize_t n;
    pid_t scanner;
    int p[2], status;
    unsigned denied = 0, notes = 0;
    int found_theirs = -1, found_mine = -1, mine_gpus = -1, mine_env = -1;

    NEED_ROOT();
    assert_true(spawn_holder(&theirs, 0, "0", 0));
    assert_true(spawn_holder(&mine, NOBODY, "3", 0));
    assert_int_equal(pipe2(p, O_CLOEXEC), 0);
    scanner = fork();
    remember(scanner);
    if (scanner == 0) {
        struct snapshot *s = snapshot_new();
        const struct collector_status *c = &s->collectors[COLLECTOR_PROCS];
        const struct proc *m;
        bool note = false;

        close(p[0]);
        if (setgroups(0, NULL) != 0 || setresgid(NOBODY, NOBODY, NOBODY) != 0 ||
            setresuid(NOBODY, NOBODY, NOBODY) != 0)
            _exit(2);
        scan_live(s, NULL);
        m = proc_table_find(&s->procs, (int32_t)mine.pid);
        for (size_t i = 0; i < c->n_notes; i++)
            note |= strstr(c->notes[i], "unreadable: not root") != NULL;
        dprintf(p[1], "%u %d %d %d %d %u", s->procs.fd_denied,
                proc_table_find(&s->procs, (int32_t)theirs.pid) != NULL, m != NULL,
                m ? (int)m->n_gpus : -1, m ? (int)m->cuda_visible_devices_set : -1, (unsigned)note);
        _exit(0);
    }
    close(p[1]);
    while (len < sizeof(out) - 1 && (n = read(p[0], out + len, sizeof(out) - 1 - len)) > 0)
        len += (size_t)n;
    close(p[0]);
    waitpid(scanner, &status, 0);
    forget(scanner);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_int_equal(sscanf(out, "%u %d %d %d %d %u", &denied, &found_theirs, &found_mine,
                            &mine_gpus, &mine_env, &notes),
                     6);
    assert_true(denied >= 1);          /* at least root's holder */
    assert_int_equal(found_theirs, 0); /* root's fds are hidden from nobody */
    assert_int_equal(found_mine, 1);   /* its own are not */
    assert_int_equal(mine_gpus, 1);
    assert_int_equal(mine_env, 1);
    assert_int_equal(notes, 1); /* one note for all of them */
    end_holder(&mine);
    end_holder(&theirs);
}

/* Drops one capability from the effective set of this process. */
static int drop_cap(int cap)
{
    struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
    struct __user_cap_data_struct data[2];

    if (syscall(SYS_capget, &hdr, data) != 0)
        return -1;
    data[cap / 32].effective &= ~(1u << (cap % 32));
    return (int)syscall(SYS_capset, &hdr, data);
}

/* In a PID namespace of its own, as its init: "fd_denied n_procs n_gpus" of one scan. */
static void scan_line(int out)
{
    struct snapshot *s = snapshot_new();

    scan_live(s, NULL);
    dprintf(out, "%u %zu %zu\n", s->procs.fd_denied, s->procs.n_procs,
            s->procs.n_procs ? s->procs.procs[0].n_gpus : (size_t)0);
    snapshot_free(s);
}

/*
 * The init of a new PID namespace (so the processes are exactly these): a holder that is not
 * dumpable, then two scans by root, with and without CAP_SYS_PTRACE. Without it the holder's fd
 * directory lists but its links do not read.
 */
static void links_unreadable_init(int out)
{
    int ready[2], fd, null;
    pid_t holder;
    char c;

    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
        mount("proc", "/proc", "proc", 0, NULL) != 0 ||
        mount("none", "/dev", "tmpfs", 0, "mode=755") != 0 || pipe(ready) != 0) {
        dprintf(out, "skip %s\n", strerror(errno));
        _exit(0);
    }
    holder = fork();
    if (holder == 0) {
        null = open("/proc/self/cmdline", O_RDONLY); /* stdio must not be the runner's */
        dup2(null, 0);
        fd = open("/dev/nvidia0", O_RDWR | O_CREAT, 0666);
        prctl(PR_SET_DUMPABLE, 0);
        if (write(ready[1], fd >= 0 ? "y" : "n", 1) != 1)
            _exit(1);
        for (;;)
            pause();
    }
    if (read(ready[0], &c, 1) != 1 || c != 'y') {
        dprintf(out, "skip holder\n");
        _exit(0);
    }
    scan_line(out);
    if (drop_cap(CAP_SYS_PTRACE) != 0) {
        dprintf(out, "skip capset: %s\n", strerror(errno));
        _exit(0);
    }
    scan_line(out);
    kill(holder, SIGKILL);
    waitpid(holder, NULL, 0);
    _exit(0);
}

static void test_links_listed_but_unreadable(void **state)
{
    char out[256] = "";
    size_t len = 0;
    ssize_t n;
    unsigned d1, d2;
    size_t p1, p2, g1, g2;
    int p[2], status;
    pid_t child;

    NEED_ROOT();
    assert_int_equal(pipe2(p, O_CLOEXEC), 0);
    child = fork();
    if (child == 0) {
        pid_t init;

        close(p[0]);
        if (unshare(CLONE_NEWPID | CLONE_NEWNS) != 0) {
            dprintf(p[1], "skip unshare: %s\n", strerror(errno));
            _exit(0);
        }
        init = fork();
        if (init == 0)
            links_unreadable_init(p[1]);
        waitpid(init, NULL, 0);
        _exit(0);
    }
    remember(child);
    close(p[1]);
    while (len < sizeof(out) - 1 && (n = read(p[0], out + len, sizeof(out) - 1 - len)) > 0)
        len += (size_t)n;
    close(p[0]);
    waitpid(child, &status, 0);
    forget(child);
    if (strncmp(out, "skip", 4) == 0) {
        print_message("%s", out);
        skip();
    }
    assert_int_equal(sscanf(out, "%u %zu %zu\n%u %zu %zu", &d1, &p1, &g1, &d2, &p2, &g2), 6);
    /* With CAP_SYS_PTRACE: the holder is found. */
    assert_int_equal(d1, 0);
    assert_int_equal(p1, 1);
    assert_int_equal(g1, 1);
    /* Without: its fds are unknown, and counted as such, not taken for "holds nothing". */
    assert_int_equal(d2, 1);
    assert_int_equal(p2, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_holder_with_workers, end_all),
        cmocka_unit_test_teardown(test_processes_vanish_mid_scan, end_all),
        cmocka_unit_test_teardown(test_child_vanishes_before_its_details, end_all),
        cmocka_unit_test_teardown(test_not_root, end_all),
        cmocka_unit_test_teardown(test_links_listed_but_unreadable, end_all),
    };

    /* Orphaned workers are re-parented to us, so we can reap everything we start. */
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    return cmocka_run_group_tests(tests, setup, NULL);
}
