#!/usr/bin/env bash
# Words a rule passes into a translated sentence as a value (docs/i18n.md) are translated with it
# in the Chinese report, and only there: for each, the zh_CN report of a snapshot that shows it
# has the Chinese and not the English, and check --json is byte-identical under LANG=C and
# zh_CN.UTF-8 for every snapshot used here.
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
# expect SNAPSHOT CHINESE ENGLISH: the zh_CN report of SNAPSHOT (tests/...) says CHINESE, not ENGLISH.
expect() {
    local snap="$SRC/tests/$1" out="$tmp/$(echo "$1" | tr / _)"
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
expect scenarios/xids/snapshot.json '，由 Xid 48 引起' ', caused by Xid'
expect scenarios/xids/snapshot.json '# 重启触发该错误的作业（pid 6100），并检查它的缺陷' 'and check it for bugs'
expect scenarios/xids/snapshot.json '   # 排空它上面的作业后：重置 GPU' 'after draining its jobs'
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

[ "$fail" = 0 ] && echo "i18n-rules: $n translated values in the zh_CN report; JSON unchanged"
exit "$fail"
