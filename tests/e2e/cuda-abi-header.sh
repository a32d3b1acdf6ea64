#!/usr/bin/env bash
# src/cuda/cuda-abi.h against NVIDIA's cuda.h: tests/cuda/cuda-abi-check.c asserts, at compile
# time, every constant and every signature of our declarations against the real header. Skipped
# (77) where no CUDA toolkit header is installed; CUDA_INCLUDE names another include directory.
set -u
inc=${CUDA_INCLUDE:-/usr/local/cuda/include}
if [ ! -f "$inc/cuda.h" ]; then
    echo "SKIP: no cuda.h in $inc"
    exit 77
fi
cc=${CC:-cc}
version=$(sed -n 's/^#define CUDA_VERSION \([0-9]*\).*/\1/p' "$inc/cuda.h")
echo "cuda.h: $inc/cuda.h (CUDA_VERSION $version)"
if ! "$cc" -std=c11 -Wall -Wextra -fsyntax-only -I"$inc" -I"$SRC/src" \
    "$SRC/tests/cuda/cuda-abi-check.c"; then
    echo "FAIL: src/cuda/cuda-abi.h differs from $inc/cuda.h (above)"
    exit 1
fi
# The check itself must be able to fail: a copy of our header with one value changed.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/cuda"
sed 's/X(CUDA_ERROR_NOT_READY, 600)/X(CUDA_ERROR_NOT_READY, 601)/' "$SRC/src/cuda/cuda-abi.h" \
    >"$tmp/cuda/cuda-abi.h"
if "$cc" -std=c11 -fsyntax-only -I"$inc" -I"$tmp" "$SRC/tests/cuda/cuda-abi-check.c" 2>"$tmp/err"; then
    echo "FAIL: a changed value was not caught"
    exit 1
fi
grep -q 'CUDA_ERROR_NOT_READY differs' "$tmp/err" || { echo "FAIL: wrong error:"; cat "$tmp/err"; exit 1; }
echo "ok: every constant and signature matches CUDA_VERSION $version"
