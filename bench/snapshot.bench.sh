#!/usr/bin/env bash
# gpudoctor snapshot on the bundled 8-GPU scenario: wall time and peak RSS (goal: < 20 ms, < 8 MB).
set -euo pipefail
scenario=$SRC/scenarios/healthy-8xh100.json
echo "## gpudoctor snapshot, 8 simulated H100s"
echo
if [ ! -f "$scenario" ] || [ ! -f "$SIM_LIB" ]; then
    echo "(skipped: simulator or scenario not built)"
    exit 0
fi
echo "Goal: under 20 ms wall and under 8 MB peak RSS. Median of 30 runs after 3 warm-up runs."
echo
echo "| what | wall median (ms) | wall p95 (ms) | peak RSS (MiB) |"
echo "|---|---|---|---|"
row() {
    local name=$1
    shift
    local r
    r=$("$RUNSTAT" -n 30 -w 3 -- "$@")
    awk -v name="$name" '{for (i = 1; i <= NF; i++) {split($i, kv, "="); v[kv[1]] = kv[2]}}
        END {printf "| %s | %.1f | %.1f | %.1f |\n", name, v["wall_ms_median"], v["wall_ms_p95"], v["rss_kib_max"] / 1024}' <<<"$r"
}
export GPUDOCTOR_NVML_LIB=$SIM_LIB NVML_SIM_SCENARIO=$scenario
row "gpudoctor snapshot (all collectors)" "$GPUDOCTOR" snapshot
row "gpudoctor snapshot --only nvml" "$GPUDOCTOR" snapshot --only nvml
row "baseline: /bin/true" /bin/true
