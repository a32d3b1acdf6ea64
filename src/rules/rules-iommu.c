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

/* Whether the IOMMU translates the device's DMA: its group's default domain is a DMA domain. */
static bool translated(const struct pcie_device *d)
{
    return pcie_device_valid(d, PCIE_S_IOMMU) && d->iommu_domain != NULL &&
           (strcmp(d->iommu_domain, "DMA") == 0 || strcmp(d->iommu_domain, "DMA-FQ") == 0);
}

/* A GPU handed to a virtual machine (bound to vfio-pci, or in a group a user owns): not the host's.
 */
static bool for_vm(const struct pcie_device *d)
{
    return (d->driver != NULL && strcmp(d->driver, "vfio-pci") == 0) ||
           (pcie_device_valid(d, PCIE_S_IOMMU) && d->iommu_domain != NULL &&
            strcmp(d->iommu_domain, "unmanaged") == 0);
}

/* What NVML says of the NVLink between GPUs a and b: 1 P2P over it, 0 none, -1 not known. */
static int nvlink_pair(const struct facts_gpu *a, const struct facts_gpu *b)
{
    const struct gpu_peer *p;

    if (a == NULL || b == NULL)
        return -1;
    p = gpu_peer_of(a->g, b->g->index);
    if (p == NULL || !gpu_peer_valid(p, PEER_S_P2P_NVLINK))
        p = gpu_peer_of(b->g, a->g->index);
    if (p == NULL || !gpu_peer_valid(p, PEER_S_P2P_NVLINK))
        return -1;
    return p->p2p_nvlink == GPU_P2P_OK;
}

/* The RDMA ports of the machine, when the InfiniBand collector listed them (0: none or unknown). */
static size_t rdma_ports(const struct snapshot *s, char *buf, size_t size)
{
    size_t n = 0, len = 0;

    buf[0] = '\0';
    if (!((s->ib.valid >> IB_I_PORTS) & 1u))
        return 0;
    for (size_t i = 0; i < s->ib.n_ports; i++) {
        const struct ib_port *port = &s->ib.ports[i];

        if (port->device == NULL)
            continue;
        n++;
        if (len < size)
            len += (size_t)snprintf(buf + len, size - len, "%s%s/%" PRIu32, len ? ", " : "",
                                    port->device, port->port);
    }
    return n;
}

/* What the kernel command line says of the IOMMU, for the evidence (nothing when not read). */
static void cmdline_evidence(struct finding *f, const struct pcie_info *p)
{
    if (!((p->valid >> PCIE_I_CMDLINE) & 1u))
        return;
    if (p->intel_iommu == 1 || p->amd_iommu == 1)
        finding_evidence(f, "kernel command line: %s",
                         p->intel_iommu == 1 ? "intel_iommu=on" : "amd_iommu=on");
    if (!p->iommu_pt)
        finding_evidence(f, "iommu=pt is not on the kernel command line");
}

/* "GPUs 0000:18:00.0, 0000:2a:00.0 and 6 more: IOMMU domain DMA-FQ" for the GPUs in one kind. */
static void domain_evidence(struct finding *f, const struct pcie_device *const *tr, size_t n_tr,
                            const char *domain)
{
    char list[128];
    size_t n = 0, len = 0;

    list[0] = '\0';
    for (size_t i = 0; i < n_tr; i++) {
        if (strcmp(tr[i]->iommu_domain, domain) != 0)
            continue;
        if (n++ < 3 && len < sizeof(list))
            len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s", len ? ", " : "",
                                    tr[i]->address);
    }
    if (n == 1)
        finding_evidence(f, "GPU %s: IOMMU domain %s (its DMA is translated)", list, domain);
    else if (n > 3)
        finding_evidence(f, "GPUs %s and %zu more: IOMMU domain %s (their DMA is translated)", list,
                         n - 3, domain);
    else if (n > 1)
        finding_evidence(f, "GPUs %s: IOMMU domain %s (their DMA is translated)", list, domain);
}

