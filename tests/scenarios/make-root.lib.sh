#!/usr/bin/env bash
# Sourced by the make-root.sh of the live cases (*-live): helpers that write a fixture tree root/
# for `gpudoctor check --root root` next to an NVML simulator scenario, in the layout of
# troubled-8xh100/make-root.sh. Boot at 2026-12-02T06:00:00Z (btime 1796191200), 100 ticks/s.
set -euo pipefail
BTIME=1796191200
HZ=100

# host_base CPUS: passwd, an idle host's /proc (CPU, memory, no swap in use, quiet pressure and
# disks), the 550.54.15 driver; a make-root.sh overwrites what its story changes.
host_base() {
    local cpus=$1 c
    rm -rf root
    mkdir -p root/etc root/proc/pressure root/proc/sys/kernel root/proc/self root/proc/driver/nvidia \
        root/sys/module/nvidia root/sys/module/nvidia_uvm root/sys/block/nvme0n1/queue root/tmp
    cat >root/etc/passwd <<'EOP'
root:x:0:0:root:/root:/bin/bash
alice:x:1000:1000:Alice:/home/alice:/bin/bash
bob:x:1001:1001:Bob:/home/bob:/bin/bash
EOP
    {
        printf 'cpu  %s\n' "$((cpus * 40000)) 0 $((cpus * 4000)) $((cpus * 400000)) 500 0 200 0 0 0"
        for c in $(seq 0 $((cpus - 1))); do printf 'cpu%d 40000 0 4000 400000 5 0 2 0 0 0\n' "$c"; done
        printf 'intr 1234567 0\nctxt 7654321\nbtime %s\nprocesses 81234\nprocs_running 3\nprocs_blocked 0\n' $BTIME
    } >root/proc/stat
    printf '13200.50 %s.00\n' $((cpus * 12000)) >root/proc/uptime
    printf '2.10 2.05 2.00 3/812 61234\n' >root/proc/loadavg
    cat >root/proc/meminfo <<'EOP'
MemTotal:       1056652800 kB
MemFree:         800000000 kB
MemAvailable:    950000000 kB
Buffers:            102400 kB
Cached:          140000000 kB
SwapCached:              0 kB
SwapTotal:         8388604 kB
SwapFree:          8388604 kB
EOP
    printf 'pswpin 0\npswpout 0\n' >root/proc/vmstat
    printf ' 259       0 nvme0n1 812345 102 91234567 234567 45678 204 9876543 34567 0 123456 269135 0 0 0 0 1234 678\n' \
        >root/proc/diskstats
    printf 'some avg10=0.50 avg60=0.40 avg300=0.30 total=1234567\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n' >root/proc/pressure/cpu
    printf 'some avg10=0.00 avg60=0.00 avg300=0.00 total=1234\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=234\n' >root/proc/pressure/memory
    printf 'some avg10=0.20 avg60=0.20 avg300=0.10 total=345678\nfull avg10=0.05 avg60=0.05 avg300=0.02 total=123456\n' >root/proc/pressure/io
    printf '6.1.0-28-amd64\n' >root/proc/sys/kernel/osrelease
    printf '22 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw\n' >root/proc/self/mountinfo
    printf '0\n' >root/sys/block/nvme0n1/queue/rotational
    driver_version 550.54.15
    mkdir -p root/var/log
    printf '%s\n' \
        'Dec  2 06:00:05 gpu-node-21 kernel: [    5.123456] nvidia: loading out-of-tree module taints kernel.' \
        'Dec  2 06:00:06 gpu-node-21 kernel: [    6.234567] NVRM: loading NVIDIA UNIX x86_64 Kernel Module' \
        >root/var/log/kern.log
    touch root/tmp/.keep
}

# driver_version VERSION: the loaded kernel module.
driver_version() {
    printf 'NVRM version: NVIDIA UNIX x86_64 Kernel Module  %s  Tue Mar  5 22:23:56 UTC 2024\nGCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n' \
        "$1" >root/proc/driver/nvidia/version
    printf '%s\n' "$1" >root/sys/module/nvidia/version
    printf '%s\n' "$1" >root/sys/module/nvidia_uvm/version
}

