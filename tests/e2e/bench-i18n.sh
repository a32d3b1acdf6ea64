#!/usr/bin/env bash
# gpudoctor bench's text report in Chinese (docs/i18n.md), against the CUDA and NVML simulators.
# What holds whatever the catalogue holds: the English report keeps its lines byte for byte;
# --json is the same under LANG=zh_CN.UTF-8 as under LANG=C.UTF-8 (the refusal's and the
# no-GPU detail in English); the Chinese report has the English one's lines and numbers in the C
# locale's format, is valid UTF-8, and its figures start at display column 16 after any label (a
# Chinese character takes two columns). What needs the zh_CN entries of src/cmd/cmd-bench.c in
# po/zh_CN.po: every label, the first line, the checksum's verdict, the findings' severity, the
# refusal and the no-GPU reason in Chinese.
# ctest: timeout 300
set -u
CUDA_SIM=$BUILD/sim-cuda/libcuda.so.1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unset LC_ALL LC_MESSAGES LANGUAGE
export GPUDOCTOR_STATE_DIR=off NVML_SIM_QUIET=1 NO_COLOR=1 GPUDOCTOR_LOCALEDIR=$BUILD/locale
export GPUDOCTOR_CUBLASLT_LIB=$BUILD/sim-cuda/libcublasLt.so.13
fail=0
die() { echo "FAIL: $*"; fail=1; }
[ -f "$CUDA_SIM" ] || { echo "SKIP: no $CUDA_SIM"; exit 77; }
localedef -i zh_CN -f UTF-8 "$tmp/zh_CN.UTF-8" 2>/dev/null || { echo "SKIP: cannot build the zh_CN.UTF-8 locale"; exit 77; }

# two H100s: GPU 1 computes wrong results and reports thermal clock event reasons, the pair has
# no peer access; $1 = python changing s
scenario() {
    python3 - "$tmp/s.json" "$1" <<'PY'
import json, sys
gpu = lambda i, bus: {"index": i, "name": "NVIDIA H100 80GB HBM3", "pci_bus_id": bus,
    "pci_device_id": "0x233010de", "pci_subsystem_id": "0x16c110de",
    "compute_capability_major": 9, "compute_capability_minor": 0,
    "mem_total_bytes": 85520809984, "mem_used_bytes": 0, "pcie_gen": 5, "pcie_width": 16,
    "clock_sm_mhz": 1695, "clock_mem_mhz": 6251, "temp_c": 50, "power_mw": 140000,
    "clocks_event_reasons": "0x0000000000000000"}
cuda = lambda: {"mem_bandwidth_bytes_per_s": 3e12, "fma_flops": 5e13, "sm_count": 8,
                "gemm_flops": {"tf32": 346.15e12, "fp16": 692.65e12, "bf16": 692.65e12, "fp8": 1385.3e12}}
s = {"schema": "gpudoctor.scenario/1", "system": {"driver_version": "580.65.06"},
     "gpus": [gpu(0, "00000000:18:00.0"), gpu(1, "00000000:2a:00.0")],
     "cuda": {"gpus": [cuda(), dict(cuda(), corrupt=True)],
              "pairs": [{"gpus": [0, 1], "bytes_per_s": 2e10, "access": False}]}}
s["gpus"][1]["clocks_event_reasons"] = "0x0000000000000060"
exec(sys.argv[2])
json.dump(s, open(sys.argv[1], "w"))
PY
}
# $1 = name: writes $tmp/$1.{en,zh}.{txt,json}; the rest are bench's options
bench() {
    local name=$1 lang loc
    shift
    for lang in en zh; do
        loc=C.UTF-8
        [ $lang = zh ] && loc=zh_CN.UTF-8
        for fmt in txt json; do
            LOCPATH=$tmp LANG=$loc NVML_SIM_SCENARIO=$tmp/s.json GPUDOCTOR_CUDA_LIB=$CUDA_SIM \
                "$GPUDOCTOR" bench --nvml-lib "$SIM_LIB" --duration 0.2 "$@" \
                $([ $fmt = json ] && echo --json) >"$tmp/$name.$lang.$fmt" 2>"$tmp/$name.$lang.$fmt.err"
        done
    done
}
# --json alike in both languages, but for what the clock decides
same_json() {
    python3 - "$tmp/$1.en.json" "$tmp/$1.zh.json" <<'PY'
import json, re, sys
def norm(d):
    if isinstance(d, dict):
        return {k: None if k in ("elapsed_s", "measured_s") or k.startswith("load_") else norm(v)
                for k, v in d.items()}
    if isinstance(d, list):
        return [norm(x) for x in d]
    if isinstance(d, str):
        return re.sub(r"\d+ NVML readings", "N NVML readings", d)
    return d
a, b = [norm(json.load(open(p, encoding="utf-8"))) for p in sys.argv[1:]]
if a != b:
    sys.exit("differs: %s\n%s" % (json.dumps(a)[:600], json.dumps(b)[:600]))
PY
}
# the Chinese report: valid UTF-8, the English one's lines with the same numbers (the C locale's
# format), figures at display column 16 after every label
layout() {
    python3 - "$tmp/$1.en.txt" "$tmp/$1.zh.txt" <<'PY'
import re, sys, unicodedata
en = open(sys.argv[1], encoding="utf-8").read().splitlines()
zh = open(sys.argv[2], "rb").read().decode("utf-8").splitlines()
width = lambda s: sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in s)
if len(en) != len(zh):
    sys.exit("%d lines in English, %d in Chinese" % (len(en), len(zh)))
