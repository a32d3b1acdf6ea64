/*
 * PCIe: a link slower than it can be while the GPU works (an idle GPU slows its link on purpose),
 * lanes missing, link errors growing, and a GPU sharing its switch with a NIC.
 */
#include "rules/rule-impl.h"
#include "util/xalloc.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* GT/s per lane of each generation, for messages. */
static double gen_gts(uint32_t gen)
{
    static const double gts[] = { 0, 2.5, 5, 8, 16, 32, 64 };

    return gen < ARRAY_SIZE(gts) ? gts[gen] : 0;
}

static void pcie_fixes(struct finding *f, const struct gpu *g)
{
    const char *bus = gpu_valid(g, GPU_S_PCI_BUS_ID) && g->pci_bus_id ? g->pci_bus_id : NULL;
    char *word;

    word = fix_pci_arg(f, pci_lspci_form(bus));
    if (word)
        finding_fix(f,
                    "sudo lspci -vv -s %s | grep -E 'LnkCap|LnkSta'   # what the link can do "
                    "and does",
                    word);
    free(word);
    finding_fix(f,
                "nvidia-smi -i %" PRIu32 " -q -d PCIE   # generation and width, now and "
                "maximum",
                g->index);
}

/* ---- pcie.link-downshift ---- */

static void check_downshift(const struct rule_ctx *ctx, struct findings *out)
{
    for (size_t i = 0; i < ctx->facts->n_gpus; i++) {
        const struct facts_gpu *v = &ctx->facts->gpus[i];
        const struct gpu *g = v->g;
        struct finding *f;

        if (!need_gpu(ctx, out, g, GPU_S_PCIE_GEN_MAX))
            continue;
        if (v->busy_gen_valid && v->busy_gen_min < g->pcie_gen_max) {
            f = finding_new(ctx, out, (int32_t)g->index, -1);
            finding_title(
                f, "GPU %" PRIu32 " PCIe link at Gen%" PRIu32 " while busy (up to Gen%" PRIu32 ")",
                g->index, v->busy_gen_min, g->pcie_gen_max);
            finding_evidence(f,
                             "link generation Gen%" PRIu32 " (%.1f GT/s per lane) while "
                             "utilisation was at or above %.0f %%",
                             v->busy_gen_min, gen_gts(v->busy_gen_min),
                             th(ctx, TH_GPU_BUSY_UTIL_PCT));
            finding_evidence(f, "this GPU and slot allow Gen%" PRIu32 " (%.1f GT/s per lane)",
                             g->pcie_gen_max, gen_gts(g->pcie_gen_max));
            if (v->util_valid)
                finding_evidence(f, "utilisation %.0f %% on average", v->util_mean);
            pcie_fixes(f, g);
            finding_fix(f, "# check the BIOS PCIe speed setting, reseat the GPU or its riser, try "
                           "another slot");
            f->impact = 0.5;
        } else if (gpu_valid(g, GPU_S_PCIE_GEN_GPU_MAX) && g->pcie_gen_max < g->pcie_gen_gpu_max) {
            f = finding_new(ctx, out, (int32_t)g->index, -1);
            f->severity = SEV_INFO;
            finding_title(f,
                          "GPU %" PRIu32 " supports PCIe Gen%" PRIu32 ", its slot only Gen%" PRIu32,
                          g->index, g->pcie_gen_gpu_max, g->pcie_gen_max);
            finding_evidence(f, "GPU maximum Gen%" PRIu32 ", GPU and slot together Gen%" PRIu32,
                             g->pcie_gen_gpu_max, g->pcie_gen_max);
            finding_evidence(f, "host-device copies run at up to %.0f %% of what the GPU could do",
                             pct(gen_gts(g->pcie_gen_max), gen_gts(g->pcie_gen_gpu_max)));
            pcie_fixes(f, g);
            finding_fix(f, "# a faster slot (or a BIOS setting that limits the generation) helps "
                           "jobs that copy a lot between host and GPU");
            f->impact = 0.1;
        }
    }
}

