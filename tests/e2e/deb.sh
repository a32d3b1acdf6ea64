#!/usr/bin/env bash
# The Debian packages (debian/, make deb): they build from a copy of the tree, lintian finds no
# error or warning, they install into a clean root where gpudoctor --version and the demo run
# from the installed files alone, the systemd unit is installed but not enabled, and removing then
# purging them leaves nothing behind: no file, no directory, no unit enabled, no user or group.
#
# The clean root: a directory with an empty dpkg database, used with dpkg --root. dpkg runs the
# maintainer scripts without chroot (--force-script-chrootless) and tells them where the root is
# in DPKG_ROOT, which deb-systemd-helper honours; a chroot would need a Debian system inside it
# (debootstrap, from the network). The database knows the packages gpudoctor depends on as the
# host has them (their status entries, without files), so dpkg checks the dependencies for real;
# the installed binaries run with the host's libraries. Scripts that ignored DPKG_ROOT would act
# on the host: its users, groups and systemd directories are compared before and after. (One
# debhelper snippet does: postrm's daemon-reload on remove, only where systemd runs, harmless.)
# Needs root (dpkg unpacks as root), dpkg-buildpackage, debhelper and lintian (scripts/deps.sh
# test installs them); skips with 77 otherwise, and under a sanitizer build (the package is
# built with Debian's flags, not the suite's: the plain run of the suite tests it).
set -euo pipefail
: "${GPUDOCTOR:?}" "${SRC:?}" "${BUILD:?}"
for tool in dpkg-buildpackage dh lintian; do
    command -v "$tool" >/dev/null || { echo "SKIP: $tool is not installed (scripts/deps.sh deb)"; exit 77; }
done
[ "$(id -u)" = 0 ] || { echo "SKIP: dpkg --root unpacks as root"; exit 77; }
if grep -q '^GPUDOCTOR_SANITIZE:BOOL=ON' "$BUILD/CMakeCache.txt" 2>/dev/null; then
    echo "SKIP: a sanitizer build; the packages are tested with the plain one"
    exit 77
fi
[ -e "${SIM_LIB:-}" ] || { echo "SKIP: the NVML simulator is not built"; exit 77; }

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
failures=0
fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}
check() {
    [ "$2" = "$3" ] || fail "$1: got '$2', want '$3'"
}

# debian/control builds with what scripts/deps.sh installs for a build (gcc and make come with
# build-essential, which Build-Depends never names)
control_bd=$(sed -n '/^Build-Depends:/,/^[A-Z]/p' "$SRC/debian/control" | sed '$d' |
    sed 's/^Build-Depends://' | tr ',' '\n' | sed -E 's/[(<].*//; s/[[:space:]]//g' |
    grep -v '^debhelper-compat$' | grep . | sort | xargs)
deps_build=$(sed -n 's/^build_pkgs=(\(.*\))$/\1/p' "$SRC/scripts/deps.sh" | tr ' ' '\n' |
    grep -Evx 'gcc|make' | grep . | sort | xargs)
check "debian/control Build-Depends = scripts/deps.sh build list" "$control_bd" "$deps_build"

# ---- build, lint ----
OUT=$TMP/out
tree_state() { git -C "$SRC" status --porcelain --ignored 2>/dev/null || true; }
tree_state >"$TMP/tree.before"
# The unit tests ran in this suite already: not again inside the package build.
if ! DEB_BUILD_OPTIONS="nocheck ${DEB_BUILD_OPTIONS:-}" "$SRC/scripts/build-deb.sh" "$OUT" \
    >"$TMP/build.log" 2>&1; then
    echo "FAIL: make deb (scripts/build-deb.sh) failed:"
    tail -n 40 "$TMP/build.log"
    exit 1
fi
version=$(dpkg-parsechangelog -l "$SRC/debian/changelog" -S Version)
check "debian/changelog's version is the program's" "$version" "$("$GPUDOCTOR" --version | awk '{print $2}')"
arch=$(dpkg --print-architecture)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
main=$OUT/gpudoctor_${version}_$arch.deb
sim=$OUT/gpudoctor-sim_${version}_$arch.deb
for deb in "$main" "$sim"; do
    [ -f "$deb" ] || { echo "FAIL: ${deb##*/} was not built; $OUT has: $(ls "$OUT")"; exit 1; }
