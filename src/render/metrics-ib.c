/*
 * The metric families of the InfiniBand / RoCE ports (the snapshot's ib section, docs/fabric.md):
 * per port whether it is active, its rate, its error and data counters, and whether the
 * GPUDirect RDMA module is loaded. A value the collector could not read gives no series, never 0.
 */
#include "render/metrics-internal.h"
#include "util/xalloc.h"

#include <stdlib.h>

/* device="mlx5_0",port="1"[,link_layer="infiniband"] */
static void port_labels(const struct ib_port *p, struct mbuf *b)
{
    mbuf_add(b, "", 0);
    mbuf_label(b, "device", p->device ? p->device : "");
    mbuf_printf(b, ",port=\"%u\"", (unsigned)p->port);
    if (ib_port_valid(p, IB_S_LINK_LAYER) && p->link_layer >= 0 && p->link_layer <= IB_LL_ETHERNET)
        mbuf_printf(b, ",link_layer=\"%s\"", ib_link_layer_names[p->link_layer]);
}

/* The error counters, by their sysfs names (the data counters have families of their own). */
static const enum ib_counter error_counters[] = {
    IB_C_LINK_DOWNED,          IB_C_LINK_ERROR_RECOVERY, IB_C_SYMBOL_ERROR,
    IB_C_PORT_RCV_ERRORS,      IB_C_PORT_XMIT_DISCARDS,  IB_C_EXCESSIVE_BUFFER_OVERRUN,
    IB_C_LOCAL_LINK_INTEGRITY,
};

static void port_family(struct render *r, const struct metric_family *m, const struct ib_port *p,
                        const char *labels)
{
    enum ib_counter data =
        m->source == MSRC_IB_PORT_RCV_BYTES ? IB_C_PORT_RCV_DATA : IB_C_PORT_XMIT_DATA;

    switch (m->source) {
    case MSRC_IB_PORT_ACTIVE:
        if (ib_port_valid(p, IB_S_STATE))
            metrics_sample_u64(r, m, labels, NULL,
                               p->state == IB_STATE_ACTIVE && (!ib_port_valid(p, IB_S_PHYS_STATE) ||
                                                               p->phys_state == IB_PHYS_LINKUP));
        return;
    case MSRC_IB_PORT_RATE:
        if (ib_port_valid(p, IB_S_RATE)) {
            metrics_sample_begin(r, m, labels, NULL);
            mbuf_printf(&r->fam, "%.10g\n", p->rate_gbps * 1e9 / 8);
        }
        return;
    case MSRC_IB_PORT_ERRORS:
        for (size_t i = 0; i < sizeof(error_counters) / sizeof(error_counters[0]); i++) {
            enum ib_counter c = error_counters[i];
            char extra[64];

            if (!ib_port_valid(p, IB_S_COUNTER + c))
                continue;
            snprintf(extra, sizeof(extra), "counter=\"%s\"", ib_counter_files[c]);
            metrics_sample_u64(r, m, labels, extra, p->counter[c]);
        }
        return;
    case MSRC_IB_PORT_RCV_BYTES:
    case MSRC_IB_PORT_XMIT_BYTES:
        /* 4-byte units; a value that would overflow in bytes is left out rather than wrapped */
        if (ib_port_valid(p, IB_S_COUNTER + data) && p->counter[data] <= UINT64_MAX / 4)
            metrics_sample_u64(r, m, labels, NULL, p->counter[data] * 4);
        return;
    default:
        return;
    }
}

void metrics_ib(struct render *r, const struct metric_family *m)
{
    const struct ib_info *ib = &r->s->ib;

    if (m->source == MSRC_IB_PEERMEM) {
        /* Only where it matters: RDMA ports to use it with, and /proc/modules read. */
        if (((ib->valid >> IB_I_MODULES) & 1u) && ib->n_ports > 0)
            metrics_sample_u64(r, m, NULL, NULL, ib->peermem_loaded);
        return;
    }
    for (size_t i = 0; i < ib->n_ports; i++) {
        struct mbuf lab = { 0 };

        port_labels(&ib->ports[i], &lab);
        port_family(r, m, &ib->ports[i], lab.p);
        free(lab.p);
    }
}
