#!/usr/bin/env bash
# Unknown is not absent. Two ways a snapshot can know less than the machine had:
# 1. A field is missing: every field of every process of the zombie-holder case is removed in
#    turn (check --from, the snapshot it echoes back): exactly that field becomes null, every
#    other field keeps its value, and the zombie is still reported.
# 2. A collector did not run: for every case of the corpus (snapshots and recordings) and every
#    collector, its section of the snapshot is removed and its status with it. What the rules
#    then find must already have been found with the section there: a missing section may hide
#    a finding (the rule says it could not check), never create one. The only findings allowed
#    to appear are those a more specific finding had replaced (the rule's yields_to, from
#    `explain --markdown`), reported.error for an error whose own rule showed it and can no
#    longer judge it (reported.error then says what the text means, and concludes nothing
#    more), and, without NVML, a finding about a GPU that can then only be named by its PCI
#    address.
# Hundreds of runs: under the sanitizers on two cores they take minutes.
# ctest: timeout 600
set -uo pipefail
command -v python3 >/dev/null || { echo "python3 not installed"; exit 77; }
: "${GPUDOCTOR:?}" "${SRC:?}"
export GPUDOCTOR_CONFIG=/dev/null NO_COLOR=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

python3 - "$GPUDOCTOR" "$SRC/tests/scenarios" "$tmp" <<'PY'
import copy
import glob
import json
import os
import re
import subprocess
import sys

gpudoctor, corpus, tmp = sys.argv[1:4]
failures = []


def fail(case, msg):
    failures.append(f"{case}: {msg}")


def check(doc, rest=None, name="case"):
    path = os.path.join(tmp, name + (".jsonl" if rest is not None else ".json"))
    with open(path, "w") as f:
        json.dump(doc, f)
        if rest is not None:
            f.write("\n" + rest)
    r = subprocess.run([gpudoctor, "check", "--from", path, "--json"], capture_output=True,
                       text=True, timeout=60)
    try:
        return r.returncode, json.loads(r.stdout)
    except ValueError:
        return r.returncode, {"error": r.stderr.strip()}


# ---- 1. one process field at a time ----

base = json.load(open(os.path.join(corpus, "zombie-holder", "snapshot.json")))
rc, full = check(base, name="zombie")
procs = {p["pid"]: p for p in full["snapshot"]["processes"]["processes"]}
zombie = 5120
removed = 0
for key in sorted(procs[zombie]):
    if key == "pid" or procs[zombie][key] is None:
        continue
    doc = copy.deepcopy(base)
    for p in doc["processes"]["processes"]:
        if p["pid"] == zombie:
            del p[key]
    rc, out = check(doc, name=f"zombie-{key}")
    if "snapshot" not in out:
        fail(f"zombie without {key}", f"not read: {out.get('error')}")
        continue
    removed += 1
    back = {p["pid"]: p for p in out["snapshot"]["processes"]["processes"]}[zombie]
    # A list that is gone reads as empty (gpus, children) or unknown (libs).
    gone = back.get(key)
    if gone not in (None, []):
        fail(f"zombie without {key}", f"{key} came back as {gone!r}")
    for other, value in procs[zombie].items():
        if other != key and back.get(other) != value:
            fail(f"zombie without {key}", f"{other} changed: {value!r} -> {back.get(other)!r}")
    if key not in ("state", "gpus") and not any(
            f["id"] == "proc.zombie-holder" for f in out["findings"]):
        fail(f"zombie without {key}", "the zombie is no longer reported")
if removed < 15:
    fail("zombie", f"only {removed} fields removed")

# procs reads the same snapshot: without cpu_time_ms (or threads) the zombie is still state Z,
# in its table and its JSON.
for key in ("cpu_time_ms", "threads"):
    doc = copy.deepcopy(base)
    for p in doc["processes"]["processes"]:
        if p["pid"] == zombie:
            del p[key]
    path = os.path.join(tmp, f"procs-{key}.json")
    with open(path, "w") as f:
        json.dump(doc, f)
    text = subprocess.run([gpudoctor, "procs", "--from", path], capture_output=True, text=True,
                          timeout=60).stdout
    row = [ln for ln in text.splitlines() if ln.split()[:1] == [str(zombie)]]
    if not row or " Z " not in row[0]:
        fail(f"procs, zombie without {key}", f"row {row!r} does not show state Z")

# ---- 2. one collector at a time ----

# What a collector fills: top-level keys, keys of a section, and the same in samples.
SECTIONS = {
    "nvml": {"top": ["nvml", "gpus"], "samples": ["gpus"]},
    "processes": {"top": ["processes"], "samples": ["processes"]},
    "host": {"top": ["host"], "samples": ["host"]},
    "pcie": {"top": ["pcie"], "samples": []},
    "driver": {"driver": re.compile(r"^(module_|sysfs_|uvm_|preserve_vram$|suspend_notifiers$)")},
    "kernel_log": {"driver": re.compile(r"^(klog_|events$)")},
    "stack": {"top": ["stack"], "samples": []},
}

