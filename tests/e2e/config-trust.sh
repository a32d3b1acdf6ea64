#!/usr/bin/env bash
# As root, a configuration file that another user owns or can write is refused (docs/config.md,
# "Where it is read"): status 64 and the file named with why, by --config, $GPUDOCTOR_CONFIG and
# fleet --profile alike; before, its `disable` silenced two criticals (status 1, not 2). The
# same file, root's and 0644, is used.
set -u
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root"; exit 77; }
id nobody >/dev/null 2>&1 || { echo "SKIP: no user nobody"; exit 77; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export GPUDOCTOR_NVML_LIB=$SIM_LIB NVML_SIM_QUIET=1 NO_COLOR=1
export NVML_SIM_SCENARIO=$SRC/scenarios/troubled-8xh100.json
fail=0
expect() { [ "$2" = "$3" ] || { echo "FAIL: $1: got '$2', want '$3'" >&2; fail=1; }; }
printf 'disable = health.ecc-uncorrectable, clock.thermal-slowdown\n' >"$T/c.conf"
run() { "$@" >/dev/null 2>"$T/err"; echo "$? $(cat "$T/err")"; }
check() { run "$GPUDOCTOR" check --window 0 --no-state "$@"; }

chmod 644 "$T/c.conf"
expect "root's file, 0644" "$(check --config "$T/c.conf")" "1 "
chmod 666 "$T/c.conf"
expect "--config, 0666" "$(check --config "$T/c.conf")" \
    "64 gpudoctor check: $T/c.conf: writable by its group or by every user (mode 0666): not used, since gpudoctor runs as root (chmod go-w it)"
expect "GPUDOCTOR_CONFIG, 0666" "$(GPUDOCTOR_CONFIG=$T/c.conf check)" \
    "64 gpudoctor check: $T/c.conf: writable by its group or by every user (mode 0666): not used, since gpudoctor runs as root (chmod go-w it)"
chmod 664 "$T/c.conf"
expect "--config, 0664" "$(check --config "$T/c.conf" | cut -d' ' -f1)" 64
chmod 644 "$T/c.conf"
chown nobody "$T/c.conf"
expect "--config, nobody's" "$(check --config "$T/c.conf")" \
    "64 gpudoctor check: $T/c.conf: owned by uid 65534, not by root: not used, since gpudoctor runs as root (chown root it)"
printf '[profile]\ngpu_count = 8\n' >"$T/p.conf"
chmod 666 "$T/p.conf"
"$GPUDOCTOR" snapshot -o "$T/s.json" 2>/dev/null
got=$(run "$GPUDOCTOR" fleet --profile "$T/p.conf" "$T/s.json")
expect "fleet --profile, 0666" "${got%%(mode*}" \
    "64 gpudoctor fleet: --profile $T/p.conf: writable by its group or by every user "
# /dev/null is 0666 and root's device: still a configuration (the tests' own).
expect "/dev/null" "$(GPUDOCTOR_CONFIG=/dev/null check | cut -d' ' -f1)" 2
exit $fail
