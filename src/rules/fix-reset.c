/*
 * The fix line that resets a GPU, with what NVIDIA's nvidia-smi manual asks of a reset: no
 * process may use the GPU; before Ampere, a GPU with NVLink peers is reset together with them,
 * and so is any GPU of an NVSwitch system whose Fabric Manager is not running; and a daemon that
 * keeps the device open (nvidia-persistenced, DCGM) makes the reset fail with "In use by another
 * client". Every rule that advises a reset prints it through here, so they all say the same.
 */
#include "nvml/nvml-abi.h"
#include "rules/rule-impl.h"

#include <inttypes.h>

/* A fact the reset depends on: known true, known false, or not in the evidence. */
enum known { K_NO, K_YES, K_UNKNOWN };

/* Whether g has an active NVLink. */
static enum known nvlink_up(const struct gpu *g)
{
    size_t unread, up;

    if (!gpu_valid(g, GPU_S_NVLINK))
        return g->rc[GPU_S_NVLINK] == NVML_ERROR_NOT_SUPPORTED ? K_NO : K_UNKNOWN;
    up = gpu_nvlinks_active(g, &unread);
    return up > 0 ? K_YES : unread > 0 ? K_UNKNOWN : K_NO;
}

/* Whether g is older than Ampere: its compute capability, else NVML's architecture. */
static enum known before_ampere(const struct gpu *g)
{
    if (gpu_valid(g, GPU_S_CC_MAJOR))
        return g->cc_major < 8 ? K_YES : K_NO;
    if (gpu_valid(g, GPU_S_ARCH) && g->architecture != GPU_ARCH_UNKNOWN)
        return g->architecture < GPU_ARCH_AMPERE ? K_YES : K_NO;
    return K_UNKNOWN;
}

/* Whether this is an NVSwitch system whose Fabric Manager is not running. */
static enum known fm_down(const struct fabric_info *fb)
{
    if (!fabric_valid(fb, FABRIC_S_SWITCHES))
        return K_UNKNOWN;
    if (fb->n_switches == 0)
        return K_NO;
    if (!fabric_valid(fb, FABRIC_S_PROCESS))
        return K_UNKNOWN;
    return fb->fm_running ? K_NO : K_YES;
}

/*
 * Whether GPU g can be reset on its own. NVIDIA's manual: a GPU with NVLink connections is reset
 * together with its peers when it is older than Ampere, or when Fabric Manager is not running
 * (on an NVSwitch system; elsewhere Fabric Manager has no part). K_YES: alone; K_NO: with its
 * peers, and *why (N_() text) says why; K_UNKNOWN: the evidence lacks what decides it.
 */
static enum known alone(const struct rule_ctx *ctx, const struct gpu *g, const char **why)
{
    enum known up = nvlink_up(g), old = before_ampere(g), fm = fm_down(&ctx->facts->snap->fabric);

    *why = NULL;
    if (up == K_NO || (old == K_NO && fm == K_NO))
        return K_YES;
    if (up == K_YES && old == K_YES)
        *why = N_("before Ampere, a GPU is reset together with its NVLink peers");
    else if (up == K_YES && fm == K_YES)
        *why = N_("on an NVSwitch system whose Fabric Manager is not running, a GPU is reset "
                  "together with its NVLink peers");
    return *why != NULL ? K_NO : K_UNKNOWN;
}

/* What decides a reset that the evidence lacks (an import without NVLink or fabric state). */
static void unknown_line(const struct rule_ctx *ctx, struct finding *f, const struct gpu *g)
{
    const char *parts[3];
    struct text2 list = { 0 };
    size_t n = 0;

    if (nvlink_up(g) == K_UNKNOWN)
        parts[n++] = N_("its NVLinks");
    if (before_ampere(g) == K_UNKNOWN)
        parts[n++] = N_("its architecture");
    if (fm_down(&ctx->facts->snap->fabric) == K_UNKNOWN)
        parts[n++] = N_("NVSwitches and Fabric Manager");
    for (size_t i = 0; i < n; i++)
        text2_add_take(&list, xasprintf("%s%s", i ? ", " : "", parts[i]),
                       i18n_active() ? xasprintf("%s%s", i ? ", " : "", _(parts[i])) : NULL);
    finding_fix_take(f, TWICE("# can GPU %" PRIu32 " be reset alone? not known here (%s): one with "
                              "an active NVLink (nvidia-smi nvlink -s -i %" PRIu32 ") is reset "
                              "with its peers when it is older than Ampere, or when Fabric Manager "
                              "does not run on an NVSwitch system; then drain every GPU and use "
                              "sudo nvidia-smi -r",
                              (g->index, list.en ? list.en : "", g->index),
                              (g->index, list.l ? list.l : (list.en ? list.en : ""), g->index)));
    text2_free(&list);
}

/*
 * Why no reset can work now, or NULL: nvidia-smi -r is an NVML call, so it hangs where NVML hangs,
 * and a GPU off the bus is brought back by a reboot, rarely by a reset (NVIDIA's action for Xid
 * 79). g NULL: the GPU at PCI address pci, which NVML does not name.
 */
static const char *reset_blocked(const struct rule_ctx *ctx, const struct gpu *g, const char *pci)
{
    if (nvml_wedged(ctx))
        return N_("NVML does not answer, and nvidia-smi -r would hang like every query");
    if (gpu_lost_now(ctx, g, pci))
        return N_("the GPU is lost from the bus, and a reset rarely brings it back");
    return NULL;
}

bool fix_reset_blocked(const struct rule_ctx *ctx, struct finding *f, const struct gpu *g,
                       const char *pci)
{
    const char *why = reset_blocked(ctx, g, pci);

    if (why == NULL)
        return false;
    finding_fix_take(f, TWICE("# no reset now (%s): drain the node, then sudo reboot (a cold power "
                              "cycle if the GPU is still missing after it)",
                              (why), (_(why))));
    return true;
}

void fix_gpu_reset(const struct rule_ctx *ctx, struct finding *f, const struct gpu *g,
                   const char *why)
{
    const char *peers;
    enum known a = alone(ctx, g, &peers);

    if (fix_reset_blocked(ctx, f, g, NULL))
        return;
    if (a == K_NO) {
        finding_fix_take(f, TWICE("# GPU %" PRIu32 " cannot be reset alone (%s): drain every GPU "
                                  "of the node, then reset them all at once",
                                  (g->index, peers), (g->index, _(peers))));
        finding_fix(f, "sudo nvidia-smi -r   # every GPU; no process may use any of them");
    } else {
        if (a == K_UNKNOWN)
            unknown_line(ctx, f, g);
        if (why != NULL)
            finding_fix_take(f, TWICE("sudo nvidia-smi -r -i %" PRIu32 "   # %s", (g->index, why),
                                      (g->index, _(why))));
        else
            finding_fix(f, "sudo nvidia-smi -r -i %" PRIu32, g->index);
    }
    finding_fix(f, "# refused with 'In use by another client'? stop what keeps it open "
                   "(nvidia-persistenced, DCGM: nv-hostengine, dcgm-exporter), reset, then start "
                   "them again");
}
