#!/usr/bin/env bash
# `gpudoctor ack` judges the machine as it is now (docs/state.md, "Acknowledgements"): it records
# the severity of the finding it acknowledges, and a finding of the same rule and GPU that is
# more severe later (a warning then, critical now) is counted again, with a line saying so;
# `--gpu N` is the GPU NVML numbers N now, not the one the last recorded run saw at N; an
# acknowledgement that could never match (a GPU that is not here, a rule about the node) is a
# usage error, status 64, and nothing is written.
set -u
command -v jq >/dev/null || { echo "SKIP: jq missing"; exit 77; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export GPUDOCTOR_CONFIG=/dev/null NO_COLOR=1 LC_ALL=C.UTF-8 NVML_SIM_QUIET=1
export GPUDOCTOR_NVML_LIB=$SIM_LIB
unset GPUDOCTOR_STATE_DIR
fail=0
die() { echo "FAIL: $*" >&2; fail=1; }
expect() { [ "$2" = "$3" ] || die "$1: got '$2', want '$3'"; }
TROUBLED=$SRC/scenarios/troubled-8xh100.json
# GPU 5 in software thermal slowdown only: clock.thermal-slowdown is a warning.
jq '.gpus[5].clocks_event_reasons = "0x0000000000000020"' "$TROUBLED" >"$T/warm.json"
# GPUs 2 and 3 swapped (as after a renumbering): GPU 3 is now the one with ECC errors.
jq '.gpus = ([.gpus[0], .gpus[1], .gpus[3], .gpus[2]] + .gpus[4:] | to_entries |
    map(.value.index = .key | .value))' "$TROUBLED" >"$T/swapped.json"
check() { # check SCENARIO DIR: status and the thermal finding's severity and acknowledgement
    local rc=0
    NVML_SIM_SCENARIO=$1 "$GPUDOCTOR" check --window 0 --json --state-dir "$2" >"$T/out" || rc=$?
    echo "$rc $(jq -c '[.findings[] | select(.id == "clock.thermal-slowdown") |
        .severity, (.acknowledged != null)]' "$T/out")"
}
ack() { # ack SCENARIO ARGS...: status, standard output and error
    local rc=0
    NVML_SIM_SCENARIO=$1 "$GPUDOCTOR" ack "${@:2}" >"$T/ack.out" 2>"$T/ack.err" || rc=$?
    echo "$rc $(cat "$T/ack.out" "$T/ack.err")"
}

# 1. Acknowledged as a warning; critical later: counted again, and the evidence says why.
mkdir -m 700 "$T/sev"
expect "warm: the warning" "$(check "$T/warm.json" "$T/sev")" '2 ["warning",false]'
expect "ack of the warning" "$(ack "$T/warm.json" clock.thermal-slowdown --gpu 5 --state-dir "$T/sev")" \
    "0 acknowledged warning clock.thermal-slowdown on GPU-37b6d9f1-4a8e-c052-d7f3-1b9e0c5a2d65 until a new event"
expect "the file keeps it" "$(jq -r '.acks[0].severity' "$T/sev/state.json")" warning
expect "warm: acknowledged" "$(check "$T/warm.json" "$T/sev")" '2 ["warning",true]'
expect "hot: not covered" "$(check "$TROUBLED" "$T/sev")" '2 ["critical",false]'
jq -r '.findings[] | select(.id == "clock.thermal-slowdown") | .evidence[]' "$T/out" |
    grep -q '^acknowledged at warning by .*: not covered, it is critical now$' ||
    die "hot: no evidence line about the lower acknowledgement"
# Acknowledged again at critical: covered.
expect "ack of the critical" "$(ack "$TROUBLED" clock.thermal-slowdown --gpu 5 --state-dir "$T/sev" | cut -d' ' -f1-3)" \
    "0 acknowledged critical"
