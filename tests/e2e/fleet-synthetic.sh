#!/usr/bin/env bash
# `gpudoctor fleet` on synthetic fleets (tests/helpers/fleet-synth.py): 1,000 nodes of one model,
# each a copy of a healthy 8-GPU server with natural noise (clocks, temperatures, PCIe replays),
# and one fault planted every 100 nodes, of every kind the generator knows (a slow clock, a hot
# GPU, a x8 link, a missing GPU, another driver and its CUDA version, XIDs, another VBIOS, a low
# power limit, PCIe replays, and memory pressure: a finding no other node has, with no figure).
# Two seeds, from a directory and from a stream on standard input: every planted node is an
# outlier for its planted figure and for no other, no other node is flagged, the ranking puts the
# critical ones first, and the exit status says so. --profile on the snapshots: exactly the nodes
# that deviate, with what they have beside what it expects. A clean fleet with one node set apart
# by its CUDA version alone and one by a finding alone: the only outliers, with their evidence.
# Then the edges: a fleet with no fault, a small group, duplicates, unreadable inputs, usage
# errors; and the same bytes out with 1 and 8 reading threads.
# ctest: timeout 300
set -uo pipefail
command -v jq >/dev/null || { echo "SKIP: jq not installed"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: python3 not installed"; exit 77; }
: "${GPUDOCTOR:?}" "${SRC:?}"
export GPUDOCTOR_CONFIG=/dev/null NO_COLOR=1
. "$SRC/tests/e2e/lib.bash"
BASE=$SRC/tests/scenarios/healthy-8gpu-busy/snapshot.json
SYNTH=$SRC/tests/helpers/fleet-synth.py

# judge NAME PLANTED REPORT RC: the report holds exactly the planted outliers, each for its figure
judge() {
    local name=$1 planted=$2 report=$3 rc=$4 want got n
    want=$(jq -r 'keys[]' "$planted" | sort)
    got=$(jq -r '.nodes[] | select(.verdict == "outlier") | .name' "$report" | sort)
    n=$(jq length "$planted")
    [ "$n" -ge 10 ] || fail "$name: only $n faults planted"
    [ "$want" = "$got" ] || fail "$name: outliers differ from the planted ones:
$(diff <(echo "$want") <(echo "$got"))"
    # each planted node for each figure planted (a metric reason naming it), or for the finding
    # planted ("finding:RULE-ID": a finding reason of that rule)
    jq -r 'to_entries[] | .key as $n | (.value | if type == "array" then .[] else . end) | "\($n) \(.)"' \
        "$planted" | while read -r node metric; do
        case "$metric" in
        finding:*) sel='any(.kind == "finding" and .id == ($m | ltrimstr("finding:")))' ;;
        *) sel='any(.kind == "metric" and .metric == $m)' ;;
        esac
        jq -e --arg n "$node" --arg m "$metric" ".nodes[] | select(.name == \$n) | .reasons | $sel" \
            "$report" >/dev/null || echo "FAIL: $name: $node is not an outlier for $metric: $(jq -c --arg n "$node" '.nodes[] | select(.name == $n) | [.reasons[] | .metric // .id]' "$report")"
    done | tee "$tmp/judge.out"
    # every kind the generator plants was planted, and judged above
    for m in cuda_version driver_version finding:host.memory-pressure; do
        jq -e --arg m "$m" '[.[] | if type == "array" then .[] else . end] | index($m) != null' "$planted" >/dev/null ||
            fail "$name: $m was not planted"
    done
    [ -s "$tmp/judge.out" ] && failures=$((failures + $(wc -l <"$tmp/judge.out")))
    # and no node is an outlier for a figure it was not planted with: each figure's outliers are
    # exactly the nodes planted with it (the one with another CUDA version alone for cuda_version)
    want=$(jq -r 'to_entries[] | .key as $n | (.value | if type == "array" then .[] else . end)
        | select(startswith("finding:") | not) | "\($n) \(.)"' "$planted" | sort)
    got=$(jq -r '.nodes[] | .name as $n | .reasons[] | select(.kind == "metric") | "\($n) \(.metric)"' "$report" | sort)
    [ "$want" = "$got" ] || fail "$name: the (node, figure) outliers differ from the planted ones:
$(diff <(echo "$want") <(echo "$got"))"
    [ "$(jq -r '[.nodes[] | select(any(.reasons[]; .metric == "cuda_version")) | .name] | join(",")' "$report")" = \
        "$(jq -r '[to_entries[] | select(.value | if type == "array" then index("cuda_version") != null else . == "cuda_version" end) | .key] | join(",")' "$planted")" ] ||
        fail "$name: cuda_version: not exactly the planted node is an outlier for it"
    [ "$(jq '.nodes | length' "$report")" = 1000 ] || fail "$name: $(jq '.nodes | length' "$report") nodes, not 1000"
    [ "$(jq '.groups | length' "$report")" = 1 ] || fail "$name: not one group"
    # a missing GPU and a GPU fallen off the bus are critical: exit 2, and they rank first
    [ "$rc" = 2 ] || fail "$name: exit status $rc, not 2"
    [ "$(jq .status "$report")" = "$rc" ] || fail "$name: JSON status $(jq .status "$report"), exit status $rc"
    jq -e '[.nodes[] | select(.rank > 0)] | sort_by(.rank) | map(.severity) as $s
        | ($s | index("warning")) as $w | ($s[$w:] | all(. == "warning")) and ($s[:$w] | all(. == "critical")) and $w >= 1' \
        "$report" >/dev/null || fail "$name: the ranking does not put the critical outliers first"
    jq -e '[.nodes[] | select(.rank > 0) | .rank] | sort == [range(1; length + 1)]' "$report" >/dev/null ||
        fail "$name: ranks are not 1..N"
}

