#!/usr/bin/env bash
# One prepared run for a machine with a real NVIDIA GPU: builds gpudoctor, runs
# `gpudoctor check --json` and `gpudoctor bench --quick --json` against the installed driver,
# keeps both documents, and prints the block to record in docs/performance.md ("Real hardware").
#
#   scripts/device-check.sh [BUILD-DIR]          (default: build-device-check)
#
# Environment:
#   GPUDOCTOR=PATH            use this binary instead of building one
#   GPUDOCTOR_NVML_LIB, GPUDOCTOR_CUDA_LIB
#                             the driver libraries to load (default: the installed driver's);
#                             e2e/device-check points them at the simulators so this script is
#                             tested on every build
#   DEVICE_CHECK_OUT=DIR      where the raw outputs go (default: device-check-HOST-UTCTIME)
#   DEVICE_CHECK_DURATION=DUR bench's sustained load (default: bench's own, 2 s)
#
# Exit status: 0 when both commands ran and wrote their JSON (whatever they found: the figures
# are what is recorded), 1 when the build or a command failed, 2 on a usage error.
set -uo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)

case "${1:-}" in
-h | --help)
    sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'
    exit 0
    ;;
-*)
    echo "device-check: unknown option '$1' (try --help)" >&2
    exit 2
    ;;
esac
[ $# -le 1 ] || {
    echo "device-check: one build directory at most, not $#" >&2
    exit 2
}
command -v python3 >/dev/null || {
    echo "device-check: python3 is needed to read the JSON documents (apt-get install python3)" >&2
    exit 1
}

say() { printf 'device-check: %s\n' "$*" >&2; }
now() { date +%s.%N; }

# ---- build, unless a binary is given ----
if [ -n "${GPUDOCTOR:-}" ]; then
    [ -x "$GPUDOCTOR" ] || {
        say "GPUDOCTOR=$GPUDOCTOR is not an executable"
        exit 1
    }
    gpudoctor=$GPUDOCTOR
else
    build=${1:-$src/build-device-check}
    say "building in $build (cmake; 'make deps' installs what is missing)"
    if ! cmake -S "$src" -B "$build" -DBUILD_TESTING=OFF >"${TMPDIR:-/tmp}/device-check-cmake.log" 2>&1 ||
        ! cmake --build "$build" -j"$(nproc 2>/dev/null || echo 2)" >>"${TMPDIR:-/tmp}/device-check-cmake.log" 2>&1; then
        tail -n 20 "${TMPDIR:-/tmp}/device-check-cmake.log" >&2
        say "the build failed (log: ${TMPDIR:-/tmp}/device-check-cmake.log)"
        exit 1
    fi
    gpudoctor=$build/gpudoctor
fi

out=${DEVICE_CHECK_OUT:-device-check-$(hostname -s 2>/dev/null || echo host)-$(date -u +%Y%m%dT%H%MZ)}
mkdir -p "$out" || {
    say "cannot create $out"
    exit 1
}
say "writing to $out/"

# ---- the machine, as the driver's own tools show it ----
{
    echo "date_utc=$(date -u +%Y-%m-%dT%H:%MZ)"
    echo "gpudoctor=$("$gpudoctor" --version 2>/dev/null) ($(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo unknown))"
    echo "kernel=$(uname -r)"
    echo "cpu=$(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//'), $(nproc 2>/dev/null) cores"
    echo "nvml_lib=${GPUDOCTOR_NVML_LIB:-libnvidia-ml.so.1 (installed)}"
    echo "cuda_lib=${GPUDOCTOR_CUDA_LIB:-libcuda.so.1 (installed)}"
    if [ -z "${GPUDOCTOR_NVML_LIB:-}" ] && command -v nvidia-smi >/dev/null; then
        nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,vbios_version,pcie.link.gen.current,pcie.link.width.current,power.limit \
            --format=csv,noheader 2>&1 | sed 's/^/nvidia_smi=/'
    fi
} >"$out/machine.txt"

# ---- check, then bench; each exit status is its verdict (0-3), above that a failure ----
run() { # run NAME ARGS...: $out/NAME.json, NAME.err, NAME.status, NAME.wall
    local name=$1 start rc
    shift
    start=$(now)
    "$gpudoctor" "$@" >"$out/$name.json" 2>"$out/$name.err"
    rc=$?
    echo "$rc" >"$out/$name.status"
    python3 -c "print($(now) - $start)" >"$out/$name.wall"
    return $rc
}
say "gpudoctor check --json"
run check check --json
say "gpudoctor bench --quick --json"
run bench bench --quick --json ${DEVICE_CHECK_DURATION:+--duration "$DEVICE_CHECK_DURATION"}

# ---- what to record ----
python3 - "$out" <<'PY'
import json, os, sys

out = sys.argv[1]
def read(name):
    return open(os.path.join(out, name)).read().strip()
failed = []
docs = {}
for name in ("check", "bench"):
    status = int(read(name + ".status"))
    try:
        docs[name] = json.loads(read(name + ".json"))
    except (OSError, ValueError) as e:
        failed.append(f"{name}: exit status {status}, no JSON document ({e}); "
                      f"stderr: {read(name + '.err')[:300]}")
        continue
    if status > 3:
        failed.append(f"{name}: exit status {status}: {read(name + '.err')[:300]}")

def g(v, unit, scale):
    return "-" if v is None else f"{v / scale:.1f} {unit}"
def pct(v, ref):
    return "-" if v is None or not ref else f"{100 * v / ref:.0f} %"

machine = dict(l.split("=", 1) for l in read("machine.txt").splitlines() if "=" in l)
print("---- record this (docs/performance.md, 'Real hardware'; attach the files in "
      f"{out}/) ----")
