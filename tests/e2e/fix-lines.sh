#!/usr/bin/env bash
# Fix lines are pasted into root shells: each says only what the snapshot's evidence supports.
# For a scenario's finding, `fixes SCENARIO RULE GPU` gives its fix lines, one a line; `has` and
# `lacks` check that one of them does, or none does, contain a string.
set -uo pipefail
: "${GPUDOCTOR:?}" "${SRC:?}"
export GPUDOCTOR_CONFIG=/dev/null NO_COLOR=1 LC_ALL=C.UTF-8
. "$SRC/tests/e2e/lib.bash"
need jq

fixes() {
    "$GPUDOCTOR" check --from "$SRC/tests/scenarios/$1/snapshot.json" --json |
        jq -r --arg id "$2" --argjson gpu "$3" \
            '.findings[] | select(.id == $id and .subject.gpu_index == $gpu) | .fix[]'
}
has() { grep -qF -- "$3" <<<"$2" || fail "$1: no fix line has '$3' in: $2"; }
lacks() { ! grep -qF -- "$3" <<<"$2" || fail "$1: a fix line has '$3' in: $2"; }

# ---- clock.thermal-slowdown: a power cap only for a GPU that heat slows down now
s=thermal-max-operating-low
f=$(fixes $s clock.thermal-slowdown 5)
has "$s GPU 5 (software thermal slowdown)" "$f" "nvidia-smi -i 5 -pl "
f=$(fixes $s clock.thermal-slowdown 6)
[ -n "$f" ] || fail "$s: no finding for GPU 6, 4 °C from its slowdown temperature"
lacks "$s GPU 6 (near, no slowdown reason)" "$f" "-pl"
# GPU 3: its maximum operating temperature is set low, the cooling is fine
f=$(fixes $s clock.thermal-slowdown 3)
lacks "$s GPU 3 (maximum set low)" "$f" "-pl"
lacks "$s GPU 3 (maximum set low)" "$f" "airflow"
lacks "$s GPU 3 (maximum set low)" "$f" "thermald"
has "$s GPU 3 (maximum set low)" "$f" "nvidia-smi -i 3 -q -d TEMPERATURE"
has "$s GPU 3 (maximum set low)" "$f" "GPU Max Operating Temp"

# ---- clock.throttle-episodes: software thermal slowdown on a GPU whose maximum operating
# temperature is set low (60 °C, slowdown at 89 °C) and that stays at 61 °C is a setting, not
# heat: no airflow advice, as clock.thermal-slowdown says
rec="$SRC/tests/scenarios/throttle-episodes-recording/recording.jsonl"
jq -c 'if .schema then .gpus[0].temp_gpu_max_c = 60 else . end |
    (.gpus[]? |= if .clocks_event_reasons == "0x0000000000000004"
        then .clocks_event_reasons = "0x0000000000000020" else . end)' "$rec" >"$tmp/thermal.jsonl"
f=$("$GPUDOCTOR" check --from "$tmp/thermal.jsonl" --set trend_min_duration_s=10 --json |
    jq -r '.findings[] | select(.id == "clock.throttle-episodes" and .subject.gpu_index == 0) |
        .fix[]')
[ -n "$f" ] || fail "throttle-episodes (thermal, maximum set low): no finding for GPU 0"
lacks "throttle-episodes GPU 0 (maximum set low)" "$f" "airflow"
has "throttle-episodes GPU 0 (maximum set low)" "$f" "GPU Max Operating Temp"
# the same episodes with the maximum where it belongs (87 °C): the cooling is to check
jq -c '(.gpus[]? |= if .clocks_event_reasons == "0x0000000000000004"
        then .clocks_event_reasons = "0x0000000000000020" else . end)' "$rec" >"$tmp/thermal.jsonl"
