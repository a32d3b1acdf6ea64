# The common start and end of the end-to-end scripts. Sourced after `set` and after GPUDOCTOR
# and SRC are checked:
#     . "$SRC/tests/e2e/lib.bash"
# It gives:
#   $tmp                 a fresh directory, removed when the script exits (a script that sets its
#                        own EXIT trap removes it there)
#   fail MESSAGE...      says "FAIL: MESSAGE" and counts a failure
#   check NAME GOT WANT  a failure unless GOT is WANT
#   need COMMAND...      skips the script (status 77, as ctest's SKIP_RETURN_CODE) unless every
#                        COMMAND is installed
#   e2e_done [MESSAGE]   ends the script: status 0 (and MESSAGE) without failures, else 1 and
#                        their number
# shellcheck shell=bash

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0

fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}

check() {
    [ "$2" = "$3" ] || fail "$1: '$2', expected '$3'"
}

need() {
    local c
    for c in "$@"; do
        command -v "$c" >/dev/null || {
            echo "SKIP: $c not installed"
            exit 77
        }
    done
}

e2e_done() {
    if [ "$failures" = 0 ]; then
        [ $# = 0 ] || echo "$*"
        exit 0
    fi
    echo "$failures failure(s)"
    exit 1
}
