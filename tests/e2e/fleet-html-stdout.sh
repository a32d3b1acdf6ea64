#!/usr/bin/env bash
# `gpudoctor fleet --html -`: the page is all standard output holds (it starts with <!DOCTYPE
# html> and ends with </body></html>, no text report after it), the errors stay on standard error, the
# exit status is the report's; with --json as well, both would write to standard output: 64.
set -uo pipefail
command -v jq >/dev/null || { echo "SKIP: jq not installed"; exit 77; }
: "${GPUDOCTOR:?}" "${SRC:?}"
export GPUDOCTOR_CONFIG=/dev/null NO_COLOR=1 LANG=C.UTF-8
. "$SRC/tests/e2e/lib.bash"
BASE=$SRC/tests/scenarios/healthy-8gpu-busy/snapshot.json
mkdir "$tmp/d"
for i in 0 1 2 3 4; do
    jq -c --arg h "node0$i" '.hostname = $h' "$BASE" >"$tmp/d/node0$i.json"
done
# node00 an outlier (a lower power limit), and a file that is not a snapshot
jq -c '.gpus[0].power_limit_mw = 600000' "$tmp/d/node00.json" >"$tmp/n" && mv "$tmp/n" "$tmp/d/node00.json"
printf 'garbage' >"$tmp/d/zz-bad.json"

rc=0
"$GPUDOCTOR" fleet --html - "$tmp/d" >"$tmp/page" 2>"$tmp/err" || rc=$?
check "--html -: exit status (an outlier, an input unread)" "$rc" 3
check "--html -: the first line" "$(head -1 "$tmp/page")" "<!DOCTYPE html>"
check "--html -: the last line" "$(tail -1 "$tmp/page")" "</body></html>"
check "--html -: one page" "$(grep -c '<!DOCTYPE html>' "$tmp/page")" 1
grep -q '^NODE \|^Outliers, most serious first\|^not read: ' "$tmp/page" &&
    fail "--html -: the text report is on standard output too: $(grep -m3 '^NODE \|^Outliers\|^not read' "$tmp/page")"
check "--html -: standard error" "$(cat "$tmp/err")" \
    "gpudoctor fleet: $tmp/d/zz-bad.json: line 1, column 7: '[' or '{' expected near 'garbage'"
grep -qF 'node00' "$tmp/page" || fail "--html -: the page does not name the outlier"
# the same page as --html FILE writes
"$GPUDOCTOR" fleet --html "$tmp/page.html" "$tmp/d" >/dev/null 2>&1
cmp -s "$tmp/page" "$tmp/page.html" || fail "--html - and --html FILE differ"

rc=0
"$GPUDOCTOR" fleet --html - --json "$tmp/d" >"$tmp/both" 2>"$tmp/err" || rc=$?
check "--html - --json: exit status" "$rc" 64
check "--html - --json: nothing on standard output" "$(wc -c <"$tmp/both")" 0
grep -qF -- "--html - and --json both write to standard output: give --html a file" "$tmp/err" ||
    fail "--html - --json: standard error $(cat "$tmp/err")"

e2e_done "ok"
