/*
 * The IOMMU and peer-to-peer (category pcie): GPUs whose DMA the IOMMU translates, on a machine
 * where they exchange data with each other over PCIe or with a network card (GPUDirect RDMA).
 * NVIDIA's NCCL documentation: IO virtualization (VT-d, the IOMMU) can send PCIe peer-to-peer
 * traffic through the CPU's root complex, with a large loss of bandwidth or a hang, and on bare
 * metal it asks for the IOMMU off or in passthrough. Evidence from the pcie collector (each GPU's
 * IOMMU group domain type, the kernel command line), NVML's P2P status over NVLink, and the
 * InfiniBand ports.
 */
#include "render/format.h"
#include "rules/rule-impl.h"
#include "util/xalloc.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What the IOMMU does with a GPU's DMA, as far as is known. */
enum domain {
    DOM_UNKNOWN,    /* not read, or a word gpudoctor does not judge ("blocked", "unmanaged") */
    DOM_TRANSLATED, /* "DMA", "DMA-FQ" */
    DOM_DIRECT,     /* "identity" (passthrough), "none" (no group), or no IOMMU active at all */
};

static bool domain_is(const struct pcie_device *d, const char *word)
{
    return pcie_device_valid(d, PCIE_S_IOMMU) && d->iommu_domain != NULL &&
           strcmp(d->iommu_domain, word) == 0;
}

static enum domain domain_of(const struct pcie_info *p, const struct pcie_device *d)
{
    if (domain_is(d, "DMA") || domain_is(d, "DMA-FQ"))
        return DOM_TRANSLATED;
    if (domain_is(d, "identity") || domain_is(d, "none"))
        return DOM_DIRECT;
    if (!pcie_device_valid(d, PCIE_S_IOMMU) && ((p->valid >> PCIE_I_IOMMU) & 1u) &&
        !p->iommu_present)
        return DOM_DIRECT; /* /sys/class/iommu is empty: no IOMMU translates anything */
    return DOM_UNKNOWN;
}

/* A GPU of the host: the ones bound to vfio-pci are handed to virtual machines. */
struct host_gpu {
    const struct pcie_device *d;
    const struct facts_gpu *v; /* NVML's view, NULL when NVML does not list it */
    enum domain dom;
};

/* How two GPUs exchange data, as NVML says. */
enum pair_path {
    PATH_UNKNOWN,
    PATH_NVLINK, /* P2P over NVLink: off PCIe */
    PATH_PCIE,   /* P2P, not over NVLink: across PCIe */
    PATH_NO_P2P, /* no P2P at all: copies staged through host memory */
};

static const struct gpu_peer *peer_view(const struct facts_gpu *a, const struct facts_gpu *b,
                                        enum gpu_peer_slot slot)
{
    const struct gpu_peer *p = gpu_peer_of(a->g, b->g->index);

    if (p == NULL || !gpu_peer_valid(p, slot))
        p = gpu_peer_of(b->g, a->g->index);
    return p != NULL && gpu_peer_valid(p, slot) ? p : NULL;
}

static enum pair_path pair_path(const struct facts_gpu *a, const struct facts_gpu *b)
{
    const struct gpu_peer *nv = peer_view(a, b, PEER_S_P2P_NVLINK);
    const struct gpu_peer *rd = peer_view(a, b, PEER_S_P2P_READ);

    if (nv != NULL && nv->p2p_nvlink == GPU_P2P_OK)
        return PATH_NVLINK;
    if (rd == NULL)
        return PATH_UNKNOWN;
    return rd->p2p_read == GPU_P2P_OK ? PATH_PCIE : PATH_NO_P2P;
}

/* Pairs among n GPUs. */
static size_t pairs_of(size_t n)
{
    return n * (n > 0 ? n - 1 : 0) / 2;
}

/*
 * The active RDMA ports of PCI network cards (GPUDirect RDMA's), "mlx5_0/1, ..." into buf;
 * -1 when the InfiniBand collector did not list the ports.
 */
