#!/usr/bin/env bash
# reap's results in Chinese: under zh_CN.UTF-8 the result lines (exited, killed, declined) and
# the question are Chinese, while the action log on stderr and `reap --json` (its "detail") stay
# English: the JSON of the same plan is byte for byte the one LANG=C writes.
. "$SRC/tests/e2e/reap-lib.bash"

: "${BUILD:?BUILD must name the build directory}"
[ -e "$BUILD/locale/zh_CN/LC_MESSAGES/gpudoctor.mo" ] || { echo "SKIP: no zh_CN catalogue built"; exit 77; }
# A zh_CN.UTF-8 locale of our own (the machine need not have generated one): glibc's LOCPATH.
mkdir -p "$TMP/loc"
localedef -i zh_CN -f UTF-8 "$TMP/loc/zh_CN.UTF-8" 2>"$TMP/localedef.err" ||
    { echo "SKIP: cannot build the zh_CN.UTF-8 locale: $(head -c 200 "$TMP/localedef.err")"; exit 77; }
unset LANGUAGE LC_ALL LC_MESSAGES LC_CTYPE
export GPUDOCTOR_LOCALEDIR="$BUILD/locale" LANG=C
zh() { LOCPATH="$TMP/loc" LANG=zh_CN.UTF-8 "$@"; }

# Lines with a byte outside printable ASCII.
non_ascii() { LC_ALL=C grep -n '[^ -~]' "$@"; }

# The parts of a JSON plan that differ between two runs on other processes: pids, start times,
# ages, the window measured and the times in the results.
mask() {
    jq -S '.window_ms = 0 | .targets |= (map(.pid = 0 | .gpu_pid = 0 | .start_ticks = 0
        | .start_time_ms = 0 | .evidence |= map(gsub("[0-9]+"; "N"))
        | if .result then .result.elapsed_ms = 0 | .result.detail |= gsub("[0-9.]+"; "N") else . end)
        | sort_by(.result.outcome))' "$1"
}

# ---- a real kill, text: one ends on SIGTERM, one ignores it and gets SIGKILL ----
start_sleep
polite=$SPAWNED
kill -STOP "$polite"
start_helper ignore-term
stubborn=$SPAWNED
scenario "$polite:0:20" "$stubborn:0:30"
zh run text reap --pid "$polite,$stubborn" --kill --yes --grace 1s --window 0.3
status 0 "kill under zh_CN"
has_line "$TMP/text.out" "^正在向 2 个进程发送信号：$" "Chinese plan"
has_line "$TMP/text.out" "^结果：$" "Chinese result heading"
has_line "$TMP/text.out" "^  pid $polite: 收到 SIGTERM 后已退出（[0-9]+\.[0-9] 秒）$" "Chinese result of $polite"
has_line "$TMP/text.out" "^  pid $stubborn: 已用 SIGKILL 结束：它忽略了 SIGTERM 1\.0 秒$" "Chinese result of $stubborn"
has_line "$TMP/text.out" "^  GPU 0：51\.0 GiB → 1\.00? GiB（释放 50\.0 GiB）$" "Chinese freed line"
! grep -Eq "exited after|killed:" "$TMP/text.out" || fail "English result under zh_CN: $(grep -E 'exited after|killed:' "$TMP/text.out")"
gone "$polite" || fail "$polite is still there"
gone "$stubborn" || fail "$stubborn is still there"
# The action log stays English (and ASCII): a log search must not depend on the locale.
has_line "$TMP/text.err" "^gpudoctor reap: by=[^ ]+ pid=$polite .* signal=SIGTERM result=\"exited after SIGTERM \([0-9]+\.[0-9] s\)\"$" "English log of $polite"
has_line "$TMP/text.err" "^gpudoctor reap: by=[^ ]+ pid=$stubborn .* signal=SIGTERM result=\"still running 1\.[0-9] s after SIGTERM\"$" "English log of SIGTERM to $stubborn"
has_line "$TMP/text.err" "^gpudoctor reap: by=[^ ]+ pid=$stubborn .* signal=SIGKILL result=\"exited\"$" "English log of SIGKILL to $stubborn"
[ "$(grep -c '^gpudoctor reap: ' "$TMP/text.err")" = 3 ] || fail "expected 3 log lines: $(cat "$TMP/text.err")"
if non_ascii "$TMP/text.err" >"$TMP/text.nonascii"; then
    fail "the log under zh_CN is not plain ASCII: $(head -3 "$TMP/text.nonascii")"
fi

# ---- a real kill, --json: the same in both languages ----
for lang in c zh; do
    start_sleep
    kill -STOP "$SPAWNED"
    scenario "$SPAWNED:1:7"
    if [ "$lang" = zh ]; then
        zh run "json-$lang" reap --stopped --kill --yes --grace 1s --window 0.3 --json
    else
        run "json-$lang" reap --stopped --kill --yes --grace 1s --window 0.3 --json
    fi
    status 0 "kill --json ($lang)"
    check '[.targets[].result | [.outcome, (.detail | test("^exited after SIGTERM \\([0-9.]+ s\\)$"))]]' \
        '[["exited", true]]' "$TMP/json-$lang.out"
    gone "$SPAWNED" || fail "$SPAWNED is still there ($lang)"
done
if non_ascii "$TMP/json-zh.out" >"$TMP/json.nonascii"; then
    fail "reap --json under zh_CN is not plain ASCII: $(head -3 "$TMP/json.nonascii")"
fi
mask "$TMP/json-c.out" >"$TMP/json-c.masked"
mask "$TMP/json-zh.out" >"$TMP/json-zh.masked"
diff -u "$TMP/json-c.masked" "$TMP/json-zh.masked" >"$TMP/json.diff" ||
    fail "reap --kill --json differs between LANG=C and zh_CN: $(head -20 "$TMP/json.diff")"

# ---- declined: the question and the result in Chinese, the JSON byte for byte LANG=C's ----
start_sleep
kept=$SPAWNED
kill -STOP "$kept"
scenario "$kept:0:4"
# Only the age ("started 0s ago") and the measured window may differ between the two runs.
same() { sed -E 's/"started [0-9]+s ago"/"started Ns ago"/; s/[0-9]+ ms window/N ms window/; s/"window_ms": [0-9]+/"window_ms": N/' "$1"; }
echo n | "$GPUDOCTOR" reap --pid "$kept" --interactive --window 0.3 --json >"$TMP/no-c.out" 2>"$TMP/no-c.err" || true
echo n | zh "$GPUDOCTOR" reap --pid "$kept" --interactive --window 0.3 --json >"$TMP/no-zh.out" 2>"$TMP/no-zh.err" || true
check '[.targets[].result | [.outcome, .detail]]' '[["declined", "not signalled: declined"]]' "$TMP/no-zh.out"
diff -u <(same "$TMP/no-c.out") <(same "$TMP/no-zh.out") >"$TMP/no.diff" ||
    fail "reap --json of a declined plan differs between LANG=C and zh_CN: $(head -20 "$TMP/no.diff")"
echo n | zh "$GPUDOCTOR" reap --pid "$kept" --interactive --window 0.3 >"$TMP/no-text.out" 2>"$TMP/no-text.err" || true
has_line "$TMP/no-text.err" "^向 pid $kept（[^）]+）sleep 300 发送信号？ \[y/N\] n$" "Chinese question"
has_line "$TMP/no-text.out" "^  pid $kept: 未发送信号：操作者未同意$" "Chinese declined result"
alive "$kept" || fail "the declined $kept was ended"
finish
