#!/usr/bin/env bash
# The InfiniBand section and rules from sysfs fixture trees (tests/fixtures/ib), through the
# command line: what the ib collector reads, counters growing during a window, the rules' findings
# on each tree, and `check --from` of a snapshot judging exactly as the live check did.
. "$SRC/tests/fixtures/host/e2e.bash"
IB_FIX=$SRC/tests/fixtures/ib

snap "$IB_FIX/healthy" --only ib
check '.collectors.ib | [.state, .detail, .notes]' '["ok", null, []]'
check '[.ib.devices, .ib.peermem_loaded, .ib.peermem_module]' '[5, true, "nvidia_peermem"]'
check '[.ib.ports[] | "\(.device)/\(.port)"]' '["mlx5_0/1","mlx5_1/1","mlx5_2/1","mlx5_3/1","mlx5_4/1"]'
check '.ib.ports[0] | [.pci_address, .hca_type, .fw_ver, .netdev, .link_layer, .state, .state_name, .phys_state, .phys_state_name]' \
    '["0000:0c:00.0", "MT4129", "28.39.1002", "ibp12s0", "infiniband", 4, "ACTIVE", 5, "LinkUp"]'
check '.ib.ports[0] | [.rate_gbps, .width, .speed, .symbol_error, .port_rcv_data, .symbol_error_window]' \
    '[400, 4, "NDR", 3, 123456789012, null]'
check '.ib.ports[4] | [.link_layer, .rate_gbps, .speed, .hca_type, .netdev]' \
    '["ethernet", 100, "EDR", "MT4125", "enp155s0f0np0"]'

# A window reads the counters twice: nothing changes in a fixture.
snap "$IB_FIX/healthy" --only ib --window 150ms
check '[.ib.ports[].symbol_error_window]' '[0, 0, 0, 0, 0]'
check '[.ib.ports[0] | .link_downed_window, .port_rcv_data_window]' '[0, 0]'

snap "$IB_FIX/port-down" --only ib
check '[.ib.ports[1] | .state_name, .phys_state_name, .rate_gbps]' '["DOWN", "Polling", 10]'
check '[.ib.ports[2] | .state, .phys_state]' '[2, 5]'

snap "$IB_FIX/peermem-missing" --only ib
check '[.ib.peermem_loaded, .ib.peermem_module]' '[false, null]'

snap "$IB_FIX/garbage" --only ib
check '.collectors.ib.state' '"partial"'
check '.collectors.ib.notes | length' '10'
check '.collectors.ib.notes[0]' '"/sys/class/infiniband/bad name: not a device or port name, skipped"'
check '[.ib.devices, .ib.peermem_module]' '[2, "nv_peer_mem"]'
check '.ib.ports[0] | [.state, .phys_state, .rate_gbps, .link_layer, .symbol_error, .link_downed, .port_rcv_errors]' \
    '[null, null, null, null, null, null, 0]'
check '.ib.ports[1] | [.state, .rate_gbps, .symbol_error]' '[4, null, null]'
check '.ib.ports[2] | [.device, .pci_address, .hca_type, .link_layer, .rate_gbps, .width, .speed]' \
    '["rxe0", null, null, "ethernet", 10, 1, "QDR"]'
# With a window the ports without counters are not noted twice.
snap "$IB_FIX/garbage" --only ib --window 150ms
check '.collectors.ib.notes | length' '10'
check '.ib.ports[0] | [.port_rcv_errors_window, .symbol_error_window]' '[0, null]'

mkdir -p "$TMP/empty"  # no /proc/modules either: without a device it is not looked at
snap "$TMP/empty" --only ib
check '.collectors.ib | [.state, .detail]' '["ok", "no InfiniBand device (no /sys/class/infiniband)"]'
check '[.ib.devices, .ib.ports, .ib.peermem_loaded]' '[0, [], null]'

# Counters that grow during the window: mlx5_2's symbol errors and a link retrain.
cp -a "$IB_FIX/errors" "$TMP/errors"
cnt="$TMP/errors/sys/devices/pci0000:00/0000:00:01.0/0000:41:00.0/infiniband/mlx5_2/ports/1/counters"
"$GPUDOCTOR" snapshot --root "$TMP/errors" --only ib,pcie --window 1500ms >"$OUT" 2>"$TMP/err" &
pid=$!
sleep 0.4
printf '250\n' >"$cnt/symbol_error"
printf '1\n' >"$cnt/link_error_recovery"
wait "$pid" || { echo "FAIL: the windowed snapshot exited with $?"; cat "$TMP/err"; failures=$((failures + 1)); }
check '[.ib.ports[2] | .symbol_error_window, .link_error_recovery_window, .link_downed_window]' '[250, 1, 0]'
check '[.ib.ports[0,1,3,4].symbol_error_window]' '[0, 0, 0, 0]'
cp "$OUT" "$TMP/errors.json"

# rules ARGS...: the "rule object severity" lines of gpudoctor check --json with these arguments.
rules() { rule_findings ib. "$@"; }

