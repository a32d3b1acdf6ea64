#!/usr/bin/env bash
# NVSwitches and Fabric Manager through the command line: what the fabric collector reads from the
# HGX fixture tree (tests/fixtures/fabric/hgx) and from copies changed for a story, SXid lines of a
# kernel log, the NVSwitch driver's view (/proc/driver/nvidia-nvswitch), the rules' findings on
# each live tree, and the causal order on the fm-version case (the version mismatch first,
# explaining Fabric Manager not running, which explains the GPUs that never joined the fabric)
# and on the switch-not-initialized case.
. "$SRC/tests/fixtures/host/e2e.bash"
HGX=$SRC/tests/fixtures/fabric/hgx

snap "$HGX" --only fabric
check '.collectors.fabric | [.state, .detail, .notes]' '["ok", null, []]'
check '[.fabric.switches[].pci_address]' '["0000:c5:00.0","0000:c6:00.0","0000:c7:00.0","0000:c8:00.0"]'
check '.fabric | [.fm_binary, .fm_packaged, .fm_package, .fm_package_version, .fm_version, .fm_version_from]' \
    '[true, true, "nvidia-fabricmanager-550", "550.54.15-1", "550.54.15", "dpkg"]'
check '.fabric | [.fm_running, .fm_pid, .fm_enabled, .log_path, .log_started, .log_errors, .log_lines]' \
    '[true, 4242, true, "/var/log/fabricmanager.log", true, 0, []]'
check '[.fabric.nvswitch_proc, [.fabric.switches[] | [.driver_bound, .bios_version]]]' \
    '["present", [[true,"96.10.6d.00.01"],[true,"96.10.6d.00.01"],[true,"96.10.6d.00.01"],[true,"96.10.6d.00.01"]]]'

# A machine without NVSwitch and without Fabric Manager: only the bus is read.
mkdir -p "$TMP/plain/sys/bus/pci/devices"
snap "$TMP/plain" --only fabric
check '.collectors.fabric | [.state, .detail]' '["ok", "no NVSwitch and no Fabric Manager"]'
check '.fabric | [.switches, .fm_binary, .fm_running, .log_errors, .nvswitch_proc]' '[[], false, null, null, null]'

# rules ARGS...: the "rule object severity" lines of gpudoctor check --json for the fabric rules.
rules() { rule_findings fabric. "$@"; }

expect "healthy HGX" "$(rules --root "$HGX" --only fabric,kernel_log --window 0)" ""

cp -a "$HGX" "$TMP/stopped"
rm -r "$TMP/stopped/proc/4242"
expect "stopped" "$(rules --root "$TMP/stopped" --only fabric,kernel_log --window 0)" \
    "fabric.fm-not-running nvidia-fabricmanager critical"

cp -a "$HGX" "$TMP/missing"
rm -r "$TMP/missing/proc/4242" "$TMP/missing/usr/bin/nv-fabricmanager"
sed -i 's/^Package: nvidia-fabricmanager-550$/Package: something-else/' "$TMP/missing/var/lib/dpkg/status"
expect "not installed" "$(rules --root "$TMP/missing" --only fabric,kernel_log --window 0)" \
    "fabric.fm-not-running nvidia-fabricmanager critical"
check '.findings[0].title' '"Fabric Manager is not installed on this NVSwitch system: CUDA cannot use the GPUs"'

# One NVSwitch the NVSwitch driver did not take (its probe failed): no entry in its view.
cp -a "$HGX" "$TMP/noprobe"
rm -r "$TMP/noprobe/proc/driver/nvidia-nvswitch/devices/0000:c7:00.0"
expect "switch not taken" "$(rules --root "$TMP/noprobe" --only fabric,kernel_log --window 0)" \
    "fabric.switch-not-initialized nvidia-nvswitch critical"
check '.findings[0].title' '"NVSwitch 0000:c7:00.0 was not initialized by its driver: Fabric Manager cannot configure the NVLink fabric"'
check '[.findings[0].evidence[] | select(startswith("the driver took the others"))]' \
    '["the driver took the others, with the BIOS versions it read: 0000:c5:00.0 (96.10.6d.00.01), 0000:c6:00.0 (96.10.6d.00.01), 0000:c8:00.0 (96.10.6d.00.01)"]'
check '.findings[0].fix[0:2]' \
    '["sudo dmesg -T | grep -i '"'"'nvidia-nvswitch'"'"'   # the probe of each NVSwitch, and why it failed", "lspci -k -s 0000:c7:00.0   # no \"Kernel driver in use\" line: nothing drives the switch"]'
