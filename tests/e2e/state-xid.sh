#!/usr/bin/env bash
# The state file through the built binary (docs/state.md): an Xid that returns after reboots
# (fixture roots with different boot ids) escalates, a replaced GPU (new serial) starts clean,
# `ack` silences a finding until a new event or its expiry, --list and --clear (--list of a file
# it cannot read: status 3 and why, never "no acknowledgements"), a corrupt file
# is a note and is rewritten, concurrent writers lose nothing, a full disk leaves the report and
# the old file; uncorrectable ECC errors, a pending row remap and a remap failure that return
# after reboots escalate, and a replaced GPU starts clean.
set -euo pipefail
command -v jq >/dev/null || { echo "jq not installed"; exit 77; }
T=$(mktemp -d)
trap 'umount "$T/tiny" 2>/dev/null || true; rm -rf "$T"' EXIT
export GPUDOCTOR_CONFIG=/dev/null NO_COLOR=1 LC_ALL=C.UTF-8
# The simulator's clock from one fixed moment, not from each process's start: its energy counter
# then rises from run to run as a real one does (docs/state.md: a lower reading is a reload).
export NVML_SIM_EPOCH=$(date +%s)
unset GPUDOCTOR_STATE_DIR
fail=0
R=$T/root S=$T/state
SCEN=$T/scenario.json
cp "$SRC/scenarios/healthy-8xh100.json" "$SCEN"
mkdir -p "$R/proc/sys/kernel/random" "$R/dev"
printf 'cpu  5255 0 6037 189884 646 0 176 0 0 0\nbtime 1796203140\n' >"$R/proc/stat"
echo "400.00 100.00" >"$R/proc/uptime"
xid48() { printf '4,%d,%d,-;NVRM: Xid (PCI:0000:18:00): 48, pid=4121, name=python3, Double Bit ECC Error\n' "$1" "$2" >"$R/dev/kmsg"; }
boot() { echo "$1" >"$R/proc/sys/kernel/random/boot_id"; }
gd() { GPUDOCTOR_NVML_LIB=$SIM_LIB NVML_SIM_SCENARIO=$SCEN "$GPUDOCTOR" "$@"; }
check() { gd check --root "$R" --window 0 --state-dir "$S" --json "$@" || true; }
expect() { # what, got, want
    if [ "$2" != "$3" ]; then
        echo "FAIL: $1: got $2, want $3" >&2
        fail=1
    fi
}
xid_title() { jq -r '[.findings[] | select(.id == "health.xid")][0].title' "$T/out"; }
# The Chinese report of snapshot $1 into $2 (docs/i18n.md), with --json checked byte-identical
# to the English; returns 1 (the caller skips) where gettext or the zh_CN locale is missing.
zh_report() {
    [ -e "${BUILD:-}/locale/zh_CN/LC_MESSAGES/gpudoctor.mo" ] || return 1
    [ -d "$T/loc/zh_CN.UTF-8" ] || { mkdir -p "$T/loc" && localedef -i zh_CN -f UTF-8 "$T/loc/zh_CN.UTF-8" 2>/dev/null; } || return 1
    local zh="env -u LC_ALL LOCPATH=$T/loc LANG=zh_CN.UTF-8 GPUDOCTOR_LOCALEDIR=$BUILD/locale GPUDOCTOR_STATE_DIR=off"
    $zh "$GPUDOCTOR" check --from "$1" --width 400 >"$2" || true
    $zh "$GPUDOCTOR" check --from "$1" --json >"$T/zh.json" || true
    "$GPUDOCTOR" check --from "$1" --json >"$T/en.json" || true
    cmp -s "$T/zh.json" "$T/en.json" || { echo "FAIL: $1: --json differs under zh_CN" >&2; fail=1; }
}
# has WHAT FILE TEXT: FILE holds TEXT.
has() { grep -qF -- "$3" "$2" || { echo "FAIL: $1: lacks '$3'" >&2; fail=1; }; }

# 1. First boot: no state file yet; no claim about the past.
boot 11111111-0000-0000-0000-000000000001
xid48 1002 372000003
check >"$T/out"
expect "first boot title" "$(xid_title)" "GPU 0: Xid 48 (Double Bit ECC Error), last 28s ago"
expect "state file mode" "$(stat -c %a "$S/state.json")" "600"
expect "events recorded" "$(jq '.gpus[0].events | length' "$S/state.json")" "1"
# The same run again in the same boot: the same event, recorded once, no escalation.
check >"$T/out"
expect "same boot again" "$(jq '.gpus[0].events | length' "$S/state.json")" "1"
expect "same boot title" "$(xid_title)" "GPU 0: Xid 48 (Double Bit ECC Error), last 28s ago"

