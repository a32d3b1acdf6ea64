#!/usr/bin/env bash
# GPU-process discovery at 1,000 and 10,000 real processes: gpudoctor's processes collector side
# by side with lsof and find doing the same search (who has /dev/nvidia* open?).
#
#   bench/procs-discovery.bench.sh [SIZES...]        (default: 1000 10000; needs root)
#
# Environment: GPUDOCTOR (the binary; default build/gpudoctor), RUNSTAT (tests/helpers/runstat
# from the build, optional), RUNS (timed runs per tool, default 3), HOLDERS (processes holding
# the device at each size, default 64).
#
# Method: everything runs in new mount and PID namespaces (unshare --kill-child). A tmpfs over
# /dev holds nvidia0 and nvidiactl as plain files, so processes can hold "/dev/nvidia0" on a
# machine without the driver, and a machine with one is not touched. A small spawner forks the
# processes; each holds one file open: HOLDERS of them /dev/nvidia0, the rest a regular file.
# The PID namespace's own /proc shows exactly those processes, and when the script ends, however
# it ends (Ctrl-C included), the kernel kills every process in the namespace. Output: Markdown.
set -euo pipefail
cd "$(dirname "$0")/.."

sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(1000 10000)
RUNS=${RUNS:-3}
HOLDERS=${HOLDERS:-64}
GPUDOCTOR=$(realpath "${GPUDOCTOR:-build/gpudoctor}")
RUNSTAT=${RUNSTAT:-}
[ -n "$RUNSTAT" ] && RUNSTAT=$(realpath "$RUNSTAT")

if [ -z "${PROCS_BENCH_INNER:-}" ]; then
    echo "## GPU process discovery"
    echo
fi
if [ "$(id -u)" != 0 ]; then
    echo "(skipped: needs root for the mount and PID namespaces that keep the test processes apart)"
    exit 0
fi
if [ ! -x "$GPUDOCTOR" ]; then
    echo "(skipped: $GPUDOCTOR not built)"
    exit 0
fi

if [ -z "${PROCS_BENCH_INNER:-}" ]; then
    tmp=$(mktemp -d)
    ns=
    cleanup() {
        # unshare --kill-child: its end is the PID namespace's end, and every process's in it
        [ -n "$ns" ] && kill -TERM "$ns" 2>/dev/null && wait "$ns" 2>/dev/null
        rm -rf "$tmp"
    }
    trap cleanup EXIT
    trap 'exit 130' INT TERM
    if ! unshare -m -p --kill-child true 2>/dev/null; then
        echo "(skipped: mount and PID namespaces are not allowed here)"
        exit 0
    fi
    if command -v cc >/dev/null && cc -O2 -o "$tmp/spawn" bench/spawn.c 2>/dev/null; then
        :
    else
        echo "(skipped: a C compiler is needed to build the process spawner)"
        exit 0
    fi
    PROCS_BENCH_INNER=1 SPAWN="$tmp/spawn" TMPD="$tmp" GPUDOCTOR="$GPUDOCTOR" RUNSTAT="$RUNSTAT" \
        RUNS="$RUNS" HOLDERS="$HOLDERS" \
        unshare -m -p --fork --kill-child --mount-proc --propagation private \
        bash "$0" "${sizes[@]}" &
    ns=$!
    wait "$ns"
    rc=$?
    ns=
    exit $rc
fi

# ---- inside the namespaces: this shell is PID 1 ----
. bench/ns-inside.bash

