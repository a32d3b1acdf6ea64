#!/usr/bin/env bash
# Every command that writes output, against the troubled simulator scenario, with its output taken
# away: standard output on a full device, closed, or a pipe nobody reads; -o / --textfile / --record
# on a full device, a full disk, a read-only directory, a directory that does not exist; and
# SIGINT/SIGTERM while it runs. Each must end with its documented status (docs/reliability.md, "Exit
# status when the output fails"): a pipe whose reader left is a normal end (the command's own
# status, nothing said), anything else one message naming what could not be written and the errno
# text; no sanitizer report or crash, no temporary or partial file, and no NVML helper left running.
set -uo pipefail
: "${GPUDOCTOR:?}" "${SRC:?}"
SIM_LIB=${SIM_LIB:-}
[ -n "$SIM_LIB" ] && [ -e "$SIM_LIB" ] || { echo "SKIP: the NVML simulator is not built"; exit 77; }

SC=$SRC/tests/scenarios/troubled-8xh100
export GPUDOCTOR_NVML_LIB=$SIM_LIB NVML_SIM_SCENARIO=$SC/scenario.json NVML_SIM_PROC=$SC/root/proc
export GPUDOCTOR_CONFIG=/dev/null NVML_SIM_QUIET=1 NO_COLOR=1
unset NVML_SIM_EPOCH
R=(--root "$SC/root")
. "$SRC/tests/e2e/lib.bash"
need jq

ENOSPC="No space left on device"
EBADF="Bad file descriptor"
ENOENT="No such file or directory"

# A fake scontrol for slurm-check: the node is idle, not drained (--dry-run changes nothing).
cat >"$tmp/scontrol" <<'EOF'
#!/bin/sh
[ "$1 $2 $3" = "show node -o" ] || exit 1
echo "NodeName=$4 Arch=x86_64 CoresPerSocket=1 CPUAlloc=0 State=IDLE ThreadsPerCore=1"
EOF
chmod 755 "$tmp/scontrol"

# name|command line: each writes its result on standard output.
CASES=(
    "check|check ${R[*]} --window 0"
    "check|check ${R[*]} --window 0 --json"
    "explain|explain health.xid"
    "explain|explain --list"
    "snapshot|snapshot ${R[*]}"
    "procs|procs ${R[*]} --window 0"
    "procs|procs ${R[*]} --window 0 --json"
    "reap|reap ${R[*]} --window 0"
    "reap|reap ${R[*]} --window 0 --json"
    "serve|serve --once ${R[*]} --window 0"
    "slurm-check|slurm-check ${R[*]} --node n1 --scontrol $tmp/scontrol --dry-run"
    "watch|watch --plain -n 0.1 -c 3 ${R[*]}"
)

# clean WHAT: standard error has no crash or sanitizer report, and the status is not a signal's.
clean() {
    local what=$1
    if grep -Eq 'AddressSanitizer|LeakSanitizer|runtime error:|Segmentation|core dumped|Aborted' \
        "$tmp/err"; then
        fail "$what: crashed: $(head -c 600 "$tmp/err")"
    fi
}

# one_line WHAT REGEX: standard error is exactly one line, matching REGEX.
one_line() {
    local what=$1 re=$2 n
    n=$(wc -l <"$tmp/err")
    if [ "$n" != 1 ] || ! grep -Eq -- "$re" "$tmp/err"; then
        fail "$what: wanted one line matching '$re' on stderr, got $n: $(head -c 600 "$tmp/err")"
    fi
}

status() {
    [ "$1" = "$2" ] || fail "$3: exit $1, expected $2; stderr: $(head -c 400 "$tmp/err")"
}

# no_leftovers WHAT DIR [ALLOWED...]: DIR holds nothing but ALLOWED.
no_leftovers() {
    local what=$1 dir=$2 f
    shift 2
    for f in "$dir"/* "$dir"/.[!.]*; do
        [ -e "$f" ] || continue
        case " $* " in *" ${f##*/} "*) continue ;; esac
        fail "$what: left $f behind"
    done
}

