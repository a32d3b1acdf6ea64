#!/usr/bin/env bash
# fleet judges the fabric figures from snapshots that hold them (docs/fleet.md): nvlink_active
# (the GPU with the fewest active links), ib_ports_up (InfiniBand ports Active; RoCE not counted)
# , ib_rate_gbps (the slowest active InfiniBand port) and fabricmanager_version. A fleet of one
# GPU model: healthy NVLink and InfiniBand nodes, one node with two links down on GPU 3 (the
# nvlink-down scenario), one with two ports down (ib-port-down), one with a port at half rate
# (ib-rate-low) and one whose Fabric Manager is another version (fm-version). Each is the outlier
# for its figure with its value beside the group's; no other node is; a node whose snapshot has
# no such section (or no Fabric Manager) is never judged on it.
set -uo pipefail
: "${GPUDOCTOR:?}" "${SRC:?}"
command -v jq >/dev/null || { echo "SKIP: jq not installed"; exit 77; }
export GPUDOCTOR_CONFIG=/dev/null NO_COLOR=1 GPUDOCTOR_STATE_DIR=off
. "$SRC/tests/e2e/lib.bash"
sc=$SRC/tests/scenarios
node() { jq --arg h "$2" '.hostname = $h' "$sc/$1/snapshot.json" >"$tmp/in/$2.json"; }
mkdir "$tmp/in"
for i in 1 2 3 4 5 6; do
    node healthy-8gpu-nvlink "nvl0$i"
    node healthy-8gpu-ib "ib0$i"
done
node nvlink-down nvl-down
node ib-port-down ib-down
node ib-rate-low ib-slow
node fm-version fm-other
"$GPUDOCTOR" fleet --json "$tmp/in" >"$tmp/r.json" 2>"$tmp/err"
rc=$?
[ "$rc" = 1 ] || [ "$rc" = 2 ] || fail "fleet exited with $rc: $(head -3 "$tmp/err")"

for m in nvlink_active ib_ports_up ib_rate_gbps fabricmanager_version; do
    jq -e --arg m "$m" '.metrics[] | select(.name == $m) | .in_evidence == true' "$tmp/r.json" >/dev/null ||
        fail "metric $m: not in the evidence"
done
# who is an outlier for each figure, with the node's value and GPU
reasons() {
    jq -c --arg m "$1" '[.nodes[] | .name as $n | .reasons[] | select(.metric == $m)
        | [$n, .node.value, .node.gpu, .majority]] | sort' "$tmp/r.json"
}
check() {
    [ "$2" = "$3" ] || fail "$1: got $2, want $3"
}
check nvlink_active "$(reasons nvlink_active)" '[["nvl-down",16,3,"18"]]'
check ib_ports_up "$(reasons ib_ports_up)" '[["ib-down",2,null,"4"]]'
check ib_rate_gbps "$(reasons ib_rate_gbps)" '[["ib-slow",200,null,"400"]]'
check fabricmanager_version "$(reasons fabricmanager_version)" '[["fm-other","550.90.07",null,"550.54.15"]]'
check "ib01's Fabric Manager" "$(jq -c '.nodes[] | select(.name == "ib01") | .values.fabricmanager_version' "$tmp/r.json")" null
# the values of healthy nodes, and unknown where the snapshot has no such section
check "nvl01's links" "$(jq -c '.nodes[] | select(.name == "nvl01") | .values.nvlink_active.value' "$tmp/r.json")" 18
check "ib01's ports" "$(jq -c '.nodes[] | select(.name == "ib01") | [.values.ib_ports_up.value, .values.ib_rate_gbps.value]' "$tmp/r.json")" '[4,400]'
check "nvl01's InfiniBand" "$(jq -c '.nodes[] | select(.name == "nvl01") | .values.ib_ports_up' "$tmp/r.json")" null
# the text report names the figure beside the group's
"$GPUDOCTOR" fleet "$tmp/in" >"$tmp/r.txt" 2>/dev/null
grep -A6 '^[0-9]*\. nvl-down ' "$tmp/r.txt" | grep -E 'nvlink_active +16 links \(GPU 3\) +group' >/dev/null ||
    fail "text report: nvl-down's evidence: $(grep -A6 'nvl-down' "$tmp/r.txt" | head -8)"

e2e_done "fleet fabric figures: 4 outliers found, no other node flagged"
