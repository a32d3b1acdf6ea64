#!/usr/bin/env bash
# The importers against the corpus of real outputs (tests/import/README.md): every sample is
# imported (`gpudoctor snapshot --from`, TZ=UTC) and compared with the values its .expect file
# writes down by hand from the text:
#   from: FILE...           the sample (several: merged, in that order)
#   format: NAME            --format NAME (default: recognised)
#   error: REGEX            the import must fail (exit 3) with a message matching REGEX
#   PATH = JSON             a value of the snapshot ("gpus[0].temp_c = 35"); null: unknown (the key
#                           may be absent); PATH: dotted keys and [index]
#   len(PATH) = N           an array's length
#   PATH ~ REGEX            a string matching REGEX
#   finding: ID [gpu=N]     `check --from` reports it (with that subject)
#   no finding: ID          and not this one
#   exit: N                 `check --from`'s exit status
#   fix: REGEX              a fix line of `check --from` matches REGEX
#   no fix: REGEX           and none matches this one
set -uo pipefail
command -v python3 >/dev/null || { echo "python3 not installed"; exit 77; }
: "${GPUDOCTOR:?}" "${SRC:?}"
export GPUDOCTOR_CONFIG=/dev/null NO_COLOR=1 TZ=UTC
python3 - "$GPUDOCTOR" "$SRC/tests/import" <<'PY'
import glob
import json
import os
import re
import subprocess
import sys

gpudoctor, corpus = sys.argv[1:3]
failures, checked, samples = [], 0, 0


def lookup(doc, path):
    cur = doc
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", path):
        if part.startswith("["):
            i = int(part[1:-1])
            if not isinstance(cur, list) or i >= len(cur):
                return KeyError(path)
            cur = cur[i]
        else:
            if not isinstance(cur, dict) or part not in cur:
                return KeyError(path)
            cur = cur[part]
    return cur


for exp in sorted(glob.glob(os.path.join(corpus, "*", "*.expect"))):
    name = os.path.relpath(exp, corpus)
    here = os.path.dirname(exp)
    lines = [ln.rstrip("\n") for ln in open(exp, encoding="utf-8")]
    spec = [ln for ln in lines if ln.strip() and not ln.lstrip().startswith("#")]
    froms, fmt, err = [], None, None
    for ln in spec:
        if ln.startswith("from:"):
            froms = [os.path.join(here, f) for f in ln[5:].split()]
        elif ln.startswith("format:"):
            fmt = ln[7:].strip()
        elif ln.startswith("error:"):
            err = ln[6:].strip()
    if not froms:
        failures.append(f"{name}: no 'from:' line")
        continue
    samples += 1
    args = [a for f in froms for a in ("--from", f)] + (["--format", fmt] if fmt else [])
    snap = subprocess.run([gpudoctor, "snapshot", *args], capture_output=True, text=True,
                          timeout=60)
    if err is not None:
        checked += 1
        if snap.returncode != 3 or not re.search(err, snap.stderr):
            failures.append(f"{name}: expected exit 3 and an error matching {err!r}, got "
                            f"{snap.returncode}: {snap.stderr.strip()}")
        continue
    if snap.returncode != 0:
        failures.append(f"{name}: not imported (exit {snap.returncode}): {snap.stderr.strip()}")
        continue
    doc = json.loads(snap.stdout)
    report = None
    for ln in spec:
        if re.match(r"^(from|format|error):", ln):
            continue
        checked += 1
        if ln.startswith(("finding:", "no finding:", "exit:", "fix:", "no fix:")):
            if report is None:
                r = subprocess.run([gpudoctor, "check", *args, "--json"], capture_output=True,
                                   text=True, timeout=60)
                report = (r.returncode, json.loads(r.stdout) if r.stdout else {})
            rc, rep = report
            if ln.startswith("exit:"):
                if rc != int(ln[5:]):
                    failures.append(f"{name}: check exits {rc}, not {ln[5:].strip()}")
                continue
            if ln.startswith(("fix:", "no fix:")):
                rx = ln.split(":", 1)[1].strip()
                lines = [x for f in rep.get("findings", []) for x in f.get("fix", [])]
                hit = [x for x in lines if re.search(rx, x)]
                if ln.startswith("fix:") and not hit:
                    failures.append(f"{name}: no fix line matches {rx!r} (fix lines: {lines})")
                if ln.startswith("no fix:") and hit:
                    failures.append(f"{name}: a fix line matches {rx!r}: {hit[0]!r}")
                continue
            words = ln.split(":", 1)[1].split()
            rid, subj = words[0], dict(w.split("=", 1) for w in words[1:])
            hits = [f for f in rep.get("findings", []) if f["id"] == rid and all(
                str(f["subject"].get(k if k != "gpu" else "gpu_index")) == v
                for k, v in subj.items())]
            if ln.startswith("finding:") and not hits:
                failures.append(f"{name}: no finding {ln[8:].strip()} (found: "
                                f"{[f['id'] for f in rep.get('findings', [])]})")
            if ln.startswith("no finding:") and hits:
                failures.append(f"{name}: unexpected finding {rid}: {hits[0]['title']}")
            continue
        m = re.match(r"^len\((.+)\)\s*=\s*(\d+)$", ln)
        if m:
            v = lookup(doc, m.group(1))
            if not isinstance(v, list) or len(v) != int(m.group(2)):
                failures.append(f"{name}: len({m.group(1)}) is "
                                f"{len(v) if isinstance(v, list) else v!r}, not {m.group(2)}")
            continue
        m = re.match(r"^(\S+)\s*~\s*(.+)$", ln)
        if m:
            v = lookup(doc, m.group(1))
            if not isinstance(v, str) or not re.search(m.group(2), v):
                failures.append(f"{name}: {m.group(1)} is {v!r}, does not match {m.group(2)}")
            continue
        m = re.match(r"^(\S+)\s*=\s*(.+)$", ln)
        if not m:
            failures.append(f"{name}: cannot read the line {ln!r}")
            continue
        want = json.loads(m.group(2))
        v = lookup(doc, m.group(1))
        if isinstance(v, KeyError):
            v = None
        if v != want:
            failures.append(f"{name}: {m.group(1)} is {v!r}, not {want!r}")

print(f"{samples} samples, {checked} values checked")
for f in failures[:80]:
    print("FAIL", f)
sys.exit(1 if failures or samples == 0 else 0)
PY
