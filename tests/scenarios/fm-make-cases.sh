#!/usr/bin/env bash
# Writes the fm-*, sxid-* and switch-not-initialized snapshot cases, and the fabric section of
# healthy-8gpu-nvlink:
# healthy-8gpu-nvlink's 8 x H100 HGX snapshot with the `fabric` section (and, for SXids, the
# kernel-log events) that `gpudoctor snapshot --only fabric,kernel_log` reads from a copy of the
# fixture tree tests/fixtures/fabric/hgx, changed for each story. Run it after building
# (GPUDOCTOR=path/to/gpudoctor, default build/gpudoctor), then commit what it writes.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
gd=${GPUDOCTOR:-$src/build/gpudoctor}
fix=$src/tests/fixtures/fabric/hgx
base=$here/healthy-8gpu-nvlink/snapshot.json
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The base snapshot was taken at 2025-12-02T10:00:00Z; its machine booted a day before.
btime=$(($(jq '.time_ms' "$base") / 1000 - 86400))

# write CASE TREE [JQ]: the case's snapshot.json: the base with the tree's fabric section and
# collector status, its kernel-log events when the tree has a dev/kmsg, then the jq filter JQ.
write() {
    local name=$1 tree=$2 filter=${3:-.}
    local out=$tmp/$name.json
    "$gd" snapshot --root "$tree" --only fabric,kernel_log --window 0 >"$out"
    mkdir -p "$here/$name"
    if [ -f "$tree/dev/kmsg" ]; then
        jq --slurpfile n "$out" '.fabric = $n[0].fabric
            | .collectors.fabric = ($n[0].collectors.fabric | .elapsed_us = 700)
            | .driver.events = $n[0].driver.events
            | .driver.klog_records = $n[0].driver.klog_records
            | .driver.klog_events_total = $n[0].driver.klog_events_total' "$base" |
            jq "$filter" >"$here/$name/snapshot.json"
    else
        jq --slurpfile n "$out" '.fabric = $n[0].fabric
            | .collectors.fabric = ($n[0].collectors.fabric | .elapsed_us = 700)' "$base" |
            jq "$filter" >"$here/$name/snapshot.json"
    fi
}

copy() {
    rm -rf "${tmp:?}/$1"
    cp -a "$fix" "$tmp/$1"
    printf 'cpu  1 2 3 4\nbtime %s\n' "$btime" >"$tmp/$1/proc/stat"
    echo "$tmp/$1"
}

# kmsg TREE LINE...: kernel records at 23 h 50 min after boot, one second apart.
kmsg() {
    local tree=$1 seq=1000 us=85800000000
    shift
    mkdir -p "$tree/dev"
    for line in "$@"; do
        printf '3,%d,%d,-;%s\n' "$seq" "$us" "$line" >>"$tree/dev/kmsg"
        seq=$((seq + 1)) us=$((us + 1000000))
    done
}

t=$(copy healthy)
write healthy-8gpu-nvlink.new "$t"
mv "$here/healthy-8gpu-nvlink.new/snapshot.json" "$base"
rmdir "$here/healthy-8gpu-nvlink.new"
cat >"$here/healthy-8gpu-nvlink/expect" <<'X'
# 8 x H100 HGX: 18 NVLinks a GPU, all active to the four NVSwitches, no link errors, every GPU registered with the fabric, Fabric Manager 550.54.15 running with driver 550.54.15
exit 0
- nvlink.down
- nvlink.errors
- fabric.gpu-not-ready
- fabric.switch-not-initialized
- fabric.fm-not-running
- fabric.fm-version
- fabric.fm-errors
- fabric.sxid
+ clock.power-cap gpu=3
X

# Two NVSwitches failed the NVSwitch driver's probe at boot: they are on the PCI bus, but the
# driver made no /proc/driver/nvidia-nvswitch/devices entry for them, so Fabric Manager cannot
# configure the fabric and no GPU joined it. The kernel log has the driver's probe lines (which
# the kernel-log collector does not keep: the finding says what to grep).
t=$(copy switch-not-initialized)
rm -r "$t/proc/driver/nvidia-nvswitch/devices/0000:c6:00.0" \
    "$t/proc/driver/nvidia-nvswitch/devices/0000:c7:00.0"
kmsg "$t" \
    'nvidia-nvswitch: Probing device 0000:c6:00.0, Vendor Id = 0x10de, Device Id = 0x22a3, Class = 0x68000' \
    'nvidia-nvswitch1: Failed to initialize device : -1' \
    'nvidia-nvswitch: Probing device 0000:c7:00.0, Vendor Id = 0x10de, Device Id = 0x22a3, Class = 0x68000' \
    'nvidia-nvswitch2: Failed to initialize device : -1'
write switch-not-initialized "$t" '.gpus[].fabric.state = "not_started"'
cat >"$here/switch-not-initialized/expect" <<'X'
# 8 x H100 HGX: NVSwitches 0000:c6:00.0 and 0000:c7:00.0 failed the NVSwitch driver's probe at boot (no entry in /proc/driver/nvidia-nvswitch), so Fabric Manager cannot configure the fabric and no GPU joined it
exit 2
+ fabric.switch-not-initialized object=nvidia-nvswitch
+ fabric.gpu-not-ready gpu=0
+ fabric.gpu-not-ready gpu=7
- fabric.fm-not-running
- fabric.fm-version
- fabric.sxid
X