# ---- standard output taken away ----
for c in "${CASES[@]}"; do
    name=${c%%|*}
    read -ra args <<<"${c#*|}"
    what="${args[*]:0:2}"
    want_err=3

    # The normal run: its status is what a reader that was fast enough gets.
    timeout 30 "$GPUDOCTOR" "${args[@]}" >"$tmp/out" 2>"$tmp/err"
    normal=$?
    clean "$what"
    [ "$normal" -lt 64 ] && [ -s "$tmp/out" ] || fail "$what: normal run: exit $normal, $(wc -c <"$tmp/out") bytes"

    timeout 30 "$GPUDOCTOR" "${args[@]}" >/dev/full 2>"$tmp/err"
    status $? "$want_err" "$what >/dev/full"
    clean "$what >/dev/full"
    one_line "$what >/dev/full" "^gpudoctor $name: cannot write to standard output: $ENOSPC\$"

    timeout 30 "$GPUDOCTOR" "${args[@]}" >&- 2>"$tmp/err"
    status $? "$want_err" "$what >&-"
    clean "$what >&-"
    one_line "$what >&-" "^gpudoctor $name: cannot write to standard output: $EBADF\$"

    # A pipe whose reader is gone before anything is written: a FIFO opened both ways, a write end
    # taken, the other closed. SIGPIPE is ignored, so the write fails with EPIPE: a reader that
    # goes away is how a pipe ends (`check | head`), so every command ends as it would have, with
    # its own status, and says nothing (issue 11). /dev/full above is not a closed pipe.
    rm -f "$tmp/fifo"
    mkfifo "$tmp/fifo"
    exec 3<>"$tmp/fifo" 4>"$tmp/fifo" 3<&-
    timeout 30 "$GPUDOCTOR" "${args[@]}" >&4 2>"$tmp/err"
    rc=$?
    exec 4>&-
    clean "$what | (closed)"
    want=$normal
    [ "$name" = watch ] && want=0
    status "$rc" "$want" "$what | (closed)"
    [ -s "$tmp/err" ] && fail "$what | (closed): said $(head -c 300 "$tmp/err")"

    # | head -c1: whether a write comes after head exits is a race; either way the same status
    # as a reader that read everything, and nothing said.
    timeout 30 "$GPUDOCTOR" "${args[@]}" 2>"$tmp/err" | head -c1 >/dev/null
    rc=${PIPESTATUS[0]}
    clean "$what | head -c1"
    status "$rc" "$want" "$what | head -c1"
    [ -s "$tmp/err" ] && fail "$what | head -c1: said $(head -c 300 "$tmp/err")"
done

# watch without --count ends soon after its reader does, with 0.
start=$SECONDS
timeout 20 "$GPUDOCTOR" watch --plain -n 0.1 "${R[@]}" 2>"$tmp/err" | head -c1 >/dev/null
rc=${PIPESTATUS[0]}
status "$rc" 0 "watch --plain | head -c1 (no --count)"
[ $((SECONDS - start)) -lt 15 ] || fail "watch --plain went on $((SECONDS - start)) s after its reader left"

# ---- files: -o, --textfile, --record ----
# A file that cannot be created: the directory does not exist.
mkdir "$tmp/d"
"$GPUDOCTOR" snapshot "${R[@]}" -o "$tmp/d/none/s.json" 2>"$tmp/err"
status $? 3 "snapshot -o (no directory)"
one_line "snapshot -o (no directory)" "^gpudoctor snapshot: .*$tmp/d/none/s.json: $ENOENT\$"
# A directory given as the file: said before the collection, a usage error.
"$GPUDOCTOR" snapshot "${R[@]}" -o "$tmp/d" 2>"$tmp/err"
status $? 64 "snapshot -o (a directory)"
one_line "snapshot -o (a directory)" "^gpudoctor snapshot: $tmp/d is a directory: give a file name\$"
"$GPUDOCTOR" watch --plain -n 0.1 -c 2 "${R[@]}" --record "$tmp/d/none/r.jsonl" >/dev/null 2>"$tmp/err"
status $? 3 "watch --record (no directory)"
one_line "watch --record (no directory)" "^gpudoctor watch: --record $tmp/d/none/r.jsonl: $ENOENT\$"
"$GPUDOCTOR" serve --once "${R[@]}" --window 0 --textfile "$tmp/d/none" >/dev/null 2>"$tmp/err"
status $? 3 "serve --textfile (no directory)"
one_line "serve --textfile (no directory)" "^gpudoctor serve: --textfile $tmp/d/none: $ENOENT\$"
no_leftovers "no directory" "$tmp/d"

