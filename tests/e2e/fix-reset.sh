#!/usr/bin/env bash
# The GPU reset fix lines follow NVIDIA's rules for nvidia-smi -r (rules/fix-reset.c): a GPU with
# NVLink peers before Ampere, or on an NVSwitch system whose Fabric Manager is not running, is
# not reset alone but with every GPU after draining the node; an H100 with Fabric Manager up is
# reset alone; where the evidence lacks what decides it, the line says so; every reset says what
# to stop when it is refused as in use. A lost GPU is given a
# reboot, not a reset; a GPU that computes is never offered a reset for memory no visible process
# holds; DCGM's memory diagnostics run on the one GPU.
set -uo pipefail
: "${GPUDOCTOR:?}" "${SRC:?}"
. "$SRC/tests/e2e/lib.bash"
need jq
export GPUDOCTOR_CONFIG=/dev/null NO_COLOR=1 GPUDOCTOR_STATE_DIR=off
sc=$SRC/tests/scenarios

# fixes FILE RULE: the fix lines of RULE's findings, one per line
fixes() {
    "$GPUDOCTOR" check --from "$1" --json 2>/dev/null | jq -r --arg r "$2" '.findings[] | select(.id == $r) | .fix[]'
}
has() { grep -qF -- "$2" <<<"$1" || fail "$3: no line with '$2' in: $1"; }
hasnt() { ! grep -qF -- "$2" <<<"$1" || fail "$3: a line with '$2' in: $1"; }

# An NVLink H100 node (NVSwitches, Fabric Manager running) whose GPU 2 had uncorrectable errors.
jq '.gpus[2].ecc_mode = true | .gpus[2].ecc_volatile_uncorrected = 2' \
    "$sc/healthy-8gpu-nvlink/snapshot.json" >"$tmp/h100.json"
f=$(fixes "$tmp/h100.json" health.ecc-uncorrectable)
has "$f" "sudo nvidia-smi -r -i 2   # after draining it" "H100, Fabric Manager up"
has "$f" "In use by another client" "H100, Fabric Manager up"
has "$f" "sudo dcgmi diag -r 3 -i 2" "H100: DCGM's diagnostics of GPU 2 only"
hasnt "$f" "sudo nvidia-smi -r   #" "H100, Fabric Manager up"

# The same without Fabric Manager: every GPU together.
jq '.fabric.fm_running = false | .fabric.fm_pid = null' "$tmp/h100.json" >"$tmp/no-fm.json"
f=$(fixes "$tmp/no-fm.json" health.ecc-uncorrectable)
has "$f" "# GPU 2 cannot be reset alone (on an NVSwitch system whose Fabric Manager is not running" "no Fabric Manager"
has "$f" "sudo nvidia-smi -r   # every GPU" "no Fabric Manager"
hasnt "$f" "nvidia-smi -r -i 2" "no Fabric Manager"

# Before Ampere (a V100's compute capability 7.0) with NVLink up: every GPU together.
jq '.gpus[].compute_capability_major = 7' "$tmp/h100.json" >"$tmp/v100.json"
f=$(fixes "$tmp/v100.json" health.ecc-uncorrectable)
has "$f" "(before Ampere, a GPU is reset together with its NVLink peers)" "V100 NVLink"
hasnt "$f" "nvidia-smi -r -i 2" "V100 NVLink"

# Before Ampere, its NVLinks all down: alone.
jq '.gpus[2].nvlink[].active = false' "$tmp/v100.json" >"$tmp/v100-down.json"
f=$(fixes "$tmp/v100-down.json" health.ecc-uncorrectable)
has "$f" "sudo nvidia-smi -r -i 2" "V100, NVLinks down"

# Evidence that lacks what decides it (an import: no NVLink state, architecture or Fabric
# Manager state): the reset of the one GPU, after a line saying what is not known and the rule.
jq 'del(.gpus[].nvlink, .gpus[].compute_capability_major, .gpus[].compute_capability_minor,
        .gpus[].architecture, .fabric)' "$tmp/h100.json" >"$tmp/bare.json"
