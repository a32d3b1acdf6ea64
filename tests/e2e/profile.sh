#!/usr/bin/env bash
# gpudoctor profile save / show, and check against the saved profile (docs/config.md, "The profile
# section"). From the profile-match scenario's snapshot (an 8 x H100 server): `profile save
# --from` writes exactly the node's values (GPU count and model, memory, PCIe generation and
# width, driver, CUDA, VBIOS; keys whose section the snapshot lacks as comments) to a file of mode
# 0600 written atomically, following only the user's own symbolic link (another user's is refused,
# 3, its target untouched); `profile show` prints the same values with the file and line of each;
# `check` with the profile finds no profile.* finding, with one key changed the deviation (a
# narrower link a warning, 1; a GPU missing critical, 2); GPUs that disagree are saved by majority,
# said on stderr; NVLink links and InfiniBand ports and rate are saved from snapshots that have
# them and judged (profile.fabric); malformed profiles are usage errors naming file:line (64).
set -uo pipefail
command -v jq >/dev/null || { echo "SKIP: jq not installed"; exit 77; }
: "${GPUDOCTOR:?}" "${SRC:?}"
export GPUDOCTOR_CONFIG=/dev/null NO_COLOR=1
. "$SRC/tests/e2e/lib.bash"
chmod 755 "$tmp"
SNAP=$SRC/tests/scenarios/profile-match/snapshot.json
cd "$tmp" || exit 1

# ---- save: the node's values, exactly ----
umask 022
rc=0
"$GPUDOCTOR" profile save --from "$SNAP" -o p.conf 2>err || rc=$?
[ "$rc" = 0 ] || fail "save: exit status $rc: $(cat err)"
[ -s err ] && fail "save: stderr for GPUs that agree: $(cat err)"
[ "$(stat -c %a p.conf)" = 600 ] || fail "save: mode $(stat -c %a p.conf), not 600 (umask 022)"
expected='gpu_count = 8
gpu_model = "NVIDIA H100 80GB HBM3"
gpu_memory_mib = 81559
pcie_gen = 5
pcie_width = 16
driver_version = "550.54.15"
cuda_version = "12.4"
vbios_version = "96.00.89.00.01"'
[ "$(grep -v '^#' p.conf | grep -v '^\[profile\]$')" = "$expected" ] ||
    fail "save: the keys differ from the node's:
$(diff <(echo "$expected") <(grep -v '^#' p.conf | grep -v '^\[profile\]$'))"
[ "$(grep -c '^\[profile\]$' p.conf)" = 1 ] || fail "save: not one [profile] line"
head -1 p.conf | grep '^# The expected hardware of gpu-node-17, saved by gpudoctor' >/dev/null ||
    fail "save: the header does not name the node: $(head -1 p.conf)"
# the snapshot itself says so: the same values read with jq
[ "$(jq '.gpus | length' "$SNAP")" = 8 ] || fail "the scenario's snapshot no longer has 8 GPUs"
[ "$(jq -r '[.gpus[].vbios_version] | unique | join(",")' "$SNAP")" = 96.00.89.00.01 ] ||
    fail "the scenario's snapshot has other VBIOS versions"
[ "$(jq -r '.driver.version // .nvml.driver_version' "$SNAP")" = 550.54.15 ] ||
    fail "the scenario's snapshot has another driver"
# keys whose section this snapshot does not have (it predates NVLink and InfiniBand): comments
for k in nvlink_count ib_ports ib_rate_gbps fabricmanager_version; do
    grep -q "^# $k = ?   (not in the evidence: this snapshot has no [a-z_]* section)$" p.conf ||
        fail "save: $k is not written as a comment: $(grep "$k" p.conf)"
done
# to standard output, the same profile
"$GPUDOCTOR" profile save --from "$SNAP" >stdout.conf 2>/dev/null
cmp -s stdout.conf p.conf || fail "save: standard output differs from -o FILE"

