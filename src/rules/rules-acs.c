/*
 * PCIe ACS (category pcie): a switch's downstream port above a GPU that redirects peer-to-peer
 * traffic up to the root complex (ACS P2P Request Redirect, Completion Redirect or Egress
 * Control): the port right above the GPU while other GPUs or network cards share that switch, and
 * in nested switches an upper switch's port that the traffic to GPUs under its other ports
 * crosses; and a network card's ports on its way up to the lowest switch it shares with a GPU,
 * which GPUDirect RDMA between them crosses. Evidence from the pcie collector: the ACS control
 * register of each port, read from its config space (root only), the switch's other devices and the
 * other GPUs' bridge chains (docs/pcie.md, docs/fabric.md).
 */
#include "collect/numa-parse.h"
#include "render/format.h"
#include "rules/rule-impl.h"
#include "util/xalloc.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ACS_REDIRECT (NUMA_ACS_RR | NUMA_ACS_CR | NUMA_ACS_EC)

/*
 * Whether a switch port's ACS sends peer traffic that enters it up to the root complex; a port
 * whose ACS could not be read counts in unread, one whose capability list was malformed in
 * broken (both: not known to redirect).
 */
static bool port_redirects(const struct pcie_bridge *port, size_t *unread, size_t *broken)
{
    if (!((port->valid >> PCIE_B_ACS) & 1u) || port->acs == PCIE_ACS_NEEDS_ROOT) {
        (*unread)++;
        return false;
    }
    if (port->acs == PCIE_ACS_MALFORMED) {
        (*broken)++;
        return false;
    }
    return ((port->valid >> PCIE_B_ACS_CTRL) & 1u) && (port->acs_ctrl & ACS_REDIRECT);
}

/* "RR CR EC" for the redirect bits of ctrl into buf. */
static void redirect_words(char *buf, size_t size, uint32_t ctrl)
{
    snprintf(buf, size, "%s%s%s", ctrl & NUMA_ACS_RR ? "RR " : "", ctrl & NUMA_ACS_CR ? "CR " : "",
             ctrl & NUMA_ACS_EC ? "EC " : "");
    if (*buf)
        buf[strlen(buf) - 1] = '\0';
}

/* The peers under the GPU's switch that peer-to-peer traffic is for: GPUs and network cards. */
static void count_peers(const struct pcie_device *d, size_t *gpus, size_t *nics)
{
    *gpus = *nics = 0;
    for (size_t k = 0; k < d->n_peers; k++) {
        *gpus += d->peers[k].kind == PCIE_PEER_GPU;
        *nics += d->peers[k].kind == PCIE_PEER_NETWORK;
    }
}

/* What every finding of a redirecting port ends with: the IOMMU's part, the fixes, the link. */
static void finish_finding(struct finding *f, const struct pcie_info *p,
                           const struct pcie_bridge *port)
{
    char *qport;

    if (p->valid & (UINT64_C(1) << PCIE_I_IOMMU) && p->iommu_present)
        finding_evidence(f, "an IOMMU is active: redirected peer traffic is also translated, "
                            "which can hang NCCL (a classic cause of NCCL_P2P_DISABLE=1)");
    qport = fix_pci_arg(f, port->address);
    if (qport != NULL)
        finding_fix(f,
                    "sudo setpci -s %s ECAP_ACS+0x6.w=0000   # ACS off on this port until "
                    "the next boot",
                    qport);
    finding_fix(f, "# to keep it off, disable ACS (\"PCIe ACS\", \"ACS Enable\") in the BIOS "
                   "or the switch's settings; but where GPUs are passed through to virtual "
                   "machines ACS is what isolates them: leave it on there");
    free(qport);
    f->impact = 0.4;
}

/* Whether bridge address addr is in d's chain above it, at or after index from. */
static bool in_chain(const struct pcie_device *d, const char *addr, size_t from)
{
    for (size_t k = from; pcie_device_valid(d, PCIE_S_UPSTREAM) && k < d->n_upstream; k++) {
        if (d->upstream[k].address != NULL && strcmp(d->upstream[k].address, addr) == 0)
            return true;
    }
    return false;
}

/* The NVML indexes of the GPUs whose chain has bridge addr (below it), into idx; returns how many.
 */