static void check_iommu_p2p(const struct rule_ctx *ctx, struct findings *out)
{
    const struct snapshot *s = ctx->facts->snap;
    const struct pcie_info *p = &s->pcie;
    const struct pcie_device **tr;
    size_t n_host = 0, n_tr = 0, n_unknown = 0, pairs = 0, over_pcie = 0, unsure = 0, n_rdma;
    int32_t *idx;
    size_t n_idx = 0;
    char list[256], ports[256];
    struct finding *f;
    char *qaddr;

    if (!need_collector(ctx, out, COLLECTOR_PCIE))
        return;
    tr = xcalloc(p->n_gpus + 1, sizeof(*tr));
    idx = xcalloc(p->n_gpus + 1, sizeof(*idx));
    for (size_t i = 0; i < p->n_gpus; i++) {
        const struct pcie_device *d = &p->gpus[i];

        if (for_vm(d))
            continue;
        n_host++;
        if (!pcie_device_valid(d, PCIE_S_IOMMU))
            n_unknown++;
        else if (translated(d))
            tr[n_tr++] = d;
    }
    n_rdma = rdma_ports(s, ports, sizeof(ports));
    if (n_tr == 0 || (n_host < 2 && n_rdma == 0)) {
        if (n_unknown > 0 && (n_host >= 2 || n_rdma > 0))
            rule_skip(ctx, out, -1,
                      "how the IOMMU treats the DMA of %zu of %zu GPUs (iommu_group/type not "
                      "read: a kernel before 5.4, or sysfs not readable)",
                      n_unknown, n_host);
        goto done;
    }
    for (size_t i = 0; i < n_tr; i++) {
        const struct facts_gpu *v = klog_gpu(ctx, tr[i]->address);

        if (v != NULL)
            idx[n_idx++] = (int32_t)v->g->index;
    }
    /* The pairs of GPUs one of which is translated, and of them those without NVLink. */
    for (size_t i = 0; i < p->n_gpus; i++) {
        for (size_t j = i + 1; j < p->n_gpus; j++) {
            const struct pcie_device *a = &p->gpus[i], *b = &p->gpus[j];

            if (for_vm(a) || for_vm(b) || !(translated(a) || translated(b)))
                continue;
            switch (nvlink_pair(klog_gpu(ctx, a->address), klog_gpu(ctx, b->address))) {
            case 0:
                over_pcie++;
                break;
            case -1:
                unsure++;
                break;
            }
            pairs++;
        }
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
    domain_evidence(f, tr, n_tr, "DMA");
    domain_evidence(f, tr, n_tr, "DMA-FQ");
    cmdline_evidence(f, p);
    if (over_pcie > 0)
        finding_evidence(f,
                         "%zu of %zu GPU pairs with a translated GPU have no NVLink between "
                         "them: their peer-to-peer traffic crosses PCIe and the IOMMU",
                         over_pcie, pairs);
    if (unsure > 0)
        finding_evidence(f,
                         "whether %zu of %zu GPU pairs with a translated GPU talk over NVLink "
                         "is not known (NVML's peer status was not read): taken as PCIe",
                         unsure, pairs);
    if (pairs > 0 && over_pcie + unsure == 0)
        finding_evidence(f, "every GPU pair with a translated GPU talks over NVLink: only its "
                            "copies to and from the host and network cards cross the IOMMU");
    if (n_rdma > 0)
        finding_evidence(f, "RDMA ports for GPUDirect RDMA: %s", ports);
    finding_evidence(f, "NVIDIA's NCCL documentation: the IOMMU can send PCIe peer-to-peer "
                        "traffic through the CPU's root complex, for far lower bandwidth or a "
                        "hang; on bare metal it asks for the IOMMU off or in passthrough");
    if (over_pcie + unsure == 0 && n_rdma == 0)
        f->severity = SEV_INFO; /* nothing peer-to-peer crosses it */
    finding_fix(f, "# on bare metal: run the IOMMU in passthrough; add iommu=pt to the kernel "
                   "command line (GRUB_CMDLINE_LINUX in /etc/default/grub), then reboot");
    finding_fix(f, "sudo update-grub   # Debian and Ubuntu, after editing /etc/default/grub");
    qaddr = fix_arg(f, "PCI address", tr[0]->address);
    if (qaddr != NULL)
        finding_fix(f, "cat /sys/bus/pci/devices/%s/iommu_group/type   # identity after the reboot",
                    qaddr);
    free(qaddr);
    finding_fix(f, "# on a host that passes GPUs to virtual machines the IOMMU isolates them: "
                   "keep it there; until the reboot, NCCL_P2P_DISABLE=1 avoids the hang at a "
                   "cost in speed");
    if (over_pcie + unsure > 0)
        finding_explains(f, "pcie.p2p-unavailable");
    f->impact = over_pcie + unsure > 0 ? 0.4 : 0.2;
done:
    free(tr);
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
                    "virtual machine (bound to vfio-pci or in an unmanaged domain): \"DMA\" or "
                    "\"DMA-FQ\" is translated. A warning when two or more GPUs are on the host "
                    "and a pair with a translated GPU has no NVLink between them (NVML's P2P "
                    "status over NVLink), or when RDMA ports exist; information otherwise."),
    .fix = N_("On bare metal add iommu=pt to the kernel command line and reboot (or turn VT-d / "
              "AMD-Vi off in the BIOS); keep the IOMMU on hosts that pass GPUs to virtual "
              "machines."),
    .thresholds = NO_THRESHOLDS,
    .explains = EXPLAINS({ "pcie.p2p-unavailable", LINK_ANY,
                           N_("a pair with a translated GPU crosses PCIe"),
                           N_("the IOMMU sends peer traffic through the root complex, where "
                              "peer-to-peer may not be allowed at all") }),
    .check = check_iommu_p2p,
};
