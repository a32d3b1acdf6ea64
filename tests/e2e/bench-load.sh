#!/usr/bin/env bash
# gpudoctor bench's sustained load on every GPU at once, with NVML read by the parent while it
# runs: the CUDA simulator paces the load to the wall clock (cuda.real_time), the NVML
# simulator's timeline changes clocks, temperature, power and clock event reasons meanwhile.
# Asserts the readings stored per GPU, and the findings they give: throttle-under-load naming
# the reason, behind-under-load for a GPU that falls behind only when all run, and the note when
# NVML cannot be read.
# ctest: timeout 300
set -u
CUDA_SIM=$BUILD/sim-cuda/libcuda.so.1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export NVML_SIM_QUIET=1
fail=0
die() { echo "FAIL: $*"; fail=1; }

# three GPUs of a model data/gpu-specs.tsv does not list (judged against each other only),
# 1 TFLOPS each so a 2 s load is about a thousand launches; $1 = python changing s
scenario() {
    python3 - "$tmp/s.json" "$1" <<'PY'
import json, sys
gpu = lambda i, bus: {"index": i, "name": "NVIDIA A10", "pci_bus_id": bus,
    "pci_device_id": "0x223610de", "pci_subsystem_id": "0x148210de",
    "mem_total_bytes": 24146608128, "mem_used_bytes": 0, "pcie_gen": 4, "pcie_width": 16,
    "clock_sm_mhz": 1695, "clock_mem_mhz": 6251, "temp_c": 50, "power_mw": 140000,
    "clocks_event_reasons": "0x0000000000000000"}
s = {"schema": "gpudoctor.scenario/1", "system": {"driver_version": "580.65.06"},
     "gpus": [gpu(0, "00000000:18:00.0"), gpu(1, "00000000:2a:00.0"), gpu(2, "00000000:3a:00.0")],
     "timeline": [],
     "cuda": {"real_time": True,
              "gpus": [{"mem_bandwidth_bytes_per_s": 6e11, "fma_flops": 1e12, "sm_count": 8}] * 3}}
exec(sys.argv[2])
json.dump(s, open(sys.argv[1], "w"))
PY
}
bench() {
    NVML_SIM_SCENARIO=$tmp/s.json NVML_SIM_EPOCH=$(date +%s.%N) GPUDOCTOR_CUDA_LIB=$CUDA_SIM \
        "$GPUDOCTOR" bench --nvml-lib "$SIM_LIB" --duration 2 --json "$@" >"$tmp/out.json" 2>"$tmp/err"
    echo $?
}
q() { python3 -c "import json,sys; d=json.load(open('$tmp/out.json')); g=d['bench']['gpus']; print($1)"; }

# ---- GPU 1 heats up and slows down while loaded: thermal reasons, SM clock falling, power
# rising, temperature rising to 90; GPUs 0 and 2 steady ----
scenario '
s["timeline"] = [
    {"gpu": 1, "field": "clocks_event_reasons", "value": "0x0000000000000060"},
    {"gpu": 1, "field": "clock_sm_mhz", "rate_per_s": -10, "min": 1100},
    {"gpu": 1, "field": "temp_c", "rate_per_s": 5, "max": 90},
    {"gpu": 1, "field": "power_mw", "rate_per_s": 1000, "max": 200000}]'
rc=$(bench)
[ "$rc" = 1 ] || die "thermal: status $rc: $(cat "$tmp/err")"
# the load lasted its duration in wall time: it ran on all three at once, not one after the other
# (one after the other, three 2 s loads would take 6 s)
[ "$(q "2 <= d['bench']['load_elapsed_s'] < 5")" = True ] ||
    die "thermal: the loads did not run at once: $(q "d['bench']['load_elapsed_s']") s"
for i in 0 2; do
    [ "$(q "g[$i]['load_samples'] >= 3")" = True ] || die "GPU $i: readings $(q "g[$i]['load_samples']")"
    [ "$(q "(g[$i]['load_clock_sm_min_mhz'], g[$i]['load_clock_sm_max_mhz'], g[$i]['load_clock_mem_min_mhz'], g[$i]['load_clock_mem_max_mhz'])")" = "(1695, 1695, 6251, 6251)" ] ||
        die "GPU $i: clocks $(q "g[$i]")"
    [ "$(q "(g[$i]['load_temp_max_c'], g[$i]['load_power_max_mw'], g[$i]['load_power_mean_mw'], g[$i]['load_clocks_event_reasons'])")" = "(50, 140000, 140000, '0x0000000000000000')" ] ||
        die "GPU $i: temperature, power, reasons $(q "g[$i]")"
