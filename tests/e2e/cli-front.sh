#!/usr/bin/env bash
# The shared command front, from the outside: every command parses the options it shares with
# others the same way (a bad value is status 64 and one message naming the option, whatever comes
# before or after it), 'gpudoctor help COMMAND' is COMMAND --help, --from says which collection
# options it makes pointless, durations take days and compounds and refuse hex, and the text
# output follows --color, --width, $COLUMNS and the locale's character set.
set -uo pipefail
: "${GPUDOCTOR:?}" "${SRC:?}"
export GPUDOCTOR_CONFIG=/dev/null LC_ALL=C.UTF-8
unset NO_COLOR COLUMNS
. "$SRC/tests/e2e/lib.bash"
S=$SRC/tests/scenarios
SNAP=$S/stopped-holder/snapshot.json
run() { # run ARGS...: RC, OUT, ERR
    "$GPUDOCTOR" "$@" >"$tmp/out" 2>"$tmp/err"
    RC=$?
    OUT=$(cat "$tmp/out")
    ERR=$(cat "$tmp/err")
}
status() { [ "$RC" = "$1" ] || fail "$2: exit $RC, expected $1; stderr: $ERR"; }
has() { grep -qF -- "$2" <<<"$1" || fail "$3: expected '$2' in: $(head -c 400 <<<"$1")"; }
lacks() { ! grep -qF -- "$2" <<<"$1" || fail "$3: did not expect '$2' in: $(head -c 400 <<<"$1")"; }
one_line() { [ "$(wc -l <"$tmp/err")" = 1 ] || fail "$1: wanted one line on stderr: $ERR"; }

# A bad shared value is a usage error whatever option came before it (serve lost the status of a
# good collection option followed by a bad own option: issue 11).
run serve --window 0 --threads 0
status 64 "serve --window 0 --threads 0"
has "$ERR" "gpudoctor serve: --threads: '0' is not a number from 1 to 64" "serve --threads 0"
run serve --threads 0 --window 0
status 64 "serve --threads 0 --window 0"
run serve --root / --window 0 --interval 0
status 64 "serve --root / --window 0 --interval 0"
for c in check snapshot procs reap serve slurm-check; do
    run "$c" --window 0 --timeout 0x10
    status 64 "$c --timeout 0x10"
    has "$ERR" "gpudoctor $c: --timeout: '0x10' is not a duration" "$c --timeout 0x10"
    one_line "$c --timeout 0x10"
    run "$c" --window 2h
    status 64 "$c --window 2h"
    has "$ERR" "gpudoctor $c: --window: 2h is longer than an hour" "$c --window 2h"
done
# each command takes exactly its groups
run snapshot --json
status 64 "snapshot --json (not one of its options)"
has "$ERR" "unrecognized option '--json'" "snapshot --json"
run procs --only nvml
status 64 "procs --only (it chooses its collectors)"
run watch --width 100
status 64 "watch --width (the terminal decides)"
run fleet --width 100 "$SNAP"
status 64 "fleet --width (its lines are rows, never wrapped)"
has "$ERR" "unrecognized option '--width'" "fleet --width"
run serve --from "$SNAP"
status 64 "serve --from"

# help COMMAND is COMMAND --help; help alone is --help
for c in check explain snapshot procs reap watch serve slurm-check; do
    "$GPUDOCTOR" help "$c" >"$tmp/a" 2>&1 || fail "help $c: status $?"
    "$GPUDOCTOR" "$c" --help >"$tmp/b" 2>&1
    cmp -s "$tmp/a" "$tmp/b" || fail "help $c differs from $c --help"
done
"$GPUDOCTOR" help >"$tmp/a" && "$GPUDOCTOR" --help >"$tmp/b" && cmp -s "$tmp/a" "$tmp/b" ||
    fail "help differs from --help"
run help no-such-command
status 64 "help no-such-command"
has "$ERR" "gpudoctor: unknown command 'no-such-command'" "help no-such-command"
# the shared options' help is one text, the same in every command that takes them
for c in check procs reap; do
    "$GPUDOCTOR" "$c" --help | grep -A2 -- '^  --from FILE' >"$tmp/from.$c"
done
cmp -s "$tmp/from.check" "$tmp/from.procs" && cmp -s "$tmp/from.check" "$tmp/from.reap" ||
    fail "--from's help differs between commands"
