#!/usr/bin/env bash
# The Python environment gpudoctor is started in (docs/stack.md, "gpudoctor's own environment"):
# a program that failed at its start leaves no process to read, so a live run reads the framework
# of $VIRTUAL_ENV, else $CONDA_PREFIX. Checked on the 8 x H100 simulator (driver 550.54.15, CUDA
# 12.4): the records (pid 0, found_from "environment", the wheel's cuDNN), VIRTUAL_ENV before
# CONDA_PREFIX, values that are not absolute or name no site-packages (a note, nothing read), a
# fixture root (gpudoctor's environment says nothing of it), CUDA 209 judged against the venv's
# build with where it was found, a build needing a newer driver (stack.cuda-too-new, no process
# named), the JSON round trip, and the hint to run from the environment when there is none.
set -uo pipefail
: "${GPUDOCTOR:?}" "${SRC:?}" "${SIM_LIB:?}"
command -v jq >/dev/null || { echo "SKIP: jq is not installed"; exit 77; }
[ -e "$SIM_LIB" ] || { echo "SKIP: the NVML simulator is not built"; exit 77; }
export GPUDOCTOR_CONFIG=/dev/null NO_COLOR=1 LC_ALL=C.UTF-8 GPUDOCTOR_STATE_DIR=off
export GPUDOCTOR_NVML_LIB=$SIM_LIB NVML_SIM_SCENARIO=$SRC/scenarios/healthy-8xh100.json
unset COLUMNS VIRTUAL_ENV CONDA_PREFIX
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}
eq() { [ "$2" = "$3" ] || fail "$1: got '$2', want '$3'"; }

# A venv (pyvenv.cfg) with PyTorch 1.10.2 built for CUDA 10.2 and a cuDNN wheel.
venv=$tmp/venv
sp=$venv/lib/python3.11/site-packages
mkdir -p "$venv/bin" "$sp/torch" "$sp/nvidia_cudnn_cu11-8.5.0.96.dist-info"
printf 'home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.11.2\n' >"$venv/pyvenv.cfg"
printf "__version__ = '1.10.2+cu102'\ncuda: Optional[str] = '10.2'\nhip: Optional[str] = None\n" \
    >"$sp/torch/version.py"
# A conda env with TensorFlow 2.5.0 built for CUDA 11.2.
conda=$tmp/conda
csp=$conda/lib/python3.9/site-packages
mkdir -p "$conda/bin" "$csp/tensorflow/python/platform" "$csp/tensorflow-2.5.0.dist-info"
echo "build_info = {'cuda_version': '11.2', 'cudnn_version': '8'}" \
    >"$csp/tensorflow/python/platform/build_info.py"

snap() { "$GPUDOCTOR" snapshot --only stack -o "$tmp/s.json" "$@" 2>"$tmp/err"; }

VIRTUAL_ENV=$venv snap
eq "venv: exit" $? 0
eq "venv: python_env" "$(jq -r '.stack | "\(.python_env) \(.python_env_var)"' "$tmp/s.json")" \
    "$venv VIRTUAL_ENV"
