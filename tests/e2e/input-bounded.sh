#!/usr/bin/env bash
# Every read of an untrusted file is bounded by bytes, NUL bytes included, and ends with a clear
# error and a defined status: check, procs and reap --from /dev/zero (and standard input full of
# zeros), reap --history /dev/zero, --config /dev/zero. A NUL inside a line is an error naming the
# file, line and column; a last line that a crash left full of NULs is ignored, as a line cut
# short is. A one-line snapshot over 64 MiB loads (the line limit is the snapshot's, 256 MiB);
# over 256 MiB, the refusal says which limit.
set -uo pipefail
: "${GPUDOCTOR:?}" "${SRC:?}"
export GPUDOCTOR_CONFIG=/dev/null
. "$SRC/tests/e2e/lib.bash"
# run LIMIT ARGS...: sets RC (124: still running after LIMIT seconds) and ERR.
run() {
    local limit=$1
    shift
    timeout -k 2 "$limit" "$GPUDOCTOR" "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
    RC=$?
    ERR=$(cat "$tmp/err")
}
expect() { # STATUS REGEX WHAT
    [ "$RC" = "$1" ] || fail "$3: exit $RC, expected $1; stderr: $(head -c 300 <<<"$ERR")"
    grep -qE -- "$2" <<<"$ERR" || fail "$3: stderr does not match '$2': $(head -c 300 <<<"$ERR")"
    [ "$(wc -l <"$tmp/err")" = 1 ] || fail "$3: not one line on stderr: $(head -c 300 <<<"$ERR")"
}
NUL='a NUL byte: neither a snapshot nor a recording'

# /dev/zero: the first NUL ends it, at once (10 s is far more than it needs: it was endless).
for cmd in check procs reap; do
    run 10 $cmd --from /dev/zero
    expect 3 "^gpudoctor $cmd: /dev/zero:1:1: $NUL" "$cmd --from /dev/zero"
done
timeout -k 2 10 "$GPUDOCTOR" check --from - </dev/zero >"$tmp/out" 2>"$tmp/err"
RC=$?
ERR=$(cat "$tmp/err")
expect 3 "^gpudoctor check: -:1:1: $NUL" "check --from - </dev/zero"
# reap --history is read after a live collection (the simulator, with no process): the history
# is refused, status 3, before anything is planned.
if [ -e "${SIM_LIB:-}" ]; then
    echo '{"schema": "gpudoctor.scenario/1", "gpus": [{"index": 0}]}' >"$tmp/scenario.json"
    NVML_SIM_SCENARIO=$tmp/scenario.json run 20 reap --nvml-lib "$SIM_LIB" --history /dev/zero \
        --idle 1s --window 0.1
    expect 3 "^gpudoctor reap: --history: /dev/zero:1:1: $NUL" "reap --history /dev/zero"
else
    echo "note: no simulator: reap --history /dev/zero not run"
fi
run 10 check --from /dev/null --config /dev/zero
expect 64 "^gpudoctor check: /dev/zero:1:1: a NUL byte" "check --config /dev/zero"

# A NUL in a line of a recording: file, line and column; the rest of the file is not read.
R=$SRC/tests/scenarios/idle-held-recording/recording.jsonl
{
    head -3 "$R"
    printf '{"t_ms": 99999\0, "gpus": []}\n'
    tail -1 "$R"
} >"$tmp/nul-mid.jsonl"
run 10 check --from "$tmp/nul-mid.jsonl"
expect 3 "^gpudoctor check: $tmp/nul-mid.jsonl:4:15: $NUL" "a NUL in line 4"
# ... and in an indented snapshot.
{
    printf '{\n  "schema": "gpudoctor.snapshot/1",\n  "hostname": "a'
    printf '\0'
    printf '"\n}\n'
} >"$tmp/nul-doc.json"
run 10 check --from "$tmp/nul-doc.json"
expect 3 "^gpudoctor check: $tmp/nul-doc.json:3:17: $NUL" "a NUL in an indented snapshot"
# A last line full of NULs, without its newline (what a crash can leave): ignored.
{
    cat "$R"
    head -c 5000 /dev/zero
} >"$tmp/nul-tail.jsonl"
"$GPUDOCTOR" check --from "$R" --json >"$tmp/whole.json" 2>/dev/null
want=$?
run 10 check --from "$tmp/nul-tail.jsonl" --json
[ "$RC" = "$want" ] || fail "a NUL tail: exit $RC, the recording alone exits $want: $ERR"
cmp -s "$tmp/out" "$tmp/whole.json" || fail "a NUL tail: not the report of the recording alone"

# Line limits: a one-line snapshot of 65 MiB (blanks between its keys) loads; 300 MB of one line
# without a newline, or of an indented document, is refused after 256 MiB, saying so.
{
    printf '{"schema": "gpudoctor.snapshot/1", "hostname": "wide",'
    head -c $((65 << 20)) /dev/zero | tr '\0' ' '
    printf '"time_ms": 1764669602000}\n'
} >"$tmp/wide.json"
run 60 check --from "$tmp/wide.json" --json
[ "$RC" = 3 ] || fail "a 65 MiB line: exit $RC (a snapshot without GPUs: 3): $ERR"
grep -q '"hostname": "wide"' "$tmp/out" || fail "a 65 MiB line was not read: $ERR"
head -c 300M /dev/zero | tr '\0' 'a' | timeout 60 "$GPUDOCTOR" check --from - >/dev/null 2>"$tmp/err"
RC=$?
ERR=$(cat "$tmp/err")
# Not JSON: text to import, refused at the same limit (docs/import.md).
expect 3 "^gpudoctor check: -: larger than 256 MiB, the most gpudoctor reads\$" "a 300 MB line"
{
    echo '{'
    head -c 300M /dev/zero | tr '\0' ' '
} | timeout 60 "$GPUDOCTOR" check --from - >/dev/null 2>"$tmp/err"
RC=$?
ERR=$(cat "$tmp/err")
expect 3 "^gpudoctor check: -: larger than 256 MiB, the most a snapshot may hold\$" "a 300 MB document"

e2e_done "ok"
