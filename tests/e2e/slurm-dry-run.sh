#!/usr/bin/env bash
# slurm-check --dry-run where Slurm cannot be asked (scontrol fails: no controller, a login node,
# a laptop): the preview still says what the findings call for - a node fault it would drain for,
# with the reason, or none - and exits with check's status; without --dry-run the same failure
# changes nothing and exits 3. On the NVML simulator, no Slurm daemons.
set -uo pipefail
: "${GPUDOCTOR:?}" "${SRC:?}" "${SIM_LIB:?}"
[ -e "$SIM_LIB" ] || { echo "SKIP: the NVML simulator is not built"; exit 77; }
export GPUDOCTOR_CONFIG=/dev/null GPUDOCTOR_NVML_LIB=$SIM_LIB GPUDOCTOR_STATE_DIR=off LC_ALL=C.UTF-8
. "$SRC/tests/e2e/lib.bash"
eq() { [ "$2" = "$3" ] || fail "$1: got '$2', want '$3'"; }
run() { # SCENARIO ARGS...: stdout in $tmp/out, stderr in $tmp/err, the status in $rc
    local scen=$1
    shift
    NVML_SIM_SCENARIO=$SRC/scenarios/$scen.json "$GPUDOCTOR" slurm-check --node gpu-n1 \
        --scontrol /bin/false --window 0 "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
}

run troubled-8xh100 --dry-run --only nvml
eq "fault: exit" "$rc" 2
eq "fault: preview" "$(grep -c '^gpudoctor slurm-check: node gpu-n1 (its Slurm state unknown): a node fault: would drain with reason: gpudoctor: ' "$tmp/out")" 1
grep -q "scontrol show node -o gpu-n1 failed" "$tmp/err" || fail "fault: scontrol's failure not said"

run healthy-8xh100 --dry-run --only nvml
eq "healthy: exit" "$rc" 0
eq "healthy: preview" "$(cat "$tmp/out")" \
    "gpudoctor slurm-check: node gpu-n1 (its Slurm state unknown): no node fault: would not drain"

run troubled-8xh100
eq "no dry run: exit" "$rc" 3
eq "no dry run: nothing on stdout" "$(wc -c <"$tmp/out")" 0

e2e_done "ok"
