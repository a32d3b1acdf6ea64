/*
 * The catalogue of error texts people report (`check --error TEXT`): CUDA runtime and driver
 * errors, PyTorch's and NCCL's words, each with its number, name and what gpudoctor's rules make
 * of it. Generated at build time from data/cuda-errors.tsv (the source of truth, with its sources)
 * by src/data/tsv2c.c; this header is the only way to read it.
 */
#ifndef GPUDOCTOR_DATA_CUDAERR_H
#define GPUDOCTOR_DATA_CUDAERR_H

#include <stddef.h>
#include <stdint.h>

/* X(ENUM, "name in data/cuda-errors.tsv"): what the rules do with an error. */
#define CUDAERR_KINDS(X)                                                                           \
    X(NOT_READY, "not_ready")                                                                      \
    X(BUSY, "busy")                                                                                \
    X(NO_DEVICE, "no_device")                                                                      \
    X(NO_DRIVER, "no_driver")                                                                      \
    X(SLOW_INIT, "slow_init")                                                                      \
    X(NO_KERNEL, "no_kernel")                                                                      \
    X(NVML_UNKNOWN, "nvml_unknown")                                                                \
    X(NO_GPU_RUNTIME, "no_gpu_runtime")                                                            \
    X(CUDA_LIB_MISSING, "cuda_lib_missing")                                                        \
    X(CUDNN_MISSING, "cudnn_missing")                                                              \
    X(DRIVER_MISMATCH, "driver_mismatch")                                                          \
    X(SHM, "shm")                                                                                  \
    X(FD_LIMIT, "fd_limit")                                                                        \
    X(OOM, "oom")                                                                                  \
    X(CUDA_UNKNOWN, "cuda_unknown")                                                                \
    X(UVM_MISSING, "uvm_missing")                                                                  \
    X(IMAGE_REQUIREMENT, "image_requirement")                                                      \
    X(MEMLOCK, "memlock")                                                                          \
    X(NCCL_SOCKET, "nccl_socket")                                                                  \
    X(NCCL_FAILED, "nccl_failed")                                                                  \
    X(OTHER, "other")

enum cudaerr_kind {
#define CUDAERR_KIND_ENUM(id, name) CUDAERR_##id,
    CUDAERR_KINDS(CUDAERR_KIND_ENUM)
#undef CUDAERR_KIND_ENUM
        CUDAERR__COUNT
};

struct cudaerr_info {
    const char *api;  /* "cuda-runtime", "cuda-driver", "pytorch", "nccl", ... */
    int32_t number;   /* the api's number; -1: none */
    const char *name; /* "cudaErrorSystemNotReady" */
    enum cudaerr_kind kind;
    const char *pattern; /* any case, "*" between parts; NULL: the name only */
    const char *meaning; /* one line, English */
};

/*
 * The row whose pattern (or name) text contains, case-insensitively, the longest match winning
 * (the first row of equal length); NULL when none: the error is not recognised.
 */
const struct cudaerr_info *cudaerr_match(const char *text);

/* Every row, in the TSV's order (for tests and docs). */
extern const struct cudaerr_info cudaerr_rows[];
extern const size_t cudaerr_n_rows;

#endif
