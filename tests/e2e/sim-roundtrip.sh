#!/usr/bin/env bash
# gpudoctor reads from the simulator exactly what the scenario says, and a snapshot replayed as
# the scenario gives the same snapshot again: the simulator and gpudoctor's NVML collector agree.
. "$(dirname "$0")/sim-lib.sh"
: "${GPUDOCTOR:?}"

snapshot() { # SCENARIO OUT: gpudoctor's NVML view of the scenario
    NVML_SIM_SCENARIO="$1" "$GPUDOCTOR" snapshot --only nvml --nvml-lib "$SIM_LIB" --timeout 20s >"$2"
}
# The GPUs of a scenario or snapshot, values only: no nulls or statuses, one spelling of
# process types, and no process list the same as an empty one. The keys only scenarios have
# (docs/simulator.md, "Beyond the snapshot") are not gpudoctor's to read.
values() {
    jq -S '[.gpus[] | del(.brand, .architecture, .board_part_number, .accounting_mode,
                          .clock_video_max_mhz, .nvlinks, .field_values)
            | with_entries(select(.value != null and .key != "nvml_status"))
            | .processes = ((.processes // []) | map(with_entries(select(.value != null))
                | .type |= (if type == "string" then [.] else . end)))]' "$1"
}

snapshot "$FIXTURES/full.json" "$TMP/full.snap"
state=$(jq -r .collectors.nvml.state "$TMP/full.snap")
[ "$state" != not_run ] || { echo "the NVML collector does not run yet"; exit 77; }
[ "$state" = ok ] || fail "NVML collector state $state: $(jq -c .collectors.nvml "$TMP/full.snap")"
jq -e '.nvml.driver_version == "550.54.15" and .nvml.cuda_driver_version == 12040
       and .nvml.device_count == 2' "$TMP/full.snap" >/dev/null || fail "system values differ"
# every field of the scenario's GPUs, as gpudoctor read them
if ! diff <(values "$FIXTURES/full.json") <(values "$TMP/full.snap") >"$TMP/diff"; then
    fail "gpudoctor read other values than full.json holds:"
    head -40 "$TMP/diff" >&2
fi
# what GPU 1 lacks, gpudoctor records as NOT_SUPPORTED
jq -e '.gpus[1].nvml_status.temp_c == "NOT_SUPPORTED" and .gpus[1].nvml_status.power_mw == "NOT_SUPPORTED"' \
    "$TMP/full.snap" >/dev/null || fail "GPU 1 statuses: $(jq -c .gpus[1].nvml_status "$TMP/full.snap")"

# replay: the snapshot as the scenario gives the same GPUs, statuses included
roundtrip() { # SCENARIO NAME
    snapshot "$1" "$TMP/$2.1"
    snapshot "$TMP/$2.1" "$TMP/$2.2"
    if ! diff <(jq -S '.nvml | del(.elapsed_us, .library)' "$TMP/$2.1") \
        <(jq -S '.nvml | del(.elapsed_us, .library)' "$TMP/$2.2") >"$TMP/diff" ||
        ! diff <(jq -S .gpus "$TMP/$2.1") <(jq -S .gpus "$TMP/$2.2") >>"$TMP/diff"; then
        fail "$2: the replayed snapshot differs:"
        head -40 "$TMP/diff" >&2
    fi
}
roundtrip "$FIXTURES/full.json" full
roundtrip "$FIXTURES/snapshot.json" captured
# the bundled scenarios, frozen before their timelines start
export NVML_SIM_EPOCH=$(($(date +%s) + 100000))
for name in healthy idle troubled; do
    roundtrip "$SRC/scenarios/$name-8xh100.json" "$name"
done
jq -e '.gpus[3].processes[0].pid == 39104 and .gpus[6].pcie_gen == 3 and
       .gpus[5].clocks_event_reasons == "0x0000000000000060"' "$TMP/troubled.1" >/dev/null ||
    fail "troubled: gpudoctor does not see the scenario's problems"
finish
