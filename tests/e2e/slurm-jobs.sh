#!/usr/bin/env bash
# `gpudoctor slurm-prolog` and `slurm-epilog` run by a real Slurm (slurm-lib.bash: slurmctld,
# slurmd and munge on loopback) as its Prolog and Epilog, on the NVML simulator. A real job ends
# and leaves a real process behind, in the job's cgroup (the cgroup a job's task plugin gives its
# processes, made by the test since the test Slurm tracks no cgroups), holding 70 GiB of GPU 3 in
# the simulator:
#  - the epilog finds it and, without --reap, drains the node with a reason naming the pid and
#    the job; slurm-check keeps that drain while the leftover holds the GPU;
#  - resumed by hand, the next job's prolog refuses to start on the held GPU: exit status 1,
#    Slurm requeues the job and the node is drained; the prolog lets the job start when its GPUs
#    (--gpus) are not the held one, and with --warn-only;
#  - the leftover killed, slurm-check resumes the node and the held job runs;
#  - with --reap, the epilog ends the job's own leftover itself (SIGTERM, pidfd-pinned) and the
#    node stays in service;
#  - with --reap, a leftover that ignores SIGTERM gets SIGKILL once --grace has passed, and GPU
#    memory that stays held after it (no process listed) drains the node, naming the GiB;
#  - an epilog whose scontrol fails exits 1, and Slurm drains the node itself ("Epilog error").
# ctest: timeout 300
. "$SRC/tests/fixtures/serve/common.bash"
. "$SRC/tests/e2e/slurm-lib.bash"
for tool in sbatch squeue; do
    command -v "$tool" >/dev/null || { echo "SKIP: $tool is not installed"; exit 77; }
done
FREEZER=/sys/fs/cgroup/freezer
[ -w "$FREEZER" ] || { echo "SKIP: no writable cgroup v1 freezer hierarchy to put a job's leftover in"; exit 77; }

GIB=1073741824
CG=$FREEZER/slurm_gpudoctor_test_$$ # "slurm..." then "job_N": what gpudoctor reads a job from
LEFTOVERS=()
cleanup_jobs() {
    local p d
    for p in "${LEFTOVERS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
    scancel --quiet --user=root 2>/dev/null || true
    sleep 0.2
    if [ -d "$CG" ]; then
        # the deepest first; a cgroup with a process left in it cannot go
        find "$CG" -depth -type d -exec rmdir {} + 2>/dev/null || true
    fi
}
CLEANUPS+=(cleanup_jobs)

# scenario PID|none [GIB]: the healthy server's GPUs; GPU 3 held (70 GiB) by PID when one is
# given, and GIB more (default 0) that no process accounts for. Listed processes leave the lists
# when they exit (processes_follow_proc).
HEALTHY=$TMP/healthy.json
jq 'del(.timeline) | .processes_follow_proc = true | .gpus |= map(.processes = []
    | .util_gpu_pct = 0 | .mem_used_bytes = 0 | .mem_free_bytes = (.mem_total_bytes - .mem_reserved_bytes))' \
    "$SRC/scenarios/healthy-8xh100.json" >"$HEALTHY"
scenario() {
    if [ "$1" = none ]; then
        cp "$HEALTHY" "$TMP/current.json.new"
    else
        jq --argjson p "$1" --argjson b $((70 * GIB)) --argjson x $((${2:-0} * GIB)) '.gpus[3].processes = [{pid: $p, used_bytes: $b,
            type: "compute", sm_util_pct: 0, mem_util_pct: 0, enc_util_pct: 0, dec_util_pct: 0}]
            | .gpus[3].mem_used_bytes = $b + $x
            | .gpus[3].mem_free_bytes = (.gpus[3].mem_total_bytes - .gpus[3].mem_reserved_bytes - $b - $x)' \
            "$HEALTHY" >"$TMP/current.json.new"
    fi
    mv "$TMP/current.json.new" "$TMP/current.json"
}
scenario none

# leftover JOB [ignore-term]: a process of job JOB that outlives it (its cgroup names the job), a
# child of this shell (which reaps it when it ends); its pid in $LEFTOVER. ignore-term: it writes
# "TERM <ns>" to $TMP/signals for each SIGTERM and carries on, and its last sign of life (the
# time in ns, every 50 ms) to $TMP/alive.
cat >"$TMP/stubborn.sh" <<'SH'
trap 'echo TERM $(date +%s%N) >>"$1/signals"' TERM
while :; do
    sleep 0.05
    date +%s%N >"$1/alive"
