#!/usr/bin/env bash
# gpudoctor check from the outside: exit statuses, the config file and --set, JSON, colour only on
# a terminal and never with NO_COLOR, errors that say where, and a live check on the simulator.
set -uo pipefail
command -v jq >/dev/null || { echo "jq not installed"; exit 77; }
: "${GPUDOCTOR:?}" "${SRC:?}"
export GPUDOCTOR_CONFIG=/dev/null LC_ALL=C.UTF-8 # the report in UTF-8, 80 columns
unset COLUMNS
unset NO_COLOR
. "$SRC/tests/e2e/lib.bash"
S=$SRC/tests/scenarios
# run ARGS...: sets OUT, ERR and RC
run() {
    "$GPUDOCTOR" "$@" >"$tmp/out" 2>"$tmp/err"
    RC=$?
    OUT=$(cat "$tmp/out")
    ERR=$(cat "$tmp/err")
}
has() { grep -qF -- "$2" <<<"$1" || fail "expected '$2' in: $(head -c 400 <<<"$1")"; }
status() { [ "$RC" = "$1" ] || fail "exit $RC, expected $1 ($*); stderr: $ERR"; }

# Exit statuses follow the worst finding.
run check --from "$S/healthy-8gpu-busy/snapshot.json"
status 0 healthy
has "$OUT" "healthy — 8 GPUs checked, no problems found"
run check --from "$S/pcie-width-x8/snapshot.json"
status 1 warning
has "$OUT" "1 warning — GPU 2 PCIe link runs x8 of x16 lanes"
run check --from "$S/stopped-holder/snapshot.json"
status 2 critical
has "$OUT" "1 critical — GPU 3 memory (71.2 GiB) held by stopped process 4121"
run check --from "$S/no-gpu/snapshot.json"
status 3 "could not check"
has "$OUT" "No NVIDIA GPU found"

# JSON: the documented shape.
run check --json --from "$S/stopped-holder/snapshot.json"
status 2 json
jq -e '.schema == "gpudoctor.check/1" and .verdict.status == "critical" and .verdict.exit_code == 2
       and .findings[0].id == "proc.stopped-holder" and .findings[0].subject.pid == 4121
       and .findings[0].subject.gpu_uuid != null and (.findings[0].fix | length) >= 2
       and .snapshot.schema == "gpudoctor.snapshot/1" and (.not_checked | type) == "array"' \
    "$tmp/out" >/dev/null || fail "JSON report shape: $(head -c 300 "$tmp/out")"

# The config file: a threshold changes the outcome; --set overrides the file; disable works.
printf '# make 12 %% memory "nearly full"\nmem_nearly_full_pct = 10\n' >"$tmp/low.conf"
run check --json --config "$tmp/low.conf" --from "$S/pcie-width-x8/snapshot.json"
jq -e '[.findings[].id] | index("mem.nearly-full") != null' "$tmp/out" >/dev/null ||
    fail "--config threshold had no effect"
GPUDOCTOR_CONFIG=$tmp/low.conf run check --json --from "$S/pcie-width-x8/snapshot.json"
jq -e '[.findings[].id] | index("mem.nearly-full") != null' "$tmp/out" >/dev/null ||
    fail "\$GPUDOCTOR_CONFIG not read"
run check --json --config "$tmp/low.conf" --set mem_nearly_full_pct=99 \
    --from "$S/pcie-width-x8/snapshot.json"
jq -e '[.findings[].id] | index("mem.nearly-full") == null' "$tmp/out" >/dev/null ||
    fail "--set did not override the file"
run check --set disable=proc.stopped-holder --from "$S/stopped-holder/snapshot.json"
status 1 "stopped-holder disabled: memory full while idle is what remains"
has "$OUT" "GPU 3 memory 90% full while the GPU is idle"

