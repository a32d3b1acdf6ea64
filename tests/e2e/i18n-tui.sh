#!/usr/bin/env bash
# The live view in Chinese (issue 15): the demo server in watch at 80x24 in a real terminal (tmux)
# under LANG=zh_CN.UTF-8. The findings pane lists the titles in Chinese, cut by display width: no
# screen line is wider than the terminal's 80 columns and no wide character is split (the
# captured screen is valid UTF-8); the GPU rows keep their columns; q ends it with status 0.
. "$(dirname "$0")/watch-lib.sh"
command -v tmux >/dev/null || { echo "tmux not installed"; exit 77; }
localedef -i zh_CN -f UTF-8 "$TMP/zh_CN.UTF-8" 2>/dev/null || { echo "cannot build the zh_CN.UTF-8 locale"; exit 77; }

DEMO=$SRC/tests/scenarios/troubled-8xh100
tmux_start 80 24 "env LOCPATH=$TMP LANG=zh_CN.UTF-8 LC_ALL= GPUDOCTOR_LOCALEDIR=$BUILD/locale \
    NVML_SIM_SCENARIO=$DEMO/scenario.json NVML_SIM_PROC=$DEMO/root/proc \
    $GPUDOCTOR watch --root $DEMO/root 2>$TMP/stderr; echo EXITED rc=\$?; sleep 120"
dump() {
    echo "--- screen ---" >&2
    screen >&2
}
if ! wait_for 'proc\.stopped-holder' 30; then
    fail "no finding within 30 s"
    dump
    finish
fi
sleep 1
screen >"$TMP/screen"
# The stopped holder's title, in Chinese (its first characters at least: the pane cuts it).
grep -E 'proc\.stopped-holder' "$TMP/screen" | grep '[^ -~]' >/dev/null ||
    { fail "the stopped holder's title is not in Chinese: $(grep 'proc.stopped-holder' "$TMP/screen")"; dump; }
python3 - "$TMP/screen" <<'PY' || { fail "layout: $(cat "$TMP/layout")"; dump; }
import sys, unicodedata
data = open(sys.argv[1], "rb").read()
try:
    text = data.decode("utf-8")
except UnicodeDecodeError as e:
    open(sys.argv[1].replace("screen", "layout"), "w").write("a character was split: %s" % e)
    sys.exit(1)
for n, line in enumerate(text.split("\n"), 1):
    w = sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in line)
    if w > 80:
        open(sys.argv[1].replace("screen", "layout"), "w").write("line %d is %d columns: %s" % (n, w, line))
        sys.exit(1)
PY
# The GPU table is unchanged by the language: every GPU's row, its numbers in the C format.
[ "$(grep -Ec '^ +[0-7] +[0-9]+% .*GiB' "$TMP/screen")" -ge 4 ] || { fail "the GPU rows are not laid out"; dump; }
# The tables' heads, the findings pane and the key hints in Chinese too, at the English columns.
grep -Eq '^GPU 负载 +显存 +温度 +功耗 +SM MHz 降频原因' "$TMP/screen" || { fail "the GPU table's heads are not in Chinese"; dump; }
grep -Eq '^[ ▶] *问题 第 1-[0-9]+ 条，共 [0-9]+ 条' "$TMP/screen" || { fail "the findings pane's title is not in Chinese"; dump; }
grep -Eq '^>严重  proc\.stopped-holder' "$TMP/screen" || { fail "the severity tag is not in Chinese"; dump; }
grep -Eq 'FINDINGS|CRIT |WARN |j/k select|USER|STATE' "$TMP/screen" && { fail "the screen keeps English labels"; dump; }
grep -Eq '^[ ▶]PID +用户 +GPU +显存\* +SM% +CPU% 状态 +时长  命令' "$TMP/screen" ||
    { fail "the process list's heads are not in Chinese"; dump; }
grep -Eq '^[> ]39104   alice     3      78\.7 GiB    0 +[0-9-]+ 停止 ' "$TMP/screen" ||
    { fail "the stopped process's state is not in Chinese, at its column"; dump; }
grep -Eq '^\[(进程|问题)\] j/k 选择  ' "$TMP/screen" || { fail "the key hints are not in Chinese"; dump; }
keys q
wait_for 'EXITED rc=0' 10 || { fail "q did not end watch with status 0"; dump; }
[ ! -s "$TMP/stderr" ] || fail "stderr: $(head -c 300 "$TMP/stderr")"
finish
