#!/bin/sh
# make demo: gpudoctor on a simulated, troubled 8-GPU H100 server. The NVML simulator plays its
# eight GPUs (scenarios/troubled-8xh100.json), a fixture tree its host: processes, kernel log,
# driver. The tree is judged as of its own clock (boot time plus uptime in its /proc), so the
# report is the same today as on the day it was captured: README.md shows its first lines, and
# e2e/readme-demo checks that they match.
# With --hgx, the troubled 8 x H100 HGX server instead (scenarios/troubled-hgx-8xh100.json, make
# demo-hgx): NVSwitches, Fabric Manager and InfiniBand around the GPUs.
#   scripts/demo.sh [BUILD-DIR] [--hgx] [check options...]
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$src/build}
[ $# -gt 0 ] && shift
demo=$src/tests/scenarios/troubled-8xh100
if [ "${1:-}" = --hgx ]; then
    demo=$src/tests/scenarios/troubled-hgx-8xh100
    shift
fi
# The defaults, not this machine's /etc/gpudoctor.conf: --config FILE still applies one.
GPUDOCTOR_CONFIG=/dev/null GPUDOCTOR_NVML_LIB=$build/sim/libnvidia-ml.so.1 \
    NVML_SIM_SCENARIO=$demo/scenario.json NVML_SIM_PROC=$demo/root/proc \
    exec "$build/gpudoctor" check --root "$demo/root" --window 0 "$@"
