#!/usr/bin/env bash
# A real Slurm on loopback (Debian's slurmctld, slurmd and munge, a munge key made for the test):
# `gpudoctor slurm-check` drains this node on a node fault (a lost GPU) with the finding as
# reason, leaves it on a second run, resumes it on the healthy scenario, never touches a drain
# someone else made, changes nothing with --dry-run; a job's problem (a stopped process holding a
# GPU) does not drain it unless slurm_drain says so; an acknowledged Xid (gpudoctor ack) does not
# drain it until a new Xid comes; then slurmd itself runs it as its
# HealthCheckProgram and the node drains and resumes as the scenario changes.
. "$SRC/tests/fixtures/serve/common.bash"
. "$SRC/tests/e2e/slurm-lib.bash"

# Scenarios: the healthy server, and the same with GPU 3 lost (a critical finding). Only the
# NVML collector runs, so that this machine's own processes and disks cannot add findings.
HEALTHY=$TMP/healthy.json
CRITICAL=$TMP/critical.json
jq 'del(.timeline)' "$SRC/scenarios/healthy-8xh100.json" >"$HEALTHY"
jq '.gpus[3] = {index: 3, handle_status: "GPU_IS_LOST"}' "$HEALTHY" >"$CRITICAL"
NVML_SIM_SCENARIO=$CRITICAL "$GPUDOCTOR" check --only nvml --window 0 --json >"$TMP/check.json" || true
title=$(jq -r '[.findings[] | select(.severity == "critical")][0].title' "$TMP/check.json")
n_crit=$(jq '[.findings[] | select(.severity == "critical")] | length' "$TMP/check.json")
want_reason="gpudoctor: $title"
[ "$n_crit" -gt 1 ] && want_reason="$want_reason (+$((n_crit - 1)) more)"

run_check() { # run_check SCENARIO [options]: exit status in $rc, output in $TMP/sc.out
    local scen=$1
    shift
    rc=0
    NVML_SIM_SCENARIO=$scen "$GPUDOCTOR" slurm-check --only nvml --node "$NODE" "$@" >"$TMP/sc.out" 2>&1 || rc=$?
}

run_check "$CRITICAL" --dry-run
check "dry run: exit status" "$rc" 2
check "dry run: state unchanged" "$(node_state)" IDLE
grep -q "drain with reason" "$TMP/sc.out" || fail "dry run does not say what it would do: $(cat "$TMP/sc.out")"

run_check "$CRITICAL"
check "critical: exit status" "$rc" 2
check "critical: drained" "$(node_state)" IDLE+DRAIN
check "critical: reason" "$(node_reason)" "$want_reason"

run_check "$CRITICAL"
check "critical again: exit status" "$rc" 2
grep -q "already drained for it" "$TMP/sc.out" || fail "second run: $(cat "$TMP/sc.out")"
check "critical again: still drained" "$(node_state)" IDLE+DRAIN

run_check "$HEALTHY"
[ "$rc" -le 1 ] || fail "healthy: exit status $rc: $(cat "$TMP/sc.out")"
check "healthy: resumed" "$(node_state)" IDLE
check "healthy: reason gone" "$(node_reason)" ""

# A drain by someone else is theirs: gpudoctor neither resumes it nor replaces its reason.
scontrol update NodeName="$NODE" State=DRAIN Reason="bad DIMM B4"
run_check "$HEALTHY"
check "admin drain + healthy: still drained" "$(node_state)" IDLE+DRAIN
check "admin drain + healthy: reason kept" "$(node_reason)" "bad DIMM B4"
run_check "$CRITICAL"
check "admin drain + critical: reason kept" "$(node_reason)" "bad DIMM B4"
scontrol update NodeName="$NODE" State=RESUME

# A job's problem does not drain the node, a node fault does (issue 11: an 8-GPU node was drained
# because one user's process was stopped with Ctrl-Z). A real stopped process holds 70 GiB of GPU
# 3 (the processes collector reads its state T from /proc); GPU 5 lost is a node fault.
"$HELPERS/reap-target" holder sleep 300 &
STOPPED_PID=$!
for _ in $(seq 250); do # until it is sleep, with the devices open (not stopped half-way there)
    [ "$(cat "/proc/$STOPPED_PID/comm" 2>/dev/null)" = sleep ] && break
    sleep 0.02