print()
print(f"- date: {machine.get('date_utc')}; {machine.get('gpudoctor')}")
print(f"- machine: {machine.get('cpu')}; kernel {machine.get('kernel')}")
for l in read("machine.txt").splitlines():
    if l.startswith("nvidia_smi="):
        print(f"- nvidia-smi: {l[len('nvidia_smi='):]}")
c = docs.get("check")
if c is not None:
    snap = c.get("snapshot", {})
    nv = snap.get("nvml", {})
    v = c.get("verdict", {})
    n = nv.get('device_count')
    print(f"- NVML: driver {nv.get('driver_version')}, {n} GPU{'' if n == 1 else 's'}, "
          f"library {nv.get('library')}")
    print(f"- check: status {v.get('exit_code')} ({v.get('text')}), "
          f"{float(read('check.wall')):.2f} s wall")
    for f in c.get("findings", []):
        print(f"  - {f.get('severity')} [{f.get('id')}] {f.get('title')}")
b = docs.get("bench")
if b is not None:
    x = b.get("bench", {})
    wall = float(read("bench.wall"))
    print(f"- bench --quick: status {b.get('status')}, state {x.get('state')}"
          f"{': ' + x['detail'] if x.get('detail') else ''}; CUDA driver {x.get('driver_version')}, "
          f"library {x.get('library')}, cuBLASLt {x.get('cublaslt_library')} "
          f"({x.get('cublaslt_version')})")
    if x.get("hung_step"):
        print(f"  - hung in: {x['hung_step']}")
    if x.get("elapsed_s"):
        print(f"- bench time: {x.get('measured_s', 0):.3f} s measured on the devices, "
              f"{x['elapsed_s']:.3f} s in the worker, {wall:.2f} s wall")
    print()
    print("| GPU | figure | measured | expected | share |")
    print("|---|---|---|---|---|")
    for d in x.get("gpus", []):
        gpu = f"{d.get('index')} {d.get('name')}"
        if d.get("error"):
            print(f"| {gpu} | error | {d['error']} | | |")
            continue
        link = f"Gen{d.get('pcie_gen')} x{d.get('pcie_width')}"
        rows = [
            (f"host->device pinned ({link})", d.get("h2d_pinned_bytes_per_s"),
             d.get("pcie_expected_bytes_per_s"), "GB/s", 1e9),
            ("device->host pinned", d.get("d2h_pinned_bytes_per_s"),
             d.get("pcie_expected_bytes_per_s"), "GB/s", 1e9),
            ("host->device pageable", d.get("h2d_pageable_bytes_per_s"), None, "GB/s", 1e9),
            ("both directions", d.get("bidir_bytes_per_s"), None, "GB/s", 1e9),
            ("device copy", d.get("dtod_bytes_per_s"), d.get("mem_expected_bytes_per_s"),
             "GB/s", 1e9),
            ("triad", d.get("triad_bytes_per_s"), d.get("mem_expected_bytes_per_s"), "GB/s", 1e9),
            ("compute, FMA kernel (FP32)", d.get("fma_flops"),
             d.get("fp32_expected_flops"), "TFLOPS", 1e12),
        ] + [
            (f"GEMM {p.upper()} (cuBLASLt, n={d.get('gemm_n')})", d.get(f"gemm_{p}_flops"),
             d.get(f"{p}_expected_flops"), "TFLOPS", 1e12)
            for p in ("tf32", "fp16", "bf16", "fp8") if d.get(f"gemm_{p}_flops") is not None
        ] + [
            ("sustained, first tenth", d.get("sustained_first_flops"), None, "TFLOPS", 1e12),
            ("sustained, last tenth", d.get("sustained_last_flops"),
             d.get("sustained_first_flops"), "TFLOPS", 1e12),
        ]
        for label, v, ref, unit, scale in rows:
            print(f"| {gpu} | {label} | {g(v, unit, scale)} | {g(ref, unit, scale)} | {pct(v, ref)} |")
        if d.get("gemm_note"):
            print(f"| {gpu} | GEMM | {d['gemm_note']} | | |")
        if d.get("load_samples"):
            print(f"| {gpu} | under load (NVML, {d['load_samples']} readings) | SM "
                  f"{d.get('load_clock_sm_min_mhz')}-{d.get('load_clock_sm_max_mhz')} MHz, up to "
                  f"{d.get('load_temp_max_c')} C, {(d.get('load_power_max_mw') or 0) / 1000:.0f} W peak, "
                  f"reasons {d.get('load_clocks_event_reasons')} | | |")
        numa = d.get("host_numa_node")
        print(f"| {gpu} | checksum | {d.get('checksum')} "
              f"{'ok' if d.get('checksum_ok') else 'WRONG'} | | |")
        print(f"| {gpu} | host buffer NUMA node | {numa} (GPU's: {d.get('gpu_numa_node')}) | | |")
    for p in x.get("pairs", []):
        print(f"| {p['src']} -> {p['dst']} | peer copy | {g(p.get('bytes_per_s'), 'GB/s', 1e9)}, "
              f"{p.get('latency_us', 0):.1f} us{'' if p.get('peer_access') else ' (no peer access)'} | | |")
    if b.get("findings"):
        print()
    for f in b.get("findings", []):
        print(f"- {f.get('severity')} [{f.get('id')}] GPU {f.get('gpu')}: {f.get('title')}")
print()
print("---- end ----")
for f in failed:
    print(f"device-check: FAILED: {f}", file=sys.stderr)
sys.exit(1 if failed else 0)
PY
