#!/usr/bin/env bash
# The simulator answers every field of a scenario GPU through the function that supplies it,
# read the way a binding reads it. full.json gives each field a value of its own.
. "$(dirname "$0")/sim-lib.sh"

run "$FIXTURES/full.json" dump
expect init 0

# system
expect nvmlSystemGetDriverVersion 550.54.15
expect_rc nvmlSystemGetDriverVersion.len4 7
expect nvmlSystemGetNVMLVersion 12.550.54.15
expect nvmlSystemGetCudaDriverVersion 12040
expect nvmlSystemGetCudaDriverVersion_v2 12040
expect nvmlDeviceGetCount 2
expect nvmlDeviceGetCount_v2 2
expect nvmlDeviceGetHandleByIndex_v2.1 ok
expect_rc nvmlDeviceGetHandleByIndex_v2.2 2

g=gpu0.
# identity
expect ${g}nvmlDeviceGetIndex 0
expect ${g}nvmlDeviceGetName "NVIDIA H100 80GB HBM3"
expect_rc ${g}nvmlDeviceGetName.len4 7
expect ${g}nvmlDeviceGetUUID GPU-6f3c2a91-1d4e-7b8a-93c5-0e2f4a6b8c10
expect ${g}nvmlDeviceGetHandleByUUID same
expect ${g}nvmlDeviceGetSerial 1652823054671
expect ${g}nvmlDeviceGetVbiosVersion 96.00.89.00.01
expect ${g}nvmlDeviceGetMinorNumber 5
expect ${g}nvmlDeviceGetCudaComputeCapability 9.1
# PCI: the legacy layouts carry the short bus id, v3 both
expect ${g}nvmlDeviceGetPciInfo.busId 0001:9A:1F.0
expect ${g}nvmlDeviceGetPciInfo.ids "1:9a:1f 0x233010de 0x16c110de"
expect ${g}nvmlDeviceGetPciInfo_v2.busId 0001:9A:1F.0
expect ${g}nvmlDeviceGetPciInfo_v3.busId 00000001:9A:1F.0
expect ${g}nvmlDeviceGetPciInfo_v3.busIdLegacy 0001:9A:1F.0
expect ${g}nvmlDeviceGetPciInfo_v3.ids "1:9a:1f 0x233010de 0x16c110de"
expect ${g}nvmlDeviceGetHandleByPciBusId_v2 same
expect ${g}nvmlDeviceGetHandleByPciBusId_v2.legacy same
# memory: v1 used includes the reserved memory, v2 does not
expect ${g}nvmlDeviceGetMemoryInfo "total=85520809984 free=44943044608 used=40577765376"
expect ${g}nvmlDeviceGetMemoryInfo_v2 "total=85520809984 reserved=577765376 free=44943044608 used=40000000000"
expect ${g}nvmlDeviceGetBAR1MemoryInfo "total=137438953472 free=137403301888 used=35651584"
expect ${g}nvmlDeviceGetUtilizationRates "gpu=91 memory=42"
expect ${g}nvmlDeviceGetEncoderUtilization "7 period_us=166667"
expect ${g}nvmlDeviceGetDecoderUtilization "9 period_us=166667"
# thermal
expect ${g}nvmlDeviceGetTemperature 63
expect ${g}nvmlDeviceGetTemperatureV 63
expect ${g}nvmlDeviceGetTemperatureThreshold.shutdown 92
expect ${g}nvmlDeviceGetTemperatureThreshold.slowdown 89
expect ${g}nvmlDeviceGetTemperatureThreshold.mem_max 95
expect ${g}nvmlDeviceGetTemperatureThreshold.gpu_max 87
expect_rc ${g}nvmlDeviceGetTemperatureThreshold.acoustic_min 3
expect_rc ${g}nvmlDeviceGetTemperatureThreshold.invalid8 2
expect ${g}nvmlDeviceGetFanSpeed 47
expect ${g}nvmlDeviceGetNumFans 1
expect ${g}nvmlDeviceGetFanSpeed_v2.0 47
expect_rc ${g}nvmlDeviceGetFanSpeed_v2.1 2
# power
expect ${g}nvmlDeviceGetPowerUsage 612345
expect ${g}nvmlDeviceGetPowerManagementLimit 650000
expect ${g}nvmlDeviceGetPowerManagementDefaultLimit 700000
expect ${g}nvmlDeviceGetPowerManagementLimitConstraints "200000 710000"
expect ${g}nvmlDeviceGetEnforcedPowerLimit 640000
expect ${g}nvmlDeviceGetTotalEnergyConsumption 580123456789
# clocks, through every way of asking
expect ${g}nvmlDeviceGetClockInfo.graphics 1755
expect ${g}nvmlDeviceGetClockInfo.sm 1740
expect ${g}nvmlDeviceGetClockInfo.mem 2619
expect ${g}nvmlDeviceGetClockInfo.video 1635
expect ${g}nvmlDeviceGetMaxClockInfo.graphics 1980
expect ${g}nvmlDeviceGetMaxClockInfo.sm 1970
expect ${g}nvmlDeviceGetMaxClockInfo.mem 2620
expect ${g}nvmlDeviceGetMaxClockInfo.video 1755
expect ${g}nvmlDeviceGetApplicationsClock.sm 1910
expect ${g}nvmlDeviceGetApplicationsClock.graphics 1910
expect ${g}nvmlDeviceGetApplicationsClock.mem 2610
expect ${g}nvmlDeviceGetDefaultApplicationsClock.sm 1920
expect ${g}nvmlDeviceGetDefaultApplicationsClock.mem 2615
expect ${g}nvmlDeviceGetClock.sm.current 1740
expect ${g}nvmlDeviceGetClock.mem.app_target 2610
expect ${g}nvmlDeviceGetClock.sm.app_default 1920
expect ${g}nvmlDeviceGetClock.graphics.boost_max 1980
expect_rc ${g}nvmlDeviceGetClockInfo.bad 2
expect ${g}nvmlDeviceGetCurrentClocksEventReasons 0x24
expect ${g}nvmlDeviceGetCurrentClocksThrottleReasons 0x24
expect ${g}nvmlDeviceGetSupportedClocksEventReasons 0x1ff
expect ${g}nvmlDeviceGetSupportedClocksThrottleReasons 0x1ff
expect ${g}nvmlDeviceGetPerformanceState 2
expect ${g}nvmlDeviceGetPowerState 2
# modes
expect ${g}nvmlDeviceGetPersistenceMode 1
expect ${g}nvmlDeviceGetComputeMode 3
expect ${g}nvmlDeviceGetDisplayMode 1
expect ${g}nvmlDeviceGetDisplayActive 0
expect ${g}nvmlDeviceGetEccMode "1 0"
expect ${g}nvmlDeviceGetMigMode "0 1"
expect ${g}nvmlDeviceGetMaxMigDeviceCount 7
expect_rc ${g}nvmlDeviceGetMigDeviceHandleByIndex.0 6
expect_rc ${g}nvmlDeviceGetMigDeviceHandleByIndex.7 2
# ECC, retirement, remapping
expect ${g}nvmlDeviceGetTotalEccErrors.volatile.corrected 11
expect ${g}nvmlDeviceGetTotalEccErrors.volatile.uncorrected 2
expect ${g}nvmlDeviceGetTotalEccErrors.aggregate.corrected 131
expect ${g}nvmlDeviceGetTotalEccErrors.aggregate.uncorrected 3
expect ${g}nvmlDeviceGetRetiredPages.sbe.query "7 4"
expect ${g}nvmlDeviceGetRetiredPages.sbe "4 first=0x100000"
expect ${g}nvmlDeviceGetRetiredPages_v2.sbe "4 first=0x100000 at=1767225600"
expect ${g}nvmlDeviceGetRetiredPages.dbe.query "7 1"
expect ${g}nvmlDeviceGetRetiredPages.dbe "1 first=0x200000"
expect ${g}nvmlDeviceGetRetiredPagesPendingStatus 1
expect ${g}nvmlDeviceGetRemappedRows "6 1 1 0"
# PCIe: throughput in KB/s (1024 bytes)
expect ${g}nvmlDeviceGetCurrPcieLinkGeneration 4
expect ${g}nvmlDeviceGetMaxPcieLinkGeneration 5
expect ${g}nvmlDeviceGetGpuMaxPcieLinkGeneration 5
expect ${g}nvmlDeviceGetCurrPcieLinkWidth 8
expect ${g}nvmlDeviceGetMaxPcieLinkWidth 16
expect ${g}nvmlDeviceGetPcieThroughput.tx 1024000
expect ${g}nvmlDeviceGetPcieThroughput.rx 2048000
expect ${g}nvmlDeviceGetPcieReplayCounter 17
# processes: by list type; MIG ids where given; no used_bytes reads as NVML_VALUE_NOT_AVAILABLE
expect ${g}nvmlDeviceGetComputeRunningProcesses_v3.count 2
expect ${g}nvmlDeviceGetComputeRunningProcesses_v3.0 "pid=4121 used=30000000000 gi=0xffffffff ci=0xffffffff"
expect ${g}nvmlDeviceGetComputeRunningProcesses_v3.1 "pid=4188 used=9000000000 gi=0x1 ci=0x0"
expect ${g}nvmlDeviceGetGraphicsRunningProcesses_v3.count 2
expect ${g}nvmlDeviceGetGraphicsRunningProcesses_v3.0 "pid=4188 used=9000000000 gi=0x1 ci=0x0"
expect ${g}nvmlDeviceGetGraphicsRunningProcesses_v3.1 "pid=5230 used=18446744073709551615 gi=0xffffffff ci=0xffffffff"
expect ${g}nvmlDeviceGetMPSComputeRunningProcesses_v3.count 1
expect ${g}nvmlDeviceGetMPSComputeRunningProcesses_v3.0 "pid=6001 used=1000000000 gi=0xffffffff ci=0xffffffff"
expect ${g}nvmlDeviceGetMPSComputeRunningProcesses_v2.0 "pid=6001 used=1000000000 gi=0xffffffff ci=0xffffffff"
expect ${g}nvmlDeviceGetMPSComputeRunningProcesses.stride 16
expect ${g}nvmlDeviceGetMPSComputeRunningProcesses.0 "pid=6001 used=1000000000"
expect ${g}nvmlDeviceGetProcessUtilization.query "7 2"
expect ${g}nvmlDeviceGetProcessUtilization.0 "pid=4121 sm=77 mem=31 enc=0 dec=1 ts_nonzero=1"
expect ${g}nvmlDeviceGetProcessUtilization.1 "pid=4188 sm=13 mem=8 enc=7 dec=9 ts_nonzero=1"
expect_rc ${g}nvmlDeviceGetProcessUtilization.future 6
# beyond the snapshot: brand, architecture (from the compute capability), part number, the
# Windows-only driver model, accounting, NVLinks, field values with their own return codes
expect ${g}nvmlDeviceGetBrand 14
expect ${g}nvmlDeviceGetArchitecture 0x9
expect ${g}nvmlDeviceGetBoardPartNumber 692-2G520-0200-000
expect_rc ${g}nvmlDeviceGetDriverModel 3
expect_rc ${g}nvmlDeviceGetDriverModel_v2 3
expect ${g}nvmlDeviceGetAccountingMode 1
expect ${g}nvmlDeviceGetNvLinkState.0 1
expect ${g}nvmlDeviceGetNvLinkState.2 0
expect ${g}nvmlDeviceGetFieldValues.91.0 "type=1 u=4 ull=4"
expect ${g}nvmlDeviceGetFieldValues.138.1 "type=3 u=3197704724 ull=123456789012"
expect_rc ${g}nvmlDeviceGetFieldValues.82.0 3

