#!/usr/bin/env bash
# check --from on a large nvidia-bug-report.log(.gz): the time to import it (goal: under 100 ms).
# Built from the real report of tests/import/bug-report (duaneya/tool_man, R440, 4 GPUs): its
# nvidia-smi -q section grown to 8 GPUs (the four blocks again, at other bus addresses), its
# kern.log section grown to 40,000 NVRM lines (its own Xid lines again, later stamps), and the
# base64 dumps a real report carries (40,000 lines, left out of the corpus copy) put back as
# filler the importer must skip.
set -euo pipefail
echo "## Importing a large nvidia-bug-report: check --from"
echo
command -v python3 >/dev/null || { echo "(skipped: python3 not installed)"; exit 0; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
zcat "$SRC/tests/import/bug-report/r440-4x2080ti-xids-2019.log.gz" >"$tmp/base.log"
python3 - "$tmp/base.log" "$tmp/big.log" <<'PY'
import re
import sys

text = open(sys.argv[1], encoding="utf-8", errors="replace").read().split("\n")
out = []
i = 0
xids = [ln for ln in text if "NVRM: Xid" in ln and re.search(r"\[\s*\d+\.\d+\]", ln)]
while i < len(text):
    ln = text[i]
    if ln.startswith("Attached GPUs") and ln.rstrip().endswith(": 4"):
        out.append(ln.replace(": 4", ": 8"))
        j = i + 1
        while j < len(text) and text[j].strip() != "/usr/bin/nvidia-smi --query --unit":
            j += 1
        block = text[i + 1:j]
        out += block
        # The same four GPUs again, at bus addresses 0x40 higher (another root complex).
        out += [re.sub(r"(0000:|Bus\s+: 0x)([0-9A-Fa-f]{2})",
                       lambda m: m.group(1) + "%02X" % ((int(m.group(2), 16) + 0x40) & 0xff), b)
                for b in block]
        i = j
        continue
    out.append(ln)
    if ln.strip() == "/var/log/kern.log:":
        for k in range(40000):
            src = xids[k % len(xids)]
            out.append(re.sub(r"\[\s*\d+\.\d+\]", "[%6d.%06d]" % (80000 + k // 1000, k % 1000), src))
    if ln.startswith("[") and "lines of base64 removed" in ln:
        out += ["QkFTRTY0IGZpbGxlciBvZiBhIHJlYWwgYnVnIHJlcG9ydCdzIGR1bXBzCg" * 1] * 20000
    i += 1
open(sys.argv[2], "w").write("\n".join(out))
PY
gzip -k -6 "$tmp/big.log"
export GPUDOCTOR_CONFIG=/dev/null
gpus=$("$GPUDOCTOR" snapshot --from "$tmp/big.log.gz" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(len(d["gpus"]), d["driver"]["klog_events_total"])')
echo "The report: $(($(stat -c %s "$tmp/big.log") / 1000000)) MB of text ($(wc -l <"$tmp/big.log") lines), \
$(($(stat -c %s "$tmp/big.log.gz") / 1000)) kB gzip-compressed; imported: ${gpus% *} GPUs, \
${gpus#* } kernel-log events. Median wall time of 10 runs (the whole command:"
echo "start, import, every rule, the report), and its CPU time (user + system), which a busy"
echo "machine inflates less than the wall time, and peak RSS; 'a 1-line nvidia-smi -L' is the same command on"
echo "the smallest import, what a run costs apart from the import."
echo
echo "| what | wall (ms, median) | CPU (ms, median) | peak RSS (MiB) |"
echo "|---|---|---|---|"
row() {
    local name=$1
    shift
    python3 - "$name" "$@" <<'PY'
import os
import statistics
import subprocess
import sys
import time

name, cmd = sys.argv[1], sys.argv[2:]
walls, cpus = [], []
for i in range(11):
    t = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, _, ru = os.wait4(p.pid, 0)
    if i == 0:
        continue  # the first run warms the page cache
    walls.append((time.monotonic() - t) * 1000)
    cpus.append((ru.ru_utime + ru.ru_stime) * 1000)
print(f"| {name} | {statistics.median(walls):.1f} | {statistics.median(cpus):.1f} | ", end="")
PY
    # Peak RSS from runstat: a child of python inherits python's own high-water mark.
    "$RUNSTAT" -n 1 -w 0 -- "$@" | awk '{for (i = 1; i <= NF; i++) {split($i, kv, "="); v[kv[1]] = kv[2]}}
        END {printf "%.1f |\n", v["rss_kib_max"] / 1024}'
}
echo "GPU 0: Tesla T4 (UUID: GPU-00000000-0000-0000-0000-000000000000)" >"$tmp/one.txt"
row "check --from big.log.gz" "$GPUDOCTOR" check --from "$tmp/big.log.gz"
row "check --from big.log (uncompressed)" "$GPUDOCTOR" check --from "$tmp/big.log"
row "check --json --from big.log.gz" "$GPUDOCTOR" check --json --from "$tmp/big.log.gz"
row "check --from a 1-line nvidia-smi -L" "$GPUDOCTOR" check --from "$tmp/one.txt"
