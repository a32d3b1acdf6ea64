#!/usr/bin/env bash
# Samples over a window hold the dynamic fields only (gpu_table rows flagged JF_DYNAMIC, and each
# process's memory and utilisation), read again at every sample: values that change over time in
# the scenario change from sample to sample.
. "$SRC/tests/fixtures/nvml/common.bash"

DYNAMIC='["index","mem_used_bytes","mem_free_bytes","bar1_used_bytes","util_gpu_pct",
  "util_mem_pct","util_enc_pct","util_dec_pct","temp_c","power_mw","energy_mj",
  "clock_graphics_mhz","clock_sm_mhz","clock_mem_mhz","clock_video_mhz","clocks_event_reasons",
  "pstate","fan_speed_pct","ecc_volatile_corrected","ecc_volatile_uncorrected","pcie_gen",
  "pcie_width","pcie_tx_bytes_per_s","pcie_rx_bytes_per_s","pcie_replay_count","processes",
  "nvlink","recovery_action"]'
PROC_DYNAMIC='["pid","used_bytes","sm_util_pct","mem_util_pct","enc_util_pct","dec_util_pct"]'
LINK_DYNAMIC='["link","active","crc_errors","replay_errors","recovery_errors","tx_kib","rx_kib"]'

# The full scenario over a window: every sample has exactly the dynamic fields GPU 0 has values
# for, and nothing static.
snap "$FIX/full.json" --window 600ms
check '.samples | length >= 4' 'true'
check "[.samples[].gpus[] | keys[]] | unique - $DYNAMIC" '[]'
check "[.samples[].gpus[0] | keys] | unique" \
    "[$(jq -c "$DYNAMIC | sort" <<<"$DYNAMIC")]"
check "[.samples[].gpus[0].processes[] | keys[]] | unique - $PROC_DYNAMIC" '[]'
# each link: its state and counters, not its version or remote end
check "[.samples[].gpus[0].nvlink[] | keys] | unique" "[$(jq -cn "$LINK_DYNAMIC | sort")]"
check '[.samples[].gpus[0].nvlink[] | [.link, .active, .replay_errors]] | unique' \
    '[[0,true,0],[1,true,1],[2,false,2],[3,true,3]]'
check '[.samples[].gpus[0].processes[0].used_bytes] | unique' '[40802189312]'
check '[.samples[].gpus[0].temp_c] | unique' '[64]'
# GPU 1 has no dynamic value at all: its samples hold its index only.
check '[.samples[].gpus[1]] | unique' '[{"index":1}]'
check '.collectors.nvml.state' '"ok"'

# Values that change: a square wave on utilisation, a leak in a process, a clock event window.
changing=$(scenario changing "$(jq -cn --argjson g "$BASE_GPU" '{
    schema: "gpudoctor.scenario/1",
    gpus: [$g | .processes = [{pid: 4121, used_bytes: 1073741824, type: "compute"}]
              | .clocks_event_reasons = "0x0000000000000000"],
    timeline: [
      {gpu: 0, field: "util_gpu_pct", square: {period_s: 0.2, values: [10, 90]}},
      {gpu: 0, pid: 4121, field: "used_bytes", rate_per_s: 1073741824},
      {gpu: 0, field: "clocks_event_reasons", from_s: 0.3, to_s: 1000, value: "0x0000000000000020"}
    ]}')")
snap "$changing" --window 1s
check '.samples | length >= 6' 'true'
check '[.samples[].gpus[0].util_gpu_pct] | unique' '[10,90]'
check '[.samples[].gpus[0].processes[0].used_bytes] | (. == sort and .[-1] > .[0])' 'true'
check '.samples[-1].gpus[0].clocks_event_reasons' '"0x0000000000000020"'
check '[.samples[].gpus[0].clocks_event_reasons] | unique' \
    '["0x0000000000000000","0x0000000000000020"]'
# the first reading is not a sample's: it stays what it was at the start
check '.gpus[0].clocks_event_reasons' '"0x0000000000000000"'
# the time of each sample is recorded and grows
check '[.samples[].t_ms] | (. == sort and .[0] == 0 and .[-1] >= 700)' 'true'

finish