# seed 1 from a directory of files
mkdir "$tmp/dir"
python3 "$SYNTH" "$BASE" 1000 "$tmp/dir" --seed 1 --planted "$tmp/planted1.json" || fail "fleet-synth.py failed"
rc=0
"$GPUDOCTOR" fleet --json "$tmp/dir" >"$tmp/r1.json" 2>"$tmp/err" || rc=$?
judge "seed 1, directory" "$tmp/planted1.json" "$tmp/r1.json" "$rc"
[ -s "$tmp/err" ] && fail "seed 1: stderr: $(head -3 "$tmp/err")"

# seed 2 as one stream on standard input, and the text report
python3 "$SYNTH" "$BASE" 1000 - --seed 2 --planted "$tmp/planted2.json" >"$tmp/stream.jsonl"
rc=0
"$GPUDOCTOR" fleet --json - <"$tmp/stream.jsonl" >"$tmp/r2.json" || rc=$?
judge "seed 2, stream" "$tmp/planted2.json" "$tmp/r2.json" "$rc"
rc=0
"$GPUDOCTOR" fleet --outliers - <"$tmp/stream.jsonl" >"$tmp/r2.txt" || rc=$?
[ "$rc" = 2 ] || fail "text report: exit status $rc"
head -1 "$tmp/r2.txt" | grep '^1000 nodes, 1 GPU model: 10 outliers (2 critical)$' >/dev/null ||
    fail "text report: first line '$(head -1 "$tmp/r2.txt")'"
# Nothing readable: the error alone (standard error), no report of zero nodes, exit status 3.
rc=0
"$GPUDOCTOR" fleet "$tmp/no-such-file" >"$tmp/none.txt" 2>"$tmp/none.err" || rc=$?
[ "$rc" = 3 ] || fail "no input readable: exit status $rc, not 3"
[ -s "$tmp/none.txt" ] && fail "no input readable: a report on standard output: $(head -1 "$tmp/none.txt")"
grep -q "^gpudoctor fleet: $tmp/no-such-file: No such file or directory$" "$tmp/none.err" ||
    fail "no input readable: standard error '$(cat "$tmp/none.err")'"
