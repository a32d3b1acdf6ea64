#!/usr/bin/env bash
# The load test of issue 7: wrk against /metrics with 32 connections for 60 s (SERVE_LOAD_SECONDS;
# 10 s in an AddressSanitizer build); every answer a 200, no socket error, and the memory flat:
# resident memory read every 5 s never more than 1 MiB above what it was after the warm-up.
# (bench/serve.bench.sh measures latency and throughput; this judges correctness under load.)
. "$SRC/tests/fixtures/serve/common.bash"
command -v wrk >/dev/null || { echo "SKIP: wrk is not installed"; exit 77; }

# A 5-second history fills during the warm-up: the ring of past samples (up to 256 of them, see
# docs/serve.md) grows until then by design, and memory must be flat after it.
start_serve "$SRC/scenarios/healthy-8xh100.json" --interval 1s --history 5s --window 0 --only nvml
wait_ready
rss() { awk '/^VmRSS:/ {print $2}' "/proc/$SERVE_PID/status"; }
url=http://127.0.0.1:$PORT/metrics
wrk -t2 -c32 -d8s "$url" >/dev/null # warm up: every connection's buffers, the history full
asan=
grep -qa __asan_init "$GPUDOCTOR" && asan=1
secs=${SERVE_LOAD_SECONDS:-60}
[ -n "$asan" ] && secs=10
before=$(rss)
wrk -t2 -c32 -d"${secs}s" --latency "$url" >"$TMP/wrk.out" &
wrk_pid=$!
peak=$before
while kill -0 "$wrk_pid" 2>/dev/null; do
    sleep 5
    now=$(rss)
    [ "${now:-0}" -gt "$peak" ] && peak=$now
done
wait "$wrk_pid" || fail "wrk: status $?"
after=$(rss)
cat "$TMP/wrk.out"
grep -q "Non-2xx or 3xx responses" "$TMP/wrk.out" && fail "answers other than 200"
grep -q "Socket errors" "$TMP/wrk.out" && fail "socket errors"
n=$(awk '/requests in/ {print $1}' "$TMP/wrk.out")
[ "${n:-0}" -gt $((secs * 200)) ] || fail "only ${n:-0} requests answered in $secs s"
echo "RSS: $before KiB after the warm-up, at most $peak KiB during $secs s, $after KiB after"
if [ -n "$asan" ]; then
    # AddressSanitizer keeps freed memory in quarantine: RSS grows by design; leaks are caught
    # by LeakSanitizer at the clean stop below instead.
    echo "note: AddressSanitizer build, RSS growth not judged"
elif [ $((peak - before)) -ge 1024 ]; then
    fail "RSS grew by $((peak - before)) KiB under load"
fi
check "still serving" "$(curl -s -o /dev/null -w '%{http_code}' "$url")" 200
stop_serve TERM
finish
