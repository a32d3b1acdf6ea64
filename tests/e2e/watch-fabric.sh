#!/usr/bin/env bash
# watch on the troubled HGX server of `make demo-hgx`, with traffic: GPU 0's 18 NVLinks each send
# and receive 1 GiB/s, link 7 of GPU 4 counts 50 replays a second, and a copy of the host tree
# whose mlx5_0 port counters a background writer keeps growing. --plain gives each GPU's links up,
# NVLink data and new errors, then one line per InfiniBand port (state, rate, traffic, new
# errors); the live view shows the NVLink and InfiniBand rows at 80x24; and watch now runs the
# InfiniBand and Fabric Manager collectors, so their findings are listed.
. "$(dirname "$0")/watch-lib.sh"

case_dir=$SRC/tests/scenarios/troubled-hgx-8xh100
[ -d "$case_dir/root" ] || { echo "no fixture tree $case_dir/root"; exit 77; }
cp -a "$case_dir/root" "$TMP/root"
export NVML_SIM_PROC=$TMP/root/proc GPUDOCTOR_STATE_DIR=off
# The scenario's clock starts at the first nvmlInit of each run, not at a fixed time.
unset NVML_SIM_EPOCH
jq '.timeline = ([range(18) as $l | ("tx_kib", "rx_kib") as $f |
                   {gpu: 0, link: $l, field: $f, rate_per_s: 1048576}]
                 + [{gpu: 4, link: 7, field: "replay_errors", rate_per_s: 50}])' \
    "$case_dir/scenario.json" >"$TMP/scenario.json" || fail "cannot write the scenario"
export NVML_SIM_SCENARIO=$TMP/scenario.json

# mlx5_0 port 1 receives 400 MB and sends 200 MB (in 4-byte words) and counts a symbol error at
# each turn of a loop (tens of milliseconds), each counter file replaced whole (the collector
# reads whole files).
counters=$TMP/root/sys/class/infiniband/mlx5_0/ports/1/counters
[ -f "$counters/port_rcv_data" ] || fail "no counters in the fixture tree: $counters"
grow() {
    local rcv sym xmit
    rcv=$(cat "$counters/port_rcv_data") xmit=$(cat "$counters/port_xmit_data")
    sym=$(cat "$counters/symbol_error")
    while :; do
        rcv=$((rcv + 100000000)) xmit=$((xmit + 50000000)) sym=$((sym + 1))
        echo "$rcv" >"$counters/.r" && mv "$counters/.r" "$counters/port_rcv_data"
        echo "$xmit" >"$counters/.x" && mv "$counters/.x" "$counters/port_xmit_data"
        echo "$sym" >"$counters/.s" && mv "$counters/.s" "$counters/symbol_error"
        sleep 0.02
    done
}
grow &
KIDS+=($!)

"$GPUDOCTOR" watch --plain -n 0.5 -c 4 --root "$TMP/root" >"$TMP/out" 2>"$TMP/err"
rc=$?
[ "$rc" -eq 0 ] || fail "exit status $rc: $(head -c 300 "$TMP/err")"
head -1 "$TMP/out" | grep -E '^#time +gpu .* throttle +nvlink +nvdata +nverr +findings$' >/dev/null ||
    fail "GPU header: $(head -1 "$TMP/out")"
grep -Eq '^#time +port +state +rate +rxdata +txdata +errors$' "$TMP/out" ||
    fail "no port header: $(grep '^#' "$TMP/out")"
[ "$(grep -c '^#time' "$TMP/out")" -eq 2 ] || fail "headers not once each"

gpus=$(grep -v '^#' "$TMP/out" | awk '$2 ~ /^[0-9]+$/')
ports=$(grep -v '^#' "$TMP/out" | awk '$2 == "ib"')
[ "$(echo "$gpus" | wc -l)" -eq 32 ] || fail "$(echo "$gpus" | wc -l) GPU lines, not 32"
echo "$gpus" | awk 'NF != 14 { exit 1 }' || fail "a GPU line without 14 fields"
[ "$(echo "$ports" | wc -l)" -eq 20 ] || fail "$(echo "$ports" | wc -l) port lines, not 20 (5 ports x 4)"
echo "$ports" | awk 'NF != 8 { exit 1 }' || fail "a port line without 8 fields"

