#!/usr/bin/env bash
# `gpudoctor fleet -` on a stream of documents in which one is cut off, as when one node's ssh
# connection drops in `ssh-all 'gpudoctor snapshot' | gpudoctor fleet -`: the cut document is
# named with the stream's lines it held, and every document after it is still read, in JSON
# Lines and in indented JSON alike, one that starts on the cut one's line too where that can be
# told; garbage between documents is skipped to the next line that
# starts a document; a document cut at the end of the stream is named; a valid document whose
# nested objects start lines of their own is never taken for a cut one. A flood of documents (or
# files) beyond the 50,000 fleet reads is counted and named in one error, not read.
set -uo pipefail
command -v jq >/dev/null || { echo "SKIP: jq not installed"; exit 77; }
: "${GPUDOCTOR:?}" "${SRC:?}"
export GPUDOCTOR_CONFIG=/dev/null NO_COLOR=1 LANG=C.UTF-8
. "$SRC/tests/e2e/lib.bash"
BASE=$SRC/tests/scenarios/healthy-8gpu-busy/snapshot.json
for i in 0 1 2 3 4 5; do
    jq -c --arg h "node0$i" '.hostname = $h' "$BASE" >"$tmp/$i.jsonl"
    jq --arg h "node0$i" '.hostname = $h' "$BASE" >"$tmp/$i.json"
done
# run NAME: fleet --json on $tmp/NAME.in; the nodes read and the errors, one line
run() {
    local rc=0
    GPUDOCTOR_FLEET_THREADS=${THREADS:-} "$GPUDOCTOR" fleet --json - <"$tmp/$1.in" >"$tmp/$1.out" \
        2>"$tmp/$1.err" || rc=$?
    echo "$rc $(jq -c '[[.nodes[].name], [.errors[] | .source + ": " + .message]]' "$tmp/$1.out")"
}

# JSON Lines, the second document cut in half (the line ends there): the three after it are read
{ cat "$tmp/0.jsonl"; head -c 20000 "$tmp/1.jsonl"; echo; cat "$tmp/2.jsonl" "$tmp/3.jsonl" "$tmp/4.jsonl"; } >"$tmp/lines.in"
for THREADS in 1 8; do
    check "JSON Lines, one cut ($THREADS threads)" "$(run lines)" \
        '3 [["node00","node02","node03","node04"],["stdin #2: line 2: cut off: the document does not end before the next one starts on line 3"]]'
done
check "JSON Lines, one cut: standard error" "$(cat "$tmp/lines.err")" \
    "gpudoctor fleet: stdin #2: line 2: cut off: the document does not end before the next one starts on line 3"

