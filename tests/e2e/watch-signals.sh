#!/usr/bin/env bash
# Every way out of the live view restores the terminal: SIGINT, SIGTERM and SIGHUP end watch
# normally (status 0); a crash (SIGABRT, as fatal() raises, and SIGSEGV) resets the terminal from
# the signal handler and still dies of the signal. Messages written to standard error while the
# view is up (here the simulator's, about a broken scenario) never tear the screen: they are
# shown after it.
. "$(dirname "$0")/watch-lib.sh"
command -v tmux >/dev/null || { echo "tmux not installed"; exit 77; }

spawn_job
leak_scenario "$TMP/good.json" "$JOB" 1048576
echo '{ "schema": "gpudoctor.scenario/1", "gpus": [ { "index": 0, "temp_c": "hot" } ] }' \
    >"$TMP/broken.json"

# run_case SIGNAL SCENARIO EXPECTED-STATUS
run_case() {
    local sig=$1 scenario=$2 want=$3 pid
    rm -f "$TMP/pid" "$TMP/stty" "$TMP/stderr"
    tmux_start 100 30 "echo BEFORE-WATCH; env -u NVML_SIM_QUIET LC_ALL=C.UTF-8 \
        NVML_SIM_SCENARIO=$scenario sh -c 'echo \$\$ >$TMP/pid; exec $GPUDOCTOR watch -n 0.5' \
        2>$TMP/stderr; echo EXITED rc=\$?; stty -a >$TMP/stty; sleep 60"
    if ! wait_for 'gpudoctor watch' 15 || ! wait_file "$TMP/pid" '[0-9]' 5; then
        fail "$sig: the view did not start"
        screen >&2
        tmux -L "$TMUX_SOCK" kill-server 2>/dev/null
        return
    fi
    sleep 1.5 # a few cycles, so the simulator has had its say
    # The finding quotes the simulator; its raw message would be a line of its own.
    screen | grep 'NVML simulator' | grep -v 'health.nvml-failed' >/dev/null &&
        fail "$sig: a message tore the screen"
    pid=$(cat "$TMP/pid")
    kill -s "$sig" "$pid"
    wait_for "EXITED rc=$want" 10 || { fail "$sig: not 'EXITED rc=$want'"; screen >&2; }
    screen | grep 'BEFORE-WATCH' >/dev/null || fail "$sig: the main screen did not come back"
    wait_file "$TMP/stty" 'icanon' 5
    stty_sane "$TMP/stty" || fail "$sig: terminal not restored: $(cat "$TMP/stty")"
    kill -0 "$pid" 2>/dev/null && fail "$sig: watch still runs"
    tmux -L "$TMUX_SOCK" kill-server 2>/dev/null
}

run_case INT "$TMP/good.json" 0
run_case TERM "$TMP/good.json" 0
run_case HUP "$TMP/good.json" 0
run_case INT "$TMP/broken.json" 0
# What the helper said while the view was up comes out after it, once.
grep -q 'NVML simulator: .*broken.json.*temp_c' "$TMP/stderr" ||
    fail "the captured message was not shown after the view: $(head -c 300 "$TMP/stderr")"
run_case ABRT "$TMP/good.json" 134
# Under AddressSanitizer the handler passes SIGSEGV on to the sanitizer, which reports and
# exits 1: the terminal must be restored all the same.
# grep reads all of ldd's output: with -q it would stop at the match, and ldd, killed by
# SIGPIPE, would fail the pipeline under pipefail (a sanitized build then taken for a plain one).
if ldd "$GPUDOCTOR" 2>/dev/null | grep libasan >/dev/null; then
    run_case SEGV "$TMP/good.json" 1
else
    run_case SEGV "$TMP/good.json" 139
fi
finish
