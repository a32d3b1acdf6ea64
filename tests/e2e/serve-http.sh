#!/usr/bin/env bash
# gpudoctor serve on the troubled 8-GPU scenario: /metrics carries the scenario's values in base
# units and passes `promtool check metrics`; /findings has the same critical findings as
# `gpudoctor check`; /healthz; --once and --textfile; gzip for the clients that accept it (curl
# --compressed, Accept-Encoding: gzip;q=0); usage errors; a clean stop on SIGTERM and SIGINT.
. "$SRC/tests/fixtures/serve/common.bash"

SCEN=$SRC/scenarios/troubled-8xh100.json
# Only NVML: this machine's own processes and disks must not add findings that come and go.
start_serve "$SCEN" --interval 1s --window 200ms --only nvml
wait_ready
M=$(curl -sf "http://127.0.0.1:$PORT/metrics")

# Each value equals the scenario's, converted to base units (these GPUs' fields have no
# timeline in this scenario; GPU 5's temperature moves between 88 and 90).
for i in 0 3 7; do
    g=$(jq -c ".gpus[$i]" "$SCEN")
    uuid=$(jq -r .uuid <<<"$g")
    l="gpu=\"$i\",uuid=\"$uuid\",name=\"NVIDIA H100 80GB HBM3\""
    check "GPU $i temperature" "$(metric "$M" gpudoctor_gpu_temperature_celsius "$l")" "$(jq .temp_c <<<"$g")"
    check "GPU $i power (W)" "$(metric "$M" gpudoctor_gpu_power_watts "$l")" \
        "$(jq -r '.power_mw / 1000 | tostring' <<<"$g")"
    check "GPU $i SM clock (Hz)" "$(metric "$M" gpudoctor_gpu_clock_hertz "$l,clock=\"sm\"")" \
        "$(jq -r '.clock_sm_mhz * 1000000 | tostring' <<<"$g")"
    check "GPU $i memory total" "$(metric "$M" gpudoctor_gpu_memory_total_bytes "$l")" \
        "$(jq .mem_total_bytes <<<"$g")"
    check "GPU $i utilisation" "$(metric "$M" gpudoctor_gpu_utilization_ratio "$l")" \
        "$(jq -r '.util_gpu_pct / 100 | tostring' <<<"$g")"
    check "GPU $i PCIe width" "$(metric "$M" gpudoctor_gpu_pcie_link_width "$l")" "$(jq .pcie_width <<<"$g")"
done
t5=$(metric "$M" gpudoctor_gpu_temperature_celsius 'gpu="5"')
[[ "$t5" =~ ^(88|89|90)$ ]] || fail "GPU 5 temperature $t5, not 88-90"
# GPU 5 is thermally throttled in this scenario: sw_thermal on, gpu_idle off
check "GPU 5 sw_thermal on" "$(grep '^gpudoctor_gpu_clock_event_reason{gpu="5"' <<<"$M" | grep 'reason="sw_thermal"' | awk '{print $NF}')" 1
check "GPU 0 sw_thermal off" "$(grep '^gpudoctor_gpu_clock_event_reason{gpu="0"' <<<"$M" | grep 'reason="sw_thermal"' | awk '{print $NF}')" 0
# GPU 2's uncorrectable ECC errors, as a counter
check "GPU 2 volatile uncorrected ECC" \
    "$(grep '^gpudoctor_gpu_ecc_errors_total{gpu="2"' <<<"$M" | grep 'type="uncorrected",scope="volatile"' | awk '{print $NF}')" \
    "$(jq '.gpus[2].ecc_volatile_uncorrected' "$SCEN")"
check "NVML up" "$(metric "$M" gpudoctor_nvml_up '')" 1
check "NVML devices" "$(metric "$M" gpudoctor_nvml_devices '')" 8
check "collect success" "$(metric "$M" gpudoctor_collect_success '')" 1
check "check status" "$(metric "$M" gpudoctor_check_status '')" 2
age=$(metric "$M" gpudoctor_data_age_seconds '')
awk -v a="$age" 'BEGIN { exit !(a >= 0 && a < 5) }' || fail "data age $age"

