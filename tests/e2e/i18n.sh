#!/usr/bin/env bash
# Translations (issue 15, docs/i18n.md): the catalogues are complete and sound, the text for people
# follows the language while what machines read does not, and Chinese lays out by display width.
#  - po/gpudoctor.pot is what po/update-pot.sh writes from today's sources;
#  - every po/*.po: msgfmt --check clean (printf conversions match), nothing untranslated or fuzzy,
#    every msgid of the .pot present; a fix line's translation keeps its command byte for byte;
#  - check --json is byte-identical under LANG=zh_CN.UTF-8 and LANG=C (same snapshot);
#  - the demo's report in zh_CN: Chinese verdict, titles and fix comments, every line at most 80
#    display columns (a Chinese character takes two), valid UTF-8, the same fix commands as the
#    English report; --help in zh_CN likewise, for gpudoctor and every command;
#  - explain of every rule in zh_CN: translated title and sections, within 80 columns;
#  - a usage error in zh_CN;
#  - LANGUAGE=zh_CN in a locale that is not UTF-8 (LANG=C) stays English.
set -uo pipefail
: "${GPUDOCTOR:?}" "${SRC:?}" "${BUILD:?}"
[ -e "${SIM_LIB:-}" ] || { echo "SKIP: the NVML simulator is not built"; exit 77; }
command -v msgfmt >/dev/null || { echo "SKIP: gettext (msgfmt) is not installed"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() {
    echo "FAIL: $*"
    fail=1
}
unset LC_ALL LC_MESSAGES LANGUAGE COLUMNS NVML_SIM_EPOCH
export NO_COLOR=1 NVML_SIM_QUIET=1 GPUDOCTOR_LOCALEDIR="$BUILD/locale"

# A zh_CN.UTF-8 locale of our own (the machine need not have generated one): glibc's LOCPATH.
localedef -i zh_CN -f UTF-8 "$tmp/zh_CN.UTF-8" 2>"$tmp/localedef.err" ||
    { echo "SKIP: cannot build the zh_CN.UTF-8 locale: $(head -c 200 "$tmp/localedef.err")"; exit 77; }
zh() { LOCPATH="$tmp" LANG=zh_CN.UTF-8 "$@"; }
en() { LANG=C.UTF-8 "$@"; }

# ---- the catalogues
"$SRC/po/update-pot.sh" "$tmp/fresh.pot" 2>"$tmp/xgettext.err" || bad "po/update-pot.sh failed: $(cat "$tmp/xgettext.err")"
if ! diff <(grep -v '^"POT-Creation-Date' "$SRC/po/gpudoctor.pot") \
    <(grep -v '^"POT-Creation-Date' "$tmp/fresh.pot") >"$tmp/pot.diff"; then
    bad "po/gpudoctor.pot is stale: run po/update-pot.sh and msgmerge -U po/LANG.po po/gpudoctor.pot"
    head -20 "$tmp/pot.diff"
fi
n_po=0
for po in "$SRC"/po/*.po; do
    n_po=$((n_po + 1))
    lang=$(basename "$po" .po)
    msgfmt --check -o /dev/null "$po" 2>"$tmp/msgfmt.err" || bad "$lang: msgfmt --check: $(head -5 "$tmp/msgfmt.err")"
    [ -z "$(msgattrib --untranslated --no-obsolete "$po" | grep '^msgid' | grep -v '^msgid ""$')" ] ||
        bad "$lang: untranslated entries: $(msgattrib --untranslated --no-obsolete "$po" | grep '^msgid' | sed -n 2,4p)"
    [ -z "$(msgattrib --only-fuzzy --no-obsolete "$po" | grep '^msgid')" ] ||
        bad "$lang: fuzzy entries: $(msgattrib --only-fuzzy --no-obsolete "$po" | grep '^msgid' | head -3)"
    msgcmp "$po" "$SRC/po/gpudoctor.pot" 2>"$tmp/msgcmp.err" || bad "$lang: not in step with the .pot: $(head -3 "$tmp/msgcmp.err")"
    # Fix lines: "command   # comment" keeps the command; "# comment" stays a comment.
    python3 - "$po" >"$tmp/fixes.out" <<'PY' || bad "$lang: $(cat "$tmp/fixes.out")"
import re, sys

def entries(path):
    cur, key = {}, None
    for line in open(path, encoding="utf-8"):
        line = line.rstrip("\n")
        m = re.match(r'^(msgid|msgstr) "(.*)"$', line)
        if m:
            if m.group(1) == "msgid" and cur:
                yield cur
                cur = {}
            key = m.group(1)
            cur[key] = m.group(2)
        elif line.startswith('"') and key:
            cur[key] += line[1:-1]
        elif not line.strip():
            key = None
    if cur:
        yield cur

def command(s):
    m = re.search(r"(^| )# ", s)
    return (s[: m.start()] if m else s).rstrip()

bad = []
for e in entries(sys.argv[1]):
    mid, mstr = e.get("msgid", ""), e.get("msgstr", "")
    if not mid or not mstr:
        continue
    if re.search(r"\S {2,}# ", mid) and command(mid) != command(mstr):
        bad.append("command changed: %r -> %r" % (mid, mstr))
    if mid.startswith("# ") and not mstr.startswith("# "):
        bad.append("comment no longer a comment: %r -> %r" % (mid, mstr))
    if mid.endswith("\\n") != mstr.endswith("\\n") or mid.startswith("\\n") != mstr.startswith("\\n"):
        bad.append("line ends differ: %r" % mid[:60])
    if mid.startswith("  ") and not mstr.startswith(mid[: len(mid) - len(mid.lstrip(" "))]):
        bad.append("indentation differs: %r" % mid[:60])
if bad:
    print("\n".join(bad[:5]))
    sys.exit(1)
PY
done
[ "$n_po" -ge 1 ] || bad "no translation in po/"
[ -f "$BUILD/locale/zh_CN/LC_MESSAGES/gpudoctor.mo" ] || bad "the build made no zh_CN catalogue"

# Display columns of every line that holds wide characters (East Asian wide and full-width ones
# take two); exit 1 and the offending lines when one is wider than $1, or the text is not UTF-8.
# The text is the files named after $1, or standard input.
# (Lines without any are the English renderer's: fix commands, for one, are never wrapped; so is
# one word too long for any line, such as a path with a colon after it.)
widths() {
    python3 -c '
import sys, unicodedata
limit, bad = int(sys.argv[1]), 0
for name in sys.argv[2:] or ["-"]:
    data = sys.stdin.buffer.read() if name == "-" else open(name, "rb").read()
    where = "" if name == "-" else name.rsplit("/", 1)[-1] + ": "
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        print(where + "not UTF-8:", e); bad = 1; continue
    for n, line in enumerate(text.split("\n"), 1):
        wide = [unicodedata.east_asian_width(c) in "WF" for c in line]
        w = sum(2 if x else 0 if unicodedata.combining(c) else 1 for c, x in zip(line, wide))
        piece = " " not in line.strip() and sum(wide) <= 1  # one word no wrap can split (a path)
        if any(wide) and w > limit and not piece:
            print("%sline %d is %d columns: %s" % (where, n, w, line)); bad = 1; break
sys.exit(bad)
' "$@"
}

# ---- machines read the same bytes in every language
GPUDOCTOR_CONFIG=/dev/null GPUDOCTOR_NVML_LIB="$SIM_LIB" \
    NVML_SIM_SCENARIO="$SRC/tests/scenarios/troubled-8xh100/scenario.json" \
    NVML_SIM_PROC="$SRC/tests/scenarios/troubled-8xh100/root/proc" \
    "$GPUDOCTOR" snapshot --root "$SRC/tests/scenarios/troubled-8xh100/root" --window 0 -o "$tmp/snap.json" ||
    bad "snapshot of the demo failed"
en "$GPUDOCTOR" check --from "$tmp/snap.json" --json >"$tmp/c.json"
zh "$GPUDOCTOR" check --from "$tmp/snap.json" --json >"$tmp/zh.json"
[ -s "$tmp/c.json" ] || bad "check --json wrote nothing"
cmp -s "$tmp/c.json" "$tmp/zh.json" || { bad "check --json differs under zh_CN.UTF-8"; diff "$tmp/c.json" "$tmp/zh.json" | head -5; }
jq -e '.verdict.text | test("^4 critical, 7 warnings — ")' "$tmp/zh.json" >/dev/null ||
    bad "the JSON verdict is not the English one: $(jq -r .verdict.text "$tmp/zh.json")"

# ---- people read their language, laid out by display width
en "$GPUDOCTOR" check --from "$tmp/snap.json" --width 80 >"$tmp/en.txt"
zh "$GPUDOCTOR" check --from "$tmp/snap.json" --width 80 >"$tmp/zh.txt"
# The verdict: the counts in Chinese words (the catalogue's own), then " — " and the lead finding.
head -1 "$tmp/zh.txt" | grep -E '^4 ?[^ -~]+.*7 ?[^ -~]+.* — ' >/dev/null || bad "zh_CN verdict: $(head -1 "$tmp/zh.txt")"
head -1 "$tmp/zh.txt" | grep -E 'critical|warning' >/dev/null && bad "zh_CN verdict keeps English words: $(head -1 "$tmp/zh.txt")"
grep -q '停止' "$tmp/zh.txt" || bad "the stopped holder's title is not in Chinese"
grep -q '状态 T：已停止（在其终端按了 Ctrl-Z，或收到 SIGSTOP）' "$tmp/zh.txt" || bad "the stopped holder's state is not in Chinese"
# Words from tables inside a translated line (clock event reasons, process states): in Chinese
# for people, in English in the JSON (the bytes compared above).
grep -q "时钟事件原因 '硬件过热降频'" "$tmp/zh.txt" || bad "a clock event reason is not in Chinese"
grep -q "hardware thermal slowdown" "$tmp/zh.txt" && bad "the zh_CN report keeps an English clock event reason"
jq -e '[.findings[].evidence[] | select(test("clock event reason .hardware thermal slowdown."))] | length > 0' \
    "$tmp/zh.json" >/dev/null || bad "the JSON lost the English clock event reason"
# When a kernel-log event happened, inside the Xid title and the log's evidence lines.
grep -q 'Xid 48（双比特 ECC 错误），最近一次 [0-9hm]* 前$' "$tmp/zh.txt" || bad "zh_CN report: the Xid's time is not in Chinese"
grep -q '内核日志 [0-9hm]* 前：Xid 48' "$tmp/zh.txt" || bad "zh_CN report: the kernel log line's time is not in Chinese"
grep -q ' ago' "$tmp/zh.txt" && bad "the zh_CN report keeps an English 'ago': $(grep -m1 ' ago' "$tmp/zh.txt")"
jq -e '[.findings[].title | select(test("Xid 48 .*, last [0-9hm]+ ago$"))] | length > 0' "$tmp/zh.json" >/dev/null ||
    bad "the JSON lost the English time of the Xid"
widths 80 <"$tmp/zh.txt" >"$tmp/w.out" || bad "zh_CN report: $(cat "$tmp/w.out")"
# The commands of the fixes, as people copy them: the same in both languages.
fix_commands() {
    awk '/^          (fix: |修复：)/ { inside = 1; sub(/^          (fix: |修复：)/, "") ; print; next }
         inside && /^               / { sub(/^               +/, ""); print; next }
         { inside = 0 }' "$1" | grep -v '^#' | sed 's/  *# .*$//'
}
fix_commands "$tmp/en.txt" >"$tmp/en.cmds"
fix_commands "$tmp/zh.txt" >"$tmp/zh.cmds"
[ "$(wc -l <"$tmp/en.cmds")" -ge 10 ] || bad "the English report shows too few fix commands ($(wc -l <"$tmp/en.cmds"))"
diff "$tmp/en.cmds" "$tmp/zh.cmds" >"$tmp/cmds.diff" || { bad "the fix commands differ in zh_CN:"; head -10 "$tmp/cmds.diff"; }
grep -q '^          修复：' "$tmp/zh.txt" || bad "the zh_CN report's fix label is not in Chinese"
grep -q '^          fix: ' "$tmp/zh.txt" && bad "the zh_CN report keeps the English fix label"
# At a narrow width too: wrapped Chinese never splits a character and keeps within the width.
# (The GPU and process tables are not wrapped, in any language: up to 80 columns; their heads
# and the process rows, whose state is a Chinese word, are left out.)
zh "$GPUDOCTOR" check --from "$tmp/snap.json" --width 60 | grep -Ev '^(GPU  | *[0-9]+  [0-9]+ )' >"$tmp/zh60.txt"
widths 60 <"$tmp/zh60.txt" >"$tmp/w.out" || bad "zh_CN report at 60 columns: $(cat "$tmp/w.out")"

# ---- procs, reap and the report's process table: their words in Chinese, their columns where
# the English ones are (every line, up to its last word, as wide in display columns as the English)
same_widths() { # EN ZH WHAT: line by line, as many columns before the last word
    python3 -c '
import sys, unicodedata
def w(line):
    line = line.rstrip().rsplit(" ", 1)[0]
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in line)
en, zh = (open(f, encoding="utf-8").read().split("\n") for f in sys.argv[1:3])
if len(en) != len(zh):
    sys.exit("%d lines in English, %d in Chinese" % (len(en), len(zh)))
for n, (a, b) in enumerate(zip(en, zh), 1):
    if w(a) != w(b):
        sys.exit("line %d: %d columns in English, %d in Chinese: %s" % (n, w(a), w(b), b))
' "$1" "$2" || bad "$3: the Chinese columns are not where the English ones are"
}
en "$GPUDOCTOR" procs --from "$tmp/snap.json" -w >"$tmp/procs.en"
zh "$GPUDOCTOR" procs --from "$tmp/snap.json" -w >"$tmp/procs.zh"
head -1 "$tmp/procs.zh" | grep 'PID 用户 .* 显存 .* 时长 结论 *命令$' >/dev/null || bad "zh_CN procs heads: $(head -1 "$tmp/procs.zh")"
grep -q '^  39104 alice .* 已停止 ' "$tmp/procs.zh" || bad "zh_CN procs: the stopped holder's verdict is not in Chinese"
grep -Eq ' (active|stopped|idle-holder|orphaned|defunct) ' "$tmp/procs.zh" && bad "zh_CN procs keeps an English verdict"
grep -q '，1 个已停止。' "$tmp/procs.zh" || bad "zh_CN procs summary: $(grep 'GPU' "$tmp/procs.zh" | tail -1)"
sed -n '1,/^$/p' "$tmp/procs.en" >"$tmp/procs-table.en"
sed -n '1,/^$/p' "$tmp/procs.zh" >"$tmp/procs-table.zh"
same_widths "$tmp/procs-table.en" "$tmp/procs-table.zh" "zh_CN procs"
en "$GPUDOCTOR" procs --from "$tmp/snap.json" --json >"$tmp/procs-c.json"
zh "$GPUDOCTOR" procs --from "$tmp/snap.json" --json >"$tmp/procs-zh.json"
cmp -s "$tmp/procs-c.json" "$tmp/procs-zh.json" || bad "procs --json differs under zh_CN.UTF-8"
# the report's process table: the states in Chinese, the rows as wide as the English ones
grep -E '^ +[0-9]+  [0-9]+ ' "$tmp/en.txt" >"$tmp/rows.en"
grep -E '^ +[0-9]+  [0-9]+ ' "$tmp/zh.txt" >"$tmp/rows.zh"
[ -s "$tmp/rows.zh" ] || bad "the zh_CN report has no process rows"
grep -q '^  3  39104   alice     已停止 ' "$tmp/rows.zh" || bad "zh_CN report: the process state is not in Chinese"
same_widths "$tmp/rows.en" "$tmp/rows.zh" "zh_CN report's process table"
# reap: what a process holds, in Chinese inside the Chinese reason
zh "$GPUDOCTOR" reap --from "$tmp/snap.json" </dev/null >"$tmp/reap.zh" 2>&1
grep -q '占用 78.7 GiB（GPU 3）' "$tmp/reap.zh" || bad "zh_CN reap: $(grep 39104 -A1 "$tmp/reap.zh")"
grep -q ' on GPU' "$tmp/reap.zh" && bad "zh_CN reap keeps an English 'on GPU'"
# what a rule could not check, with the collector's state in Chinese (English in the JSON)
grep -q 'pcie 采集器不可用' "$tmp/zh.txt" || bad "zh_CN report: a collector's state is not in Chinese"
# a field NVML did not give: "not collected" in Chinese, the field's name as it is
zh "$GPUDOCTOR" check --from "$SRC/tests/incidents/063-h100-hgx-fabric-manager-version-wrong/snapshot.json" >"$tmp/063.zh"
grep -q '^  ecc_mode 未采集（GPU 0）' "$tmp/063.zh" || bad "zh_CN report: a field not collected: $(grep -m1 ecc_mode "$tmp/063.zh")"
grep -q 'not collected' "$tmp/063.zh" && bad "the zh_CN report keeps an English 'not collected'"
jq -e '[.not_checked[]? // empty | .reason? // empty | select(. == "pcie collector unavailable")] | length > 0' \
    "$tmp/zh.json" >/dev/null || bad "the JSON lost the English reason 'pcie collector unavailable'"

zh "$GPUDOCTOR" --help >"$tmp/help.zh"
grep -q '用法' "$tmp/help.zh" || bad "zh_CN --help is not in Chinese: $(head -1 "$tmp/help.zh")"
widths 80 <"$tmp/help.zh" >"$tmp/w.out" || bad "zh_CN --help: $(cat "$tmp/w.out")"
zh "$GPUDOCTOR" help check >"$tmp/help-check.zh"
widths 80 <"$tmp/help-check.zh" >"$tmp/w.out" || bad "zh_CN help check: $(cat "$tmp/w.out")"
# Every command's help, and every rule's explanation, in Chinese and within 80 columns (the
# widths of all of them measured at once, below).
mkdir "$tmp/each"
for cmd in $(en "$GPUDOCTOR" --help | awk '/^Commands:/ {on = 1; next} on && /^  [a-z]/ {print $1} on && /^$/ {exit}'); do
    zh "$GPUDOCTOR" help "$cmd" >"$tmp/each/help-$cmd" 2>&1 || bad "zh_CN help $cmd failed"
    grep -q '^用法' "$tmp/each/help-$cmd" || bad "zh_CN help $cmd: the usage line is not in Chinese"
    en "$GPUDOCTOR" help "$cmd" >"$tmp/help-cmd.en" 2>&1
    cmp -s "$tmp/help-cmd.en" "$tmp/each/help-$cmd" && bad "zh_CN help $cmd is the English one"
done
n_rules=0
for id in $(en "$GPUDOCTOR" explain --list | awk '/^  [a-z]/ {print $1}'); do
    n_rules=$((n_rules + 1))
    zh "$GPUDOCTOR" explain "$id" --width 80 >"$tmp/each/explain-$id" || bad "zh_CN explain $id failed"
    for head in 含义 检测 修复; do
        grep -q "$head" "$tmp/each/explain-$id" || bad "zh_CN explain $id has no section with '$head'"
    done
    # Title, explanation, detection and fix each translated: the English prose is gone.
    en "$GPUDOCTOR" explain "$id" --width 500 >"$tmp/explain.en"
    sed -n '1s/^[^ ]* — //p' "$tmp/explain.en" >"$tmp/title.en"
    head -1 "$tmp/each/explain-$id" | grep -F -f "$tmp/title.en" >/dev/null && bad "zh_CN explain $id keeps the English title"
done
widths 80 "$tmp"/each/* >"$tmp/w.out" || bad "zh_CN help or explain: $(cat "$tmp/w.out")"
[ "$n_rules" -ge 50 ] || bad "explain --list listed only $n_rules rules"
zh "$GPUDOCTOR" explain --list >"$tmp/list.zh"
widths 80 <"$tmp/list.zh" >"$tmp/w.out" || bad "zh_CN explain --list: $(cat "$tmp/w.out")"
# Errors name the problem in Chinese; the option and the value stay as given.
zh "$GPUDOCTOR" check --width abc >/dev/null 2>"$tmp/err.zh"
grep -q "^gpudoctor check: --width：'abc' 不是" "$tmp/err.zh" || bad "zh_CN usage error: $(head -2 "$tmp/err.zh")"

# ---- log lines stay English in every language: watch --plain (and serve, slurm-*) switch to
# English once their options are read, so even causes formed through _() below them stay English
GPUDOCTOR_CONFIG=/dev/null GPUDOCTOR_NVML_LIB="$SIM_LIB" \
    NVML_SIM_SCENARIO="$SRC/tests/scenarios/troubled-8xh100/scenario.json" \
    NVML_SIM_PROC="$SRC/tests/scenarios/troubled-8xh100/root/proc" \
    zh "$GPUDOCTOR" watch --plain -n 0.2 -c 1 --root "$SRC/tests/scenarios/troubled-8xh100/root" \
    --record "$tmp/no-such-dir/rec" >"$tmp/plain.out" 2>&1
grep -q -- '--record' "$tmp/plain.out" || bad "watch --plain: no error for an unwritable --record: $(head -3 "$tmp/plain.out")"
LC_ALL=C.UTF-8 grep -qP '[^\x00-\x7f]' "$tmp/plain.out" && bad "watch --plain under zh_CN is not all English: $(head -3 "$tmp/plain.out")"

# ---- words gpudoctor passes into a translated title or evidence line (the reason of a clock cut,
# the fabric registration state, a bench figure's name, peer access) are Chinese in the zh report
zhs() { zh "$GPUDOCTOR" check --width 500 --from "$SRC/tests/scenarios/$1/snapshot.json" >"$tmp/w-$1.zh"; }
has() { grep -qF -- "$2" "$tmp/w-$1.zh" || bad "zh_CN $1: no '$2'"; }
hasnt() { grep -qF -- "$2" "$tmp/w-$1.zh" && bad "zh_CN $1 keeps the English '$2'"; }
zhs power-brake
has power-brake '的时钟被硬件功率制动（power brake）压低'
hasnt power-brake 'the hardware power brake'
zhs fabric-not-ready
has fabric-not-ready '（注册尚未开始）'
hasnt fabric-not-ready 'registration not started'
has fabric-not-ready '结果 尚无意义'
hasnt fabric-not-ready 'not yet meaningful'
zhs bench-copy-mem-p2p
has bench-copy-mem-p2p 'GPU 7 的显存带宽只有其型号标称值的'
hasnt bench-copy-mem-p2p 'memory bandwidth'
has bench-copy-mem-p2p 'P2P 访问：不可用：经主机内存中转'
hasnt bench-copy-mem-p2p 'staged through host memory'
zhs bench-regression
has bench-regression 'GPU 0 的算力只有本节点基线的'
hasnt bench-regression 'compute rate 只有'
zhs bench-behind-under-load
has bench-behind-under-load '（参照：型号标称值）'
hasnt bench-behind-under-load "model's"

# ---- not UTF-8: English (every catalogue is UTF-8; the ASCII renderer could not show it)
LANG=C LANGUAGE=zh_CN "$GPUDOCTOR" --help >"$tmp/help.langc"
LANG=C "$GPUDOCTOR" --help >"$tmp/help.c"
cmp -s "$tmp/help.langc" "$tmp/help.c" || bad "LANGUAGE=zh_CN under LANG=C changed --help"
LANGUAGE=zh_CN LOCPATH="$tmp" LANG=C "$GPUDOCTOR" check --from "$tmp/snap.json" --width 80 >"$tmp/c.txt"
head -1 "$tmp/c.txt" | grep '^4 critical, 7 warnings - ' >/dev/null || bad "LANG=C verdict: $(head -1 "$tmp/c.txt")"

# ---- errors formed in lower layers, said in Chinese (config file, state directory, profile save,
# help); the English of each stays as it was (tests/e2e/config*.sh, profile.sh, state-*.sh)
printf 'tmep_warn = 80\n[foo]\n' >"$tmp/bad.conf"
GPUDOCTOR_CONFIG="$tmp/bad.conf" zh "$GPUDOCTOR" check --from "$tmp/snap.json" >/dev/null 2>"$tmp/err.zh"
grep -q "^gpudoctor check: $tmp/bad.conf:1: 未知的键 'tmep_warn'（" "$tmp/err.zh" || bad "zh_CN config error: $(head -2 "$tmp/err.zh")"
touch "$tmp/notdir"
GPUDOCTOR_CONFIG=/dev/null GPUDOCTOR_NVML_LIB="$SIM_LIB" NVML_SIM_SCENARIO="$SRC/tests/scenarios/troubled-8xh100/scenario.json" \
    zh "$GPUDOCTOR" check --root "$SRC/tests/scenarios/troubled-8xh100/root" --window 0 --state-dir "$tmp/notdir/s" >/dev/null 2>"$tmp/err.zh"
grep -q "^gpudoctor check: 注意：状态文件未更新：无法创建 $tmp/notdir/s：" "$tmp/err.zh" || bad "zh_CN state-dir error: $(head -2 "$tmp/err.zh")"
zh "$GPUDOCTOR" profile save --from "$SRC/tests/scenarios/profile-deviations/snapshot.json" -o "$tmp/dev.conf" 2>"$tmp/err.zh"
grep -q '^gpudoctor profile: vbios_version：各 GPU 不一致；保存最常见的值 96.00.89.00.01$' "$tmp/err.zh" || bad "zh_CN profile save note: $(head -2 "$tmp/err.zh")"
zh "$GPUDOCTOR" help a b 2>"$tmp/err.zh" && bad "help a b succeeded"
grep -qx 'gpudoctor help: 最多给出一个命令' "$tmp/err.zh" || bad "zh_CN help a b: $(head -2 "$tmp/err.zh")"

[ "$fail" = 0 ] && echo "translations: $n_po catalogue(s) complete; zh_CN report and help laid out; JSON unchanged"
exit "$fail"
