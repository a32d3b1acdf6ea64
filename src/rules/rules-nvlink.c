/*
 * NVLink and the GPU's NVLink fabric (category fabric): links down, link errors growing over the
 * window, and a GPU that has not finished registering with the fabric. Evidence from NVML
 * (collect/nvml-nvlink.c): the per-GPU "nvlink" list and "fabric" object of the snapshot, and
 * the links' states and counters in the samples of the window.
 */
#include "nvml/nvml-abi.h"
#include "rules/rule-impl.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The GPU's link list, or NULL after recording why it cannot be judged (NOT_SUPPORTED: a GPU
 * without NVLink, nothing to judge and nothing to say). */
static bool links_known(const struct rule_ctx *ctx, struct findings *out, const struct gpu *g)
{
    if (g->handle_rc != 0)
        return false;
    if (gpu_valid(g, GPU_S_NVLINK))
        return true;
    if (g->rc[GPU_S_NVLINK] == NVML_ERROR_NOT_SUPPORTED)
        return false;
    return need_gpu(ctx, out, g, GPU_S_NVLINK);
}

/* The GPU with index idx in a sample, or NULL (also when NVML lost it in that reading). */
static const struct gpu *reachable_gpu(const struct sample *smp, uint32_t idx)
{
    const struct gpu *g = sample_gpu(smp, SIZE_MAX, idx);

    return g != NULL && g->handle_rc == 0 ? g : NULL;
}

static bool links_to_switch(const struct gpu *g)
{
    for (size_t i = 0; i < g->n_nvlinks; i++) {
        const struct gpu_nvlink *l = &g->nvlinks[i];

        if (gpu_nvlink_valid(l, NVL_S_REMOTE_TYPE) && l->remote_type == NVL_REMOTE_SWITCH)
            return true;
    }
    return false;
}

/* "4, 11" (the inactive links of g), cut to fit. */
static void inactive_list(char *buf, size_t size, const struct gpu *g)
{
    size_t n = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < g->n_nvlinks && n + 12 < size; i++) {
        const struct gpu_nvlink *l = &g->nvlinks[i];

        if (gpu_nvlink_valid(l, NVL_S_ACTIVE) && !l->active)
            n += (size_t)snprintf(buf + n, size - n, "%s%" PRIu32, n ? ", " : "", l->link);
    }
}

/* ---- nvlink.down ---- */

/*
 * The most active links any GPU of g's model has, among GPUs whose links reach an NVSwitch: the
 * count the device itself shows is possible. Bridged PCIe cards (links to GPUs) are not compared:
 * a card with no or a partial bridge is built that way. 0 when there is no such peer.
 */
static size_t peer_best(const struct rule_ctx *ctx, const struct gpu *g, uint32_t *peer,
                        bool *untyped)
{
    size_t best = 0, mine = gpu_nvlinks_active(g, NULL);

    *untyped = false;
    for (size_t i = 0; i < ctx->facts->n_gpus; i++) {
        const struct gpu *o = ctx->facts->gpus[i].g;
        size_t n;
        bool typed = false;

        if (o == g || o->handle_rc != 0 || !gpu_valid(o, GPU_S_NVLINK) ||
            !gpu_valid(o, GPU_S_NAME) || !gpu_valid(g, GPU_S_NAME) || o->name == NULL ||
            g->name == NULL || strcmp(o->name, g->name) != 0)
            continue;
        n = gpu_nvlinks_active(o, NULL);
        for (size_t k = 0; k < o->n_nvlinks; k++)
            typed |= gpu_nvlink_valid(&o->nvlinks[k], NVL_S_REMOTE_TYPE);
        if (!typed && n > mine)
            *untyped = true; /* more links, but where they go is unknown */
        if (!links_to_switch(o))
            continue;
        if (n > best) {
            best = n;
            *peer = o->index;
        }
    }
    return best;
}

/*
 * Links inactive at the end of the window (the last sample that has the link) that were active
 * before it (the snapshot's reading, or an earlier sample), as "4, 11"; how many.
 */
