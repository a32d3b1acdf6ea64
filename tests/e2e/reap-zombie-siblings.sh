#!/usr/bin/env bash
# A parent that reaps neither of two defunct GPU processes (a launcher with two dead workers) is
# one target, signalled for both: the second child must not make reap check the first one
# against the second's start time, find it "no longer there", send nothing and report success;
# and the memory it frees, before and after, is both's, on both GPUs.
# (A parent whose defunct children are all gone when it is to be signalled: unit/test-reap-signal.)
# The script runs as a child subreaper, so orphaned zombies are reaped by it, as init would.
if [ -z "${REAP_SUBREAPER:-}" ]; then
    : "${HELPERS:?}"
    REAP_SUBREAPER=1 exec "$HELPERS/reap-target" subreaper bash "$0" "$@"
fi
. "$SRC/tests/e2e/reap-lib.bash"

start_helper zombie-parent-2
parent=$SPAWNED
read -r said z1 z2 <<<"$READY"
[ "$said" = "$parent" ] || fail "reap-target said $READY, its pid is $parent"
[ "$(state_of "$z1")" = Z ] && [ "$(state_of "$z2")" = Z ] ||
    fail "the children $z1 $z2 are not zombies: $(state_of "$z1") $(state_of "$z2")"
scenario "$z1:0:10" "$z2:1:5"

run dry reap --defunct --window 0.3 --json
status 0 "dry run"
check "[.targets[] | [.pid, .role, .disposition]]" "[[$parent, \"parent\", \"signal\"]]" \
    "$TMP/dry.out"
# What ending it frees is what both hold, and the plan says so.
check "[.targets[] | [(.gpus | sort), .used_bytes]]" "[[[0, 1], $((15 * GIB))]]" "$TMP/dry.out"
check "[.targets[].evidence[] | select(test(\"^also the parent of defunct process $z2, holding 5\\\\.0 GiB on GPU 1\"))] | length" \
    1 "$TMP/dry.out"

run kill reap --defunct --kill --yes --grace 2s --window 0.3 --json
status 0 "kill"
check "[.targets[] | [.pid, .result.outcome, .result.last_signal]]" \
    "[[$parent, \"exited\", 15]]" "$TMP/kill.out"
gone "$parent" || fail "the parent $parent of two defunct processes is still there"
gone "$z1" || fail "the zombie $z1 was not reaped after its parent ended"
gone "$z2" || fail "the zombie $z2 was not reaped after its parent ended"
check '[.freed[] | [.gpu_index, .before_bytes, .after_bytes]] | sort' \
    "[[0, $((11 * GIB)), $GIB], [1, $((6 * GIB)), $GIB]]" "$TMP/kill.out"
finish