if command -v promtool >/dev/null; then
    promtool check metrics <<<"$M" >"$TMP/promtool.out" 2>&1 || {
        fail "promtool check metrics"
        cat "$TMP/promtool.out"
    }
else
    echo "note: promtool not installed, exposition format not linted"
fi

# /findings: the critical findings of `gpudoctor check` on the same scenario
curl -sf "http://127.0.0.1:$PORT/findings" >"$TMP/findings.json"
check "/findings schema" "$(jq -r .schema "$TMP/findings.json")" "gpudoctor.findings/1"
check "/findings stale" "$(jq .stale "$TMP/findings.json")" false
NVML_SIM_SCENARIO=$SCEN "$GPUDOCTOR" check --only nvml --window 0 --json >"$TMP/check.json" || true
check "/findings critical ids" \
    "$(jq -c '[.findings[] | select(.severity == "critical") | .id] | sort' "$TMP/findings.json")" \
    "$(jq -c '[.findings[] | select(.severity == "critical") | .id] | sort' "$TMP/check.json")"
check "finding series" \
    "$(grep -c '^gpudoctor_finding{.*severity="critical"' <<<"$M")" \
    "$(jq '[.findings[] | select(.severity == "critical")] | length' "$TMP/findings.json")"

# /healthz, HEAD, 404, 405
check "/healthz" "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/healthz")" 200
check "HEAD /metrics" "$(curl -sI -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/metrics")" 200
check "GET /nope" "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/nope")" 404
check "DELETE /metrics" "$(curl -s -o /dev/null -w '%{http_code}' -X DELETE "http://127.0.0.1:$PORT/metrics")" 405
# cycles keep coming at --interval (waited for up to 15 s: a cycle under AddressSanitizer on a
# loaded machine takes longer than the interval)
c1=$(metric "$(curl -sf "http://127.0.0.1:$PORT/metrics")" gpudoctor_collect_cycles_total '')
for _ in $(seq 60); do
    sleep 0.25
    c2=$(metric "$(curl -sf "http://127.0.0.1:$PORT/metrics")" gpudoctor_collect_cycles_total '')
    [ "${c2:-0}" -ge $((c1 + 1)) ] && break
done
[ "${c2:-0}" -ge $((c1 + 1)) ] || fail "cycles did not advance in 15 s: $c1 then $c2"
stop_serve TERM

# SIGINT stops it too, even before the first collection has completed
start_serve "$SCEN" --interval 1s --window 0
stop_serve INT

# IPv6 loopback, where the machine has it
if [ -e /proc/net/if_inet6 ]; then
    NVML_SIM_SCENARIO=$SCEN "$GPUDOCTOR" serve --listen '[::1]:0' --window 0 2>"$TMP/v6.log" &
    v6=$!
    for i in $(seq 50); do
        p6=$(sed -n 's/.*(port \([0-9]*\)).*/\1/p' "$TMP/v6.log")
        [ -n "$p6" ] && break
        sleep 0.1
    done
    check "IPv6 /" "$(curl -s -o /dev/null -w '%{http_code}' "http://[::1]:$p6/")" 200
    kill -TERM "$v6"
    wait "$v6" || fail "IPv6 serve exit status"
fi

# --once: the same exposition on stdout; --textfile: DIR/gpudoctor.prom, nothing else left
NVML_SIM_SCENARIO=$SCEN "$GPUDOCTOR" serve --once --window 0 >"$TMP/once.prom" || fail "--once exit status"
check "--once temperature of GPU 3" "$(metric "$(cat "$TMP/once.prom")" gpudoctor_gpu_temperature_celsius 'gpu="3"')" 36
grep -q gpudoctor_data_age_seconds "$TMP/once.prom" && fail "--once has a data age"
mkdir "$TMP/textfile"
NVML_SIM_SCENARIO=$SCEN "$GPUDOCTOR" serve --once --window 0 --textfile "$TMP/textfile" || fail "--textfile exit status"
check "--textfile files" "$(ls "$TMP/textfile")" "gpudoctor.prom"
check "--textfile temperature" "$(metric "$(cat "$TMP/textfile/gpudoctor.prom")" gpudoctor_gpu_temperature_celsius 'gpu="3"')" 36
# A FIFO where the file goes (planted by whoever can write there): replaced, never opened (an
# open would wait for a reader for ever); a directory that is not there: status 3.
mkdir "$TMP/tf-fifo"
mkfifo "$TMP/tf-fifo/gpudoctor.prom"
NVML_SIM_SCENARIO=$SCEN timeout 20 "$GPUDOCTOR" serve --once --window 0 --textfile "$TMP/tf-fifo" || fail "--textfile over a FIFO: exit status"
[ -f "$TMP/tf-fifo/gpudoctor.prom" ] || fail "--textfile over a FIFO: not replaced by a file"
check "--textfile over a FIFO: temperature" "$(metric "$(cat "$TMP/tf-fifo/gpudoctor.prom")" gpudoctor_gpu_temperature_celsius 'gpu="3"')" 36
# A symbolic link there, whoever's: the link itself is replaced (rename does not follow it); the
# file it names keeps its content and its mode 0600, and another user's link is no failure.
mkdir "$TMP/tf-link" "$TMP/tf-elsewhere"
echo keep >"$TMP/tf-elsewhere/private"
chmod 600 "$TMP/tf-elsewhere/private"
for owner in self other; do
    ln -sfn ../tf-elsewhere/private "$TMP/tf-link/gpudoctor.prom"
    if [ "$owner" = other ]; then
        [ "$(id -u)" = 0 ] || continue
        chown -h 65534 "$TMP/tf-link/gpudoctor.prom"
    fi
    rc=0
    NVML_SIM_SCENARIO=$SCEN "$GPUDOCTOR" serve --once --window 0 --textfile "$TMP/tf-link" 2>"$TMP/tf-link.err" || rc=$?
    check "--textfile over $owner's link: status" "$rc" 0
    [ -f "$TMP/tf-link/gpudoctor.prom" ] && [ ! -L "$TMP/tf-link/gpudoctor.prom" ] ||
        fail "--textfile over $owner's link: the link is not replaced by a file"
    check "--textfile over $owner's link: temperature" "$(metric "$(cat "$TMP/tf-link/gpudoctor.prom")" gpudoctor_gpu_temperature_celsius 'gpu="3"')" 36
    check "--textfile over $owner's link: what it names" "$(cat "$TMP/tf-elsewhere/private") $(stat -c %a "$TMP/tf-elsewhere/private")" "keep 600"
done
rc=0
NVML_SIM_SCENARIO=$SCEN "$GPUDOCTOR" serve --once --window 0 --textfile "$TMP/no-such-dir" 2>"$TMP/nodir.err" || rc=$?
check "--textfile missing directory: status" "$rc" 3
grep -q -- "--textfile $TMP/no-such-dir: No such file or directory" "$TMP/nodir.err" || fail "--textfile missing directory: $(cat "$TMP/nodir.err")"

# --textfile alongside serving: the file follows the collections
mkdir "$TMP/tf2"
start_serve "$SCEN" --interval 1s --window 0 --only nvml --textfile "$TMP/tf2"
wait_ready
for _ in $(seq 60); do # until the file holds a second cycle (15 s at most)
    sleep 0.25
    c=$(metric "$(cat "$TMP/tf2/gpudoctor.prom" 2>/dev/null)" gpudoctor_collect_cycles_total '')
    [ "${c:-0}" -ge 2 ] && break
done
[ "${c:-0}" -ge 2 ] || fail "--textfile while serving: cycle ${c:-none} in the file"
stop_serve TERM
# Stopped cleanly: the file, and no temporary file of a write (a listing taken while serving
# may catch one mid-write, which is fine)
check "--textfile after serving: files" "$(ls "$TMP/tf2")" "gpudoctor.prom"

# gzip: what Prometheus asks for. One long cycle, so that every scrape below reads the same
# collection and only the data age line differs between them.
start_serve "$SCEN" --interval 1h --window 0 --only nvml
wait_ready
url=http://127.0.0.1:$PORT
curl -sf "$url/metrics" | grep -v '^gpudoctor_data_age_seconds ' >"$TMP/plain.prom"
curl -sf -D "$TMP/gz.head" -H 'Accept-Encoding: gzip' -o "$TMP/metrics.gz" "$url/metrics"
grep -qi '^Content-Encoding: gzip' "$TMP/gz.head" || fail "gzip: no Content-Encoding: gzip"
grep -qi '^Vary: Accept-Encoding' "$TMP/gz.head" || fail "gzip: no Vary: Accept-Encoding"
# gzip(1) checks the whole member: header, deflate stream, CRC-32 and length in the trailer
gzip -t <"$TMP/metrics.gz" || fail "gzip: /metrics is not a valid gzip stream"
gzip -dc <"$TMP/metrics.gz" >"$TMP/gunzipped.prom" || true
grep -q '^gpudoctor_data_age_seconds [0-9]' "$TMP/gunzipped.prom" || fail "gzip: no data age"
grep -v '^gpudoctor_data_age_seconds ' "$TMP/gunzipped.prom" | cmp -s - "$TMP/plain.prom" ||
    fail "gzip: the decompressed exposition differs from the plain one"
plain_size=$(wc -c <"$TMP/plain.prom")
gz_size=$(wc -c <"$TMP/metrics.gz")
[ "$gz_size" -lt $((plain_size / 5)) ] || fail "gzip: $gz_size bytes for $plain_size of text"
if command -v promtool >/dev/null; then
    promtool check metrics <"$TMP/gunzipped.prom" >"$TMP/promtool-gz.out" 2>&1 || {
        fail "promtool check metrics on the decompressed exposition"
        cat "$TMP/promtool-gz.out"
    }
fi
# curl --compressed asks for the codings it has and decodes the answer itself
curl -sf --compressed "$url/metrics" | grep -v '^gpudoctor_data_age_seconds ' |
    cmp -s - "$TMP/plain.prom" || fail "curl --compressed: a different exposition"
# refused: the plain text, still with Vary
curl -sf -D "$TMP/q0.head" -H 'Accept-Encoding: gzip;q=0' "$url/metrics" |
    grep -v '^gpudoctor_data_age_seconds ' >"$TMP/q0.prom"
grep -qi '^Content-Encoding' "$TMP/q0.head" && fail "gzip;q=0: a Content-Encoding"
grep -qi '^Vary: Accept-Encoding' "$TMP/q0.head" || fail "gzip;q=0: no Vary"
cmp -s "$TMP/q0.prom" "$TMP/plain.prom" || fail "gzip;q=0: not the plain exposition"
# /findings too, with its own members in front of the published ones
curl -sf -H 'Accept-Encoding: gzip' "$url/findings" | gzip -dc >"$TMP/findings-gz.json" ||
    fail "gzip: /findings is not a valid gzip stream"
check "gzip /findings schema" "$(jq -r .schema "$TMP/findings-gz.json")" "gpudoctor.findings/1"
check "gzip /findings stale" "$(jq .stale "$TMP/findings-gz.json")" false
check "gzip /findings ids" "$(jq -c '[.findings[].id]' "$TMP/findings-gz.json")" \
    "$(curl -sf "$url/findings" | jq -c '[.findings[].id]')"
# HEAD: the headers of the gzip answer, no body
check "HEAD gzip" "$(curl -s -I -H 'Accept-Encoding: gzip' "$url/metrics" | tr -d '\r' |
    grep -ci '^Content-Encoding: gzip')" 1
stop_serve TERM

# usage errors: 64, with a message naming the option
for args in "--listen nonsense" "--listen 127.0.0.1:99999" "--interval 1s --window 5s" \
    "--interval 0.1s" "--top-processes -1" "--threads 0" "extra"; do
    rc=0
    # shellcheck disable=SC2086
    "$GPUDOCTOR" serve $args >/dev/null 2>"$TMP/usage.err" || rc=$?
    check "serve $args: exit status" "$rc" 64
    [ -s "$TMP/usage.err" ] || fail "serve $args: no message"
done
# the port in use: 3, and the message says so
start_serve "$SCEN" --window 0
rc=0
NVML_SIM_SCENARIO=$SCEN "$GPUDOCTOR" serve --listen "127.0.0.1:$PORT" --window 0 2>"$TMP/inuse.err" || rc=$?
check "port in use: exit status" "$rc" 3
grep -q "Address already in use" "$TMP/inuse.err" || fail "port in use: $(cat "$TMP/inuse.err")"
stop_serve TERM

finish
