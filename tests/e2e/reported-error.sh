#!/usr/bin/env bash
# The error the user saw, as evidence (check/snapshot --error TEXT): on the simulated 8 x H100 SXM
# server, CUDA's 802 is reported.system-not-ready (critical, the Fabric Manager named, its unknown
# state said as unknown; on other GPUs critical too, the service not named); a build without
# kernels for the GPU (CUDA 209, PyTorch's warnings) is stack.arch-unsupported; docker's "could
# not select device driver" is stack.container-toolkit-missing, NVML's Unknown Error
# host.container-lost-devices; 46 points at an exclusive GPU; "no CUDA-capable device" while NVML lists
# 8 GPUs is proc.cuda-visible-devices; an unknown text is reported.error (info). On the HGX
# fixture tree with Fabric Manager stopped, fabric.fm-not-running explains the 802. An exclusive
# GPU nobody is seen holding is proc.compute-mode when 46 is given; nvidia-container-cli's timeout
# makes persistence mode off a warning. Hostile text
# (quotes, $(), backticks, newlines, escape sequences) is shown printable and never reaches a fix
# command unquoted; snapshot --error then check --from gives the same findings. A pasted
# traceback over the bound keeps its recognised line (else its end); an error whose own rule has
# nothing to say (no GPU here) is still shown by reported.error.
set -uo pipefail
: "${GPUDOCTOR:?}" "${SRC:?}" "${SIM_LIB:?}"
command -v jq >/dev/null || { echo "SKIP: jq is not installed"; exit 77; }
[ -e "$SIM_LIB" ] || { echo "SKIP: the NVML simulator is not built"; exit 77; }
export GPUDOCTOR_CONFIG=/dev/null NO_COLOR=1 LC_ALL=C.UTF-8 GPUDOCTOR_STATE_DIR=off
export GPUDOCTOR_NVML_LIB=$SIM_LIB NVML_SIM_SCENARIO=$SRC/scenarios/healthy-8xh100.json
unset COLUMNS
. "$SRC/tests/e2e/lib.bash"
# eq WHAT GOT WANT
eq() { [ "$2" = "$3" ] || fail "$1: got '$2', want '$3'"; }
# ids: "id severity" of every reported.* and proc.cuda-visible-devices finding of $tmp/j
ids() {
    jq -r '[.findings[] | select((.id | startswith("reported.")) or .id == "proc.cuda-visible-devices" or .id == "stack.arch-unsupported"
           or .id == "host.container-lost-devices" or .id == "stack.container-toolkit-missing"
           or .id == "stack.cuda-lib-missing" or .id == "stack.cudnn")
           | "\(.id) \(.severity)"] | join(",")' "$tmp/j"
}
check() { "$GPUDOCTOR" check --window 0 --only nvml --json "$@" >"$tmp/j" 2>"$tmp/err"; }

# 802 on NVSwitch-class GPUs (H100 80GB HBM3), Fabric Manager not collected
check --error 'RuntimeError: CUDA error: system not yet initialized'
eq "802: exit" $? 2
eq "802: findings" "$(ids)" "reported.system-not-ready critical"
f='[.findings[] | select(.id == "reported.system-not-ready")][0]'
eq "802: first" "$(jq -r '.findings[0].id' "$tmp/j")" reported.system-not-ready
eq "802: title" "$(jq -r "$f.title" "$tmp/j")" \
    'CUDA reports "system not yet initialized" on an NVSwitch-class machine: the Fabric Manager has not registered the GPUs with the NVLink fabric'
jq -e "$f.evidence | index(\"recognised as cuda-runtime cudaErrorSystemNotReady (802): the system is not ready: required driver daemons (on NVSwitch systems, the Fabric Manager) are not running or not done\") != null" "$tmp/j" >/dev/null ||
    fail "802: the recognised error is not in the evidence"
jq -e "$f.evidence | index(\"8 GPUs of a model HGX and DGX systems join through NVSwitches (GPU 0: NVIDIA H100 80GB HBM3)\") != null" "$tmp/j" >/dev/null ||
    fail "802: the GPU model is not in the evidence"
jq -e "$f.evidence | index(\"Fabric Manager's state was not collected: whether it runs, and its version, are unknown here\") != null" "$tmp/j" >/dev/null ||
    fail "802: the unknown Fabric Manager state is not said"
