#!/usr/bin/env bash
# Every command's --help: status 0, on standard output, its own usage line, every line within 80
# columns (a terminal's width), and listed by 'gpudoctor --help' with a summary.
set -uo pipefail
fails=0
fail() {
    echo "FAIL: $*"
    fails=$((fails + 1))
}
out=$(mktemp)
trap 'rm -f "$out"' EXIT

"$GPUDOCTOR" --help >"$out" || fail "gpudoctor --help: status $?"
awk 'length > 80 { print "FAIL: gpudoctor --help: " length " columns: " $0; bad = 1 } END { exit bad }' "$out" ||
    fails=$((fails + 1))
for cmd in check explain snapshot procs reap watch serve slurm-check slurm-prolog slurm-epilog \
    profile fleet; do
    grep -Eq "^  $cmd +[a-zA-Z]" "$out" || fail "gpudoctor --help does not list $cmd"
done
for cmd in check explain snapshot procs reap watch serve slurm-check slurm-prolog slurm-epilog \
    profile fleet; do
    "$GPUDOCTOR" "$cmd" --help >"$out" 2>/dev/null || fail "$cmd --help: status $?"
    head -n 1 "$out" | grep "^Usage: gpudoctor $cmd " >/dev/null || fail "$cmd --help: first line $(head -n 1 "$out")"
    awk -v c="$cmd" 'length > 80 { print "FAIL: " c " --help: " length " columns: " $0; bad = 1 }
        END { exit bad }' "$out" || fails=$((fails + 1))
    grep -q '^Exit status: ' "$out" || fail "$cmd --help does not give the exit status"
done
# An unknown option: status 64, and getopt's message names the command.
for cmd in check snapshot procs reap watch serve slurm-check slurm-prolog slurm-epilog profile \
    fleet; do
    rc=0
    "$GPUDOCTOR" "$cmd" --no-such-option >/dev/null 2>"$out" || rc=$?
    [ "$rc" = 64 ] || fail "$cmd --no-such-option: status $rc, not 64"
    grep -q "^gpudoctor $cmd: unrecognized option '--no-such-option'" "$out" ||
        fail "$cmd --no-such-option: $(head -n 1 "$out")"
done
[ "$fails" = 0 ] || exit 1
echo ok
