#!/usr/bin/env bash
# Installs the Debian packages gpudoctor needs, or says exactly how to.
#   scripts/deps.sh build   compiler, CMake, libraries
#   scripts/deps.sh test    build + what the test suite drives (jq, tmux, lsof, clang-format, ...)
#   scripts/deps.sh fuzz    build + clang and libFuzzer, for make fuzz
#   scripts/deps.sh deb     build + the Debian packaging tools, for make deb
# As root, missing packages are installed with apt-get; otherwise the command to run is printed and the
# script fails, so `make` stops before a confusing compiler error.
set -euo pipefail

# build_pkgs stays on one line: e2e/deb compares it with debian/control's Build-Depends.
build_pkgs=(gcc make cmake pkg-config gettext libjansson-dev libmicrohttpd-dev libncurses-dev libcmocka-dev libxml2-dev zlib1g-dev libcurl4-openssl-dev)
test_pkgs=(jq tmux lsof procps psmisc util-linux passwd findutils clang-format valgrind locales
    curl prometheus prometheus-node-exporter wrk slurmd slurmctld slurm-client munge systemd python3-yaml chromium)
fuzz_pkgs=(clang libclang-rt-dev)
deb_pkgs=(build-essential debhelper dpkg-dev lintian) # dpkg-buildpackage checks build-essential

case "${1:-build}" in
build) want=("${build_pkgs[@]}") ;;
test | ci) want=("${build_pkgs[@]}" "${test_pkgs[@]}" "${deb_pkgs[@]}") ;; # e2e/deb builds them
fuzz) want=("${build_pkgs[@]}" "${fuzz_pkgs[@]}") ;;
deb) want=("${build_pkgs[@]}" "${deb_pkgs[@]}") ;;
*)
    echo "usage: $0 build|test|fuzz|deb" >&2
    exit 64
    ;;
esac

if ! command -v dpkg-query >/dev/null 2>&1; then
    echo "deps: not a Debian system; install the equivalents of: ${want[*]}" >&2
    exit 0
fi

missing=()
for p in "${want[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep 'install ok installed' >/dev/null; then
        missing+=("$p")
    fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
    echo "deps: missing Debian packages: ${missing[*]}" >&2
    echo "deps: install them with:" >&2
    echo "    sudo apt-get update && sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
    exit 1
fi
echo "deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
