#!/usr/bin/env bash
# Every action reap takes reaches syslog, facility authpriv, ident "gpudoctor": the script runs
# itself again in a private mount namespace whose /dev is a tmpfs, with a stand-in syslog daemon
# (tests/helpers/syslog-sink.c) listening at /dev/log, then has reap end one process and abort
# another whose pid "changed". Needs root (mount namespace); skipped otherwise.
if [ -z "${REAP_SYSLOG_INNER:-}" ]; then
    [ "$(id -u)" = 0 ] || { echo "SKIP: needs root (a mount namespace)"; exit 77; }
    unshare -m true 2>/dev/null || { echo "SKIP: mount namespaces not allowed here"; exit 77; }
    REAP_SYSLOG_INNER=1 exec unshare -m --propagation private bash "$0" "$@"
fi
mount -t tmpfs -o mode=755 none /dev
mknod -m 666 /dev/null c 1 3
ln -s /proc/self/fd /dev/fd
. "$SRC/tests/e2e/reap-lib.bash"

"$HELPERS/syslog-sink" /dev/log >"$TMP/syslog" &
PIDS+=("$!")
for _ in $(seq 100); do grep -q ready "$TMP/syslog" 2>/dev/null && break; sleep 0.02; done
grep -q ready "$TMP/syslog" || { echo "FAIL: the syslog sink did not start"; exit 1; }

start_sleep
victim=$SPAWNED
scenario "$victim:0:2"
run kill reap --pid "$victim" --kill --yes --window 0
status 0 "kill"
gone "$victim" || fail "$victim is still there"
sleep 0.2
# <85>: facility authpriv (10) * 8 + severity notice (5)
has_line "$TMP/syslog" "^<85>.*gpudoctor\[[0-9]+\]: reap: by=root pid=$victim start_ticks=[0-9]+ started=[0-9TZ:.-]+ user=\"root\" command=\"sleep 300\" signal=SIGTERM result=\"exited after SIGTERM" "syslog line of the kill"

# An aborted target is logged too, as a warning (severity 4: <84>).
start_sleep
other=$SPAWNED
FIX=$TMP/root
mkdir -p "$FIX/proc/$other" "$FIX/etc"
cp /etc/passwd "$FIX/etc/"
grep '^btime ' /proc/stat >"$FIX/proc/stat"
s=$(cat "/proc/$other/stat")
read -ra f <<<"${s#*) }"
f[19]=$((f[19] + 7))
echo "${s%%) *}) ${f[*]}" >"$FIX/proc/$other/stat"
cp "/proc/$other/status" "/proc/$other/cmdline" "$FIX/proc/$other/"
scenario "$other:0:2"
run changed reap --root "$FIX" --pid "$other" --kill --yes --window 0
status 2 "changed"
alive "$other" || fail "$other was signalled"
sleep 0.2
has_line "$TMP/syslog" "^<84>.*gpudoctor\[[0-9]+\]: reap: by=root pid=$other .* signal=none result=\"pid $other is another process now" "syslog line of the abort"
[ "$(grep -c 'reap: ' "$TMP/syslog")" = 2 ] || fail "expected 2 syslog lines: $(cat "$TMP/syslog")"
finish
