#!/usr/bin/env bash
# A gpudoctor snapshot is a scenario: its NVML system values, its init failure and its GPUs
# (field statuses, lost handles, processes) replay as they were captured.
. "$(dirname "$0")/sim-lib.sh"

snap="$FIXTURES/snapshot.json"
run "$snap" dump
expect init 0
expect nvmlSystemGetDriverVersion 535.54.03
expect_rc nvmlSystemGetNVMLVersion 4
expect nvmlSystemGetCudaDriverVersion_v2 12020
expect nvmlDeviceGetCount_v2 3
expect_rc nvmlDeviceGetHandleByIndex_v2.1 15
expect gpu0.nvmlDeviceGetName "NVIDIA A100-SXM4-80GB"
expect gpu0.nvmlDeviceGetPciInfo_v3.ids "0:7:0 0x20b210de 0x147f10de"
expect gpu0.nvmlDeviceGetMemoryInfo_v2 "total=85899345920 reserved=1048576000 free=23647485952 used=61203283968"
expect gpu0.nvmlDeviceGetTemperature 71
expect_rc gpu0.nvmlDeviceGetPowerUsage 4     # recorded as NO_PERMISSION
expect_rc gpu0.nvmlDeviceGetFanSpeed 3       # recorded as NOT_SUPPORTED
expect_rc gpu0.nvmlDeviceGetSerial 3         # not in the capture at all
expect gpu0.nvmlDeviceGetCurrentClocksEventReasons 0x4
# the captured driver is an R535 one whose _v3 writes 32-byte records: so does the replay
expect gpu0.nvmlDeviceGetComputeRunningProcesses_v3.stride 32
expect gpu0.nvmlDeviceGetComputeRunningProcesses_v3.0 "pid=23117 used=61203283968 gi=0xffffffff ci=0xffffffff cc=0"
expect gpu0.nvmlDeviceGetProcessUtilization.0 "pid=23117 sm=88 mem=40 enc=0 dec=0 ts_nonzero=1"
expect gpu2.nvmlDeviceGetTemperature 34
expect gpu2.nvmlDeviceGetComputeRunningProcesses_v3.query "3 0" # not collected: unsupported

# a capture whose nvmlInit failed fails the same way, with the captured text
s=$(scenario snap-init '.nvml.init_rc = 18 | .nvml.init_error = "Driver/library version mismatch" | .gpus = []' "$snap")
for how in v1 v2 flags; do
    run "$s" --init $how call - system
    expect init 18
    expect init.error "Driver/library version mismatch"
done
# a capture without a library: initialising reports why it was missing
s=$(scenario snap-load '.nvml.load_error = 12 | .nvml.load_detail = "libnvidia-ml.so.1: cannot open shared object file" | .gpus = []' "$snap")
run "$s" call - system
expect init 12
expect init.error "libnvidia-ml.so.1: cannot open shared object file"
# a failed count replays
s=$(scenario snap-count '.nvml.device_count_rc = 17' "$snap")
run "$s" call - system
expect_rc nvmlDeviceGetCount_v2 17
# a broken snapshot is a malformed scenario, located in the file
s=$(scenario snap-bad '.gpus[2].temp_c = "hot"' "$snap")
run "$s" call - system
expect init 999
line=$(grep -n '"hot"' "$s" | cut -d: -f1)
expect init.error "NVML simulator: $s:$line:17: gpus[2].temp_c: expected a non-negative integer, got a string"
finish
