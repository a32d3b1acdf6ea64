#!/usr/bin/env bash
# reap --kill on real processes listed as GPU processes: one that ends on SIGTERM, one that
# ignores SIGTERM (SIGKILL after the grace period), and one that is not selected and must live
# on. Checks the outcomes, the action log on stderr, the dry run before (nothing signalled) and
# the GPU memory the simulator reports freed afterwards.
. "$SRC/tests/e2e/reap-lib.bash"

start_sleep
polite=$SPAWNED
start_helper ignore-term
stubborn=$SPAWNED
[ "$READY" = "$stubborn" ] || fail "reap-target said $READY, its pid is $stubborn"
start_sleep
bystander=$SPAWNED
scenario "$polite:0:20" "$stubborn:0:30" "$bystander:1:5"

# The dry run names both, signals nothing.
run dry reap --pid "$polite,$stubborn" --window 0.3 --json
status 0 "dry run"
check '[.dry_run, [.targets[] | [.pid, .disposition, .result]]]' \
    "[true, [[$polite, \"signal\", null], [$stubborn, \"signal\", null]]]" "$TMP/dry.out"
check '.freed' '[]' "$TMP/dry.out"
alive "$polite" || fail "the dry run ended $polite"
alive "$stubborn" || fail "the dry run ended $stubborn"
[ ! -s "$TMP/dry.err" ] || fail "the dry run logged actions: $(cat "$TMP/dry.err")"

run kill reap --pid "$polite,$stubborn" --kill --yes --grace 1s --window 0.3 --json
status 0 "kill"
check "[.targets[] | select(.pid == $polite) | .result | [.outcome, .last_signal]]" \
    '[["exited", 15]]' "$TMP/kill.out"
check "[.targets[] | select(.pid == $stubborn) | .result | [.outcome, .last_signal]]" \
    '[["killed", 9]]' "$TMP/kill.out"
# SIGKILL came only after the grace period
check "[.targets[] | select(.pid == $stubborn) | .result.elapsed_ms >= 1000]" '[true]' "$TMP/kill.out"
# GPU 0 held 1 + 20 + 30 GiB; both are gone: 1 GiB is left. GPU 1 was not touched.
check '[.freed[] | [.gpu_index, .before_bytes, .after_bytes]]' \
    "[[0, $((51 * GIB)), $GIB]]" "$TMP/kill.out"
gone "$polite" || fail "$polite is still there"
gone "$stubborn" || fail "$stubborn is still there"
alive "$bystander" || fail "the bystander $bystander was ended"

# The action log: one line per signal, with the identity, user, command and result.
has_line "$TMP/kill.err" "^gpudoctor reap: by=root pid=$polite start_ticks=[0-9]+ started=20[0-9-]+T[0-9:.]+Z user=\"root\" command=\"sleep 300\" signal=SIGTERM result=\"exited after SIGTERM" "log of $polite"
has_line "$TMP/kill.err" "pid=$stubborn .* signal=SIGTERM result=\"still running 1\.[0-9] s after SIGTERM\"" "log of SIGTERM to $stubborn"
has_line "$TMP/kill.err" "pid=$stubborn .* signal=SIGKILL result=\"exited\"" "log of SIGKILL to $stubborn"
[ "$(grep -c '^gpudoctor reap: ' "$TMP/kill.err")" = 3 ] || fail "expected 3 log lines: $(cat "$TMP/kill.err")"

# The text report says the same.
start_sleep
third=$SPAWNED
scenario "$third:1:7" "$bystander:1:5"
run text reap --pid "$third" --kill --yes --window 0.3
status 0 "text kill"
has_line "$TMP/text.out" "^Signalling 1 process:" "text header"
has_line "$TMP/text.out" "^  pid $third: exited after SIGTERM" "text result"
has_line "$TMP/text.out" "^  GPU 1: 13\.0 GiB → 6\.00? GiB \(7\.00? GiB freed\)" "text freed line"
alive "$bystander" || fail "the bystander $bystander was ended"
finish
