#!/usr/bin/env bash
# check --from reads back what check --json wrote (docs/check.md says it does; issue 11: it was
# refused): for every snapshot and recording case of the scenario corpus and for the live demo
# server, `check --json > r.json; check --from r.json --json` gives the same verdict, findings and
# not-checked list, pretty-printed or on one line, from a file or standard input; procs and reap
# read it too; a report with a bad snapshot inside is refused with the place of the error.
set -uo pipefail
command -v jq >/dev/null || { echo "SKIP: jq not installed"; exit 77; }
: "${GPUDOCTOR:?}" "${SRC:?}"
export GPUDOCTOR_CONFIG=/dev/null NO_COLOR=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0 cases=0
fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}
# judged FILE: what a report says, without where it came from
judged() { jq -S '{verdict, findings, not_checked}' "$1"; }

# roundtrip NAME SOURCE-ARGS [-- JUDGE-ARGS...]: check SOURCE-ARGS JUDGE-ARGS --json, then
# check --from that report JUDGE-ARGS (thresholds of the case)
roundtrip() {
    local name=$1 rc1 rc2
    local -a src=() judge=()
    shift
    while [ $# -gt 0 ] && [ "$1" != -- ]; do
        src+=("$1")
        shift
    done
    [ $# -gt 0 ] && shift
    judge=("$@")
    cases=$((cases + 1))
    "$GPUDOCTOR" check "${src[@]}" "${judge[@]}" --json >"$tmp/r.json" 2>"$tmp/err"
    rc1=$?
    jq -e '.schema == "gpudoctor.check/1"' "$tmp/r.json" >/dev/null 2>&1 ||
        { fail "$name: check --json wrote no report: $(head -c 300 "$tmp/err")"; return; }
    "$GPUDOCTOR" check --from "$tmp/r.json" "${judge[@]}" --json >"$tmp/r2.json" 2>"$tmp/err"
    rc2=$?
    [ "$rc1" = "$rc2" ] || fail "$name: exit $rc1, read back $rc2: $(head -c 300 "$tmp/err")"
    judged "$tmp/r.json" >"$tmp/a"
    judged "$tmp/r2.json" >"$tmp/b"
    cmp -s "$tmp/a" "$tmp/b" || fail "$name: read back, the report differs: $(diff "$tmp/a" "$tmp/b" | head -20)"
}

for dir in "$SRC"/tests/scenarios/*/; do
    dir=${dir%/}
    name=$(basename "$dir")
    extra=()
    [ -f "$dir/args" ] && read -r -a extra <"$dir/args"
    if [ -f "$dir/snapshot.json" ]; then
        roundtrip "$name" --from "$dir/snapshot.json" -- "${extra[@]}"
    elif [ -f "$dir/recording.jsonl" ]; then
        roundtrip "$name" --from "$dir/recording.jsonl" -- "${extra[@]}"
    fi
done

# Live: the demo's troubled server, sampled over a window (the report's samples are its history).
SC=$SRC/tests/scenarios/troubled-8xh100
if [ -e "${SIM_LIB:-}" ]; then
    GPUDOCTOR_NVML_LIB=$SIM_LIB NVML_SIM_SCENARIO=$SC/scenario.json NVML_SIM_PROC=$SC/root/proc \
        NVML_SIM_QUIET=1 roundtrip troubled-live --root "$SC/root" --window 0.5s
    jq -e '.findings | length >= 5' "$tmp/r2.json" >/dev/null || fail "troubled-live: too few findings"
fi

# One line (jq -c), from standard input; and what procs and reap make of a report.
"$GPUDOCTOR" check --from "$SRC/tests/scenarios/stopped-holder/snapshot.json" --json >"$tmp/r.json"
jq -c . "$tmp/r.json" | "$GPUDOCTOR" check --from - --json >"$tmp/r2.json" 2>"$tmp/err"
[ "$?" = 2 ] || fail "one-line report on stdin: $(cat "$tmp/err")"
judged "$tmp/r.json" >"$tmp/a"
judged "$tmp/r2.json" >"$tmp/b"
cmp -s "$tmp/a" "$tmp/b" || fail "one-line report on stdin: the report differs"
"$GPUDOCTOR" procs --from "$tmp/r.json" --json >"$tmp/p.json" 2>"$tmp/err" || fail "procs --from a report: $(cat "$tmp/err")"
jq -e '[.processes[] | select(.pid == 4121 and .verdict == "stopped")] | length == 1' "$tmp/p.json" >/dev/null ||
    fail "procs --from a report: pid 4121 is not listed stopped: $(head -c 300 "$tmp/p.json")"
"$GPUDOCTOR" reap --from "$tmp/r.json" --stopped --json >"$tmp/p.json" 2>"$tmp/err"
jq -e '[.targets[] | select(.pid == 4121)] | length == 1' "$tmp/p.json" >/dev/null ||
    fail "reap --from a report: pid 4121 is not a target: $(head -c 300 "$tmp/p.json") $(cat "$tmp/err")"

# A report whose snapshot is bad: refused, status 3, the place in the report's own text.
jq '.snapshot.gpus[0].index = "zero"' "$tmp/r.json" >"$tmp/bad.json"
"$GPUDOCTOR" check --from "$tmp/bad.json" >/dev/null 2>"$tmp/err"
[ "$?" = 3 ] || fail "bad snapshot in a report: status not 3"
line=$(grep -n '"index": "zero"' "$tmp/bad.json" | head -1 | cut -d: -f1)
grep -q "bad.json:$line:[0-9]*: snapshot.gpus\[0\].index: " "$tmp/err" ||
    fail "bad snapshot in a report: $(cat "$tmp/err") (the value is on line $line)"
# A report without its snapshot is not one.
jq 'del(.snapshot)' "$tmp/r.json" >"$tmp/bare.json"
"$GPUDOCTOR" check --from "$tmp/bare.json" >/dev/null 2>"$tmp/err"
[ "$?" = 3 ] || fail "report without a snapshot: status not 3"

[ "$cases" -ge 20 ] || fail "only $cases cases found"
if [ "$failures" != 0 ]; then
    echo "$failures check(s) failed"
    exit 1
fi
echo "$cases round trips"
