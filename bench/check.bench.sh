#!/usr/bin/env bash
# gpudoctor check --window 0 on the troubled 8-GPU server of `make demo` (the simulator's
# scenarios/troubled-8xh100.json with the host tree tests/scenarios/troubled-8xh100/root):
# wall time and peak RSS end to end (goal: < 20 ms), and the rules alone on a captured snapshot.
set -euo pipefail
scenario=$SRC/scenarios/troubled-8xh100.json
root=$SRC/tests/scenarios/troubled-8xh100/root
echo "## gpudoctor check, 8 simulated H100s with problems"
echo
if [ ! -f "$scenario" ] || [ ! -f "$SIM_LIB" ] || [ ! -d "$root" ]; then
    echo "(skipped: simulator, scenario or host tree missing)"
    exit 0
fi
echo "Goal: \`check --window 0\` under 20 ms wall. Median of 30 runs after 3 warm-up runs;"
echo "\`--from\` runs the same rules and renderer on a snapshot of the same server, without collecting."
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
export GPUDOCTOR_NVML_LIB=$SIM_LIB NVML_SIM_SCENARIO=$scenario GPUDOCTOR_CONFIG=/dev/null
snap=$(mktemp)
trap 'rm -f "$snap"' EXIT
"$GPUDOCTOR" snapshot --window 0 --root "$root" -o "$snap"
# gpudoctor's exit status is its verdict (2 here): runstat measures, it does not judge.
row "gpudoctor check --window 0 (collect, rules, text report)" "$GPUDOCTOR" check --window 0 --root "$root"
row "gpudoctor check --window 0 --json" "$GPUDOCTOR" check --window 0 --json --root "$root"
row "gpudoctor check --from snapshot (rules and report only)" "$GPUDOCTOR" check --from "$snap"
row "baseline: /bin/true" /bin/true
