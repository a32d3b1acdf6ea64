#!/usr/bin/env python3
"""Turns an incident's case.json (what the thread showed, in the units it showed it) into the
gpudoctor.snapshot/1 document the corpus runs: tests/incidents/README.md, "How a case is built".

  make-snapshot.py DIR...          write DIR/snapshot.json from DIR/case.json
  make-snapshot.py --check DIR...  exit 1 when a snapshot.json differs from what case.json gives

case.json holds only what the posted evidence shows. Everything else is left out, and a value
left out is unknown to gpudoctor (null, or its collector not run): nothing here fills a gap.
The conveniences, applied at any depth:
  - a key ending in _mib, _gib or _kib becomes the _bytes key (MiB as nvidia-smi prints it,
    kB as the kernel's OOM line prints it); _w becomes _mw (watts as nvidia-smi prints them)
  - in gpus[], the value "N/A" becomes null with nvml_status NOT_SUPPORTED (nvidia-smi's N/A)
  - "time": "2021-04-27T08:00:00Z" becomes time_ms (top level, driver events, processes'
    "start_time" becomes start_time_ms)
  - collectors: {"nvml": "ok"} or {"nvml": "failed: the detail"}; collectors left out were not run
  - the sections are the snapshot's own (SECTIONS below, ib and fabric among them)
  - "errors": ["text", ...]: the error texts the thread posted, as `--error TEXT` would give
    them; they become the "reported" section, which gpudoctor recognises again when it reads it
  - keys starting with "_" are comments and are dropped
"""
import json
import sys
from datetime import datetime, timezone
from pathlib import Path

SCHEMA = "gpudoctor.snapshot/1"
UNIT_KEYS = (("_mib", "_bytes", 1 << 20), ("_gib", "_bytes", 1 << 30), ("_kib", "_bytes", 1 << 10),
             ("_w", "_mw", 1000))
TIME_KEYS = {"time": "time_ms", "start_time": "start_time_ms"}
# The snapshot's sections a case may hold, as the snapshot writes them (docs/snapshot.md).
SECTIONS = ("nvml", "gpus", "processes", "host", "pcie", "driver", "stack", "ib", "fabric",
            "samples")
COLLECTORS = ("nvml", "processes", "host", "pcie", "driver", "kernel_log", "stack", "ib", "fabric")
# Keys the snapshot reader requires in every record: fields without a validity slot, where null
# means "none" (no driver bound, no container, no banner). The reader cannot say "unknown" for
# them, so a case that does not know them gets null, which reads as "none": a known limitation
# of the reader (README.md, "What the reader cannot say").
REQUIRED_NULL = {
    "driver": ("module_version", "module_flavor", "module_banner", "sysfs_version",
               "klog_source"),
    "driver.events[]": ("pci", "uuid", "name", "message"),
    "pcie.gpus[]": ("address", "vendor_id", "device_id", "class_code", "driver", "switch_address"),
    "processes.processes[]": ("cuda_visible_devices", "container_runtime", "container_id",
                              "pod_uid", "slurm_job_id"),
    "processes.processes[].gpus[]": ("holds_device", "nvml_listed", "nvml_type_mask"),
    "ib": ("peermem_module",),
    "ib.ports[]": ("pci_address", "hca_type", "fw_ver", "node_desc", "netdev"),
    "fabric": ("fm_package", "fm_package_version", "log_path"),
}


class CaseError(Exception):
    pass


def unix_ms(text, where):
    try:
        t = datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    except (TypeError, ValueError):
        raise CaseError(f"{where}: expected a time such as 2021-04-27T08:00:00Z, got {text!r}")
    return int(t.timestamp() * 1000)