# 2. Second and third boot: the same Xid again escalates, naming the reboots.
boot 11111111-0000-0000-0000-000000000002
check >"$T/out"
expect "boot 2" "$(xid_title)" \
    "GPU 0: Xid 48 (Double Bit ECC Error), again after 1 reboot: inspect or replace the GPU, last 28s ago"
boot 11111111-0000-0000-0000-000000000003
check >"$T/out"
expect "boot 3" "$(xid_title)" \
    "GPU 0: Xid 48 (Double Bit ECC Error), again after 2 reboots: inspect or replace the GPU, last 28s ago"
expect "boot 3 evidence" \
    "$(jq -r '.findings[0].evidence[] | select(startswith("the state file"))' "$T/out" | cut -c1-60)" \
    "the state file remembers Xid 48 on this GPU in 2 earlier boo"
# --no-state: judged alone, nothing written.
before=$(md5sum <"$S/state.json")
gd check --root "$R" --window 0 --state-dir "$S" --no-state --json >"$T/out" || true
expect "--no-state title" "$(xid_title)" "GPU 0: Xid 48 (Double Bit ECC Error), last 28s ago"
expect "--no-state writes nothing" "$(md5sum <"$S/state.json")" "$before"
# check --from a snapshot captured with the state judges with that state, and writes nothing.
gd snapshot --root "$R" --window 0 --state-dir "$S" -o "$T/snap.json"
expect "snapshot state section" "$(jq -r '.state.status' "$T/snap.json")" "ok"
expect "snapshot boot id" "$(jq -r '.host.boot_id' "$T/snap.json")" "11111111-0000-0000-0000-000000000003"
"$GPUDOCTOR" check --from "$T/snap.json" --json >"$T/out" || true
expect "--from title" "$(xid_title)" \
    "GPU 0: Xid 48 (Double Bit ECC Error), again after 2 reboots: inspect or replace the GPU, last 28s ago"
expect "--from writes nothing" "$(md5sum <"$S/state.json")" "$before"
# The same in Chinese: how often it came back, the state file's evidence and the fix.
if zh_report "$T/snap.json" "$T/zh"; then
    has "zh title" "$T/zh" "，在 2 次重启之后再次出现：检查或更换这块 GPU，最近一次 28s 前"
    has "zh evidence" "$T/zh" "状态文件记录到 Xid 48 曾在这块 GPU 之前的 2 次启动中出现，最近一次在"
    has "zh fix" "$T/zh" "# 故障在 2 次重启之后依然存在：检查或更换这块 GPU"
    grep -q "again after\|reboots" "$T/zh" && { echo "FAIL: zh report keeps English" >&2; fail=1; }
fi

# 3. The GPU replaced: a new serial and UUID in the same slot starts clean.
jq '.gpus[0].serial = "9999999999999" | .gpus[0].uuid = "GPU-aaaaaaaa-1d4e-7b8a-93c5-0e2f4a6b8c10"' \
    "$SRC/scenarios/healthy-8xh100.json" >"$SCEN"
boot 11111111-0000-0000-0000-000000000004
check >"$T/out"
expect "new serial" "$(xid_title)" "GPU 0: Xid 48 (Double Bit ECC Error), last 28s ago"
cp "$SRC/scenarios/healthy-8xh100.json" "$SCEN"

# 4. ack: silenced (not counted, shown apart), a new event brings it back, expiry ends it.
boot 11111111-0000-0000-0000-000000000005
S2=$T/state2
check --state-dir "$S2" >/dev/null
gd ack health.xid --gpu 0 --note "RMA 4711 opened" --root "$R" --state-dir "$S2" >"$T/ack.out" 2>"$T/ack.err"
expect "ack output" "$(cat "$T/ack.out" "$T/ack.err")" \
    "acknowledged critical health.xid on GPU-6f3c2a91-1d4e-7b8a-93c5-0e2f4a6b8c10 until a new event"
# The acknowledgement was given after the event: set its point back into this boot's past.
jq '.acks[0].boot_id = "11111111-0000-0000-0000-000000000005" | .acks[0].uptime_us = 380000000' \
    "$S2/state.json" >"$T/s.json" && cp "$T/s.json" "$S2/state.json"