done
kill_stopped() { kill -KILL "$STOPPED_PID" 2>/dev/null; }
CLEANUPS+=(kill_stopped)
kill -STOP "$STOPPED_PID"
STOPPED=$TMP/stopped.json
BOTH=$TMP/both.json
jq --argjson p "$STOPPED_PID" '.gpus |= map(.processes = [])
    | .gpus[3].processes = [{pid: $p, used_bytes: 75161927680, type: "compute", sm_util_pct: 0,
        mem_util_pct: 0, enc_util_pct: 0, dec_util_pct: 0}]
    | .gpus[3].util_gpu_pct = 0 | .gpus[3].mem_used_bytes = 76235669504
    | .gpus[3].mem_free_bytes = (.gpus[3].mem_total_bytes - 76235669504)' "$HEALTHY" >"$STOPPED"
jq '.gpus[5] = {index: 5, handle_status: "GPU_IS_LOST"}' "$STOPPED" >"$BOTH"
for _ in $(seq 100); do
    [ "$(awk '{ print $3 }' "/proc/$STOPPED_PID/stat")" = T ] && break
    sleep 0.02
done
run_jobs() { # run_jobs SCENARIO [options]: slurm-check with the processes collector
    local scen=$1
    shift
    rc=0
    NVML_SIM_SCENARIO=$scen "$GPUDOCTOR" slurm-check --only nvml,processes --node "$NODE" "$@" \
        >"$TMP/sc.out" 2>&1 || rc=$?
}
reason_of() { # reason_of SCENARIO: the reason slurm-check would give under slurm_drain=critical
    local title n
    NVML_SIM_SCENARIO=$1 "$GPUDOCTOR" check --only nvml,processes --window 0 --json >"$TMP/j.json" || true
    title=$(jq -r '[.findings[] | select(.severity == "critical")][0].title' "$TMP/j.json")
    n=$(jq '[.findings[] | select(.severity == "critical")] | length' "$TMP/j.json")
    [ "$n" -gt 1 ] && echo "gpudoctor: $title (+$((n - 1)) more)" || echo "gpudoctor: $title"
}
run_jobs "$STOPPED"
check "stopped process: exit status (critical)" "$rc" 2
check "stopped process: not drained" "$(node_state)" IDLE
grep -q "critical findings about jobs only, not node faults: not drained" "$TMP/sc.out" ||
    fail "stopped process: $(cat "$TMP/sc.out")"
# The policy is explicit and configurable: slurm_drain = critical drains for it, as before.
printf 'slurm_drain = critical\n' >"$TMP/critical.conf"
run_jobs "$STOPPED" --config "$TMP/critical.conf"
check "slurm_drain = critical: drained" "$(node_state)" IDLE+DRAIN
check "slurm_drain = critical: reason" "$(node_reason)" "$(reason_of "$STOPPED")"
# Under the default again only a job's problem remains: gpudoctor's drain is undone.
run_jobs "$STOPPED"
check "stopped process again: resumed" "$(node_state)" IDLE
grep -q "no node fault any more" "$TMP/sc.out" || fail "resume: $(cat "$TMP/sc.out")"
# A node fault beside it drains, with the node fault as the reason, the job's not counted.
run_jobs "$BOTH"
check "lost GPU and stopped process: exit status" "$rc" 2
check "lost GPU and stopped process: drained" "$(node_state)" IDLE+DRAIN
NVML_SIM_SCENARIO=$BOTH "$GPUDOCTOR" check --only nvml,processes --window 0 --json >"$TMP/j.json" || true
lost_title=$(jq -r '[.findings[] | select(.id == "health.gpu-lost")][0].title' "$TMP/j.json")
check "lost GPU and stopped process: reason" "$(node_reason)" "gpudoctor: $lost_title"
# slurm_drain = node-faults, -health.gpu-lost: that rule no longer drains; ours is undone.
run_jobs "$BOTH" --set "slurm_drain=node-faults, -health.gpu-lost"
check "-health.gpu-lost: resumed" "$(node_state)" IDLE
run_jobs "$BOTH" --set slurm_drain=sometimes
check "slurm_drain = sometimes: exit status" "$rc" 64
grep -q "slurm_drain: 'sometimes' is not node-faults, critical, a rule id" "$TMP/sc.out" ||
    fail "slurm_drain = sometimes: $(cat "$TMP/sc.out")"
kill_stopped

