#include "collect/procfs-scan.h"
#include "collect/procfs.h"
#include "util/fileio.h"
#include "util/strutil.h"
#include "util/xalloc.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <pwd.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Bounds on what one process may make us read. */
#define STAT_MAX    2048
#define STATUS_MAX  16384
#define CMDLINE_MAX (256u << 10)
#define ENVIRON_MAX (1u << 20)
#define CGROUP_MAX  (64u << 10)
#define MAPS_MAX    (16u << 20)
#define PASSWD_MAX  (16u << 20)
#define PSTAT_MAX   (16u << 20)
#define DENTS_SIZE  (32u << 10)

/* Pass 1 in parallel: from this many processes, at most this many threads, chunks of pids. */
#define PARALLEL_MIN   2048
#define PARALLEL_PER   1024 /* processes per thread, at least */
#define PARALLEL_MAX   8
#define PARALLEL_CHUNK 64

/* Every process seen: enough for the parent/child tree. */
struct rec {
    int32_t pid, ppid;
    uint64_t start_ticks;
    bool fds_ok;   /* its fd links were read */
    bool in_table; /* already has a record */
    bool gone;     /* vanished after this was recorded */
};

/* The NVIDIA files one process holds. */
struct held {
    uint32_t *minors;
    size_t n_minors, cap_minors;
    bool ctl, uvm, other;
};

/* What pass 1 found for one pid, written by whichever thread read it. */
enum slot_state {
    SLOT_OK,
    SLOT_GONE,    /* exited before or while it was read */
    SLOT_GARBLED, /* stat could not be parsed: why says how */
    SLOT_DENIED,  /* stat unreadable: permission denied (hidepid) */
    SLOT_ERROR,   /* stat unreadable: error */
};

struct slot {
    int32_t pid, ppid;
    uint64_t start_ticks;
    enum slot_state state;
    int error;     /* SLOT_ERROR: the errno */
    char *why;     /* SLOT_GARBLED */
    bool fds_ok;   /* the fd links were read */
    int fds_error; /* reading them failed with this errno (0: it did not) */
    struct held held;
};

/* One entry of NVML's lists: a pid on s->gpus[gpu]. */
struct nvml_ref {
    int32_t pid;
    size_t gpu;
    const struct gpu_proc *gp;
};

struct user {
    uint32_t uid;
    char *name; /* NULL: the uid has no name */
};

/* What could not be read, summarised in one note per kind. */
struct failures {
    uint32_t pid_denied, env_denied, maps_denied, link_denied;
    uint32_t env_unknown, maps_truncated;
    uint32_t d_skipped; /* in D state: cmdline, environ, maps not read */
    uint32_t other;
    char *garbled_first; /* "pid 7: why" */
    char *other_first;   /* "/proc/7/status: why" */
};

struct scan {
    const struct procfs_scan_opts *o;
    struct snapshot *s;
    struct proc_table *t;
    int proc_fd;
    char *dents; /* the main thread's listing buffer */

    struct rec *recs;
    size_t n_recs, cap_recs;
    struct proc *procs;
    size_t n_procs, cap_procs;
    struct nvml_ref *nvml;
    size_t n_nvml;

    struct user *users;
    size_t n_users, cap_users;
    char *passwd;
    bool passwd_tried;

    struct failures f;
};

static bool has(const struct proc *p, enum proc_slot slot)
{
    return (p->valid >> slot) & 1u;
}

static void set_valid(struct proc *p, enum proc_slot slot, bool valid)
{
    if (valid)
        p->valid |= UINT64_C(1) << slot;
    else
        p->valid &= ~(UINT64_C(1) << slot);
}

static void hook(const struct scan *sc, int32_t pid, enum procfs_step step)
{
    if (sc->o->hook != NULL)
        sc->o->hook(pid, step, sc->o->hook_arg);
}

static bool is_gone_errno(ssize_t r)
{
    return r == -ENOENT || r == -ESRCH;
}

static bool is_denied_errno(ssize_t r)
{
    return r == -EACCES || r == -EPERM;
}

static void other_failure(struct scan *sc, int32_t pid, const char *file, ssize_t r)
{
    if (sc->f.other++ == 0)
        sc->f.other_first =
            xasprintf("/proc/%d/%s: %s", pid, file, r == -EFBIG ? "too large" : strerror((int)-r));
}

/*
 * Is the process whose stat is at path (relative to dirfd) still the one that started at
 * start_ticks? 1 yes, 0 no (it left, or its pid now belongs to another), -1 cannot tell. After an
 * ENOENT this tells a process that left from a file that is only missing (a zombie has no exe,
 * cwd or environment).
 */
static int same_process(int dirfd, const char *path, uint64_t start_ticks)
{
    char buf[STAT_MAX], why[8];
    struct procfs_stat st;
    ssize_t n = procfs_read_small(dirfd, path, buf, sizeof(buf));

    if (is_gone_errno(n))
        return 0;
    if (n < 0 || procfs_parse_stat(buf, &st, why, sizeof(why)) != 0)
        return -1;
    return st.start_ticks == start_ticks;
}

/*
 * Reads the stat at path (any thread). Returns 0, -ESRCH when the process has gone, -EINVAL when
 * its stat is garbled (why says how), or -errno.
 */
