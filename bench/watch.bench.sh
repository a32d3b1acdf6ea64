#!/usr/bin/env bash
# gpudoctor watch at 1 Hz on the troubled 8-GPU server of `make demo` (the simulator's
# scenarios/troubled-8xh100.json with the host tree tests/scenarios/troubled-8xh100/root): the
# CPU time of watch and of its NVML helper, from /proc/PID/stat utime + stime, over
# WATCH_BENCH_SECONDS (default 60) after a warm-up. Goal: under 1 % of one core.
set -euo pipefail
scenario=$SRC/scenarios/troubled-8xh100.json
root=$SRC/tests/scenarios/troubled-8xh100/root
seconds=${WATCH_BENCH_SECONDS:-60}
warmup=5
echo "## gpudoctor watch, 1 Hz, 8 simulated H100s"
echo
if [ ! -f "$scenario" ] || [ ! -f "$SIM_LIB" ] || [ ! -d "$root" ]; then
    echo "(skipped: simulator, scenario or host tree missing)"
    exit 0
fi
echo "Goal: under 1 % of one core. CPU time (utime + stime of watch and its NVML helper process)"
echo "over ${seconds} s after ${warmup} s of warm-up, divided by the wall time; RSS of watch at"
echo "the end. The live row scans this machine's /proc ($(ls -d /proc/[0-9]* | wc -l) processes"
echo "now); the process scan runs every 5 s, and at once when NVML lists other processes."
echo
echo "| what | CPU (% of one core) | watch RSS (MiB) |"
echo "|---|---|---|"
export GPUDOCTOR_NVML_LIB=$SIM_LIB NVML_SIM_SCENARIO=$scenario GPUDOCTOR_CONFIG=/dev/null
tmp=$(mktemp -d)
trap 'tmux -L gpudoctor-watch-bench kill-server 2>/dev/null || true; rm -rf "$tmp"' EXIT
tck=$(getconf CLK_TCK)

# Ticks of pid and its children (the NVML helper).
ticks() {
    local t=0 p
    for p in "$1" $(pgrep -P "$1" || true); do
        t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || echo 0)))
    done
    echo "$t"
}

# measure LABEL PID: samples the running watch PID, then stops it.
measure() {
    local label=$1 pid=$2 t0 t1 w0 w1 rss
    sleep "$warmup"
    t0=$(ticks "$pid")
    w0=$(date +%s.%N)
    sleep "$seconds"
    t1=$(ticks "$pid")
    w1=$(date +%s.%N)
    rss=$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status")
    kill "$pid" 2>/dev/null || true
    awk -v l="$label" -v d="$((t1 - t0))" -v tck="$tck" -v w0="$w0" -v w1="$w1" -v rss="$rss" \
        'BEGIN { printf "| %s | %.2f | %.1f |\n", l, d / tck / (w1 - w0) * 100, rss / 1024 }'
}

"$GPUDOCTOR" watch --plain -n 1 --root "$root" >/dev/null 2>&1 &
measure "watch --plain -n 1 (8 GPUs, demo host tree)" $!
wait 2>/dev/null || true
"$GPUDOCTOR" watch --plain -n 1 --root "$root" --record "$tmp/rec.jsonl" >/dev/null 2>&1 &
measure "watch --plain -n 1 --record FILE" $!
wait 2>/dev/null || true
echo "| (recording: $(($(wc -c <"$tmp/rec.jsonl") / 1024)) KiB for ${seconds} s plus warm-up) | | |"
if command -v tmux >/dev/null; then
    LC_ALL=C.UTF-8 tmux -L gpudoctor-watch-bench -f /dev/null new-session -d -x 120 -y 40 \
        "sh -c 'echo \$\$ >$tmp/pid; exec $GPUDOCTOR watch -n 1 --root $root 2>/dev/null'"
    for _ in $(seq 50); do [ -s "$tmp/pid" ] && break; sleep 0.1; done
    measure "watch -n 1 (the full-screen view, 120x40, in tmux)" "$(cat "$tmp/pid")"
fi
"$GPUDOCTOR" watch --plain -n 1 >/dev/null 2>&1 &
measure "watch --plain -n 1 (this machine's /proc)" $!
wait 2>/dev/null || true
