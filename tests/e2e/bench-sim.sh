#!/usr/bin/env bash
# gpudoctor bench against the CUDA simulator (build/sim-cuda/libcuda.so.1) and the NVML one, on
# one scenario: healthy figures, then each failure path as a finding with the right status.
# ctest: timeout 400
set -u
CUDA_SIM=$BUILD/sim-cuda/libcuda.so.1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export GPUDOCTOR_STATE_DIR=$tmp/state NVML_SIM_QUIET=1
# no cuBLASLt: the FMA kernel is the compute figure here (e2e/bench-gemm runs the GEMMs)
export GPUDOCTOR_CUBLASLT_LIB=$tmp/no-libcublasLt.so.13
fail=0
die() { echo "FAIL: $*"; fail=1; }

# base scenario: two H100s on Gen5 x16; $1 = extra jq filter
scenario() {
    python3 - "$tmp/s.json" "$1" <<'PY'
import json, sys
gpu = lambda i, bus: {"index": i, "name": "NVIDIA H100 80GB HBM3", "pci_bus_id": bus,
    "pci_device_id": "0x233010de", "pci_subsystem_id": "0x16c110de",
    "mem_total_bytes": 85520809984, "mem_used_bytes": 0, "pcie_gen": 5, "pcie_width": 16}
s = {"schema": "gpudoctor.scenario/1", "system": {"driver_version": "580.65.06"},
     "gpus": [gpu(0, "00000000:18:00.0"), gpu(1, "00000000:2a:00.0"), gpu(2, "00000000:3a:00.0")],
     "cuda": {"gpus": [{"mem_bandwidth_bytes_per_s": 3e12, "fma_flops": 5e13, "sm_count": 8}] * 3}}
exec(sys.argv[2])
json.dump(s, open(sys.argv[1], "w"))
PY
}
bench() {
    NVML_SIM_SCENARIO=$tmp/s.json GPUDOCTOR_CUDA_LIB=${CUDA_LIB:-$CUDA_SIM} \
        "$GPUDOCTOR" bench --nvml-lib "$SIM_LIB" --duration 0.1 --json "$@" >"$tmp/out.json" 2>"$tmp/err"
    echo $?
}
q() { python3 -c "import json,sys; d=json.load(open('$tmp/out.json')); print($1)"; }

# ---- healthy: figures follow the scenario ----
scenario ''
rc=$(bench)
[ "$rc" = 0 ] || die "healthy: status $rc: $(cat "$tmp/err")"
[ "$(q "round(d['bench']['gpus'][0]['h2d_pinned_bytes_per_s']/1e9,1)")" = 50.4 ] || die "h2d: $(q "d['bench']['gpus'][0]['h2d_pinned_bytes_per_s']")"
[ "$(q "round(d['bench']['gpus'][0]['pcie_expected_bytes_per_s']/1e9,1)")" = 50.4 ] || die "pcie expectation"
[ "$(q "round(d['bench']['gpus'][1]['triad_bytes_per_s']/1e12,2)")" = 3.0 ] || die "triad"
[ "$(q "round(d['bench']['gpus'][2]['fma_flops']/1e12,1)")" = 50.0 ] || die "fma"
[ "$(q "all(g['checksum_ok'] for g in d['bench']['gpus'])")" = True ] || die "checksums"
[ "$(q "len(d['bench']['pairs'])")" = 6 ] || die "pairs: $(q "len(d['bench']['pairs'])")"
[ "$(q "len(d['findings'])")" = 0 ] || die "healthy has findings: $(q "d['findings']")"
[ "$(q "(d['bench']['gpus'][0]['mem_expected_bytes_per_s'], d['bench']['gpus'][0]['fp32_expected_flops'])")" = "(3350000000000.0, 67000000000000.0)" ] ||
    die "model's figures (data/gpu-specs.tsv): $(q "d['bench']['gpus'][0]")"
echo "ok: healthy"

