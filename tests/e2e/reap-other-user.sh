#!/usr/bin/env bash
# Another user's process is never ended unless root asks with --all-users: a throwaway user
# (made here with useradd, removed at the end) runs a stopped GPU process; root's reap refuses
# it, root's reap --all-users ends it. Run as that user, reap refuses root's stopped process,
# refuses --all-users outright, and ends that user's own. Needs root; skipped otherwise.
. "$SRC/tests/e2e/reap-lib.bash"
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (useradd, processes of two users)"; exit 77; }
command -v useradd >/dev/null && command -v setpriv >/dev/null ||
    { echo "SKIP: useradd or setpriv missing"; exit 77; }

U=gpudoctor-reap
if ! id "$U" >/dev/null 2>&1; then
    useradd -r -M -s /usr/sbin/nologin "$U" || { echo "SKIP: useradd failed"; exit 77; }
    CLEANUP+=("userdel $U")
fi
uid=$(id -u "$U")
as_user() { setpriv --reuid="$uid" --regid="$uid" --clear-groups "$@"; }

# setpriv execs sleep: $! is the process itself (a shell function here would add a subshell)
setpriv --reuid="$uid" --regid="$uid" --clear-groups "$HELPERS/reap-target" holder sleep 300 &
theirs=$!
PIDS+=("$theirs")
became "$theirs" sleep
start_sleep
mine=$SPAWNED
kill -STOP "$theirs" "$mine"
scenario "$theirs:0:8" "$mine:1:2"
sleep 0.1

# root, without --all-users: the other user's process is refused, root's own is not touched
# either (the refusal is checked first: nothing is signalled when asked with --pid only).
run refuse reap --pid "$theirs" --kill --yes --window 0.3 --json
status 2 "another user's process"
check '[.targets[] | [.pid, .user, .disposition, .refusal]]' \
    "[[$theirs, \"$U\", \"refused\", \"other-user\"]]" "$TMP/refuse.out"
check '.targets[0].advice[0]' \
    "\"belongs to $U (uid $uid), not to you (root): add --all-users to end other users' processes\"" \
    "$TMP/refuse.out"
[ "$(state_of "$theirs")" = T ] || fail "the other user's process was touched: $(state_of "$theirs")"

# That user, not root: root's process is refused, --all-users is refused, its own is ended.
RC=0
as_user "$GPUDOCTOR" reap --pid "$mine" --kill --yes --window 0.3 --json </dev/null \
    >"$TMP/user.out" 2>"$TMP/user.err" || RC=$?
status 2 "a user reaping root's process"
check '[.targets[] | [.pid, .disposition, .refusal]]' "[[$mine, \"refused\", \"other-user\"]]" \
    "$TMP/user.out"
check '.targets[0].advice[0] | endswith("only root, with --all-users, ends other users'"'"' processes")' \
    'true' "$TMP/user.out"
[ "$(state_of "$mine")" = T ] || fail "root's process was touched by $U"
RC=0
as_user "$GPUDOCTOR" reap --all-users --window 0.3 </dev/null >"$TMP/userall.out" \
    2>"$TMP/userall.err" || RC=$?
status 64 "--all-users without root"
has_line "$TMP/userall.err" "--all-users needs root" "why --all-users is refused"
RC=0
as_user "$GPUDOCTOR" reap --stopped --kill --yes --window 0.3 --json </dev/null \
    >"$TMP/own.out" 2>"$TMP/own.err" || RC=$?
status 2 "a user reaping its own process (root's is refused on the way)"
check "[.targets[] | select(.pid == $theirs) | .result.outcome]" '["exited"]' "$TMP/own.out"
check "[.targets[] | select(.pid == $mine) | .refusal]" '["other-user"]' "$TMP/own.out"
gone "$theirs" || fail "$U's own process is still there"
has_line "$TMP/own.err" "^gpudoctor reap: by=$U pid=$theirs .*user=\"$U\".*signal=SIGTERM" "log of $U's reap"

# root with --all-users: another user's process goes.
setpriv --reuid="$uid" --regid="$uid" --clear-groups "$HELPERS/reap-target" holder sleep 300 &
theirs2=$!
PIDS+=("$theirs2")
became "$theirs2" sleep
kill -STOP "$theirs2"
scenario "$theirs2:0:8" "$mine:1:2"
sleep 0.1
run all reap --stopped --all-users --kill --yes --window 0.3 --json
status 0 "root with --all-users"
check "[.targets[] | [.pid, .result.outcome]] | sort" \
    "[[$theirs2, \"exited\"], [$mine, \"exited\"]] | sort" "$TMP/all.out"
gone "$theirs2" || fail "$U's process is still there after --all-users"
finish
