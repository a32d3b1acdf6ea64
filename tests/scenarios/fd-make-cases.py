#!/usr/bin/env python3
"""Writes the fd-* snapshot cases: healthy-8gpu-busy's 8 x H100 training (one process per GPU,
pids 48211-48218) with the open-files limits and counts the processes collector reads
(processes[].open_files, open_files_limit; host.open_files_limit, gpudoctor's own), an error
given with --error where the story has one, and each case's `expect`. Run it from anywhere after
changing a story; commit what it writes."""
import copy
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
BASE = json.load(open(os.path.join(HERE, "healthy-8gpu-busy", "snapshot.json")))
TOO_MANY = ("RuntimeError: Too many open files. Communication with the workers is no longer "
            "possible. Please increase the limit using `ulimit -n` in the shell or change the "
            "sharing strategy by calling "
            "`torch.multiprocessing.set_sharing_strategy('file_system')` at the beginning of "
            "your code")
ANCDATA = "RuntimeError: received 0 items of ancdata"


def reported(*texts):
    return {"errors": [{"text": t, "error": None, "api": None, "number": None} for t in texts]}


def files(s, limit, counts=None):
    for p in s["processes"]["processes"]:
        if p["gpus"]:
            p["open_files_limit"] = limit
            p["open_files"] = (counts or {}).get(p["pid"], 180)


CASES = {
    "fd-error-low-limit": (
        "the DataLoader lost its workers ('Too many open files'); the training processes may "
        "open 1024 files, the traditional soft limit",
        lambda s: (files(s, 1024), s.__setitem__("reported", reported(TOO_MANY))),
        ["exit 2", "+ proc.fd-limit object=open files", "- reported.error"]),
    "fd-error-high-limit": (
        "'received 0 items of ancdata' where gpudoctor's own limit (the job's shell's) is "
        "1048576: reached anyway, a warning naming the sharing strategy",
        lambda s: (s["host"].__setitem__("open_files_limit", 1048576),
                   s.__setitem__("reported", reported(ANCDATA))),
        ["exit 1", "+ proc.fd-limit object=open files", "- reported.error"]),
    "fd-near-limit": (
        "no error yet: GPU process 48213 has 1000 of its 1024 descriptors open, its peers 180",
        lambda s: files(s, 1024, {48213: 1000}),
        ["exit 1", "+ proc.fd-limit pid=48213", "- proc.fd-limit pid=48211"]),
    "fd-healthy": (
        "processes with 180 of 1048576 descriptors open and no error: nothing to say",
        lambda s: files(s, 1048576),
        ["exit 0", "- proc.fd-limit"]),
}

for name, (story, change, expect) in CASES.items():
    s = copy.deepcopy(BASE)
    change(s)
    d = os.path.join(HERE, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "snapshot.json"), "w") as f:
        json.dump(s, f, indent=1)
        f.write("\n")
    with open(os.path.join(d, "expect"), "w") as f:
        f.write("# %s (written by fd-make-cases.py)\n" % story)
        f.write("\n".join(expect) + "\n")
