#!/usr/bin/env bash
# gpudoctor_gpu_xid_errors_total is a counter: while serve runs it counts each kernel-log line
# once and never goes down. Counted from the log as it is, a log that rotates made it go down
# (Prometheus takes that for a restart) and an old line leaving as a new one came hid the new one.
. "$SRC/tests/fixtures/serve/common.bash"

jq 'del(.timeline)' "$SRC/scenarios/healthy-8xh100.json" >"$TMP/healthy.json"
ROOT=$TMP/root
mkdir -p "$ROOT/dev" "$ROOT/proc"
cp "$SRC/tests/fixtures/klog/kmsg/proc/stat" "$ROOT/proc/stat"
line() { # line SEQ STAMP_US: an Xid 13 of GPU 0 (00000000:18:00.0)
    printf '4,%s,%s,-;NVRM: Xid (PCI:0000:18:00): 13, pid=4121, name=python3, Graphics Exception\n' "$1" "$2"
}
# write_log LINE...: replaces the log the way a rotation does (a new file moved into place)
write_log() {
    printf '%s\n' "$@" >"$ROOT/dev/kmsg.new"
    mv "$ROOT/dev/kmsg.new" "$ROOT/dev/kmsg"
}
L=$'gpu="0",uuid="GPU-6f3c2a91-1d4e-7b8a-93c5-0e2f4a6b8c10"'

# wait_cycles N: until N more collections have completed
wait_cycles() {
    local want i now
    want=$(($(metric "$(curl -sf "http://127.0.0.1:$PORT/metrics")" gpudoctor_collect_cycles_total '') + $1))
    for i in $(seq 100); do
        now=$(metric "$(curl -sf "http://127.0.0.1:$PORT/metrics")" gpudoctor_collect_cycles_total '')
        [ "$now" -ge "$want" ] && return 0
        sleep 0.1
    done
    fail "serve did not complete $1 more collections"
}
xids() {
    metric "$(curl -sf "http://127.0.0.1:$PORT/metrics")" gpudoctor_gpu_xid_errors_total "$L"
}

write_log "$(line 1 1000000)" "$(line 2 2000000)"
start_serve "$TMP/healthy.json" --interval 1s --window 0 --root "$ROOT" --only nvml,kernel_log \
    --state-dir off
wait_ready 30
check "first read: the whole log" "$(xids)" 2

# the line at 1 s left the log as one at 3 s came: three lines seen
write_log "$(line 2 2000000)" "$(line 3 3000000)"
wait_cycles 2
check "a rotation that drops one line and brings one" "$(xids)" 3

# rotated away entirely: the counter stays
write_log ""
wait_cycles 2
check "an empty log after a rotation" "$(xids)" 3

# two new identical lines (one kernel stamp) are two XIDs
write_log "$(line 4 4000000)" "$(line 4 4000000)"
wait_cycles 2
check "identical lines" "$(xids)" 5

# the one-off textfile counts the log as it is
NVML_SIM_SCENARIO=$TMP/healthy.json "$GPUDOCTOR" serve --once --window 0 --root "$ROOT" \
    --only nvml,kernel_log --state-dir off >"$TMP/once.prom"
check "--once counts the log as it is" "$(metric "$(cat "$TMP/once.prom")" \
    gpudoctor_gpu_xid_errors_total "$L")" 2
stop_serve TERM
finish
