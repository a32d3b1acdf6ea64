/*
 * The part of cuBLASLt (libcublasLt.so) that gpudoctor bench uses for its GEMM figures, and the
 * CUDA simulator's fake library implements.
 *
 * Every value, signature and struct layout here is taken from NVIDIA's public headers of the
 * CUDA 13.0 toolkit: /usr/local/cuda/include/cublasLt.h, cublas_api.h (CUBLAS_VERSION 130100,
 * cuBLAS 13.1.0) and library_types.h; nothing is guessed. As for the driver (cuda-abi.h), we
 * declare the ABI ourselves so that nothing links against CUDA at build time: the library is
 * dlopen()ed at run time (src/cuda/cublaslt-lib.c) and its absence is not an error.
 * tests/unit/test-cublaslt-abi.c asserts the literal values; tests/e2e/cublaslt-abi-header.sh
 * compiles tests/cuda/cublaslt-abi-check.c against the real headers (when installed) so that
 * every constant, signature and layout below is checked by the compiler against NVIDIA's.
 *
 * The subset has been stable since cuBLASLt 11 (CUDA 11.0): the loader takes libcublasLt.so.13,
 * .12 or .11, whichever is installed, with the same declarations.
 */
#ifndef GPUDOCTOR_CUBLASLT_ABI_H
#define GPUDOCTOR_CUBLASLT_ABI_H

#include "cuda/cuda-abi.h"

/* The version of cublas_api.h (CUBLAS_VERSION) these declarations were taken from. */
#define GPUDOCTOR_CUBLASLT_ABI_HEADER_VERSION 130100

/* cublasStatus_t (cublas_api.h) */
#define CUBLASLT_ABI_STATUSES(X)                                                                   \
    X(CUBLAS_STATUS_SUCCESS, 0)                                                                    \
    X(CUBLAS_STATUS_NOT_INITIALIZED, 1)                                                            \
    X(CUBLAS_STATUS_ALLOC_FAILED, 3)                                                               \
    X(CUBLAS_STATUS_INVALID_VALUE, 7)                                                              \
    X(CUBLAS_STATUS_ARCH_MISMATCH, 8)                                                              \
    X(CUBLAS_STATUS_MAPPING_ERROR, 11)                                                             \
    X(CUBLAS_STATUS_EXECUTION_FAILED, 13)                                                          \
    X(CUBLAS_STATUS_INTERNAL_ERROR, 14)                                                            \
    X(CUBLAS_STATUS_NOT_SUPPORTED, 15)                                                             \
    X(CUBLAS_STATUS_LICENSE_ERROR, 16)

/* cudaDataType_t (library_types.h), cublasComputeType_t and cublasOperation_t (cublas_api.h),
 * the attribute ids of cublasLtMatmulDescAttributes_t and cublasLtMatmulPreferenceAttributes_t
 * (cublasLt.h). */
#define CUBLASLT_ABI_CONSTANTS(X)                                                                  \
    X(CUDA_R_32F, 0)                                                                               \
    X(CUDA_R_16F, 2)                                                                               \
    X(CUDA_R_16BF, 14)                                                                             \
    X(CUDA_R_8F_E4M3, 28)                                                                          \
    X(CUDA_R_8F_E5M2, 29)                                                                          \
    X(CUBLAS_COMPUTE_16F, 64)                                                                      \
    X(CUBLAS_COMPUTE_32F, 68)                                                                      \
    X(CUBLAS_COMPUTE_32F_FAST_TF32, 77)                                                            \
    X(CUBLAS_OP_N, 0)                                                                              \
    X(CUBLAS_OP_T, 1)                                                                              \
    X(CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, 0)                                                        \
    X(CUBLASLT_MATMUL_DESC_SCALE_TYPE, 1)                                                          \
    X(CUBLASLT_MATMUL_DESC_TRANSA, 3)                                                              \
    X(CUBLASLT_MATMUL_DESC_TRANSB, 4)                                                              \
    X(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, 1)

#ifndef GPUDOCTOR_CUDA_ABI_CHECK

#include <stdint.h>

typedef int cublasStatus_t;      /* enums in the headers: int-sized */
typedef int cudaDataType_t;      /* cudaDataType */
typedef int cublasComputeType_t; /* enum */
typedef int cublasOperation_t;   /* enum; the TRANSA/TRANSB attribute values (int32_t) */
typedef int cublasLtMatmulDescAttributes_t;
typedef int cublasLtMatmulPreferenceAttributes_t;
typedef struct CUstream_st *cudaStream_t; /* the same object as the driver's CUstream */
typedef struct cublasLtContext *cublasLtHandle_t;

