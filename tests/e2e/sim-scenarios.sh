#!/usr/bin/env bash
# The bundled scenarios load and show what they promise; the demo's pids are the ones
# docs/simulator.md lists (the fixture /proc tree of `make demo` is built from that list).
. "$(dirname "$0")/sim-lib.sh"

# ge KEY MIN / lt KEY MAX: numeric comparisons on a line's value
ge() { [ "$(value "$1")" -ge "$2" ] 2>/dev/null || fail "$1=$(value "$1"), expected at least $2"; }
lt() { [ "$(value "$1")" -lt "$2" ] 2>/dev/null || fail "$1=$(value "$1"), expected below $2"; }
mem_used_pct() { # GPU: used / total of memory v2, in percent
    value "gpu$1.nvmlDeviceGetMemoryInfo_v2" | awk '{ split($1, t, "="); split($4, u, "=");
                                                    printf "%d", u[2] * 100 / t[2] }'
}
# Calls that no H100 SXM answers (no fan, no video application clock, no acoustic thresholds,
# no Windows driver model...), and field values, which the bundled scenarios do not list
unsupported='FanSpeed|NumFans|FanSpeed_v2|video\.(app|current)|ApplicationsClock\.video|acoustic|gps_curr|invalid8|sensor1|version1|version2|\.bad=|len4|MigDeviceHandleByIndex|future|HandleByIndex(_v2)?\.8|DriverModel|FieldValues'

for name in healthy idle troubled; do
    run "$SRC/scenarios/$name-8xh100.json" dump
    expect init 0
    expect nvmlDeviceGetCount_v2 8
    expect nvmlSystemGetDriverVersion 550.54.15
    unexpected=$(grep '=!' <<<"$OUT" | grep -Ev "$unsupported" || true)
    [ -z "$unexpected" ] || fail "$name: unexpected errors: $(head -3 <<<"$unexpected" | tr '\n' ' ')"
    for i in 0 1 2 3 4 5 6 7; do
        expect gpu$i.nvmlDeviceGetName "NVIDIA H100 80GB HBM3"
        expect gpu$i.nvmlDeviceGetMaxClockInfo.sm 1980
        expect gpu$i.nvmlDeviceGetMaxClockInfo.mem 2619
        expect gpu$i.nvmlDeviceGetPowerManagementDefaultLimit 700000
        expect gpu$i.nvmlDeviceGetMaxPcieLinkGeneration 5
        expect gpu$i.nvmlDeviceGetMaxPcieLinkWidth 16
        expect gpu$i.nvmlDeviceGetCudaComputeCapability 9.0
        expect gpu$i.nvmlDeviceGetTemperatureThreshold.slowdown 89
        expect gpu$i.nvmlDeviceGetTemperatureThreshold.shutdown 92
        expect gpu$i.nvmlDeviceGetMaxClockInfo.video 1980
        expect gpu$i.nvmlDeviceGetBrand 14
        expect gpu$i.nvmlDeviceGetArchitecture 0x9
        expect gpu$i.nvmlDeviceGetNvLinkState.2 1
        [ "$(value "gpu$i.nvmlDeviceGetMemoryInfo_v2" | cut -d' ' -f1)" = total=85520809984 ] ||
            fail "$name: GPU $i memory total"
    done
done

# ---- healthy: one rank of one job per GPU, all busy, nothing wrong ----
run "$SRC/scenarios/healthy-8xh100.json" dump
for i in 0 1 2 3 4 5 6 7; do
    expect gpu$i.nvmlDeviceGetComputeRunningProcesses_v3.count 1
    value gpu$i.nvmlDeviceGetComputeRunningProcesses_v3.0 | grep "^pid=$((48211 + i)) " >/dev/null ||
        fail "healthy: GPU $i does not run rank pid $((48211 + i))"
    expect gpu$i.nvmlDeviceGetCurrentClocksEventReasons 0x0
    expect gpu$i.nvmlDeviceGetClockInfo.sm 1980
    expect gpu$i.nvmlDeviceGetPersistenceMode 1
    expect gpu$i.nvmlDeviceGetCurrPcieLinkGeneration 5
    expect gpu$i.nvmlDeviceGetTotalEccErrors.volatile.uncorrected 0
    ge gpu$i.nvmlDeviceGetTemperature 40
    lt gpu$i.nvmlDeviceGetTemperature 80
    ge gpu$i.nvmlDeviceGetPowerUsage 550000
    [ "$(mem_used_pct $i)" -ge 70 ] && [ "$(mem_used_pct $i)" -lt 95 ] ||
        fail "healthy: GPU $i memory $(mem_used_pct $i)% used"
    value "gpu$i.nvmlDeviceGetUtilizationRates" | grep -E '^gpu=(9[7-9]|100) ' >/dev/null ||
        fail "healthy: GPU $i utilisation $(value "gpu$i.nvmlDeviceGetUtilizationRates")"
