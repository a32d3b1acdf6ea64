#!/usr/bin/env bash
# check --from and procs --from on a big snapshot (about 184 MB: 160,000 processes): peak RSS and
# wall time of the streaming reader, and of the same file read as one tree (what every snapshot
# cost before; still the way for a document whose "schema" is not its first key).
set -euo pipefail
echo "## Reading a big snapshot: check --from, procs --from"
echo
command -v jq >/dev/null || { echo "(skipped: jq not installed)"; exit 0; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
base=$SRC/tests/scenarios/idle-holder/snapshot.json
n=226000
# One process of the scenario, with a long command line, repeated with other pids; the
# scenario's own processes stay (the GPUs' holders), so the rules have their usual work.
# The members after "pid" (awk prints "pid" first: a regex substitution per line is slow in mawk).
rest=$(jq -c '.processes.processes[0] | del(.pid) | .ppid = 1
    | .cmdline = "/usr/bin/python3 -m some.module --with --many --arguments " + ("x" * 200)' "$base")
jq '.processes.processes += ["@PROCS@"]' "$base" >"$tmp/skeleton.json"
{
    sed '/"@PROCS@"/,$d' "$tmp/skeleton.json"
    awk -v n="$n" -v rest="${rest#\{}" 'BEGIN {
        for (i = 0; i < n; i++)
            printf "{\"pid\":%d,%s%s", 100000 + i, rest, (i < n - 1 ? ",\n" : "\n")
    }'
    sed '1,/"@PROCS@"/d' "$tmp/skeleton.json"
} >"$tmp/big.json"
# The same document with "schema" last (moved by sed: jq would need gigabytes for it), read as
# one jansson tree.
grep -q '^  "schema": "gpudoctor.snapshot/1",$' "$tmp/big.json"
sed -e '/^  "schema": "gpudoctor.snapshot\/1",$/d' \
    -e '$s/^}$/, "schema": "gpudoctor.snapshot\/1"}/' "$tmp/big.json" >"$tmp/whole.json"
size=$(stat -c %s "$tmp/big.json")
echo "A snapshot of $((size / 1000000)) MB: the idle-holder scenario with $n more processes, each"
echo "with a 260-byte command line. Peak RSS and wall time of one run; 'read"
echo "whole' is the same file with \"schema\" as its last key, which the streaming reader leaves"
echo "to jansson's whole tree, as every snapshot was read before."
echo
echo "| what | wall (s) | peak RSS (MiB) | RSS / file size |"
echo "|---|---|---|---|"
row() {
    local name=$1
    shift
    local r
    r=$("$RUNSTAT" -n 1 -w 0 -- "$@")
    awk -v name="$name" -v size="$size" '{for (i = 1; i <= NF; i++) {split($i, kv, "="); v[kv[1]] = kv[2]}}
        END {printf "| %s | %.1f | %.0f | %.1f |\n", name, v["wall_ms_median"] / 1000,
             v["rss_kib_max"] / 1024, v["rss_kib_max"] * 1024 / size}' <<<"$r"
}
export GPUDOCTOR_CONFIG=/dev/null
row "gpudoctor check --from (streaming reader)" "$GPUDOCTOR" check --from "$tmp/big.json"
row "gpudoctor procs --from (streaming reader)" "$GPUDOCTOR" procs --from "$tmp/big.json"
row "gpudoctor check --from, read whole" "$GPUDOCTOR" check --from "$tmp/whole.json"
