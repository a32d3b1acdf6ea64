#!/usr/bin/env bash
# Regenerates root/: the host side of the troubled 8 x H100 server of `make demo`, to go with the
# NVML simulator's scenarios/troubled-8xh100.json (scenario.json here links to it). The processes
# are the ones docs/simulator.md lists for that scenario, with their users, commands and states;
# plus the host's /proc and the driver's kernel log. PCIe sysfs is left out (the simulator's GPUs
# have no devices under /sys), so the report says the PCIe collector was unavailable.
#
# Boot: 2026-12-02T06:00:00Z (btime 1796191200), 100 clock ticks per second; uptime 13200.5 s, so
# the tree's clock reads 09:40:00.5Z, and gpudoctor judges it as of then (a --root other than / is
# judged on its own clock): the ages in the report are the same on any day (README's demo).
set -euo pipefail
cd "$(dirname "$0")"

BTIME=1796191200
HZ=100
rm -rf root
mkdir -p root/etc root/proc root/var/log root/proc/driver/nvidia root/sys/module/nvidia \
    root/sys/module/nvidia_uvm root/home root/tmp

cat >root/etc/passwd <<'EOF'
root:x:0:0:root:/root:/bin/bash
alice:x:1000:1000:Alice:/home/alice:/bin/bash
bob:x:1001:1001:Bob:/home/bob:/bin/bash
carol:x:1002:1002:Carol:/home/carol:/bin/bash
dave:x:1003:1003:Dave:/home/dave:/bin/bash
erin:x:1004:1004:Erin:/home/erin:/bin/bash
EOF

# The host: 64 CPUs, 2 TiB, no swap in use, quiet disks.
{
    printf 'cpu  %s\n' "9000000 2000 600000 140000000 30000 0 20000 0 0 0"
    for c in $(seq 0 63); do printf 'cpu%d 140000 30 9000 2200000 400 0 300 0 0 0\n' "$c"; done
    printf 'intr 123456789 0\nctxt 987654321\nbtime %s\nprocesses 812345\nprocs_running 12\nprocs_blocked 0\n' $BTIME
} >root/proc/stat
printf '13200.50 840000.00\n' >root/proc/uptime
printf '11.52 11.20 10.98 13/2143 61234\n' >root/proc/loadavg
cat >root/proc/meminfo <<'EOF'
MemTotal:       2113305600 kB
MemFree:        1402329088 kB
MemAvailable:   1688208384 kB
Buffers:          204800 kB
Cached:         280000000 kB
SwapCached:            0 kB
SwapTotal:       8388604 kB
SwapFree:        8388604 kB
EOF
printf 'pswpin 0\npswpout 0\n' >root/proc/vmstat
cat >root/proc/diskstats <<'EOF'
 259       0 nvme0n1 8123456 1024 912345678 2345678 456789 2048 98765432 345678 0 1234567 2691356 0 0 0 0 12345 6789
   8       0 sda 12345 10 987654 45678 6789 20 345678 12345 0 56789 58023 0 0 0 0 0 0
EOF
mkdir -p root/proc/pressure root/proc/sys/kernel
printf 'some avg10=1.20 avg60=1.05 avg300=0.98 total=123456789\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n' >root/proc/pressure/cpu
printf 'some avg10=0.00 avg60=0.00 avg300=0.00 total=12345\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=2345\n' >root/proc/pressure/memory
printf 'some avg10=0.31 avg60=0.22 avg300=0.20 total=3456789\nfull avg10=0.10 avg60=0.08 avg300=0.07 total=1234567\n' >root/proc/pressure/io
printf '6.1.0-28-amd64\n' >root/proc/sys/kernel/osrelease
mkdir -p root/proc/self root/sys/block/nvme0n1/queue root/sys/block/sda/queue
cat >root/proc/self/mountinfo <<'EOF'
22 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw
23 22 0:21 / /tmp rw,nosuid,nodev shared:5 - tmpfs tmpfs rw,size=67108864k
24 22 259:3 / /home rw,relatime shared:6 - ext4 /dev/nvme0n1p3 rw
25 22 8:1 / /data rw,relatime shared:7 - xfs /dev/sda1 rw
EOF
printf '0\n' >root/sys/block/nvme0n1/queue/rotational
printf '1\n' >root/sys/block/sda/queue/rotational