# A device: written in place, never replaced by a rename (as root, a rename turned /dev/full into a
# regular file). Only ever a private node: a gpudoctor with that bug must not break this machine's
# /dev/full for everyone else.
if mknod "$tmp/d/full" c 1 7 2>/dev/null; then
    "$GPUDOCTOR" snapshot "${R[@]}" -o "$tmp/d/full" 2>"$tmp/err"
    status $? 3 "snapshot -o DEVICE"
    one_line "snapshot -o DEVICE" "^gpudoctor snapshot: cannot write $tmp/d/full: $ENOSPC\$"
    [ -c "$tmp/d/full" ] || fail "snapshot -o DEVICE replaced the device: $(ls -l "$tmp/d/full")"
    no_leftovers "snapshot -o DEVICE" "$tmp/d" full
    rm -f "$tmp/d/full"
else
    echo "note: mknod refused: snapshot -o DEVICE not run"
fi
# /dev/stdout: a link to a pipe here, written in place; the snapshot arrives whole. A private link
# again (the same target as /dev/stdout), so a gpudoctor that replaced it could only harm the test.
ln -s /proc/self/fd/1 "$tmp/d/stdout"
"$GPUDOCTOR" snapshot "${R[@]}" -o "$tmp/d/stdout" 2>"$tmp/err" | cat >"$tmp/via-stdout.json"
status "${PIPESTATUS[0]}" 0 "snapshot -o /dev/stdout (a pipe)"
jq -e '.schema == "gpudoctor.snapshot/1"' "$tmp/via-stdout.json" >/dev/null ||
    fail "snapshot -o /dev/stdout (a pipe): not a snapshot"
[ -L "$tmp/d/stdout" ] || fail "snapshot -o /dev/stdout (a pipe) replaced the link"
no_leftovers "snapshot -o /dev/stdout" "$tmp/d" stdout
rm -f "$tmp/d/stdout"

# A recording on a full device: watching goes on, the reason is said at the end, status 3.
"$GPUDOCTOR" watch --plain -n 0.1 -c 3 "${R[@]}" --record /dev/full >"$tmp/out" 2>"$tmp/err"
status $? 3 "watch --record /dev/full"
one_line "watch --record /dev/full" "^gpudoctor watch: recording to /dev/full stopped: $ENOSPC\$"
[ "$(grep -vc '^#' "$tmp/out")" -ge 9 ] || fail "watch --record /dev/full: watching stopped too"

# A symbolic link keeps pointing at the file it names; that file is replaced whole.
echo old >"$tmp/d/real.json"
ln -s real.json "$tmp/d/link.json"
"$GPUDOCTOR" snapshot "${R[@]}" -o "$tmp/d/link.json" 2>"$tmp/err"
status $? 0 "snapshot -o SYMLINK"
[ -L "$tmp/d/link.json" ] || fail "snapshot -o SYMLINK replaced the link"
jq -e '.schema == "gpudoctor.snapshot/1"' "$tmp/d/real.json" >/dev/null ||
    fail "snapshot -o SYMLINK: the file it names is not the snapshot"
