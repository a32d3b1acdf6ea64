#!/usr/bin/env bash
# deploy/prometheus: the alerting rules are valid (promtool check rules) and do what their unit
# tests say (promtool test rules: firing and silent cases for each alert).
set -euo pipefail
: "${SRC:?}"
command -v promtool >/dev/null || { echo "SKIP: promtool is not installed (Debian: prometheus)"; exit 77; }
cd "$SRC/deploy/prometheus"
promtool check rules gpudoctor-rules.yml
promtool test rules gpudoctor-rules.test.yml
