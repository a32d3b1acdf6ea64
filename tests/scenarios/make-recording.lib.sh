#!/usr/bin/env bash
# Sourced by a recording case's make-recording.sh: regenerates its recording.jsonl from its
# source-scenario.json (tests/scenarios/README.md, "Recording cases").
#
#   record_case COUNT [WATCH-OPTION ...]
#
# Every process the scenario lists must exist while watch records (the process collector reads
# this machine's /proc), so each pid of source-scenario.json is replaced by a `sleep` started for
# the purpose (with NVIDIA device files open, as a GPU process has them), in the scenario and in
# the case's expect file alike; then
#   gpudoctor watch --plain -n 0.2 -c COUNT --only nvml,processes --record recording.jsonl
# runs on the NVML simulator, the sleeps are ended, and the recording is judged as
# check-scenarios.sh judges it. Uses build/gpudoctor and build/sim/libnvidia-ml.so.1 of this
# checkout unless GPUDOCTOR and SIM_LIB say otherwise.
set -euo pipefail

record_case() {
    local count=$1
    shift
    local case_dir top old new i
    case_dir=$(cd "$(dirname "${BASH_SOURCE[1]}")" && pwd)
    top=$(cd "$case_dir/../../.." && pwd)
    local gpudoctor sim
    gpudoctor=$(realpath "${GPUDOCTOR:-$top/build/gpudoctor}")
    sim=$(realpath "${SIM_LIB:-$top/build/sim/libnvidia-ml.so.1}")
    local -a olds=() extra=()
    RECORD_SLEEPS=()
    [ -x "$gpudoctor" ] && [ -e "$sim" ] || {
        echo "build first (make build), or set GPUDOCTOR and SIM_LIB" >&2
        return 1
    }
    cd "$case_dir"

    # One sleep per pid of the scenario, started in / so that nothing of this checkout is recorded.
    mapfile -t olds < <(jq -r '[.gpus[].processes[]?.pid] | unique | .[]' source-scenario.json)
    trap 'for p in "${RECORD_SLEEPS[@]}"; do kill "$p" 2>/dev/null || :; done' EXIT
    # Each holds /dev/nvidiactl and /dev/nvidia-uvm open as a GPU process does (reap-target
    # holder): NVML's pid whose process has no NVIDIA device open is judged not NVML's.
    local holder=$top/build/tests/helpers/reap-target
    [ -x "$holder" ] || { echo "build the test helpers first (make build)" >&2; return 1; }
    for old in "${olds[@]}"; do
        (cd / && exec "$holder" holder sleep 3600) &
        RECORD_SLEEPS+=("$!")
    done
    for p in "${RECORD_SLEEPS[@]}"; do # until each is sleep with its devices open
        for _ in $(seq 250); do
            [ "$(cat "/proc/$p/comm" 2>/dev/null)" = sleep ] && break
            sleep 0.02
        done
    done
    local map='{}'
    for i in "${!olds[@]}"; do
        map=$(jq -c --arg o "${olds[i]}" --argjson n "${RECORD_SLEEPS[i]}" '. + {($o): $n}' <<<"$map")
    done
    jq --argjson m "$map" '
        def re: if has("pid") then .pid = ($m[.pid | tostring] // .pid) else . end;
        .gpus |= map(if has("processes") then .processes |= map(re) else . end)
        | if has("timeline") then .timeline |= map(re) else . end' \
        source-scenario.json >source-scenario.json.new
    mv source-scenario.json.new source-scenario.json
    # expect: old pids to placeholders first, so that a new pid equal to another old one is safe.
    for i in "${!olds[@]}"; do sed -i -E "s/pid=${olds[i]}\b/pid=@$i@/g" expect; done
    for i in "${!olds[@]}"; do sed -i -E "s/pid=@$i@/pid=${RECORD_SLEEPS[i]}/g" expect; done

    GPUDOCTOR_CONFIG=/dev/null GPUDOCTOR_NVML_LIB=$sim NVML_SIM_SCENARIO=source-scenario.json \
        "$gpudoctor" watch --plain -n 0.2 -c "$count" --only nvml,processes "$@" \
        --record recording.jsonl >/dev/null
    echo "recording.jsonl: $(wc -l <recording.jsonl) lines, $(wc -c <recording.jsonl) bytes;" \
        "pids ${olds[*]} are now ${RECORD_SLEEPS[*]}"
    [ -f args ] && read -r -a extra <args
    GPUDOCTOR_CONFIG=/dev/null NO_COLOR=1 "$gpudoctor" check --from recording.jsonl "${extra[@]}" \
        || echo "(exit $?)"
}