expect "errors from the snapshot" "$(rules --from "$TMP/errors.json")" "ib.errors mlx5_2/1 warning"
expect "healthy" "$(rules --root "$IB_FIX/healthy" --only ib,pcie --window 150ms)" ""
expect "port down" "$(rules --root "$IB_FIX/port-down" --only ib,pcie --window 0)" \
    "ib.port-down mlx5_1/1 warning,ib.port-down mlx5_2/1 warning"
expect "rate low" "$(rules --root "$IB_FIX/rate-low" --only ib,pcie --window 0)" "ib.rate-low mlx5_3/1 warning"
# ib_min_rate_gbps judges InfiniBand ports only: the 100 Gb/s RoCE port (storage) is not below it.
expect "rate at ib_min_rate_gbps" \
    "$(rules --root "$IB_FIX/healthy" --only ib,pcie --window 0 --set ib_min_rate_gbps=400)" ""
expect "rate below ib_min_rate_gbps" \
    "$(rules --root "$IB_FIX/healthy" --only ib,pcie --window 0 --set ib_min_rate_gbps=800)" \
    "ib.rate-low mlx5_0/1 warning,ib.rate-low mlx5_1/1 warning,ib.rate-low mlx5_2/1 warning,ib.rate-low mlx5_3/1 warning"
expect "peermem missing" "$(rules --root "$IB_FIX/peermem-missing" --only ib,pcie --window 0)" \
    "ib.peermem-missing nvidia_peermem warning"
# Without the ib collector the rules say they could not check, and find nothing.
expect "not collected" "$(rules --root "$IB_FIX/port-down" --only pcie --window 0)" ""
check '[.not_checked[] | select(.rule | startswith("ib.")) | "\(.rule): \(.reason)"]' \
    '["ib.port-down: ib collector not run", "ib.rate-low: ib collector not run", "ib.errors: ib collector not run", "ib.peermem-missing: ib collector not run"]'
# With one reading, growth cannot be judged: ib.errors says so.
rules --root "$IB_FIX/healthy" --only ib,pcie --window 0 >/dev/null
check '[.not_checked[] | select(.rule == "ib.errors") | .reason]' '["needs a sampling window (--window)"]'

# check --from a live snapshot judges exactly as the live check.
"$GPUDOCTOR" snapshot --root "$IB_FIX/port-down" --only ib,pcie --window 0 >"$TMP/pd.json"
live=$("$GPUDOCTOR" check --root "$IB_FIX/port-down" --only ib,pcie --window 0 2>&1 || true)
from=$("$GPUDOCTOR" check --from "$TMP/pd.json" 2>&1 || true)
expect "check --from equals the live check" "$from" "$live"

# serve exports each port: active, rate, counters; the module where it matters. promtool-clean.
prom=$TMP/ib.prom
GPUDOCTOR_STATE_DIR=off "$GPUDOCTOR" serve --once --root "$IB_FIX/port-down" --only ib,pcie --window 0 >"$prom" 2>"$TMP/err" ||
    { echo "FAIL: serve --once exited with $?"; cat "$TMP/err"; failures=$((failures + 1)); }
series() {
    local got
    got=$(grep -E "^$1" "$prom" | tr '\n' ';' || true)
    expect "series $1" "$got" "$2"
}
series 'gpudoctor_ib_port_active\{device="mlx5_[12]"' \
    'gpudoctor_ib_port_active{device="mlx5_1",port="1",link_layer="infiniband"} 0;gpudoctor_ib_port_active{device="mlx5_2",port="1",link_layer="infiniband"} 0;'
series 'gpudoctor_ib_port_rate_bytes_per_second\{device="mlx5_[04]"' \
    'gpudoctor_ib_port_rate_bytes_per_second{device="mlx5_0",port="1",link_layer="infiniband"} 5e+10;gpudoctor_ib_port_rate_bytes_per_second{device="mlx5_4",port="1",link_layer="ethernet"} 1.25e+10;'
series 'gpudoctor_ib_port_errors_total\{device="mlx5_0",port="1",link_layer="infiniband",counter="symbol_error"\}' \
    'gpudoctor_ib_port_errors_total{device="mlx5_0",port="1",link_layer="infiniband",counter="symbol_error"} 3;'
series 'gpudoctor_ib_port_receive_bytes_total\{device="mlx5_0"' \
    'gpudoctor_ib_port_receive_bytes_total{device="mlx5_0",port="1",link_layer="infiniband"} 493827156048;'
series 'gpudoctor_ib_peermem_loaded' 'gpudoctor_ib_peermem_loaded 1;'
if command -v promtool >/dev/null; then
    promtool check metrics <"$prom" || { echo "FAIL: promtool check metrics"; failures=$((failures + 1)); }
fi
# Without InfiniBand there is no ib series at all.
GPUDOCTOR_STATE_DIR=off "$GPUDOCTOR" serve --once --root "$TMP/empty" --only ib --window 0 >"$prom" 2>/dev/null || true
series 'gpudoctor_ib_' ''

finish
