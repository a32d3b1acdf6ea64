/*
 * Peer-to-peer between GPUs (category pcie): which pairs of GPUs cannot read each other's memory
 * directly, and why, from the GPUs' peer lists (gpus[].peers: nvmlDeviceGetP2PStatus and
 * nvmlDeviceGetTopologyCommonAncestor, collect/nvml-query.c). Without P2P, CUDA and NCCL copy
 * between GPUs through host memory: multi-GPU jobs still run, more slowly.
 */
#include "nvml/nvml-abi.h"
#include "rules/rule-impl.h"
#include "util/xalloc.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One pair of GPUs, as the lower-numbered one reads it (else the other). */
struct pair {
    uint32_t a, b;
    int32_t p2p;      /* enum gpu_p2p */
    int32_t topology; /* enum gpu_topology, GPU_TOPO_UNKNOWN when not read */
};

static const struct gpu_peer *view(const struct gpu *g, uint32_t other)
{
    const struct gpu_peer *p = gpu_peer_of(g, other);

    return p && gpu_peer_valid(p, PEER_S_P2P_READ) ? p : NULL;
}

/* Every pair of usable GPUs whose P2P read status is known. */
static size_t known_pairs(const struct snapshot *s, struct pair *out)
{
    size_t n = 0;

    for (size_t i = 0; i < s->n_gpus; i++) {
        for (size_t j = i + 1; j < s->n_gpus; j++) {
            const struct gpu *a = &s->gpus[i], *b = &s->gpus[j];
            const struct gpu_peer *p;

            if (a->handle_rc != 0 || b->handle_rc != 0)
                continue;
            p = view(a, b->index);
            if (p == NULL)
                p = view(b, a->index);
            if (p == NULL)
                continue;
            out[n].a = a->index;
            out[n].b = b->index;
            out[n].p2p =
                p->p2p_read >= 0 && p->p2p_read <= GPU_P2P_UNKNOWN ? p->p2p_read : GPU_P2P_UNKNOWN;
            out[n].topology = gpu_peer_valid(p, PEER_S_TOPOLOGY) && p->topology >= 0 &&
                                      p->topology <= GPU_TOPO_UNKNOWN
                                  ? p->topology
                                  : GPU_TOPO_UNKNOWN;
            n++;
        }
    }
    return n;
}

/* Pairs without P2P the hardware path could carry: some pair as close as this one has it. */
static bool blocked(const struct pair *pairs, size_t n, const struct pair *x)
{
    if (x->p2p == GPU_P2P_OK || x->p2p == GPU_P2P_DISABLED_BY_REGKEY ||
        x->p2p == GPU_P2P_GPU_NOT_SUPPORTED || x->topology > GPU_TOPO_NODE)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (pairs[i].p2p == GPU_P2P_OK && pairs[i].topology == x->topology)
            return true;
    }
    return false;
}

/* "GPU 0 - GPU 1 (topology_not_supported, PHB)" for up to eight pairs of one kind. */
static void list_pairs(struct finding *f, const struct pair *pairs, size_t n,
                       bool (*pick)(const struct pair *all, size_t n, const struct pair *x))
{
    size_t shown = 0, more = 0;

    for (size_t i = 0; i < n; i++) {
        if (!pick(pairs, n, &pairs[i]))
            continue;
        if (shown == 8) {
            more++;
            continue;
        }
        finding_evidence(f, "GPU %" PRIu32 " and GPU %" PRIu32 ": P2P %s, connected through %s",
                         pairs[i].a, pairs[i].b, gpu_p2p_names[pairs[i].p2p],
                         gpu_topology_short[pairs[i].topology]);
        shown++;
    }
    if (more > 0)
        finding_evidence(f, "and %zu more pairs", more);
}

static bool by_regkey(const struct pair *all, size_t n, const struct pair *x)
{
    (void)all;
    (void)n;
    return x->p2p == GPU_P2P_DISABLED_BY_REGKEY;
}

static bool not_ok(const struct pair *all, size_t n, const struct pair *x)
{
    (void)all;
    (void)n;
    return x->p2p != GPU_P2P_OK;
}

static size_t count(const struct pair *pairs, size_t n,
                    bool (*pick)(const struct pair *all, size_t n, const struct pair *x))
{
    size_t k = 0;

    for (size_t i = 0; i < n; i++)
        k += pick(pairs, n, &pairs[i]);
    return k;
}

