#!/usr/bin/env bash
# The man page (man/gpudoctor.1, installed by make install): groff reads it without a warning,
# it names every command 'gpudoctor --help' lists, and its exit statuses are the program's.
set -uo pipefail
: "${GPUDOCTOR:?}" "${SRC:?}"
page=$SRC/man/gpudoctor.1
command -v groff >/dev/null || { echo "groff not installed"; exit 77; }
fails=0
fail() {
    echo "FAIL: $*"
    fails=$((fails + 1))
}
warnings=$(groff -man -Tutf8 -ww -z "$page" 2>&1)
[ -z "$warnings" ] || fail "groff warns: $warnings"
text=$(groff -man -Tutf8 -P-c -P-b -P-u "$page" 2>/dev/null)
for cmd in $("$GPUDOCTOR" --help | awk '/^Commands:/ {on = 1; next} on && /^  [a-z]/ {print $1} on && /^$/ {exit}'); do
    grep -Eq "^ {7}$cmd( |$)" <<<"$text" || fail "the man page has no entry for '$cmd'"
done
grep -q "gpudoctor $("$GPUDOCTOR" --version | awk '{print $2}')" "$page" ||
    fail "the man page's version is not $("$GPUDOCTOR" --version)"
for st in 0 1 2 3 64; do
    grep -Eq "^ {7}$st( |$)" <<<"$text" || fail "exit status $st is not described"
done
[ "$fails" = 0 ] || exit 1
echo ok