# ---- every GPU's memory below the model's figure (60 % of 3,350 GB/s): the siblings agree with
# each other, only the table sees it ----
scenario 's["cuda"]["gpus"] = [dict(g, mem_bandwidth_bytes_per_s=2.01e12) for g in s["cuda"]["gpus"]]'
rc=$(bench)
[ "$rc" = 1 ] || die "model: status $rc"
[ "$(q "[(f['id'], f['gpu']) for f in d['findings']]")" = "[('bench.mem-bandwidth-low', 0), ('bench.mem-bandwidth-low', 1), ('bench.mem-bandwidth-low', 2)]" ] ||
    die "model: $(q "d['findings']")"
[ "$(q "d['findings'][0]['title']")" = "GPU 0 memory bandwidth at 60 % of its model's" ] || die "model: title $(q "d['findings'][0]['title']")"
q "d['findings'][0]['evidence']" | grep -q "NVIDIA H100 80GB HBM3 should reach 3350.0 GB/s" || die "model: evidence $(q "d['findings'][0]['evidence']")"
echo "ok: below the model's figure"

# ---- a slow link: Gen3 x8 in NVML, copies at 30 % of it in CUDA ----
scenario 's["cuda"]["gpus"][1] = dict(s["cuda"]["gpus"][1], host_copy_share=0.3)'
rc=$(bench)
[ "$rc" = 1 ] || die "slow copy: status $rc"
[ "$(q "[f['id'] for f in d['findings']]")" = "['bench.host-copy-slow']" ] || die "slow copy: $(q "d['findings']")"
[ "$(q "d['findings'][0]['gpu']")" = 1 ] || die "slow copy: wrong GPU"
echo "ok: host-copy-slow"

# ---- corrupt results on GPU 2 ----
scenario 's["cuda"]["gpus"][2] = dict(s["cuda"]["gpus"][2], corrupt=True)'
rc=$(bench)
[ "$rc" = 2 ] || die "corrupt: status $rc"
[ "$(q "[(f['id'], f['gpu']) for f in d['findings']]")" = "[('bench.checksum-mismatch', 2)]" ] || die "corrupt: $(q "d['findings']")"
echo "ok: checksum-mismatch"

# ---- throttling after 0.05 s of work, and a GPU behind its siblings ----
scenario 's["cuda"]["gpus"][0] = dict(s["cuda"]["gpus"][0], throttle_after_s=0.05, throttle_share=0.5)'
rc=$(bench)
[ "$rc" = 1 ] || die "throttle: status $rc"
q "[f['id'] for f in d['findings']]" | grep -q "bench.throttle-under-load" || die "throttle: $(q "d['findings']")"
echo "ok: throttle-under-load"

# ---- a slow pair ----
scenario 's["cuda"]["pairs"] = [{"gpus": [0, 2], "bytes_per_s": 2e9}]'
rc=$(bench)
[ "$rc" = 1 ] || die "p2p: status $rc"
[ "$(q "sorted(set(f['id'] for f in d['findings']))")" = "['bench.p2p-slow']" ] || die "p2p: $(q "d['findings']")"
[ "$(q "len(d['findings'])")" = 2 ] || die "p2p: both directions of the pair: $(q "d['findings']")"
echo "ok: p2p-slow"

# ---- an injected CUDA error on one GPU ----
scenario 's["cuda"]["gpus"][1] = dict(s["cuda"]["gpus"][1], errors={"cuLaunchKernel": "LAUNCH_FAILED"})'
rc=$(bench)
[ "$rc" = 2 ] || die "error: status $rc"
q "d['bench']['gpus'][1]['error']" | grep -q "cuLaunchKernel: CUDA_ERROR_LAUNCH_FAILED" || die "error text: $(q "d['bench']['gpus'][1]['error']")"
echo "ok: injected error"

# ---- a hang: the deadline ends the worker, the step is named ----
scenario 's["cuda"]["hang"] = ["cuMemHostAlloc"]'
start=$(date +%s)
rc=$(bench --deadline 3)
[ "$rc" = 2 ] || die "hang: status $rc"
[ $(( $(date +%s) - start )) -le 10 ] || die "hang: took too long"
[ "$(q "d['bench']['state']")" = timeout ] || die "hang: state"
q "d['bench']['hung_step']" | grep -q "cuMemHostAlloc" || die "hang: step $(q "d['bench']['hung_step']")"
echo "ok: hang"

