#!/usr/bin/env bash
# The corpus of real incidents (tests/incidents/README.md): runs `gpudoctor check --from
# snapshot.json --json` on every case and compares the top finding with the one its README
# expected before gpudoctor was run on it.
#   incident  hit when the first finding has the expected rule id, subject (gpu=, pid=, object=
#             where the README names them) and severity, and no "must not report" finding shows
#   healthy   hit when nothing is reported as warning or critical
# Prints a table and the top-1 rate, with and without the cases listed in known-misses (one case
# per line, then the reason). Fails when the rate over the cases not listed there is below the
# percentage in `threshold`, when a healthy machine warns, when a listed case now passes (take it
# out of known-misses), or when a case is malformed.
#   run.sh [CASE-DIR...]    only these cases (the rate is then over them)
set -uo pipefail
command -v jq >/dev/null || { echo "jq not installed"; exit 77; }
here=$(cd "$(dirname "$0")" && pwd)
GPUDOCTOR=${GPUDOCTOR:-$here/../../build/gpudoctor}
[ -x "$GPUDOCTOR" ] || { echo "gpudoctor not found: $GPUDOCTOR (set GPUDOCTOR)"; exit 1; }
export GPUDOCTOR_CONFIG=/dev/null NO_COLOR=1 LC_ALL=C
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

threshold=$(grep -v '^#' "$here/threshold" | tr -d ' \t\n')
case "$threshold" in
'' | *[!0-9.]*) echo "FAIL threshold: expected a percentage, got '$threshold'"; exit 1 ;;
esac

problems=0
problem() {
    echo "FAIL $1: $2"
    problems=$((problems + 1))
}

# known-misses: "NNN-name  reason"; lines starting with # are comments.
declare -A known=()
while read -r name reason; do
    case "$name" in '' | '#'*) continue ;; esac
    [ -d "$here/$name" ] || problem "$name" "listed in known-misses but no such case"
    [ -n "$reason" ] || problem "$name" "known-misses gives no reason"
    known[$name]=$reason
done <"$here/known-misses"

