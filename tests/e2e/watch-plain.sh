#!/usr/bin/env bash
# watch --plain on the troubled 8-GPU server of `make demo`: a header, then one line per GPU per
# interval with the readings the simulator serves and the findings about each GPU; the default
# when standard output is not a terminal; --count stops it; a closed pipe ends it quietly.
. "$(dirname "$0")/watch-lib.sh"

export NVML_SIM_SCENARIO=$SRC/scenarios/troubled-8xh100.json
root=$SRC/tests/scenarios/troubled-8xh100/root
[ -d "$root" ] || { echo "no fixture tree $root"; exit 77; }

"$GPUDOCTOR" watch --plain -n 0.2 -c 4 --root "$root" >"$TMP/out" 2>"$TMP/err"
rc=$?
[ "$rc" -eq 0 ] || fail "exit status $rc: $(head -c 300 "$TMP/err")"
[ ! -s "$TMP/err" ] || fail "stderr: $(head -c 300 "$TMP/err")"

# The header: two comment lines, once.
[ "$(grep -c '^#time' "$TMP/out")" -eq 1 ] || fail "header not once"
head -1 "$TMP/out" | grep -E '^#time +gpu +util +mem +memused +temp +power +smclk +memclk +throttle +nvlink +nvdata +nverr +findings$' >/dev/null ||
    fail "header: $(head -1 "$TMP/out")"
# 4 intervals x 8 GPUs, every line 14 fields, GPUs 0-7 in each interval.
data=$(grep -v '^#' "$TMP/out")
[ "$(echo "$data" | wc -l)" -eq 32 ] || fail "$(echo "$data" | wc -l) data lines, not 32"
echo "$data" | awk 'NF != 14 { exit 1 }' || fail "a line without 14 fields"
[ "$(echo "$data" | awk '{print $2}' | sort -n | uniq -c | awk '{print $1}' | sort -u)" = 4 ] ||
    fail "not 4 lines for each GPU"
echo "$data" | awk '{print $1}' | grep -Ev '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$' >/dev/null &&
    fail "a time that is not ISO 8601 UTC"

# gpu line: the readings of the scenario, throttle reasons, and the findings of that GPU.
line() { echo "$data" | awk -v g="$1" '$2 == g' | tail -1; }
field() { line "$1" | awk -v f="$2" '{print $f}'; }
[ "$(field 3 3)" = 0 ] || fail "GPU 3 util: $(line 3)"
[ "$(field 3 4)" = 99 ] || fail "GPU 3 memory %: $(line 3)"
[ "$(field 3 5)" = 78.7 ] || fail "GPU 3 memory used: $(line 3)"
field 3 14 | grep 'proc.stopped-holder\[39104\]' >/dev/null || fail "GPU 3 findings: $(line 3)"
[ "$(field 5 10)" = hwthermal,thermal ] || fail "GPU 5 throttle: $(line 5)"
field 5 14 | grep 'clock.thermal-slowdown' >/dev/null || fail "GPU 5 findings: $(line 5)"
[ "$(field 2 14 | tr , "\n" | grep -c "^health.xid$")" = 1 ] || fail "GPU 2: health.xid not listed once: $(line 2)"
[ "$(field 7 7)" = 449 ] || fail "GPU 7 power: $(line 7)"
[ "$(field 7 8)" = 1365 ] || fail "GPU 7 SM clock: $(line 7)"
[ "$(field 7 10)" = pcap ] || fail "GPU 7 throttle: $(line 7)"
field 7 14 | grep 'clock.power-limit-low' >/dev/null || fail "GPU 7 findings: $(line 7)"
field 1 14 | grep 'proc.stopped-holder' >/dev/null && fail "GPU 3's finding on GPU 1: $(line 1)"
[ "$(field 4 10)" = - ] || fail "GPU 4 throttle: $(line 4)"
# The scenario gives its NVLinks' states only, no counters: links up, data and errors unknown
# (tests/e2e/watch-fabric.sh has the counters).
[ "$(field 4 11) $(field 4 12) $(field 4 13)" = "18/18 - -" ] || fail "GPU 4 NVLink: $(line 4)"

# Not a terminal: plain without being asked.
"$GPUDOCTOR" watch -n 0.2 -c 1 --root "$root" >"$TMP/auto" 2>&1
[ "$(grep -vc '^#' "$TMP/auto")" -eq 8 ] || fail "stdout not a terminal: $(head -3 "$TMP/auto")"

# A closed pipe: watch ends at once, quietly, with status 0.
start=$SECONDS
"$GPUDOCTOR" watch --plain -n 0.2 --root "$root" 2>"$TMP/err" | head -3 >"$TMP/head"
status=("${PIPESTATUS[@]}")
[ "${status[0]}" -eq 0 ] || fail "closed pipe: exit status ${status[0]}"
[ $((SECONDS - start)) -lt 10 ] || fail "closed pipe: took $((SECONDS - start)) s"
[ ! -s "$TMP/err" ] || fail "closed pipe: stderr: $(head -c 300 "$TMP/err")"
[ "$(wc -l <"$TMP/head")" -eq 3 ] || fail "head got $(wc -l <"$TMP/head") lines"

# --only narrows every cycle: NVML alone still gives every GPU's line; without NVML, no GPU.
"$GPUDOCTOR" watch --plain -n 0.2 -c 2 --only nvml --root "$root" >"$TMP/only" 2>&1
[ "$(grep -vc '^#' "$TMP/only")" -eq 16 ] || fail "--only nvml: $(head -3 "$TMP/only")"
"$GPUDOCTOR" watch --plain -n 0.2 -c 2 --only processes --root "$root" >"$TMP/only" 2>&1
[ "$(grep -c '^# .* no GPU: NVML was not queried' "$TMP/only")" -eq 2 ] ||
    fail "--only processes: $(head -3 "$TMP/only")"

# No GPU at all: one comment line an interval that says why.
NVML_SIM_SCENARIO=/nonexistent.json "$GPUDOCTOR" watch --plain -n 0.2 -c 2 --root "$root" \
    >"$TMP/none" 2>/dev/null
[ "$(grep -c '^# .* no GPU: ' "$TMP/none")" -eq 2 ] || fail "no GPU: $(cat "$TMP/none")"
finish
