#!/usr/bin/env bash
# The driver and kernel-log collectors through the built binary, on fixture trees: /dev/kmsg as a
# file, the fallback to /var/log/kern.log, the open kernel module, and no module at all.
set -euo pipefail
command -v jq >/dev/null || { echo "jq not installed"; exit 77; }
FIX="$SRC/tests/fixtures"
OUT=$(mktemp)
trap 'rm -f "$OUT"' EXIT
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
