#!/usr/bin/env bash
# `gpudoctor fleet --prometheus URL` against a real Prometheus (Debian's `prometheus`) on loopback
# that scrapes four `gpudoctor serve` exporters on the NVML simulator: three alike, one odd (GPU 3
# held at 1410 MHz, GPU 2's link at x8, another driver). Through the HTTP API and the documented
# queries, fleet sees the four instances, finds the odd one and only it, with the figures that
# set it apart beside the group's; --profile judges it against a profile too; a server that is
# not there is said with status 3, a URL that is not HTTP is a usage error (64); gpudoctor
# is not linked with libcurl (fleet loads it).
. "$SRC/tests/fixtures/serve/common.bash"
command -v prometheus >/dev/null || { echo "SKIP: prometheus is not installed"; exit 77; }
command -v ss >/dev/null || { echo "SKIP: ss is not installed"; exit 77; }

HEALTHY=$TMP/healthy.json
ODD=$TMP/odd.json
jq 'del(.timeline)' "$SRC/scenarios/healthy-8xh100.json" >"$HEALTHY"
jq '.gpus[3].clock_sm_mhz = 1410 | .gpus[2].pcie_width = 8 | .system.driver_version = "535.104.05"
    | .system.nvml_version = "12.535.104.05"' "$HEALTHY" >"$ODD"

PORTS=()
PIDS=()
stop_all() {
    local p
    for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
}
CLEANUPS+=(stop_all)
for scen in "$HEALTHY" "$HEALTHY" "$HEALTHY" "$ODD"; do
    start_serve "$scen" --interval 1s --window 0 --only nvml
    PORTS+=("$PORT")
    PIDS+=("$SERVE_PID")
    SERVE_PID=
    mv "$TMP/serve.log" "$TMP/serve-$PORT.log"
done
ODD_INSTANCE=127.0.0.1:${PORTS[3]}

targets=$(printf "'127.0.0.1:%s'," "${PORTS[@]}")
cat >"$TMP/prometheus.yml" <<YML
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: gpudoctor
    static_configs:
      - targets: [${targets%,}]
YML
PROM_PID=
stop_prom() {
    if [ -n "$PROM_PID" ]; then
        kill -TERM "$PROM_PID" 2>/dev/null || true
        wait "$PROM_PID" 2>/dev/null || true
    fi
}
CLEANUPS+=(stop_prom)
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
URL=http://127.0.0.1:$PPORT

# until every exporter's GPUs are stored
for i in $(seq 150); do
    n=$(curl -sf --get "$URL/api/v1/query" --data-urlencode 'query=count(gpudoctor_gpu_info)' |
        jq -r '.data.result[0].value[1] // 0')
    [ "$n" = 32 ] && break
    sleep 0.2
done
check "series scraped" "$n" 32

rc=0
"$GPUDOCTOR" fleet --prometheus "$URL/" --min-group 3 --json >"$TMP/fleet.json" 2>"$TMP/err" || rc=$?
check "exit status: an outlier" "$rc" 1
check "schema" "$(jq -r .schema "$TMP/fleet.json")" gpudoctor.fleet/1
check "source" "$(jq -r .source "$TMP/fleet.json")" "$URL"
check "nodes: the four instances" "$(jq -c '[.nodes[].name] | sort' "$TMP/fleet.json")" \
    "$(printf '127.0.0.1:%s\n' "${PORTS[@]}" | sort | jq -Rsc 'split("\n") | map(select(. != ""))')"
check "one group of four H100 nodes" "$(jq -c '[.groups[] | [.model, .nodes, .judged]]' "$TMP/fleet.json")" \
    '[["NVIDIA H100 80GB HBM3",4,true]]'
check "GPUs per node" "$(jq -c '[.nodes[].gpus] | unique' "$TMP/fleet.json")" '[8]'
check "the odd one, and only it" "$(jq -c .outliers "$TMP/fleet.json")" "[\"$ODD_INSTANCE\"]"
odd() { jq -c --arg n "$ODD_INSTANCE" ".nodes[] | select(.name == \$n) | $1" "$TMP/fleet.json"; }
check "its figures that differ" "$(odd '[.reasons[] | select(.kind == "metric") | .metric] | sort')" \
    '["clock_sm_busy_mhz","driver_version","pcie_width"]'