done
grep -q '^build-deb: lintian ' "$TMP/build.log" || fail "lintian did not run"
# build-deb.sh fails on a lintian error or warning; an override must say why (lintian shows it)
if grep -E '^[EW]: ' "$TMP/build.log"; then fail "lintian complains"; fi
# the source tree is left as it was: nothing new, nothing changed by the build
tree_state | diff "$TMP/tree.before" - || fail "the build changed the source tree"

# What goes where: the program and its deployment files in gpudoctor, the simulator in -sim.
dpkg-deb -c "$main" | awk '{print $6}' | sed 's|^\./|/|' >"$TMP/main.files"
dpkg-deb -c "$sim" | awk '{print $6}' | sed 's|^\./|/|' >"$TMP/sim.files"
for f in /usr/bin/gpudoctor /usr/sbin/gpudoctor-slurm-check /lib/systemd/system/gpudoctor-serve.service \
    /usr/sbin/gpudoctor-slurm-prolog /usr/sbin/gpudoctor-slurm-epilog \
    /usr/share/man/man1/gpudoctor.1.gz /usr/share/man/man8/gpudoctor-slurm-check.8.gz \
    /usr/share/man/man8/gpudoctor-slurm-prolog.8.gz /usr/share/man/man8/gpudoctor-slurm-epilog.8.gz \
    /usr/share/man/zh_CN/man1/gpudoctor.1.gz /usr/share/locale/zh_CN/LC_MESSAGES/gpudoctor.mo \
    /usr/share/doc/gpudoctor/examples/gpudoctor.conf /usr/share/doc/gpudoctor/copyright \
    /usr/share/gpudoctor/prometheus/gpudoctor-rules.yml; do
    grep -qx "$f" "$TMP/main.files" || fail "gpudoctor lacks $f"
done
for f in "/usr/lib/$multiarch/gpudoctor/sim/libnvidia-ml.so.1" "/usr/lib/$multiarch/gpudoctor/sim/libcuda.so.1" \
    "/usr/lib/$multiarch/gpudoctor/sim/libcublasLt.so.13" \
    /usr/share/gpudoctor/scenarios/troubled-8xh100.json /usr/share/doc/gpudoctor-sim/copyright; do
    grep -qx "$f" "$TMP/sim.files" || fail "gpudoctor-sim lacks $f"
done
grep -q 'libnvidia-ml' "$TMP/main.files" && fail "gpudoctor ships the simulator"
# never where the driver's NVML is looked for
grep -E "^/usr/lib/($multiarch/)?libnvidia-ml" "$TMP/sim.files" && fail "the simulator is in the linker's path"
# /etc/gpudoctor.conf stays the administrator's: no conffile
dpkg-deb -f "$main" Conffiles | grep . && fail "gpudoctor has conffiles"
dpkg-deb --ctrl-tarfile "$main" | tar -t | grep -x './conffiles' >/dev/null && fail "gpudoctor has conffiles"

# ---- the clean root ----
R=$TMP/root
ADMIN=$R/var/lib/dpkg
mkdir -p "$ADMIN/info" "$ADMIN/updates" "$ADMIN/triggers"
# The directories a systemd machine has, which an administrator's systemctl enable and
# deb-systemd-helper write into: the packages must leave them as they found them.
mkdir -p "$R/etc/systemd/system/multi-user.target.wants" "$R/var/lib/systemd"
: >"$ADMIN/available"
# The dependencies, as installed on the host (dpkg only reads their status here)
deps=$( (dpkg-deb -f "$main" Depends; dpkg-deb -f "$sim" Depends) | tr ',|' '\n' |
    sed -E 's/\(.*\)//; s/:any//; s/[[:space:]]//g' | grep . | sort -u)