const struct rule rule_pcie_link_downshift = {
    .id = "pcie.link-downshift",
    .severity = SEV_WARNING,
    .category = CAT_PCIE,
    .title = N_("PCIe link slower than it can be while busy"),
    .explanation = N_(
        "GPUs slow their PCIe link down when idle to save power (Gen1 at idle is normal and not "
        "reported). A link that stays below its maximum generation while the GPU is working is a "
        "problem: every host-device copy (data loading, checkpointing, multi-GPU traffic through "
        "the host) runs at a half or a quarter of its speed. Causes: a BIOS setting forcing a "
        "generation, a riser or cable that cannot hold the speed, a dirty or damaged slot, or "
        "signal errors that made the link retrain lower. A GPU in a slot older than itself (a Gen4 "
        "GPU in a Gen3 slot) is reported as information."),
    .detection =
        N_("the lowest link generation seen in readings where utilisation was at or above "
           "gpu_busy_util_pct, below the maximum generation of GPU and slot "
           "(nvmlDeviceGetMaxPcieLinkGeneration); information when that maximum is below the "
           "GPU's own (nvmlDeviceGetGpuMaxPcieLinkGeneration)."),
    .fix = N_("Confirm with lspci -vv (LnkSta vs LnkCap) while the GPU works. Check the BIOS PCIe "
              "generation setting, reseat the GPU and any riser, try another slot. Compare with "
              "identical nodes."),
    .thresholds = THRESHOLDS(TH_GPU_BUSY_UTIL_PCT),
    .check = check_downshift,
};

/* ---- pcie.width-degraded ---- */

static void check_width(const struct rule_ctx *ctx, struct findings *out)
{
    for (size_t i = 0; i < ctx->facts->n_gpus; i++) {
        const struct facts_gpu *v = &ctx->facts->gpus[i];
        const struct gpu *g = v->g;
        struct finding *f;

        if (!need_gpu(ctx, out, g, GPU_S_PCIE_WIDTH) ||
            !need_gpu(ctx, out, g, GPU_S_PCIE_WIDTH_MAX) || g->pcie_width >= g->pcie_width_max ||
            g->pcie_width == 0)
            continue;
        f = finding_new(ctx, out, (int32_t)g->index, -1);
        finding_title(f, "GPU %" PRIu32 " PCIe link runs x%" PRIu32 " of x%" PRIu32 " lanes",
                      g->index, g->pcie_width, g->pcie_width_max);
        finding_evidence(f,
                         "link width x%" PRIu32 ", maximum x%" PRIu32 ": %.0f %% of the "
                         "bandwidth",
                         g->pcie_width, g->pcie_width_max, pct(g->pcie_width, g->pcie_width_max));
        if (v->pcie && pcie_device_valid(v->pcie, PCIE_S_LINK_WIDTH) &&
            pcie_device_valid(v->pcie, PCIE_S_LINK_WIDTH_MAX))
            finding_evidence(f, "sysfs: x%" PRIu32 " of x%" PRIu32, v->pcie->link.width,
                             v->pcie->link.width_max);
        pcie_fixes(f, g);
        finding_fix(f, "# reseat the GPU and any riser, check the slot for damage or dirt, check "
                       "the BIOS bifurcation setting");
        f->impact = 0.5;
    }
}

const struct rule rule_pcie_width_degraded = {
    .id = "pcie.width-degraded",
    .severity = SEV_WARNING,
    .category = CAT_PCIE,
    .title = N_("PCIe link width degraded"),
    .explanation = N_(
        "The GPU's link trained with fewer lanes than it and its slot support (x8 or x4 instead of "
        "x16). Unlike the generation, the width does not drop to save power, so a narrow link "
        "means a physical or configuration problem: a badly seated card or riser, dirt or damage "
        "in the slot, a bifurcation setting splitting the slot, or a slot that is x16 in length "
        "but wired x8. All host-device traffic gets a half or a quarter of the bandwidth."),
    .detection = N_("current link width (nvmlDeviceGetCurrPcieLinkWidth) below the maximum "
                    "(nvmlDeviceGetMaxPcieLinkWidth)."),
    .fix = N_("Confirm with lspci -vv (LnkSta vs LnkCap). Reseat the card and risers, inspect the "
              "slot, check BIOS bifurcation, try another slot; compare with identical nodes."),
    .thresholds = NO_THRESHOLDS,
    .check = check_width,
};

/* ---- pcie.errors ---- */

