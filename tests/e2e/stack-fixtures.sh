#!/usr/bin/env bash
# The CUDA stack collector through the built binary on a fixture tree: toolkits of every vintage,
# libraries from the ld.so.conf directories, the system cuDNN header.
set -euo pipefail
command -v jq >/dev/null || { echo "jq not installed"; exit 77; }
OUT=$(mktemp)
trap 'rm -f "$OUT"' EXIT
fail=0

check() {
    local got
    got=$(jq -c "$1" "$OUT")
    if [ "$got" != "$2" ]; then
        echo "FAIL: $1: got $got, want $2" >&2
        fail=1
    fi
}

CUDA_HOME=/usr/local/cuda-10.0 "$GPUDOCTOR" snapshot --root "$SRC/tests/fixtures/stack/basic" \
    --only stack -o "$OUT"
check '[.stack.toolkits[] | [.path, .version, .version_source]]' \
    '[["/opt/cuda-12.2","12.2.140","nvcc"],["/usr/local/cuda-10.0","10.0.130","version.txt"],["/usr/local/cuda-11.8","11.8.89","version.json"],["/usr/local/cuda-12.4","12.4.1","version.json"],["/usr/local/cuda-13.0","13.0.96","dist-info"]]'
check '[.stack.toolkits[] | select(.is_default) | .path]' '["/usr/local/cuda-12.4"]'
# gpudoctor's own $CUDA_HOME says nothing about another root: not used there.
check '[.stack.toolkits[] | select(.is_cuda_home) | .path]' '[]'
check '.stack.cuda_home' 'null'
check '[.stack.libraries[] | [.kind, .version]]' \
    '[["cudart","12.4.127"],["cudart","13.0.96"],["cudnn","8.9.7"],["cudnn","9.19.0.56"],["nccl","2.28.9"],["cuda","550.54.15"],["nvml","550.54.15"]]'
check '.stack | [.cudnn_version, .cudnn_source, .ld_source]' \
    '["8.9.7","/usr/include/x86_64-linux-gnu/cudnn_version_v8.h","/etc/ld.so.conf"]'
check '.stack.frameworks' '[]'

"$GPUDOCTOR" snapshot --root "$SRC/tests/fixtures/stack/garbage" --only stack -o "$OUT"
check '.collectors.stack.state' '"partial"'
check '[.stack.toolkits[] | .path]' '["/usr/local/cuda-12.0"]'

exit $fail
