#!/usr/bin/env bash
# The prolog's and the epilog's less travelled paths, with a recording scontrol (no Slurm daemons:
# tests/e2e/slurm-jobs.sh runs the hooks under a real Slurm):
#  1. a /proc tree written here, four GPUs in the NVML simulator: GPU 0 used by a running job's
#     process (a slurmstepd above it), GPU 1 by an ended job's leftover, GPU 2 by a process
#     outside Slurm, GPU 3 holding 20 GiB that no process accounts for. The prolog starts a job
#     on GPU 0 and refuses 1, 2 and 3, each with its own drain reason; a node someone else
#     drained is left as it is; a failing scontrol still refuses. The epilog says what stays,
#     exits 1 when scontrol cannot drain (so that Slurm does) and 0 with --warn-only.
#  2. real processes in a job's cgroup (root, a writable cgroup v1 freezer), which record the
#     SIGTERMs they get: --reap ends a leftover that ignores SIGTERM with SIGKILL, not before
#     --grace has passed; another ended job's leftover on the same GPU gets no signal and drains
#     the node; memory that stays held after the reap drains it too; so does the job's own
#     process that ended on SIGTERM while NVML still lists it, named as the job's.
# ctest: timeout 120
. "$SRC/tests/fixtures/serve/common.bash"

GIB=1073741824
NODE=gpu-n1
R=$TMP/root
mkdir -p "$R/proc" "$R/etc" "$R/dev"
printf 'root:x:0:0:root:/root:/bin/sh\nalice:x:1000:1000::/home/alice:/bin/sh\nbob:x:1001:1001::/home/bob:/bin/sh\n' \
    >"$R/etc/passwd"
printf 'cpu  100 0 100 1000 0 0 0 0 0 0\nbtime 1764662400\nprocesses 4000\n' >"$R/proc/stat"

# proc PID PPID UID CGROUP DEVICE-MINOR|- ARGV...: one process of the tree; its command name is
# argv[0]'s (COMM=NAME: another, as a program that rewrites its argv has).
proc() {
    local pid=$1 ppid=$2 uid=$3 cg=$4 minor=$5 d=$R/proc/$1 comm
    shift 5
    comm=${COMM:-$(basename "$1" | cut -c1-15)}
    mkdir -p "$d/fd"
    printf '%s (%s) S %s %s %s 0 -1 4194560 1200 0 3 0 900 100 0 0 20 0 1 0 930000 1234567890 7500 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 3 0 0 0 0 0\n' \
        "$pid" "$comm" "$ppid" "$pid" "$pid" >"$d/stat"
    printf 'Name:\t%s\nState:\tS\nUid:\t%s\t%s\t%s\t%s\nGid:\t%s\t%s\t%s\t%s\nNSpid:\t%s\nThreads:\t1\n' \
        "$comm" "$uid" "$uid" "$uid" "$uid" "$uid" "$uid" "$uid" "$uid" "$pid" >"$d/status"
    printf '%s\0' "$@" >"$d/cmdline"
    printf '0::%s\n' "$cg" >"$d/cgroup"
    : >"$d/environ"
    if [ "$minor" != - ]; then
        ln -s /dev/nvidiactl "$d/fd/3"
        ln -s "/dev/nvidia$minor" "$d/fd/4"
    fi
}
proc 1 0 0 / - /sbin/init
COMM=slurmstepd proc 100 1 0 /system.slice/slurmstepd.scope/job_5001 - "slurmstepd: [5001.0]"
proc 101 100 1000 /system.slice/slurmstepd.scope/job_5001/step_0/user/task_0 0 python train.py
proc 200 1 1000 /system.slice/slurmstepd.scope/job_4999/step_0/user/task_0 1 python old.py
proc 300 1 1001 /user.slice/user-1001.slice/session-4.scope 2 python notebook.py
proc 400 1 1000 /system.slice/slurmstepd.scope/job_5002/step_0/user/task_0 0 python eval.py
proc 500 1 1001 /slurm/uid_1001/job_4998/step_0 1 python "$(printf 'x\033[2J\nReason=evil')"