"$GPUDOCTOR" procs --help | grep -- '--window DUR      sample over DUR (default 1s;' >/dev/null ||
    fail "procs --help: --window's default is not procs' 1s"

# --from: the collection options it makes pointless are named, the verdict is the file's
run check --from "$SNAP" --root /nonexistent --window 5s
status 2 "check --from --root --window"
has "$ERR" "gpudoctor check: --window, --root have no effect with --from" "check --from --root"
one_line "check --from --root --window"
run procs --from "$SNAP" --timeout 1h30m
status 0 "procs --from --timeout 1h30m"
has "$ERR" "gpudoctor procs: --timeout has no effect with --from" "procs --from --timeout"
run check --from "$SNAP"
[ -z "$ERR" ] || fail "check --from alone said: $ERR"
# an empty name (an unset variable) is a usage error that says so, not ": No such file"
run check --from ""
status 64 "check --from ''"
has "$ERR" "gpudoctor check: --from: an empty file name" "check --from ''"
# durations: days and compounds are durations
run reap --from "$SNAP" --idle 7d --window 7d
status 64 "reap --idle 7d --window 7d: longer than an hour"
has "$ERR" "--window: 7d is longer than an hour" "reap --window 7d"
run reap --from "$SNAP" --idle 2m30s --json
[ "$RC" -lt 64 ] || fail "reap --idle 2m30s: exit $RC: $ERR"

# Colour: auto is never into a pipe; always is, for less -R; never and --no-color are never.
run check --from "$SNAP"
grep -q $'\033\[' "$tmp/out" && fail "colour into a pipe"
run check --from "$SNAP" --color=always
grep -q $'\033\[1;31mCRITICAL' "$tmp/out" || fail "--color=always: no colour into a pipe"
NO_COLOR=1 run check --from "$SNAP" --color
grep -q $'\033\[' "$tmp/out" || fail "--color (always) gave way to NO_COLOR"
run check --from "$SNAP" --color=sometimes
status 64 "--color=sometimes"
has "$ERR" "--color: 'sometimes' is not one of always, auto, never" "--color=sometimes"
if command -v script >/dev/null; then
    script -qec "$GPUDOCTOR check --from $SNAP --color=never" /dev/null >"$tmp/tty" 2>&1
    grep -q $'\033\[' "$tmp/tty" && fail "--color=never on a terminal"
    script -qec "$GPUDOCTOR check --from $SNAP --color=auto" /dev/null >"$tmp/tty" 2>&1
    grep -q $'\033\[1;31mCRITICAL' "$tmp/tty" || fail "--color=auto: no colour on a terminal"
fi

# Width: the terminal's; off one $COLUMNS, else 80; --width wins; lines are wrapped to it.
# longest FILE: its longest line in characters (colour codes and carriage returns left out)
longest() {
    tr -d '\r' <"$1" | sed 's/\x1b\[[0-9;]*m//g; s/—/-/g; s/°/o/g' |
        awk '{ if (length($0) > m) m = length($0) } END { print m }'
}
run check --from "$SNAP"
n=$(longest "$tmp/out")
[ "$n" -le 80 ] && [ "$n" -gt 70 ] || fail "off a terminal: longest line $n, not within 80"
COLUMNS=132 run check --from "$SNAP"
n=$(longest "$tmp/out")
[ "$n" -gt 80 ] && [ "$n" -le 132 ] || fail "COLUMNS=132: longest line $n"
has "$OUT" "1 critical — GPU 3 memory (71.2 GiB) held by stopped process 4121 (alice: python train.py --lr 3e-4)" "COLUMNS=132: the verdict on one line"
COLUMNS=132 run check --from "$SNAP" --width 60
sed -n '1,/^$/p' "$tmp/out" >"$tmp/verdict" # the tables keep their columns; prose wraps
n=$(longest "$tmp/verdict")
[ "$n" -le 60 ] && [ "$(wc -l <"$tmp/verdict")" -ge 3 ] || fail "--width 60: verdict $n wide: $(cat "$tmp/verdict")"
run check --from "$SNAP" --width 20
status 64 "--width 20"
has "$ERR" "--width: '20' is not a number of columns from 40 to 500" "--width 20"
if command -v script >/dev/null; then
    script -qec "stty cols 150; $GPUDOCTOR check --from $SNAP --color=never" /dev/null >"$tmp/tty" 2>&1
    n=$(longest "$tmp/tty")
    [ "$n" -gt 80 ] && [ "$n" -le 150 ] || fail "a 150-column terminal: longest line $n"
    script -qec "stty cols 100; COLUMNS=60 $GPUDOCTOR procs --from $SNAP --color=never" /dev/null >"$tmp/tty" 2>&1
    n=$(longest "$tmp/tty")
    [ "$n" -gt 60 ] && [ "$n" -le 100 ] || fail "procs on a 100-column terminal: longest line $n"
