#!/usr/bin/env bash
# Injected return codes: every code of the NVML table, each injected into its own function,
# comes back from that function; scopes (scenario, GPU) and names (exact, all versions) combine
# as docs/simulator.md says; nvml_status and init_error replay per field and at init.
. "$(dirname "$0")/sim-lib.sh"

# code, name as the scenario may spell it, the function it goes into
table=(
    "1 UNINITIALIZED nvmlDeviceGetPowerUsage"
    "2 INVALID_ARGUMENT nvmlDeviceGetPowerManagementLimit"
    "3 NOT_SUPPORTED nvmlDeviceGetPowerManagementDefaultLimit"
    "4 NO_PERMISSION nvmlDeviceGetEnforcedPowerLimit"
    "5 ALREADY_INITIALIZED nvmlDeviceGetTotalEnergyConsumption"
    "6 NOT_FOUND nvmlDeviceGetTemperatureV"
    "7 INSUFFICIENT_SIZE nvmlDeviceGetFanSpeed"
    "8 INSUFFICIENT_POWER nvmlDeviceGetNumFans"
    "9 DRIVER_NOT_LOADED nvmlDeviceGetPersistenceMode"
    "10 TIMEOUT nvmlDeviceGetComputeMode"
    "11 IRQ_ISSUE nvmlDeviceGetDisplayMode"
    "12 LIBRARY_NOT_FOUND nvmlDeviceGetDisplayActive"
    "13 FUNCTION_NOT_FOUND nvmlDeviceGetEccMode"
    "14 CORRUPTED_INFOROM nvmlDeviceGetMigMode"
    "15 GPU_IS_LOST nvmlDeviceGetMaxMigDeviceCount"
    "16 RESET_REQUIRED nvmlDeviceGetRetiredPagesPendingStatus"
    "17 OPERATING_SYSTEM nvmlDeviceGetRemappedRows"
    "18 LIB_RM_VERSION_MISMATCH nvmlDeviceGetCurrPcieLinkGeneration"
    "19 IN_USE nvmlDeviceGetMaxPcieLinkGeneration"
    "20 MEMORY nvmlDeviceGetGpuMaxPcieLinkGeneration"
    "21 NO_DATA nvmlDeviceGetCurrPcieLinkWidth"
    "22 VGPU_ECC_NOT_SUPPORTED nvmlDeviceGetMaxPcieLinkWidth"
    "23 INSUFFICIENT_RESOURCES nvmlDeviceGetPcieReplayCounter"
    "24 FREQ_NOT_SUPPORTED nvmlDeviceGetPerformanceState"
    "25 ARGUMENT_VERSION_MISMATCH nvmlDeviceGetCurrentClocksThrottleReasons"
    "26 DEPRECATED nvmlDeviceGetSupportedClocksEventReasons"
    "27 NOT_READY nvmlDeviceGetMinorNumber"
    "28 GPU_NOT_FOUND nvmlDeviceGetSerial"
    "29 INVALID_STATE nvmlDeviceGetVbiosVersion"
    "30 RESET_TYPE_NOT_SUPPORTED nvmlDeviceGetIndex"
    "999 UNKNOWN nvmlDeviceGetBAR1MemoryInfo"
)

# Spell half the codes as names ("NVML_ERROR_" prefix on some), half as numbers.
errors='{}'
i=0
for row in "${table[@]}"; do
    read -r code name fn <<<"$row"
    case $((i % 3)) in
    0) value="\"$name\"" ;;
    1) value="\"NVML_ERROR_$name\"" ;;
    *) value=$code ;;
    esac
    errors=$(jq -c --arg fn "$fn" --argjson v "$value" '. + {($fn): $v}' <<<"$errors")
    i=$((i + 1))
done
s=$(scenario all-codes ".errors = $errors")
run "$s" call 0 identity thermal power clocks modes ecc pcie memory
for row in "${table[@]}"; do
    read -r code name fn <<<"$row"
    expect_rc "gpu0.$fn" "$code"
done
# siblings: an exact versioned name reaches only itself, a root name reaches every version
expect gpu0.nvmlDeviceGetTemperature 63
expect gpu0.nvmlDeviceGetCurrentClocksEventReasons 0x24
expect_rc gpu0.nvmlDeviceGetSupportedClocksThrottleReasons 26
expect_rc gpu0.nvmlDeviceGetPowerState 24
# GPU 1 gets the scenario-wide errors too (the functions that it supports and those it does not)
run "$s" call 1 power
expect_rc gpu1.nvmlDeviceGetPowerUsage 1
expect_rc gpu1.nvmlDeviceGetTotalEnergyConsumption 5