eq "802: fixes" "$(jq -r "$f.fix | join(\"|\")" "$tmp/j")" \
    "systemctl status nvidia-fabricmanager   # is it running, and why not|nv-fabricmanager --version   # must be exactly the driver's version:|nvidia-smi --query-gpu=driver_version --format=csv,noheader|nvidia-smi -q | grep -A2 Fabric   # each GPU's fabric state: Completed, or In Progress / Not Started"
# the driver API's name works as well; the text's case does not matter
check --error 'cuInit: CUDA_ERROR_SYSTEM_NOT_READY'
eq "802 by name" "$(ids)" "reported.system-not-ready critical"
# 802 on GPUs no NVSwitch system uses: still critical (CUDA refuses every program), the service
# not named as the Fabric Manager
jq '.gpus[].name = "NVIDIA L40S"' "$SRC/scenarios/healthy-8xh100.json" >"$tmp/l40s.json"
NVML_SIM_SCENARIO=$tmp/l40s.json check --error 'system not yet initialized'
eq "802 L40S: exit" $? 2
eq "802 L40S" "$(ids)" "reported.system-not-ready critical"
eq "802 L40S: title" "$(jq -r "$f.title" "$tmp/j")" \
    'CUDA reports "system not yet initialized": a service CUDA needs is not ready'
eq "802 L40S: no Fabric Manager object" "$(jq -r "$f.subject.object" "$tmp/j")" null
eq "802 L40S: fixes" "$(jq -r "$f.fix[0]" "$tmp/j")" \
    "systemctl --failed   # a service CUDA waits for that did not start"

# A build without kernels for the GPU (stack.arch-unsupported, critical; reported.error stays
# out): PyTorch's warning names the capability and the build's list. Eight H100s of 9.0: no one
# GPU to name, the PyTorch build to install named.
check --error 'NVIDIA H100 80GB HBM3 with CUDA capability sm_90 is not compatible with the current PyTorch installation. The current PyTorch install supports CUDA capabilities sm_37 sm_50 sm_60 sm_70 sm_75 sm_80 sm_86. If you want to use'
eq "arch: exit" $? 2
eq "arch: findings" "$(ids)" "stack.arch-unsupported critical"
a='[.findings[] | select(.id == "stack.arch-unsupported")][0]'
eq "arch: title" "$(jq -r "$a.title" "$tmp/j")" \
    "The program's build has no kernels for the GPU's architecture (compute capability 9.0, Hopper)"
eq "arch: no GPU named" "$(jq -r "$a.subject.gpu_index" "$tmp/j")" null
jq -e "$a.evidence | index(\"the build carries code for: sm_37 sm_50 sm_60 sm_70 sm_75 sm_80 sm_86\") != null" "$tmp/j" >/dev/null ||
    fail "arch: the build's list is not in the evidence"
jq -e "$a.fix | index(\"pip install --force-reinstall torch --index-url https://download.pytorch.org/whl/cu126   # a PyTorch built with CUDA 12.6 carries code for compute capability 9.0; the driver must support CUDA 12.6\") != null" "$tmp/j" >/dev/null ||
    fail "arch: the PyTorch build to install is not named"
# one RTX 5090 (12.0) and CUDA's bare 209: that GPU named, the cu128 build
jq '.gpus |= [.[0] | .name = "NVIDIA GeForce RTX 5090" | .compute_capability_major = 12 | .compute_capability_minor = 0]' \
    "$SRC/scenarios/healthy-8xh100.json" | jq '.timeline = []' >"$tmp/5090.json"
NVML_SIM_SCENARIO=$tmp/5090.json check --error 'RuntimeError: CUDA error: no kernel image is available for execution on the device'
eq "209: findings" "$(ids)" "stack.arch-unsupported critical"
eq "209: GPU" "$(jq -r "$a.subject.gpu_index" "$tmp/j")" 0
eq "209: title" "$(jq -r "$a.title" "$tmp/j")" \
    "The program's build has no kernels for GPU 0's architecture (NVIDIA GeForce RTX 5090, compute capability 12.0, Blackwell)"
jq -e "$a.fix | map(select(startswith(\"pip install --force-reinstall torch --index-url https://download.pytorch.org/whl/cu128 \"))) | length == 1" "$tmp/j" >/dev/null ||
    fail "209: the cu128 build is not named"
