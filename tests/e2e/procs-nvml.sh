#!/usr/bin/env bash
# The join of NVML's process lists with /proc, end to end: the NVML collector talks to the
# simulator (a scenario listing the fixture's pids), the processes collector scans the host
# fixture tree, and the snapshot says which process uses which GPU, how much memory and SM.
set -euo pipefail
command -v jq >/dev/null || { echo "jq not installed"; exit 77; }
if [ -z "${SIM_LIB:-}" ] || [ ! -e "$SIM_LIB" ]; then
    echo "the NVML simulator is not built"
    exit 77
fi
F=$SRC/tests/fixtures/procs
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0

# 4 GPUs; NVML's index and the device minor differ for the last two (NVML orders by PCI bus).
jq -n '
  def gpu(i; minor; bus; procs): {index: i, name: "NVIDIA H100 80GB HBM3",
    uuid: "GPU-00000000-0000-0000-0000-00000000000\(i)", pci_bus_id: bus,
    minor_number: minor, mem_total_bytes: 85520809984, processes: procs};
  def p(pid; gib; type; sm): {pid: pid, used_bytes: (gib * 1073741824), type: type}
    + (if sm == null then {} else {sm_util_pct: sm, mem_util_pct: 1, enc_util_pct: 0,
       dec_util_pct: 0} end);
  {schema: "gpudoctor.scenario/1",
   system: {driver_version: "550.54.15", nvml_version: "12.550.54.15", cuda_driver_version: 12040},
   gpus: [
     gpu(0; 0; "00000000:18:00.0"; [p(2100; 20; "compute"; 87), p(1500; 0; "graphics"; null),
                                     p(9999; 1; "compute"; null)]),
     gpu(1; 1; "00000000:2A:00.0"; [p(2100; 18; "compute"; null), p(2700; 10; "compute"; null)]),
     gpu(2; 3; "00000000:3A:00.0"; [p(2600; 4; "compute"; null)]),
     gpu(3; 2; "00000000:5D:00.0"; [p(3100; 20; "compute"; 95)])]}' >"$tmp/scenario.json"

out=$(NVML_SIM_QUIET=1 GPUDOCTOR_NVML_LIB=$SIM_LIB NVML_SIM_SCENARIO=$tmp/scenario.json \
    "$GPUDOCTOR" snapshot --only nvml,processes --root "$F/host")

expect() { # FILTER WANTED
    local got
    got=$(jq -c "$1" <<<"$out")
    if [ "$got" != "$2" ]; then
        echo "FAIL: $1"
        echo "   got:    $got"
        echo "   wanted: $2"
        fails=$((fails + 1))
    fi
}
rec() { echo ".processes.processes[] | select(.pid == $1)"; }
gpus='[.gpus[] | [.gpu_index, .minor, .holds_device, .nvml_listed, .nvml_type_mask, .used_bytes]]'

expect '.collectors.nvml.state' '"ok"'
expect "$(rec 2100) | $gpus" '[[0,0,true,true,1,21474836480],[1,1,true,true,1,19327352832]]'
expect "$(rec 2100) | [.gpus[].sm_util_pct]" '[87,null]'
expect "$(rec 1500) | $gpus" '[[0,0,true,true,2,0]]'
# the zombie is in the table because NVML lists it; its worker holds the device
expect "$(rec 2700) | [.state, .children, $gpus]" '["Z",[2701],[[1,1,false,true,1,10737418240]]]'
expect "$(rec 2701) | $gpus" '[[1,1,true,false,0,null]]'
# minor 3 is NVML's GPU 2, minor 2 its GPU 3
expect "$(rec 2600) | $gpus" '[[2,3,true,true,1,4294967296]]'
expect "$(rec 3100) | [.container_runtime, .ns_pid, $gpus, .gpus[0].sm_util_pct]" \
    '["docker",42,[[3,2,true,true,1,21474836480]],95]'
expect "$(rec 3200) | $gpus" '[[3,2,true,false,0,null]]'
# a pid NVML lists that /proc does not show: a record with what NVML knows, and a note
expect "$(rec 9999) | [.state, .comm, $gpus]" '[null,null,[[0,0,false,true,1,1073741824]]]'
expect '[.collectors.processes.notes[] | select(startswith("NVML lists 1 process that /proc does not show (pid 9999)"))] | length' '1'

[ "$fails" -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "all NVML join checks passed"
