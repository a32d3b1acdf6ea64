/*
 * The metric families of the GPUs' NVLinks (the snapshot's gpus[].nvlink, docs/fabric.md): per
 * link whether it is active, its data-link error counters and the data it sent and received, and
 * per GPU how many links are active. A value NVML did not give has no series, never 0; a GPU
 * without NVLink (NOT_SUPPORTED) has 0 active links and no per-link series.
 */
#include "nvml/nvml-abi.h"
#include "render/metrics-internal.h"
#include "util/xalloc.h"

#include <stdint.h>
#include <stdio.h>

/* One of a link's error counters, when NVML gave it. */
static void link_counter(struct render *r, const struct metric_family *m, const char *gpu,
                         const struct gpu_nvlink *l, enum gpu_nvlink_slot slot, const char *name,
                         uint64_t value)
{
    char extra[64];

    if (!gpu_nvlink_valid(l, slot))
        return;
    snprintf(extra, sizeof(extra), "link=\"%u\",counter=\"%s\"", (unsigned)l->link, name);
    metrics_sample_u64(r, m, gpu, extra, value);
}

/* A link's data counter in one direction, in bytes, when NVML gave it. */
static void link_data(struct render *r, const struct metric_family *m, const char *gpu,
                      const struct gpu_nvlink *l, enum gpu_nvlink_slot slot, const char *dir,
                      uint64_t kib)
{
    char extra[64];

    if (!gpu_nvlink_valid(l, slot) || kib > UINT64_MAX / 1024)
        return;
    snprintf(extra, sizeof(extra), "link=\"%u\",direction=\"%s\"", (unsigned)l->link, dir);
    metrics_sample_u64(r, m, gpu, extra, kib * 1024);
}

static void link_family(struct render *r, const struct metric_family *m, const char *gpu,
                        const struct gpu_nvlink *l)
{
    char extra[32];

    if (m->source == MSRC_NVLINK_ACTIVE) {
        snprintf(extra, sizeof(extra), "link=\"%u\"", (unsigned)l->link);
        if (gpu_nvlink_valid(l, NVL_S_ACTIVE))
            metrics_sample_u64(r, m, gpu, extra, l->active);
        return;
    }
    if (m->source == MSRC_NVLINK_DATA) {
        link_data(r, m, gpu, l, NVL_S_TX, "tx", l->tx_kib);
        link_data(r, m, gpu, l, NVL_S_RX, "rx", l->rx_kib);
        return;
    }
    link_counter(r, m, gpu, l, NVL_S_CRC, "crc", l->crc_errors);
    link_counter(r, m, gpu, l, NVL_S_REPLAY, "replay", l->replay_errors);
    link_counter(r, m, gpu, l, NVL_S_RECOVERY, "recovery", l->recovery_errors);
}

void metrics_nvlink(struct render *r, const struct metric_family *m)
{
    for (size_t i = 0; i < r->s->n_gpus; i++) {
        const struct gpu *g = &r->s->gpus[i];

        if (g->handle_rc != 0)
            continue;
        if (!gpu_valid(g, GPU_S_NVLINK)) {
            if (m->source == MSRC_NVLINK_LINKS_ACTIVE &&
                g->rc[GPU_S_NVLINK] == NVML_ERROR_NOT_SUPPORTED)
                metrics_sample_u64(r, m, r->gpu_labels[i], NULL, 0);
            continue;
        }
        if (m->source == MSRC_NVLINK_LINKS_ACTIVE) {
            size_t unread, active = gpu_nvlinks_active(g, &unread);

            /* A count with links whose state was not read would understate: no sample. */
            if (unread == 0)
                metrics_sample_u64(r, m, r->gpu_labels[i], NULL, active);
            continue;
        }
        for (size_t k = 0; k < g->n_nvlinks; k++)
            link_family(r, m, r->gpu_labels[i], &g->nvlinks[k]);
    }
}
