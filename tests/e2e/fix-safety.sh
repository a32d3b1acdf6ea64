#!/usr/bin/env bash
# Fix lines are pasted into root shells, so hostile snapshot text must never become a command.
# Every bundled snapshot and recording (tests/scenarios/*/) is run through `check --from` with
# every free-text string field made hostile (quotes, ';', $(), backticks, newlines, escape
# sequences, spaces, a leading '-', C1 and bidirectional controls, "\xNN" as the snapshot writes
# bytes that are not UTF-8), once replacing the value and once appended to it, so rules that parse
# a prefix (versions, paths) still fire: every payload into the snapshots that between them show
# every variant of every rule's fix twice, two payloads in turn into the others. For every rule that fires, every fix line (JSON, and the
# text report's fix block) must parse alone with `bash -n`, as one command or one comment, and no
# hostile text may stand outside single quotes before the comment starts. A snapshot with raw
# bytes that are not UTF-8 is refused with a clear error.
# ctest: timeout 900
set -uo pipefail
command -v python3 >/dev/null || { echo "python3 not installed"; exit 77; }
: "${GPUDOCTOR:?}" "${SRC:?}"
export GPUDOCTOR_CONFIG=/dev/null NO_COLOR=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

python3 - "$GPUDOCTOR" "$SRC/tests/scenarios" "$tmp" <<'PY'
import concurrent.futures
import copy
import glob
import json
import os
import re
import subprocess
import sys

gpudoctor, corpus, tmp = sys.argv[1:4]

# Each payload carries a marker ZQn: wherever a marker shows in a command outside single quotes,
# hostile text got into the command.
PAYLOADS = [
    "a'b;id #ZQ1",
    "$(id)ZQ2",
    "`id`ZQ3",
    "x\nid ZQ4",
    "\x1b]0;pwned\x07\x1b[31mZQ5",
    "my data ZQ6 && rm -rf /tmp/x",
    "ZQ7\\xff\u009b31m\u0085",
    "ZQ8'\"\\",
    "-rf ZQ9",
    "\u202eZQ10|cat /etc/shadow",
    "ZQ11 > /etc/passwd",
]
MARKER = re.compile(r"ZQ\d+")


def walk(obj, path=""):
    """(generic path, container, key) of every string leaf; arrays as []."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            p = f"{path}.{k}" if path else k
            if isinstance(v, str):
                yield p, obj, k
            else:
                yield from walk(v, p)
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            if isinstance(v, str):
                yield path + "[]", obj, i
            else:
                yield from walk(v, path + "[]")


def run(path, *args):
    r = subprocess.run([gpudoctor, "check", "--from", path, *args], capture_output=True,
                       timeout=60)
    return r.returncode, r.stdout.decode("utf-8", "replace"), r.stderr.decode("utf-8", "replace")


def loads(path):
    rc, out, _ = run(path, "--json")
    try:
        return json.loads(out).get("schema") == "gpudoctor.check/1"
    except ValueError:
        return False


def mutate(doc, fields, fn):
    d = copy.deepcopy(doc)
    for p, c, k in list(walk(d)):
        if p in fields:
            c[k] = fn(c[k])
    return d


def write(name, doc, rest=None):
    """A snapshot file, or with rest (the samples of a recording), a recording."""
    path = os.path.join(tmp, name + (".jsonl" if rest is not None else ".json"))
    with open(path, "w") as f:
        json.dump(doc, f)
        if rest is not None:
            f.write("\n" + rest)
    return path


def residue(line):
    """(command part, what the shell interprets of it: outside single quotes), up to the '#' of
    the comment."""
    out, quote, esc, word_start = [], None, False, True
    for i, c in enumerate(line):
        blank, word_start = word_start, False
        if quote == "'":
            if c == "'":
                quote = None
        elif esc:
            esc = False
            out.append(c)
        elif c == "\\":
            esc = True
        elif quote == '"':
            if c == '"':
                quote = None
            else:
                out.append(c)  # $() and backticks expand inside double quotes
        elif c in "'\"":
            quote = c
        elif c == "#" and blank:
            return line[:i], "".join(out)
        else:
            word_start = c in " \t"
            out.append(c)
    return line, "".join(out)


failures = []


def fail(case, msg):
    failures.append(f"{case}: {msg}")


# Which string fields are free text: a field the reader parses (an enum, a hex number, the
# schema) makes the snapshot fail to load when hostile, and is left alone.
snapshots = sorted(glob.glob(os.path.join(corpus, "*", "snapshot.json")))
if len(snapshots) < 40:
    print(f"only {len(snapshots)} snapshots in the corpus")
    sys.exit(1)
docs = {os.path.basename(os.path.dirname(p)): json.load(open(p)) for p in snapshots}
# Recordings (`watch --record`): the first line is the snapshot the trend rules start from.
recordings = {}
for p in sorted(glob.glob(os.path.join(corpus, "*", "recording.jsonl"))):
    with open(p) as f:
        recordings[os.path.basename(os.path.dirname(p))] = f.read().split("\n", 1)
free, parsed, n = {}, set(), 0
for name, doc in docs.items():
    for p in sorted({p for p, _, _ in walk(doc)}):
        if p in free or p in parsed:
            continue
        n += 1
        path = write(f"probe-{n}", mutate(doc, {p}, lambda v: PAYLOADS[0]))
        if loads(path):
            free[p] = True
        else:
            parsed.add(p)
print(f"{len(free)} free-text string fields made hostile, {len(parsed)} parsed ones left alone")
fields = set(free)

def conf_args(name):
    """A case's own configuration (its expected-hardware profile), as check-scenarios gives it."""
    conf = os.path.join(corpus, name.split("/")[0], "gpudoctor.conf")
    return ["--config", conf] if os.path.exists(conf) else []


