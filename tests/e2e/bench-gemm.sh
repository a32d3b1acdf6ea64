#!/usr/bin/env bash
# gpudoctor bench's GEMMs through the CUDA simulator's fake cuBLASLt
# (build/sim-cuda/libcublasLt.so.13): per-precision figures following the scenario's gemm_flops,
# the precisions each compute capability has, the method, the FMA fallback without the library,
# a GEMM below its Tensor Core peak, injected cublasStatus_t errors and a hung cublasLtMatmul.
# ctest: timeout 400
set -u
CUDA_SIM=$BUILD/sim-cuda/libcuda.so.1
LT_SIM=$BUILD/sim-cuda/libcublasLt.so.13
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export GPUDOCTOR_STATE_DIR=$tmp/state NVML_SIM_QUIET=1
fail=0
die() { echo "FAIL: $*"; fail=1; }
[ -f "$LT_SIM" ] || { echo "FAIL: no $LT_SIM"; exit 1; }

# base: two H100s (compute capability 9.0) at 70 % of their dense Tensor Core peaks
# (data/gpu-specs.tsv: TF32 494.5, FP16 and BF16 989.5, FP8 1979 TFLOPS); $1 = python changing s
scenario() {
    python3 - "$tmp/s.json" "$1" <<'PY'
import json, sys
def gpu(i, bus, name="NVIDIA H100 80GB HBM3", cc=(9, 0)):
    return {"index": i, "name": name, "pci_bus_id": bus, "pci_device_id": "0x233010de",
            "pci_subsystem_id": "0x16c110de", "mem_total_bytes": 85520809984, "mem_used_bytes": 0,
            "pcie_gen": 5, "pcie_width": 16,
            "compute_capability_major": cc[0], "compute_capability_minor": cc[1]}
rates = {"tf32": 346.15e12, "fp16": 692.65e12, "bf16": 692.65e12, "fp8": 1385.3e12}
cuda = lambda: {"mem_bandwidth_bytes_per_s": 3e12, "fma_flops": 5e13, "sm_count": 8,
                "gemm_flops": dict(rates)}
s = {"schema": "gpudoctor.scenario/1", "system": {"driver_version": "580.65.06"},
     "gpus": [gpu(0, "00000000:18:00.0"), gpu(1, "00000000:2a:00.0")],
     "cuda": {"gpus": [cuda(), cuda()]}}
exec(sys.argv[2])
json.dump(s, open(sys.argv[1], "w"))
PY
}
bench() {
    NVML_SIM_SCENARIO=$tmp/s.json GPUDOCTOR_CUDA_LIB=$CUDA_SIM GPUDOCTOR_CUBLASLT_LIB=${LT_LIB-$LT_SIM} \
        "$GPUDOCTOR" bench --nvml-lib "$SIM_LIB" --duration 0.1 "$@" >"$tmp/out" 2>"$tmp/err"
    echo $?
}
q() { python3 -c "import json,sys; d=json.load(open('$tmp/out')); g=d['bench']['gpus']; print($1)"; }
tflops() { q "[None if g[$1]['gemm_'+p+'_flops'] is None else round(g[$1]['gemm_'+p+'_flops']/1e12, 2) for p in ('tf32','fp16','bf16','fp8')]"; }

# ---- healthy: every precision of a 9.0 GPU, at the scenario's rates ----
scenario ''
rc=$(bench --json)
[ "$rc" = 0 ] || die "healthy: status $rc: $(cat "$tmp/err")"
[ "$(tflops 0)" = "[346.15, 692.65, 692.65, 1385.3]" ] || die "healthy: GEMM figures $(tflops 0)"
[ "$(tflops 1)" = "[346.15, 692.65, 692.65, 1385.3]" ] || die "healthy: GPU 1 $(tflops 1)"
[ "$(q "[x['compute_method'] for x in g]")" = "['cublaslt', 'cublaslt']" ] || die "healthy: method $(q "[x['compute_method'] for x in g]")"
[ "$(q "(d['bench']['cublaslt_library'] == '$LT_SIM', d['bench']['cublaslt_version'])")" = "(True, 130100)" ] ||
    die "healthy: library $(q "d['bench']['cublaslt_library'], d['bench']['cublaslt_version']")"
