#!/usr/bin/env python3
"""A synthetic fleet for `gpudoctor fleet`: N copies of one snapshot, each a node of its own
(host name, small natural noise in clocks, temperatures and counters), with known outliers
planted. Writes one file per node into a directory, or every snapshot one after the other on
standard output ('-'), and the planted outliers as JSON (--planted FILE): node -> the figure that
sets it apart (or a list of them; "finding:RULE-ID" when a finding the others lack does).

    fleet-synth.py BASE.json N OUT [--seed S] [--planted FILE] [--plant-every K]

The noise is what healthy nodes of one model show (SM clock at full boost within a few MHz,
temperatures within a couple of degrees, a handful of PCIe replays); the planted faults are the
ones the issue names: clocks, temperature at equal load, PCIe width, a missing GPU, the driver and
its CUDA version, XIDs, the VBIOS, the power limit, PCIe replays, and a finding (memory pressure).
"""
import copy
import json
import random
import sys

# What each planted fault does to a node, and the figure that must find it.
def plant_clock(s, r):
    s["gpus"][3]["clock_sm_mhz"] = 1410
    return "clock_sm_busy_mhz"

def plant_temp(s, r):
    s["gpus"][5]["temp_c"] = 84
    return "temp_busy_c"

def plant_width(s, r):
    s["gpus"][2]["pcie_width"] = 8
    return "pcie_width"

def plant_missing(s, r):
    s["gpus"] = s["gpus"][:7]
    s["nvml"]["device_count"] = 7
    return "gpu_count"

def plant_driver(s, r):
    # an older driver brings its own CUDA version (535 is CUDA 12.2): both figures set it apart
    s["nvml"]["driver_version"] = "535.104.05"
    s["nvml"]["cuda_driver_version"] = 12020
    return ["driver_version", "cuda_version"]

def plant_xid(s, r):
    t = s["time_ms"] - 3600 * 1000
    s["driver"]["events"] = [
        {"kind": "xid", "time_ms": t + k * 60000, "uptime_us": None, "pci": "0000:3b:00",
         "uuid": None, "xid": 79, "gpu_instance": None, "compute_instance": None,
         "caused_by_xid": None, "pid": None, "name": None, "blocked_s": None,
         "rss_bytes": None, "message": "GPU has fallen off the bus."} for k in range(3)]
    s["driver"]["klog_events_total"] = 3
    return "xid_events"

def plant_vbios(s, r):
    s["gpus"][1]["vbios_version"] = "96.00.61.00.01"
    return "vbios_version"

def plant_power(s, r):
    s["gpus"][0]["power_limit_mw"] = 500000
    return "power_limit_w"

def plant_replays(s, r):
    s["gpus"][4]["pcie_replay_count"] = 5000
    return "pcie_replays"

def plant_memory(s, r):
    # no figure of its own: the node is set apart by a finding the others do not have
    s["host"]["mem_available_bytes"] = 1000000000
    s["host"]["psi_mem_full_avg10_pct"] = 30
    s["host"]["swap_in_pages_per_s"] = 5000
    return "finding:host.memory-pressure"

PLANTS = [plant_clock, plant_temp, plant_width, plant_missing, plant_driver, plant_xid,
          plant_vbios, plant_power, plant_replays, plant_memory]


def node(base, i, rng):
    s = copy.deepcopy(base)
    s["hostname"] = "node%04d" % i
    s["time_ms"] = base["time_ms"] + i
    s["samples"] = []
    for g in s["gpus"]:
        if g.get("handle_status"):
            continue
        g["clock_sm_mhz"] = int(round(rng.gauss(1980, 8)))
        g["temp_c"] = int(round(rng.gauss(62, 1.5)))
        g["pcie_replay_count"] = rng.randint(0, 20)
        g["processes"] = []
        g["util_gpu_pct"] = 100
        # no process listed: the memory is free (else it would be "unaccounted")
        g["mem_used_bytes"] = 0
        g["mem_free_bytes"] = g["mem_total_bytes"] - (g.get("mem_reserved_bytes") or 0)
    s["driver"]["events"] = []
    s["driver"]["klog_events_total"] = 0
    return s


def main(argv):
    args = [a for a in argv[1:]]
    seed, planted_path, every = 1, None, 100
    for flag in ("--seed", "--planted", "--plant-every"):
        if flag in args:
            k = args.index(flag)
            val = args[k + 1]
            del args[k:k + 2]
            if flag == "--seed":
                seed = int(val)
            elif flag == "--planted":
                planted_path = val
            else:
                every = int(val)
    base_path, n, out = args[0], int(args[1]), args[2]
    base = json.load(open(base_path))
    rng = random.Random(seed)
    planted = {}
    stream = sys.stdout if out == "-" else None
    for i in range(n):
        s = node(base, i, rng)
        # one fault every `every` nodes, the kinds in turn
        if i % every == every // 2 and len(planted) < n:
            fault = PLANTS[(i // every) % len(PLANTS)]
            planted[s["hostname"]] = fault(s, rng)
        text = json.dumps(s, separators=(",", ":"))
        if stream:
            stream.write(text + "\n")
        else:
            with open("%s/%s.json" % (out, s["hostname"]), "w") as f:
                f.write(text)
    if planted_path:
        json.dump(planted, open(planted_path, "w"), indent=1, sort_keys=True)


if __name__ == "__main__":
    main(sys.argv)