static size_t gpus_below(const struct rule_ctx *ctx, const char *addr, int32_t *idx, size_t max)
{
    const struct pcie_info *p = &ctx->facts->snap->pcie;
    size_t n = 0;

    for (size_t i = 0; i < p->n_gpus && n < max; i++) {
        const struct facts_gpu *v = klog_gpu(ctx, p->gpus[i].address);

        if (in_chain(&p->gpus[i], addr, 0))
            idx[n++] = v ? (int32_t)v->g->index : -1;
    }
    return n;
}

/* Whether bridge address addr is in the card's chain above it. */
static bool nic_in_chain(const struct pcie_nic *nic, const char *addr)
{
    for (size_t k = 0; ((nic->valid >> PCIE_N_UPSTREAM) & 1u) && k < nic->n_upstream; k++) {
        if (nic->upstream[k].address != NULL && strcmp(nic->upstream[k].address, addr) == 0)
            return true;
    }
    return false;
}

/* The network cards under switch sw but not below its port, "mlx5_0 (0000:1c:00.0), ..." into
 * buf; returns how many. */
static size_t nics_beside(const struct pcie_info *p, const char *port, const char *sw, char *buf,
                          size_t size)
{
    size_t n = 0, len = 0;

    buf[0] = '\0';
    for (size_t i = 0; (p->valid >> PCIE_I_NICS) & 1u && i < p->n_nics; i++) {
        const struct pcie_nic *nic = &p->nics[i];

        if (nic->address == NULL || !nic_in_chain(nic, sw) || nic_in_chain(nic, port))
            continue;
        n++;
        if (len >= size)
            continue;
        if ((nic->valid >> PCIE_N_NAME) & 1u && nic->name != NULL)
            len += (size_t)snprintf(buf + len, size - len, "%s%s (%s)", len ? ", " : "", nic->name,
                                    nic->address);
        else
            len += (size_t)snprintf(buf + len, size - len, "%s%s", len ? ", " : "", nic->address);
    }
    return n;
}

/*
 * Nested switches: an upper switch's downstream port above a GPU (chain index 2, 4, ...: every
 * other bridge is a downstream port) carries the GPU's traffic to the GPUs under the upper
 * switch's other ports, and its GPUDirect RDMA with the network cards there. One finding per
 * redirecting port with GPUs below it and GPUs or cards beside it, however many GPUs lie below.
 */
static void check_upper(const struct rule_ctx *ctx, struct findings *out, size_t *unread,
                        size_t *broken)
{
    const struct pcie_info *p = &ctx->facts->snap->pcie;
    size_t n_done = 0, n_bridges = 1;
    const char **done;
    int32_t *below = xcalloc(p->n_gpus + 1, sizeof(*below));
    int32_t *beyond = xcalloc(p->n_gpus + 1, sizeof(*beyond));

    for (size_t i = 0; i < p->n_gpus; i++)
        n_bridges += p->gpus[i].n_upstream;
    done = xcalloc(n_bridges, sizeof(*done)); /* the ports judged: each once */

    for (size_t i = 0; i < p->n_gpus; i++) {
        const struct pcie_device *d = &p->gpus[i];

        if (!pcie_device_valid(d, PCIE_S_UPSTREAM) || d->switch_address == NULL)
            continue;
        for (size_t k = 2; k + 2 < d->n_upstream; k += 2) {
            const struct pcie_bridge *port = &d->upstream[k];
            const char *sw = d->upstream[k + 1].address;
            size_t n_below, n_beyond = 0, n_nics, seen = 0;
            char words[16], list_below[128], list_beyond[128], nics[256];
            struct finding *f;

            for (size_t m = 0; m < n_done && !seen; m++)
                seen = strcmp(done[m], port->address) == 0;
            if (seen || port->address == NULL || sw == NULL)
                continue;
            done[n_done++] = port->address;
            /* the GPUs under the upper switch that are not under this port */
            for (size_t j = 0; j < p->n_gpus; j++) {
                const struct facts_gpu *v = klog_gpu(ctx, p->gpus[j].address);

                if (in_chain(&p->gpus[j], sw, 0) && !in_chain(&p->gpus[j], port->address, 0))
                    beyond[n_beyond++] = v ? (int32_t)v->g->index : -1;
            }
            n_nics = nics_beside(p, port->address, sw, nics, sizeof(nics));
            if (n_beyond == 0 && n_nics == 0)
                continue; /* nothing on the other side of this port */
            if (!port_redirects(port, unread, broken))
                continue;
            n_below = gpus_below(ctx, port->address, below, p->n_gpus);
            render_ranges(list_below, sizeof(list_below), below, n_below);
            render_ranges(list_beyond, sizeof(list_beyond), beyond, n_beyond);
            redirect_words(words, sizeof(words), port->acs_ctrl);
            f = finding_new(ctx, out, n_below == 1 ? below[0] : -1, -1);
            finding_object(f, "PCIe port %s", port->address);
            if (n_beyond > 0)
                finding_title(f,
                              "ACS on the upper switch port above GPUs %s sends their "
                              "peer-to-peer traffic with GPUs %s through the CPU",
                              list_below, list_beyond);
            else
                finding_title(f,
                              "ACS on the upper switch port above GPUs %s sends GPUDirect RDMA "
                              "between them and NIC %s through the CPU",
                              list_below, nics);
            finding_evidence(f,
                             "port %s of switch %s, above GPUs %s: ACS control 0x%04" PRIx32
                             ", redirect bits %s",
                             port->address, sw, list_below, port->acs_ctrl, words);
            if (n_beyond > 0)
                finding_evidence(f,
                                 "GPUs %s sit under the same switch %s behind its other ports: "
                                 "traffic between them and GPUs %s crosses this port",
                                 list_beyond, sw, list_below);
            if (n_nics == 1)
                finding_evidence(f,
                                 "network card %s under the same switch %s behind another port: "
                                 "GPUDirect RDMA between it and GPUs %s crosses this port",
                                 nics, sw, list_below);
            else if (n_nics > 1)
                finding_evidence(f,
                                 "network cards %s under the same switch %s behind its other "
                                 "ports: GPUDirect RDMA between them and GPUs %s crosses this port",
                                 nics, sw, list_below);
            if (n_beyond > 0)
                finding_evidence(f, "peer-to-peer reads and writes between those GPUs (NCCL) go "
                                    "up to the root complex and back instead of turning in the "
                                    "switch: lower bandwidth, higher latency");
            else
                finding_evidence(f, "the NIC's reads and writes of GPU memory go up to the root "
                                    "complex and back instead of turning in the switch: lower "
                                    "RDMA bandwidth, higher latency");
            finish_finding(f, p, port);
            if (n_beyond > 0)
                finding_explains(f, "pcie.p2p-unavailable");
        }
    }
    free(done);
    free(below);
    free(beyond);
}

