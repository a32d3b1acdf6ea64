#!/usr/bin/env bash
# Writes the peer-to-peer cases (p2p-acs-blocked, p2p-disabled-regkey): healthy-8gpu-busy's
# 8-GPU snapshot with each GPU's `peers` as gpudoctor's NVML collector read them from the
# simulator. The board: GPUs 0-3 behind one CPU, 4-7 behind the other; GPUs 0-1, 2-3, 4-5 and 6-7
# share a PCIe switch (PIX), the others of one CPU meet at its host bridges (NODE), the two halves
# only across the CPU interconnect (SYS), where P2P is topology_not_supported. Run it after
# building (GPUDOCTOR=path/to/gpudoctor, default build/gpudoctor; SIM_LIB, default
# build/sim/libnvidia-ml.so.1), then commit what it writes.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
gd=${GPUDOCTOR:-$src/build/gpudoctor}
sim=${SIM_LIB:-$src/build/sim/libnvidia-ml.so.1}
base=$here/healthy-8gpu-busy/snapshot.json
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# write CASE P2P: P2P is P2P(i; j) for the pairs within one CPU, a jq expression of $i and $j
write() {
    local name=$1 p2p=$2
    jq "{schema: \"gpudoctor.scenario/1\",
         system: {driver_version: \"550.54.15\", nvml_version: \"12.550.54.15\", cuda_driver_version: 12040},
         gpus: [.gpus[] | .index as \$i | {index, name, uuid, pci_bus_id, pci_device_id, pci_subsystem_id,
           peers: [range(8) as \$j | select(\$j != \$i)
             | (if ((\$i / 4 | floor) != (\$j / 4 | floor)) then \"system\"
                elif ((\$i / 2 | floor) == (\$j / 2 | floor)) then \"single\" else \"node\" end) as \$t
             | {gpu: \$j, topology: \$t,
                p2p_read: (if \$t == \"system\" then \"topology_not_supported\" else ($p2p) end),
                p2p_nvlink: \"not_supported\"}]}]}" "$base" >"$tmp/$name.scn"
    GPUDOCTOR_NVML_LIB=$sim NVML_SIM_SCENARIO=$tmp/$name.scn NVML_SIM_QUIET=1 \
        "$gd" snapshot --only nvml --window 0 >"$tmp/$name.snap"
    mkdir -p "$here/$name"
    jq --slurpfile n "$tmp/$name.snap" '
        .gpus |= [.[] | . as $g | ($n[0].gpus[] | select(.index == $g.index)) as $m
                  | $g + {peers: $m.peers}]' "$base" >"$here/$name/snapshot.json"
}

# GPUs 4-7: ACS on the second CPU's PCIe switches; the first CPU's GPUs reach each other
write p2p-acs-blocked 'if $i >= 4 then "chipset_not_supported" else "ok" end'
# a driver option turned P2P off everywhere (NVreg_RegistryDwords)
write p2p-disabled-regkey '"disabled_by_regkey"'
