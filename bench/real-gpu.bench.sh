#!/usr/bin/env bash
# Figures measured on real GPUs are not produced by make bench (this machine has none): they are
# recorded by hand from scripts/device-check.sh's output in bench/real-gpu.md, copied here so
# regenerating docs/performance.md keeps them.
set -euo pipefail
cat "$SRC/bench/real-gpu.md"
