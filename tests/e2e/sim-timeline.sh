#!/usr/bin/env bash
# Values over time. NVML_SIM_EPOCH puts the client at t = 100 s of timeline.json (give or take
# the client's start-up, which the entries are built to tolerate: under 4 s).
. "$(dirname "$0")/sim-lib.sh"

at() { # T: the Unix time that makes now t = T on the scenario clock
    awk -v now="$(date +%s.%N)" -v t="$1" 'BEGIN { printf "%.3f", now - t }'
}

export NVML_SIM_EPOCH=$(at 100)
run "$FIXTURES/timeline.json" dump
expect init 0
g=gpu0.
expect ${g}nvmlDeviceGetTemperature 88                 # 63 + 0.25/s * 100 s
expect ${g}nvmlDeviceGetTemperatureV 88
expect ${g}nvmlDeviceGetPowerUsage 350000              # window [90,110) 300000, then +1000/s for 50 s
expect ${g}nvmlDeviceGetUtilizationRates "gpu=30 memory=42" # 10 s per value: 100 s is the third
expect ${g}nvmlDeviceGetCurrentClocksEventReasons 0x60 # window from 95 s on
expect ${g}nvmlDeviceGetPcieReplayCounter 77           # 17 + 2/s during [50,80), then held
expect ${g}nvmlDeviceGetTotalEccErrors.volatile.corrected 5 # 11 - 1/s, no lower than 5
expect ${g}nvmlDeviceGetPersistenceMode 1              # [true, false] 10 s each: true at 100 s
expect ${g}nvmlDeviceGetComputeMode 2                  # "prohibited" in [99,110)
expect ${g}nvmlDeviceGetFanSpeed 47                    # [0,30) is over: the base value
# process 4121 leaked 10 MiB/s for 60 s; 6001 has gone (present false from 50 s) taking its
# 1e9 bytes; 5230 is not there yet (present from 200 s). GPU memory follows its processes.
expect ${g}nvmlDeviceGetComputeRunningProcesses_v3.0 "pid=4121 used=30629145600 gi=0xffffffff ci=0xffffffff"
expect ${g}nvmlDeviceGetMPSComputeRunningProcesses_v3.query "0 0"
expect ${g}nvmlDeviceGetGraphicsRunningProcesses_v3.count 1
expect ${g}nvmlDeviceGetGraphicsRunningProcesses_v3.0 "pid=4188 used=9000000000 gi=0x1 ci=0x0"
expect ${g}nvmlDeviceGetMemoryInfo_v2 "total=85520809984 reserved=577765376 free=45313899008 used=39629145600"
expect ${g}nvmlDeviceGetMemoryInfo "total=85520809984 free=45313899008 used=40206910976"
expect ${g}nvmlDeviceGetProcessUtilization.1 "pid=4188 sm=50 mem=8 enc=7 dec=9 ts_nonzero=1"
# things without a timeline entry do not move
expect ${g}nvmlDeviceGetClockInfo.sm 1740
expect gpu1.nvmlDeviceGetName "NVIDIA A100-SXM4-40GB"

# t = 250 s: 5230 has started, the square wave is on its first value again
export NVML_SIM_EPOCH=$(at 250)
run "$FIXTURES/timeline.json" call 0 memory procs
expect ${g}nvmlDeviceGetGraphicsRunningProcesses_v3.count 2
expect ${g}nvmlDeviceGetUtilizationRates "gpu=20 memory=42"

# before the epoch (t < 0): no rate has run, no window is open
export NVML_SIM_EPOCH=$(at -1000)
run "$FIXTURES/timeline.json" call 0 thermal power procs
expect ${g}nvmlDeviceGetTemperature 63
expect ${g}nvmlDeviceGetPowerUsage 612345
expect ${g}nvmlDeviceGetComputeRunningProcesses_v3.0 "pid=4121 used=30000000000 gi=0xffffffff ci=0xffffffff"

# without NVML_SIM_EPOCH the clock starts at the first nvmlInit: t is about 0
unset NVML_SIM_EPOCH
run "$FIXTURES/timeline.json" call 0 thermal power
expect ${g}nvmlDeviceGetFanSpeed 99 # window [0,30)
# window [0,50) sets 1, then the 1000/s rate adds a unit a millisecond: t is under 2 s
power=$(value ${g}nvmlDeviceGetPowerUsage)
[ "$power" -ge 1 ] && [ "$power" -le 2001 ] || fail "power $power at t = 0"
expect ${g}nvmlDeviceGetTemperature 63
finish
