#!/usr/bin/env bash
# `gpudoctor snapshot` on this machine: the driver part says plainly whether an NVIDIA kernel
# module is loaded, and the stack part shows the CUDA toolkit and cuDNN installed here.
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

"$GPUDOCTOR" snapshot --only driver,kernel_log,stack -o "$OUT"

if [ -e /proc/driver/nvidia ] || [ -e /sys/module/nvidia ]; then
    check '.driver.module_loaded' 'true'
    check '.driver.module_version | test("^[0-9]+\\.[0-9]+")' 'true'
else
    check '.collectors.driver | [.state, .detail]' '["unavailable","no NVIDIA kernel module loaded"]'
    check '.driver.module_loaded' 'false'
fi
# The kernel log was read from somewhere, or the reason it could not be is given.
check '.collectors.kernel_log.state | test("ok|partial|unavailable|no_permission")' 'true'

check '.collectors.stack.state | test("ok|partial")' 'true'
# Every toolkit directory here that has a version record shows up with a version.
for d in /usr/local/cuda-*; do
    [ -f "$d/version.json" ] || [ -f "$d/version.txt" ] || [ -d "$d/dist-info" ] || continue
    real=$(realpath "$d")
    check "[.stack.toolkits[] | select(.path == \"$real\") | .version != null] | any" 'true'
done
# This project's build machine ships CUDA 13.0 with cuDNN 9 in /usr/local/cuda-13.0.
if [ -d /usr/local/cuda-13.0/dist-info ]; then
    check '[.stack.toolkits[] | select(.path == "/usr/local/cuda-13.0") | .version | startswith("13.0.")] | any' 'true'
    check '.stack.cudnn_version | startswith("9.")' 'true'
fi
exit $fail
