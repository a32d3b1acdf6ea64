#!/usr/bin/env python3
"""Writes the bench-* snapshot cases: healthy-idle-gen1's 8 x H100 snapshot (idle, so bench
would run there) with a `bench` section as `gpudoctor bench` fills it, one story per case, and
each case's `expect`. Run it from anywhere after changing a story; commit what it writes.

Healthy figures (H100 SXM, data/gpu-specs.tsv: 3,350 GB/s, 67 TFLOPS FP32): pinned copies
50.4 GB/s on Gen5 x16 (the expectation), triad 3,000 GB/s, FMA 50 TFLOPS, the simultaneous load
at 50 TFLOPS throughout with the SM clock at 1,980 MHz, 62-68 degC, ~650 W and no clock event
reason, the same checksum on every GPU and the host, NVLink pairs at 350 GB/s."""
import copy
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
BASE = json.load(open(os.path.join(HERE, "healthy-idle-gen1", "snapshot.json")))
SUM = "0x11beef97207d1421"
RULES = ["bench.failed", "bench.checksum-mismatch", "bench.host-copy-slow",
         "bench.mem-bandwidth-low", "bench.compute-low", "bench.p2p-slow",
         "bench.throttle-under-load", "bench.behind-under-load", "bench.regression"]


def gpu(i, g):
    bus = g["pci_bus_id"].replace("00000000:", "0000:")
    return {
        "index": i, "name": g["name"], "pci_bus_id": bus, "error": None,
        "h2d_pinned_bytes_per_s": 50.4e9, "d2h_pinned_bytes_per_s": 50.4e9,
        "h2d_pageable_bytes_per_s": 25.2e9, "d2h_pageable_bytes_per_s": 25.2e9,
        "bidir_bytes_per_s": 100.8e9, "host_numa_node": 0 if i < 4 else 1,
        "gpu_numa_node": 0 if i < 4 else 1, "dtod_bytes_per_s": 3.0e12,
        "triad_bytes_per_s": 3.0e12, "fma_flops": 50e12, "compute_method": "cublaslt",
        # cuBLASLt's GEMMs at about 70 % of the H100 SXM's dense Tensor Core peaks (gpu-specs.tsv)
        "gemm_tf32_flops": 346e12, "gemm_fp16_flops": 693e12, "gemm_bf16_flops": 690e12,
        "gemm_fp8_flops": 1385e12, "gemm_n": 8192, "gemm_note": None,
        "tf32_expected_flops": 494.5e12, "fp16_expected_flops": 989.5e12,
        "bf16_expected_flops": 989.5e12, "fp8_expected_flops": 1979e12,
        "sustained_first_flops": 50e12, "sustained_last_flops": 50e12, "sustained_s": 30.0,
        "sustained_flops": 50e12, "load_samples": 190,
        "load_clock_sm_min_mhz": 1980, "load_clock_sm_max_mhz": 1980,
        "load_clock_mem_min_mhz": 2619, "load_clock_mem_max_mhz": 2619,
        "load_temp_max_c": 62 + i % 7, "load_power_max_mw": 668000,
        "load_power_mean_mw": 651000 + 1000 * i, "load_clocks_event_reasons": "0x0000000000000000",
        "checksum": SUM, "checksum_ok": True, "pcie_gen": 5, "pcie_width": 16,
        "pcie_expected_bytes_per_s": 50.4e9, "mem_expected_bytes_per_s": 3.35e12,
        "fp32_expected_flops": 67e12, "baseline_h2d_bytes_per_s": None,
        "baseline_triad_bytes_per_s": None, "baseline_fma_flops": None,
    }


def bench():
    gpus = [gpu(i, g) for i, g in enumerate(BASE["gpus"])]
    pairs = [{"src": a, "dst": b, "bytes_per_s": 350e9, "latency_us": 2.1, "peer_access": True}
             for a in range(len(gpus)) for b in range(len(gpus)) if a != b]
    return {"state": "ok", "detail": None, "hung_step": None, "mode": "full",
            "library": "libcuda.so.1", "cublaslt_library": "libcublasLt.so.12",
            "cublaslt_version": 120405, "driver_version": 12040, "elapsed_s": 64.2,
            "measured_s": 262.5, "load_elapsed_s": 30.4, "baseline": None, "load_note": None,
            "gpus": gpus, "pairs": pairs}


def case(name, comment, exit_status, plus, change):
    s = copy.deepcopy(BASE)
    b = bench()
    change(b)
    s["bench"] = b
    d = os.path.join(HERE, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "snapshot.json"), "w") as f:
        json.dump(s, f, indent=2)
        f.write("\n")
    lines = ["# " + comment, "exit %d" % exit_status]
    lines += ["+ " + p for p in plus]
    found = {p.split()[0] for p in plus}
    lines += ["- " + r for r in RULES if r not in found]
    with open(os.path.join(d, "expect"), "w") as f:
        f.write("\n".join(lines) + "\n")


def nothing(b):
    pass