# What each snapshot and recording finds as it is: (rule, number of fix lines) tells the variants
# of a rule's fix apart.
sources = [(name, doc, None) for name, doc in docs.items()]
sources += [(name, json.loads(first), rest) for name, (first, rest) in recordings.items()]


def clean_run(source):
    name, doc, rest = source
    rc, out, err = run(write(f"clean-{name}", doc, rest), "--json", *conf_args(name))
    return name, {(f["id"], len(f["fix"])) for f in json.loads(out)["findings"]}


with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
    found = dict(pool.map(clean_run, sources))
clean = {rule for kinds in found.values() for rule, _ in kinds}

# Every payload, replacing and appended, goes into a set of snapshots that between them show
# every variant of every rule's fix twice (where the corpus has it twice): chosen greedily, the
# snapshot that adds most first. The other snapshots get two payloads each, in turn, so that
# every payload meets every snapshot's own evidence somewhere. (Every payload into every
# snapshot was some 9000 runs: too slow under the sanitizers, for no more fix variants.)
need = {}
for kinds in found.values():
    for kind in kinds:
        need[kind] = min(2, need.get(kind, 0) + 1)
full = []
while any(need.values()):
    best = max(sorted(found), key=lambda n: sum(1 for k in found[n] if need.get(k)))
    full.append(best)
    for k in found[best]:
        if need.get(k):
            need[k] -= 1
full = set(full)

# The cases. A case that changes nothing (no free-text field in that snapshot, or in that
# section of it) is left out: it would only check the clean snapshot again.
cases = []
for j, (name, doc, rest) in enumerate(sources):
    mine = {p for p, _, _ in walk(doc)} & fields
    if not mine:
        continue
    turns = range(len(PAYLOADS)) if name in full else [j % len(PAYLOADS), (j + 5) % len(PAYLOADS)]
    for i in turns:
        pay = PAYLOADS[i]
        cases.append((f"{name}/replace-{i + 1}", mutate(doc, mine, lambda v, p=pay: p), rest))
        cases.append((f"{name}/append-{i + 1}", mutate(doc, mine, lambda v, p=pay: v + p), rest))


def check_case(case):
    name, doc, rest = case
    path = write(name.replace("/", "--"), doc, rest)
    rc, out, err = run(path, "--json", *conf_args(name))
    try:
        report = json.loads(out)
    except ValueError:
        # A reader may refuse what it cannot take (a control character, say): clearly, with
        # the file's name and status 3, never by crashing.
        if rc == 3 and path in err:
            return name, [], [], None
        return name, None, None, f"no JSON report (exit {rc}): {err[:300]}"
    # The text report wraps comments: checked where the value is replaced (appended values
    # wrap the same way), to keep the test short.
    trc, text = rc, ""
    if "/append-" not in name:
        trc, text, terr = run(path, *conf_args(name))
    if trc != rc:
        return name, None, None, f"text report exit {trc}, JSON {rc}"
    lines = []
    for f in report["findings"]:
        for line in f["fix"]:
            lines.append((f["id"], line))
    # The text report's fix blocks: "fix: " and the lines under it, the 15-column indent off.
    text_lines, inside = [], False
    for line in text.split("\n"):
        if line.startswith("          fix: "):
            inside = True
            text_lines.append(line[15:])
        elif inside and line.startswith("               "):
            text_lines.append(line[15:])
        else:
            inside = False
    return name, lines, text_lines, None


