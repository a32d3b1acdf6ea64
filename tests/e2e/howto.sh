#!/usr/bin/env bash
# docs/architecture.md's "How to add a command / a rule / a collector / a metric", followed once for
# trivial cases on a copy of the tree: a command `hello`, a rule `pcie.demo-always`, a collector
# `demo` that fills host.demo_answer, a metric gpudoctor_demo_answer for it. The hand-written
# steps are tests/e2e/howto/*.patch, the steps that are commands (docs generated from tables) are
# below; then the copy is built (the gpudoctor target) and each must appear where the document
# promises, the copy's own docs tests must pass, and the document must name every file the
# patches touch. When a recipe and the code drift apart, this fails: change the document, the
# patches and this script together.
set -uo pipefail
: "${SRC:?}" "${GPUDOCTOR:?}"
export GPUDOCTOR_CONFIG=/dev/null NO_COLOR=1 LC_ALL=C.UTF-8
for tool in git patch cmake tar jq; do
    command -v "$tool" >/dev/null || { echo "$tool not installed"; exit 77; }
done
git -C "$SRC" rev-parse --is-inside-work-tree >/dev/null 2>&1 || { echo "$SRC is no git checkout"; exit 77; }
here=$SRC/tests/e2e/howto
doc=$SRC/docs/architecture.md
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}
has() { grep -qF -- "$2" <<<"$1" || fail "$3: expected '$2' in: $(head -c 600 <<<"$1")"; }