for d in $deps; do
    if ! dpkg-query -s "$d:$arch" >>"$ADMIN/status" 2>/dev/null && ! dpkg-query -s "$d" >>"$ADMIN/status" 2>/dev/null; then
        fail "dependency $d is not installed on this machine"
        continue
    fi
    echo >>"$ADMIN/status"
    if dpkg-query -W -f '${Multi-Arch}' "$d" 2>/dev/null | grep -x same >/dev/null; then
        : >"$ADMIN/info/$d:$arch.list"
    else
        : >"$ADMIN/info/$d.list"
    fi
done
# Our additions are to be compared against this: the root as the packages find it.
(cd "$R" && find . -mindepth 1 | sort) >"$TMP/root.before"

host_state() { # what maintainer scripts acting on the host instead of the root would change
    cat /etc/passwd /etc/group
    ls -la /etc/systemd/system 2>/dev/null || true
    find /etc/systemd/system /var/lib/systemd/deb-systemd-helper-enabled -name 'gpudoctor*' 2>/dev/null || true
    ls -la /usr/bin/gpudoctor /lib/systemd/system/gpudoctor-serve.service 2>&1 || true
}
host_state >"$TMP/host.before"

DPKG=(dpkg "--root=$R" "--log=$TMP/dpkg.log" --force-script-chrootless)
if ! "${DPKG[@]}" -i "$main" "$sim" >"$TMP/install.log" 2>&1; then
    echo "FAIL: dpkg -i in the clean root:"
    cat "$TMP/install.log"
    exit 1
fi
grep -i 'warning' "$TMP/install.log" && fail "dpkg warns on install"
status() { dpkg-query "--admindir=$ADMIN" -W -f '${db:Status-Abbrev}' "$1" 2>/dev/null | tr -d ' ' || true; }
check "gpudoctor installed" "$(status gpudoctor)" ii
check "gpudoctor-sim installed" "$(status gpudoctor-sim)" ii

# ---- from the installed files ----
BIN=$R/usr/bin/gpudoctor
SIMLIB=$R/usr/lib/$multiarch/gpudoctor/sim/libnvidia-ml.so.1
check "installed gpudoctor --version" "$("$BIN" --version)" "gpudoctor $version"
export GPUDOCTOR_CONFIG=/dev/null NVML_SIM_QUIET=1 LC_ALL=C.UTF-8 NO_COLOR=1
unset COLUMNS NVML_SIM_EPOCH
# The demo's GPUs: the installed simulator playing the installed troubled scenario, NVML only.
rc=0
GPUDOCTOR_NVML_LIB=$SIMLIB NVML_SIM_SCENARIO=$R/usr/share/gpudoctor/scenarios/troubled-8xh100.json \
    "$BIN" check --window 0 --only nvml --json >"$TMP/installed.json" 2>"$TMP/installed.err" || rc=$?
check "installed demo (NVML): exit status" "$rc" 2
rc=0
GPUDOCTOR_NVML_LIB=$SIM_LIB NVML_SIM_SCENARIO=$SRC/scenarios/troubled-8xh100.json \
    "$GPUDOCTOR" check --window 0 --only nvml --json >"$TMP/built.json" 2>/dev/null || rc=$?
check "installed demo (NVML): the built program's findings" \
    "$(jq -c '[.findings[] | [.severity, .id]]' "$TMP/installed.json")" \
    "$(jq -c '[.findings[] | [.severity, .id]]' "$TMP/built.json")"
check "installed demo (NVML): GPUs seen" "$(jq '.snapshot.gpus | length' "$TMP/installed.json")" 8
# make demo itself (its host is a fixture tree of the source, not packaged), with the installed
# program, simulator and scenario: the same report as scripts/demo.sh with the build tree's
rc=0
GPUDOCTOR_NVML_LIB=$SIMLIB NVML_SIM_SCENARIO=$R/usr/share/gpudoctor/scenarios/troubled-8xh100.json \
    NVML_SIM_PROC=$SRC/tests/scenarios/troubled-8xh100/root/proc \
    "$BIN" check --root "$SRC/tests/scenarios/troubled-8xh100/root" --window 0 >"$TMP/demo.installed" 2>&1 || rc=$?
