#!/usr/bin/env bash
# fleet compares nodes on their bench figures: one real bench on the CUDA simulator, its kept
# result (bench-last.json) copied to twelve nodes with small noise, one node's triad and another's
# pinned host-to-GPU copy planted low; exactly those two are outliers, on those figures, with the
# GPU named; a node whose snapshot has no bench has no bench figures and is judged on the rest.
set -u
CUDA_SIM=$BUILD/sim-cuda/libcuda.so.1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export GPUDOCTOR_STATE_DIR=$tmp/state NVML_SIM_QUIET=1
fail=0
die() { echo "FAIL: $*"; fail=1; }

python3 - "$tmp/s.json" <<'PY'
import json, sys
gpu = lambda i, bus: {"index": i, "name": "NVIDIA H100 80GB HBM3", "pci_bus_id": bus,
    "pci_device_id": "0x233010de", "pci_subsystem_id": "0x16c110de",
    "mem_total_bytes": 85520809984, "mem_used_bytes": 0, "pcie_gen": 5, "pcie_width": 16}
s = {"schema": "gpudoctor.scenario/1", "system": {"driver_version": "580.65.06"},
     "gpus": [gpu(0, "00000000:18:00.0"), gpu(1, "00000000:2a:00.0")],
     "cuda": {"gpus": [{"mem_bandwidth_bytes_per_s": 3e12, "fma_flops": 5e13, "sm_count": 8}] * 2}}
json.dump(s, open(sys.argv[1], "w"))
PY
NVML_SIM_SCENARIO=$tmp/s.json GPUDOCTOR_CUDA_LIB=$CUDA_SIM "$GPUDOCTOR" bench --nvml-lib "$SIM_LIB" \
    --duration 0.1 >"$tmp/bench.out" 2>&1 || die "bench: status $?: $(cat "$tmp/bench.out")"
[ -f "$GPUDOCTOR_STATE_DIR/bench-last.json" ] || { echo "FAIL: no bench-last.json"; exit 1; }

mkdir "$tmp/fleet"
python3 - "$GPUDOCTOR_STATE_DIR/bench-last.json" "$tmp/fleet" <<'PY'
import json, random, sys
base = json.load(open(sys.argv[1]))
rng = random.Random(7)
for i in range(1, 13):
    s = json.loads(json.dumps(base))
    s["hostname"] = "node%02d" % i
    for g in s["bench"]["gpus"]:
        for k in ("h2d_pinned_bytes_per_s", "d2h_pinned_bytes_per_s", "triad_bytes_per_s", "fma_flops"):
            g[k] *= 1 + rng.uniform(-0.01, 0.01)
    if i == 7:
        s["bench"]["gpus"][1]["triad_bytes_per_s"] *= 0.8   # GPU 1 of node07: slow memory
    if i == 10:
        s["bench"]["gpus"][0]["h2d_pinned_bytes_per_s"] *= 0.5   # GPU 0 of node10: slow link
    if i == 12:
        del s["bench"]   # no bench on this node
    json.dump(s, open("%s/node%02d.json" % (sys.argv[2], i), "w"))
PY
rc=0
"$GPUDOCTOR" fleet --json "$tmp/fleet" >"$tmp/r.json" 2>"$tmp/r.err" || rc=$?
[ "$rc" = 1 ] || die "fleet: status $rc (warnings expected): $(cat "$tmp/r.err")"
out=$(jq -r '[.nodes[] | select(.verdict == "outlier") | .name + ":" + ([.reasons[] | select(.kind == "metric") | .metric] | join(","))] | sort | join(" ")' "$tmp/r.json")
[ "$out" = "node07:bench_triad_gbps node10:bench_h2d_gbps" ] || die "outliers: '$out'"
[ "$(jq '.nodes[] | select(.name == "node07") | .values.bench_triad_gbps.gpu' "$tmp/r.json")" = 1 ] || die "node07: not GPU 1"
[ "$(jq '.nodes[] | select(.name == "node10") | .values.bench_h2d_gbps.gpu' "$tmp/r.json")" = 0 ] || die "node10: not GPU 0"
v=$(jq '.nodes[] | select(.name == "node03") | .values.bench_h2d_gbps.value * 10 | round / 10' "$tmp/r.json")
awk -v v="$v" 'BEGIN { exit !(v >= 49.8 && v <= 51) }' || die "node03 h2d $v GB/s, not ~50.4"
v=$(jq '.nodes[] | select(.name == "node03") | .values.bench_tflops.value | round' "$tmp/r.json")
[ "$v" = 50 ] || die "node03 tflops $v"
[ "$(jq '.nodes[] | select(.name == "node12") | [.values.bench_h2d_gbps, .values.bench_triad_gbps, .values.bench_tflops] | map(. == null) | all' "$tmp/r.json")" = true ] ||
    die "node12 (no bench): bench figures $(jq -c '.nodes[] | select(.name == "node12") | .values' "$tmp/r.json")"
[ "$(jq -r '.nodes[] | select(.name == "node12") | .verdict' "$tmp/r.json")" = ok ] || die "node12 (no bench) judged an outlier"
jq -e '.metrics[] | select(.name == "bench_triad_gbps") | .in_evidence == true' "$tmp/r.json" >/dev/null || die "bench_triad_gbps not in the evidence"
# the text report shows the evidence beside the group's
"$GPUDOCTOR" fleet --outliers "$tmp/fleet" >"$tmp/r.txt" 2>/dev/null
grep -Eq 'bench_h2d_gbps +2[0-9.]+ GB/s \(GPU 0\) +group median (49|50|51)' "$tmp/r.txt" ||
    die "text report: $(grep -A3 node10 "$tmp/r.txt")"
echo "ok: fleet bench figures"
exit $fail