done
SH
leftover() {
    local dir=$CG/uid_0/job_$1
    mkdir -p "$dir"
    if [ "${2:-}" = ignore-term ]; then
        : >"$TMP/signals"
        "$HELPERS/reap-target" holder bash "$TMP/stubborn.sh" "$TMP" </dev/null >/dev/null 2>&1 &
        LEFTOVER=$!
        for i in $(seq 100); do [ -s "$TMP/alive" ] && break; sleep 0.02; done # its trap is set
    else
        "$HELPERS/reap-target" holder sleep 300 </dev/null >/dev/null 2>&1 &
        LEFTOVER=$!
    fi
    LEFTOVERS+=("$LEFTOVER")
    echo "$LEFTOVER" >"$dir/cgroup.procs"
}
# ended PID: waits for PID (a child of this shell) and says how it ended: "exit N", "signal N"
ended() {
    local st=0
    { wait "$1"; } 2>/dev/null || st=$?
    if [ "$st" -gt 128 ]; then echo "signal $((st - 128))"; else echo "exit $st"; fi
}
alive() { kill -0 "$1" 2>/dev/null && [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" != Z ]; }

# The wrappers slurmd runs: gpudoctor on the simulator, its output kept, then its exit status
# ("exit status N", which the wrapper exits with); the environment slurmd gave is kept too.
wrapper() { # NAME COMMAND-ARGS...
    local name=$1
    shift
    cat >"$TMP/$name.sh" <<SH
#!/bin/sh
env | grep -E '^(SLURM_JOB_ID|SLURM_JOB_USER|SLURM_JOB_GPUS|CUDA_VISIBLE_DEVICES)=' >$TMP/$name.env
env SLURM_CONF=$S/slurm.conf GPUDOCTOR_NVML_LIB=$SIM_LIB NVML_SIM_SCENARIO=$TMP/current.json \\
    GPUDOCTOR_CONFIG=/dev/null NVML_SIM_QUIET=1 $GPUDOCTOR $* >>$TMP/$name.log 2>&1
rc=\$?
echo "exit status \$rc" >>$TMP/$name.log
exit \$rc
SH
    chmod 755 "$TMP/$name.sh"
}
wrapper prolog slurm-prolog
wrapper epilog slurm-epilog --wait 2s
write_conf "Prolog=$TMP/prolog.sh
Epilog=$TMP/epilog.sh
SchedulerParameters=nohold_on_prolog_fail"
scontrol reconfigure

# submit NAME: a job that runs until $TMP/NAME.go exists; prints its id.
submit() {
    sbatch --parsable --chdir="$TMP" --output=/dev/null --job-name="$1" \
        --wrap="while [ ! -e $TMP/$1.go ]; do sleep 0.1; done"
}
job_state() { squeue -h -j "$1" -o %T 2>/dev/null; }
wait_job_state() { # JOB STATE...: until the job is in one of them (30 s at most)
    local job=$1 st i want
    shift
    for i in $(seq 150); do
        st=$(job_state "$job")
        for want in "$@"; do [ "$st" = "$want" ] && return 0; done
        [ -z "$st" ] && [ "$1" = GONE ] && return 0
        sleep 0.2
    done
    echo "job $job: $st" >&2
    return 1
}
wait_state() { # STATE: until the node is in it (30 s at most)
    for i in $(seq 150); do
        [ "$(node_state)" = "$1" ] && return 0
        sleep 0.2
    done
    return 1
}

# ---- 1. a job leaves a process on GPU 3; the epilog drains the node, naming it ----
J1=$(submit one)
wait_job_state "$J1" RUNNING || fail "job 1 did not start: $(tail -3 "$TMP/prolog.log" 2>/dev/null)"
# slurmd runs the prolog as the job starts: its log may come a moment after RUNNING
for i in $(seq 50); do
    grep -q "job $J1: every GPU free of leftovers: start" "$TMP/prolog.log" 2>/dev/null && break
    sleep 0.2
done
grep -q "job $J1: every GPU free of leftovers: start" "$TMP/prolog.log" || fail "prolog 1: $(cat "$TMP/prolog.log")"
grep -q "^SLURM_JOB_ID=$J1\$" "$TMP/prolog.env" || fail "the prolog did not get SLURM_JOB_ID: $(cat "$TMP/prolog.env")"
leftover "$J1"
L1=$LEFTOVER
scenario "$L1"
touch "$TMP/one.go"
wait_state IDLE+DRAIN || fail "the epilog did not drain the node ($(node_state)): $(cat "$TMP/epilog.log")"
want="gpudoctor: GPU 3 held by leftover pid $L1 (job $J1, root: sleep 300)"
check "epilog: drain reason" "$(node_reason)" "$want"
grep -q "job $J1: GPU 3: pid $L1 (job $J1, root: sleep 300), 70.0 GiB: the job's own, still there" \
    "$TMP/epilog.log" || fail "epilog log: $(cat "$TMP/epilog.log")"
grep -q "^SLURM_JOB_ID=$J1\$" "$TMP/epilog.env" || fail "the epilog did not get SLURM_JOB_ID"
alive "$L1" || fail "the epilog ended the leftover without --reap"

# slurm-check keeps a leftover's drain while the leftover holds the GPU
rc=0
NVML_SIM_SCENARIO=$TMP/current.json "$GPUDOCTOR" slurm-check --only nvml --node "$NODE" \
    >"$TMP/sc.out" 2>&1 || rc=$?
check "slurm-check with the leftover: still drained" "$(node_state)" IDLE+DRAIN
grep -q "drained for a GPU a leftover held, and it is still held: no change" "$TMP/sc.out" ||
    fail "slurm-check: $(cat "$TMP/sc.out")"

# ---- 2. resumed by hand, the next job's prolog refuses the held GPU ----
scontrol update NodeName="$NODE" State=RESUME
J2=$(submit two)
wait_state IDLE+DRAIN || fail "the prolog did not drain the node ($(node_state)): $(cat "$TMP/prolog.log")"
grep -q "job $J2: GPU 3: pid $L1 (job $J1, root: sleep 300), 70.0 GiB: left over" "$TMP/prolog.log" ||
    fail "prolog 2 does not name the leftover: $(cat "$TMP/prolog.log")"
grep -q "job $J2: refused: $want" "$TMP/prolog.log" || fail "prolog 2: $(cat "$TMP/prolog.log")"
wait_job_state "$J2" PENDING || fail "job 2 was not requeued"
[ -e "$TMP/two.go" ] && fail "job 2 ran"
sleep 1
reason=$(node_reason)
case "$reason" in
"$want" | "Prolog error") ;;
*) fail "prolog: drain reason '$reason'" ;;
esac
echo "after the prolog's refusal, Slurm's reason: $reason"

