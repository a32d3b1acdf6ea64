#!/usr/bin/env bash
# make fuzz: runs every libFuzzer harness built in BUILD/fuzz for SECONDS each, one after the
# other (the machine may be shared), and prints a Markdown table: executions, coverage (edges,
# libFuzzer's "cov"), corpus size and the result. What a run finds is kept in BUILD/fuzz/work/NAME
# (the corpus grows from run to run) and BUILD/fuzz/crashes/ (inputs that crashed or hung).
#
#   fuzz/run.sh BUILD [SECONDS] [NAME...]      SECONDS defaults to $FUZZ_SECONDS, else 60
#
# Seeds: fuzz/corpus/NAME (committed), plus the scenario corpus's snapshots for the readers.
# JSON harnesses get a dictionary of every key their seeds use: keys are looked up by jansson,
# which is not instrumented, so libFuzzer cannot learn them from comparisons.
# Exit status: 0 when no harness found anything, 1 otherwise (the table says which).
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:?usage: fuzz/run.sh BUILD [SECONDS] [NAME...]}
SECONDS_EACH=${2:-${FUZZ_SECONDS:-60}}
shift $(($# >= 2 ? 2 : 1))
dir=$BUILD/fuzz
work=$dir/work
crashes=$dir/crashes
mkdir -p "$work" "$crashes"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

names=("$@")
if [ ${#names[@]} -eq 0 ]; then
    for f in "$dir"/fuzz-*; do
        [ -x "$f" ] && names+=("${f##*/fuzz-}")
    done
fi
if [ ${#names[@]} -eq 0 ]; then
    echo "fuzz: no harness in $dir (build with: make fuzz, or cmake -DGPUDOCTOR_FUZZ=ON and the target fuzzers)" >&2
    exit 1
fi

json_dict() { # SEED_DIRS...: every "key": and schema string of the seeds, and JSON's tokens
    {
        printf '"{"\n"}"\n"["\n"]"\n":"\n","\n"null"\n"true"\n"false"\n"-1"\n"1e400"\n"0x"\n'
        grep -rhoa '"[A-Za-z_][A-Za-z0-9_]*":' "$@" 2>/dev/null | sort -u |
            sed 's/\\/\\\\/g; s/"/\\"/g; s/^/"/; s/$/"/'
        grep -rhoa '"gpudoctor\.[a-z]*/[0-9]*"' "$@" 2>/dev/null | sort -u |
            sed 's/\\/\\\\/g; s/"/\\"/g; s/^/"/; s/$/"/'
    } | awk 'length($0) < 120' | sort -u
}

status=0
printf '| harness | seconds | executions | exec/s | edges (cov) | corpus | result |\n'
printf '|---|---|---|---|---|---|---|\n'
for name in "${names[@]}"; do
    bin=$dir/fuzz-$name
    seeds=(fuzz/corpus/"$name")
    extra=()
    if [ ! -x "$bin" ]; then
        printf '| %s | | | | | | not built |\n' "$name"
        status=1
        continue
    fi
    mkdir -p "$work/$name"
    case $name in
    snapshot | recording)
        mkdir -p "$tmp/cases-$name"
        for f in tests/scenarios/*/snapshot.json; do
            ln -sf "$PWD/$f" "$tmp/cases-$name/${f//\//_}"
        done
        seeds+=("$tmp/cases-$name")
        ;;
    esac
    case $name in
    snapshot | recording | scenario | nvml-wire)
        json_dict "${seeds[@]}" >"$tmp/$name.dict"
        extra+=(-dict="$tmp/$name.dict")
        ;;
    serve-http)
        [ -f fuzz/http.dict ] && extra+=(-dict=fuzz/http.dict)
        ;;
    esac
    log=$dir/$name.log
    "$bin" -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$crashes/$name-" "${extra[@]}" "$work/$name" "${seeds[@]}" >"$log" 2>&1
    rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    cov=$(grep -oa 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
    corp=$(grep -oa 'corp: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
    if [ "$rc" -eq 0 ]; then
        result=ok
    else
        result="FAILED (exit $rc): $(grep -m1 -aoE 'ERROR: [A-Za-z]+: [^(]*|fuzz: .*|SUMMARY: .*' "$log" | cut -c1-100); see $log"
        status=1
    fi
    printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$name" "$SECONDS_EACH" "${execs:-?}" \
        "${rate:-?}" "${cov:-?}" "${corp:-?}" "$result"
done
exit $status
