#!/usr/bin/env bash
# The code follows the committed .clang-format.
set -euo pipefail
command -v clang-format >/dev/null || { echo "clang-format not installed"; exit 77; }
cd "$SRC"
files=$(git ls-files '*.c' '*.h' ':!tests/fixtures/**' ':!fuzz/corpus/**' 2>/dev/null || find src sim tests -name '*.[ch]' -not -path 'tests/fixtures/*')
clang-format --dry-run --Werror $files