static size_t went_down(const struct rule_ctx *ctx, const struct gpu *g, char *buf, size_t size)
{
    const struct history *h = ctx->facts->hist;
    size_t n = 0, len = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < g->n_nvlinks; i++) {
        const struct gpu_nvlink *l = &g->nvlinks[i];
        bool known = gpu_nvlink_valid(l, NVL_S_ACTIVE), now = known && l->active;
        bool was_up = false;

        for (size_t k = 0; h != NULL && k < h->n; k++) {
            const struct gpu *sg = reachable_gpu(&h->samples[k], g->index);
            const struct gpu_nvlink *sl = sg ? gpu_nvlink_find(sg, l->link) : NULL;

            if (sl == NULL || !gpu_nvlink_valid(sl, NVL_S_ACTIVE))
                continue;
            was_up |= known && now;
            known = true;
            now = sl->active;
        }
        if (!known || now || !was_up)
            continue;
        n++;
        if (len + 12 < size)
            len += (size_t)snprintf(buf + len, size - len, "%s%" PRIu32, len ? ", " : "", l->link);
    }
    return n;
}

static void check_down(const struct rule_ctx *ctx, struct findings *out)
{
    for (size_t i = 0; i < ctx->facts->n_gpus; i++) {
        const struct gpu *g = ctx->facts->gpus[i].g;
        size_t active, best, lost;
        uint32_t peer = 0;
        bool untyped;
        char down[160], dropped[160];
        struct finding *f;

        if (!links_known(ctx, out, g) || g->n_nvlinks == 0)
            continue;
        active = gpu_nvlinks_active(g, NULL);
        best = peer_best(ctx, g, &peer, &untyped);
        lost = went_down(ctx, g, dropped, sizeof(dropped));
        if (best <= active && untyped)
            rule_skip(ctx, out, (int32_t)g->index,
                      "a GPU of the same model has more active NVLinks, but where its links go "
                      "(nvmlDeviceGetNvLinkRemoteDeviceType) is unknown");
        if (best <= active && lost == 0)
            continue;
        inactive_list(down, sizeof(down), g);
        f = finding_new(ctx, out, (int32_t)g->index, -1);
        finding_object(f, "GPU %" PRIu32 " NVLink", g->index);
        if (lost > 0)
            finding_title(f, "GPU %" PRIu32 " NVLink went down while watched: link%s %s", g->index,
                          lost == 1 ? "" : "s", dropped);
        else
            finding_title(f,
                          "GPU %" PRIu32 " has %zu of %zu NVLinks active; GPU %" PRIu32
                          " of the same model has %zu",
                          g->index, active, g->n_nvlinks, peer, best);
        finding_evidence(
            f, "at the first reading, %zu of the %zu links NVML reports were active; inactive: %s",
            active, g->n_nvlinks, down[0] ? down : "none");
        if (lost > 0)
            finding_evidence(f, "active earlier in the window, inactive at the end: %s", dropped);
        if (best > active)
            finding_evidence(f, "GPU %" PRIu32 " (%s) has %zu active links to NVSwitches", peer,
                             g->name ? g->name : "same model", best);
        if (active == 0)
            f->severity = SEV_CRITICAL;
        finding_fix(f, "nvidia-smi nvlink --status -i %" PRIu32 "   # the state of each link",
                    g->index);
        finding_fix(f, "nvidia-smi nvlink --errorcounters -i %" PRIu32, g->index);
        finding_fix(f, "# a link that stays down needs a GPU reset or a reboot; if it is still "
                       "down after that, the GPU or the baseboard needs service (the kernel log "
                       "often has an Xid 74 for it)");
        f->impact = best > 0 ? (double)(best - active) / (double)best : 0.5;
    }
}

const struct rule rule_nvlink_down = {
    .id = "nvlink.down",
    .severity = SEV_WARNING,
    .category = CAT_FABRIC,
    .title = N_("NVLink link down"),
    .explanation = N_(
        "An NVLink of the GPU is inactive where it should carry traffic: it was up earlier in the "
        "window and went down, or the GPU has fewer active links than another GPU of the same "
        "model whose links reach NVSwitches. Peer-to-peer copies and NCCL collectives then run "
        "over fewer links or fall back to PCIe, and on an NVSwitch system a GPU with links down "
        "may be left out of the fabric. A link fails from a bad connector or cable (bridge, "
        "backplane), a failing GPU or NVSwitch, or a training error after a reset. Expectations "
        "come only from what the devices report: a PCIe card with no NVLink bridge, or a partial "
        "one, has inactive links by design and is not reported."),
    .detection =
        N_("nvmlDeviceGetNvLinkState of every link the GPU reports: a link active in a "
           "sample of the window and inactive at the end; or fewer active links than the "
           "GPU of the same name (nvmlDeviceGetName) with the most, among GPUs with links "
           "to an NVSwitch (nvmlDeviceGetNvLinkRemoteDeviceType). No active link at all is "
           "critical."),
    .fix = N_("Look at nvidia-smi nvlink --status and --errorcounters, reset the GPU or reboot; a "
              "link that stays down needs service of the GPU or baseboard."),
    .thresholds = NO_THRESHOLDS,
    .check = check_down,
};