static void check_errors(const struct rule_ctx *ctx, struct findings *out)
{
    for (size_t i = 0; i < ctx->facts->n_gpus; i++) {
        const struct facts_gpu *v = &ctx->facts->gpus[i];
        const struct gpu *g = v->g;
        const struct pcie_device *d = v->pcie;
        bool growth = false, total = false, aer_fatal = false, aer_nonfatal = false,
             aer_corr = false, aer_growth = false;
        struct finding *f;

        if (v->replay_valid) {
            growth = v->replay_last >= v->replay_first &&
                     v->replay_last - v->replay_first >= th(ctx, TH_PCIE_REPLAY_GROWTH);
            total = v->replay_last >= th(ctx, TH_PCIE_REPLAY_TOTAL);
        } else {
            need_gpu(ctx, out, g, GPU_S_PCIE_REPLAY);
        }
        if (d && pcie_device_valid(d, PCIE_S_AER)) {
            aer_fatal = d->aer_fatal > 0;
            aer_nonfatal = d->aer_nonfatal > 0;
            aer_corr = d->aer_correctable >= th(ctx, TH_AER_CORRECTABLE);
        }
        if (d && pcie_device_valid(d, PCIE_S_AER_WINDOW))
            aer_growth = d->aer_correctable_window + d->aer_nonfatal_window + d->aer_fatal_window >=
                         th(ctx, TH_PCIE_REPLAY_GROWTH);
        if (!growth && !total && !aer_fatal && !aer_nonfatal && !aer_corr && !aer_growth)
            continue;
        f = finding_new(ctx, out, (int32_t)g->index, -1);
        if (aer_fatal)
            f->severity = SEV_CRITICAL;
        if (growth)
            finding_title(f,
                          "GPU %" PRIu32 " PCIe link errors growing: %" PRIu32 " replays in the "
                          "window",
                          g->index, v->replay_last - v->replay_first);
        else if (aer_growth)
            finding_title(f,
                          "GPU %" PRIu32 " PCIe link errors growing: %" PRIu64 " AER errors in "
                          "the window",
                          g->index,
                          d->aer_correctable_window + d->aer_nonfatal_window + d->aer_fatal_window);
        else if (aer_fatal || aer_nonfatal)
            finding_title(f, "GPU %" PRIu32 " PCIe link reported %s errors (AER)", g->index,
                          aer_fatal ? "fatal" : "uncorrectable");
        else if (total)
            finding_title(f, "GPU %" PRIu32 " PCIe link replayed %" PRIu32 " times since boot",
                          g->index, v->replay_last);
        else
            finding_title(f, "GPU %" PRIu32 " PCIe link corrected %" PRIu64 " errors (AER)",
                          g->index, d->aer_correctable);
        if (v->replay_valid && facts_has_window(ctx->facts))
            finding_evidence(f, "replay counter %" PRIu32 " (%+" PRId64 " in the window)",
                             v->replay_last, (int64_t)v->replay_last - (int64_t)v->replay_first);
        else if (v->replay_valid)
            finding_evidence(f,
                             "replay counter %" PRIu32 " since boot (one reading: --window "
                             "shows whether it grows)",
                             v->replay_last);
        if (d && pcie_device_valid(d, PCIE_S_AER))
            finding_evidence(f,
                             "AER since boot: %" PRIu64 " correctable, %" PRIu64
                             " non-fatal, %" PRIu64 " fatal",
                             d->aer_correctable, d->aer_nonfatal, d->aer_fatal);
        if (d && pcie_device_valid(d, PCIE_S_AER_WINDOW))
            finding_evidence(f,
                             "AER in the window: %" PRIu64 " correctable, %" PRIu64
                             " non-fatal, %" PRIu64 " fatal",
                             d->aer_correctable_window, d->aer_nonfatal_window,
                             d->aer_fatal_window);
        finding_fix(f, "sudo journalctl -k | grep -iE 'aer|pcie bus error' | tail -20   # the "
                       "kernel's view of the link");
        pcie_fixes(f, g);
        finding_fix(f, "# reseat the GPU, risers and cables; if errors continue, the slot or "
                       "card is failing: contact the vendor");
        f->impact = aer_fatal ? 1.0 : 0.4;
    }
}

