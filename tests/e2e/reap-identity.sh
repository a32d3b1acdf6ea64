#!/usr/bin/env bash
# What reap selected is checked again on the live process just before the signal, through the
# pidfd that pins it. A --root fixture tree shows real pids with other start times (as if each
# pid had been reused between the scan and the signal): reap must abort those targets and say
# so, and signal nothing. The same fixtures show defunct processes that no signal can help (a
# thread stuck in the driver, in state D; a zombie whose parent is init): reap gives the advice
# and signals nothing, even with --kill.
. "$SRC/tests/e2e/reap-lib.bash"

FIX=$TMP/root
mkdir -p "$FIX/proc" "$FIX/etc"
cp /etc/passwd "$FIX/etc/passwd"
grep '^btime ' /proc/stat >"$FIX/proc/stat"

# fake PID [STATE] [PPID] [TICKS_DELTA] [THREAD_STATE]: /proc/PID in the fixture, copied from
# the live process, with the state, parent and start time changed as asked.
fake() {
    local pid=$1 state=${2:-} ppid=${3:-} delta=${4:-0} tstate=${5:-} s head rest d=$FIX/proc/$1
    local -a f
    s=$(cat "/proc/$pid/stat")
    head=${s%%) *}
    rest=${s#*) }
    read -ra f <<<"$rest"
    [ -n "$state" ] && f[0]=$state
    [ -n "$ppid" ] && f[1]=$ppid
    f[19]=$((f[19] + delta)) # field 22, the start time in ticks
    mkdir -p "$d/task/$pid" "$d/fd"
    ln -s /dev/nvidiactl "$d/fd/100" # a GPU process has its devices open
    echo "$head) ${f[*]}" >"$d/stat"
    cp "/proc/$pid/status" "/proc/$pid/cgroup" "$d/"
    cp "/proc/$pid/cmdline" "$d/cmdline"
    [ -n "$tstate" ] && f[0]=$tstate
    echo "$head) ${f[*]}" >"$d/task/$pid/stat"
}

start_sleep
reused=$SPAWNED
fake "$reused" S "" 100
scenario "$reused:0:9"
run changed reap --root "$FIX" --pid "$reused" --kill --yes --window 0 --json
status 2 "a pid that is another process at signal time"
check '[.targets[] | [.pid, .disposition, .result.outcome, .result.last_signal]]' \
    "[[$reused, \"signal\", \"changed\", 0]]" "$TMP/changed.out"
check ".targets[0].result.detail | test(\"^pid $reused is another process now \\\\(start time [0-9]+, the one selected: [0-9]+\\\\): not signalled\$\")" \
    'true' "$TMP/changed.out"
alive "$reused" || fail "the process behind a changed pid was signalled"
[ "$(state_of "$reused")" = S ] || fail "$reused changed state: $(state_of "$reused")"
has_line "$TMP/changed.err" "^gpudoctor reap: .*pid=$reused .*signal=none result=\"pid $reused is another process now" "the abort is logged"
[ "$(grep -c 'signal=SIG' "$TMP/changed.err" || true)" = 0 ] || fail "a signal was logged: $(cat "$TMP/changed.err")"
check '.freed' '[]' "$TMP/changed.out"

# The same in the text report.
run changedtext reap --root "$FIX" --pid "$reused" --kill --yes --window 0
status 2 "text"
has_line "$TMP/changedtext.out" "^  pid $reused: pid $reused is another process now" "text result"

# Defunct, one thread in state D: nothing helps but a reset (or reboot); nothing is signalled.
start_sleep
stuck=$SPAWNED
fake "$stuck" Z "" 0 D
start_sleep
orphan=$SPAWNED
fake "$orphan" Z 1 0 Z
scenario "$stuck:0:9" "$orphan:1:6"
run stuck reap --root "$FIX" --defunct --kill --yes --window 0 --json
status 1 "killing cannot help"
check '[.targets[] | [.pid, .disposition, .result.outcome]] | sort' \
    "[[$stuck, \"cannot-help\", \"refused\"], [$orphan, \"cannot-help\", \"refused\"]] | sort" \
    "$TMP/stuck.out"
check "[.targets[] | select(.pid == $stuck) | .why | test(\"1 thread stuck in the kernel \\\\(state D\")]" \
    '[true]' "$TMP/stuck.out"
check "[.targets[] | select(.pid == $stuck) | .advice[0]]" \
    '["sudo nvidia-smi --gpu-reset -i 0   # only once no other process uses GPU 0 (gpudoctor procs --gpu 0)"]' \
    "$TMP/stuck.out"
check "[.targets[] | select(.pid == $orphan) | .why | test(\"its parent is init, which reaps at once\")]" \
    '[true]' "$TMP/stuck.out"
check "[.targets[] | select(.pid == $orphan) | .advice[-1] | startswith(\"# \") and contains(\"then sudo reboot\")]" '[true]' \
    "$TMP/stuck.out"
alive "$stuck" || fail "a process killing cannot help was signalled"
alive "$orphan" || fail "a process killing cannot help was signalled"
[ ! -s "$TMP/stuck.err" ] || fail "something was logged: $(cat "$TMP/stuck.err")"
run stucktext reap --root "$FIX" --defunct --window 0
status 1 "dry run, killing cannot help"
has_line "$TMP/stucktext.out" "^Killing cannot help \(2\):" "text section"
has_line "$TMP/stucktext.out" "^      sudo nvidia-smi --gpu-reset -i 1 " "text advice"
finish
