/*
 * bench's compute figures through cuBLASLt (docs/bench.md): per GPU, one GEMM size bounded by
 * the memory share, timed by CUDA events in each precision the GPU supports. Runs in the worker,
 * with the GPU's context current. Without cuBLASLt (or where it measures nothing) the FMA
 * kernel's figure is the compute figure, and compute_method and gemm_note say so.
 */
#ifndef GPUDOCTOR_BENCH_GEMM_H
#define GPUDOCTOR_BENCH_GEMM_H

#include "cuda/cublaslt-lib.h"
#include "cuda/cuda-lib.h"
#include "snapshot/snapshot.h"

#include <stdbool.h>

struct bench_gemm {
    const struct cuda_lib *cu;
    struct cublaslt_lib lt;
    bool loaded;
    char *cause; /* why cuBLASLt is not used (not found, not cuBLASLt) */
    int fd;      /* the worker's report pipe: "step ..." lines */
    bool full;
};

/* Loads cuBLASLt (name: NULL for $GPUDOCTOR_CUBLASLT_LIB, else libcublasLt.so.13/.12/.11) and
 * records it in b (cublaslt_library, cublaslt_version). Its absence is not an error. */
void bench_gemm_open(struct bench_gemm *gm, const struct cuda_lib *cu, int fd, bool full,
                     struct bench_info *b);
void bench_gemm_close(struct bench_gemm *gm);

/*
 * The GEMMs on device dev (its context current), on stream st between events e0 and e1, with at
 * most budget bytes of device memory. Fills g's gemm_* figures, gemm_n, gemm_note and
 * compute_method ("cublaslt" when a figure was measured). A CUDA or cuBLASLt call that fails on
 * the device sets g->error and returns -1; cuBLASLt missing, unusable or without an algorithm for
 * a precision is a gemm_note, and 0. Adds the device time measured to *measured_s.
 */
int bench_gemm_measure(struct bench_gemm *gm, int dev, struct bench_gpu *g, CUstream st, CUevent e0,
                       CUevent e1, double budget, double *measured_s);

#endif
