/*
 * One process's record in the process scan: stat, then the files worth reading for a GPU process
 * (status, cgroup, cmdline, environ, maps, exe, cwd), or for an ancestor the cheap ones only,
 * each bounded; user names from the tree's /etc/passwd (the system's user database when live).
 * Nothing behind a process in state D that could block is read.
 */
#include "collect/numa-parse.h"
#include "collect/procfs-scan-internal.h"
#include "collect/procfs.h"
#include "util/fileio.h"
#include "util/strutil.h"
#include "util/xalloc.h"

#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void set_valid(struct proc *p, enum proc_slot slot, bool valid)
{
    if (valid)
        p->valid |= UINT64_C(1) << slot;
    else
        p->valid &= ~(UINT64_C(1) << slot);
}

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
    if (pscan_is_gone(n))
        *maybe_gone = true;
    else if (pscan_is_denied(n) && denied != NULL)
        (*denied)++;
    else
        pscan_other_failure(sc, pid, name, n);
    return n;
}

static char *read_link(struct scan *sc, int pidfd, int32_t pid, const char *name, bool *maybe_gone)
{
    char buf[PATH_MAX];
    ssize_t n = file_readlink_at(pidfd, name, buf, sizeof(buf));

    if (n >= 0)
        return str_sanitize(xstrdup(buf));
    if (pscan_is_gone(n))
        *maybe_gone = true;
    else if (pscan_is_denied(n))
        sc->f.link_denied++;
    else
        pscan_other_failure(sc, pid, name, n);
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
    if (st.have_cpus) {
        p->cpus_allowed = xstrdup(st.cpus_allowed);
        set_valid(p, PROC_S_CPUS, true);
    }
}

/*
 * Keeps the NCCL variables that matter and nothing else of the environment (it holds secrets):
 * only when the whole environment was read, since a cut one may have lost them.
 */
static void details_nccl(struct proc *p, const char *text, size_t len, bool truncated)
{
    struct numa_nccl_env env;

    _Static_assert(NUMA_NCCL_VARS == PROC_NCCL_VARS, "the snapshot keeps every NCCL variable");
    if (truncated || len == 0)
        return;
    numa_parse_environ(text, len, &env);
    for (size_t i = 0; i < NUMA_NCCL_VARS; i++) {
        if (env.set[i])
            *proc_nccl_value(p, i) = str_sanitize(xstrdup(env.value[i]));
    }
    set_valid(p, PROC_S_NCCL, true);
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
        details_nccl(p, text, (size_t)n, truncated);
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

#define THREADS_LOOKED_AT 4096 /* threads whose state is read before the mm files */

/* Whether a thread of p other than its main one is in D (only p's main one is in its stat). */
static bool thread_in_d(int pidfd, const struct proc *p)
{
    uint32_t in_d, live;

    return p->threads > 1 && procfs_task_states(pidfd, THREADS_LOOKED_AT, &in_d, &live) && in_d > 0;
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
     * wedged GPU server. Those are left unread, also when the stuck one is another of its
     * threads (a CUDA process's worker thread in the driver; stat's state is the main one's).
     */
    if (p->state == 'D' || thread_in_d(pidfd, p))
        sc->f.d_skipped += !light;
    else if (light)
        read_cmdline(sc, pidfd, p, &maybe_gone);
    else
        read_mm_files(sc, pidfd, p, &maybe_gone);
    if (!light && (n = read_detail(sc, pidfd, p->pid, "limits", LIMITS_MAX, &text, &truncated,
                                   &maybe_gone, NULL)) >= 0) {
        if (procfs_parse_nofile(text, &p->open_files_limit))
            set_valid(p, PROC_S_NOFILE, true);
        if (procfs_parse_memlock(text, &p->memlock_limit))
            set_valid(p, PROC_S_MEMLOCK, true);
        free(text);
    }
    if (!light && (p->exe = read_link(sc, pidfd, p->pid, "exe", &maybe_gone)) != NULL)
        set_valid(p, PROC_S_EXE, true);
    if (!light && (p->cwd = read_link(sc, pidfd, p->pid, "cwd", &maybe_gone)) != NULL)
        set_valid(p, PROC_S_CWD, true);
    if (maybe_gone && pscan_same_process(pidfd, "stat", p->start_ticks) == 0)
        return -ESRCH;
    return 0;
}

/* Builds a whole record from stat, the fd scan and the detail files, or none (-ESRCH). */
int pscan_make_proc(struct scan *sc, int pidfd, const struct procfs_stat *st, bool fds_ok,
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
        p->open_files = h != NULL ? h->n_fds : 0;
        set_valid(p, PROC_S_OPEN_FILES, true);
    }
    if (read_details(sc, pidfd, p, light) != 0) {
        proc_free(p);
        return -ESRCH;
    }
    pscan_proc_add_gpus(sc, p, fds_ok ? h : NULL);
    return 0;
}

struct proc *pscan_new_proc(struct scan *sc)
{
    xgrow(&sc->procs, &sc->cap_procs, sc->n_procs + 1, sizeof(*sc->procs));
    return &sc->procs[sc->n_procs];
}