# numbers standing alone (not the 5 of Gen5, the 2 of P2P)
num = re.compile(r"(?<![A-Za-z0-9_.])\d+(?:[.,]\d+)?(?![A-Za-z0-9_])")
for e, z in zip(en, zh):
    if "NVML readings" in e or e.startswith("measured "):
        continue
    if num.findall(e) != num.findall(z):
        sys.exit("numbers differ:\n%s\n%s" % (e, z))
    # a figure's line: two blanks, a label, blanks, the figures
    m = re.match(r"^  (\S(?:.*?\S)?)  +(?=\S)", e)
    if m is None or e.startswith("  host buffer"):
        continue
    mz = re.match(r"^  (\S(?:.*?\S)?)  +(?=\S)", z)
    if mz is None:
        sys.exit("no label: %r" % z)
    if width(mz.group(0)) != max(16, width(mz.group(1)) + 4):
        sys.exit("figures at column %d, not 16: %r" % (width(mz.group(0)), z))
PY
}

# ---- the figures: English as before, the same JSON, the Chinese laid out ----
scenario ''
bench load
E=$tmp/load.en.txt Z=$tmp/load.zh.txt
for line in \
    "bench (quick): ok" \
    "GPU 0 NVIDIA H100 80GB HBM3 (0000:18:00.0)" \
    "  host->device  pinned    50.4 GB/s  pageable    25.2 GB/s  expected 50.4 GB/s (Gen5 x16), 100 %" \
    "  device->host  pinned    50.4 GB/s  pageable    25.2 GB/s  both at once 100.8 GB/s" \
    "  memory        triad  3000.0 GB/s  device copy  3000.0 GB/s  model's peak 3350.0 GB/s, 90 %" \
    "  compute       50.00 TFLOPS FP32 (FMA kernel)  model's peak 67.0 TFLOPS, 75 %" \
    "  GEMM FP8      1385.3 TFLOPS (cuBLASLt, 4096 x 4096)  model's peak 1979.0 TFLOPS, 70 %" \
    "  checksum      11beef97207d1421 ok" \
    "  checksum      ba96db8dfe73649d WRONG" \
    "peer GPU 0 -> GPU 1     19.9 GB/s  10.0 us  (no peer access)" \
    "critical [bench.checksum-mismatch] GPU 1 computed a wrong result (silent data corruption)"; do
    grep -qxF -- "$line" "$E" || die "English: no line '$line': $(cat "$E")"
done
grep -qE '^  sustained     [0-9.]+ -> [0-9.]+ TFLOPS over 0\.2 s \([0-9.]+ TFLOPS mean\), every GPU at once$' "$E" ||
    die "English: sustained: $(grep sustained "$E")"
grep -qE '^  under load    [0-9]+ NVML readings, SM 1695-1695 MHz, memory 6251-6251 MHz, up to 50 °C, 140 W mean, 140 W peak, no clock event reason$' "$E" ||
    die "English: under load, GPU 0: $(grep 'under load' "$E")"
grep -qE '^  under load    [0-9]+ NVML readings, .*, reasons: sw_thermal hw_thermal$' "$E" ||
    die "English: under load, GPU 1: $(grep 'under load' "$E")"
grep -qE '^  host buffer on NUMA node [0-9]+ \(GPU: (local|remote|unknown)\)$' "$E" || die "English: host buffer"
msg=$(same_json load) || die "--json under zh_CN: $msg"
msg=$(layout load) || die "Chinese layout: $msg"
echo "ok: figures"

