#!/usr/bin/env bash
# watch --record writes JSON Lines as it goes, every line whole (also when stopped by a signal);
# check --from reads the recording back, trends included: a real process NVML lists leaks
# 10 MiB/s and the leak is found with its pid and slope.
. "$(dirname "$0")/watch-lib.sh"

spawn_job
leak_scenario "$TMP/s.json" "$JOB" 10485760
export NVML_SIM_SCENARIO=$TMP/s.json
short=(--set trend_min_duration_s=10 --set leak_min_growth_mib=50)

# every_line_whole FILE: each line one JSON object, the file ends with a newline.
every_line_whole() {
    local n=0 bad=0
    while IFS= read -r l; do
        n=$((n + 1))
        jq -e 'type == "object"' <<<"$l" >/dev/null 2>&1 || bad=$((bad + 1))
    done <"$1"
    [ "$n" -gt 0 ] && [ "$bad" -eq 0 ] && [ "$(tail -c 1 "$1" | od -An -c | tr -d ' ')" = '\n' ]
}

"$GPUDOCTOR" watch --plain -n 0.3 -c 45 --record "$TMP/rec.jsonl" "${short[@]}" \
    >"$TMP/plain" 2>"$TMP/err" || fail "watch --record: status $?: $(head -c 300 "$TMP/err")"
every_line_whole "$TMP/rec.jsonl" || fail "a recording line is not a whole JSON object"
# The first line is a snapshot (context), then one sample a reading.
head -1 "$TMP/rec.jsonl" | jq -e '.schema == "gpudoctor.snapshot/1" and .samples == []' \
    >/dev/null || fail "the first line is not a snapshot"
samples=$(jq -c 'select(.t_ms != null)' "$TMP/rec.jsonl" | wc -l)
[ "$samples" -eq 45 ] || fail "$samples samples recorded, not 45"
jq -s -e '[.[] | select(.t_ms != null) | .t_ms] | . == sort' "$TMP/rec.jsonl" >/dev/null ||
    fail "sample times go back"
# The live view saw the leak too.
grep -q "mem.leak\[$JOB\]" "$TMP/plain" || fail "watch --plain did not show mem.leak[$JOB]"

# check --from the recording: the leak, its process and slope; the exit status of a warning.
"$GPUDOCTOR" check --from "$TMP/rec.jsonl" --json "${short[@]}" >"$TMP/check.json"
rc=$?
[ "$rc" -ge 1 ] && [ "$rc" -le 2 ] || fail "check --from: status $rc"
leak=$(jq -c '.findings[] | select(.id == "mem.leak")' "$TMP/check.json")
[ -n "$leak" ] || fail "check --from found no leak: $(jq -c '[.findings[].id]' "$TMP/check.json")"
[ "$(jq '.subject.pid' <<<"$leak")" = "$JOB" ] || fail "leak pid: $leak"
[ "$(jq '.subject.gpu_index' <<<"$leak")" = 0 ] || fail "leak GPU: $leak"
jq -r '.title' <<<"$leak" | grep -E "^pid $JOB on GPU 0 grows (59[5-9]|60[0-5]) MiB/min" >/dev/null ||
    fail "leak title: $(jq -r '.title' <<<"$leak")"
# The report shows the last reading, not the first context's: the GPU's memory and the job's.
last=$(tail -n 1 "$TMP/rec.jsonl")
[ "$(jq '.snapshot.gpus[0].mem_used_bytes' "$TMP/check.json")" = "$(jq '.gpus[0].mem_used_bytes' <<<"$last")" ] ||
    fail "the GPU's memory in check --from is not the last reading's"
[ "$(jq ".snapshot.processes.processes[] | select(.pid == $JOB) | .gpus[0].used_bytes" "$TMP/check.json")" = \
    "$(jq ".gpus[0].processes[] | select(.pid == $JOB) | .used_bytes" <<<"$last")" ] ||
    fail "the job's GPU memory in check --from is not the last reading's"
# With the default thresholds a 13-second recording is too short for trends, and says so.
"$GPUDOCTOR" check --from "$TMP/rec.jsonl" --json >"$TMP/default.json"
jq -e '[.findings[].id] | index("mem.leak") == null' "$TMP/default.json" >/dev/null ||
    fail "a leak from 13 s of history with default thresholds"
jq -e '.not_checked[] | select(.rule == "mem.leak") | .reason | test("needs a history of 3m")' \
    "$TMP/default.json" >/dev/null || fail "no 'needs a history' for mem.leak"
# Its first line alone is a snapshot check accepts.
head -1 "$TMP/rec.jsonl" | "$GPUDOCTOR" check --from - --json >"$TMP/first.json"
jq -e '.schema == "gpudoctor.check/1"' "$TMP/first.json" >/dev/null ||
    fail "the first line is not a snapshot check --from reads"

# Stopped by a signal: the lines written are whole, watch exits 0.
for sig in INT TERM; do
    rm -f "$TMP/sig.jsonl" # the wait below is for this run's first reading, not the last run's
    "$GPUDOCTOR" watch --plain -n 0.1 --record "$TMP/sig.jsonl" >/dev/null 2>&1 &
    pid=$!
    wait_file "$TMP/sig.jsonl" '"t_ms"' 10 || fail "$sig: nothing recorded"
    sleep 1
    kill -s "$sig" "$pid"
    wait "$pid"
    rc=$?
    [ "$rc" -eq 0 ] || fail "$sig: exit status $rc"
    every_line_whole "$TMP/sig.jsonl" || fail "$sig: a line cut short"
    "$GPUDOCTOR" check --from "$TMP/sig.jsonl" >/dev/null
    [ $? -le 2 ] || fail "$sig: check --from cannot read it"
done

# A file that cannot be created: said at once, status 3.
"$GPUDOCTOR" watch --plain -c 1 --record /nonexistent/dir/rec.jsonl >/dev/null 2>"$TMP/err"
rc=$?
[ "$rc" -eq 3 ] || fail "unwritable --record: status $rc"
grep -q -- '--record /nonexistent/dir/rec.jsonl: No such file or directory' "$TMP/err" ||
    fail "unwritable --record: $(cat "$TMP/err")"
finish
