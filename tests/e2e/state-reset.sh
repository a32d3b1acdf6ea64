#!/usr/bin/env bash
# GPU resets within one boot through the built binary (docs/state.md, "A GPU reset without a
# reboot"): fixture roots keep their boot id while their uptime advances and the simulator's
# scenario changes between runs. A pending row remap seen cleared, the energy counter going down,
# the driver's load banner twice in one log: each starts a new epoch, so Xid 48 again after it
# escalates ("again after 1 GPU reset", then "after 1 reboot and 1 reset"); a repair pending again
# after a reset escalates; an acknowledgement is lifted by a remap failure or a pending repair
# that appears after it, and kept while the fault is the one it saw.
set -euo pipefail
command -v jq >/dev/null || { echo "jq not installed"; exit 77; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export GPUDOCTOR_CONFIG=/dev/null NO_COLOR=1 LC_ALL=C.UTF-8
# The simulator's clock from one fixed moment, not from each process's start: its energy counter
# then rises from run to run as a real one does (docs/state.md: a lower reading is a reload).
export NVML_SIM_EPOCH=$(date +%s)
unset GPUDOCTOR_STATE_DIR
fail=0
R=$T/root SCEN=$T/scenario.json
mkdir -p "$R/proc/sys/kernel/random" "$R/dev"
printf 'cpu  5255 0 6037 189884 646 0 176 0 0 0\nbtime 1796203140\n' >"$R/proc/stat"
gd() { GPUDOCTOR_NVML_LIB=$SIM_LIB NVML_SIM_SCENARIO=$SCEN "$GPUDOCTOR" "$@"; }
expect() { # what, got, want
    if [ "$2" != "$3" ]; then
        echo "FAIL: $1: got $2, want $3" >&2
        fail=1
    fi
}
boot() { echo "$1" >"$R/proc/sys/kernel/random/boot_id"; }
uptime() { echo "$1.00 100.00" >"$R/proc/uptime"; }
# GPU 0 of the healthy scenario with the given jq changes.
scen() { jq "${1:-.}" "$SRC/scenarios/healthy-8xh100.json" >"$SCEN"; }
XID='NVRM: Xid (PCI:0000:18:00): 48, pid=4121, name=python3, Double Bit ECC Error'
BANNER='NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024'
# kmsg: lines "SECONDS xid|banner", in order.
kmsg() {
    local n=1000 at what
    : >"$R/dev/kmsg"
    for line in "$@"; do
        at=${line% *} what=${line#* }
        if [ "$what" = xid ]; then
            printf '4,%d,%d,-;%s\n' $n $((at * 1000000)) "$XID" >>"$R/dev/kmsg"
        else
            printf '6,%d,%d,-;%s\n' $n $((at * 1000000)) "$BANNER" >>"$R/dev/kmsg"
        fi
        n=$((n + 1))
    done
}
check() { gd check --root "$R" --window 0 --state-dir "$S" --json "$@" >"$T/out" || true; }
title() { jq -r --arg id "$1" '[.findings[] | select(.id == $id)][0].title' "$T/out"; }
sev() { jq -r --arg id "$1" '[.findings[] | select(.id == $id)][0].severity' "$T/out"; }
acked() { jq -r --arg id "$1" '[.findings[] | select(.id == $id)][0].acknowledged != null' "$T/out"; }
resets() { jq -c '[.gpus[] | select(.serial == "1652823054671") | .resets[]? | .how]' "$S/state.json"; }
PEND=health.memory-repair-pending
# The Chinese report of a snapshot of the root now into $1 (docs/i18n.md), with --json checked
# byte-identical to the English; returns 1 (the caller skips) where gettext or the zh_CN locale
# is missing.
zh_report() {
    [ -e "${BUILD:-}/locale/zh_CN/LC_MESSAGES/gpudoctor.mo" ] || return 1
    [ -d "$T/loc/zh_CN.UTF-8" ] || { mkdir -p "$T/loc" && localedef -i zh_CN -f UTF-8 "$T/loc/zh_CN.UTF-8" 2>/dev/null; } || return 1
    local zh="env -u LC_ALL LOCPATH=$T/loc LANG=zh_CN.UTF-8 GPUDOCTOR_LOCALEDIR=$BUILD/locale GPUDOCTOR_STATE_DIR=off"
    gd snapshot --root "$R" --window 0 --state-dir "$S" -o "$T/snap.json"
    $zh "$GPUDOCTOR" check --from "$T/snap.json" --width 400 >"$1" || true
    $zh "$GPUDOCTOR" check --from "$T/snap.json" --json >"$T/zh.json" || true
    "$GPUDOCTOR" check --from "$T/snap.json" --json >"$T/en.json" || true
    cmp -s "$T/zh.json" "$T/en.json" || { echo "FAIL: --json differs under zh_CN" >&2; fail=1; }
}
# has WHAT FILE TEXT: FILE holds TEXT.
has() { grep -qF -- "$3" "$2" || { echo "FAIL: $1: lacks '$3'" >&2; fail=1; }; }

# 1. A row remap pending, then cleared in the same boot (a reset applied it); Xid 48 again.
S=$T/s1
boot 44444444-0000-0000-0000-000000000001
uptime 400
kmsg "372 xid"
scen '.gpus[0].remapped_rows_pending = true'
check
expect "pending: first" "$(title $PEND)" "GPU 0 needs a reset to remap bad memory"
uptime 500
scen
check
expect "pending cleared: a reset" "$(resets)" '["repair_applied"]'
expect "the old Xid, no claim" "$(title health.xid | grep -c again || true)" "0"
uptime 600
kmsg "372 xid" "550 xid"
check
expect "Xid 48 after the reset" "$(title health.xid | grep -o 'again after [^,]*')" \
    "again after 1 GPU reset: inspect or replace the GPU"
expect "Xid 48 after the reset: severity" "$(sev health.xid)" "critical"
expect "the reset in the evidence" \
    "$(jq -r '[.findings[] | select(.id == "health.xid")][0].evidence[] | select(startswith("GPU reset in this boot"))' "$T/out")" \
    "GPU reset in this boot between 400s and 500s of uptime: a pending row remap or page retirement was applied (only a reset does that)"
# Pending again after the reset: the fault returned.
uptime 650
scen '.gpus[0].remapped_rows_pending = true'
check
expect "pending again" "$(title $PEND)/$(sev $PEND)" \
    "GPU 0 needs a reset to remap bad memory, again after 1 GPU reset/warning"
expect "one record per epoch" \
    "$(jq '[.gpus[] | select(.serial == "1652823054671") | .events[] | select(.kind == "repair_pending")] | length' "$S/state.json")" "2"

# 2. The energy counter going down (the driver reloaded); then a reboot.
S=$T/s2
boot 44444444-0000-0000-0000-000000000002
uptime 400
kmsg "372 xid"
scen '.gpus[0].energy_mj = 5000000000'
check
uptime 450
scen '.gpus[0].energy_mj = 5100000000'
check
expect "energy rising: no reset" "$(resets)" '[]'
uptime 500
scen '.gpus[0].energy_mj = 2000'
check
expect "energy down: a reload" "$(resets)" '["energy_drop"]'
uptime 600
kmsg "372 xid" "550 xid"
check
expect "Xid after the reload" "$(title health.xid | grep -o 'again after [^,]*')" \
    "again after 1 GPU reset: inspect or replace the GPU"
if zh_report "$T/zh"; then
    has "zh: after the reload" "$T/zh" "，在 1 次 GPU 复位之后再次出现：检查或更换这块 GPU"
    has "zh: how the reset was seen" "$T/zh" \
        "NVML 的能耗计数器（从驱动加载时开始计数）变小了：驱动重新加载过"
fi
boot 44444444-0000-0000-0000-000000000003
uptime 400
kmsg "372 xid"
check
expect "after a reboot and a reset" "$(title health.xid | grep -o 'again after [^,]*')" \
    "again after 1 reboot and 1 reset: inspect or replace the GPU"
if zh_report "$T/zh"; then
    has "zh: after a reboot and a reset" "$T/zh" "，在 1 次重启和 1 次复位之后再次出现"
    grep -q "again after\\|reboot and" "$T/zh" && { echo "FAIL: zh report keeps English" >&2; fail=1; }
fi

# 3. The driver's load banner twice in one boot's log: a reload between the two Xids.
S=$T/s3
scen
boot 44444444-0000-0000-0000-000000000004
uptime 400
kmsg "5 banner" "100 xid" "300 banner" "372 xid"
check
expect "first run: no past claimed" "$(title health.xid | grep -c again || true)" "0"
expect "the banner's reload" "$(resets)" '["driver_load"]'
check
expect "Xid around the reload" "$(title health.xid | grep -o 'again after [^,]*')" \
    "again after 1 GPU reset: inspect or replace the GPU"
# The first banner alone: the boot's first load, no reset (a new root, a new state).
S=$T/s3b
boot 44444444-0000-0000-0000-000000000005
kmsg "5 banner" "100 xid" "372 xid"
check
check
expect "one banner: no reset" "$(resets)/$(title health.xid | grep -c again || true)" "[]/0"

# 4. Acknowledgements: a pending repair acknowledged stays so; a remap failure appearing after
# the acknowledgement lifts it; so does a repair pending again after a reset.
S=$T/s4
boot 44444444-0000-0000-0000-000000000006
kmsg
uptime 400
scen '.gpus[0].remapped_rows_pending = true'
check
"$GPUDOCTOR" ack $PEND --gpu 0 --note "RMA 4712" --state-dir "$S" >/dev/null
jq '.acks[0].boot_id = "44444444-0000-0000-0000-000000000006" | .acks[0].uptime_us = 450000000' \
    "$S/state.json" >"$T/s.json" && cp "$T/s.json" "$S/state.json"
uptime 460
check
expect "acknowledged pending" "$(acked $PEND)" "true"
scen '.gpus[0].remapped_rows_pending = true | .gpus[0].remapped_rows_failure = true'
check
expect "remap failure after the ack lifts it" "$(acked $PEND)" "false"
expect "the failure found" "$(title health.row-remap-failure)" "GPU 0 failed to remap a bad memory row"
S=$T/s5
uptime 400
scen '.gpus[0].remapped_rows_pending = true'
check
"$GPUDOCTOR" ack $PEND --gpu 0 --state-dir "$S" >/dev/null
jq '.acks[0].boot_id = "44444444-0000-0000-0000-000000000006" | .acks[0].uptime_us = 450000000' \
    "$S/state.json" >"$T/s.json" && cp "$T/s.json" "$S/state.json"
uptime 500
scen
check
uptime 600
scen '.gpus[0].remapped_rows_pending = true'
check
expect "pending again after a reset lifts it" "$(acked $PEND)" "false"
expect "the reset that applied the first" "$(resets)" '["repair_applied"]'
exit $fail
