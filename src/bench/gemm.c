/*
 * The cuBLASLt GEMMs of the compute step (gemm.h, docs/bench.md). D = A^T B in the "TN" layout
 * every precision accepts (FP8 requires it): A is stored k x m, B k x n, D m x n, column-major,
 * with m = n = k. The inputs hold normal numbers in [1, 2) or thereabouts in every precision
 * (bytes 0x38..0x3f: FP16 0.5..2, BF16 and FP32 small normals, FP8 E4M3 1..1.875), so that no
 * NaN or denormal changes the timing and the sums stay finite in FP16. D is written over C in
 * place (beta 0).
 */
#include "bench/gemm.h"
#include "snapshot/bench-steps.h"
#include "util/xalloc.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MIB             (1024.0 * 1024.0)
#define GEMM_WORKSPACE  (32u << 20) /* what NVIDIA suggests for Hopper; smaller GPUs use less */
#define GEMM_N_QUICK    4096
#define GEMM_N_FULL     8192
#define GEMM_N_MIN      2048 /* below it a GEMM says little about a Tensor Core peak */
#define GEMM_REPS_QUICK 10
#define GEMM_REPS_FULL  50

/* What each precision needs: the types, and the compute capability it appeared with. */
static const struct {
    cudaDataType_t ab, cd;
    cublasComputeType_t compute;
    int cc; /* major * 10 + minor */
    const char *label;
} precs[BP_N] = {
    [BP_TF32] = { CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, 80, "TF32" },
    [BP_FP16] = { CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, 70, "FP16" },
    [BP_BF16] = { CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 80, "BF16" },
    [BP_FP8] = { CUDA_R_8F_E4M3, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 89, "FP8" },
};

static void gstep(struct bench_gemm *gm, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void gstep(struct bench_gemm *gm, const char *fmt, ...)
{
    char line[256];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n > sizeof(line) - 2)
        n = (int)sizeof(line) - 2;
    line[n++] = '\n';
    (void)!write(gm->fd, "step ", 5);
    (void)!write(gm->fd, line, (size_t)n);
}

