#!/usr/bin/env bash
# Regenerates root/ for scenario.json: gpudoctor inside a docker container (/.dockerenv) started
# without --gpus. The host's 550.54.15 module shows in /proc/driver/nvidia and /sys/module, the
# GPUs on the PCI bus are bound to nvidia, but the container's /dev has no nvidiactl and no
# nvidiaN, so NVML (the simulator, init_error DRIVER_NOT_LOADED) cannot reach the driver.
set -euo pipefail
cd "$(dirname "$0")"
. ../make-root.lib.sh
host_base 64
: >root/.dockerenv
mkdir -p root/dev/shm root/dev/pts
: >root/dev/null
: >root/dev/zero
pci pci0000:00/0000:00:00.0 0x8086 0x09a2 0x060000
for b in 18 2a; do
    pci "pci0000:$b/0000:$b:00.0" 0x10de 0x2330 0x030200 numa_node=0 driver=nvidia
done
proc 1 python S 0 1000 600 40 8 2400000 /home/alice -- \
    /usr/bin/python3 /usr/local/bin/jupyter-lab --ip=0.0.0.0
echo "root/ regenerated"
