#!/usr/bin/env bash
# deploy/kubernetes/gpudoctor-daemonset.yaml: a DaemonSet for GPU nodes with hostPID, the host's
# /proc, /sys, /dev and logs mounted read-only where --root points, the NVIDIA runtime, bounded
# resources, Prometheus annotations that match the port it listens on, and arguments gpudoctor
# accepts.
set -euo pipefail
: "${GPUDOCTOR:?}" "${SRC:?}"
python3 -c 'import yaml' 2>/dev/null || { echo "SKIP: python3 with PyYAML is not installed"; exit 77; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

python3 - "$SRC/deploy/kubernetes/gpudoctor-daemonset.yaml" >"$TMP/args" <<'PY'
import sys, yaml

docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
assert len(docs) == 1 and docs[0]["kind"] == "DaemonSet", "one DaemonSet"
ds = docs[0]
spec = ds["spec"]["template"]["spec"]
meta = ds["spec"]["template"]["metadata"]
assert ds["spec"]["selector"]["matchLabels"].items() <= meta["labels"].items(), "selector matches"
assert spec["hostPID"] is True, "hostPID"
assert spec["nodeSelector"] == {"nvidia.com/gpu.present": "true"}, "GPU nodes only"
assert spec["runtimeClassName"] == "nvidia", "NVIDIA runtime"
(c,) = spec["containers"]
env = {e["name"]: e["value"] for e in c["env"]}
assert env["NVIDIA_VISIBLE_DEVICES"] == "all" and env["NVIDIA_DRIVER_CAPABILITIES"] == "utility"
assert "nvidia.com/gpu" not in c["resources"].get("limits", {}), "takes no GPU"
assert {"cpu", "memory"} <= c["resources"]["limits"].keys(), "bounded"
assert {"cpu", "memory"} <= c["resources"]["requests"].keys(), "requests"
args = c["args"]
assert args[0] == "serve"
port = int(args[args.index("--listen") + 1].rsplit(":", 1)[1])
assert c["ports"][0]["containerPort"] == port, "container port is the listen port"
ann = meta["annotations"]
assert ann["prometheus.io/scrape"] == "true" and int(ann["prometheus.io/port"]) == port
assert ann["prometheus.io/path"] == "/metrics"
assert c["readinessProbe"]["httpGet"]["path"] == "/healthz"
sc = c["securityContext"]
assert sc["readOnlyRootFilesystem"] is True and sc["allowPrivilegeEscalation"] is False
assert sc["capabilities"]["drop"] == ["ALL"]
assert sorted(sc["capabilities"]["add"]) == ["DAC_READ_SEARCH", "SYSLOG", "SYS_PTRACE"]
root = args[args.index("--root") + 1]
mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
vols = {v["name"]: v["hostPath"]["path"] for v in spec["volumes"]}
for host in ("/proc", "/sys", "/dev", "/var/log"):
    m = mounts[root + host]
    assert m["readOnly"] is True, host + " read-only"
    assert vols[m["name"]] == host, host + " is the host's"
print(" ".join(a if a != root else "/" for a in args))
PY

if [ -e "${SIM_LIB:-}" ]; then
    read -r -a argv <"$TMP/args"
    GPUDOCTOR_NVML_LIB=$SIM_LIB NVML_SIM_SCENARIO=$SRC/scenarios/healthy-8xh100.json NVML_SIM_QUIET=1 \
        GPUDOCTOR_CONFIG=/dev/null "$GPUDOCTOR" "${argv[@]}" --once --only nvml >"$TMP/once.prom"
    grep -q '^gpudoctor_nvml_devices 8$' "$TMP/once.prom"
fi
echo "all checks passed"
