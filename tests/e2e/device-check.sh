#!/usr/bin/env bash
# scripts/device-check.sh, the run prepared for a machine with a real GPU, played against the
# simulators (GPUDOCTOR_NVML_LIB, GPUDOCTOR_CUDA_LIB) so it cannot rot unseen: the block it prints
# carries the measured figures and findings, its exit status says whether both commands ran.
set -u
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
die() { echo "FAIL: $*"; fail=1; }
export NVML_SIM_QUIET=1 NVML_SIM_SCENARIO=$tmp/s.json GPUDOCTOR_NVML_LIB=$SIM_LIB \
    GPUDOCTOR_CUDA_LIB=$BUILD/sim-cuda/libcuda.so.1 GPUDOCTOR_CONFIG=/dev/null \
    GPUDOCTOR_STATE_DIR=$tmp/state DEVICE_CHECK_DURATION=0.1 \
    GPUDOCTOR_CUBLASLT_LIB=$tmp/no-libcublasLt.so.13 # the FMA kernel only (e2e/bench-gemm: GEMMs)
script=$SRC/scripts/device-check.sh

scenario() { # $1: python changing s
    python3 - "$tmp/s.json" "$1" <<'PY'
import json, sys
gpu = lambda i, bus: {"index": i, "name": "NVIDIA H100 80GB HBM3", "pci_bus_id": bus,
    "pci_device_id": "0x233010de", "pci_subsystem_id": "0x16c110de",
    "mem_total_bytes": 85520809984, "mem_used_bytes": 0, "pcie_gen": 4, "pcie_width": 16}
s = {"schema": "gpudoctor.scenario/1", "system": {"driver_version": "580.65.06"},
     "gpus": [gpu(0, "00000000:18:00.0"), gpu(1, "00000000:2a:00.0")],
     "cuda": {"gpus": [{"mem_bandwidth_bytes_per_s": 3e12, "fma_flops": 5e13, "sm_count": 8}] * 2}}
exec(sys.argv[2])
json.dump(s, open(sys.argv[1], "w"))
PY
}
check() { # runs the script into $tmp/out/$1; the status, the block in $tmp/$1.txt
    GPUDOCTOR=${BIN:-$GPUDOCTOR} DEVICE_CHECK_OUT=$tmp/out/$1 "$script" >"$tmp/$1.txt" 2>"$tmp/$1.err"
    echo $?
}

# ---- a healthy pair of GPUs: the figures the simulator plays, in the block to record ----
scenario ''
rc=$(check ok)
[ "$rc" = 0 ] || die "healthy: status $rc: $(cat "$tmp/ok.err")"
grep -q '^---- record this' "$tmp/ok.txt" && grep -q '^---- end ----' "$tmp/ok.txt" || die "no block"
# Gen4 x16: 31.5 GB/s encoded, 80 % of it expected, and the simulator copies at that rate
grep -qF '| 0 NVIDIA H100 80GB HBM3 | host->device pinned (Gen4 x16) | 25.2 GB/s | 25.2 GB/s | 100 % |' \
    "$tmp/ok.txt" || die "h2d row: $(grep 'host->device pinned' "$tmp/ok.txt")"
# the model's peaks from data/gpu-specs.tsv
grep -qF '| 1 NVIDIA H100 80GB HBM3 | triad | 3000.0 GB/s | 3350.0 GB/s | 90 % |' "$tmp/ok.txt" || die "triad row"
grep -qF '| 1 NVIDIA H100 80GB HBM3 | compute, FMA kernel (FP32) | 50.0 TFLOPS | 67.0 TFLOPS | 75 % |' "$tmp/ok.txt" || die "compute row"
grep -qE '^\| 1 NVIDIA H100 80GB HBM3 \| GEMM \| .*cuBLASLt' "$tmp/ok.txt" || die "GEMM note row (no cuBLASLt)"
grep -qE '^\| 1 NVIDIA H100 80GB HBM3 \| under load \(NVML, [0-9]+ readings\) \| SM ' "$tmp/ok.txt" || die "under-load row"
grep -qF '| 0 -> 1 | peer copy |' "$tmp/ok.txt" || die "no peer row"
grep -q '^- NVML: driver 580.65.06, 2 GPUs' "$tmp/ok.txt" || die "NVML line: $(grep NVML "$tmp/ok.txt")"
grep -q '^- bench --quick: status 0, state ok; CUDA driver 13000' "$tmp/ok.txt" || die "bench line"
grep -q '^- check: status [0-3] ' "$tmp/ok.txt" || die "check line"
for f in check.json bench.json machine.txt check.status bench.status; do
    [ -s "$tmp/out/ok/$f" ] || die "$f not kept"