const struct rule rule_pcie_errors = {
    .id = "pcie.errors",
    .severity = SEV_WARNING,
    .category = CAT_PCIE,
    .title = N_("PCIe replays or AER errors growing"),
    .explanation = N_(
        "The link between the GPU and the host corrects transmission errors by replaying packets. "
        "A few over months are harmless; replays that grow while you watch, or advanced error "
        "reporting (AER) errors, mean a marginal link: poor seating, a bad riser or cable, "
        "interference, or a failing slot or card. Throughput drops as packets are re-sent, and "
        "the same link problems later show up as XID 79 (fallen off the bus) or XID 32 "
        "(corrupted push buffer). Fatal AER errors are critical."),
    .detection =
        N_("the PCIe replay counter (nvmlDeviceGetPcieReplayCounter) growing by "
           "pcie_replay_growth or more within the window, or at pcie_replay_total or more; "
           "AER counters from sysfs: correctable at aer_correctable or more, any non-fatal "
           "or fatal."),
    .fix = N_("Read the kernel log for AER messages, reseat the GPU and risers, replace cables; "
              "watch whether the counters keep growing. Persistent errors after reseating mean "
              "hardware: contact the vendor."),
    .thresholds = THRESHOLDS(TH_PCIE_REPLAY_GROWTH, TH_PCIE_REPLAY_TOTAL, TH_AER_CORRECTABLE),
    .check = check_errors,
};

/* ---- pcie.shared-switch ---- */

static void check_shared_switch(const struct rule_ctx *ctx, struct findings *out)
{
    /* Peers come from sysfs: without it, no GPU is known to share anything. */
    if (ctx->facts->n_gpus > 0 && ctx->facts->snap->pcie.n_gpus == 0 &&
        !need_collector(ctx, out, COLLECTOR_PCIE))
        return;
    for (size_t i = 0; i < ctx->facts->n_gpus; i++) {
        const struct facts_gpu *v = &ctx->facts->gpus[i];
        const struct pcie_device *d = v->pcie;
        struct finding *f = NULL;

        for (size_t k = 0; d && k < d->n_peers; k++) {
            const struct pcie_peer *p = &d->peers[k];

            if (p->kind != PCIE_PEER_NETWORK)
                continue;
            if (f == NULL) {
                f = finding_new(ctx, out, (int32_t)v->g->index, -1);
                finding_title(f, "GPU %" PRIu32 " shares its PCIe switch with a network card (%s)",
                              v->g->index, p->address ? p->address : "?");
                finding_evidence(f, "GPU %s behind switch %s", d->address ? d->address : "?",
                                 d->switch_address ? d->switch_address : "?");
            }
            finding_evidence(f,
                             "network device %s (vendor %04" PRIx32 ", device %04" PRIx32
                             ", driver %s) under the same switch",
                             p->address ? p->address : "?", p->vendor_id, p->device_id,
                             p->driver ? p->driver : "none");
        }
        if (f == NULL)
            continue;
        finding_evidence(f, "good for GPUDirect RDMA between them; bad when the NIC carries "
                            "unrelated heavy traffic");
        finding_fix(f, "nvidia-smi topo -m   # how GPUs and NICs connect");
        finding_fix(f, "# when the NIC's traffic is unrelated to this GPU (storage, other jobs), "
                       "move one of them to another switch or slot");
        f->impact = 0.05;
    }
}

const struct rule rule_pcie_shared_switch = {
    .id = "pcie.shared-switch",
    .severity = SEV_INFO,
    .category = CAT_PCIE,
    .title = N_("GPU shares a PCIe switch with a network card"),
    .explanation = N_(
        "The GPU and a network card sit under the same PCIe switch, so they share its uplink to "
        "the CPU. For GPUDirect RDMA this is the intended layout (traffic goes card to card "
        "through the switch). When the NIC carries heavy unrelated traffic (storage, other jobs) "
        "it competes with the GPU's host transfers and both slow down. Reported as information, "
        "to explain uneven transfer speeds between GPUs."),
    .detection = N_("sysfs: another device of network class under the GPU's nearest upstream "
                    "switch."),
    .fix =
        N_("Look at the topology with nvidia-smi topo -m. If the NIC's traffic has nothing to do "
           "with the GPU, move one of them to a slot under another switch."),
    .thresholds = NO_THRESHOLDS,
    .check = check_shared_switch,
};
