/*
 * What an exporter remembers from one collection to the next, so that its series stay the same
 * series.
 *
 * The GPUs' identities: a GPU that stops answering NVML (fallen off the bus, its handle lost) has
 * no UUID or name in the snapshot, only its index. Labelled by the index alone, its
 * gpudoctor_gpu_up 0 would be a new series that does not say which GPU it is, and its XID 79 would
 * start a new counter beside the one of its earlier XIDs. The exporter keeps the UUID, name and
 * address of each GPU it has seen answer and labels the silent GPU at the same index and address
 * with them.
 *
 * The kernel log's XID and SXid lines: counted from the log as it is, a counter would go down when
 * the log rotates (Prometheus takes that for a restart and counts the rest as new), and an old
 * line leaving the log as a new one arrives would hide the new one. The exporter counts each line
 * once: the first read counts the whole log, later reads only the lines whose fingerprint (kernel
 * stamp, code, address, text, and the ordinal among identical lines) it did not see the read
 * before. A one-off rendering (serve --once, the textfile of a check) remembers nothing and counts
 * the log as it is.
 */
#include "render/metrics-internal.h"
#include "util/strutil.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MEMORY_MAX_GPUS   4096       /* identities kept; more are not remembered */
#define MEMORY_MAX_SERIES 65536      /* counter series; lines of more are not counted */
#define MEMORY_MAX_SEEN   (1u << 20) /* fingerprints kept across partial reads of the log */

void metrics_memory_free(struct metrics_memory *m)
{
    for (size_t i = 0; i < m->n_gpus; i++) {
        free(m->gpus[i].uuid);
        free(m->gpus[i].name);
        free(m->gpus[i].pci);
    }
    free(m->gpus);
    for (size_t i = 0; i < m->n_series; i++)
        free(m->series[i].labels);
    free(m->series);
    free(m->seen);
    memset(m, 0, sizeof(*m));
}

static void replace(char **dst, const char *src)
{
    if (src == NULL || (*dst != NULL && strcmp(*dst, src) == 0))
        return;
    free(*dst);
    *dst = xstrdup(src);
}

static const char *answer_uuid(const struct gpu *g)
{
    return g->handle_rc == 0 && gpu_valid(g, GPU_S_UUID) ? g->uuid : NULL;
}

static const char *answer_name(const struct gpu *g)
{
    return g->handle_rc == 0 && gpu_valid(g, GPU_S_NAME) ? g->name : NULL;
}

static const char *answer_pci(const struct gpu *g)
{
    return g->handle_rc == 0 && gpu_valid(g, GPU_S_PCI_BUS_ID) ? g->pci_bus_id : NULL;
}

/* The identity last seen at index whose address does not contradict pci (NULL: unknown). */
static const struct metrics_gpu_ident *ident_at(const struct metrics_memory *m, uint32_t index,
                                                const char *pci)
{
    const struct metrics_gpu_ident *best = NULL;

    for (size_t i = 0; m != NULL && i < m->n_gpus; i++) {
        const struct metrics_gpu_ident *id = &m->gpus[i];

        if (id->index != index || (pci && id->pci && !driver_pci_same(pci, id->pci)))
            continue;
        if (best == NULL || id->seen > best->seen)
            best = id;
    }
    return best;
}

/* The identity last seen with the kernel-log line's address or UUID. */
static const struct metrics_gpu_ident *ident_of_line(const struct metrics_memory *m,
                                                     const struct klog_event *e)
{
    const struct metrics_gpu_ident *best = NULL;

    for (size_t i = 0; i < m->n_gpus; i++) {
        const struct metrics_gpu_ident *id = &m->gpus[i];
        bool same = (e->pci && id->pci && driver_pci_same(e->pci, id->pci)) ||
                    (e->uuid && strcmp(e->uuid, id->uuid) == 0);

        if (same && (best == NULL || id->seen > best->seen))
            best = id;
    }
    return best;
}

static char *label_set(uint32_t index, const char *uuid, const char *name)
{
    struct mbuf b = { 0 };

    mbuf_printf(&b, "gpu=\"%u\"", (unsigned)index);
    if (uuid)
        mbuf_label(&b, "uuid", uuid);
    if (name)
        mbuf_label(&b, "name", name);
    return b.p;
}

char *metrics_gpu_labels(const struct gpu *g, const struct metrics_memory *m)
{
    const char *uuid = answer_uuid(g), *name = answer_name(g);

    if (uuid == NULL) {
        const struct metrics_gpu_ident *id = ident_at(m, g->index, answer_pci(g));

        if (id != NULL) {
            uuid = id->uuid;
            if (name == NULL)
                name = id->name;
        }
    }
    return label_set(g->index, uuid, name);
}