rc=0
gd check --root "$R" --window 0 --state-dir "$S2" --json >"$T/out" || rc=$?
expect "acked exit status" "$rc" "0"
expect "acked verdict" "$(jq -c '.verdict | [.critical, .acknowledged]' "$T/out")" "[0,1]"
expect "acked note" "$(jq -r '.findings[0].acknowledged.note' "$T/out")" "RMA 4711 opened"
gd check --root "$R" --window 0 --state-dir "$S2" --color=never >"$T/text" || true
grep -q '^Acknowledged' "$T/text" || { echo "FAIL: no Acknowledged section" >&2; fail=1; }
grep -q 'RMA 4711 opened' "$T/text" || { echo "FAIL: no note in the text" >&2; fail=1; }
"$GPUDOCTOR" ack --list --state-dir "$S2" | grep '^health.xid GPU-6f3c2a91' >/dev/null ||
    { echo "FAIL: ack --list" >&2; fail=1; }
# A new Xid after the acknowledgement: counted again.
printf '4,1002,372000003,-;NVRM: Xid (PCI:0000:18:00): 48, pid=4121, name=python3, Double Bit ECC Error\n4,1003,390000000,-;NVRM: Xid (PCI:0000:18:00): 48, pid=4121, name=python3, Double Bit ECC Error\n' >"$R/dev/kmsg"
rc=0
gd check --root "$R" --window 0 --state-dir "$S2" --json >"$T/out" || rc=$?
expect "new event un-silences" "$rc/$(jq '.verdict.acknowledged' "$T/out")" "2/0"
xid48 1002 372000003
# Expiry: an acknowledgement whose time has passed no longer silences.
jq '.acks[0].expires_ms = 1000' "$S2/state.json" >"$T/s.json" && cp "$T/s.json" "$S2/state.json"
rc=0
gd check --root "$R" --window 0 --state-dir "$S2" --json --no-state >/dev/null || true
gd check --root "$R" --window 0 --state-dir "$S2" --json >"$T/out" || rc=$?
expect "expired" "$rc/$(jq '.verdict.acknowledged' "$T/out")" "2/0"
expect "expired ack pruned" "$(jq '.acks | length' "$S2/state.json")" "0"
# --clear
"$GPUDOCTOR" ack health.xid --gpu GPU-6f3c2a91-1d4e-7b8a-93c5-0e2f4a6b8c10 --state-dir "$S2" >/dev/null
expect "--clear" "$("$GPUDOCTOR" ack --clear health.xid --gpu 0 --state-dir "$S2")" "cleared 1 acknowledgement"
rc=0
"$GPUDOCTOR" ack --clear --all --state-dir "$S2" 2>/dev/null || rc=$?
expect "--clear nothing" "$rc" "1"
rc=0
"$GPUDOCTOR" ack no.such-rule --gpu 0 --state-dir "$S2" 2>/dev/null || rc=$?
expect "unknown rule" "$rc" "64"
rc=0
"$GPUDOCTOR" ack health.xid --gpu 7 --state-dir "$T/empty" 2>/dev/null || rc=$?
expect "unknown GPU index" "$rc" "64"

# A relative state directory (where it runs decides which): refused, 64, nothing made.
rc=0
(cd "$T" && gd check --root "$R" --window 0 --state-dir rel/dir >/dev/null 2>"$T/err") || rc=$?
expect "relative --state-dir" "$rc $(cat "$T/err")" \
    "64 gpudoctor check: --state-dir: 'rel/dir' is not an absolute directory or 'off'"
rc=0
(cd "$T" && GPUDOCTOR_STATE_DIR=rel gd ack health.xid --gpu 0 >/dev/null 2>"$T/err") || rc=$?
expect "relative \$GPUDOCTOR_STATE_DIR" "$rc $(cat "$T/err")" \
    "64 gpudoctor ack: \$GPUDOCTOR_STATE_DIR: 'rel' is not an absolute directory or 'off'"
[ -e "$T/rel" ] && { echo "FAIL: a relative state directory was made" >&2; fail=1; }

