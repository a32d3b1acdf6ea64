#!/usr/bin/env bash
# Calling conventions: the two-call protocol of lists (a size query, then a buffer) including a
# list that grows between the calls, UNINITIALIZED before nvmlInit and after the last
# nvmlShutdown, reference-counted init, INVALID_ARGUMENT for bad handles and NULL pointers.
. "$(dirname "$0")/sim-lib.sh"

v3=nvmlDeviceGetComputeRunningProcesses_v3

# ---- a list that grows between the size query and the next call ----
s=$(scenario grow ".list_growth = {\"$v3\": 1}")
run "$s" grow 0 $v3
expect grow.query "7 1"   # INSUFFICIENT_SIZE, one process (the other starts just after)
expect grow.fill1 "7 2"   # a buffer for one: too small now, the list holds two
expect grow.fill2 "0 2"   # a buffer for two: both
expect grow.0 "pid=4121 used=30000000000 gi=0xffffffff ci=0xffffffff"
expect grow.1 "pid=4188 used=9000000000 gi=0x1 ci=0x0"
# the exact name touches only that version; the root name every version
run "$s" grow 0 nvmlDeviceGetComputeRunningProcesses_v2
expect grow.query "7 2"
s=$(scenario grow-root '.gpus[0].list_growth = {"nvmlDeviceGetComputeRunningProcesses": 1}')
run "$s" grow 0 nvmlDeviceGetComputeRunningProcesses
expect grow.query "7 1"
expect grow.fill1 "7 2"
expect grow.1 "pid=4188 used=9000000000"
# when everything starts after the query, the query sees an empty list
s=$(scenario grow-all ".list_growth = {\"$v3\": 2}")
run "$s" grow 0 $v3
expect grow.query "0 0"
# per-process utilisation samples grow the same way
s=$(scenario grow-util '.list_growth = {"nvmlDeviceGetProcessUtilization": 1}')
run "$s" procs 0
expect gpu0.nvmlDeviceGetProcessUtilization.query "7 1"
expect gpu0.nvmlDeviceGetProcessUtilization.count 2
# an over-allocated buffer gets the count written back; an empty list answers SUCCESS, 0
run "$FIXTURES/full.json" procs 0
expect gpu0.$v3.count 2
expect gpu0.nvmlDeviceGetMPSComputeRunningProcesses_v3.count 1
s=$(scenario no-procs '.gpus[0].processes = []')
run "$s" procs 0
expect gpu0.$v3.query "0 0"
expect gpu0.nvmlDeviceGetProcessUtilization.query "6 0"

# ---- before init, and after the last shutdown ----
run "$FIXTURES/full.json" preinit
for phase in preinit after; do
    for fn in nvmlDeviceGetCount_v2 nvmlDeviceGetCount nvmlDeviceGetHandleByIndex_v2 \
        nvmlSystemGetDriverVersion nvmlSystemGetCudaDriverVersion_v2 nvmlSystemGetProcessName \
        nvmlShutdown; do
        expect_rc "$phase.$fn" 1
    done
done
expect init 0
expect shutdown 0

# ---- init is reference-counted ----
run "$FIXTURES/full.json" refcount
expect init1 0
expect init2 0
expect count.2refs 2
expect shutdown1 0
expect count.1ref 2
expect shutdown2 0
expect_rc count.0refs 1
expect shutdown3 1
expect init3 0
expect count.again 2
expect shutdown4 0

# ---- bad arguments ----
run "$FIXTURES/full.json" badargs
for key in handle.past_end handle.null_out count.null driver.null name.fake_handle \
    name.null_handle power.fake_handle name.null_buf power.null_out procs.null_count \
    memory_v2.null threshold.99 ecc.bad_type busid.garbage; do
    expect_rc "$key" 2
done
expect_rc uuid.unknown 6
expect_rc busid.unknown 6

# ---- process names come from the process table (NVML_SIM_PROC stands in for /proc) ----
mkdir -p "$TMP/proc/4121" "$TMP/proc/4188"
printf 'python3\0train.py\0--epochs\0' >"$TMP/proc/4121/cmdline"
printf '' >"$TMP/proc/4188/cmdline" # a kernel thread, or a zombie: the comm then
printf 'kworker/3:1\n' >"$TMP/proc/4188/comm"
export NVML_SIM_PROC="$TMP/proc"
run "$FIXTURES/full.json" pname 4121
expect nvmlSystemGetProcessName python3
expect_rc nvmlSystemGetProcessName.len2 7
run "$FIXTURES/full.json" pname 4188
expect nvmlSystemGetProcessName kworker/3:1
run "$FIXTURES/full.json" pname 999999
expect_rc nvmlSystemGetProcessName 6
unset NVML_SIM_PROC
run "$FIXTURES/full.json" pname $$
expect nvmlSystemGetProcessName "$(tr '\0' '\n' </proc/$$/cmdline | head -n 1)"
finish
