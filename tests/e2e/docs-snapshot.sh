#!/usr/bin/env bash
# docs/snapshot.md is generated from the field tables; it must match what the code says now.
set -euo pipefail
if ! diff -u "$SRC/docs/snapshot.md" <("$GPUDOCTOR" snapshot --describe); then
    echo "docs/snapshot.md is out of date: run 'build/gpudoctor snapshot --describe > docs/snapshot.md'" >&2
    exit 1
fi
