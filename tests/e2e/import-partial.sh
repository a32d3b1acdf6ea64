#!/usr/bin/env bash
# Imported evidence is always partial; a rule must never read "not in the evidence" as "absent"
# or "zero". Every sample of the import corpus (tests/import, the ones that import) is converted
# into a snapshot (`snapshot --from`) and checked; then every field it holds is removed in turn
# (each GPU field from every GPU, each key of nvml, host, the PCIe devices, the driver and the
# processes, each collector's whole section) and the snapshot checked again. A removal may hide
# a finding (the rule says it could not check), never create one: a new finding would claim the
# absence of something that was simply not collected. Allowed, as in partial-evidence.sh: a
# finding a more specific one had replaced (the rule's "Gives way to", `explain --markdown`).
# Also: the report on imported evidence says which command would supply what is missing; and the
# round trip: the converted snapshot gives the same findings as the evidence itself, and every key
# it holds is one `snapshot --describe` documents.
# Some 1800 checks, two at a time: under the sanitizers on two busy cores they take minutes.
# ctest: timeout 900
set -uo pipefail
command -v python3 >/dev/null || { echo "python3 not installed"; exit 77; }
: "${GPUDOCTOR:?}" "${SRC:?}"
export GPUDOCTOR_CONFIG=/dev/null NO_COLOR=1 TZ=UTC
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

python3 - "$GPUDOCTOR" "$SRC/tests/import" "$tmp" <<'PY'
import concurrent.futures
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


def check(doc, name):
    path = os.path.join(tmp, name.replace("/", "_") + ".json")
    with open(path, "w") as f:
        json.dump(doc, f)
    r = subprocess.run([gpudoctor, "check", "--from", path, "--json"], capture_output=True,
                       text=True, timeout=60)
    try:
        return r.returncode, json.loads(r.stdout)
    except ValueError:
        return r.returncode, {"error": r.stderr.strip() or f"exit {r.returncode}"}


def keyset(report):
    return {(f["id"], f["subject"]["gpu_index"], f["subject"]["pid"], f["subject"]["object"])
            for f in report.get("findings", [])}


md = subprocess.run([gpudoctor, "explain", "--markdown"], capture_output=True, text=True).stdout
yields = {}
for block in re.split(r"\n(?=## )", md):
    head = re.match(r"## `?([a-z]+\.[a-z0-9-]+)", block)
    if head and "Gives way to" in block:
        yields[head.group(1)] = set(re.findall(r"`([a-z]+\.[a-z0-9-]+)`",
                                               block.split("Gives way to", 1)[1].split("\n")[0]))

# Each collector's part of a snapshot (as partial-evidence.sh removes it).
SECTIONS = {
    "nvml": ["nvml", "gpus"], "processes": ["processes"], "host": ["host"], "pcie": ["pcie"],
    "stack": ["stack"],
}


def variants(doc):
    """(what was removed, the snapshot without it), one removal at a time: a GPU field's key
    goes (read back as NOT_COLLECTED), other keys become null (unknown), as the snapshot format
    writes what was not read."""
    gpus = doc.get("gpus") or []
    fields = sorted({k for g in gpus for k, v in g.items()
                     if k not in ("index", "nvml_status") and
                     (v is not None or g.get("nvml_status", {}).get(k) not in (None, "NOT_COLLECTED"))})
    for key in fields:
        d = copy.deepcopy(doc)
        for g in d["gpus"]:
            g.pop(key, None)
            g.get("nvml_status", {}).pop(key, None)
            # A list the snapshot format omits when empty (a sample's GPUs): null is "not read".
            if key in ("processes", "process_utilization"):
                g[key] = None
        yield f"gpus[*].{key}", d
    for sect in ("nvml", "host", "driver"):
        for key, v in sorted((doc.get(sect) or {}).items()):
            if v is None or v == [] or (sect == "driver" and key == "events"):
                continue
            d = copy.deepcopy(doc)
            d[sect][key] = None
            yield f"{sect}.{key}", d
    for i, ev in enumerate((doc.get("driver") or {}).get("events") or []):
        if i >= 1:
            break
        for key, v in sorted(ev.items()):
            if v is None or key == "kind":
                continue
            d = copy.deepcopy(doc)
            d["driver"]["events"][i][key] = None
            yield f"driver.events[{i}].{key}", d
    devs = (doc.get("pcie") or {}).get("gpus") or []
    for key in sorted({k for dev in devs for k, v in dev.items() if v is not None and k != "address"}):
        d = copy.deepcopy(doc)
        for dev in d["pcie"]["gpus"]:
            dev[key] = None
        yield f"pcie.gpus[*].{key}", d
    procs = (doc.get("processes") or {}).get("processes") or []
    for key in sorted({k for p in procs for k, v in p.items() if v is not None and k != "pid"}):
        d = copy.deepcopy(doc)
        for p in d["processes"]["processes"]:
            p[key] = None
        yield f"processes[*].{key}", d
    for coll, keys in SECTIONS.items():
        if (doc.get("collectors") or {}).get(coll, {}).get("state") in (None, "not_run"):
            continue
        d = copy.deepcopy(doc)
        d["collectors"][coll] = {"state": "not_run", "detail": None, "notes": [], "elapsed_us": 0}
        for k in keys:
            d.pop(k, None)
        yield f"section {coll}", d
    if (doc.get("collectors") or {}).get("kernel_log", {}).get("state") not in (None, "not_run"):
        d = copy.deepcopy(doc)
        d["collectors"]["kernel_log"] = {"state": "not_run", "detail": None, "notes": [],
                                         "elapsed_us": 0}
        for key in list(d.get("driver") or {}):
            if key.startswith("klog_") or key == "events":
                d["driver"][key] = [] if key == "events" else None
        yield "section kernel_log", d