/* The semi-opaque descriptors: the library writes them, we only pass their addresses. */
typedef struct {
    uint64_t data[32];
} cublasLtMatmulDescOpaque_t;
typedef cublasLtMatmulDescOpaque_t *cublasLtMatmulDesc_t;
typedef struct {
    uint64_t data[8];
} cublasLtMatrixLayoutOpaque_t;
typedef cublasLtMatrixLayoutOpaque_t *cublasLtMatrixLayout_t;
typedef struct {
    uint64_t data[8];
} cublasLtMatmulPreferenceOpaque_t;
typedef cublasLtMatmulPreferenceOpaque_t *cublasLtMatmulPreference_t;
typedef struct {
    uint64_t data[8];
} cublasLtMatmulAlgo_t;

/* cublasLtMatmulAlgoGetHeuristic's results: 96 bytes (64 + 8 + 4 + 4 + 16). */
typedef struct {
    cublasLtMatmulAlgo_t algo;
    size_t workspaceSize;
    cublasStatus_t state;
    float wavesCount;
    int reserved[4];
} cublasLtMatmulHeuristicResult_t;

#define GPUDOCTOR_CUBLASLT_DEFINE(name, value) enum { name = (value) };
CUBLASLT_ABI_STATUSES(GPUDOCTOR_CUBLASLT_DEFINE)
CUBLASLT_ABI_CONSTANTS(GPUDOCTOR_CUBLASLT_DEFINE)
#undef GPUDOCTOR_CUBLASLT_DEFINE

#endif /* GPUDOCTOR_CUDA_ABI_CHECK */

/*
 * The entry points returning cublasStatus_t, as (symbol, parameters). The loader resolves them
 * all; the fake library of the simulator (sim-cuda/cublaslt/) defines exactly these and
 * cublasLtGetVersion, which returns size_t (major * 10000 + minor * 100 + patch).
 */
#define CUBLASLT_FUNCTIONS(X)                                                                      \
    X(cublasLtCreate, (cublasLtHandle_t * lightHandle))                                            \
    X(cublasLtDestroy, (cublasLtHandle_t lightHandle))                                             \
    X(cublasLtMatmulDescCreate, (cublasLtMatmulDesc_t * matmulDesc,                                \
                                 cublasComputeType_t computeType, cudaDataType_t scaleType))       \
    X(cublasLtMatmulDescSetAttribute,                                                              \
      (cublasLtMatmulDesc_t matmulDesc, cublasLtMatmulDescAttributes_t attr, const void *buf,      \
       size_t sizeInBytes))                                                                        \
    X(cublasLtMatmulDescDestroy, (cublasLtMatmulDesc_t matmulDesc))                                \
    X(cublasLtMatrixLayoutCreate, (cublasLtMatrixLayout_t * matLayout, cudaDataType_t type,        \
                                   uint64_t rows, uint64_t cols, int64_t ld))                      \
    X(cublasLtMatrixLayoutDestroy, (cublasLtMatrixLayout_t matLayout))                             \
    X(cublasLtMatmulPreferenceCreate, (cublasLtMatmulPreference_t * pref))                         \
    X(cublasLtMatmulPreferenceSetAttribute,                                                        \
      (cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr,                 \
       const void *buf, size_t sizeInBytes))                                                       \
    X(cublasLtMatmulPreferenceDestroy, (cublasLtMatmulPreference_t pref))                          \
    X(cublasLtMatmulAlgoGetHeuristic,                                                              \
      (cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t operationDesc,                           \
       cublasLtMatrixLayout_t Adesc, cublasLtMatrixLayout_t Bdesc, cublasLtMatrixLayout_t Cdesc,   \
       cublasLtMatrixLayout_t Ddesc, cublasLtMatmulPreference_t preference,                        \
       int requestedAlgoCount, cublasLtMatmulHeuristicResult_t heuristicResultsArray[],            \
       int *returnAlgoCount))                                                                      \
    X(cublasLtMatmul,                                                                              \
      (cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t computeDesc, const void *alpha,          \
       const void *A, cublasLtMatrixLayout_t Adesc, const void *B, cublasLtMatrixLayout_t Bdesc,   \
       const void *beta, const void *C, cublasLtMatrixLayout_t Cdesc, void *D,                     \
       cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t *algo, void *workspace,            \
       size_t workspaceSizeInBytes, cudaStream_t stream))

#ifndef GPUDOCTOR_CUDA_ABI_CHECK
#define GPUDOCTOR_CUBLASLT_FN_TYPE(name, params) typedef cublasStatus_t name##_fn params;
CUBLASLT_FUNCTIONS(GPUDOCTOR_CUBLASLT_FN_TYPE)
#undef GPUDOCTOR_CUBLASLT_FN_TYPE
typedef size_t cublasLtGetVersion_fn(void);
#endif

#endif
