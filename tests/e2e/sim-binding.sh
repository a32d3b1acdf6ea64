#!/usr/bin/env bash
# The simulator read by a client that shares nothing with it: tests/helpers/nvml-binding-check.py
# (Python ctypes, NVIDIA's structs declared from the header) calls every exported function the
# way NVIDIA's bindings do and checks each value and return code against the scenario. Then the
# same client, told to expect something other than what the library serves, must fail.
. "$(dirname "$0")/sim-lib.sh"

command -v python3 >/dev/null || { echo "python3 not installed"; exit 77; }
CHECK=(python3 "$SRC/tests/helpers/nvml-binding-check.py" "$SIM_LIB")
# A simulator built with the sanitizers (make asan) needs their runtimes loaded first, before
# python3's own libraries; python's leaks are not the simulator's.
asan_rt=$(ldd "$SIM_LIB" | awk '/libasan|libubsan/ { print $3 }' | tr '\n' ':')
if [ -n "$asan_rt" ]; then
    CHECK=(env LD_PRELOAD="${asan_rt%:}" ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
        "${CHECK[@]}")
fi

# check NAME SCENARIO [ARGS...]: the client passes on SCENARIO
check() {
    local name=$1
    shift
    if ! "${CHECK[@]}" "$@" >"$TMP/$name.out" 2>&1; then
        fail "$name: the binding check failed:"
        grep -E '^FAIL|Error|error' "$TMP/$name.out" | head -20 >&2
    fi
}

# must_fail NAME WANT SERVED EXPECTED: the client, expecting EXPECTED while the library serves
# SERVED, fails and says WANT (a fixed string) on a FAIL line
must_fail() {
    local name=$1 want=$2
    if "${CHECK[@]}" "$3" --expect "$4" >"$TMP/$name.out" 2>&1; then
        fail "$name: the binding check passed though it expected other values"
    elif ! grep '^FAIL' "$TMP/$name.out" | grep -F -- "$want" >/dev/null; then
        fail "$name: no failure names '$want':"
        head -5 "$TMP/$name.out" >&2
    fi
}

# every function, GPU 0 with every field and key, GPU 1 with only its identity
check full "$FIXTURES/full.json"
# R535's 32-byte _v3 records; the releases around it keep 24
check r535 "$(scenario r535 '.system.driver_version = "535.54.03"')" --only check_lists
check r535-later "$(scenario r535-later '.system.driver_version = "535.104.05"')" --only check_lists
# what fails, and where: injected codes at both scopes, recorded statuses, inaccessible and lost
# GPUs, keys set to null, an architecture given, no system values at all
check failing "$(scenario failing '
    del(.system.driver_version, .system.cuda_driver_version)
    | .errors = {"nvmlDeviceGetPowerUsage": "NO_PERMISSION", "nvmlDeviceGetMemoryInfo": "GPU_IS_LOST",
                 "nvmlDeviceGetMPSComputeRunningProcesses": "IN_USE",
                 "nvmlDeviceGetDriverModel": "NOT_READY"}
    | .gpus[0].errors = {"nvmlDeviceGetBrand": "GPU_IS_LOST", "nvmlDeviceGetFieldValues": "NO_DATA",
                         "nvmlDeviceGetComputeRunningProcesses_v3": "NOT_FOUND"}
    | .gpus[0] |= (del(.temp_c) | .nvml_status = {"temp_c": "NO_PERMISSION"})
    | .gpus[1] += {"accounting_mode": null, "architecture": "ampere", "nvlinks": [false]}
    | .gpus += [{"index": 2, "handle_status": "NO_PERMISSION"},
                {"index": 3, "handle_status": "GPU_IS_LOST"}]')"
# every value type a field can have
check types "$(scenario types '.gpus[0].field_values += [
    {"id": 185, "type": "double", "value": 612.5}, {"id": 7, "type": "signed_long_long", "value": -4},
    {"id": 9, "type": "signed_int", "value": -7}, {"id": 10, "type": "unsigned_short", "value": 65535},
    {"id": 11, "type": "unsigned_long", "value": 5}, {"id": 12, "scope": 3, "type": 1, "value": 8}]')" \
    --only check_client
# MIG on: instances with their own handles, no per-process utilisation, accounting off
check mig "$(scenario mig '.gpus[0].mig_mode = true | .gpus[0].mig_devices = 3')" \
    --only check_modes,check_client,check_util
# a bundled scenario, all eight GPUs, before its timeline starts
NVML_SIM_EPOCH=$(($(date +%s) + 100000)) check healthy "$SRC/scenarios/healthy-8xh100.json"

# ---- the client can fail: a value, a return code, a record size, a field value ----
must_fail value "nvmlDeviceGetTemperature" "$FIXTURES/full.json" \
    "$(scenario hotter '.gpus[0].temp_c = 64')"
must_fail rc "nvmlDeviceGetBrand return code: expected 'NOT_SUPPORTED', got 'SUCCESS'" \
    "$FIXTURES/full.json" "$(scenario no-brand 'del(.gpus[0].brand)')"
must_fail stride "nvmlDeviceGetComputeRunningProcesses_v3 bytes written: expected 64, got 48" \
    "$FIXTURES/full.json" "$(scenario r535-expected '.system.driver_version = "535.54.03"')"
must_fail field "field 138 scope 1 value" "$FIXTURES/full.json" \
    "$(scenario field '.gpus[0].field_values[1].value = 1')"
must_fail nvlink "nvmlDeviceGetNvLinkState(2)" "$FIXTURES/full.json" \
    "$(scenario nvlink '.gpus[0].nvlink[2].active = true')"
must_fail nvlink-counter "field 161 scope 1 value" "$FIXTURES/full.json" \
    "$(scenario nvlink-counter '.gpus[0].nvlink[1].replay_errors = 5')"
must_fail fabric "nvmlDeviceGetGpuFabricInfoV.cliqueId" "$FIXTURES/full.json" \
    "$(scenario fabric '.gpus[0].fabric.clique_id = 7')"
finish