static void check_p2p(const struct rule_ctx *ctx, struct findings *out)
{
    const struct snapshot *s = ctx->facts->snap;
    size_t usable = 0, n, n_regkey, n_blocked, n_ok;
    struct pair *pairs;
    struct finding *f;

    for (size_t i = 0; i < s->n_gpus; i++)
        usable += s->gpus[i].handle_rc == 0;
    if (usable < 2)
        return;
    pairs = xcalloc(usable * usable, sizeof(*pairs));
    n = known_pairs(s, pairs);
    if (n == 0) {
        const struct gpu *g = &s->gpus[0];

        rule_skip_take(ctx, out, -1,
                       TWICE("peers %s: P2P between the GPUs is not known",
                             (gpu_status_name(g, GPU_S_PEERS)),
                             (_(gpu_status_name(g, GPU_S_PEERS)))));
        free(pairs);
        return;
    }
    n_regkey = count(pairs, n, by_regkey);
    n_blocked = count(pairs, n, blocked);
    n_ok = n - count(pairs, n, not_ok);

    if (n_regkey > 0) {
        f = finding_new(ctx, out, -1, -1);
        finding_object(f, "P2P");
        if (n_regkey == 1)
            finding_title(f, "P2P between two GPUs is disabled by a driver setting");
        else
            finding_title(f, "P2P between %zu GPU pairs is disabled by a driver setting", n_regkey);
        list_pairs(f, pairs, n, by_regkey);
        finding_evidence(f, "CUDA and NCCL copy between these GPUs through host memory instead");
        finding_fix(f, "grep -i RegistryDwords /proc/driver/nvidia/params   # the driver options "
                       "in effect");
        finding_fix(f, "grep -rn NVreg_RegistryDwords /etc/modprobe.d   # where they are set");
        finding_fix(f, "# remove the option that disables P2P, then reload the nvidia module or "
                       "reboot");
        f->impact = (double)n_regkey / (double)n;
    }
    if (n_blocked > 0) {
        f = finding_new(ctx, out, -1, -1);
        finding_object(f, "P2P");
        if (n_blocked == 1)
            finding_title(f,
                          "Two GPUs cannot use P2P though other GPUs connected the same way can");
        else
            finding_title(
                f, "%zu GPU pairs cannot use P2P though other GPUs connected the same way can",
                n_blocked);
        list_pairs(f, pairs, n, blocked);
        finding_evidence(f, "%zu of %zu pairs can use P2P", n_ok, n);
        finding_evidence(f, "a PCIe bridge with ACS redirecting peer requests, or an IOMMU that "
                            "translates them, is the usual cause");
        finding_fix(f, "nvidia-smi topo -p2p r   # which GPU pairs can read each other");
        finding_fix(f, "sudo lspci -vvv | grep -E '^[0-9a-f]|ACSCtl'   # ACS on the bridges "
                       "(SrcValid+ ReqRedir+ CmpltRedir+: peer traffic goes to the root complex)");
        finding_fix(f, "# on bare metal: turn ACS off for the PCIe switches between the GPUs "
                       "(BIOS), or run the IOMMU in passthrough (iommu=pt); in a VM the "
                       "hypervisor must allow P2P");
        f->impact = (double)n_blocked / (double)n;
    }
    if (n_ok == 0 && n_regkey == 0) {
        f = finding_new(ctx, out, -1, -1);
        finding_object(f, "P2P");
        f->severity = SEV_INFO;
        if (n == usable * (usable - 1) / 2) {
            finding_title(f, "No two GPUs of this machine can use P2P");
        } else {
            finding_title(
                f, "No GPU pair whose P2P status is known can use P2P (%zu of %zu pairs known)", n,
                usable * (usable - 1) / 2);
        }
        list_pairs(f, pairs, n, not_ok);
        finding_evidence(f, "multi-GPU jobs still run: CUDA and NCCL copy between GPUs through "
                            "host memory, more slowly");
        finding_fix(f, "nvidia-smi topo -m   # how the GPUs connect");
        finding_fix(f, "# gpu_not_supported: this GPU model does not do P2P; "
                       "topology_not_supported or chipset_not_supported: the platform's PCIe "
                       "path does not carry it");
    }
    free(pairs);
}

const struct rule rule_pcie_p2p_unavailable = {
    .id = "pcie.p2p-unavailable",
    .severity = SEV_WARNING,
    .category = CAT_PCIE,
    .title = N_("GPUs cannot use peer-to-peer"),
    .explanation =
        N_("Peer-to-peer (P2P) lets one GPU read and write another's memory directly, over NVLink "
           "or PCIe. Without it CUDA and NCCL copy between GPUs through host memory: multi-GPU "
           "training still runs, but its communication is slower and loads the CPU's memory. The "
           "driver reports, for every pair of GPUs, whether P2P works and why not. A driver "
           "option can disable it (warning). Pairs that cannot use it while other pairs connected "
           "the same way can point at a PCIe bridge whose ACS redirects peer requests to the root "
           "complex, or an IOMMU that translates them (warning). Where no pair can use it, the GPU "
           "model or the platform does not support it, which is information, not a fault."),
    .detection = N_("nvmlDeviceGetP2PStatus (NVML_P2P_CAPS_INDEX_READ) and "
                    "nvmlDeviceGetTopologyCommonAncestor between every two GPUs: "
                    "DISABLED_BY_REGKEY; or a status other than OK where another pair with the "
                    "same common ancestor (PIX, PXB, PHB or NODE) is OK; or no pair OK at all "
                    "(information)."),
    .fix = N_("Remove the driver option that disables P2P; turn ACS off on the PCIe switches "
              "between the GPUs or set the IOMMU to passthrough on bare metal; nvidia-smi topo "
              "-p2p r shows the result."),
    .thresholds = NO_THRESHOLDS,
    .check = check_p2p,
};