# --outliers: the table lists the outliers only, then the evidence, numbered
[ "$(grep -c '^node[0-9]* ' "$tmp/r2.txt")" = 10 ] || fail "--outliers: $(grep -c '^node[0-9]* ' "$tmp/r2.txt") rows, not 10"
for k in $(seq 1 10); do
    grep -q "^$k\. node" "$tmp/r2.txt" || fail "text report: no outlier ranked $k"
done
node=$(jq -r 'to_entries[] | select(.value == "clock_sm_busy_mhz") | .key' "$tmp/planted2.json" | head -1)
grep -A3 "^[0-9]*\. $node " "$tmp/r2.txt" | grep -E 'clock_sm_busy_mhz +1410 MHz \(GPU 3\) +group median 19[0-9][0-9] MHz, MAD [0-9.]+; z -[0-9]' >/dev/null ||
    fail "text report: $node's evidence does not show its clock beside the group's: $(grep -A3 "$node " "$tmp/r2.txt")"
! grep -q '^Not in the evidence yet' "$tmp/r2.txt" || fail "text report: a figure is said to be missing from the evidence"
[ "$(tail -c 1 "$tmp/r2.txt" | od -An -c | tr -d ' ')" = '\n' ] || fail "text report: no final newline"

# figures these snapshots have no value for (no NVSwitch, no Fabric Manager): never a reason (the
# NVLink, InfiniBand and Fabric Manager figures: e2e/fleet-fabric)
for m in fabricmanager_version; do
    jq -e --arg m "$m" '.metrics[] | select(.name == $m) | .in_evidence == true' "$tmp/r1.json" >/dev/null ||
        fail "metric $m: not in the evidence"
    jq -e --arg m "$m" '[.nodes[].reasons[] | select(.metric == $m)] | length == 0' "$tmp/r1.json" >/dev/null ||
        fail "metric $m: a node is an outlier for a figure not in the evidence"
done
# the bench figures are read from snapshots (e2e/fleet-bench); these have no bench: never a reason
for m in bench_h2d_gbps bench_d2h_gbps bench_triad_gbps bench_tflops; do
    jq -e --arg m "$m" '.metrics[] | select(.name == $m) | .in_evidence == true' "$tmp/r1.json" >/dev/null ||
        fail "metric $m: not in the evidence"
    jq -e --arg m "$m" '[.nodes[].reasons[] | select(.metric == $m)] | length == 0' "$tmp/r1.json" >/dev/null ||
        fail "metric $m: a node without a bench is an outlier for it"
done

# --profile on snapshots: the nodes of its model are judged by it; the driver node (535, CUDA 12.2),
# the node with 7 GPUs, the x8 link and the other VBIOS deviate, and only they, each with the
# figure it has beside the one the profile expects; what every node meets (memory, PCIe
# generation) is no deviation
cat >"$tmp/profile.conf" <<'CONF'
[profile]
gpu_model = "NVIDIA H100 80GB HBM3"
gpu_count = 8
gpu_memory_mib = 81559
pcie_gen = 5
pcie_width = 16
driver_version = "550.54.15"
cuda_version = "12.4"
vbios_version = "96.00.89.00.01"
CONF
rc=0
"$GPUDOCTOR" fleet --json --profile "$tmp/profile.conf" "$tmp/dir" >"$tmp/rp.json" 2>"$tmp/err" || rc=$?
[ "$rc" = 2 ] || fail "--profile: exit status $rc, not 2: $(head -3 "$tmp/err")"
driver_node=$(jq -r 'to_entries[] | select(.value | type == "array") | .key' "$tmp/planted1.json")
missing_node=$(jq -r 'to_entries[] | select(.value == "gpu_count") | .key' "$tmp/planted1.json")
vbios_node=$(jq -r 'to_entries[] | select(.value == "vbios_version") | .key' "$tmp/planted1.json")
width_node=$(jq -r 'to_entries[] | select(.value == "pcie_width") | .key' "$tmp/planted1.json")
got=$(jq -r '.nodes[] | .name as $n | .reasons[] | select(.kind == "profile") | "\($n) \(.severity) \(.key): \(.text)"' \
    "$tmp/rp.json" | sort)
