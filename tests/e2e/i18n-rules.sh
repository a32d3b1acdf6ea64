#!/usr/bin/env bash
# Words a rule passes into a translated sentence as a value (docs/i18n.md) are translated with it
# in the Chinese report, and only there: for each, the zh_CN report of a snapshot that shows it
# has the Chinese and not the English, and check --json is byte-identical under LANG=C and
# zh_CN.UTF-8 for every snapshot used here. The same holds for the Xid catalogue's text (data/xid.tsv,
# data/xid-nvlink5.tsv), and every text of theirs that the report shows has a translation in every
# po/*.po: a row added without one fails here.
set -uo pipefail
: "${GPUDOCTOR:?}" "${SRC:?}" "${BUILD:?}"
command -v msgfmt >/dev/null || { echo "SKIP: gettext (msgfmt) is not installed"; exit 77; }
[ -e "$BUILD/locale/zh_CN/LC_MESSAGES/gpudoctor.mo" ] || { echo "SKIP: the zh_CN catalogue is not built"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() {
    echo "FAIL: $*"
    fail=1
}
unset LC_ALL LC_MESSAGES LANGUAGE COLUMNS
export NO_COLOR=1 GPUDOCTOR_LOCALEDIR="$BUILD/locale" GPUDOCTOR_CONFIG=/dev/null GPUDOCTOR_STATE_DIR=off

localedef -i zh_CN -f UTF-8 "$tmp/zh_CN.UTF-8" 2>"$tmp/localedef.err" ||
    { echo "SKIP: cannot build the zh_CN.UTF-8 locale: $(head -c 200 "$tmp/localedef.err")"; exit 77; }
zh() { LOCPATH="$tmp" LANG=zh_CN.UTF-8 "$@"; }
en() { LANG=C.UTF-8 "$@"; }

n=0
# expect SNAPSHOT CHINESE ENGLISH: the zh_CN report of SNAPSHOT (tests/..., or an absolute path)
# says CHINESE, not ENGLISH.
expect() {
    local snap="$SRC/tests/$1" out="$tmp/$(echo "$1" | tr / _)"
    [ "${1#/}" = "$1" ] || snap=$1
    n=$((n + 1))
    if [ ! -e "$out.zh" ]; then
        zh "$GPUDOCTOR" check --from "$snap" --width 400 >"$out.zh" 2>&1
        en "$GPUDOCTOR" check --from "$snap" --json >"$out.en.json" 2>/dev/null
        zh "$GPUDOCTOR" check --from "$snap" --json >"$out.zh.json" 2>/dev/null
        cmp -s "$out.en.json" "$out.zh.json" || bad "$1: check --json differs between LANG=C and zh_CN"
    fi
    grep -qF -- "$2" "$out.zh" || bad "$1: zh_CN report lacks '$2'"
    grep -qF -- "$3" "$out.zh" && bad "$1: zh_CN report still says '$3'"
}

expect scenarios/graphics-on-compute/snapshot.json '（显示服务器）' '(display server)'
# Tables of text a rule passes whole into a sentence: the known-bad-driver defects, why a cuDNN
# does not serve a framework; and sentences once formed around an English value.
expect scenarios/known-bad-driver/snapshot.json '有已知缺陷：按其他版本 NVML 头文件构建的监控工具' 'monitoring tools built against'
expect scenarios/known-bad-driver/snapshot.json '# 升级到 535 分支的 535.104.05 或更新版本' 'upgrade to 535.104.05'
expect scenarios/known-bad-driver/snapshot.json '（ABI 不兼容，535.104.05 修复）' 'an ABI break'
expect scenarios/cudnn-mismatch/snapshot.json '主版本不同的 cuDNN 的 API 也不同' 'has a different API'
expect scenarios/disk-busy-rotational/snapshot.json '机械硬盘的随机读取速度跟不上' 'a spinning disk cannot serve'
expect scenarios/ib-port-down/snapshot.json 'InfiniBand 计数器没有被读取两次' 'counters were not read twice'
expect scenarios/bench-behind-under-load/snapshot.json '测得 30.0 TFLOPS，NVIDIA H100 80GB HBM3 应达到 67.0 TFLOPS' 'measured 30.0'
expect scenarios/bench-regression/snapshot.json 'GPU 0 (GPU-6f3c2a91), 算力' ', compute rate'
# A hung bench: the worker's step (written through src/snapshot/bench-steps.h) and the deadline.
expect scenarios/bench-timeout/snapshot.json 'CUDA 基准测试卡住了：在 GPU 0,1,2,3,4,5,6,7 上同时施加持续负载（30.0 s）' 'sustained load on'
expect scenarios/bench-timeout/snapshot.json '- CUDA 工作进程未能在 720 s 内完成' 'did not finish within'
expect scenarios/xids/snapshot.json '，由 Xid 48 引起' ', caused by Xid'
expect scenarios/compute-mode-hidden-holder/snapshot.json '：隐藏的占用者正在计算' 'the hidden holder is computing'
expect incidents/020-zombie-holders-data-io-child/snapshot.json '（不可见：请以 root 运行）' 'not visible: run as root'
expect incidents/022-exclusive-process-gpu-taken/snapshot.json '（NVML 的进程列表未能完整读取）' 'was not fully read'
expect scenarios/disk-busy-rotational/snapshot.json '；机械硬盘：每次寻道都要花费数毫秒' 'every seek costs milliseconds'
expect incidents/002-driver-mismatch-p2p-module/snapshot.json '主机内存 需要采样窗口' 'host memory'
expect incidents/002-driver-mismatch-p2p-module/snapshot.json '磁盘剩余空间 需要采样窗口' 'free disk space'
expect scenarios/input-starved/snapshot.json '（大幅波动：GPU 先等待，再追赶）' 'swinging: the GPU waits'
expect scenarios/cuda-minor-compat/snapshot.json '；借助次版本兼容则需 ' 'with minor-version compatibility'
expect incidents/007-cudnn-older-than-tensorflow-build/snapshot.json '来自 stack 采集器' 'the stack collector'
expect scenarios/no-driver/snapshot.json '内核驱动 未绑定' 'none bound'
expect scenarios/ib-errors/snapshot.json '链路抖动：断开 1 次' 'went down'
expect scenarios/ib-errors/snapshot.json '链路层 InfiniBand：' 'link layer InfiniBand'
expect scenarios/ib-roce-down/snapshot.json '链路层 Ethernet（RoCE）：' 'link layer Ethernet'

# The Xid catalogue: meaning (the title), likely cause with its category, NVIDIA's action.
expect scenarios/xids/snapshot.json 'GPU 0：Xid 13（图形引擎异常），' 'Graphics Engine Exception'
expect scenarios/xids/snapshot.json '- 可能原因（显存）：显存硬件：不可纠正的（双比特）ECC 错误' 'GPU memory hardware'
expect scenarios/xids/snapshot.json '- 处理：NVIDIA：复位 GPU 或重启即可清除。' 'a GPU reset or reboot clears it'
expect scenarios/xids/snapshot.json '驱动指出原因是 Xid 48（双比特 ECC 错误）' 'previous Xid 48）'
expect scenarios/xids/snapshot.json '- 可能原因（应用程序）：最常见的是应用程序' 'likely cause (application)'
# ... and the rule's own words around it: the fixes' comments, the decoded fields.
expect scenarios/xids/snapshot.json 'sudo nvidia-smi -r -i 2   # 排空其上的作业后：复位 GPU' 'after draining its jobs'
expect scenarios/xids/snapshot.json '（pid 6100），并检查程序中的 bug' 'check it for bugs'
# A Blackwell node's log (NVLink5 Xids decoded with data/xid-nvlink5.tsv, Xid 154's recovery
# action), its snapshot dated an hour after the last event so that every one is recent.
if command -v jq >/dev/null; then
    mkdir -p "$tmp/bw/var/log"
    cp "$SRC/tests/fixtures/klog/gen-580-blackwell.log" "$tmp/bw/var/log/kern.log"
    "$GPUDOCTOR" snapshot --root "$tmp/bw" --only kernel_log -o "$tmp/bw.json" 2>/dev/null &&
        jq '.time_ms = ([.driver.events[].time_ms] | max) + 3600000' "$tmp/bw.json" >"$tmp/blackwell.json" ||
        bad "no snapshot of tests/fixtures/klog/gen-580-blackwell.log"
    expect "$tmp/blackwell.json" '：Xid 149（NVLink：NETIR 错误），' 'NVLINK: NETIR Error'
    expect "$tmp/blackwell.json" '- 可能原因（NVLink）：NVLink5（Blackwell）：NETIR 单元' 'the NETIR unit'
    expect "$tmp/blackwell.json" '- 可能随之出现的情况（NVIDIA）：本端：无；对端：无' 'Local: none; Remote: none'
    expect "$tmp/blackwell.json" '- NVIDIA：该故障可能使操作系统处于不一致状态：重启节点' 'inconsistent: reboot the node'
    expect "$tmp/blackwell.json" '- 可能原因（显存）：显存：GPU 未能隔离的不可纠正错误' 'could not contain'
    expect "$tmp/blackwell.json" '- 最严重的事件：NETIR_LINK_EVT 致命，链路 0，' 'worst event'
    expect "$tmp/blackwell.json" '- 驱动表示：需要复位 GPU：是；' 'required: yes'
    expect "$tmp/blackwell.json" '# 驱动要求重启节点：先 drain 节点' 'asks for a node reboot'
fi

# Every text of the catalogues that the report shows (the columns rules-xid.c passes through _(),
# found by header name as src/data/tsv2c.c finds them) and every category word has a translation
# in every po/*.po that is not fuzzy and holds Chinese (or, for another language, differs; a
# category word need only differ: "nvlink" is "NVLink").
for po in "$SRC"/po/*.po; do
    lang=$(basename "$po" .po)
    msgfmt -o "$tmp/$lang.mo" "$po" 2>/dev/null || { bad "$lang: msgfmt failed"; continue; }
    python3 - "$tmp/$lang.mo" "$lang" "$SRC/data/xid.tsv" "$SRC/data/xid-nvlink5.tsv" "$SRC/data/cuda-errors.tsv" >"$tmp/cat.out" <<'PY' ||
import gettext, re, sys

mo, lang, xid_tsv, nvlink5_tsv, cudaerr_tsv = sys.argv[1:]
t = gettext.GNUTranslations(open(mo, "rb"))
cjk = re.compile("[\u4e00-\u9fff]")
missing, checked = [], 0

def ok(en, l, words=True):
    return l != en and (not words or not lang.startswith("zh") or cjk.search(l))

def rows(path):
    lines = [l.rstrip("\n") for l in open(path, encoding="utf-8") if l.strip() and not l.startswith("#")]
    header = lines[0].split("\t")
    return header, [dict(zip(header, l.split("\t"))) for l in lines[1:]]

for path, cols in ((xid_tsv, ("meaning", "typical_cause", "recommended_action")), (nvlink5_tsv, ("effect",)),
                   (cudaerr_tsv, ("meaning",))):
    header, table = rows(path)
    for col in cols:
        if col not in header:
            missing.append("%s has no column %s" % (path, col))
    for r in table:
        for col in cols:
            text = r.get(col, "")
            if text in ("", "-"):
                continue
            checked += 1
            if not ok(text, t.gettext(text)):
                missing.append("%s %s %s: %r" % (path.rsplit("/", 1)[-1], r[header[0]], col, text))
        if path == xid_tsv and not ok(r["category"], t.pgettext("Xid category", r["category"]), False):
            missing.append("xid %s category: %r" % (r["xid"], r["category"]))
if missing or checked < 500:
    print("%d of %d untranslated: %s" % (len(missing), checked, "; ".join(missing[:5])))
    sys.exit(1)
print(checked)
PY
        bad "$lang: the Xid catalogue's text lacks translations: $(cat "$tmp/cat.out")"
done

[ "$fail" = 0 ] && echo "i18n-rules: $n translated values in the zh_CN report; JSON unchanged; the Xid catalogue's $(cat "$tmp/cat.out") texts translated"
exit "$fail"