# The nvidia module not loaded: no view, so which switches it took is not checked, never concluded.
rm -r "$TMP/noprobe/proc/driver"
expect "no driver view" "$(rules --root "$TMP/noprobe" --only fabric,kernel_log --window 0)" ""
check '[.not_checked[] | select(.rule == "fabric.switch-not-initialized") | .reason]' \
    '["no /proc/driver/nvidia-nvswitch (the nvidia module is not loaded, or its NVSwitch part did not start): which NVSwitches the driver took"]'
# A snapshot written before the view was read: not checked either.
jq 'del(.fabric.nvswitch_proc) | .fabric.switches |= map(del(.driver_bound, .bios_version))' \
    "$SRC/tests/scenarios/switch-not-initialized/snapshot.json" >"$TMP/old.json"
"$GPUDOCTOR" check --json --from "$TMP/old.json" >"$OUT" 2>"$TMP/err" || true
check '[.findings[] | select(.id == "fabric.switch-not-initialized")]' '[]'
check '[.not_checked[] | select(.rule == "fabric.switch-not-initialized") | .reason | startswith("the NVSwitch driver'"'"'s view")]' '[true]'

# A log with errors but no start line: they could be an earlier run's, so not judged, and said.
cp -a "$HGX" "$TMP/nostart"
printf '[x] [ERROR] [tid 7] something failed long ago\n' >"$TMP/nostart/var/log/fabricmanager.log"
expect "no start line" "$(rules --root "$TMP/nostart" --only fabric,kernel_log --window 0)" ""
check '[.not_checked[] | select(.rule == "fabric.fm-errors") | .reason]' \
    '["/var/log/fabricmanager.log has 1 error line but no start line (\"Fabric Manager version V is running\"): whether they are from the current run"]'

# SXid lines of the kernel log, one fatal: both switches reported, the fatal one first.
cp -a "$HGX" "$TMP/sxid"
mkdir -p "$TMP/sxid/dev"
printf '%s\n' \
    '3,1,5000000,-;nvidia-nvswitch1: SXid (PCI:0000:c6:00.0): 12028, Non-fatal, Link 21 egress non-posted PRIV error (First)' \
    '3,2,5000100,-;nvidia-nvswitch1: SXid (PCI:0000:c6:00.0): 12028, Data {0x00000000, 0x00000000}' \
    '3,3,6000000,-;nvidia-nvswitch2: SXid (PCI:0000:c7:00.0): 24007, Fatal, Link 36 sourcetrack timeout error' \
    '12,4,6000001,-;nvidia-nvswitch2: SXid (PCI:0000:c8:00.0): 24007, Fatal, Link 1 forged from user space' \
    >"$TMP/sxid/dev/kmsg"
snap "$TMP/sxid" --only kernel_log
check '[.driver.events[] | [.kind, .pci, .sxid, .sxid_fatal, .sxid_link]]' \
    '[["sxid","0000:c6:00",12028,false,21],["sxid","0000:c7:00",24007,true,36]]'
expect "SXids" "$(rules --root "$TMP/sxid" --only fabric,kernel_log --window 0)" \
    "fabric.sxid NVSwitch 0000:c7:00 critical,fabric.sxid NVSwitch 0000:c6:00 warning"
# The BIOS version the NVSwitch driver read goes with the SXids (a vendor's first question).
check '[.findings[0].evidence[] | select(startswith("the switch'"'"'s BIOS"))]' \
    '["the switch'"'"'s BIOS version is 96.10.6d.00.01 (read by its driver): give it with the SXids when you report them"]'

# serve exports the switches, Fabric Manager and the SXids by switch; promtool-clean.
prom=$TMP/fabric.prom
GPUDOCTOR_STATE_DIR=off "$GPUDOCTOR" serve --once --root "$TMP/sxid" --only fabric,kernel_log --window 0 >"$prom" 2>"$TMP/err" ||
    { echo "FAIL: serve --once exited with $?"; cat "$TMP/err"; failures=$((failures + 1)); }
expect "fabric metrics" "$(grep -E '^gpudoctor_(nvswitch|fabric_manager)' "$prom" | tr '\n' ';')" \
    'gpudoctor_nvswitches 4;gpudoctor_nvswitch_driver_bound{pci="0000:c5:00.0"} 1;gpudoctor_nvswitch_driver_bound{pci="0000:c6:00.0"} 1;gpudoctor_nvswitch_driver_bound{pci="0000:c7:00.0"} 1;gpudoctor_nvswitch_driver_bound{pci="0000:c8:00.0"} 1;gpudoctor_fabric_manager_running 1;gpudoctor_fabric_manager_info{version="550.54.15"} 1;gpudoctor_fabric_manager_log_errors 0;gpudoctor_nvswitch_sxid_errors_total{pci="0000:c6:00",fatal="false"} 1;gpudoctor_nvswitch_sxid_errors_total{pci="0000:c7:00",fatal="true"} 1;'