/* ---- nvlink.errors ---- */

enum { C_CRC, C_REPLAY, C_RECOVERY, C__COUNT };

static const enum gpu_nvlink_slot counter_slot[C__COUNT] = { NVL_S_CRC, NVL_S_REPLAY,
                                                             NVL_S_RECOVERY };

static uint64_t counter(const struct gpu_nvlink *l, int c)
{
    return c == C_CRC ? l->crc_errors : c == C_REPLAY ? l->replay_errors : l->recovery_errors;
}

/*
 * Growth of counter c of link l over the window: the first sample that has it against the end
 * (the last sample that has it, else the snapshot). False when it was not read twice.
 */
static bool growth(const struct rule_ctx *ctx, const struct gpu *g, const struct gpu_nvlink *l,
                   int c, uint64_t *delta)
{
    const struct history *h = ctx->facts->hist;
    bool have_first = false, have_last = false;
    uint64_t first = 0, last = 0;

    for (size_t k = 0; h != NULL && k < h->n; k++) {
        const struct gpu *sg = reachable_gpu(&h->samples[k], g->index);
        const struct gpu_nvlink *sl = sg ? gpu_nvlink_find(sg, l->link) : NULL;

        if (sl == NULL || !gpu_nvlink_valid(sl, counter_slot[c]))
            continue;
        if (!have_first)
            first = counter(sl, c);
        have_first = true;
        have_last = true;
        last = counter(sl, c);
    }
    if (!have_first)
        return false;
    if (!have_last && gpu_nvlink_valid(l, counter_slot[c]))
        last = counter(l, c);
    /* a counter that went backwards was reset (driver reload): count from the reset */
    *delta = last >= first ? last - first : last;
    return true;
}

static void check_errors(const struct rule_ctx *ctx, struct findings *out)
{
    const struct snapshot *s = ctx->facts->snap;
    double secs = (double)s->window_ms / 1000.0;
    bool skipped_window = false;

    for (size_t i = 0; i < ctx->facts->n_gpus; i++) {
        const struct gpu *g = ctx->facts->gpus[i].g;
        uint64_t sum[C__COUNT] = { 0 };
        bool any_read = false, unread = false;
        char worst[200] = "";
        uint64_t worst_n = 0;
        bool crc_bad, replay_bad;
        struct finding *f;

        if (!links_known(ctx, out, g) || g->n_nvlinks == 0)
            continue;
        if (s->window_ms <= 0) {
            if (!skipped_window)
                rule_skip(ctx, out, -1, "needs a sampling window (--window)");
            skipped_window = true;
            continue;
        }
        for (size_t k = 0; k < g->n_nvlinks; k++) {
            const struct gpu_nvlink *l = &g->nvlinks[k];
            uint64_t link_sum = 0;

            for (int c = 0; c < C__COUNT; c++) {
                uint64_t d = 0;

                if (!growth(ctx, g, l, c, &d)) {
                    unread = true;
                    continue;
                }
                any_read = true;
                sum[c] += d;
                link_sum += d;
            }
            if (link_sum > worst_n) {
                worst_n = link_sum;
                snprintf(worst, sizeof(worst), "link %" PRIu32 ": +%" PRIu64 " errors", l->link,
                         link_sum);
            }
        }
        if (!any_read) {
            const struct gpu_nvlink *l0 = &g->nvlinks[0];

            rule_skip(ctx, out, (int32_t)g->index,
                      "NVLink error counters not read over the window (link %" PRIu32
                      " crc_errors %s)",
                      l0->link,
                      l0->rc[NVL_S_CRC] == 0            ? "read once"
                      : l0->rc[NVL_S_CRC] < 0           ? "NOT_COLLECTED"
                      : nvml_rc_name(l0->rc[NVL_S_CRC]) ? nvml_rc_name(l0->rc[NVL_S_CRC])
                                                        : "error");
            continue;
        }
        crc_bad =
            sum[C_CRC] > 0 && (double)sum[C_CRC] / secs >= th(ctx, TH_NVLINK_CRC_ERRORS_PER_S);
        replay_bad = sum[C_REPLAY] + sum[C_RECOVERY] > 0 &&
                     (double)(sum[C_REPLAY] + sum[C_RECOVERY]) / (secs / 60.0) >=
                         th(ctx, TH_NVLINK_REPLAY_ERRORS_PER_MIN);
        if (!crc_bad && !replay_bad)
            continue;
        f = finding_new(ctx, out, (int32_t)g->index, -1);
        finding_object(f, "GPU %" PRIu32 " NVLink", g->index);
        if (replay_bad)
            finding_title(f,
                          "GPU %" PRIu32 " NVLink errors growing: replays +%" PRIu64
                          ", recoveries +%" PRIu64 " in %.0f s",
                          g->index, sum[C_REPLAY], sum[C_RECOVERY], secs);
        else
            finding_title(f, "GPU %" PRIu32 " NVLink CRC errors growing: %.0f a second", g->index,
                          (double)sum[C_CRC] / secs);
        finding_evidence(f,
                         "in the %.1f s window, over %zu links: CRC +%" PRIu64 ", replay +%" PRIu64
                         ", recovery +%" PRIu64,
                         secs, g->n_nvlinks, sum[C_CRC], sum[C_REPLAY], sum[C_RECOVERY]);
        if (worst[0])
            finding_evidence(f, "most on %s", worst);
        if (unread)
            finding_evidence(f, "some counters could not be read twice and are not counted");
        if (sum[C_RECOVERY] > 0)
            f->severity = SEV_CRITICAL;
        finding_fix(f, "nvidia-smi nvlink --errorcounters -i %" PRIu32, g->index);
        finding_fix(f, "# watch whether they keep growing under load; a link that keeps "
                       "replaying or recovering needs the GPU, its NVLink bridge or the "
                       "baseboard serviced");
        f->impact = sum[C_RECOVERY] > 0 ? 0.5 : 0.2;
    }
}