/* Appends "; more" to the GPU's note. */
static void note(struct bench_gpu *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(struct bench_gpu *g, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    char *s;

    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    s = xasprintf("%s%s%s", g->gemm_note ? g->gemm_note : "", g->gemm_note ? "; " : "", buf);
    free(g->gemm_note);
    g->gemm_note = s;
}

void bench_gemm_open(struct bench_gemm *gm, const struct cuda_lib *cu, int fd, bool full,
                     struct bench_info *b)
{
    memset(gm, 0, sizeof(*gm));
    gm->cu = cu;
    gm->fd = fd;
    gm->full = full;
    gstep(gm, "%s", BENCH_STEP_CUBLASLT);
    if (cublaslt_lib_open(&gm->lt, NULL, &gm->cause) != 0)
        return;
    gm->loaded = true;
    b->cublaslt_library = xstrdup(gm->lt.name);
    b->cublaslt_version = (uint32_t)gm->lt.version;
}

void bench_gemm_close(struct bench_gemm *gm)
{
    if (gm->loaded)
        cublaslt_lib_close(&gm->lt);
    free(gm->cause);
    memset(gm, 0, sizeof(*gm));
}

/* A pseudo-random byte in 0x38..0x3f for position i. */
static unsigned char fill_byte(size_t i)
{
    uint64_t v = i * 0x9e3779b97f4a7c15ULL;

    return (unsigned char)(0x38 + ((v >> 61) & 7));
}

struct gemm_bufs {
    CUdeviceptr a, b, d, ws;
};

/* One precision: descriptors, an algorithm, a warm-up, then reps timed GEMMs. 1 when measured,
 * 0 when cuBLASLt has no algorithm for it here (noted), -1 on a failure (g->error). */
static int one_precision(struct bench_gemm *gm, int dev, struct bench_gpu *g, int p, uint32_t n,
                         const struct gemm_bufs *buf, CUstream st, CUevent e0, CUevent e1,
                         double *measured_s, cublasLtHandle_t h)
{
    const struct cublaslt_lib *lt = &gm->lt;
    const struct cuda_lib *cu = gm->cu;
    cublasLtMatmulDesc_t desc = NULL;
    cublasLtMatrixLayout_t la = NULL, lb = NULL, ld = NULL;
    cublasLtMatmulPreference_t pref = NULL;
    cublasLtMatmulHeuristicResult_t heur;
    int32_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    uint64_t ws = GEMM_WORKSPACE;
    float alpha = 1.0f, beta = 0.0f, ms = 0;
    unsigned reps = gm->full ? GEMM_REPS_FULL : GEMM_REPS_QUICK;
    const char *call = NULL;
    cublasStatus_t bs = CUBLAS_STATUS_SUCCESS;
    CUresult rc = CUDA_SUCCESS;
    int found = 0, r = -1;
    char name[64];

#define LT(fn, args)                                                                               \
    do {                                                                                           \
        call = #fn;                                                                                \
        if ((bs = lt->fn args) != CUBLAS_STATUS_SUCCESS)                                           \
            goto fail;                                                                             \
    } while (0)
#define CU(fn, args)                                                                               \
    do {                                                                                           \
        call = #fn;                                                                                \
        if ((rc = cu->fn args) != CUDA_SUCCESS)                                                    \
            goto fail;                                                                             \
    } while (0)

    gstep(gm, "gpu %d: " BENCH_STEP_GEMM, dev, precs[p].label);
    LT(cublasLtMatmulDescCreate, (&desc, precs[p].compute, CUDA_R_32F));
    LT(cublasLtMatmulDescSetAttribute, (desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
    LT(cublasLtMatmulDescSetAttribute, (desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
    LT(cublasLtMatrixLayoutCreate, (&la, precs[p].ab, n, n, n));
    LT(cublasLtMatrixLayoutCreate, (&lb, precs[p].ab, n, n, n));
    LT(cublasLtMatrixLayoutCreate, (&ld, precs[p].cd, n, n, n));
    LT(cublasLtMatmulPreferenceCreate, (&pref));
    LT(cublasLtMatmulPreferenceSetAttribute,
       (pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)));
    memset(&heur, 0, sizeof(heur));
    call = "cublasLtMatmulAlgoGetHeuristic";
    bs = lt->cublasLtMatmulAlgoGetHeuristic(h, desc, la, lb, ld, ld, pref, 1, &heur, &found);
    if (bs == CUBLAS_STATUS_NOT_SUPPORTED || (bs == CUBLAS_STATUS_SUCCESS && found < 1)) {
        note(g, "%s: no cuBLASLt algorithm on this GPU (%s)", precs[p].label,
             bs == CUBLAS_STATUS_SUCCESS ? "none returned"
                                         : cublaslt_status_name(bs, name, sizeof(name)));
        r = 0;
        goto out;
    }
    if (bs != CUBLAS_STATUS_SUCCESS)
        goto fail;
#define MATMUL()                                                                                   \
    LT(cublasLtMatmul,                                                                             \
       (h, desc, &alpha, (const void *)(uintptr_t)buf->a, la, (const void *)(uintptr_t)buf->b, lb, \
        &beta, (const void *)(uintptr_t)buf->d, ld, (void *)(uintptr_t)buf->d, ld, &heur.algo,     \
        (void *)(uintptr_t)buf->ws, GEMM_WORKSPACE, st))
    MATMUL(); /* warm-up */
    CU(cuStreamSynchronize, (st));
    CU(cuEventRecord, (e0, st));
    for (unsigned i = 0; i < reps; i++)
        MATMUL();
    CU(cuEventRecord, (e1, st));
    CU(cuEventSynchronize, (e1));
    CU(cuEventElapsedTime, (&ms, e0, e1));
#undef MATMUL
    if (ms > 0) {
        double s = ms / 1e3;

        *measured_s += s;
        g->gemm_flops[p] = 2.0 * (double)n * n * n * reps / s;
        bench_gpu_set(g, (enum bench_gpu_slot)(BG_GEMM + p));
    }
    r = 1;
    goto out;
fail:
    if (rc != CUDA_SUCCESS) {
        char cname[64];

        g->error = xasprintf("%s (%s GEMM): %s", call, precs[p].label,
                             cuda_result_name(cu, rc, cname, sizeof(cname)));
    } else {
        g->error = xasprintf("%s (%s GEMM): %s", call, precs[p].label,
                             cublaslt_status_name(bs, name, sizeof(name)));
    }
out:
    if (pref != NULL)
        lt->cublasLtMatmulPreferenceDestroy(pref);
    if (ld != NULL)
        lt->cublasLtMatrixLayoutDestroy(ld);
    if (lb != NULL)
        lt->cublasLtMatrixLayoutDestroy(lb);
    if (la != NULL)
        lt->cublasLtMatrixLayoutDestroy(la);
    if (desc != NULL)
        lt->cublasLtMatmulDescDestroy(desc);
    return r;
#undef LT
#undef CU
}

int bench_gemm_measure(struct bench_gemm *gm, int dev, struct bench_gpu *g, CUstream st, CUevent e0,
                       CUevent e1, double budget, double *measured_s)
{
    const struct cuda_lib *cu = gm->cu;
    struct gemm_bufs buf = { 0, 0, 0, 0 };
    cublasLtHandle_t h = NULL;
    int major = 0, minor = 0, cc, r = 0, measured = 0;
    uint32_t n = gm->full ? GEMM_N_FULL : GEMM_N_QUICK;
    unsigned char *host = NULL;
    size_t bytes;
    CUresult rc;
    char name[64];

    if (!gm->loaded) {
        note(g, "%s: the FMA kernel measured compute instead", gm->cause);
        goto done;
    }
    rc = cu->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
    if (rc == CUDA_SUCCESS)
        rc = cu->cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
    if (rc != CUDA_SUCCESS) {
        g->error = xasprintf("cuDeviceGetAttribute (compute capability): %s",
                             cuda_result_name(cu, rc, name, sizeof(name)));
        return -1;
    }
    cc = major * 10 + minor;
    if (cc < precs[BP_FP16].cc) {
        note(g, "compute capability %d.%d has no Tensor Cores: the FMA kernel measured compute",
             major, minor);
        goto done;
    }
    while (n > GEMM_N_MIN && 3.0 * n * n * 4 + GEMM_WORKSPACE > budget)
        n /= 2;
    bytes = (size_t)n * n * 4;
    if (3.0 * (double)bytes + GEMM_WORKSPACE > budget) {
        note(g,
             "not enough free memory for the GEMMs (%u x %u needs %.0f MiB, the share left is "
             "%.0f MiB): the FMA kernel measured compute",
             n, n, (3.0 * (double)bytes + GEMM_WORKSPACE) / MIB, budget > 0 ? budget / MIB : 0);
        goto done;
    }
    gstep(gm, "gpu %d: " BENCH_STEP_LT_HANDLE, dev);
    {
        cublasStatus_t bs = gm->lt.cublasLtCreate(&h);

        if (bs != CUBLAS_STATUS_SUCCESS) {
            h = NULL;
            note(g,
                 "cublasLtCreate: %s (%s cannot work with this driver): the FMA kernel "
                 "measured compute",
                 cublaslt_status_name(bs, name, sizeof(name)), gm->lt.name);
            goto done;
        }
    }
    gstep(gm, "gpu %d: " BENCH_STEP_GEMM_BUFFER, dev, n, n);
#define GTRY(call, args)                                                                           \
    do {                                                                                           \
        rc = cu->call args;                                                                        \
        if (rc != CUDA_SUCCESS) {                                                                  \
            g->error =                                                                             \
                xasprintf("%s (GEMM): %s", #call, cuda_result_name(cu, rc, name, sizeof(name)));   \
            r = -1;                                                                                \
            goto done;                                                                             \
        }                                                                                          \
    } while (0)
    GTRY(cuMemAlloc_v2, (&buf.a, bytes));
    GTRY(cuMemAlloc_v2, (&buf.b, bytes));
    GTRY(cuMemAlloc_v2, (&buf.d, bytes));
    GTRY(cuMemAlloc_v2, (&buf.ws, GEMM_WORKSPACE));
    host = xmalloc(bytes);
    for (size_t i = 0; i < bytes; i++)
        host[i] = fill_byte(i);
    GTRY(cuMemcpyHtoD_v2, (buf.a, host, bytes));
    GTRY(cuMemcpyHtoD_v2, (buf.b, host, bytes));
    GTRY(cuMemcpyHtoD_v2, (buf.d, host, bytes));
#undef GTRY
    g->gemm_n = n;
    bench_gpu_set(g, BG_GEMM_N);
    for (int p = 0; p < BP_N; p++) {
        int one;

        if (cc < precs[p].cc)
            continue;
        one = one_precision(gm, dev, g, p, n, &buf, st, e0, e1, measured_s, h);
        if (one < 0) {
            r = -1;
            goto done;
        }
        measured += one;
    }
done:
    free(host);
    {
        CUdeviceptr ptrs[] = { buf.a, buf.b, buf.d, buf.ws };

        if (h != NULL && buf.ws != 0)
            cu->cuStreamSynchronize(st);
        for (size_t i = 0; i < ARRAY_SIZE(ptrs); i++) {
            if (ptrs[i] != 0)
                cu->cuMemFree_v2(ptrs[i]);
        }
    }
    if (h != NULL)
        gm->lt.cublasLtDestroy(h);
    free(g->compute_method);
    g->compute_method = xstrdup(measured > 0 ? "cublaslt" : "fma-kernel");
    return r;
}
