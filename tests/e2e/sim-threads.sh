#!/usr/bin/env bash
# Thread safety: threads that initialise, read and shut down at the same time all read the
# same answers (run under ASan by `make asan`; see docs/simulator.md for a TSan run).
. "$(dirname "$0")/sim-lib.sh"

# per round: init, count, 5 calls per GPU (2 GPUs), shutdown = 13 calls
run "$FIXTURES/full.json" threads 8 200
expect threads.calls 20800
expect threads.disagreements 0
expect shutdown 0
# with a timeline to evaluate and a delay that gives up the lock in the middle of rounds
s=$(scenario threads-delay '.delays_ms = {"nvmlDeviceGetTemperature": 1}')
run "$s" threads 6 30
expect threads.calls 2340
expect threads.disagreements 0
run "$SRC/scenarios/troubled-8xh100.json" threads 4 40
expect threads.calls $((4 * 40 * (3 + 5 * 8)))
expect threads.disagreements 0
finish