# ---- scopes and precedence: GPU before scenario, exact name before root name ----
s=$(scenario scopes '.errors = {"nvmlDeviceGetMemoryInfo": "NO_PERMISSION",
                                "nvmlDeviceGetMemoryInfo_v2": "INSUFFICIENT_POWER",
                                "nvmlSystemGetDriverVersion": "NOT_READY"}
                     | .gpus[1].errors = {"nvmlDeviceGetMemoryInfo": "GPU_IS_LOST"}')
run "$s" call - system memory
expect_rc gpu0.nvmlDeviceGetMemoryInfo 4
expect_rc gpu0.nvmlDeviceGetMemoryInfo_v2 8
expect_rc gpu1.nvmlDeviceGetMemoryInfo 15
expect_rc gpu1.nvmlDeviceGetMemoryInfo_v2 15
expect_rc nvmlSystemGetDriverVersion 27
expect nvmlSystemGetNVMLVersion 12.550.54.15
# counts: the versioned name alone, or the root name for both
s=$(scenario count2 '.errors = {"nvmlDeviceGetCount_v2": "IN_USE"}')
run "$s" call - system
expect nvmlDeviceGetCount 2
expect_rc nvmlDeviceGetCount_v2 19
s=$(scenario count '.errors = {"nvmlDeviceGetCount": "IN_USE"}')
run "$s" call - system
expect_rc nvmlDeviceGetCount 19
expect_rc nvmlDeviceGetCount_v2 19

# ---- what a snapshot records per field: nvml_status replays through every supplier ----
# (a list with a status is written as null, as a snapshot writes it)
s=$(scenario status 'del(.gpus[0].power_mw, .gpus[0].temp_c)
    | .gpus[0].processes = null | .gpus[0].process_utilization = null
    | .gpus[0].nvml_status = {"power_mw": "NO_PERMISSION", "temp_c": "GPU_IS_LOST",
                              "processes": "NO_PERMISSION", "process_utilization": "NOT_FOUND"}')
run "$s" call 0 power thermal procs procutil
expect_rc gpu0.nvmlDeviceGetPowerUsage 4
expect gpu0.nvmlDeviceGetPowerManagementLimit 650000
expect_rc gpu0.nvmlDeviceGetTemperature 15
expect_rc gpu0.nvmlDeviceGetTemperatureV 15
expect gpu0.nvmlDeviceGetTemperatureThreshold.slowdown 89
expect gpu0.nvmlDeviceGetComputeRunningProcesses.query "4 0"
expect gpu0.nvmlDeviceGetGraphicsRunningProcesses_v3.query "4 0"
expect gpu0.nvmlDeviceGetProcessUtilization.query "6 0"

# ---- init: init_error fails every nvmlInit*; an injected init error only its own name ----
s=$(scenario init-error '.system.init_error = "LIB_RM_VERSION_MISMATCH"')
for how in v1 v2 flags; do
    run "$s" --init $how call - system
    expect init 18
    expect init.error "Driver/library version mismatch"
done
s=$(scenario init-v2 '.errors = {"nvmlInit_v2": "DRIVER_NOT_LOADED"}')
run "$s" --init v2 call - system
expect init 9
run "$s" --init v1 call - system
expect init 0
expect nvmlDeviceGetCount 2
s=$(scenario init-all '.errors = {"nvmlInit": "INSUFFICIENT_RESOURCES"}')
for how in v1 v2 flags; do
    run "$s" --init $how call - system
    expect init 23
done

# ---- nvmlErrorString: NVIDIA's text for every code (docs/simulator.md, "Error texts"), no two
# alike; tests/helpers/nvml-binding-check.py checks all of them against its own table ----
run "$FIXTURES/full.json" errstr
for code in $(seq 0 30) 999; do
    grep -q "^errstr\.$code=." <<<"$OUT" || fail "no text for return code $code"
done
expect errstr.0 Success
expect errstr.3 "Not Supported"
expect errstr.4 "Insufficient Permissions"
expect errstr.15 "GPU is lost"
expect errstr.17 "GPU access blocked by the operating system"
expect errstr.18 "Driver/library version mismatch"
expect errstr.999 "Unknown Error"
expect errstr.31 "Unknown return code"
dups=$(grep -v '^errstr\.31=' <<<"$OUT" | cut -d= -f2- | sort | uniq -d)
[ -z "$dups" ] || fail "codes share a text: $dups"
finish