# ---- symbolic links: the user's own is followed, another user's refused ----
echo precious >target
chmod 644 target
ln -s target own.conf
rc=0
"$GPUDOCTOR" profile save --from "$SNAP" -o own.conf 2>err || rc=$?
[ "$rc" = 0 ] || fail "own link: exit status $rc: $(cat err)"
[ -L own.conf ] || fail "own link: the link was replaced, not followed"
cmp -s target p.conf || fail "own link: the file it names does not hold the profile"
[ "$(stat -c %a target)" = 600 ] || fail "own link: the file it names has mode $(stat -c %a target), not 600"
if [ "$(id -u)" = 0 ]; then
    echo precious >target2
    chmod 644 target2
    ln -s target2 other.conf
    chown -h nobody other.conf
    rc=0
    "$GPUDOCTOR" profile save --from "$SNAP" -o other.conf 2>err || rc=$?
    [ "$rc" = 3 ] || fail "another user's link: exit status $rc, not 3"
    grep -q 'other.conf is a symbolic link of uid [0-9]*, not of uid 0 who runs this: not followed' err ||
        fail "another user's link: not said: $(cat err)"
    [ "$(cat target2)" = precious ] || fail "another user's link: the file it names was changed"
    [ -L other.conf ] || fail "another user's link: the link was replaced"
else
    echo "note: not root: another user's symbolic link is not tried"
fi
rc=0
"$GPUDOCTOR" profile save --from "$SNAP" -o "$tmp/none/p.conf" 2>err || rc=$?
[ "$rc" = 3 ] || fail "a directory that does not exist: exit status $rc, not 3"
grep -q "$tmp/none/p.conf" err || fail "a directory that does not exist: not named: $(cat err)"

# ---- show: the same values, with where each was set ----
rc=0
"$GPUDOCTOR" profile show --config p.conf >show.txt 2>err || rc=$?
[ "$rc" = 0 ] || fail "show: exit status $rc: $(cat err)"
while read -r key value; do
    line=$(grep -n "^$key = " p.conf | cut -d: -f1)
    grep -Eq "^  $key +$value   \(p\.conf:$line\)$" show.txt ||
        fail "show: $key is not '$value' from p.conf:$line: $(grep " $key " show.txt)"
done <<'EOF'
gpu_count 8 GPUs
gpu_model NVIDIA H100 80GB HBM3
gpu_memory_mib 81559 MiB
pcie_gen 5
pcie_width 16 lanes
driver_version 550\.54\.15
cuda_version 12\.4
vbios_version 96\.00\.89\.00\.01
EOF
for k in nvlink_count ib_ports ib_rate_gbps fabricmanager_version; do
    grep -Eq "^  $k +\(not set\)$" show.txt || fail "show: $k is not '(not set)': $(grep " $k " show.txt)"
done
[ "$(wc -l <show.txt)" = 12 ] || fail "show: $(wc -l <show.txt) lines, not 12 (one per key)"
"$GPUDOCTOR" profile show >none.txt 2>&1
grep -q '^No profile' none.txt || fail "show without a profile: $(cat none.txt)"
rc=0
"$GPUDOCTOR" profile show --from "$SNAP" >/dev/null 2>err || rc=$?
[ "$rc" = 64 ] || fail "show --from: exit status $rc, not 64"

# ---- check against it: nothing, then each deviation ----
# profile_findings CONFIG: check with it; sets RC, and GOT to its profile.* findings, "id severity"
profile_findings() {
    RC=0
    "$GPUDOCTOR" check --json --config "$1" --from "$SNAP" >check.json 2>err || RC=$?
    GOT=$(jq -r '.findings[] | select(.id | startswith("profile.")) | "\(.id) \(.severity)"' check.json | sort -u)
}
profile_findings p.conf
[ -z "$GOT" ] || fail "check with its own profile: $GOT"
[ "$RC" = 0 ] || fail "check with its own profile: exit status $RC, not 0"

