/*
 * The metric families of the node's last bench result (bench-last.json in the state directory,
 * docs/bench.md): whether it could be read, when it ran, and per GPU its host copies, device
 * memory bandwidth, compute rate and checksum, per GPU pair the peer copies. The caller (serve)
 * loads the file and hands its bench section over in metrics_cycle; with none, no series. A
 * figure the bench did not measure gives no series, never 0.
 */
#include "bench/bench.h"
#include "render/metrics-internal.h"
#include "util/xalloc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The NVML GPU of r's snapshot at the bench GPU's PCI address, or -1. */
static int nvml_twin(const struct render *r, const struct bench_gpu *g)
{
    if (r->s == NULL || g->pci_bus_id == NULL)
        return -1;
    for (size_t i = 0; i < r->s->n_gpus; i++) {
        const struct gpu *n = &r->s->gpus[i];

        if (gpu_valid(n, GPU_S_PCI_BUS_ID) && n->pci_bus_id &&
            bench_same_pci(n->pci_bus_id, g->pci_bus_id))
            return (int)i;
    }
    return -1;
}

/*
 * A bench GPU's labels: the NVML GPU's (gpu, uuid, name) when the snapshot has one at its PCI
 * address, else the name CUDA gave; then pci_bus_id. prefix "src_"/"dst_" for the pair families.
 */
static void bench_labels(const struct render *r, const struct bench_gpu *g, const char *prefix,
                         struct mbuf *b)
{
    int twin = nvml_twin(r, g);
    char key[32];

    if (*prefix == '\0' && twin >= 0) {
        if (b->len > 0)
            mbuf_add(b, ",", 1);
        mbuf_str(b, r->gpu_labels[twin]);
    } else if (twin >= 0) {
        snprintf(key, sizeof(key), "%sgpu", prefix);
        mbuf_printf(b, "%s%s=\"%u\"", b->len ? "," : "", key, (unsigned)r->s->gpus[twin].index);
    } else if (*prefix == '\0' && g->name) {
        mbuf_label(b, "name", g->name);
    }
    if (g->pci_bus_id) {
        snprintf(key, sizeof(key), "%spci_bus_id", prefix);
        mbuf_label(b, key, g->pci_bus_id);
    }
}

static void sample_double(struct render *r, const struct metric_family *m, const char *labels,
                          double v)
{
    if (!isfinite(v))
        return;
    metrics_sample_begin(r, m, labels, NULL);
    mbuf_printf(&r->fam, "%.10g\n", v);
}

/* One series of a per-GPU figure, with extra constant labels. */
static void gpu_figure(struct render *r, const struct metric_family *m, const struct bench_gpu *g,
                       const char *extra, double v)
{
    struct mbuf lab = { 0 };

    mbuf_add(&lab, "", 0);
    bench_labels(r, g, "", &lab);
    if (extra != NULL) {
        mbuf_add(&lab, ",", 1);
        mbuf_str(&lab, extra);
    }
    sample_double(r, m, lab.p, v);
    free(lab.p);
}

static const struct bench_gpu *gpu_by_ordinal(const struct bench_info *b, uint32_t ordinal)
{
    for (size_t i = 0; i < b->n_gpus; i++) {
        if (b->gpus[i].index == ordinal)
            return &b->gpus[i];
    }
    return NULL;
}

static void pairs(struct render *r, const struct metric_family *m, bool latency)
{
    const struct bench_info *b = r->cyc->bench;

    for (size_t i = 0; i < b->n_pairs; i++) {
        const struct bench_pair *p = &b->pairs[i];
        const struct bench_gpu *src = gpu_by_ordinal(b, p->src), *dst = gpu_by_ordinal(b, p->dst);
        struct mbuf lab = { 0 };
        double v = latency ? p->latency_us / 1e6 : p->bytes_per_s;

        if (src == NULL || dst == NULL || !(v > 0))
            continue;
        mbuf_add(&lab, "", 0);
        bench_labels(r, src, "src_", &lab);
        bench_labels(r, dst, "dst_", &lab);
        sample_double(r, m, lab.p, v);
        free(lab.p);
    }
}

void metrics_bench(struct render *r, const struct metric_family *m)
{
    const struct metrics_cycle *c = r->cyc;
    const struct bench_info *b = c->bench;

    if (m->source == MSRC_BENCH_READ) {
        if (c->bench_read != 0)
            metrics_sample_u64(r, m, NULL, NULL, c->bench_read > 0);
        return;
    }
    if (b == NULL || b->state != BENCH_OK)
        return;
    switch (m->source) {
    case MSRC_BENCH_TIME:
        if (c->bench_completed_ms > 0) {
            metrics_sample_begin(r, m, NULL, NULL);
            mbuf_seconds_ms(&r->fam, c->bench_completed_ms);
            mbuf_add(&r->fam, "\n", 1);
        }
        return;
    case MSRC_BENCH_P2P:
        pairs(r, m, false);
        return;
    case MSRC_BENCH_P2P_LATENCY:
        pairs(r, m, true);
        return;
    default:
        break;
    }
    for (size_t i = 0; i < b->n_gpus; i++) {
        const struct bench_gpu *g = &b->gpus[i];

        switch (m->source) {
        case MSRC_BENCH_HOST_COPY:
            if (bench_gpu_valid(g, BG_H2D_PINNED))
                gpu_figure(r, m, g, "direction=\"h2d\",memory=\"pinned\"",
                           g->h2d_pinned_bytes_per_s);
            if (bench_gpu_valid(g, BG_D2H_PINNED))
                gpu_figure(r, m, g, "direction=\"d2h\",memory=\"pinned\"",
                           g->d2h_pinned_bytes_per_s);
            if (bench_gpu_valid(g, BG_H2D_PAGEABLE))
                gpu_figure(r, m, g, "direction=\"h2d\",memory=\"pageable\"",
                           g->h2d_pageable_bytes_per_s);
            if (bench_gpu_valid(g, BG_D2H_PAGEABLE))
                gpu_figure(r, m, g, "direction=\"d2h\",memory=\"pageable\"",
                           g->d2h_pageable_bytes_per_s);
            if (bench_gpu_valid(g, BG_BIDIR))
                gpu_figure(r, m, g, "direction=\"both\",memory=\"pinned\"", g->bidir_bytes_per_s);
            break;
        case MSRC_BENCH_MEMORY:
            if (bench_gpu_valid(g, BG_TRIAD))
                gpu_figure(r, m, g, "method=\"triad\"", g->triad_bytes_per_s);
            if (bench_gpu_valid(g, BG_DTOD))
                gpu_figure(r, m, g, "method=\"device_copy\"", g->dtod_bytes_per_s);
            break;
        case MSRC_BENCH_FMA:
            if (bench_gpu_valid(g, BG_FMA))
                gpu_figure(r, m, g, NULL, g->fma_flops);
            break;
        case MSRC_BENCH_CHECKSUM:
            if (bench_gpu_valid(g, BG_CHECKSUM))
                gpu_figure(r, m, g, NULL, g->checksum_ok ? 1 : 0);
            break;
        default:
            break;
        }
    }
}