done

# ---- idle: nothing running, idle clocks, links at Gen1 ----
run "$SRC/scenarios/idle-8xh100.json" dump
for i in 0 1 2 3 4 5 6 7; do
    expect gpu$i.nvmlDeviceGetComputeRunningProcesses_v3.query "0 0"
    expect gpu$i.nvmlDeviceGetUtilizationRates "gpu=0 memory=0"
    expect gpu$i.nvmlDeviceGetCurrentClocksEventReasons 0x1
    expect gpu$i.nvmlDeviceGetCurrPcieLinkGeneration 1
    expect gpu$i.nvmlDeviceGetClockInfo.sm 345
    lt gpu$i.nvmlDeviceGetPowerUsage 100000
    [ "$(mem_used_pct $i)" -eq 0 ] || fail "idle: GPU $i memory in use"
done

# ---- troubled: each problem where the docs say it is ----
run "$SRC/scenarios/troubled-8xh100.json" dump
for i in 0 1 2 3 4 5 6 7; do
    expect gpu$i.nvmlDeviceGetPersistenceMode 0
done
expect gpu0.nvmlDeviceGetComputeRunningProcesses_v3.count 2
value gpu0.nvmlDeviceGetComputeRunningProcesses_v3.1 | grep '^pid=51377 ' >/dev/null || fail "troubled: GPU 0 second process"
expect gpu2.nvmlDeviceGetTotalEccErrors.volatile.uncorrected 2
expect gpu2.nvmlDeviceGetRetiredPagesPendingStatus 1
expect gpu2.nvmlDeviceGetRemappedRows "0 1 1 0"
expect gpu3.nvmlDeviceGetUtilizationRates "gpu=0 memory=0"
expect gpu3.nvmlDeviceGetProcessUtilization.0 "pid=39104 sm=0 mem=0 enc=0 dec=0 ts_nonzero=1"
[ "$(mem_used_pct 3)" -ge 98 ] || fail "troubled: GPU 3 memory only $(mem_used_pct 3)% used"
ge gpu5.nvmlDeviceGetTemperature 88
expect gpu5.nvmlDeviceGetCurrentClocksEventReasons 0x60
lt gpu5.nvmlDeviceGetClockInfo.sm 1980
expect gpu6.nvmlDeviceGetCurrPcieLinkGeneration 3
expect gpu6.nvmlDeviceGetCurrPcieLinkWidth 8
ge gpu6.nvmlDeviceGetPcieReplayCounter 1843
value gpu6.nvmlDeviceGetUtilizationRates | grep '^gpu=63 ' >/dev/null || fail "troubled: GPU 6 not busy"
expect gpu7.nvmlDeviceGetPowerManagementLimit 450000
expect gpu7.nvmlDeviceGetEnforcedPowerLimit 450000
expect gpu7.nvmlDeviceGetCurrentClocksEventReasons 0x4

# ---- the demo's pids are documented, GPU by GPU ----
doc="$SRC/docs/simulator.md"
jq -r '.gpus[] | .index as $i | .processes[] | "\($i) \(.pid)"' \
    "$SRC/scenarios/troubled-8xh100.json" >"$TMP/pids"
[ -s "$TMP/pids" ] || fail "troubled: no processes"
while read -r gpu pid; do
    grep -Eq "^\| $gpu \| $pid \|" "$doc" || fail "docs/simulator.md does not list pid $pid on GPU $gpu"
done <"$TMP/pids"
documented=$(grep -cE '^\| [0-7] \| [0-9]+ \|' "$doc" || true)
[ "$documented" -eq "$(wc -l <"$TMP/pids")" ] ||
    fail "docs/simulator.md lists $documented demo processes, the scenario has $(wc -l <"$TMP/pids")"
finish
