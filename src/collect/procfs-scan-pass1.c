/*
 * Pass 1 of the process scan: every process's stat and fd links, read by path into a slot of its
 * own, in parallel threads when there are many (the kernel serves the reads in parallel); then,
 * in one thread, the slots merged into the counters and the list of every process seen.
 */
#include "collect/procfs-scan-internal.h"
#include "collect/procfs.h"
#include "util/xalloc.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Pass 1 in parallel: from this many processes, at most this many threads, chunks of pids. */
#define PARALLEL_MIN   2048
#define PARALLEL_PER   1024 /* processes per thread, at least */
#define PARALLEL_MAX   8
#define PARALLEL_CHUNK 64

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
    pscan_hook(sc, sl->pid, PROCFS_STEP_OPEN);
    e = pscan_read_stat_at(sc->proc_fd, stat_path, sl->pid, &st, why, sizeof(why));
    if (e != 0) {
        sl->state = e == -ESRCH          ? SLOT_GONE
                    : e == -EINVAL       ? SLOT_GARBLED
                    : pscan_is_denied(e) ? SLOT_DENIED
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
    pscan_hook(sc, sl->pid, PROCFS_STEP_FDS);
    e = pscan_read_fds(dents, sc->proc_fd, fd_path, &sl->held);
    if (e == 0)
        sl->fds_ok = true;
    else if (pscan_is_gone(e) && pscan_same_process(sc->proc_fd, stat_path, st.start_ticks) == 0)
        sl->state = SLOT_GONE;
    else if (!pscan_is_gone(e)) /* ENOENT from a process still there: fds unknown */
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

void pscan_pass1_run(struct scan *sc, struct slot *slots, size_t n)
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
void pscan_merge_slot(struct scan *sc, struct slot *sl)
{
    struct rec *r;

    if (sl->state != SLOT_OK) {
        pscan_count_stat_failure(sc, sl->pid,
                                 sl->state == SLOT_GONE      ? -ESRCH
                                 : sl->state == SLOT_GARBLED ? -EINVAL
                                                             : -sl->error,
                                 sl->why);
        return;
    }
    if (pscan_is_denied(-sl->fds_error))
        sc->t->fd_denied++;
    else if (sl->fds_error != 0)
        pscan_other_failure(sc, sl->pid, "fd", -sl->fds_error);
    xgrow(&sc->recs, &sc->cap_recs, sc->n_recs + 1, sizeof(*sc->recs));
    r = &sc->recs[sc->n_recs++];
    r->pid = sl->pid;
    r->ppid = sl->ppid;
    r->start_ticks = sl->start_ticks;
    r->fds_ok = sl->fds_ok;
    r->in_table = false;
    r->gone = false;
}