const struct rule rule_nvlink_errors = {
    .id = "nvlink.errors",
    .severity = SEV_WARNING,
    .category = CAT_FABRIC,
    .title = N_("NVLink errors growing"),
    .explanation = N_(
        "The NVLink data-link error counters of the GPU grow while gpudoctor watches: CRC errors "
        "(flits that arrived damaged), replays (flits sent again because of them) and recoveries "
        "(the link retrained). Replays and recoveries cost bandwidth and latency in every "
        "peer-to-peer copy and collective; a link that keeps recovering is about to fail "
        "(critical). NVIDIA's DCGM fails a GPU on any replay or recovery error and on 100 CRC "
        "errors a second; counts since the driver loaded say little, so only growth over the "
        "window is judged, as a rate."),
    .detection =
        N_("nvmlDeviceGetFieldValues with NVML_FI_DEV_NVLINK_ERROR_DL_CRC, _REPLAY and "
           "_RECOVERY (scopeId = link), summed over the GPU's links: CRC errors growing at "
           "nvlink_crc_errors_per_s or faster, or replays plus recoveries at "
           "nvlink_replay_errors_per_min or faster (by default any). Needs a window; GPUs "
           "whose driver does not give these counters (Blackwell and later, the header "
           "says) are reported as not checked."),
    .fix = N_("Look at nvidia-smi nvlink --errorcounters; reseat the NVLink bridge (PCIe cards) or "
              "have the GPU or baseboard serviced when the errors keep growing."),
    .thresholds = THRESHOLDS(TH_NVLINK_CRC_ERRORS_PER_S, TH_NVLINK_REPLAY_ERRORS_PER_MIN),
    .check = check_errors,
};

/* ---- fabric.gpu-not-ready ---- */

