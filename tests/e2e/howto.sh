#!/usr/bin/env bash
# docs/architecture.md's "How to add a command / a rule / a collector / a metric", followed once for
# trivial cases on a copy of the tree: a command `hello`, a rule `pcie.demo-always`, a collector
# `demo` that fills host.demo_answer, a metric gpudoctor_demo_answer for it. The examples' new
# files are tests/e2e/howto/*.c; their rows in the existing tables are put in below, each next to
# the line that opens its table, and the docs generated from tables are regenerated; then the copy
# is built (the gpudoctor target) and each must appear where the document promises, the copy's
# own docs tests must pass, and the document must name every file the recipes touch. When a recipe
# and the code drift apart, this fails: change the document, the example files and this script
# together.
set -uo pipefail
: "${SRC:?}" "${GPUDOCTOR:?}"
export GPUDOCTOR_CONFIG=/dev/null NO_COLOR=1 LC_ALL=C.UTF-8
for tool in git cmake tar jq; do
    command -v "$tool" >/dev/null || { echo "$tool not installed"; exit 77; }
done
git -C "$SRC" rev-parse --is-inside-work-tree >/dev/null 2>&1 || { echo "$SRC is no git checkout"; exit 77; }
here=$SRC/tests/e2e/howto
doc=$SRC/docs/architecture.md
. "$SRC/tests/e2e/lib.bash"
has() { grep -qF -- "$2" <<<"$1" || fail "$3: expected '$2' in: $(head -c 600 <<<"$1")"; }

# The built tree has none of it: the checks below can fail.
"$GPUDOCTOR" hello >/dev/null 2>&1 && fail "the tree under test already has a command hello"
"$GPUDOCTOR" explain --list | grep 'pcie.demo-always' >/dev/null && fail "the tree already has pcie.demo-always"

# A copy of the source tree: what git tracks, and new files not ignored (a change being made).
copy=$tmp/src
mkdir "$copy"
(cd "$SRC" && git ls-files -z -co --exclude-standard |
    while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
    tar --null -T - -cf -) | tar -xf - -C "$copy" || { echo "FAIL: cannot copy the tree"; exit 1; }

# The recipes' steps on the copy. Each row goes next to a line that opens its table (or a first,
# long-standing row of it), never at the table's end, so rows that other changes add at the end
# of the same tables do not matter. A line not found exactly once, or an edit that changes
# nothing, is a recipe that no longer matches the code: the test stops there.
touched=()
drifted() {
    echo "FAIL: $1: $2: the code moved; update docs/architecture.md's recipe and tests/e2e/howto.sh"
    exit 1
}
# new FILE: the example's new file, tests/e2e/howto/<its name>.
new() {
    cp "$here/$(basename "$1")" "$copy/$1" || drifted "$1" "cannot create it"
    touched+=("$1")
}
# add FILE after|before LINE ROW...: the rows right after (before) the one line of FILE that
# starts with LINE.
add() {
    local file=$1 where=$2 line=$3
    shift 3
    LINE=$line WHERE=$where ROWS=$(printf '%s\n' "$@") awk '
        index($0, ENVIRON["LINE"]) == 1 {
            n++
            if (ENVIRON["WHERE"] == "before") print ENVIRON["ROWS"]
            print
            if (ENVIRON["WHERE"] == "after") print ENVIRON["ROWS"]
            next
        }
        { print }
        END { exit n != 1 }' "$copy/$file" >"$tmp/edit" ||
        drifted "$file" "no single line starting '$line'"
    cp "$tmp/edit" "$copy/$file"
    touched+=("$file")
}
# edit FILE SED-SCRIPT: a change within a line (a list that is one line).
edit() {
    sed "$2" "$copy/$1" >"$tmp/edit" || drifted "$1" "sed '$2' fails"
    cmp -s "$tmp/edit" "$copy/$1" && drifted "$1" "'$2' changes nothing"
    cp "$tmp/edit" "$copy/$1"
    touched+=("$1")
}

# A command: hello, with an option of its own (--help lists the commands in cmd_table's order).
new src/cmd/cmd-hello.c
add src/cmd/cmd.h after 'extern const struct cmd cmd_check;' 'extern const struct cmd cmd_hello;'
add src/main.c after 'static const struct cmd *const cmd_table[] = {' '    &cmd_hello,'
add man/gpudoctor.1 after '.SH COMMANDS' \
    '.TP' '.B hello' 'Say hello' '.RB ( \-\-name' '.I WHO' 'greets someone else).'