want=$(sort <<WANT
$driver_node warning driver_version: driver_version 535.104.05, the profile ($tmp/profile.conf) expects 550.54.15
$driver_node warning cuda_version: cuda_version 12.2, the profile ($tmp/profile.conf) expects 12.4
$missing_node critical gpu_count: gpu_count 7, the profile ($tmp/profile.conf) expects 8
$vbios_node warning vbios_version: GPU 1 vbios_version 96.00.61.00.01, the profile ($tmp/profile.conf) expects 96.00.89.00.01
$width_node warning pcie_width: GPU 2 pcie_width 8, the profile ($tmp/profile.conf) expects at least 16
WANT
)
[ "$got" = "$want" ] || fail "--profile: deviations differ:
$(diff <(echo "$want") <(echo "$got"))"
# the deviations as data too: the healthy nodes have none, and every node names its profile
got=$(jq -c '[.nodes[] | select(.profile_deviations != []) | {(.name): .profile_deviations}] | add' "$tmp/rp.json")
want=$(jq -nc --arg d "$driver_node" --arg m "$missing_node" --arg v "$vbios_node" --arg w "$width_node" '{
    ($w): [{key: "pcie_width", gpu: 2, outcome: "deviates", expected: "16", found: "8"}],
    ($m): [{key: "gpu_count", gpu: null, outcome: "deviates", expected: "8", found: "7"}],
    ($d): [{key: "driver_version", gpu: null, outcome: "deviates", expected: "550.54.15", found: "535.104.05"},
           {key: "cuda_version", gpu: null, outcome: "deviates", expected: "12.4", found: "12.2"}],
    ($v): [{key: "vbios_version", gpu: 1, outcome: "deviates", expected: "96.00.89.00.01", found: "96.00.61.00.01"}]}')
[ "$(jq -S . <<<"$got")" = "$(jq -S . <<<"$want")" ] || fail "--profile: profile_deviations $got"
[ "$(jq -r '[.nodes[].profile] | unique | join(",")' "$tmp/rp.json")" = "$tmp/profile.conf" ] ||
    fail "--profile: nodes' profile: $(jq -c '[.nodes[].profile] | unique' "$tmp/rp.json")"
# the text report puts a deviation first in its node's evidence, as the JSON says it
rc=0
"$GPUDOCTOR" fleet --outliers --profile "$tmp/profile.conf" "$tmp/dir" >"$tmp/rp.txt" 2>/dev/null || rc=$?
[ "$rc" = 2 ] || fail "--profile, text: exit status $rc"
grep -A1 "^[0-9]*\. $missing_node " "$tmp/rp.txt" | tail -1 | grep -x " *critical  *profile: gpu_count 7, the profile ($tmp/profile.conf) expects 8" >/dev/null ||
    fail "--profile, text: $missing_node's first evidence: $(grep -A1 "^[0-9]*\. $missing_node " "$tmp/rp.txt")"
sed 's/NVIDIA H100 80GB HBM3/NVIDIA A100-SXM4-80GB/' "$tmp/profile.conf" >"$tmp/profile-a100.conf"
"$GPUDOCTOR" fleet --json --profile "$tmp/profile-a100.conf" "$tmp/dir" >"$tmp/rp2.json" 2>/dev/null
[ "$(jq '[.nodes[].reasons[] | select(.kind == "profile")] | length' "$tmp/rp2.json")" = 0 ] ||
    fail "--profile of another model: H100 nodes judged by it"
cmp -s <(jq -S 'del(.profiles)' "$tmp/rp2.json") <(jq -S 'del(.profiles)' "$tmp/r1.json") ||
    fail "--profile of another model: the report differs from the one without a profile"

