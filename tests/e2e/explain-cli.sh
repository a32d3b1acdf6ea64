#!/usr/bin/env bash
# gpudoctor explain from the outside: one rule with its thresholds in force, the list, unknown ids
# with close matches (exit 64), the Markdown that docs/rules.md is.
set -uo pipefail
: "${GPUDOCTOR:?}" "${SRC:?}"
export GPUDOCTOR_CONFIG=/dev/null NO_COLOR=1 LC_ALL=C.UTF-8 # the report in UTF-8, 80 columns
unset COLUMNS
. "$SRC/tests/e2e/lib.bash"
run() {
    "$GPUDOCTOR" "$@" >"$tmp/out" 2>"$tmp/err"
    RC=$?
    OUT=$(cat "$tmp/out")
    ERR=$(cat "$tmp/err")
}
has() { grep -qF -- "$2" <<<"$1" || fail "expected '$2' in: $(head -c 400 <<<"$1")"; }
status() { [ "$RC" = "$1" ] || fail "exit $RC, expected $1 ($2); stderr: $ERR"; }
fits() { # every line of $1 within 80 columns
    local wide
    wide=$(sed 's/—/-/g; s/°/o/g' <<<"$1" | awk 'length($0) > 80 { print; exit }')
    [ -z "$wide" ] || fail "$2: line wider than 80 columns: $wide"
}

run explain proc.idle-holder
status 0 "explain a rule"
has "$OUT" "proc.idle-holder — GPU memory held by an idle process"
has "$OUT" "severity: warning, category: process"
for section in "What it means" "How it is detected" "Thresholds" "How to fix it"; do
    has "$OUT" "$section"
done
has "$OUT" "idle_holder_min_age_s = 600 s (default)"
fits "$OUT" "explain proc.idle-holder"

# The thresholds shown are the ones in force, with where they were set.
printf '# site\n\nidle_holder_min_age_s = 1800\n' >"$tmp/site.conf"
run explain --config "$tmp/site.conf" --set holder_min_mib=1024 proc.idle-holder
status 0 "explain with a config"
has "$OUT" "idle_holder_min_age_s = 1800 s (set in $tmp/site.conf:3; default 600 s)"
has "$OUT" "holder_min_mib = 1024 MiB (set in --set; default 256 MiB)"
run explain --set disable=proc.idle-holder proc.idle-holder
has "$OUT" "(disabled by the configuration)"
run explain mem.full-idle
has "$OUT" "Gives way to"
has "$OUT" "proc.stopped-holder"

# Unknown ids: exit 64 and the closest ones.
run explain proc.stoped-holder
status 64 "misspelt id"
has "$ERR" "no rule 'proc.stoped-holder'"
has "$ERR" "Did you mean:"
has "$ERR" "  proc.stopped-holder"
run explain holder
status 64 "a word of an id"
for id in proc.stopped-holder proc.zombie-holder proc.orphan-holder proc.idle-holder; do
    has "$ERR" "  $id"
done
run explain
status 64 "nothing to explain"
run explain --list mem.full-idle
status 64 "--list with an id"
run explain --config "$tmp/none.conf" mem.full-idle
status 64 "missing config"

# The list: every rule once, readable at 80 columns.
run explain --list
status 0 "--list"
fits "$OUT" "explain --list"
n=$(grep -cE '^  [a-z]+\.[a-z0-9-]+ +(critical|warning|info) ' <<<"$OUT")
[ "$n" -ge 40 ] || fail "--list shows $n rules"
for id in health.nvml-hung health.xid stack.cuda-too-new mem.full-idle proc.stopped-holder \
    perf.input-starved host.disk-full clock.thermal-slowdown pcie.link-downshift; do
    grep -qE "^  $id " <<<"$OUT" || fail "--list lacks $id"
done

run explain --thresholds
status 0 "--thresholds"
has "$OUT" "mem_nearly_full_pct = 95% (default)"

# The Markdown is docs/rules.md, and the threshold table is in docs/config.md.
run explain --markdown
status 0 "--markdown"
cmp -s "$tmp/out" "$SRC/docs/rules.md" || fail "explain --markdown differs from docs/rules.md"
run explain --thresholds --markdown
grep -qF -- "$(head -3 "$tmp/out" | tail -1)" "$SRC/docs/config.md" ||
    fail "threshold table header not in docs/config.md"

e2e_done