# cut with no line break after it, the next document on the cut one's line: it is read too, and
# the place where it starts named. Cut inside a string ("cuda_visible_dev{"schema": the next
# document's first quote seems to close the string), after a key, after a number
[ "$(head -c 20000 "$tmp/1.jsonl" | tr -cd '"' | wc -c)" -eq 1965 ] || fail "joined: the cut is not inside a string"
{ cat "$tmp/0.jsonl"; head -c 20000 "$tmp/1.jsonl"; cat "$tmp/2.jsonl" "$tmp/3.jsonl" "$tmp/4.jsonl"; } >"$tmp/joined.in"
for THREADS in 1 8; do
    check "JSON Lines, cut in a string with no line break ($THREADS threads)" "$(run joined)" \
        '3 [["node00","node02","node03","node04"],["stdin #2: line 2: cut off: the document does not end before the next one starts on line 2, column 20001"]]'
done
{ cat "$tmp/0.jsonl"; printf '{"schema": "gpudoctor.snapshot/1", "hostname"'; cat "$tmp/2.jsonl" "$tmp/3.jsonl"; } >"$tmp/key.in"
check "JSON Lines, cut after a key with no line break" "$(run key)" \
    '3 [["node00","node02","node03"],["stdin #2: line 2: cut off: the document does not end before the next one starts on line 2, column 46"]]'
{ cat "$tmp/0.jsonl"; printf '{"schema": "gpudoctor.snapshot/1", "time_ms": 17'; cat "$tmp/2.jsonl"; } >"$tmp/number.in"
check "JSON Lines, cut after a number with no line break" "$(run number)" \
    '3 [["node00","node02"],["stdin #2: line 2: cut off: the document does not end before the next one starts on line 2, column 49"]]'
# cut in a string, an escape half written ("ab\), the next document indented: it starts on the
# cut line, its first key on the line after
{ cat "$tmp/0.jsonl"; printf '%s%s' '{"schema": "gpudoctor.snapshot/1", "hostname": "ab' "\\"; cat "$tmp/2.json" "$tmp/3.jsonl"; } >"$tmp/escape.in"
check "cut in an escape, an indented document on its line" "$(run escape)" \
    '3 [["node00","node02","node03"],["stdin #2: line 2: cut off: the document does not end before the next one starts on line 2, column 52"]]'
# cut where a value may start (after a key's ':'): the next document reads as the value, nested
# objects do too, and a check report holds a whole snapshot: it cannot be told apart, and is lost
# with the cut one, the lines named
{ cat "$tmp/0.jsonl"; printf '{"schema": "gpudoctor.snapshot/1", "hostname": '; cat "$tmp/2.jsonl" "$tmp/3.jsonl"; } >"$tmp/value.in"
check "JSON Lines, cut where a value may start" "$(run value)" \
    '3 [["node00","node03"],["stdin #2: line 2: cut off: the document does not end before the next one starts on line 3"]]'

# indented documents (gpudoctor snapshot's own output), the second cut
n0=$(wc -l <"$tmp/0.json")
{ cat "$tmp/0.json"; head -n 300 "$tmp/1.json"; cat "$tmp/2.json" "$tmp/3.json"; } >"$tmp/indented.in"
check "indented, one cut" "$(run indented)" \
    "3 [[\"node00\",\"node02\",\"node03\"],[\"stdin #2: lines $((n0 + 1)) to $((n0 + 300)): cut off: the document does not end before the next one starts on line $((n0 + 301))\"]]"

# garbage between documents, then a document cut by the end of the stream
{ cat "$tmp/0.jsonl"; echo 'not json'; echo '  neither this'; cat "$tmp/2.jsonl"; head -c 300 "$tmp/3.jsonl"; } >"$tmp/garbage.in"
check "garbage, then a cut at the end" "$(run garbage)" \
    '3 [["node00","node02"],["stdin #2: lines 2 to 3: not a JSON object where a document should start (skipped to line 4)","stdin #4: line 5: the stream ends inside this document"]]'

# a valid document whose nested objects each start a line (after a key, an array's '[' or ','):
# never split
jq -c . "$BASE" | sed 's/:{/:\n{/g; s/\[{/[\n{/g; s/,{/,\n{/g' >"$tmp/hand.one"
[ "$(grep -c '^{' "$tmp/hand.one")" -gt 100 ] || fail "hand-formatted: too few lines start with '{'"
for i in 0 1 2 3 4; do jq -c --arg h "hand$i" '.hostname = $h' "$BASE" | sed 's/:{/:\n{/g; s/\[{/[\n{/g; s/,{/,\n{/g'; done >"$tmp/hand.in"
check "nested objects at the start of lines" "$(run hand)" '0 [["hand0","hand1","hand2","hand3","hand4"],[]]'

# a flood of documents that say nothing: at most FLEET_MAX_INPUTS (50,000) are read, each an
# error; the rest are counted, not kept, and the first of them named (memory stays bounded)
python3 -c 'import sys; sys.stdout.write("{}\n" * 50003)' >"$tmp/flood.in"
rc=0
"$GPUDOCTOR" fleet - <"$tmp/flood.in" >"$tmp/flood.out" 2>"$tmp/flood.err" || rc=$?
check "flood: exit status" "$rc" 3
check "flood: errors on standard error" "$(wc -l <"$tmp/flood.err")" 50001
check "flood: the last error" "$(tail -1 "$tmp/flood.err")" \
    "gpudoctor fleet: stdin #50001: not read, nor the 2 inputs after it: fleet reads at most 50000 files and documents"
check "flood: the one before" "$(tail -2 "$tmp/flood.err" | head -1)" \
    'gpudoctor fleet: stdin #50000: line 1, column 1: not a gpudoctor snapshot: no "schema" key'
# and files: a directory of 50,002 entries, of which the last two are not read
mkdir "$tmp/many"
python3 -c 'import sys; [open("%s/n%05d.json" % (sys.argv[1], i), "w").close() for i in range(1, 50003)]' "$tmp/many"
rc=0
"$GPUDOCTOR" fleet "$tmp/many" >/dev/null 2>"$tmp/many.err" || rc=$?
check "many files: exit status" "$rc" 3
check "many files: the last error" "$(tail -1 "$tmp/many.err")" \
    "gpudoctor fleet: $tmp/many/n50001.json: not read, nor the 1 input after it: fleet reads at most 50000 files and documents"

e2e_done "ok"