# 5. A corrupt state file: a note in the report, the diagnosis intact, rewritten afterwards.
printf '{"version": 1, "gpus": [\n  {"uuid": 12}\n]}\n' >"$S/state.json"
# ack --list cannot say "no acknowledgements" of a file it could not read: status 3, the reason.
rc=0
"$GPUDOCTOR" ack --list --state-dir "$S" >"$T/list" 2>"$T/list.err" || rc=$?
expect "--list of a corrupt file" "$rc/$(cat "$T/list")" "3/"
grep -q "state file $S/state.json:2:" "$T/list.err" || { echo "FAIL: --list: no reason" >&2; fail=1; }
mkdir -p "$T/linked" && ln -sf "$S/state.json" "$T/linked/state.json"
rc=0
"$GPUDOCTOR" ack --list --state-dir "$T/linked" >"$T/list" 2>"$T/list.err" || rc=$?
expect "--list of a link" "$rc/$(cat "$T/list")/$(cat "$T/list.err")" \
    "3//gpudoctor ack: state file $T/linked/state.json: a symbolic link, not followed; ignored"
gd check --root "$R" --window 0 --state-dir "$S" --color=never >"$T/text" 2>&1 || true
grep -q "state file $S/state.json:2:12: gpus\[0\]: uuid: expected a string" "$T/text" ||
    grep -q "state file $S/state.json:2:" "$T/text" || { echo "FAIL: corrupt note" >&2; cat "$T/text" >&2; fail=1; }
grep -q 'Xid 48' "$T/text" || { echo "FAIL: report lost with a corrupt state" >&2; fail=1; }
expect "rewritten" "$(jq '.version' "$S/state.json")" "1"

# 6. Concurrent writers: 20 checks at once, each with its own boot: all 20 events kept.
S3=$T/state3
for i in $(seq 1 20); do
    mkdir -p "$T/r$i" && cp -r "$R/." "$T/r$i/"
    printf '11111111-0000-0000-0000-%012d\n' "$i" >"$T/r$i/proc/sys/kernel/random/boot_id"
done
pids=()
for i in $(seq 1 20); do
    gd check --root "$T/r$i" --window 0 --state-dir "$S3" --json >/dev/null 2>&1 &
    pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || true; done
expect "concurrent writers" "$(jq '[.gpus[0].events[] | .boot_id] | unique | length' "$S3/state.json")" "20"

# 7. A full disk: a note, the report printed, the old file intact.
mkdir -p "$T/tiny"
if [ "$(id -u)" = 0 ] && mount -t tmpfs -o size=12k tmpfs "$T/tiny" 2>/dev/null; then
    head -c 4000 /dev/zero | tr '\0' ' ' >/dev/null
    printf '{"version": 1, "gpus": [], "acks": []}\n' >"$T/tiny/state.json"
    dd if=/dev/zero of="$T/tiny/fill" bs=1k count=64 2>/dev/null || true
    gd check --root "$R" --window 0 --state-dir "$T/tiny" --color=never >"$T/text" 2>"$T/err" || true
    grep -q 'Xid 48' "$T/text" || { echo "FAIL: no report on a full disk" >&2; fail=1; }
    grep -q 'the state file was not updated' "$T/err" || { echo "FAIL: no full-disk note" >&2; cat "$T/err" >&2; fail=1; }
    expect "old file intact" "$(cat "$T/tiny/state.json")" '{"version": 1, "gpus": [], "acks": []}'
    umount "$T/tiny"
else
    echo "note: no tmpfs could be mounted (not root, or no permission): full-disk part skipped"
fi