static void remember_gpus(struct metrics_memory *m, const struct snapshot *s)
{
    for (size_t i = 0; i < s->n_gpus; i++) {
        const struct gpu *g = &s->gpus[i];
        const char *uuid = answer_uuid(g);
        struct metrics_gpu_ident *id = NULL;

        if (uuid == NULL)
            continue;
        for (size_t k = 0; k < m->n_gpus && id == NULL; k++)
            if (strcmp(m->gpus[k].uuid, uuid) == 0)
                id = &m->gpus[k];
        if (id == NULL) {
            if (m->n_gpus >= MEMORY_MAX_GPUS)
                continue;
            xgrow(&m->gpus, &m->cap_gpus, m->n_gpus + 1, sizeof(*m->gpus));
            id = &m->gpus[m->n_gpus++];
            memset(id, 0, sizeof(*id));
            id->uuid = xstrdup(uuid);
        }
        id->index = g->index;
        id->seen = m->updates;
        replace(&id->name, answer_name(g));
        replace(&id->pci, answer_pci(g));
    }
}

/* The GPU of s a kernel-log line names (by UUID, else address), or NULL. */
static const struct gpu *gpu_of_line(const struct snapshot *s, const struct klog_event *e)
{
    for (size_t i = 0; i < s->n_gpus; i++) {
        const struct gpu *g = &s->gpus[i];

        if (e->uuid && gpu_valid(g, GPU_S_UUID) && g->uuid && strcmp(e->uuid, g->uuid) == 0)
            return g;
        if (e->pci && gpu_valid(g, GPU_S_PCI_BUS_ID) && g->pci_bus_id &&
            driver_pci_same(e->pci, g->pci_bus_id))
            return g;
    }
    return NULL;
}

static bool counted_line(const struct klog_event *e)
{
    if (e->kind == KLOG_XID)
        return (e->valid & (UINT64_C(1) << KLOG_S_XID)) != 0;
    if (e->kind == KLOG_SXID)
        return (e->valid & (UINT64_C(1) << KLOG_S_SXID)) != 0 && e->pci != NULL;
    return false;
}

/* The series the line counts in, its labels made here (*gpu for the order); NULL: no labels. */
static char *line_labels(const struct metrics_memory *m, const struct snapshot *s,
                         const struct klog_event *e, long *gpu)
{
    const struct metrics_gpu_ident *id;
    const struct gpu *g;
    struct mbuf b = { 0 };

    *gpu = -1;
    if (e->kind == KLOG_SXID) {
        mbuf_add(&b, "", 0);
        mbuf_label(&b, "pci", e->pci);
        mbuf_printf(&b, ",fatal=\"%s\"", e->sxid_fatal ? "true" : "false");
        return b.p;
    }
    if ((g = gpu_of_line(s, e)) != NULL) {
        *gpu = g->index;
        return metrics_gpu_labels(g, m);
    }
    if ((id = ident_of_line(m, e)) != NULL) {
        *gpu = id->index;
        return label_set(id->index, id->uuid, id->name);
    }
    if (e->pci == NULL)
        return NULL; /* nothing to label it with */
    mbuf_add(&b, "", 0);
    mbuf_label(&b, "pci", e->pci);
    return b.p;
}

static void count_line(struct metrics_memory *m, const struct snapshot *s,
                       const struct klog_event *e)
{
    int kind = e->kind == KLOG_XID ? METRICS_LOG_XID : METRICS_LOG_SXID;
    int32_t xid = kind == METRICS_LOG_XID ? e->xid : 0;
    long gpu;
    char *labels = line_labels(m, s, e, &gpu);
    struct metrics_log_series *c;

    if (labels == NULL)
        return;
    for (size_t k = 0; k < m->n_series; k++) {
        c = &m->series[k];
        if (c->kind == kind && c->xid == xid && strcmp(c->labels, labels) == 0) {
            c->n++;
            free(labels);
            return;
        }
    }
    if (m->n_series >= MEMORY_MAX_SERIES) {
        free(labels);
        return;
    }
    xgrow(&m->series, &m->cap_series, m->n_series + 1, sizeof(*m->series));
    m->series[m->n_series++] = (struct metrics_log_series){ kind, labels, gpu, xid, 1 };
}

static uint64_t hash_str(uint64_t h, const char *s)
{
    return s ? fnv1a64(h, s, strlen(s) + 1) : fnv1a64(h, "", 0);
}

/* What tells a line from another: its stamp, code, address, UUID and text. */
static uint64_t line_hash(const struct klog_event *e)
{
    uint64_t h = FNV1A64_INIT;
    int64_t stamp = -1;
    int32_t code = e->kind == KLOG_XID ? e->xid : e->sxid;

    if (e->valid & (UINT64_C(1) << KLOG_S_UPTIME))
        stamp = e->uptime_us;
    else if (e->valid & (UINT64_C(1) << KLOG_S_TIME))
        stamp = e->time_ms;
    h = fnv1a64(h, &e->kind, sizeof(e->kind));
    h = fnv1a64(h, &stamp, sizeof(stamp));
    h = fnv1a64(h, &code, sizeof(code));
    h = hash_str(h, e->pci);
    h = hash_str(h, e->uuid);
    return hash_str(h, e->message);
}

