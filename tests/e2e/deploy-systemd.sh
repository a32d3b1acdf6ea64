#!/usr/bin/env bash
# deploy/systemd/gpudoctor-serve.service: `systemd-analyze verify` accepts it, its sandbox keeps
# the exposure score at "OK" or better, it keeps the settings docs/deploy.md promises, and
# gpudoctor accepts its ExecStart arguments. deploy/slurm's wrapper runs slurm-check.
set -euo pipefail
: "${GPUDOCTOR:?}" "${SRC:?}"
command -v systemd-analyze >/dev/null || { echo "SKIP: systemd-analyze is not installed"; exit 77; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

UNIT=$SRC/deploy/systemd/gpudoctor-serve.service
# verify needs the program to exist: point ExecStart at the one just built
sed "s|/usr/local/bin/gpudoctor|$GPUDOCTOR|" "$UNIT" >"$TMP/gpudoctor-serve.service"
if ! systemd-analyze verify "$TMP/gpudoctor-serve.service" >"$TMP/verify.out" 2>&1; then
    fail "systemd-analyze verify"
fi
if grep -q "gpudoctor-serve" "$TMP/verify.out"; then
    fail "systemd-analyze verify complains:"
    cat "$TMP/verify.out"
fi
# exposure 0 (best) .. 10, shown with one decimal and compared in tenths: 5.0 and below is
# what systemd calls OK
if ! systemd-analyze security --offline=true --threshold=50 "$TMP/gpudoctor-serve.service" >"$TMP/security.out" 2>&1; then
    fail "exposure above 5: $(tail -n 1 "$TMP/security.out")"
fi
for line in "ProtectSystem=strict" "NoNewPrivileges=yes" "DynamicUser=yes" "PrivateTmp=yes" \
    "ProtectHome=read-only" "DevicePolicy=closed" "DeviceAllow=/dev/nvidiactl rw" \
    "DeviceAllow=char-nvidia-frontend rw" "DeviceAllow=/dev/nvidia-uvm r" \
    "CapabilityBoundingSet=CAP_SYS_PTRACE CAP_DAC_READ_SEARCH CAP_SYSLOG" \
    "AmbientCapabilities=CAP_SYS_PTRACE CAP_DAC_READ_SEARCH CAP_SYSLOG"; do
    grep -qxF "$line" "$UNIT" || fail "the unit lacks: $line"
done
grep -q '^ExecStart=.* --listen 127\.0\.0\.1:' "$UNIT" || fail "the unit does not listen on loopback"

# gpudoctor takes the unit's arguments (one collection on the simulator instead of serving)
read -r -a argv <<<"$(sed -n 's/^ExecStart=[^ ]* //p' "$UNIT")"
if [ -e "${SIM_LIB:-}" ]; then
    GPUDOCTOR_NVML_LIB=$SIM_LIB NVML_SIM_SCENARIO=$SRC/scenarios/healthy-8xh100.json NVML_SIM_QUIET=1 \
        GPUDOCTOR_CONFIG=/dev/null "$GPUDOCTOR" "${argv[@]}" --once --only nvml >"$TMP/once.prom" ||
        fail "gpudoctor ${argv[*]} --once"
    grep -q '^gpudoctor_nvml_devices 8$' "$TMP/once.prom" || fail "no metrics from the unit's arguments"
fi

# The Slurm wrapper is valid sh and runs slurm-check
WRAP=$SRC/deploy/slurm/gpudoctor-slurm-check
[ -x "$WRAP" ] || fail "$WRAP is not executable"
sh -n "$WRAP" || fail "$WRAP: syntax"
sed "s|/usr/local/bin/gpudoctor|$GPUDOCTOR|" "$WRAP" >"$TMP/wrap"
sh "$TMP/wrap" --help | sed -n 1p | grep '^Usage: gpudoctor slurm-check' >/dev/null || fail "the wrapper does not run slurm-check"
grep -q "^HealthCheckProgram=/usr/local/sbin/gpudoctor-slurm-check$" "$SRC/deploy/slurm/slurm.conf.example" ||
    fail "slurm.conf.example does not name the wrapper"

[ "$failures" = 0 ] || { echo "$failures check(s) failed"; exit 1; }
echo "all checks passed"
