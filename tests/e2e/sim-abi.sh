#!/usr/bin/env bash
# The layouts each symbol writes, as the real library writes them (reference/nvml-facts.md 2, 6):
# process records of 16, 24 or 32 bytes, the 52-byte legacy PCI info against the 68-byte v3,
# v1 against v2 memory, and the v1 count and index that leave inaccessible GPUs out.
. "$(dirname "$0")/sim-lib.sh"

procs=nvmlDeviceGetComputeRunningProcesses
gprocs=nvmlDeviceGetGraphicsRunningProcesses

# ---- process record strides: written bytes / records ----
run "$FIXTURES/full.json" procs 0
expect gpu0.$procs.stride 16
expect gpu0.$procs.written 32
expect gpu0.$procs.0 "pid=4121 used=30000000000"
expect gpu0.$procs.1 "pid=4188 used=9000000000"
expect gpu0.${procs}_v2.stride 24
expect gpu0.${procs}_v2.1 "pid=4188 used=9000000000 gi=0x1 ci=0x0"
expect gpu0.${procs}_v3.stride 24
expect gpu0.${gprocs}.stride 16
expect gpu0.${gprocs}_v2.stride 24
expect gpu0.${gprocs}_v3.stride 24
expect gpu0.nvmlDeviceGetMPSComputeRunningProcesses_v3.stride 24
expect gpu0.nvmlDeviceGetMPSComputeRunningProcesses_v2.stride 24
expect gpu0.nvmlDeviceGetMPSComputeRunningProcesses.stride 16

# the R535 releases whose _v3 wrote 32-byte records; the others around them write 24
for driver in 535.43.02 535.54.03 535.86.05; do
    s=$(scenario r535 ".system.driver_version = \"$driver\"")
    run "$s" procs 0
    expect gpu0.${procs}_v3.stride 32
    expect gpu0.${procs}_v3.written 64
    expect gpu0.${procs}_v3.1 "pid=4188 used=9000000000 gi=0x1 ci=0x0 cc=0"
    expect gpu0.${gprocs}_v3.stride 32
    expect gpu0.nvmlDeviceGetMPSComputeRunningProcesses_v3.stride 32
    expect gpu0.nvmlDeviceGetMPSComputeRunningProcesses_v2.stride 24
    # the older symbols keep their layouts on these drivers too
    expect gpu0.${procs}_v2.stride 24
    expect gpu0.${procs}.stride 16
done
for driver in 535.43.01 535.98 535.104.05 550.54.15 470.82.01; do
    s=$(scenario not-r535 ".system.driver_version = \"$driver\"")
    run "$s" procs 0
    expect gpu0.${procs}_v3.stride 24
done
# no driver version known: the layout every other driver uses
s=$(scenario no-driver 'del(.system.driver_version)')
run "$s" procs 0
expect gpu0.${procs}_v3.stride 24

# ---- PCI info: 52 bytes for the unversioned name and _v2, 68 for _v3 ----
run "$FIXTURES/full.json" call 0 pci
expect gpu0.nvmlDeviceGetPciInfo.written 52
expect gpu0.nvmlDeviceGetPciInfo_v2.written 52
expect gpu0.nvmlDeviceGetPciInfo_v3.written 68
expect gpu0.nvmlDeviceGetPciInfo.busId 0001:9A:1F.0
expect gpu0.nvmlDeviceGetPciInfo_v3.busId 00000001:9A:1F.0

# ---- memory: v1 24 bytes, used = reserved + allocated; v2 checks its version ----
run "$FIXTURES/full.json" call 0 memory
expect gpu0.nvmlDeviceGetMemoryInfo.written 24
expect gpu0.nvmlDeviceGetMemoryInfo "total=85520809984 free=44943044608 used=40577765376"
expect gpu0.nvmlDeviceGetMemoryInfo_v2 "total=85520809984 reserved=577765376 free=44943044608 used=40000000000"
# a bare 2 instead of nvmlMemory_v2: FUNCTION_NOT_FOUND, as every driver reported from 510.39.01 on
expect_rc gpu0.nvmlDeviceGetMemoryInfo_v2.version2 13
# without a reserved figure, v1 is what a pre-R510 driver said and v2 cannot answer
s=$(scenario no-reserved 'del(.gpus[0].mem_reserved_bytes)')
run "$s" call 0 memory
expect gpu0.nvmlDeviceGetMemoryInfo "total=85520809984 free=44943044608 used=40000000000"
expect_rc gpu0.nvmlDeviceGetMemoryInfo_v2 3
# TemperatureV checks its version too
run "$FIXTURES/full.json" call 0 thermal
expect gpu0.nvmlDeviceGetTemperatureV 63
expect_rc gpu0.nvmlDeviceGetTemperatureV.version1 25
expect_rc gpu0.nvmlDeviceGetTemperature.sensor1 2

