/*
 * The bench section of the snapshot: what `gpudoctor bench` measured on each GPU and pair, next
 * to what this GPU model and link should do (data/gpu-specs.tsv, the negotiated PCIe link) and
 * this node's saved baseline. Measurements are evidence like any other: bench.* rules judge
 * them (docs/bench.md). A figure nobody measured is invalid (null in JSON), never 0.
 */
#ifndef GPUDOCTOR_SNAP_BENCH_H
#define GPUDOCTOR_SNAP_BENCH_H

#include "snapshot/jfield.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Validity bits of struct bench_gpu: one per figure (and the ones that go with it). */
enum bench_gpu_slot {
    BG_H2D_PINNED,
    BG_D2H_PINNED,
    BG_H2D_PAGEABLE,
    BG_D2H_PAGEABLE,
    BG_BIDIR,
    BG_HOST_NUMA,
    BG_GPU_NUMA,
    BG_DTOD,
    BG_TRIAD,
    BG_FMA,
    BG_SUSTAINED,
    BG_CHECKSUM,
    BG_PCIE_EXPECTED,
    BG_MEM_EXPECTED,
    BG_FP32_EXPECTED,
    BG_BASE_H2D,
    BG_BASE_TRIAD,
    BG_BASE_FMA,
    BG_PCIE_LINK,
    BG_LOAD_SAMPLES, /* NVML was sampled during the load (load_samples readings) */
    BG_LOAD_CLOCK_SM,
    BG_LOAD_CLOCK_MEM,
    BG_LOAD_TEMP,
    BG_LOAD_POWER,
    BG_LOAD_REASONS,
    BG_GEMM,                          /* + enum bench_prec: gemm_flops[p] */
    BG_GEMM_EXPECTED = BG_GEMM + 4,   /* + enum bench_prec: tensor_expected_flops[p] */
    BG_GEMM_N = BG_GEMM_EXPECTED + 4, /* gemm_n */
};

/* The GEMM precisions, in the order bench measures them (docs/bench.md). */
enum bench_prec { BP_TF32, BP_FP16, BP_BF16, BP_FP8, BP_N };

struct bench_gpu {
    uint32_t index; /* CUDA ordinal (the bench orders devices by PCI address, as NVML does) */
    char *name, *pci_bus_id;
    char *error; /* the CUDA call that failed on this GPU and its CUresult; NULL: none */
    double h2d_pinned_bytes_per_s, d2h_pinned_bytes_per_s;
    double h2d_pageable_bytes_per_s, d2h_pageable_bytes_per_s;
    double bidir_bytes_per_s; /* both directions at once, the sum */
    int32_t host_numa_node, gpu_numa_node;
    double dtod_bytes_per_s, triad_bytes_per_s;         /* bytes read and written per second */
    double fma_flops;                                   /* FP32, 2 FLOP per FMA */
    char *compute_method;                               /* "cublaslt" or "fma-kernel" */
    double sustained_first_flops, sustained_last_flops; /* first and last tenth of the load */
    double sustained_s;
    double sustained_flops; /* the whole load: FLOP over device seconds */
    /* NVML read by the parent while every selected GPU ran the load at once (sample.c) */
    uint32_t load_samples;
    uint32_t load_clock_sm_min_mhz, load_clock_sm_max_mhz;
    uint32_t load_clock_mem_min_mhz, load_clock_mem_max_mhz;
    uint32_t load_temp_max_c;
    uint32_t load_power_max_mw, load_power_mean_mw;
    uint64_t load_clocks_event_reasons; /* every NVML_CLOCKS_EVENT_* bit seen, OR-ed */
    uint64_t checksum;
    bool checksum_ok; /* equals the host's computation of the same triad */
    uint32_t pcie_gen, pcie_width;
    double pcie_expected_bytes_per_s; /* the link's usable rate, one direction */
    double mem_expected_bytes_per_s;  /* data/gpu-specs.tsv */
    double fp32_expected_flops;       /* data/gpu-specs.tsv */
    double base_h2d_bytes_per_s, base_triad_bytes_per_s, base_fma_flops; /* the baseline */

    /* the cuBLASLt GEMMs (src/bench/gemm.c); compute_method "cublaslt" when one was measured */
    double gemm_flops[BP_N];            /* per precision, 2 FLOP per multiply-add */
    uint32_t gemm_n;                    /* their size: n x n times n x n */
    char *gemm_note;                    /* why cuBLASLt, or a precision, was not measured */
    double tensor_expected_flops[BP_N]; /* data/gpu-specs.tsv's dense Tensor Core rates */

    uint64_t valid;
};

/* One ordered pair of GPUs: copies from src to dst. */
struct bench_pair {
    uint32_t src, dst;
    double bytes_per_s, latency_us;
    bool peer_access; /* cuDeviceCanAccessPeer */
};

enum bench_state { BENCH_NOT_RUN, BENCH_OK, BENCH_FAILED, BENCH_TIMEOUT, BENCH_REFUSED };
extern const char *const bench_state_names[];

struct bench_info {
    int32_t state;   /* enum bench_state */
    char *detail;    /* why it failed, timed out or was refused */
    char *hung_step; /* BENCH_TIMEOUT: what the worker was doing */
    char *mode;      /* "quick" or "full" */
    char *library;   /* the CUDA driver library used */
    int32_t driver_version;
    double elapsed_s;      /* wall time of the whole bench */
    double measured_s;     /* device time the measurements took (events) */
    double load_elapsed_s; /* wall time of the sustained load, every GPU at once */
    char *baseline;        /* the baseline file compared with, NULL: none */
    char *load_note;       /* why NVML was not sampled during the load, or stopped; NULL: it was */

    char *cublaslt_library;    /* the cuBLASLt loaded for the GEMMs, NULL: none */
    uint32_t cublaslt_version; /* cublasLtGetVersion (130100 = 13.1.0) */

    struct bench_gpu *gpus;
    size_t n_gpus;
    struct bench_pair *pairs;
    size_t n_pairs;
};

extern const struct jtable bench_info_table;
extern const struct jtable bench_gpu_table;
extern const struct jtable bench_pair_table;

bool bench_gpu_valid(const struct bench_gpu *g, enum bench_gpu_slot slot);
void bench_gpu_set(struct bench_gpu *g, enum bench_gpu_slot slot);
void bench_info_free(struct bench_info *b);
json_t *bench_info_to_json(const struct bench_info *b);
int bench_info_from_json(struct bench_info *b, const json_t *j, const char *path, struct jerr *err);

#endif
