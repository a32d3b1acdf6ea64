#!/usr/bin/env bash
# `gpudoctor fleet --html FILE` where FILE cannot be written (its directory missing, or not
# writable, or FILE a directory): said before the inputs are read or Prometheus is asked, which
# can take until --deadline, not after all that work. A stream whose writer never ends is not
# waited for, no server is asked; the error names the file, exit 3 (64 for a directory), and no
# report is printed. A device (/dev/null) is still written in place, a link (/dev/stdout)
# followed.
set -uo pipefail
: "${GPUDOCTOR:?}" "${SRC:?}"
export GPUDOCTOR_CONFIG=/dev/null NO_COLOR=1 LANG=C.UTF-8
. "$SRC/tests/e2e/lib.bash"
need timeout mkfifo
BASE=$SRC/tests/scenarios/healthy-8gpu-busy/snapshot.json
WRITER=
trap '[ -n "$WRITER" ] && kill "$WRITER" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT

# a stream that stays open (its writer sleeps): read to its end, fleet would wait 30 s
mkfifo "$tmp/fifo"
sleep 30 >"$tmp/fifo" &
WRITER=$!
rc=0
timeout 10 "$GPUDOCTOR" fleet --html "$tmp/missing/page.html" - <"$tmp/fifo" >"$tmp/out" \
    2>"$tmp/err" || rc=$?
kill "$WRITER" 2>/dev/null
wait "$WRITER" 2>/dev/null
WRITER=
check "missing directory, stream: exit status (not timeout's 124)" "$rc" 3
check "missing directory, stream: standard error" "$(cat "$tmp/err")" \
    "gpudoctor fleet: cannot write $tmp/missing/page.html: No such file or directory"
check "missing directory, stream: no report" "$(wc -c <"$tmp/out")" 0

# Prometheus is not asked (nothing listens on port 9: asked, it would be its error)
rc=0
"$GPUDOCTOR" fleet --html "$tmp/missing/page.html" --prometheus http://127.0.0.1:9/ >"$tmp/out" \
    2>"$tmp/err" || rc=$?
check "missing directory, Prometheus: exit status" "$rc" 3
check "missing directory, Prometheus: standard error" "$(cat "$tmp/err")" \
    "gpudoctor fleet: cannot write $tmp/missing/page.html: No such file or directory"

# a directory given for the file: a usage error
rc=0
"$GPUDOCTOR" fleet --html "$tmp" "$BASE" >"$tmp/out" 2>"$tmp/err" || rc=$?
check "a directory: exit status" "$rc" 64
check "a directory: standard error" "$(cat "$tmp/err")" \
    "gpudoctor fleet: $tmp is a directory: give a file name"

# a directory that is not writable (root may write any: checked for others only)
mkdir "$tmp/ro"
chmod 555 "$tmp/ro"
if [ "$(id -u)" != 0 ]; then
    rc=0
    "$GPUDOCTOR" fleet --html "$tmp/ro/page.html" "$BASE" >"$tmp/out" 2>"$tmp/err" || rc=$?
    check "not writable: exit status" "$rc" 3
    check "not writable: standard error" "$(cat "$tmp/err")" \
        "gpudoctor fleet: cannot write $tmp/ro/page.html: Permission denied"
fi
chmod 755 "$tmp/ro"

# a device in a directory not the user's to write: written in place
rc=0
"$GPUDOCTOR" fleet --html /dev/null "$BASE" >"$tmp/out" 2>"$tmp/err" || rc=$?
check "/dev/null: exit status" "$rc" 0
check "/dev/null: standard error" "$(cat "$tmp/err")" ""
check "/dev/null: the text report" "$(head -1 "$tmp/out")" "1 node, 1 GPU model: no outlier"

# written through a link whose directory is not the user's to write (/dev/stdout)
rc=0
"$GPUDOCTOR" fleet --html /dev/stdout "$BASE" >"$tmp/out" 2>"$tmp/err" || rc=$?
check "/dev/stdout: exit status" "$rc" 0
check "/dev/stdout: the page first" "$(head -1 "$tmp/out")" "<!DOCTYPE html>"
check "/dev/stdout: standard error" "$(cat "$tmp/err")" ""

e2e_done "ok"