# The simulator's four GPUs; held PID:GPU:GiB..., and extra GiB on GPU 3 that no process lists.
# sim FILE [PID:GPU:GIB ...]
sim() {
    local out=$1 procs='[]' t
    shift
    for t in "$@"; do
        procs=$(jq -c --argjson pid "${t%%:*}" --argjson gpu "$(echo "$t" | cut -d: -f2)" \
            --argjson b "$(($(echo "$t" | cut -d: -f3) * GIB))" '. + [{pid: $pid, gpu: $gpu, b: $b}]' <<<"$procs")
    done
    jq --argjson procs "$procs" --argjson extra "${EXTRA_GIB:-0}" --argjson gib $GIB '
        del(.timeline) | .processes_follow_proc = (env.FOLLOW == "1")
        | .gpus |= (.[0:4] | map(. as $g
            | ([$procs[] | select(.gpu == $g.index)]) as $mine
            | (($mine | map(.b) | add // 0) + (if $g.index == 3 then $extra * $gib else 0 end)) as $used
            | .processes = [$mine[] | {pid, used_bytes: .b, type: "compute", sm_util_pct: 0,
                mem_util_pct: 0, enc_util_pct: 0, dec_util_pct: 0}]
            | .util_gpu_pct = 0 | .mem_used_bytes = $used
            | .mem_free_bytes = (.mem_total_bytes - .mem_reserved_bytes - $used)))' \
        "$SRC/scenarios/healthy-8xh100.json" >"$out"
}
EXTRA_GIB=20 sim "$TMP/tree.json" 101:0:30 200:1:40 300:2:5 400:0:10

# A scontrol that records what it is asked: `show node` prints the node as $TMP/node says
# (STATE and REASON lines), `update` exits $TMP/update-status (0 when there is none) and says
# why as scontrol does.
SC=$TMP/scontrol
cat >"$SC" <<SH
#!/bin/sh
printf '%s\n' "\$*" >>$TMP/scontrol.log
if [ "\$1" = show ]; then
    . $TMP/node
    printf 'NodeName=%s Arch=x86_64 State=%s Reason=%s\n' "\$4" "\$STATE" "\$REASON"
    exit 0
fi
[ -e $TMP/update-status ] || exit 0
echo "slurm_update error: Invalid node name specified" >&2
exit \$(cat $TMP/update-status)
SH
chmod 755 "$SC"
node() { printf "STATE='%s'\nREASON='%s'\n" "$1" "${2:-(null)}" >"$TMP/node"; } # no ' in them
node IDLE

# hook NAME EXPECTED-STATUS prolog|epilog ARGS...: the hook on the tree, its output in $TMP/NAME.out
hook() {
    local name=$1 want=$2 cmd=slurm-$3 rc=0
    shift 3
    : >"$TMP/scontrol.log"
    NVML_SIM_SCENARIO=${SCEN:-$TMP/tree.json} SLURM_JOB_ID=5002 "$GPUDOCTOR" "$cmd" \
        --root "${ROOT:-$R}" --node "$NODE" --scontrol "$SC" "$@" >"$TMP/$name.out" 2>&1 || rc=$?
    check "$name: exit status ($(tr '\n' '|' <"$TMP/$name.out"))" "$rc" "$want"
}
has() { grep -qF -- "$2" "$TMP/$1.out" || fail "$1: no '$2' in: $(cat "$TMP/$1.out")"; }
hasnt() { ! grep -qF -- "$2" "$TMP/$1.out" || fail "$1: '$2' in: $(cat "$TMP/$1.out")"; }
drained_with() { # WHAT REASON: scontrol was asked to drain with exactly that reason
    check "$1: scontrol update" "$(grep '^update' "$TMP/scontrol.log")" \
        "update NodeName=$NODE State=DRAIN Reason=$2"
}
not_drained() {
    check "$1: no scontrol update" "$(grep -c '^update' "$TMP/scontrol.log")" 0
}

# ---- 1. the prolog on the tree ----
hook running 0 prolog --gpus 0
has running "job 5002: GPU 0 free of leftovers: start"
hasnt running "pid 101"
not_drained running

hook ended-job 1 prolog --gpus 1
has ended-job "job 5002: GPU 1: pid 200 (job 4999, alice: python old.py), 40.0 GiB: left over"
drained_with ended-job "gpudoctor: GPU 1 held by leftover pid 200 (job 4999, alice: python old.py)"

hook outside 1 prolog --gpus 2
has outside "GPU 2: pid 300 (no job, bob: python notebook.py), 5.0 GiB: left over"
drained_with outside "gpudoctor: GPU 2 held by leftover pid 300 (bob: python notebook.py)"

hook memory 1 prolog --gpus 3
has memory "job 5002: GPU 3: 20.0 GiB held by no listed process"
drained_with memory "gpudoctor: GPU 3 held by leftover memory: 20.0 GiB, no process listed"

# every GPU: the first leftover names the reason, the rest are counted; the running job's
# process and the job's own (400: its cgroup names this job) are not leftovers
hook every 1 prolog
drained_with every "gpudoctor: GPU 1 held by leftover pid 200 (job 4999, alice: python old.py) (+2 more)"
hasnt every "pid 101"

# the job's GPUs by UUID; a list naming no GPU of the node is said, and every GPU is looked at
UUID1=$(jq -r '.gpus[1].uuid' "$TMP/tree.json")
hook uuid 1 prolog --gpus "$UUID1" --dry-run
has uuid "would drain with reason: gpudoctor: GPU 1 held by leftover pid 200"
hook no-such-gpu 1 prolog --gpus 7 --dry-run
has no-such-gpu "--gpus=7: '7' is no GPU of this node; every GPU is looked at"
has no-such-gpu "(+2 more)"

# a hostile command line reaches scontrol's argument as one line of printable text
sim "$TMP/hostile.json" 500:1:8
SCEN=$TMP/hostile.json hook hostile 1 prolog --gpus 1
drained_with hostile "gpudoctor: GPU 1 held by leftover pid 500 (job 4998, bob: python x?[2J?Reason=evil)"

# someone else's drain stays; gpudoctor's own older one is replaced
node IDLE+DRAIN "bad fan [admin@2026-12-01T10:00:00]"
hook theirs 1 prolog --gpus 1
has theirs "already drained by someone else, left as it is"
not_drained theirs
node IDLE+DRAIN "gpudoctor: GPU 2 held by leftover pid 300 (bob: python notebook.py)"
hook ours 1 prolog --gpus 1
drained_with ours "gpudoctor: GPU 1 held by leftover pid 200 (job 4999, alice: python old.py)"
node IDLE

# scontrol fails: the job is refused all the same, and the failure is said
echo 1 >"$TMP/update-status"
hook prolog-scontrol-fails 1 prolog --gpus 1
has prolog-scontrol-fails "scontrol update NodeName=$NODE failed (exit 1): slurm_update error: Invalid node name specified"
hasnt prolog-scontrol-fails "drained with reason"

# NVML cannot be read: the job starts (the health check judges a broken node)
rc=0
NVML_SIM_SCENARIO=$TMP/tree.json SLURM_JOB_ID=5002 "$GPUDOCTOR" slurm-prolog --root "$R" \
    --node "$NODE" --scontrol "$SC" --nvml-lib "$TMP/no-such-libnvidia-ml.so.1" >"$TMP/nonvml.out" 2>&1 || rc=$?
check "prolog without NVML: exit status" "$rc" 0
has nonvml "could not check: NVML"

# ---- the epilog on the tree: job 5002's own process 400 still holds GPU 0 ----
hook epilog-scontrol-fails 1 epilog --gpus 0 --wait 0s
has epilog-scontrol-fails "scontrol update NodeName=$NODE failed (exit 1): slurm_update error"
has epilog-scontrol-fails "job 5002: GPU 0: pid 400 (job 5002, alice: python eval.py), 10.0 GiB: the job's own, still there"
hasnt epilog-scontrol-fails "pid 101"
rm "$TMP/update-status"
hook epilog-drains 0 epilog --gpus 0 --wait 0s
drained_with epilog-drains "gpudoctor: GPU 0 held by leftover pid 400 (job 5002, alice: python eval.py)"
hook epilog-warn 0 epilog --gpus 0 --wait 0s --warn-only
has epilog-warn "warn only: node not drained"
not_drained epilog-warn
hook epilog-relative 1 epilog --gpus 0 --wait 0s --scontrol scontrol
has epilog-relative "--scontrol scontrol: give an absolute path"
hook epilog-other-gpus 0 epilog --gpus 2,3 --wait 0s --dry-run
has epilog-other-gpus "would drain with reason: gpudoctor: GPU 2 held by leftover pid 300 (bob: python notebook.py) (+1 more)"
not_drained epilog-other-gpus

# The job's own processes are reaped, never a protected program among them (the MPS server or
# nvidia-persistenced started inside a job's cgroup): the epilog does not name pids as an
# operator's --pid does, which would lift the protected list.
R0=$R
R=$TMP/root-protected
cp -a "$R0" "$R"
proc 410 1 0 /system.slice/slurmstepd.scope/job_5002/step_0/user/task_0 2 /usr/bin/nvidia-persistenced
proc 420 1 1000 /system.slice/slurmstepd.scope/job_5002/step_0/user/task_0 2 python eval2.py
sim "$TMP/tree-protected.json" 410:2:1 420:2:8
ROOT=$R SCEN=$TMP/tree-protected.json hook epilog-protected 0 epilog --gpus 2 --wait 0s --reap --dry-run
has epilog-protected "dry run: would not touch pid 410"
has epilog-protected "dry run: would end pid 420"
hasnt epilog-protected "would end pid 410"
R=$R0

# ---- 2. real processes: --reap, SIGKILL after --grace, what stays held drains ----
FREEZER=/sys/fs/cgroup/freezer
if [ "$(id -u)" != 0 ] || [ ! -w "$FREEZER" ]; then
    echo "part 2 skipped: needs root and a writable cgroup v1 freezer hierarchy"
    finish
fi
CG=$FREEZER/slurm_gpudoctor_edges_$$
PIDS=()
cleanup_procs() {
    local p
    for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
    sleep 0.2
    [ -d "$CG" ] && find "$CG" -depth -type d -exec rmdir {} + 2>/dev/null
    return 0
}
CLEANUPS+=(cleanup_procs)
# spawn JOB [ignore-term|exit-on-term]: a process of JOB in the job's cgroup, a child of this
# shell; its pid in $P. The last two write each SIGTERM they get ("TERM <ns>") to a file that
# signals and term_ns read, and the time in ns to one that heartbeat reads every 50 ms while they
# live; ignore-term carries on after SIGTERM, exit-on-term exits 0.
declare -A REC # pid -> its files' prefix
NREC=0
cat >"$TMP/leftover.sh" <<'SH'
trap 'echo TERM $(date +%s%N) >>"$1.signals"; [ "$2" = exit-on-term ] && exit 0' TERM
while :; do
    sleep 0.05
    date +%s%N >"$1.alive"
done
SH
spawn() {
    local rec=$TMP/rec.$((NREC += 1))
    mkdir -p "$CG/uid_0/job_$1"
    case "${2:-}" in
    ignore-term | exit-on-term)
        : >"$rec.signals"
        "$HELPERS/reap-target" holder bash "$TMP/leftover.sh" "$rec" "$2" </dev/null >/dev/null 2>&1 &
        P=$!
        REC[$P]=$rec
        for _ in $(seq 100); do [ -s "$rec.alive" ] && break; sleep 0.02; done # the trap is set
        ;;
    *)
        "$HELPERS/reap-target" holder sleep 300 </dev/null >/dev/null 2>&1 &
        P=$!
        ;;
    esac
    PIDS+=("$P")
    echo "$P" >"$CG/uid_0/job_$1/cgroup.procs"
}
# ended PID: waits for PID (a child of this shell) and says how it ended: "exit N", "signal N"
ended() {
    local st=0
    { wait "$1"; } 2>/dev/null || st=$?
    if [ "$st" -gt 128 ]; then echo "signal $((st - 128))"; else echo "exit $st"; fi
}
signals() { cut -d' ' -f1 "${REC[$1]}.signals" | tr '\n' ' ' | sed 's/ $//'; } # "TERM", "": got
term_ns() { cut -d' ' -f2 "${REC[$1]}.signals" | head -1; }                    # when TERM came
heartbeat() { cat "${REC[$1]}.alive"; }                                         # last sign of life
alive() { kill -0 "$1" 2>/dev/null && [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" != Z ]; }

# the job's own leftover ignores SIGTERM: SIGKILL, not before --grace has passed, then the GPU
# is free
spawn 5002 ignore-term
STUBBORN=$P
FOLLOW=1 sim "$TMP/live.json" "$STUBBORN:0:10"
SCEN=$TMP/live.json ROOT=/ hook reap-kill 0 epilog --gpus 0 --reap --grace 1s --wait 3s
has reap-kill "pid $STUBBORN: killed"
has reap-kill "job 5002: GPU 0 free"
not_drained reap-kill
check "reap-kill: how pid $STUBBORN ended" "$(ended "$STUBBORN")" "signal 9"
check "reap-kill: the signals pid $STUBBORN caught" "$(signals "$STUBBORN")" TERM
# it lived on for the grace after SIGTERM (the heartbeat comes every 50 ms)
lived=$((($(heartbeat "$STUBBORN") - $(term_ns "$STUBBORN")) / 1000000))
[ "$lived" -ge 850 ] && [ "$lived" -lt 4000 ] ||
    fail "reap-kill: pid $STUBBORN lived ${lived} ms after SIGTERM, not the 1 s grace"

# the job's own leftover and another ended job's on the same GPU: only the own one ends, the
# other gets no signal and drains the node
spawn 5002 exit-on-term
OWN=$P
spawn 4999 exit-on-term
OTHER=$P
FOLLOW=1 sim "$TMP/live.json" "$OWN:0:10" "$OTHER:0:20"
SCEN=$TMP/live.json ROOT=/ hook reap-other 0 epilog --gpus 0 --reap --grace 1s --wait 2s
has reap-other "pid $OWN: exited"
has reap-other "job 5002: GPU 0: pid $OTHER (job 4999, root: bash $TMP/leftover.sh ${REC[$OTHER]} exit-on-term), 20.0 GiB: left over"
drained_with reap-other "gpudoctor: GPU 0 held by leftover pid $OTHER (job 4999, root: bash $TMP/leftover.sh ${REC[$OTHER]} exit-on-term)"
check "reap-other: how the job's own pid $OWN ended" "$(ended "$OWN")" "exit 0"
check "reap-other: the signals the job's own pid $OWN caught" "$(signals "$OWN")" TERM
alive "$OTHER" || fail "reap-other: the epilog ended another job's process ($OTHER)"
check "reap-other: the signals another job's pid $OTHER caught" "$(signals "$OTHER")" ""
kill -KILL "$OTHER"
ended "$OTHER" >/dev/null

# memory that no process accounts for stays held after the reap: drained, naming it
spawn 5002 exit-on-term
OWN=$P
EXTRA_GIB=12 FOLLOW=1 sim "$TMP/live.json" "$OWN:3:10"
SCEN=$TMP/live.json ROOT=/ hook reap-memory 0 epilog --gpus 3 --reap --grace 1s --wait 2s
has reap-memory "pid $OWN: exited"
has reap-memory "job 5002: GPU 3: 12.0 GiB held by no listed process"
drained_with reap-memory "gpudoctor: GPU 3 held by leftover memory: 12.0 GiB, no process listed"
check "reap-memory: the signals pid $OWN caught" "$(signals "$OWN")" TERM
check "reap-memory: how pid $OWN ended" "$(ended "$OWN")" "exit 0"

# the job's own process ends on SIGTERM but NVML still lists it (the driver has not given its
# memory back): after --wait the node is drained for that pid
spawn 5002 exit-on-term
OWN=$P
FOLLOW=0 sim "$TMP/live.json" "$OWN:1:30"
SCEN=$TMP/live.json ROOT=/ hook reap-still-listed 0 epilog --gpus 1 --reap --grace 1s --wait 1s
has reap-still-listed "pid $OWN: exited"
has reap-still-listed "job 5002: GPU 1: pid $OWN (job 5002, root: bash $TMP/leftover.sh ${REC[$OWN]} exit-on-term), 30.0 GiB: the job's own, still there"
drained_with reap-still-listed "gpudoctor: GPU 1 held by leftover pid $OWN (job 5002, root: bash $TMP/leftover.sh ${REC[$OWN]} exit-on-term)"
check "reap-still-listed: the signals pid $OWN caught" "$(signals "$OWN")" TERM
check "reap-still-listed: how pid $OWN ended" "$(ended "$OWN")" "exit 0"

finish