if [ $# -gt 0 ]; then
    dirs=("$@")
else
    dirs=("$here"/[0-9][0-9][0-9]-*/)
fi

# The snapshots must be what their case.json gives (when python3 is there to say).
if command -v python3 >/dev/null; then
    python3 "$here/make-snapshot.py" --check "${dirs[@]}" 2>"$tmp/stale" ||
        problem "snapshots" "$(tr '\n' ' ' <"$tmp/stale")"
fi

# Field $2 of the README's "- $1:" line (the expectation block).
readme_line() {
    sed -n "s/^- $1:[[:space:]]*//p" "$2"
}

incidents=0 hits=0 known_n=0 known_hit=0 healthy=0 healthy_ok=0
printf '%-46s %-9s %-40s %-42s %s\n' CASE KIND EXPECTED "GPUDOCTOR SAID FIRST" RESULT >"$tmp/table"
for dir in "${dirs[@]}"; do
    dir=${dir%/}
    name=$(basename "$dir")
    readme=$dir/README.md
    if [ ! -f "$readme" ] || [ ! -f "$dir/snapshot.json" ] || [ ! -f "$dir/case.json" ]; then
        problem "$name" "needs README.md, case.json and snapshot.json"
        continue
    fi
    grep -q '^- source: https\?://' "$readme" || problem "$name" "README has no '- source: URL' line"
    expect=$(readme_line "top finding" "$readme")
    severity=$(readme_line severity "$readme")
    if [ -z "$expect" ]; then
        problem "$name" "README has no '- top finding:' line"
        continue
    fi

    "$GPUDOCTOR" check --from "$dir/snapshot.json" --json >"$tmp/out.json" 2>"$tmp/err"
    rc=$?
    # (jq -e on an empty file exits 0 in some versions: an unread snapshot must not pass as one)
    if [ ! -s "$tmp/out.json" ] || ! jq -e '.schema == "gpudoctor.check/1"' "$tmp/out.json" >/dev/null 2>&1; then
        problem "$name" "no JSON report (exit $rc): $(head -c 300 "$tmp/err")"
        continue
    fi
    # One line per finding: id, severity, then the subject as key=value words.
    jq -r '.findings[] | [.id, .severity,
        (.subject.gpu_index // empty | "gpu=\(.)"),
        (.subject.pid // empty | "pid=\(.)"),
        (.subject.object // empty | "object=\(.)")] | join(" ")' "$tmp/out.json" >"$tmp/found"
    first=$(head -n 1 "$tmp/found")
    said=${first:-"(nothing)"}

    if [[ "$expect" == none* ]]; then
        kind=healthy
        healthy=$((healthy + 1))
        alarms=$(awk '$2 == "warning" || $2 == "critical"' "$tmp/found")
        if [ -z "$alarms" ]; then
            ok=1
        else
            ok=0 said=$(head -n 1 <<<"$alarms")
        fi
        want="no warning or critical"
    else
        kind=incident
        incidents=$((incidents + 1))
        want_id=$(sed -n 's/^`\([^`]*\)`.*/\1/p' <<<"$expect")
        want_keys=$(sed 's/^`[^`]*`//' <<<"$expect" | grep -o '\(gpu\|pid\|object\)=[^ ]*' | tr '\n' ' ')
        [ -n "$want_id" ] || { problem "$name" "top finding line must start with \`rule.id\`"; continue; }
        case "$severity" in
        critical | warning) ;;
        *) problem "$name" "README severity must be critical or warning, got '$severity'"; continue ;;
        esac
        ok=1
        read -r got_id got_sev got_rest <<<"$first"
        [ "$got_id" = "$want_id" ] || ok=0
        [ "$got_sev" = "$severity" ] || ok=0
        for k in $want_keys; do
            grep -qw -- "$k" <<<" $got_rest " || ok=0
        done
        # "- must not report: `rule.id` [key=value...]" lines
        while read -r line; do
            nid=$(sed -n 's/^`\([^`]*\)`.*/\1/p' <<<"$line")
            [ -n "$nid" ] || continue
            nkeys=$(sed 's/^`[^`]*`//' <<<"$line" | grep -o '\(gpu\|pid\|object\)=[^ ]*' | tr '\n' ' ')
            if awk -v id="$nid" -v want="$nkeys" '
                BEGIN { n = split(want, w, " ") }
                $1 == id { ok = 1
                    for (i = 1; i <= n; i++) { hit = 0
                        for (j = 3; j <= NF; j++) if ($j == w[i]) hit = 1
                        if (!hit) ok = 0 }
                    if (ok) { found = 1; exit } }
                END { exit !found }' "$tmp/found"; then
                ok=0
                said="$said; and $nid"
            fi
        done < <(readme_line "must not report" "$readme")
        want="$want_id $want_keys($severity)"
    fi

    if [ -n "${known[$name]+x}" ]; then
        known_n=$((known_n + 1))
        if [ "$ok" = 1 ]; then
            result="PASSES NOW: remove from known-misses"
            problem "$name" "listed in known-misses but passes now"
            known_hit=$((known_hit + 1))
        else
            result="known miss"
        fi
    elif [ "$ok" = 1 ]; then
        result=hit
    else
        result=MISS
        if [ "$kind" = healthy ]; then
            problem "$name" "healthy machine raised: $said"
        fi
    fi
    if [ "$ok" = 1 ]; then
        [ "$kind" = incident ] && hits=$((hits + 1))
        [ "$kind" = healthy ] && healthy_ok=$((healthy_ok + 1))
    fi
    printf '%-46s %-9s %-40s %-42s %s\n' "$name" "$kind" "${want:0:40}" "${said:0:40}" "$result" \
        >>"$tmp/table"
done
cat "$tmp/table"
echo

# The known misses that are incidents (a healthy one counts against the healthy machines).
known_inc=0
for name in "${!known[@]}"; do
    f=$here/$name/README.md
    [ -f "$f" ] && ! readme_line "top finding" "$f" | grep '^none' >/dev/null && known_inc=$((known_inc + 1))
done
[ $# -gt 0 ] && known_inc=$known_n

pct() { awk -v a="$1" -v b="$2" 'BEGIN { if (b == 0) print "n/a"; else printf "%.1f", 100 * a / b }'; }
rate_all=$(pct "$hits" "$incidents")
counted=$((incidents - known_inc))
hits_counted=$((hits - known_hit))
rate_counted=$(pct "$hits_counted" "$counted")
echo "incidents: $incidents, top-1 hits: $hits, top-1 rate: $rate_all %"
echo "without the $known_inc known misses: $hits_counted of $counted, $rate_counted % (threshold $threshold %)"
echo "healthy machines: $healthy, without a warning or critical: $healthy_ok"

if [ "$counted" -gt 0 ] && awk -v r="$rate_counted" -v t="$threshold" 'BEGIN { exit !(r < t) }'; then
    problem "rate" "top-1 rate $rate_counted % is below the threshold $threshold %"
fi
[ $((incidents + healthy)) -gt 0 ] || problem "corpus" "no case ran"
[ "$problems" -eq 0 ]
