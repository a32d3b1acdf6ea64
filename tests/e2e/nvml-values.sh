#!/usr/bin/env bash
# Every field gpudoctor reads from NVML, exactly: a scenario GPU written in the snapshot's own
# format must come back unchanged; a GPU without values says NOT_SUPPORTED for each field.
. "$SRC/tests/fixtures/nvml/common.bash"

snap "$FIX/full.json"

check '.collectors.nvml.state' '"ok"'
check '.collectors.nvml.detail' 'null'
check '.collectors.nvml.notes' '[]'
check '.nvml.attempted' 'true'
check '.nvml.library' "$(jq -cn --arg p "$(realpath "$SIM_LIB")" '$p')"
check '.nvml.load_error' '0'
check '.nvml.init_rc' '0'
check '.nvml.init_error' 'null'
check '.nvml.driver_version' '"550.54.15"'
check '.nvml.driver_version_rc' '0'
check '.nvml.nvml_version' '"12.550.54.15"'
check '.nvml.cuda_driver_version' '12040'
check '.nvml.device_count' '3'
check '.nvml.device_count_rc' '0'
check '.nvml.hung_call' 'null'
check '.nvml.process_stride' '24'
check '.nvml.elapsed_us > 0' 'true'
check '.gpus | length' '3'

# GPU 0: every field, the processes (merged compute + graphics) and their utilisation.
want=$(jq -cS '.gpus[0]' "$FIX/full.json")
got=$(jq -cS '.gpus[0]' "$OUT")
if [ "$got" != "$want" ]; then
    echo "FAIL: GPU 0 differs from the scenario"
    diff <(jq -S '.gpus[0]' "$FIX/full.json") <(jq -S '.gpus[0]' "$OUT") || true
    failures=$((failures + 1))
fi
# a few by name too, so a failure reads clearly
check '.gpus[0].mem_used_bytes' '42949672960'
check '.gpus[0].pcie_tx_bytes_per_s' '1048576000'
check '.gpus[0].clocks_event_reasons' '"0x0000000000000004"'
check '[.gpus[0].processes[] | [.pid, .used_bytes, .type, .sm_util_pct]]' \
    '[[4121,40802189312,["compute"],95],[4188,2147483648,["compute","graphics"],3]]'

# GPU 1: only its identity; every other field null with NOT_SUPPORTED, and nothing else. No
# "processes" key means no processes (the snapshot's convention), so the utilisation samples are
# NOT_FOUND, as NVML says when there is none.
check '[.gpus[1].name, .gpus[1].uuid, .gpus[1].pci_bus_id, .gpus[1].pci_device_id]' \
    '["NVIDIA H100 80GB HBM3","GPU-00000000-1111-2222-3333-444444444444","00000000:2A:00.0","0x233010de"]'
identity='["name","uuid","pci_bus_id","pci_device_id","pci_subsystem_id","processes"]'
all_fields=$(jq -c '[.gpus[0] | keys[] | select(. != "index" and . != "nvml_status")]' "$OUT")
check ".gpus[1].nvml_status" "$(jq -cn --argjson all "$all_fields" --argjson id "$identity" \
    '[($all - $id)[] | {(.): "NOT_SUPPORTED"}] | add | .process_utilization = "NOT_FOUND"')"
check '.gpus[1].temp_c' 'null'
check '.gpus[1].processes' '[]'

# GPU 2: MIG enabled, instances counted through nvmlDeviceGetMigDeviceHandleByIndex.
check '[.gpus[2].mig_mode, .gpus[2].mig_mode_pending, .gpus[2].mig_devices]' '[true,true,3]'

# The first sample holds the dynamic fields of every GPU.
check '.samples | length' '1'
check '.samples[0].gpus | length' '3'
check '.samples[0].gpus[0].temp_c' '64'
check '.samples[0].gpus[0].name' 'null'

finish
