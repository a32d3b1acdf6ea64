/*
 * The fix line that resets a GPU, with what NVIDIA's nvidia-smi manual asks of a reset: no
 * process may use the GPU; before Ampere, a GPU with NVLink peers is reset together with them,
 * and so is any GPU of an NVSwitch system whose Fabric Manager is not running; and a daemon that
 * keeps the device open (nvidia-persistenced, DCGM) makes the reset fail with "In use by another
 * client". Every rule that advises a reset prints it through here, so they all say the same.
 */
#include "rules/rule-impl.h"

#include <inttypes.h>

/* Whether the GPU has an active NVLink: 1 yes, 0 no, -1 unknown. */
static int nvlink_up(const struct gpu *g)
{
    bool unknown = false;

    if (!gpu_valid(g, GPU_S_NVLINK))
        return -1;
    for (size_t i = 0; i < g->n_nvlinks; i++) {
        if (!gpu_nvlink_valid(&g->nvlinks[i], NVL_S_ACTIVE))
            unknown = true;
        else if (g->nvlinks[i].active)
            return 1;
    }
    return unknown ? -1 : 0;
}

/* Why GPU g cannot be reset on its own (N_() text), or NULL when nothing known says so. */
static const char *not_alone(const struct rule_ctx *ctx, const struct gpu *g)
{
    const struct fabric_info *fb = &ctx->facts->snap->fabric;

    if (nvlink_up(g) != 1)
        return NULL;
    if (gpu_valid(g, GPU_S_CC_MAJOR) && g->cc_major < 8)
        return N_("before Ampere, a GPU is reset together with its NVLink peers");
    if (fabric_valid(fb, FABRIC_S_SWITCHES) && fb->n_switches > 0 &&
        fabric_valid(fb, FABRIC_S_PROCESS) && !fb->fm_running)
        return N_("on an NVSwitch system whose Fabric Manager is not running, a GPU is reset "
                  "together with its NVLink peers");
    return NULL;
}

void fix_gpu_reset(const struct rule_ctx *ctx, struct finding *f, const struct gpu *g,
                   const char *why)
{
    const char *alone = not_alone(ctx, g);

    if (alone != NULL) {
        finding_fix_take(f, TWICE("# GPU %" PRIu32 " cannot be reset alone (%s): drain every GPU "
                                  "of the node, then reset them all at once",
                                  (g->index, alone), (g->index, _(alone))));
        finding_fix(f, "sudo nvidia-smi -r   # every GPU; no process may use any of them");
    } else if (why != NULL) {
        finding_fix_take(f, TWICE("sudo nvidia-smi -r -i %" PRIu32 "   # %s", (g->index, why),
                                  (g->index, _(why))));
    } else {
        finding_fix(f, "sudo nvidia-smi -r -i %" PRIu32, g->index);
    }
    finding_fix(f, "# refused with 'In use by another client'? stop what keeps it open "
                   "(nvidia-persistenced, DCGM: nv-hostengine, dcgm-exporter), reset, then start "
                   "them again");
}