def thermal(b):
    g = b["gpus"][5]
    g.update(sustained_last_flops=35e12, sustained_flops=43e12, load_clock_sm_min_mhz=1290,
             load_temp_max_c=91, load_clocks_event_reasons="0x0000000000000060")
    # at its power limit the whole load long, at full rate: how a loaded GPU runs
    b["gpus"][3]["load_clocks_event_reasons"] = "0x0000000000000004"


def behind(b):
    # GPU 2 kept up alone, fell behind once every GPU ran: its neighbours' heat and power
    b["gpus"][2].update(sustained_first_flops=31e12, sustained_last_flops=30e12,
                        sustained_flops=30.5e12, load_clock_sm_min_mhz=1215,
                        load_clock_sm_max_mhz=1260, load_temp_max_c=79,
                        load_power_mean_mw=432000, load_power_max_mw=451000,
                        load_clocks_event_reasons="0x0000000000000004")
    # GPU 6 is slow alone too: compute-low says so, not behind-under-load
    b["gpus"][6].update(fma_flops=30e12, sustained_first_flops=30e12, sustained_last_flops=30e12,
                        sustained_flops=30e12)


def corrupt(b):
    b["gpus"][4].update(checksum="0x11beef97207d14a1", checksum_ok=False)


def host_differs(b):
    for g in b["gpus"]:
        g.update(checksum="0x5a5a00001111beef", checksum_ok=False)


def links(b):
    b["gpus"][1].update(h2d_pinned_bytes_per_s=21.0e9, d2h_pinned_bytes_per_s=22.5e9,
                        host_numa_node=1, gpu_numa_node=0)
    b["gpus"][7].update(triad_bytes_per_s=1.9e12, dtod_bytes_per_s=1.95e12)
    for p in b["pairs"]:
        if {p["src"], p["dst"]} == {3, 5}:
            p.update(bytes_per_s=24e9, latency_us=9.8, peer_access=False)


def timeout(b):
    b.update(state="timeout", hung_step="sustained load on GPUs 0,1,2,3,4,5,6,7 at once (30.0 s)",
             detail="the CUDA worker did not finish within 720 s", gpus=[], pairs=[],
             load_elapsed_s=None)


def gpu_error(b):
    g = b["gpus"][2]
    for k in list(g):
        if k not in ("index", "name", "pci_bus_id", "error", "host_numa_node", "gpu_numa_node",
                     "pcie_gen", "pcie_width", "pcie_expected_bytes_per_s",
                     "mem_expected_bytes_per_s", "fp32_expected_flops") and \
                not k.startswith("baseline_"):
            g[k] = None
    g["error"] = "cuLaunchKernel: CUDA_ERROR_ECC_UNCORRECTABLE"
    b["pairs"] = [p for p in b["pairs"] if 2 not in (p["src"], p["dst"])]


def regression(b):
    b["baseline"] = "/var/lib/gpudoctor/bench-baseline.json"
    for g in b["gpus"]:
        g.update(baseline_h2d_bytes_per_s=50.4e9, baseline_triad_bytes_per_s=3.0e12,
                 baseline_fma_flops=50e12)
    # still above the model's shares and its siblings' 80 %, below its own past
    b["gpus"][0].update(triad_bytes_per_s=2.45e12, fma_flops=41e12, sustained_flops=41e12,
                        sustained_first_flops=41e12, sustained_last_flops=41e12)


case("bench-healthy-8xh100", "bench on 8 x H100: every figure as expected, no bench finding",
     0, [], nothing)
case("bench-throttle-thermal",
     "bench: GPU 5 heats to 91 degC under the load and slows to 70 %, sw and hw thermal seen; "
     "GPU 3 at its power cap at full rate is no finding", 1,
     ["bench.throttle-under-load gpu=5"], thermal)
case("bench-behind-under-load",
     "bench: GPU 2 keeps up alone and falls to 61 % of its siblings when all run at once; GPU 6 "
     "is slow alone too (compute-low)", 1,
     ["bench.behind-under-load gpu=2", "bench.compute-low gpu=6"], behind)
case("bench-checksum-mismatch",
     "bench: GPU 4's triad checksum differs from the host's and the other seven GPUs'", 2,
     ["bench.checksum-mismatch gpu=4"], corrupt)
case("bench-checksum-host-differs",
     "bench: all eight GPUs agree on a checksum the host computed otherwise: one warning", 1,
     ["bench.checksum-mismatch"], host_differs)
case("bench-copy-mem-p2p",
     "bench: GPU 1 copies from a remote NUMA node at 42 %, GPU 7's memory at 57 % of the model, "
     "GPUs 3 and 5 staged through the host", 1,
     ["bench.host-copy-slow gpu=1", "bench.mem-bandwidth-low gpu=7", "bench.p2p-slow gpu=3",
      "bench.p2p-slow gpu=5"], links)
case("bench-timeout", "bench: the CUDA worker hung in the sustained load: the deadline ended it",
     2, ["bench.failed"], timeout)
case("bench-gpu-error", "bench: GPU 2's kernel launch failed with an uncorrectable ECC error", 2,
     ["bench.failed gpu=2"], gpu_error)
case("bench-regression",
     "bench: GPU 0's memory and compute at 82 % of this node's saved baseline", 1,
     ["bench.regression gpu=0"], regression)
