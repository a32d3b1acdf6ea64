#!/usr/bin/env bash
# The bench's PTX kernels (src/cuda/kernels/*.ptx) assemble with NVIDIA's ptxas for several
# architectures, and carry the header and entry points the bench and the CUDA simulator use.
# Skipped (77) without ptxas; PTXAS names another one.
set -u
ptxas=${PTXAS:-/usr/local/cuda/bin/ptxas}
[ -x "$ptxas" ] || ptxas=$(command -v ptxas || true)
if [ -z "$ptxas" ] || [ ! -x "$ptxas" ]; then
    echo "SKIP: no ptxas"
    exit 77
fi
dir=$SRC/src/cuda/kernels
fail=0
declare -A entry=([triad]=gd_triad [fma]=gd_fma [checksum]=gd_checksum)
declare -A params=([triad]=5 [fma]=4 [checksum]=3)
for k in triad fma checksum; do
    f=$dir/$k.ptx
    grep -qx '.version 7.0' "$f" || { echo "FAIL: $k.ptx: not PTX ISA 7.0"; fail=1; }
    grep -qx '.target sm_70' "$f" || { echo "FAIL: $k.ptx: not .target sm_70"; fail=1; }
    grep -q "^.visible .entry ${entry[$k]}(" "$f" || { echo "FAIL: $k.ptx: no entry ${entry[$k]}"; fail=1; }
    n=$(grep -c "^[[:space:]]*\.param " "$f")
    [ "$n" = "${params[$k]}" ] || { echo "FAIL: $k.ptx: $n parameters, expected ${params[$k]}"; fail=1; }
    for arch in sm_70 sm_75 sm_80 sm_90; do
        if out=$("$ptxas" -arch=$arch -o /dev/null "$f" 2>&1); then
            echo "ok: $k.ptx assembles for $arch"
        elif printf '%s' "$out" | grep -q "is not defined for option 'gpu-name'"; then
            echo "note: this ptxas does not know $arch ($k.ptx not checked for it)"
        else
            echo "FAIL: $k.ptx for $arch: $out"
            fail=1
        fi
    done
done
# A broken kernel must fail: the check is not vacuous.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sed 's/fma.rn.f32/fma.bogus.f32/' "$dir/fma.ptx" >"$tmp/bad.ptx"
if "$ptxas" -arch=sm_80 -o /dev/null "$tmp/bad.ptx" 2>/dev/null; then
    echo "FAIL: a broken PTX file assembled"
    fail=1
fi
exit $fail
