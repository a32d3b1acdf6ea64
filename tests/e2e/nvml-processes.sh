#!/usr/bin/env bash
# Process lists: the record size is decided (32 bytes only for _v3 in drivers 535.43.02-535.86.05,
# 24 for _v3/_v2 otherwise, 16 for the unversioned symbol), never guessed; a list that grows between
# the two calls is read whole; unknown memory stays unknown; MIG instances are kept.
. "$SRC/tests/fixtures/nvml/common.bash"

# Three processes: if a record were read at the wrong stride, pids 2 and 3 would be garbage.
PROCS='[
  {"pid": 4121, "used_bytes": 40802189312, "type": "compute"},
  {"pid": 70001, "used_bytes": 1073741824, "type": ["compute", "graphics"]},
  {"pid": 2147483647, "used_bytes": 123456789, "type": "graphics"}]'
WANT='[[4121,40802189312,["compute"]],[70001,1073741824,["compute","graphics"]],[2147483647,123456789,["graphics"]]]'
PIDS='[.gpus[0].processes[] | [.pid, .used_bytes, .type]]'

with_driver() { # DRIVER [JQ filter]
    jq -cn --argjson g "$BASE_GPU" --argjson p "$PROCS" --arg d "$1" \
        "{schema: \"gpudoctor.scenario/1\", system: {driver_version: \$d},
          gpus: [\$g | .processes = \$p]} | ${2:-.}"
}

# The R535 window: _v3 writes 32-byte records.
for d in 535.43.02 535.54.03 535.86.05; do
    snap "$(scenario "r535-$d" "$(with_driver "$d")")"
    check '.nvml.process_stride' '32'
    check "$PIDS" "$WANT"
    check '.collectors.nvml.state' '"ok"'
done

# Either side of it, and everywhere else: 24 bytes.
for d in 535.104.05 535.98 530.30.02 550.54.15; do
    snap "$(scenario "v3-$d" "$(with_driver "$d")")"
    check '.nvml.process_stride' '24'
    check "$PIDS" "$WANT"
done

# _v3 refuses (a versioned call answering FUNCTION_NOT_FOUND): _v2, 24 bytes.
snap "$(scenario v2 "$(with_driver 535.54.03 '.errors = {
    nvmlDeviceGetComputeRunningProcesses_v3: "FUNCTION_NOT_FOUND",
    nvmlDeviceGetGraphicsRunningProcesses_v3: "FUNCTION_NOT_FOUND"}')")"
check '.nvml.process_stride' '24'
check "$PIDS" "$WANT"

# Only the unversioned symbols answer: 16-byte records, and no MIG ids in them.
snap "$(scenario v1 "$(with_driver 535.54.03 '.errors = {
    nvmlDeviceGetComputeRunningProcesses_v3: "FUNCTION_NOT_FOUND",
    nvmlDeviceGetComputeRunningProcesses_v2: "FUNCTION_NOT_FOUND",
    nvmlDeviceGetGraphicsRunningProcesses_v3: "FUNCTION_NOT_FOUND",
    nvmlDeviceGetGraphicsRunningProcesses_v2: "FUNCTION_NOT_FOUND"}')")"
check '.nvml.process_stride' '16'
check "$PIDS" "$WANT"
check '[.gpus[0].processes[].gpu_instance_id] | unique' '[null]'
check '.gpus[0].nvml_status | has("processes")' 'false'

# The driver version read from the library's file name decides when the library will not say it.
cp "$SIM_LIB" "$TMP/libnvidia-ml.so.535.54.03"
snap "$(scenario from-name "$(with_driver 535.54.03 \
    '.errors = {nvmlSystemGetDriverVersion: "NO_PERMISSION"}')")" \
    --nvml-lib "$TMP/libnvidia-ml.so.535.54.03"
check '[.nvml.driver_version, .nvml.library_version]' '[null,"535.54.03"]'
check '.nvml.process_stride' '32'
check "$PIDS" "$WANT"

# Memory NVML cannot tell (NVML_VALUE_NOT_AVAILABLE) is unknown, not 16 EiB; MIG ids are kept.
snap "$(scenario unknown-mem "$(with_driver 550.54.15 '.gpus[0].processes = [
    {pid: 4121, used_bytes: null, type: "compute"},
    {pid: 4122, used_bytes: 1048576, gpu_instance_id: 1, compute_instance_id: 0, type: "compute"}]')")"
check '[.gpus[0].processes[] | [.pid, .used_bytes, .gpu_instance_id, .compute_instance_id]]' \
    '[[4121,null,null,null],[4122,1048576,1,0]]'
check '.samples[0].gpus[0].processes' '[{"pid":4121},{"pid":4122,"used_bytes":1048576}]'

# A list that grows between the size query and the read (the simulator hides the newest 20 of 40
# processes from the size query): the read that finds too small a buffer is repeated, no
# INSUFFICIENT_SIZE leaks out, and every process is there, once.
MANY=$(jq -cn '[range(40) | {pid: (5000 + .), used_bytes: (1048576 * (. + 1)), type: "compute",
    sm_util_pct: ., mem_util_pct: 1, enc_util_pct: 0, dec_util_pct: 0}]')
for d in 535.54.03 550.54.15; do
    snap "$(scenario "growth-$d" "$(with_driver "$d" ".gpus[0].processes = $MANY | .list_growth = {
        nvmlDeviceGetComputeRunningProcesses: 20, nvmlDeviceGetProcessUtilization: 20}")")"
    check '.gpus[0].nvml_status | has("processes") or has("process_utilization")' 'false'
    check '.collectors.nvml.state' '"ok"'
    check '[.gpus[0].processes[] | [.pid, .used_bytes, .sm_util_pct]]' \
        "$(jq -c '[.[] | [.pid, .used_bytes, .sm_util_pct]]' <<<"$MANY")"
done

# No process list on this GPU: NOT_SUPPORTED for the list and its utilisation.
snap "$(scenario no-list "$(jq -cn --argjson g "$BASE_GPU" '{schema: "gpudoctor.scenario/1",
    gpus: [$g | .processes = null | .process_utilization = null
              | .nvml_status = {processes: "NOT_SUPPORTED", process_utilization: "NOT_SUPPORTED"}]}')")"
check '.gpus[0].processes' 'null'
check '[.gpus[0].nvml_status.processes, .gpus[0].nvml_status.process_utilization]' \
    '["NOT_SUPPORTED","NOT_SUPPORTED"]'

finish