# GPU 1 has only its identity: everything else is NOT_SUPPORTED, as on hardware without it
g=gpu1.
expect ${g}nvmlDeviceGetName "NVIDIA A100-SXM4-40GB"
expect ${g}nvmlDeviceGetPciInfo_v3.ids "0:2a:0 0x20b010de 0x134f10de"
for key in nvmlDeviceGetSerial nvmlDeviceGetMemoryInfo nvmlDeviceGetMemoryInfo_v2 \
    nvmlDeviceGetTemperature nvmlDeviceGetPowerUsage nvmlDeviceGetClockInfo.sm \
    nvmlDeviceGetCurrentClocksEventReasons nvmlDeviceGetEccMode nvmlDeviceGetRemappedRows \
    nvmlDeviceGetMigMode nvmlDeviceGetCurrPcieLinkGeneration nvmlDeviceGetPcieThroughput.rx \
    nvmlDeviceGetBrand nvmlDeviceGetArchitecture nvmlDeviceGetBoardPartNumber \
    nvmlDeviceGetNvLinkState.0 nvmlDeviceGetFieldValues.91.0 nvmlDeviceGetMaxClockInfo.video; do
    expect_rc "$g$key" 3
done
# accounting is off until someone turns it on (the driver's default)
expect ${g}nvmlDeviceGetAccountingMode 0
# an absent process list is an empty one
expect ${g}nvmlDeviceGetComputeRunningProcesses_v3.query "0 0"
expect ${g}nvmlDeviceGetProcessUtilization.query "6 0"
expect shutdown 0
finish