# The document names every file the recipes touch (the examples' new files by their names too).
howto=$(sed -n '/^## How to add/,$p' "$doc")
[ -n "$howto" ] || fail "docs/architecture.md has no 'How to add' section"
for f in $(sed -n 's|^+++ b/||p' "$here"/*.patch) docs/rules.md docs/slurm.md docs/snapshot.md \
    docs/prometheus.md; do
    grep -qF -- "$f" <<<"$howto" || grep -qF -- "$(basename "$f")" <<<"$howto" ||
        fail "docs/architecture.md's 'How to add' does not name $f, which a recipe touches"
done

# The built tree has none of it: the checks below can fail.
"$GPUDOCTOR" hello >/dev/null 2>&1 && fail "the tree under test already has a command hello"
"$GPUDOCTOR" explain --list | grep -q 'pcie.demo-always' && fail "the tree already has pcie.demo-always"

# A copy of the source tree: what git tracks, and new files not ignored (a change being made).
copy=$tmp/src
mkdir "$copy"
(cd "$SRC" && git ls-files -z -co --exclude-standard |
    while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
    tar --null -T - -cf -) | tar -xf - -C "$copy" || { echo "FAIL: cannot copy the tree"; exit 1; }

# The recipes' hand-written steps, one patch each, in the document's order.
for p in "$here"/1-command.patch "$here"/2-rule.patch "$here"/3-collector.patch "$here"/4-metric.patch; do
    patch -d "$copy" -p1 --batch --no-backup-if-mismatch -s <"$p" >"$tmp/patch.log" 2>&1 || {
        cat "$tmp/patch.log"
        echo "FAIL: ${p#"$SRC"/} no longer applies: the code moved; update the recipe and the patch"
        exit 1
    }
done
# The rule's line in docs/slurm.md's table of job problems (a long line: edited, not patched).
sed -i 's/`clock.power-cap` |$/`clock.power-cap`, `pcie.demo-always` |/' "$copy/docs/slurm.md"
grep -q 'pcie.demo-always' "$copy/docs/slurm.md" || fail "docs/slurm.md has no row of job problems ending in clock.power-cap"

cmake -S "$copy" -B "$copy/build" -DBUILD_TESTING=OFF >"$tmp/cmake.log" 2>&1 &&
    cmake --build "$copy/build" --target gpudoctor -j2 >>"$tmp/cmake.log" 2>&1 || {
    tail -n 40 "$tmp/cmake.log"
    echo "FAIL: the copy with the recipes applied does not build"
    exit 1
}
grep -E '(warning|error):' "$tmp/cmake.log" && fail "the recipes' code compiles with warnings"
gd=$copy/build/gpudoctor

# The docs generated from tables, as the recipes say.
(cd "$copy" && "$gd" explain --markdown >docs/rules.md && "$gd" snapshot --describe >docs/snapshot.md &&
    "$gd" serve --describe-metrics >"$tmp/metrics.md" &&
    awk -v table="$tmp/metrics.md" '/^<!-- metrics:end -->$/ { while ((getline l < table) > 0) print l; skip = 0 }
        !skip { print } /^<!-- metrics:begin -->$/ { skip = 1 }' docs/prometheus.md >"$tmp/prometheus.md" &&
    cp "$tmp/prometheus.md" docs/prometheus.md) || fail "regenerating the docs failed"

# A command: listed, its help, its option, a usage error.
has "$("$gd" --help)" "  hello " "gpudoctor --help"
has "$("$gd" hello)" "hello, world" "gpudoctor hello"
has "$("$gd" hello --name architecture)" "hello, architecture" "gpudoctor hello --name"
has "$("$gd" help hello | head -n 1)" "Usage: gpudoctor hello" "gpudoctor help hello"
"$gd" hello --bogus >/dev/null 2>&1
[ $? = 64 ] || fail "hello --bogus: not a usage error (64)"

# A rule: in the catalogue, explained, and a finding of a check.
has "$("$gd" explain --list)" "pcie.demo-always" "explain --list"
has "$("$gd" explain pcie.demo-always)" "The example rule ran" "explain pcie.demo-always"
"$gd" check --only demo --json >"$tmp/check.json" 2>/dev/null
jq -e '[.findings[] | select(.id == "pcie.demo-always" and .severity == "info")] | length == 1' \
    "$tmp/check.json" >/dev/null || fail "check --json has no info finding pcie.demo-always"

# A collector: --only knows it, its state and its field in the snapshot.
"$gd" snapshot --only demo >"$tmp/snap.json" 2>"$tmp/err" || fail "snapshot --only demo: $(cat "$tmp/err")"
jq -e '.collectors.demo.state == "ok" and .host.demo_answer == 42' "$tmp/snap.json" >/dev/null ||
    fail "the snapshot has no host.demo_answer 42 from an ok collector demo"
"$gd" snapshot --only bogus >/dev/null 2>"$tmp/err"
has "$(cat "$tmp/err")" "stack, demo)" "--only bogus names the known collectors"

# A metric: in the exposition, with the collector's health.
metrics=$("$gd" serve --once --only demo 2>/dev/null)
has "$metrics" "gpudoctor_demo_answer 42" "serve --once"
has "$metrics" 'gpudoctor_collector_up{collector="demo"} 1' "serve --once"

# The docs generated from tables, and the copy's own tests of them.
grep -q '^## pcie.demo-always$' "$copy/docs/rules.md" || fail "docs/rules.md has no pcie.demo-always"
grep -q 'demo_answer' "$copy/docs/snapshot.md" || fail "docs/snapshot.md has no demo_answer"
grep -q 'gpudoctor_demo_answer' "$copy/docs/prometheus.md" || fail "docs/prometheus.md has no gpudoctor_demo_answer"
for t in docs-snapshot prometheus-docs explain-cli man help; do
    GPUDOCTOR=$gd SRC=$copy BUILD=$copy/build bash "$copy/tests/e2e/$t.sh" >"$tmp/$t.log" 2>&1
    rc=$?
    [ "$rc" = 0 ] || [ "$rc" = 77 ] || { tail -n 20 "$tmp/$t.log"; fail "the copy's e2e/$t fails"; }
done

[ "$failures" = 0 ] || exit 1
echo "the four recipes of docs/architecture.md build and show where it says"
