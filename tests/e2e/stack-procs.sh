#!/usr/bin/env bash
# From a real GPU process to its framework build, across collectors: a process maps files from a
# PyTorch install (copies of a system library, preloaded into `sleep` under the names torch's
# and the cuDNN wheel's libraries have), the NVML simulator lists it on a GPU, the processes
# collector sees its maps, and the stack collector finds the install from them: torch's version
# and CUDA from version.py, cuDNN from the wheel the process loaded.
. "$SRC/tests/fixtures/nvml/common.bash"

lib=
for c in /lib/x86_64-linux-gnu/libm.so.6 /usr/lib/x86_64-linux-gnu/libm.so.6 /lib64/libm.so.6 \
    /lib/aarch64-linux-gnu/libm.so.6 /usr/lib/libm.so.6; do
    [ -f "$c" ] && { lib=$c; break; }
done
[ -n "$lib" ] || { echo "SKIP: no libm.so.6 to preload"; exit 77; }

SP=$TMP/venv/lib/python3.11/site-packages
mkdir -p "$SP/torch/lib" "$SP/nvidia/cudnn/lib" "$SP/nvidia_cudnn_cu12-9.1.0.70.dist-info"
cp "$lib" "$SP/torch/lib/libtorch_cuda.so"
cp "$lib" "$SP/nvidia/cudnn/lib/libcudnn.so.9"
printf '%s\n' "__version__ = '2.4.0+cu124'" "cuda: Optional[str] = '12.4'" \
    "hip: Optional[str] = None" >"$SP/torch/version.py"
printf 'Metadata-Version: 2.1\nName: nvidia-cudnn-cu12\nVersion: 9.1.0.70\n' \
    >"$SP/nvidia_cudnn_cu12-9.1.0.70.dist-info/METADATA"

LD_PRELOAD="$SP/torch/lib/libtorch_cuda.so $SP/nvidia/cudnn/lib/libcudnn.so.9" sleep 300 &
pid=$!
trap 'kill $pid 2>/dev/null; wait 2>/dev/null; rm -rf "$TMP"' EXIT
for _ in $(seq 100); do
    grep -q libtorch_cuda.so "/proc/$pid/maps" 2>/dev/null && break
    sleep 0.05
done
grep -q libtorch_cuda.so "/proc/$pid/maps" || { echo "FAIL: the preload did not map"; exit 1; }

SCEN=$(scenario gpu-process "$(jq -n --argjson gpu "$BASE_GPU" --argjson sys "$SYSTEM" \
    --argjson pid "$pid" '{schema: "gpudoctor.scenario/1", system: $sys,
      gpus: [$gpu + {processes: [{pid: $pid, used_bytes: 1073741824, type: ["compute"]}]}]}')")
snap "$SCEN" --only nvml,processes,stack

check '.collectors.stack.state' '"ok"'
check "[.stack.frameworks[] | select(.site_packages == \"$SP\")] | length" '1'
check "[.stack.frameworks[] | select(.site_packages == \"$SP\")][0] |
    [.name, .pid, .processes, .version, .cuda_version, .hip_version, .cudnn_version, .found_from]" \
    "[\"torch\", $pid, 1, \"2.4.0+cu124\", \"12.4\", null, \"9.1.0.70\", \"maps\"]"
finish