check "installed make demo: exit status" "$rc" 2
"$SRC/scripts/demo.sh" "$BUILD" >"$TMP/demo.built" 2>&1 || true
cmp -s "$TMP/demo.installed" "$TMP/demo.built" || {
    fail "installed make demo differs from the build tree's:"
    diff "$TMP/demo.built" "$TMP/demo.installed" | head -20
}
grep -q 'held by stopped process 39104' "$TMP/demo.installed" || fail "installed make demo: no stopped holder"

# deployment files point at the installed program
grep -q '^ExecStart=/usr/bin/gpudoctor serve ' "$R/lib/systemd/system/gpudoctor-serve.service" ||
    fail "the unit does not run /usr/bin/gpudoctor"
grep -q '^exec /usr/bin/gpudoctor slurm-check' "$R/usr/sbin/gpudoctor-slurm-check" ||
    fail "the Slurm wrapper does not run /usr/bin/gpudoctor"
[ -x "$R/usr/sbin/gpudoctor-slurm-check" ] || fail "the Slurm wrapper is not executable"
# installed, not enabled (the link points into the root's /lib: -L, not -e)
WANTS=$R/etc/systemd/system/multi-user.target.wants/gpudoctor-serve.service
[ -L "$WANTS" ] && fail "the unit is enabled"
# the helper the maintainer scripts use, asked as they ask it (it answers only "from dpkg")
DPKG_MAINTSCRIPT_PACKAGE=gpudoctor DPKG_ROOT=$R deb-systemd-helper debian-installed \
    gpudoctor-serve.service || fail "deb-systemd-helper does not know the unit"
DPKG_MAINTSCRIPT_PACKAGE=gpudoctor DPKG_ROOT=$R deb-systemd-helper --quiet was-enabled \
    gpudoctor-serve.service && fail "deb-systemd-helper says the unit is enabled"

# An administrator enables it (what systemctl enable does): purge must take that away too.
ln -sfn /lib/systemd/system/gpudoctor-serve.service "$WANTS"
DPKG_MAINTSCRIPT_PACKAGE=gpudoctor DPKG_ROOT=$R deb-systemd-helper --quiet was-enabled \
    gpudoctor-serve.service || fail "deb-systemd-helper does not see the unit enabled by hand"

# ---- remove, then purge ----
"${DPKG[@]}" --remove gpudoctor gpudoctor-sim >"$TMP/remove.log" 2>&1 || {
    fail "dpkg --remove"
    cat "$TMP/remove.log"
}
check "gpudoctor removed" "$(status gpudoctor)" rc
for f in /usr/bin/gpudoctor "/usr/lib/$multiarch/gpudoctor" /usr/share/gpudoctor /lib/systemd/system/gpudoctor-serve.service; do
    [ -e "$R$f" ] && fail "after remove: $f is still there"
done
"${DPKG[@]}" --purge gpudoctor >"$TMP/purge.log" 2>&1 || {
    fail "dpkg --purge"
    cat "$TMP/purge.log"
}
for p in gpudoctor gpudoctor-sim; do
    case "$(status "$p")" in
    "" | un | pn) ;;
    *) fail "after purge, $p is $(status "$p")" ;;
    esac
done
# Nothing left but what the root had, and dpkg's own database files.
(cd "$R" && find . -mindepth 1 | sort) >"$TMP/root.after"
comm -13 "$TMP/root.before" "$TMP/root.after" | grep -Ev '^\./var/lib/dpkg/' >"$TMP/left" || true
if [ -s "$TMP/left" ]; then
    fail "left behind after purge:"
    sed 's/^/   /' "$TMP/left"
fi
[ -L "$WANTS" ] && fail "the unit is still enabled after purge"
compgen -G "$ADMIN/info/gpudoctor*" && fail "dpkg still has scripts or lists of gpudoctor"

host_state >"$TMP/host.after"
if ! cmp -s "$TMP/host.before" "$TMP/host.after"; then
    fail "the host changed (users, groups, systemd):"
    diff "$TMP/host.before" "$TMP/host.after"
fi

if [ "$failures" != 0 ]; then
    echo "$failures check(s) failed"
    exit 1
fi
echo "all checks passed"
