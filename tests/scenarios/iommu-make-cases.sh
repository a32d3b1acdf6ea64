#!/usr/bin/env bash
# Writes the IOMMU cases (iommu-translated-pcie, iommu-peers-unknown, iommu-translated-nvlink,
# iommu-nvlink-rdma-unknown, iommu-translated-ib, iommu-passthrough): the healthy 8-GPU snapshots with each GPU's IOMMU domain as the pcie
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

# NVML's peer status of a PCIe board: P2P between the GPUs of one CPU (0-3, 4-7), none across
# the CPUs (topology_not_supported), no NVLink.
pcie_peers='.gpus |= [.[] | .index as $i | .peers = [range(8) | select(. != $i) | . as $j
    | (($i / 4 | floor) == ($j / 4 | floor)) as $near
    | {gpu: $j, topology: (if $near then "node" else "system" end),
       p2p_read: (if $near then "ok" else "topology_not_supported" end),
       p2p_nvlink: "not_supported", nvml_status: {}}]]'

# The InfiniBand collector ran and found no RDMA device.
no_ib='.collectors.ib = {state: "ok", detail: null, notes: [], elapsed_us: 500}
    | .ib = {devices: 0, peermem_loaded: false, peermem_module: null, ports: []}'

# A PCIe board booted with intel_iommu=on and no iommu=pt: the GPUs' DMA is translated (DMA-FQ,
# the lazy flavour); 12 pairs use P2P over PCIe, 16 none; no RDMA ports.
iommu healthy-8gpu-busy iommu-translated-pcie DMA-FQ 1 false "$pcie_peers | $no_ib"
# The same without NVML's peer status or the InfiniBand collector: how the GPUs exchange data is
# not known, taken as over PCIe.
iommu healthy-8gpu-busy iommu-peers-unknown DMA-FQ 1 false
# The NVLink board, translated too: GPU-to-GPU traffic stays on NVLink, no RDMA ports.
iommu healthy-8gpu-nvlink iommu-translated-nvlink DMA 1 false "$nvlink_peers | $no_ib"
# The same with the InfiniBand collector not run: RDMA ports may exist, a warning.
iommu healthy-8gpu-nvlink iommu-nvlink-rdma-unknown DMA 1 false "$nvlink_peers"
# The board with InfiniBand: GPUDirect RDMA to the NICs crosses the IOMMU, NVLink or not.
iommu healthy-8gpu-ib iommu-translated-ib DMA 1 false "$nvlink_peers"
# iommu=pt: the GPUs are in identity domains.
iommu healthy-8gpu-ib iommu-passthrough identity 1 true