# Which findings a rule gives way to: when those go, it may appear.
md = subprocess.run([gpudoctor, "explain", "--markdown"], capture_output=True, text=True).stdout
yields = {}
for block in re.split(r"\n(?=## )", md):
    head = re.match(r"## `?([a-z]+\.[a-z0-9-]+)", block)
    if head:
        yields[head.group(1)] = set(re.findall(r"`([a-z]+\.[a-z0-9-]+)`",
                                               block.split("Gives way to", 1)[1].split("\n")[0]
                                               if "Gives way to" in block else ""))


def without(doc, collector):
    """What `snapshot --only` writes for a collector it did not run: status not_run, its keys
    null (or gone, for whole sections)."""
    d = copy.deepcopy(doc)
    spec = SECTIONS[collector]
    if collector in d.get("collectors", {}):
        d["collectors"][collector] = {"state": "not_run", "detail": None, "notes": [],
                                      "elapsed_us": 0}
    for key in spec.get("top", []):
        d.pop(key, None)
    if "driver" in spec and isinstance(d.get("driver"), dict):
        for key in list(d["driver"]):
            if spec["driver"].match(key):
                d["driver"][key] = [] if key == "events" else None
    for smp in d.get("samples", []):
        for key in spec.get("samples", []):
            smp.pop(key, None)
    return d


def given(report, gone_keys):
    """The error texts ("the error given: ...") the findings of gone_keys showed."""
    texts = set()
    for f in report.get("findings", []):
        if (f["id"], f["subject"]["gpu_index"], f["subject"]["pid"],
                f["subject"]["object"]) in gone_keys:
            texts.update(e for e in f.get("evidence", []) if e.startswith("the error given: "))
    return texts


def keyset(report):
    return {(f["id"], f["subject"]["gpu_index"], f["subject"]["pid"], f["subject"]["object"])
            for f in report.get("findings", [])}


cases = [(os.path.basename(os.path.dirname(p)), json.load(open(p)), None)
         for p in sorted(glob.glob(os.path.join(corpus, "*", "snapshot.json")))]
for p in sorted(glob.glob(os.path.join(corpus, "*", "recording.jsonl"))):
    first, rest = open(p).read().split("\n", 1)
    # A recording's samples are separate lines: the collector's part of each goes too.
    lines = [json.loads(line) for line in rest.splitlines() if line.strip()]
    cases.append((os.path.basename(os.path.dirname(p)), json.loads(first), lines))

runs = 0
for name, doc, samples in cases:
    rest = None if samples is None else "\n".join(json.dumps(s) for s in samples)
    rc, full = check(doc, rest, name)
    if "findings" not in full:
        fail(name, f"not read: {full.get('error')}")
        continue
    have = keyset(full)
    for collector in SECTIONS:
        d = without(doc, collector)
        r = None
        if samples is not None:
            # A line that is a whole snapshot again (watch writes one when the collectors'
            # state changes) loses the collector as the first line does; a sample, its keys.
            r = "\n".join(json.dumps(without(s, collector) if "collectors" in s
                                      else without({"samples": [s]}, collector)["samples"][0])
                          for s in samples)
        rc2, out = check(d, r, f"{name}-{collector}")
        runs += 1
        if "findings" not in out:
            fail(f"{name} without {collector}", f"not read: {out.get('error')}")
            continue
        for key in sorted(keyset(out) - have, key=str):
            rule = key[0]
            # Allowed when it gave way to a finding about the same GPU that is gone now.
            if any(k[0] in yields.get(rule, ()) and k[1] == key[1] for k in have - keyset(out)):
                continue
            # Allowed: reported.error for a text the finding that judged it (now gone) showed.
            if rule == "reported.error":
                shown = given(full, have - keyset(out))
                mine = {e for f in out["findings"] if f["id"] == rule
                        for e in f.get("evidence", []) if e.startswith("the error given: ")}
                if mine and mine <= shown:
                    continue
            # Allowed: the same finding, about a GPU NVML no longer names (by PCI address).
            if collector == "nvml" and key[1] is None and any(k[0] == rule for k in have):
                continue
            fail(f"{name} without {collector}",
                 f"new finding {rule} (gpu {key[1]}, pid {key[2]}, {key[3]}): "
                 + next(f["title"] for f in out["findings"] if
                        (f["id"], f["subject"]["gpu_index"], f["subject"]["pid"],
                         f["subject"]["object"]) == key))
        # Nothing established about GPUs: only without NVML, or where NVML saw none anyway.
        if rc2 > 2 and rc <= 2 and collector != "nvml" and doc.get("gpus"):
            fail(f"{name} without {collector}", f"exit {rc2}: only NVML's absence means "
                 "nothing could be checked")

print(f"{removed} process fields removed one at a time; {len(cases)} cases x "
      f"{len(SECTIONS)} collectors: {runs} runs")
for f in failures[:60]:
    print("FAIL", f)
if len(failures) > 60:
    print(f"... {len(failures) - 60} more")
sys.exit(1 if failures else 0)
PY
