#!/usr/bin/env bash
# The live view in a real terminal (tmux): a real process NVML lists leaks 10 MiB/s; the leak
# finding appears with its pid and slope, the explanation opens, the view survives resizes
# (80x24 and smaller), sorting keeps the selection, 'r' shows the kill command and what reap
# would do and asks (no: nothing sent; yes: the process gets SIGTERM), and q restores the
# terminal. Then the demo server (12 findings) at 80x24 on a terminal without colours: the panes
# say how much of their lists they show, scrolling reaches the last finding, and the pane with
# the focus is marked (reverse video, a mark, the status line).
. "$(dirname "$0")/watch-lib.sh"
command -v tmux >/dev/null || { echo "tmux not installed"; exit 77; }

spawn_job
leak_scenario "$TMP/s.json" "$JOB" 10485760
tmux_start 100 30 "echo BEFORE-WATCH; env LANG=C.UTF-8 LC_ALL=C.UTF-8 NVML_SIM_SCENARIO=$TMP/s.json \
    $GPUDOCTOR watch -n 0.5 --set trend_min_duration_s=10 --set leak_min_growth_mib=50 \
    2>$TMP/stderr; echo EXITED rc=\$?; stty -a >$TMP/stty; sleep 120"

dump() {
    echo "--- screen ---" >&2
    screen >&2
}

# The leak: its pid, its slope (10 MiB/s = 600 MiB/min), the time left.
if ! wait_for 'mem\.leak' 60; then
    fail "no leak finding within 60 s"
    dump
    finish
fi
line=$(screen | grep 'mem\.leak')
echo "$line" | grep "WARN" >/dev/null || fail "the leak is not a warning: $line"
echo "$line" | grep -E "pid $JOB on GPU 0 grows (59[5-9]|60[0-5]) MiB/min: GPU full in ~[0-9hm]+" >/dev/null ||
    fail "leak line: $line"
screen | grep -E "^>$JOB +[^ ]+ +0 +1[0-9.]+ GiB .* sleep 600" >/dev/null ||
    { fail "the process list does not show the job"; dump; }
screen | grep -E '^ +0 +[0-9]+% .*GiB' >/dev/null || { fail "no GPU row"; dump; }
# Graphs in block characters on a UTF-8 terminal.
screen | grep '[▁▂▃▄▅▆▇█]' >/dev/null || fail "no block-character graph"

# Explain: in the process list, the first finding about the selected process.
keys e
if wait_for 'explain mem\.leak' 10; then
    screen | grep -E "growth (59[5-9]|60[0-5]) MiB/min \((9.9|10.0|10.1) MiB/s\)" >/dev/null || { fail "explanation evidence"; dump; }
    screen | grep "What it means" >/dev/null || fail "explanation text"
else
    fail "e did not explain the leak"
    dump
fi
keys q
wait_for 'FINDINGS' 5 || fail "q did not close the explanation"

# Resizes: 80x24 keeps everything on screen; smaller says so; back to a big one.
tmux -L "$TMUX_SOCK" resize-window -t t -x 80 -y 24
sleep 1.5
screen | grep -E '^ +0 +[0-9]+% .*GiB .*°C .* [0-9]+W +[0-9]+ ' >/dev/null ||
    { fail "the GPU row does not fit at 80x24"; dump; }
screen | grep 'mem\.leak' >/dev/null || { fail "the leak is not visible at 80x24"; dump; }
screen | sed -n 1p | grep 'gpudoctor watch' >/dev/null || fail "no title at 80x24"
tmux -L "$TMUX_SOCK" resize-window -t t -x 60 -y 20
wait_for 'needs 80x16' 5 || { fail "no 'too small' message at 60x20"; dump; }
tmux -L "$TMUX_SOCK" resize-window -t t -x 100 -y 30
wait_for 'mem\.leak' 5 || { fail "the view did not come back at 100x30"; dump; }

# Sorting keeps the selected process.
keys s
wait_for 'sorted by SM %' 5 || fail "s did not sort"
screen | grep -E "^>$JOB " >/dev/null || { fail "the selection moved when sorting"; dump; }

# Ending the process as reap does: the exact command and what reap would send, a question,
# nothing sent on no.
keys r
wait_for "kill -TERM $JOB" 5 || { fail "r did not show the kill command"; dump; }
screen | grep "would send SIGTERM (SIGKILL after 3 s) to pid $JOB" >/dev/null ||
    { fail "r did not show what reap would do"; dump; }
keys n
wait_for 'cancelled: nothing sent' 5 || fail "n did not cancel"
kill -0 "$JOB" 2>/dev/null || fail "the job died after 'no'"
keys r
wait_for "kill -TERM $JOB" 5 || fail "r did not ask again"
keys y
wait_for "pid $JOB ended: exited after SIGTERM" 10 || { fail "y did not end it"; dump; }
wait "$JOB" 2>/dev/null
status=$?
[ "$status" -eq 143 ] || fail "the job ended with status $status, not by SIGTERM (143)"

