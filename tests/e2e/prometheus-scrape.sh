#!/usr/bin/env bash
# A real Prometheus (Debian's `prometheus`) on loopback scrapes `gpudoctor serve` every second,
# with gpudoctor's alerting rules loaded: every GPU value it stores equals the scenario's, in base
# units; the rules evaluate without error; `promtool check metrics` passes on what it scraped.
# Prometheus asks for gzip: a second job scrapes serve through a relay that records both sides'
# headers, so the test sees gzip asked for, answered, and every sample of it read by Prometheus.
. "$SRC/tests/fixtures/serve/common.bash"
command -v prometheus >/dev/null || { echo "SKIP: prometheus is not installed"; exit 77; }
command -v ss >/dev/null || { echo "SKIP: ss is not installed"; exit 77; }

# The bundled healthy server without its timeline: every value stays as written.
SCEN=$TMP/scenario.json
jq 'del(.timeline)' "$SRC/scenarios/healthy-8xh100.json" >"$SCEN"
start_serve "$SCEN" --interval 1s --window 0
wait_ready

# The relay: forwards each request to serve unchanged, answers with serve's body unchanged, and
# logs the request's Accept-Encoding, the answer's Content-Encoding and its size, one line each.
RELAY_PID=
stop_relay() {
    if [ -n "$RELAY_PID" ]; then
        kill -TERM "$RELAY_PID" 2>/dev/null || true
        wait "$RELAY_PID" 2>/dev/null || true
    fi
}
relay_job=
if command -v python3 >/dev/null; then
    cat >"$TMP/relay.py" <<'PY'
import http.client, http.server, os, sys
upstream, log_path, port_path = int(sys.argv[1]), sys.argv[2], sys.argv[3]
log = open(log_path, "a", buffering=1)
HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "date", "server"}
class Relay(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        up = http.client.HTTPConnection("127.0.0.1", upstream, timeout=10)
        up.request("GET", self.path, headers={k: v for k, v in self.headers.items() if k.lower() != "host"})
        resp = up.getresponse()
        body = resp.read()  # as sent: http.client does not decode it
        up.close()
        self.send_response(resp.status)
        for k, v in resp.getheaders():
            if k.lower() not in HOP:
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        log.write("%s\t%s\t%d\n" % (self.headers.get("Accept-Encoding", "-"),
                                      resp.getheader("Content-Encoding", "-"), len(body)))
    def log_message(self, *args):
        pass
srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Relay)
with open(port_path + ".new", "w") as f:
    f.write(str(srv.server_address[1]))
os.rename(port_path + ".new", port_path)
srv.serve_forever()
PY
    python3 "$TMP/relay.py" "$PORT" "$TMP/relay.log" "$TMP/relay.port" 2>"$TMP/relay.err" &
    RELAY_PID=$!
    CLEANUPS+=(stop_relay)
    for i in $(seq 100); do
        [ -s "$TMP/relay.port" ] && break
        kill -0 "$RELAY_PID" 2>/dev/null || break
        sleep 0.1
    done
    [ -s "$TMP/relay.port" ] || { echo "FAIL: the relay did not start"; cat "$TMP/relay.err"; exit 1; }
    # Its samples are dropped once read: only up and scrape_samples_scraped are kept, so the
    # queries below see the direct job's series alone.
    relay_job="  - job_name: gzip-relay
    metric_relabel_configs:
      - source_labels: [__name__]
        regex: '.+'
        action: drop
    static_configs:
      - targets: ['127.0.0.1:$(cat "$TMP/relay.port")']"
else
    echo "note: python3 is not installed: the gzip relay job is left out"
fi

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
$relay_job
YML
for attempt in 1 2 3 4 5; do
    PPORT=$((20000 + RANDOM % 30000))
    ss -Hltn "sport = :$PPORT" | grep . >/dev/null && continue
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

# gzip, as Prometheus scrapes: asked for by every scrape, answered gzip by serve, and each
# answer read whole (as many samples as the direct job's scrape of the same exposition)
if [ -n "$relay_job" ]; then
    for i in $(seq 100); do
        [ "$(query 'up{job="gzip-relay"}' | jq -r '.[0].value[1] // 0')" = 1 ] && break
        sleep 0.2
    done
    check "relay target up" "$(query 'up{job="gzip-relay"}' | jq -r '.[0].value[1]')" 1
    check "samples read through gzip" \
        "$(query 'scrape_samples_scraped{job="gzip-relay"}' | jq -r '.[0].value[1]')" \
        "$(query 'scrape_samples_scraped{job="gpudoctor"}' | jq -r '.[0].value[1]')"
    [ -s "$TMP/relay.log" ] || fail "the relay saw no scrape"
    awk -F'\t' '$1 !~ /(^|[ ,])gzip([ ;,]|$)/' "$TMP/relay.log" | grep . &&
        fail "a scrape without Accept-Encoding: gzip (above)"
    awk -F'\t' '$2 != "gzip"' "$TMP/relay.log" | grep . && fail "an answer that is not gzip (above)"
    plain=$(curl -sf "http://127.0.0.1:$PORT/metrics" | wc -c)
    awk -F'\t' -v plain="$plain" '$3 >= plain / 5' "$TMP/relay.log" | grep . &&
        fail "a gzip answer over a fifth of the $plain plain bytes (above)"
fi

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

# gpudoctor's rules evaluated against real data, without an error: every rule of the file
want=$(grep -cE '^ *- (alert|record):' "$SRC/deploy/prometheus/gpudoctor-rules.yml")
for i in $(seq 50); do
    rules=$(curl -sf "http://127.0.0.1:$PPORT/api/v1/rules" | jq -c '[.data.groups[].rules[] | select(.lastEvaluation != "0001-01-01T00:00:00Z")] | length')
    [ "$rules" -ge "$want" ] && break
    sleep 0.2
done
check "rules evaluated" "$rules" "$want"
check "rules healthy" "$(curl -sf "http://127.0.0.1:$PPORT/api/v1/rules" |
    jq -c '[.data.groups[].rules[] | select(.health != "ok") | {name, lastError}]')" '[]'
check "alerts firing" "$(query 'ALERTS{alertstate="firing"}' | jq -c 'map(.metric.alertname)')" '[]'

# what Prometheus scraped also passes promtool's linter
if command -v promtool >/dev/null; then
    curl -sf "http://127.0.0.1:$PORT/metrics" | promtool check metrics || fail "promtool check metrics"
fi
stop_prom
PROM_PID=
stop_relay
RELAY_PID=
stop_serve TERM
finish
