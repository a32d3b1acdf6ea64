#!/usr/bin/env bash
# Asking before acting: --interactive asks for each process and signals only those answered
# "y"; without --yes on a terminal, one question covers the whole plan, and anything but "y"
# signals nothing.
. "$SRC/tests/e2e/reap-lib.bash"

start_sleep
first=$SPAWNED
start_sleep
second=$SPAWNED
kill -STOP "$first" "$second"
scenario "$first:0:4" "$second:0:6"
sleep 0.1

RC=0
printf 'n\ny\n' | "$GPUDOCTOR" reap --stopped --interactive --window 0.3 --json \
    >"$TMP/ask.out" 2>"$TMP/ask.err" || RC=$?
status 0 "interactive"
check "[.targets[] | [.pid, .result.outcome]]" \
    "[[$first, \"declined\"], [$second, \"exited\"]]" "$TMP/ask.out"
[ "$(grep -c '\[y/N\] [ny]$' "$TMP/ask.err")" = 2 ] || fail "expected two questions: $(cat "$TMP/ask.err")"
has_line "$TMP/ask.err" "Signal pid $first \(root\) sleep 300\? \[y/N\]" "the question names the process"
[ "$(state_of "$first")" = T ] || fail "the declined $first was touched"
gone "$second" || fail "the accepted $second is still there"
check '[.freed[] | [.gpu_index, .before_bytes, .after_bytes]]' \
    "[[0, $((11 * GIB)), $((5 * GIB))]]" "$TMP/ask.out"

# On a terminal without --yes: one question; "n" (or nothing) leaves everything alone.
if command -v script >/dev/null; then
    cmd="\"$GPUDOCTOR\" reap --stopped --kill --window 0.3 --json >\"$TMP/tty.out\""
    printf 'n\n' | script -qec "$cmd" /dev/null >"$TMP/tty.log" 2>&1 || true
    has_line "$TMP/tty.log" "Signal 1 process\? \[y/N\]" "one question for the plan"
    check "[.targets[] | [.pid, .result.outcome]]" "[[$first, \"declined\"]]" "$TMP/tty.out"
    [ "$(state_of "$first")" = T ] || fail "$first was touched after 'n'"
    printf 'y\n' | script -qec "$cmd" /dev/null >"$TMP/tty.log" 2>&1 || true
    check "[.targets[] | [.pid, .result.outcome]]" "[[$first, \"exited\"]]" "$TMP/tty.out"
    gone "$first" || fail "$first is still there after 'y'"
else
    echo "no script(1): the terminal check is skipped"
fi
finish
