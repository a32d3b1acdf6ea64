#!/usr/bin/env bash
# gpudoctor procs on real processes that the NVML simulator lists as GPU processes: an active
# trainer (SM 97 %) with three data-loader workers, a stopped process, a zombie, an idle one and
# a pid /proc does not show. Checks the verdicts, the tree, the filters and sort orders, the
# 80-column table, --window 0, --from a snapshot, and the usage errors.
. "$SRC/tests/e2e/reap-lib.bash"
SCENARIO_FOLLOW=false # the scenario lists a pid that does not exist; nothing is ended here

# The trainer holds the devices (reap-target holder); its workers do not (fds 100 and 101 closed).
"$HELPERS/reap-target" holder bash -c 'for i in 1 2 3; do sleep 300 100<&- 101<&- & done; exec sleep 300' &
trainer=$!
PIDS+=("$trainer")
became "$trainer" sleep
for _ in $(seq 100); do [ "$(pgrep -P "$trainer" | wc -l)" = 3 ] && break; sleep 0.02; done
mapfile -t workers < <(pgrep -P "$trainer" | sort -n)
[ "${#workers[@]}" = 3 ] || { echo "FAIL: the trainer's workers did not start"; exit 1; }
PIDS+=("${workers[@]}")
start_sleep
stopped=$SPAWNED
kill -STOP "$stopped"
start_helper zombie-parent
zombie=${READY#* }
start_sleep
idle=$SPAWNED
ghost=4194000 # above any pid this machine hands out
! [ -e /proc/$ghost ] || { echo "SKIP: pid $ghost exists"; exit 77; }
scenario "$trainer:0:40:97" "$stopped:1:20" "$zombie:1:3" "$idle:0:2" "$ghost:1:1"
sleep 0.1

run json procs --window 0.3 --json
status 0 "procs --json"
check '.schema' '"gpudoctor.procs/1"' "$TMP/json.out"
check '[.processes[] | [.pid, .verdict]]' \
    "[[$trainer, \"active\"], [$stopped, \"stopped\"], [$zombie, \"defunct\"], [$idle, \"idle\"], [$ghost, \"not-visible\"]]" \
    "$TMP/json.out"
check "[.processes[] | select(.pid == $trainer) | [.user, .state, .used_bytes, .sm_util_pct, [.gpus[].gpu_index], .children, .gpu_user, .depth]]" \
    "[[\"root\", \"S\", $((40 * GIB)), 97, [0], [${workers[0]}, ${workers[1]}, ${workers[2]}], true, 0]]" \
    "$TMP/json.out"
check "[.processes[] | select(.pid == $stopped) | (.cpu_pct | type), (.age_ms >= 0), .idle_for_min_ms]" \
    '["number", true, null]' "$TMP/json.out"
check "[.processes[] | select(.pid == $idle) | .idle_for_min_ms > 0]" '[true]' "$TMP/json.out"
check "[.processes[] | select(.pid == $ghost) | [.state, .user, .used_bytes]]" \
    "[[null, null, $GIB]]" "$TMP/json.out"

# The tree: workers under their trainer, which uses a GPU; they do not. Above it this script's
# shell and its ancestors up to init: context rows that use no GPU, each shown once.
run tree procs --window 0.3 --json --tree --sort pid
check "[.processes[] | select(.pid == $trainer or .parent == $trainer) | [.pid, .parent, .gpu_user, .context]]" \
    "[[$trainer, $$, true, false], [${workers[0]}, $trainer, false, false], [${workers[1]}, $trainer, false, false], [${workers[2]}, $trainer, false, false]]" \
    "$TMP/tree.out"
check "[.processes[] | select(.pid == $$) | [.gpu_user, .context, .verdict, .command != null]]" \
    '[[false, true, null, true]]' "$TMP/tree.out"
check "[.processes[] | select(.parent == null and .pid != $ghost) | .context] | all" 'true' "$TMP/tree.out"
check '(.processes | map(.pid) | length) == (.processes | map(.pid) | unique | length)' 'true' "$TMP/tree.out"
check "(.processes | map(select(.pid == $trainer))[0].depth) == (.processes | map(select(.pid == ${workers[0]}))[0].depth - 1)" \
    'true' "$TMP/tree.out"
check "[.processes[] | select(.pid == 1)] | length" '0' "$TMP/tree.out"
run treetext procs --window 0.3 --tree --sort pid --wide
has_line "$TMP/treetext.out" "^ *${workers[0]} root +- .* \\(no GPU\\) +\\\\_ sleep 300$" "a worker in the text tree"
has_line "$TMP/treetext.out" "^ *$$ root +- .* \\(no GPU\\) +\\\\_ .*bash" "this script's shell in the text tree"

# Filters and sort orders.
run gpu1 procs --window 0 --json --gpu 1
check '[.processes[].pid] | sort' "[$stopped, $zombie, $ghost] | sort" "$TMP/gpu1.out"
run mem procs --window 0 --json --sort mem
check '[.processes[].pid]' "[$trainer, $stopped, $zombie, $idle, $ghost]" "$TMP/mem.out"
run bypid procs --window 0 --json --sort pid
check '[.processes[].pid]' "[$trainer, $stopped, $zombie, $idle, $ghost] | sort" "$TMP/bypid.out"
run user procs --window 0 --json --user root
check '[.processes[].pid] | length' '4' "$TMP/user.out" # the ghost has no known user
run nobody procs --window 0 --user nobody
has_line "$TMP/nobody.out" "^No processes are using the GPUs \(none matches the filter\)\.$" "empty filter"
run host procs --window 0 --json --container host
check '[.processes[].pid] | length' '4' "$TMP/host.out"

# The table: 80 columns, a header, one line per process, the verdicts, and a summary.
run table procs --window 0.3
status 0 "procs"
awk 'length > 80 { bad = 1; print "FAIL: line longer than 80 columns: " $0 } END { exit bad }' \
    "$TMP/table.out" || failures=$((failures + 1))
has_line "$TMP/table.out" "^    PID USER     GPU    MEMORY  SM%  CPU% S   AGE VERDICT     COMMAND$" "header"
has_line "$TMP/table.out" "^ *$stopped root +1 +20\\.0 GiB +0% +[0-9]+% T +[0-9]+s stopped +sleep 300$" "stopped row"
has_line "$TMP/table.out" "^ *$trainer root +0 +40\\.0 GiB +97% .* active " "trainer row"
has_line "$TMP/table.out" "^5 GPU processes holding 66\\.0 GiB, 1 stopped, 1 defunct\\." "summary"
COLUMNS=200 run wide procs --window 0
[ "$RC" = 0 ] || fail "COLUMNS=200"

# Without a window: no CPU %, no idleness, and a hint.
run nowin procs --window 0
has_line "$TMP/nowin.out" "^ *$idle root +0 +2\\.0 GiB +0% +- S .* unknown " "no window: unknown"
has_line "$TMP/nowin.out" "^ *$trainer root +0 +40\\.0 GiB +97% +- S .* active " "no window: GPU work alone proves activity"
has_line "$TMP/nowin.out" "^CPU % and idleness need a sampling window" "the hint"

# --from a snapshot: the same verdicts.
"$GPUDOCTOR" snapshot --only nvml,processes --window 0.3 >"$TMP/snap.json" 2>/dev/null
run from procs --from "$TMP/snap.json" --json
check '[.processes[] | [.pid, .verdict]] | sort' \
    "[[$trainer, \"active\"], [$stopped, \"stopped\"], [$zombie, \"defunct\"], [$idle, \"idle\"], [$ghost, \"not-visible\"]] | sort" \
    "$TMP/from.out"

# Usage errors.
run badsort procs --sort size
status 64 "--sort size"
has_line "$TMP/badsort.err" "not one of mem, sm, cpu, age, pid" "why"
run badgpu procs --gpu first
status 64 "--gpu first"
run badfrom procs --from "$TMP/nothing.json"
status 3 "--from a missing file"
finish