[ "$(q "(g[0]['gemm_n'], g[0]['gemm_note'])")" = "(4096, None)" ] || die "healthy: size/note $(q "g[0]['gemm_n'], g[0]['gemm_note']")"
[ "$(q "[g[0][p+'_expected_flops']/1e12 for p in ('tf32','fp16','bf16','fp8')]")" = "[494.5, 989.5, 989.5, 1979.0]" ] ||
    die "healthy: expectations $(q "g[0]")"
[ "$(q "round(g[0]['fma_flops']/1e12, 1)")" = 50.0 ] || die "healthy: the FMA kernel still runs"
[ "$(q "len(d['findings'])")" = 0 ] || die "healthy has findings: $(q "d['findings']")"
rc=$(bench)
grep -qF "  GEMM FP8      1385.3 TFLOPS (cuBLASLt, 4096 x 4096)  model's peak 1979.0 TFLOPS, 70 %" "$tmp/out" ||
    die "text: $(cat "$tmp/out")"
echo "ok: healthy, four precisions"

# ---- compute capability decides: an A100 (8.0) has no FP8, a T4 (7.5) only FP16; a 9.0 GPU
# whose cuBLASLt has no FP8 algorithm says so ----
scenario 's["gpus"][0] = gpu(0, "00000000:18:00.0", "NVIDIA A100-SXM4-80GB", (8, 0))
s["gpus"][1] = gpu(1, "00000000:2a:00.0", "Tesla T4", (7, 5))
s["gpus"].append(gpu(2, "00000000:3a:00.0"))
s["cuda"]["gpus"] = [dict(cuda(), gemm_flops={"tf32": 120e12, "fp16": 240e12, "bf16": 240e12}),
                     dict(cuda(), gemm_flops={"fp16": 50e12}), dict(cuda(), gemm_flops=dict(rates, fp8=0))]'
rc=$(bench --json)
[ "$rc" = 0 ] || die "cc: status $rc: $(cat "$tmp/err") $(q "d['findings']")"
[ "$(tflops 0)" = "[120.0, 240.0, 240.0, None]" ] || die "A100: $(tflops 0)"
[ "$(q "(g[0]['gemm_note'], g[0]['fp8_expected_flops'])")" = "(None, None)" ] || die "A100: FP8 tried? $(q "g[0]['gemm_note']")"
[ "$(tflops 1)" = "[None, 50.0, None, None]" ] || die "T4: $(tflops 1)"
[ "$(tflops 2)" = "[346.15, 692.65, 692.65, None]" ] || die "no FP8 algorithm: $(tflops 2)"
[ "$(q "g[2]['gemm_note']")" = "FP8: no cuBLASLt algorithm on this GPU (CUBLAS_STATUS_NOT_SUPPORTED)" ] ||
    die "no FP8 algorithm: note $(q "g[2]['gemm_note']")"
[ "$(q "[x['compute_method'] for x in g]")" = "['cublaslt', 'cublaslt', 'cublaslt']" ] || die "cc: method"
echo "ok: precisions by compute capability, FP8 without an algorithm"

# ---- no cuBLASLt: the FMA kernel is the compute figure, and the result says why ----
scenario ''
rc=$(LT_LIB=$tmp/none/libcublasLt.so.13 bench --json)
[ "$rc" = 0 ] || die "absent: status $rc: $(cat "$tmp/err")"
[ "$(q "[x['compute_method'] for x in g]")" = "['fma-kernel', 'fma-kernel']" ] || die "absent: method"
[ "$(tflops 0)" = "[None, None, None, None]" ] || die "absent: GEMM figures $(tflops 0)"
[ "$(q "g[0]['gemm_note']")" = "cuBLASLt not found: no $tmp/none/libcublasLt.so.13: the FMA kernel measured compute instead" ] ||
    die "absent: note $(q "g[0]['gemm_note']")"
[ "$(q "(d['bench']['cublaslt_library'], d['bench']['cublaslt_version'], round(g[0]['fma_flops']/1e12, 1))")" = "(None, 0, 50.0)" ] ||
    die "absent: $(q "d['bench']")"
