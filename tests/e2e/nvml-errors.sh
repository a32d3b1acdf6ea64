#!/usr/bin/env bash
# What each NVML error becomes: per-field codes stay data (every code a getter can return), a lost
# GPU makes the collector partial, init failures and a missing library are stated plainly.
. "$SRC/tests/fixtures/nvml/common.bash"

gpus_with() { # JQ filter applied to [BASE_GPU, BASE_GPU as GPU 1]
    jq -cn --argjson g "$BASE_GPU" --argjson sys "$SYSTEM" \
        "{schema: \"gpudoctor.scenario/1\", system: \$sys,
          gpus: [\$g, (\$g | .index = 1 | .pci_bus_id = \"00000000:2A:00.0\")]} | $1"
}

# Baseline: what the base GPUs look like with no error.
snap "$(scenario base "$(gpus_with .)")"
check '.collectors.nvml.state' '"ok"'
check '.gpus[0].power_mw' '612345'
baseline_status=$(jq -c '.gpus[0].nvml_status' "$OUT")
check '.gpus[0].nvml_status | has("power_mw")' 'false'

# Every NVML return code injected into one getter on GPU 0: exactly that field carries the code.
codes=(UNINITIALIZED INVALID_ARGUMENT NOT_SUPPORTED NO_PERMISSION ALREADY_INITIALIZED NOT_FOUND
    INSUFFICIENT_SIZE INSUFFICIENT_POWER DRIVER_NOT_LOADED TIMEOUT IRQ_ISSUE LIBRARY_NOT_FOUND
    FUNCTION_NOT_FOUND CORRUPTED_INFOROM GPU_IS_LOST RESET_REQUIRED OPERATING_SYSTEM
    LIB_RM_VERSION_MISMATCH IN_USE MEMORY NO_DATA VGPU_ECC_NOT_SUPPORTED INSUFFICIENT_RESOURCES
    FREQ_NOT_SUPPORTED ARGUMENT_VERSION_MISMATCH DEPRECATED NOT_READY GPU_NOT_FOUND INVALID_STATE
    RESET_TYPE_NOT_SUPPORTED UNKNOWN)
lost_note='"GPU 0 (00000000:18:00.0) fell off the bus during collection (nvmlDeviceGetPowerUsage: GPU_IS_LOST)"'
for code in "${codes[@]}"; do
    snap "$(scenario "code-$code" "$(gpus_with ".gpus[0].errors = {nvmlDeviceGetPowerUsage: \"$code\"}")")"
    # one jq per code (the machine is shared): the field, its status and nothing else, the other
    # fields of GPU 0 and GPU 1, the sample, and the collector state
    if [ "$code" = GPU_IS_LOST ]; then
        state='"partial"' notes="[$lost_note]" # a GPU that falls off the bus is news
    else
        state='"ok"' notes='[]'
    fi
    check '[.gpus[0].power_mw, .gpus[0].nvml_status, .gpus[0].temp_c, .gpus[0].mem_used_bytes,
            .gpus[0].name, .gpus[1].power_mw, .nvml.device_count,
            (.samples[0].gpus[0] | has("power_mw")), .samples[0].gpus[0].temp_c,
            .collectors.nvml.state, .collectors.nvml.notes]' \
        "[null,$(jq -c --arg c "$code" '. + {power_mw: $c}' <<<"$baseline_status"),64,42949672960,
          \"NVIDIA H100 80GB HBM3\",612345,2,false,64,$state,$notes]"
done

# A handle that cannot be obtained: that GPU has only its index and the code.
for code in GPU_IS_LOST NO_PERMISSION; do
    snap "$(scenario "handle-$code" "$(gpus_with ".gpus[1] = {index: 1, handle_status: \"$code\"}")")"
    check '.gpus[1]' "{\"index\":1,\"handle_status\":\"$code\"}"
    check '.gpus[0].temp_c' '64'
    check '.collectors.nvml.state' '"partial"'
    check '.collectors.nvml.notes | length' '1'
done
check '.collectors.nvml.notes[0]' \
    '"GPU 1 cannot be opened by this user (nvmlDeviceGetHandleByIndex: NO_PERMISSION)"'
snap "$TMP/handle-GPU_IS_LOST.json"
check '.collectors.nvml.notes[0]' \
    '"GPU 1 has fallen off the bus or is otherwise inaccessible (nvmlDeviceGetHandleByIndex: GPU_IS_LOST)"'
check '.samples[0].gpus[1]' '{"index":1,"handle_status":"GPU_IS_LOST"}'

# System calls: their codes are recorded, the collection goes on.
snap "$(scenario sys-errors "$(gpus_with '.errors = {nvmlSystemGetDriverVersion: "NO_PERMISSION",
    nvmlSystemGetCudaDriverVersion_v2: "LIBRARY_NOT_FOUND"}')")"
check '[.nvml.driver_version, .nvml.driver_version_rc]' '[null,4]'
check '[.nvml.cuda_driver_version, .nvml.cuda_driver_version_rc]' '[0,12]'
check '.nvml.nvml_version' '"12.550.54.15"'
check '.collectors.nvml.state' '"ok"'
check '.gpus[0].temp_c' '64'

# Counting fails: nothing can be asked about GPUs.
snap "$(scenario count-error "$(gpus_with '.errors = {nvmlDeviceGetCount: "UNKNOWN"}')")"
check '.collectors.nvml.state' '"failed"'
check '.collectors.nvml.detail' '"NVML cannot count the GPUs (nvmlDeviceGetCount: UNKNOWN)"'
check '.nvml.device_count_rc' '999'
check '.gpus' '[]'

# Init failures, each with its plain sentence. The library file name carries the version that the
# version-mismatch sentence quotes.
cp "$SIM_LIB" "$TMP/libnvidia-ml.so.550.54.15"
declare -A sentence=(
    [DRIVER_NOT_LOADED]='the NVIDIA kernel module is not loaded (nvmlInit: DRIVER_NOT_LOADED: '
    [LIB_RM_VERSION_MISMATCH]="driver/library version mismatch: the NVML library $TMP/libnvidia-ml.so.550.54.15 (version 550.54.15) does not match the loaded kernel module; reload the nvidia module or reboot (nvmlInit: LIB_RM_VERSION_MISMATCH: "
    [NO_PERMISSION]='no permission to use the NVIDIA driver: this user cannot open /dev/nvidiactl or /dev/nvidia* (nvmlInit: NO_PERMISSION: '
)
declare -A number=([DRIVER_NOT_LOADED]=9 [LIB_RM_VERSION_MISMATCH]=18 [NO_PERMISSION]=4)
for code in DRIVER_NOT_LOADED LIB_RM_VERSION_MISMATCH NO_PERMISSION; do
    snap "$(scenario "init-$code" "$(gpus_with ".system.init_error = \"$code\"")")" \
        --nvml-lib "$TMP/libnvidia-ml.so.550.54.15"
    check '.collectors.nvml.state' '"failed"'
    check ".collectors.nvml.detail | startswith($(jq -cn --arg s "${sentence[$code]}" '$s'))" 'true'
    check '.nvml.init_rc' "${number[$code]}"
    check '.nvml.init_error | type' '"string"'
    check '.nvml.library_version' '"550.54.15"'
    check '.gpus' '[]'
    check '.samples[0].gpus' '[]'
    # the library's own text for the code ends the sentence
    check '. as $s | $s.collectors.nvml.detail | endswith(": " + $s.nvml.init_error + ")")' 'true'
done

# A malformed scenario: the simulator's init fails with UNKNOWN and says where; we pass it on.
printf '{"schema": "gpudoctor.scenario/1",\n "gpus": [{"index": 0, "temp_c": "hot"}]}\n' \
    >"$TMP/malformed.json"
snap "$TMP/malformed.json"
check '.collectors.nvml.state' '"failed"'
check '.nvml.init_rc' '999'
check ".collectors.nvml.detail | contains(\"$TMP/malformed.json:2:\")" 'true'
check '.collectors.nvml.detail | startswith("NVML could not be initialised (nvmlInit: UNKNOWN: ")' \
    'true'

# No library at the path given: unavailable, in the loader's words (not "driver not installed",
# a guess about a path someone typed), and the run still succeeds.
rc=0
GPUDOCTOR_NVML_LIB=/nonexistent/libnvidia-ml.so.1 "$GPUDOCTOR" snapshot --only nvml >"$OUT" || rc=$?
[ "$rc" = 0 ] || { echo "FAIL: exit $rc without a library"; failures=$((failures + 1)); }
check '.collectors.nvml.state' '"unavailable"'
check '.collectors.nvml.detail' '"cannot load /nonexistent/libnvidia-ml.so.1: cannot open shared object file: No such file or directory"'
check '.nvml.load_error' '12'
check '.nvml.library' '"/nonexistent/libnvidia-ml.so.1"'
check '.nvml.load_detail | contains("/nonexistent/libnvidia-ml.so.1")' 'true'
check '.gpus' '[]'

# --nvml-lib wins over the environment.
GPUDOCTOR_NVML_LIB=$SIM_LIB NVML_SIM_SCENARIO=$TMP/base.json \
    "$GPUDOCTOR" snapshot --only nvml --nvml-lib /nonexistent/other.so >"$OUT"
check '.nvml.library' '"/nonexistent/other.so"'
check '.collectors.nvml.state' '"unavailable"'

# A library that is not NVML: it loads, but exports none of NVML's functions. The report says so,
# not that NVML is not installed (issue 11).
GPUDOCTOR_NVML_LIB=libm.so.6 "$GPUDOCTOR" snapshot --only nvml >"$OUT"
check '.collectors.nvml.state' '"failed"'
check '.nvml.load_error' '13'
check '.collectors.nvml.detail | test("is not a usable NVML library: .*libm[^ ]* is not NVML: it exports none of NVML.s functions")' 'true'
for lib in libc.so.6 /etc/passwd; do
    GPUDOCTOR_NVML_LIB=$lib "$GPUDOCTOR" check --only nvml --window 0 --json >"$OUT" || true
    check '.verdict.exit_code' '3'
    check '.verdict.text | test("installed")' 'false'
done
check '.verdict.text | test("^No GPU could be checked: /etc/passwd is not a library that can be loaded: ")' 'true'
GPUDOCTOR_NVML_LIB=libc.so.6 "$GPUDOCTOR" check --only nvml --window 0 --json >"$OUT" || true
check '.verdict.text | test("^No GPU could be checked: /.*libc[^ ]* is not NVML: it exports none of NVML.s functions[.]$")' 'true'

finish
