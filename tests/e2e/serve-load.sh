#!/usr/bin/env bash
# A short functional load test (the 60-second run is bench/serve.bench.sh): wrk against /metrics
# with 32 connections for 5 s; every answer a 200, no socket error, the memory flat.
. "$SRC/tests/fixtures/serve/common.bash"
command -v wrk >/dev/null || { echo "SKIP: wrk is not installed"; exit 77; }

start_serve "$SRC/scenarios/healthy-8xh100.json" --interval 1s --window 0 --only nvml
wait_ready
rss() { awk '/^VmRSS:/ {print $2}' "/proc/$SERVE_PID/status"; }
url=http://127.0.0.1:$PORT/metrics
wrk -t2 -c32 -d1s "$url" >/dev/null # warm up: every connection's buffers, a few cycles
before=$(rss)
wrk -t2 -c32 -d5s --latency "$url" >"$TMP/wrk.out"
after=$(rss)
cat "$TMP/wrk.out"
grep -q "Non-2xx or 3xx responses" "$TMP/wrk.out" && fail "answers other than 200"
grep -q "Socket errors" "$TMP/wrk.out" && fail "socket errors"
n=$(awk '/requests in/ {print $1}' "$TMP/wrk.out")
[ "${n:-0}" -gt 1000 ] || fail "only ${n:-0} requests answered in 5 s"
echo "RSS: $before KiB before, $after KiB after"
if grep -qa __asan_init "$GPUDOCTOR"; then
    # AddressSanitizer keeps freed memory in quarantine: RSS grows by design; leaks are caught
    # by LeakSanitizer at the clean stop below instead.
    echo "note: AddressSanitizer build, RSS growth not judged"
elif [ $((after - before)) -ge 1024 ]; then
    fail "RSS grew by $((after - before)) KiB under load"
fi
check "still serving" "$(curl -s -o /dev/null -w '%{http_code}' "$url")" 200
stop_serve TERM
finish