done
[ "$(python3 -c "import json; print(len(json.load(open('$tmp/out/ok/bench.json'))['bench']['gpus']))")" = 2 ] ||
    die "bench.json"
grep -q "cuda_lib=$BUILD/sim-cuda/libcuda.so.1" "$tmp/out/ok/machine.txt" || die "machine.txt: library"
echo "ok: healthy"

# ---- what bench finds is recorded, not a failure of the script ----
scenario 's["cuda"]["gpus"][1] = dict(s["cuda"]["gpus"][1], corrupt=True)'
rc=$(check corrupt)
[ "$rc" = 0 ] || die "corrupt: status $rc"
grep -q '^- bench --quick: status 2' "$tmp/corrupt.txt" || die "corrupt: bench status"
grep -qE '^\| 1 NVIDIA H100 80GB HBM3 \| checksum \| 0x[0-9a-f]+ WRONG' "$tmp/corrupt.txt" || die "corrupt: checksum row"
grep -q '^- critical \[bench.checksum-mismatch\] GPU 1:' "$tmp/corrupt.txt" || die "corrupt: finding"
echo "ok: findings recorded"

# ---- no CUDA driver: bench says why, the script still records it ----
scenario ''
rc=$(GPUDOCTOR_CUDA_LIB=$tmp/none/libcuda.so.1 check nocuda)
[ "$rc" = 0 ] || die "no CUDA: status $rc"
grep -q 'state failed: .*not found: no NVIDIA driver' "$tmp/nocuda.txt" || die "no CUDA: $(grep bench "$tmp/nocuda.txt")"
echo "ok: no CUDA driver"

# ---- a gpudoctor that crashes or writes no JSON: the script fails and says which ----
printf '#!/bin/sh\necho boom >&2\nexit 139\n' >"$tmp/crash"
chmod +x "$tmp/crash"
rc=$(BIN=$tmp/crash check crash)
[ "$rc" = 1 ] || die "crash: status $rc"
grep -q 'FAILED: check: exit status 139, no JSON document' "$tmp/crash.err" || die "crash: $(cat "$tmp/crash.err")"
grep -q 'FAILED: bench: exit status 139' "$tmp/crash.err" || die "crash: bench"
echo "ok: crash"

# ---- the build: a failing cmake stops the script with its log ----
mkdir -p "$tmp/bin"
printf '#!/bin/sh\necho "CMake Error: no compiler" >&2\nexit 1\n' >"$tmp/bin/cmake"
chmod +x "$tmp/bin/cmake"
rc=$(env -u GPUDOCTOR PATH="$tmp/bin:$PATH" TMPDIR=$tmp DEVICE_CHECK_OUT=$tmp/out/b "$script" "$tmp/b" >/dev/null 2>"$tmp/build.err"; echo $?)
[ "$rc" = 1 ] || die "build: status $rc"
grep -q 'CMake Error: no compiler' "$tmp/build.err" && grep -q 'the build failed' "$tmp/build.err" || die "build: $(cat "$tmp/build.err")"
[ ! -e "$tmp/out/b" ] || die "build: ran on after a failed build"

# ---- usage ----
"$script" --nonsense >/dev/null 2>&1; [ $? = 2 ] || die "unknown option"
"$script" a b >/dev/null 2>&1; [ $? = 2 ] || die "two build dirs"
GPUDOCTOR=$tmp/nothing "$script" >/dev/null 2>&1; [ $? = 1 ] || die "missing binary"
"$script" --help | grep -q 'DEVICE_CHECK_OUT' || die "--help"
exit $fail
