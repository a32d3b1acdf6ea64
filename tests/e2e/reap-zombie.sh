#!/usr/bin/env bash
# Defunct GPU processes, which no signal can end (they are dead already):
#  - a zombie whose living parent does not reap it: reap --defunct signals the parent, says so,
#    and once the parent is gone the zombie is reaped and its memory freed;
#  - a process whose main thread exited while another thread runs on (state Z, still alive):
#    reap --defunct ends the process itself.
# The script runs as a child subreaper, so orphaned zombies are reaped by it, as init would.
if [ -z "${REAP_SUBREAPER:-}" ]; then
    : "${HELPERS:?}"
    REAP_SUBREAPER=1 exec "$HELPERS/reap-target" subreaper bash "$0" "$@"
fi
. "$SRC/tests/e2e/reap-lib.bash"

start_helper zombie-parent
parent=$SPAWNED
zombie=${READY#* }
[ "${READY% *}" = "$parent" ] || fail "reap-target said $READY, its pid is $parent"
[ "$(state_of "$zombie")" = Z ] || fail "the child $zombie is not a zombie: $(state_of "$zombie")"
start_helper zombie-leader
leader=$SPAWNED
for _ in $(seq 100); do [ "$(state_of "$leader")" = Z ] && break; sleep 0.02; done
[ "$(state_of "$leader")" = Z ] || fail "$leader's main thread did not exit: $(state_of "$leader")"
start_sleep
bystander=$SPAWNED
scenario "$zombie:0:10" "$leader:1:4" "$bystander:1:2"

run procs procs --window 0.3 --json
check "[.processes[] | select(.pid == $zombie or .pid == $leader) | [.pid, .verdict]] | sort" \
    "[[$zombie, \"defunct\"], [$leader, \"defunct\"]] | sort" "$TMP/procs.out"

run dry reap --defunct --window 0.3 --json
status 0 "dry run"
# The zombie is reached through its parent; the process with a live thread is ended itself.
check "[.targets[] | [.pid, .role, .gpu_pid, .verdict, .disposition]] | sort" \
    "[[$parent, \"parent\", $zombie, \"defunct\", \"signal\"], [$leader, \"self\", $leader, \"defunct\", \"signal\"]] | sort" \
    "$TMP/dry.out"
check "[.targets[] | select(.pid == $parent) | .why | test(\"^parent of defunct process $zombie \\\\(holding 10\\\\.0 GiB on GPU 0\\\\), which it does not reap: ending it lets init reap $zombie\")]" \
    '[true]' "$TMP/dry.out"
check "[.targets[] | select(.pid == $leader) | .why | test(\"main thread exited but 1 other thread still runs\")]" \
    '[true]' "$TMP/dry.out"
run text reap --defunct --window 0.3
has_line "$TMP/text.out" "^  pid $parent \(root\) .*reap-target zombie-parent" "text: the parent"
has_line "$TMP/text.out" "^    parent of defunct process $zombie" "text: why the parent"

run kill reap --defunct --kill --yes --grace 2s --window 0.3 --json
status 0 "kill"
check "[.targets[] | [.pid, .result.outcome]] | sort" \
    "[[$parent, \"exited\"], [$leader, \"exited\"]] | sort" "$TMP/kill.out"
gone "$parent" || fail "the parent $parent is still there"
gone "$zombie" || fail "the zombie $zombie was not reaped after its parent ended"
gone "$leader" || fail "$leader is still there"
alive "$bystander" || fail "the bystander $bystander was ended"
# What the zombie and the half-dead process held is free again.
check '[.freed[] | [.gpu_index, .before_bytes, .after_bytes]] | sort' \
    "[[0, $((11 * GIB)), $GIB], [1, $((7 * GIB)), $((3 * GIB))]]" "$TMP/kill.out"
finish
