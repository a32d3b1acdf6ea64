#!/usr/bin/env bash
# The man pages (man/gpudoctor.1 and the Slurm wrappers' gpudoctor-slurm-*.8, installed by
# make install): groff reads each without a warning, each carries the program's version;
# gpudoctor.1 names every command 'gpudoctor --help' lists, and its exit statuses are the program's.
set -uo pipefail
: "${GPUDOCTOR:?}" "${SRC:?}"
page=$SRC/man/gpudoctor.1
command -v groff >/dev/null || { echo "groff not installed"; exit 77; }
fails=0
fail() {
    echo "FAIL: $*"
    fails=$((fails + 1))
}
for p in "$page" "$SRC"/man/gpudoctor-slurm-*.8; do
    warnings=$(groff -man -Tutf8 -ww -z "$p" 2>&1)
    [ -z "$warnings" ] || fail "groff warns on ${p##*/}: $warnings"
done
text=$(groff -man -Tutf8 -P-c -P-b -P-u "$page" 2>/dev/null)
for cmd in $("$GPUDOCTOR" --help | awk '/^Commands:/ {on = 1; next} on && /^  [a-z]/ {print $1} on && /^$/ {exit}'); do
    grep -Eq "^ {7}$cmd( |$)" <<<"$text" || fail "the man page has no entry for '$cmd'"
done
for p in "$page" "$SRC"/man/gpudoctor-slurm-*.8; do
    grep -q "gpudoctor $("$GPUDOCTOR" --version | awk '{print $2}')" "$p" ||
        fail "${p##*/}: the version is not $("$GPUDOCTOR" --version)"
done
for st in 0 1 2 3 64; do
    grep -Eq "^ {7}$st( |$)" <<<"$text" || fail "exit status $st is not described"
done
[ "$fails" = 0 ] || exit 1
echo ok