def check_all(cases):
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        for name, lines, text_lines, problem in pool.map(check_case, cases):
            if problem:
                fail(name, problem)
                continue
            results.append((name, lines, text_lines))


results = []
check_all(cases)

# Hostile everywhere also breaks what ties sections together (a GPU's PCI address in NVML and in
# sysfs, its UUID in the samples), and some rules stop firing: where a rule fired on a snapshot
# as it is but on none of its hostile copies, that snapshot is made hostile one section at a time,
# which keeps them firing, with the payloads taking turns.
fired_in = {}
for name, lines, _ in results:
    fired_in.setdefault(name.split("/")[0], set()).update(rule for rule, _ in lines)
section_cases = []
for name, doc, rest in sources:
    if not {rule for rule, _ in found[name]} - fired_in.get(name, set()):
        continue
    mine = {p for p, _, _ in walk(doc)} & fields
    for k, section in enumerate(sorted({p.split(".")[0].split("[")[0] for p in mine})):
        part = {p for p in mine if p.split(".")[0].split("[")[0] == section}
        r, a = PAYLOADS[k % len(PAYLOADS)], PAYLOADS[(k + 5) % len(PAYLOADS)]
        section_cases.append((f"{name}/{section}-replace", mutate(doc, part, lambda v, p=r: p), rest))
        section_cases.append((f"{name}/{section}-append", mutate(doc, part, lambda v, p=a: v + p), rest))
check_all(section_cases)
cases += section_cases

# Each distinct line is checked once: bash must read it alone as complete, and nothing hostile
# may be left for it to interpret.
seen = {}
fired = set()
quoted_hostile = 0
refused = 0
for name, lines, text_lines in results:
    for rule, line in lines:
        fired.add(rule)
        seen.setdefault(line, (name, rule))
    for line in text_lines:
        seen.setdefault(line, (name, "text report"))
for line, (name, rule) in sorted(seen.items()):
    where = f"{name} [{rule}]"
    if any(ord(c) < 0x20 or 0x7f <= ord(c) < 0xa0 or c in "\u2028\u2029\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
           for c in line):
        fail(where, f"control or format character in a fix line: {line!r}")
        continue
    r = subprocess.run(["bash", "-n"], input=line.encode(), capture_output=True)
    if r.returncode != 0:
        fail(where, f"bash -n refuses {line!r}: {r.stderr.decode().strip()}")
    command, shell = residue(line)
    hostile = MARKER.search(shell)
    if hostile:
        fail(where, f"hostile text {hostile.group(0)} outside quotes in {line!r}")
    elif MARKER.search(command):
        quoted_hostile += 1
    # A block is pasted whole: a reboot or power-off as a command would run before the lines
    # after it were read, and before the node was drained. Such steps are comments.
    if re.match(r"\s*(sudo\s+)?(reboot|shutdown|poweroff|halt|systemctl\s+(reboot|poweroff|halt))\b", command):
        fail(where, f"a reboot or power-off as a command, not a comment: {line!r}")
    if line.startswith("# the ") and "cannot be put into a command safely" in line:
        refused += 1

# The test must have tested something: hostile values inside commands, quoted, and values no
# command can carry, refused.
if quoted_hostile == 0:
    fail("corpus", "no fix command carried a (quoted) hostile value: the test checks nothing")
if refused == 0:
    fail("corpus", "no hostile value was refused as a command argument")

# Raw bytes that are not UTF-8 cannot be JSON: the reader refuses the file, clearly, no crash.
raw = os.path.join(tmp, "raw.json")
with open(raw, "wb") as f:
    f.write(open(snapshots[0], "rb").read().replace(b'"hostname": "', b'"hostname": "\xff\xfe'))
rc, out, err = run(raw, "--json")
if rc != 3 or "decode" not in err:
    fail("raw non-UTF-8", f"exit {rc}, stderr {err[:200]!r}")

print(f"{len(cases)} hostile snapshots ({len(full)} of {len(sources)} with every payload), {len(fired)} rules fired, {len(seen)} distinct fix lines, "
      f"{quoted_hostile} commands with a quoted hostile value, {refused} values refused")
# Every rule that finds something in the corpus as it is must find it made hostile too, or its
# fix lines were not tested.
never = sorted(clean - fired)
if never:
    fail("corpus", "rules that fire on the corpus but never on its hostile copies: " +
         ", ".join(never))
for f in failures[:40]:
    print("FAIL", f)
if len(failures) > 40:
    print(f"... {len(failures) - 40} more")
sys.exit(1 if failures else 0)
PY
