#!/usr/bin/env bash
# Regenerates root/ for scenario.json: driver 470.223.02 (CUDA 11.4) loaded, CUDA toolkits 11.4
# and 12.4 installed side by side under /usr/local, and /usr/local/cuda pointing at 12.4; a job
# (pid 48211) runs on GPU 0 with the framework's own runtime.
set -euo pipefail
cd "$(dirname "$0")"
. ../make-root.lib.sh
host_base 32
driver_version 470.223.02
mkdir -p root/home/alice/run

# toolkit DIR SDK CUDART NVCC
toolkit() {
    mkdir -p "root/usr/local/$1/bin"
    printf '{"cuda": {"name": "CUDA SDK", "version": "%s"}, "cuda_cudart": {"name": "CUDA Runtime (cudart)", "version": "%s"}, "cuda_nvcc": {"name": "CUDA NVCC", "version": "%s"}}\n' \
        "$2" "$3" "$4" >"root/usr/local/$1/version.json"
    printf '#!/bin/sh\necho "Cuda compilation tools, release %s"\n' "${4%.*}" >"root/usr/local/$1/bin/nvcc"
    chmod +x "root/usr/local/$1/bin/nvcc"
}
toolkit cuda-11.4 11.4.20210623 11.4.43 11.4.48
toolkit cuda-12.4 12.4.20240229 12.4.99 12.4.99
ln -sfn cuda-12.4 root/usr/local/cuda

proc 1 systemd S 0 0 0 60 1 12000 / -- /sbin/init
proc 48211 python R 1 1000 3610 21000 48 52000000 /home/alice/run -- \
    /usr/bin/python3 -u train.py --config base.yaml
gpu 48211 0
echo "root/ regenerated"
