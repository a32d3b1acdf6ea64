#!/usr/bin/env bash
# The driver and kernel-log collectors through the built binary, on fixture trees: /dev/kmsg as a
# file, the fallback to /var/log/kern.log, what is decoded inside Blackwell Xid messages, the open
# kernel module, and no module at all.
set -euo pipefail
command -v jq >/dev/null || { echo "jq not installed"; exit 77; }
FIX="$SRC/tests/fixtures"
OUT=$(mktemp)
ROOT=$(mktemp -d)
trap 'rm -rf "$OUT" "$ROOT"' EXIT
export TZ=UTC
fail=0

snap() { "$GPUDOCTOR" snapshot --root "$1" --only "$2" -o "$OUT"; }
check() {
    local got
    got=$(jq -c "$1" "$OUT")
    if [ "$got" != "$2" ]; then
        echo "FAIL: $1: got $got, want $2" >&2
        fail=1
    fi
}

snap "$FIX/klog/kmsg" kernel_log
check '.driver.klog_source' '"/dev/kmsg"'
check '.driver.events | length' '7'
check '[.driver.events[] | .kind]' '["other_nvrm","gpu_uuid","xid","xid","xid","fallen_off_bus","oom_kill"]'
check '.driver.events[2] | [.xid, .pci, .pid, .name, .uuid, .time_ms, .uptime_us]' \
    '[48,"0000:3b:00",4121,"python3","GPU-5a8e6c4e-1c4f-4b1d-9c6e-2f9d3a7b8c01",1796203512000,372000003]'
check '.driver.events[3] | [.xid, .caused_by_xid]' '[45,48]'
check '.driver.events[6] | [.pid, .name, .rss_bytes]' '[9001,"python",2097152]'
check '.driver.klog_unparsed' '1'
check '.collectors.kernel_log.state' '"partial"'
check '.collectors.kernel_log.notes | length' '2'

snap "$FIX/klog/fallback" kernel_log
check '.driver.klog_source' '"/var/log/kern.log"'
check '[.driver.events[] | .kind]' '["xid","xid","xid","hung_task","hung_task","oom_kill","oom_kill","oom_kill"]'
check '.driver.events[3] | [.name, .pid, .blocked_s]' '["nvidia-smi",7711,120]'
check '.collectors.kernel_log.notes[0]' \
    '"read /var/log/kern.log instead of the kernel'"'"'s own log (/dev/kmsg: No such file or directory)"'

# A Blackwell node's log as /var/log/kern.log: the decoded fields reach the snapshot.
mkdir -p "$ROOT/var/log"
cp "$FIX/klog/gen-580-blackwell.log" "$ROOT/var/log/kern.log"
snap "$ROOT" kernel_log
check '.driver.events | length' '13'
check '.driver.events[2] | [.xid, .nvlink_unit, .nvlink_fatal, .nvlink_link, .nvlink_intrinfo, .nvlink_error_status]' \
    '[145,"RLW_RXPIPE",false,13,"0x0409a0c2","0x00000008"]'
check '.driver.events[4] | [.nvlink_unit, .nvlink_fatal, .nvlink_link]' '["NETIR",true,-1]'
check '.driver.events[6] | [.xid, .pid, .name, .caused_by_xid]' '[45,1818990,"python3",149]'
check '[.driver.events[] | select(.xid == 154) | [.recovery_action_prev, .recovery_action]]' \
    '[["none","drain_p2p"],["drain_p2p","gpu_reset"],["none","drain_and_reset"],["drain_and_reset","node_reboot"]]'
check '.driver.events[9] | [.xid, .gpu_instance, .compute_instance, .reset_required, .drain_reset_required]' \
    '[94,2,0,false,false]'
check '.driver.events[10] | [.xid, .reset_required, .drain_reset_required]' '[95,true,true]'
check '.driver.events[2] | [.recovery_action, .caused_by_xid, .reset_required]' '[null,null,null]'
check '.driver.klog_unparsed' '0'

# A host's own memory errors (EDAC, firmware records, machine check, memory failure) reach the
# snapshot and make host.memory-ecc critical without an EDAC driver, naming the DIMMs and the
# process the kernel killed; the lookback (klog_max_age_h) decides whether they count.
cp "$FIX/klog/host-memory.log" "$ROOT/var/log/kern.log"
snap "$ROOT" kernel_log
check '[.driver.events[] | select(.kind == "host_memory_error") | .mem_source]' \
    '["edac","edac","edac","apei","apei","mce","memory_failure","memory_failure","apei"]'
check '.driver.events[4] | [.dimm, .mem_count, .message]' \
    '["NODE 4 CPU1_DIMM_A1",1,"APEI memory error, severity recoverable"]'
check '.driver.events[7] | [.pid, .name]' '[4121,"pt_main_thread"]'
check '.driver | [.klog_mem_uncorrected, .klog_mem_corrected]' '[10,5]'
cp "$OUT" "$ROOT/host-memory.json"
"$GPUDOCTOR" check --from "$ROOT/host-memory.json" --set klog_max_age_h=0 --json >"$OUT" || true
check '[.findings[] | select(.id == "host.memory-ecc") | .severity]' '["critical"]'
check '.findings[] | select(.id == "host.memory-ecc") | .title' \
    '"Host memory: uncorrectable errors in the kernel log, on CPU_SrcID#1_MC#0_Chan#0_DIMM#0, DIMM_B2, DIMM_C3, NODE 4 CPU1_DIMM_A1"'
check '[.findings[] | select(.id == "host.memory-ecc") | .evidence[] | select(test("^the kernel killed"))]' \
    '["the kernel killed pt_main_thread (pid 4121) for reading the bad memory (SIGBUS)"]'
"$GPUDOCTOR" check --from "$ROOT/host-memory.json" --json >"$OUT" || true
check '[.findings[] | select(.id == "host.memory-ecc")] | length' '0'

snap "$FIX/klog/none" kernel_log
check '.collectors.kernel_log.state' '"unavailable"'
check '.driver.klog_records' 'null'

snap "$FIX/driver/open" driver
check '.collectors.driver.state' '"ok"'
check '.driver | [.module_loaded, .module_version, .module_flavor, .sysfs_version, .uvm_loaded]' \
    '[true,"575.57.08","open","575.57.08",false]'

snap "$FIX/driver/proprietary" driver
check '.driver | [.module_version, .module_flavor, .uvm_loaded]' '["550.54.14","proprietary",true]'

snap "$FIX/driver/none" driver
check '.collectors.driver | [.state, .detail]' '["unavailable","no NVIDIA kernel module loaded"]'
check '.driver.module_loaded' 'false'

exit $fail
