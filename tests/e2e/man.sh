#!/usr/bin/env bash
# The man pages (man/gpudoctor.1, its Simplified Chinese translation man/zh_CN/gpudoctor.1 and the
# Slurm wrappers' gpudoctor-slurm-*.8, installed by make install): groff reads each without a
# warning, each carries the program's version; both gpudoctor.1 name every command
# 'gpudoctor --help' lists, and their exit statuses are the program's.
set -uo pipefail
: "${GPUDOCTOR:?}" "${SRC:?}"
page=$SRC/man/gpudoctor.1
command -v groff >/dev/null || { echo "groff not installed"; exit 77; }
fails=0
fail() {
    echo "FAIL: $*"
    fails=$((fails + 1))
}
zh=$SRC/man/zh_CN/gpudoctor.1
for p in "$page" "$zh" "$SRC"/man/gpudoctor-slurm-*.8; do
    warnings=$(groff -k -man -Tutf8 -ww -z "$p" 2>&1)
    [ -z "$warnings" ] || fail "groff warns on ${p##*/}: $warnings"
done
for p in "$page" "$zh"; do
    text=$(groff -k -man -Tutf8 -P-c -P-b -P-u "$p" 2>/dev/null)
    for cmd in $(LANG=C "$GPUDOCTOR" --help | awk '/^Commands:/ {on = 1; next} on && /^  [a-z]/ {print $1} on && /^$/ {exit}'); do
        grep -Eq "^ {7}$cmd( |$)" <<<"$text" || fail "${p#"$SRC"/} has no entry for '$cmd'"
    done
    for st in 0 1 2 3 64; do
        grep -Eq "^ {7}$st( |$)" <<<"$text" || fail "${p#"$SRC"/}: exit status $st is not described"
    done
done
# The translation: in Chinese, and with the English page's sections (one for one).
grep -q '^\.SH 退出状态' "$zh" || fail "man/zh_CN/gpudoctor.1 has no 退出状态 section"
[ "$(grep -c '^\.SH' "$zh")" = "$(grep -c '^\.SH' "$page")" ] ||
    fail "man/zh_CN/gpudoctor.1 has $(grep -c '^\.SH' "$zh") sections, the English page $(grep -c '^\.SH' "$page")"
[ "$(grep -c '^\.TP' "$zh")" = "$(grep -c '^\.TP' "$page")" ] ||
    fail "man/zh_CN/gpudoctor.1 has $(grep -c '^\.TP' "$zh") entries, the English page $(grep -c '^\.TP' "$page")"
for p in "$page" "$zh" "$SRC"/man/gpudoctor-slurm-*.8; do
    grep -q "gpudoctor $("$GPUDOCTOR" --version | awk '{print $2}')" "$p" ||
        fail "${p##*/}: the version is not $("$GPUDOCTOR" --version)"
done
[ "$fails" = 0 ] || exit 1
echo ok
