#!/usr/bin/env bash
# gpudoctor serve on the simulated 8-GPU server: scrape latency p50/p99, scrapes per second, bytes
# and CPU time per scrape and RSS under wrk against /metrics, plain and gzip (as Prometheus asks),
# beside prometheus-node-exporter serving its own /metrics in the same run (goal for serve: p99
# < 1 ms, >= 10,000 scrapes/s, < 10 MB). SERVE_BENCH_SECONDS sets each run's length (default 60).
set -euo pipefail
secs=${SERVE_BENCH_SECONDS:-60}
scenario=$SRC/scenarios/healthy-8xh100.json
echo "## gpudoctor serve: scrapes of /metrics"
echo
if ! command -v wrk >/dev/null || [ ! -f "$SIM_LIB" ]; then
    echo "(skipped: needs wrk and the simulator)"
    exit 0
fi
tmp=$(mktemp -d)
pids=()
cleanup() {
    local p
    for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT

free_port() {
    local p
    while :; do
        p=$((20000 + RANDOM % 30000))
        ss -Hltn "sport = :$p" 2>/dev/null | grep . >/dev/null || { echo "$p"; return; }
    done
}
rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }
hwm_kib() { awk '/^VmHWM:/ {print $2}' "/proc/$1/status"; }
# user + system CPU time of a process, in clock ticks (fields 14 and 15 after the command name)
cpu_ticks() { sed 's/.*) //' "/proc/$1/stat" | awk '{print $12 + $13}'; }
hz=$(getconf CLK_TCK)

# row NAME PID URL [CODING]: wrk with 2 threads and 16 connections, asking for CODING (gzip) or
# for nothing; then the body's size as sent, the process's CPU time per scrape and its memory
row() {
    local name=$1 pid=$2 url=$3 coding=${4:-} out=$tmp/wrk.out bytes hdr=()
    [ -n "$coding" ] && hdr=(-H "Accept-Encoding: $coding")
    wrk -t2 -c16 -d2s "${hdr[@]}" "$url" >/dev/null # warm up
    local before cpu0
    before=$(rss_kib "$pid")
    cpu0=$(cpu_ticks "$pid")
    wrk -t2 -c16 -d"${secs}s" --latency "${hdr[@]}" "$url" >"$out"
    bytes=$(curl -s "${hdr[@]}" "$url" | wc -c)
    awk -v name="$name" -v coding="${coding:-(none)}" -v before="$before" -v after="$(rss_kib "$pid")" \
        -v hwm="$(hwm_kib "$pid")" -v bytes="$bytes" -v cpu="$(($(cpu_ticks "$pid") - cpu0))" -v hz="$hz" '
        function ms(v) { if (v ~ /us$/) return v / 1000; if (v ~ /ms$/) return v + 0; if (v ~ /s$/) return v * 1000; return v }
        /^ +50%/ { p50 = ms($2) } /^ +99%/ { p99 = ms($2) }
        / requests in / { n = $1 }
        /Requests\/sec/ { rps = $2 }
        /Non-2xx|Socket errors/ { errors = errors $0 " " }
        END {
            printf "| %s | %s | %.1f | %.2f | %.2f | %.1f | %.1f | %.1f → %.1f (peak %.1f) | %s |\n", name, coding,
                bytes / 1024, p50, p99, rps, (n > 0 ? cpu / hz * 1e6 / n : 0), before / 1024, after / 1024,
                hwm / 1024, errors == "" ? "none" : errors
        }' "$out"
}

export GPUDOCTOR_NVML_LIB=$SIM_LIB NVML_SIM_SCENARIO=$scenario NVML_SIM_QUIET=1 GPUDOCTOR_CONFIG=/dev/null
"$GPUDOCTOR" serve --listen 127.0.0.1:0 --interval 15s --window 0 2>"$tmp/serve.log" &
pids+=($!)
serve_pid=$!
for i in $(seq 100); do
    port=$(sed -n 's/.*(port \([0-9]*\)).*/\1/p' "$tmp/serve.log")
    [ -n "$port" ] && curl -sf "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
    sleep 0.1
done

echo "wrk, 2 threads, 16 keep-alive connections, ${secs} s each, on this machine's loopback; both"
echo "servers measured in the same run, each without and with \`Accept-Encoding: gzip\` (what"
echo "Prometheus sends). Body: as sent, compressed or not. CPU: the server's user + system time"
echo "over the run divided by the scrapes answered (wrk itself runs on the same cores). Goal for"
echo "gpudoctor serve: p99 under 1 ms, at least 10,000 scrapes/s, under 10 MB."
echo
echo "| server | Accept-Encoding | body (KiB) | p50 (ms) | p99 (ms) | scrapes/s | CPU per scrape (µs) | RSS before → after (MiB) | errors |"
echo "|---|---|---|---|---|---|---|---|---|"
row "gpudoctor serve (8 simulated H100s)" "$serve_pid" "http://127.0.0.1:$port/metrics"
row "gpudoctor serve (8 simulated H100s)" "$serve_pid" "http://127.0.0.1:$port/metrics" gzip
row "gpudoctor serve /healthz" "$serve_pid" "http://127.0.0.1:$port/healthz"
if command -v prometheus-node-exporter >/dev/null; then
    nport=$(free_port)
    prometheus-node-exporter --web.listen-address="127.0.0.1:$nport" >"$tmp/node.log" 2>&1 &
    pids+=($!)
    node_pid=$!
    for i in $(seq 100); do
        curl -sf "http://127.0.0.1:$nport/metrics" >/dev/null 2>&1 && break
        sleep 0.1
    done
    row "baseline: prometheus-node-exporter (its own metrics)" "$node_pid" "http://127.0.0.1:$nport/metrics"
    row "baseline: prometheus-node-exporter (its own metrics)" "$node_pid" "http://127.0.0.1:$nport/metrics" gzip
else
    echo "| baseline: prometheus-node-exporter | | (not installed) | | | | | | |"
fi
echo
echo "Load on the machine during the run (1-minute average): $(cut -d' ' -f1 /proc/loadavg)."
