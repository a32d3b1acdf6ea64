#!/usr/bin/env bash
# NVLink links and GPU fabric through the collector and the simulator: which links exist, each
# value's own status (a field value that fails, a call a driver lacks), counters and states that
# change during the window (errors, and the data sent and received), the fabric info's fallback
# to the unversioned call, a GPU without NVLink; the exporter's NVLink families; and the rules
# judging it (nvlink.errors, nvlink.down, fabric.gpu-not-ready).
. "$SRC/tests/fixtures/nvml/common.bash"

links='[range(4) as $l | {link: $l, active: true, version: 6,
          remote_pci_bus_id: "00000000:C\($l + 5):00.0", remote_type: "switch",
          crc_errors: 10, replay_errors: 0, recovery_errors: 0,
          tx_kib: (1000000 * $l), rx_kib: 7}]'
fabric='{state: "completed", status: 0, clique_id: 3,
         cluster_uuid: "7F3C2A10-5B4E-4D21-9A8C-0E6B1F2D3C4E", health_mask: "0x00000004"}'
s=$(scenario links "$(jq -cn --argjson g "$BASE_GPU" --argjson sys "$SYSTEM" "{
    schema: \"gpudoctor.scenario/1\", system: \$sys,
    gpus: [\$g + {nvlink: $links, fabric: $fabric,
                 field_values: [{id: 161, scope: 1, status: \"NO_DATA\"},
                                {id: 139, scope: 3, status: \"NOT_SUPPORTED\"}]},
           \$g + {index: 1, pci_bus_id: \"00000000:2A:00.0\",
                 uuid: \"GPU-5f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f1\"}],
    timeline: [{gpu: 0, link: 2, field: \"replay_errors\", rate_per_s: 20},
               {gpu: 0, link: 1, field: \"tx_kib\", rate_per_s: 1048576},
               {gpu: 0, link: 3, field: \"active\", from_s: 0.3, value: false}]}")")
snap "$s" --window 800ms

# the links, as the scenario lists them; the cluster UUID comes back in lower case
check '[.gpus[0].nvlink[] | [.link, .version, .remote_pci_bus_id, .remote_type]]' \
    '[[0,6,"00000000:C5:00.0","switch"],[1,6,"00000000:C6:00.0","switch"],
      [2,6,"00000000:C7:00.0","switch"],[3,6,"00000000:C8:00.0","switch"]]'
check '.gpus[0].fabric' '{"state":"completed","status":0,"clique_id":3,
    "cluster_uuid":"7f3c2a10-5b4e-4d21-9a8c-0e6b1f2d3c4e","health_mask":"0x00000004"}'
# a field value that fails is that counter's status only
check '.gpus[0].nvlink[1] | [.replay_errors, .nvml_status.replay_errors, .crc_errors]' \
    '[null,"NO_DATA",10]'
check '.gpus[0].nvlink[0].nvml_status' '{}'
# the data counters (NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX/RX, scopeId = link), each with its own
# status: link 3's received data failed alone
check '[.gpus[0].nvlink[] | [.tx_kib, .rx_kib]] | [.[0], .[2], .[3]]' '[[0,7],[2000000,7],[3000000,null]]'
check '.gpus[0].nvlink[3].nvml_status' '{"rx_kib":"NOT_SUPPORTED"}'
# GPU 1 has neither
check '.gpus[1] | [.nvlink, .fabric, .nvml_status.nvlink, .nvml_status.fabric]' \
    '[null,null,"NOT_SUPPORTED","NOT_SUPPORTED"]'
# during the window: link 2's replays grow, link 3 goes down; GPU 1 is not asked again
check '[.samples[].gpus[0].nvlink[2].replay_errors] | (. == sort and .[-1] >= .[0] + 8)' 'true'
check '[.samples[].gpus[0].nvlink[3].active] | [.[0], .[-1]]' '[true,false]'
check '[.samples[].gpus[1] | has("nvlink")] | unique' '[false]'
# link 1 sends 1 GiB/s during the window: its counter grows by about 1 GiB over 0.8 s
check '[.samples[].gpus[0].nvlink[1].tx_kib] | (. == sort and .[-1] - .[0] >= 500000)' 'true'

# a driver without the remote type, and one whose versioned fabric call refuses the struct:
# the link's remote_type is FUNCTION_NOT_FOUND, the fabric comes from the unversioned call
# (without a health mask)
s2=$(scenario old-driver "$(jq -c '.errors = {"nvmlDeviceGetNvLinkRemoteDeviceType": "FUNCTION_NOT_FOUND",
                                             "nvmlDeviceGetGpuFabricInfoV": "ARGUMENT_VERSION_MISMATCH"}
                                   | del(.timeline)' "$s")")
snap "$s2"
check '[.gpus[0].nvlink[] | .nvml_status.remote_type] | unique' '["FUNCTION_NOT_FOUND"]'
check '.gpus[0].fabric | [.state, .clique_id, .health_mask]' '["completed",3,null]'

# the exporter: per link active and its counters (a counter NVML refused has no series), per GPU
# the active links (0 for GPU 1, which has no NVLink)
GPUDOCTOR_NVML_LIB=$SIM_LIB NVML_SIM_SCENARIO=$s2 GPUDOCTOR_STATE_DIR=off \
    "$GPUDOCTOR" serve --once --only nvml --window 0 >"$TMP/nvlink.prom" 2>"$TMP/err" ||
    { echo "FAIL: serve --once: $(cat "$TMP/err")"; failures=$((failures + 1)); }
series() { sed 's/,uuid="[^"]*",name="[^"]*"//' "$TMP/nvlink.prom" | grep -E "^$1" | tr '\n' ';'; }
check_text() {
    [ "$2" = "$3" ] || { echo "FAIL: $1"; echo "   got:  $2"; echo "   want: $3"; failures=$((failures + 1)); }
}
check_text "links active" "$(series gpudoctor_gpu_nvlink_links_active)" \
    'gpudoctor_gpu_nvlink_links_active{gpu="0"} 4;gpudoctor_gpu_nvlink_links_active{gpu="1"} 0;'
check_text "link 3 active" "$(series 'gpudoctor_gpu_nvlink_active\{gpu="0",link="3"')" \
    'gpudoctor_gpu_nvlink_active{gpu="0",link="3"} 1;'
check_text "link 1 counters" "$(series 'gpudoctor_gpu_nvlink_errors_total\{gpu="0",link="1"')" \
    'gpudoctor_gpu_nvlink_errors_total{gpu="0",link="1",counter="crc"} 10;gpudoctor_gpu_nvlink_errors_total{gpu="0",link="1",counter="recovery"} 0;'
check_text "link 3 data" "$(series 'gpudoctor_gpu_nvlink_data_bytes_total\{gpu="0",link="3"')" \
    'gpudoctor_gpu_nvlink_data_bytes_total{gpu="0",link="3",direction="tx"} 3072000000;'
check_text "link 0 data" "$(series 'gpudoctor_gpu_nvlink_data_bytes_total\{gpu="0",link="0"')" \
    'gpudoctor_gpu_nvlink_data_bytes_total{gpu="0",link="0",direction="tx"} 0;gpudoctor_gpu_nvlink_data_bytes_total{gpu="0",link="0",direction="rx"} 7168;'
check_text "GPU 1 has no per-link series" "$(series 'gpudoctor_gpu_nvlink_(active|errors_total|data_bytes_total)\{gpu="1"')" ''
if command -v promtool >/dev/null; then
    promtool check metrics <"$TMP/nvlink.prom" >"$TMP/promtool.out" 2>&1 ||
        { echo "FAIL: promtool: $(head -5 "$TMP/promtool.out")"; failures=$((failures + 1)); }
fi

# the rules, over a window: link 2's replays and link 3 going down; GPU 0's fabric is fine
run_check() {
    GPUDOCTOR_NVML_LIB=$SIM_LIB NVML_SIM_SCENARIO=$1 \
        "$GPUDOCTOR" check --only nvml --window 800ms --json >"$OUT" 2>"$TMP/err" || true
}
run_check "$s"
check '[.findings[] | select(.id | test("^(nvlink|fabric)")) | [.id, .subject.gpu_index]] | sort' \
    '[["nvlink.down",0],["nvlink.errors",0]]'
# a GPU still registering with the fabric
s3=$(scenario registering "$(jq -c '.gpus[0].fabric.state = "in_progress" | del(.timeline)' "$s")")
run_check "$s3"
check '[.findings[] | select(.id == "fabric.gpu-not-ready") | [.severity, .subject.gpu_index]]' \
    '[["warning",0]]'
finish