/*
 * The lowest switch that nic shares with GPU d: its index in the card's bridges (an upstream
 * port), or 0 when they share none.
 */
static size_t nic_shared(const struct pcie_nic *nic, const struct pcie_device *d)
{
    for (size_t k = 1; k + 1 < nic->n_upstream; k += 2) {
        if (nic->upstream[k].address != NULL && in_chain(d, nic->upstream[k].address, 0))
            return k;
    }
    return 0;
}

/* Whether check_upper judges port (of switch sw): GPUs below it, and others under sw beside it. */
static bool upper_judges(const struct pcie_info *p, const char *port, const char *sw)
{
    bool below = false, beside = false;

    for (size_t j = 0; j < p->n_gpus; j++) {
        below |= in_chain(&p->gpus[j], port, 0);
        beside |= in_chain(&p->gpus[j], sw, 0) && !in_chain(&p->gpus[j], port, 0);
    }
    return below && beside;
}

/* The PCI addresses of the GPUs whose RDMA with nic crosses its port k, "a, b", into buf. */
static void gpu_addresses(const struct pcie_info *p, const struct pcie_nic *nic, size_t k,
                          char *buf, size_t size)
{
    size_t len = 0;

    buf[0] = '\0';
    for (size_t j = 0; j < p->n_gpus && len < size; j++) {
        if (!pcie_device_valid(&p->gpus[j], PCIE_S_UPSTREAM) || nic_shared(nic, &p->gpus[j]) <= k)
            continue;
        len += (size_t)snprintf(buf + len, size - len, "%s%s", len ? ", " : "",
                                p->gpus[j].address ? p->gpus[j].address : "?");
    }
}

/*
 * A network card's downstream ports (pcie.nics): GPUDirect RDMA between the card and a GPU
 * enters the switch through the card's port, and crosses each of its ports below the lowest
 * switch it shares with that GPU. One finding per redirecting port, naming the GPUs beyond it.
 */
