#!/usr/bin/env bash
# Asking before acting: --interactive asks for each process and signals only those answered
# "y"; without --yes on a terminal, one question covers the whole plan, and anything but "y"
# signals nothing. With --json the plan goes to a pipe or a file, so before any question the
# plan's text is shown on stderr, where the question is: nobody approves processes unseen.
. "$SRC/tests/e2e/reap-lib.bash"

# before FILE REGEX1 REGEX2 WHAT: a line matching REGEX1 comes before the first matching REGEX2.
before() {
    local a b
    a=$(grep -nE -- "$2" "$1" | head -n1 | cut -d: -f1) || true
    b=$(grep -nE -- "$3" "$1" | head -n1 | cut -d: -f1) || true
    [ -n "$a" ] && [ -n "$b" ] && [ "$a" -lt "$b" ] ||
        { fail "$4: /$2/ (line ${a:-none}) not before /$3/ (line ${b:-none})"; sed 's/^/   /' "$1" | head -20; }
}

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
before "$TMP/ask.err" "^    stopped \(state T" "\[y/N\]" "--json: why each is signalled, before the questions"
[ "$(state_of "$first")" = T ] || fail "the declined $first was touched"
gone "$second" || fail "the accepted $second is still there"
check '[.freed[] | [.gpu_index, .before_bytes, .after_bytes]]' \
    "[[0, $((11 * GIB)), $((5 * GIB))]]" "$TMP/ask.out"

# On a terminal without --yes: one question; "n" (or nothing) leaves everything alone.
if command -v script >/dev/null; then
    cmd="\"$GPUDOCTOR\" reap --stopped --kill --window 0.3 --json >\"$TMP/tty.out\""
    printf 'n\n' | script -qec "$cmd" /dev/null >"$TMP/tty.log" 2>&1 || true
    has_line "$TMP/tty.log" "Signal 1 process\? \[y/N\]" "one question for the plan"
    before "$TMP/tty.log" "^  pid $first \(root\) sleep 300" "Signal 1 process\?" \
        "--json: the plan is shown on the terminal before the question"
    check "[.targets[] | [.pid, .result.outcome]]" "[[$first, \"declined\"]]" "$TMP/tty.out"
    [ "$(state_of "$first")" = T ] || fail "$first was touched after 'n'"
    printf 'y\n' | script -qec "$cmd" /dev/null >"$TMP/tty.log" 2>&1 || true
    check "[.targets[] | [.pid, .result.outcome]]" "[[$first, \"exited\"]]" "$TMP/tty.out"
    gone "$first" || fail "$first is still there after 'y'"
else
    echo "no script(1): the terminal check is skipped"
fi
finish
