#!/usr/bin/env bash
# slurm-check with slurm_bench = quick (docs/slurm.md, "A quick bench"), against a fake scontrol
# and the CUDA simulator: wrong results drain the node (bench.* are node faults); a recent last
# result is judged without measuring again; an old one is measured again, and a healthy bench
# resumes gpudoctor's own drain; GPUs in use are never loaded; a hang is bounded and drains; off
# by default; bad values are 64.
# ctest: timeout 300
set -u
CUDA_SIM=$BUILD/sim-cuda/libcuda.so.1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export GPUDOCTOR_STATE_DIR=$tmp/state NVML_SIM_QUIET=1 NVML_SIM_SCENARIO=$tmp/s.json \
    GPUDOCTOR_CUDA_LIB=$CUDA_SIM GPUDOCTOR_CONFIG=/dev/null FAKE_NODE=$tmp/node FAKE_UPDATES=$tmp/updates
fail=0
die() { echo "FAIL: $*"; fail=1; }

# A fake scontrol: the node's state is in $FAKE_NODE (State=..., Reason=...); updates are logged.
printf '%s\n' '#!/bin/sh' \
    'if [ "$1 $2 $3" = "show node -o" ]; then echo "NodeName=$4 Arch=x86_64 $(cat "$FAKE_NODE")"; exit 0; fi' \
    '[ "$1" = update ] || exit 1' \
    'shift; echo "$*" >>"$FAKE_UPDATES"' >"$tmp/scontrol"
chmod 755 "$tmp/scontrol"
echo "State=IDLE" >"$tmp/node"

scenario() {
    python3 - "$tmp/s.json" "$1" <<'PY'
import json, sys
gpu = lambda i, bus: {"index": i, "name": "NVIDIA H100 80GB HBM3", "pci_bus_id": bus,
    "pci_device_id": "0x233010de", "pci_subsystem_id": "0x16c110de",
    "mem_total_bytes": 85520809984, "mem_used_bytes": 0, "pcie_gen": 5, "pcie_width": 16}
s = {"schema": "gpudoctor.scenario/1", "system": {"driver_version": "580.65.06"},
     "gpus": [gpu(0, "00000000:18:00.0"), gpu(1, "00000000:2a:00.0")],
     "cuda": {"gpus": [{"mem_bandwidth_bytes_per_s": 3e12, "fma_flops": 5e13, "sm_count": 8}] * 2}}
exec(sys.argv[2])
json.dump(s, open(sys.argv[1], "w"))
PY
}
check() {
    rm -f "$tmp/updates"
    "$GPUDOCTOR" slurm-check --nvml-lib "$SIM_LIB" --only nvml --node n1 --scontrol "$tmp/scontrol" \
        "$@" >"$tmp/out" 2>"$tmp/err"
    echo $?
}
measured() { python3 -c "import json,sys; print([g['pci_bus_id'] for g in json.load(open(sys.argv[1]))['bench']['gpus']])" "$last"; }
last=$GPUDOCTOR_STATE_DIR/bench-last.json

# ---- off by default: no bench, nothing kept ----
scenario 's["cuda"]["gpus"][1] = dict(s["cuda"]["gpus"][1], corrupt=True)'
rc=$(check)
[ "$rc" = 0 ] || die "default: status $rc: $(cat "$tmp/out" "$tmp/err")"
[ -e "$last" ] && die "default: a bench ran"
grep -q "bench:" "$tmp/out" && die "default: $(cat "$tmp/out")"
echo "ok: off by default"

# ---- a dry run: the bench runs, what it finds is said as what would be done, nothing is kept
# (no result, no state file) and nothing drained ----
cp "$GPUDOCTOR_STATE_DIR/state.json" "$tmp/state-before.json"
rc=$(check --set slurm_bench=quick --dry-run)
[ "$rc" = 2 ] || die "dry run: status $rc: $(cat "$tmp/out" "$tmp/err")"
grep -q "^gpudoctor slurm-check: bench: a quick bench of 2 idle GPUs (a dry run: not kept)$" "$tmp/out" || die "dry run: $(cat "$tmp/out")"
grep -q ": would drain with reason: gpudoctor: " "$tmp/out" || die "dry run: $(cat "$tmp/out")"
[ -e "$last" ] && die "dry run: the result was kept"
cmp -s "$GPUDOCTOR_STATE_DIR/state.json" "$tmp/state-before.json" || die "dry run: the state was written"
[ -s "$tmp/updates" ] && die "dry run: scontrol was asked to change the node: $(cat "$tmp/updates")"
echo "ok: a dry run keeps nothing"

