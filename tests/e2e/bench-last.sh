#!/usr/bin/env bash
# The node's last bench result: every bench that ran is kept as bench-last.json in the state
# directory (mode 0600; a hang, or the state off, keeps nothing), and `serve` (--once, --textfile)
# exports it as gpudoctor_bench_* series with HELP and TYPE that promtool accepts; a corrupt file
# gives gpudoctor_bench_last_read 0, no figures, and a note naming the file.
set -u
CUDA_SIM=$BUILD/sim-cuda/libcuda.so.1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export GPUDOCTOR_STATE_DIR=$tmp/state NVML_SIM_QUIET=1 NVML_SIM_SCENARIO=$tmp/s.json
fail=0
die() { echo "FAIL: $*"; fail=1; }

# two H100s on Gen5 x16; GPU 1 gives wrong results; $1 = extra python
scenario() {
    python3 - "$tmp/s.json" "$1" <<'PY'
import json, sys
gpu = lambda i, bus: {"index": i, "name": "NVIDIA H100 80GB HBM3", "pci_bus_id": bus,
    "pci_device_id": "0x233010de", "pci_subsystem_id": "0x16c110de",
    "mem_total_bytes": 85520809984, "mem_used_bytes": 0, "pcie_gen": 5, "pcie_width": 16}
s = {"schema": "gpudoctor.scenario/1", "system": {"driver_version": "580.65.06"},
     "gpus": [gpu(0, "00000000:18:00.0"), gpu(1, "00000000:2a:00.0")],
     "cuda": {"gpus": [{"mem_bandwidth_bytes_per_s": 3e12, "fma_flops": 5e13, "sm_count": 8},
                       {"mem_bandwidth_bytes_per_s": 3e12, "fma_flops": 5e13, "sm_count": 8,
                        "corrupt": True}]}}
exec(sys.argv[2])
json.dump(s, open(sys.argv[1], "w"))
PY
}
bench() {
    GPUDOCTOR_CUDA_LIB=$CUDA_SIM "$GPUDOCTOR" bench --nvml-lib "$SIM_LIB" --duration 0.1 "$@" \
        >"$tmp/out" 2>"$tmp/err"
    echo $?
}
serve_once() {
    "$GPUDOCTOR" serve --once --window 0 --nvml-lib "$SIM_LIB" --only nvml "$@" 2>"$tmp/serve.err"
}
# value of the series whose line starts with $2 (name and labels) in text $1
val() { grep -v '^#' <<<"$1" | grep -F "$2" | head -1 | awk '{print $NF}'; }
# the same in units of $3, one decimal
valu() { val "$1" "$2" | awk -v u="$3" '{printf "%.1f", $1 / u}'; }

last=$GPUDOCTOR_STATE_DIR/bench-last.json

# ---- no bench yet: no bench series at all ----
scenario ''
M=$(serve_once)
grep -q '^gpudoctor_bench_' <<<"$M" && die "no bench yet: bench series: $(grep '^gpudoctor_bench_' <<<"$M")"

# ---- a bench that ran (and found wrong results) is the last one ----
before=$(date +%s)
rc=$(bench)
[ "$rc" = 2 ] || die "bench: status $rc: $(cat "$tmp/err")"
[ -f "$last" ] || die "bench-last.json not written"
[ "$(stat -c %a "$last" 2>/dev/null)" = 600 ] || die "bench-last.json mode $(stat -c %a "$last" 2>/dev/null), not 600"
[ -e "$GPUDOCTOR_STATE_DIR/bench-baseline.json" ] && die "a bench without --save wrote the baseline"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['bench']['state'] == 'ok'" "$last" ||
    die "bench-last.json is not the bench's snapshot"
echo "ok: kept, mode 600"

M=$(serve_once)
[ "$(val "$M" 'gpudoctor_bench_last_read ')" = 1 ] || die "last_read: $(val "$M" 'gpudoctor_bench_last_read ')"
ts=$(val "$M" 'gpudoctor_bench_last_timestamp_seconds ')
python3 -c "import sys; t=float(sys.argv[1]); sys.exit(0 if $before - 5 <= t <= $(date +%s) + 5 else 1)" "${ts:-0}" ||
    die "timestamp $ts not the bench's time (~$before)"
