#!/usr/bin/env bash
# Writes the power supply cases (power-brake-psu-fault, psu-fault-no-brake): snapshots with the
# BMC's event log imported into them (host.sel_*), as `check --from snapshot.json --from sel.txt`
# would merge it: one supply's AC lost two hours before the snapshot, not cleared. Needs jq;
# rerun after editing, then commit what it writes.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

# sel BASE CASE: BASE's snapshot with the event log's PSU fault.
sel() {
    mkdir -p "$here/$2"
    jq '.host += {sel_entries: 3, sel_mem_ue: 0, sel_mem_ce: 0, sel_mem_ue_last_ms: null,
                  sel_mem_ue_dimms: null, sel_psu_faults: 1, sel_psu_losses: 1,
                  sel_psu_stale: 0, sel_psu_untracked: 0, sel_full: false,
                  sel_psu_last_ms: (.time_ms - 7200000),
                  sel_psu_what: "Power Supply PS2 Status: Power Supply AC lost"}' \
        "$here/$1/snapshot.json" >"$here/$2/snapshot.json"
}

# GPU 4 braked (power-brake) while the BMC says PS2 lost its AC: the supply is the cause.
sel power-brake power-brake-psu-fault
# The same fault on a server whose GPUs run at full clocks: no redundancy left, a warning.
sel healthy-8gpu-busy psu-fault-no-brake
