/*
 * History across cycles: each cycle's snapshot has the samples of its own short window; rules
 * that look for trends (memory growing, utilisation swinging, clocks dropping) need longer. The
 * ring keeps the last sample of each cycle for --history, and the rules of a cycle see the ring
 * followed by the cycle's own samples, all on one clock.
 */
#include "serve/serve.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

void serve_history_init(struct serve_history *h, int64_t keep_ms, size_t max_items)
{
    memset(h, 0, sizeof(*h));
    h->keep_ms = keep_ms;
    h->max_items = max_items > 0 ? max_items : 1;
}

void serve_history_free(struct serve_history *h)
{
    for (size_t i = 0; i < h->n; i++)
        sample_free(&h->items[i]);
    free(h->items);
    memset(h, 0, sizeof(*h));
}

struct history serve_history_view(const struct serve_history *h, const struct snapshot *s,
                                  int64_t base_ms, struct sample **scratch)
{
    struct history view;
    size_t n = h->n + (s ? s->n_samples : 0), k = 0;
    struct sample *all = xcalloc(n + 1, sizeof(*all));

    for (size_t i = 0; i < h->n; i++)
        all[k++] = h->items[i];
    for (size_t i = 0; s && i < s->n_samples; i++) {
        all[k] = s->samples[i];
        all[k++].t_ms += base_ms;
    }
    *scratch = all;
    view.samples = all;
    view.n = k;
    return view;
}

void serve_history_keep(struct serve_history *h, struct snapshot *s, int64_t base_ms)
{
    struct sample *last;
    size_t drop = 0;

    if (s == NULL || s->n_samples == 0)
        return;
    last = &s->samples[s->n_samples - 1];
    xgrow(&h->items, &h->cap, h->n + 1, sizeof(*h->items));
    h->items[h->n] = *last;
    h->items[h->n].t_ms += base_ms;
    h->n++;
    /* The snapshot no longer owns it: what snapshot_free finds is empty. */
    memset(last, 0, sizeof(*last));

    while (h->n - drop > h->max_items)
        drop++;
    while (drop < h->n - 1 && h->items[h->n - 1].t_ms - h->items[drop].t_ms > h->keep_ms)
        drop++;
    if (drop == 0)
        return;
    for (size_t i = 0; i < drop; i++)
        sample_free(&h->items[i]);
    memmove(h->items, h->items + drop, (h->n - drop) * sizeof(*h->items));
    h->n -= drop;
}