L1='gpu="1",name="NVIDIA H100 80GB HBM3",pci_bus_id="0000:2a:00.0"'
[ "$(val "$M" "gpudoctor_bench_checksum_ok{gpu=\"0\"")" = 1 ] || die "checksum GPU 0: $(grep checksum_ok <<<"$M")"
[ "$(val "$M" "gpudoctor_bench_checksum_ok{$L1")" = 0 ] || die "checksum GPU 1: $(grep checksum_ok <<<"$M")"
L0='gpu="0",name="NVIDIA H100 80GB HBM3",pci_bus_id="0000:18:00.0"'
[ "$(valu "$M" "gpudoctor_bench_memory_bytes_per_second{$L0,method=\"triad\"}" 1e12)" = 3.0 ] ||
    die "triad: $(grep memory_bytes <<<"$M")"
[ "$(valu "$M" "gpudoctor_bench_host_copy_bytes_per_second{$L1,direction=\"h2d\",memory=\"pinned\"}" 1e9)" = 50.4 ] ||
    die "host copy: $(grep host_copy <<<"$M")"
[ "$(valu "$M" "gpudoctor_bench_host_copy_bytes_per_second{$L1,direction=\"both\",memory=\"pinned\"}" 1e9)" = 100.8 ] ||
    die "host copy both: $(grep host_copy <<<"$M")"
[ "$(valu "$M" "gpudoctor_bench_compute_flops{$L0}" 1e12)" = 50.0 ] || die "fma: $(grep compute_flops <<<"$M")"
grep -q '^gpudoctor_bench_p2p_bytes_per_second{src_gpu="0",src_pci_bus_id="0000:18:00.0",dst_gpu="1",dst_pci_bus_id="0000:2a:00.0"} ' <<<"$M" ||
    die "p2p: $(grep p2p_bytes <<<"$M")"
grep -q '^# HELP gpudoctor_bench_checksum_ok ' <<<"$M" && grep -q '^# TYPE gpudoctor_bench_checksum_ok gauge$' <<<"$M" ||
    die "HELP/TYPE"
if command -v promtool >/dev/null; then
    promtool check metrics <<<"$M" >"$tmp/promtool.out" 2>&1 || die "promtool check metrics: $(cat "$tmp/promtool.out")"
else
    echo "note: promtool not installed, exposition not linted"
fi
mkdir "$tmp/tf"
serve_once --textfile "$tmp/tf" >/dev/null
[ "$(val "$(cat "$tmp/tf/gpudoctor.prom")" "gpudoctor_bench_checksum_ok{$L1")" = 0 ] || die "--textfile: no bench rows"
echo "ok: serve and --textfile export it"

# ---- a bench that hangs is no result: the last one stays ----
cp "$last" "$tmp/kept.json"
scenario 's["cuda"]["hang"] = ["cuMemHostAlloc"]'
rc=$(bench --deadline 2)
[ "$rc" = 2 ] || die "hang: status $rc"
cmp -s "$last" "$tmp/kept.json" || die "a hung bench replaced the last result"
# ---- the state off: nothing kept ----
scenario 's["cuda"]["gpus"][1]["corrupt"] = False'
rc=$(bench --no-state)
[ "$rc" = 0 ] || die "--no-state: status $rc"
cmp -s "$last" "$tmp/kept.json" || die "--no-state replaced the last result"
# a healthy bench replaces it
rc=$(bench)
[ "$rc" = 0 ] || die "healthy: status $rc"
M=$(serve_once)
[ "$(val "$M" "gpudoctor_bench_checksum_ok{$L1")" = 1 ] || die "healthy bench not exported"
echo "ok: only benches that ran are kept"

# ---- a corrupt file: the gauge and a note say so, no figures ----
echo '{"schema": "gpudoctor.snapshot/1", "bench": ' >"$last"
M=$(serve_once)
[ "$(val "$M" 'gpudoctor_bench_last_read ')" = 0 ] || die "corrupt: last_read $(val "$M" 'gpudoctor_bench_last_read ')"
grep -q '^gpudoctor_bench_\(checksum\|host\|memory\|compute\|p2p\|last_timestamp\)' <<<"$M" && die "corrupt: figures shown"
grep -q "no bench figures exported: .*bench-last.json" "$tmp/serve.err" || die "corrupt: no note: $(cat "$tmp/serve.err")"
# a snapshot without a bench that ran is no result either
"$GPUDOCTOR" snapshot --nvml-lib "$SIM_LIB" --only nvml --window 0 -o "$last" 2>/dev/null ||
    "$GPUDOCTOR" snapshot --nvml-lib "$SIM_LIB" --only nvml --window 0 >"$last" 2>/dev/null
M=$(serve_once)
[ "$(val "$M" 'gpudoctor_bench_last_read ')" = 0 ] || die "no bench section: last_read $(val "$M" 'gpudoctor_bench_last_read ')"
grep -q "not a bench result that ran" "$tmp/serve.err" || die "no bench section: $(cat "$tmp/serve.err")"
# the state off: no bench series
M=$(serve_once --no-state)
grep -q '^gpudoctor_bench_' <<<"$M" && die "--no-state: bench series"
echo "ok: corrupt and foreign files"
exit $fail