# no fault planted: no outlier, exit 0 (the healthy nodes' own findings are info only)
mkdir "$tmp/clean"
python3 "$SYNTH" "$BASE" 200 "$tmp/clean" --seed 3 --plant-every 100000
rc=0
"$GPUDOCTOR" fleet --json "$tmp/clean" >"$tmp/clean.json" || rc=$?
[ "$rc" = 0 ] || fail "clean fleet: exit status $rc"
[ "$(jq '[.nodes[] | select(.verdict != "ok")] | length' "$tmp/clean.json")" = 0 ] ||
    fail "clean fleet: $(jq -c '[.nodes[] | select(.verdict != "ok") | .name]' "$tmp/clean.json") flagged"

# the clean fleet again, two nodes set apart: node0123 by its CUDA version alone (the driver the
# same: a forward-compatible CUDA), node0077 by a finding alone (host memory pressure, no figure).
# Each is the only outlier, for that and nothing else, with its evidence; with a profile, node0123
# is the only node that deviates from it.
cp -r "$tmp/clean" "$tmp/two"
jq -c '.nvml.cuda_driver_version = 12060' "$tmp/clean/node0123.json" >"$tmp/two/node0123.json"
jq -c '.host.mem_available_bytes = 1000000000 | .host.psi_mem_full_avg10_pct = 30
    | .host.swap_in_pages_per_s = 5000' "$tmp/clean/node0077.json" >"$tmp/two/node0077.json"
rc=0
"$GPUDOCTOR" fleet --json "$tmp/two" >"$tmp/two.json" 2>"$tmp/err" || rc=$?
[ "$rc" = 1 ] || fail "two outliers (warnings): exit status $rc, not 1: $(head -3 "$tmp/err")"
got=$(jq -c '[.nodes[] | select(.verdict != "ok") | {name, verdict, severity, reasons}]' "$tmp/two.json")
want='[{"name":"node0077","verdict":"outlier","severity":"warning","reasons":[{"kind":"finding","severity":"warning","id":"host.memory-pressure","text":"Host swapping: 5000 pages/s in and out of swap","nodes_with_it":1,"compared":200}]},{"name":"node0123","verdict":"outlier","severity":"warning","reasons":[{"kind":"metric","severity":"warning","metric":"cuda_version","unit":"","node":{"value":"12.6","gpu":null},"majority":"12.4","agree":199,"compared":200}]}]'
[ "$got" = "$want" ] || fail "two outliers: got $got"
jq -e '.groups[0].metrics.cuda_version == {"n": 200, "majority": "12.4", "agree": 199}' "$tmp/two.json" >/dev/null ||
    fail "two outliers: the group's cuda_version: $(jq -c '.groups[0].metrics.cuda_version' "$tmp/two.json")"
"$GPUDOCTOR" fleet --outliers "$tmp/two" >"$tmp/two.txt" 2>/dev/null
grep -q '^ *warning  *cuda_version  *12\.6  *group: 12\.4 (199 of 200 nodes)$' "$tmp/two.txt" ||
    fail "two outliers, text: cuda_version evidence: $(grep -A2 node0123 "$tmp/two.txt")"
grep -q '^ *warning  *finding host\.memory-pressure: Host swapping: 5000 pages/s in and out of swap (1 of 200 nodes have it)$' "$tmp/two.txt" ||
    fail "two outliers, text: the finding's evidence: $(grep -A2 node0077 "$tmp/two.txt")"
rc=0
"$GPUDOCTOR" fleet --json --profile "$tmp/profile.conf" "$tmp/two" >"$tmp/two-p.json" 2>/dev/null || rc=$?
[ "$rc" = 1 ] || fail "two outliers, --profile: exit status $rc, not 1"
got=$(jq -c '[.nodes[] | .name as $n | .reasons[] | select(.kind == "profile") | [$n, .key, .text]]' "$tmp/two-p.json")
[ "$got" = '[["node0123","cuda_version","cuda_version 12.6, the profile ('"$tmp"'/profile.conf) expects 12.4"]]' ] ||
    fail "two outliers, --profile: deviations $got"