static int read_stat_at(int dirfd, const char *path, int32_t pid, struct procfs_stat *st, char *why,
                        size_t why_size)
{
    char buf[STAT_MAX];
    ssize_t n = procfs_read_small(dirfd, path, buf, sizeof(buf));

    if (is_gone_errno(n))
        return -ESRCH;
    if (n == -EFBIG) {
        snprintf(why, why_size, "longer than %d bytes", STAT_MAX - 1);
        return -EINVAL;
    }
    if (n < 0)
        return (int)n;
    if (procfs_parse_stat(buf, st, why, why_size) != 0)
        return -EINVAL;
    if (st->pid != pid) {
        snprintf(why, why_size, "it names pid %d", st->pid);
        return -EINVAL;
    }
    return 0;
}

/* The counted failures of a stat read, for the notes. */
static void count_stat_failure(struct scan *sc, int32_t pid, int r, const char *why)
{
    if (r == -ESRCH)
        sc->t->vanished++;
    else if (r == -EINVAL && sc->t->garbled++ == 0)
        sc->f.garbled_first = xasprintf("pid %d: %s", pid, why);
    else if (is_denied_errno(r))
        sc->f.pid_denied++;
    else if (r < 0 && r != -EINVAL)
        other_failure(sc, pid, "stat", r);
}

static void held_add_minor(struct held *h, uint32_t minor)
{
    for (size_t i = 0; i < h->n_minors; i++) {
        if (h->minors[i] == minor)
            return;
    }
    xgrow(&h->minors, &h->cap_minors, h->n_minors + 1, sizeof(*h->minors));
    h->minors[h->n_minors++] = minor;
}

static bool held_any(const struct held *h)
{
    return h->n_minors > 0 || h->ctl || h->uvm || h->other;
}

/*
 * Reads the links of the fd directory at path (/proc/<pid>/fd) into *h, listing it with the
 * caller's buffer dents (DENTS_SIZE bytes): any thread. Returns 0 or -errno.
 */