ms_now() { echo $(($(date +%s%N) / 1000000)); }
# median wall time in ms of RUNS runs of a command (output discarded), after one warm-up
time_ms() {
    if [ -n "$RUNSTAT" ] && [ -x "$RUNSTAT" ]; then
        "$RUNSTAT" -n "$RUNS" -w 1 -- "$@" | sed -n 's/.*wall_ms_median=\([0-9.]*\).*/\1/p'
        return
    fi
    local t=() i s
    "$@" >/dev/null 2>&1 || true
    for ((i = 0; i < RUNS; i++)); do
        s=$(ms_now)
        "$@" >/dev/null 2>&1 || true
        t+=($(($(ms_now) - s)))
    done
    printf '%s\n' "${t[@]}" | sort -n | sed -n "$((RUNS / 2 + 1))p"
}
# (lsof exits 1 when a file it was given has no holder; find when a process left meanwhile)
find_holders() { find /proc/[0-9]*/fd -lname '/dev/nvidia*' 2>/dev/null || true; }
lsof_holders() { lsof -n -P -w /dev/nvidia0 /dev/nvidiactl 2>/dev/null || true; }
gpudoctor_holders() { "$GPUDOCTOR" snapshot --only processes; }
has_lsof=1
command -v lsof >/dev/null || has_lsof=

echo "Goal: 10,000 processes in under 100 ms, faster than lsof and find. Each process holds one"
echo "file open; $HOLDERS of them hold /dev/nvidia0. Processes run in their own PID namespace, with a"
echo "tmpfs /dev holding nvidia0 as a plain file (no driver needed). Wall time of whole runs, median"
echo "of $RUNS after a warm-up; \`collector\` is the processes collector's own time. The commands:"
echo "\`gpudoctor snapshot --only processes\` (which also reads each GPU process's status, command"
echo "line, environment, cgroup and maps), \`lsof -n -P -w /dev/nvidia0 /dev/nvidiactl\`,"
echo "\`find /proc/[0-9]*/fd -lname '/dev/nvidia*'\`. A null system call costs $("$SPAWN" cost) µs on"
echo "this machine; the scan is bound by system calls (about 6 + open files per process)."
echo
echo "| processes | holders found (gpudoctor / lsof / find) | gpudoctor ms | collector ms | lsof ms | find ms |"
echo "|---|---|---|---|---|---|"
pid_max=$(cat /proc/sys/kernel/pid_max)
for n in "${sizes[@]}"; do
    if [ "$n" -ge $((pid_max - 1000)) ]; then
        echo "| $n | (skipped: pid_max is $pid_max) | | | | |"
        continue
    fi
    exec {spawner}< <(exec "$SPAWN" "$n" "$HOLDERS" /dev/nvidia0 "$TMPD/data")
    spawner_pid=$!
    read -r made <&"$spawner"
    # the children open their file just after they are forked: wait until the holders have
    for _ in $(seq 200); do
        [ "$(find_holders | wc -l)" -ge "$HOLDERS" ] && break
        sleep 0.05
    done
    json=$(gpudoctor_holders)
    found_g=$(jq '[.processes.processes[] | select(any(.gpus[]; .holds_device))] | length' <<<"$json")
    collector_ms=$(jq '.collectors.processes.elapsed_us / 1000 | . * 10 | round / 10' <<<"$json")
    found_f=$(find_holders | wc -l)
    g_ms=$(time_ms "$GPUDOCTOR" snapshot --only processes)
    f_ms=$(time_ms bash -c "find /proc/[0-9]*/fd -lname '/dev/nvidia*'")
    if [ -n "$has_lsof" ]; then
        found_l=$(lsof_holders | awk 'NR > 1 {print $2}' | sort -u | wc -l)
        l_ms=$(time_ms lsof -n -P -w /dev/nvidia0 /dev/nvidiactl)
    else
        found_l="-"
        l_ms="(no lsof)"
    fi
    echo "| $made | $found_g / $found_l / $found_f | $g_ms | $collector_ms | $l_ms | $f_ms |"
    # End the spawner and its children (every process here but this shell), and reap them.
    exec {spawner}<&-
    kill -KILL "$spawner_pid" 2>/dev/null || true
    for p in /proc/[0-9]*; do
        p=${p#/proc/}
        if [ "$p" != 1 ] && [ "$p" != "$BASHPID" ]; then kill -KILL "$p" 2>/dev/null || true; fi
    done
    wait 2>/dev/null || true
    while [ "$(find /proc -maxdepth 1 -name '[0-9]*' | wc -l)" -gt 4 ]; do
        sleep 0.05
    done
done
