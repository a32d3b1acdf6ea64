#!/usr/bin/env bash
# valgrind memcheck over check (--window 0 and 0.5, --json), snapshot -o, check --from that
# snapshot, procs (table and --json), explain and a serve session (/metrics, /findings, /healthz,
# then SIGTERM), on the troubled simulator scenario: no memory error and no definite or indirect
# leak, in gpudoctor and in the NVML helper it forks.
#
# The NVML helper is a fork of gpudoctor (check, snapshot, procs: one thread) or gpudoctor started
# again (serve: fork, then execve, since it has threads). With --trace-children valgrind runs in
# it either way, each process writes its own log (vg.PID.log), and this script reads them all.
# Every leak and every memory error counts, in gpudoctor and in the helper alike: a fork of a
# process with one thread still reaches every block its parent could; a fresh image has none of
# its parent's. The helper's log is required (a case whose helper went unchecked fails).
# tests/valgrind.supp holds what is provably not ours.
# About 20 s on an idle 2-core machine. KEEP=1 keeps the logs (the path is printed at the end).
set -uo pipefail
: "${GPUDOCTOR:?}" "${SRC:?}"
command -v valgrind >/dev/null || { echo "SKIP: valgrind not installed"; exit 77; }
# ldd's whole output first: with pipefail, grep -q leaving early could kill ldd with SIGPIPE
# and fail the pipeline, so that a sanitizer build ran under valgrind now and then.
deps=$(ldd "$GPUDOCTOR" 2>/dev/null || true)
if grep -Eq 'libasan|libubsan' <<<"$deps"; then
    echo "SKIP: a sanitizer build ($GPUDOCTOR) does not run under valgrind"
    exit 77
fi
SIM_LIB=${SIM_LIB:-}
[ -n "$SIM_LIB" ] && [ -e "$SIM_LIB" ] || { echo "SKIP: the NVML simulator is not built"; exit 77; }
for tool in jq curl; do
    command -v "$tool" >/dev/null || { echo "SKIP: $tool not installed"; exit 77; }
done

SC=$SRC/tests/scenarios/troubled-8xh100
export GPUDOCTOR_NVML_LIB=$SIM_LIB NVML_SIM_SCENARIO=$SC/scenario.json NVML_SIM_PROC=$SC/root/proc
export GPUDOCTOR_CONFIG=/dev/null NVML_SIM_QUIET=1 NO_COLOR=1
unset NVML_SIM_EPOCH
R=(--root "$SC/root")
tmp=$(mktemp -d)
SERVE_PID=
cleanup() {
    [ -n "$SERVE_PID" ] && kill -KILL "$SERVE_PID" 2>/dev/null
    [ -n "${KEEP:-}" ] && echo "kept $tmp" || rm -rf "$tmp"
}
trap cleanup EXIT
failures=0
fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}

# vg NAME: the valgrind command line for a case; its logs go to $tmp/NAME/.
vg() {
    mkdir -p "$tmp/$1"
    VG=(valgrind --error-exitcode=99 --leak-check=full --show-leak-kinds=definite,indirect
        --errors-for-leak-kinds=definite,indirect --track-fds=no --trace-children=yes
        --child-silent-after-fork=no --num-callers=40 --suppressions="$SRC/tests/valgrind.supp"
        --log-file="$tmp/$1/vg.%p.log")
}

