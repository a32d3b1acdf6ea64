#!/usr/bin/env bash
# make bench: runs every benchmark in bench/*.bench.sh and writes docs/performance.md.
# Figures come from this machine, now; the file says which machine and when, and each section
# measures its baselines in the same run, so numbers are comparable within the file.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
export BUILD GPUDOCTOR="$BUILD/gpudoctor" SIM_LIB="$BUILD/sim/libnvidia-ml.so.1" \
    RUNSTAT="$BUILD/tests/helpers/runstat" SRC="$PWD"
[ -x "$GPUDOCTOR" ] || { echo "bench: build first (make build)" >&2; exit 1; }
[ -x "$RUNSTAT" ] || { echo "bench: $RUNSTAT missing (build with tests enabled)" >&2; exit 1; }

out=docs/performance.md
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
{
    echo "# Performance"
    echo
    echo "Measured by \`make bench\` (bench/run.sh). Not asserted by tests: machines are shared and noisy."
    echo
    echo "- date: $(date -u +%Y-%m-%dT%H:%MZ)"
    echo "- gpudoctor: $("$GPUDOCTOR" --version) ($(git rev-parse --short HEAD 2>/dev/null || echo unknown))"
    echo "- machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)"
    echo "- kernel: $(uname -r)"
    for b in bench/*.bench.sh; do
        [ -e "$b" ] || continue
        echo
        # One section that fails is said in the file; the others are still measured.
        bash "$b" || { echo; echo "($b failed: exit $?)"; failed=1; }
    done
} >"$tmp"
mv "$tmp" "$out"
trap - EXIT
cat "$out"
[ -z "${failed:-}" ] || { echo "bench: a section failed (see $out)" >&2; exit 1; }