eq "venv: record" "$(jq -c "[.stack.frameworks[] | select(.found_from == \"environment\")
    | [.pid, .processes, .name, .version, .cuda_version, .cudnn_version, .site_packages, .python]]" \
    "$tmp/s.json")" "[[0,0,\"torch\",\"1.10.2+cu102\",\"10.2\",\"8.5.0.96\",\"$sp\",\"$venv/bin/python\"]]"

CONDA_PREFIX=$conda snap
eq "conda: record" "$(jq -c "[.stack.frameworks[] | select(.found_from == \"environment\")
    | [.name, .version, .cuda_version, .cudnn_version]]" "$tmp/s.json")" \
    '[["tensorflow","2.5.0","11.2","8"]]'
eq "conda: python_env_var" "$(jq -r '.stack.python_env_var' "$tmp/s.json")" CONDA_PREFIX

# An activated venv shadows the conda env it was made from: only the venv is read.
VIRTUAL_ENV=$venv CONDA_PREFIX=$conda snap
eq "both: the venv" "$(jq -c '[.stack.frameworks[] | select(.found_from == "environment") | .name]' \
    "$tmp/s.json")" '["torch"]'

# Values that cannot name an environment: a note, nothing read.
VIRTUAL_ENV=relative/venv snap
eq "relative: exit" $? 0
eq "relative: python_env" "$(jq -r '.stack.python_env' "$tmp/s.json")" null
eq "relative: note" "$(jq -r '.collectors.stack.notes | index("$VIRTUAL_ENV is not an absolute path: not read") != null' "$tmp/s.json")" true
VIRTUAL_ENV=$tmp/nothing-here snap
eq "empty: note" "$(jq -r ".collectors.stack.notes | index(\"\$VIRTUAL_ENV ($tmp/nothing-here): no site-packages directory under it\") != null" "$tmp/s.json")" true
eq "empty: no record" "$(jq '[.stack.frameworks[] | select(.found_from == "environment")] | length' "$tmp/s.json")" 0

# A fixture root: gpudoctor's own environment says nothing of it.
VIRTUAL_ENV=$venv snap --root "$SRC/tests/fixtures/stack/basic"
eq "root: python_env" "$(jq -r '.stack.python_env' "$tmp/s.json")" null
eq "root: no record" "$(jq '[.stack.frameworks[] | select(.found_from == "environment")] | length' "$tmp/s.json")" 0

# CUDA 209 judged against the venv's build: where it was found is evidence.
VIRTUAL_ENV=$venv "$GPUDOCTOR" check --window 0 --only nvml,stack --json \
    --error 'RuntimeError: CUDA error: no kernel image is available for execution on the device' >"$tmp/j"
eq "209: exit" $? 2
a='[.findings[] | select(.id == "stack.arch-unsupported")][0]'
eq "209: first" "$(jq -r '.findings[0].id' "$tmp/j")" stack.arch-unsupported
eq "209: found where" "$(jq -r "$a.evidence | index(\"found in $sp, of the Python environment gpudoctor was started in (\$VIRTUAL_ENV): no process of it runs here\") != null" "$tmp/j")" true
eq "209: the build judged" "$(jq -r "$a.evidence | map(select(startswith(\"torch 1.10.2+cu102 was built with CUDA 10.2; compute capability 9.0 needs CUDA 11.8 or newer\"))) | length" "$tmp/j")" 1
eq "209: no process named" "$(jq -r "$a.subject.pid" "$tmp/j")" null

# Without an error: a build whose CUDA the driver is too old for, no process named.
printf "__version__ = '2.9.0+cu130'\ncuda: Optional[str] = '13.0'\n" >"$sp/torch/version.py"
VIRTUAL_ENV=$venv "$GPUDOCTOR" check --window 0 --only nvml,stack --json >"$tmp/j"
eq "too new: exit" $? 2
c='[.findings[] | select(.id == "stack.cuda-too-new")][0]'
eq "too new: title" "$(jq -r "$c.title" "$tmp/j")" \
    "torch 2.9.0+cu130 needs CUDA 13.0; driver 550.54.15 supports CUDA 12.4"
eq "too new: pid" "$(jq -r "$c.subject.pid" "$tmp/j")" null
eq "too new: found where" "$(jq -r "$c.evidence | index(\"found in $sp, of the Python environment gpudoctor was started in (\$VIRTUAL_ENV): no process of it runs here\") != null" "$tmp/j")" true

# The record survives the snapshot: check --from finds the same.
VIRTUAL_ENV=$venv "$GPUDOCTOR" snapshot --only nvml,stack -o "$tmp/full.json" 2>/dev/null
"$GPUDOCTOR" check --from "$tmp/full.json" --json >"$tmp/from.json"
eq "round trip: exit" $? 2
eq "round trip: same findings" "$(jq -c '[.findings[].id]' "$tmp/from.json")" \
    "$(jq -c '[.findings[].id]' "$tmp/j")"
eq "round trip: record" "$(jq -c '[.stack.frameworks[] | select(.found_from == "environment") | .pid]' \
    "$tmp/full.json")" '[0]'

# No environment: the hint to run from the program's own.
"$GPUDOCTOR" check --window 0 --only nvml,stack --json \
    --error 'CUDA error: no kernel image is available for execution on the device' >"$tmp/j"
eq "no env: hint" "$(jq -r "$a.evidence | map(select(endswith(\"run from the program's activated venv or conda env, gpudoctor reads its build\"))) | length" "$tmp/j")" 1

[ "$failures" -eq 0 ] && echo "all checks passed"
exit $((failures > 0))
