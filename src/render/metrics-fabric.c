/*
 * The metric families of NVSwitch systems (the snapshot's fabric section and the SXids of its
 * kernel log, docs/fabric.md): the NVSwitches on the bus, which of them the NVSwitch driver took,
 * whether Fabric Manager runs, its version, the errors its log holds since it started, and SXid
 * lines by switch. A value the collector could not read gives no series, never 0; a machine with no
 * NVSwitch and no Fabric Manager gives only gpudoctor_nvswitches 0.
 */
#include "render/metrics-internal.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

/* SXid lines of one switch and class. */
struct sxid_count {
    const char *pci;
    bool fatal;
    uint64_t n;
};

static int cmp_sxid(const void *a, const void *b)
{
    const struct sxid_count *x = a, *y = b;
    int c = strcmp(x->pci, y->pci);

    return c != 0 ? c : (int)x->fatal - (int)y->fatal;
}

static void sxids(struct render *r, const struct metric_family *m)
{
    const struct driver_info *d = &r->s->driver;
    struct sxid_count *c = NULL;
    size_t n = 0, cap = 0;

    for (size_t i = 0; i < d->n_events; i++) {
        const struct klog_event *e = &d->events[i];
        size_t k;

        if (e->kind != KLOG_SXID || !(e->valid & (UINT64_C(1) << KLOG_S_SXID)) || e->pci == NULL)
            continue;
        for (k = 0; k < n; k++)
            if (c[k].fatal == e->sxid_fatal && strcmp(c[k].pci, e->pci) == 0)
                break;
        if (k == n) {
            xgrow(&c, &cap, n + 1, sizeof(*c));
            c[n++] = (struct sxid_count){ e->pci, e->sxid_fatal, 0 };
        }
        c[k].n++;
    }
    if (n > 1)
        qsort(c, n, sizeof(*c), cmp_sxid);
    for (size_t k = 0; k < n; k++) {
        struct mbuf lab = { 0 };

        mbuf_add(&lab, "", 0);
        mbuf_label(&lab, "pci", c[k].pci);
        mbuf_printf(&lab, ",fatal=\"%s\"", c[k].fatal ? "true" : "false");
        metrics_sample_u64(r, m, NULL, lab.p, c[k].n);
        free(lab.p);
    }
    free(c);
}

void metrics_fabric(struct render *r, const struct metric_family *m)
{
    const struct fabric_info *f = &r->s->fabric;

    switch (m->source) {
    case MSRC_NVSWITCHES:
        if (fabric_valid(f, FABRIC_S_SWITCHES))
            metrics_sample_u64(r, m, NULL, NULL, f->n_switches);
        return;
    case MSRC_NVSWITCH_BOUND:
        for (size_t i = 0; i < f->n_switches; i++) {
            const struct fabric_switch *sw = &f->switches[i];
            struct mbuf lab = { 0 };

            if (!fabric_switch_valid(sw, FSW_S_DRIVER))
                continue;
            mbuf_add(&lab, "", 0);
            mbuf_label(&lab, "pci", sw->pci_address);
            metrics_sample_u64(r, m, NULL, lab.p, sw->driver_bound);
            free(lab.p);
        }
        return;
    case MSRC_FM_RUNNING:
        if (fabric_valid(f, FABRIC_S_PROCESS))
            metrics_sample_u64(r, m, NULL, NULL, f->fm_running);
        return;
    case MSRC_FM_INFO:
        if (fabric_valid(f, FABRIC_S_VERSION) && f->fm_version != NULL) {
            struct mbuf lab = { 0 };

            mbuf_add(&lab, "", 0);
            mbuf_label(&lab, "version", f->fm_version);
            metrics_sample_u64(r, m, NULL, lab.p, 1);
            free(lab.p);
        }
        return;
    case MSRC_FM_LOG_ERRORS:
        if (fabric_valid(f, FABRIC_S_LOG))
            metrics_sample_u64(r, m, NULL, NULL, f->log_errors);
        return;
    case MSRC_SXID:
        sxids(r, m);
        return;
    default:
        return;
    }
}
