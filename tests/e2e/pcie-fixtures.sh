#!/usr/bin/env bash
# The PCIe section from sysfs fixture trees, through the command line; the ACS of the switch
# ports above GPUs and pcie.acs-p2p judging it.
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
# ACS is read for the switch port right above a GPU under a switch (and, in nested switches, the
# upper switches' ports: below), nowhere else
check '[.pcie.gpus[] | .upstream[0] | [.address, .acs, .acs_ctrl]]' \
    '[["0000:00:01.0",null,null],["0000:03:00.0","present","0x0000001d"],["0000:03:02.0","present","0x00000011"],["0000:80:01.0",null,null]]'
check '[.pcie.gpus[1].upstream[1,2] | .acs]' '[null, null]'
# the NIC under the GPUs' switch: its RDMA device's name, and the ACS of its port (only that one:
# the switch is the lowest it shares with a GPU); the NVMe drive's port is not read
check '[.pcie.nics[] | [.address, .name, .driver, .class_code]]' '[["0000:05:00.0","mlx5_0","mlx5_core","0x00020000"]]'
check '[.pcie.nics[0].upstream[] | [.address, .acs, .acs_ctrl]]' \
    '[["0000:03:01.0","present","0x0000001d"],["0000:02:00.0",null,null],["0000:00:02.0",null,null]]'

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
check '.pcie.nics' '[]'
check '.pcie.gpus | length' '4'
check '.pcie.gpus[0] | [.link_speed_gts, .link_width, .numa_node, .aer_correctable]' '[null, null, null, null]'
check '.pcie.gpus[1] | [.upstream, .peers, .link_speed_max_gts, .link_gen_max]' '[null, null, 12.5, null]'

# ACS as a non-root user reads it (64 bytes of config), a broken capability list, none at all.
cp -a "$PCIE_FIX/server" "$TMP/acs"
sw=$TMP/acs/sys/devices/pci0000:00/0000:00:02.0/0000:02:00.0
head -c 64 /dev/zero >"$sw/0000:03:00.0/config"
head -c 4096 /dev/zero >"$sw/0000:03:02.0/config"
printf '\x0d\x00\x01\x00' | dd of="$sw/0000:03:02.0/config" bs=1 seek=256 conv=notrunc status=none
printf '\x0d\x00' | dd of="$sw/0000:03:02.0/config" bs=1 seek=258 conv=notrunc status=none # no control
printf '\x01\x00\x01\x05' | dd of="$sw/0000:03:02.0/config" bs=1 seek=256 conv=notrunc status=none # next 0x050: before 0x100
head -c 64 /dev/zero >"$sw/0000:03:01.0/config"
rm -r "$sw/0000:03:01.0/0000:05:00.0/infiniband"
snap "$TMP/acs" --only pcie
check '[.pcie.gpus[1,2] | .upstream[0] | [.acs, .acs_ctrl]]' '[["needs_root",null],["malformed",null]]'
check '.pcie.nics[0] | [.name, .upstream[0].acs, .upstream[0].acs_ctrl]' '["ens1np0","needs_root",null]'
check '.collectors.pcie.notes' '["/sys/bus/pci/devices/0000:03:02.0/config: malformed: its extended capability list is broken"]'

# pcie.acs-p2p: the port with redirect bits, above a GPU sharing its switch with a GPU and a NIC
acs_rules() {
    GPUDOCTOR_STATE_DIR=off "$GPUDOCTOR" check --json --root "$1" --only pcie --window 0 >"$OUT" 2>/dev/null || true
    jq -c '[.findings[] | select(.id == "pcie.acs-p2p") | [.subject.object, .severity]]' "$OUT"
}
# and the NIC's port, for its RDMA with both GPUs under the switch
if [ "$(acs_rules "$PCIE_FIX/server")" != '[["PCIe port 0000:03:00.0","warning"],["PCIe port 0000:03:01.0","warning"]]' ]; then
    echo "FAIL: pcie.acs-p2p on the server tree: $(acs_rules "$PCIE_FIX/server")"
    failures=$((failures + 1))
fi
check '[.findings[] | select(.id == "pcie.acs-p2p") | .fix[] | select(startswith("sudo setpci"))]' \
    '["sudo setpci -s 0000:03:00.0 ECAP_ACS+0x6.w=0000   # ACS off on this port until the next boot","sudo setpci -s 0000:03:01.0 ECAP_ACS+0x6.w=0000   # ACS off on this port until the next boot"]'