# Every name the description gives in backquotes: its tables' keys and those its text explains.
described = set(re.findall(r"`([a-z0-9_]+)`", subprocess.run(
    [gpudoctor, "snapshot", "--describe"], capture_output=True, text=True).stdout))


def keys(node, out):
    if isinstance(node, dict):
        for k, v in node.items():
            out.add(k)
            keys(v, out)
    elif isinstance(node, list):
        for v in node:
            keys(v, out)
    return out


samples, runs, hinted = 0, 0, 0
for exp in sorted(glob.glob(os.path.join(corpus, "*", "*.expect"))):
    name = os.path.relpath(exp, corpus)
    here = os.path.dirname(exp)
    spec = [ln.strip() for ln in open(exp, encoding="utf-8")
            if ln.strip() and not ln.lstrip().startswith("#")]
    if any(ln.startswith("error:") for ln in spec):
        continue
    froms = next((ln[5:].split() for ln in spec if ln.startswith("from:")), [])
    fmt = next((ln[7:].strip() for ln in spec if ln.startswith("format:")), None)
    args = [a for f in froms for a in ("--from", os.path.join(here, f))]
    args += ["--format", fmt] if fmt else []
    snap = subprocess.run([gpudoctor, "snapshot", *args], capture_output=True, text=True,
                          timeout=60)
    if snap.returncode != 0:
        fail(name, f"not imported: {snap.stderr.strip()}")
        continue
    doc = json.loads(snap.stdout)
    samples += 1
    rc, full = check(doc, name)
    if "findings" not in full:
        fail(name, f"the converted snapshot is not read: {full.get('error')}")
        continue
    have = keyset(full)
    r = subprocess.run([gpudoctor, "check", *args, "--json"], capture_output=True, text=True,
                       timeout=60)
    direct = keyset(json.loads(r.stdout)) if r.stdout else None
    if direct != have:
        fail(name, f"the converted snapshot's findings differ from the evidence's: "
             f"{sorted(map(str, (direct or set()) ^ have))[:3]}")
    # nvml_status maps field names; collectors are named by collector_names.
    undocumented = {k for k in keys(doc, set()) - described
                    if k not in ("nvml_status",) and k not in (doc.get("collectors") or {})}
    if undocumented:
        fail(name, f"keys `snapshot --describe` does not document: {sorted(undocumented)[:5]}")
    # A merge's files are samples of their own, removed field by field there (120 s on a busy
    # 2-core machine: the removals are the cost).
    removals = [] if name.startswith("merge/") else list(enumerate(variants(doc), runs + 1))
    runs += len(removals)
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        checked = list(pool.map(lambda r: (r[1][0], check(r[1][1], f"{name}-{r[0]}")), removals))
    for what, (rc2, out) in checked:
        if "findings" not in out:
            fail(f"{name} without {what}", f"not read: {out.get('error')}")
            continue
        gone = have - keyset(out)
        for key in sorted(keyset(out) - have, key=str):
            if any(k[0] in yields.get(key[0], ()) and k[1] == key[1] for k in gone):
                continue
            # The same finding about a GPU now named only by its PCI address (or not at all):
            # NVML's section, or the event's address, was what tied it to an index.
            if key[1] is None and any(k[0] == key[0] for k in have):
                continue
            title = next(f["title"] for f in out["findings"]
                         if (f["id"], f["subject"]["gpu_index"], f["subject"]["pid"],
                             f["subject"]["object"]) == key)
            # An event whose time is removed can no longer be shown to be old: reported, saying
            # so (it claims the event, never the absence of anything).
            if what.endswith(".time_ms") and "unknown time" in title:
                continue
            fail(f"{name} without {what}", f"new finding {key[0]} (gpu {key[1]}): {title}")
    # The text report names the command that would supply each field the evidence lacked.
    text = " ".join(subprocess.run([gpudoctor, "check", *args], capture_output=True,
                                   text=True, timeout=60).stdout.split())
    for g in doc.get("gpus") or []:
        if g.get("nvml_status", {}).get("clocks_event_reasons") == "NOT_COLLECTED" and \
                "clocks_event_reasons not collected" in text:
            hinted += 1
            if "clocks_event_reasons not collected on GPU" not in text or \
                    "(run `nvidia-smi -q -d PERFORMANCE` for it)" not in text:
                fail(name, "'Not checked' does not say which command supplies the clock "
                     "event reasons")
            break

print(f"{samples} samples, {runs} removals, {hinted} reports checked for the command hint")
if samples < 30 or runs < 500 or hinted < 5:
    fail("corpus", f"too little was checked ({samples} samples, {runs} runs, {hinted} hints)")
for f in failures[:60]:
    print("FAIL", f)
if len(failures) > 60:
    print(f"... {len(failures) - 60} more")
sys.exit(1 if failures else 0)
PY