if command -v promtool >/dev/null; then
    promtool check metrics <"$prom" || { echo "FAIL: promtool check metrics"; failures=$((failures + 1)); }
fi
# A machine with neither: the switch count alone.
GPUDOCTOR_STATE_DIR=off "$GPUDOCTOR" serve --once --root "$TMP/plain" --only fabric --window 0 >"$prom" 2>/dev/null || true
expect "no fabric metrics" "$(grep -E '^gpudoctor_(nvswitch|fabric_manager)' "$prom" | tr '\n' ';')" 'gpudoctor_nvswitches 0;'

# A switch whose probe failed is 0; without the driver's view there is no series.
cp -a "$HGX" "$TMP/probe-metrics"
rm -r "$TMP/probe-metrics/proc/driver/nvidia-nvswitch/devices/0000:c6:00.0"
GPUDOCTOR_STATE_DIR=off "$GPUDOCTOR" serve --once --root "$TMP/probe-metrics" --only fabric --window 0 >"$prom" 2>/dev/null || true
expect "driver-bound metric" "$(grep -E '^gpudoctor_nvswitch_driver_bound' "$prom" | tr '\n' ';')" \
    'gpudoctor_nvswitch_driver_bound{pci="0000:c5:00.0"} 1;gpudoctor_nvswitch_driver_bound{pci="0000:c6:00.0"} 0;gpudoctor_nvswitch_driver_bound{pci="0000:c7:00.0"} 1;gpudoctor_nvswitch_driver_bound{pci="0000:c8:00.0"} 1;'
rm -r "$TMP/probe-metrics/proc/driver"
GPUDOCTOR_STATE_DIR=off "$GPUDOCTOR" serve --once --root "$TMP/probe-metrics" --only fabric --window 0 >"$prom" 2>/dev/null || true
expect "no driver-bound metric without the view" "$(grep -cE '^gpudoctor_nvswitch_driver_bound' "$prom" || true)" 0

# GPUs whose NVLinks reach NVSwitches this machine's bus does not show (a VM, an NVL72 compute
# tray): Fabric Manager is not judged here, and that is said.
jq '.fabric = {switches: [], fm_binary: false, fm_package: null, fm_package_version: null, log_path: null}
    | .collectors.fabric = {state: "ok", detail: "no NVSwitch and no Fabric Manager", notes: [], elapsed_us: 300}' \
    "$SRC/tests/scenarios/healthy-8gpu-nvlink/snapshot.json" >"$TMP/vm.json"
"$GPUDOCTOR" check --json --from "$TMP/vm.json" >"$OUT" 2>"$TMP/err" || true
check '[.findings[] | select(.id | startswith("fabric.fm"))]' '[]'
check '[.not_checked[] | select(.rule == "fabric.fm-not-running") | .reason | startswith("Fabric Manager: the NVSwitches the GPUs")]' '[true]'

# The causal order of the fm-version case.
"$GPUDOCTOR" check --json --from "$SRC/tests/scenarios/fm-version/snapshot.json" >"$OUT" 2>"$TMP/err" || true
check '[.findings[0].id, .findings[0].caused_by]' '["fabric.fm-version", null]'
check '[.findings[] | select(.id == "fabric.fm-not-running") | .caused_by]' '[1]'
check '[.findings[] | select(.id == "fabric.fm-errors") | .caused_by]' '[1]'
check '[.findings[] | select(.id == "fabric.gpu-not-ready") | .caused_by] | unique' '[2]'
check '.verdict | [.exit_code, (.text | startswith("10 critical, 1 warning — Fabric Manager 550.90.07 does not match driver 550.54.15"))]' '[2, true]'

# The causal order of the switch-not-initialized case: the switches first, the GPUs under them.
"$GPUDOCTOR" check --json --from "$SRC/tests/scenarios/switch-not-initialized/snapshot.json" >"$OUT" 2>"$TMP/err" || true
check '[.findings[0].id, .findings[0].caused_by, .findings[0].title]' \
    '["fabric.switch-not-initialized", null, "2 of 4 NVSwitches were not initialized by their driver (0000:c6:00.0, 0000:c7:00.0): Fabric Manager cannot configure the NVLink fabric"]'
check '[.findings[] | select(.id == "fabric.gpu-not-ready") | .caused_by] | unique' '[1]'
finish
