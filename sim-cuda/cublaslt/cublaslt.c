/*
 * The CUDA simulator's fake cuBLASLt (build/sim-cuda/libcublasLt.so.13): the functions of
 * CUBLASLT_FUNCTIONS and cublasLtGetVersion, working with the CUDA simulator's memory and clock
 * through its hooks (cuda-sim.h, gpudoctor_csim_*). It is linked against the simulator's
 * libcuda.so.1, so it shares the simulator that bench loaded. Descriptors are checked as the
 * real library would need them; a GEMM checks its operands are allocations of the current
 * device and takes 2 n^3 / the scenario's rate of simulated time. D is not computed.
 * docs/simulator.md says which scenario keys drive it.
 */
#include "../cuda-sim.h"
#include "cuda/cublaslt-abi.h"

#include <stdlib.h>
#include <string.h>

#define LT_API __attribute__((visibility("default")))

#define LT_DECLARE(name, params) LT_API cublasStatus_t name params;
CUBLASLT_FUNCTIONS(LT_DECLARE)
#undef LT_DECLARE
LT_API size_t cublasLtGetVersion(void);

#define LT_MAGIC 0x67656d6d /* "gemm": a handle we made */

struct cublasLtContext {
    unsigned magic;
};

/* What the opaque descriptors hold here (they are bigger than this). */
struct desc {
    uint64_t magic;
    int32_t compute, scale, transa, transb;
};
struct layout {
    uint64_t magic;
    int32_t type;
    uint64_t rows, cols;
    int64_t ld;
};
struct pref {
    uint64_t magic;
    uint64_t workspace;
};
_Static_assert(sizeof(struct desc) <= sizeof(cublasLtMatmulDescOpaque_t), "desc fits");
_Static_assert(sizeof(struct layout) <= sizeof(cublasLtMatrixLayoutOpaque_t), "layout fits");
_Static_assert(sizeof(struct pref) <= sizeof(cublasLtMatmulPreferenceOpaque_t), "pref fits");

/* Every entry: the simulator initialised, a context current, the scenario's injection. */
#define ENTER()                                                                                    \
    do {                                                                                           \
        int enter_st = gpudoctor_csim_cublaslt_enter(__func__);                                    \
        if (enter_st < 0)                                                                          \
            return CUBLAS_STATUS_NOT_INITIALIZED;                                                  \
        if (enter_st > 0)                                                                          \
            return enter_st;                                                                       \
    } while (0)

size_t cublasLtGetVersion(void)
{
    return GPUDOCTOR_CUBLASLT_ABI_HEADER_VERSION;
}