rc=$(LT_LIB=$tmp/none/libcublasLt.so.13 bench)
grep -qF "compute       50.00 TFLOPS FP32 (FMA kernel)" "$tmp/out" || die "absent: text $(cat "$tmp/out")"
grep -qF "GEMM          cuBLASLt not found" "$tmp/out" || die "absent: text note $(cat "$tmp/out")"
# a library that is not cuBLASLt (the CUDA simulator itself) is the same fallback, with its cause
rc=$(LT_LIB=$CUDA_SIM bench --json)
[ "$rc" = 0 ] || die "not cuBLASLt: status $rc"
q "g[0]['gemm_note']" | grep -q "is not cuBLASLt: cublasLtCreate, .* are missing" || die "not cuBLASLt: $(q "g[0]['gemm_note']")"
echo "ok: FMA fallback without cuBLASLt"

# ---- GPU 1's FP16 GEMM at 30 % of the model's peak, BF16 at 45 %: one compute-low finding ----
scenario 's["cuda"]["gpus"][1]["gemm_flops"].update(fp16=296.85e12, bf16=445.275e12)'
rc=$(bench --json)
[ "$rc" = 1 ] || die "low GEMM: status $rc"
[ "$(q "[(f['id'], f['gpu']) for f in d['findings']]")" = "[('bench.compute-low', 1)]" ] || die "low GEMM: $(q "d['findings']")"
[ "$(q "d['findings'][0]['title']")" = "GPU 1 FP16 GEMM at 30 % of its model's" ] || die "low GEMM: title $(q "d['findings'][0]['title']")"
[ "$(q "len(d['findings'][0]['evidence'])")" = 2 ] || die "low GEMM: evidence $(q "d['findings'][0]['evidence']")"
q "d['findings'][0]['evidence'][0]" | grep -qF "FP16 GEMM (cuBLASLt): measured 296.9 TFLOPS, 30 % of the NVIDIA H100 80GB HBM3's dense Tensor Core 989.5 TFLOPS (below 50 %)" ||
    die "low GEMM: evidence $(q "d['findings'][0]['evidence']")"
# both at 55 %: nothing is low (the share is 50 %, and the siblings agree)
scenario 'for x in s["cuda"]["gpus"]: x["gemm_flops"].update(fp16=544.225e12)'
rc=$(bench --json)
[ "$rc" = 0 ] || die "55 %: status $rc: $(q "d['findings']")"
# an unknown model: behind its sibling of the same name
scenario 'for x in s["gpus"]: x["name"] = "NVIDIA Z1"
s["cuda"]["gpus"][0]["gemm_flops"].update(bf16=400e12)'
rc=$(bench --json)
[ "$rc" = 1 ] || die "sibling: status $rc"
[ "$(q "[(f['id'], f['gpu'], f['title']) for f in d['findings']]")" = "[('bench.compute-low', 0, 'GPU 0 BF16 GEMM at 58 % of its fastest sibling')]" ] ||
    die "sibling: $(q "d['findings']")"
echo "ok: compute-low from a GEMM"

# ---- injected cublasStatus_t errors ----
scenario 's["cuda"]["gpus"][0]["cublaslt_errors"] = {"cublasLtMatmul": "EXECUTION_FAILED"}'
rc=$(bench --json)
[ "$rc" = 2 ] || die "matmul error: status $rc"
[ "$(q "g[0]['error']")" = "cublasLtMatmul (TF32 GEMM): CUBLAS_STATUS_EXECUTION_FAILED" ] || die "matmul error: $(q "g[0]['error']")"
[ "$(q "[(f['id'], f['gpu']) for f in d['findings']]")" = "[('bench.failed', 0)]" ] || die "matmul error: $(q "d['findings']")"
[ "$(tflops 1)" = "[346.15, 692.65, 692.65, 1385.3]" ] || die "matmul error: GPU 1 $(tflops 1)"
# a cuBLASLt that cannot start with this driver: the FMA kernel, not a failure
scenario 's["cuda"]["cublaslt_errors"] = {"cublasLtCreate": "NOT_INITIALIZED"}'
rc=$(bench --json)
[ "$rc" = 0 ] || die "create error: status $rc"
[ "$(q "[x['compute_method'] for x in g]")" = "['fma-kernel', 'fma-kernel']" ] || die "create error: method"
q "g[1]['gemm_note']" | grep -q "^cublasLtCreate: CUBLAS_STATUS_NOT_INITIALIZED (.*libcublasLt.so.13 cannot work with this driver)" ||
    die "create error: note $(q "g[1]['gemm_note']")"
