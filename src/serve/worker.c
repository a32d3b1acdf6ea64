/*
 * The collection thread: a cycle at once, then one every interval (measured start to start; a
 * cycle longer than the interval is followed by the next at once). It waits on a condition
 * variable on the monotonic clock, so stopping does not wait for the interval, only for the
 * cycle in progress, which --timeout bounds.
 */
#include "serve/serve.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct serve_worker {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    bool stop;
    struct serve_state *st;
    struct serve_cache *cache;
};

/* Waits until the monotonic time due_ms or a stop; returns true when asked to stop. */
static bool wait_until(struct serve_worker *w, int64_t due_ms)
{
    struct timespec ts;
    bool stop;

    ts.tv_sec = (time_t)(due_ms / 1000);
    ts.tv_nsec = (long)(due_ms % 1000) * 1000000L;
    pthread_mutex_lock(&w->lock);
    while (!w->stop && time_mono_ms() < due_ms) {
        int rc = pthread_cond_timedwait(&w->wake, &w->lock, &ts);

        if (rc == ETIMEDOUT)
            break;
    }
    stop = w->stop;
    pthread_mutex_unlock(&w->lock);
    return stop;
}

static void publish(struct serve_worker *w, struct serve_result *r)
{
    const char *dir = w->st->opts->textfile_dir;
    char *cause = NULL;

    /* Scrapes first: a textfile that cannot be written must not hold back /metrics. The
     * reference taken keeps r while the file is written, whatever the cache does with it. */
    atomic_fetch_add_explicit(&r->refs, 1, memory_order_relaxed);
    serve_cache_publish(w->cache, r);
    if (dir != NULL) {
        if (serve_write_textfile(dir, r, &cause) != 0) {
            if (!w->st->textfile_failed)
                fprintf(stderr, "gpudoctor serve: --textfile: %s\n", cause);
            w->st->textfile_failed = true;
            free(cause);
        } else {
            w->st->textfile_failed = false;
        }
    }
    serve_result_unref(r);
}

static void *run(void *arg)
{
    struct serve_worker *w = arg;
    int64_t due = time_mono_ms();

    for (;;) {
        int64_t now;

        if (wait_until(w, due))
            break;
        publish(w, serve_cycle(w->st));
        serve_record(w->st); /* after publishing: requests never wait for the state file */
        due += w->st->opts->interval_ms;
        now = time_mono_ms();
        if (due < now)
            due = now; /* late: start the next at once, do not try to catch up */
    }
    serve_state_close_nvml(w->st);
    return NULL;
}

struct serve_worker *serve_worker_start(struct serve_state *st, struct serve_cache *cache,
                                        char **cause)
{
    struct serve_worker *w = xcalloc(1, sizeof(*w));
    pthread_condattr_t ca;
    int rc;

    w->st = st;
    w->cache = cache;
    if (pthread_mutex_init(&w->lock, NULL) != 0 || pthread_condattr_init(&ca) != 0 ||
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) != 0 ||
        pthread_cond_init(&w->wake, &ca) != 0)
        fatal("cannot create the collection thread's condition variable");
    pthread_condattr_destroy(&ca);
    rc = pthread_create(&w->thread, NULL, run, w);
    if (rc != 0) {
        *cause = xasprintf("cannot start the collection thread: %s", strerror(rc));
        pthread_cond_destroy(&w->wake);
        pthread_mutex_destroy(&w->lock);
        free(w);
        return NULL;
    }
    return w;
}

void serve_worker_stop(struct serve_worker *w)
{
    if (w == NULL)
        return;
    pthread_mutex_lock(&w->lock);
    w->stop = true;
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->lock);
    pthread_join(w->thread, NULL);
    pthread_cond_destroy(&w->wake);
    pthread_mutex_destroy(&w->lock);
    free(w);
}