static int scan_fds(char *dents, int dirfd, const char *path, struct held *h)
{
    int fd = openat(dirfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    bool more = true;

    if (fd < 0)
        return -errno;
    while (more) {
        ssize_t n = getdents64(fd, dents, DENTS_SIZE);

        if (n < 0) {
            int e = errno;

            close(fd);
            return -e;
        }
        if (n == 0)
            break;
        /*
         * Directories fill the buffer until they run out of entries: room left for several more
         * means this was the last batch, and the call that would return 0 can be saved.
         */
        more = n > (ssize_t)DENTS_SIZE - 2048;
        for (ssize_t off = 0; off < n;) {
            const struct dirent64 *d = (const struct dirent64 *)(dents + off);
            char link[PATH_MAX];
            ssize_t len;
            uint32_t minor;

            off += d->d_reclen;
            if (!isdigit((unsigned char)d->d_name[0]))
                continue; /* ".", "..", and stray files in fixture trees */
            len = readlinkat(fd, d->d_name, link, sizeof(link) - 1);
            if (len < 0 && (errno == EACCES || errno == EPERM)) {
                /* Listed but not readable (a process that is not dumpable): fds unknown. */
                close(fd);
                return -EACCES;
            }
            if (len < 0)
                continue; /* closed since the listing */
            link[len] = '\0';
            switch (procfs_classify_link(link, &minor)) {
            case PROCFS_DEV_GPU:
                held_add_minor(h, minor);
                break;
            case PROCFS_DEV_CTL:
                h->ctl = true;
                break;
            case PROCFS_DEV_UVM:
                h->uvm = true;
                break;
            case PROCFS_DEV_OTHER:
                h->other = true;
                break;
            case PROCFS_DEV_NONE:
                break;
            }
        }
    }
    close(fd);
    return 0;
}

/* ---- NVML's side ---- */

static int nvml_ref_cmp(const void *a, const void *b)
{
    const struct nvml_ref *x = a, *y = b;

    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    return x->gpu < y->gpu ? -1 : x->gpu > y->gpu;
}

static void nvml_collect(struct scan *sc)
{
    size_t n = 0;

    for (size_t i = 0; i < sc->s->n_gpus; i++) {
        const struct gpu *g = &sc->s->gpus[i];

        if (gpu_valid(g, GPU_S_PROCESSES))
            n += g->n_procs;
    }
    sc->nvml = xcalloc(n + 1, sizeof(*sc->nvml));
    for (size_t i = 0; i < sc->s->n_gpus; i++) {
        const struct gpu *g = &sc->s->gpus[i];

        if (!gpu_valid(g, GPU_S_PROCESSES))
            continue;
        for (size_t k = 0; k < g->n_procs; k++) {
            if (g->procs[k].pid == 0 || g->procs[k].pid > INT32_MAX)
                continue;
            sc->nvml[sc->n_nvml].pid = (int32_t)g->procs[k].pid;
            sc->nvml[sc->n_nvml].gpu = i;
            sc->nvml[sc->n_nvml].gp = &g->procs[k];
            sc->n_nvml++;
        }
    }
    if (sc->n_nvml > 1)
        qsort(sc->nvml, sc->n_nvml, sizeof(*sc->nvml), nvml_ref_cmp);
}

/* The first of NVML's entries for pid, or NULL. */
static const struct nvml_ref *nvml_find(const struct scan *sc, int32_t pid)
{
    size_t lo = 0, hi = sc->n_nvml;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (sc->nvml[mid].pid < pid)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < sc->n_nvml && sc->nvml[lo].pid == pid ? &sc->nvml[lo] : NULL;
}

/* NVML index of the GPU behind /dev/nvidia<minor>, or UINT32_MAX when NVML did not say. */
static uint32_t gpu_of_minor(const struct scan *sc, uint32_t minor)
{
    for (size_t i = 0; i < sc->s->n_gpus; i++) {
        const struct gpu *g = &sc->s->gpus[i];

        if (gpu_valid(g, GPU_S_MINOR) && g->minor_number == minor)
            return g->index;
    }
    return UINT32_MAX;
}

static struct proc_gpu *proc_gpu_entry(struct proc *p, uint32_t gpu_index, uint32_t minor)
{
    struct proc_gpu *e;

    for (size_t i = 0; i < p->n_gpus; i++) {
        e = &p->gpus[i];
        if ((gpu_index != UINT32_MAX && e->gpu_index == gpu_index) ||
            (minor != UINT32_MAX && e->minor == minor)) {
            if (e->gpu_index == UINT32_MAX && gpu_index != UINT32_MAX) {
                e->gpu_index = gpu_index;
                e->valid |= UINT64_C(1) << PROC_GPU_S_INDEX;
            }
            if (e->minor == UINT32_MAX && minor != UINT32_MAX) {
                e->minor = minor;
                e->valid |= UINT64_C(1) << PROC_GPU_S_MINOR;
            }
            return e;
        }
    }
    p->gpus = xreallocarray(p->gpus, p->n_gpus + 1, sizeof(*p->gpus));
    e = &p->gpus[p->n_gpus++];
    memset(e, 0, sizeof(*e));
    e->gpu_index = gpu_index;
    e->minor = minor;
    if (gpu_index != UINT32_MAX)
        e->valid |= UINT64_C(1) << PROC_GPU_S_INDEX;
    if (minor != UINT32_MAX)
        e->valid |= UINT64_C(1) << PROC_GPU_S_MINOR;
    return e;
}

static int proc_gpu_cmp(const void *a, const void *b)
{
    const struct proc_gpu *x = a, *y = b;

    if (x->gpu_index != y->gpu_index)
        return x->gpu_index < y->gpu_index ? -1 : 1;
    return x->minor < y->minor ? -1 : x->minor > y->minor;
}

/* The GPUs of p: the devices it holds, joined with NVML's entries for its pid. */
static void proc_add_gpus(struct scan *sc, struct proc *p, const struct held *h)
{
    const struct nvml_ref *r = nvml_find(sc, p->pid);

    for (size_t i = 0; h != NULL && i < h->n_minors; i++)
        proc_gpu_entry(p, gpu_of_minor(sc, h->minors[i]), h->minors[i])->holds_device = true;
    for (; r != NULL && r < sc->nvml + sc->n_nvml && r->pid == p->pid; r++) {
        const struct gpu *g = &sc->s->gpus[r->gpu];
        struct proc_gpu *e =
            proc_gpu_entry(p, g->index, gpu_valid(g, GPU_S_MINOR) ? g->minor_number : UINT32_MAX);

        e->nvml_listed = true;
        e->type_mask |= r->gp->type_mask;
        if (r->gp->valid & (UINT64_C(1) << GPU_PROC_S_USED)) {
            e->used_bytes = r->gp->used_bytes;
            e->valid |= UINT64_C(1) << PROC_GPU_S_USED;
        }
        if (r->gp->valid & (UINT64_C(1) << GPU_PROC_S_UTIL)) {
            e->sm_util_pct = r->gp->sm_util_pct;
            e->valid |= UINT64_C(1) << PROC_GPU_S_UTIL;
        }
    }
    if (p->n_gpus > 1)
        qsort(p->gpus, p->n_gpus, sizeof(*p->gpus), proc_gpu_cmp);
}

/* ---- users ---- */

static char *lookup_live(uint32_t uid)
{
    size_t size = 4096;
    char *buf = xmalloc(size), *name = NULL;
    struct passwd pw, *res = NULL;
    int r;

    while ((r = getpwuid_r((uid_t)uid, &pw, buf, size, &res)) == ERANGE && size < (1u << 20)) {
        size *= 2;
        buf = xrealloc(buf, size);
    }
    if (r == 0 && res != NULL)
        name = str_sanitize(xstrdup(pw.pw_name));
    free(buf);
    return name;
}

static const char *user_name(struct scan *sc, uint32_t uid)
{
    struct user *u;

    for (size_t i = 0; i < sc->n_users; i++) {
        if (sc->users[i].uid == uid)
            return sc->users[i].name;
    }
    xgrow(&sc->users, &sc->cap_users, sc->n_users + 1, sizeof(*sc->users));
    u = &sc->users[sc->n_users++];
    u->uid = uid;
    if (sc->o->live) {
        u->name = lookup_live(uid);
    } else {
        if (!sc->passwd_tried) {
            sc->passwd_tried = true;
            if (file_slurp_at(sc->o->root_fd, "etc/passwd", PASSWD_MAX, &sc->passwd) < 0)
                sc->passwd = NULL;
        }
        u->name = sc->passwd ? procfs_passwd_lookup(sc->passwd, uid) : NULL;
    }
    return u->name;
}

/* ---- one process's record ---- */

/*
 * Reads one of the files a record needs. Returns the length, or -errno after counting the
 * failure: *maybe_gone is set on ENOENT/ESRCH (the caller then checks whether the process left).
 */
static ssize_t read_detail(struct scan *sc, int pidfd, int32_t pid, const char *name, size_t max,
                           char **text, bool *truncated, bool *maybe_gone, uint32_t *denied)
{
    ssize_t n = procfs_read_bounded(pidfd, name, max, text, truncated);

    if (n >= 0)
        return n;
    if (is_gone_errno(n))
        *maybe_gone = true;
    else if (is_denied_errno(n) && denied != NULL)
        (*denied)++;
    else
        other_failure(sc, pid, name, n);
    return n;
}

static char *read_link(struct scan *sc, int pidfd, int32_t pid, const char *name, bool *maybe_gone)
{
    char buf[PATH_MAX];
    ssize_t n = file_readlink_at(pidfd, name, buf, sizeof(buf));

    if (n >= 0)
        return str_sanitize(xstrdup(buf));
    if (is_gone_errno(n))
        *maybe_gone = true;
    else if (is_denied_errno(n))
        sc->f.link_denied++;
    else
        other_failure(sc, pid, name, n);
    return NULL;
}

static void details_status(struct scan *sc, struct proc *p, const char *text)
{
    struct procfs_status st;
    const char *name;

    procfs_parse_status(text, &st);
    if (st.have_uid) {
        p->uid = st.uid;
        set_valid(p, PROC_S_USER, true);
        if ((name = user_name(sc, st.uid)) != NULL) {
            p->user = xstrdup(name);
            set_valid(p, PROC_S_USER_NAME, true);
        }
    }
    if (st.have_nspid) {
        p->ns_pid = st.ns_pid;
        p->ns_depth = st.ns_depth;
        set_valid(p, PROC_S_NSPID, true);
    }
    if (st.have_rss) {
        p->rss_bytes = st.rss_bytes;
        set_valid(p, PROC_S_RSS, true);
    }
}

static void details_environ(struct scan *sc, struct proc *p, char *text, size_t len, bool truncated)
{
    int found;

    /* A read cut short may have cut an entry: keep whole ones. */
    if (truncated) {
        while (len > 0 && text[len - 1] != '\0')
            len--;
    }
    /* An empty environment is what a zombie or a kernel thread shows: unknown, not unset. */
    if (len == 0)
        return;
    found = procfs_environ_find(text, len, "CUDA_VISIBLE_DEVICES", &p->cuda_visible_devices);
    if (!found && truncated) {
        sc->f.env_unknown++;
        return;
    }
    p->cuda_visible_devices_set = found == 1;
    set_valid(p, PROC_S_ENV, true);
}

static void details_cgroup(struct proc *p, const char *text)
{
    struct procfs_cgroup cg;

    if (procfs_parse_cgroup(text, &cg) != 0)
        return;
    p->cgroup = cg.path;
    p->container_runtime = cg.runtime;
    p->container_id = cg.container_id;
    p->pod_uid = cg.pod_uid;
    p->slurm_job_id = cg.slurm_job_id;
    set_valid(p, PROC_S_CGROUP, true);
}

static void read_cmdline(struct scan *sc, int pidfd, struct proc *p, bool *maybe_gone)
{
    bool truncated;
    char *text;
    ssize_t n;

    if ((n = read_detail(sc, pidfd, p->pid, "cmdline", CMDLINE_MAX, &text, &truncated, maybe_gone,
                         NULL)) >= 0) {
        p->cmdline = procfs_cmdline_join(text, (size_t)n);
        set_valid(p, PROC_S_CMDLINE, p->cmdline != NULL);
        free(text);
    }
}

/* The files whose reading takes the process's mmap lock: cmdline, environ, maps. */
static void read_mm_files(struct scan *sc, int pidfd, struct proc *p, bool *maybe_gone)
{
    bool truncated;
    char *text;
    ssize_t n;

    read_cmdline(sc, pidfd, p, maybe_gone);
    if ((n = read_detail(sc, pidfd, p->pid, "environ", ENVIRON_MAX, &text, &truncated, maybe_gone,
                         &sc->f.env_denied)) >= 0) {
        details_environ(sc, p, text, (size_t)n, truncated);
        free(text);
    }
    if ((n = read_detail(sc, pidfd, p->pid, "maps", MAPS_MAX, &text, &truncated, maybe_gone,
                         &sc->f.maps_denied)) >= 0) {
        procfs_parse_maps(text, &p->libs, &p->n_libs);
        set_valid(p, PROC_S_MAPS, true);
        if (truncated)
            sc->f.maps_truncated++;
        free(text);
    }
}

/*
 * Reads the files only GPU processes and their children are worth: status, cmdline, environ,
 * cgroup, maps, exe, cwd. An ancestor (light) is context for the tree only: status, cgroup and
 * cmdline, nothing that needs root to read or costs much. Returns 0, or -ESRCH when the process
 * left meanwhile.
 */
static int read_details(struct scan *sc, int pidfd, struct proc *p, bool light)
{
    bool maybe_gone = false, truncated;
    char *text;
    ssize_t n;

    if ((n = read_detail(sc, pidfd, p->pid, "status", STATUS_MAX, &text, &truncated, &maybe_gone,
                         NULL)) >= 0) {
        details_status(sc, p, text);
        free(text);
    }
    if ((n = read_detail(sc, pidfd, p->pid, "cgroup", CGROUP_MAX, &text, &truncated, &maybe_gone,
                         NULL)) >= 0) {
        details_cgroup(p, text);
        free(text);
    }
    /*
     * cmdline, environ and maps take the process's mmap lock: behind a process stuck in the
     * driver or in I/O (state D) the read can block for good, which is how ps hangs on a
     * wedged GPU server. Those are left unread.
     */
    if (p->state == 'D')
        sc->f.d_skipped += !light;
    else if (light)
        read_cmdline(sc, pidfd, p, &maybe_gone);
    else
        read_mm_files(sc, pidfd, p, &maybe_gone);
    if (!light && (p->exe = read_link(sc, pidfd, p->pid, "exe", &maybe_gone)) != NULL)
        set_valid(p, PROC_S_EXE, true);
    if (!light && (p->cwd = read_link(sc, pidfd, p->pid, "cwd", &maybe_gone)) != NULL)
        set_valid(p, PROC_S_CWD, true);
    if (maybe_gone && same_process(pidfd, "stat", p->start_ticks) == 0)
        return -ESRCH;
    return 0;
}

/* Builds a whole record from stat, the fd scan and the detail files, or none (-ESRCH). */
static int make_proc(struct scan *sc, int pidfd, const struct procfs_stat *st, bool fds_ok,
                     const struct held *h, bool light, struct proc *p)
{
    uint32_t tck = sc->t->clk_tck ? sc->t->clk_tck : 100;

    memset(p, 0, sizeof(*p));
    p->pid = st->pid;
    p->ppid = st->ppid;
    p->state = st->state;
    p->start_ticks = st->start_ticks;
    p->comm = xstrdup(st->comm);
    p->cpu_time_ms = (st->utime_ticks + st->stime_ticks) * 1000 / tck;
    p->threads = st->threads;
    set_valid(p, PROC_S_STAT, true);
    if (sc->t->valid & (UINT64_C(1) << PROC_TABLE_S_BOOT_TIME)) {
        p->start_time_ms = sc->t->boot_time_ms + (int64_t)(st->start_ticks * 1000 / tck);
        set_valid(p, PROC_S_START_TIME, true);
    }
    if (fds_ok) {
        p->holds_ctl = h != NULL && h->ctl;
        p->holds_uvm = h != NULL && h->uvm;
        set_valid(p, PROC_S_FDS, true);
    }
    if (read_details(sc, pidfd, p, light) != 0) {
        proc_free(p);
        return -ESRCH;
    }
    proc_add_gpus(sc, p, fds_ok ? h : NULL);
    return 0;
}

static struct proc *new_proc(struct scan *sc)
{
    xgrow(&sc->procs, &sc->cap_procs, sc->n_procs + 1, sizeof(*sc->procs));
    return &sc->procs[sc->n_procs];
}

/* ---- the pass over /proc ---- */

/*
 * Pass 1 for one process, in any thread: its stat and fd links, read by path (the pid directory
 * is opened only for GPU processes, later: at 10,000 processes every syscall counts). Touches
 * nothing but its slot.
 */
static void read_slot(const struct scan *sc, char *dents, struct slot *sl)
{
    struct procfs_stat st;
    char stat_path[32], fd_path[32], why[160];
    int e;

    snprintf(stat_path, sizeof(stat_path), "%d/stat", sl->pid);
    snprintf(fd_path, sizeof(fd_path), "%d/fd", sl->pid);
    hook(sc, sl->pid, PROCFS_STEP_OPEN);
    e = read_stat_at(sc->proc_fd, stat_path, sl->pid, &st, why, sizeof(why));
    if (e != 0) {
        sl->state = e == -ESRCH          ? SLOT_GONE
                    : e == -EINVAL       ? SLOT_GARBLED
                    : is_denied_errno(e) ? SLOT_DENIED
                                         : SLOT_ERROR;
        sl->error = -e;
        if (e == -EINVAL)
            sl->why = xstrdup(why);
        return;
    }
    sl->state = SLOT_OK;
    sl->ppid = st.ppid;
    sl->start_ticks = st.start_ticks;
    if (st.flags & PROCFS_PF_KTHREAD) {
        sl->fds_ok = true; /* kernel threads hold no files */
        return;
    }
    hook(sc, sl->pid, PROCFS_STEP_FDS);
    e = scan_fds(dents, sc->proc_fd, fd_path, &sl->held);
    if (e == 0)
        sl->fds_ok = true;
    else if (is_gone_errno(e) && same_process(sc->proc_fd, stat_path, st.start_ticks) == 0)
        sl->state = SLOT_GONE;
    else if (!is_gone_errno(e)) /* ENOENT from a process still there: fds unknown */
        sl->fds_error = -e;
}

/* The pids of pass 1 and where the next thread takes its chunk from. */
struct pass1 {
    const struct scan *sc;
    struct slot *slots;
    size_t n;
    atomic_size_t next;
};

struct pass1_thread {
    struct pass1 *p1;
    char *dents;
    pthread_t tid;
};

static void pass1_work(struct pass1 *p1, char *dents)
{
    for (;;) {
        size_t i = atomic_fetch_add(&p1->next, PARALLEL_CHUNK);
        size_t end = i + PARALLEL_CHUNK < p1->n ? i + PARALLEL_CHUNK : p1->n;

        if (i >= p1->n)
            return;
        for (; i < end; i++)
            read_slot(p1->sc, dents, &p1->slots[i]);
    }
}

static void *pass1_main(void *arg)
{
    struct pass1_thread *t = arg;

    pass1_work(t->p1, t->dents);
    return NULL;
}

/*
 * Threads for pass 1: the reads are independent and the kernel serves them in parallel, so on a
 * server with many cores 10,000 processes take a fraction of the time. A test hook runs it on
 * one thread, in order.
 */
static unsigned pass1_threads(const struct procfs_scan_opts *o, size_t n)
{
    long cpus;
    size_t t;

    if (o->hook != NULL)
        return 1;
    if (o->threads > 0)
        return o->threads < 64 ? o->threads : 64;
    cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < PARALLEL_MIN || cpus < 2)
        return 1;
    t = n / PARALLEL_PER;
    if (t > (size_t)cpus)
        t = (size_t)cpus;
    return t > PARALLEL_MAX ? PARALLEL_MAX : (unsigned)t;
}

