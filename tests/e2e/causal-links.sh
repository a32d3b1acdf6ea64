#!/usr/bin/env bash
# Causes before consequences (issue 17): a GSP fault (Xid 119/120) that wedged the driver ranks
# before the NVML hang it explains; JSON numbers the findings and carries caused_by/explains,
# the text report says "caused by #1" and the verdict names the cause; explain shows the links
# both ways and docs/rules.md lists the known chains.
set -uo pipefail
: "${GPUDOCTOR:?}" "${SRC:?}"
command -v jq >/dev/null || { echo "jq not installed"; exit 77; }
export GPUDOCTOR_CONFIG=/dev/null NO_COLOR=1 LC_ALL=C.UTF-8
unset COLUMNS
. "$SRC/tests/e2e/lib.bash"
has() { grep -qF -- "$2" <<<"$1" || fail "expected '$2' in: $(head -c 600 <<<"$1")"; }
snap=$SRC/tests/incidents/012-xid120-gsp-error-nvidia-smi-hangs/snapshot.json

"$GPUDOCTOR" check --from "$snap" --json >"$tmp/json"
[ $? = 2 ] || fail "check --json: expected exit 2"
[ "$(jq -r '.findings[0].id' "$tmp/json")" = health.xid ] || fail "first finding is not the Xid"
hung=$(jq '[.findings[] | select(.id == "health.nvml-hung")][0]' "$tmp/json")
cause=$(jq -r '.caused_by' <<<"$hung")
[ "$cause" != null ] || fail "health.nvml-hung has no caused_by"
[ "$(jq -r --argjson n "$cause" '.findings[$n - 1].id' "$tmp/json")" = health.xid ] ||
    fail "health.nvml-hung is caused by finding $cause, not an Xid"
jq -e --argjson n "$(jq '.number' <<<"$hung")" --argjson c "$cause" \
    '.findings[$c - 1].explains | index($n) != null' "$tmp/json" >/dev/null ||
    fail "the cause does not list the hang in explains"
jq -e '[.findings[] | .number] == [range(1; (.findings | length) + 1)]' "$tmp/json" >/dev/null ||
    fail "findings are not numbered 1..n in order"
jq -e '.findings[0].caused_by == null' "$tmp/json" >/dev/null || fail "the root cause has a cause"
# every caused_by points at an earlier finding: causes come first
jq -e '[.findings[] | select(.caused_by != null) | .caused_by < .number] | all' "$tmp/json" \
    >/dev/null || fail "a consequence ranks before its cause"
has "$(jq -r '.verdict.text' "$tmp/json")" "which explains: NVML did not answer"

out=$("$GPUDOCTOR" check --from "$snap")
has "$out" "CRITICAL #1 GPU at PCI 0000:3b:00: Xid"
has "$out" "caused by #1: GPU at PCI 0000:3b:00"
has "$out" "[health.nvml-hung]"
# the consequence's fix starts by pointing at its cause's: fixing that may clear it
hung=$(awk '/^ *\[health.nvml-hung\]$/ { on = 1 } on && /fix:/ { print; exit }' <<<"$out")
has "$hung" "fix: # first #1's fix, its cause: this may clear with it"
cause_fix=$(awk '/CRITICAL #1 / { on = 1 } on && /fix:/ { print; exit }' <<<"$out")
[[ "$cause_fix" != *"first #"* ]] || fail "the cause's own fix points elsewhere: $cause_fix"
wide=$(sed 's/—/-/g' <<<"$out" | awk 'length($0) > 80 { print; exit }')
[ -z "$wide" ] || fail "text report line wider than 80 columns: $wide"

jq -e '[.findings[] | .fix_in_cause] | all(. == false)' "$tmp/json" >/dev/null ||
    fail "a finding whose own fixes apply is marked fix_in_cause"

# Where the cause's fix is the consequence's (an NVSwitch not probed: restarting Fabric Manager
# cannot register the GPUs), each consequence points at it instead of repeating its own fixes.
snap=$SRC/tests/scenarios/switch-not-initialized/snapshot.json
"$GPUDOCTOR" check --from "$snap" --json >"$tmp/fabric.json"
jq -e '[.findings[] | select(.id == "fabric.gpu-not-ready")] | length == 8 and
       all(.fix_in_cause == true and .caused_by == 1 and (.fix | length) > 0)' \
    "$tmp/fabric.json" >/dev/null || fail "gpu-not-ready is not marked fix_in_cause with its fixes"
jq -e '.findings[0].fix_in_cause == false' "$tmp/fabric.json" >/dev/null ||
    fail "the cause itself is marked fix_in_cause"
out=$("$GPUDOCTOR" check --from "$snap")
consequence=$(awk '/^CRITICAL #2 / { on = 1 } on && /^$/ { exit } on' <<<"$out")
has "$consequence" "fix: # #1's fix, its cause, clears this too; if it stays after"
[[ "$consequence" != *"restart nvidia-fabricmanager"* ]] ||
    fail "the consequence still repeats the Fabric Manager restart: $consequence"
[ "$(grep -c 'restart nvidia-fabricmanager' <<<"$out")" = 0 ] ||
    fail "a Fabric Manager restart is printed although the cause makes it futile"
has "$("$GPUDOCTOR" explain fabric.gpu-not-ready)" "fixed by the cause's fix"

out=$("$GPUDOCTOR" explain health.nvml-hung)
has "$out" "Can be caused by"
has "$out" "health.xid (anywhere on the host, when the Xid is 48"
out=$("$GPUDOCTOR" explain health.xid)
has "$out" "Explains"
has "$out" "health.nvml-hung"
has "$(cat "$SRC/docs/rules.md")" "## Known chains"

e2e_done "causal links: all checks passed"