sed 's/^pcie_width = 16$/pcie_width = 32/' p.conf >wide.conf
profile_findings wide.conf
[ "$GOT" = "profile.pcie warning" ] || fail "pcie_width 32: findings '$GOT'"
[ "$RC" = 1 ] || fail "pcie_width 32: exit status $RC, not 1"
[ "$(jq '[.findings[] | select(.id == "profile.pcie")] | length' check.json)" = 8 ] ||
    fail "pcie_width 32: not one finding per GPU"
jq -e '[.findings[] | select(.id == "profile.pcie") | .title] | all(test("runs x16, the profile expects x32"))' \
    check.json >/dev/null || fail "pcie_width 32: the titles do not say x16 against x32"

sed 's/^gpu_count = 8$/gpu_count = 9/' p.conf >count.conf
profile_findings count.conf
[ "$GOT" = "profile.gpu-count critical" ] || fail "gpu_count 9: findings '$GOT'"
[ "$RC" = 2 ] || fail "gpu_count 9: exit status $RC, not 2"
jq -e '.findings[] | select(.id == "profile.gpu-count") | .title | test("8 of the 9 GPUs")' check.json \
    >/dev/null || fail "gpu_count 9: the title does not say 8 of 9"

sed 's/^driver_version = .*/driver_version = "535.104.05"/' p.conf >driver.conf
profile_findings driver.conf
[ "$GOT" = "profile.versions warning" ] || fail "driver 535.104.05: findings '$GOT'"
[ "$RC" = 1 ] || fail "driver 535.104.05: exit status $RC, not 1"

# ---- GPUs that disagree: the majority is saved, and said ----
rc=0
"$GPUDOCTOR" profile save --from "$SRC/tests/scenarios/profile-deviations/snapshot.json" -o dev.conf 2>err || rc=$?
[ "$rc" = 0 ] || fail "disagreeing GPUs: exit status $rc"
grep -q '^gpudoctor profile: vbios_version: the GPUs differ; the most common value, 96.00.89.00.01, is saved$' err ||
    fail "disagreeing GPUs: the VBIOS majority is not said: $(cat err)"
grep -q '^vbios_version = "96.00.89.00.01"$' dev.conf || fail "disagreeing GPUs: $(grep vbios dev.conf)"

# ---- NVLink and InfiniBand: saved from snapshots that have them, judged against them ----
S=$SRC/tests/scenarios
"$GPUDOCTOR" profile save --from "$S/healthy-8gpu-nvlink/snapshot.json" -o nv.conf 2>/dev/null
grep -q '^nvlink_count = 18$' nv.conf || fail "nvlink: not saved: $(grep nvlink nv.conf)"
grep -q '^# ib_ports = ?   (not in the evidence: this snapshot has no ib section)$' nv.conf ||
    fail "nvlink: ib_ports: $(grep ib_ports nv.conf)"
rc=0
"$GPUDOCTOR" check --json --config nv.conf --from "$S/healthy-8gpu-nvlink/snapshot.json" >nv.json || rc=$?
[ "$(jq '[.findings[] | select(.id | startswith("profile."))] | length' nv.json)" = 0 ] ||
    fail "nvlink: the node it was saved from deviates: $(jq -c '[.findings[].title]' nv.json)"
# A GPU with links down: profile.fabric names it and its count.
"$GPUDOCTOR" check --json --config nv.conf --from "$S/nvlink-down/snapshot.json" >nvd.json || :
jq -e '[.findings[] | select(.id == "profile.fabric") | .title] |
       any(test("^nvlink_count is [0-9]+, the profile expects 18$"))' nvd.json >/dev/null ||
    fail "nvlink: no profile.fabric for the GPU with links down: $(jq -c '[.findings[].title]' nvd.json)"
# Fabric Manager's version is saved from the HGX that has one, and judged on a node with another.
grep -q '^fabricmanager_version = "550.54.15"$' nv.conf ||
    fail "fabric manager: not saved: $(grep fabricmanager nv.conf)"