gpu() { echo "$gpus" | awk -v g="$1" '$2 == g' | tail -1; }
gfield() { gpu "$1" | awk -v f="$2" '{print $f}'; }
[ "$(gfield 0 11)" = 18/18 ] || fail "GPU 0 links: $(gpu 0)"
[ "$(gfield 5 11)" = 16/18 ] || fail "GPU 5 links (two down in the scenario): $(gpu 5)"
# 18 links x 2 directions x 1 GiB/s, give or take the readings' timing
awk -v v="$(gfield 0 12)" 'BEGIN { exit !(v >= 32 && v <= 40) }' || fail "GPU 0 NVLink data: $(gpu 0)"
[ "$(gfield 1 12)" = 0.0 ] || fail "GPU 1 NVLink data: $(gpu 1)"
[ "$(gfield 1 13)" = +0 ] || fail "GPU 1 new errors: $(gpu 1)"
n=$(gfield 4 13)
[[ "$n" =~ ^\+[0-9]+$ ]] && [ "${n#+}" -ge 5 ] || fail "GPU 4 new errors: $(gpu 4)"
# the first interval has no reading before it: no rate yet
first0=$(echo "$gpus" | awk '$2 == 0' | head -1)
[ "$(echo "$first0" | awk '{print $12, $13}')" = "- -" ] || fail "GPU 0's first line: $first0"
# the fabric collectors run in watch: their findings are on the lines
gfield 0 14 | grep 'fabric.fm-errors' >/dev/null || fail "no fabric.fm-errors (Fabric Manager's log): $(gpu 0)"
gfield 0 14 | grep 'ib.port-down' >/dev/null || fail "no ib.port-down: $(gpu 0)"

port() { echo "$ports" | awk -v p="$1" '$3 == p' | tail -1; }
pfield() { port "$1" | awk -v f="$2" '{print $f}'; }
[ "$(pfield mlx5_1/1 4)" = DOWN ] || fail "mlx5_1/1: $(port mlx5_1/1)"
[ "$(pfield mlx5_2/1 4)" = INIT ] || fail "mlx5_2/1: $(port mlx5_2/1)"
[ "$(pfield mlx5_0/1 5)" = 400 ] || fail "mlx5_0/1 rate: $(port mlx5_0/1)"
awk -v v="$(pfield mlx5_0/1 6)" -v w="$(pfield mlx5_0/1 7)" 'BEGIN { exit !(v > 0 && w > 0 && v > w) }' ||
    fail "mlx5_0/1 traffic: $(port mlx5_0/1)"
n=$(pfield mlx5_0/1 8)
[[ "$n" =~ ^\+[0-9]+$ ]] && [ "${n#+}" -ge 1 ] || fail "mlx5_0/1 new errors: $(port mlx5_0/1)"
[ "$(pfield mlx5_3/1 6) $(pfield mlx5_3/1 8)" = "0.0 +0" ] || fail "mlx5_3/1: $(port mlx5_3/1)"

# The live view at 80x24: the two rows under the GPU table.
tmux_start 80 24 "'$GPUDOCTOR' watch -n 0.5 --root '$TMP/root' 2>'$TMP/tui.err'"
wait_for 'NVLINK +142/144 links up .*GiB/s +errors \+[0-9]+ \(most on GPU 4\)' 20 ||
    fail "no NVLink row: $(screen)"
wait_for 'IB +3/5 ports active \(mlx5_1/1 DOWN\) +rx [0-9.]+ [KMG]i?B/s +tx ' 10 ||
    fail "no InfiniBand row: $(screen)"
# Both rows sit right under GPU 7's line.
row=$(screen | grep -n '^  7 ' | cut -d: -f1)
[ "$(screen | sed -n "$((row + 1))p" | cut -c1-6)" = NVLINK ] || fail "NVLink row not under the GPUs: $(screen)"
keys q
finish
