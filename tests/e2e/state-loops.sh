#!/usr/bin/env bash
# watch and serve with the state file (docs/state.md), on a fixture root whose kernel log has
# Xid 48 on GPU 0: both record the Xid they saw, and leave the file alone when nothing is new;
# an acknowledged finding is gpudoctor_finding_acknowledged in /metrics (serve --once and a live
# serve scraped with curl), not in gpudoctor_findings or gpudoctor_check_status, "(ack)" in
# watch --plain, an "ack" row and a count in the live view; an acknowledgement given while watch
# runs silences the finding, and a new Xid after it brings it back in watch and serve alike.
. "$SRC/tests/fixtures/serve/common.bash"
unset GPUDOCTOR_STATE_DIR
export NO_COLOR=1 LC_ALL=C.UTF-8
# The simulator's clock from one fixed moment, not from each process's start: its energy counter
# then rises from run to run as a real one does (docs/state.md: a lower reading is a reload).
export NVML_SIM_EPOCH=$(date +%s)
KIDS=()
kill_kids() { for k in "${KIDS[@]}"; do kill -KILL "$k" 2>/dev/null || true; done; }
CLEANUPS+=(kill_kids)

R=$TMP/root
SCEN=$TMP/healthy.json
UUID0=GPU-6f3c2a91-1d4e-7b8a-93c5-0e2f4a6b8c10
BOOT=33333333-0000-0000-0000-000000000001
jq 'del(.timeline)' "$SRC/scenarios/healthy-8xh100.json" >"$SCEN"
mkdir -p "$R/proc/sys/kernel/random" "$R/dev"
printf 'cpu  5255 0 6037 189884 646 0 176 0 0 0\nbtime 1796203140\n' >"$R/proc/stat"
echo "400.00 100.00" >"$R/proc/uptime"
echo "$BOOT" >"$R/proc/sys/kernel/random/boot_id"
xid48() { # xid48 SEQ UPTIME_US: a kernel-log line, Xid 48 on GPU 0 (PCI 18:00)
    printf '4,%d,%d,-;NVRM: Xid (PCI:0000:18:00): 48, pid=4121, name=python3, Double Bit ECC Error\n' "$1" "$2"
}
xid48 1002 372000003 >"$R/dev/kmsg"
# Only what the fixture root holds: this machine's processes and disks add nothing. (The driver
# collector too: watch carries the kernel log over with it between its reads.)
ONLY=(--only nvml,driver,kernel_log,host --root "$R")
gd() { NVML_SIM_SCENARIO=$SCEN "$GPUDOCTOR" "$@"; }
# ack_gpu0 DIR: health.xid acknowledged on GPU 0, given at 380 s into this boot (after the Xid
# at 372 s; ack itself reads this machine's boot, not the fixture's).
ack_gpu0() {
    "$GPUDOCTOR" ack health.xid --gpu "$UUID0" --note "RMA 4711" --state-dir "$1" >/dev/null
    jq --arg b "$BOOT" '.acks[0].boot_id = $b | .acks[0].uptime_us = 380000000' \
        "$1/state.json" >"$TMP/acked.json"
    cp "$TMP/acked.json" "$1/state.json"
}
xids() { # xids DIR: the Xid events the state file holds for GPU 0
    jq --arg u "$UUID0" '[.gpus[] | select(.uuid == $u) | .events[] | select(.kind == "xid")] | length' \
        "$1/state.json"
}
gpu0_ids() { # gpu0_ids FILE: the findings column of the last line of GPU 0 in watch --plain
    awk '$1 !~ /^#/ && $2 == 0 { last = $NF } END { print last }' "$1"
}
wait_until() { # wait_until SECONDS COMMAND...: until COMMAND succeeds
    local end=$((SECONDS + $1))
    shift
    while [ "$SECONDS" -lt "$end" ]; do
        "$@" && return 0
        sleep 0.2
    done
    return 1
}

# 1. serve --once records the Xid it saw; a second run with nothing new leaves the file alone.
S1=$TMP/s1
gd serve --once "${ONLY[@]}" --window 0 --state-dir "$S1" >"$TMP/m1"
check "serve --once: the Xid recorded" "$(xids "$S1")" 1
check "serve --once: critical" "$(metric "$(cat "$TMP/m1")" gpudoctor_findings 'severity="critical"')" 1
inode=$(stat -c %i "$S1/state.json")
gd serve --once "${ONLY[@]}" --window 0 --state-dir "$S1" >/dev/null
check "serve --once, nothing new: the file not rewritten" "$(stat -c %i "$S1/state.json")" "$inode"
check "serve --once, nothing new: the Xid once" "$(xids "$S1")" 1

# 2. Acknowledged: in /metrics as such, not counted.
ack_gpu0 "$S1"
gd serve --once "${ONLY[@]}" --window 0 --state-dir "$S1" >"$TMP/m2"
m=$(cat "$TMP/m2")
check "acked: gpudoctor_finding_acknowledged" \
    "$(metric "$m" gpudoctor_finding_acknowledged 'id="health.xid",subject="gpu=0"')" 1
check "acked: gpudoctor_findings critical" "$(metric "$m" gpudoctor_findings 'severity="critical"')" 0
check "acked: gpudoctor_check_status" "$(metric "$m" gpudoctor_check_status '')" 0
check "acked: the finding keeps its series" "$(metric "$m" gpudoctor_finding 'id="health.xid"')" 1
gd serve --once "${ONLY[@]}" --window 0 --state-dir "$S1" --no-state >"$TMP/m3"
check "--no-state: counted" "$(metric "$(cat "$TMP/m3")" gpudoctor_findings 'severity="critical"')" 1
check "--no-state: no acknowledged series" \
    "$(metric "$(cat "$TMP/m3")" gpudoctor_finding_acknowledged '')" ""

