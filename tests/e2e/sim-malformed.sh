#!/usr/bin/env bash
# A scenario that cannot be used: every nvmlInit* returns UNKNOWN (no scenario named:
# DRIVER_NOT_LOADED) and nvmlErrorString says why and where, once on stderr unless
# NVML_SIM_QUIET is set. The many ways to be malformed are in tests/unit/test-sim-scenario.c.
. "$(dirname "$0")/sim-lib.sh"

# no scenario named
OUT=$(env -u NVML_SIM_SCENARIO "$CLIENT" "$SIM_LIB" call - system 2>/dev/null)
expect init 9
expect init.error "NVML simulator: NVML_SIM_SCENARIO is not set: name a scenario file (see docs/simulator.md)"
# a file that is not there
run "$TMP/nowhere.json" call - system
expect init 999
expect init.error "NVML simulator: $TMP/nowhere.json: No such file or directory"
# a syntax error, with its line and column
printf '{\n  "schema": "gpudoctor.scenario/1",\n  "gpus": [ }\n' >"$TMP/syntax.json"
for how in v1 v2 flags; do
    run "$TMP/syntax.json" --init $how call - system
    expect init 999
    expect init.error "NVML simulator: $TMP/syntax.json:3:13: unexpected token near '}'"
done
# a wrong value, located; printed to stderr exactly once however often nvmlInit is tried
s=$(scenario unknown-fn '.errors = {"nvmlDeviceGetPowerUsag": "NO_PERMISSION"}')
line=$(grep -n nvmlDeviceGetPowerUsag "$s" | cut -d: -f1)
msg="NVML simulator: $s:$line:31: errors.nvmlDeviceGetPowerUsag: unknown NVML function \"nvmlDeviceGetPowerUsag\""
OUT=$(NVML_SIM_SCENARIO="$s" env -u NVML_SIM_QUIET "$CLIENT" "$SIM_LIB" refcount 2>"$TMP/stderr")
expect init1 999
expect init3 999
expect_rc count.2refs 1
[ "$(cat "$TMP/stderr")" = "$msg" ] || fail "stderr: expected the message once, got: $(cat "$TMP/stderr")"
run "$s" call - system
expect init.error "$msg"
[ ! -s "$TMP/stderr" ] || fail "NVML_SIM_QUIET did not quieten: $(cat "$TMP/stderr")"
# a bad NVML_SIM_EPOCH
OUT=$(NVML_SIM_SCENARIO="$FIXTURES/full.json" NVML_SIM_EPOCH=yesterday "$CLIENT" "$SIM_LIB" call - system)
expect init 999
expect init.error 'NVML simulator: NVML_SIM_EPOCH="yesterday": expected Unix seconds such as 1767225600.25'
finish
