#!/usr/bin/env bash
# `gpudoctor fleet --prometheus URL` against a stand-in for Prometheus's query API
# (tests/helpers/fake-prometheus.py) that answers what a real server would not: the URL's
# password is used for the requests (the server answers 401 without it) and shown nowhere: not
# in the text report, the JSON's sources, the HTML page or standard error. Values no exporter
# gives are left out, and so are instances beyond the 50,000 fleet reads (said). A server that
# answers each query slowly is given --deadline for all of them together, not --timeout each. An
# answer over 256 MiB, or holding more objects or values than a real one, is an error naming the
# query and the limit.
set -uo pipefail
command -v jq >/dev/null || { echo "SKIP: jq not installed"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: python3 not installed"; exit 77; }
: "${GPUDOCTOR:?}" "${SRC:?}"
export GPUDOCTOR_CONFIG=/dev/null NO_COLOR=1 LANG=C.UTF-8
. "$SRC/tests/e2e/lib.bash"
FAKE_PID=
# the library's trap, and the stand-in server stopped first
trap '[ -n "$FAKE_PID" ] && kill "$FAKE_PID" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT

# fake ANSWERS [--auth USER:PASS]: starts the stand-in; PORT is where it listens
fake() {
    [ -n "$FAKE_PID" ] && { kill "$FAKE_PID"; wait "$FAKE_PID" 2>/dev/null; }
    rm -f "$tmp/port"
    python3 "$SRC/tests/helpers/fake-prometheus.py" "$1" "$tmp/port" "${@:2}" &
    FAKE_PID=$!
    for _ in $(seq 100); do
        [ -s "$tmp/port" ] && break
        sleep 0.1
    done
    PORT=$(cat "$tmp/port") || { echo "FAIL: the stand-in did not start"; exit 1; }
}

# answers FILE NODES...: every node healthy with 8 H100 GPUs, then the jq edits of $EDIT
answers() {
    local out=$1
    shift
    jq -n --args '$ARGS.positional as $n | {
        gpudoctor_check_status: [$n[] | [{instance: .}, "0"]],
        gpudoctor_gpu_info: [$n[] as $i | range(8) | [{instance: $i, gpu: tostring, name: "NVIDIA H100 80GB HBM3"}, "1"]],
        gpudoctor_nvml_devices: [$n[] | [{instance: .}, "8"]],
        gpudoctor_gpu_xid_errors_total: [$n[] | [{instance: ., gpu: "0"}, "0"]],
        gpudoctor_driver_info: [$n[] | [{instance: ., driver_version: "550.54.15", cuda_version: "12.4"}, "1"]]
    } | '"${EDIT:-.}" "$@" >"$out"
}

# ---- a password in the URL ----
EDIT= answers "$tmp/plain.json" a:9400 b:9400 c:9400
fake "$tmp/plain.json" --auth admin:s3cret
URL="http://admin:s3cret@127.0.0.1:$PORT/"
SHOWN="http://127.0.0.1:$PORT"
rc=0
"$GPUDOCTOR" fleet --min-group 3 --prometheus "$URL" --timeout 5s --html "$tmp/cred.html" \
    >"$tmp/cred.txt" 2>"$tmp/cred.err" || rc=$?
