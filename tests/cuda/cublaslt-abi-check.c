/*
 * Compiled (never run) by tests/e2e/cublaslt-abi-header.sh against NVIDIA's cublasLt.h: every
 * constant, every signature and the heuristic result's layout of src/cuda/cublaslt-abi.h must
 * equal the header's, or this does not compile.
 */
#include <cublasLt.h>
#include <stddef.h>

#define GPUDOCTOR_CUDA_ABI_CHECK
#include "cuda/cublaslt-abi.h"

#define CHECK_VALUE(name, value) _Static_assert((long long)(name) == (value), #name " differs");
CUBLASLT_ABI_STATUSES(CHECK_VALUE)
CUBLASLT_ABI_CONSTANTS(CHECK_VALUE)

#define CHECK_FN(name, params)                                                                     \
    _Static_assert(                                                                                \
        __builtin_types_compatible_p(__typeof__(&name), cublasStatus_t(CUBLASWINAPI *) params),    \
        #name " has another signature");
CUBLASLT_FUNCTIONS(CHECK_FN)
_Static_assert(__builtin_types_compatible_p(__typeof__(&cublasLtGetVersion),
                                            size_t(CUBLASWINAPI *)(void)),
               "cublasLtGetVersion has another signature");

/* The layouts src/cuda/cublaslt-abi.h writes out (its own copies of these structs). */
_Static_assert(sizeof(cublasStatus_t) == 4 && sizeof(cudaDataType_t) == 4 &&
                   sizeof(cublasComputeType_t) == 4 && sizeof(cublasOperation_t) == 4,
               "the enums are int-sized");
_Static_assert(sizeof(cublasLtMatmulDescOpaque_t) == 256, "matmul descriptor: 32 x uint64_t");
_Static_assert(sizeof(cublasLtMatrixLayoutOpaque_t) == 64, "layout: 8 x uint64_t");
_Static_assert(sizeof(cublasLtMatmulPreferenceOpaque_t) == 64, "preference: 8 x uint64_t");
_Static_assert(sizeof(cublasLtMatmulAlgo_t) == 64, "algo: 8 x uint64_t");
_Static_assert(sizeof(cublasLtMatmulHeuristicResult_t) == 96, "heuristic result: 96 bytes");
_Static_assert(offsetof(cublasLtMatmulHeuristicResult_t, workspaceSize) == 64, "workspaceSize");
_Static_assert(offsetof(cublasLtMatmulHeuristicResult_t, state) == 72, "state");
_Static_assert(offsetof(cublasLtMatmulHeuristicResult_t, wavesCount) == 76, "wavesCount");
_Static_assert(offsetof(cublasLtMatmulHeuristicResult_t, reserved) == 80, "reserved");
_Static_assert(__builtin_types_compatible_p(cudaStream_t, struct CUstream_st *),
               "cudaStream_t is the driver's CUstream");
_Static_assert(CUBLAS_VERSION == GPUDOCTOR_CUBLASLT_ABI_HEADER_VERSION || CUBLAS_VERSION > 0,
               "any header version is compared");

int cublaslt_abi_check_unused(void);
int cublaslt_abi_check_unused(void)
{
    return 0;
}
