/*
 * The last result, shared between the collection thread and the HTTP threads. The lock is held
 * only to swap or copy a pointer and take a reference, so a request never waits for more than
 * that; the result itself is never changed once published, and is freed by whoever drops the
 * last reference (the worker when it replaces it, or a request that outlived that).
 */
#include "serve/serve.h"
#include "util/xalloc.h"

#include <stdlib.h>

struct serve_result *serve_result_new(char *metrics, size_t metrics_len, char *findings,
                                      size_t findings_len)
{
    struct serve_result *r = xcalloc(1, sizeof(*r));

    atomic_init(&r->refs, 1);
    r->metrics = metrics ? metrics : xstrdup("");
    r->metrics_len = metrics ? metrics_len : 0;
    r->findings = findings ? findings : xstrdup("");
    r->findings_len = findings ? findings_len : 0;
    /* Here, in the collection thread, once: requests only frame what is compressed. */
    serve_deflate(r->metrics, r->metrics_len, &r->metrics_gz);
    serve_deflate(r->findings, r->findings_len, &r->findings_gz);
    return r;
}

void serve_result_unref(struct serve_result *r)
{
    if (r == NULL)
        return;
    if (atomic_fetch_sub_explicit(&r->refs, 1, memory_order_acq_rel) != 1)
        return;
    free(r->metrics);
    free(r->findings);
    serve_deflated_free(&r->metrics_gz);
    serve_deflated_free(&r->findings_gz);
    free(r);
}

void serve_cache_init(struct serve_cache *c, struct serve_result *initial)
{
    if (pthread_mutex_init(&c->lock, NULL) != 0)
        fatal("cannot create a mutex");
    c->current = initial;
}

void serve_cache_publish(struct serve_cache *c, struct serve_result *r)
{
    struct serve_result *old;

    pthread_mutex_lock(&c->lock);
    old = c->current;
    c->current = r;
    pthread_mutex_unlock(&c->lock);
    serve_result_unref(old);
}

struct serve_result *serve_cache_get(struct serve_cache *c)
{
    struct serve_result *r;

    pthread_mutex_lock(&c->lock);
    r = c->current;
    if (r != NULL)
        atomic_fetch_add_explicit(&r->refs, 1, memory_order_relaxed);
    pthread_mutex_unlock(&c->lock);
    return r;
}

void serve_cache_destroy(struct serve_cache *c)
{
    serve_result_unref(c->current);
    c->current = NULL;
    pthread_mutex_destroy(&c->lock);
}