check "password: exit status (the server took it)" "$rc" 0
"$GPUDOCTOR" fleet --min-group 3 --prometheus "$URL" --timeout 5s --json >"$tmp/cred.json" 2>>"$tmp/cred.err"
check "password: nodes read with it" "$(jq -c '[.nodes[].name]' "$tmp/cred.json")" '["a:9400","b:9400","c:9400"]'
check "password: JSON source" "$(jq -r .source "$tmp/cred.json")" "$SHOWN"
check "password: the nodes' sources" "$(jq -c '[.nodes[].source] | unique' "$tmp/cred.json")" "[\"$SHOWN\"]"
check "password: text header" "$(head -1 "$tmp/cred.txt")" "3 nodes, 1 GPU model: no outlier — from $SHOWN"
grep -qF "$SHOWN" "$tmp/cred.html" || fail "password: the HTML page does not name the server"
# and the server's failure on standard error: the stand-in gone, the same URL
kill "$FAKE_PID"
wait "$FAKE_PID" 2>/dev/null
FAKE_PID=
rc=0
"$GPUDOCTOR" fleet --prometheus "$URL" --timeout 2s >/dev/null 2>>"$tmp/cred.err" || rc=$?
check "password: no server, exit status" "$rc" 3
grep -q "^gpudoctor fleet: $SHOWN: gpudoctor_check_status: " "$tmp/cred.err" ||
    fail "password: no server: standard error $(cat "$tmp/cred.err")"
rc=0
"$GPUDOCTOR" fleet --prometheus "ftp://admin:s3cret@127.0.0.1/" >/dev/null 2>>"$tmp/cred.err" || rc=$?
check "password: not HTTP, exit status" "$rc" 64
grep -qF "'ftp://127.0.0.1/' is not an http:// or https:// URL" "$tmp/cred.err" ||
    fail "password: not HTTP: standard error $(cat "$tmp/cred.err")"
for f in cred.txt cred.json cred.html cred.err; do
    grep -q 's3cret\|admin' "$tmp/$f" && fail "password: in $f: $(grep -o '.\{30\}s3cret.\{10\}' "$tmp/$f" | head -2)"
done

# ---- values no exporter gives: negative, infinite, beyond any figure ----
EDIT='.gpudoctor_nvml_devices[0][1] = "-1" | .gpudoctor_nvml_devices[1][1] = "1e20"
      | .gpudoctor_gpu_xid_errors_total += [[{instance: "c:9400", gpu: "1"}, "+Inf"]]' \
    answers "$tmp/odd.json" a:9400 b:9400 c:9400 d:9400 e:9400
fake "$tmp/odd.json"
rc=0
"$GPUDOCTOR" fleet --prometheus "http://127.0.0.1:$PORT/" --timeout 5s --json \
    >"$tmp/odd.out" 2>"$tmp/odd.err" || rc=$?
check "odd values: exit status (nothing to judge them by)" "$rc" 0
check "odd values: no outlier" "$(jq -c '[.outliers[].name]' "$tmp/odd.out")" '[]'
check "odd values: GPU counts" "$(jq -c '[.nodes[] | .values.gpu_count.value]' "$tmp/odd.out")" \
    '[null,null,8,8,8]'
check "odd values: XIDs" "$(jq -c '[.nodes[] | .values.xid_events.value]' "$tmp/odd.out")" '[0,0,0,0,0]'

# ---- a slow server: --deadline bounds all the queries together ----
# each answer 0.4 s late, well within --timeout, but fleet sends some 30 queries: the run ends at
# the deadline (1.5 s), saying how far it got, not after 12 s
EDIT= answers "$tmp/slow.json" a:9400 b:9400 c:9400
fake "$tmp/slow.json" --delay 0.4
rc=0
start=$(date +%s%N)
"$GPUDOCTOR" fleet --prometheus "http://127.0.0.1:$PORT/" --timeout 5s --deadline 1.5s \
    >"$tmp/slow.out" 2>"$tmp/slow.err" || rc=$?
took=$((($(date +%s%N) - start) / 1000000))
check "deadline: exit status" "$rc" 3
grep -qxE "gpudoctor fleet: http://127.0.0.1:$PORT: [a-z_]+.*: the queries did not finish within --deadline \(1.5 s\): [34] of [0-9]+ answered" "$tmp/slow.err" ||
    fail "deadline: standard error $(cat "$tmp/slow.err")"