done
[ "$(q "g[1]['load_clocks_event_reasons']")" = 0x0000000000000060 ] || die "GPU 1: reasons $(q "g[1]['load_clocks_event_reasons']")"
# readings 150 ms apart on a clock falling 10 MHz/s (its floor a minute away, so a slow start
# of the load on a busy machine still sees it fall): the range is seen, within the timeline's
[ "$(q "1100 <= g[1]['load_clock_sm_min_mhz'] < g[1]['load_clock_sm_max_mhz'] < 1695")" = True ] ||
    die "GPU 1: SM clock range $(q "(g[1]['load_clock_sm_min_mhz'], g[1]['load_clock_sm_max_mhz'])")"
[ "$(q "50 < g[1]['load_temp_max_c'] <= 90")" = True ] || die "GPU 1: temperature $(q "g[1]['load_temp_max_c']")"
[ "$(q "140000 < g[1]['load_power_mean_mw'] < g[1]['load_power_max_mw'] <= 200000")" = True ] ||
    die "GPU 1: power $(q "(g[1]['load_power_mean_mw'], g[1]['load_power_max_mw'])")"
[ "$(q "[(f['id'], f['gpu']) for f in d['findings']]")" = "[('bench.throttle-under-load', 1)]" ] ||
    die "thermal: findings $(q "d['findings']")"
[ "$(q "d['findings'][0]['title']")" = "GPU 1 throttled under load: software thermal slowdown, hardware thermal slowdown" ] ||
    die "thermal: title $(q "d['findings'][0]['title']")"
q "d['findings'][0]['evidence']" | grep -q "NVML readings): SM clock" || die "thermal: evidence $(q "d['findings'][0]['evidence']")"
[ "$(q "d['bench']['load_note']")" = None ] || die "thermal: note $(q "d['bench']['load_note']")"
# the text output shows the readings and the fix that follows the reason
NVML_SIM_SCENARIO=$tmp/s.json NVML_SIM_EPOCH=$(date +%s.%N) GPUDOCTOR_CUDA_LIB=$CUDA_SIM \
    "$GPUDOCTOR" bench --nvml-lib "$SIM_LIB" --duration 1 >"$tmp/out.txt" 2>&1
grep -q "under load .*reasons: sw_thermal hw_thermal" "$tmp/out.txt" || die "text: $(cat "$tmp/out.txt")"
grep -q "fix: nvidia-smi -i 1 -q -d TEMPERATURE" "$tmp/out.txt" || die "text: no thermal fix"
echo "ok: thermal throttling under load"

# ---- the power cap alone, at full rate, is how a loaded GPU runs: no finding ----
scenario 's["timeline"] = [{"gpu": 0, "field": "clocks_event_reasons", "value": "0x0000000000000004"}]'
rc=$(bench)
[ "$rc" = 0 ] || die "power cap: status $rc: $(q "d['findings']")"
[ "$(q "g[0]['load_clocks_event_reasons']")" = 0x0000000000000004 ] || die "power cap: reasons"
echo "ok: power cap alone"

# ---- GPU 2 keeps up alone (its FMA burst) and runs at half speed once the load is on (after
# 12 ms of simulated work, the burst being 11 ms): behind its siblings, not slowing within the
# load ----
scenario 's["cuda"]["gpus"][2] = dict(s["cuda"]["gpus"][2], throttle_after_s=0.012, throttle_share=0.5)'
rc=$(bench)
[ "$rc" = 1 ] || die "behind: status $rc: $(cat "$tmp/err")"
[ "$(q "[(f['id'], f['gpu']) for f in d['findings']]")" = "[('bench.behind-under-load', 2)]" ] ||
    die "behind: findings $(q "d['findings']")"
[ "$(q "round(g[2]['sustained_flops'] / g[0]['sustained_flops'], 1)")" = 0.5 ] || die "behind: rates $(q "[x['sustained_flops'] for x in g]")"
[ "$(q "d['findings'][0]['title']")" = "GPU 2 fell behind its siblings under load: 50 % of GPU 0" ] ||
    die "behind: title $(q "d['findings'][0]['title']")"
q "d['findings'][0]['evidence']" | grep -q "alone it kept up: 1.0 TFLOPS against 1.0 TFLOPS" || die "behind: evidence $(q "d['findings'][0]['evidence']")"
echo "ok: behind its siblings under load"

# ---- NVML lists no GPU: the load runs, the note says NVML was not read ----
scenario 's["errors"] = {"nvmlDeviceGetCount": "UNKNOWN"}'
rc=$(bench)
[ "$(q "len(g)")" = 3 ] || die "no NVML: GPUs $(q "len(g)")"
[ "$(q "all('load_samples' not in x or x['load_samples'] is None for x in g)")" = True ] || die "no NVML: readings $(q "g[0]")"
q "d['bench']['load_note']" | grep -q "NVML was not sampled during the load" || die "no NVML: note $(q "d['bench']['load_note']")"
echo "ok: no NVML during the load"

exit $fail
