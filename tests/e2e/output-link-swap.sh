#!/usr/bin/env bash
# -o FILE in a directory another user can write (docs/check.md, "-o"): while that user exchanges
# FILE with a link to a file of root's as fast as it can (tests/helpers/link-swap), root's
# `profile save -o FILE` writes only FILE's own name: the file the link names is never replaced.
# Before, the writer looked at the name with lstat and then followed it with stat and realpath,
# and lost the race within a hundred runs.
# ctest: timeout 180
set -u
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (the other user)"; exit 77; }
command -v setpriv >/dev/null && id nobody >/dev/null 2>&1 || { echo "SKIP: setpriv or nobody missing"; exit 77; }
T=$(mktemp -d)
trap 'kill "$swap" 2>/dev/null; rm -rf "$T"' EXIT
chmod 755 "$T"
export GPUDOCTOR_CONFIG=/dev/null GPUDOCTOR_NVML_LIB=$SIM_LIB NVML_SIM_QUIET=1
export NVML_SIM_SCENARIO=$SRC/scenarios/healthy-8xh100.json
mkdir "$T/theirs" "$T/root"
echo 'root:x:0:0:root:/root:/bin/bash' >"$T/root/passwd"
want=$(cat "$T/root/passwd")
chown nobody "$T/theirs"
setpriv --reuid=65534 --regid=65534 --clear-groups sh -c "echo '# theirs' >'$T/theirs/out.conf'"
setpriv --reuid=65534 --regid=65534 --clear-groups \
    "$HELPERS/link-swap" "$T/theirs" out.conf "$T/root/passwd" 60 >/dev/null &
swap=$!
# Started once it has made its first link: within 10 s, however slow the machine (a sanitized
# helper on a loaded one took more than the 0.2 s this waited before).
# Seen once is enough: looked at again, the two names may be exchanged between the two tests.
started=
for _ in $(seq 100); do
    if [ -L "$T/theirs/out.conf" ] || [ -L "$T/theirs/out.conf.link" ]; then
        started=1
        break
    fi
    sleep 0.1
done
[ -n "$started" ] || { echo "FAIL: link-swap did not start"; exit 1; }
runs=0
while kill -0 "$swap" 2>/dev/null && [ "$runs" -lt 150 ]; do
    "$GPUDOCTOR" profile save -o "$T/theirs/out.conf" >/dev/null 2>>"$T/err"
    runs=$((runs + 1))
    [ "$(cat "$T/root/passwd")" = "$want" ] || break
done
kill "$swap" 2>/dev/null
wait "$swap" 2>/dev/null
if [ "$(cat "$T/root/passwd")" != "$want" ]; then
    echo "FAIL: after $runs runs root's file holds: $(head -c 200 "$T/root/passwd")"
    exit 1
fi
[ -e "$T/root/passwd" ] && [ ! -L "$T/root/passwd" ] || { echo "FAIL: root's file replaced"; exit 1; }
[ "$runs" -ge 20 ] || { echo "FAIL: the race ran for $runs runs only"; exit 1; }
echo "ok: $runs runs against the exchanges, root's file untouched"