# The prolog directly, as slurmd runs it: the job's GPUs decide; --warn-only and --dry-run.
prolog() { # EXPECTED-STATUS NAME ARGS...
    local want=$1 name=$2 rc=0
    shift 2
    NVML_SIM_SCENARIO=$TMP/current.json SLURM_JOB_ID=999 "$GPUDOCTOR" slurm-prolog --node "$NODE" \
        "$@" >"$TMP/$name.out" 2>&1 || rc=$?
    check "prolog $name: exit status" "$rc" "$want"
}
prolog 0 other-gpus --gpus 0,1 --dry-run
grep -q "job 999: GPUs 0, 1 free of leftovers: start" "$TMP/other-gpus.out" || fail "prolog --gpus 0,1: $(cat "$TMP/other-gpus.out")"
prolog 1 held-gpu --gpus 3 --dry-run
grep -q "would drain with reason: $want" "$TMP/held-gpu.out" || fail "prolog --gpus 3: $(cat "$TMP/held-gpu.out")"
SLURM_JOB_GPUS=3 prolog 1 env-gpus --dry-run
SLURM_JOB_GPUS=2 prolog 0 env-other --dry-run
prolog 0 warn-only --gpus 3 --warn-only
grep -q "warn only: starts anyway" "$TMP/warn-only.out" || fail "--warn-only: $(cat "$TMP/warn-only.out")"
rc=0
env -u SLURM_JOB_ID "$GPUDOCTOR" slurm-prolog >"$TMP/nojob.out" 2>&1 || rc=$?
check "prolog without a job: exit status" "$rc" 64

# ---- 3. the leftover gone, slurm-check resumes the node and the held job runs ----
kill -KILL "$L1"
wait "$L1" 2>/dev/null || true
scenario none
if [ "$(node_reason)" = "$want" ]; then
    NVML_SIM_SCENARIO=$TMP/current.json "$GPUDOCTOR" slurm-check --only nvml --node "$NODE" \
        >"$TMP/sc.out" 2>&1 || true
    check "slurm-check after the leftover: resumed" "$(node_state)" IDLE
else
    scontrol update NodeName="$NODE" State=RESUME # Slurm's own "Prolog error" is not ours to undo
fi
# A requeued job waits out a begin time Slurm gives it (reason BeginTime); the test does not
wait_job_state "$J2" PENDING RUNNING || true
echo "job 2 after the resume: $(squeue -h -j "$J2" -o '%T %r')"
scontrol update JobId="$J2" StartTime=now 2>/dev/null || true
wait_job_state "$J2" RUNNING || fail "job 2 did not run after the node was resumed: $(squeue -h -j "$J2" -o '%T %r')"

