#!/usr/bin/env bash
# Regenerates root/ for scenario.json: the 550.54.15 kernel module still loaded (/proc/driver/nvidia,
# /sys/module) after the packages were upgraded to 550.90.07, whose library (the simulator, with
# init_error LIB_RM_VERSION_MISMATCH) refuses to talk to it. The 8-rank job (pids 48211-48218)
# started before the upgrade still holds every GPU, as the device files it has open show.
set -euo pipefail
cd "$(dirname "$0")"
. ../make-root.lib.sh
host_base 64
mkdir -p root/home/alice/run
printf '%s\n' \
    'Dec  2 06:00:05 gpu-node-21 kernel: [    5.123456] nvidia: loading out-of-tree module taints kernel.' \
    'Dec  2 06:00:06 gpu-node-21 kernel: [    6.234567] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024' \
    'Dec  2 09:12:44 gpu-node-21 kernel: [11564.551201] NVRM: API mismatch: the client has the version 550.90.07, but' \
    'Dec  2 09:12:44 gpu-node-21 kernel: [11564.551202] NVRM: this kernel module has the version 550.54.15.  Please' \
    'Dec  2 09:12:44 gpu-node-21 kernel: [11564.551203] NVRM: make sure that this kernel module and all NVIDIA driver' \
    'Dec  2 09:12:44 gpu-node-21 kernel: [11564.551204] NVRM: components have the same version.' \
    >root/var/log/kern.log

proc 1 systemd S 0 0 0 60 1 12000 / -- /sbin/init
proc 48200 torchrun S 1 1000 3600 30 4 900000 /home/alice/run -- \
    /usr/bin/python3 /usr/local/bin/torchrun --nproc_per_node=8 pretrain.py
for r in 0 1 2 3 4 5 6 7; do
    proc $((48211 + r)) python R 48200 1000 3610 $((30000 - r * 100)) 64 70000000 /home/alice/run -- \
        /usr/bin/python3 -u pretrain.py --local-rank=$r
    gpu $((48211 + r)) "$r"
done
echo "root/ regenerated"
