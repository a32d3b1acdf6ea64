#!/usr/bin/env bash
# fleet's text report in Simplified Chinese (docs/i18n.md): a synthetic fleet of 40 nodes
# (tests/helpers/fleet-synth.py, a fault planted every 4 nodes), one with a Chinese host name, and
# a --profile. Under LANG=zh_CN.UTF-8 the first line, the table's heads, the verdicts and the
# headings are Chinese; the table's columns and the evidence's are aligned by display width (a
# Chinese character takes two), a Chinese host name cut to its 25 columns; the units that are
# words and the finding titles follow the language while figure names, rule ids and numbers stay
# as they are; --json is byte-identical to LANG=C's. Under LANG=C the report stays English.
# The page (--html) says lang="zh-CN" and its fixed text is Chinese, lang="en" and English under
# LANG=C; the data its script reads and every value's escaping do not change.
# Needs the zh_CN catalogue to hold fleet's text (po/zh_CN.po).
set -uo pipefail
: "${GPUDOCTOR:?}" "${SRC:?}" "${BUILD:?}"
command -v jq >/dev/null || { echo "SKIP: jq not installed"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: python3 not installed"; exit 77; }
unset LC_ALL LC_MESSAGES LANGUAGE COLUMNS
export GPUDOCTOR_CONFIG=/dev/null NO_COLOR=1 GPUDOCTOR_LOCALEDIR="$BUILD/locale"
. "$SRC/tests/e2e/lib.bash"
localedef -i zh_CN -f UTF-8 "$tmp/zh_CN.UTF-8" 2>"$tmp/localedef.err" ||
    { echo "SKIP: cannot build the zh_CN.UTF-8 locale: $(head -c 200 "$tmp/localedef.err")"; exit 77; }
zh() { LOCPATH="$tmp" LANG=zh_CN.UTF-8 "$@"; }

mkdir "$tmp/in"
python3 "$SRC/tests/helpers/fleet-synth.py" "$SRC/tests/scenarios/healthy-8gpu-busy/snapshot.json" 40 \
    "$tmp/in" --seed 1 --plant-every 4 --planted "$tmp/planted.json" || fail "fleet-synth.py failed"
jq '.hostname = "节点-甲乙丙丁戊己庚辛壬癸子丑寅卯"' "$tmp/in/node0001.json" >"$tmp/in/zz.json"
rm "$tmp/in/node0001.json"
cat >"$tmp/profile.conf" <<'CONF'
[profile]
gpu_model = "NVIDIA H100 80GB HBM3"
gpu_count = 8
driver_version = "550.54.15"
vbios_version = "96.00.89.00.01"
CONF
args=(fleet --profile "$tmp/profile.conf" "$tmp/in")

# what machines read: the same bytes in either language
LANG=C "$GPUDOCTOR" "${args[@]}" --json >"$tmp/c.json" 2>"$tmp/err"
zh "$GPUDOCTOR" "${args[@]}" --json >"$tmp/zh.json" 2>>"$tmp/err"
[ -s "$tmp/c.json" ] || fail "--json: no output: $(head -3 "$tmp/err")"
cmp -s "$tmp/c.json" "$tmp/zh.json" || fail "--json differs between LANG=C and zh_CN.UTF-8: $(diff "$tmp/c.json" "$tmp/zh.json" | head -5)"

# English where the locale asks for none
LANG=C "$GPUDOCTOR" "${args[@]}" >"$tmp/c.txt" 2>/dev/null
head -1 "$tmp/c.txt" | grep '^40 nodes, 1 GPU model: 10 outliers (2 critical)$' >/dev/null ||
    fail "LANG=C: first line '$(head -1 "$tmp/c.txt")'"

# people read Chinese
zh "$GPUDOCTOR" "${args[@]}" >"$tmp/zh.txt" 2>/dev/null
rc=$?
[ "$rc" = 2 ] || fail "zh_CN: exit status $rc, not 2"
head -1 "$tmp/zh.txt" | grep '^40 个节点，1 种 GPU 型号：10 个离群节点（2 个严重）$' >/dev/null ||
    fail "zh_CN: first line '$(head -1 "$tmp/zh.txt")'"
for want in '^节点 +型号 +卡数  检查 +结论$' '^离群节点（最严重的在前）$' '^分组$' \
    '^  NVIDIA H100 80GB HBM3：40 个节点$' ' 健康 +正常$' ' 严重 +离群节点（严重）$' \
    '^[0-9]+\. node[0-9]+ — NVIDIA H100 80GB HBM3，[78] 块 GPU（组内 40 个节点）$' \
    '^     严重     问题 health\.gpu-missing：.*（1 个节点有，共 40 个）$' \
    '^     告警     pcie_width +8 条通道 \(GPU 2\) +组内多数：16 条通道（39 个，共 40 个节点）$' \
    '^     告警     clock_sm_busy_mhz +1410 MHz \(GPU 3\) +组中位数 19[0-9]+ MHz，MAD [0-9.]+；z -[0-9.]+$' \
    '^     严重     配置档案：gpu_count 为 7，配置档案（.*）要求 8$'; do
    grep -Eq "$want" "$tmp/zh.txt" || fail "zh_CN: no line matches '$want'"
done
grep -Eq '^(Outliers|Groups|NODE)|nodes have it|group median|outlier' "$tmp/zh.txt" &&
    fail "zh_CN: English left: $(grep -E '^(Outliers|Groups|NODE)|nodes have it|group median|outlier' "$tmp/zh.txt" | head -3)"

# aligned by display columns: the table's columns start where its heads do, the evidence's
# figure and the group's side at the same columns on every line
python3 - "$tmp/zh.txt" >"$tmp/align.out" <<'PY' || fail "zh_CN: not aligned by display width: $(cat "$tmp/align.out")"
import re, sys, unicodedata

def cols(s):
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in s)

