# Shared by tests/e2e/reap-*.sh and procs-cli*.sh: real processes, spawned here, mapped into an
# NVML simulator scenario as GPU processes. The scenario sets processes_follow_proc, so a process
# that ends leaves NVML's lists and its memory is freed, as on a real GPU.
# Environment (from ctest): GPUDOCTOR, SIM_LIB, SRC, HELPERS.
set -euo pipefail

: "${GPUDOCTOR:?GPUDOCTOR must name the gpudoctor binary}"
: "${SRC:?SRC must name the source directory}"
: "${HELPERS:?HELPERS must name the directory of the helper programs}"
SIM_LIB=${SIM_LIB:-}
if [ -z "$SIM_LIB" ] || [ ! -e "$SIM_LIB" ]; then
    echo "SKIP: the NVML simulator is not built ($SIM_LIB)"
    exit 77
fi
command -v jq >/dev/null || { echo "SKIP: jq is not installed"; exit 77; }

TMP=$(mktemp -d)
chmod 755 "$TMP"
PIDS=()
CLEANUP=() # more commands for the end (userdel, ...)
reap_lib_cleanup() {
    local p c
    for p in "${PIDS[@]}"; do kill -CONT "$p" 2>/dev/null || true; done
    for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    for c in "${CLEANUP[@]}"; do eval "$c" || true; done
    rm -rf "$TMP"
}
trap reap_lib_cleanup EXIT

export NVML_SIM_QUIET=1
export GPUDOCTOR_NVML_LIB=$SIM_LIB
export NVML_SIM_SCENARIO=$TMP/scenario.json
unset NVML_SIM_EPOCH NVML_SIM_PROC GPUDOCTOR_CONFIG
GIB=1073741824
failures=0

# Waits until pid runs comm (the shell forked, then exec'd it).
became() { # PID COMM
    for _ in $(seq 200); do
        [ "$(cat "/proc/$1/comm" 2>/dev/null)" = "$2" ] && return 0
        sleep 0.02
    done
    echo "FAIL: pid $1 did not become $2"
    exit 1
}

# Starts `sleep 300` with an NVIDIA device open, as a GPU process has (reap-target holder: NVML's
# pid with none open is another process, which nothing judges), and prints its pid (remembered for the cleanup). Call as: x=$(start_sleep)
# does not work (a subshell would own it), so the pid is left in $SPAWNED.
start_sleep() {
    "$HELPERS/reap-target" holder sleep 300 &
    SPAWNED=$!
    PIDS+=("$SPAWNED")
    became "$SPAWNED" sleep
}

# Starts a helper mode of reap-target; its first output line is left in $READY.
start_helper() { # MODE
    local out=$TMP/helper.$RANDOM
    "$HELPERS/reap-target" holder "$HELPERS/reap-target" "$1" >"$out" &
    SPAWNED=$!
    PIDS+=("$SPAWNED")
    for _ in $(seq 200); do
        [ -s "$out" ] && break
        sleep 0.02
    done
    READY=$(head -n1 "$out")
    [ -n "$READY" ] || { echo "FAIL: reap-target $1 did not start"; exit 1; }
}

# scenario SPEC...: writes $NVML_SIM_SCENARIO with 2 GPUs; each SPEC is PID:GPU:GIB[:SM], listed
# as a compute process with that SM utilisation (default 0 %). Each GPU's memory in use is 1 GiB
# plus what its processes hold; its utilisation is the highest SM of its processes.
# SCENARIO_FOLLOW=false lists pids that do not exist (processes_follow_proc off).
scenario() {
    local specs='[]'
    [ $# = 0 ] || specs=$(printf '%s\n' "$@" | jq -R 'split(":") | {pid: (.[0]|tonumber),
        gpu: (.[1]|tonumber), gib: (.[2]|tonumber), sm: ((.[3] // "0")|tonumber)}' | jq -s .)
    jq -n --argjson specs "$specs" --argjson gib "$GIB" --argjson follow "${SCENARIO_FOLLOW:-true}" '
      def procs(i): [$specs[] | select(.gpu == i) | {pid: .pid, used_bytes: (.gib * $gib),
        type: "compute", sm_util_pct: .sm, mem_util_pct: 0, enc_util_pct: 0, dec_util_pct: 0}];
      def used(i): ([procs(i)[].used_bytes] | add // 0) + $gib;
      def gpu(i): {index: i, name: "NVIDIA H100 80GB HBM3",
        uuid: "GPU-5f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f\(i)", pci_bus_id: "00000000:1\(i):00.0",
        minor_number: i, mem_total_bytes: 85899345920, mem_reserved_bytes: 0,
        mem_used_bytes: used(i), mem_free_bytes: (85899345920 - used(i)),
        util_gpu_pct: ([$specs[] | select(.gpu == i) | .sm] | max // 0),
        processes: procs(i)};
      {schema: "gpudoctor.scenario/1", processes_follow_proc: $follow,
       system: {driver_version: "550.54.15", nvml_version: "12.550.54.15",
                cuda_driver_version: 12040},
       gpus: [gpu(0), gpu(1)]}' >"$NVML_SIM_SCENARIO"
}

# run NAME gpudoctor-args...: runs gpudoctor; stdout in $TMP/NAME.out, stderr in $TMP/NAME.err,
# the exit status in $RC. Never fails the script.
run() {
    local name=$1
    shift
    RC=0
    "$GPUDOCTOR" "$@" </dev/null >"$TMP/$name.out" 2>"$TMP/$name.err" || RC=$?
}

fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}

# check JQ WANT FILE: the compact value of the jq expression on FILE must be exactly WANT.
check() {
    local got want
    got=$(jq -cS "$1" "$3" 2>&1) || true
    want=$(jq -ncS "$2" 2>/dev/null) || want=$2 # WANT may be a jq expression too
    [ "$got" = "$want" ] || fail "$1 on $(basename "$3"): got $got, want $2"
}

# The exit status of the last run must be WANT.
status() { # WANT WHAT
    [ "$RC" = "$1" ] || { fail "$2: exit status $RC, want $1"; sed 's/^/   /' "$TMP"/*.err | tail -5; }
}

# Whether a file has a line matching an extended regular expression.
has_line() { # FILE REGEX WHAT
    grep -Eq -- "$2" "$1" || { fail "$3: no line matches /$2/ in $(basename "$1")"; sed 's/^/   /' "$1" | head -20; }
}

alive() { kill -0 "$1" 2>/dev/null && [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" != Z ]; }

# Waits up to 3 s for pid to be gone (reaped), for the checks after a kill.
gone() {
    for _ in $(seq 150); do
        [ -e "/proc/$1" ] || return 0
        sleep 0.02
    done
    return 1
}

state_of() { awk '{print $3}' "/proc/$1/stat" 2>/dev/null || echo gone; }

finish() {
    if [ "$failures" != 0 ]; then
        echo "$failures check(s) failed"
        exit 1
    fi
    echo "all checks passed"
}
