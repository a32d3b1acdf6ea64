#!/usr/bin/env bash
# Hostile clients do not stop it serving: garbage, an oversized request, a request with a body,
# many idle connections, slow clients that never finish their request, and more connections than
# --max-connections. /metrics keeps being answered (at once, or once --connection-timeout frees
# connections), and the server stops cleanly afterwards.
. "$SRC/tests/fixtures/serve/common.bash"

start_serve "$SRC/scenarios/healthy-8xh100.json" --interval 2s --window 0 --only nvml \
    --max-connections 64 --connection-timeout 2s
wait_ready
url=http://127.0.0.1:$PORT/metrics
ok() { # ok [MAX_SECONDS]: /metrics answers 200 within that
    [ "$(curl -s -o /dev/null -m "${1:-2}" -w '%{http_code}' "$url")" = 200 ]
}

# garbage, a TLS hello, a 1 MiB header line, a binary flood
printf '\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03garbage\r\n\r\n' >"$TMP/tls"
head -c 65536 /dev/urandom >"$TMP/random"
{ printf 'GET /metrics HTTP/1.1\r\nX-Big: '; head -c 1048576 /dev/zero | tr '\0' a; printf '\r\n\r\n'; } >"$TMP/big"
for f in tls random big; do
    (exec 3<>"/dev/tcp/127.0.0.1/$PORT" && cat "$TMP/$f" >&3 2>/dev/null; timeout 3 cat <&3 >/dev/null 2>&1) || true
    ok || fail "/metrics after the $f request"
done
# a URL longer than a connection may hold
check "oversized URL" "$(curl -s -o /dev/null -w '%{http_code}' "$url?$(head -c 20000 /dev/zero | tr '\0' x)")" 414

# 40 idle connections and 20 slow clients (half a request line each): within the limit
fds=()
for i in $(seq 40); do
    exec {fd}<>"/dev/tcp/127.0.0.1/$PORT"
    fds+=("$fd")
done
for i in $(seq 20); do
    exec {fd}<>"/dev/tcp/127.0.0.1/$PORT"
    printf 'GET /metr' >&"$fd"
    fds+=("$fd")
done
ok 1 || fail "/metrics with 60 idle and slow connections open"

# 40 more: past --max-connections; the idle ones time out after 2 s and answers resume
for i in $(seq 40); do
    exec {fd}<>"/dev/tcp/127.0.0.1/$PORT"
    fds+=("$fd")
done
t0=$(date +%s%N)
ok 8 || fail "/metrics never answered past --max-connections"
t1=$(date +%s%N)
echo "answered $(((t1 - t0) / 1000000)) ms after going past the connection limit"
for fd in "${fds[@]}"; do exec {fd}>&-; done

# after all that: answers at once, the process did not grow without bound, it stops cleanly
ok 1 || fail "/metrics after the connections closed"
rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$SERVE_PID/status")
[ "$rss" -lt 65536 ] || fail "RSS $rss KiB"
stop_serve TERM
finish