# q: the view ends, the terminal is as it was (main screen back, canonical mode and echo).
keys q
wait_for 'EXITED rc=0' 10 || { fail "q did not end watch with status 0"; dump; }
screen | grep 'BEFORE-WATCH' >/dev/null || fail "the main screen did not come back"
wait_file "$TMP/stty" 'icanon' 5
stty_sane "$TMP/stty" || fail "terminal not restored: $(cat "$TMP/stty")"
[ ! -s "$TMP/stderr" ] || fail "stderr: $(head -c 300 "$TMP/stderr")"

# ---- the demo server at 80x24: TERM without colours, NO_COLOR, the C locale (ASCII marks) ----
DEMO=$SRC/tests/scenarios/troubled-8xh100
tmux_start 80 24 "env TERM=xterm-mono NO_COLOR=1 LANG=C LC_ALL=C \
    NVML_SIM_SCENARIO=$DEMO/scenario.json NVML_SIM_PROC=$DEMO/root/proc \
    $GPUDOCTOR watch --root $DEMO/root 2>$TMP/stderr-demo; echo EXITED rc=\$?; sleep 120"

# attrs: the screen with its attributes (SGR sequences); reversed PATTERN: the line showing
# PATTERN is drawn in reverse video (SGR 7).
attrs() {
    tmux -L "$TMUX_SOCK" capture-pane -t t -p -e 2>/dev/null
}
reversed() {
    attrs | grep -E -- "$1" | grep -E $'\e\\[([0-9]+;)*7(;[0-9]+)*m' >/dev/null
}

if ! wait_for 'FINDINGS 1-4 of [0-9]+: [0-9]+ more below \(Tab, then j/PgDn\)' 30; then
    fail "the findings pane does not say how many findings there are"
    dump
    finish
fi
head=$(screen | grep -E 'FINDINGS 1-4 of')
total=$(sed -E 's/.* of ([0-9]+):.*/\1/' <<<"$head")
below=$(sed -E 's/.*: ([0-9]+) more below.*/\1/' <<<"$head")
[ "$total" -ge 10 ] || fail "the demo shows $total findings, not 10 or more: $head"
[ "$below" -eq $((total - 4)) ] || fail "4 of $total shown but $below said to be below: $head"
# The focus is on the processes: marked, reversed, named; the findings' header is not.
screen | grep -E '^>PID +USER .* 1-4 of 9 v$' >/dev/null || { fail "the process header: no mark or extent"; dump; }
# The NVLink row under GPU 7: this scenario gives the links' states, not their counters.
screen | grep -A1 '^  7 ' | grep -E '^NVLINK +144/144 links up +- +errors \?$' >/dev/null ||
    { fail "no NVLink row under the GPUs"; dump; }
reversed '>PID +USER' || fail "the focused process header is not in reverse video"
reversed 'FINDINGS' && fail "the findings header is reversed without the focus"
screen | tail -1 | grep '^\[processes\] ' >/dev/null || fail "the status line does not name the focus"
# No colour anywhere: only the default colours (39, 49), bold and reverse.
attrs | grep -E $'\e\\[([0-9]+;)*(3[0-8]|4[0-8]|9[0-7]|10[0-7])(;[0-9]+)*m' >/dev/null &&
    fail "colour on a terminal without colours: $(attrs | grep -E $'\e\\[([0-9]+;)*(3[0-8]|4[0-8])' | head -2 | cat -v)"

# Tab: the findings have the focus, said three ways.
keys Tab
wait_for '^\[findings\] ' 5 || { fail "Tab: the status line does not name the findings"; dump; }
screen | grep -E "^> +FINDINGS 1-4 of $total: $below more below \(j/PgDn\)$" >/dev/null ||
    { fail "Tab: the findings header"; dump; }
reversed 'FINDINGS' || fail "the focused findings header is not in reverse video"
reversed 'PID +USER' && fail "the process header is still reversed after Tab"

# Scrolling reaches every finding: down one at a time to the last, then PgUp back.
keys j j j j j
wait_for "FINDINGS 3-6 of $total: 2 above, $((total - 6)) below" 5 || { fail "j: the window does not follow"; dump; }
for _ in $(seq 6 $((total - 1))); do keys j; done
if wait_for "FINDINGS $((total - 3))-$total of $total: $((total - 4)) more above \(k/PgUp\)" 5; then
    rows=$(screen | grep -A4 'FINDINGS' | tail -4)
    tail -1 <<<"$rows" | grep '^>' >/dev/null || fail "the last finding is not the selected bottom row: $rows"
else
    fail "j did not reach the last finding"
    dump
fi
keys PPage
wait_for "FINDINGS 1-4 of $total: $below more below" 5 || { fail "PgUp did not go back to the top"; dump; }

# Smaller: at 80x16 the panes are shorter and say so.
tmux -L "$TMUX_SOCK" resize-window -t t -x 80 -y 16
wait_for "FINDINGS 1-3 of $total: $((total - 3)) more below" 5 || { fail "80x16: the findings header"; dump; }
screen | grep -E 'PID +USER .* 1-3 of 9 v$' >/dev/null || { fail "80x16: the process header"; dump; }
screen | grep 'more GPUs (a taller terminal shows them)' >/dev/null || fail "80x16: the GPUs left out are not said"
keys q
wait_for 'EXITED rc=0' 10 || { fail "q did not end the demo watch with status 0"; dump; }
[ ! -s "$TMP/stderr-demo" ] || fail "stderr: $(head -c 300 "$TMP/stderr-demo")"
finish