check '.findings[] | select(.subject.object == "PCIe port 0000:03:01.0") | [.title, .evidence[0,1]]' \
    '["ACS on the switch port above NIC mlx5_0 (0000:05:00.0) sends GPUDirect RDMA between it and GPUs 0000:04:00.0, 0000:06:00.0 through the CPU","port 0000:03:01.0 of switch 0000:02:00.0, above NIC 0000:05:00.0: ACS control 0x001d, redirect bits RR CR","GPUs 0000:04:00.0, 0000:06:00.0 sit under the same switch 0000:02:00.0 behind its other ports: GPUDirect RDMA between them and the NIC crosses this port"]'
check '[.findings[] | select(.subject.object == "PCIe port 0000:03:01.0") | .fix[] | select(startswith("#")) | test("virtual machines")]' '[true]'
# without root: not checked, and said
if [ "$(acs_rules "$TMP/acs")" != '[]' ]; then
    echo "FAIL: pcie.acs-p2p without the ACS registers: $(acs_rules "$TMP/acs")"
    failures=$((failures + 1))
fi
check '[.not_checked[] | select(.rule == "pcie.acs-p2p") | .reason]' \
    '["ACS of 1 switch port above network cards (reading a bridge'"'"'s extended config space needs root)","ACS of 1 switch port above GPUs (reading a bridge'"'"'s extended config space needs root)","ACS of 1 switch port above GPUs (a broken extended capability list: the collector'"'"'s notes name it)"]'

# On the 8-GPU case whose second CPU's switch ports redirect: one finding per port above GPUs
# 4-7, and the P2P finding is explained by the first of them.
"$GPUDOCTOR" check --json --from "$SRC/tests/scenarios/p2p-acs-blocked/snapshot.json" >"$OUT" 2>/dev/null || true
check '[.findings[] | select(.id == "pcie.acs-p2p") | .subject.object] | sort' \
    '["PCIe port 0000:91:00.0","PCIe port 0000:91:01.0","PCIe port 0000:b1:00.0","PCIe port 0000:b1:01.0"]'
check '[.findings[0].id, (.findings[] | select(.id == "pcie.p2p-unavailable") | .caused_by)]' '["pcie.acs-p2p", 1]'

# A ConnectX card's port redirecting under GPUs 0-1's switch (their ports not): the finding names
# the card and the GPUs by their NVML indexes; GPU P2P is not said to be blocked.
"$GPUDOCTOR" check --json --from "$SRC/tests/scenarios/p2p-acs-nic/snapshot.json" >"$OUT" 2>/dev/null || true
check '[.findings[] | select(.id == "pcie.acs-p2p") | [.subject.object, .title]]' \
    '[["PCIe port 0000:11:02.0","ACS on the switch port above NIC mlx5_0 (0000:1c:00.0) sends GPUDirect RDMA between it and GPUs 0, 1 through the CPU"]]'

# Nested switches: two switches (GPUs a-b, c-d) under an upper switch, whose port above c-d
# redirects. ACS is read on every downstream port of the chain (0 and 2), not on upstream or
# root ports; the finding is the upper port's, once for its two GPUs.
nest=$TMP/nested/sys/devices/pci0000:80/0000:80:01.0/0000:81:00.0
bridge() { # DIR [ACS-CTRL [CLASS]]: a bridge (or CLASS), with the ACS capability at 0x100 when a control is given
    mkdir -p "$1" "$TMP/nested/sys/bus/pci/devices"
    printf '0x1000\n' >"$1/vendor"
    printf '0xc030\n' >"$1/device"
    printf '%s\n' "${3:-0x060400}" >"$1/class"
    ln -sfn "../../../devices/${1#"$TMP/nested/sys/devices/"}" "$TMP/nested/sys/bus/pci/devices/$(basename "$1")"
    if [ -n "${2:-}" ]; then
        head -c 4096 /dev/zero >"$1/config"
        printf "\x0d\x00\x01\x00\x5f\x00\x$(printf %02x "$2")\x00" |
            dd of="$1/config" bs=1 seek=256 conv=notrunc status=none
    fi
}
mkdir -p "$TMP/nested/sys/module/nvidia"
bridge "$TMP/nested/sys/devices/pci0000:80/0000:80:01.0"
bridge "$nest"
bridge "$nest/0000:82:00.0" 0x11
bridge "$nest/0000:82:01.0" 0x1d
bridge "$nest/0000:82:00.0/0000:83:00.0"
bridge "$nest/0000:82:01.0/0000:a3:00.0"
bridge "$nest/0000:82:00.0/0000:83:00.0/0000:84:00.0" 0x11
bridge "$nest/0000:82:00.0/0000:83:00.0/0000:84:01.0" 0x11
bridge "$nest/0000:82:01.0/0000:a3:00.0/0000:a4:00.0" 0x11
bridge "$nest/0000:82:01.0/0000:a3:00.0/0000:a4:01.0" 0x11
for g in 82:00.0/0000:83:00.0/0000:84:00.0/0000:9a:00.0 82:00.0/0000:83:00.0/0000:84:01.0/0000:ab:00.0 \
         82:01.0/0000:a3:00.0/0000:a4:00.0/0000:ba:00.0 82:01.0/0000:a3:00.0/0000:a4:01.0/0000:db:00.0; do
    bridge "$nest/0000:$g" "" 0x030200
    printf '0x10de\n' >"$nest/0000:$g/vendor"