# fewer nodes of a model than --min-group: not judged against each other
mkdir "$tmp/small"
cp "$tmp/dir"/node000[0-3].json "$tmp/small/"
rc=0
"$GPUDOCTOR" fleet --json "$tmp/small" >"$tmp/small.json" || rc=$?
[ "$rc" = 0 ] || fail "4 nodes: exit status $rc"
[ "$(jq -r '[.nodes[].verdict] | unique | join(",")' "$tmp/small.json")" = not-judged ] ||
    fail "4 nodes: verdicts $(jq -c '[.nodes[].verdict]' "$tmp/small.json")"
rc=0
"$GPUDOCTOR" fleet --json --min-group 3 "$tmp/small" >"$tmp/small3.json" || rc=$?
[ "$(jq -r '[.nodes[].verdict] | unique | join(",")' "$tmp/small3.json")" = ok ] ||
    fail "4 nodes, --min-group 3: verdicts $(jq -c '[.nodes[].verdict]' "$tmp/small3.json")"

# two snapshots of one host: the newest is its row
mkdir "$tmp/dup"
cp "$tmp/dir"/node00[0-1][0-9].json "$tmp/dup/"
jq -c '.time_ms += 100000 | .hostname = "node0003" | .gpus[3].clock_sm_mhz = 1200' "$tmp/dir/node0050.json" >"$tmp/dup/zz-newer.json"
rc=0
"$GPUDOCTOR" fleet --json "$tmp/dup" >"$tmp/dup.json" || rc=$?
[ "$(jq '.nodes | length' "$tmp/dup.json")" = 20 ] || fail "duplicates: $(jq '.nodes | length' "$tmp/dup.json") rows, not 20"
[ "$(jq .duplicates "$tmp/dup.json")" = 1 ] || fail "duplicates: count $(jq .duplicates "$tmp/dup.json")"
[ "$(jq -r '.nodes[] | select(.name == "node0003") | .values.clock_sm_busy_mhz.value' "$tmp/dup.json")" = 1200 ] ||
    fail "duplicates: node0003's row is not its newest snapshot"
[ "$(jq -r '.nodes[] | select(.name == "node0003") | .verdict' "$tmp/dup.json")" = outlier ] ||
    fail "duplicates: node0003 (1200 MHz) is not an outlier"

# what cannot be read: named on stderr, the rest judged, exit 3 unless an outlier is critical
echo '{"schema": "gpudoctor.snapshot/1", "gpus": [' >"$tmp/small/broken.json"
rc=0
"$GPUDOCTOR" fleet --json "$tmp/small" "$tmp/none.json" >"$tmp/err.json" 2>"$tmp/err" || rc=$?
[ "$rc" = 3 ] || fail "unreadable inputs: exit status $rc, not 3"
grep -q "broken.json" "$tmp/err" || fail "unreadable inputs: broken.json not named: $(cat "$tmp/err")"
grep -q "none.json" "$tmp/err" || fail "unreadable inputs: none.json not named: $(cat "$tmp/err")"
[ "$(jq '.nodes | length' "$tmp/err.json")" = 4 ] || fail "unreadable inputs: the readable nodes are not reported"
[ "$(jq '.errors | length' "$tmp/err.json")" = 2 ] || fail "unreadable inputs: $(jq -c .errors "$tmp/err.json")"
# a stream with garbage after two documents: the two are read, the garbage named
{ head -2 "$tmp/stream.jsonl"; echo 'not json'; } >"$tmp/bad.jsonl"
rc=0
"$GPUDOCTOR" fleet --json - <"$tmp/bad.jsonl" >"$tmp/bad.json" 2>"$tmp/err" || rc=$?
[ "$rc" = 3 ] || fail "garbage in the stream: exit status $rc"
[ "$(jq '.nodes | length' "$tmp/bad.json")" = 2 ] || fail "garbage in the stream: $(jq '.nodes | length' "$tmp/bad.json") nodes"
grep -q 'stdin' "$tmp/err" || fail "garbage in the stream: stderr does not say where: $(cat "$tmp/err")"
# nothing at all
rc=0
"$GPUDOCTOR" fleet - </dev/null >/dev/null 2>&1 || rc=$?
[ "$rc" = 3 ] || fail "empty stream: exit status $rc, not 3"

