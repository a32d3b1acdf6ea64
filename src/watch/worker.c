/*
 * The collection thread of watch: a collection at once, then one every interval (start to start;
 * a late one is followed by the next at once). It owns one NVML helper across cycles and replaces
 * it after a timeout or a failure. Results wait in a queue; a byte on a pipe wakes the main
 * thread's poll. The thread blocks every signal: they are the main thread's.
 */
#include "collect/nvml-lib.h"
#include "collect/nvml-session.h"
#include "state/state.h"
#include "util/i18n.h"
#include "util/timeutil.h"
#include "util/xalloc.h"
#include "watch/watch.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* How long closing the NVML helper may take before it is killed. */
#define NVML_CLOSE_MS 1000

#define BIT(id) (1u << (id))

/*
 * What each cycle collects. NVML, the host's counters and the InfiniBand ports (a few small sysfs
 * files each, their counters' growth over the window) every time: they are the live view.
 * The rest changes slowly and costs more (a pass over /proc is most of a cycle's CPU time on a
 * busy host), so it is refreshed less often, and the main thread carries the last one over; a
 * change in the processes NVML lists brings the process scan forward to the next cycle.
 */
#define ALWAYS (BIT(COLLECTOR_NVML) | BIT(COLLECTOR_HOST) | BIT(COLLECTOR_IB))
static const struct {
    unsigned mask;
    int64_t every_ms;
    bool new_pids; /* also as soon as NVML lists other processes */
} refresh[] = {
    { BIT(COLLECTOR_PROCS), 5000, true },
    { BIT(COLLECTOR_DRIVER) | BIT(COLLECTOR_KLOG), 10000, false },
    /* NVSwitches and Fabric Manager: its process, its unit, the tail of its log */
    { BIT(COLLECTOR_FABRIC), 10000, false },
    { BIT(COLLECTOR_PCIE), 60000, false },
    /* The stack collector reads the libraries of the processes the scan found. */
    { BIT(COLLECTOR_PROCS) | BIT(COLLECTOR_STACK), 60000, true },
};

struct result {
    struct snapshot *s; /* NULL: the collection failed, cause says why */
    char *cause;
    int64_t base_ms;
};

struct watch_worker {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    bool stop;
    struct collect_opts co;
    int64_t interval_ms, start_mono_ms;
    struct nvml_session *nvml;                             /* the thread's only */
    int64_t last_ms[sizeof(refresh) / sizeof(refresh[0])]; /* -1: never */
    uint64_t gpu_pids, scanned_pids; /* NVML's process list, now and at the last scan */
    struct state_recorder rec;       /* the state file; rec.dir NULL when off */
    int pipe[2];
    struct result *queue;
    size_t n, cap;
};

static bool wait_until(struct watch_worker *w, int64_t due_ms)
{
    struct timespec ts;
    bool stop;

    ts.tv_sec = (time_t)(due_ms / 1000);
    ts.tv_nsec = (long)(due_ms % 1000) * 1000000L;
    pthread_mutex_lock(&w->lock);
    while (!w->stop && time_mono_ms() < due_ms) {
        if (pthread_cond_timedwait(&w->wake, &w->lock, &ts) == ETIMEDOUT)
            break;
    }
    stop = w->stop;
    pthread_mutex_unlock(&w->lock);
    return stop;
}

static void publish(struct watch_worker *w, struct snapshot *s, char *cause, int64_t base_ms)
{
    char byte = 1;

    pthread_mutex_lock(&w->lock);
    xgrow(&w->queue, &w->cap, w->n + 1, sizeof(*w->queue));
    w->queue[w->n].s = s;
    w->queue[w->n].cause = cause;
    w->queue[w->n].base_ms = base_ms;
    w->n++;
    pthread_mutex_unlock(&w->lock);
    /* The pipe is non-blocking: when it is full, the reader has wake-ups enough. */
    if (write(w->pipe[1], &byte, 1) < 0) {
        /* EAGAIN: already signalled */
    }
}

/* A signature of the processes NVML lists. */
static uint64_t gpu_pids(const struct snapshot *s)
{
    uint64_t h = UINT64_C(0xcbf29ce484222325);

    for (size_t i = 0; s && i < s->n_gpus; i++) {
        for (size_t k = 0; k < s->gpus[i].n_procs; k++) {
            h ^= s->gpus[i].procs[k].pid + ((uint64_t)s->gpus[i].index << 32);
            h *= UINT64_C(0x100000001b3);
        }
    }
    return h;
}

/*
 * The state file for a collection: read into s (acknowledgements and the past, for the judging
 * of the main thread), then what s shows recorded when it is news. A failure is said on stderr
 * once (the view keeps stderr until it ends), until a write works again.
 */
static void with_state(struct watch_worker *w, struct snapshot *s)
{
    char *cause = NULL, *kept = NULL;
    int rc;

    if (w->rec.dir == NULL || s == NULL)
        return;
    collect_state(s, w->rec.dir);
    rc = state_recorder_record(&w->rec, s, time_real_ms(), &kept, &cause);
    if (rc < 0 && !w->rec.failing)
        fprintf(stderr, _("gpudoctor watch: note: the state file was not updated: %s\n"), cause);
    if (kept != NULL)
        fprintf(stderr, _("gpudoctor watch: note: %s\n"), kept);
    if (rc != 0)
        w->rec.failing = rc < 0;
    free(kept);
    free(cause);
}

