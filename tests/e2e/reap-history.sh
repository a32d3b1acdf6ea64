#!/usr/bin/env bash
# Idleness proven by a history: a recording of `watch --record` over ~4 s, with an idle GPU
# process and a busy one (SM 90 %). procs --from the recording judges over all of it; reap
# --from plans from it at once: --idle 3s selects the idle one, --idle 1m (longer than the
# recording proves) selects nothing, and --from with --kill is refused. A live reap --history
# adds the recording's proof to its own short window, and ends the idle process; a history that
# ended long ago is refused.
. "$SRC/tests/e2e/reap-lib.bash"

start_sleep
idle=$SPAWNED
start_sleep
busy=$SPAWNED
scenario "$idle:0:6" "$busy:1:4:90"
export GPUDOCTOR_CONFIG=/dev/null

run rec watch --plain -n 0.5 -c 9 --record "$TMP/rec.jsonl"
status 0 "watch --record"
span=$(jq -s '[.[] | select(.t_ms != null) | .t_ms] | max - min' "$TMP/rec.jsonl")
[ "$span" -ge 3500 ] || fail "the recording spans $span ms, not 4 s"

run procs procs --from "$TMP/rec.jsonl" --json
status 0 "procs --from a recording"
check "[.processes[] | select(.pid == $idle or .pid == $busy) | [.pid, .verdict]] | sort" \
    "[[$idle, \"idle\"], [$busy, \"active\"]] | sort" "$TMP/procs.out"
# idle for (at least) the recording's span, the last reading's time on its clock
check "[.processes[] | select(.pid == $idle) | .idle_for_min_ms >= $span]" '[true]' "$TMP/procs.out"
check "[.processes[] | select(.pid == $busy) | .idle_for_min_ms]" '[null]' "$TMP/procs.out"

run plan reap --from "$TMP/rec.jsonl" --idle 3s --json
status 0 "reap --from --idle 3s"
check '[.targets[] | [.pid, .verdict, .disposition]]' "[[$idle, \"idle\", \"signal\"]]" "$TMP/plan.out"

run long reap --from "$TMP/rec.jsonl" --idle 1m --json
status 0 "reap --from --idle 1m"
check '[.targets[] | select(.disposition == "signal") | .pid]' '[]' "$TMP/long.out"

run refused reap --from "$TMP/rec.jsonl" --idle 3s --kill --yes
status 64 "--from with --kill"
has_line "$TMP/refused.err" "--from plans only" "why --kill is refused"
alive "$idle" || fail "pid $idle was signalled"

# The text plan says what proves it.
run text reap --from "$TMP/rec.jsonl" --idle 3s
has_line "$TMP/text.out" "^Would signal 1 process:" "the plan"
has_line "$TMP/text.out" "CPU 0\\.0 % over the [0-9]+s window" "the proof"
# Live, with the recording as history: --idle 3s over a 0.5 s window is proven by both together.
run nohist reap --idle 3s --window 0.5
status 64 "--idle longer than the window, without a history"
run hist reap --history "$TMP/rec.jsonl" --idle 3s --window 0.5 --json
status 0 "reap --history (dry run)"
check '[.targets[] | select(.disposition == "signal") | .pid]' "[$idle]" "$TMP/hist.out"
check "[.targets[] | select(.pid == $idle) | .evidence[] | select(startswith(\"idle for at least\"))] | length" \
    '1' "$TMP/hist.out"
run histlong reap --history "$TMP/rec.jsonl" --idle 1m --window 0.5 --json
check '[.targets[] | select(.disposition == "signal") | .pid]' '[]' "$TMP/histlong.out"
# A recording that ended an hour ago proves nothing about now.
jq -c 'if .schema then .time_ms -= 3600000 else . end' "$TMP/rec.jsonl" >"$TMP/old.jsonl"
run old reap --history "$TMP/old.jsonl" --idle 3s --window 0.5
status 3 "a stale history"
has_line "$TMP/old.err" "--history .*old.jsonl: it ended 1h0?m? before this run" "why a stale history is refused"
# And acting on it: the idle process ends, the busy one is left alone.
run act reap --history "$TMP/rec.jsonl" --idle 3s --window 0.5 --kill --yes --grace 2s --json
status 0 "reap --history --kill"
check "[.targets[] | select(.pid == $idle) | .result.outcome]" '["exited"]' "$TMP/act.out"
gone "$idle" || fail "pid $idle still runs"
alive "$busy" || fail "the busy pid $busy was signalled"
finish
