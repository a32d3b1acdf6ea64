#!/usr/bin/env bash
# `gpudoctor fleet --html FILE` in a real browser (Debian's chromium, headless): the page is one
# file that fetches nothing, and what it renders is checked, not only that it loads:
#  - the DOM after its script ran (--dump-dom): one table row per node, the outliers' rows marked
#    and ranked, the outliers' evidence listed, one plot per numeric figure of the group, one dot
#    per node in each, the red dots exactly the nodes that are outliers on that figure;
#  - a screenshot: the outliers' red dots and highlighted rows are on the picture (pixels of
#    their colours), and a fleet without outliers shows none;
#  - a host name that is HTML (and "</script>") stays text: no element made from it;
#  - the page under zh_CN.UTF-8 (the build's catalogue): lang="zh-CN", its headings, table heads,
#    words and the script's plot headings rendered in Chinese, the same rows and dots as the
#    English page, no English label left.
# Skipped (77) without chromium.
# ctest: timeout 300
set -uo pipefail
command -v jq >/dev/null || { echo "SKIP: jq not installed"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: python3 not installed"; exit 77; }
CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
[ -n "$CHROMIUM" ] || { echo "SKIP: chromium is not installed (scripts/deps.sh test)"; exit 77; }
: "${GPUDOCTOR:?}" "${SRC:?}"
unset LC_ALL LC_MESSAGES LANGUAGE
export GPUDOCTOR_CONFIG=/dev/null NO_COLOR=1 LANG=C.UTF-8
. "$SRC/tests/e2e/lib.bash"
BASE=$SRC/tests/scenarios/healthy-8gpu-busy/snapshot.json
SYNTH=$SRC/tests/helpers/fleet-synth.py

# browser ARGS... URL: chromium headless, its own profile, nothing from the network
browser() {
    timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --no-first-run \
        --user-data-dir="$tmp/profile" --hide-scrollbars --disable-extensions \
        --host-resolver-rules="MAP * ~NOTFOUND" "$@" 2>>"$tmp/chromium.log"
}

# pixels PNG R G B: how many pixels of the screenshot have this colour (within 12 per channel)
pixels() {
    python3 - "$@" <<'PY'
import struct, sys, zlib
path, want = sys.argv[1], [int(x) for x in sys.argv[2:5]]
data = open(path, "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat, w = 8, b"", 0
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b"IHDR":
        w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
        assert depth == 8 and ctype in (2, 6), "unexpected PNG type"
        bpp = 3 if ctype == 2 else 4
    elif kind == b"IDAT":
        idat += body
    pos += 12 + n
raw, stride, prev, count, off = zlib.decompress(idat), w * bpp, bytearray(w * bpp), 0, 0
for y in range(h):
    f, line = raw[off], bytearray(raw[off + 1:off + 1 + stride])
    off += 1 + stride
    for i in range(stride):
        a = line[i - bpp] if i >= bpp else 0
        b, c = prev[i], (prev[i - bpp] if i >= bpp else 0)
        if f == 1: line[i] = (line[i] + a) & 255
        elif f == 2: line[i] = (line[i] + b) & 255
        elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    for x in range(0, stride, bpp):
        if all(abs(line[x + k] - want[k]) <= 12 for k in range(3)):
            count += 1
    prev = line
print(count)
PY
}

# A fleet of 60 with 3 planted outliers (a slow clock, a hot GPU, a x8 link), and a node whose
# host name is markup.
mkdir "$tmp/fleet"
python3 "$SYNTH" "$BASE" 60 "$tmp/fleet" --seed 4 --plant-every 20 --planted "$tmp/planted.json"
jq -c '.hostname = "evil</script><img id=\"injected\" src=x onerror=\"document.title=1\">"' \
    "$tmp/fleet/node0001.json" >"$tmp/fleet/node0001.json.new" && mv "$tmp/fleet/node0001.json.new" "$tmp/fleet/node0001.json"
rc=0
"$GPUDOCTOR" fleet --json --html "$tmp/fleet.html" "$tmp/fleet" >"$tmp/fleet.json" || rc=$?
[ "$rc" = 1 ] || fail "exit status $rc, not 1"
[ -s "$tmp/fleet.html" ] || { echo "FAIL: no page written"; exit 1; }
# self-contained: nothing the page would fetch
grep -Eiq '<(link|img|iframe)[ >]|src="http|url\(' "$tmp/fleet.html" && fail "the page refers to something outside it"

browser --dump-dom "file://$tmp/fleet.html" >"$tmp/dom.html"
[ -s "$tmp/dom.html" ] || { echo "FAIL: chromium dumped no DOM: $(tail -5 "$tmp/chromium.log")"; exit 1; }
python3 - "$tmp/dom.html" "$tmp/fleet.json" "$tmp/planted.json" "$tmp/red-dots" >"$tmp/dom.out" <<'PY'
import json, sys
from html.parser import HTMLParser
dom, report, planted = open(sys.argv[1]).read(), json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
class Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.rows, self.svgs, self.svg, self.outlier_items, self.body, self.stack = [], {}, None, [], {}, []
        self.injected, self.row, self.td = False, None, None
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        cls = (a.get("class") or "").split()
        if tag == "body": self.body = a
        if tag == "img" or a.get("id") == "injected": self.injected = True
        if tag == "tr" and "node" in cls:
            self.row = {"node": a.get("data-node"), "outlier": "outlier" in cls, "cells": []}
            self.rows.append(self.row)
        if tag == "td" and self.row is not None: self.row["cells"].append("")
        if tag == "li" and "outlier" in cls: self.outlier_items.append(a.get("data-node"))
        if tag == "svg" and "plot" in cls:
            self.svg = {"dots": [], "red": [], "median": 0}
            self.svgs[a["data-metric"]] = self.svg
        if tag == "circle" and self.svg is not None:
            self.svg["dots"].append(a.get("data-node"))
            if "outlier" in cls: self.svg["red"].append(a.get("data-node"))
        if tag == "line" and self.svg is not None and "median" in cls: self.svg["median"] += 1
    def handle_endtag(self, tag):
        if tag == "svg": self.svg = None
        if tag == "tr": self.row = None
    def handle_data(self, data):
        if self.row is not None and self.row["cells"]: self.row["cells"][-1] += data
p = Page()
p.feed(dom)
bad = []
nodes = report["nodes"]
names = [n["name"] for n in nodes]
outliers = sorted(n["name"] for n in nodes if n["verdict"] == "outlier")
if sorted(outliers) != sorted(planted): bad.append("report outliers %s, planted %s" % (outliers, sorted(planted)))
if [r["node"] for r in p.rows] != names: bad.append("table rows %d, nodes %d" % (len(p.rows), len(names)))
if sorted(r["node"] for r in p.rows if r["outlier"]) != outliers: bad.append("rows marked outlier: %s" % [r["node"] for r in p.rows if r["outlier"]])
for r in p.rows:
    n = next(n for n in nodes if n["name"] == r["node"])
    if r["cells"][1] != n["name"]: bad.append("row %s shows the name %r" % (n["name"], r["cells"][1]))
    if r["cells"][0] != (str(n["rank"]) if n["rank"] else ""): bad.append("row %s: rank %r" % (n["name"], r["cells"][0]))
ranked = [n["name"] for n in sorted((n for n in nodes if n["rank"]), key=lambda n: n["rank"])]
if p.outlier_items != ranked: bad.append("outlier list %s, ranked %s" % (p.outlier_items, ranked))
numeric = [m["name"] for m in report["metrics"] if m["kind"] == "number" and m["in_evidence"]
           and report["groups"][0]["metrics"].get(m["name"], {}).get("n")]
if sorted(p.svgs) != sorted(numeric): bad.append("plots %s, numeric figures %s" % (sorted(p.svgs), sorted(numeric)))
if p.body.get("data-plots") != str(len(numeric)): bad.append("data-plots %s" % p.body.get("data-plots"))
for m, s in p.svgs.items():
    have = [n["name"] for n in nodes if n["values"].get(m)]
    if sorted(s["dots"]) != sorted(have): bad.append("plot %s: %d dots, %d nodes with the figure" % (m, len(s["dots"]), len(have)))
    red = sorted(n["name"] for n in nodes if any(r.get("metric") == m for r in n["reasons"]))
    if sorted(s["red"]) != red: bad.append("plot %s: red dots %s, outliers on it %s" % (m, sorted(s["red"]), red))
    if s["median"] != 1: bad.append("plot %s: %d median lines" % (m, s["median"]))
for node, metric in planted.items():
    if metric in p.svgs and node not in p.svgs[metric]["red"]: bad.append("plot %s: %s not red" % (metric, node))
if p.injected: bad.append("the markup in a host name became an element")
if not any(r["node"] and r["node"].startswith("evil</script>") for r in p.rows): bad.append("the markup host name is not shown as text")
for line in bad:
    print(line)
print(sum(len(s["red"]) for s in p.svgs.values()), file=open(sys.argv[4], "w"))
PY
[ -s "$tmp/dom.out" ] && while read -r line; do fail "DOM: $line"; done <"$tmp/dom.out"
grep -q '<title>gpudoctor fleet: 60 nodes, 3 outliers</title>' "$tmp/dom.html" ||
    fail "DOM: the title is $(grep -o '<title>[^<]*' "$tmp/dom.html")"

# The picture: the red of an outlier's dot (#d0301e) and the yellow of an outlier's row (#fff4d6)
browser --window-size=1100,3000 --screenshot="$tmp/fleet.png" "file://$tmp/fleet.html" >/dev/null
[ -s "$tmp/fleet.png" ] || { echo "FAIL: no screenshot: $(tail -5 "$tmp/chromium.log")"; exit 1; }
red=$(pixels "$tmp/fleet.png" 208 48 30)
yellow=$(pixels "$tmp/fleet.png" 255 244 214)
# the red dots of the DOM (radius 5: about 78 pixels each, fewer where they are antialiased or
# overlap), and the three outliers' highlighted rows
dots=$(cat "$tmp/red-dots" 2>/dev/null || echo 0)
[ "$dots" -ge 2 ] || fail "DOM: $dots red dots, not one per outlier on a plotted figure"
[ "$red" -ge $((dots * 40)) ] || fail "screenshot: $red pixels of outlier red, not $dots red dots"
[ "$yellow" -ge 3000 ] || fail "screenshot: $yellow pixels of outlier yellow, not three highlighted rows"
blue=$(pixels "$tmp/fleet.png" 74 123 208)
[ "$blue" -ge 200 ] || fail "screenshot: $blue pixels of the healthy nodes' blue: the plots are not drawn"

# The same fleet's page in Simplified Chinese (docs/i18n.md): lang="zh-CN", and what chromium
# renders, the script's plot headings included, is Chinese where it is text for people, with the
# same rows, plots and red dots as the English page; the host name's markup stays text.
zhloc=$tmp/locale
mkdir -p "$zhloc"
if [ -d "${BUILD:-}/locale/zh_CN" ] && localedef -i zh_CN -f UTF-8 "$zhloc/zh_CN.UTF-8" 2>/dev/null; then
    LOCPATH=$zhloc GPUDOCTOR_LOCALEDIR=$BUILD/locale LANG=zh_CN.UTF-8 \
        "$GPUDOCTOR" fleet --html "$tmp/zh.html" "$tmp/fleet" >/dev/null
    browser --dump-dom "file://$tmp/zh.html" >"$tmp/zh-dom.html"
    python3 - "$tmp/zh-dom.html" "$tmp/dom.html" >"$tmp/zh-dom.out" <<'PY'
import re, sys
from html.parser import HTMLParser
class Text(HTMLParser):
    def __init__(self):
        super().__init__()
        self.html, self.tags, self.text, self.dots, self.red, self.rows = {}, [], {}, 0, 0, 0
        self.injected = False
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "html": self.html = a
        if tag == "img" or a.get("id") == "injected": self.injected = True
        if tag == "circle":
            self.dots += 1
            self.red += "outlier" in (a.get("class") or "").split()
        if tag == "tr" and "node" in (a.get("class") or "").split(): self.rows += 1
        if tag not in ("meta", "br", "input", "link", "img"): self.tags.append(tag)
    def handle_endtag(self, tag):
        if tag in self.tags:
            while self.tags.pop() != tag: pass
    def handle_data(self, data):
        if self.tags and data.strip(): self.text.setdefault(self.tags[-1], []).append(data.strip())
zh, en = Text(), Text()
zh.feed(open(sys.argv[1]).read())
en.feed(open(sys.argv[2]).read())
t = lambda p, tag: p.text.get(tag, [])
bad = []
if zh.html.get("lang") != "zh-CN": bad.append("lang %r" % zh.html.get("lang"))
if en.html.get("lang") != "en": bad.append("English page: lang %r" % en.html.get("lang"))
if t(zh, "title")[:1] != ["gpudoctor fleet：60 个节点，3 个离群节点"]: bad.append("title %s" % t(zh, "title")[:1])
if t(zh, "h2") != ["离群节点（最严重的在前）", "分布图", "节点"]: bad.append("headings %s" % t(zh, "h2"))
if t(zh, "th") != ["排名", "节点", "型号", "卡数", "检查", "结论", "原因"]: bad.append("table heads %s" % t(zh, "th"))
if t(zh, "h3") != ["NVIDIA H100 80GB HBM3（60 个节点）"]: bad.append("plot headings %s" % t(zh, "h3"))
if t(en, "h3") != ["NVIDIA H100 80GB HBM3 (60 nodes)"]: bad.append("English plot headings %s" % t(en, "h3"))
if not any(x.startswith("60 个节点，1 种 GPU 型号：") for x in t(zh, "p")): bad.append("summary %s" % t(zh, "p")[:1])
if not set(t(zh, "td")) >= {"健康", "正常", "离群节点"}: bad.append("no Chinese check or verdict in the table")
if not set(t(zh, "span")) <= {"严重", "告警", "提示"}: bad.append("severities %s" % sorted(set(t(zh, "span"))))
words = " ".join(x for k in ("h2", "h3", "th", "td", "span", "li", "b", "p", "title") for x in t(zh, k))
for english in ("Outliers", "Plots", "Nodes", "nodes", "rank", "verdict", "healthy", "outlier",
                "group median", "Exit status", "critical", "warning"):
    if re.search(r"\b%s\b" % english, words): bad.append("English left: %r" % english)
if (zh.rows, zh.dots, zh.red) != (en.rows, en.dots, en.red):
    bad.append("rows, dots, red dots %s, English %s" % ((zh.rows, zh.dots, zh.red), (en.rows, en.dots, en.red)))
if zh.injected: bad.append("the markup in a host name became an element")
if not any(x.startswith("evil</script>") for x in t(zh, "td")): bad.append("the markup host name is not shown as text")
print("\n".join(bad))
PY
    while read -r line; do [ -n "$line" ] && fail "zh_CN DOM: $line"; done <"$tmp/zh-dom.out"
    browser --window-size=1100,3000 --screenshot="$tmp/zh.png" "file://$tmp/zh.html" >/dev/null
    red=$(pixels "$tmp/zh.png" 208 48 30)
    [ "$red" -ge $((dots * 40)) ] || fail "zh_CN screenshot: $red pixels of outlier red, not $dots red dots"
else
    echo "note: the zh_CN page not rendered (no build/locale, or localedef failed)"
fi

# A fleet without outliers: no red, no yellow on the picture
mkdir "$tmp/clean"
python3 "$SYNTH" "$BASE" 30 "$tmp/clean" --seed 5 --plant-every 100000
rc=0
"$GPUDOCTOR" fleet --html "$tmp/clean.html" "$tmp/clean" >/dev/null || rc=$?
[ "$rc" = 0 ] || fail "clean fleet: exit status $rc"
browser --window-size=1100,2000 --screenshot="$tmp/clean.png" "file://$tmp/clean.html" >/dev/null
red=$(pixels "$tmp/clean.png" 208 48 30)
yellow=$(pixels "$tmp/clean.png" 255 244 214)
[ "$red" -eq 0 ] || fail "clean fleet screenshot: $red red pixels"
[ "$yellow" -eq 0 ] || fail "clean fleet screenshot: $yellow yellow pixels"
blue=$(pixels "$tmp/clean.png" 74 123 208)
[ "$blue" -ge 200 ] || fail "clean fleet screenshot: the plots are not drawn ($blue blue pixels)"

# --html to a place that cannot be written: exit 3, said
rc=0
"$GPUDOCTOR" fleet --html /nonexistent/dir/x.html "$tmp/clean" >/dev/null 2>"$tmp/err" || rc=$?
[ "$rc" = 3 ] || fail "--html into a missing directory: exit status $rc"
grep -q 'nonexistent' "$tmp/err" || fail "--html into a missing directory: not said: $(cat "$tmp/err")"

e2e_done "ok: fleet --html rendered by chromium"