# The driver.
printf 'NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\nGCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n' \
    >root/proc/driver/nvidia/version
printf '550.54.15\n' >root/sys/module/nvidia/version
printf '550.54.15\n' >root/sys/module/nvidia_uvm/version

# The kernel log: GPU 2's double-bit ECC error an hour ago (with its row remap), the old job's
# stop is not logged (SIGSTOP never is).
cat >root/var/log/kern.log <<'EOF'
Dec  2 06:00:05 gpu-node-17 kernel: [    5.123456] nvidia: loading out-of-tree module taints kernel.
Dec  2 06:00:06 gpu-node-17 kernel: [    6.234567] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024
Dec  2 08:41:02 gpu-node-17 kernel: [ 9662.100001] NVRM: GPU at PCI:0000:3a:00: GPU-a2e84c57-3b90-6f1d-c7a5-8e4b2d0f6a32
Dec  2 08:41:02 gpu-node-17 kernel: [ 9662.100002] NVRM: GPU Board Serial Number: 1652823054673
Dec  2 08:41:02 gpu-node-17 kernel: [ 9662.100003] NVRM: Xid (PCI:0000:3a:00): 48, pid=50322, name=python, Double Bit ECC Error
Dec  2 08:41:02 gpu-node-17 kernel: [ 9662.100104] NVRM: Xid (PCI:0000:3a:00): 63, pid=50322, name=python, Row Remapper: New row marked for remapping, reset gpu to activate.
EOF

# stat PID COMM STATE PPID UTIME STIME THREADS STARTTIME(ticks) RSS_PAGES
stat_line() {
    printf '%s (%s) %s %s %s %s 0 -1 4194560 1200 0 3 0 %s %s 0 0 20 0 %s 0 %s 1234567890 %s 18446744073709551615 94000000000000 94000000100000 140720000000000 0 0 0 0 0 0 0 0 0 17 3 0 0 0 0 0 94000000200000 94000000300000 94000000400000 140720000001000 140720000001100 140720000001100 140720000002000 0\n' \
        "$1" "$2" "$3" "$4" "$1" "$1" "$5" "$6" "$7" "$8" "$9"
}

# proc PID COMM STATE PPID UID START_S_AFTER_BOOT CPU_S THREADS RSS_KB CWD CGROUP -- ARGV...
proc() {
    local pid=$1 comm=$2 state=$3 ppid=$4 uid=$5 start=$6 cpu=$7 thr=$8 rss=$9 cwd=${10} cg=${11}
    shift 12
    local d=root/proc/$pid
    mkdir -p "$d/fd"
    stat_line "$pid" "$comm" "$state" "$ppid" $((cpu * HZ * 9 / 10)) $((cpu * HZ / 10)) "$thr" \
        $((start * HZ)) $((rss / 4)) >"$d/stat"
    {
        printf 'Name:\t%s\nUmask:\t0022\nState:\t%s\nPid:\t%s\nPPid:\t%s\n' "$comm" "$state" "$pid" "$ppid"
        printf 'Uid:\t%s\t%s\t%s\t%s\nGid:\t%s\t%s\t%s\t%s\n' "$uid" "$uid" "$uid" "$uid" "$uid" "$uid" "$uid" "$uid"
        printf 'NSpid:\t%s\nVmRSS:\t  %s kB\nThreads:\t%s\n' "$pid" "$rss" "$thr"
    } >"$d/status"
    printf '0::%s\n' "$cg" >"$d/cgroup"
    : >"$d/cmdline"
    for a in "$@"; do printf '%s\0' "$a" >>"$d/cmdline"; done
    printf 'PATH=/usr/local/bin:/usr/bin:/bin\0HOME=%s\0' "$cwd" >"$d/environ"
    : >"$d/maps"
    ln -sfn "/usr/bin/$comm" "$d/exe"
    ln -sfn "$cwd" "$d/cwd"
    mkdir -p "root$cwd"
    touch "root$cwd/.keep" # git keeps no empty directory; free space is looked up here
    ln -sfn /dev/null "$d/fd/0"
}

