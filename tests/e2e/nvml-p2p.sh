#!/usr/bin/env bash
# Topology and P2P between GPUs through the collector and the simulator: every other GPU's
# common ancestor and P2P read / NVLink status, each value's own status, a driver that answers
# neither call (no list, its status), one GPU (an empty list), a GPU without a handle (left out);
# and pcie.p2p-unavailable judging it: a pair blocked where its twin is not (warning), a driver
# option (warning), a GPU model without P2P (information), pairs across CPUs (nothing), pairs
# whose status is unknown (never counted as without P2P).
. "$SRC/tests/fixtures/nvml/common.bash"

# scn PEERS_OF_GPU_0 PEERS_OF_GPU_1 PEERS_OF_GPU_2: three GPUs, jq values for their peer lists
scn() {
    jq -cn --argjson g "$BASE_GPU" --argjson sys "$SYSTEM" --argjson p0 "$1" --argjson p1 "$2" \
        --argjson p2 "$3" '{schema: "gpudoctor.scenario/1", system: $sys,
        gpus: [$g + {peers: $p0},
               $g + {index: 1, pci_bus_id: "00000000:2A:00.0", uuid: "GPU-5f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f1", peers: $p1},
               $g + {index: 2, pci_bus_id: "00000000:AF:00.0", uuid: "GPU-5f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f2", peers: $p2}]}
        | .gpus |= map(if .peers == null then del(.peers) else . end)'
}
peer() { echo "{\"gpu\": $1, \"topology\": \"$2\", \"p2p_read\": \"$3\", \"p2p_nvlink\": \"not_supported\"}"; }

# GPUs 0 and 1 behind one switch, P2P fine; GPU 2 on the other CPU, P2P not supported across
s=$(scenario pix "$(scn "[$(peer 1 single ok), $(peer 2 system topology_not_supported)]" \
    "[$(peer 0 single ok), $(peer 2 system topology_not_supported)]" \
    "[$(peer 0 system topology_not_supported), $(peer 1 system topology_not_supported)]")")
snap "$s"
check '[.gpus[0].peers[] | [.gpu, .topology, .p2p_read, .p2p_nvlink]]' \
    '[[1,"single","ok","not_supported"],[2,"system","topology_not_supported","not_supported"]]'
check '.gpus[2].peers | map(.gpu)' '[0,1]'
check '.gpus[0].nvml_status.peers' 'null'

run_check() {
    GPUDOCTOR_NVML_LIB=$SIM_LIB NVML_SIM_SCENARIO=$1 GPUDOCTOR_CONFIG=/dev/null \
        "$GPUDOCTOR" check --only nvml --window 0 --json >"$OUT" 2>"$TMP/err" || true
}
p2p_findings() {
    check '[.findings[] | select(.id == "pcie.p2p-unavailable") | [.severity, .title]]' "$1"
}
# healthy: the only pairs without P2P are across the CPUs
run_check "$s"
p2p_findings '[]'

# GPUs 0 and 2 behind one switch too, but 0-2 blocked (ACS) while 0-1 works: a warning naming 0-2
s=$(scenario acs "$(scn "[$(peer 1 single ok), $(peer 2 single chipset_not_supported)]" \
    "[$(peer 0 single ok), $(peer 2 single ok)]" \
    "[$(peer 0 single chipset_not_supported), $(peer 1 single ok)]")")
run_check "$s"
p2p_findings '[["warning","Two GPUs cannot use P2P though other GPUs connected the same way can"]]'
check '[.findings[] | select(.id == "pcie.p2p-unavailable") | .evidence[0]]' \
    '["GPU 0 and GPU 2: P2P chipset_not_supported, connected through PIX"]'

# a driver option: every pair
s=$(scenario regkey "$(scn "[$(peer 1 node disabled_by_regkey), $(peer 2 node disabled_by_regkey)]" \
    "[$(peer 0 node disabled_by_regkey), $(peer 2 node disabled_by_regkey)]" \
    "[$(peer 0 node disabled_by_regkey), $(peer 1 node disabled_by_regkey)]")")
run_check "$s"
p2p_findings '[["warning","P2P between 3 GPU pairs is disabled by a driver setting"]]'
check '[.findings[] | select(.id == "pcie.p2p-unavailable") | .fix[0]]' \
    '["grep -i RegistryDwords /proc/driver/nvidia/params   # the driver options in effect"]'

# a GPU model without P2P: information; GPU 2's list is unknown (NO_PERMISSION for every value),
# so only the pair 0-1 is known and the title says so
s=$(scenario geforce "$(scn "[$(peer 1 hostbridge gpu_not_supported), $(peer 2 hostbridge gpu_not_supported)]" \
    "[$(peer 0 hostbridge gpu_not_supported)]" null)")
s=$(scenario geforce2 "$(jq -c '.gpus[0].peers |= map(select(.gpu == 1))
    | .gpus[2].nvml_status = {peers: "NO_PERMISSION"}' "$s")")
snap "$s"
check '[.gpus[2].peers, .gpus[2].nvml_status.peers]' '[null,"NO_PERMISSION"]'
check '.gpus[0].peers | map([.gpu, .nvml_status.p2p_read])' '[[1,null],[2,"NOT_SUPPORTED"]]'
run_check "$s"
p2p_findings '[["info","No GPU pair whose P2P status is known can use P2P (1 of 3 pairs known)"]]'

# one GPU: an empty list, nothing to judge, nothing skipped
s=$(scenario one "$(jq -cn --argjson g "$BASE_GPU" --argjson sys "$SYSTEM" \
    '{schema: "gpudoctor.scenario/1", system: $sys, gpus: [$g + {peers: []}]}')")
snap "$s"
check '[.gpus[0].peers, .gpus[0].nvml_status.peers]' '[[],null]'
run_check "$s"
check '[.not_checked[]? | select(.rule == "pcie.p2p-unavailable")] | length' '0'

# a driver without the calls: no list (NOT_SUPPORTED), the rule says it could not check
s=$(scenario old "$(scn null null null)")
snap "$s"
check '[.gpus[].nvml_status.peers] | unique' '["NOT_SUPPORTED"]'
run_check "$s"
check '[.not_checked[]? | select(.rule == "pcie.p2p-unavailable") | .reason]' \
    '["peers NOT_SUPPORTED: P2P between the GPUs is not known"]'
finish
