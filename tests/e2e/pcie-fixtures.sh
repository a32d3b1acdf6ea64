#!/usr/bin/env bash
# The PCIe section from sysfs fixture trees, through the command line.
. "$SRC/tests/fixtures/host/e2e.bash"

snap "$PCIE_FIX/server" --only pcie
check '.collectors.pcie | [.state, .detail, .notes]' '["ok", null, []]'
check '.pcie.nvidia_module_loaded' 'true'
check '[.pcie.gpus[].address]' '["0000:01:00.0","0000:04:00.0","0000:06:00.0","0000:81:00.0"]'
check '.pcie.gpus[0] | [.link_gen, .link_gen_max, .link_width, .link_width_max, .driver]' '[4, 4, 16, 16, "nvidia"]'
check '.pcie.gpus[1] | [.link_speed_gts, .link_speed_max_gts, .link_width, .link_width_max]' '[8, 16, 8, 16]'
check '.pcie.gpus[1].switch_address' '"0000:02:00.0"'
check '[.pcie.gpus[1].upstream[].address]' '["0000:03:00.0","0000:02:00.0","0000:00:02.0"]'
check '[.pcie.gpus[1].peers[] | [.address, .kind, .vendor_id, .driver]]' '[["0000:05:00.0","network","0x000015b3","mlx5_core"],["0000:06:00.0","gpu","0x000010de","nvidia"],["0000:07:00.0","nvme","0x0000144d","nvme"]]'
check '.pcie.gpus[2] | [.aer_correctable, .aer_nonfatal, .aer_fatal, .aer_correctable_window]' '[3, 1, 0, null]'
check '.pcie.gpus[3] | [.driver, .numa_node, .link_gen, .peers]' '[null, 1, 3, []]'

# With a window the AER counters are read twice: nothing changed in a fixture.
snap "$PCIE_FIX/server" --only pcie --window 150ms
check '[.pcie.gpus[].aer_correctable_window]' '[0, 0, 0, 0]'

snap "$PCIE_FIX/nodriver" --only pcie
check '.collectors.pcie.detail' '"1 NVIDIA GPU in sysfs but the nvidia kernel module is not loaded"'
check '[.pcie.nvidia_module_loaded, .pcie.gpus[0].driver, .pcie.gpus[0].link_gen]' '[false, null, 5]'

snap "$PCIE_FIX/nogpu" --only pcie
check '.collectors.pcie | [.state, .detail]' '["ok", "no NVIDIA PCI device in /sys/bus/pci/devices"]'
check '.pcie.gpus' '[]'

snap "$PCIE_FIX/garbage" --only pcie
check '.collectors.pcie.state' '"partial"'
check '.collectors.pcie.notes | length >= 17' 'true'
check '.pcie.gpus | length' '4'
check '.pcie.gpus[0] | [.link_speed_gts, .link_width, .numa_node, .aer_correctable]' '[null, null, null, null]'
check '.pcie.gpus[1] | [.upstream, .peers, .link_speed_max_gts, .link_gen_max]' '[null, null, 12.5, null]'

mkdir -p "$TMP/empty"
snap "$TMP/empty" --only pcie
check '.collectors.pcie | [.state, .detail]' '["unavailable", "cannot read /sys/bus/pci/devices: No such file or directory"]'
check '[.pcie.nvidia_module_loaded, .pcie.gpus]' '[null, null]'

finish