# ---- a refusal (GPU 0 in use by two processes) and nothing to measure ----
scenario 's["gpus"][0]["processes"] = [{"pid": 4242, "used_bytes": 1000000}, {"pid": 4243, "used_bytes": 1000000}]'
bench refused --gpus 0
grep -qxF "bench (quick): refused: GPU 0 is in use by 2 processes (pid 4242): bench would slow them and be slowed; --force measures anyway" \
    "$tmp/refused.en.txt" || die "English refusal: $(head -1 "$tmp/refused.en.txt")"
msg=$(same_json refused) || die "--json of a refusal under zh_CN: $msg"
scenario 's["gpus"] = s["gpus"][:1]; del s["gpus"][0]["pci_device_id"]'
bench nogpu
grep -qxF "bench (quick): not_run: no GPU to measure: NVML gives none of its 1 GPU a PCI address to find it by in CUDA" \
    "$tmp/nogpu.en.txt" || die "English no GPU: $(head -1 "$tmp/nogpu.en.txt")"
msg=$(same_json nogpu) || die "--json of no GPU under zh_CN: $msg"
echo "ok: refusal and no GPU, English and JSON"

# ---- in Chinese: needs the zh_CN entries of src/cmd/cmd-bench.c in po/zh_CN.po ----
python3 - "$Z" "$tmp/refused.zh.txt" "$tmp/nogpu.zh.txt" <<'PY' || die "Chinese: see above; $(cat "$Z")"
import re, sys
z, refused, nogpu = [open(p, encoding="utf-8").read().splitlines() for p in sys.argv[1:]]
ok = True
def need(cond, what):
    global ok
    if not cond:
        print("  not in Chinese: %s" % what)
        ok = False
wide = lambda s: re.search(r"[\u4e00-\u9fff]", s) is not None
need(wide(z[0]), "the first line %r" % z[0])
labels = [m.group(1) for m in (re.match(r"^  (\S(?:.*?\S)?)  +(?=\S)", l) for l in z) if m]
need(len(labels) >= 20, "figure lines: %r" % labels)
for lab in labels:
    need(lab.startswith("GEMM") or wide(lab), "label %r" % lab)
need(any("锁页内存" in l and "可分页内存" in l for l in z), "pinned and pageable")
need(any(l.startswith("  校验和") for l in z), "checksum")
need(any(l.startswith("  ") and "NUMA" in l and wide(l) for l in z), "host buffer")
need(all(wide(l) for l in z if l.startswith("GPU 0 ->") or "GPU 0 -> GPU 1" in l), "peer line")
need(all(not re.search(r"\b(ok|WRONG)$", l) for l in z), "the checksum's verdict")
findings = [l for l in z if re.match(r"^\S+ \[bench\.", l)]
need(findings and all(wide(l.split(" [")[0]) for l in findings), "findings' severity %r" % findings)
need(wide(refused[0]) and "--force" in refused[0] and "4242" in refused[0], "refusal %r" % refused[0])
need(wide(nogpu[0]) and "PCI" in nogpu[0], "no GPU %r" % nogpu[0])
sys.exit(0 if ok else 1)
PY
echo "ok: Chinese"

# ---- a hang: the deadline's detail and the worker's step, in Chinese; --json as it was ----
scenario 's["cuda"]["hang"] = ["cuMemHostAlloc"]'
bench hang --gpus 0 --deadline 3
grep -qxF "bench (quick): timeout: the CUDA worker did not finish within 3 s" "$tmp/hang.en.txt" ||
    die "English hang: $(head -1 "$tmp/hang.en.txt")"
grep -qF "[bench.failed] The CUDA bench hung: gpu 0: cuMemAlloc_v2 and cuMemHostAlloc" "$tmp/hang.en.txt" ||
    die "English hang finding: $(cat "$tmp/hang.en.txt")"
grep -qF "：CUDA 工作进程未能在 3 s 内完成" "$tmp/hang.zh.txt" || die "Chinese hang: $(head -1 "$tmp/hang.zh.txt")"
grep -qF "[bench.failed] CUDA 基准测试卡住了：GPU 0：cuMemAlloc_v2 和 cuMemHostAlloc" "$tmp/hang.zh.txt" ||
    die "Chinese hang finding: $(cat "$tmp/hang.zh.txt")"
python3 -c 'import json, sys; a, b = (json.load(open(p)) for p in sys.argv[1:]); sys.exit(a["bench"]["hung_step"] != b["bench"]["hung_step"] or a["bench"]["detail"] != b["bench"]["detail"] or a["bench"]["hung_step"] != "gpu 0: cuMemAlloc_v2 and cuMemHostAlloc")' \
    "$tmp/hang.en.json" "$tmp/hang.zh.json" || die "--json of a hang under zh_CN: the step or detail differs"
echo "ok: a hang"
exit $fail