# the heuristic failing otherwise than "not supported" is a failure of that GPU
scenario 's["cuda"]["gpus"][1]["cublaslt_errors"] = {"cublasLtMatmulAlgoGetHeuristic": 14}'
rc=$(bench --json)
[ "$rc" = 2 ] || die "heuristic error: status $rc"
[ "$(q "g[1]['error']")" = "cublasLtMatmulAlgoGetHeuristic (TF32 GEMM): CUBLAS_STATUS_INTERNAL_ERROR" ] || die "heuristic error: $(q "g[1]['error']")"
# a misspelt function or status is a scenario error naming its path
scenario 's["cuda"]["gpus"][0]["cublaslt_errors"] = {"cublasLtMatmulX": "EXECUTION_FAILED"}'
rc=$(bench --json)
grep -q 'cuda.gpus\[0\]: "cublaslt_errors": no cuBLASLt function "cublasLtMatmulX"' "$tmp/err" ||
    NVML_SIM_QUIET= NVML_SIM_SCENARIO=$tmp/s.json GPUDOCTOR_CUDA_LIB=$CUDA_SIM GPUDOCTOR_CUBLASLT_LIB=$LT_SIM \
        "$GPUDOCTOR" bench --nvml-lib "$SIM_LIB" --duration 0.1 --json 2>&1 >/dev/null |
        grep -q 'cuda.gpus\[0\]: "cublaslt_errors": no cuBLASLt function "cublasLtMatmulX"' ||
        die "misspelt function: $(cat "$tmp/err")"
scenario 's["cuda"]["gpus"][0]["gemm_flops"] = {"fp12": 1}'
NVML_SIM_SCENARIO=$tmp/s.json GPUDOCTOR_CUDA_LIB=$CUDA_SIM GPUDOCTOR_CUBLASLT_LIB=$LT_SIM NVML_SIM_QUIET= \
    "$GPUDOCTOR" bench --nvml-lib "$SIM_LIB" --duration 0.1 --json 2>&1 >/dev/null |
    grep -q 'cuda.gpus\[0\].gemm_flops: unknown key "fp12"' || die "misspelt precision"
echo "ok: injected cublasStatus_t errors"

# ---- a cublasLtMatmul that never returns: a timeout naming the GEMM ----
# (on GPU 0, the first measured: the deadline leaves room for a loaded machine's slow start)
scenario 's["cuda"]["gpus"][0]["cublaslt_hang"] = ["cublasLtMatmul"]'
rc=$(bench --json --deadline 15)
[ "$rc" = 2 ] || die "hang: status $rc"
[ "$(q "(d['bench']['state'], d['bench']['hung_step'])")" = "('timeout', 'gpu 0: cuBLASLt TF32 GEMM (cublasLtMatmul)')" ] ||
    die "hang: $(q "(d['bench']['state'], d['bench']['hung_step'])")"
echo "ok: hung cublasLtMatmul"

# ---- the memory share bounds the size: 1 GiB free, a quarter less the triad's 48 MiB ----
scenario 'for x in s["gpus"]: x["mem_total_bytes"] = 1 << 30'
rc=$(bench --json)
[ "$rc" = 0 ] || die "small: status $rc: $(q "d['findings']")"
[ "$(q "g[0]['gemm_n']")" = 2048 ] || die "small: n $(q "g[0]['gemm_n']")"
[ "$(tflops 0)" = "[346.15, 692.65, 692.65, 1385.3]" ] || die "small: $(tflops 0)"
echo "ok: size within the memory share"

exit $fail