# ---- no driver, and a library that is not CUDA ----
scenario ''
rc=$(CUDA_LIB=$tmp/nothing/libcuda.so.1 bench)
[ "$rc" = 2 ] || die "no driver: status $rc"
q "d['bench']['detail']" | grep -q "not found: no NVIDIA driver" || die "no driver: $(q "d['bench']['detail']")"
rc=$(CUDA_LIB=$SIM_LIB bench)
q "d['bench']['detail']" | grep -q "is not the CUDA driver" || die "not CUDA: $(q "d['bench']['detail']")"
echo "ok: missing library"

# ---- a busy GPU is refused unless --force ----
scenario 's["gpus"][0]["processes"] = [{"pid": 4242, "used_bytes": 1000000}]'
rc=$(bench --gpus 0)
[ "$rc" = 3 ] || die "refuse: status $rc"
[ "$(q "d['bench']['state']")" = refused ] || die "refuse: state $(q "d['bench']['state']")"
rc=$(bench --gpus 0 --force)
[ "$rc" = 0 ] || die "force: status $rc"
echo "ok: refuse and --force"

# ---- baseline: save, then a regression against it ----
scenario ''
rc=$(bench --save)
[ "$rc" = 0 ] && [ -f "$GPUDOCTOR_STATE_DIR/bench-baseline.json" ] || die "save: status $rc"
mode=$(stat -c %a "$GPUDOCTOR_STATE_DIR/bench-baseline.json")
[ "$mode" = 600 ] || die "save: the baseline (command lines) is mode $mode, not 600"
scenario 's["cuda"]["gpus"][0] = dict(s["cuda"]["gpus"][0], fma_flops=3e13)'
rc=$(bench)
[ "$rc" = 1 ] || die "regression: status $rc"
q "[f['id'] for f in d['findings'] if f['gpu'] == 0]" | grep -q "bench.regression" || die "regression: $(q "d['findings']")"
rc=$(bench --compare "$tmp/nothing.json")
[ "$rc" = 3 ] || die "compare missing file: status $rc"
cp "$GPUDOCTOR_STATE_DIR/bench-baseline.json" "$tmp/kept.json"
rc=$(bench --save --no-state)
[ "$rc" = 3 ] || die "save with the state off: status $rc"
cmp -s "$GPUDOCTOR_STATE_DIR/bench-baseline.json" "$tmp/kept.json" || die "--no-state: baseline replaced"
echo "ok: baseline"

# ---- nothing to measure: NVML's GPUs have no PCI address (the simulator gives none without a
# device id) to find them by in CUDA; status 3, the reason said, no empty baseline saved ----
scenario 'for g in s["gpus"]: del g["pci_device_id"]'
cp "$GPUDOCTOR_STATE_DIR/bench-baseline.json" "$tmp/kept.json"
rc=$(bench --save)
cmp -s "$GPUDOCTOR_STATE_DIR/bench-baseline.json" "$tmp/kept.json" || die "nothing to measure: baseline replaced"
[ "$rc" = 3 ] || die "nothing to measure: status $rc"
[ "$(q "d['bench']['state']")" = not_run ] || die "nothing to measure: state $(q "d['bench']['state']")"
q "d['bench']['detail']" | grep -q "no GPU to measure: NVML gives none of its 3 GPUs a PCI address" ||
    die "nothing to measure: $(q "d['bench']['detail']")"
echo "ok: nothing to measure"

# ---- usage ----
"$GPUDOCTOR" bench --duration nonsense >/dev/null 2>&1; [ $? = 64 ] || die "bad --duration"
NVML_SIM_SCENARIO=$tmp/s.json "$GPUDOCTOR" bench --nvml-lib "$SIM_LIB" --gpus 9 >/dev/null 2>&1; [ $? = 64 ] || die "bad --gpus"
exit $fail
