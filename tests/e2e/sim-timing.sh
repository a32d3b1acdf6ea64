#!/usr/bin/env bash
# Injected delays slow exactly the calls they name; a hang blocks its call for good (the client
# runs under timeout and must still be inside that call when it is killed).
. "$(dirname "$0")/sim-lib.sh"

elapsed() { value elapsed_ms; }

# ---- delays ----
s=$(scenario delay '.delays_ms = {"nvmlDeviceGetPowerUsage": 400}
                    | .gpus[1].delays_ms = {"nvmlDeviceGetTemperature": 1500}')
run "$s" call 0 power
expect gpu0.nvmlDeviceGetPowerUsage 612345
[ "$(elapsed)" -ge 400 ] || fail "a 400 ms delay took $(elapsed) ms"
[ "$(elapsed)" -lt 10000 ] || fail "a 400 ms delay took $(elapsed) ms"
# the GPU's own delay: GPU 1's temperature is slow (and unsupported), GPU 0's is not
run "$s" call 1 thermal
expect_rc gpu1.nvmlDeviceGetTemperature 3
[ "$(elapsed)" -ge 1500 ] || fail "GPU 1's 1500 ms delay took $(elapsed) ms"
run "$s" call 0 thermal
expect gpu0.nvmlDeviceGetTemperature 63
[ "$(elapsed)" -lt 1500 ] || fail "GPU 0 was delayed by GPU 1's delay: $(elapsed) ms"
# a delay and an error together: the error comes after the wait
s=$(scenario delay-error '.delays_ms = {"nvmlDeviceGetPowerUsage": 200}
                          | .errors = {"nvmlDeviceGetPowerUsage": "TIMEOUT"}')
run "$s" call 0 power
expect_rc gpu0.nvmlDeviceGetPowerUsage 10
[ "$(elapsed)" -ge 200 ] || fail "the delayed error came after $(elapsed) ms"

# ---- hangs ----
hang() { # SCENARIO ARGS...: runs the client for 2 s; $OUT, $RC as run() sets them
    local s=$1
    shift
    RC=0
    OUT=$(NVML_SIM_SCENARIO="$s" timeout 2 "$CLIENT" "$SIM_LIB" --trace "$@" 2>/dev/null) || RC=$?
}
s=$(scenario hang '.hang = ["nvmlDeviceGetPowerUsage"]')
hang "$s" call 0 system power
[ "$RC" -eq 124 ] || fail "a hung call returned: client exit status $RC"
[ "$(tail -n 1 <<<"$OUT")" = "call=nvmlDeviceGetPowerUsage" ] ||
    fail "the client was not inside nvmlDeviceGetPowerUsage: $(tail -n 2 <<<"$OUT" | tr '\n' ' ')"
# the calls before it answered
expect init 0
expect nvmlDeviceGetCount_v2 2
# a hang at initialisation
s=$(scenario hang-init '.hang = ["nvmlInit_v2"]')
hang "$s" call - system
[ "$RC" -eq 124 ] || fail "a hung nvmlInit_v2 returned: client exit status $RC"
[ "$OUT" = "call=nvmlInit_v2" ] || fail "expected to hang in nvmlInit_v2, got: $OUT"
# a GPU's own hang leaves the other GPUs alone
s=$(scenario hang-gpu '.gpus[1].hang = ["nvmlDeviceGetName"]')
hang "$s" call 0 identity
[ "$RC" -eq 0 ] || fail "GPU 0 hung on GPU 1's hang (status $RC)"
expect gpu0.nvmlDeviceGetName "NVIDIA H100 80GB HBM3"
hang "$s" call 1 identity
[ "$RC" -eq 124 ] || fail "GPU 1's hang returned (status $RC)"
[ "$(tail -n 1 <<<"$OUT")" = "call=nvmlDeviceGetName" ] || fail "GPU 1 did not hang in nvmlDeviceGetName"
finish
