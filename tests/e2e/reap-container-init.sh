#!/usr/bin/env bash
# A container's init (PID 1 of a PID namespace below this one) is never signalled. Here it does
# not reap a defunct GPU child, which makes it "the parent to end" for reap --defunct; but an init
# ignores SIGTERM, and the SIGKILL after it would end every process of the container, a busy GPU
# job the plan never names among them. reap refuses it, says why, and the job lives on.
# The script runs as a child subreaper, so the namespace's processes are reaped by it at the end.
if [ -z "${REAP_SUBREAPER:-}" ]; then
    : "${HELPERS:?}"
    REAP_SUBREAPER=1 exec "$HELPERS/reap-target" subreaper bash "$0" "$@"
fi
. "$SRC/tests/e2e/reap-lib.bash"
command -v unshare >/dev/null && command -v perl >/dev/null ||
    { echo "SKIP: unshare or perl is not installed"; exit 77; }
unshare --pid --fork true 2>/dev/null ||
    { echo "SKIP: cannot make a PID namespace here (needs root or user namespaces)"; exit 77; }

# The namespace's init forks a child that exits at once (a zombie it never reaps, as it then runs
# sleep) and a GPU job that keeps working.
unshare --pid --fork perl -e '
    fork or exit 0;
    if (!fork) { exec $ARGV[0], "holder", "dd", "if=/dev/zero", "of=/dev/null", "bs=1M" }
    exec "sleep", "300"' "$HELPERS/reap-target" &
PIDS+=($!)
init=
for _ in $(seq 200); do
    for p in $(pgrep -x sleep); do
        grep -qE '^NSpid:[[:space:]]+[0-9]+[[:space:]]+1$' "/proc/$p/status" 2>/dev/null && init=$p
    done
    [ -n "$init" ] && [ -n "$(ps -o pid= --ppid "$init" | head -n2 | sed -n 2p)" ] && break
    sleep 0.02
done
[ -n "$init" ] || { echo "FAIL: the namespace's init did not start"; exit 1; }
PIDS+=("$init")
zombie=$(ps -o pid=,stat= --ppid "$init" | awk '$2 ~ /^Z/ { print $1 }')
job=$(ps -o pid=,comm= --ppid "$init" | awk '$2 == "dd" { print $1 }')
[ -n "$zombie" ] && [ -n "$job" ] || { echo "FAIL: no zombie ($zombie) or job ($job)"; exit 1; }
scenario "$zombie:0:10" "$job:1:30:95"

run dry reap --defunct --window 0.3 --json
check "[.targets[] | select(.pid == $init) | [.role, .disposition, .refusal]]" \
    '[["parent","refused","container-init"]]' "$TMP/dry.out"
check "[.targets[] | select(.pid == $init) | .advice[0] | test(\"init of a container\")]" '[true]' \
    "$TMP/dry.out"

run kill reap --defunct --kill --yes --grace 1s --window 0.3
has_line "$TMP/kill.out" "refused: PID $init is the init of a container \(PID 1 in its own PID namespace\)" \
    "text: why the container's init is not signalled"
sleep 0.3
alive "$init" || fail "the container's init $init was ended"
alive "$job" || fail "the GPU job $job inside the container was ended with its init"
finish
