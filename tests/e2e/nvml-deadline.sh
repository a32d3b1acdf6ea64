#!/usr/bin/env bash
# Never hang: an NVML call that never returns costs the NVML budget (--timeout minus a reserve),
# is named with its GPU, the other collectors still run, the program exits on time and leaves no
# process behind. A call that is only slow still gives its value.
. "$SRC/tests/fixtures/nvml/common.bash"

three_gpus() { # JQ filter applied to three base GPUs
    jq -cn --argjson g "$BASE_GPU" --argjson sys "$SYSTEM" \
        "{schema: \"gpudoctor.scenario/1\", system: \$sys,
          gpus: [\$g, (\$g | .index = 1 | .pci_bus_id = \"00000000:2A:00.0\"),
                 (\$g | .index = 2 | .pci_bus_id = \"00000000:3B:00.0\")]} | $1"
}

# run_timed SCENARIO ARGS...: the whole program in its own session, so that every process it
# started (zombies included) can be found afterwards by session id. Sets $ms and $sid.
run_timed() {
    local scenario=$1 t0 t1
    shift
    t0=$(date +%s%N)
    GPUDOCTOR_NVML_LIB=$SIM_LIB NVML_SIM_SCENARIO=$scenario \
        setsid "$GPUDOCTOR" snapshot "$@" >"$OUT" 2>"$TMP/err" &
    sid=$!
    rc=0
    wait "$sid" || rc=$?
    t1=$(date +%s%N)
    ms=$(((t1 - t0) / 1000000))
    if [ "$rc" != 0 ]; then
        echo "FAIL: gpudoctor exited with $rc"
        cat "$TMP/err"
        failures=$((failures + 1))
    fi
}

# Processes (zombies included) still in session $sid.
leftovers() {
    local f line rest
    for f in /proc/[0-9]*/stat; do
        read -r line <"$f" 2>/dev/null || continue
        rest=${line##*) }
        # after the command name: state ppid pgrp session
        set -- $rest
        [ "${4:-}" = "$sid" ] && echo "${f#/proc/}"
    done
    return 0
}

within() { # LOW HIGH: $ms must lie in [LOW, HIGH]
    if [ "$ms" -lt "$1" ] || [ "$ms" -gt "$2" ]; then
        echo "FAIL: took $ms ms, expected $1 to $2 ms"
        failures=$((failures + 1))
    fi
}

no_leftovers() {
    local left
    left=$(leftovers)
    if [ -n "$left" ]; then
        echo "FAIL: processes left behind: $left"
        failures=$((failures + 1))
    fi
}

# The host-side collectors ran despite the hang: each has a state of its own, none timed out
# (a collector not implemented yet reports "not_run" with that reason).
others_ran() {
    check '[.collectors | to_entries[] | select(.key != "nvml") | .value.state]
           | map(select(. == "timeout")) | length' '0'
    check '[.collectors | to_entries[] | select(.key != "nvml") | .value
           | select(.state == "not_run" and .detail != "not implemented yet")] | length' '0'
    check '.collectors | keys | length' '9'
}

# A call in the middle of the collection never returns: GPU 0 done, GPU 1 stuck.
hang=$(scenario hang "$(three_gpus '.gpus[1].hang = ["nvmlDeviceGetPowerUsage"]')")
run_timed "$hang" --timeout 2s
# NVML gets 2 s minus a 0.5 s reserve; the rest runs after it. Slack for a loaded machine.
within 1400 2800
check '.collectors.nvml.state' '"timeout"'
check '.nvml.hung_call' '"nvmlDeviceGetPowerUsage on GPU 1"'
check '.collectors.nvml.detail' '"nvmlDeviceGetPowerUsage on GPU 1 did not answer within 1.5 s"'
check '.nvml.attempted' 'true'
check '.nvml.library' "$(jq -cn --arg l "$SIM_LIB" '$l')"
check '.gpus' '[]'
others_ran
no_leftovers

# The same with the default library name resolution and a longer budget: the reserve is 2 s at
# most, so --timeout 4s gives NVML 3 s.
run_timed "$hang" --timeout 4s --only nvml
within 2900 4800
check '.collectors.nvml.detail' '"nvmlDeviceGetPowerUsage on GPU 1 did not answer within 3.0 s"'
no_leftovers

# A hang in nvmlInit: named as such (there is no GPU yet).
run_timed "$(scenario hang-init "$(three_gpus '.hang = ["nvmlInit"]')")" --timeout 1s --only nvml
within 700 1800
check '.collectors.nvml.state' '"timeout"'
check '.nvml.hung_call' '"nvmlInit_v2"'
no_leftovers

# A hang while sampling: everything from the first reading is kept, the sample times out.
# The delay fits the budget once (the full reading) but not twice (the sample right after it;
# with a window, since without one the sample is the full reading).
run_timed "$(scenario slow-sample "$(three_gpus '.gpus[0].delays_ms = {nvmlDeviceGetTemperature: 1000}')")" \
    --timeout 2s --window 100ms --only nvml
within 1400 2800
check '.collectors.nvml.state' '"timeout"'
check '.nvml.hung_call' '"nvmlDeviceGetTemperatureV on GPU 0"'
check '.collectors.nvml.detail | startswith("while sampling: nvmlDeviceGetTemperatureV on GPU 0 did not answer within 0.")' 'true'
check '[.gpus[].temp_c]' '[64,64,64]'
check '.samples[0].gpus' '[]'
no_leftovers

# A delay shorter than the deadline: the value is still collected and the run is ok. Without a
# window the one sample is the full reading, so the delay is paid once; with one, twice.
run_timed "$(scenario delay "$(three_gpus '.gpus[2].delays_ms = {nvmlDeviceGetPowerUsage: 200}')")" \
    --timeout 5s --only nvml
check '.collectors.nvml.state' '"ok"'
check '.nvml.hung_call' 'null'
check '[.gpus[].power_mw]' '[612345,612345,612345]'
check '[.samples[0].gpus[].power_mw]' '[612345,612345,612345]'
check '.nvml.elapsed_us >= 200000' 'true'
within 200 4000
no_leftovers
run_timed "$TMP/delay.json" --timeout 5s --window 10ms --only nvml
check '.collectors.nvml.state' '"ok"'
check '[.samples[].gpus[2].power_mw]' '[612345,612345]'
within 400 4000
no_leftovers

# The normal path leaves nothing behind either.
run_timed "$FIX/full.json" --only nvml --window 300ms
check '.collectors.nvml.state' '"ok"'
no_leftovers

finish
