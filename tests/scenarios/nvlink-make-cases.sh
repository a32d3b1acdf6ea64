#!/usr/bin/env bash
# Writes the NVLink / GPU fabric snapshot cases (healthy-8gpu-nvlink, nvlink-down,
# nvlink-went-down, nvlink-errors, fabric-not-ready, nvlink-pcie-bridges): healthy-8gpu-busy's
# 8 x H100 snapshot with the `nvlink` and `fabric` of each GPU, and the links in its samples, as
# gpudoctor's NVML collector read them from the simulator (a scenario per story, with a timeline
# for what changes during the window). Run it after building (GPUDOCTOR=path/to/gpudoctor, default
# build/gpudoctor; SIM_LIB, default build/sim/libnvidia-ml.so.1), then commit what it writes.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
gd=${GPUDOCTOR:-$src/build/gpudoctor}
sim=${SIM_LIB:-$src/build/sim/libnvidia-ml.so.1}
base=$here/healthy-8gpu-busy/snapshot.json
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# An HGX H100 board: 18 NVLink 4.0 links a GPU (nvmlNvlinkVersion_t 6), each to one of four
# NVSwitches, no errors, every GPU registered with the fabric (clique 1 of one cluster).
jq '{schema: "gpudoctor.scenario/1",
     system: {driver_version: "550.54.15", nvml_version: "12.550.54.15", cuda_driver_version: 12040},
     gpus: [.gpus[] | {index, name, uuid, pci_bus_id, pci_device_id, pci_subsystem_id,
       nvlink: [range(18) as $l | {link: $l, active: true, version: 6,
                 remote_pci_bus_id: "00000000:\(["C5","C6","C7","C8"][$l % 4]):00.0",
                 remote_type: "switch", crc_errors: 0, replay_errors: 0, recovery_errors: 0}],
       fabric: {state: "completed", status: 0, clique_id: 1,
                cluster_uuid: "7f3c2a10-5b4e-4d21-9a8c-0e6b1f2d3c4e", health_mask: "0x00000000"}}]}' \
    "$base" >"$tmp/hgx.json"

# write CASE JQ_EDIT [BASE_EDIT]: the case's snapshot.json from the scenario changed by JQ_EDIT;
# BASE_EDIT changes the rest of the snapshot to match.
write() {
    local name=$1 edit=$2 base_edit=${3:-.}
    jq "$edit" "$tmp/hgx.json" >"$tmp/$name.scn"
    GPUDOCTOR_NVML_LIB=$sim NVML_SIM_SCENARIO=$tmp/$name.scn NVML_SIM_QUIET=1 \
        "$gd" snapshot --only nvml --window 2000ms >"$tmp/$name.snap"
    mkdir -p "$here/$name"
    jq --slurpfile n "$tmp/$name.snap" '
        ($n[0].samples | length) as $ns
        | .gpus |= [.[] | . as $g | ($n[0].gpus[] | select(.index == $g.index)) as $m
                    | $g + {nvlink: $m.nvlink, fabric: $m.fabric}
                    | .nvml_status += ($m.nvml_status | with_entries(select(.key == "nvlink" or .key == "fabric")))]
        | .samples |= [to_entries[] | .key as $k | .value
                       | .gpus |= [.[] | . as $sg
                                   | ($n[0].samples[if $k < $ns then $k else $ns - 1 end].gpus[]
                                      | select(.index == $sg.index)) as $m
                                   | $sg + (if $m.nvlink then {nvlink: $m.nvlink} else {} end)]]
        | '"$base_edit" "$base" >"$here/$name/snapshot.json"
}

write healthy-8gpu-nvlink '.'
# GPU 3: links 4 and 11 never trained (inactive from the start, no remote end)
write nvlink-down '.gpus[3].nvlink |= map(if .link == 4 or .link == 11
    then .active = false | del(.remote_pci_bus_id, .remote_type) else . end)'
# GPU 6: link 9 goes down a second into the window
write nvlink-went-down '.timeline = [{gpu: 6, link: 9, field: "active", from_s: 1, value: false}]'
# GPU 5: link 2 replays 40 and recovers once a second from the start; GPU 1's CRC errors
# grow by 20 a second, below the 100/s limit
write nvlink-errors '.timeline = [
    {gpu: 5, link: 2, field: "replay_errors", rate_per_s: 40},
    {gpu: 5, link: 2, field: "recovery_errors", rate_per_s: 1},
    {gpu: 1, link: 7, field: "crc_errors", rate_per_s: 20}]'
# GPU 2 never registered (Fabric Manager not running for it); GPU 4's registration failed
write fabric-not-ready '.gpus[2].fabric = {state: "not_started", status: 0, clique_id: 0,
        cluster_uuid: "00000000-0000-0000-0000-000000000000", health_mask: "0x00000000"}
    | .gpus[4].fabric.status = 999'
# PCIe cards: NVLink bridges join GPUs 0-1 (all 12 links, to the other GPU) and GPUs 2-3 (4 of
# 12: a partial bridge); GPUs 4-7 have none. Nothing is wrong; no fabric.
write nvlink-pcie-bridges '.gpus |= [.[] | .name = "NVIDIA H100 PCIe" | del(.fabric)
    | .index as $i
    | .nvlink = [range(12) as $l
        | if $i < 2 or ($i < 4 and $l < 4)
          then {link: $l, active: true, version: 6, remote_type: "gpu",
                remote_pci_bus_id: "00000000:\(["18","2A","3A","5D"][if $i % 2 == 0 then $i + 1 else $i - 1 end]):00.0",
                crc_errors: 0, replay_errors: 0, recovery_errors: 0}
          else {link: $l, active: false, version: 6, crc_errors: 0, replay_errors: 0,
                recovery_errors: 0}
          end]]' '.gpus[].name = "NVIDIA H100 PCIe"'
