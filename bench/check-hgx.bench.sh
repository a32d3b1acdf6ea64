#!/usr/bin/env bash
# gpudoctor check --window 0 on the troubled 8 x H100 HGX server of `make demo-hgx`
# (tests/scenarios/troubled-hgx-8xh100: NVSwitches, Fabric Manager, InfiniBand): what the fabric
# collectors and rules of issue 12 cost (goal: within 25 % of check before them). With
# BASELINE_BUILD=DIR (a build of an older commit, its simulator in DIR/sim), the same runs of that
# build follow in the same table, on a copy of the scenario it can read: its NVLinks as the
# older list of states, without the keys it does not know (fabric, recovery_action).
set -euo pipefail
case_dir=$SRC/tests/scenarios/troubled-hgx-8xh100
echo "## gpudoctor check, the troubled HGX server (NVSwitch, Fabric Manager, InfiniBand)"
echo
if [ ! -f "$case_dir/scenario.json" ] || [ ! -f "$SIM_LIB" ] || [ ! -d "$case_dir/root" ]; then
    echo "(skipped: simulator, scenario or host tree missing)"
    exit 0
fi
echo "Goal: \`check --window 0\` within 25 % of its cost before the fabric collectors and rules"
echo "(issue 12). Median of 30 runs after 3 warm-up runs."
echo
echo "| build | what | wall median (ms) | wall p95 (ms) | peak RSS (MiB) |"
echo "|---|---|---|---|---|"
row() {
    local build=$1 name=$2
    shift 2
    local r
    r=$("$RUNSTAT" -n 30 -w 3 -- "$@")
    awk -v b="$build" -v name="$name" '{for (i = 1; i <= NF; i++) {split($i, kv, "="); v[kv[1]] = kv[2]}}
        END {printf "| %s | %s | %.1f | %.1f | %.1f |\n", b, name, v["wall_ms_median"], v["wall_ms_p95"], v["rss_kib_max"] / 1024}' <<<"$r"
}
export GPUDOCTOR_CONFIG=/dev/null GPUDOCTOR_STATE_DIR=off NVML_SIM_PROC=$case_dir/root/proc
measure() { # LABEL GPUDOCTOR SIM SCENARIO
    GPUDOCTOR_NVML_LIB=$3 NVML_SIM_SCENARIO=$4 \
        row "$1" "check --window 0" "$2" check --window 0 --root "$case_dir/root"
    GPUDOCTOR_NVML_LIB=$3 NVML_SIM_SCENARIO=$4 \
        row "$1" "check --window 0 --json" "$2" check --window 0 --json --root "$case_dir/root"
}
measure "this one" "$GPUDOCTOR" "$SIM_LIB" "$case_dir/scenario.json"
if [ -n "${BASELINE_BUILD:-}" ]; then
    old=$(mktemp)
    trap 'rm -f "$old"' EXIT
    jq '.gpus |= [.[] | .nvlinks = [.nvlink[].active] | del(.nvlink, .fabric, .recovery_action)]' \
        "$case_dir/scenario.json" >"$old"
    measure "baseline ($(git -C "$BASELINE_BUILD/.." log -1 --format=%h 2>/dev/null || echo "$BASELINE_BUILD"))" \
        "$BASELINE_BUILD/gpudoctor" "$BASELINE_BUILD/sim/libnvidia-ml.so.1" "$old"
    measure "this one, again" "$GPUDOCTOR" "$SIM_LIB" "$case_dir/scenario.json"
fi