add man/zh_CN/gpudoctor.1 after '.SH 命令' \
    '.TP' '.B hello' '打个招呼' '.RB （ \-\-name' '.I WHO' '向别人打招呼）。'
add README.md after '| `gpudoctor check` |' \
    '| `gpudoctor hello` | say hello: the example command of [docs/architecture.md](docs/architecture.md) |'

# A rule: pcie.demo-always, an info finding on every snapshot, with the PCIe rules (RULE_LIST's
# order is the catalogue's; the row padded to the list's column of backslashes); a job problem
# for slurm-check.
new src/rules/rules-demo.c
add src/rules/rule-impl.h after '    X(pcie_link_downshift) ' "$(printf '%-99s\\' '    X(pcie_demo_always)')"
add src/cmd/cmd-slurm.c after '    /* PCIe: the slot, the link, the board */' '    { "pcie.demo-always", false },'
edit docs/slurm.md 's/^\(| job problem: does not drain | .*\) |$/\1, `pcie.demo-always` |/'

# A collector: demo, filling host.demo_answer. It reads nothing, so it can run first: its id
# first in enum collector_id (the values are indexes and bits, never written: the snapshot names
# the collectors), its row first in collectors[], its name first in --only's lists.
add src/snapshot/snapshot.h after 'enum collector_id {' '    COLLECTOR_DEMO,'
add src/snapshot/snapshot.c after 'const char *const collector_names[COLLECTOR__COUNT] = {' \
    '    [COLLECTOR_DEMO] = "demo",'
# (host slots are bits of an in-memory mask; the snapshot writes the field by its key)
add src/snapshot/snap-host.h after 'enum host_slot {' '    HOST_S_DEMO_ANSWER, /* the demo collector ran */'
add src/snapshot/snap-host.h after 'struct host_info {' '    uint32_t demo_answer; /* always 42: the demo collector'"'"'s */'
add src/snapshot/snap-host.c after 'static const struct jfield host_fields[] = {' \
    '    F("demo_answer", JF_U32, demo_answer, HOST_S_DEMO_ANSWER, "the demo collector",' \
    '      "always 42: the example field of docs/architecture.md"),'
new src/collect/demo.c
add src/collect/collect.h after 'extern const struct collector_ops collector_nvml;' \
    'extern const struct collector_ops collector_demo;'
add src/collect/collect.c after 'static const struct collector_ops *const collectors[] = {' '    &collector_demo,'
add src/watch/worker.c after '} refresh[] = {' '    { BIT(COLLECTOR_DEMO), 60000, false },'
edit README.md 's/^\(| `--only LIST` | run only some collectors: `\)/\1demo,/'
edit man/gpudoctor.1 's/^Run only these collectors: /&demo, /'
edit man/zh_CN/gpudoctor.1 's/^只运行这些采集器：/&demo、/'

# A metric: gpudoctor_demo_answer, of host.demo_answer (the exposition follows the table's order).
add src/render/metrics.h after 'enum metric_source {' '    MSRC_DEMO_ANSWER, /* host.demo_answer */'
add src/render/metrics-table.c after 'const struct metric_family metric_families[] = {' \
    '    S("gpudoctor_demo_answer", GAUGE, MSRC_DEMO_ANSWER, "",' \
    '      "the demo collector'"'"'s answer (the example metric of docs/architecture.md)"),'
# the switch on what the snapshot holds: its first case
add src/render/metrics.c before '    case MSRC_COLLECTOR_UP:' \
    '    case MSRC_DEMO_ANSWER:' \
    '        if (host_valid(&s->host, HOST_S_DEMO_ANSWER))' \
    '            metrics_sample_u64(r, m, NULL, NULL, s->host.demo_answer);' \
    '        break;'

# The document names every file the recipes touch (the examples' new files by their names too).
howto=$(sed -n '/^## How to add/,$p' "$doc")
[ -n "$howto" ] || fail "docs/architecture.md has no 'How to add' section"
for f in $(printf '%s\n' "${touched[@]}" | sort -u) docs/rules.md docs/snapshot.md docs/prometheus.md; do
    grep -qF -- "$f" <<<"$howto" || grep -qF -- "$(basename "$f")" <<<"$howto" ||
        fail "docs/architecture.md's 'How to add' does not name $f, which a recipe touches"
done

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
grep -Eq '\(known: (.*, )?demo(, .*)?\)' "$tmp/err" || fail "--only bogus does not name demo: $(cat "$tmp/err")"

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

e2e_done "the four recipes of docs/architecture.md build and show where it says"