/* The collectors of the cycle starting at now. */
static unsigned plan(struct watch_worker *w, int64_t now)
{
    unsigned only = ALWAYS;

    for (size_t i = 0; i < sizeof(refresh) / sizeof(refresh[0]); i++) {
        if (w->last_ms[i] < 0 || now - w->last_ms[i] >= refresh[i].every_ms ||
            (refresh[i].new_pids && w->gpu_pids != w->scanned_pids)) {
            only |= refresh[i].mask;
            w->last_ms[i] = now;
        }
    }
    if (only & BIT(COLLECTOR_PROCS))
        w->scanned_pids = w->gpu_pids;
    /* --only narrows every cycle; 0 would mean "everything", so a cycle with none of the due
       collectors among those asked for runs all that were asked for. */
    if (w->co.only != 0)
        only = (only & w->co.only) ? only & w->co.only : w->co.only;
    return only;
}

static void *run(void *arg)
{
    struct watch_worker *w = arg;
    int64_t due = time_mono_ms();

    for (;;) {
        struct collect_opts co = w->co;
        int64_t now, base;
        char *cause = NULL;
        struct snapshot *s;

        if (wait_until(w, due))
            break;
        co.only = plan(w, time_mono_ms() - w->start_mono_ms);
        collect_session_lend(&w->nvml, &co);
        s = collect_snapshot(&co, &cause);
        collect_session_check(&w->nvml, s);
        with_state(w, s);
        /*
         * A sample's t_ms counts from the end of the collectors' start, which takes longer when
         * the slow collectors run: time the samples from the end of the collection instead, so
         * the history's readings are as far apart as they were taken (slopes depend on it).
         */
        base = time_mono_ms() - w->start_mono_ms;
        if (s != NULL && s->n_samples > 0)
            base -= s->samples[s->n_samples - 1].t_ms;
        if (s != NULL && (co.only & BIT(COLLECTOR_NVML)))
            w->gpu_pids = gpu_pids(s);
        publish(w, s, cause, base);
        due += w->interval_ms;
        now = time_mono_ms();
        if (due < now)
            due = now; /* late: the next at once, no catching up */
    }
    nvml_session_close(w->nvml, time_mono_ms() + NVML_CLOSE_MS);
    w->nvml = NULL;
    return NULL;
}

struct watch_worker *watch_worker_start(const struct collect_opts *co, int64_t interval_ms,
                                        int64_t window_ms, const char *state_dir, char **cause)
{
    struct watch_worker *w = xcalloc(1, sizeof(*w));
    pthread_condattr_t ca;
    sigset_t all, old;
    int rc;

    w->co = *co;
    w->co.window_ms = window_ms;
    w->co.interval_ms = window_ms; /* two readings: at the start and the end of the window */
    w->co.progress = false;
    w->co.nvml_session = NULL;
    w->interval_ms = interval_ms;
    w->rec.dir = state_dir;
    w->start_mono_ms = time_mono_ms();
    for (size_t i = 0; i < sizeof(refresh) / sizeof(refresh[0]); i++)
        w->last_ms[i] = -1;
    if (pipe2(w->pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
        *cause = xasprintf(_("cannot create a pipe: %s"), strerror(errno));
        free(w);
        return NULL;
    }
    if (pthread_mutex_init(&w->lock, NULL) != 0 || pthread_condattr_init(&ca) != 0 ||
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) != 0 ||
        pthread_cond_init(&w->wake, &ca) != 0)
        fatal("cannot create the collection thread's condition variable");
    pthread_condattr_destroy(&ca);
    /* The thread starts with every signal blocked, so they all reach the main thread. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rc = pthread_create(&w->thread, NULL, run, w);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        *cause = xasprintf(_("cannot start the collection thread: %s"), strerror(rc));
        pthread_cond_destroy(&w->wake);
        pthread_mutex_destroy(&w->lock);
        close(w->pipe[0]);
        close(w->pipe[1]);
        free(w);
        return NULL;
    }
    return w;
}

int watch_worker_fd(const struct watch_worker *w)
{
    return w->pipe[0];
}

bool watch_worker_take(struct watch_worker *w, struct snapshot **s, int64_t *base_ms, char **cause)
{
    struct result r = { NULL, NULL, 0 };
    bool got = false;
    char drain[64];

    pthread_mutex_lock(&w->lock);
    if (w->n > 0) {
        r = w->queue[0];
        memmove(w->queue, w->queue + 1, (w->n - 1) * sizeof(*w->queue));
        w->n--;
        got = true;
    }
    /* Drain the wake-ups only when nothing is left to take. */
    if (w->n == 0) {
        while (read(w->pipe[0], drain, sizeof(drain)) > 0)
            ;
    }
    pthread_mutex_unlock(&w->lock);
    *s = r.s;
    *base_ms = r.base_ms;
    *cause = r.cause;
    return got;
}

void watch_worker_stop(struct watch_worker *w)
{
    if (w == NULL)
        return;
    pthread_mutex_lock(&w->lock);
    w->stop = true;
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->lock);
    pthread_join(w->thread, NULL);
    for (size_t i = 0; i < w->n; i++) {
        snapshot_free(w->queue[i].s);
        free(w->queue[i].cause);
    }
    free(w->queue);
    pthread_cond_destroy(&w->wake);
    pthread_mutex_destroy(&w->lock);
    close(w->pipe[0]);
    close(w->pipe[1]);
    free(w);
}
