#!/usr/bin/env bash
# Writes the ib-* snapshot cases and healthy-8gpu-ib: healthy-8gpu-busy's 8 x H100 snapshot with
# the `ib` section (and the ib collector's status) that `gpudoctor snapshot --only ib` reads from
# a fixture tree of tests/fixtures/ib, changed for each story. Run it after building
# (GPUDOCTOR=path/to/gpudoctor, default build/gpudoctor), then commit what it writes.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
gd=${GPUDOCTOR:-$src/build/gpudoctor}
fix=$src/tests/fixtures/ib
base=$here/healthy-8gpu-busy/snapshot.json
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pci=sys/devices/pci0000:00/0000:00:01.0

# port_file TREE DEV PCI FILE VALUE: writes one attribute of port 1.
port_file() {
    printf '%s\n' "$5" >"$1/$pci/$3/infiniband/$2/ports/1/$4"
}

# write CASE TREE [WINDOW_MS [GROW_CMD]]: the case's snapshot.json from the tree; GROW_CMD runs
# during the window (counters that grow).
write() {
    local name=$1 tree=$2 window=${3:-0} grow=${4:-}
    local out=$tmp/$name.json
    "$gd" snapshot --root "$tree" --only ib --window "${window}ms" >"$out" &
    local pid=$!
    if [ -n "$grow" ]; then
        sleep 0.5
        eval "$grow"
    fi
    wait "$pid"
    mkdir -p "$here/$name"
    jq --slurpfile ib "$out" '.ib = $ib[0].ib | .collectors.ib = ($ib[0].collectors.ib | .elapsed_us = 900)' \
        "$base" >"$here/$name/snapshot.json"
}

copy() {
    rm -rf "$tmp/$2"
    cp -a "$fix/$1" "$tmp/$2"
    echo "$tmp/$2"
}

t=$(copy healthy healthy)
write healthy-8gpu-ib "$t" 2000
cat >"$here/healthy-8gpu-ib/expect" <<'X'
# 8 x H100 training with four NDR InfiniBand ports and a RoCE port, all active, nvidia_peermem loaded
exit 0
- ib.port-down
- ib.rate-low
- ib.errors
- ib.peermem-missing
- pcie.link-downshift
+ clock.power-cap gpu=3
X

t=$(copy port-down port-down)
write ib-port-down "$t"
cat >"$here/ib-port-down/expect" <<'X'
# mlx5_1 has no link (Polling: cable), mlx5_2 has a link but stays INIT (no subnet manager)
exit 1
+ ib.port-down object=mlx5_1/1
+ ib.port-down object=mlx5_2/1
- ib.port-down object=mlx5_0/1
- ib.port-down object=mlx5_4/1
- ib.rate-low
- ib.peermem-missing
X

t=$(copy healthy roce-down)
port_file "$t" mlx5_4 0000:9b:00.0 state '1: DOWN'
port_file "$t" mlx5_4 0000:9b:00.0 phys_state '2: Polling'
write ib-roce-down "$t"
cat >"$here/ib-roce-down/expect" <<'X'
# the RoCE port (link layer Ethernet) of the storage NIC has no carrier; the InfiniBand ports are fine
exit 1
+ ib.port-down object=mlx5_4/1
- ib.port-down object=mlx5_0/1
- ib.rate-low
X

t=$(copy rate-low rate-low)
write ib-rate-low "$t"
cat >"$here/ib-rate-low/expect" <<'X'
# mlx5_3 negotiated 200 Gb/s (HDR) while the other three ConnectX-7 ports run NDR 400 Gb/s
exit 1
+ ib.rate-low object=mlx5_3/1
- ib.rate-low object=mlx5_0/1
- ib.rate-low object=mlx5_4/1
- ib.port-down
X

t=$(copy errors errors)
cnt2=$t/$pci/0000:41:00.0/infiniband/mlx5_2/ports/1/counters
cnt3=$t/$pci/0000:5e:00.0/infiniband/mlx5_3/ports/1/counters
write ib-errors "$t" 2000 "printf '250\n' >'$cnt2/symbol_error'; printf '1\n' >'$cnt3/link_downed'"
cat >"$here/ib-errors/expect" <<'X'
# during a 2 s window mlx5_2 counted 250 symbol errors and mlx5_3's link went down once
exit 2
+ ib.errors object=mlx5_2/1
+ ib.errors object=mlx5_3/1
- ib.errors object=mlx5_0/1
- ib.errors object=mlx5_1/1
X

t=$(copy peermem-missing peermem)
write ib-peermem-missing "$t"
cat >"$here/ib-peermem-missing/expect" <<'X'
# GPUs and InfiniBand, but nvidia_peermem is not loaded: GPUDirect RDMA is off
exit 1
+ ib.peermem-missing object=nvidia_peermem
- ib.port-down
- ib.rate-low
X
