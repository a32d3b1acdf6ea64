/*
 * The fabric between the GPUs as both front ends of watch show it: each GPU's NVLinks (how many
 * are up, the data they moved and the errors that appeared between the last two readings) and the
 * InfiniBand / RoCE ports (state, traffic and errors over the latest collection's window).
 */
#include "util/xalloc.h"
#include "watch/watch.h"

#include <stdint.h>
#include <string.h>

/* The CRC, replay and recovery errors of link b that link a had not yet; false: not all read. */
static bool link_errors(const struct gpu_nvlink *a, const struct gpu_nvlink *b, uint64_t *n)
{
    static const enum gpu_nvlink_slot slots[] = { NVL_S_CRC, NVL_S_REPLAY, NVL_S_RECOVERY };

    for (size_t i = 0; i < ARRAY_SIZE(slots); i++) {
        if (!gpu_nvlink_valid(a, slots[i]) || !gpu_nvlink_valid(b, slots[i]))
            return false;
    }
    *n += counter_growth(a->crc_errors, b->crc_errors) +
          counter_growth(a->replay_errors, b->replay_errors) +
          counter_growth(a->recovery_errors, b->recovery_errors);
    return true;
}

bool watch_nvlink_of(const struct history *h, uint32_t gpu, struct watch_nvlink *out)
{
    const struct gpu *b = NULL, *a = NULL;
    double secs = 0;
    size_t k = h->n;

    memset(out, 0, sizeof(*out));
    while (k > 0 && b == NULL)
        b = sample_gpu(&h->samples[--k], SIZE_MAX, gpu);
    if (b == NULL || b->handle_rc != 0 || !gpu_valid(b, GPU_S_NVLINK) || b->n_nvlinks == 0)
        return false;
    for (size_t i = 0; i < b->n_nvlinks; i++) {
        if (gpu_nvlink_valid(&b->nvlinks[i], NVL_S_ACTIVE)) {
            out->known++;
            out->up += b->nvlinks[i].active;
        }
    }
    /* The reading before it that has the GPU's links: the growth between the two. */
    for (size_t j = k; j > 0 && a == NULL; j--) {
        a = sample_gpu(&h->samples[j - 1], SIZE_MAX, gpu);
        if (a != NULL && (a->handle_rc != 0 || !gpu_valid(a, GPU_S_NVLINK)))
            a = NULL;
        secs = (double)(h->samples[k].t_ms - h->samples[j - 1].t_ms) / 1000.0;
    }
    if (a == NULL)
        return true;
    out->traffic_known = gpu_nvlink_traffic(a, b, secs, &out->bytes_per_s);
    /* Known only when every link's counters are: a sum over some would look smaller. */
    out->errors_known = true;
    for (size_t i = 0; i < b->n_nvlinks && out->errors_known; i++) {
        const struct gpu_nvlink *la = gpu_nvlink_find(a, b->nvlinks[i].link);

        out->errors_known = la != NULL && link_errors(la, &b->nvlinks[i], &out->errors);
    }
    if (!out->errors_known)
        out->errors = 0;
    return true;
}

bool watch_nvlink_total(const struct history *h, struct watch_nvlink *out, int32_t *worst_gpu)
{
    const struct sample *last = h->n ? &h->samples[h->n - 1] : NULL;
    bool any = false, traffic_all = true, errors_all = true;
    uint64_t worst = 0;

    memset(out, 0, sizeof(*out));
    *worst_gpu = -1;
    for (size_t i = 0; last != NULL && i < last->n_gpus; i++) {
        struct watch_nvlink one;

        if (!watch_nvlink_of(h, last->gpus[i].index, &one))
            continue;
        any = true;
        out->up += one.up;
        out->known += one.known;
        traffic_all = traffic_all && one.traffic_known;
        errors_all = errors_all && one.errors_known;
        out->bytes_per_s += one.bytes_per_s;
        out->errors += one.errors;
        if (one.errors > worst) {
            worst = one.errors;
            *worst_gpu = (int32_t)last->gpus[i].index;
        }
    }
    /* A total is known only when every GPU's part of it is. */
    out->traffic_known = any && traffic_all;
    out->errors_known = any && errors_all;
    if (!out->errors_known) {
        out->errors = 0;
        *worst_gpu = -1;
    }
    return any;
}

/* The counters that count errors: the ones the rule ib.errors judges. */
static const enum ib_counter error_counters[] = {
    IB_C_LINK_DOWNED,     IB_C_LINK_ERROR_RECOVERY,      IB_C_SYMBOL_ERROR,
    IB_C_PORT_RCV_ERRORS, IB_C_EXCESSIVE_BUFFER_OVERRUN, IB_C_LOCAL_LINK_INTEGRITY,
};

void watch_ib_port(const struct snapshot *s, const struct ib_port *p, struct watch_ib *out)
{
    double secs = (double)s->window_ms / 1000.0;

    memset(out, 0, sizeof(*out));
    out->ports = 1;
    if (ib_port_valid(p, IB_S_STATE) && p->state == IB_STATE_ACTIVE)
        out->active = 1;
    else
        out->first_down = p;
    if (secs > 0 && ib_port_valid(p, IB_S_WINDOW + IB_C_PORT_RCV_DATA) &&
        ib_port_valid(p, IB_S_WINDOW + IB_C_PORT_XMIT_DATA)) {
        /* the data counters count 4-byte words */
        out->traffic_known = true;
        out->rx_bytes_per_s = (double)p->window[IB_C_PORT_RCV_DATA] * 4.0 / secs;
        out->tx_bytes_per_s = (double)p->window[IB_C_PORT_XMIT_DATA] * 4.0 / secs;
    }
    out->errors_known = secs > 0;
    for (size_t i = 0; i < ARRAY_SIZE(error_counters) && out->errors_known; i++) {
        if (ib_port_valid(p, IB_S_WINDOW + (int)error_counters[i]))
            out->errors += p->window[error_counters[i]];
        else
            out->errors_known = false;
    }
    if (!out->errors_known)
        out->errors = 0;
}

bool watch_ib_total(const struct snapshot *s, struct watch_ib *out)
{
    bool traffic_all = true, errors_all = true;

    memset(out, 0, sizeof(*out));
    for (size_t i = 0; i < s->ib.n_ports; i++) {
        struct watch_ib one;

        watch_ib_port(s, &s->ib.ports[i], &one);
        out->ports++;
        out->active += one.active;
        if (out->first_down == NULL)
            out->first_down = one.first_down;
        traffic_all = traffic_all && one.traffic_known;
        errors_all = errors_all && one.errors_known;
        out->rx_bytes_per_s += one.rx_bytes_per_s;
        out->tx_bytes_per_s += one.tx_bytes_per_s;
        out->errors += one.errors;
    }
    /* A total is known only when every port's part of it is. */
    out->traffic_known = out->ports > 0 && traffic_all;
    out->errors_known = out->ports > 0 && errors_all;
    return out->ports > 0;
}