[ "$took" -lt 4000 ] || fail "deadline: the run took $took ms, past the 1.5 s deadline"
[ -s "$tmp/slow.out" ] && fail "deadline: a report of the nodes half read: $(head -3 "$tmp/slow.out")"
rc=0
"$GPUDOCTOR" fleet --prometheus "http://127.0.0.1:$PORT/" --deadline 0 >/dev/null 2>"$tmp/err" || rc=$?
check "deadline 0: exit status" "$rc" 64
grep -qF -- "--deadline: '0' is not a duration from 100ms to 1d" "$tmp/err" || fail "deadline 0: $(cat "$tmp/err")"

# ---- more instances than fleet reads ----
# 50,000 nodes at most (FLEET_MAX_INPUTS): the series of the others are counted, left out and
# said, so that an answer naming a million instances cannot take a million nodes' memory
jq -n '{gpudoctor_check_status: [range(50003) | [{instance: "n\(.)"}, "0"]]}' >"$tmp/flood.json"
fake "$tmp/flood.json"
rc=0
"$GPUDOCTOR" fleet --outliers --prometheus "http://127.0.0.1:$PORT/" --timeout 20s \
    >"$tmp/flood.out" 2>"$tmp/flood.err" || rc=$?
check "flood: exit status (instances not read)" "$rc" 3
check "flood: standard error" "$(cat "$tmp/flood.err")" \
    "gpudoctor fleet: http://127.0.0.1:$PORT: more instances than fleet reads (50000): 3 series of the others left out"
check "flood: the nodes read" "$(head -1 "$tmp/flood.out")" "50000 nodes, 1 GPU model: no outlier — from http://127.0.0.1:$PORT"

# ---- answers larger than fleet reads or parses ----
# over 256 MiB (blanks before the JSON): an error naming the query and the limit, exit 3, no
# report
EDIT= answers "$tmp/big.json" a:9400 b:9400 c:9400
fake "$tmp/big.json" --pad $((256 << 20))
rc=0
"$GPUDOCTOR" fleet --prometheus "http://127.0.0.1:$PORT/" --timeout 20s >"$tmp/big.out" \
    2>"$tmp/big.err" || rc=$?
check "256 MiB: exit status" "$rc" 3
check "256 MiB: standard error" "$(cat "$tmp/big.err")" \
    "gpudoctor fleet: http://127.0.0.1:$PORT: gpudoctor_check_status: the answer is larger than 256 MiB"
[ -s "$tmp/big.out" ] && fail "256 MiB: a report: $(head -3 "$tmp/big.out")"
# small in bytes, but more objects than a real answer holds, each costing some 200 bytes parsed:
# refused before it is parsed, for the first query and for a figure's
python3 -c 'import json; print(json.dumps({"gpudoctor_check_status": [[{}, "0"]] * 1000001}))' >"$tmp/dense.json"
fake "$tmp/dense.json"
rc=0
"$GPUDOCTOR" fleet --prometheus "http://127.0.0.1:$PORT/" --timeout 20s >"$tmp/dense.out" \
    2>"$tmp/dense.err" || rc=$?
check "dense: exit status" "$rc" 3
check "dense: standard error" "$(cat "$tmp/dense.err")" \
    "gpudoctor fleet: http://127.0.0.1:$PORT: gpudoctor_check_status: the answer holds more than 3000000 objects and arrays or 24000000 other values, the most fleet parses of one query"
EDIT='.gpudoctor_nvml_devices = [range(1000001) | [{}, "8"]]' answers "$tmp/dense2.json" a:9400 b:9400 c:9400
fake "$tmp/dense2.json"
rc=0
"$GPUDOCTOR" fleet --prometheus "http://127.0.0.1:$PORT/" --timeout 20s >"$tmp/dense2.out" \
    2>"$tmp/dense2.err" || rc=$?
check "dense figure: exit status" "$rc" 3
check "dense figure: standard error" "$(cat "$tmp/dense2.err")" \
    "gpudoctor fleet: http://127.0.0.1:$PORT: gpudoctor_nvml_devices: the answer holds more than 3000000 objects and arrays or 24000000 other values, the most fleet parses of one query"

e2e_done "ok"