static ssize_t rdma_ports(const struct snapshot *s, char *buf, size_t size)
{
    size_t n = 0, len = 0;

    buf[0] = '\0';
    if (!((s->ib.valid >> IB_I_PORTS) & 1u))
        return -1;
    for (size_t i = 0; i < s->ib.n_ports; i++) {
        const struct ib_port *port = &s->ib.ports[i];

        if (port->device == NULL || port->pci_address == NULL || !ib_port_valid(port, IB_S_STATE) ||
            port->state != IB_STATE_ACTIVE)
            continue;
        n++;
        if (len < size)
            len += (size_t)snprintf(buf + len, size - len, "%s%s/%" PRIu32, len ? ", " : "",
                                    port->device, port->port);
    }
    return (ssize_t)n;
}

/* "GPUs 0000:18:00.0, 0000:2a:00.0, 0000:3a:00.0 and 5 more: IOMMU domain DMA-FQ". */
static void domain_evidence(struct finding *f, const struct host_gpu *h, size_t n_host,
                            const char *word)
{
    char list[128];
    size_t n = 0, len = 0;

    list[0] = '\0';
    for (size_t i = 0; i < n_host; i++) {
        if (!domain_is(h[i].d, word))
            continue;
        if (n++ < 3 && len < sizeof(list))
            len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s", len ? ", " : "",
                                    h[i].d->address ? h[i].d->address : "?");
    }
    if (n == 1)
        finding_evidence(f, "GPU %s: IOMMU domain %s (its DMA is translated)", list, word);
    else if (n > 3)
        finding_evidence(f, "GPUs %s and %zu more: IOMMU domain %s (their DMA is translated)", list,
                         n - 3, word);
    else if (n > 1)
        finding_evidence(f, "GPUs %s: IOMMU domain %s (their DMA is translated)", list, word);
}

/* What the kernel command line says of the IOMMU (nothing when it was not read). */
static void cmdline_evidence(struct finding *f, const struct pcie_info *p)
{
    if (!((p->valid >> PCIE_I_CMDLINE) & 1u))
        return;
    if (p->intel_iommu == 1)
        finding_evidence(f, "kernel command line: intel_iommu=on");
    if (p->amd_iommu == 1)
        finding_evidence(f, "kernel command line: an amd_iommu= option that keeps the AMD IOMMU "
                            "on");
    if (p->iommu_pt)
        finding_evidence(f, "iommu=pt is on the kernel command line, yet these domains are "
                            "translated: something else set their type (a write to "
                            "/sys/kernel/iommu_groups/N/type, or a device the kernel isolates)");
    else
        finding_evidence(f, "iommu=pt is not on the kernel command line");
}

/* The fixes: passthrough on bare metal, what to do meanwhile for the traffic that crosses. */
static void iommu_fixes(struct finding *f, const struct pcie_info *p, const struct host_gpu *h,
                        size_t n_host, bool pcie_pairs, bool rdma)
{
    const char *addr = NULL;
    char *qaddr;

    if (((p->valid >> PCIE_I_CMDLINE) & 1u) && p->iommu_pt) {
        finding_fix(f, "grep -rs . /etc/udev/rules.d /etc/rc.local | grep iommu_groups   # what "
                       "sets the groups' type after boot");
    } else {
        finding_fix(f, "# on bare metal: add iommu=pt to GRUB_CMDLINE_LINUX in /etc/default/grub, "
                       "then:");
        finding_fix(f, "sudo update-grub   # Debian and Ubuntu");
        finding_fix(f, "sudo grubby --update-kernel=ALL --args=iommu=pt   # RHEL, Rocky, Fedora "
                       "(instead of the two steps above)");
        finding_fix(f, "# then drain the node's jobs and reboot");
    }
    for (size_t i = 0; i < n_host && addr == NULL; i++) {
        if (h[i].dom == DOM_TRANSLATED)
            addr = h[i].d->address;
    }
    qaddr = fix_pci_arg(f, addr);
    if (qaddr != NULL)
        finding_fix(f,
                    "cat /sys/bus/pci/devices/%s/iommu_group/type   # identity once it is "
                    "fixed",
                    qaddr);
    free(qaddr);
    finding_fix(f, "# on a host that passes GPUs to virtual machines the IOMMU isolates them: "
                   "keep it there");
    if (pcie_pairs)
        finding_fix(f, "# until then, NCCL_P2P_DISABLE=1 in the job's environment avoids the "
                       "hang of peer-to-peer over PCIe, at a cost in speed");
    if (rdma)
        finding_fix(f, "# until then, NCCL_NET_GDR_LEVEL=LOC in the job's environment keeps "
                       "NCCL from GPUDirect RDMA, at a cost in speed");
}