static void pass1_run(struct scan *sc, struct slot *slots, size_t n)
{
    struct pass1 p1;
    unsigned want = pass1_threads(sc->o, n), started = 0;
    struct pass1_thread *t = xcalloc(want, sizeof(*t));

    p1.sc = sc;
    p1.slots = slots;
    p1.n = n;
    atomic_init(&p1.next, 0);
    for (unsigned i = 1; i < want; i++) {
        t[i].p1 = &p1;
        t[i].dents = xmalloc(DENTS_SIZE);
        if (pthread_create(&t[i].tid, NULL, pass1_main, &t[i]) != 0) {
            free(t[i].dents); /* fewer threads, not a failure: this one does the rest */
            break;
        }
        started = i;
    }
    pass1_work(&p1, sc->dents);
    for (unsigned i = 1; i <= started; i++) {
        pthread_join(t[i].tid, NULL);
        free(t[i].dents);
    }
    free(t);
}

/* Pass 1's results, in one thread: counters, the tree, and which processes need a record. */
static void merge_slot(struct scan *sc, struct slot *sl)
{
    struct rec *r;

    if (sl->state != SLOT_OK) {
        count_stat_failure(sc, sl->pid,
                           sl->state == SLOT_GONE      ? -ESRCH
                           : sl->state == SLOT_GARBLED ? -EINVAL
                                                       : -sl->error,
                           sl->why);
        return;
    }
    if (is_denied_errno(-sl->fds_error))
        sc->t->fd_denied++;
    else if (sl->fds_error != 0)
        other_failure(sc, sl->pid, "fd", -sl->fds_error);
    xgrow(&sc->recs, &sc->cap_recs, sc->n_recs + 1, sizeof(*sc->recs));
    r = &sc->recs[sc->n_recs++];
    r->pid = sl->pid;
    r->ppid = sl->ppid;
    r->start_ticks = sl->start_ticks;
    r->fds_ok = sl->fds_ok;
    r->in_table = false;
    r->gone = false;
}

