#!/usr/bin/env bash
# Regenerates root/ for scenario.json: two H100s of a training job (pids 48211 and 48212, one a
# GPU) and the PCIe topology sysfs shows. GPU 0 (0000:18:00.0) sits behind a PCIe switch
# (upstream port 0000:16:00.0) shared with a ConnectX-7 NIC; GPU 1 (0000:2a:00.0) has its own
# root port but trained at Gen5 x8 of x16, and its AER counters hold 412 corrected errors.
set -euo pipefail
cd "$(dirname "$0")"
. ../make-root.lib.sh
host_base 64
mkdir -p root/home/alice/run

G5='current_link_speed=32.0 GT/s PCIe' G5MAX='max_link_speed=32.0 GT/s PCIe'
pci pci0000:00/0000:00:00.0 0x8086 0x09a2 0x060000
# GPU 0 and the NIC under one switch: root port 15:01.0, switch 16:00.0, downstream 17:00.0/17:01.0.
pci pci0000:15/0000:15:01.0 0x8086 0x352a 0x060400 "$G5" "$G5MAX" current_link_width=16 max_link_width=16 driver=pcieport
pci pci0000:15/0000:15:01.0/0000:16:00.0 0x1000 0xc030 0x060400 "$G5" "$G5MAX" current_link_width=16 max_link_width=16 driver=pcieport
pci pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:00.0 0x1000 0xc030 0x060400 "$G5" "$G5MAX" current_link_width=16 max_link_width=16 driver=pcieport
pci pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:01.0 0x1000 0xc030 0x060400 "$G5" "$G5MAX" current_link_width=16 max_link_width=16 driver=pcieport
pci pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:00.0/0000:18:00.0 0x10de 0x2330 0x030200 \
    "$G5" "$G5MAX" current_link_width=16 max_link_width=16 numa_node=0 driver=nvidia \
    "aer_dev_correctable=RxErr 0\nBadTLP 0\nBadDLLP 0\nRollover 0\nTimeout 0\nNonFatalErr 0\nCorrIntErr 0\nHeaderOF 0\nTOTAL_ERR_COR 0" \
    "aer_dev_nonfatal=Undefined 0\nDLP 0\nTLP 0\nTOTAL_ERR_NONFATAL 0" \
    "aer_dev_fatal=Undefined 0\nDLP 0\nTLP 0\nTOTAL_ERR_FATAL 0"
pci pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:01.0/0000:19:00.0 0x15b3 0x1021 0x020000 \
    "$G5" "$G5MAX" current_link_width=16 max_link_width=16 numa_node=0 driver=mlx5_core
# GPU 1 on a root port of its own, x8.
pci pci0000:29/0000:29:01.0 0x8086 0x352a 0x060400 "$G5" "$G5MAX" current_link_width=8 max_link_width=16 driver=pcieport
pci pci0000:29/0000:29:01.0/0000:2a:00.0 0x10de 0x2330 0x030200 \
    "$G5" "$G5MAX" current_link_width=8 max_link_width=16 numa_node=0 driver=nvidia \
    "aer_dev_correctable=RxErr 398\nBadTLP 9\nBadDLLP 5\nRollover 0\nTimeout 0\nNonFatalErr 0\nCorrIntErr 0\nHeaderOF 0\nTOTAL_ERR_COR 412" \
    "aer_dev_nonfatal=Undefined 0\nDLP 0\nTLP 0\nTOTAL_ERR_NONFATAL 0" \
    "aer_dev_fatal=Undefined 0\nDLP 0\nTLP 0\nTOTAL_ERR_FATAL 0"
mkdir -p root/sys/module/nvidia
printf '8\n' >root/sys/module/nvidia/refcnt

proc 1 systemd S 0 0 0 60 1 12000 / -- /sbin/init
proc 48200 torchrun S 1 1000 3600 30 4 900000 /home/alice/run -- \
    /usr/bin/python3 /usr/local/bin/torchrun --nproc_per_node=2 pretrain.py
for r in 0 1; do
    proc $((48211 + r)) python R 48200 1000 3610 $((30000 - r * 100)) 64 70000000 /home/alice/run -- \
        /usr/bin/python3 -u pretrain.py --local-rank=$r
    gpu $((48211 + r)) "$r"
done
echo "root/ regenerated"
