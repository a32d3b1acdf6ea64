#!/usr/bin/env bash
# The metric table of docs/prometheus.md is generated from metric_families[]; it must be what the
# code says now.
set -euo pipefail
: "${GPUDOCTOR:?}" "${SRC:?}"
if ! diff -u <(sed -n '/^<!-- metrics:begin -->$/,/^<!-- metrics:end -->$/p' "$SRC/docs/prometheus.md" | sed '1d;$d') \
    <("$GPUDOCTOR" serve --describe-metrics); then
    echo "docs/prometheus.md is out of date: replace the table between the metrics:begin and" >&2
    echo "metrics:end markers with the output of 'gpudoctor serve --describe-metrics'" >&2
    exit 1
fi
echo "docs/prometheus.md matches the code"
