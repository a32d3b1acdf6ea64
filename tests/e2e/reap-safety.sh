#!/usr/bin/env bash
# What reap refuses, even when named by pid and told --kill --yes: PID 1, kernel threads, the
# shell that runs gpudoctor (an ancestor), gpudoctor itself, and a process that uses no GPU.
# Each is listed as a GPU process by the simulator, so only the safety checks stand between it
# and the signal. PID 1 is checked in a PID namespace of its own, whose init is a shell of this
# test. Then the usage errors that keep a careless command line from doing harm.
. "$SRC/tests/e2e/reap-lib.bash"

# An ancestor: the shell running this script is gpudoctor's parent.
scenario "$$:0:3"
run ancestor reap --pid $$ --kill --yes --window 0 --json
status 2 "an ancestor"
check '[.targets[] | [.pid, .disposition, .refusal]]' "[[$$, \"refused\", \"ancestor\"]]" \
    "$TMP/ancestor.out"
[ ! -s "$TMP/ancestor.err" ] || fail "something was logged: $(cat "$TMP/ancestor.err")"

# gpudoctor itself: a shell writes the scenario with its own pid, then becomes gpudoctor.
export -f scenario
export GIB
RC=0
bash -c 'scenario "$$:1:3"; exec "$GPUDOCTOR" reap --pid $$ --kill --yes --window 0 --json' \
    </dev/null \
    >"$TMP/self.out" 2>"$TMP/self.err" || RC=$?
status 2 "gpudoctor itself"
check '[.targets[] | [.disposition, .refusal]]' '[["refused", "self"]]' "$TMP/self.out"

# Kernel threads (PF_KTHREAD, 0x00200000, in stat field 9), where this PID namespace shows them:
# two of them, kthreadd (pid 2) first when it is one.
is_kthread() {
    local s rest
    s=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
    rest=${s##*) }
    read -ra f <<<"$rest"
    (( ${f[6]:-0} & 0x00200000 ))
}
kthreads=()
for d in /proc/2 /proc/[0-9]*; do
    p=${d#/proc/}
    is_kthread "$p" && kthreads+=("$p")
    [ "${#kthreads[@]}" -ge 2 ] && break
done
if [ "${#kthreads[@]}" -ge 1 ]; then
    scenario "${kthreads[0]}:0:1" "${kthreads[-1]}:1:1"
    run kthread reap --pid "${kthreads[0]},${kthreads[-1]}" --kill --yes --window 0 --json
    status 2 "kernel threads"
    check '[.targets[] | .refusal] | unique' '["kernel-thread"]' "$TMP/kthread.out"
    check '[.targets[] | .pid] | sort' "[${kthreads[0]}, ${kthreads[-1]}] | unique" \
        "$TMP/kthread.out"
else
    echo "no kernel threads visible here: that check is skipped"
fi

# A process that uses no GPU, named by pid: reap ends GPU processes only.
sleep 300 &
plain=$!
PIDS+=("$plain")
scenario
run notgpu reap --pid "$plain" --kill --yes --window 0 --json
status 2 "a process that uses no GPU"
check '[.targets[] | [.pid, .refusal, .advice[0]]]' \
    "[[$plain, \"not-gpu\", \"not a GPU process (nor a worker of one): reap ends only those; use kill\"]]" \
    "$TMP/notgpu.out"
alive "$plain" || fail "a process that uses no GPU was signalled"
# It is named by what /proc says of it now: its owner and command, not "(?) ?".
check "[.targets[] | select(.pid == $plain) | [.user, .command]]" "[[\"$(id -un)\",\"sleep 300\"]]" \
    "$TMP/notgpu.out"

# NVML lists that pid, but the process here has no NVIDIA device open: in a container NVML's host
# pid names someone else (or the number was reused). Not NVML's process: never signalled, by
# --pid or by a policy, whatever it looks like.
scenario "$plain:0:30"
run foreign reap --pid "$plain" --kill --yes --window 0 --json
status 2 "NVML's pid, another process here"
check '[.targets[] | [.pid, .disposition, .refusal]]' "[[$plain, \"refused\", \"not-visible\"]]" \
    "$TMP/foreign.out"
check '.targets[0].why | test("has no NVIDIA device open: it is not NVML.s process")' 'true' \
    "$TMP/foreign.out"
run foreign-idle reap --idle 1s --orphaned --stopped --kill --yes --window 1s --json
check "[.targets[] | select(.pid == $plain)]" '[]' "$TMP/foreign-idle.out"
alive "$plain" || fail "a process NVML's pid names by mistake was signalled"

# PID 1, in a PID namespace whose init is a shell of this test (never the machine's).
if unshare -p -f --mount-proc true 2>/dev/null; then
    RC=0
    unshare -p -f --mount-proc bash -c 'scenario "1:0:5"; rc=0
        "$GPUDOCTOR" reap --pid 1 --kill --yes --window 0 --json || rc=$?
        echo "init still here" >&2; exit $rc' </dev/null >"$TMP/init.out" \
        2>"$TMP/init.err" || RC=$?
    status 2 "PID 1"
    check '[.targets[] | [.pid, .disposition, .refusal]]' '[[1, "refused", "pid-1"]]' \
        "$TMP/init.out"
    has_line "$TMP/init.err" "^init still here$" "PID 1 lived on"
else
    echo "no PID namespaces here: the PID 1 check is skipped"
fi

# Usage errors: exit 64, nothing collected, nothing signalled.
run noyes reap --kill --window 0
status 64 "--kill, stdin not a terminal, no --yes"
has_line "$TMP/noyes.err" "needs --yes" "why --kill is refused"
run fromkill reap --from /dev/null --kill --yes
status 64 "--from with --kill"
run idlewin reap --idle 10m --window 1s
status 64 "--idle longer than the window"
has_line "$TMP/idlewin.err" "needs a sampling window at least that long" "why --idle is refused"
run badmem reap --min-mem lots
status 64 "--min-mem lots"
run badpid reap --pid 12x
status 64 "--pid 12x"
run badre reap --match '('
status 64 "--match ("
run badgrace reap --grace forever
status 64 "--grace forever"
run extra reap now
status 64 "an argument"
finish