def at(line, m, k):  # the display column where group k of the match starts
    return cols(line[: m.start(k)])

lines = open(sys.argv[1], encoding="utf-8").read().split("\n")
bad, rows = [], 0
head = next((i for i, l in enumerate(lines) if l.startswith("节点 ")), None)
if head is None:
    print("no table head in Chinese")
    sys.exit(1)
m = re.match(r"^(节点) +(型号) +(卡数)  (检查) +(结论)$", lines[head])
if not m or [at(lines[head], m, k) for k in range(1, 6)] != [0, 26, 54, 60, 70]:
    bad.append("head: " + lines[head])
# NODE (25) MODEL (27) GPUS (4, to the right) CHECK (9) VERDICT
row = re.compile(r"^(\S.*?) +(NVIDIA H100 80GB HBM3) +(\d+)  (\S+) +(\S+)$")
for l in lines[head + 1 :]:
    if not l:
        break
    rows += 1
    m = row.match(l)
    if not m or [at(l, m, k) for k in (2, 4, 5)] != [26, 60, 70] or cols(l[: m.end(3)]) != 58:
        bad.append("row: " + l)
    elif "…" in m.group(1) and cols(m.group(1)) not in (24, 25):  # a wide character that
        # does not fit leaves a blank
        bad.append("cut name: " + l)
if rows != 40:
    bad.append("%d rows, not 40" % rows)
if not any(l.startswith("节点-甲乙丙丁") and "…" in l for l in lines[head:]):
    bad.append("the Chinese host name is not cut with …")
# evidence: severity (8 columns), figure name (20), the node's value (24), then the group's side
ev = re.compile(r"^     (严重|告警) +([a-z_0-9]+) +(.*?) +(组中位数|组内多数)")
n_ev = 0
for l in lines:
    m = ev.match(l)
    if m:
        n_ev += 1
        if at(l, m, 2) != 14 or at(l, m, 3) != 35 or (cols(m.group(3)) < 24 and at(l, m, 4) != 60):
            bad.append("evidence: " + l)
if n_ev < 8:
    bad.append("only %d lines of evidence on figures" % n_ev)
if bad:
    print("\n".join(bad[:5]))
    sys.exit(1)