# ---- counts and indices: v1 leaves out GPUs the user may not open ----
s=$(scenario perm '.gpus |= [.[0], {"index": 1, "handle_status": "NO_PERMISSION"},
                             (.[1] | .index = 2), {"index": 3, "handle_status": "GPU_IS_LOST"}]')
run "$s" call - system
expect nvmlDeviceGetCount_v2 4
expect nvmlDeviceGetCount 3
expect nvmlDeviceGetHandleByIndex_v2.0 ok
expect_rc nvmlDeviceGetHandleByIndex_v2.1 4
expect nvmlDeviceGetHandleByIndex_v2.2 ok
expect_rc nvmlDeviceGetHandleByIndex_v2.3 15
expect_rc nvmlDeviceGetHandleByIndex_v2.4 2
# v1 index 1 is the third GPU (the second accessible one), 2 the lost one, 3 is past the end
expect nvmlDeviceGetHandleByIndex.1 ok
expect_rc nvmlDeviceGetHandleByIndex.2 15
expect_rc nvmlDeviceGetHandleByIndex.3 2
# initialised through the v1 nvmlInit, the library never sees the inaccessible GPU at all
run "$s" --init v1 call - system
expect init 0
expect nvmlDeviceGetCount_v2 3
expect nvmlDeviceGetCount 3
expect nvmlDeviceGetHandleByIndex_v2.1 ok
expect_rc nvmlDeviceGetHandleByIndex_v2.2 15
# nvmlDeviceGetIndex keeps the NVML index of the GPU
run "$s" call 2 identity
expect gpu2.nvmlDeviceGetIndex 2
expect gpu2.nvmlDeviceGetName "NVIDIA A100-SXM4-40GB"

# ---- CUDA driver version: _v2 asks libcuda (absent: LIBRARY_NOT_FOUND), v1 falls back ----
s=$(scenario no-cuda 'del(.system.cuda_driver_version)')
run "$s" call - system
expect_rc nvmlSystemGetCudaDriverVersion_v2 12
expect nvmlSystemGetCudaDriverVersion 12040
s=$(scenario no-cuda-535 'del(.system.cuda_driver_version) | .system.driver_version = "535.104.05"')
run "$s" call - system
expect nvmlSystemGetCudaDriverVersion 12020

# ---- MIG devices: handles for the instances that exist, NOT_FOUND for the free slots ----
s=$(scenario mig '.gpus[0].mig_mode = true | .gpus[0].mig_devices = 3')
run "$s" call 0 modes
expect gpu0.nvmlDeviceGetMigMode "1 1"
expect gpu0.nvmlDeviceGetMaxMigDeviceCount 7
expect gpu0.nvmlDeviceGetMigDeviceHandleByIndex.2 ok
expect_rc gpu0.nvmlDeviceGetMigDeviceHandleByIndex.3 6
expect_rc gpu0.nvmlDeviceGetMigDeviceHandleByIndex.7 2
expect gpu0.mig0.nvmlDeviceGetName "NVIDIA H100 80GB HBM3 MIG 2g.20gb"
expect gpu0.mig1.nvmlDeviceGetUUID MIG-6f3c2a91-1d4e-7b8a-93c5-0e2f4a6b8c01
expect gpu0.mig1.nvmlDeviceGetHandleByUUID same
expect_rc gpu0.mig2.nvmlDeviceGetPowerUsage 3
# per-process utilisation is not available while MIG is on
run "$s" procs 0
expect_rc gpu0.nvmlDeviceGetProcessUtilization.future 3
finish