# 3. watch --plain shows it acknowledged; watch records an Xid it saw (a fresh state).
gd watch --plain --count 1 "${ONLY[@]}" --state-dir "$S1" >"$TMP/w1"
check "watch --plain: acknowledged" "$(gpu0_ids "$TMP/w1")" "health.xid(ack)"
gd watch --plain --count 1 "${ONLY[@]}" --no-state >"$TMP/w0"
check "watch --plain --no-state: counted" "$(gpu0_ids "$TMP/w0")" "health.xid"
S2=$TMP/s2
gd watch --plain --count 2 --interval 1s "${ONLY[@]}" --state-dir "$S2" >/dev/null
check "watch: the Xid recorded" "$(xids "$S2")" 1

# 4. A live serve scraped with curl: acknowledged; a new Xid brings the finding back, and serve
# records it.
start_serve "$SCEN" --interval 1s --window 0 "${ONLY[@]}" --state-dir "$S1"
wait_ready
m=$(curl -sf "http://127.0.0.1:$PORT/metrics")
check "live serve: gpudoctor_finding_acknowledged" \
    "$(metric "$m" gpudoctor_finding_acknowledged 'id="health.xid",subject="gpu=0"')" 1
check "live serve: gpudoctor_findings critical" "$(metric "$m" gpudoctor_findings 'severity="critical"')" 0
check "live serve: gpudoctor_check_status" "$(metric "$m" gpudoctor_check_status '')" 0
check "live serve: /findings" \
    "$(curl -sf "http://127.0.0.1:$PORT/findings" | jq -c '[.verdict.acknowledged, .findings[0].acknowledged.note]')" \
    '[1,"RMA 4711"]'
xid48 1003 390000000 >>"$R/dev/kmsg"
counted() {
    m=$(curl -sf "http://127.0.0.1:$PORT/metrics")
    [ "$(metric "$m" gpudoctor_findings 'severity="critical"')" = 1 ]
}
wait_until 15 counted || fail "live serve: the new Xid did not bring the finding back"
check "live serve, new Xid: no acknowledged series" "$(metric "$m" gpudoctor_finding_acknowledged '')" ""
check "live serve, new Xid: gpudoctor_check_status" "$(metric "$m" gpudoctor_check_status '')" 2
recorded2() { [ "$(xids "$S1")" = 2 ]; }
wait_until 5 recorded2 || fail "live serve: the new Xid was not recorded ($(xids "$S1"))"
stop_serve

# 5. A live watch: counted, acknowledged while it runs, back with a new Xid; it records that.
xid48 1002 372000003 >"$R/dev/kmsg"
S3=$TMP/s3
NVML_SIM_SCENARIO=$SCEN "$GPUDOCTOR" watch --plain --interval 1s "${ONLY[@]}" --state-dir "$S3" \
    >"$TMP/w3" 2>"$TMP/w3.err" &
KIDS+=($!)
shows() { [ "$(gpu0_ids "$TMP/w3")" = "$1" ]; }
wait_until 15 shows health.xid || fail "live watch: no Xid finding: $(gpu0_ids "$TMP/w3")"
recorded1() { [ -f "$S3/state.json" ] && [ "$(xids "$S3")" = 1 ]; }
wait_until 5 recorded1 || fail "live watch: the Xid was not recorded"
ack_gpu0 "$S3"
wait_until 10 shows "health.xid(ack)" || fail "live watch: the acknowledgement not seen: $(gpu0_ids "$TMP/w3")"
xid48 1003 390000000 >>"$R/dev/kmsg"
# The kernel log is read every 10 s in watch.
wait_until 25 shows health.xid || fail "live watch: the new Xid did not bring it back: $(gpu0_ids "$TMP/w3")"
recorded3() { [ "$(xids "$S3")" = 2 ]; }
wait_until 5 recorded3 || fail "live watch: the new Xid was not recorded ($(xids "$S3"))"
kill -TERM "${KIDS[-1]}"
wait "${KIDS[-1]}" || fail "live watch: exit status $?"
[ -s "$TMP/w3.err" ] && fail "live watch: stderr: $(cat "$TMP/w3.err")"

# 6. The live view (tmux, when installed): an "ack" row with the note, counts in the headers.
if command -v tmux >/dev/null; then
    xid48 1002 372000003 >"$R/dev/kmsg"
    SOCK=gpudoctor-state-loops-$$
    tmux_kill() { tmux -L "$SOCK" kill-server 2>/dev/null || true; }
    CLEANUPS+=(tmux_kill)
    LC_ALL=C.UTF-8 tmux -L "$SOCK" -f /dev/null new-session -d -s t -x 120 -y 30 \
        "env NVML_SIM_SCENARIO=$SCEN $GPUDOCTOR watch -n 1 --only nvml,driver,kernel_log,host --root $R --state-dir $S1; sleep 60"
    screen() { tmux -L "$SOCK" capture-pane -t t -p 2>/dev/null; }
    on_screen() { screen | grep -E -- "$1" >/dev/null; }
    if wait_until 15 on_screen 'ack +health\.xid'; then
        screen | grep -E 'ack +health\.xid +acknowledged RMA 4711: GPU 0: Xid 48' >/dev/null ||
            fail "live view: the ack row: $(screen | grep 'health.xid')"
        screen | grep -E 'FINDINGS \(1, 1 acknowledged\)' >/dev/null ||
            fail "live view: findings header: $(screen | grep FINDINGS)"
        screen | sed -n 1p | grep -E '1 acked +0 critical +0 warning' >/dev/null ||
            fail "live view: title bar: $(screen | head -1)"
    else
        fail "live view: no acknowledged row"
        screen
    fi
else
    echo "tmux not installed: the live view's part skipped"
fi

finish