static void check_iommu_p2p(const struct rule_ctx *ctx, struct findings *out)
{
    const struct snapshot *s = ctx->facts->snap;
    const struct pcie_info *p = &s->pcie;
    size_t n_host = 0, n_tr = 0, n_unknown = 0, n_idx = 0;
    size_t pairs, by[PATH_NO_P2P + 1] = { 0 };
    struct host_gpu *h;
    int32_t *idx;
    ssize_t n_rdma;
    char list[256], ports[256];
    struct finding *f;

    if (!need_collector(ctx, out, COLLECTOR_PCIE))
        return;
    if (!((p->valid >> PCIE_I_GPUS) & 1u)) {
        rule_skip(ctx, out, -1, "the GPUs on the PCI bus were not listed");
        return;
    }
    h = xcalloc(p->n_gpus + 1, sizeof(*h));
    idx = xcalloc(p->n_gpus + 1, sizeof(*idx));
    for (size_t i = 0; i < p->n_gpus; i++) {
        const struct pcie_device *d = &p->gpus[i];

        if (d->driver != NULL && strcmp(d->driver, "vfio-pci") == 0)
            continue;
        h[n_host].d = d;
        h[n_host].v = klog_gpu(ctx, d->address);
        h[n_host].dom = domain_of(p, d);
        n_tr += h[n_host].dom == DOM_TRANSLATED;
        n_unknown += h[n_host].dom == DOM_UNKNOWN;
        n_host++;
    }
    n_rdma = rdma_ports(s, ports, sizeof(ports));
    if (n_tr == 0 || (n_host < 2 && n_rdma == 0)) {
        if (n_unknown > 0 && (n_host >= 2 || n_rdma != 0))
            rule_skip(ctx, out, -1,
                      "how the IOMMU treats the DMA of %zu of %zu GPUs (not in the snapshot, a "
                      "kernel before 5.4, or sysfs not readable)",
                      n_unknown, n_host);
        goto done;
    }
    /* The pairs with a translated GPU; NVML says how those it lists exchange data. */
    pairs = pairs_of(n_host) - pairs_of(n_host - n_tr);
    for (size_t i = 0; i < n_host; i++) {
        for (size_t j = i + 1; h[i].v != NULL && j < n_host; j++) {
            if (h[j].v != NULL && (h[i].dom == DOM_TRANSLATED || h[j].dom == DOM_TRANSLATED))
                by[pair_path(h[i].v, h[j].v)]++;
        }
    }
    by[PATH_UNKNOWN] = pairs - by[PATH_NVLINK] - by[PATH_PCIE] - by[PATH_NO_P2P];
    for (size_t i = 0; i < n_host; i++) {
        if (h[i].dom == DOM_TRANSLATED && h[i].v != NULL)
            idx[n_idx++] = (int32_t)h[i].v->g->index;
    }

    f = finding_new(ctx, out, n_tr == 1 && n_idx == 1 ? idx[0] : -1, -1);
    finding_object(f, "IOMMU");
    if (n_idx == n_tr) {
        render_ranges(list, sizeof(list), idx, n_idx);
        if (n_tr == 1)
            finding_title(f, "The IOMMU translates the DMA of GPU %s", list);
        else
            finding_title(f, "The IOMMU translates the DMA of GPUs %s", list);
    } else {
        finding_title(f, "The IOMMU translates the DMA of %zu of %zu GPUs", n_tr, n_host);
    }
    domain_evidence(f, h, n_host, "DMA");
    domain_evidence(f, h, n_host, "DMA-FQ");
    if (n_unknown > 0)
        finding_evidence(f, "the IOMMU domains of %zu more GPUs were not read", n_unknown);
    cmdline_evidence(f, p);
    if (by[PATH_PCIE] > 0)
        finding_evidence(f,
                         "%zu of %zu GPU pairs with a translated GPU use peer-to-peer without "
                         "NVLink: it crosses PCIe and the IOMMU",
                         by[PATH_PCIE], pairs);
    if (by[PATH_NO_P2P] > 0)
        finding_evidence(f,
                         "%zu of %zu GPU pairs with a translated GPU cannot use peer-to-peer "
                         "at all: their copies go through host memory",
                         by[PATH_NO_P2P], pairs);
    if (by[PATH_UNKNOWN] > 0)
        finding_evidence(f,
                         "how %zu of %zu GPU pairs with a translated GPU exchange data is not "
                         "known (NVML's peer status was not read): taken as over PCIe",
                         by[PATH_UNKNOWN], pairs);
    if (pairs > 0 && by[PATH_NVLINK] == pairs)
        finding_evidence(f, "every GPU pair with a translated GPU uses peer-to-peer over NVLink, "
                            "off PCIe");
    if (n_rdma > 0)
        finding_evidence(f,
                         "active RDMA ports for GPUDirect RDMA: %s (the cards' own domains "
                         "were not read; the kernel gives devices the same default unless "
                         "told otherwise)",
                         ports);
    else if (n_rdma < 0)
        finding_evidence(f, "whether there are RDMA ports for GPUDirect RDMA is not known (the "
                            "InfiniBand collector did not list them)");
    finding_evidence(f, "NVIDIA's NCCL documentation: the IOMMU can send PCIe peer-to-peer "
                        "traffic through the CPU's root complex, for far lower bandwidth or a "
                        "hang; on bare metal it asks for the IOMMU off or in passthrough");
    if (by[PATH_PCIE] + by[PATH_UNKNOWN] == 0 && n_rdma == 0)
        f->severity = SEV_INFO; /* no peer-to-peer is known to cross it */
    iommu_fixes(f, p, h, n_host, by[PATH_PCIE] + by[PATH_UNKNOWN] > 0, n_rdma != 0);
    if (by[PATH_PCIE] + by[PATH_NO_P2P] + by[PATH_UNKNOWN] > 0)
        finding_explains(f, "pcie.p2p-unavailable");
    f->impact = f->severity == SEV_INFO ? 0.2 : 0.4;
done:
    free(h);
    free(idx);
}

