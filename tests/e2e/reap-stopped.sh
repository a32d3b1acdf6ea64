#!/usr/bin/env bash
# A stopped GPU process (kill -STOP, as Ctrl-Z leaves it): procs calls it stopped, reap --stopped
# selects it and nothing else, and ends it: SIGTERM alone would wait until the process runs
# again, so reap sends SIGCONT after it. A stopped process that also ignores SIGTERM gets
# SIGKILL after the grace period.
. "$SRC/tests/e2e/reap-lib.bash"

start_sleep
stopped=$SPAWNED
kill -STOP "$stopped"
start_helper ignore-term
stubborn=$SPAWNED
kill -STOP "$stubborn"
start_sleep
running=$SPAWNED
scenario "$stopped:0:12" "$stubborn:1:3" "$running:0:2"
for _ in $(seq 100); do
    [ "$(state_of "$stopped")$(state_of "$stubborn")" = TT ] && break
    sleep 0.02
done

run procs procs --window 0.3 --json
status 0 "procs"
check "[.processes[] | [.pid, .state, .verdict]] | sort" \
    "[[$stopped, \"T\", \"stopped\"], [$running, \"S\", \"idle\"], [$stubborn, \"T\", \"stopped\"]] | sort" \
    "$TMP/procs.out"

run dry reap --stopped --window 0.3 --json
status 0 "dry run"
check '[.targets[] | [.pid, .verdict, .disposition, .role]] | sort' \
    "[[$stopped, \"stopped\", \"signal\", \"self\"], [$stubborn, \"stopped\", \"signal\", \"self\"]] | sort" \
    "$TMP/dry.out"
[ "$(state_of "$stopped")" = T ] || fail "the dry run changed $stopped: $(state_of "$stopped")"

run kill reap --stopped --kill --yes --grace 0.5s --window 0.3 --json
status 0 "kill"
check "[.targets[] | select(.pid == $stopped) | .result.outcome]" '["exited"]' "$TMP/kill.out"
check "[.targets[] | select(.pid == $stubborn) | .result.outcome]" '["killed"]' "$TMP/kill.out"
check '[.freed[] | [.gpu_index, .before_bytes, .after_bytes]] | sort' \
    "[[0, $((15 * GIB)), $((3 * GIB))], [1, $((4 * GIB)), $GIB]]" "$TMP/kill.out"
gone "$stopped" || fail "stopped $stopped is still there ($(state_of "$stopped"))"
gone "$stubborn" || fail "stopped $stubborn is still there ($(state_of "$stubborn"))"
alive "$running" || fail "the running $running was ended"
has_line "$TMP/kill.err" "pid=$stopped .*signal=SIGTERM result=\"exited after SIGTERM" "log of $stopped"

# Nothing stopped any more: nothing to do.
run again reap --stopped --window 0.3
status 0 "nothing left"
has_line "$TMP/again.out" "^Nothing to reap" "nothing left"
finish
