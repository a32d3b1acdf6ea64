#!/usr/bin/env bash
# make deb: gpudoctor's Debian packages (debian/), built from a copy of this tree in OUT (default
# build-deb/), so nothing is written in the source tree; then lintian on them. docs/deploy.md.
#   scripts/build-deb.sh [OUT]
# The packages land in OUT: gpudoctor_VERSION_ARCH.deb, gpudoctor-sim_VERSION_ARCH.deb, and the
# .changes and .buildinfo files. DEB_BUILD_OPTIONS applies (nocheck skips the unit tests).
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
out=$(realpath -m "${1:-$src/build-deb}")
for tool in dpkg-buildpackage dpkg-parsechangelog dh; do
    command -v "$tool" >/dev/null || {
        echo "build-deb: $tool is missing: scripts/deps.sh deb installs what is needed" >&2
        exit 1
    }
done
case "$out/" in
"$src/build-deb/"*) ;;
"$src/"*)
    echo "build-deb: $out is inside the source tree: use build-deb/ or a directory outside it" >&2
    exit 64
    ;;
esac

version=$(dpkg-parsechangelog -l "$src/debian/changelog" -S Version)
tree=$out/gpudoctor-$version
# OUT may be a directory with other things in it (/tmp): only what this script makes there is
# removed, the copy and an earlier build's files of the same version, never OUT itself.
rm -rf "$tree"
rm -f "$out"/gpudoctor{,-sim}{,-dbgsym}_"$version"_*
mkdir -p "$tree"
# The tree as it is now: tracked and new files, not what .gitignore leaves out (build trees).
if git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git -C "$src" ls-files -z --cached --others --exclude-standard |
        (cd "$src" && tar --null --ignore-failed-read -T - -cf - 2>/dev/null) | tar -xf - -C "$tree"
else
    tar -C "$src" --exclude='./build*' --exclude=./.git -cf - . | tar -xf - -C "$tree"
fi

profiles=()
case " ${DEB_BUILD_OPTIONS:-} " in *" nocheck "*) profiles=(-Pnocheck) ;; esac
(cd "$tree" && dpkg-buildpackage -b -us -uc -j"$(nproc)" "${profiles[@]}")

changes=$(ls "$out"/gpudoctor_"$version"_*.changes)
if command -v lintian >/dev/null; then
    echo "build-deb: lintian $changes" >&2
    lintian --fail-on error,warning "$changes"
else
    echo "build-deb: lintian not installed: the packages are not checked" >&2
fi
rm -rf "$tree"
for f in "$out"/gpudoctor{,-sim}{,-dbgsym}_"$version"_*; do
    [ ! -e "$f" ] || echo "$f"
done