# ---- 4. with --reap, the epilog ends the job's own leftover and the node stays in service ----
wrapper epilog slurm-epilog --reap --grace 2s --wait 3s
leftover "$J2"
L2=$LEFTOVER
scenario "$L2"
touch "$TMP/two.go"
wait_job_state "$J2" GONE COMPLETED || fail "job 2 did not end"
for i in $(seq 100); do
    alive "$L2" || break
    sleep 0.1
done
alive "$L2" && fail "the epilog did not end the leftover: $(tail -5 "$TMP/epilog.log")"
grep -q "pid $L2: exited" "$TMP/epilog.log" || fail "epilog --reap: $(tail -5 "$TMP/epilog.log")"
grep -q "job $J2: GPUs\? .*free\|job $J2: every GPU free" "$TMP/epilog.log" ||
    fail "epilog --reap: no 'free': $(tail -5 "$TMP/epilog.log")"
sleep 1
check "epilog --reap: the node in service" "$(node_state)" IDLE

# ---- 5. --reap: SIGKILL after --grace for a leftover that ignores SIGTERM; memory that stays
# held after it drains the node ----
wrapper epilog slurm-epilog --reap --grace 1s --wait 2s
: >"$TMP/epilog.log"
J3=$(submit three)
wait_job_state "$J3" RUNNING || fail "job 3 did not start: $(tail -3 "$TMP/prolog.log")"
leftover "$J3" ignore-term
L3=$LEFTOVER
scenario "$L3" 6
touch "$TMP/three.go"
wait_state IDLE+DRAIN || fail "epilog --reap: memory stays held, the node is not drained ($(node_state)): $(cat "$TMP/epilog.log")"
check "epilog --reap, memory stays: drain reason" "$(node_reason)" \
    "gpudoctor: GPU 3 held by leftover memory: 6.0 GiB, no process listed"
grep -q "pid $L3: killed" "$TMP/epilog.log" || fail "epilog --reap: pid $L3 not killed: $(cat "$TMP/epilog.log")"
grep -q "job $J3: GPU 3: 6.0 GiB held by no listed process" "$TMP/epilog.log" ||
    fail "epilog --reap: the memory is not named: $(cat "$TMP/epilog.log")"
grep -qx "exit status 0" "$TMP/epilog.log" || fail "epilog --reap, drained itself: $(grep 'exit status' "$TMP/epilog.log")"
alive "$L3" && { fail "epilog --reap: pid $L3 is still alive"; kill -KILL "$L3"; }
check "epilog --reap: how pid $L3 ended" "$(ended "$L3")" "signal 9"
check "epilog --reap: the signals pid $L3 caught" "$(cut -d' ' -f1 "$TMP/signals" | tr '\n' ' ')" "TERM "
lived=$((($(cat "$TMP/alive") - $(cut -d' ' -f2 "$TMP/signals" | sed -n 1p | grep . || echo 0)) / 1000000))
[ "$lived" -ge 850 ] && [ "$lived" -lt 4000 ] ||
    fail "epilog --reap: pid $L3 lived ${lived} ms after SIGTERM, not the 1 s grace"

# ---- 6. scontrol fails: the epilog exits 1, and Slurm drains the node for the failed epilog ----
scenario none
scontrol update NodeName="$NODE" State=RESUME
wait_state IDLE || fail "the node did not come back: $(node_state)"
cat >"$TMP/scontrol-fails" <<'SH'
#!/bin/sh
echo "slurm_load_node error: Unable to contact slurm controller (connect failure)" >&2
exit 1
SH
chmod 755 "$TMP/scontrol-fails"
wrapper epilog slurm-epilog --wait 1s --scontrol "$TMP/scontrol-fails"
: >"$TMP/epilog.log"
J4=$(submit four)
wait_job_state "$J4" RUNNING || fail "job 4 did not start: $(tail -3 "$TMP/prolog.log")"
leftover "$J4"
L4=$LEFTOVER
scenario "$L4"
touch "$TMP/four.go"
wait_state IDLE+DRAIN || fail "a failed epilog did not drain the node ($(node_state)): $(cat "$TMP/epilog.log")"
grep -qx "exit status 1" "$TMP/epilog.log" || fail "epilog, scontrol fails: $(cat "$TMP/epilog.log")"
grep -q "scontrol show node -o $NODE failed (exit 1): slurm_load_node error" "$TMP/epilog.log" ||
    fail "epilog, scontrol fails: scontrol's message not said: $(cat "$TMP/epilog.log")"
check "epilog, scontrol fails: Slurm's own drain reason" "$(node_reason)" "Epilog error"
alive "$L4" || fail "the epilog without --reap ended pid $L4"

finish
