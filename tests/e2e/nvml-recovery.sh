#!/usr/bin/env bash
# The GPU's identity (brand, architecture, board part number), its accounting mode and the
# driver's recovery action (NVML_FI_DEV_GET_GPU_RECOVERY_ACTION) through the collector and the
# simulator: each value as the scenario gives it, each status its own; a recovery action that
# changes during the window reaches the samples; and health.recovery-action judging it, every
# action with its severity and its fix, "not checked" where the driver has no such field.
. "$SRC/tests/fixtures/nvml/common.bash"

# Eight GPUs: GPU k's recovery action is the k-th value below; GPU 6 has none (a driver without
# the field), GPU 7's value fails alone (a field_values entry with a status).
actions='["none","gpu_reset","node_reboot","drain_p2p","drain_and_reset","recover_imex_domain",null,"none"]'
s=$(scenario recovery "$(jq -cn --argjson g "$BASE_GPU" --argjson a "$actions" '{
    schema: "gpudoctor.scenario/1",
    gpus: [range(8) as $i | $g + {index: $i,
        uuid: ("GPU-5f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f" + ($i | tostring)),
        pci_bus_id: ("00000000:" + (["18","2A","3A","5D","9A","AB","BA","DB"][$i]) + ":00.0"),
        brand: (if $i == 1 then "tesla" else "nvidia" end),
        architecture: (if $i == 1 then 7 else "hopper" end),
        board_part_number: (if $i == 2 then null else "692-2G520-0200-000" end),
        accounting_mode: ($i == 3)}
        + (if $a[$i] == null then {} else {recovery_action: $a[$i]} end)
        + (if $i == 7 then {field_values: [{id: 230, status: "NO_DATA"}]} else {} end)],
    timeline: [{gpu: 0, field: "recovery_action", from_s: 0.3, value: "gpu_reset"}]}')")
snap "$s"

# identity and accounting: names as NVML's constants spell them; a number (7, Ampere) is named
check '[.gpus[] | [.brand, .architecture]] | unique' '[["nvidia","hopper"],["tesla","ampere"]]'
check '[.gpus[2].board_part_number, .gpus[2].nvml_status.board_part_number]' '[null,"NOT_SUPPORTED"]'
check '.gpus[0].board_part_number' '"692-2G520-0200-000"'
check '[.gpus[] | .accounting_mode]' '[false,false,false,true,false,false,false,false]'
# the recovery action of each GPU, and the statuses of the two without one
check '[.gpus[] | .recovery_action]' \
    '["none","gpu_reset","node_reboot","drain_p2p","drain_and_reset","recover_imex_domain",null,null]'
check '[.gpus[6].nvml_status.recovery_action, .gpus[7].nvml_status.recovery_action]' \
    '["NOT_SUPPORTED","NO_DATA"]'

# a recovery action is read with every sample: GPU 0's changes during the window
snap "$s" --window 800ms
check '[.samples[].gpus[0].recovery_action] | [.[0], .[-1]]' '["none","gpu_reset"]'

# the rule: one finding a GPU that needs something, with its severity; the others say nothing,
# and the GPUs without the field are "not checked"
GPUDOCTOR_NVML_LIB=$SIM_LIB NVML_SIM_SCENARIO=$s GPUDOCTOR_CONFIG=/dev/null \
    "$GPUDOCTOR" check --only nvml --window 0 --json >"$OUT" 2>"$TMP/err" || true
check '[.findings[] | select(.id == "health.recovery-action") | [.subject.gpu_index, .severity]]' \
    '[[1,"critical"],[2,"critical"],[4,"critical"],[5,"critical"],[3,"warning"]]'
check '[.findings[] | select(.id == "health.recovery-action" and .subject.gpu_index == 1) | .fix[]]' \
    '["# drain GPU 1 (no new jobs), let or make its jobs end, then:","sudo nvidia-smi -r -i 1",
      "# refused with '"'In use by another client'"'? stop what keeps it open (nvidia-persistenced, DCGM: nv-hostengine, dcgm-exporter), reset, then start them again",
      "# a reset that fails or does not clear it: reboot the node"]'
check '[.findings[] | select(.id == "health.recovery-action" and .subject.gpu_index == 2) | .title]' \
    '["GPU 2 needs the node rebooted: its driver asks for it"]'
check '[.findings[] | select(.id == "health.recovery-action" and .subject.gpu_index == 4) | .evidence[0]]' \
    '["NVML'"'"'s recovery action for the GPU (NVML_FI_DEV_GET_GPU_RECOVERY_ACTION): drain_and_reset"]'
check '[.not_checked[] | select(.rule == "health.recovery-action") | [.gpu_index, .reason]]' \
    '[[6,"recovery_action NOT_SUPPORTED"],[7,"recovery_action NO_DATA"]]'
finish