f=$(fixes "$tmp/bare.json" health.ecc-uncorrectable)
has "$f" "# can GPU 2 be reset alone? not known here (its NVLinks, its architecture, NVSwitches and Fabric Manager): one with an active NVLink (nvidia-smi nvlink -s -i 2)" "nothing known"
has "$f" "sudo nvidia-smi -r -i 2   # after draining it" "nothing known"
# A V100 whose NVLink state was not read: only that is unknown.
jq 'del(.gpus[].nvlink)' "$tmp/v100.json" >"$tmp/v100-bare.json"
f=$(fixes "$tmp/v100-bare.json" health.ecc-uncorrectable)
has "$f" "not known here (its NVLinks):" "V100, NVLinks not read"
# An H100 with NVLink up and no Fabric Manager evidence: only that is unknown.
jq 'del(.fabric)' "$tmp/h100.json" >"$tmp/h100-nofab.json"
f=$(fixes "$tmp/h100-nofab.json" health.ecc-uncorrectable)
has "$f" "not known here (NVSwitches and Fabric Manager):" "H100, no fabric evidence"
# Known and decisive: no such line.
f=$(fixes "$tmp/h100.json" health.ecc-uncorrectable)
hasnt "$f" "not known here" "H100, Fabric Manager up"

# No reset can work where NVML hangs (nvidia-smi -r is an NVML call) or the GPU fell off the bus:
# the Xid that caused it says drain and reboot instead, and the lost GPU is not "not listed".
gsp=$SRC/tests/incidents/012-xid120-gsp-error-nvidia-smi-hangs/snapshot.json
f=$(fixes "$gsp" health.xid)
has "$f" "# no reset now (NVML does not answer, and nvidia-smi -r would hang like every query): drain the node, then sudo reboot" "NVML hung"
hasnt "$f" "nvidia-smi -r -i" "NVML hung"
# The same GPU then off the bus, NVML answering: the Xid names the loss.
jq '.driver.events += [(.driver.events[0] | .xid = 79 | .message = "GPU has fallen off the bus."
      | .time_ms += 60000)] | del(.nvml.hung_call) | .collectors.nvml = {"state": "ok"}' \
    "$gsp" >"$tmp/x79.json"
f=$(fixes "$tmp/x79.json" health.xid)
has "$f" "# no reset now (the GPU is lost from the bus, and a reset rarely brings it back)" "Xid 79 after"
hasnt "$f" "nvidia-smi -r -i" "Xid 79 after"
lost=$("$GPUDOCTOR" check --from "$gsp" --json 2>/dev/null | jq -r '.findings[].evidence[]')
hasnt "$lost" "NVML does not list a GPU at that address" "NVML hung: its list is not known"

# A lost GPU: drain and reboot, no reset line.
f=$(fixes "$sc/gpu-lost/snapshot.json" health.gpu-lost)
has "$f" "# drain the node, then sudo reboot" "gpu-lost"
hasnt "$f" "nvidia-smi -r" "gpu-lost"

# Memory no visible process holds on a GPU that computes: its owner, not a reset.
f=$(fixes "$sc/mem-other-namespace/snapshot.json" mem.unaccounted)
has "$f" "is computing (95 % busy)" "mem-other-namespace"
hasnt "$f" "nvidia-smi -r" "mem-other-namespace"
# The same GPU idle, with no process NVML lists: the reset is offered.
jq '(.gpus[] | select(.index == 0)) |= (.util_gpu_pct = 0 | .processes = [])' \
    "$sc/mem-other-namespace/snapshot.json" >"$tmp/idle.json"
f=$(fixes "$tmp/idle.json" mem.unaccounted)
has "$f" "sudo nvidia-smi -r -i 0   # nothing computes on it" "idle GPU, no process"

e2e_done "reset fix lines: all checks passed"
