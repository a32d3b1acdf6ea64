#!/usr/bin/env bash
# The performance budget's own case: `gpudoctor check --window 0` on the simulated 8-GPU server
# with 64 GPU processes among 2,000 host processes (goal: under 20 ms wall, under 8 MB peak RSS).
#
#   bench/check-busy.bench.sh [PROCESSES [GPU_PROCESSES]]     (default: 2000 64; needs root)
#
# Method: as bench/procs-discovery.bench.sh, real processes in new mount and PID namespaces, a
# tmpfs /dev whose nvidia0 is a plain file; GPU_PROCESSES of them hold it. The simulator plays the
# troubled server's eight GPUs (scenarios/troubled-8xh100.json) with its process lists replaced by
# those pids, spread over the GPUs, so NVML and /proc agree as on a real machine. gpudoctor reads
# this machine's own /proc, /sys and logs (--root /): the whole collection, rules and report.
set -euo pipefail
cd "$(dirname "$0")/.."

N=${1:-2000}
K=${2:-64}
GPUDOCTOR=$(realpath "${GPUDOCTOR:-build/gpudoctor}")
SIM_LIB=$(realpath "${SIM_LIB:-build/sim/libnvidia-ml.so.1}")
RUNSTAT=$(realpath "${RUNSTAT:-build/tests/helpers/runstat}")

if [ -z "${CHECK_BENCH_INNER:-}" ]; then
    echo "## gpudoctor check on a busy server: $K GPU processes among $N"
    echo
    if [ "$(id -u)" != 0 ]; then
        echo "(skipped: needs root for the mount and PID namespaces that keep the test processes apart)"
        exit 0
    fi
    if [ ! -x "$GPUDOCTOR" ] || [ ! -f "$SIM_LIB" ] || [ ! -x "$RUNSTAT" ]; then
        echo "(skipped: build first: gpudoctor, the simulator and tests/helpers/runstat)"
        exit 0
    fi
    if ! unshare -m -p --kill-child true 2>/dev/null; then
        echo "(skipped: mount and PID namespaces are not allowed here)"
        exit 0
    fi
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    if ! cc -O2 -o "$tmp/spawn" bench/spawn.c 2>/dev/null; then
        echo "(skipped: a C compiler is needed to build the process spawner)"
        exit 0
    fi
    # unshare --kill-child: when it ends, so does every process in the namespace.
    CHECK_BENCH_INNER=1 TMPD="$tmp" GPUDOCTOR="$GPUDOCTOR" SIM_LIB="$SIM_LIB" RUNSTAT="$RUNSTAT" \
        unshare -m -p --fork --kill-child --mount-proc --propagation private bash "$0" "$N" "$K"
    exit $?
fi

# ---- inside the namespaces: this shell is PID 1 ----
. bench/ns-inside.bash

exec {spawner}< <(exec "$TMPD/spawn" "$((N - 1))" "$K" /dev/nvidia0 "$TMPD/data")
read -r made <&"$spawner"
holders() { find /proc/[0-9]*/fd -lname /dev/nvidia0 2>/dev/null | cut -d/ -f3 | sort -un; }
for _ in $(seq 200); do
    [ "$(holders | wc -l)" -ge "$K" ] && break
    sleep 0.05
done
holders | jq -R 'tonumber' | jq -s '.' >"$TMPD/pids.json"
# Eight GPUs, the holders dealt round-robin, 1 GiB and some SM use each.
jq --slurpfile pids "$TMPD/pids.json" '
    .timeline = []
    | .gpus |= [ to_entries[] | .key as $i | .value
        | .processes = [ $pids[0] | to_entries[] | select(.key % 8 == $i)
            | { pid: .value, used_bytes: 1073741824, type: ["compute"], sm_util_pct: 10 } ] ]' \
    scenarios/troubled-8xh100.json >"$TMPD/scenario.json"

export GPUDOCTOR_NVML_LIB=$SIM_LIB NVML_SIM_SCENARIO=$TMPD/scenario.json GPUDOCTOR_CONFIG=/dev/null
seen=$("$GPUDOCTOR" snapshot --window 0 --only nvml,processes |
    jq '[.processes.processes[] | select(any(.gpus[]; .nvml_listed))] | length')
procs=$(find /proc -maxdepth 1 -name '[0-9]*' | wc -l)

echo "Goal: under 20 ms wall and under 8 MB peak RSS. $procs processes in the PID namespace"
echo "(the spawner's $made children, itself and this shell), $K of them holding /dev/nvidia0 and"
echo "listed by the simulated NVML ($seen GPU processes seen by gpudoctor). Median and p95 of 30 runs"
echo "after 3 warm-up runs; the baseline is the cost of starting a process here."
echo
echo "| what | wall median (ms) | wall p95 (ms) | peak RSS (MiB) |"
echo "|---|---|---|---|"
row() {
    local name=$1 r
    shift
    r=$("$RUNSTAT" -n 30 -w 3 -- "$@")
    awk -v name="$name" '{for (i = 1; i <= NF; i++) {split($i, kv, "="); v[kv[1]] = kv[2]}}
        END {printf "| %s | %.1f | %.1f | %.1f |\n", name, v["wall_ms_median"], v["wall_ms_p95"], v["rss_kib_max"] / 1024}' <<<"$r"
}
row "gpudoctor check --window 0" "$GPUDOCTOR" check --window 0
row "gpudoctor check --window 0 --only nvml,processes" "$GPUDOCTOR" check --window 0 --only nvml,processes
row "baseline: /bin/true" /bin/true
