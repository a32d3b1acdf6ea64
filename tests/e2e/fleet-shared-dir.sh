#!/usr/bin/env bash
# `gpudoctor fleet DIR` on a snapshot directory that others can write to, as root would read it
# from cron: a file name that carries an escape sequence, a newline or a bidirectional override
# (and names the node when its snapshot has no host name) reaches neither the text report nor
# standard error, the JSON or the HTML page as it is, but as str_sanitize shows host names ('?'
# for each such byte); a FIFO, a link to one or a directory in a snapshot's place is named as
# not read, never opened in a way that waits for a writer; a symbolic link in the directory is
# never followed (to a secret, to another node's snapshot); a snapshot left out for a newer one of
# the same host name (a stale copy, or one that claims another node's name) is named.
set -uo pipefail
command -v jq >/dev/null || { echo "SKIP: jq not installed"; exit 77; }
: "${GPUDOCTOR:?}" "${SRC:?}"
export GPUDOCTOR_CONFIG=/dev/null NO_COLOR=1 LANG=C.UTF-8
. "$SRC/tests/e2e/lib.bash"
BASE=$SRC/tests/scenarios/healthy-8gpu-busy/snapshot.json

# mkdir_nodes DIR N: N snapshots node00.json.. of the base, host names node00..
mkdir_nodes() {
    local i
    mkdir -p "$1"
    for i in $(seq 0 $(($2 - 1))); do
        jq -c --arg h "$(printf node%02d "$i")" --argjson t "$i" '.hostname = $h | .time_ms += $t' \
            "$BASE" >"$1/$(printf node%02d "$i").json"
    done
}

# ---- hostile file names ----
cd "$tmp" || exit 1
d=names # relative: the node table's first column shows the start of the name
mkdir_nodes "$d" 5
# node00's snapshot has no host name: its file names it, an OSC title, SGR, a bidi override, a newline
evil=$(printf 'a\033]0;TITLE\007\033[41mEVIL\342\200\256x\nFORGED')
jq -c '.hostname = ""' "$d/node00.json" >"$d/$evil.json"
rm "$d/node00.json"
printf 'garbage' >"$d/$(printf '\033[31mbad').json"
rc=0
"$GPUDOCTOR" fleet "$d" >"$tmp/names.txt" 2>"$tmp/names.err" || rc=$?
check "names: exit status (an input unread)" "$rc" 3
for f in names.txt names.err; do
    grep -q $'\033' "$tmp/$f" && fail "names: an escape byte in $f: $(cat -v "$tmp/$f" | head -3)"
    grep -q $'\342\200\256' "$tmp/$f" && fail "names: a bidirectional override in $f"
    grep -q '^FORGED' "$tmp/$f" && fail "names: a file name's newline starts a line of $f"
done
check "names: standard error" "$(cat "$tmp/names.err")" \
    "gpudoctor fleet: $d/?[31mbad.json: line 1, column 7: '[' or '{' expected near 'garbage'"
grep -qxF "not read: $d/?[31mbad.json: line 1, column 7: '[' or '{' expected near 'garbage'" "$tmp/names.txt" || fail "names: the text report does not name the unread file safely: $(cat -v "$tmp/names.txt")"
grep -F "$d/a?]0;TITLE??[41mEV…" "$tmp/names.txt" | grep -q "^$d/a" ||
    fail "names: the node named by its file is not in the text report as sanitized: $(cat -v "$tmp/names.txt")"
"$GPUDOCTOR" fleet --json --html "$tmp/names.html" "$d" >"$tmp/names.json" 2>/dev/null
check "names: JSON node name" "$(jq -r '.nodes[] | select(.name | startswith("node") | not) | .name' "$tmp/names.json")" \
    "$d/a?]0;TITLE??[41mEVIL???x?FORGED.json"
check "names: JSON node source" "$(jq -r '.nodes[] | select(.name | startswith("node") | not) | .source' "$tmp/names.json")" \
    "$d/a?]0;TITLE??[41mEVIL???x?FORGED.json"
check "names: JSON error source" "$(jq -r '.errors[0].source' "$tmp/names.json")" "$d/?[31mbad.json"
check "names: JSON error message" "$(jq -r '.errors[0].message' "$tmp/names.json")" \
    "line 1, column 7: '[' or '{' expected near 'garbage'"
check "names: the other nodes" "$(jq -c '[.nodes[].name | select(startswith("node"))]' "$tmp/names.json")" \
    '["node01","node02","node03","node04"]'
grep -q $'\033\|\342\200\256' "$tmp/names.html" && fail "names: an escape byte or bidi override in the HTML page"
grep -qF 'EVIL???x?FORGED' "$tmp/names.html" || fail "names: the HTML page does not show the sanitized name"

