#!/usr/bin/env bash
# The host and PCIe sections on the machine running the tests: filled, and agreeing with what
# the system's own tools say.
. "$SRC/tests/fixtures/host/e2e.bash"
[ -r /proc/stat ] || { echo "SKIP: no /proc here"; exit 77; }

snap / --only host,pcie --window 300ms
check '.collectors.host.state | IN("ok", "partial")' 'true'
check '.host.cpus' "$(getconf _NPROCESSORS_ONLN)"
check '.host.kernel_release' "\"$(uname -r)\""
check '.host.mem_total_bytes' "$(awk '/^MemTotal:/ { printf "%.0f", $2 * 1024 }' /proc/meminfo)"
check '.host.uptime_s > 0' 'true'
check '.host.load1 >= 0' 'true'
# A 300 ms window on a live system: the CPU shares add up to 100.
check '.host.cpu_user_pct + .host.cpu_system_pct + .host.cpu_iowait_pct + .host.cpu_steal_pct + .host.cpu_idle_pct | . > 99.9 and . < 100.1' 'true'
check '.host.swap_in_pages_per_s >= 0' 'true'
check '[.host.filesystems[].paths[]] | index("/") != null and index("/tmp") != null' 'true'
check '.host.filesystems[0].avail_bytes <= .host.filesystems[0].total_bytes' 'true'
check '[.host.disks[].name | select(test("^(loop|ram|zram)"))]' '[]'
# gpudoctor's own soft limit on open files: this shell's, which it inherits
check '.host.open_files_limit' "$(ulimit -n | sed 's/^unlimited$/"unlimited"/')"
# ... and on locked memory: ulimit -l counts KiB, the snapshot bytes
memlock=$(ulimit -l)
if [ "$memlock" = unlimited ]; then
    check '.host.memlock_limit' '"unlimited"'
else
    check '.host.memlock_limit' "$((memlock * 1024))"
fi
# suspends since boot: the kernel's own count, or unknown where it keeps none
if [ -r /sys/power/suspend_stats/success ]; then
    check '.host.suspend_count' "$(cat /sys/power/suspend_stats/success)"
else
    check '.host.suspend_count' 'null'
fi
# network interfaces up (or of unknown state), lo left out, as sysfs lists them
if [ -d /sys/class/net ]; then
    want=$(for d in /sys/class/net/*; do
        n=${d##*/}
        [ "$n" = lo ] && continue
        case "$(cat "$d/operstate" 2>/dev/null)" in up | unknown) echo "$n" ;; esac
    done | sort | paste -sd' ' -)
    check '.host.net_up | split(" ") | map(select(. != "")) | sort | join(" ")' "\"$want\""
fi
# /dev/shm as df sees it (its size does not move; what is free may)
if [ -d /dev/shm ] && shm=$(df -B1 --output=size /dev/shm 2>/dev/null | tail -1); then
    check '.host.shm_total_bytes' "$((shm))"
    check '.host.shm_avail_bytes <= .host.shm_total_bytes' 'true'
fi
if [ -r /proc/pressure/cpu ] && cat /proc/pressure/cpu >/dev/null 2>&1; then
    check '.host.psi_cpu_some_window_pct >= 0' 'true'
else
    check '.host.psi_cpu_some_avg10_pct' 'null'
fi

# PCIe: a machine without an NVIDIA GPU says so plainly; one with GPUs lists them.
if [ ! -d /sys/bus/pci/devices ]; then
    check '.collectors.pcie.state' '"unavailable"'
elif grep -qs '^0x10de' /sys/bus/pci/devices/*/vendor &&
    grep -l '^0x10de' /sys/bus/pci/devices/*/vendor 2>/dev/null | sed 's/vendor$/class/' | xargs grep -qs '^0x03'; then
    check '.pcie.gpus | length > 0' 'true'
else
    check '.collectors.pcie.state' '"ok"'
    check '.collectors.pcie.detail' '"no NVIDIA PCI device in /sys/bus/pci/devices"'
    check '.pcie.gpus' '[]'
    check '.pcie.devices_scanned' "$(ls /sys/bus/pci/devices | wc -l)"
fi

finish