# the snapshots are read by a pool of threads: every output byte is the one a single thread
# writes (more threads than this machine has CPUs, so that they really interleave), errors included
# and in the operands' order: a directory with a broken file, a missing file, a stream, a file again
for th in 1 8; do
    for out in json text; do
        flag=--json
        [ "$out" = text ] && flag=
        rc=0
        # shellcheck disable=SC2086
        GPUDOCTOR_FLEET_THREADS=$th "$GPUDOCTOR" fleet $flag "$tmp/dir" "$tmp/small" "$tmp/none.json" - \
            "$tmp/dir/node0007.json" <"$tmp/bad.jsonl" >"$tmp/t$th.$out" 2>"$tmp/t$th.$out.err" || rc=$?
        echo "$rc" >>"$tmp/t$th.$out.err"
    done
    GPUDOCTOR_FLEET_THREADS=$th "$GPUDOCTOR" fleet --json - <"$tmp/stream.jsonl" >"$tmp/t$th.stream" 2>&1
    GPUDOCTOR_FLEET_THREADS=$th "$GPUDOCTOR" fleet --json - </dev/null >"$tmp/t$th.empty" 2>&1
done
for f in json json.err text text.err stream empty; do
    cmp -s "$tmp/t1.$f" "$tmp/t8.$f" || fail "1 and 8 threads differ ($f): $(diff "$tmp/t1.$f" "$tmp/t8.$f" | head -5)"
done
cmp -s "$tmp/t1.stream" "$tmp/r2.json" || fail "1 thread and the default differ on the stream"
[ "$(jq '.nodes | length' "$tmp/t8.json")" = 1000 ] || fail "threads: $(jq '.nodes | length' "$tmp/t8.json") nodes, not 1000"
[ "$(jq -r '[.errors[].source] | join(",")' "$tmp/t8.json")" = "$tmp/small/broken.json,$tmp/none.json,stdin #3" ] ||
    fail "threads: errors not in the operands' order: $(jq -c '[.errors[].source]' "$tmp/t8.json")"
[ "$(jq .duplicates "$tmp/t8.json")" = 7 ] || fail "threads: $(jq .duplicates "$tmp/t8.json") duplicates, not 7"
grep -q 'no document on standard input' "$tmp/t8.empty" || fail "threads: an empty stream is not said: $(cat "$tmp/t8.empty")"
for bad in 0 x -1 257; do
    rc=0
    GPUDOCTOR_FLEET_THREADS=$bad "$GPUDOCTOR" fleet "$tmp/small" >/dev/null 2>"$tmp/err" || rc=$?
    [ "$rc" = 64 ] || fail "GPUDOCTOR_FLEET_THREADS=$bad: exit status $rc, not 64"
    grep -q 'GPUDOCTOR_FLEET_THREADS' "$tmp/err" || fail "GPUDOCTOR_FLEET_THREADS=$bad: not said: $(cat "$tmp/err")"
done

# usage errors: 64 and a message
for args in "" "--threshold 0 x" "--min-group 1 x" "--threshold abc x" "--prometheus http://127.0.0.1:1 x" \
    "--timeout 5 --prometheus x"; do
    rc=0
    # shellcheck disable=SC2086
    "$GPUDOCTOR" fleet $args >/dev/null 2>"$tmp/err" || rc=$?
    [ "$rc" = 64 ] || fail "fleet $args: exit status $rc, not 64"
    grep -q 'gpudoctor fleet' "$tmp/err" || fail "fleet $args: no message: $(cat "$tmp/err")"
done

e2e_done "ok: fleet on synthetic fleets of 1,000 nodes"
