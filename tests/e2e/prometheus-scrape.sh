#!/usr/bin/env bash
# A real Prometheus (Debian's `prometheus`) on loopback scrapes `gpudoctor serve` every second,
# with gpudoctor's alerting rules loaded: every GPU value it stores equals the scenario's, in base
# units; the rules evaluate without error; `promtool check metrics` passes on what it scraped.
. "$SRC/tests/fixtures/serve/common.bash"
command -v prometheus >/dev/null || { echo "SKIP: prometheus is not installed"; exit 77; }
command -v ss >/dev/null || { echo "SKIP: ss is not installed"; exit 77; }

# The bundled healthy server without its timeline: every value stays as written.
SCEN=$TMP/scenario.json
jq 'del(.timeline)' "$SRC/scenarios/healthy-8xh100.json" >"$SCEN"
start_serve "$SCEN" --interval 1s --window 0
wait_ready

# A free port for Prometheus: one nobody listens on; retried if another process takes it first.
PROM_PID=
stop_prom() {
    if [ -n "$PROM_PID" ]; then
        kill -TERM "$PROM_PID" 2>/dev/null || true
        wait "$PROM_PID" 2>/dev/null || true
    fi
}
CLEANUPS+=(stop_prom)
cat >"$TMP/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - $SRC/deploy/prometheus/gpudoctor-rules.yml
scrape_configs:
  - job_name: gpudoctor
    static_configs:
      - targets: ['127.0.0.1:$PORT']
YML
for attempt in 1 2 3 4 5; do
    PPORT=$((20000 + RANDOM % 30000))
    ss -Hltn "sport = :$PPORT" | grep -q . && continue
    prometheus --config.file="$TMP/prometheus.yml" --storage.tsdb.path="$TMP/tsdb" \
        --web.listen-address="127.0.0.1:$PPORT" --log.level=warn >"$TMP/prometheus.log" 2>&1 &
    PROM_PID=$!
    for i in $(seq 100); do
        curl -sf "http://127.0.0.1:$PPORT/-/ready" >/dev/null 2>&1 && break 2
        kill -0 "$PROM_PID" 2>/dev/null || break
        sleep 0.2
    done
    stop_prom
    PROM_PID=
done
[ -n "$PROM_PID" ] || { echo "FAIL: Prometheus did not start"; cat "$TMP/prometheus.log"; exit 1; }

# query EXPR: the result vector as compact JSON [{metric, value}]
query() {
    curl -sf --get "http://127.0.0.1:$PPORT/api/v1/query" --data-urlencode "query=$1" |
        jq -c '.data.result'
}

# until the scrape is in: every GPU's temperature stored
for i in $(seq 150); do
    [ "$(query 'count(gpudoctor_gpu_temperature_celsius)' | jq -r '.[0].value[1] // 0')" = 8 ] && break
    sleep 0.2
done
check "target up" "$(query 'up{job="gpudoctor"}' | jq -r '.[0].value[1]')" 1

# by_gpu EXPR: {"0": value, ...} for every series of the expression, by its gpu label
by_gpu() {
    query "$1" | jq -c 'map({(.metric.gpu): (.value[1] | tonumber)}) | add // {}'
}
# want JQ: the same map computed from the scenario
want() {
    jq -c "[.gpus[] | {(.index | tostring): ($1)}] | add" "$SCEN"
}
compare() {
    check "$1" "$(by_gpu "$1")" "$(want "$2")"
}
compare 'gpudoctor_gpu_temperature_celsius' '.temp_c'
compare 'gpudoctor_gpu_power_watts' '.power_mw / 1000'
compare 'gpudoctor_gpu_power_limit_watts{limit="current"}' '.power_limit_mw / 1000'
compare 'gpudoctor_gpu_clock_hertz{clock="sm"}' '.clock_sm_mhz * 1000000'
compare 'gpudoctor_gpu_clock_hertz{clock="memory"}' '.clock_mem_mhz * 1000000'
compare 'gpudoctor_gpu_clock_max_hertz{clock="sm"}' '.clock_sm_max_mhz * 1000000'
compare 'gpudoctor_gpu_memory_used_bytes' '.mem_used_bytes'
compare 'gpudoctor_gpu_memory_total_bytes' '.mem_total_bytes'
compare 'gpudoctor_gpu_utilization_ratio' '.util_gpu_pct / 100'
compare 'gpudoctor_gpu_pcie_link_generation' '.pcie_gen'
compare 'gpudoctor_gpu_pcie_link_width_max' '.pcie_width_max'
compare 'gpudoctor_gpu_energy_joules_total' '.energy_mj / 1000'
compare 'gpudoctor_gpu_ecc_errors_total{type="corrected",scope="volatile"}' '.ecc_volatile_corrected'
compare 'gpudoctor_gpu_processes' '.processes | length'
check "uuid labels" "$(query 'gpudoctor_gpu_up' | jq -c 'map({(.metric.gpu): .metric.uuid}) | add')" \
    "$(jq -c '[.gpus[] | {(.index | tostring): .uuid}] | add' "$SCEN")"
check "serials and PCI addresses" \
    "$(query 'gpudoctor_gpu_info' | jq -c 'map({(.metric.gpu): [.metric.serial, .metric.pci_bus_id]}) | add')" \
    "$(jq -c '[.gpus[] | {(.index | tostring): [.serial, .pci_bus_id]}] | add' "$SCEN")"
check "NVML devices" "$(query 'gpudoctor_nvml_devices' | jq -r '.[0].value[1]')" 8
check "driver" "$(query 'gpudoctor_driver_info' | jq -r '.[0].metric.driver_version')" \
    "$(jq -r .system.driver_version "$SCEN")"
check "no critical finding" "$(query 'gpudoctor_findings{severity="critical"}' | jq -r '.[0].value[1]')" 0

# gpudoctor's rules evaluated against real data, without an error
for i in $(seq 50); do
    rules=$(curl -sf "http://127.0.0.1:$PPORT/api/v1/rules" | jq -c '[.data.groups[].rules[] | select(.lastEvaluation != "0001-01-01T00:00:00Z")] | length')
    [ "$rules" -ge 14 ] && break
    sleep 0.2
done
check "rules evaluated" "$rules" 14
check "rules healthy" "$(curl -sf "http://127.0.0.1:$PPORT/api/v1/rules" |
    jq -c '[.data.groups[].rules[] | select(.health != "ok") | {name, lastError}]')" '[]'
check "alerts firing" "$(query 'ALERTS{alertstate="firing"}' | jq -c 'map(.metric.alertname)')" '[]'

# what Prometheus scraped also passes promtool's linter
if command -v promtool >/dev/null; then
    curl -sf "http://127.0.0.1:$PORT/metrics" | promtool check metrics || fail "promtool check metrics"
fi
stop_prom
PROM_PID=
stop_serve TERM
finish