fi

# The character set: ASCII stand-ins when the locale is not UTF-8 (as watch does), or with
# --ascii; the JSON keeps its UTF-8.
for l in C POSIX; do
    LC_ALL=$l run check --from "$S/thermal-slowdown/snapshot.json"
    LC_ALL=C grep -q '[^ -~]' "$tmp/out" && fail "LC_ALL=$l: non-ASCII bytes: $(LC_ALL=C grep -m1 '[^ -~]' "$tmp/out")"
    grep -Eq '^[0-9]+ (critical|warnings?) - ' "$tmp/out" || fail "LC_ALL=$l: no ASCII verdict: $(head -1 "$tmp/out")"
    grep -q ' [0-9]* C' "$tmp/out" || fail "LC_ALL=$l: no temperature in ASCII"
done
LC_ALL=C run check --from "$S/thermal-slowdown/snapshot.json" --json
grep -q '°C' "$tmp/out" || fail "LC_ALL=C --json: the findings lost their UTF-8"
run check --from "$S/thermal-slowdown/snapshot.json"
grep -q '°C' "$tmp/out" && grep -q ' — ' "$tmp/out" || fail "UTF-8 locale: no '°C' or '—'"
run check --from "$S/thermal-slowdown/snapshot.json" --ascii
LC_ALL=C grep -q '[^ -~]' "$tmp/out" && fail "--ascii: non-ASCII bytes"
LC_ALL=C run explain clock.thermal-slowdown
LC_ALL=C grep -q '[^ -~]' "$tmp/out" && fail "explain, LC_ALL=C: non-ASCII bytes"
LC_ALL=C run procs --from "$SNAP"
LC_ALL=C grep -q '[^ -~]' "$tmp/out" && fail "procs, LC_ALL=C: non-ASCII bytes"

# A window --timeout cannot hold is said, and the JSON gives the window sampled (issue 11: it was
# 625 ms while the JSON said 5000).
if [ -e "${SIM_LIB:-}" ] && command -v jq >/dev/null; then
    SC=$S/troubled-8xh100
    export GPUDOCTOR_NVML_LIB=$SIM_LIB NVML_SIM_SCENARIO=$SC/scenario.json NVML_SIM_PROC=$SC/root/proc NVML_SIM_QUIET=1
    run check --root "$SC/root" --window 5s --timeout 1s --json
    status 2 "check --window 5s --timeout 1s"
    grep -Eq '^gpudoctor check: sampled for 0\.[0-9]+s, not the 5s --window asked: --timeout 1s ended it first$' \
        "$tmp/err" || fail "check --window 5s --timeout 1s: $ERR"
    one_line "check --window 5s --timeout 1s"
    jq -e '.snapshot.window_ms < 1000 and .snapshot.window_ms == .snapshot.samples[-1].t_ms' "$tmp/out" >/dev/null ||
        fail "check --window 5s --timeout 1s: window_ms $(jq .snapshot.window_ms "$tmp/out"), last sample at $(jq '.snapshot.samples[-1].t_ms' "$tmp/out")"
    run check --root "$SC/root" --window 0.5s --json
    [ -z "$ERR" ] || fail "check --window 0.5s said: $ERR"
    jq -e '.snapshot.window_ms == 500' "$tmp/out" >/dev/null || fail "check --window 0.5s: window_ms $(jq .snapshot.window_ms "$tmp/out")"
    unset GPUDOCTOR_NVML_LIB NVML_SIM_SCENARIO NVML_SIM_PROC
fi

e2e_done "all checks passed"
