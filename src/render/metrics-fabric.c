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
        metrics_log_counts(r, m, METRICS_LOG_SXID);
        return;
    default:
        return;
    }
}
