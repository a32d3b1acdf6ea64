#!/usr/bin/env bash
# The live view in a real terminal (tmux): a real process NVML lists leaks 10 MiB/s; the leak
# finding appears with its pid and slope, the explanation opens, the view survives resizes
# (80x24 and smaller), sorting keeps the selection, 'r' shows the kill command and what reap
# would do and asks (no: nothing sent; yes: the process gets SIGTERM), and q restores the
# terminal.
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
echo "$line" | grep -q "WARN" || fail "the leak is not a warning: $line"
echo "$line" | grep -Eq "pid $JOB on GPU 0 grows (59[5-9]|60[0-5]) MiB/min: GPU full in ~[0-9hm]+" ||
    fail "leak line: $line"
screen | grep -Eq "^>$JOB +[^ ]+ +0 +1[0-9.]+ GiB .* sleep 600" ||
    { fail "the process list does not show the job"; dump; }
screen | grep -Eq '^ +0 +[0-9]+% .*GiB' || { fail "no GPU row"; dump; }
# Graphs in block characters on a UTF-8 terminal.
screen | grep -q '[▁▂▃▄▅▆▇█]' || fail "no block-character graph"

# Explain: in the process list, the first finding about the selected process.
keys e
if wait_for 'explain mem\.leak' 10; then
    screen | grep -Eq "growth (59[5-9]|60[0-5]) MiB/min \((9.9|10.0|10.1) MiB/s\)" || { fail "explanation evidence"; dump; }
    screen | grep -q "What it means" || fail "explanation text"
else
    fail "e did not explain the leak"
    dump
fi
keys q
wait_for 'FINDINGS' 5 || fail "q did not close the explanation"

# Resizes: 80x24 keeps everything on screen; smaller says so; back to a big one.
tmux -L "$TMUX_SOCK" resize-window -t t -x 80 -y 24
sleep 1.5
screen | grep -Eq '^ +0 +[0-9]+% .*GiB .*°C .* [0-9]+W +[0-9]+ ' ||
    { fail "the GPU row does not fit at 80x24"; dump; }
screen | grep -q 'mem\.leak' || { fail "the leak is not visible at 80x24"; dump; }
screen | head -1 | grep -q 'gpudoctor watch' || fail "no title at 80x24"
tmux -L "$TMUX_SOCK" resize-window -t t -x 60 -y 20
wait_for 'needs 80x24' 5 || { fail "no 'too small' message at 60x20"; dump; }
tmux -L "$TMUX_SOCK" resize-window -t t -x 100 -y 30
wait_for 'mem\.leak' 5 || { fail "the view did not come back at 100x30"; dump; }

# Sorting keeps the selected process.
keys s
wait_for 'sorted by SM %' 5 || fail "s did not sort"
screen | grep -Eq "^>$JOB " || { fail "the selection moved when sorting"; dump; }

# Ending the process as reap does: the exact command and what reap would send, a question,
# nothing sent on no.
keys r
wait_for "kill -TERM $JOB" 5 || { fail "r did not show the kill command"; dump; }
screen | grep -q "would send SIGTERM (SIGKILL after 3 s) to pid $JOB" ||
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
screen | grep -q 'BEFORE-WATCH' || fail "the main screen did not come back"
wait_file "$TMP/stty" 'icanon' 5
stty_sane "$TMP/stty" || fail "terminal not restored: $(cat "$TMP/stty")"
[ ! -s "$TMP/stderr" ] || fail "stderr: $(head -c 300 "$TMP/stderr")"
finish