f=$("$GPUDOCTOR" check --from "$tmp/thermal.jsonl" --set trend_min_duration_s=10 --json |
    jq -r '.findings[] | select(.id == "clock.throttle-episodes" and .subject.gpu_index == 0) |
        .fix[]')
has "throttle-episodes GPU 0 (thermal)" "$f" "airflow"
lacks "throttle-episodes GPU 0 (thermal)" "$f" "GPU Max Operating Temp"

# ---- proc.compute-mode: Prohibited is often a fence; -c does not survive a reboot
f=$(fixes compute-mode proc.compute-mode 1)
has "compute-mode GPU 1 (prohibited)" "$f" "nvidia-smi -i 1 -c DEFAULT   # only if nobody set it"
has "compute-mode GPU 1 (prohibited)" "$f" "fences a GPU"
e=$(COLUMNS=1000 "$GPUDOCTOR" explain proc.compute-mode | tr -s ' \n' '  ')
has "explain proc.compute-mode" "$e" "lasts until reboot"
lacks "explain proc.compute-mode" "$e" "unless persistence mode"

# ---- stack.driver-mismatch: a reload without a reboot frees the module and restarts what it
# stopped
f=$(fixes driver-mismatch stack.driver-mismatch null)
has "driver-mismatch" "$f" "sudo reboot"
has "driver-mismatch" "$f" "nvidia-fabricmanager"
has "driver-mismatch" "$f" "modprobe -r nvidia_peermem"
has "driver-mismatch" "$f" "sudo systemctl start nvidia-persistenced"

# ---- stack.cudnn: pin the cuDNN major the framework was built with; confirm with that framework
f=$(fixes cudnn-missing stack.cudnn null)
has "cudnn-missing (tensorflow 2.15.1)" "$f" "pip install 'nvidia-cudnn-cu12==8.*'"
has "cudnn-missing (tensorflow 2.15.1)" "$f" "import tensorflow as tf"
lacks "cudnn-missing (tensorflow 2.15.1)" "$f" "import torch"
jq '.stack.frameworks[0].name = "torch" | .stack.frameworks[0].version = "2.5.1"' \
    "$SRC/tests/scenarios/cudnn-missing/snapshot.json" >"$tmp/torch.json"
f=$("$GPUDOCTOR" check --from "$tmp/torch.json" --json |
    jq -r '.findings[] | select(.id == "stack.cudnn") | .fix[]')
has "cudnn-missing (torch 2.5.1)" "$f" "pip install 'nvidia-cudnn-cu12==9.*'"
has "cudnn-missing (torch 2.5.1)" "$f" "import torch"
lacks "cudnn-missing (torch 2.5.1)" "$f" "import tensorflow"
# the release not known: the rule that gives the major, not an install of whatever is newest
jq '.stack.frameworks[0].name = "torch" | .stack.frameworks[0].version = null' \
    "$SRC/tests/scenarios/cudnn-missing/snapshot.json" >"$tmp/torch-nover.json"
f=$("$GPUDOCTOR" check --from "$tmp/torch-nover.json" --json |
    jq -r '.findings[] | select(.id == "stack.cudnn") | .fix[]')
has "cudnn-missing (torch, release unknown)" "$f" "PyTorch 1.8 to 2.3 is built with cuDNN 8, 2.4 and later with 9"
has "cudnn-missing (torch, release unknown)" "$f" "pip show torch"
# a system cuDNN older than the build's: the wheel pinned to the recorded major, its suffix the
# build's CUDA major (11.2: cu11)
f=$("$GPUDOCTOR" check --from "$SRC/tests/scenarios/cudnn-older-system/snapshot.json" --json |
    jq -r '.findings[] | select(.id == "stack.cudnn") | .fix[]')
has "cudnn-older-system (CUDA 11.2, cuDNN 8.1.0)" "$f" "pip install 'nvidia-cudnn-cu11==8.*'"
lacks "cudnn-older-system (CUDA 11.2, cuDNN 8.1.0)" "$f" "nvidia-cudnn-cu11,"
# ... and with no CUDA version recorded, no suffix assumed: how to read it
jq '.stack.frameworks[0].cuda_version = null' \
    "$SRC/tests/scenarios/cudnn-older-system/snapshot.json" >"$tmp/cudnn-nocuda.json"
f=$("$GPUDOCTOR" check --from "$tmp/cudnn-nocuda.json" --json |
    jq -r '.findings[] | select(.id == "stack.cudnn") | .fix[]')
has "cudnn-older-system (CUDA not known)" "$f" "nvidia-cudnn-cuXX==8.*"
has "cudnn-older-system (CUDA not known)" "$f" 'get_build_info().get("cuda_version")'
lacks "cudnn-older-system (CUDA not known)" "$f" "cudnn-cu12"
lacks "cudnn-older-system (CUDA not known)" "$f" "cudnn-cu11"

# ---- clock.low-pstate: no line the evidence rules out (persistence on, clocks at their
# defaults), and the GPU's index rather than N
f=$(fixes low-pstate clock.low-pstate 2)
[ -n "$f" ] || fail "low-pstate: no finding for GPU 2"
lacks "low-pstate GPU 2 (persistence on)" "$f" " -pm 1"
lacks "low-pstate GPU 2 (application clocks at their defaults)" "$f" " -rac"
lacks "low-pstate GPU 2 (no clock-setting reason)" "$f" " -rgc"
lacks "low-pstate GPU 2" "$f" "-i N"
has "low-pstate GPU 2" "$f" "nvidia-smi -r -i 2"
jq '(.gpus[] | select(.index == 2)) |= (.persistence_mode = false | .clock_sm_app_mhz = 1100)' \
    "$SRC/tests/scenarios/low-pstate/snapshot.json" >"$tmp/low-pstate.json"
f=$("$GPUDOCTOR" check --from "$tmp/low-pstate.json" --json |
    jq -r '.findings[] | select(.id == "clock.low-pstate" and .subject.gpu_index == 2) | .fix[]')
has "low-pstate GPU 2 (persistence off)" "$f" "nvidia-smi -i 2 -pm 1"
has "low-pstate GPU 2 (application clock lowered)" "$f" "nvidia-smi -i 2 -rac"

# ---- clock.app-clocks: -rmc only for a memory clock off its default
f=$(fixes app-clocks clock.app-clocks 1)
has "app-clocks GPU 1 (SM application clock lowered)" "$f" "nvidia-smi -i 1 -rac"
lacks "app-clocks GPU 1 (memory clock at its default)" "$f" " -rmc"
jq '(.gpus[] | select(.index == 1)) |= (.clock_mem_app_mhz = 1593)' \
    "$SRC/tests/scenarios/app-clocks/snapshot.json" >"$tmp/app-clocks.json"
f=$("$GPUDOCTOR" check --from "$tmp/app-clocks.json" --json |
    jq -r '.findings[] | select(.id == "clock.app-clocks" and .subject.gpu_index == 1) | .fix[]')
has "app-clocks GPU 1 (memory clock lowered)" "$f" "nvidia-smi -i 1 -rmc"

# ---- clock.power-limit-low: the boot-time search matches nvidia-smi's and DCGM's power limit,
# not every '-pl' (-plugin, -place)
f=$(fixes power-limit-low clock.power-limit-low 7)
has "power-limit-low GPU 7" "$f" "grep -rnE 'nvidia-smi.*(-pl|--power-limit)|dcgmi config.*-P' /etc"
lacks "power-limit-low GPU 7" "$f" "grep -r -- '-pl'"

# ---- bench.host-copy-slow: the GPU's NUMA node, not a placeholder, in the numactl command
f=$(fixes bench-copy-mem-p2p bench.host-copy-slow 1)
has "bench-copy-mem-p2p GPU 1 (on node 0)" "$f" "numactl --cpunodebind=0 --membind=0 gpudoctor bench --gpus 1"
jq '(.bench.gpus[] | select(.index == 1)) |= del(.gpu_numa_node)' \
    "$SRC/tests/scenarios/bench-copy-mem-p2p/snapshot.json" >"$tmp/bench.json"
f=$("$GPUDOCTOR" check --from "$tmp/bench.json" --json |
    jq -r '.findings[] | select(.id == "bench.host-copy-slow" and .subject.gpu_index == 1) | .fix[]')
has "bench-copy-mem-p2p GPU 1 (node not known)" "$f" "# numactl --cpunodebind=NODE"

# ---- host.shm-small: a remount lasts until reboot; /etc/fstab must be edited to keep it
f=$("$GPUDOCTOR" check --from "$SRC/tests/scenarios/shm-full/snapshot.json" --json |
    jq -r '.findings[] | select(.id == "host.shm-small") | .fix[]')
has "shm-full" "$f" "remount,size=50% /dev/shm"
has "shm-full" "$f" "edit /etc/fstab's /dev/shm line"
lacks "shm-full" "$f" "fstab keeps it"
# ... and the advice follows where the processes run: shm-full's are on the host (user.slice),
# shm-small-shared's in a docker container; where it is not known, both
lacks "shm-full (on the host)" "$f" "--ipc=host"
lacks "shm-full (on the host)" "$f" "in the job's container"
has "shm-full (on the host)" "$f" "df -h /dev/shm   # on the host"
f=$("$GPUDOCTOR" check --from "$SRC/tests/scenarios/shm-small-shared/snapshot.json" --json |
    jq -r '.findings[] | select(.id == "host.shm-small") | .fix[]')
has "shm-small-shared (in a container)" "$f" "--shm-size=8g"
lacks "shm-small-shared (in a container)" "$f" "remount"
jq '.processes.processes[] |= (.ns_depth = 1)' \
    "$SRC/tests/scenarios/shm-full/snapshot.json" >"$tmp/shm-ns.json"
f=$("$GPUDOCTOR" check --from "$tmp/shm-ns.json" --json |
    jq -r '.findings[] | select(.id == "host.shm-small") | .fix[]')
has "shm-full (a PID namespace of their own)" "$f" "--ipc=host"
lacks "shm-full (a PID namespace of their own)" "$f" "remount"
jq '.processes.processes[] |= (.cgroup = null | .container_runtime = null | .container_id = null)' \
    "$SRC/tests/scenarios/shm-full/snapshot.json" >"$tmp/shm-unknown.json"
f=$("$GPUDOCTOR" check --from "$tmp/shm-unknown.json" --json |
    jq -r '.findings[] | select(.id == "host.shm-small") | .fix[]')
has "shm-full (cgroup not read)" "$f" "--ipc=host"
has "shm-full (cgroup not read)" "$f" "remount,size=50% /dev/shm"
has "shm-full (cgroup not read)" "$f" "in its container if it has one"
# a host /dev/shm already half the RAM (16 GiB of 32): size=50% would not grow it
jq '.host.mem_total_bytes = 34359738368' "$SRC/tests/scenarios/shm-full/snapshot.json" \
    >"$tmp/shm-half.json"
f=$("$GPUDOCTOR" check --from "$tmp/shm-half.json" --json |
    jq -r '.findings[] | select(.id == "host.shm-small") | .fix[]')
lacks "shm-full (half the RAM already)" "$f" "remount,size=50% /dev/shm"
has "shm-full (half the RAM already)" "$f" "already half its RAM"
f=$("$GPUDOCTOR" check --from "$SRC/tests/scenarios/shm-error-unread/snapshot.json" --json |
    jq -r '.findings[] | select(.id == "host.shm-small") | .fix[]')
has "shm-error-unread (not read)" "$f" "--ipc=host"
has "shm-error-unread (not read)" "$f" "remount,size=50% /dev/shm"

# ---- proc.stopped-holder in a Slurm job: Slurm suspends jobs with SIGSTOP and resumes them
# itself, so the fix goes through Slurm, not kill -CONT behind its back
jq '(.processes.processes[] | select(.pid == 4121 or .pid == 4122)) |=
    (.slurm_job_id = "4411" | .cgroup = "/system.slice/slurmstepd.scope/job_4411/step_0")' \
    "$SRC/tests/scenarios/stopped-holder/snapshot.json" >"$tmp/slurm-stopped.json"
f=$("$GPUDOCTOR" check --from "$tmp/slurm-stopped.json" --json |
    jq -r '.findings[] | select(.id == "proc.stopped-holder") | .fix[]')
has "stopped in Slurm job 4411" "$f" "sudo scontrol resume 4411   # resume it through Slurm"
has "stopped in Slurm job 4411" "$f" "scancel 4411"
lacks "stopped in Slurm job 4411" "$f" "kill -CONT"
f=$(fixes stopped-holder proc.stopped-holder 3)
has "stopped-holder (no Slurm)" "$f" "kill -CONT 4121"
lacks "stopped-holder (no Slurm)" "$f" "scontrol"

e2e_done
