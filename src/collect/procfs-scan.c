/*
 * The course of the process scan (procfs-scan.h says what it fills): /proc listed, pass 1 over
 * every process (procfs-scan-pass1.c), records for the GPU processes (procfs-scan-details.c,
 * their GPUs from procfs-scan-gpus.c), then for their direct children and their ancestors, the
 * pids only NVML lists, the parent/child links, and one note per kind of what could not be read.
 * What the parts share: procfs-scan-internal.h, and here the reading of a stat and the counting
 * of failures.
 */
#include "collect/procfs-scan-internal.h"
#include "collect/procfs.h"
#include "util/fileio.h"
#include "util/i18n.h"
#include "util/xalloc.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool has(const struct proc *p, enum proc_slot slot)
{
    return (p->valid >> slot) & 1u;
}

void pscan_hook(const struct scan *sc, int32_t pid, enum procfs_step step)
{
    if (sc->o->hook != NULL)
        sc->o->hook(pid, step, sc->o->hook_arg);
}

void pscan_other_failure(struct scan *sc, int32_t pid, const char *file, ssize_t r)
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
int pscan_same_process(int dirfd, const char *path, uint64_t start_ticks)
{
    char buf[STAT_MAX], why[8];
    struct procfs_stat st;
    ssize_t n = procfs_read_small(dirfd, path, buf, sizeof(buf));

    if (pscan_is_gone(n))
        return 0;
    if (n < 0 || procfs_parse_stat(buf, &st, why, sizeof(why)) != 0)
        return -1;
    return st.start_ticks == start_ticks;
}

/*
 * Reads the stat at path (any thread). Returns 0, -ESRCH when the process has gone, -EINVAL when
 * its stat is garbled (why says how), or -errno.
 */
int pscan_read_stat_at(int dirfd, const char *path, int32_t pid, struct procfs_stat *st, char *why,
                       size_t why_size)
{
    char buf[STAT_MAX];
    ssize_t n = procfs_read_small(dirfd, path, buf, sizeof(buf));

    if (pscan_is_gone(n))
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
void pscan_count_stat_failure(struct scan *sc, int32_t pid, int r, const char *why)
{
    if (r == -ESRCH)
        sc->t->vanished++;
    else if (r == -EINVAL && sc->t->garbled++ == 0)
        sc->f.garbled_first = xasprintf("pid %d: %s", pid, why);
    else if (pscan_is_denied(r))
        sc->f.pid_denied++;
    else if (r < 0 && r != -EINVAL)
        pscan_other_failure(sc, pid, "stat", r);
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

    pscan_hook(sc, r->pid, step);
    snprintf(name, sizeof(name), "%d", r->pid);
    pidfd = openat(sc->proc_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (pidfd < 0) {
        r->gone = true;
        sc->t->vanished++;
        return;
    }
    e = pscan_read_stat_at(pidfd, "stat", r->pid, &st, why, sizeof(why));
    if (e == 0 && st.start_ticks != r->start_ticks)
        e = -ESRCH; /* its pid is another process's now */
    if (e != 0 || pscan_make_proc(sc, pidfd, &st, r->fds_ok, h, step == PROCFS_STEP_PARENT,
                                  pscan_new_proc(sc)) != 0) {
        r->gone = true;
        pscan_count_stat_failure(sc, r->pid, e == 0 ? -ESRCH : e, why);
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
        p = pscan_new_proc(sc);
        memset(p, 0, sizeof(*p));
        p->pid = pid;
        pscan_proc_add_gpus(sc, p, NULL);
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

/* "1 process", "37 processes": English, N_()-marked (_() gives the reader's words). */
static const char *processes(uint32_t n)
{
    return n == 1 ? N_("process") : N_("processes");
}

/* A note whose arguments are a count, its noun and English words: made in both languages. */
#define NOTE_N(cs, fmt, n, noun, ...)                                                              \
    collector_note_take(cs, TWICE(fmt, (n, noun, ##__VA_ARGS__), (n, _(noun), ##__VA_ARGS__)))

static void write_notes(struct scan *sc, struct collector_status *cs)
{
    const struct failures *f = &sc->f;
    uint32_t n;

    if ((n = sc->t->fd_denied) > 0) {
        const char *why = sc->o->live && geteuid() != 0
                              ? N_("not root (GPU processes of other users are seen only when "
                                   "NVML lists them)")
                              : N_("permission denied");

        collector_note_take(cs, TWICE("fds of %u %s unreadable: %s", (n, processes(n), why),
                                      (n, _(processes(n)), _(why))));
    }
    if ((n = f->pid_denied) > 0)
        NOTE_N(cs, "stat of %u %s unreadable: permission denied (/proc mounted with hidepid?)", n,
               processes(n));
    if ((n = f->env_denied) > 0)
        NOTE_N(cs,
               "environ of %u %s unreadable: permission denied (CUDA_VISIBLE_DEVICES and NCCL "
               "settings not collected: needs root)",
               n, processes(n));
    if ((n = f->env_unknown) > 0)
        NOTE_N(cs,
               "environ of %u %s longer than %u bytes: CUDA_VISIBLE_DEVICES and NCCL settings "
               "unknown",
               n, processes(n), ENVIRON_MAX);
    if ((n = f->maps_denied) > 0)
        NOTE_N(cs, "maps of %u %s unreadable: permission denied (libraries unknown)", n,
               processes(n));
    if ((n = f->maps_truncated) > 0)
        NOTE_N(cs, "maps of %u %s longer than %u bytes: read in part", n, processes(n), MAPS_MAX);
    if ((n = f->d_skipped) > 0)
        NOTE_N(cs,
               "command line, environment and maps of %u %s with a thread in uninterruptible "
               "sleep (D) not read: the read can block behind a stuck driver or I/O call",
               n, processes(n));
    if ((n = f->link_denied) > 0)
        NOTE_N(cs, "%u exe or cwd %s unreadable: permission denied", n,
               n == 1 ? N_("link") : N_("links"));
    if ((n = sc->t->garbled) > 0)
        NOTE_N(cs, "stat of %u %s could not be parsed, skipped (first: %s)", n, processes(n),
               f->garbled_first);
    if ((n = f->other) > 0)
        NOTE_N(cs, "%u %s failed (first: %s)", n, n == 1 ? N_("read") : N_("reads"),
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
    pscan_nvml_collect(&sc);

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
    pscan_pass1_run(&sc, slots, n_slots);
    for (size_t i = 0; i < n_slots; i++)
        pscan_merge_slot(&sc, &slots[i]);

    /* Records for the GPU processes: what they hold, or NVML lists them. */
    for (size_t i = 0, k = 0; i < n_slots; i++) {
        if (slots[i].state != SLOT_OK)
            continue;
        if (pscan_held_any(&slots[i].held) || pscan_nvml_find(&sc, slots[i].pid) != NULL)
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
