#!/usr/bin/env bash
# gpudoctor on real processes that hold something that looks like /dev/nvidia*: this script runs
# itself again in a private mount namespace with a tmpfs over /dev holding plain files named
# nvidia0, nvidia1, nvidiactl (no driver needed; the host's /dev is untouched), and in its own
# PID namespace, so that everything it starts ends with it, whatever happens. It checks the
# holders, their workers, a stopped holder, the view of a user that is not root (a throwaway
# user made with useradd), and that processes coming and going during the scan change nothing.
# Needs root; exit 77 (skipped) otherwise. Its holders are seen by every other test's scan of the
# live /proc (namespaces hide nothing from the parent), so:
# ctest: run serial
set -euo pipefail
[ "$(id -u)" = 0 ] || { echo "needs root (mount namespace, useradd)"; exit 77; }
command -v jq >/dev/null || { echo "jq not installed"; exit 77; }
if [ -z "${PROCS_LIVE_INNER:-}" ]; then
    unshare -m -p -f true 2>/dev/null || { echo "namespaces not allowed here"; exit 77; }
    PROCS_LIVE_INNER=1 exec unshare -m -p -f --kill-child --mount-proc --propagation private \
        bash "$0" "$@"
fi

TEST_USER=gpudoctor-test
made_user=
pids=()
tmp=$(mktemp -d)
cleanup() {
    for p in "${pids[@]}"; do kill -CONT "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    [ -n "$made_user" ] && userdel "$TEST_USER" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT

mount -t tmpfs -o mode=755 none /dev
mknod -m 666 /dev/null c 1 3
ln -s /proc/self/fd /dev/fd
touch /dev/nvidia0 /dev/nvidia1 /dev/nvidiactl
chmod 666 /dev/nvidia0 /dev/nvidia1 /dev/nvidiactl
chmod 755 "$tmp"

fails=0
expect() { # JSON FILTER WANTED
    local got
    got=$(jq -c "$2" <<<"$1")
    if [ "$got" != "$3" ]; then
        echo "FAIL: $2"
        echo "   got:    $got"
        echo "   wanted: $3"
        fails=$((fails + 1))
    fi
}

# Waits until pid runs sleep: its files are open then (the shell opens them, then execs).
became_sleep() {
    for _ in $(seq 100); do
        [ "$(cat /proc/"$1"/comm 2>/dev/null)" = sleep ] && return 0
        sleep 0.05
    done
    echo "pid $1 did not start sleep"
    exit 1
}

# A holder of GPU 0 and the control device, with CUDA_VISIBLE_DEVICES in its environment
CUDA_VISIBLE_DEVICES=0 sleep 300 3</dev/nvidia0 4</dev/nvidiactl &
holder=$!
pids+=("$holder")
# A trainer on GPU 1 with three data-loader workers that do not hold it
bash -c 'exec 3</dev/nvidia1; for i in 1 2 3; do sleep 300 3<&- & done; exec sleep 300' &
trainer=$!
pids+=("$trainer")
# A stopped holder
sleep 300 3</dev/nvidia0 &
stopped=$!
pids+=("$stopped")
became_sleep "$stopped"
kill -STOP "$stopped"

if ! id "$TEST_USER" >/dev/null 2>&1; then
    if command -v useradd >/dev/null && useradd -r -M -s /usr/sbin/nologin "$TEST_USER"; then
        made_user=1
    fi
fi
user_holder=
if id "$TEST_USER" >/dev/null 2>&1; then
    uid=$(id -u "$TEST_USER")
    setpriv --reuid="$uid" --regid="$uid" --clear-groups sleep 300 3</dev/nvidia1 &
    user_holder=$!
    pids+=("$user_holder")
fi

# The trainer starts its workers before it becomes sleep
became_sleep "$holder"
became_sleep "$trainer"
[ -n "$user_holder" ] && became_sleep "$user_holder"
mapfile -t workers < <(pgrep -P "$trainer" | sort -n)
for w in "${workers[@]}"; do became_sleep "$w"; done
[ "${#workers[@]}" -eq 3 ] || { echo "the trainer's workers did not start"; exit 1; }

out=$("$GPUDOCTOR" snapshot --only processes --window 0.4)
rec() { echo ".processes.processes[] | select(.pid == $1)"; }
expect "$out" "$(rec "$holder") | [.state, .comm, .cmdline, .user, .holds_ctl, [.gpus[] | [.minor, .holds_device]], .cuda_visible_devices, .ppid == $$]" \
    '["S","sleep","sleep 300","root",true,[[0,true]],"0",true]'
expect "$out" "$(rec "$holder") | .cpu_pct | type" '"number"'
expect "$out" "$(rec "$trainer") | [[.gpus[].minor], .children]" "[[1],[${workers[0]},${workers[1]},${workers[2]}]]"
for w in "${workers[@]}"; do
    expect "$out" "$(rec "$w") | [.ppid, (.gpus | length), .holds_ctl, .comm]" "[$trainer,0,false,\"sleep\"]"
done
expect "$out" "$(rec "$stopped") | [.state, [.gpus[].minor]]" '["T",[0]]'
expect "$out" "[$(rec $$)] | length" '0' # this script holds nothing
if [ -n "$user_holder" ]; then
    expect "$out" "$(rec "$user_holder") | [.user, [.gpus[].minor]]" "[\"$TEST_USER\",[1]]"

    # The same machine seen by that user: others' fds are closed to it, its own are not.
    mine=$(setpriv --reuid="$uid" --regid="$uid" --clear-groups "$GPUDOCTOR" snapshot --only processes)
    expect "$mine" '.processes.fd_denied > 0' 'true'
    expect "$mine" '[.collectors.processes.notes[] | select(test("^fds of [0-9]+ process(es)? unreadable: not root"))] | length' '1'
    expect "$mine" "[$(rec "$holder")] | length" '0'
    expect "$mine" "$(rec "$user_holder") | [.user, [.gpus[].minor]]" "[\"$TEST_USER\",[1]]"
else
    echo "no $TEST_USER user (useradd missing?): the non-root view is not checked"
fi

# Processes coming and going during the scan: every run succeeds and finds the same holders.
churn() {
    local end=$((SECONDS + 3))
    while [ $SECONDS -lt $end ]; do
        sleep 0.01 3</dev/nvidia0 &
        sleep 0.01 &
        wait
    done
}
churn &
churner=$!
pids+=("$churner")
for i in $(seq 10); do
    out=$("$GPUDOCTOR" snapshot --only processes) || { echo "FAIL: run $i under churn exited $?"; fails=$((fails + 1)); continue; }
    expect "$out" "[($(rec "$holder")), ($(rec "$trainer")) | .gpus[0].minor]" '[0,1]'
    expect "$out" '.processes.garbled' '0'
done
wait "$churner" || true

[ "$fails" -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "all live process checks passed"
