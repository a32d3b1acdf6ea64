#!/usr/bin/env bash
# Shared by tests/e2e/sim-*.sh (sourced): run nvml-client on a scenario, assert exact lines.
# Run on its own (as CTest does), it tests these helpers: an assertion that should fail must.
set -euo pipefail
: "${SIM_LIB:?SIM_LIB is set by CTest}" "${HELPERS:?}" "${SRC:?}"

CLIENT="$HELPERS/nvml-client"
FIXTURES="$SRC/tests/fixtures/scenarios"
export NVML_SIM_QUIET=1
unset NVML_SIM_EPOCH NVML_SIM_PROC
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
FAILED=0
OUT=""

command -v jq >/dev/null || { echo "jq not installed"; exit 77; }

# run SCENARIO CLIENT-ARGS...: the client's output goes to $OUT (and its status to $RC).
run() {
    local scenario=$1
    shift
    RC=0
    OUT=$(NVML_SIM_SCENARIO="$scenario" "$CLIENT" "$SIM_LIB" "$@" 2>"$TMP/stderr") || RC=$?
}

fail() {
    echo "FAIL: $*" >&2
    FAILED=1
}

# expect KEY VALUE: $OUT has the line KEY=VALUE exactly. (A bash match: no process per check.)
expect() {
    if [[ $'\n'"$OUT"$'\n' != *$'\n'"$1=$2"$'\n'* ]]; then
        fail "expected '$1=$2', got: $(grep -F -- "$1=" <<<"$OUT" | head -3 | tr '\n' ' ')"
    fi
}

# value KEY: the value of KEY's line in $OUT (empty when there is none).
value() {
    awk -v k="$1=" 'index($0, k) == 1 { print substr($0, length(k) + 1); exit }' <<<"$OUT"
}

# expect_rc KEY RC: the call behind KEY returned the NVML code RC.
expect_rc() {
    expect "$1" "!$2"
}

# scenario NAME JQ-FILTER [BASE]: writes $TMP/NAME.json, BASE (default full.json) through jq.
scenario() {
    jq "$2" "${3:-$FIXTURES/full.json}" >"$TMP/$1.json"
    echo "$TMP/$1.json"
}

finish() {
    if [ "$FAILED" -ne 0 ]; then
        echo "--- last client output ---" >&2
        head -c 4000 <<<"$OUT" >&2
        exit 1
    fi
    exit 0
}

# ---- self-test, only when run rather than sourced ----
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    OUT=$'a=1\nb=!4\nc=x y'
    expect a 1
    expect_rc b 4
    expect c "x y"
    [ "$(value b)" = '!4' ] && [ -z "$(value d)" ] || { echo "self-test: value" >&2; exit 1; }
    [ "$FAILED" -eq 0 ] || { echo "self-test: a true assertion failed" >&2; exit 1; }
    # expect records failure in FAILED rather than exiting: check that in a subshell
    if (expect a 2; [ "$FAILED" -eq 0 ]) 2>/dev/null; then
        echo "self-test: a wrong value passed" >&2
        exit 1
    fi
    if (expect a 11; [ "$FAILED" -eq 0 ]) 2>/dev/null; then
        echo "self-test: a prefix matched" >&2
        exit 1
    fi
    run "$FIXTURES/full.json" call 0 power
    expect gpu0.nvmlDeviceGetPowerUsage 612345
    finish
fi
