#!/usr/bin/env bash
# The state directory is trusted before it is used (docs/state.md, "Who may write it"): root
# never reads, writes or locks anything in a directory another user owns or can write, nor
# through a link at the directory: acknowledgements forged there silence nothing, a link planted
# there (or at the directory) leads nowhere, a FIFO in bench-last.json's place neither hangs the
# bench nor receives the snapshot; another user's state file in a trusted directory is not read.
# A user's own directory still works for that user.
set -u
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (files of another user)"; exit 77; }
command -v setpriv >/dev/null && id nobody >/dev/null 2>&1 || { echo "SKIP: setpriv or nobody missing"; exit 77; }
command -v jq >/dev/null || { echo "SKIP: jq missing"; exit 77; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
chmod 755 "$T"
export GPUDOCTOR_CONFIG=/dev/null NO_COLOR=1 LC_ALL=C.UTF-8 NVML_SIM_QUIET=1
export GPUDOCTOR_NVML_LIB=$SIM_LIB NVML_SIM_SCENARIO=$SRC/scenarios/troubled-8xh100.json
unset GPUDOCTOR_STATE_DIR
fail=0
die() { echo "FAIL: $*" >&2; fail=1; }
expect() { [ "$2" = "$3" ] || die "$1: got '$2', want '$3'"; }
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
check() { "$GPUDOCTOR" check --window 0 --width 400 --state-dir "$@" >"$T/out" 2>"$T/err"; echo $?; }
sum() { sha256sum "$1" | cut -d' ' -f1; }

# Acknowledgements that work in root's own directory: the two criticals acknowledged, status 1.
mkdir "$T/own"
expect "own directory, no acks" "$(check "$T/own")" 2
"$GPUDOCTOR" ack health.ecc-uncorrectable --gpu 2 --state-dir "$T/own" >/dev/null &&
    "$GPUDOCTOR" ack clock.thermal-slowdown --gpu 5 --state-dir "$T/own" >/dev/null ||
    die "ack in root's own directory failed"
expect "own directory, both acknowledged" "$(check "$T/own")" 1

# The same file in a directory of nobody's: not read (both criticals count), not replaced, no
# lock made there, and the report says which directory and why.
mkdir "$T/theirs"
cp "$T/own/state.json" "$T/theirs/state.json"
chown -R nobody "$T/theirs"
before=$(sum "$T/theirs/state.json")
expect "nobody's directory: forged acks" "$(check "$T/theirs")" 2
grep -q "state directory $T/theirs: owned by uid 65534, not by root who runs this: not used" "$T/out" ||
    die "nobody's directory: the report does not say why: $(grep -A1 Note "$T/out")"
grep -q "the state file was not updated: state directory $T/theirs: owned by uid 65534" "$T/err" ||
    die "nobody's directory: no note on stderr: $(cat "$T/err")"
expect "nobody's directory: state.json" "$(sum "$T/theirs/state.json")" "$before"
[ -e "$T/theirs/state.lock" ] && die "nobody's directory: state.lock made there"
"$GPUDOCTOR" ack health.xid --gpu 0 --state-dir "$T/theirs" >/dev/null 2>"$T/err"
expect "ack in nobody's directory: status" "$? $(cat "$T/err")" \
    "3 gpudoctor ack: state directory $T/theirs: owned by uid 65534, not by root who runs this: not used"

# A directory of root's that its group can write: refused the same way.
mkdir -m 770 "$T/group"
"$GPUDOCTOR" ack health.xid --gpu 0 --state-dir "$T/group" >/dev/null 2>"$T/err"
expect "group-writable directory" "$? $(cat "$T/err")" \
    "3 gpudoctor ack: state directory $T/group: writable by its group (mode 0770): not used (chmod go-w it)"
[ -e "$T/group/state.json" ] && die "group-writable directory: state.json written"

# The state directory is nobody's link, in nobody's directory, to a directory of root's: the
# link is not followed; what root keeps there is untouched.
mkdir -m 700 "$T/victim" "$T/par"
echo precious >"$T/victim/state.json"
chmod 600 "$T/victim/state.json"
chown nobody "$T/par"
as_nobody ln -s "$T/victim" "$T/par/state"
expect "linked directory: status" "$(check "$T/par/state")" 2
grep -q "state directory $T/par/state: a symbolic link, not followed" "$T/err" ||
    die "linked directory: $(cat "$T/err")"
expect "linked directory: the file it names" "$(cat "$T/victim/state.json")" precious
expect "linked directory: what it holds" "$(ls "$T/victim")" state.json

# Another user's state file in root's directory: not read, not replaced.
mkdir "$T/mixed"
cp "$T/own/state.json" "$T/mixed/state.json"
chown nobody "$T/mixed/state.json"
expect "nobody's file: status" "$(check "$T/mixed")" 2
grep -q "state file $T/mixed/state.json: not the file of uid 0 who runs this, nor root's" "$T/err" ||
    die "nobody's file: $(cat "$T/err")"
expect "nobody's file: owner" "$(stat -c %u "$T/mixed/state.json")" 65534

# A user's own directory is that user's to use.
mkdir "$T/user"
chown nobody "$T/user"
as_nobody "$GPUDOCTOR" check --window 0 --state-dir "$T/user" >/dev/null 2>"$T/err"
expect "nobody in its own directory: status" "$?" 2
expect "nobody in its own directory: owner" "$(stat -c %U "$T/user/state.json")" nobody
[ -s "$T/err" ] && die "nobody in its own directory: $(cat "$T/err")"

# bench: a FIFO as bench-last.json in nobody's directory is neither opened (it blocked until
# someone read the snapshot) nor replaced; the bench ends with a note.
mkdir "$T/bench"
chown nobody "$T/bench"
as_nobody mkfifo "$T/bench/bench-last.json"
GPUDOCTOR_CUDA_LIB=$BUILD/sim-cuda/libcuda.so.1 NVML_SIM_SCENARIO=$SRC/scenarios/healthy-8xh100.json \
    timeout 60 "$GPUDOCTOR" bench --force --duration 0.1 --state-dir "$T/bench" >/dev/null 2>"$T/err"
rc=$?
[ "$rc" = 124 ] && die "bench: blocked on the FIFO"
grep -q "the result was not kept as the last one: state directory $T/bench: owned by uid 65534" "$T/err" ||
    die "bench: $(cat "$T/err")"
[ -p "$T/bench/bench-last.json" ] || die "bench: the FIFO was replaced"

exit $fail