cublasStatus_t cublasLtCreate(cublasLtHandle_t *lightHandle)
{
    ENTER();
    if (lightHandle == NULL)
        return CUBLAS_STATUS_INVALID_VALUE;
    *lightHandle = calloc(1, sizeof(**lightHandle));
    if (*lightHandle == NULL)
        return CUBLAS_STATUS_ALLOC_FAILED;
    (*lightHandle)->magic = LT_MAGIC;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtDestroy(cublasLtHandle_t lightHandle)
{
    ENTER();
    if (lightHandle == NULL || lightHandle->magic != LT_MAGIC)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    lightHandle->magic = 0;
    free(lightHandle);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *matmulDesc,
                                        cublasComputeType_t computeType, cudaDataType_t scaleType)
{
    struct desc *d;

    ENTER();
    if (matmulDesc == NULL)
        return CUBLAS_STATUS_INVALID_VALUE;
    *matmulDesc = calloc(1, sizeof(**matmulDesc));
    if (*matmulDesc == NULL)
        return CUBLAS_STATUS_ALLOC_FAILED;
    d = (struct desc *)(void *)*matmulDesc;
    d->magic = LT_MAGIC;
    d->compute = computeType;
    d->scale = scaleType;
    d->transa = d->transb = CUBLAS_OP_N;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t matmulDesc,
                                              cublasLtMatmulDescAttributes_t attr, const void *buf,
                                              size_t sizeInBytes)
{
    struct desc *d = (struct desc *)(void *)matmulDesc;
    int32_t v;

    ENTER();
    if (d == NULL || d->magic != LT_MAGIC || buf == NULL || sizeInBytes != sizeof(int32_t))
        return CUBLAS_STATUS_INVALID_VALUE;
    memcpy(&v, buf, sizeof(v));
    switch (attr) {
    case CUBLASLT_MATMUL_DESC_TRANSA:
        d->transa = v;
        break;
    case CUBLASLT_MATMUL_DESC_TRANSB:
        d->transb = v;
        break;
    case CUBLASLT_MATMUL_DESC_COMPUTE_TYPE:
        d->compute = v;
        break;
    case CUBLASLT_MATMUL_DESC_SCALE_TYPE:
        d->scale = v;
        break;
    default:
        return CUBLAS_STATUS_INVALID_VALUE; /* not one the fake knows */
    }
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t matmulDesc)
{
    ENTER();
    free(matmulDesc);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *matLayout, cudaDataType_t type,
                                          uint64_t rows, uint64_t cols, int64_t ld)
{
    struct layout *l;

    ENTER();
    if (matLayout == NULL || ld < 0 || (uint64_t)ld < rows)
        return CUBLAS_STATUS_INVALID_VALUE;
    *matLayout = calloc(1, sizeof(**matLayout));
    if (*matLayout == NULL)
        return CUBLAS_STATUS_ALLOC_FAILED;
    l = (struct layout *)(void *)*matLayout;
    *l = (struct layout){ LT_MAGIC, type, rows, cols, ld };
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t matLayout)
{
    ENTER();
    free(matLayout);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *pref)
{
    ENTER();
    if (pref == NULL)
        return CUBLAS_STATUS_INVALID_VALUE;
    *pref = calloc(1, sizeof(**pref));
    if (*pref == NULL)
        return CUBLAS_STATUS_ALLOC_FAILED;
    ((struct pref *)(void *)*pref)->magic = LT_MAGIC;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr,
                                                    const void *buf, size_t sizeInBytes)
{
    struct pref *p = (struct pref *)(void *)pref;

    ENTER();
    if (p == NULL || p->magic != LT_MAGIC || buf == NULL ||
        attr != CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES || sizeInBytes != sizeof(uint64_t))
        return CUBLAS_STATUS_INVALID_VALUE;
    memcpy(&p->workspace, buf, sizeof(p->workspace));
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref)
{
    ENTER();
    free(pref);
    return CUBLAS_STATUS_SUCCESS;
}

static size_t type_bytes(int32_t type)
{
    switch (type) {
    case CUDA_R_32F:
        return 4;
    case CUDA_R_16F:
    case CUDA_R_16BF:
        return 2;
    case CUDA_R_8F_E4M3:
    case CUDA_R_8F_E5M2:
        return 1;
    default:
        return 0;
    }
}

/* The precision of a square GEMM the fake supports (CSIM_*), -1 when it is not one: the types
 * bench uses (docs/bench.md), scale FP32, FP8 only as "TN". *n is its size. */
static int precision_of(const struct desc *d, const struct layout *a, const struct layout *b,
                        const struct layout *c, const struct layout *dd, uint64_t *n)
{
    const struct layout *all[] = { a, b, c, dd };
    int p;

    for (size_t i = 0; i < 4; i++) {
        if (all[i] == NULL || all[i]->magic != LT_MAGIC || all[i]->rows != a->rows ||
            all[i]->cols != a->rows || type_bytes(all[i]->type) == 0)
            return -1;
    }
    if (d == NULL || d->magic != LT_MAGIC || d->scale != CUDA_R_32F || a->type != b->type ||
        c->type != dd->type)
        return -1;
    if (a->type == CUDA_R_32F && c->type == CUDA_R_32F &&
        d->compute == CUBLAS_COMPUTE_32F_FAST_TF32)
        p = CSIM_TF32;
    else if (a->type == CUDA_R_16F && c->type == CUDA_R_16F && d->compute == CUBLAS_COMPUTE_32F)
        p = CSIM_FP16;
    else if (a->type == CUDA_R_16BF && c->type == CUDA_R_16BF && d->compute == CUBLAS_COMPUTE_32F)
        p = CSIM_BF16;
    else if (a->type == CUDA_R_8F_E4M3 && c->type == CUDA_R_16BF &&
             d->compute == CUBLAS_COMPUTE_32F && d->transa == CUBLAS_OP_T &&
             d->transb == CUBLAS_OP_N)
        p = CSIM_FP8;
    else
        return -1;
    *n = a->rows;
    return p;
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(
    cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t operationDesc, cublasLtMatrixLayout_t Adesc,
    cublasLtMatrixLayout_t Bdesc, cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
    cublasLtMatmulPreference_t preference, int requestedAlgoCount,
    cublasLtMatmulHeuristicResult_t heuristicResultsArray[], int *returnAlgoCount)
{
    uint64_t n = 0;
    int p;

    ENTER();
    if (lightHandle == NULL || lightHandle->magic != LT_MAGIC)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if (requestedAlgoCount <= 0 || heuristicResultsArray == NULL || returnAlgoCount == NULL ||
        preference == NULL)
        return CUBLAS_STATUS_INVALID_VALUE;
    p = precision_of((const struct desc *)(void *)operationDesc,
                     (const struct layout *)(void *)Adesc, (const struct layout *)(void *)Bdesc,
                     (const struct layout *)(void *)Cdesc, (const struct layout *)(void *)Ddesc,
                     &n);
    *returnAlgoCount = 0;
    if (p < 0 || gpudoctor_csim_gemm_rate(p) <= 0)
        return CUBLAS_STATUS_NOT_SUPPORTED;
    memset(&heuristicResultsArray[0], 0, sizeof(heuristicResultsArray[0]));
    heuristicResultsArray[0].algo.data[0] = LT_MAGIC;
    heuristicResultsArray[0].algo.data[1] = (uint64_t)p;
    heuristicResultsArray[0].workspaceSize = 0;
    heuristicResultsArray[0].state = CUBLAS_STATUS_SUCCESS;
    heuristicResultsArray[0].wavesCount = 1.0f;
    *returnAlgoCount = 1;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t computeDesc,
                              const void *alpha, const void *A, cublasLtMatrixLayout_t Adesc,
                              const void *B, cublasLtMatrixLayout_t Bdesc, const void *beta,
                              const void *C, cublasLtMatrixLayout_t Cdesc, void *D,
                              cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t *algo,
                              void *workspace, size_t workspaceSizeInBytes, cudaStream_t stream)
{
    const struct layout *a = (const struct layout *)(void *)Adesc;
    const struct layout *c = (const struct layout *)(void *)Cdesc;
    uint64_t n = 0;
    int p, rc;

    (void)workspace;
    (void)workspaceSizeInBytes;
    ENTER();
    if (lightHandle == NULL || lightHandle->magic != LT_MAGIC)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if (alpha == NULL || beta == NULL || A == NULL || B == NULL || C == NULL || D == NULL ||
        algo == NULL || algo->data[0] != LT_MAGIC)
        return CUBLAS_STATUS_INVALID_VALUE;
    p = precision_of((const struct desc *)(void *)computeDesc, a,
                     (const struct layout *)(void *)Bdesc, c, (const struct layout *)(void *)Ddesc,
                     &n);
    if (p < 0 || (uint64_t)p != algo->data[1])
        return CUBLAS_STATUS_INVALID_VALUE;
    if (C != D) /* in place is what bench does; anything else the fake does not need */
        return CUBLAS_STATUS_NOT_SUPPORTED;
    rc = gpudoctor_csim_gemm(
        stream, p, n, (CUdeviceptr)(uintptr_t)A, (size_t)a->ld * a->cols * type_bytes(a->type),
        (CUdeviceptr)(uintptr_t)B, (size_t)a->ld * a->cols * type_bytes(a->type),
        (CUdeviceptr)(uintptr_t)D, (size_t)c->ld * c->cols * type_bytes(c->type));
    if (rc == CUDA_SUCCESS)
        return CUBLAS_STATUS_SUCCESS;
    return rc == CUDA_ERROR_NOT_SUPPORTED ? CUBLAS_STATUS_NOT_SUPPORTED
                                          : CUBLAS_STATUS_EXECUTION_FAILED;
}