# gpu PID MINOR...: the process has /dev/nvidiactl, /dev/nvidia-uvm and these devices open
gpu() {
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

session() { printf '/user.slice/user-%s.slice/session-%s.scope' "$1" "$2"; }

proc 1 systemd S 0 0 0 60 1 12000 / /init.scope -- /sbin/init
proc 900 sshd S 1 0 3 4 1 8000 / /system.slice/ssh.service -- sshd: /usr/sbin/sshd -D

# alice: an old training job, stopped with Ctrl-Z in a shell she left (GPU 3).
proc 39080 bash S 900 1000 2400 3 1 5000 /home/alice "$(session 1000 12)" -- -bash
proc 39104 python T 39080 1000 2460 5200 24 41000000 /home/alice/llm "$(session 1000 12)" -- \
    python train.py --config configs/7b.yaml --lr 3e-4
gpu 39104 3

# bob: an exploration notebook on GPU 0.
proc 50900 jupyter-lab S 1 1001 6000 40 8 900000 /home/bob /user.slice/user-1001.slice/user@1001.service/app.slice/jupyter.service -- \
    /home/bob/.venv/bin/python /home/bob/.venv/bin/jupyter-lab --no-browser --port 8888
proc 50990 python S 50900 1001 6100 700 30 12000000 /home/bob/explore /user.slice/user-1001.slice/user@1001.service/app.slice/jupyter.service -- \
    /home/bob/.venv/bin/python -m ipykernel_launcher -f /home/bob/.local/share/jupyter/runtime/kernel-7f3a.json
gpu 50990 0

# carol: a training job on GPU 0 too, leaking memory.
proc 51300 bash S 900 1002 6500 1 1 5000 /home/carol "$(session 1002 14)" -- -bash
proc 51377 python R 51300 1002 6560 6400 40 52000000 /home/carol/detr "$(session 1002 14)" -- \
    python train.py --data /data/coco --epochs 50
gpu 51377 0

# dave: a 2-GPU fine-tuning job (GPUs 1 and 2).
proc 50300 torchrun S 1 1003 5800 20 4 900000 /home/dave/ft "$(session 1003 15)" -- \
    /usr/bin/python3 /home/dave/.local/bin/torchrun --nproc_per_node=2 finetune.py
proc 50321 python R 50300 1003 5810 14000 48 60000000 /home/dave/ft "$(session 1003 15)" -- \
    /usr/bin/python3 -u finetune.py --local-rank=0
proc 50322 python R 50300 1003 5810 13900 48 60000000 /home/dave/ft "$(session 1003 15)" -- \
    /usr/bin/python3 -u finetune.py --local-rank=1
gpu 50321 1
gpu 50322 2

# erin: a 4-rank job on GPUs 4-7, started by Slurm.
proc 48200 torchrun S 1 1004 3600 30 4 900000 /home/erin/run /system.slice/slurmstepd.scope/job_4411/step_0/user/task_0 -- \
    /usr/bin/python3 /usr/local/bin/torchrun --nproc_per_node=4 pretrain.py
for r in 0 1 2 3; do
    proc $((48215 + r)) python R 48200 1004 3610 $((30000 - r * 100)) 64 70000000 /home/erin/run \
        /system.slice/slurmstepd.scope/job_4411/step_0/user/task_0 -- \
        /usr/bin/python3 -u pretrain.py --local-rank=$r
    gpu $((48215 + r)) $((4 + r))
done

touch root/tmp/.keep
echo "root/ regenerated"