done
# An InfiniBand card under a third switch, below the upper switch's port 82:02.0, which
# redirects: its RDMA with all four GPUs crosses that port. A card on a root port of its own
# shares no switch with a GPU: not listed, its port not read.
bridge "$nest/0000:82:02.0" 0x1d
bridge "$nest/0000:82:02.0/0000:c3:00.0"
bridge "$nest/0000:82:02.0/0000:c3:00.0/0000:c4:00.0" 0x11
bridge "$nest/0000:82:02.0/0000:c3:00.0/0000:c4:00.0/0000:c5:00.0" "" 0x020700
bridge "$TMP/nested/sys/devices/pci0000:80/0000:80:02.0" 0x1d
bridge "$TMP/nested/sys/devices/pci0000:80/0000:80:02.0/0000:e1:00.0" "" 0x020000
snap "$TMP/nested" --only pcie
check '[.pcie.nics[] | [.address, .name, .class_code]]' '[["0000:c5:00.0",null,"0x00020700"]]'
check '[.pcie.nics[0].upstream[] | [.address, .acs, .acs_ctrl]]' \
    '[["0000:c4:00.0","present","0x00000011"],["0000:c3:00.0",null,null],["0000:82:02.0","present","0x0000001d"],["0000:81:00.0",null,null],["0000:80:01.0",null,null]]'
check '[.pcie.gpus[] | [.upstream[] | .acs_ctrl]]' \
    '[["0x00000011",null,"0x00000011",null,null],["0x00000011",null,"0x00000011",null,null],["0x00000011",null,"0x0000001d",null,null],["0x00000011",null,"0x0000001d",null,null]]'
if [ "$(acs_rules "$TMP/nested")" != '[["PCIe port 0000:82:01.0","warning"],["PCIe port 0000:82:02.0","warning"]]' ]; then
    echo "FAIL: pcie.acs-p2p on nested switches: $(acs_rules "$TMP/nested")"
    failures=$((failures + 1))
fi
check '.findings[] | select(.subject.object == "PCIe port 0000:82:02.0") | [.title, .fix[0]]' \
    '["ACS on the upper switch port above NIC 0000:c5:00.0 sends GPUDirect RDMA between it and GPUs 0000:9a:00.0, 0000:ab:00.0, 0000:ba:00.0, 0000:db:00.0 through the CPU","sudo setpci -s 0000:82:02.0 ECAP_ACS+0x6.w=0000   # ACS off on this port until the next boot"]'
# the upper ports read without root: not checked, and said (the lower ports do not redirect)
head -c 64 /dev/zero >"$nest/0000:82:01.0/config"
head -c 64 /dev/zero >"$nest/0000:82:02.0/config"
acs_rules "$TMP/nested" >/dev/null
check '[.not_checked[] | select(.rule == "pcie.acs-p2p") | .reason]' \
    '["ACS of 1 switch port above network cards (reading a bridge'"'"'s extended config space needs root)","ACS of 1 switch port above GPUs (reading a bridge'"'"'s extended config space needs root)"]'

mkdir -p "$TMP/empty"
snap "$TMP/empty" --only pcie
check '.collectors.pcie | [.state, .detail]' '["unavailable", "cannot read /sys/bus/pci/devices: No such file or directory"]'
check '[.pcie.nvidia_module_loaded, .pcie.gpus]' '[null, null]'

finish
