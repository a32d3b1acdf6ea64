/*
 * The CUDA driver simulator: a libcuda.so.1 driven by the same scenario file as the NVML
 * simulator (NVML_SIM_SCENARIO). The NVML part of the scenario (sim/scenario.c) gives the
 * devices: names, memory, PCI addresses, compute capabilities, PCIe generation and width; the
 * scenario's "cuda" object (docs/simulator.md, "The CUDA simulator") gives what only a
 * measurement shows: bandwidths, compute rate, throttling, slow peer pairs, corrupt results,
 * injected CUresults and hangs.
 *   scenario.c  the "cuda" object and the figures each device derives from both parts
 *   api.c       the exported cu* functions
 * Work is done for real on host memory (copies copy, kernels compute), but time is simulated:
 * each device has engines whose busy time advances by bytes / rate, and events read that clock,
 * so a bench that would take minutes on hardware runs in milliseconds.
 */
#ifndef GPUDOCTOR_CUDA_SIM_H
#define GPUDOCTOR_CUDA_SIM_H

#include "cuda/cuda-abi.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CUDA_SIM_API __attribute__((visibility("default")))

/* What a scenario injects into one cu* function: an error, or a call that never returns. */
struct csim_rule {
    char *fn;
    CUresult error; /* 0: none */
    bool hang;
};

struct csim_inject {
    struct csim_rule *rules;
    size_t n;
};

/* The GEMM precisions of the fake cuBLASLt (sim-cuda/cublaslt/), in bench's order. */
enum { CSIM_TF32, CSIM_FP16, CSIM_BF16, CSIM_FP8, CSIM_PRECS };

/* One device, with the figures its operations take time by (bytes or FLOP per second). */
struct csim_dev {
    char *name;
    char pci_bus_id[32]; /* "0000:18:00.0", as cuDeviceGetPCIBusId writes it */
    int pci_domain, pci_bus, pci_device;
    int cc_major, cc_minor;
    uint64_t mem_total_bytes, mem_used_bytes; /* used by others (NVML's mem_used_bytes) */
    int sm_count;
    double h2d_pinned_bps, d2h_pinned_bps;    /* host copies from pinned memory */
    double pageable_factor;                   /* pageable copies run at this share of pinned */
    double mem_bps;                           /* device memory bandwidth (read + write bytes) */
    double fma_flops;                         /* FP32 FMA rate (2 FLOP per FMA) */
    double throttle_after_s, throttle_factor; /* after that much simulated busy time */
    bool corrupt;                             /* the triad's results come out wrong here */
    struct csim_inject inject;
    double gemm_flops[CSIM_PRECS]; /* the fake cuBLASLt's GEMM rates; 0: none */
    struct csim_inject cublaslt;   /* cublasStatus_t errors and hangs, by function */
};

/* A pair of devices whose peer copies run at their own rate (both directions). */
struct csim_pair {
    int a, b;
    double bps, latency_s;
    bool no_access; /* cuDeviceCanAccessPeer says 0 */
};

struct csim_scenario {
    int driver_version;            /* cuDriverGetVersion */
    CUresult init_rc;              /* what cuInit returns */
    uint64_t memory_limit_bytes;   /* host memory all allocations together may take */
    double p2p_bps, p2p_latency_s; /* pairs not listed */
    struct csim_dev *devs;
    size_t n_devs;
    struct csim_pair *pairs;
    size_t n_pairs;
    struct csim_inject inject;
    /* Work starts no earlier than the wall clock (seconds since cuInit) and a synchronising call
     * returns once the wall clock has reached the end of what it waits for, as on a GPU: a
     * sustained load then lasts its duration, so that NVML can be sampled while it runs. */
    bool real_time;
    struct csim_inject cublaslt; /* for every device */
};

/* Reads the scenario at path: the NVML part for the devices, then "cuda". NULL with *cause. */
struct csim_scenario *csim_scenario_load(const char *path, char **cause);
void csim_scenario_free(struct csim_scenario *s);

/* The injected rule for fn on device dev (-1: no device), the device's before the scenario's. */
const struct csim_rule *csim_rule(const struct csim_scenario *s, int dev, const char *fn);

/* The usable host-link rate of PCIe generation gen, width lanes (bytes/s, one direction):
 * the raw rate times the encoding, times efficiency. 0 for an unknown generation. */
double csim_pcie_bps(uint32_t gen, uint32_t width, double efficiency);

/* The injected cublasStatus_t rule for fn on device dev, the device's before the scenario's. */
const struct csim_rule *csim_cublaslt_rule(const struct csim_scenario *s, int dev, const char *fn);

/*
 * What the fake libcublasLt (sim-cuda/cublaslt/) calls in this library, exported beside the cu*
 * functions (exports.map). Both act on the calling thread's current context.
 *   gpudoctor_csim_cublaslt_enter: -1 when the simulator is not initialised (no cuInit) or no
 *     context is current, else the cublasStatus_t the scenario injects into fn (0: none); a
 *     function the scenario hangs never returns.
 *   gpudoctor_csim_gemm_rate: the current device's rate for precision prec (FLOP/s), 0 when it
 *     has none (the scenario's 0, or FP8 below compute capability 8.9, TF32 and BF16 below 8.0).
 *   gpudoctor_csim_gemm: queues an n x n x n GEMM on stream hs (NULL: the context's) after
 *     checking that a, b and d are allocations of the current device holding the bytes given;
 *     its time is 2 n^3 / rate, slowed by throttling like the FMA kernel. A CUresult.
 */
CUDA_SIM_API int gpudoctor_csim_cublaslt_enter(const char *fn);
CUDA_SIM_API double gpudoctor_csim_gemm_rate(int prec);
CUDA_SIM_API int gpudoctor_csim_gemm(CUstream hs, int prec, uint64_t n, CUdeviceptr a,
                                     size_t a_bytes, CUdeviceptr b, size_t b_bytes, CUdeviceptr d,
                                     size_t d_bytes);

#endif