# PyTorch's warning and CUDA's 209 given together, both of that GPU: one finding with both texts
NVML_SIM_SCENARIO=$tmp/5090.json check --error 'RuntimeError: CUDA error: no kernel image is available for execution on the device' \
    --error 'NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current PyTorch installation.'
eq "209 + warning: one finding" "$(ids)" "stack.arch-unsupported critical"
eq "209 + warning: both texts" "$(jq -r "[$a.evidence[] | select(startswith(\"the error given\"))] | length" "$tmp/j")" 2
# a bare 209 on eight H100s: the capability they share, no one GPU named
check --error 'RuntimeError: CUDA error: no kernel image is available for execution on the device'
eq "209 on 8: findings" "$(ids)" "stack.arch-unsupported critical"
eq "209 on 8: title" "$(jq -r "$a.title" "$tmp/j")" \
    "The program's build has no kernels for the GPU's architecture (compute capability 9.0, Hopper)"
jq -e "$a.evidence | index(\"all 8 GPUs here whose compute capability NVML gave are of 9.0\") != null" "$tmp/j" >/dev/null ||
    fail "209 on 8: the shared capability is not said"
# PyTorch's list warning with PTX the driver can compile for the GPU: a warning, not a failure
NVML_SIM_SCENARIO=$tmp/5090.json check --error 'NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current PyTorch installation. The current PyTorch install supports CUDA capabilities sm_75 sm_80 sm_90 compute_90.'
eq "ptx: findings" "$(ids)" "stack.arch-unsupported warning"
jq -e "$a.evidence | map(select(startswith(\"the build carries PTX for compute_90\"))) | length == 1" "$tmp/j" >/dev/null ||
    fail "ptx: the PTX is not named"
# PyTorch's range warning on a GB10 (12.1), which runs the range's 12.0 code: information
jq '.gpus[0].name = "NVIDIA GB10" | .gpus[0].compute_capability_minor = 1' "$tmp/5090.json" >"$tmp/gb10.json"
NVML_SIM_SCENARIO=$tmp/gb10.json check --error 'Found GPU0 NVIDIA GB10 which is of cuda capability 12.1. Minimum and Maximum cuda capability supported by this version of PyTorch is (8.0) - (12.0)'
eq "gb10: exit" $? 0
eq "gb10: findings" "$(ids)" "stack.arch-unsupported info"
eq "gb10: title" "$(jq -r "$a.title" "$tmp/j")" \
    "PyTorch warns about GPU 0 (NVIDIA GB10, compute capability 12.1, Blackwell), whose architecture runs the build's code: the warning is harmless"
# the same range warning on a P100 (6.0), below the range's 7.0: critical
check --error 'Found GPU0 Tesla P100-PCIE-16GB which is of cuda capability 6.0. Minimum and Maximum cuda capability supported by this version of PyTorch is (7.0) - (12.0)'
eq "p100 range: findings" "$(ids)" "stack.arch-unsupported critical"
# PyTorch's "too old" warning: the capability and the build's minimum read from the text
check --error 'Found GPU0 Tesla K40m which is of cuda capability 3.5. PyTorch no longer supports this GPU because it is too old. The minimum cuda capability supported by this library is 3.7.'
eq "too old: findings" "$(ids)" "stack.arch-unsupported critical"
jq -e "$a.evidence | index(\"the oldest compute capability the build supports: 3.7\") != null" "$tmp/j" >/dev/null ||
    fail "too old: the build's minimum is not in the evidence"
jq -e "$a.fix | index(\"# no PyTorch release of today is built for compute capability 3.5: use an older release built with CUDA 11.x or older, or build PyTorch with TORCH_CUDA_ARCH_LIST=3.5\") != null" "$tmp/j" >/dev/null ||
    fail "too old: the way out is not said"

# docker's "could not select device driver" is the container toolkit missing; NVML's Unknown
# Error given on a host whose NVML works came from a container that lost its GPUs
check --error 'docker: Error response from daemon: could not select device driver "" with capabilities: [[gpu]].'
eq "docker: findings" "$(ids)" "stack.container-toolkit-missing critical"
jq -e '[.findings[] | select(.id == "stack.container-toolkit-missing")][0].fix | index("sudo nvidia-ctk runtime configure --runtime=docker && sudo systemctl restart docker   # register it with docker and restart the daemon") != null' "$tmp/j" >/dev/null ||
    fail "docker: the toolkit's registration is not in the fix"
check --error 'Failed to initialize NVML: Unknown Error'
eq "nvml unknown: findings" "$(ids)" "host.container-lost-devices critical"
eq "nvml unknown: title" "$(jq -r '[.findings[] | select(.id == "host.container-lost-devices")][0].title' "$tmp/j")" \
    "The error given is NVML's Unknown Error, which a container that has lost its GPUs prints; NVML works here"

# a CUDA library the program cannot load: the releases that ship its soname (data/cuda-sonames.tsv)
# against the toolkits here; a soname's version is not its CUDA release
l='[.findings[] | select(.id == "stack.cuda-lib-missing")][0]'
# (the stack not read, as with --only nvml: whether a toolkit here ships it is unknown, not "none")
check --error 'ImportError: libcublas.so.9.1: cannot open shared object file: No such file or directory'
eq "lib: findings" "$(ids)" "stack.cuda-lib-missing critical"
eq "lib: title" "$(jq -r "$l.title" "$tmp/j")" \
    "The program cannot load libcublas.so.9.1: the CUDA toolkits here were not read, so whether one of them ships it is not known"
jq -e "$l.evidence | index(\"libcublas.so.9.1 ships with CUDA 9.1 only: the program was built with it\") != null" "$tmp/j" >/dev/null ||
    fail "lib: the release that ships it is not said"
# toolkit-older-cuda has CUDA 9.2 only: none of the 11.x that ship libcudart.so.11.0
fromlib() { "$GPUDOCTOR" check --from "$SRC/tests/scenarios/$1/snapshot.json" --json --error "$2" >"$tmp/j" 2>"$tmp/err"; }
fromlib toolkit-older-cuda "Could not load dynamic library 'libcudart.so.11.0'; dlerror: libcudart.so.11.0: cannot open shared object file"
eq "lib 11.0: title" "$(jq -r "$l.title" "$tmp/j")" \
    "The program cannot load libcudart.so.11.0, which ships with CUDA 11.0 to 11.8: none of them is installed here"
jq -e "$l.evidence | index(\"libcudart.so.11.0 ships with CUDA 11.0 to 11.8: the program was built with one of them\") != null" "$tmp/j" >/dev/null ||
    fail "lib 11.0: the releases that ship it are not said"
jq -e "$l.fix | map(select(startswith(\"# install the libraries of one CUDA release from 11.0 to 11.8 \"))) | length == 1" "$tmp/j" >/dev/null ||
    fail "lib 11.0: the fix does not name the range"
# toolkit-mismatch has CUDA 11.8 in /usr/local/cuda-11.8: it ships libcudart.so.11.0
fromlib toolkit-mismatch "ImportError: libcudart.so.11.0: cannot open shared object file: No such file or directory"
eq "lib 11.8: title" "$(jq -r "$l.title" "$tmp/j")" \
    "The program cannot load libcudart.so.11.0: CUDA 11.8.0, installed here, ships it, but the dynamic linker does not look where it is"
check --error 'ImportError: libcublas.so.99: cannot open shared object file'
eq "lib unknown: findings" "$(ids)" "stack.cuda-lib-missing critical"
eq "lib unknown: title" "$(jq -r "$l.title" "$tmp/j")" \
    "The program cannot load libcublas.so.99: which CUDA release ships it is not known here"
jq -e "$l.fix | map(select(startswith(\"# install\"))) | length == 0" "$tmp/j" >/dev/null ||
    fail "lib unknown: a release to install is guessed"
# cuDNN's is stack.cudnn's, with the wheel for the framework's CUDA when that is known
check --error 'Could not load library libcudnn_cnn_infer.so.8. Error: libcudnn_cnn_infer.so.8: cannot open shared object file'
eq "cudnn: findings" "$(ids)" "stack.cudnn warning"
# disabled, its rule leaves the error to reported.error: it never vanishes
printf 'disable = stack.cuda-lib-missing\n' >"$tmp/off.conf"
GPUDOCTOR_CONFIG=$tmp/off.conf check --error 'ImportError: libcublas.so.9.1: cannot open shared object file'
eq "lib disabled: findings" "$(ids)" "reported.error info"

# 46, every GPU shared: information with what to check
check --error 'CUDA error: all CUDA-capable devices are busy or unavailable'
eq "46 shared" "$(ids)" "reported.devices-unavailable info"
# 46 with GPU 3 exclusive and held: a warning naming the mode, explained by proc.compute-mode
jq '.gpus[3].compute_mode = "exclusive_process"' "$SRC/scenarios/healthy-8xh100.json" >"$tmp/excl.json"
NVML_SIM_SCENARIO=$tmp/excl.json check --error 'CUDA-capable device(s) is/are busy or unavailable'
eq "46 exclusive" "$(ids)" "reported.devices-unavailable warning"
jq -e '[.findings[] | select(.id == "reported.devices-unavailable")][0].evidence | index("GPU 3 compute mode: exclusive_process") != null' "$tmp/j" >/dev/null ||
    fail "46: GPU 3's mode is not in the evidence"
cause=$(jq -r '[.findings[] | select(.id == "reported.devices-unavailable")][0].caused_by' "$tmp/j")
eq "46: caused by" "$(jq -r --argjson n "$cause" '.findings[$n - 1].id' "$tmp/j" 2>/dev/null)" proc.compute-mode

# 46 with GPU 3 exclusive and nobody on it (the job's own first process held it, and ended):
# proc.compute-mode takes the refusal as the process seen failing, and comes first
jq '.gpus[3].compute_mode = "exclusive_process" | .gpus[3].processes = [] | .gpus[3].util_gpu_pct = 0
    | .gpus[3].mem_free_bytes += .gpus[3].mem_used_bytes | .gpus[3].mem_used_bytes = 0' \
    "$SRC/scenarios/healthy-8xh100.json" >"$tmp/unheld.json"
NVML_SIM_SCENARIO=$tmp/unheld.json check --error 'CUDA error: all CUDA-capable devices are busy or unavailable'
eq "46 unheld: first" "$(jq -r '.findings[0] | "\(.id) \(.severity) \(.subject.gpu_index)"' "$tmp/j")" \
    "proc.compute-mode warning 3"
eq "46 unheld: title" "$(jq -r '.findings[0].title' "$tmp/j")" \
    "GPU 3 is exclusive_process and CUDA refused the program a GPU: one process at a time may use it"
eq "46 unheld: fix" "$(jq -r '.findings[0].fix[-1]' "$tmp/j")" \
    "sudo nvidia-smi -i 3 -c DEFAULT   # or let several processes share it"
NVML_SIM_SCENARIO=$tmp/unheld.json check
eq "unheld, no error" "$(jq -r '[.findings[] | select(.id == "proc.compute-mode")] | length' "$tmp/j")" 0

# nvidia-container-cli timed out while persistence mode is off: the setting is the cause
jq '.gpus[].persistence_mode = false' "$SRC/scenarios/healthy-8xh100.json" >"$tmp/pm.json"
NVML_SIM_SCENARIO=$tmp/pm.json check
eq "persistence off" "$(jq -r '.findings[] | select(.id == "clock.persistence-off") | .severity' "$tmp/j")" info
NVML_SIM_SCENARIO=$tmp/pm.json check --error 'nvidia-container-cli: initialization error: driver rpc error: timed out: unknown.'
eq "persistence off, timed out" "$(jq -r '.findings[0] | "\(.id) \(.severity)"' "$tmp/j")" \
    "clock.persistence-off warning"

# "no CUDA-capable device" and PyTorch's False while NVML lists 8 GPUs
for text in 'no CUDA-capable device is detected' 'torch.cuda.is_available() returned False'; do
    check --error "$text"
    eq "no device ($text)" "$(ids)" "proc.cuda-visible-devices warning"
    jq -e '.findings[] | select(.id == "proc.cuda-visible-devices") | .evidence | index("this machine has 8 GPUs (NVML indices 0-7): an index CUDA_VISIBLE_DEVICES names must be one of them, or a GPU'"'"'s UUID") != null' "$tmp/j" >/dev/null ||
        fail "no device: the node's indices are not in the evidence"
done

# recognised without a rule of its own, and unrecognised: information
check --error 'CUDA driver version is insufficient for CUDA runtime version'
eq "35" "$(ids)" "reported.error info"
eq "35: title" "$(jq -r '.findings[] | select(.id == "reported.error") | .title' "$tmp/j")" \
    "The error given is cuda-runtime cudaErrorInsufficientDriver (35)"
check --error 'Segmentation fault (core dumped)'
eq "unrecognised" "$(ids)" "reported.error info"
eq "unrecognised: title" "$(jq -r '.findings[] | select(.id == "reported.error") | .title' "$tmp/j")" \
    "The error given is not one gpudoctor recognises"
eq "unrecognised: exit" "$(check --error 'Segmentation fault'; echo $?)" 0
eq "unrecognised: fix" "$(jq -r '.findings[] | select(.id == "reported.error") | .fix[0]' "$tmp/j")" \
    "journalctl -b --no-pager | grep -F -- 'Segmentation fault'   # where else it was logged"

# a text of several lines: the log search is for its longest line ('?' is what a newline became)
check --error $'Segfault in worker\nthread 3 died unexpectedly here'
eq "lines: fix" "$(jq -r '.findings[] | select(.id == "reported.error") | .fix[0]' "$tmp/j")" \
    "journalctl -b --no-pager | grep -F -- 'thread 3 died unexpectedly here'   # where else it was logged"

# hostile text: printable in the evidence, one quoted word in the fix, nothing run
evil=$'x\'; touch '"$tmp"$'/pwned; echo "$(touch '"$tmp"$'/pwned2)" `id` \e[31mred\nline2\x07'
check --error "$evil"
[ ! -e "$tmp/pwned" ] && [ ! -e "$tmp/pwned2" ] || fail "hostile text was run"
ev=$(jq -r '.findings[] | select(.id == "reported.error") | .evidence[0]' "$tmp/j")
eq "hostile: evidence" "$ev" "the error given: \"x'; touch $tmp/pwned; echo \"\$(touch $tmp/pwned2)\" \`id\` ?[31mred?line2?\""
fix=$(jq -r '.findings[] | select(.id == "reported.error") | .fix[0]' "$tmp/j")
# (the search is for the longest part without a '?', which stands for a control character no log
# line holds)
eq "hostile: fix" "$fix" "journalctl -b --no-pager | grep -F -- 'x'\\''; touch $tmp/pwned; echo \"\$(touch $tmp/pwned2)\" \`id\`'   # where else it was logged"
# the quoted word is exactly that part: bash reads it back as one argument
word=$(bash -c 'eval "set -- ${1#*grep -F -- }"; printf %s "$1"' _ "${fix%%   #*}")
eq "hostile: one word" "$word" "x'; touch $tmp/pwned; echo \"\$(touch $tmp/pwned2)\" \`id\`"
[ ! -e "$tmp/pwned" ] || fail "hostile text was run by the quoting check"
"$GPUDOCTOR" check --window 0 --only nvml --error "$evil" >"$tmp/text" 2>&1
grep -q $'\e\\[31m' "$tmp/text" && fail "an escape sequence reached the terminal report"
# a leading '-' never becomes an option of the fix's command: a comment names it instead
check --error '-rf /'
jq -e '.findings[] | select(.id == "reported.error") | .fix | all(startswith("journalctl") | not)' "$tmp/j" >/dev/null ||
    fail "a text starting with '-' went into a command"
# bounded
check --error "$(head -c 5000 /dev/zero | tr '\0' a)"
eq "bounded" "$(jq -r '.snapshot.reported.errors[0].text | length' "$tmp/j" 2>/dev/null || echo missing)" 1024

# snapshot --error, then check --from: the same findings, from what the snapshot recorded
"$GPUDOCTOR" snapshot --window 0 --only nvml --error 'system not yet initialized' \
    --error 'Segmentation fault' -o "$tmp/s.json" || fail "snapshot --error failed"
eq "snapshot: recorded" "$(jq -c '[.reported.errors[] | [.text, .error, .api, .number]]' "$tmp/s.json")" \
    '[["system not yet initialized","cudaErrorSystemNotReady","cuda-runtime",802],["Segmentation fault","unrecognised",null,null]]'
"$GPUDOCTOR" check --from "$tmp/s.json" --json >"$tmp/j" 2>"$tmp/err"
eq "from: findings" "$(ids)" "reported.system-not-ready critical,reported.error info"

# a recorded text over the bound is cut there; a UTF-8 sequence cut in two becomes '?'
jq --arg t "$(head -c 1023 /dev/zero | tr '\0' a)é$(head -c 10 /dev/zero | tr '\0' b)" \
    '.reported.errors[0].text = $t' "$tmp/s.json" >"$tmp/long.json"
"$GPUDOCTOR" check --from "$tmp/long.json" --json >"$tmp/j" 2>"$tmp/err"
eq "from: cut" "$(jq -r '.snapshot.reported.errors[0].text | .[1020:]' "$tmp/j")" "aaa?"

# A whole traceback pasted (over the bound): its recognised line is kept and judged; a long text
# nothing recognises keeps its end, from a whole line.
tb="Traceback (most recent call last):"
for i in $(seq 60); do tb+=$'\n'"  File \"/home/u/train.py\", line $i, in <module>"$'\n'"    x = model(batch_$i)"; done
tb+=$'\nRuntimeError: CUDA error: no kernel image is available for execution on the device'
tb+=$'\nCUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.'
check --error "$tb"
eq "traceback: findings" "$(ids)" "stack.arch-unsupported critical"
eq "traceback: kept" "$(jq -r '.snapshot.reported.errors[0].text' "$tmp/j")" \
    "RuntimeError: CUDA error: no kernel image is available for execution on the device"
junk=""
for i in $(seq 80); do junk+="line $i of something nobody catalogued"$'\n'; done
junk+="the last line"
check --error "$junk"
kept=$(jq -r '.snapshot.reported.errors[0].text' "$tmp/j")
eq "long unrecognised: the end kept" "${kept: -13}" "the last line"
eq "long unrecognised: from a whole line" "${kept:0:5}" "line "
eq "long unrecognised: bounded" "$([ ${#kept} -le 1024 ] && echo yes)" yes

# An error whose own rule has nothing to say (no GPU: NVML cannot load) is still reported.
GPUDOCTOR_NVML_LIB=$tmp/no-such-libnvidia-ml.so check --error 'CUDA error: no CUDA-capable device is detected'
eq "no GPU: findings" "$(ids)" "reported.error info"
eq "no GPU: the text shown" "$(jq -r '[.findings[] | select(.id == "reported.error")][0].evidence | index("the error given: \"CUDA error: no CUDA-capable device is detected\"") != null' "$tmp/j")" true

# nvidia-smi's version mismatch where the snapshot shows it: stack.driver-mismatch quotes it, and
# reported.error stands back; where NVML cannot load at all, reported.error gives its meaning.
"$GPUDOCTOR" check --from "$SRC/tests/scenarios/driver-mismatch/snapshot.json" --json \
    --error 'Failed to initialize NVML: Driver/library version mismatch' >"$tmp/j" 2>"$tmp/err"
eq "mismatch: findings" "$(jq -r '[.findings[] | "\(.id) \(.severity)"] | join(",")' "$tmp/j")" \
    "stack.driver-mismatch critical"
eq "mismatch: quoted" "$(jq -r '.findings[0].evidence[0]' "$tmp/j")" \
    'the error given: "Failed to initialize NVML: Driver/library version mismatch"'
GPUDOCTOR_NVML_LIB=$tmp/no-such-libnvidia-ml.so check --error 'Failed to initialize NVML: Driver/library version mismatch'
eq "mismatch elsewhere" "$(ids)" "reported.error info"
eq "mismatch elsewhere: title" "$(jq -r '.findings[0].title' "$tmp/j")" \
    "The error given is nvml NVML_ERROR_LIB_RM_VERSION_MISMATCH (18)"

# usage errors
"$GPUDOCTOR" check --error '' >/dev/null 2>&1
eq "empty --error" $? 64

# on the HGX fixture tree with Fabric Manager stopped, the fabric finding is the cause
cp -a "$SRC/tests/fixtures/fabric/hgx" "$tmp/stopped"
rm -r "$tmp/stopped/proc/4242"
"$GPUDOCTOR" check --root "$tmp/stopped" --only fabric --window 0 --json \
    --error 'system not yet initialized' >"$tmp/j" 2>"$tmp/err"
eq "fm stopped: first" "$(jq -r '.findings[0].id' "$tmp/j")" fabric.fm-not-running
cause=$(jq -r '[.findings[] | select(.id == "reported.system-not-ready")][0].caused_by' "$tmp/j")
eq "fm stopped: caused by" "$(jq -r --argjson n "$cause" '.findings[$n - 1].id' "$tmp/j" 2>/dev/null)" \
    fabric.fm-not-running
jq -e '[.findings[] | select(.id == "reported.system-not-ready")][0] | .severity == "critical" and (.evidence | index("nv-fabricmanager is not running") != null)' "$tmp/j" >/dev/null ||
    fail "fm stopped: the 802 finding does not say what the collector saw"

e2e_done "ok"