# 8. Memory faults over reboots (no Xid in the log): uncorrectable ECC errors since the driver
# loaded, in boot after boot, escalate as the Xid does; a row remap pending again after each
# reboot's reset escalates to a warning, then critical; a remap failure is critical with
# "inspect or replace"; a replaced GPU starts clean. A root of its own, its kernel log empty.
R2=$T/root2 S4=$T/state4
mkdir -p "$R2/proc/sys/kernel/random" "$R2/dev"
cp "$R/proc/stat" "$R/proc/uptime" "$R2/proc/"
: >"$R2/dev/kmsg"
boot2() { echo "$1" >"$R2/proc/sys/kernel/random/boot_id"; }
mcheck() { gd check --root "$R2" --window 0 --state-dir "$S4" --json "$@" || true; }
rule_title() { jq -r --arg id "$1" '[.findings[] | select(.id == $id)][0].title' "$T/out"; }
rule_sev() { jq -r --arg id "$1" '[.findings[] | select(.id == $id)][0].severity' "$T/out"; }
ecc_scen() { # volatile, aggregate
    jq --argjson v "$1" --argjson a "$2" \
        '.gpus[0].ecc_volatile_uncorrected = $v | .gpus[0].ecc_aggregate_uncorrected = $a' \
        "$SRC/scenarios/healthy-8xh100.json" >"$SCEN"
}
ECC=health.ecc-uncorrectable
ecc_scen 2 2
boot2 22222222-0000-0000-0000-000000000001
mcheck >"$T/out"
expect "ecc boot 1" "$(rule_title $ECC)" "GPU 0 had 2 uncorrectable ECC errors since the driver loaded"
expect "ecc event" "$(jq -c '[.gpus[0].events[] | select(.kind == "ecc_volatile") | .value]' "$S4/state.json")" "[2]"
# More errors in the same boot: one boot, the most kept, no escalation.
ecc_scen 3 3
mcheck >"$T/out"
expect "ecc same boot" "$(jq -c '[.gpus[0].events[] | select(.kind == "ecc_volatile") | .value]' "$S4/state.json")" "[3]"
expect "ecc same boot title" "$(rule_title $ECC)" "GPU 0 had 3 uncorrectable ECC errors since the driver loaded"
boot2 22222222-0000-0000-0000-000000000002
ecc_scen 1 4
mcheck >"$T/out"
expect "ecc boot 2" "$(rule_title $ECC)/$(rule_sev $ECC)" \
    "GPU 0 had 1 uncorrectable ECC error since the driver loaded, again after 1 reboot: inspect or replace the GPU/critical"
expect "ecc boot 2 evidence" \
    "$(jq -r --arg id $ECC '.findings[] | select(.id == $id) | .evidence[] | select(startswith("the state file"))' "$T/out" | sed 's/, the last at .*//')" \
    "the state file remembers uncorrectable ECC errors on this GPU in 1 earlier boot"
gd snapshot --root "$R2" --window 0 --state-dir "$S4" -o "$T/snap-ecc.json"
if zh_report "$T/snap-ecc.json" "$T/zh"; then
    has "zh ecc title" "$T/zh" "，在 1 次重启之后再次出现：检查或更换这块 GPU"
    has "zh ecc evidence" "$T/zh" "状态文件记录到 不可纠正的 ECC 错误 曾在这块 GPU 之前的 1 次启动中出现"
fi
boot2 22222222-0000-0000-0000-000000000003
mcheck >"$T/out"
expect "ecc boot 3" "$(rule_title $ECC)" \
    "GPU 0 had 1 uncorrectable ECC error since the driver loaded, again after 2 reboots: inspect or replace the GPU"
# A boot without errors since the driver loaded: the lifetime count is history, not escalated.
boot2 22222222-0000-0000-0000-000000000004
ecc_scen 0 4
mcheck >"$T/out"
expect "ecc clean boot" "$(rule_title $ECC)/$(rule_sev $ECC)" "GPU 0 has 4 uncorrectable ECC errors in its lifetime/warning"
# The GPU replaced (new serial and UUID): its errors are its first.
ecc_scen 2 2
jq '.gpus[0].serial = "9999999999999" | .gpus[0].uuid = "GPU-aaaaaaaa-1d4e-7b8a-93c5-0e2f4a6b8c10"' "$SCEN" >"$T/scen" && cp "$T/scen" "$SCEN"
boot2 22222222-0000-0000-0000-000000000005
mcheck >"$T/out"
expect "ecc new serial" "$(rule_title $ECC)" "GPU 0 had 2 uncorrectable ECC errors since the driver loaded"
# Without a state file (first run, or --no-state): no claim either way.
ecc_scen 2 2
mcheck --no-state >"$T/out"
expect "ecc --no-state" "$(rule_title $ECC)" "GPU 0 had 2 uncorrectable ECC errors since the driver loaded"
# The fixture's clock (btime) four years behind the recorded times in a later boot: escalated all
# the same (boot ids, not times); then a year ahead in the same boot: still one event of it.
ecc_scen 2 2
boot2 22222222-0000-0000-0000-000000000006
printf 'cpu  5255 0 6037 189884 646 0 176 0 0 0\nbtime 1670000000\n' >"$R2/proc/stat"
mcheck >"$T/out"
expect "clock back" "$(rule_title $ECC)" \
    "GPU 0 had 2 uncorrectable ECC errors since the driver loaded, again after 3 reboots: inspect or replace the GPU"
