#!/usr/bin/env bash
# make install's payload: binary, simulator, deployment files pointing at the installed binary,
# example config, scenarios and docs, all under DESTDIR and the prefix asked for.
set -euo pipefail
dest=$(mktemp -d)
trap 'rm -rf "$dest"' EXIT
DESTDIR=$dest cmake --install "$BUILD" --prefix /opt/gd >/dev/null
fail=0
want() {
    [ -e "$dest/opt/gd/$1" ] || { echo "FAIL: $1 not installed" >&2; fail=1; }
}
want bin/gpudoctor
want lib/gpudoctor/sim/libnvidia-ml.so.1
want lib/systemd/system/gpudoctor-serve.service
want sbin/gpudoctor-slurm-check
want sbin/gpudoctor-slurm-prolog
want sbin/gpudoctor-slurm-epilog
want share/doc/gpudoctor/examples/gpudoctor.conf
want share/man/man1/gpudoctor.1
want share/man/man8/gpudoctor-slurm-check.8
want share/man/man8/gpudoctor-slurm-prolog.8
want share/man/man8/gpudoctor-slurm-epilog.8
want share/doc/gpudoctor/README.md
want share/doc/gpudoctor/snapshot.md
want share/gpudoctor/scenarios/troubled-8xh100.json
want share/gpudoctor/prometheus/gpudoctor-rules.yml
want share/locale/zh_CN/LC_MESSAGES/gpudoctor.mo
grep -q '^ExecStart=/opt/gd/bin/gpudoctor serve' "$dest/opt/gd/lib/systemd/system/gpudoctor-serve.service" ||
    { echo "FAIL: the unit does not run the installed binary" >&2; fail=1; }
grep -q '^exec /opt/gd/bin/gpudoctor slurm-check' "$dest/opt/gd/sbin/gpudoctor-slurm-check" ||
    { echo "FAIL: the Slurm wrapper does not run the installed binary" >&2; fail=1; }
[ -x "$dest/opt/gd/sbin/gpudoctor-slurm-check" ] || { echo "FAIL: wrapper not executable" >&2; fail=1; }
"$dest/opt/gd/bin/gpudoctor" --version | grep '^gpudoctor ' >/dev/null || { echo "FAIL: binary" >&2; fail=1; }
exit $fail
