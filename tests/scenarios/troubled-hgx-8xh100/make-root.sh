#!/usr/bin/env bash
# Regenerates root/ and scenarios/troubled-hgx-8xh100.json (scenario.json here links to it): the
# troubled 8 x H100 HGX server (NVSwitch baseboard,
# eight InfiniBand NICs) of the demo set, to go with the NVML simulator. Its troubles live between
# the GPUs: a fatal SXid on one NVSwitch an hour ago, after which the driver asks for GPU 2 to be
# drained and reset; two NVLinks of GPU 5 down; errors in the Fabric Manager log since it started;
# an InfiniBand port down (Polling) and GPUDirect RDMA (nvidia_peermem) not loaded; an 8-GPU
# training job started with NCCL_P2P_DISABLE=1 and NCCL_IB_DISABLE=1 (from a debugging session).
# Fabric Manager itself runs, at the driver's version.
#
# The host's own files (CPU, memory, disks, the driver's version files, users) are those of the
# troubled-8xh100 case, copied from its root/ (regenerate that first); the InfiniBand tree is
# tests/fixtures/ib/port-down's (five NICs under one switch, mlx5_3 down), the NVSwitches and
# Fabric Manager's package, unit and log tests/fixtures/fabric/hgx's. Boot and clock as
# troubled-8xh100: the tree's clock reads 2026-12-02T09:40:00.5Z.
set -euo pipefail
cd "$(dirname "$0")"
fix=../../fixtures
host=../troubled-8xh100/root
HZ=100
rm -rf root
mkdir -p root/proc root/sys root/var/log root/etc
# the host
cp -a "$host/etc/passwd" root/etc/
for f in stat uptime loadavg meminfo vmstat diskstats pressure sys self driver; do
    cp -a "$host/proc/$f" root/proc/
done
cp -a "$host/sys/block" "$host/sys/module" root/sys/
mkdir -p root/home root/tmp root/data
touch root/tmp/.keep
# InfiniBand: five NICs, mlx5_3 down; nvidia_peermem not loaded
cp -a "$fix/ib/port-down/sys/." root/sys/
cp -a "$fix/ib/peermem-missing/proc/modules" root/proc/modules
# NVSwitches on the bus, Fabric Manager's package, program, unit, configuration and log
for a in c5 c6 c7 c8; do # the four NVSwitches (bridge class 0x068000), behind their own root port
    d=root/sys/devices/pci0000:c0/0000:c0:01.0/0000:$a:00.0
    mkdir -p "$d"
    printf '0x068000\n' >"$d/class"
    printf '0x10de\n' >"$d/vendor"
    printf '0x22a3\n' >"$d/device"
    ln -sfn "../../../devices/pci0000:c0/0000:c0:01.0/0000:$a:00.0" "root/sys/bus/pci/devices/0000:$a:00.0"
done
cp -a "$fix/fabric/hgx/usr" "$fix/fabric/hgx/var" "$fix/fabric/hgx/etc" root/
rm -rf root/proc/77 root/proc/4242
cat >>root/var/log/fabricmanager.log <<'EOF'
[Dec 02 2025 08:39:57] [ERROR] [tid 4242] detected NVSwitch fatal error 24007 on NVSwitch pci bus id 00000000:c7:00.0 physical id 3 port 44
[Dec 02 2025 08:39:57] [ERROR] [tid 4242] NVSwitch port 44 on NVSwitch physical id 3 is reset and the partition's GPUs need a reset
EOF

# The kernel log: the driver's load, then the fatal SXid on the NVSwitch at c7:00.0.
cat >root/var/log/kern.log <<'EOF'
Dec  2 06:00:05 hgx-node-04 kernel: [    5.123456] nvidia: loading out-of-tree module taints kernel.
Dec  2 06:00:06 hgx-node-04 kernel: [    6.234567] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024
Dec  2 06:00:07 hgx-node-04 kernel: [    7.345678] nvidia-nvswitch: Probing device 0000:c7:00.0, Vendor Id = 0x10de, Device Id = 0x22a3, Class = 0x68000
Dec  2 08:39:57 hgx-node-04 kernel: [ 9597.100001] nvidia-nvswitch3: SXid (PCI:0000:c7:00.0): 24007, Fatal, Link 44 sourcetrack timeout error (First)
Dec  2 08:39:57 hgx-node-04 kernel: [ 9597.100002] nvidia-nvswitch3: SXid (PCI:0000:c7:00.0): 24007, Severity 1 Engine instance 44 Sub-engine instance 00
Dec  2 08:39:57 hgx-node-04 kernel: [ 9597.100003] nvidia-nvswitch3: SXid (PCI:0000:c7:00.0): 24007, Data {0x00000000, 0x00000000, 0x00000000}
EOF

# stat PID COMM STATE PPID UTIME STIME THREADS STARTTIME(ticks) RSS_PAGES
stat_line() {
    printf '%s (%s) %s %s %s %s 0 -1 4194560 1200 0 3 0 %s %s 0 0 20 0 %s 0 %s 1234567890 %s 18446744073709551615 94000000000000 94000000100000 140720000000000 0 0 0 0 0 0 0 0 0 17 3 0 0 0 0 0 94000000200000 94000000300000 94000000400000 140720000001000 140720000001100 140720000001100 140720000002000 0\n' \
        "$1" "$2" "$3" "$4" "$1" "$1" "$5" "$6" "$7" "$8" "$9"
}

