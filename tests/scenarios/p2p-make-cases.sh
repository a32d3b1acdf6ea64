#!/usr/bin/env bash
# Writes the peer-to-peer cases (p2p-acs-blocked, p2p-acs-nested, p2p-acs-nic, p2p-acs-nic-upper,
# p2p-disabled-regkey): healthy-8gpu-busy's
# 8-GPU snapshot with each GPU's `peers` as gpudoctor's NVML collector read them from the
# simulator. The board: GPUs 0-3 behind one CPU, 4-7 behind the other; GPUs 0-1, 2-3, 4-5 and 6-7
# share a PCIe switch (PIX), the others of one CPU meet at its host bridges (NODE), the two halves
# only across the CPU interconnect (SYS), where P2P is topology_not_supported. Run it after
# building (GPUDOCTOR=path/to/gpudoctor, default build/gpudoctor; SIM_LIB, default
# build/sim/libnvidia-ml.so.1), then commit what it writes.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
gd=${GPUDOCTOR:-$src/build/gpudoctor}
sim=${SIM_LIB:-$src/build/sim/libnvidia-ml.so.1}
base=$here/healthy-8gpu-busy/snapshot.json
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# write CASE P2P: P2P is P2P(i; j) for the pairs within one CPU, a jq expression of $i and $j
write() {
    local name=$1 p2p=$2
    jq "{schema: \"gpudoctor.scenario/1\",
         system: {driver_version: \"550.54.15\", nvml_version: \"12.550.54.15\", cuda_driver_version: 12040},
         gpus: [.gpus[] | .index as \$i | {index, name, uuid, pci_bus_id, pci_device_id, pci_subsystem_id,
           peers: [range(8) as \$j | select(\$j != \$i)
             | (if ((\$i / 4 | floor) != (\$j / 4 | floor)) then \"system\"
                elif ((\$i / 2 | floor) == (\$j / 2 | floor)) then \"single\" else \"node\" end) as \$t
             | {gpu: \$j, topology: \$t,
                p2p_read: (if \$t == \"system\" then \"topology_not_supported\" else ($p2p) end),
                p2p_nvlink: \"not_supported\"}]}]}" "$base" >"$tmp/$name.scn"
    GPUDOCTOR_NVML_LIB=$sim NVML_SIM_SCENARIO=$tmp/$name.scn NVML_SIM_QUIET=1 \
        "$gd" snapshot --only nvml --window 0 >"$tmp/$name.snap"
    mkdir -p "$here/$name"
    jq --slurpfile n "$tmp/$name.snap" '
        .gpus |= [.[] | . as $g | ($n[0].gpus[] | select(.index == $g.index)) as $m
                  | $g + {peers: $m.peers}]' "$base" >"$here/$name/snapshot.json"
}

# GPUs 4-7: ACS on the second CPU's PCIe switches; the first CPU's GPUs reach each other
write p2p-acs-blocked 'if $i >= 4 then "chipset_not_supported" else "ok" end'

# The same board's PCIe tree in sysfs, as the pcie collector reads it as root: a root port, a
# switch (upstream port, two downstream ports) and two GPUs for each pair; the downstream ports
# above GPUs 4-7 have ACS redirecting peer traffic (control 0x1d: SV RR CR UF), those above
# GPUs 0-3 ACS without redirect (0x11). The case gets the GPUs' PCIe records from it.
tree=$tmp/acs-tree
node() { # PATH VENDOR DEVICE CLASS [NUMA]
    local dir=$tree/sys/devices/$1 addr
    addr=$(basename "$1")
    mkdir -p "$dir" "$tree/sys/bus/pci/devices"
    printf '%s\n' "$2" >"$dir/vendor"
    printf '%s\n' "$3" >"$dir/device"
    printf '%s\n' "$4" >"$dir/class"
    printf '32.0 GT/s PCIe\n' >"$dir/current_link_speed"
    printf '32.0 GT/s PCIe\n' >"$dir/max_link_speed"
    printf '16\n' >"$dir/current_link_width"
    printf '16\n' >"$dir/max_link_width"
    [ -n "${5:-}" ] && printf '%s\n' "$5" >"$dir/numa_node"
    ln -sfn "../../../devices/$1" "$tree/sys/bus/pci/devices/$addr"
}
acs() { # PATH CTRL: a root's read of the config space with the ACS capability at 0x100
    local file=$tree/sys/devices/$1/config esc
    head -c 4096 /dev/zero >"$file"
    esc=$(printf '\\x%02x\\x%02x' $(($2 & 255)) $(($2 >> 8)))
    # shellcheck disable=SC2059
    printf "\\x0d\\x00\\x01\\x00\\x5f\\x00$esc" | dd of="$file" bs=1 seek=256 conv=notrunc status=none
}
# pair ROOT RP US DS_BUS GPU_A GPU_B NUMA CTRL
pair() {
    local rp=$1/$2 us=$1/$2/$3
    node "$rp" 0x8086 0x352a 0x060400
    node "$us" 0x1000 0xc030 0x060400
    node "$us/$4:00.0" 0x1000 0xc030 0x060400
    node "$us/$4:01.0" 0x1000 0xc030 0x060400
    acs "$us/$4:00.0" "$8"
    acs "$us/$4:01.0" "$8"
    node "$us/$4:00.0/$5" 0x10de 0x2330 0x030200 "$7"
    node "$us/$4:01.0/$6" 0x10de 0x2330 0x030200 "$7"
}
pair pci0000:00 0000:00:01.0 0000:10:00.0 0000:11 0000:18:00.0 0000:2a:00.0 0 0x11
pair pci0000:00 0000:00:03.0 0000:30:00.0 0000:31 0000:3a:00.0 0000:5d:00.0 0 0x11
pair pci0000:80 0000:80:01.0 0000:90:00.0 0000:91 0000:9a:00.0 0000:ab:00.0 1 0x1d
pair pci0000:80 0000:80:03.0 0000:b0:00.0 0000:b1 0000:ba:00.0 0000:db:00.0 1 0x1d
# pcie_from_tree CASE: the case's GPUs get their PCIe records (bridges, switch, peers) from $tree.
pcie_from_tree() {
    "$gd" snapshot --root "$tree" --only pcie --window 0 >"$tmp/$1.pcie"
    jq --slurpfile p "$tmp/$1.pcie" '
        .pcie.gpus |= [.[] | . as $g | ($p[0].pcie.gpus[] | select(.address == $g.address)) as $n
                       | $g + {upstream: $n.upstream, switch_address: $n.switch_address, peers: $n.peers}]' \
        "$here/$1/snapshot.json" >"$tmp/$1.json"
    mv "$tmp/$1.json" "$here/$1/snapshot.json"
}
pcie_from_tree p2p-acs-blocked
# Nested switches on the second CPU: GPUs 4-5 and 6-7 each under a switch of their own (ACS
# without redirect on its ports), the two switches under an upper switch whose port above GPUs
# 6-7 redirects (0x1d). Pairs within a lower switch turn there; 4-5 with 6-7 cannot use P2P.
write p2p-acs-nested 'if $i >= 4 and $j >= 4 and (($i / 2 | floor) != ($j / 2 | floor)) then "chipset_not_supported" else "ok" end'
rm -rf "$tree"
pair pci0000:00 0000:00:01.0 0000:10:00.0 0000:11 0000:18:00.0 0000:2a:00.0 0 0x11
pair pci0000:00 0000:00:03.0 0000:30:00.0 0000:31 0000:3a:00.0 0000:5d:00.0 0 0x11
# (pair makes the upper switch's ports as if root ports; they become switch ports after it)
up=pci0000:80/0000:80:01.0/0000:81:00.0
pair "$up" 0000:82:00.0 0000:83:00.0 0000:84 0000:9a:00.0 0000:ab:00.0 1 0x11
pair "$up" 0000:82:01.0 0000:a3:00.0 0000:a4 0000:ba:00.0 0000:db:00.0 1 0x11
node pci0000:80/0000:80:01.0 0x8086 0x352a 0x060400
node "$up" 0x1000 0xc030 0x060400
node "$up/0000:82:00.0" 0x1000 0xc030 0x060400
node "$up/0000:82:01.0" 0x1000 0xc030 0x060400
acs "$up/0000:82:00.0" 0x11
acs "$up/0000:82:01.0" 0x1d
pcie_from_tree p2p-acs-nested
# A ConnectX card (mlx5_0) under the switch of GPUs 0-1, whose port redirects (0x1d) while the
# GPUs' ports do not (0x11): GPU-to-GPU P2P turns in the switch, GPUDirect RDMA between the card
# and GPUs 0-1 goes through the CPU. The case gets the card's record (pcie.nics) too.
write p2p-acs-nic '"ok"'
rm -rf "$tree"
pair pci0000:00 0000:00:01.0 0000:10:00.0 0000:11 0000:18:00.0 0000:2a:00.0 0 0x11
pair pci0000:00 0000:00:03.0 0000:30:00.0 0000:31 0000:3a:00.0 0000:5d:00.0 0 0x11
pair pci0000:80 0000:80:01.0 0000:90:00.0 0000:91 0000:9a:00.0 0000:ab:00.0 1 0x11
pair pci0000:80 0000:80:03.0 0000:b0:00.0 0000:b1 0000:ba:00.0 0000:db:00.0 1 0x11
nic=pci0000:00/0000:00:01.0/0000:10:00.0/0000:11:02.0
node "$nic" 0x1000 0xc030 0x060400
acs "$nic" 0x1d
node "$nic/0000:1c:00.0" 0x15b3 0x1021 0x020700 0
mkdir -p "$tree/sys/devices/$nic/0000:1c:00.0/infiniband/mlx5_0"
pcie_from_tree p2p-acs-nic
"$gd" snapshot --root "$tree" --only pcie --window 0 >"$tmp/nics.pcie"
jq --slurpfile p "$tmp/nics.pcie" '.pcie.nics = $p[0].pcie.nics' "$here/p2p-acs-nic/snapshot.json" >"$tmp/nic.json"
mv "$tmp/nic.json" "$here/p2p-acs-nic/snapshot.json"
# Nested switches with a ConnectX card beside GPUs 4-5 only at the upper switch: GPUs 4-5 under
# a switch of their own, under an upper switch port that redirects (0x1d); the card under another
# port of the upper switch (0x11, no redirect); GPUs 6-7 on a root port of their own. GPU P2P is
# fine, GPUDirect RDMA between the card and GPUs 4-5 crosses the GPUs' upper port: through the CPU.
write p2p-acs-nic-upper '"ok"'
rm -rf "$tree"
pair pci0000:00 0000:00:01.0 0000:10:00.0 0000:11 0000:18:00.0 0000:2a:00.0 0 0x11
pair pci0000:00 0000:00:03.0 0000:30:00.0 0000:31 0000:3a:00.0 0000:5d:00.0 0 0x11
up=pci0000:80/0000:80:01.0/0000:81:00.0
pair "$up" 0000:82:00.0 0000:83:00.0 0000:84 0000:9a:00.0 0000:ab:00.0 1 0x11
pair pci0000:80 0000:80:03.0 0000:b0:00.0 0000:b1 0000:ba:00.0 0000:db:00.0 1 0x11
node pci0000:80/0000:80:01.0 0x8086 0x352a 0x060400
node "$up" 0x1000 0xc030 0x060400
node "$up/0000:82:00.0" 0x1000 0xc030 0x060400
node "$up/0000:82:02.0" 0x1000 0xc030 0x060400
acs "$up/0000:82:00.0" 0x1d
acs "$up/0000:82:02.0" 0x11
node "$up/0000:82:02.0/0000:8c:00.0" 0x15b3 0x1021 0x020700 1
mkdir -p "$tree/sys/devices/$up/0000:82:02.0/0000:8c:00.0/infiniband/mlx5_1"
pcie_from_tree p2p-acs-nic-upper
"$gd" snapshot --root "$tree" --only pcie --window 0 >"$tmp/nics.pcie"
jq --slurpfile p "$tmp/nics.pcie" '.pcie.nics = $p[0].pcie.nics' "$here/p2p-acs-nic-upper/snapshot.json" >"$tmp/nic.json"
mv "$tmp/nic.json" "$here/p2p-acs-nic-upper/snapshot.json"
# a driver option turned P2P off everywhere (NVreg_RegistryDwords)
write p2p-disabled-regkey '"disabled_by_regkey"'