# logs NAME [HELPER]: every process of the case reported, without memory errors or leaks; with
# HELPER=helper, one of them must be the NVML helper (a child of another process of the case, or
# a command line naming --nvml-helper).
logs() {
    local name=$1 f n=0 helpers=0 contexts pids=" " ppid
    for f in "$tmp/$name"/vg.*.log; do
        [ -e "$f" ] || continue
        f=${f##*/vg.}
        pids+="${f%.log} "
    done
    for f in "$tmp/$name"/vg.*.log; do
        [ -e "$f" ] || continue
        n=$((n + 1))
        ppid=$(sed -n 's/^==[0-9]*== Parent PID: \([0-9]*\).*/\1/p' "$f" | head -1)
        if grep -q -- '--nvml-helper' "$f" || [[ "$pids" == *" $ppid "* ]]; then
            helpers=$((helpers + 1))
        fi
        contexts=$(sed -n 's/^==[0-9]*== ERROR SUMMARY: \([0-9]*\) errors from \([0-9]*\) contexts.*/\2/p' "$f")
        if [ -z "$contexts" ]; then
            fail "$name: ${f##*/} has no ERROR SUMMARY (the process was killed?)"
        elif [ "$contexts" != 0 ]; then
            fail "$name: ${f##*/}: $contexts error contexts"
            grep -v '^==[0-9]*== *$' "$f" | sed -n '/HEAP SUMMARY/,$p;/Invalid\|uninitialised\|Mismatched/,+12p' | head -80
        fi
    done
    [ "$n" -ge 1 ] || fail "$name: no valgrind log"
    [ "${2:-}" != helper ] || [ "$helpers" -ge 1 ] || fail "$name: no valgrind log of the NVML helper"
}

# run NAME WANT-STATUS ARGS...: gpudoctor ARGS under valgrind; stdout in $tmp/NAME.out.
run() {
    local name=$1 want=$2 helper=helper rc
    shift 2
    # These two never start the helper: --from reads a snapshot, explain reads nothing.
    [[ "$name" == check-from || "$name" == explain ]] && helper=
    vg "$name"
    "${VG[@]}" "$GPUDOCTOR" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
    rc=$?
    [ "$rc" = "$want" ] || fail "$name: exit $rc, expected $want (99: valgrind found errors): $(head -c 400 "$tmp/$name.err")"
    logs "$name" "$helper"
}

run check-w0 2 check "${R[@]}" --window 0
grep -q 'critical' "$tmp/check-w0.out" || fail "check-w0: no critical finding in the report"
run check-w05 2 check "${R[@]}" --window 0.5
run check-json 2 check "${R[@]}" --window 0 --json
[ "$(jq -r .verdict.exit_code "$tmp/check-json.out" 2>/dev/null)" = 2 ] || fail "check-json: verdict.exit_code is not 2"
run snapshot 0 snapshot "${R[@]}" -o "$tmp/snap.json"
[ "$(jq -r '.gpus | length' "$tmp/snap.json" 2>/dev/null)" = 8 ] || fail "snapshot: not 8 GPUs in $tmp/snap.json"
run check-from 2 check --from "$tmp/snap.json"
run procs 0 procs "${R[@]}" --window 0
run procs-json 0 procs "${R[@]}" --window 0 --json
jq -e . "$tmp/procs-json.out" >/dev/null 2>&1 || fail "procs-json: not JSON"
run explain 0 explain health.xid
[ -s "$tmp/explain.out" ] || fail "explain: printed nothing"

# A serve session: every endpoint once a collection is in, then SIGTERM.
vg serve
"${VG[@]}" "$GPUDOCTOR" serve --listen 127.0.0.1:0 "${R[@]}" --window 0 --interval 1s \
    2>"$tmp/serve.err" &
SERVE_PID=$!
PORT=
for _ in $(seq 300); do
    PORT=$(sed -n 's/.*listening on .* (port \([0-9]*\)).*/\1/p' "$tmp/serve.err")
    [ -n "$PORT" ] && break
    kill -0 "$SERVE_PID" 2>/dev/null || break
    sleep 0.1
done
if [ -z "$PORT" ]; then
    fail "serve did not start: $(cat "$tmp/serve.err")"
else
    url=http://127.0.0.1:$PORT
    for _ in $(seq 300); do
        [ "$(curl -s -o /dev/null -w '%{http_code}' "$url/healthz")" = 200 ] && break
        sleep 0.1
    done
    curl -s "$url/metrics" >"$tmp/metrics"
    grep -q '^gpudoctor_gpu_' "$tmp/metrics" || fail "serve: /metrics has no gpudoctor_gpu_ series"
    [ "$(curl -s "$url/findings" | jq -r .schema 2>/dev/null)" = gpudoctor.findings/1 ] ||
        fail "serve: /findings is not gpudoctor.findings/1"
    [ "$(curl -s -o /dev/null -w '%{http_code}' "$url/healthz")" = 200 ] || fail "serve: /healthz not 200"
    [ "$(curl -s -o /dev/null -w '%{http_code}' "$url/nothing")" = 404 ] || fail "serve: /nothing not 404"
    sleep 1.5 # another cycle, with the helper kept across cycles
    kill -TERM "$SERVE_PID"
    wait "$SERVE_PID"
    rc=$?
    SERVE_PID=
    [ "$rc" = 0 ] || fail "serve: exit $rc after SIGTERM, expected 0 (99: valgrind found errors)"
    logs serve helper
    [ "$(ls "$tmp/serve"/vg.*.log | wc -l)" -ge 2 ] || fail "serve: the NVML helper left no log"
fi

if [ "$failures" != 0 ]; then
    echo "$failures check(s) failed"
    exit 1
fi
echo "all checks passed"