# proc PID COMM STATE PPID UID START_S CPU_S THREADS RSS_KB CWD CGROUP ENV -- ARGV...
# (ENV: extra NUL-separated variables, or "")
proc() {
    local pid=$1 comm=$2 state=$3 ppid=$4 uid=$5 start=$6 cpu=$7 thr=$8 rss=$9 cwd=${10} cg=${11} env=${12}
    shift 13
    local d=root/proc/$pid
    mkdir -p "$d/fd"
    stat_line "$pid" "$comm" "$state" "$ppid" $((cpu * HZ * 9 / 10)) $((cpu * HZ / 10)) "$thr" \
        $((start * HZ)) $((rss / 4)) >"$d/stat"
    {
        printf 'Name:\t%s\nUmask:\t0022\nState:\t%s\nPid:\t%s\nPPid:\t%s\n' "$comm" "$state" "$pid" "$ppid"
        printf 'Uid:\t%s\t%s\t%s\t%s\nGid:\t%s\t%s\t%s\t%s\n' "$uid" "$uid" "$uid" "$uid" "$uid" "$uid" "$uid" "$uid"
        printf 'NSpid:\t%s\nVmRSS:\t  %s kB\nThreads:\t%s\nCpus_allowed_list:\t0-111\n' "$pid" "$rss" "$thr"
    } >"$d/status"
    printf '0::%s\n' "$cg" >"$d/cgroup"
    printf '%s' "$comm" >"$d/comm"
    : >"$d/cmdline"
    for a in "$@"; do printf '%s\0' "$a" >>"$d/cmdline"; done
    printf 'PATH=/usr/local/bin:/usr/bin:/bin\0HOME=%s\0%b' "$cwd" "$env" >"$d/environ"
    : >"$d/maps"
    ln -sfn "/usr/bin/$comm" "$d/exe"
    ln -sfn "$cwd" "$d/cwd"
    mkdir -p "root$cwd"
    touch "root$cwd/.keep"
    ln -sfn /dev/null "$d/fd/0"
}

gpu() { # PID MINOR...
    local d=root/proc/$1 n=3
    shift
    ln -sfn /dev/nvidiactl "$d/fd/$n"
    ln -sfn /dev/nvidia-uvm "$d/fd/$((n + 1))"
    n=$((n + 2))
    for m in "$@"; do
        ln -sfn "/dev/nvidia$m" "$d/fd/$n"
        n=$((n + 1))
    done
}

proc 1 systemd S 0 0 0 60 1 12000 / /init.scope "" -- /sbin/init
proc 900 sshd S 1 0 3 4 1 8000 / /system.slice/ssh.service "" -- sshd: /usr/sbin/sshd -D
proc 2210 nv-fabricmanage S 1 0 3400 30 8 60000 / /system.slice/nvidia-fabricmanager.service "" -- \
    /usr/bin/nv-fabricmanager -c /usr/share/nvidia/nvswitch/fabricmanager.cfg
# erin: an 8-rank pre-training job (Slurm job 4411), launched with NCCL's fast paths off
NCCL='NCCL_P2P_DISABLE=1\0NCCL_IB_DISABLE=1\0NCCL_DEBUG=WARN\0'
proc 48200 torchrun S 1 1004 3600 30 4 900000 /home/erin/run /system.slice/slurmstepd.scope/job_4411/step_0/user/task_0 "$NCCL" -- \
    /usr/bin/python3 /usr/local/bin/torchrun --nproc_per_node=8 pretrain.py
for r in 0 1 2 3 4 5 6 7; do
    proc $((48211 + r)) python R 48200 1004 3610 $((30000 - r * 100)) 64 70000000 /home/erin/run \
        /system.slice/slurmstepd.scope/job_4411/step_0/user/task_0 "$NCCL" -- \
        /usr/bin/python3 -u pretrain.py --local-rank=$r
    gpu $((48211 + r)) "$r"
done

# The GPUs: healthy-8xh100's, each with 18 NVLinks to the four NVSwitches (version 6, NVLink 4.0)
# and the fabric registered; GPU 5's links 16 and 17 down; GPU 2's driver asks for a drain and
# a reset after the NVSwitch's fatal error.
jq 'del(.timeline) | .gpus |= map(del(.nvlinks) | . as $g | .nvlink = [range(18) as $l | {link: $l,
        active: (($g.index != 5) or ($l < 16)), version: 6,
        remote_pci_bus_id: ("00000000:C" + ((5 + ($l % 4)) | tostring) + ":00.0"),
        remote_type: "switch", crc_errors: 0, replay_errors: 0, recovery_errors: 0,
        tx_kib: 0, rx_kib: 0}]
      | .fabric = {state: "completed", status: 0, clique_id: 1,
                   cluster_uuid: "7f3c2a10-5b4e-4d21-9a8c-0e6b1f2d3c4e", health_mask: "0x00000000"}
      | .recovery_action = (if .index == 2 then "drain_and_reset" else "none" end))' \
    ../../../scenarios/healthy-8xh100.json >../../../scenarios/troubled-hgx-8xh100.json
ln -sfn ../../../scenarios/troubled-hgx-8xh100.json scenario.json
echo "root/ and scenarios/troubled-hgx-8xh100.json regenerated"
