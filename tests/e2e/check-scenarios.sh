#!/usr/bin/env bash
# The scenario corpus (tests/scenarios/README.md): every case must produce the findings its
# `expect` file names and none of those it rules out, with the exit status it gives.
#   + RULE-ID [key=value ...]   a finding of that rule whose subject has those values
#   - RULE-ID [key=value ...]   no such finding
#   exit N                      the exit status of `gpudoctor check`
# A case is a snapshot.json (run with check --from), a recording.jsonl of `gpudoctor watch --record`
# (run with check --from too: the trend rules judge its history), or a scenario.json for the NVML
# simulator with a fixture tree root/ (run live with --root); optionally an `args` file of extra
# options, and a `gpudoctor.conf` (given with --config: an expected-hardware [profile]).
# The text report of each case is checked too: same exit status, and nothing but commands wider
# than 80 columns.
set -uo pipefail
command -v jq >/dev/null || { echo "jq not installed"; exit 77; }
: "${GPUDOCTOR:?}" "${SRC:?}"
export GPUDOCTOR_CONFIG=/dev/null NO_COLOR=1 LC_ALL=C.UTF-8 # reports in UTF-8, 80 columns
unset COLUMNS
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

failures=0 cases=0 checks=0
fail() {
    echo "FAIL $1: $2"
    failures=$((failures + 1))
}

# Runs the case in dir with the given output options; prints the output, returns gpudoctor's status.
run_case() (
    local dir=$1
    shift
    local -a extra=()
    [ -f "$dir/args" ] && read -r -a extra <"$dir/args"
    # a case's own configuration file (an expected-hardware [profile], thresholds), named from
    # the case's directory so that the origins the report quotes stay short
    [ -f "$dir/gpudoctor.conf" ] && extra+=(--config gpudoctor.conf)
    cd "$dir" || return 3
    if [ -f "$dir/snapshot.json" ]; then
        "$GPUDOCTOR" check --from "$dir/snapshot.json" "${extra[@]}" "$@"
    elif [ -f "$dir/recording.jsonl" ]; then
        "$GPUDOCTOR" check --from "$dir/recording.jsonl" "${extra[@]}" "$@"
    else
        GPUDOCTOR_NVML_LIB=$SIM_LIB NVML_SIM_SCENARIO=$dir/scenario.json \
            "$GPUDOCTOR" check --root "$dir/root" --window 0 --timeout 20s "${extra[@]}" "$@"
    fi
)

for dir in "$SRC"/tests/scenarios/*/; do
    dir=${dir%/}
    name=$(basename "$dir")
    [ -f "$dir/expect" ] || continue
    if [ ! -f "$dir/snapshot.json" ] && [ ! -f "$dir/recording.jsonl" ]; then
        if [ ! -f "$dir/scenario.json" ]; then
            fail "$name" "no snapshot.json, recording.jsonl or scenario.json"
            continue
        fi
        if [ ! -e "${SIM_LIB:-}" ]; then
            echo "skip $name: the NVML simulator is not built"
            continue
        fi
    fi
    cases=$((cases + 1))
    run_case "$dir" --json >"$tmp/out.json" 2>"$tmp/err"
    rc=$?
    if ! jq -e '.schema == "gpudoctor.check/1"' "$tmp/out.json" >/dev/null 2>&1; then
        fail "$name" "no JSON report (exit $rc): $(head -c 300 "$tmp/err")"
        continue
    fi
    # One line per finding: the id, then the subject as key=value words.
    jq -r '.findings[] | [.id,
        (.subject.gpu_index // empty | "gpu=\(.)"),
        (.subject.pid // empty | "pid=\(.)"),
        (.subject.object // empty | "object=\(.)")] | join(" ")' "$tmp/out.json" >"$tmp/found"

    while read -r sign id rest; do
        case "$sign" in
        '' | '#'*) continue ;;
        exit)
            checks=$((checks + 1))
            [ "$rc" = "$id" ] || fail "$name" "exit status $rc, expected $id"
            ;;
        + | -)
            checks=$((checks + 1))
            matched=$(awk -v id="$id" -v want="$rest" '
                BEGIN { n = split(want, w, " ") }
                $1 == id {
                    ok = 1
                    for (i = 1; i <= n; i++) {
                        hit = 0
                        for (j = 2; j <= NF; j++) if ($j == w[i]) hit = 1
                        if (!hit) ok = 0
                    }
                    if (ok) { print; exit }
                }' "$tmp/found")
            if [ "$sign" = + ] && [ -z "$matched" ]; then
                fail "$name" "expected '$id $rest'; found: $(paste -sd';' "$tmp/found")"
            elif [ "$sign" = - ] && [ -n "$matched" ]; then
                fail "$name" "unexpected '$matched'"
            fi
            ;;
        *) fail "$name" "expect: bad line '$sign $id $rest'" ;;
        esac
    done <"$dir/expect"

    # The text report: same verdict, readable at 80 columns (only commands may be wider).
    run_case "$dir" >"$tmp/out.txt" 2>"$tmp/err"
    trc=$?
    [ "$trc" = "$rc" ] || fail "$name" "text report exit $trc, JSON exit $rc"
    wide=$(sed 's/—/-/g; s/°/o/g' "$tmp/out.txt" | awk 'length($0) > 80 && $0 !~ /^               [^ #]/ { print; exit }')
    [ -z "$wide" ] || fail "$name" "text line wider than 80 columns: $wide"
    if grep -q $'\033' "$tmp/out.txt"; then
        fail "$name" "colour codes with NO_COLOR set"
    fi
done

echo "$cases cases, $checks expectations, $failures failures"
[ "$cases" -gt 0 ] || { echo "no scenario ran"; exit 1; }
[ "$failures" -eq 0 ]