check "clock: node and group" "$(odd '.reasons[] | select(.metric == "clock_sm_busy_mhz") | [.node.value, .node.gpu, .median]')" \
    "[1410,3,$(jq '[.gpus[].clock_sm_mhz] | min' "$HEALTHY")]"
check "width: node and majority" "$(odd '.reasons[] | select(.metric == "pcie_width") | [.node.value, .majority, .agree, .compared]')" \
    '[8,"16",3,4]'
check "driver: node and majority" "$(odd '.reasons[] | select(.metric == "driver_version") | [.node.value, .majority]')" \
    '["535.104.05","550.54.15"]'
check "its own finding the others lack" "$(odd '[.reasons[] | select(.kind == "finding") | .id] | index("pcie.width-degraded") != null')" true
check "memory per GPU from the API" "$(odd '.values.gpu_memory_mib.value')" \
    "$(jq '.gpus[0].mem_total_bytes / 1048576 | floor' "$HEALTHY")"

# the text report says the same, the odd node first
rc=0
"$GPUDOCTOR" fleet --prometheus "$URL" --min-group 3 >"$TMP/fleet.txt" 2>&1 || rc=$?
check "text: exit status" "$rc" 1
grep -q "^1\. $ODD_INSTANCE " "$TMP/fleet.txt" || fail "text: the odd node is not ranked first: $(cat "$TMP/fleet.txt")"
grep -q "clock_sm_busy_mhz *1410 MHz (GPU 3)" "$TMP/fleet.txt" || fail "text: no clock evidence"

# a profile judges every node of its model; the odd one deviates from it
cat >"$TMP/profile.conf" <<'CONF'
[profile]
gpu_count = 8
gpu_model = "NVIDIA H100 80GB HBM3"
driver_version = "550.54.15"
pcie_width = 16
CONF
"$GPUDOCTOR" fleet --prometheus "$URL" --min-group 3 --profile "$TMP/profile.conf" --json \
    >"$TMP/fleet-p.json" 2>/dev/null || true
check "profile: deviations of the odd node" \
    "$(jq -c --arg n "$ODD_INSTANCE" '[.nodes[] | select(.name == $n) | .reasons[] | select(.kind == "profile") | .key] | sort' "$TMP/fleet-p.json")" \
    '["driver_version","pcie_width"]'
check "profile: the others match it" \
    "$(jq -c --arg n "$ODD_INSTANCE" '[.nodes[] | select(.name != $n) | .reasons[]] | length' "$TMP/fleet-p.json")" 0

# the server not there, a URL that is not HTTP: said, status 3 and 64
stop_prom
PROM_PID=
rc=0
"$GPUDOCTOR" fleet --prometheus "$URL" --timeout 2s >"$TMP/out" 2>"$TMP/err" || rc=$?
check "no server: exit status" "$rc" 3
grep -q "gpudoctor fleet: $URL: gpudoctor_check_status: " "$TMP/err" || fail "no server: $(cat "$TMP/err")"
rc=0
"$GPUDOCTOR" fleet --prometheus "file:///etc/passwd" >"$TMP/out" 2>"$TMP/err" || rc=$?
check "file URL: exit status" "$rc" 64
grep -q "is not an http:// or https:// URL" "$TMP/err" || fail "file URL: $(cat "$TMP/err")"
# libcurl is loaded by fleet alone, at run time: gpudoctor is not linked with it
if command -v ldd >/dev/null; then
    ldd "$GPUDOCTOR" | grep libcurl >/dev/null && fail "gpudoctor is linked with libcurl: $(ldd "$GPUDOCTOR" | grep libcurl)"
fi
rc=0
"$GPUDOCTOR" fleet --prometheus "$URL" /tmp >"$TMP/out" 2>"$TMP/err" || rc=$?
check "both: exit status" "$rc" 64

stop_all
PIDS=()
finish
