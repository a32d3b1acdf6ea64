#!/usr/bin/env bash
# Data flows one way (collectors -> snapshot -> facts -> rules -> findings -> renderers): each
# layer includes only what lies below it. Rows: the files, then the include directories they must
# not reach. A process's verdict lives in src/facts, so `procs` and `reap` never need src/rules.
set -euo pipefail
cd "$SRC"

layers=(
    "src/facts/*.c src/facts/*.h|rules render cmd collect serve watch reap"
    "src/reap/*.c src/reap/*.h src/render/procs.c src/render/procs.h|rules"
)

fail=0
for row in "${layers[@]}"; do
    files=${row%%|*}
    for dir in ${row#*|}; do
        # shellcheck disable=SC2086 # the globs are meant to expand
        if hits=$(grep -Hn "^#include \"$dir/" $files); then
            echo "includes $dir/, which lies above it:"
            echo "$hits"
            fail=1
        fi
    done
done
# Each glob must name files, or the row checks nothing.
for row in "${layers[@]}"; do
    for g in ${row%%|*}; do
        # shellcheck disable=SC2086
        compgen -G "$g" >/dev/null || { echo "no file matches $g"; fail=1; }
    done
done
exit $fail