# Configuration errors: exit 64 before checking anything, naming file and line.
printf 'thermal_margin_c = 3\nmem_nearly_ful_pct = 90\n' >"$tmp/bad.conf"
run check --config "$tmp/bad.conf" --from "$S/healthy-8gpu-busy/snapshot.json"
status 64 "bad config"
has "$ERR" "$tmp/bad.conf:2: unknown key 'mem_nearly_ful_pct' (did you mean 'mem_nearly_full_pct'"
[ -z "$OUT" ] || fail "output despite a bad config: $OUT"
run check --config "$tmp/none.conf" --from "$S/healthy-8gpu-busy/snapshot.json"
status 64 "missing --config file"
has "$ERR" "none.conf: No such file or directory"
run check --set thermal_margin_c=hot --from "$S/healthy-8gpu-busy/snapshot.json"
status 64 "bad --set"
has "$ERR" "--set: thermal_margin_c: 'hot' is not a number"
run check --set disable=no.such-rule --from "$S/healthy-8gpu-busy/snapshot.json"
status 64 "unknown rule in --set disable"
run check surplus-argument
status 64 "extra argument"
run check --window forever
status 64 "bad window"
has "$ERR" "gpudoctor check: --window: 'forever' is not a duration"
run check --only gpus
status 64 "unknown collector"
has "$ERR" "gpudoctor check: --only: unknown collector 'gpus' (known: nvml, processes,"

# A snapshot that is not one: exit 3 with file:line:column.
printf '{"schema": "gpudoctor.snapshot/1",\n "gpus": [ {"index": "zero"} ]}\n' >"$tmp/bad.json"
run check --from "$tmp/bad.json"
status 3 "malformed snapshot"
has "$ERR" "$tmp/bad.json:2:"
printf '{"schema": "gpudoctor.snapshot/1", "gpus": [' >"$tmp/cut.json"
run check --from "$tmp/cut.json"
status 3 "truncated snapshot"
has "$ERR" "cut.json:1:"

# Colour: on a terminal yes, never with NO_COLOR or --no-color, never into a pipe.
run check --from "$S/stopped-holder/snapshot.json"
grep -q $'\033' "$tmp/out" && fail "colour codes in a pipe"
if command -v script >/dev/null; then
    script -qec "$GPUDOCTOR check --from $S/stopped-holder/snapshot.json" /dev/null >"$tmp/tty" 2>&1
    grep -q $'\033\[1;31mCRITICAL' "$tmp/tty" || fail "no colour on a terminal"
    NO_COLOR=1 script -qec "$GPUDOCTOR check --from $S/stopped-holder/snapshot.json" /dev/null \
        >"$tmp/tty" 2>&1
    grep -q $'\033\[' "$tmp/tty" && fail "colour on a terminal despite NO_COLOR"
    script -qec "$GPUDOCTOR check --no-color --from $S/stopped-holder/snapshot.json" /dev/null \
        >"$tmp/tty" 2>&1
    grep -q $'\033\[' "$tmp/tty" && fail "colour on a terminal despite --no-color"
fi

# Live, on the NVML simulator: the bundled healthy server is healthy, the troubled one is not.
if [ -e "${SIM_LIB:-}" ] && [ -f "$SRC/scenarios/troubled-8xh100.json" ]; then
    mkdir -p "$tmp/root"
    GPUDOCTOR_NVML_LIB=$SIM_LIB NVML_SIM_SCENARIO=$SRC/scenarios/healthy-8xh100.json \
        run check --json --window 0 --root "$tmp/root"
    status 0 "simulated healthy server"
    GPUDOCTOR_NVML_LIB=$SIM_LIB NVML_SIM_SCENARIO=$SRC/scenarios/troubled-8xh100.json \
        run check --json --window 0 --root "$tmp/root"
    status 2 "simulated troubled server"
    for want in "health.ecc-uncorrectable 2" "clock.thermal-slowdown 5" "pcie.width-degraded 6" \
        "clock.power-limit-low 7" "health.memory-repair-pending 2"; do
        set -- $want
        jq -e --arg id "$1" --argjson g "$2" \
            'any(.findings[]; .id == $id and .subject.gpu_index == $g)' "$tmp/out" >/dev/null ||
            fail "simulated troubled server: no $1 on GPU $2"
    done
else
    echo "simulator not built: live checks skipped"
fi

e2e_done
