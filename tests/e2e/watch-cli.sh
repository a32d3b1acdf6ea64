#!/usr/bin/env bash
# watch's command line: help, and every bad option refused with status 64 and a message that
# names the option and what is wrong, before anything is collected.
. "$(dirname "$0")/watch-lib.sh"

# refused EXPECTED-TEXT ARGS...: status 64 and the text on stderr, nothing on stdout.
refused() {
    local want=$1
    shift
    "$GPUDOCTOR" watch "$@" >"$TMP/out" 2>"$TMP/err"
    local rc=$?
    [ "$rc" -eq 64 ] || fail "watch $*: status $rc, not 64"
    grep -qF -- "$want" "$TMP/err" || fail "watch $*: stderr lacks \"$want\": $(cat "$TMP/err")"
    [ ! -s "$TMP/out" ] || fail "watch $*: wrote to stdout"
}

"$GPUDOCTOR" watch --help >"$TMP/help" || fail "--help: status $?"
for opt in --interval --count --plain --record --alert --alert-timeout --history --window \
    --ascii --no-color --config --set --root --timeout --nvml-lib --only; do
    grep -q -- "$opt" "$TMP/help" || fail "--help does not mention $opt"
done
grep -q 'GPUDOCTOR_ALERT_' "$TMP/help" || fail "--help does not name the alert variables"
"$GPUDOCTOR" --help 2>&1 | grep '^  watch ' >/dev/null || fail "gpudoctor --help does not list watch"

refused "Try 'gpudoctor watch --help'" --bogus
refused "unexpected argument 'now'" now
refused "--interval: '0.01' is not a duration from 0.1s to 3600s" -n 0.01
refused "--interval: 'soon' is not a duration" --interval soon
refused "--count: '0' is not a number of readings" -c 0
refused "--count: 'x' is not a number of readings" --count x
refused "--history: '1s' is not a duration from 10s" --history 1s
refused "--window: '0.5' is not a duration from 1s" --window 0.5
refused "--alert-timeout: '0' is not a duration" --alert-timeout 0
refused "--alert 'no.such-rule': 'no.such-rule' is not a known rule" --alert no.such-rule
refused "--alert 'bogus_pct>3': unknown reading 'bogus_pct'" --alert 'bogus_pct>3'
refused "'no-such-command-xyz' not found in PATH" --alert 'critical:no-such-command-xyz'
refused "--alert 'mem.leak for ever': 'ever' is not a duration" --alert 'mem.leak for ever'
refused "nothing after ':'" --alert 'mem.leak:'
refused "bogus_key" --set bogus_key=1
refused "--only: unknown collector 'gpus'" --only gpus
finish