static void check_nics(const struct rule_ctx *ctx, struct findings *out, size_t *unread,
                       size_t *broken)
{
    const struct pcie_info *p = &ctx->facts->snap->pcie;
    int32_t *beyond = xcalloc(p->n_gpus + 1, sizeof(*beyond));

    for (size_t i = 0; (p->valid >> PCIE_I_NICS) & 1u && i < p->n_nics; i++) {
        const struct pcie_nic *nic = &p->nics[i];
        char who[160];

        if (!((nic->valid >> PCIE_N_UPSTREAM) & 1u) || nic->address == NULL)
            continue;
        if ((nic->valid >> PCIE_N_NAME) & 1u && nic->name != NULL)
            snprintf(who, sizeof(who), "%s (%s)", nic->name, nic->address);
        else
            snprintf(who, sizeof(who), "%s", nic->address);
        for (size_t k = 0; k + 1 < nic->n_upstream; k += 2) {
            const struct pcie_bridge *port = &nic->upstream[k];
            const char *sw = nic->upstream[k + 1].address;
            size_t n_beyond = 0;
            bool named = true; /* every GPU beyond has an NVML index; else their addresses */
            char words[16], list[128];
            struct finding *f;

            for (size_t j = 0; j < p->n_gpus; j++) {
                const struct facts_gpu *v = klog_gpu(ctx, p->gpus[j].address);

                if (pcie_device_valid(&p->gpus[j], PCIE_S_UPSTREAM) &&
                    nic_shared(nic, &p->gpus[j]) > k) {
                    beyond[n_beyond++] = v ? (int32_t)v->g->index : -1;
                    named &= v != NULL;
                }
            }
            if (n_beyond == 0 || port->address == NULL || sw == NULL)
                continue; /* no GPU's RDMA crosses this port */
            if (upper_judges(p, port->address, sw))
                continue; /* GPUs below it too: one finding for the port, check_upper's */
            if (!port_redirects(port, unread, broken))
                continue;
            if (named)
                render_ranges(list, sizeof(list), beyond, n_beyond);
            else
                gpu_addresses(p, nic, k, list, sizeof(list));
            redirect_words(words, sizeof(words), port->acs_ctrl);
            f = finding_new(ctx, out, n_beyond == 1 ? beyond[0] : -1, -1);
            finding_object(f, "PCIe port %s", port->address);
            if (k == 0)
                finding_title(f,
                              "ACS on the switch port above NIC %s sends GPUDirect RDMA between "
                              "it and GPUs %s through the CPU",
                              who, list);
            else
                finding_title(f,
                              "ACS on the upper switch port above NIC %s sends GPUDirect RDMA "
                              "between it and GPUs %s through the CPU",
                              who, list);
            finding_evidence(f,
                             "port %s of switch %s, above NIC %s: ACS control 0x%04" PRIx32
                             ", redirect bits %s",
                             port->address, sw, nic->address, port->acs_ctrl, words);
            finding_evidence(f,
                             "GPUs %s sit under the same switch %s behind its other ports: "
                             "GPUDirect RDMA between them and the NIC crosses this port",
                             list, sw);
            finding_evidence(f, "the NIC's reads and writes of GPU memory go up to the root "
                                "complex and back instead of turning in the switch: lower RDMA "
                                "bandwidth, higher latency");
            finish_finding(f, p, port);
        }
    }
    free(beyond);
}