# ---- what is not a regular file ----
# A FIFO (nobody writes to it), a link to one, a directory named like a snapshot: each is named as
# not read, never waited on (a blocking open of a FIFO waits for a writer forever), and the others
# are judged. The check is on what was opened, so a FIFO renamed over a snapshot after the
# directory was listed is refused the same way.
# A symbolic link in the directory is never followed, wherever it points: whoever can write there
# could point it at any file (fleet may run as root from cron) and have its first bytes shown in
# the error, or a snapshot of another machine read as a node. A link to a secret, to another
# node's snapshot and to a FIFO are each named as a link, not read.
d=$tmp/special
mkdir_nodes "$d" 5
mkfifo "$d/x-fifo.json"
ln -s x-fifo.json "$d/y-link.json"
mkdir "$d/z-dir.json"
printf 'hunter2secret:x\n' >"$tmp/secret.txt"
chmod 600 "$tmp/secret.txt"
ln -s "$tmp/secret.txt" "$d/zz-secret.json"
jq -c '.hostname = "node99"' "$BASE" >"$tmp/node99.json"
ln -s "$tmp/node99.json" "$d/zz-node99.json"
rc=0
timeout 20 "$GPUDOCTOR" fleet --json --html "$tmp/special.html" "$d" >"$tmp/special.json" 2>"$tmp/special.err" || rc=$?
check "special files: exit status (inputs unread)" "$rc" 3
check "special files: the nodes read" "$(jq -c '[.nodes[].name]' "$tmp/special.json")" \
    '["node00","node01","node02","node03","node04"]'
link="a symbolic link, which is not followed in a directory: name its target to read it"
check "special files: errors" "$(jq -c '[.errors[] | [.source, .message]]' "$tmp/special.json")" \
    "$(jq -nc --arg d "$d" --arg link "$link" '[[$d + "/x-fifo.json", "not a regular file (a FIFO, a device or a socket): a stream is read from '"'-'"'"],
        [$d + "/y-link.json", $link], [$d + "/z-dir.json", "Is a directory"],
        [$d + "/zz-node99.json", $link], [$d + "/zz-secret.json", $link]]')"
check "special files: standard error" "$(wc -l <"$tmp/special.err")" 5
grep -l hunter2 "$tmp/special.json" "$tmp/special.err" "$tmp/special.html" &&
    fail "special files: the target of a link in the directory was read"
# the same file named on the command line is the user's choice: a link to it is followed
rc=0
"$GPUDOCTOR" fleet --json "$d/zz-node99.json" >"$tmp/link-operand.json" 2>/dev/null || rc=$?
check "a link named as an operand: exit status" "$rc" 0
check "a link named as an operand: its node" "$(jq -c '[.nodes[].name]' "$tmp/link-operand.json")" '["node99"]'
# named on the command line (a shell glob names it so): refused as well, not waited on
rc=0
timeout 20 "$GPUDOCTOR" fleet "$d/x-fifo.json" "$d/node01.json" >/dev/null 2>"$tmp/fifo.err" || rc=$?
check "a FIFO operand: exit status" "$rc" 3
check "a FIFO operand: standard error" "$(cat "$tmp/fifo.err")" \
    "gpudoctor fleet: $d/x-fifo.json: not a regular file (a FIFO, a device or a socket): a stream is read from '-'"

# ---- a copy that claims another node's host name ----
# node00 is an outlier (a 600 W power limit); a copy of node01 renamed node00, dated 2100, takes
# its row (the newest counts) and hides it: the file left out is named beside the one kept, in
# the text report and the JSON.
d=$tmp/dup
mkdir_nodes "$d" 5
jq -c '.gpus[0].power_limit_mw = 600000' "$d/node00.json" >"$d/n" && mv "$d/n" "$d/node00.json"
jq -c '.hostname = "node00" | .time_ms = 4102444800000' "$d/node01.json" >"$d/zz-other.json"
rc=0
"$GPUDOCTOR" fleet "$d" >"$tmp/dup.txt" 2>"$tmp/dup.err" || rc=$?
check "duplicate: exit status (the outlier hidden)" "$rc" 0
check "duplicate: the text report's head" "$(sed -n 2,3p "$tmp/dup.txt")" \
    "1 older snapshot of nodes already read left out (the newest counts)
left out: $d/node00.json: an older snapshot of node00 than $d/zz-other.json"
"$GPUDOCTOR" fleet --json "$d" >"$tmp/dup.json" 2>/dev/null
check "duplicate: JSON count" "$(jq .duplicates "$tmp/dup.json")" 1
check "duplicate: JSON left_out" "$(jq -c .left_out "$tmp/dup.json")" \
    "[{\"name\":\"node00\",\"source\":\"$d/node00.json\",\"time_ms\":$(jq .time_ms "$BASE"),\"kept\":\"$d/zz-other.json\"}]"
check "duplicate: node00's row" "$(jq -r '.nodes[] | select(.name == "node00") | .source' "$tmp/dup.json")" "$d/zz-other.json"
# without the copy: node00 is the outlier, and nothing is left out
rm "$d/zz-other.json"
rc=0
"$GPUDOCTOR" fleet --json "$d" >"$tmp/nodup.json" 2>/dev/null || rc=$?
check "no duplicate: exit status" "$rc" 1
check "no duplicate: outliers, left out" "$(jq -c '[.outliers, .left_out]' "$tmp/nodup.json")" '[["node00"],[]]'

e2e_done "ok"
