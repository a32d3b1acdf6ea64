#!/usr/bin/env bash
# The library exports every function of NVML_FUNCTIONS and nvmlErrorString, nothing else, under
# the soname a binding opens.
. "$(dirname "$0")/sim-lib.sh"

run "$FIXTURES/full.json" symbols
expect symbols.missing 0
n=$(value symbols)
[ "$n" -gt 80 ] || fail "only $n symbols in the list"
if command -v nm >/dev/null; then
    exported=$(nm -D --defined-only "$SIM_LIB" | awk '$2 ~ /^[TtWi]$/ { print $3 }')
    others=$(grep -v '^nvml' <<<"$exported" || true)
    [ -z "$others" ] || fail "exports more than nvml*: $(head -5 <<<"$others" | tr '\n' ' ')"
    [ "$(wc -l <<<"$exported")" -eq "$n" ] || fail "exports $(wc -l <<<"$exported") functions, the list has $n"
fi
if command -v readelf >/dev/null; then
    readelf -d "$SIM_LIB" | grep 'Library soname: \[libnvidia-ml.so.1\]' >/dev/null || fail "soname is not libnvidia-ml.so.1"
fi
finish