printf 'cpu  5255 0 6037 189884 646 0 176 0 0 0\nbtime 1830000000\n' >"$R2/proc/stat"
mcheck >"$T/out"
expect "clock ahead, same boot" \
    "$(jq '[.gpus[] | select(.serial == "1652823054671") | .events[] | select(.kind == "ecc_volatile")] | length' "$S4/state.json")" "4"
expect "recorded at the clock of its first run" \
    "$(jq '[.gpus[].events[] | select(.boot_id == "22222222-0000-0000-0000-000000000006" and .kind == "ecc_volatile") | .time_ms]' -c "$S4/state.json")" "[1670000400000]"
cp "$R/proc/stat" "$R2/proc/"

S5=$T/state5
jq '.gpus[0].remapped_rows_pending = true | .gpus[0].remapped_rows_failure = true | .gpus[0].remapped_rows_uncorrectable = 1' \
    "$SRC/scenarios/healthy-8xh100.json" >"$SCEN"
rcheck() { gd check --root "$R2" --window 0 --state-dir "$S5" --json || true; }
PEND=health.memory-repair-pending FAILED=health.row-remap-failure
boot2 33333333-0000-0000-0000-000000000001
rcheck >"$T/out"
expect "remap boot 1" "$(rule_title $PEND)/$(rule_sev $PEND) | $(rule_title $FAILED)" \
    "GPU 0 needs a reset to remap bad memory/warning | GPU 0 failed to remap a bad memory row"
rcheck >"$T/out"
expect "remap events, one per boot" \
    "$(jq -c '[.gpus[0].events[] | .kind] | sort' "$S5/state.json")" '["remap_failure","remapped_rows","repair_pending"]'
boot2 33333333-0000-0000-0000-000000000002
rcheck >"$T/out"
expect "remap boot 2" "$(rule_title $PEND)/$(rule_sev $PEND)" "GPU 0 needs a reset to remap bad memory, again after 1 reboot/warning"
expect "remap failure boot 2" "$(rule_title $FAILED)/$(rule_sev $FAILED)" \
    "GPU 0 failed to remap a bad memory row, again after 1 reboot: inspect or replace the GPU/critical"
boot2 33333333-0000-0000-0000-000000000003
rcheck >"$T/out"
expect "remap boot 3" "$(rule_title $PEND)/$(rule_sev $PEND)" \
    "GPU 0 needs a reset to remap bad memory, again after 2 reboots: inspect or replace the GPU/critical"
expect "remap boot 3 fix" \
    "$(jq -r --arg id $PEND '.findings[] | select(.id == $id) | .fix[] | select(startswith("# the fault"))' "$T/out")" \
    "# the fault survived 2 reboots: inspect or replace this GPU (its serial is in the evidence)"
jq '.gpus[0].remapped_rows_pending = true | .gpus[0].remapped_rows_failure = true | .gpus[0].serial = "9999999999999" | .gpus[0].uuid = "GPU-aaaaaaaa-1d4e-7b8a-93c5-0e2f4a6b8c10"' \
    "$SRC/scenarios/healthy-8xh100.json" >"$SCEN"
boot2 33333333-0000-0000-0000-000000000004
rcheck >"$T/out"
expect "remap new serial" "$(rule_title $PEND)/$(rule_sev $PEND) | $(rule_title $FAILED)" \
    "GPU 0 needs a reset to remap bad memory/warning | GPU 0 failed to remap a bad memory row"
cp "$SRC/scenarios/healthy-8xh100.json" "$SCEN"

# A tree without a boot id (no /proc/sys/kernel/random/boot_id) and an Xid in its log: the
# report as usual, nothing recorded for the Xid (it could not be told from a later boot's), no
# crash; watch records through the same code each cycle.
S2=$T/state-noboot
rm -f "$R/proc/sys/kernel/random/boot_id"
xid48 $((390 * 1000000)) 1
rc=0
gd check --root "$R" --window 0 --state-dir "$S2" >"$T/out" 2>"$T/err" || rc=$?
expect "no boot id: check's status" "$rc" 2
expect "no boot id: Xids recorded" "$(jq '[.gpus[]?.events[]? | select(.kind == "xid")] | length' "$S2/state.json" 2>/dev/null || echo none)" 0
rc=0
gd watch --plain -n 0.2 -c 3 --root "$R" --state-dir "$S2" >"$T/out" 2>"$T/err" || rc=$?
expect "no boot id: watch's status" "$rc" 0
exit $fail