static void check_fabric(const struct rule_ctx *ctx, struct findings *out)
{
    for (size_t i = 0; i < ctx->facts->n_gpus; i++) {
        const struct gpu *g = ctx->facts->gpus[i].g;
        const struct gpu_fabric *fb = &g->fabric;
        bool done, ok;
        const char *status;
        struct finding *f;

        if (g->handle_rc != 0)
            continue;
        if (!gpu_valid(g, GPU_S_FABRIC)) {
            /* NOT_SUPPORTED: "If device doesn't support gpu fabric" */
            if (g->rc[GPU_S_FABRIC] != NVML_ERROR_NOT_SUPPORTED)
                need_gpu(ctx, out, g, GPU_S_FABRIC);
            continue;
        }
        if (!(fb->valid & (UINT64_C(1) << FAB_S_INFO))) {
            rule_skip(ctx, out, (int32_t)g->index, "fabric state not recorded");
            continue;
        }
        if (fb->state == GPU_FABRIC_NOT_SUPPORTED)
            continue;
        done = fb->state == GPU_FABRIC_COMPLETED;
        ok = fb->status == NVML_SUCCESS;
        if (done && ok)
            continue;
        status = nvml_rc_name(fb->status);
        f = finding_new(ctx, out, (int32_t)g->index, -1);
        finding_object(f, "GPU %" PRIu32 " fabric", g->index);
        if (!done) {
            const char *why = fb->state == GPU_FABRIC_NOT_STARTED   ? N_("registration not started")
                              : fb->state == GPU_FABRIC_IN_PROGRESS ? N_("registration in progress")
                                                                    : N_("unknown state");

            finding_title_take(f, TWICE("GPU %" PRIu32
                                        " is not registered with the NVLink fabric (%s)",
                                        (g->index, why), (g->index, _(why))));
        } else
            finding_title(f, "GPU %" PRIu32 " failed to register with the NVLink fabric: %s",
                          g->index, status ? status : "error");
        {
            const char *st =
                gpu_fabric_state_names[fb->state >= 0 && fb->state <= GPU_FABRIC_UNKNOWN
                                           ? fb->state
                                           : GPU_FABRIC_UNKNOWN];
            /* NVML's state and status names stay as NVML spells them; the phrase is translated. */
            const char *res = done ? (status ? status : "?") : N_("not yet meaningful");

            finding_evidence_take(f,
                                  TWICE("fabric state %s, status %s (%" PRId32 "), clique %" PRIu32,
                                        (st, res, fb->status, fb->clique_id),
                                        (st, done ? res : _(res), fb->status, fb->clique_id)));
        }
        if (fb->cluster_uuid)
            finding_evidence(f, "cluster %s", fb->cluster_uuid);
        finding_evidence(f, "until it is registered, CUDA on this GPU fails with \"system not "
                            "yet initialized\" (cudaErrorSystemNotReady)");
        if (fb->state == GPU_FABRIC_IN_PROGRESS)
            f->severity = SEV_WARNING;
        finding_fix(f, "systemctl status nvidia-fabricmanager   # Fabric Manager must run on "
                       "NVSwitch systems (HGX, DGX)");
        finding_fix(f, "journalctl -u nvidia-fabricmanager --since today   # why it did not "
                       "register the GPU");
        finding_fix(f, "sudo systemctl restart nvidia-fabricmanager");
        finding_fix(f, "# its version must equal the driver's exactly (nvidia-smi shows the "
                       "driver's, nv-fabricmanager --version its own)");
        f->impact = 1.0;
    }
}

const struct rule rule_fabric_gpu_not_ready = {
    .id = "fabric.gpu-not-ready",
    .severity = SEV_CRITICAL,
    .category = CAT_FABRIC,
    .title = N_("GPU not registered with the NVLink fabric"),
    .explanation = N_(
        "On NVSwitch systems (HGX and DGX with Hopper or newer GPUs) each GPU is registered with "
        "the NVLink fabric by NVIDIA Fabric Manager before it can be used. A GPU whose "
        "registration has not started, is still in progress, or ended with an error cannot run "
        "CUDA work: every program fails with \"system not yet initialized\". The usual causes "
        "are Fabric Manager not running, a Fabric Manager whose version differs from the "
        "driver's, or NVSwitch or NVLink faults. A registration in progress right after boot is "
        "normal for a minute (reported as a warning)."),
    .detection = N_("nvmlDeviceGetGpuFabricInfoV (v3, v2; the unversioned call as fallback) on a "
                    "GPU that reports fabric support: state not COMPLETED, or status not SUCCESS "
                    "once completed. GPUs that answer NOT_SUPPORTED have no fabric to join."),
    .fix =
        N_("Start or restart nvidia-fabricmanager (its version must match the driver's) and read "
           "its log; then check that the state is completed."),
    .thresholds = NO_THRESHOLDS,
    .check = check_fabric,
};