/*
 * A record for a process pass 1 saw: its directory opened again by pid and held while its files
 * are read; its start time says it is still the same process. step is for the test hook.
 */
static void record(struct scan *sc, struct rec *r, const struct held *h, enum procfs_step step)
{
    struct procfs_stat st;
    char name[16], why[160] = "";
    int pidfd, e;

    hook(sc, r->pid, step);
    snprintf(name, sizeof(name), "%d", r->pid);
    pidfd = openat(sc->proc_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (pidfd < 0) {
        r->gone = true;
        sc->t->vanished++;
        return;
    }
    e = read_stat_at(pidfd, "stat", r->pid, &st, why, sizeof(why));
    if (e == 0 && st.start_ticks != r->start_ticks)
        e = -ESRCH; /* its pid is another process's now */
    if (e != 0 ||
        make_proc(sc, pidfd, &st, r->fds_ok, h, step == PROCFS_STEP_PARENT, new_proc(sc)) != 0) {
        r->gone = true;
        count_stat_failure(sc, r->pid, e == 0 ? -ESRCH : e, why);
    } else {
        sc->n_procs++;
        r->in_table = true;
    }
    close(pidfd);
}

static int rec_cmp(const void *a, const void *b)
{
    const struct rec *x = a, *y = b;

    return (x->pid > y->pid) - (x->pid < y->pid);
}

static int proc_cmp(const void *a, const void *b)
{
    const struct proc *x = a, *y = b;

    return (x->pid > y->pid) - (x->pid < y->pid);
}

static struct proc *find_proc(struct proc *procs, size_t n, int32_t pid)
{
    struct proc key;

    if (n == 0) /* procs may be NULL then, which bsearch must not get */
        return NULL;
    key.pid = pid;
    return bsearch(&key, procs, n, sizeof(*procs), proc_cmp);
}

static struct rec *find_rec(struct scan *sc, int32_t pid)
{
    struct rec key;

    if (sc->n_recs == 0)
        return NULL;
    key.pid = pid;
    return bsearch(&key, sc->recs, sc->n_recs, sizeof(*sc->recs), rec_cmp);
}

/* The pids NVML lists that /proc does not show: a record with what NVML knows. */
static void add_nvml_only(struct scan *sc, struct collector_status *cs)
{
    char shown[128] = "";
    size_t n = 0, len = 0;

    for (size_t i = 0; i < sc->n_nvml; i++) {
        int32_t pid = sc->nvml[i].pid;
        struct proc *p;

        if (i > 0 && sc->nvml[i - 1].pid == pid)
            continue;
        if (find_rec(sc, pid) != NULL && !find_rec(sc, pid)->gone)
            continue;
        p = new_proc(sc);
        memset(p, 0, sizeof(*p));
        p->pid = pid;
        proc_add_gpus(sc, p, NULL);
        sc->n_procs++;
        if (n++ < 5 && len < sizeof(shown))
            len +=
                (size_t)snprintf(shown + len, sizeof(shown) - len, "%s%d", n > 1 ? ", " : "", pid);
    }
    if (n > 0)
        collector_note(cs,
                       "NVML lists %zu process%s that /proc does not show (pid%s %s%s): another "
                       "PID namespace (is gpudoctor running inside a container?) or exited",
                       n, n == 1 ? "" : "es", n == 1 ? "" : "s", shown, n > 5 ? ", ..." : "");
}

/*
 * The ancestors of the GPU processes (a launcher like torchrun, the shell, sshd, slurmstepd,
 * containerd-shim) up to but not including init, so that a tree shows who started what. A walk
 * up ends at a process already in the table (one walked before, a GPU process, or a loop in the
 * parent links of a fixture), so the whole is linear in the processes, however deep the tree.
 */
static void record_ancestors(struct scan *sc, size_t n_gpu_procs)
{
    for (size_t i = 0; i < n_gpu_procs; i++) {
        int32_t pid = sc->procs[i].ppid; /* read before record() moves sc->procs */

        while (pid > 1) {
            struct rec *r = find_rec(sc, pid);

            if (r == NULL || r->in_table || r->gone)
                break;
            record(sc, r, NULL, PROCFS_STEP_PARENT);
            if (!r->in_table)
                break;
            pid = r->ppid;
        }
    }
}

static void link_children(struct scan *sc)
{
    /* recs are sorted by pid, so each children list comes out ascending */
    for (size_t i = 0; i < sc->n_recs; i++) {
        const struct rec *r = &sc->recs[i];
        struct proc *parent;

        if (r->gone || r->ppid <= 0)
            continue;
        parent = find_proc(sc->procs, sc->n_procs, r->ppid);
        if (parent == NULL || !has(parent, PROC_S_STAT))
            continue;
        parent->children =
            xreallocarray(parent->children, parent->n_children + 1, sizeof(*parent->children));
        parent->children[parent->n_children++] = r->pid;
    }
}

/* "1 process", "37 processes" */
static const char *processes(uint32_t n)
{
    return n == 1 ? "process" : "processes";
}

static void write_notes(struct scan *sc, struct collector_status *cs)
{
    const struct failures *f = &sc->f;
    uint32_t n;

    if ((n = sc->t->fd_denied) > 0)
        collector_note(cs, "fds of %u %s unreadable: %s", n, processes(n),
                       sc->o->live && geteuid() != 0
                           ? "not root (GPU processes of other users are seen only when NVML "
                             "lists them)"
                           : "permission denied");
    if ((n = f->pid_denied) > 0)
        collector_note(cs,
                       "stat of %u %s unreadable: permission denied (/proc mounted with hidepid?)",
                       n, processes(n));
    if ((n = f->env_denied) > 0)
        collector_note(cs,
                       "environ of %u %s unreadable: permission denied (CUDA_VISIBLE_DEVICES "
                       "unknown)",
                       n, processes(n));
    if ((n = f->env_unknown) > 0)
        collector_note(cs, "environ of %u %s longer than %u bytes: CUDA_VISIBLE_DEVICES unknown", n,
                       processes(n), ENVIRON_MAX);
    if ((n = f->maps_denied) > 0)
        collector_note(cs, "maps of %u %s unreadable: permission denied (libraries unknown)", n,
                       processes(n));
    if ((n = f->maps_truncated) > 0)
        collector_note(cs, "maps of %u %s longer than %u bytes: read in part", n, processes(n),
                       MAPS_MAX);
    if ((n = f->d_skipped) > 0)
        collector_note(cs,
                       "command line, environment and maps of %u %s in uninterruptible sleep (D) "
                       "not read: the read can block behind a stuck driver or I/O call",
                       n, processes(n));
    if ((n = f->link_denied) > 0)
        collector_note(cs, "%u exe or cwd %s unreadable: permission denied", n,
                       n == 1 ? "link" : "links");
    if ((n = sc->t->garbled) > 0)
        collector_note(cs, "stat of %u %s could not be parsed, skipped (first: %s)", n,
                       processes(n), f->garbled_first);
    if ((n = f->other) > 0)
        collector_note(cs, "%u %s failed (first: %s)", n, n == 1 ? "read" : "reads",
                       f->other_first);
}

static void read_boot_time(struct scan *sc)
{
    char *text = NULL;
    int64_t btime;

    if (file_slurp_at(sc->o->root_fd, "proc/stat", PSTAT_MAX, &text) >= 0 &&
        procfs_parse_btime(text, &btime) == 0) {
        sc->t->boot_time_ms = btime * 1000;
        sc->t->valid |= UINT64_C(1) << PROC_TABLE_S_BOOT_TIME;
    }
    free(text);
}

static int is_pid_name(const char *name, int32_t *pid)
{
    uint64_t v = 0;

    if (*name == '\0' || *name == '0')
        return 0;
    for (const char *c = name; *c; c++) {
        if (!isdigit((unsigned char)*c))
            return 0;
        v = v * 10 + (uint64_t)(*c - '0');
        if (v > INT32_MAX)
            return 0;
    }
    *pid = (int32_t)v;
    return 1;
}

int procfs_scan(const struct procfs_scan_opts *o, struct snapshot *s, struct collector_status *cs)
{
    struct scan sc;
    struct dirent *d;
    struct slot *slots = NULL;
    size_t n_slots = 0, cap_slots = 0, n_gpu_procs;
    DIR *dir;
    long tck;
    int dfd;

    proc_table_free(&s->procs);
    memset(&sc, 0, sizeof(sc));
    sc.o = o;
    sc.s = s;
    sc.t = &s->procs;
    sc.proc_fd = openat(o->root_fd, "proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    dfd = sc.proc_fd < 0 ? -1 : openat(sc.proc_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    dir = dfd < 0 ? NULL : fdopendir(dfd);
    if (dir == NULL) {
        int e = errno;

        collector_set(cs,
                      e == ENOENT   ? CS_UNAVAILABLE
                      : e == EACCES ? CS_NO_PERMISSION
                                    : CS_FAILED,
                      "cannot read %s/proc: %s", s->root ? s->root : "", strerror(e));
        if (dfd >= 0)
            close(dfd);
        if (sc.proc_fd >= 0)
            close(sc.proc_fd);
        return -e;
    }
    tck = sysconf(_SC_CLK_TCK);
    sc.t->clk_tck = tck > 0 && tck <= UINT32_MAX ? (uint32_t)tck : 100;
    sc.t->valid |= UINT64_C(1) << PROC_TABLE_S_SCAN;
    read_boot_time(&sc);
    sc.dents = xmalloc(DENTS_SIZE);
    nvml_collect(&sc);

    /* Pass 1: every process's stat and fd links, in parallel when there are many. */
    while ((errno = 0, d = readdir(dir)) != NULL) {
        int32_t pid;

        if (!is_pid_name(d->d_name, &pid))
            continue;
        xgrow(&slots, &cap_slots, n_slots + 1, sizeof(*slots));
        memset(&slots[n_slots], 0, sizeof(*slots));
        slots[n_slots++].pid = pid;
    }
    if (errno != 0)
        collector_note(cs, "listing %s/proc stopped early: %s", s->root ? s->root : "",
                       strerror(errno));
    closedir(dir);
    sc.t->scanned = (uint32_t)n_slots;
    pass1_run(&sc, slots, n_slots);
    for (size_t i = 0; i < n_slots; i++)
        merge_slot(&sc, &slots[i]);

    /* Records for the GPU processes: what they hold, or NVML lists them. */
    for (size_t i = 0, k = 0; i < n_slots; i++) {
        if (slots[i].state != SLOT_OK)
            continue;
        if (held_any(&slots[i].held) || nvml_find(&sc, slots[i].pid) != NULL)
            record(&sc, &sc.recs[k], &slots[i].held, PROCFS_STEP_DETAILS);
        k++;
    }

    /* Pass 2: the direct children of GPU processes (data-loader workers). */
    if (sc.n_recs > 1)
        qsort(sc.recs, sc.n_recs, sizeof(*sc.recs), rec_cmp);
    if (sc.n_procs > 1)
        qsort(sc.procs, sc.n_procs, sizeof(*sc.procs), proc_cmp);
    n_gpu_procs = sc.n_procs;
    for (size_t i = 0; i < sc.n_recs; i++) {
        struct rec *r = &sc.recs[i];

        if (!r->in_table && !r->gone && r->ppid > 0 &&
            find_proc(sc.procs, n_gpu_procs, r->ppid) != NULL)
            record(&sc, r, NULL, PROCFS_STEP_CHILD);
    }
    record_ancestors(&sc, n_gpu_procs);
    add_nvml_only(&sc, cs);
    if (sc.n_procs > 1)
        qsort(sc.procs, sc.n_procs, sizeof(*sc.procs), proc_cmp);
    link_children(&sc);
    write_notes(&sc, cs);

    sc.t->procs = sc.procs;
    sc.t->n_procs = sc.n_procs;

    close(sc.proc_fd);
    for (size_t i = 0; i < n_slots; i++) {
        free(slots[i].why);
        free(slots[i].held.minors);
    }
    free(slots);
    free(sc.dents);
    free(sc.recs);
    free(sc.nvml);
    for (size_t i = 0; i < sc.n_users; i++)
        free(sc.users[i].name);
    free(sc.users);
    free(sc.passwd);
    free(sc.f.garbled_first);
    free(sc.f.other_first);
    return 0;
}
