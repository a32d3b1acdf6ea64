#!/usr/bin/env bash
# A wedged driver (an NVML call that never returns) must not hang a scrape: while the collection
# waits for its deadline, /metrics, /findings and /healthz still answer at once; the cycle ends
# with gpudoctor_nvml_up 0 and the health.nvml-hung finding; once the driver answers again the
# next cycle's new NVML helper brings the data back.
. "$SRC/tests/fixtures/serve/common.bash"

jq 'del(.timeline)' "$SRC/scenarios/healthy-8xh100.json" >"$TMP/healthy.json"
jq '.hang = ["nvmlDeviceGetTemperature"]' "$TMP/healthy.json" >"$TMP/hung.json"
SCEN=$TMP/scenario.json
cp "$TMP/hung.json" "$SCEN"
start_serve "$SCEN" --interval 4s --window 0 --timeout 2s --only nvml
wait_ready 30

# During the hung collections: every answer within half a second.
for i in $(seq 20); do
    for path in /metrics /findings /healthz; do
        code=$(curl -s -o /dev/null -m 0.5 -w '%{http_code}' "http://127.0.0.1:$PORT$path") || true
        [ "$code" = 200 ] || fail "$path answered $code within 0.5 s during a hung collection"
    done
    sleep 0.2
done
M=$(curl -sf "http://127.0.0.1:$PORT/metrics")
check "NVML up during the hang" "$(metric "$M" gpudoctor_nvml_up '')" 0
check "NVML collector up" "$(metric "$M" gpudoctor_collector_up 'collector="nvml"')" 0
check "collection itself succeeded" "$(metric "$M" gpudoctor_collect_success '')" 1
grep -q '^gpudoctor_finding{id="health.nvml-hung",severity="critical"' <<<"$M" ||
    fail "no health.nvml-hung series"
curl -sf "http://127.0.0.1:$PORT/findings" >"$TMP/f.json"
check "hung finding" "$(jq -r '[.findings[].id] | index("health.nvml-hung") != null' "$TMP/f.json")" true
grep -q 'nvmlDeviceGetTemperature' "$TMP/f.json" || fail "the finding does not name the hung call"
d=$(metric "$M" gpudoctor_collect_duration_seconds '')
awk -v d="$d" 'BEGIN { exit !(d < 3) }' || fail "a hung collection took $d s, past --timeout"

# The driver answers again: a new helper reads the scenario afresh.
cp "$TMP/healthy.json" "$SCEN.new" && mv "$SCEN.new" "$SCEN"
for i in $(seq 100); do
    M=$(curl -sf "http://127.0.0.1:$PORT/metrics")
    [ "$(metric "$M" gpudoctor_nvml_up '')" = 1 ] && break
    sleep 0.2
done
check "NVML up again" "$(metric "$M" gpudoctor_nvml_up '')" 1
check "temperature back" "$(metric "$M" gpudoctor_gpu_temperature_celsius 'gpu="0"')" \
    "$(jq '.gpus[0].temp_c' "$TMP/healthy.json")"
stop_serve TERM
finish