struct line_fp {
    uint64_t h;
    size_t event;
};

static int cmp_line_fp(const void *a, const void *b)
{
    const struct line_fp *x = a, *y = b;

    if (x->h != y->h)
        return x->h < y->h ? -1 : 1;
    return (x->event > y->event) - (x->event < y->event);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return (x > y) - (x < y);
}

static bool seen(const struct metrics_memory *m, uint64_t fp)
{
    return m->n_seen > 0 && bsearch(&fp, m->seen, m->n_seen, sizeof(fp), cmp_u64) != NULL;
}

/* Sorts fps in place and drops repeats; returns how many are left. */
static size_t sort_unique(uint64_t *fps, size_t n)
{
    size_t k = 0;

    if (n > 1)
        qsort(fps, n, sizeof(*fps), cmp_u64);
    for (size_t i = 0; i < n; i++)
        if (k == 0 || fps[k - 1] != fps[i])
            fps[k++] = fps[i];
    return k;
}

static void count_log(struct metrics_memory *m, const struct snapshot *s)
{
    const struct driver_info *d = &s->driver;
    struct line_fp *lines;
    uint64_t *fps;
    size_t n = 0, n_fps;
    /* A read cut short (a deadline, a source unreadable) may miss lines that come back next
     * time: keep what was seen before as well, so they are not counted twice. */
    bool partial = s->collectors[COLLECTOR_KLOG].state != CS_OK;

    if (!driver_valid(d, DRIVER_S_KLOG) && d->n_events == 0)
        return; /* no log read: the counts stay as they are */
    lines = xcalloc(d->n_events + 1, sizeof(*lines));
    for (size_t i = 0; i < d->n_events; i++)
        if (counted_line(&d->events[i]))
            lines[n++] = (struct line_fp){ line_hash(&d->events[i]), i };
    if (n > 1)
        qsort(lines, n, sizeof(*lines), cmp_line_fp);
    n_fps = n + (partial && m->log_read ? m->n_seen : 0);
    if (n_fps > MEMORY_MAX_SEEN)
        n_fps = n;
    fps = xcalloc(n_fps + 1, sizeof(*fps));
    for (size_t i = 0, ordinal = 0; i < n; i++) {
        /* identical lines (a storm with one-second syslog stamps) are told apart by their order */
        ordinal = i > 0 && lines[i - 1].h == lines[i].h ? ordinal + 1 : 0;
        fps[i] = fnv1a64(lines[i].h, &ordinal, sizeof(ordinal));
        if (!m->log_read || !seen(m, fps[i]))
            count_line(m, s, &d->events[lines[i].event]);
    }
    if (n_fps > n)
        memcpy(fps + n, m->seen, m->n_seen * sizeof(*fps));
    free(m->seen);
    m->seen = fps;
    m->n_seen = sort_unique(fps, n_fps);
    m->log_read = true;
    free(lines);
}

void metrics_memory_update(struct metrics_memory *m, const struct snapshot *s)
{
    if (s == NULL)
        return;
    m->updates++;
    remember_gpus(m, s);
    count_log(m, s);
}

static int cmp_series(const void *a, const void *b)
{
    const struct metrics_log_series *x = *(const struct metrics_log_series *const *)a;
    const struct metrics_log_series *y = *(const struct metrics_log_series *const *)b;
    int c;

    if (x->gpu != y->gpu)
        return x->gpu < 0 ? 1 : y->gpu < 0 ? -1 : (x->gpu > y->gpu) - (x->gpu < y->gpu);
    if ((c = strcmp(x->labels, y->labels)) != 0)
        return c;
    return (x->xid > y->xid) - (x->xid < y->xid);
}

void metrics_log_counts(struct render *r, const struct metric_family *m, int kind)
{
    const struct metrics_memory *mem = r->mem;
    const struct metrics_log_series **list = xcalloc(mem->n_series + 1, sizeof(*list));
    size_t n = 0;

    for (size_t i = 0; i < mem->n_series; i++)
        if (mem->series[i].kind == kind)
            list[n++] = &mem->series[i];
    if (n > 1)
        qsort(list, n, sizeof(*list), cmp_series);
    for (size_t i = 0; i < n; i++) {
        char xid[32];

        if (kind == METRICS_LOG_XID) {
            snprintf(xid, sizeof(xid), "xid=\"%d\"", (int)list[i]->xid);
            metrics_sample_u64(r, m, list[i]->labels, xid, list[i]->n);
        } else {
            metrics_sample_u64(r, m, list[i]->labels, NULL, list[i]->n);
        }
    }
    free(list);
}