PY

# The page (--html), from the same fleet with a host name that is markup: <html lang> is the
# language used, its headings, labels and words are Chinese under zh_CN.UTF-8 and English under
# LANG=C, the data its script reads is the same in both, and values stay escaped.
cp -r "$tmp/in" "$tmp/html-in"
jq '.hostname = "<img id=\"x\" src=y>&amp;\"q'"'"'"' "$tmp/in/node0003.json" >"$tmp/html-in/node0003.json"
hargs=(fleet --profile "$tmp/profile.conf" "$tmp/html-in")
LANG=C "$GPUDOCTOR" "${hargs[@]}" --html "$tmp/c.html" >/dev/null 2>&1
zh "$GPUDOCTOR" "${hargs[@]}" --html "$tmp/zh.html" >/dev/null 2>&1
[ -s "$tmp/zh.html" ] || fail "zh_CN: no page written"
grep -q '^<html lang="en">' "$tmp/c.html" || fail "LANG=C page: $(grep -o '<html[^>]*>' "$tmp/c.html")"
grep -q '^<html lang="zh-CN">' "$tmp/zh.html" || fail "zh_CN page: $(grep -o '<html[^>]*>' "$tmp/zh.html")"
for want in '<title>gpudoctor fleet：40 个节点，10 个离群节点</title>' \
    '<p id="summary">40 个节点，1 种 GPU 型号：<b>10 个离群节点</b>（2 个严重）。退出状态 2。</p>' \
    '<h2>离群节点（最严重的在前）</h2>' '<h2>分布图</h2>' '<h2>节点</h2>' '<p class="muted">每个点是一个节点' \
    '<th>排名</th><th>节点</th><th>型号</th><th>卡数</th><th>检查</th><th>结论</th><th>原因</th>' \
    '<td>健康</td><td>正常</td>' '<td>离群节点</td>' 'NVIDIA H100 80GB HBM3，7 块 GPU' \
    '<span class="sev-critical">严重</span> 配置档案：gpu_count 为 7，配置档案（' \
    '<span class="sev-critical">严重</span> 问题 <b>health.gpu-missing</b>：' '（1 个节点有，共 40 个）</li>' \
    '<span class="sev-warning">告警</span> <b>pcie_width</b>: 8 条通道 (GPU 2) &mdash; 组内多数：16（39 个，共 40 个节点）' \
    '<b>clock_sm_busy_mhz</b>: 1410 MHz (GPU 3) &mdash; 组中位数 ' \
    "h.textContent=g.model+'（'+g.nodes+' 个节点'+(g.judged?'':'，未比较')+'）'" \
    '<td>&lt;img id=&quot;x&quot; src=y&gt;&amp;amp;&quot;q&#39;</td>'; do
    grep -qF "$want" "$tmp/zh.html" || fail "zh_CN page: no '$want'"
done
for english in 'Outliers, most serious first' '<h2>Plots</h2>' '<h2>Nodes</h2>' '<th>rank</th>' \
    '<td>healthy</td>' '<td>outlier</td>' 'nodes have it' 'group median' 'group: ' 'Exit status' \
    '</span> profile: ' 'critical</span>' ', 7 GPUs' "' nodes'" 'not compared' 'Each dot is a node'; do
    grep -qF "$english" "$tmp/zh.html" && fail "zh_CN page: English left: '$english'"
    grep -qF "$english" "$tmp/c.html" || fail "LANG=C page: no '$english'"
done
grep -q '<img' "$tmp/zh.html" && fail "zh_CN page: a host name's markup became an element"
# what the script reads and machines read: the same in either language
for f in c zh; do sed -n 's/^<script type="application\/json" id="fleet-data">//p' "$tmp/$f.html" >"$tmp/$f.data"; done
[ -s "$tmp/zh.data" ] && cmp -s "$tmp/c.data" "$tmp/zh.data" || fail "the page's data differs between LANG=C and zh_CN.UTF-8"

e2e_done "ok: fleet's text report and page in zh_CN, --json the same in every locale"