# An acknowledged finding (gpudoctor ack) never drains: a fixture root whose kernel log has Xid 48
# on GPU 0 (a node fault), acknowledged after it in the same boot. Without the state (--no-state)
# the same finding drains; a new Xid after the acknowledgement drains again.
XR=$TMP/xidroot
XS=$TMP/xidstate
mkdir -p "$XR/proc/sys/kernel/random" "$XR/dev"
printf 'cpu  5255 0 6037 189884 646 0 176 0 0 0\nbtime 1796203140\n' >"$XR/proc/stat"
echo "400.00 100.00" >"$XR/proc/uptime"
echo 22222222-0000-0000-0000-000000000001 >"$XR/proc/sys/kernel/random/boot_id"
printf '4,1002,372000003,-;NVRM: Xid (PCI:0000:18:00): 48, pid=4121, name=python3, Double Bit ECC Error\n' >"$XR/dev/kmsg"
run_xid() { # run_xid [options]: slurm-check on the fixture root
    rc=0
    NVML_SIM_SCENARIO=$HEALTHY "$GPUDOCTOR" slurm-check --only nvml,kernel_log,host --root "$XR" \
        --window 0 --node "$NODE" --state-dir "$XS" "$@" >"$TMP/sc.out" 2>&1 || rc=$?
}
NVML_SIM_SCENARIO=$HEALTHY "$GPUDOCTOR" ack health.xid --gpu GPU-6f3c2a91-1d4e-7b8a-93c5-0e2f4a6b8c10 \
    --note "RMA 4711" --root "$XR" --state-dir "$XS" >/dev/null
jq '.acks[0].boot_id = "22222222-0000-0000-0000-000000000001" | .acks[0].uptime_us = 380000000' \
    "$XS/state.json" >"$TMP/xs.json" && cp "$TMP/xs.json" "$XS/state.json"
run_xid
check "acknowledged Xid 48: exit status" "$rc" 0
check "acknowledged Xid 48: not drained" "$(node_state)" IDLE
run_xid --no-state
check "Xid 48 without the state: exit status" "$rc" 2
check "Xid 48 without the state: drained" "$(node_state)" IDLE+DRAIN
run_xid
check "acknowledged Xid 48 again: resumed" "$(node_state)" IDLE
printf '4,1003,390000000,-;NVRM: Xid (PCI:0000:18:00): 48, pid=4121, name=python3, Double Bit ECC Error\n' >>"$XR/dev/kmsg"
run_xid
check "a new Xid after the acknowledgement: exit status" "$rc" 2
check "a new Xid after the acknowledgement: drained" "$(node_state)" IDLE+DRAIN
run_check "$HEALTHY"
check "healthy after the Xid: resumed" "$(node_state)" IDLE

# scontrol failing is reported, not ignored
run_check "$HEALTHY" --scontrol /bin/false
check "scontrol fails: exit status" "$rc" 3

# slurmd runs it as its HealthCheckProgram; the scenario the wrapper uses is switched under it.
cat >"$TMP/healthcheck.sh" <<HC
#!/bin/sh
exec env SLURM_CONF=$S/slurm.conf GPUDOCTOR_NVML_LIB=$SIM_LIB NVML_SIM_SCENARIO=$TMP/current.json \
    GPUDOCTOR_CONFIG=/dev/null NVML_SIM_QUIET=1 $GPUDOCTOR slurm-check --only nvml >>$TMP/healthcheck.log 2>&1
HC
chmod 755 "$TMP/healthcheck.sh"
cp "$CRITICAL" "$TMP/current.json.new" && mv "$TMP/current.json.new" "$TMP/current.json"
write_conf "HealthCheckProgram=$TMP/healthcheck.sh
HealthCheckInterval=1
HealthCheckNodeState=ANY"
scontrol reconfigure
wait_state() { # wait_state STATE: until the node is in it (30 s at most)
    for i in $(seq 150); do
        [ "$(node_state)" = "$1" ] && return 0
        sleep 0.2
    done
    return 1
}
if [ "$(hostname -s)" = "$NODE" ]; then
    wait_state IDLE+DRAIN || fail "slurmd's health check did not drain the node: $(tail -3 "$TMP/healthcheck.log" 2>/dev/null)"
    check "health check: reason" "$(node_reason)" "$want_reason"
    cp "$HEALTHY" "$TMP/current.json.new" && mv "$TMP/current.json.new" "$TMP/current.json"
    wait_state IDLE || fail "slurmd's health check did not resume the node: $(tail -3 "$TMP/healthcheck.log")"
fi

finish