const struct rule rule_pcie_iommu_p2p = {
    .id = "pcie.iommu-p2p",
    .severity = SEV_WARNING,
    .category = CAT_PCIE,
    .title = N_("The IOMMU translates the GPUs' DMA"),
    .explanation = N_(
        "An IOMMU (Intel VT-d, AMD-Vi) translates the addresses of every DMA a device in a "
        "translated domain makes. Virtualization hosts need it to isolate devices; many kernels "
        "turn it on by default. For GPUs it also covers peer-to-peer: a GPU writing another GPU's "
        "memory over PCIe, or a network card reading a GPU's (GPUDirect RDMA). Those requests "
        "then go up to the CPU's root complex to be translated instead of turning in a PCIe "
        "switch, and NVIDIA's NCCL documentation warns of a large loss of bandwidth or a hang: "
        "the all-reduce that never finishes, the job that only runs with NCCL_P2P_DISABLE=1. On "
        "bare metal NVIDIA asks for the IOMMU off or in passthrough (iommu=pt), where devices "
        "use physical addresses. GPUs that talk to each other only over NVLink keep their "
        "peer-to-peer traffic off PCIe, so there it is information."),
    .detection = N_("/sys/bus/pci/devices/ADDR/iommu_group/type of every GPU not handed to a "
                    "virtual machine (bound to vfio-pci): \"DMA\" or \"DMA-FQ\" is translated. "
                    "A warning when a pair with a translated GPU uses peer-to-peer without NVLink "
                    "or is not known to use NVLink (NVML's P2P status), or when active RDMA ports "
                    "of PCI network cards exist or were not listed; information when every such "
                    "pair uses NVLink and there is no RDMA port."),
    .fix = N_("On bare metal add iommu=pt to the kernel command line and reboot (or turn VT-d / "
              "AMD-Vi off in the BIOS); keep the IOMMU on hosts that pass GPUs to virtual "
              "machines."),
    .thresholds = NO_THRESHOLDS,
    .explains = EXPLAINS({ "pcie.p2p-unavailable", LINK_ANY,
                           N_("a GPU pair with a translated GPU is not on NVLink"),
                           N_("the IOMMU sends peer traffic through the root complex, where "
                              "peer-to-peer may not be allowed at all"),
                           LINK_FIX_OWN }),
    .check = check_iommu_p2p,
};
