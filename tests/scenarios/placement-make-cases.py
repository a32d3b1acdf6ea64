#!/usr/bin/env python3
"""Writes the NUMA placement and NCCL snapshot cases (issue 12) from healthy-8gpu-ib: the same
8 x H100 server with InfiniBand, given two NUMA nodes (GPUs 0-3 on node 0, 4-7 on node 1, the
CPUs of each node as sysfs lists them), each torchrun rank's Cpus_allowed_list and the NCCL
settings of its environment. Run it from anywhere; commit what it writes.

  healthy-8gpu-placement  every rank bound to its GPU's node, NCCL_DEBUG and NCCL_SOCKET_IFNAME
                          set, no fast path off: silent
  numa-remote             ranks 4-7 bound to node 0's CPUs, their GPUs on node 1
  nccl-disabled           every rank with NCCL_P2P_DISABLE=1 and NCCL_IB_DISABLE=1
  nccl-not-collected      the environment of the ranks not readable: nothing found, not checked
"""
import copy
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
NODE_CPUS = ["0-47,96-143", "48-95,144-191"]


def base():
    with open(os.path.join(HERE, "healthy-8gpu-ib", "snapshot.json")) as f:
        s = json.load(f)
    s["pcie"]["numa_nodes"] = 2
    for g in s["pcie"]["gpus"]:
        g["numa_cpus"] = NODE_CPUS[g["numa_node"]]
    for p in s["processes"]["processes"]:
        p["cpus_allowed"] = "0-191"
        p["nccl"] = {}
    return s


def ranks(s):
    return [p for p in s["processes"]["processes"] if p["gpus"]]


def write(name, s, expect):
    d = os.path.join(HERE, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "snapshot.json"), "w") as f:
        json.dump(s, f, indent=2)
        f.write("\n")
    with open(os.path.join(d, "expect"), "w") as f:
        f.write("\n".join(expect) + "\n")


def main():
    s = base()
    for p in ranks(s):
        gpu = p["gpus"][0]["gpu_index"]
        p["cpus_allowed"] = NODE_CPUS[0 if gpu < 4 else 1]
        p["nccl"] = {"NCCL_DEBUG": "WARN", "NCCL_SOCKET_IFNAME": "ibp12s0", "NCCL_P2P_DISABLE": "0"}
    write("healthy-8gpu-placement", s, [
        "# 8 x H100 on two NUMA nodes, every rank bound to its GPU's node, NCCL fast paths on",
        "exit 0",
        "- proc.numa-remote",
        "- proc.nccl-disabled",
        "+ clock.power-cap gpu=3",
    ])

    s = base()
    for p in ranks(s):
        p["cpus_allowed"] = NODE_CPUS[0]
    pids = {p["gpus"][0]["gpu_index"]: p["pid"] for p in ranks(s)}
    write("numa-remote", s, [
        "# every rank bound to node 0's CPUs (numactl --cpunodebind=0 on the launcher): ranks 4-7 "
        "reach their GPUs on node 1 across the socket link",
        "exit 1",
        "+ proc.numa-remote gpu=4 pid=%d" % pids[4],
        "+ proc.numa-remote gpu=7 pid=%d" % pids[7],
        "- proc.numa-remote gpu=0",
        "- proc.numa-remote gpu=3",
        "- proc.nccl-disabled",
    ])

    s = base()
    for p in ranks(s):
        p["nccl"] = {"NCCL_P2P_DISABLE": "1", "NCCL_IB_DISABLE": "1", "NCCL_DEBUG": "INFO"}
    write("nccl-disabled", s, [
        "# an 8-rank torchrun job left with NCCL_P2P_DISABLE=1 and NCCL_IB_DISABLE=1 from debugging",
        "exit 1",
        "+ proc.nccl-disabled gpu=0 pid=%d" % pids[0],
        "- proc.nccl-disabled pid=%d" % pids[1],
        "- proc.numa-remote",
    ])

    s = base()
    for p in ranks(s):
        p["nccl"] = None
    write("nccl-not-collected", s, [
        "# the ranks' environments could not be read (another user, not root): not checked, "
        "never reported as unset",
        "exit 0",
        "- proc.nccl-disabled",
        "- proc.numa-remote",
    ])


if __name__ == "__main__":
    main()