# After a reboot: the service was never enabled, so Fabric Manager is not running and no GPU is
# registered with the fabric.
t=$(copy not-running)
rm -r "$t/proc/4242" "$t/etc/systemd/system/multi-user.target.wants"
write fm-not-running "$t" '.gpus[].fabric.state = "not_started"'
cat >"$here/fm-not-running/expect" <<'X'
# 8 x H100 HGX after a reboot: nvidia-fabricmanager is installed but not enabled, so it is not running and no GPU joined the NVLink fabric
exit 2
+ fabric.fm-not-running object=nvidia-fabricmanager
+ fabric.gpu-not-ready gpu=0
+ fabric.gpu-not-ready gpu=7
- fabric.fm-version
- fabric.fm-errors
X

# Unattended upgrades moved Fabric Manager to 550.90.07 while the driver stayed at 550.54.15:
# Fabric Manager exits at its next start with the version error in its log.
t=$(copy version)
rm -r "$t/proc/4242"
sed -i 's/^Version: 550.54.15-1$/Version: 550.90.07-1/' "$t/var/lib/dpkg/status"
printf '%s\n' \
    '[Dec 02 2025 09:41:03] [INFO] [tid 1893] Fabric Manager version 550.90.07 is running with the following configuration options' \
    '[Dec 02 2025 09:41:03] [ERROR] [tid 1893] fabric manager NVIDIA GPU driver interface version 550.90.07 don'"'"'t match with driver version 550.54.15. Please update with matching NVIDIA driver package.' \
    >>"$t/var/log/fabricmanager.log"
write fm-version "$t" '.gpus[].fabric.state = "not_started"'
cat >"$here/fm-version/expect" <<'X'
# unattended upgrades moved Fabric Manager to 550.90.07, the driver is 550.54.15: Fabric Manager exits at start, no GPU joins the fabric
exit 2
+ fabric.fm-version object=nvidia-fabricmanager
+ fabric.fm-not-running object=nvidia-fabricmanager
+ fabric.fm-errors object=nvidia-fabricmanager
+ fabric.gpu-not-ready gpu=3
- stack.driver-mismatch
X

# Fabric Manager runs, but could not train two NVSwitch links since its start.
t=$(copy errors)
printf '%s\n' \
    '[Dec 02 2025 06:58:44] [ERROR] [tid 4242] failed to train NVLink connection for NVSwitch 0000:c6:00.0 port 21' \
    '[Dec 02 2025 06:58:44] [ERROR] [tid 4242] failed to train NVLink connection for NVSwitch 0000:c6:00.0 port 22' \
    >>"$t/var/log/fabricmanager.log"
write fm-errors "$t"
cat >"$here/fm-errors/expect" <<'X'
# Fabric Manager runs but logged two link-training failures on one NVSwitch since it started
exit 1
+ fabric.fm-errors object=nvidia-fabricmanager
- fabric.fm-not-running
- fabric.fm-version
X

# A fatal SXid on one NVSwitch, and repeated non-fatal ones on another.
t=$(copy sxid)
kmsg "$t" \
    'nvidia-nvswitch1: SXid (PCI:0000:c6:00.0): 12028, Non-fatal, Link 21 egress non-posted PRIV error (First)' \
    'nvidia-nvswitch1: SXid (PCI:0000:c6:00.0): 12028, Severity 0 Engine instance 21 Sub-engine instance 00' \
    'nvidia-nvswitch1: SXid (PCI:0000:c6:00.0): 12028, Data {0x00000000, 0x00000000, 0x00000000}' \
    'nvidia-nvswitch1: SXid (PCI:0000:c6:00.0): 12028, Non-fatal, Link 21 egress non-posted PRIV error' \
    'nvidia-nvswitch2: SXid (PCI:0000:c7:00.0): 24007, Fatal, Link 36 sourcetrack timeout error' \
    'nvidia-nvswitch2: SXid (PCI:0000:c7:00.0): 24007, Severity 5 Engine instance 36 Sub-engine instance 00'
write sxid-fatal "$t"
cat >"$here/sxid-fatal/expect" <<'X'
# NVSwitch 0000:c7:00.0 reported a fatal SXid on port 36; NVSwitch 0000:c6:00.0 two non-fatal ones on port 21
exit 2
+ fabric.sxid object=NVSwitch 0000:c7:00
+ fabric.sxid object=NVSwitch 0000:c6:00
- fabric.fm-not-running
X

# Single-bit ECC errors an NVSwitch corrected, which NVIDIA's guide says have no impact: information.
t=$(copy sxid-ecc)
kmsg "$t" \
    'nvidia-nvswitch0: SXid (PCI:0000:c5:00.0): 19049, Non-fatal, Link 12 Single bit ECC error' \
    'nvidia-nvswitch0: SXid (PCI:0000:c5:00.0): 19049, Non-fatal, Link 12 Single bit ECC error'
write sxid-corrected "$t"
cat >"$here/sxid-corrected/expect" <<'X'
# NVSwitch 0000:c5:00.0 reported two single-bit ECC errors it corrected (SXid 19049): information only
exit 0
+ fabric.sxid object=NVSwitch 0000:c5:00
X

# An SXid NVIDIA's guide calls always fatal: the whole host must be reset, not one switch.
t=$(copy sxid-always)
kmsg "$t" \
    'nvidia-nvswitch3: SXid (PCI:0000:c8:00.0): 22003, Fatal, Link 08 Minion Halt'
write sxid-always-fatal "$t"
cat >"$here/sxid-always-fatal/expect" <<'X'
# NVSwitch 0000:c8:00.0 reported SXid 22003 (Minion Halt), which NVIDIA's Fabric Manager guide classes always fatal: the host must be reset
exit 2
+ fabric.sxid object=NVSwitch 0000:c8:00
X
