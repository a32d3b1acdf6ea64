#!/usr/bin/env bash
# src/cuda/cublaslt-abi.h against NVIDIA's cublasLt.h, cublas_api.h and library_types.h:
# tests/cuda/cublaslt-abi-check.c asserts, at compile time, every constant, every signature and
# the heuristic result's layout. Skipped (77) where no cuBLASLt header is installed; CUDA_INCLUDE
# names another include directory.
set -u
inc=${CUDA_INCLUDE:-/usr/local/cuda/include}
if [ ! -f "$inc/cublasLt.h" ]; then
    echo "SKIP: no cublasLt.h in $inc"
    exit 77
fi
cc=${CC:-cc}
version=$(sed -n 's/^#define CUBLAS_VER_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\).*/\2/p' "$inc/cublas_api.h" | paste -sd.)
echo "cublasLt.h: $inc/cublasLt.h (cuBLAS $version)"
if ! "$cc" -std=c11 -Wall -Wextra -fsyntax-only -I"$inc" -I"$SRC/src" \
    "$SRC/tests/cuda/cublaslt-abi-check.c"; then
    echo "FAIL: src/cuda/cublaslt-abi.h differs from $inc/cublasLt.h (above)"
    exit 1
fi
# The check itself must be able to fail: a copy of our header with one value changed, then one
# signature.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/cuda"
cp "$SRC/src/cuda/cuda-abi.h" "$tmp/cuda/"
sed 's/X(CUDA_R_8F_E4M3, 28)/X(CUDA_R_8F_E4M3, 29)/' "$SRC/src/cuda/cublaslt-abi.h" >"$tmp/cuda/cublaslt-abi.h"
if "$cc" -std=c11 -fsyntax-only -I"$inc" -I"$tmp" "$SRC/tests/cuda/cublaslt-abi-check.c" 2>"$tmp/err"; then
    echo "FAIL: a changed value was not caught"
    exit 1
fi
grep -q 'CUDA_R_8F_E4M3 differs' "$tmp/err" || { echo "FAIL: wrong error:"; cat "$tmp/err"; exit 1; }
sed 's/uint64_t rows, uint64_t cols, int64_t ld/uint64_t rows, uint64_t cols, int ld/' \
    "$SRC/src/cuda/cublaslt-abi.h" >"$tmp/cuda/cublaslt-abi.h"
if "$cc" -std=c11 -fsyntax-only -I"$inc" -I"$tmp" "$SRC/tests/cuda/cublaslt-abi-check.c" 2>"$tmp/err"; then
    echo "FAIL: a changed signature was not caught"
    exit 1
fi
grep -q 'cublasLtMatrixLayoutCreate has another signature' "$tmp/err" || { echo "FAIL: wrong error:"; cat "$tmp/err"; exit 1; }
echo "ok: every constant, signature and layout matches cuBLAS $version"