expect "hot: acknowledged" "$(check "$TROUBLED" "$T/sev")" '2 ["critical",true]'
# A file from before the field (no "severity"): any severity, as then.
jq 'del(.acks[0].severity)' "$T/sev/state.json" >"$T/old.json" && cp "$T/old.json" "$T/sev/state.json"
expect "old file: acknowledged" "$(check "$TROUBLED" "$T/sev")" '2 ["critical",true]'

# 2. --gpu N: the GPU at N now, not the one the state file last saw at N.
mkdir -m 700 "$T/idx"
check "$TROUBLED" "$T/idx" >/dev/null # records GPU 3 = GPU-5c19f7b3
expect "ack by index after a renumbering" \
    "$(ack "$T/swapped.json" health.ecc-uncorrectable --gpu 3 --state-dir "$T/idx")" \
    "0 acknowledged critical health.ecc-uncorrectable on GPU-a2e84c57-3b90-6f1d-c7a5-8e4b2d0f6a32 until a new event"
# NVML unreadable: the state file's GPU, said so; the acknowledgement just given recorded what it
# saw, so the state file last saw GPU-a2e84c57 at 3.
rc=0
GPUDOCTOR_NVML_LIB=$T/none.so "$GPUDOCTOR" ack health.xid --gpu 3 --state-dir "$T/idx" \
    >"$T/ack.out" 2>"$T/ack.err" || rc=$?
expect "no NVML: status" "$rc $(cat "$T/ack.out")" \
    "0 acknowledged critical health.xid on GPU-a2e84c57-3b90-6f1d-c7a5-8e4b2d0f6a32 until a new event"
grep -q "NVML shows no GPU 3 now: GPU 3 is GPU-a2e84c57-3b90-6f1d-c7a5-8e4b2d0f6a32 as the state file last saw it" \
    "$T/ack.err" || die "no NVML: no note: $(cat "$T/ack.err")"

# 3. Acknowledgements that could never match: status 64, nothing written.
mkdir -m 700 "$T/never"
expect "unknown UUID" "$(ack "$TROUBLED" health.xid --gpu GPU-typo --state-dir "$T/never")" \
    "64 gpudoctor ack: no GPU GPU-typo: NVML does not show it, nor does the state file ('gpudoctor check' shows each GPU's UUID)"
got=$(ack "$TROUBLED" stack.toolkit-mismatch --gpu 0 --state-dir "$T/never")
case $got in
"64 gpudoctor ack: stack.toolkit-mismatch is about the node, not a GPU (now: CUDA toolkit"*) ;;
*) die "a node's rule with --gpu: $got" ;;
esac
expect "unknown index" "$(ack "$TROUBLED" health.xid --gpu 9 --state-dir "$T/never" | cut -c1-26)" \
    "64 gpudoctor ack: no GPU 9"
[ -e "$T/never/state.json" ] && die "a refused acknowledgement wrote the state file"

# 4. Acknowledged before any check ran: what ack saw is recorded, so the faults already there (GPU
# 2's 2 uncorrectable errors, its pending memory repair) are not new events after it: the ECC
# critical is acknowledged, and the count recorded is the one NVML gives now.
mkdir -m 700 "$T/first"
expect "ack first" "$(ack "$TROUBLED" health.ecc-uncorrectable --gpu 2 --state-dir "$T/first")" \
    "0 acknowledged critical health.ecc-uncorrectable on GPU-a2e84c57-3b90-6f1d-c7a5-8e4b2d0f6a32 until a new event"
NVML_SIM_SCENARIO=$TROUBLED "$GPUDOCTOR" check --window 0 --json --state-dir "$T/first" >"$T/out"
expect "ack first: the ECC finding acknowledged" \
    "$(jq -c '[.findings[] | select(.id == "health.ecc-uncorrectable") | .acknowledged != null]' "$T/out")" '[true]'
expect "ack first: the count at the acknowledgement" \
    "$(jq -c '[.acks[] | .ecc_uncorrected]' "$T/first/state.json")" '[2]'
exit $fail
