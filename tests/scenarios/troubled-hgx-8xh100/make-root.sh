#!/usr/bin/env bash
# Regenerates root/ and scenarios/troubled-hgx-8xh100.json (scenario.json here links to it): the
# troubled 8 x H100 HGX server (NVSwitch baseboard, InfiniBand NICs) of the demo set, to go with
# the NVML simulator. Its troubles live between the GPUs: a fatal SXid on one NVSwitch an hour
# ago, after which the driver asks for GPU 2 to be drained and reset; two NVLinks of GPU 5 down;
# errors in the Fabric Manager log since it started; InfiniBand ports not active and GPUDirect
# RDMA (nvidia_peermem) not loaded; an 8-GPU training job started with NCCL_P2P_DISABLE=1 and
# NCCL_IB_DISABLE=1 (from a debugging session). Fabric Manager itself runs, at the driver's
# version.
#
# The host comes from ../make-root.lib.sh (host_base, proc, gpu, pci); the InfiniBand tree is
# tests/fixtures/ib/port-down's (five NICs under one switch, two ports not active), Fabric
# Manager's package, unit, configuration and log and the NVSwitch driver's view of the four
# switches (/proc/driver/nvidia-nvswitch: all taken) tests/fixtures/fabric/hgx's. Boot and clock as
# the other live cases: the tree's clock reads 2026-12-02T09:40:00.5Z.
set -euo pipefail
cd "$(dirname "$0")"
. ../make-root.lib.sh
fix=../../fixtures
host_base 112
printf 'erin:x:1004:1004:Erin:/home/erin:/bin/bash\n' >>root/etc/passwd
# InfiniBand: five NICs; nvidia_peermem not loaded
cp -a "$fix/ib/port-down/sys/." root/sys/
cp -a "$fix/ib/peermem-missing/proc/modules" root/proc/modules
# the four NVSwitches (bridge class 0x068000), behind their own root port
for a in c5 c6 c7 c8; do
    pci "pci0000:c0/0000:c0:01.0/0000:$a:00.0" 0x10de 0x22a3 0x068000
done
# Fabric Manager's package, program, unit, configuration and log, and the switch's error in it
cp -a "$fix/fabric/hgx/usr" "$fix/fabric/hgx/var" "$fix/fabric/hgx/etc" root/
cp -a "$fix/fabric/hgx/proc/driver" root/proc/
printf '%s\n' \
    '[Dec 02 2025 08:39:57] [ERROR] [tid 4242] detected NVSwitch fatal error 24007 on NVSwitch pci bus id 00000000:c7:00.0 physical id 3 port 44' \
    "[Dec 02 2025 08:39:57] [ERROR] [tid 4242] NVSwitch port 44 on NVSwitch physical id 3 is reset and the partition's GPUs need a reset" \
    >>root/var/log/fabricmanager.log

# The kernel log: the driver's load, then the fatal SXid on the NVSwitch at c7:00.0.
printf '%s\n' \
    'Dec  2 06:00:05 hgx-node-04 kernel: [    5.123456] nvidia: loading out-of-tree module taints kernel.' \
    'Dec  2 06:00:06 hgx-node-04 kernel: [    6.234567] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024' \
    'Dec  2 06:00:07 hgx-node-04 kernel: [    7.345678] nvidia-nvswitch: Probing device 0000:c7:00.0, Vendor Id = 0x10de, Device Id = 0x22a3, Class = 0x68000' \
    'Dec  2 08:39:57 hgx-node-04 kernel: [ 9597.100001] nvidia-nvswitch3: SXid (PCI:0000:c7:00.0): 24007, Fatal, Link 44 sourcetrack timeout error (First)' \
    'Dec  2 08:39:57 hgx-node-04 kernel: [ 9597.100002] nvidia-nvswitch3: SXid (PCI:0000:c7:00.0): 24007, Severity 1 Engine instance 44 Sub-engine instance 00' \
    'Dec  2 08:39:57 hgx-node-04 kernel: [ 9597.100003] nvidia-nvswitch3: SXid (PCI:0000:c7:00.0): 24007, Data {0x00000000, 0x00000000, 0x00000000}' \
    >root/var/log/kern.log

PROC_CGROUP=/init.scope proc 1 systemd S 0 0 0 60 1 12000 / -- /sbin/init
PROC_CGROUP=/system.slice/ssh.service proc 900 sshd S 1 0 3 4 1 8000 / -- sshd: /usr/sbin/sshd -D
PROC_CGROUP=/system.slice/nvidia-fabricmanager.service proc 2210 nv-fabricmanage S 1 0 3400 30 8 \
    60000 / -- /usr/bin/nv-fabricmanager -c /usr/share/nvidia/nvswitch/fabricmanager.cfg
# erin: an 8-rank pre-training job (Slurm job 4411), launched with NCCL's fast paths off
export PROC_CGROUP=/system.slice/slurmstepd.scope/job_4411/step_0/user/task_0
export PROC_ENV='NCCL_P2P_DISABLE=1\0NCCL_IB_DISABLE=1\0NCCL_DEBUG=WARN\0'
proc 48200 torchrun S 1 1004 3600 30 4 900000 /home/erin/run -- \
    /usr/bin/python3 /usr/local/bin/torchrun --nproc_per_node=8 pretrain.py
for r in 0 1 2 3 4 5 6 7; do
    proc $((48211 + r)) python R 48200 1004 3610 $((30000 - r * 100)) 64 70000000 /home/erin/run -- \
        /usr/bin/python3 -u pretrain.py --local-rank=$r
    gpu $((48211 + r)) "$r"
done
unset PROC_CGROUP PROC_ENV

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