# proc PID COMM STATE PPID UID START_S_AFTER_BOOT CPU_S THREADS RSS_KB CWD -- ARGV...
# PROC_CGROUP (default: the user's session) and PROC_ENV (more NUL-separated variables, as
# printf %b reads them) set for one call change its cgroup and environment.
proc() {
    local pid=$1 comm=$2 state=$3 ppid=$4 uid=$5 start=$6 cpu=$7 thr=$8 rss=$9 cwd=${10}
    shift 11
    local d=root/proc/$pid a
    mkdir -p "$d/fd"
    printf '%s (%s) %s %s %s %s 0 -1 4194560 1200 0 3 0 %s %s 0 0 20 0 %s 0 %s 1234567890 %s 18446744073709551615 94000000000000 94000000100000 140720000000000 0 0 0 0 0 0 0 0 0 17 3 0 0 0 0 0 94000000200000 94000000300000 94000000400000 140720000001000 140720000001100 140720000001100 140720000002000 0\n' \
        "$pid" "$comm" "$state" "$ppid" "$pid" "$pid" $((cpu * HZ * 9 / 10)) $((cpu * HZ / 10)) \
        "$thr" $((start * HZ)) $((rss / 4)) >"$d/stat"
    {
        printf 'Name:\t%s\nUmask:\t0022\nState:\t%s\nPid:\t%s\nPPid:\t%s\n' "$comm" "$state" "$pid" "$ppid"
        printf 'Uid:\t%s\t%s\t%s\t%s\nGid:\t%s\t%s\t%s\t%s\n' "$uid" "$uid" "$uid" "$uid" "$uid" "$uid" "$uid" "$uid"
        printf 'NSpid:\t%s\nVmRSS:\t  %s kB\nThreads:\t%s\n' "$pid" "$rss" "$thr"
    } >"$d/status"
    printf '%s\n' "$comm" >"$d/comm"
    printf '0::%s\n' "${PROC_CGROUP:-/user.slice/user-$uid.slice/session-3.scope}" >"$d/cgroup"
    : >"$d/cmdline"
    for a in "$@"; do printf '%s\0' "$a" >>"$d/cmdline"; done
    printf 'PATH=/usr/local/bin:/usr/bin:/bin\0HOME=%s\0%b' "$cwd" "${PROC_ENV:-}" >"$d/environ"
    : >"$d/maps"
    ln -sfn "/usr/bin/$comm" "$d/exe"
    ln -sfn "$cwd" "$d/cwd"
    mkdir -p "root$cwd"
    touch "root$cwd/.keep"
    ln -sfn /dev/null "$d/fd/0"
}

# gpu PID MINOR...: the process has /dev/nvidiactl, /dev/nvidia-uvm and these devices open.
gpu() {
    local d=root/proc/$1 n=5 m
    shift
    ln -sfn /dev/nvidiactl "$d/fd/3"
    ln -sfn /dev/nvidia-uvm "$d/fd/4"
    for m in "$@"; do
        ln -sfn "/dev/nvidia$m" "$d/fd/$n"
        n=$((n + 1))
    done
}

# pci PATH VENDOR DEVICE CLASS [file=value ...]: a device under sys/devices/PATH and its link in
# sys/bus/pci/devices, as the kernel lays them out; files are written as given (speed, width,
# AER counters), driver=NAME links the driver.
pci() {
    local path=$1 vendor=$2 device=$3 class=$4 dir addr kv key depth up
    shift 4
    dir=root/sys/devices/$path
    addr=$(basename "$path")
    mkdir -p "$dir" root/sys/bus/pci/devices
    printf '%s\n' "$vendor" >"$dir/vendor"
    printf '%s\n' "$device" >"$dir/device"
    printf '%s\n' "$class" >"$dir/class"
    ln -sfn "../../../devices/$path" "root/sys/bus/pci/devices/$addr"
    for kv in "$@"; do
        key=${kv%%=*}
        if [ "$key" = driver ]; then
            depth=$(($(tr -cd / <<<"$path" | wc -c) + 2))
            up=$(printf '../%.0s' $(seq "$depth"))
            ln -sfn "${up}bus/pci/drivers/${kv#*=}" "$dir/driver"
        else
            printf '%b\n' "${kv#*=}" >"$dir/$key"
        fi
    done
}
