#!/usr/bin/env bash
# gpudoctor fleet on synthetic fleets (tests/helpers/fleet-synth.py: copies of an 8-GPU server
# with noise and planted faults): wall time and peak RSS for 100 and 1,000 nodes, from a directory
# of files and from one stream on standard input. The goal: under 1 s for 1,000 nodes.
set -euo pipefail
echo "## gpudoctor fleet: 1,000 nodes"
echo
command -v python3 >/dev/null || { echo "(skipped: python3 not installed)"; exit 0; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
base=$SRC/tests/scenarios/healthy-8gpu-busy/snapshot.json
export GPUDOCTOR_CONFIG=/dev/null
for n in 100 1000; do
    mkdir "$tmp/d$n"
    python3 "$SRC/tests/helpers/fleet-synth.py" "$base" "$n" "$tmp/d$n" --seed 1
    python3 "$SRC/tests/helpers/fleet-synth.py" "$base" "$n" - --seed 1 >"$tmp/s$n.jsonl"
done
size=$(stat -c %s "$tmp/s1000.jsonl")
echo "Each node a snapshot of an 8 x H100 server ($((size / 1000 / 1000)) KB of JSON each, $((size / 1000000)) MB for 1,000 nodes): every snapshot"
echo "is parsed and run through every rule, then judged with its group. Median of 3 runs (after"
echo "one warm-up), peak RSS of any."
echo
echo "| nodes | input | wall (ms) | peak RSS (MiB) |"
echo "|---|---|---|---|"
row() { # NODES INPUT COMMAND...
    local nodes=$1 input=$2 r
    shift 2
    r=$("$RUNSTAT" -n 3 -w 1 -- "$@")
    awk -v n="$nodes" -v inp="$input" '{for (i = 1; i <= NF; i++) {split($i, kv, "="); v[kv[1]] = kv[2]}}
        END {printf "| %s | %s | %.0f | %.1f |\n", n, inp, v["wall_ms_median"], v["rss_kib_max"] / 1024}' <<<"$r"
}
for n in 100 1000; do
    row "$n" "directory" "$GPUDOCTOR" fleet --json "$tmp/d$n"
    row "$n" "stream (\`-\`)" bash -c '"$0" fleet --json - <"$1"' "$GPUDOCTOR" "$tmp/s$n.jsonl"
done