static void check_acs(const struct rule_ctx *ctx, struct findings *out)
{
    const struct pcie_info *p = &ctx->facts->snap->pcie;
    size_t unread = 0, broken = 0, nic_unread = 0, nic_broken = 0;

    if (!(p->valid & (UINT64_C(1) << PCIE_I_GPUS))) {
        need_collector(ctx, out, COLLECTOR_PCIE);
        return;
    }
    for (size_t i = 0; i < p->n_gpus; i++) {
        const struct pcie_device *d = &p->gpus[i];
        const struct pcie_bridge *port;
        const struct facts_gpu *v;
        size_t gpus, nics;
        char words[16];
        struct finding *f;

        if (!pcie_device_valid(d, PCIE_S_UPSTREAM) || d->switch_address == NULL ||
            d->n_upstream == 0)
            continue;
        count_peers(d, &gpus, &nics);
        if (gpus + nics == 0)
            continue; /* alone under its switch: nothing to talk to through it */
        port = &d->upstream[0];
        if (!port_redirects(port, &unread, &broken))
            continue;
        redirect_words(words, sizeof(words), port->acs_ctrl);
        v = klog_gpu(ctx, d->address);
        f = finding_new(ctx, out, v ? (int32_t)v->g->index : -1, -1);
        finding_object(f, "PCIe port %s", port->address);
        if (v != NULL)
            finding_title(f,
                          "ACS on the switch port above GPU %" PRIu32 " sends its peer-to-peer "
                          "traffic through the CPU",
                          v->g->index);
        else
            finding_title(f,
                          "ACS on the switch port above GPU %s sends its peer-to-peer traffic "
                          "through the CPU",
                          d->address);
        finding_evidence(f, "port %s above GPU %s: ACS control 0x%04" PRIx32 ", redirect bits %s",
                         port->address, d->address, port->acs_ctrl, words);
        finding_evidence(f, "under the same switch %s: %zu other GPU%s and %zu network card%s",
                         d->switch_address, gpus, gpus == 1 ? "" : "s", nics, nics == 1 ? "" : "s");
        if (nics > 0)
            finding_evidence(f, "peer-to-peer reads and writes (NCCL between GPUs, GPUDirect "
                                "RDMA to the NIC) go up to the root complex and back instead of "
                                "turning in the switch: lower bandwidth, higher latency");
        else
            finding_evidence(f, "peer-to-peer reads and writes between the GPUs (NCCL) go up to "
                                "the root complex and back instead of turning in the switch: "
                                "lower bandwidth, higher latency");
        finish_finding(f, p, port);
        finding_explains(f, "pcie.p2p-unavailable");
    }
    check_upper(ctx, out, &unread, &broken);
    check_nics(ctx, out, &nic_unread, &nic_broken);
    if (nic_unread > 0)
        rule_skip(ctx, out, -1,
                  "ACS of %zu switch port%s above network cards (reading a bridge's extended "
                  "config space needs root)",
                  nic_unread, nic_unread == 1 ? "" : "s");
    if (nic_broken > 0)
        rule_skip(ctx, out, -1,
                  "ACS of %zu switch port%s above network cards (a broken extended capability "
                  "list: the collector's notes name it)",
                  nic_broken, nic_broken == 1 ? "" : "s");
    if (unread > 0)
        rule_skip(ctx, out, -1,
                  "ACS of %zu switch port%s above GPUs (reading a bridge's extended config "
                  "space needs root)",
                  unread, unread == 1 ? "" : "s");
    if (broken > 0)
        rule_skip(ctx, out, -1,
                  "ACS of %zu switch port%s above GPUs (a broken extended capability list: the "
                  "collector's notes name it)",
                  broken, broken == 1 ? "" : "s");
}

const struct rule rule_pcie_acs_p2p = {
    .id = "pcie.acs-p2p",
    .severity = SEV_WARNING,
    .category = CAT_PCIE,
    .title = N_("PCIe ACS sends peer traffic through the CPU"),
    .explanation = N_(
        "Access Control Services (ACS) on a PCIe switch port can force every peer-to-peer "
        "request and completion that enters it up to the root complex, instead of letting it "
        "turn in the switch. Virtualization hosts enable it to isolate devices; many BIOSes and "
        "kernels enable it by default. On a training server it makes NCCL traffic between GPUs "
        "under one switch, and GPUDirect RDMA between a GPU and its NIC, take the long way "
        "through the CPU: bandwidth drops and latency grows, and together with an IOMMU it can "
        "make NCCL hang. NVIDIA's NCCL documentation tells to disable it on bare-metal servers."),
    .detection = N_("the ACS control register (extended capability 0x000D, control at +6) of "
                    "the switch port right above a GPU that shares its switch with another GPU "
                    "or a network card, and in nested switches of each upper switch's port above "
                    "GPUs that has other GPUs or network cards under the same switch's other "
                    "ports; and of the "
                    "switch ports above a network card up to the lowest switch it shares with a "
                    "GPU, which GPUDirect RDMA between them crosses: P2P Request "
                    "Redirect (0x4), Completion Redirect (0x8) or Egress Control (0x20) set. "
                    "Reading it needs root; without root it is said as not checked."),
    .fix = N_("setpci -s PORT ECAP_ACS+0x6.w=0000 on the switch ports (until the next boot), and "
              "disable ACS in the BIOS to keep it off; not on a host that passes GPUs to virtual "
              "machines."),
    .thresholds = NO_THRESHOLDS,
    .explains =
        EXPLAINS({ "pcie.p2p-unavailable", LINK_ANY, N_("the redirect is on a port above a GPU"),
                   N_("ACS sends peer traffic through the root complex, where peer-to-peer "
                      "may not be allowed at all"),
                   LINK_FIX_OWN }),
    .check = check_acs,
};
