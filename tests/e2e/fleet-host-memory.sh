#!/usr/bin/env bash
# fleet judges the host's memory from the EDAC counters snapshots hold (docs/fleet.md):
# host_mem_corrected and host_mem_uncorrected. Twelve healthy nodes that count a few corrected
# errors each, one whose DIMM corrects thousands, one with two uncorrectable errors (also the
# critical finding host.memory-ecc), and one without an EDAC driver, which is never judged on
# either figure. Each faulty node is the outlier for its figure with its value beside the group's;
# no other node is.
set -uo pipefail
: "${GPUDOCTOR:?}" "${SRC:?}"
command -v jq >/dev/null || { echo "SKIP: jq not installed"; exit 77; }
export GPUDOCTOR_CONFIG=/dev/null NO_COLOR=1 GPUDOCTOR_STATE_DIR=off
. "$SRC/tests/e2e/lib.bash"
base=$SRC/tests/scenarios/healthy-8gpu-busy/snapshot.json
mkdir "$tmp/in"
# node NAME UE CE: a copy of the healthy server whose EDAC driver counted UE and CE errors
node() {
    jq --arg h "$1" --argjson ue "$2" --argjson ce "$3" \
        '.hostname = $h | .host.edac_controllers = 2 | .host.mem_ue_count = $ue
         | .host.mem_ce_count = $ce | .host.edac_since_s = 86400 | .host.mem_ue_dimms = null' \
        "$base" >"$tmp/in/$1.json"
}
for i in 01 02 03 04 05 06 07 08 09 10 11 12; do
    node "node$i" 0 $((10#$i % 4))
done
node node-ce 0 5000
node node-ue 2 3
jq '.hostname = "node-noedac" | del(.host.edac_controllers, .host.mem_ue_count,
    .host.mem_ce_count, .host.edac_since_s, .host.mem_ue_dimms)' "$base" >"$tmp/in/node-noedac.json"

"$GPUDOCTOR" fleet --json "$tmp/in" >"$tmp/r.json" 2>"$tmp/err"
rc=$?
[ "$rc" = 2 ] || fail "fleet exited with $rc, not 2 (a node has a critical finding): $(head -3 "$tmp/err")"
for m in host_mem_uncorrected host_mem_corrected; do
    jq -e --arg m "$m" '.metrics[] | select(.name == $m) | .in_evidence == true' "$tmp/r.json" >/dev/null ||
        fail "metric $m: not in the evidence"
done
got=$(jq -c '[.nodes[] | select(.verdict == "outlier") | .name] | sort' "$tmp/r.json")
[ "$got" = '["node-ce","node-ue"]' ] || fail "outliers: $got"
got=$(jq -c '[.nodes[] | select(.name == "node-ce") | .reasons[] | [.metric, .node.value]]' "$tmp/r.json")
[ "$got" = '[["host_mem_corrected",5000]]' ] || fail "node-ce's reasons: $got"
got=$(jq -c '[.nodes[] | select(.name == "node-ue") | .reasons[] | .metric // .id] | sort' "$tmp/r.json")
[ "$got" = '["host.memory-ecc","host_mem_uncorrected"]' ] || fail "node-ue's reasons: $got"
got=$(jq -c '[.nodes[] | select(.name == "node-noedac") | .reasons[]] | length' "$tmp/r.json")
[ "$got" = 0 ] || fail "the node without EDAC was judged: $got reasons"

e2e_done