"$GPUDOCTOR" check --json --config nv.conf --from "$S/fm-version/snapshot.json" >fmv.json || :
jq -e '[.findings[] | select(.id == "profile.versions") | .title] |
       any(. == "fabricmanager_version is 550.90.07, the profile expects 550.54.15")' fmv.json >/dev/null ||
    fail "fabric manager: no profile.versions for the other version: $(jq -c '[.findings[] | select(.id | startswith("profile.")) | .title]' fmv.json)"
"$GPUDOCTOR" profile save --from "$S/healthy-8gpu-ib/snapshot.json" -o ib.conf 2>/dev/null
grep -q '^ib_ports = 4$' ib.conf && grep -q '^ib_rate_gbps = 400$' ib.conf ||
    fail "ib: not saved: $(grep '^ib_' ib.conf)"
# The same fabric with its ports at 200 Gb/s: below the profile's rate.
"$GPUDOCTOR" check --json --config ib.conf --from "$S/ib-rate-low/snapshot.json" >ibr.json || :
jq -e '[.findings[] | select(.id == "profile.fabric") | .title] |
       any(. == "ib_rate_gbps is 200, the profile expects at least 400")' ibr.json >/dev/null ||
    fail "ib: no profile.fabric for the slow ports: $(jq -c '[.findings[].title]' ibr.json)"

# ---- malformed profiles: usage errors naming the file and line ----
bad() { # NAME CONTENT MESSAGE-REGEX
    printf '%s' "$2" >"$1.conf"
    for cmd in "profile show --config $1.conf" "check --config $1.conf --from $SNAP"; do
        rc=0
        # shellcheck disable=SC2086
        "$GPUDOCTOR" $cmd >/dev/null 2>err || rc=$?
        [ "$rc" = 64 ] || fail "$1 ($cmd): exit status $rc, not 64"
        grep -Eq "^gpudoctor [a-z]+: $1\.conf:$3" err || fail "$1 ($cmd): '$(cat err)'"
    done
}
bad unknown-key $'[profile]\ngpu_count = 8\ngpu_cont = 8\n' \
    "3: unknown profile key 'gpu_cont' \(did you mean 'gpu_count'\?\)"
bad not-a-number $'[profile]\ngpu_count = eight\n' "2: gpu_count: 'eight' is not a whole number"
bad other-section $'[profile]\npcie_width = 16\n[other]\n' "3: unknown section '\[other\]'"
bad before-section $'gpu_model = x\n[profile]\n' "1: 'gpu_model' is a key of the \[profile\] section"

# ---- usage ----
for args in "profile" "profile bogus" "profile save show"; do
    rc=0
    # shellcheck disable=SC2086
    "$GPUDOCTOR" $args >/dev/null 2>err || rc=$?
    [ "$rc" = 64 ] || fail "$args: exit status $rc, not 64"
done

# A live save (the default collectors, no --only) records Fabric Manager's version where it is
# installed, as check reads it; a node without it says so as a comment.
HGX=$SRC/tests/scenarios/troubled-hgx-8xh100
GPUDOCTOR_NVML_LIB=$SIM_LIB NVML_SIM_SCENARIO=$SRC/scenarios/troubled-hgx-8xh100.json NVML_SIM_QUIET=1 \
    "$GPUDOCTOR" profile save --root "$HGX/root" -o live.conf 2>/dev/null
grep -q '^fabricmanager_version = "550.54.15"$' live.conf ||
    fail "live save: fabric manager not saved: $(grep fabricmanager live.conf)"
"$GPUDOCTOR" profile show --config live.conf >live.show
grep -q '^  fabricmanager_version  550.54.15   (live.conf:[0-9]*)$' live.show ||
    fail "live save: show: $(grep fabricmanager live.show)"

e2e_done "ok: profile save, show and check against it"
