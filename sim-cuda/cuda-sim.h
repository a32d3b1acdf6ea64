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
};

/* Reads the scenario at path: the NVML part for the devices, then "cuda". NULL with *cause. */
struct csim_scenario *csim_scenario_load(const char *path, char **cause);
void csim_scenario_free(struct csim_scenario *s);

/* The injected rule for fn on device dev (-1: no device), the device's before the scenario's. */
const struct csim_rule *csim_rule(const struct csim_scenario *s, int dev, const char *fn);

/* The usable host-link rate of PCIe generation gen, width lanes (bytes/s, one direction):
 * the raw rate times the encoding, times efficiency. 0 for an unknown generation. */
double csim_pcie_bps(uint32_t gen, uint32_t width, double efficiency);

#endif
