#!/usr/bin/env bash
# README.md's demo excerpt is what `make demo` prints (scripts/demo.sh, at 80 columns, UTF-8, no
# colour), line for line, today and on any other day: the demo's fixture tree is judged as of its
# own clock, not the wall clock (issue 11: "started 4h10m ago" drifted with the date).
set -uo pipefail
: "${GPUDOCTOR:?}" "${SRC:?}" "${BUILD:?}"
[ -e "${SIM_LIB:-}" ] || { echo "SKIP: the NVML simulator is not built"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export LC_ALL=C.UTF-8 NO_COLOR=1 NVML_SIM_QUIET=1
unset COLUMNS NVML_SIM_EPOCH

# The excerpt: the code block after "the first lines of `make demo`".
awk '/the first lines of `make demo`/ { want = 1; next }
     want && /^```/ { if (inside) exit; inside = 1; next }
     inside { print }' "$SRC/README.md" >"$tmp/readme"
n=$(wc -l <"$tmp/readme")
[ "$n" -ge 10 ] || { echo "FAIL: README.md has no demo excerpt ($n lines)"; exit 1; }

"$SRC/scripts/demo.sh" "$BUILD" >"$tmp/demo" 2>"$tmp/err"
rc=$?
[ "$rc" = 2 ] || { echo "FAIL: the demo exits $rc, not 2 (critical): $(head -c 300 "$tmp/err")"; exit 1; }
head -n "$n" "$tmp/demo" >"$tmp/first"
if ! cmp -s "$tmp/readme" "$tmp/first"; then
    echo "FAIL: README.md's excerpt is not what make demo prints:"
    diff "$tmp/readme" "$tmp/first"
    exit 1
fi
# The tree's clock, not this machine's: ages are those of the capture (btime + uptime of the tree).
grep -q '^          - started 2h59m ago$' "$tmp/demo" || { echo "FAIL: the stopped job's age is not 2h59m"; exit 1; }
grep -q 'Xid 48 (Double Bit ECC Error), last 58m ago' "$tmp/demo" || { echo "FAIL: the Xid is not 58m old"; exit 1; }
echo "README's $n lines match make demo"
