#!/usr/bin/env bash
# Writes the IOMMU cases (iommu-translated-pcie, iommu-translated-nvlink, iommu-translated-ib,
# iommu-passthrough): the healthy 8-GPU snapshots with each GPU's IOMMU domain as the pcie
# collector reads it (pcie.gpus[].iommu_domain, from iommu_group/type) and the kernel command line
# the domain follows from. Needs jq; rerun after editing, then commit what it writes.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

# iommu BASE CASE DOMAIN INTEL PT [JQ]: BASE's snapshot with every GPU's domain DOMAIN and
# intel_iommu=INTEL (-1 not given) and iommu=pt PT on the command line, then JQ applied.
iommu() {
    local base=$1 name=$2 domain=$3 intel=$4 pt=$5 extra=${6:-.}
    mkdir -p "$here/$name"
    jq --arg d "$domain" --argjson intel "$intel" --argjson pt "$pt" "
        .pcie.iommu_present = true | .pcie.iommu_pt = \$pt | .pcie.intel_iommu = \$intel
        | .pcie.amd_iommu = -1 | .pcie.gpus |= [.[] | .iommu_domain = \$d] | $extra" \
        "$here/$base/snapshot.json" >"$here/$name/snapshot.json"
}

# NVML's peer status of an NVLink board: every pair reaches the other over NVLink.
nvlink_peers='.gpus |= [.[] | .index as $i | .peers = [range(8) | select(. != $i)
    | {gpu: ., topology: "node", p2p_read: "ok", p2p_nvlink: "ok", nvml_status: {}}]]'

# A PCIe board booted with intel_iommu=on and no iommu=pt: the GPUs' DMA is translated (DMA-FQ,
# the lazy flavour), NVML's peer status was not read.
iommu healthy-8gpu-busy iommu-translated-pcie DMA-FQ 1 false
# The NVLink board, translated too: GPU-to-GPU traffic stays on NVLink, no RDMA ports.
iommu healthy-8gpu-nvlink iommu-translated-nvlink DMA 1 false "$nvlink_peers"
# The board with InfiniBand: GPUDirect RDMA to the NICs crosses the IOMMU, NVLink or not.
iommu healthy-8gpu-ib iommu-translated-ib DMA 1 false "$nvlink_peers"
# iommu=pt: the GPUs are in identity domains.
iommu healthy-8gpu-ib iommu-passthrough identity 1 true