# ---- wrong results on GPU 1: a node fault, drained ----
start=$(date +%s)
rc=$(check --set slurm_bench=quick)
[ "$rc" = 2 ] || die "corrupt: status $rc: $(cat "$tmp/out" "$tmp/err")"
[ $(( $(date +%s) - start )) -le 60 ] || die "corrupt: took $(( $(date +%s) - start )) s"
grep -q "^gpudoctor slurm-check: bench: a quick bench of 2 idle GPUs$" "$tmp/out" || die "corrupt: $(cat "$tmp/out")"
grep -q "State=DRAIN Reason=gpudoctor: " "$tmp/updates" 2>/dev/null || die "corrupt: not drained: $(cat "$tmp/out")"
[ -f "$last" ] || die "corrupt: the result was not kept"
reason=$(sed -n 's/.*Reason=//p' "$tmp/updates" 2>/dev/null)
echo "drained: $reason"
echo "State=IDLE+DRAIN Reason=$reason [root@2026-01-01T00:00:00]" >"$tmp/node"
echo "ok: drained for wrong results"

# ---- the GPU is fine again, but the last result is recent: judged, not measured again ----
scenario ''
cp "$last" "$tmp/kept.json"
rc=$(check --set slurm_bench=quick)
[ "$rc" = 2 ] || die "recent: status $rc: $(cat "$tmp/out")"
grep -q "^gpudoctor slurm-check: bench: the last result, 0 min old$" "$tmp/out" || die "recent: $(cat "$tmp/out")"
cmp -s "$last" "$tmp/kept.json" || die "recent: measured again"
[ -e "$tmp/updates" ] && die "recent: scontrol update $(cat "$tmp/updates")"
echo "ok: a recent result is judged again"

# ---- older than slurm_bench_max_age: measured again, healthy, gpudoctor's drain resumed ----
sleep 2
rc=$(check --set slurm_bench=quick --set slurm_bench_max_age=1)
[ "$rc" = 0 ] || die "old: status $rc: $(cat "$tmp/out" "$tmp/err")"
grep -q "^gpudoctor slurm-check: bench: a quick bench of 2 idle GPUs$" "$tmp/out" || die "old: $(cat "$tmp/out")"
grep -q "State=RESUME" "$tmp/updates" 2>/dev/null || die "old: not resumed: $(cat "$tmp/out")"
cmp -s "$last" "$tmp/kept.json" && die "old: the new result was not kept"
echo "State=IDLE" >"$tmp/node"
echo "ok: an old result is measured again"

# ---- a GPU in use is never loaded; with every GPU in use, no bench ----
sleep 2
scenario 's["gpus"][0]["processes"] = [{"pid": 4242, "used_bytes": 1000000}]'
rc=$(check --set slurm_bench=quick --set slurm_bench_max_age=1)
[ "$rc" = 0 ] || die "one busy: status $rc: $(cat "$tmp/out" "$tmp/err")"
grep -q "^gpudoctor slurm-check: bench: a quick bench of 1 idle GPU (the others are in use)$" "$tmp/out" || die "one busy: $(cat "$tmp/out")"
[ "$(measured)" = "['0000:2a:00.0']" ] || die "one busy: measured $(measured)"
cp "$last" "$tmp/kept.json"
sleep 2
scenario 'for g in s["gpus"]: g["processes"] = [{"pid": 4242, "used_bytes": 1000000}]'
rc=$(check --set slurm_bench=quick --set slurm_bench_max_age=1)
[ "$rc" = 0 ] || die "all busy: status $rc: $(cat "$tmp/out" "$tmp/err")"
grep -q "^gpudoctor slurm-check: bench: not run: no idle GPU to measure (2 in use)$" "$tmp/out" || die "all busy: $(cat "$tmp/out")"
cmp -s "$last" "$tmp/kept.json" || die "all busy: the last result changed"
echo "ok: GPUs in use are not loaded"

# ---- a hang is bounded and a node fault ----
scenario 's["cuda"]["hang"] = ["cuMemHostAlloc"]'
rm -f "$last"
start=$(date +%s)
rc=$(check --set slurm_bench=quick --dry-run)
[ "$rc" = 2 ] || die "hang: status $rc: $(cat "$tmp/out")"
[ $(( $(date +%s) - start )) -le 75 ] || die "hang: took $(( $(date +%s) - start )) s"
grep -q "bench: a quick bench of 2 idle GPUs: timeout" "$tmp/out" || die "hang: $(cat "$tmp/out")"
grep -q "drain with reason: gpudoctor: The CUDA bench hung" "$tmp/out" || die "hang: $(cat "$tmp/out")"
[ -e "$last" ] && die "hang: a result was kept"
echo "ok: a hang drains, within the deadline"

# ---- the state off, and bad values ----
rc=$(check --set slurm_bench=quick --no-state --dry-run)
grep -q "bench: not run: the state is off" "$tmp/out" || die "no state: $(cat "$tmp/out")"
rc=$(check --set slurm_bench=always)
[ "$rc" = 64 ] || die "bad slurm_bench: status $rc"
grep -q "slurm_bench: 'always' is not 'off' or 'quick'" "$tmp/err" || die "bad slurm_bench: $(cat "$tmp/err")"
rc=$(check --set slurm_bench_max_age=soon)
[ "$rc" = 64 ] || die "bad slurm_bench_max_age: status $rc"
echo "ok: state off, bad values"
exit $fail
