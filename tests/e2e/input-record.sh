#!/usr/bin/env bash
# watch --record FILE holds every user's command lines, and watch often runs as root: the file is
# created 0600 (or the umask's stricter mode), never through a symbolic link, and an existing file
# is truncated only when it is the user's own with one name (its mode narrowed to 0600). A link, a
# dangling link, another user's file or FIFO, a hard-linked file, a FIFO nobody reads and a
# directory are refused before anything is collected (status 3, one line naming the file and the
# reason), and what was there is left as it was. A character device (/dev/null) is written in
# place.
set -uo pipefail
: "${GPUDOCTOR:?}" "${SRC:?}"
SIM_LIB=${SIM_LIB:-}
[ -n "$SIM_LIB" ] && [ -e "$SIM_LIB" ] || { echo "SKIP: the NVML simulator is not built"; exit 77; }
SC=$SRC/tests/scenarios/troubled-8xh100
export GPUDOCTOR_NVML_LIB=$SIM_LIB NVML_SIM_SCENARIO=$SC/scenario.json NVML_SIM_PROC=$SC/root/proc
export GPUDOCTOR_CONFIG=/dev/null NVML_SIM_QUIET=1 NO_COLOR=1
. "$SRC/tests/e2e/lib.bash"
chmod 755 "$tmp"
# record FILE: one reading recorded into FILE; sets RC and ERR.
record() {
    timeout -k 2 30 "$GPUDOCTOR" watch --plain -n 0.1 -c 1 --root "$SC/root" --record "$1" \
        >/dev/null 2>"$tmp/err"
    RC=$?
    ERR=$(cat "$tmp/err")
}
refused() { # FILE REASON WHAT
    record "$1"
    [ "$RC" = 3 ] || fail "$3: exit $RC, expected 3 (refused); stderr: $ERR"
    [ "$ERR" = "gpudoctor watch: --record $1: $2" ] || fail "$3: stderr '$ERR', expected the reason '$2'"
}
mode() { stat -c %a "$1"; }

# A new file: 0600 whatever the umask allows, or stricter.
(umask 022 && record "$tmp/new.jsonl")
[ -s "$tmp/new.jsonl" ] || fail "new file: nothing recorded: $(cat "$tmp/err")"
[ "$(mode "$tmp/new.jsonl")" = 600 ] || fail "new file (umask 022): mode $(mode "$tmp/new.jsonl"), not 600"
(umask 0277 && record "$tmp/strict.jsonl")
[ "$(mode "$tmp/strict.jsonl")" = 400 ] || fail "new file (umask 277): mode $(mode "$tmp/strict.jsonl"), not 400"

# An existing file of our own: truncated (a recording starts anew), its mode narrowed.
printf 'old content that is longer than nothing\n%.0s' {1..2000} >"$tmp/own.jsonl"
chmod 644 "$tmp/own.jsonl"
record "$tmp/own.jsonl"
[ "$RC" = 0 ] || fail "own file: exit $RC: $ERR"
grep -q 'old content' "$tmp/own.jsonl" && fail "own file: not truncated"
head -1 "$tmp/own.jsonl" | grep '"schema"' >/dev/null || fail "own file: no context line"
[ "$(mode "$tmp/own.jsonl")" = 600 ] || fail "own file: mode $(mode "$tmp/own.jsonl"), not 600"

# A symbolic link, to a file and dangling: refused, the file untouched, nothing created.
echo "precious" >"$tmp/target"
chmod 644 "$tmp/target"
ln -s target "$tmp/link.jsonl"
refused "$tmp/link.jsonl" "is a symbolic link: give the file itself (a link could point anywhere)" \
    "a symbolic link"
[ "$(cat "$tmp/target")" = precious ] || fail "a symbolic link: the file it names was changed"
ln -s nowhere "$tmp/dangling.jsonl"
refused "$tmp/dangling.jsonl" "is a symbolic link: give the file itself (a link could point anywhere)" \
    "a dangling link"
[ -e "$tmp/nowhere" ] && fail "a dangling link: the file it names was created"

# A file with two names: refused (the other name could be anything).
echo "precious" >"$tmp/linked"
ln "$tmp/linked" "$tmp/hard.jsonl"
refused "$tmp/hard.jsonl" \
    "has 2 names (hard links): one could be a file that must not be overwritten; give a new file" \
    "a hard link"
[ "$(cat "$tmp/linked")" = precious ] || fail "a hard link: the file was changed"

# A directory; a FIFO nobody reads (refused at once, not waited on).
mkdir "$tmp/dir.jsonl"
refused "$tmp/dir.jsonl" "Is a directory" "a directory"
mkfifo "$tmp/fifo.jsonl"
refused "$tmp/fifo.jsonl" "is a FIFO that nobody reads" "a FIFO without a reader"
# A FIFO of ours with a reader: written in place.
timeout 30 cat "$tmp/fifo.jsonl" >"$tmp/from-fifo" &
reader=$!
sleep 0.2
record "$tmp/fifo.jsonl"
wait "$reader"
[ "$RC" = 0 ] || fail "a FIFO with a reader: exit $RC: $ERR"
head -1 "$tmp/from-fifo" | grep '"schema"' >/dev/null || fail "a FIFO with a reader: no context line came"

# A character device: written in place.
record /dev/null
[ "$RC" = 0 ] || fail "/dev/null: exit $RC: $ERR"
[ -c /dev/null ] || fail "/dev/null is no longer a device"

# Another user's file and FIFO (needs root to make them): refused, left as they were.
if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1; then
    uid=$(id -u nobody)
    echo "theirs" >"$tmp/theirs.jsonl"
    chown nobody "$tmp/theirs.jsonl"
    refused "$tmp/theirs.jsonl" \
        "belongs to uid $uid, not to uid 0 who runs this: remove it first, or give a new file" \
        "another user's file"
    [ "$(cat "$tmp/theirs.jsonl")" = theirs ] || fail "another user's file was changed"
    mkfifo "$tmp/their-fifo.jsonl"
    chown nobody "$tmp/their-fifo.jsonl"
    timeout 30 cat "$tmp/their-fifo.jsonl" >"$tmp/from-their-fifo" &
    reader=$!
    sleep 0.2
    refused "$tmp/their-fifo.jsonl" \
        "belongs to uid $uid, not to uid 0 who runs this: remove it first, or give a new file" \
        "another user's FIFO"
    kill "$reader" 2>/dev/null
    wait "$reader" 2>/dev/null
    [ -s "$tmp/from-their-fifo" ] && fail "another user's FIFO was written to"
else
    echo "note: not root: another user's file and FIFO not tried"
fi

e2e_done "ok"