no_leftovers "snapshot -o SYMLINK" "$tmp/d" real.json link.json
rm -f "$tmp/d"/*

# A full disk and a read-only directory: small tmpfs mounts in a private mount namespace (root), or
# a directory without write permission (anyone else; a full disk is then not tested).
if [ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null; then
    mkdir "$tmp/full" "$tmp/ro"
    cat >"$tmp/mounted.sh" <<'EOF'
set -u
mount -t tmpfs -o size=16k tmpfs "$T/full" && mount -t tmpfs -o size=128k tmpfs "$T/rec" &&
    mount -t tmpfs -o ro,size=16k tmpfs "$T/ro" || exit 99
say() { echo "$1 $2" >>"$T/results"; cp "$T/err" "$T/err.$1"; }
# A snapshot bigger than the disk, over an old one that must survive.
echo old >"$T/full/s.json"
"$GPUDOCTOR" snapshot "${R[@]}" -o "$T/full/s.json" 2>"$T/err"
say snap-full $?
ls -A "$T/full" >"$T/ls.full"
cp "$T/full/s.json" "$T/old.after"
"$GPUDOCTOR" serve --once "${R[@]}" --window 0 --textfile "$T/full" 2>"$T/err" >/dev/null
say textfile-full $?
ls -A "$T/full" >"$T/ls.full2"
"$GPUDOCTOR" snapshot "${R[@]}" -o "$T/ro/s.json" 2>"$T/err"
say snap-ro $?
"$GPUDOCTOR" watch --plain -n 0.1 -c 3 "${R[@]}" --record "$T/ro/r.jsonl" >/dev/null 2>"$T/err"
say record-ro $?
"$GPUDOCTOR" serve --once "${R[@]}" --window 0 --textfile "$T/ro" >/dev/null 2>"$T/err"
say textfile-ro $?
ls -A "$T/ro" >"$T/ls.ro"
# A recording that fills the disk: whole lines up to there. (128k: the first line, the context,
# is about 88 KB with the scenario's 8 x 18 NVLinks; each sample line adds about 10 KB.)
"$GPUDOCTOR" watch --plain -n 0.1 -c 10 "${R[@]}" --record "$T/rec/r.jsonl" >/dev/null 2>"$T/err"
say record-full $?
cp "$T/rec/r.jsonl" "$T/r.jsonl"
ls -A "$T/rec" >"$T/ls.rec"
EOF
    mkdir "$tmp/rec"
    T=$tmp GPUDOCTOR=$GPUDOCTOR unshare -m bash -c \
        "R=(${R[*]}); . '$tmp/mounted.sh'"
    rc=$?
    if [ "$rc" = 99 ]; then
        echo "note: tmpfs mounts refused: full disk and read-only cases not run"
    else
        got() { sed -n "s/^$1 //p" "$tmp/results"; }
        cp "$tmp/err.snap-full" "$tmp/err"
        status "$(got snap-full)" 3 "snapshot -o (full disk)"
        one_line "snapshot -o (full disk)" "^gpudoctor snapshot: cannot write $tmp/full/s.json: $ENOSPC\$"
        [ "$(cat "$tmp/ls.full")" = s.json ] || fail "snapshot -o (full disk) left: $(cat "$tmp/ls.full")"
        [ "$(cat "$tmp/old.after")" = old ] || fail "snapshot -o (full disk) damaged the old file"
        cp "$tmp/err.textfile-full" "$tmp/err"
        status "$(got textfile-full)" 3 "serve --textfile (full disk)"
        one_line "serve --textfile (full disk)" \
            "^gpudoctor serve: --textfile: cannot write $tmp/full/gpudoctor.prom: $ENOSPC\$"
        [ "$(cat "$tmp/ls.full2")" = s.json ] || fail "serve --textfile (full disk) left: $(cat "$tmp/ls.full2")"
        cp "$tmp/err.snap-ro" "$tmp/err"
        status "$(got snap-ro)" 3 "snapshot -o (read-only)"
        one_line "snapshot -o (read-only)" \
            "^gpudoctor snapshot: cannot write $tmp/ro/s.json: Read-only file system\$"
        cp "$tmp/err.record-ro" "$tmp/err"
        status "$(got record-ro)" 3 "watch --record (read-only)"
        one_line "watch --record (read-only)" "^gpudoctor watch: --record $tmp/ro/r.jsonl: Read-only file system\$"
        cp "$tmp/err.textfile-ro" "$tmp/err"
        status "$(got textfile-ro)" 3 "serve --textfile (read-only)"
        one_line "serve --textfile (read-only)" "^gpudoctor serve: --textfile $tmp/ro: Read-only file system\$"
        [ -s "$tmp/ls.ro" ] && fail "read-only directory holds: $(cat "$tmp/ls.ro")"
        cp "$tmp/err.record-full" "$tmp/err"
        status "$(got record-full)" 3 "watch --record (full disk)"
        one_line "watch --record (full disk)" \
            "^gpudoctor watch: recording to $tmp/rec/r.jsonl stopped: $ENOSPC\$"
        [ "$(cat "$tmp/ls.rec")" = r.jsonl ] || fail "watch --record (full disk) left: $(cat "$tmp/ls.rec")"
        lines=$(wc -l <"$tmp/r.jsonl")
        [ "$lines" -ge 2 ] || fail "watch --record (full disk): $lines lines kept"
        [ "$(tail -c1 "$tmp/r.jsonl" | od -An -c | tr -d ' ')" = '\n' ] ||
            fail "watch --record (full disk): the last line is cut"
        [ "$(jq -c . "$tmp/r.jsonl" 2>/dev/null | wc -l)" = "$lines" ] ||
            fail "watch --record (full disk): not every line is JSON"
        "$GPUDOCTOR" check --from "$tmp/r.jsonl" >/dev/null 2>"$tmp/err"
        status $? 2 "check --from the recording cut by a full disk"
    fi
elif [ "$(id -u)" != 0 ]; then
    mkdir "$tmp/ro"
    chmod 555 "$tmp/ro"
    "$GPUDOCTOR" snapshot "${R[@]}" -o "$tmp/ro/s.json" 2>"$tmp/err"
    status $? 3 "snapshot -o (read-only)"
    one_line "snapshot -o (read-only)" "^gpudoctor snapshot: cannot write $tmp/ro/s.json: Permission denied\$"
    no_leftovers "snapshot -o (read-only)" "$tmp/ro"
    chmod 755 "$tmp/ro"
else
    echo "note: no mount namespace: full disk and read-only cases not run"
fi

# ---- signals ----
# Job control: background commands get SIGINT as a terminal would give it (a script's background
# jobs otherwise start with SIGINT ignored).
set -m
# sig_case SIGNAL WANT-STATUS MAX-SECONDS READY ARGS...: starts gpudoctor, waits 1 s and until
# READY (a command) succeeds, signals it, checks the status, that it ended within MAX-SECONDS and
# that its NVML helper went with it. A one-shot command dies at once; watch and serve first finish
# the collection under way, which --timeout bounds (10 s; seconds under ASan on a busy machine).
sig_case() {
    local sig=$1 want=$2 max=$3 ready=$4 pid helper rc t0 st
    shift 4
    "$GPUDOCTOR" "$@" >"$tmp/out" 2>"$tmp/err" &
    pid=$!
    sleep 1
    for _ in $(seq 200); do
        eval "$ready" && break
        sleep 0.1
    done
    helper=$(pgrep -P "$pid" | head -1)
    t0=$SECONDS
    kill -s "$sig" "$pid"
    wait "$pid" 2>/dev/null
    rc=$?
    status "$rc" "$want" "$* (SIG$sig)"
    clean "$* (SIG$sig)"
    [ $((SECONDS - t0)) -le "$max" ] || fail "$* took $((SECONDS - t0)) s to end on SIG$sig"
    if [ -n "$helper" ]; then
        sleep 0.2
        st=$(ps -o stat= -p "$helper" 2>/dev/null | tr -d ' ')
        case "$st" in "" | Z*) ;; *) fail "$* (SIG$sig): NVML helper $helper still there ($st)" ;; esac
    fi
}
# One-shot commands die of the signal (130, 143): a script that runs them stops too.
mkdir "$tmp/s"
for sig in INT TERM; do
    n=$([ $sig = INT ] && echo 130 || echo 143)
    rm -f "$tmp/s"/*
    sig_case $sig "$n" 5 true check "${R[@]}" --window 30
    [ -s "$tmp/out" ] && fail "check (SIG$sig) printed a report"
    [ -s "$tmp/err" ] && fail "check (SIG$sig) said: $(head -c 300 "$tmp/err")"
    sig_case $sig "$n" 5 true procs "${R[@]}" --window 30
    sig_case $sig "$n" 5 true snapshot "${R[@]}" --window 30 -o "$tmp/s/snap.json"
    no_leftovers "snapshot -o (SIG$sig)" "$tmp/s"
    # watch and serve stop cleanly: 0, the recording whole.
    rm -f "$tmp/s"/*
    sig_case $sig 0 12 '[ "$(wc -l <"$tmp/s/r.jsonl" 2>/dev/null)" -ge 2 ]' \
        watch --plain -n 0.2 "${R[@]}" --record "$tmp/s/r.jsonl"
    [ "$(jq -c . "$tmp/s/r.jsonl" 2>/dev/null | wc -l)" = "$(wc -l <"$tmp/s/r.jsonl")" ] &&
        [ "$(wc -l <"$tmp/s/r.jsonl")" -ge 2 ] || fail "watch --record (SIG$sig): not whole JSON lines"
    no_leftovers "watch --record (SIG$sig)" "$tmp/s" r.jsonl
    rm -f "$tmp/s"/*
    sig_case $sig 0 12 '[ -s "$tmp/s/gpudoctor.prom" ]' \
        serve --listen 127.0.0.1:0 "${R[@]}" --window 0 --interval 1s --textfile "$tmp/s"
    grep -q "stopping after" "$tmp/err" || fail "serve (SIG$sig): no stop message: $(head -c 300 "$tmp/err")"
    no_leftovers "serve --textfile (SIG$sig)" "$tmp/s" gpudoctor.prom
done
set +m

e2e_done "all checks passed"