def convert(value, where, in_gpu=False):
    """Applies the conveniences to value (an object, a list or a scalar)."""
    if isinstance(value, list):
        return [convert(v, f"{where}[{i}]", in_gpu) for i, v in enumerate(value)]
    if not isinstance(value, dict):
        return value
    out, status = {}, {}
    for key, v in value.items():
        path = f"{where}.{key}" if where else key
        if key.startswith("_"):
            continue
        if key in TIME_KEYS and isinstance(v, str):
            out[TIME_KEYS[key]] = unix_ms(v, path)
            continue
        for suffix, new_suffix, factor in UNIT_KEYS:
            if key.endswith(suffix) and (isinstance(v, (int, float)) or v is None or v == "N/A"):
                key = key[: -len(suffix)] + new_suffix
                if isinstance(v, (int, float)):
                    v = int(round(v * factor))
                break
        if in_gpu and v == "N/A":
            out[key] = None
            status[key] = "NOT_SUPPORTED"
            continue
        child_in_gpu = in_gpu and key not in ("processes", "process_utilization")
        out[key] = convert(v, path, child_in_gpu)
    if status:
        merged = dict(out.get("nvml_status") or {})
        merged.update(status)
        out["nvml_status"] = merged
    return out


# Lists the reader takes as known and empty when their key is absent: an unknown one must be
# written as null. (gpus[].processes: absent means "NVML listed no process", which the evidence
# rarely shows.)
NULL_WHEN_ABSENT = {
    "gpus[]": ("processes", "process_utilization"),
}


def fill_required(value, where):
    """Adds the REQUIRED_NULL keys a record lacks, as null."""
    if isinstance(value, list):
        for v in value:
            fill_required(v, where + "[]")
        return
    if not isinstance(value, dict):
        return
    for key in REQUIRED_NULL.get(where, ()):
        value.setdefault(key, None)
    if "handle_status" not in value:
        for key in NULL_WHEN_ABSENT.get(where, ()):
            value.setdefault(key, None)
    for key, v in value.items():
        fill_required(v, f"{where}.{key}")


def collectors(spec):
    out = {}
    for name, v in spec.items():
        if name not in COLLECTORS:
            raise CaseError(f"collectors.{name}: not a collector ({', '.join(COLLECTORS)})")
        if isinstance(v, str):
            state, _, detail = v.partition(":")
            v = {"state": state.strip(), "detail": detail.strip() or None}
        v = {k: x for k, x in v.items() if not k.startswith("_")}
        v.setdefault("detail", None)
        v.setdefault("notes", [])
        v.setdefault("elapsed_us", 0)
        out[name] = v
    return out


def build(case):
    if not isinstance(case, dict):
        raise CaseError("case.json: expected an object")
    if "time" not in case:
        raise CaseError("case.json: \"time\" (when the evidence was taken) is required")
    snap = {"schema": SCHEMA, "gpudoctor_version": "incidents-corpus"}
    snap["hostname"] = case.get("hostname")
    snap["time_ms"] = unix_ms(case["time"], "time")
    snap["time_utc"] = case["time"]
    snap["window_ms"] = case.get("window_ms", 0)
    snap["collectors"] = collectors(case.get("collectors", {}))
    for key in SECTIONS:
        if key in case:
            snap[key] = convert(case[key], key, in_gpu=key == "gpus")
            fill_required(snap[key], key)
    if "errors" in case:
        errors = case["errors"]
        if not isinstance(errors, list) or not all(isinstance(t, str) and t for t in errors):
            raise CaseError("case.json: \"errors\" must be a list of error texts")
        snap["reported"] = {"errors": [{"text": t, "error": None, "api": None, "number": None}
                                       for t in errors]}
    unknown = set(case) - {"time", "hostname", "window_ms", "collectors", "errors", *SECTIONS}
    unknown = {k for k in unknown if not k.startswith("_")}
    if unknown:
        raise CaseError(f"case.json: unknown key(s) {', '.join(sorted(unknown))}")
    return json.dumps(snap, indent=2, ensure_ascii=False) + "\n"


def main(argv):
    check = argv[:1] == ["--check"]
    dirs = argv[1:] if check else argv
    if not dirs:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        print("usage: make-snapshot.py [--check] DIR...", file=sys.stderr)
        return 64
    status = 0
    for d in map(Path, dirs):
        try:
            text = build(json.loads((d / "case.json").read_text()))
        except (OSError, ValueError, CaseError) as e:
            print(f"{d}: {e}", file=sys.stderr)
            status = 1
            continue
        target = d / "snapshot.json"
        if check:
            if not target.exists() or target.read_text() != text:
                print(f"{target}: differs from what case.json gives (run make-snapshot.py {d})",
                      file=sys.stderr)
                status = 1
        else:
            target.write_text(text)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
