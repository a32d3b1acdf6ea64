#!/usr/bin/env bash
# Untrusted input never reaches a terminal or a log raw: a snapshot (and a recording) whose
# hostname, user, command line, command name, GPU name, notes and kernel-log lines hold escape
# sequences (ESC [31m CRITICAL, a forged "CRITICAL:" line after CR LF, BEL, DEL, the C1 CSI) is
# read by check, procs and reap --from, as text and as JSON: no control byte comes out, and the
# text is still there, made safe ('?' for each byte of a control character). Errors that quote
# the file (an unknown key, bytes that are not UTF-8) quote it escaped.
set -uo pipefail
command -v jq >/dev/null || { echo "jq not installed"; exit 77; }
: "${GPUDOCTOR:?}" "${SRC:?}"
export GPUDOCTOR_CONFIG=/dev/null
. "$SRC/tests/e2e/lib.bash"

# clean FILE WHAT: no C0 control but newline, no DEL, no C1 control (UTF-8 C2 80..C2 9F).
clean() {
    if LC_ALL=C grep -n $'[\x01-\x09\x0b-\x1f\x7f]' "$1" >"$tmp/bad" ||
        LC_ALL=C grep -n $'\xc2[\x80-\x9f]' "$1" >"$tmp/bad"; then
        fail "$2: a control byte in the output: $(head -c 300 "$tmp/bad" | cat -v)"
    fi
}
# shows FILE TEXT WHAT: the hostile text is there, made safe (the field was rendered).
shows() { grep -qF -- "$2" "$1" || fail "$3: '$2' not in: $(head -c 400 "$1" | cat -v)"; }

EVIL='\u001b[31mCRITICAL\u001b[0m\r\nCRITICAL: forged\u0007\u007f\u009b2J'
SAFE='?[31mCRITICAL?[0m??CRITICAL: forged????2J'
jq --argjson e "\"$EVIL\"" '
    .hostname = "node" + $e
    | .processes.processes |= map(.user += $e | .cmdline += $e | .comm += $e | .exe += $e)
    | .gpus |= map(.name += $e)
    | .collectors.nvml.notes += ["a note" + $e]
    | .collectors.host.state = "partial"
    | .collectors.host.notes += ["a note" + $e]
    | .collectors.host.detail = "a detail" + $e
    | .driver.module_banner = "NVRM version: " + $e' \
    "$SRC/tests/scenarios/idle-holder/snapshot.json" >"$tmp/hostile.json" ||
    { echo "jq could not build the hostile snapshot"; exit 1; }
grep -q 'u001b\[31mCRITICAL' "$tmp/hostile.json" || { echo "the hostile snapshot is not hostile"; exit 1; }

# A recording: the hostile snapshot as its context line, then one sample.
{
    jq -c '.samples = []' "$tmp/hostile.json"
    jq -c '.samples[-1] | .t_ms = 1000' "$tmp/hostile.json"
} >"$tmp/hostile.jsonl"

for input in hostile.json hostile.jsonl; do
    f=$tmp/$input
    "$GPUDOCTOR" check --from "$f" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [ "$rc" = 1 ] || fail "check --from $input: exit $rc (expected the idle holder's warning): $(cat -v "$tmp/err")"
    clean "$tmp/out" "check --from $input"
    clean "$tmp/err" "check --from $input (stderr)"
    shows "$tmp/out" "carol$SAFE" "check --from $input: the user"
    shows "$tmp/out" "a note$SAFE" "check --from $input: the note"
    shows "$tmp/out" "collector host: partial: a detail$SAFE" "check --from $input: the detail"

    "$GPUDOCTOR" check --from "$f" --json >"$tmp/out" 2>"$tmp/err"
    clean "$tmp/out" "check --from $input --json"
    # JSON escapes decode to control characters too: none may be there.
    if grep -qiE '\\u00(0[0-9a-f]|1[0-9a-f]|7f|[89][0-9a-f])|\\[rtb]' "$tmp/out"; then
        fail "check --from $input --json: an escaped control character: $(grep -oiE '.{20}\\u00(0[0-9a-f]|1[0-9a-f]|7f|[89][0-9a-f]).{20}' "$tmp/out" | head -3)"
    fi
    [ "$(jq -r .hostname "$tmp/out")" = "node$SAFE" ] ||
        fail "check --from $input --json: hostname $(jq .hostname "$tmp/out")"

    "$GPUDOCTOR" procs --from "$f" >"$tmp/out" 2>"$tmp/err"
    clean "$tmp/out" "procs --from $input"
    clean "$tmp/err" "procs --from $input (stderr)"
    shows "$tmp/out" "nvml: a note$SAFE" "procs --from $input: the note"
    "$GPUDOCTOR" procs --from "$f" --json >"$tmp/out" 2>"$tmp/err"
    clean "$tmp/out" "procs --from $input --json"
    [ "$(jq -r '.processes[] | select(.pid == 7001) | .command' "$tmp/out")" = \
        "/opt/conda/bin/python -m ipykernel_launcher -f /home/carol/.local/share/jupyter/runtime/kernel-1.json$SAFE" ] ||
        fail "procs --from $input --json: command $(jq '[.processes[] | select(.pid == 7001) | .command]' "$tmp/out")"

    # carol's process is refused (another user's): status 2, and its user and command are shown.
    "$GPUDOCTOR" reap --from "$f" --idle 1s >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [ "$rc" = 2 ] || fail "reap --from $input: exit $rc: $(cat -v "$tmp/err")"
    clean "$tmp/out" "reap --from $input"
    clean "$tmp/err" "reap --from $input (stderr)"
    shows "$tmp/out" "carol$SAFE" "reap --from $input: the user"
    "$GPUDOCTOR" reap --from "$f" --idle 1s --json >"$tmp/out" 2>"$tmp/err"
    clean "$tmp/out" "reap --from $input --json"
done

# Errors quote the file escaped: a key with an escape sequence, bytes that are not UTF-8.
printf '{"schema": "gpudoctor.snapshot/1", "x\\u001b[2J\\u009b1m": 1}\n' >"$tmp/key.json"
printf '{"schema": "gpudoctor.snapshot/1", "hostname": "a\033[2J\377"}\n' >"$tmp/utf8.json"
printf '{"schema": "gpudoctor.snapshot/1", "hostname": "a\033[2J"}\n' >"$tmp/raw.json"
printf '{"schema": "gpudoctor.snapshot/1", "hostname": \302\2332J}\n' >"$tmp/token.json"
for f in key.json utf8.json raw.json token.json; do
    for cmd in check procs reap; do
        "$GPUDOCTOR" $cmd --from "$tmp/$f" >"$tmp/out" 2>"$tmp/err"
        rc=$?
        [ "$rc" = 3 ] || fail "$cmd --from $f: exit $rc, expected 3 (could not check)"
        [ "$(wc -l <"$tmp/err")" = 1 ] || fail "$cmd --from $f: not one line on stderr: $(cat -v "$tmp/err")"
        grep -qF "$tmp/$f:1:" "$tmp/err" || fail "$cmd --from $f: no file:line in: $(cat -v "$tmp/err")"
        clean "$tmp/err" "$cmd --from $f (stderr)"
    done
done
grep -qF 'unknown key "x\x1b[2J\xc2\x9b1m"' <("$GPUDOCTOR" check --from "$tmp/key.json" 2>&1) ||
    fail "the unknown key is not quoted escaped: $("$GPUDOCTOR" check --from "$tmp/key.json" 2>&1 | cat -v)"

e2e_done "ok"
