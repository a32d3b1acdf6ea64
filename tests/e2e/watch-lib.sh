#!/usr/bin/env bash
# Shared by tests/e2e/watch-*.sh (sourced): simulator scenarios with a real leaking process, a
# private tmux server to drive the live view, and waiting for text on its screen.
# Run on its own (as CTest does), it tests these helpers: a wait that should fail must.
set -uo pipefail
: "${GPUDOCTOR:?GPUDOCTOR is set by CTest}" "${SIM_LIB:?}" "${SRC:?}"

command -v jq >/dev/null || { echo "jq not installed"; exit 77; }
[ -e "$SIM_LIB" ] || { echo "the NVML simulator is not built"; exit 77; }

TMP=$(mktemp -d)
TMUX_SOCK= # the server of the latest tmux_start
TMUX_SOCKS=()
KIDS=()
FAILED=0
export GPUDOCTOR_CONFIG=/dev/null NVML_SIM_QUIET=1 GPUDOCTOR_NVML_LIB=$SIM_LIB
unset NVML_SIM_EPOCH

cleanup() {
    for s in "${TMUX_SOCKS[@]}"; do tmux -L "$s" kill-server 2>/dev/null; done
    for k in "${KIDS[@]}"; do kill "$k" 2>/dev/null; done
    rm -rf "$TMP"
}
trap cleanup EXIT

fail() {
    echo "FAIL: $*" >&2
    FAILED=1
}

finish() {
    [ "$FAILED" -eq 0 ] && echo "ok" && exit 0
    exit 1
}

# A real process to stand for the GPU job: NVML (the simulator) lists its pid. Sets $JOB.
spawn_job() {
    # With NVIDIA device files open, as a GPU process has them (reap-target holder): NVML's pid
    # whose process holds none is judged not NVML's, and reap leaves it alone.
    "$HELPERS/reap-target" holder sleep 600 &
    JOB=$!
    KIDS+=("$JOB")
    for _ in $(seq 250); do
        [ "$(cat "/proc/$JOB/comm" 2>/dev/null)" = sleep ] && break
        sleep 0.02
    done
}

# leak_scenario OUT PID RATE: one H100 (from the bundled healthy server) running PID, whose
# GPU memory starts at 10 GiB and grows RATE bytes a second; GPU memory figures agree.
leak_scenario() {
    jq --argjson pid "$2" --argjson rate "$3" '
        .description = "watch test: one process leaking GPU memory"
        | .gpus = [.gpus[0]
            | .mem_used_bytes = 10737418240
            | .mem_free_bytes = (.mem_total_bytes - .mem_reserved_bytes - 10737418240)
            | .processes = [{ pid: $pid, used_bytes: 10737418240, type: ["compute"],
                              sm_util_pct: 90 }]]
        | .timeline = [{ gpu: 0, pid: $pid, field: "used_bytes", rate_per_s: $rate,
                         max: 70000000000 }]' "$SRC/scenarios/healthy-8xh100.json" >"$1"
}

# tmux_start COLS ROWS COMMAND: a pane on a private server, in a UTF-8 locale. Each call starts
# a server of its own: one just killed may still be exiting, and a client that reaches it is told
# "server exited unexpectedly".
tmux_start() {
    local cols=$1 rows=$2
    shift 2
    TMUX_SOCK="gpudoctor-watch-test-$$-${#TMUX_SOCKS[@]}"
    TMUX_SOCKS+=("$TMUX_SOCK")
    LC_ALL=C.UTF-8 tmux -L "$TMUX_SOCK" -f /dev/null new-session -d -s t -x "$cols" -y "$rows" \
        "$*"
}

screen() {
    tmux -L "$TMUX_SOCK" capture-pane -t t -p 2>/dev/null
}

keys() {
    tmux -L "$TMUX_SOCK" send-keys -t t "$@"
}

# wait_for TEXT SECONDS: until the screen shows TEXT (a grep -E pattern); false after SECONDS.
wait_for() {
    local end=$((SECONDS + $2))
    while [ "$SECONDS" -lt "$end" ]; do
        screen | grep -E -- "$1" >/dev/null && return 0
        sleep 0.2
    done
    return 1
}

# wait_file FILE PATTERN SECONDS: until FILE has a line matching PATTERN.
wait_file() {
    local end=$((SECONDS + $3))
    while [ "$SECONDS" -lt "$end" ]; do
        grep -Eq -- "$2" "$1" 2>/dev/null && return 0
        sleep 0.2
    done
    return 1
}

# The settings a terminal must be back to after the live view: echo and canonical input.
stty_sane() {
    grep -Eq '(^| )icanon( |$)' "$1" && grep -Eq '(^| )echo( |$)' "$1" &&
        ! grep -Eq '(^| )-(icanon|echo)( |$)' "$1"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    command -v tmux >/dev/null || { echo "tmux not installed"; exit 77; }
    spawn_job
    leak_scenario "$TMP/s.json" "$JOB" 1048576
    [ "$(jq '.gpus[0].processes[0].pid' "$TMP/s.json")" = "$JOB" ] || fail "scenario pid"
    NVML_SIM_SCENARIO=$TMP/s.json "$GPUDOCTOR" snapshot --window 0 --only nvml -o "$TMP/snap.json"
    [ "$(jq '.gpus[0].processes[0].pid' "$TMP/snap.json")" = "$JOB" ] ||
        fail "the simulator does not list the job"
    tmux_start 40 5 "echo hello-watch; sleep 30"
    wait_for 'hello-watch' 10 || fail "wait_for does not see the pane"
    wait_for 'not-on-screen' 1 && fail "wait_for found what is not there"
    printf 'speed 38400 baud; line = 0;\nicanon echo\n' >"$TMP/good"
    printf 'speed 38400 baud; line = 0;\n-icanon -echo\n' >"$TMP/bad"
    stty_sane "$TMP/good" || fail "stty_sane rejects a sane terminal"
    stty_sane "$TMP/bad" && fail "stty_sane accepts a raw terminal"
    finish
fi
