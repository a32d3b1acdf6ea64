/*
 * The bench worker: runs in a child process, talks to the CUDA driver, and reports on a pipe.
 * Before each step it writes "step WHAT" so that the parent can name what hung; at the end one
 * line "result {json}" with the bench section. Every figure is timed by CUDA events around the
 * work on the device (so the simulator's clock and a real GPU's are read the same way).
 */
#include "bench/bench.h"
#include "snapshot/bench-steps.h"
#include "bench/gemm.h"
#include "cuda/cuda-lib.h"
#include "cuda/kernels.h"
#include "util/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MIB          (1024.0 * 1024.0)
#define TRIAD_SCALAR 3.0f /* a = b + s * c */

struct worker {
    struct cuda_lib cu;
    const struct bench_opts *o;
    int fd;
    size_t copy_bytes;  /* each host and device-to-device copy */
    size_t triad_n;     /* floats per triad array */
    unsigned reps;      /* repetitions of each timed copy */
    unsigned fma_iters; /* per launch */
    CUcontext *ctx;     /* per device */
    CUmodule *mods;     /* per device: triad, fma, checksum in one array of 3 */
    double measured_s;
    struct bench_gemm gemm; /* cuBLASLt, when it is installed */
    /*
     * The host side, made once for every GPU: the copies' buffers (pinned ones portable to
     * every context), the triad's inputs and the checksum the host computes of the triad's
     * output. Filling them costs more host time than anything else bench does itself; made per
     * GPU it grew with the GPU count for nothing.
     */
    void *pinned, *pinned2, *pageable;
    float *hb, *hc;
    uint64_t host_sum;
};

static void step(struct worker *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void step(struct worker *w, const char *fmt, ...)
{
    char line[256] = "step ";
    va_list ap;
    int n;

    /* one write per line (shorter than PIPE_BUF): lines never interleave */
    va_start(ap, fmt);
    n = vsnprintf(line + 5, sizeof(line) - 6, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    n += 5;
    if ((size_t)n > sizeof(line) - 2)
        n = (int)sizeof(line) - 2;
    line[n++] = '\n';
    (void)!write(w->fd, line, (size_t)n);
}

/* "cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY" */
static char *failure(struct worker *w, const char *call, CUresult rc)
{
    char name[64];

    return xasprintf("%s: %s", call, cuda_result_name(&w->cu, rc, name, sizeof(name)));
}

/* Calls that fail leave the GPU's error set and jump to its clean-up. */
#define TRY(g, call, args)                                                                         \
    do {                                                                                           \
        CUresult try_rc = w->cu.call args;                                                         \
        if (try_rc != CUDA_SUCCESS) {                                                              \
            (g)->error = failure(w, #call, try_rc);                                                \
            goto out;                                                                              \
        }                                                                                          \
    } while (0)

/* The NUMA node of the page at p (move_pages without a target answers where it lies). */
static int numa_node_of(void *p)
{
    void *page = (void *)((uintptr_t)p & ~(uintptr_t)4095);
    int status = -1;

#ifdef SYS_move_pages
    if (syscall(SYS_move_pages, 0, 1UL, &page, NULL, &status, 0) != 0)
        return -1;
#endif
    return status;
}

/* The GPU's NUMA node from sysfs, -1 when unknown. */
static int gpu_numa_node(const char *bus_id)
{
    char path[128], buf[16] = "";
    int fd, n = -1;

    snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/numa_node", bus_id);
    for (char *c = path; *c; c++)
        *c = (char)((*c >= 'A' && *c <= 'F') ? *c - 'A' + 'a' : *c);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    if (read(fd, buf, sizeof(buf) - 1) > 0)
        n = atoi(buf);
    close(fd);
    return n;
}

/* Seconds between two recorded events. */
static CUresult elapsed(struct worker *w, CUevent a, CUevent b, double *s)
{
    float ms = 0;
    CUresult rc = w->cu.cuEventSynchronize(b);

    if (rc == CUDA_SUCCESS)
        rc = w->cu.cuEventElapsedTime(&ms, a, b);
    *s = ms / 1e3;
    if (rc == CUDA_SUCCESS)
        w->measured_s += *s;
    return rc;
}

enum copy_kind { C_H2D, C_D2H };

/* reps copies of bytes on stream st, timed: bytes per second. */
static CUresult time_copy(struct worker *w, enum copy_kind k, CUdeviceptr d, void *h, CUstream st,
                          CUevent e0, CUevent e1, double *bps)
{
    double s;
    CUresult rc = w->cu.cuEventRecord(e0, st);

    for (unsigned r = 0; rc == CUDA_SUCCESS && r < w->reps; r++)
        rc = k == C_H2D ? w->cu.cuMemcpyHtoDAsync_v2(d, h, w->copy_bytes, st)
                        : w->cu.cuMemcpyDtoHAsync_v2(h, d, w->copy_bytes, st);
    if (rc == CUDA_SUCCESS)
        rc = w->cu.cuEventRecord(e1, st);
    if (rc == CUDA_SUCCESS)
        rc = elapsed(w, e0, e1, &s);
    if (rc == CUDA_SUCCESS)
        *bps = s > 0 ? (double)w->copy_bytes * w->reps / s : 0;
    return rc;
}

/* What the triad and checksum kernels give, computed here from the same inputs. */
static uint64_t host_checksum(const float *b, const float *c, float s, size_t n)
{
    uint64_t sum = 0;

    for (size_t i = 0; i < n; i++) {
        float prod = s * c[i];
        float a = b[i] + prod;
        uint32_t word;
        uint64_t v;

        memcpy(&word, &a, 4);
        v = ((uint64_t)i << 32) ^ word;
        v ^= v >> 33;
        v *= 0xff51afd7ed558ccdULL;
        v ^= v >> 33;
        sum += v;
    }
    return sum;
}

static void measure_gpu(struct worker *w, int dev, struct bench_gpu *g)
{
    CUdeviceptr d1 = 0, d2 = 0, ta = 0, tb = 0, tc = 0, sum = 0, fout = 0;
    void *pinned, *pageable, *pinned2;
    CUstream st = NULL, st2 = NULL;
    CUevent e0 = NULL, e1 = NULL, e2 = NULL, e3 = NULL;
    CUfunction ftriad, ffma, fsum;
    size_t free_b = 0, total_b = 0, need;
    double s;
    uint64_t gsum = 0;

    step(w, "gpu %d: " BENCH_STEP_CONTEXT, dev);
    TRY(g, cuDevicePrimaryCtxRetain, (&w->ctx[dev], dev));
    TRY(g, cuCtxSetCurrent, (w->ctx[dev]));
    TRY(g, cuMemGetInfo_v2, (&free_b, &total_b));
    need = 4 * w->copy_bytes + 3 * w->triad_n * 4;
    if ((double)need > (double)free_b * w->o->mem_share) {
        g->error = xasprintf("not enough free memory: the bench needs %.0f MiB, %.0f %% of the "
                             "%.0f MiB free is %.0f MiB",
                             need / MIB, w->o->mem_share * 100, free_b / MIB,
                             free_b * w->o->mem_share / MIB);
        goto out;
    }
    TRY(g, cuStreamCreate, (&st, CU_STREAM_NON_BLOCKING));
    TRY(g, cuEventCreate, (&e0, CU_EVENT_DEFAULT));
    TRY(g, cuEventCreate, (&e1, CU_EVENT_DEFAULT));
    TRY(g, cuEventCreate, (&e2, CU_EVENT_DEFAULT));
    TRY(g, cuEventCreate, (&e3, CU_EVENT_DEFAULT));

    /* ---- host copies ---- */
    step(w, "gpu %d: " BENCH_STEP_ALLOC, dev);
    TRY(g, cuMemAlloc_v2, (&d1, w->copy_bytes));
    TRY(g, cuMemAlloc_v2, (&d2, w->copy_bytes));
    if (w->pinned == NULL) {
        TRY(g, cuMemHostAlloc, (&w->pinned, w->copy_bytes, CU_MEMHOSTALLOC_PORTABLE));
        memset(w->pinned, 0x5a, w->copy_bytes);
    }
    if (w->pinned2 == NULL) {
        TRY(g, cuMemHostAlloc, (&w->pinned2, w->copy_bytes, CU_MEMHOSTALLOC_PORTABLE));
        memset(w->pinned2, 0xa5, w->copy_bytes);
    }
    if (w->pageable == NULL) {
        w->pageable = xmalloc(w->copy_bytes);
        memset(w->pageable, 0x3c, w->copy_bytes);
    }
    pinned = w->pinned;
    pinned2 = w->pinned2;
    pageable = w->pageable;
    g->host_numa_node = numa_node_of(pinned);
    if (g->host_numa_node >= 0)
        bench_gpu_set(g, BG_HOST_NUMA);
    g->gpu_numa_node = gpu_numa_node(g->pci_bus_id);
    if (g->gpu_numa_node >= 0)
        bench_gpu_set(g, BG_GPU_NUMA);

    step(w, "gpu %d: " BENCH_STEP_H2D, dev);
    TRY(g, cuMemcpyHtoDAsync_v2, (d1, pinned, w->copy_bytes, st)); /* warm-up */
    TRY(g, cuStreamSynchronize, (st));
    {
        CUresult rc = time_copy(w, C_H2D, d1, pinned, st, e0, e1, &g->h2d_pinned_bytes_per_s);

        if (rc != CUDA_SUCCESS) {
            g->error = failure(w, "cuMemcpyHtoDAsync_v2", rc);
            goto out;
        }
        bench_gpu_set(g, BG_H2D_PINNED);
        step(w, "gpu %d: " BENCH_STEP_D2H, dev);
        rc = time_copy(w, C_D2H, d1, pinned, st, e0, e1, &g->d2h_pinned_bytes_per_s);
        if (rc != CUDA_SUCCESS) {
            g->error = failure(w, "cuMemcpyDtoHAsync_v2", rc);
            goto out;
        }
        bench_gpu_set(g, BG_D2H_PINNED);
        step(w, "gpu %d: " BENCH_STEP_PAGEABLE, dev);
        rc = time_copy(w, C_H2D, d1, pageable, st, e0, e1, &g->h2d_pageable_bytes_per_s);
        if (rc == CUDA_SUCCESS)
            rc = time_copy(w, C_D2H, d1, pageable, st, e0, e1, &g->d2h_pageable_bytes_per_s);
        if (rc != CUDA_SUCCESS) {
            g->error = failure(w, "cuMemcpyHtoDAsync_v2 (pageable)", rc);
            goto out;
        }
        bench_gpu_set(g, BG_H2D_PAGEABLE);
        bench_gpu_set(g, BG_D2H_PAGEABLE);
    }
    /* both directions at once: one stream each, timed from before both to after both */
    step(w, "gpu %d: " BENCH_STEP_BIDIR, dev);
    TRY(g, cuStreamSynchronize, (st));
    TRY(g, cuStreamCreate, (&st2, CU_STREAM_NON_BLOCKING));
    TRY(g, cuEventRecord, (e0, st));
    TRY(g, cuEventRecord, (e2, st2));
    for (unsigned r = 0; r < w->reps; r++) {
        TRY(g, cuMemcpyHtoDAsync_v2, (d1, pinned, w->copy_bytes, st));
        TRY(g, cuMemcpyDtoHAsync_v2, (pinned2, d2, w->copy_bytes, st2));
    }
    TRY(g, cuEventRecord, (e1, st));
    TRY(g, cuEventRecord, (e3, st2));
    TRY(g, cuEventSynchronize, (e1));
    TRY(g, cuEventSynchronize, (e3));
    {
        float a = 0, b = 0;

        TRY(g, cuEventElapsedTime, (&a, e0, e1));
        TRY(g, cuEventElapsedTime, (&b, e2, e3));
        s = (a > b ? a : b) / 1e3;
        w->measured_s += s;
        if (s > 0) {
            g->bidir_bytes_per_s = 2.0 * (double)w->copy_bytes * w->reps / s;
            bench_gpu_set(g, BG_BIDIR);
        }
    }

    /* ---- device memory ---- */
    step(w, "gpu %d: " BENCH_STEP_D2D, dev);
    TRY(g, cuEventRecord, (e0, NULL));
    for (unsigned r = 0; r < w->reps; r++)
        TRY(g, cuMemcpyDtoD_v2, (d2, d1, w->copy_bytes));
    TRY(g, cuEventRecord, (e1, NULL));
    {
        CUresult rc = elapsed(w, e0, e1, &s);

        if (rc != CUDA_SUCCESS) {
            g->error = failure(w, "cuEventElapsedTime", rc);
            goto out;
        }
    }
    if (s > 0) {
        g->dtod_bytes_per_s = 2.0 * (double)w->copy_bytes * w->reps / s;
        bench_gpu_set(g, BG_DTOD);
    }
    TRY(g, cuMemFree_v2, (d1));
    TRY(g, cuMemFree_v2, (d2));
    d1 = d2 = 0;

    step(w, "gpu %d: " BENCH_STEP_KERNELS, dev);
    TRY(g, cuModuleLoadDataEx, (&w->mods[3 * dev], cuda_ptx_triad, 0, NULL, NULL));
    TRY(g, cuModuleLoadDataEx, (&w->mods[3 * dev + 1], cuda_ptx_fma, 0, NULL, NULL));
    TRY(g, cuModuleLoadDataEx, (&w->mods[3 * dev + 2], cuda_ptx_checksum, 0, NULL, NULL));
    TRY(g, cuModuleGetFunction, (&ftriad, w->mods[3 * dev], "gd_triad"));
    TRY(g, cuModuleGetFunction, (&ffma, w->mods[3 * dev + 1], "gd_fma"));
    TRY(g, cuModuleGetFunction, (&fsum, w->mods[3 * dev + 2], "gd_checksum"));

    /* ---- triad and checksum ---- */
    step(w, "gpu %d: " BENCH_STEP_TRIAD, dev);
    TRY(g, cuMemAlloc_v2, (&ta, w->triad_n * 4));
    TRY(g, cuMemAlloc_v2, (&tb, w->triad_n * 4));
    TRY(g, cuMemAlloc_v2, (&tc, w->triad_n * 4));
    TRY(g, cuMemAlloc_v2, (&sum, 8));
    if (w->hb == NULL) {
        w->hb = xmalloc(w->triad_n * 4);
        w->hc = xmalloc(w->triad_n * 4);
        for (size_t i = 0; i < w->triad_n; i++) {
            w->hb[i] = (float)(i % 1000) * 0.5f;
            w->hc[i] = (float)(i % 777) * 0.25f + 1.0f;
        }
        w->host_sum = host_checksum(w->hb, w->hc, TRIAD_SCALAR, w->triad_n);
    }
    TRY(g, cuMemcpyHtoD_v2, (tb, w->hb, w->triad_n * 4));
    TRY(g, cuMemcpyHtoD_v2, (tc, w->hc, w->triad_n * 4));
    {
        float scalar = TRIAD_SCALAR;
        unsigned long long n = w->triad_n;
        void *args[] = { &ta, &tb, &tc, &scalar, &n };
        unsigned blocks = (unsigned)((w->triad_n + 255) / 256);

        if (blocks > 65535)
            blocks = 65535;
        TRY(g, cuEventRecord, (e0, st));
        for (unsigned r = 0; r < w->reps; r++)
            TRY(g, cuLaunchKernel, (ftriad, blocks, 1, 1, 256, 1, 1, 0, st, args, NULL));
        TRY(g, cuEventRecord, (e1, st));
        {
            CUresult rc = elapsed(w, e0, e1, &s);

            if (rc != CUDA_SUCCESS) {
                g->error = failure(w, "cuLaunchKernel (triad)", rc);
                goto out;
            }
        }
        if (s > 0) {
            g->triad_bytes_per_s = 12.0 * (double)w->triad_n * w->reps / s;
            bench_gpu_set(g, BG_TRIAD);
        }
        step(w, "gpu %d: " BENCH_STEP_CHECKSUM, dev);
        {
            void *cargs[] = { &sum, &ta, &n };

            TRY(g, cuMemcpyHtoD_v2, (sum, &gsum, 8));
            TRY(g, cuLaunchKernel, (fsum, blocks, 1, 1, 256, 1, 1, 0, st, cargs, NULL));
            TRY(g, cuStreamSynchronize, (st));
            TRY(g, cuMemcpyDtoH_v2, (&gsum, sum, 8));
        }
        g->checksum = gsum;
        g->checksum_ok = gsum == w->host_sum;
        bench_gpu_set(g, BG_CHECKSUM);
    }

    /* ---- compute: the cuBLASLt GEMMs and one timed FMA burst (the sustained load runs later,
     * on every GPU at once) ---- */
    /* within the memory share, less what the triad still holds */
    if (bench_gemm_measure(&w->gemm, dev, g, st, e0, e1,
                           w->o->mem_share * (double)free_b - (3.0 * (double)w->triad_n * 4 + 8),
                           &w->measured_s) != 0)
        goto out;
    step(w, "gpu %d: " BENCH_STEP_FMA, dev);
    {
        int sms = 0;
        unsigned blocks, iters = w->fma_iters;
        float m = 0.999f, k = 0.001f;
        void *args[] = { &fout, &m, &k, &iters };
        double flop;

        TRY(g, cuDeviceGetAttribute, (&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
        blocks = (unsigned)(sms > 0 ? sms : 1) * 4;
        flop = 16.0 * iters * blocks * 256.0;
        TRY(g, cuMemAlloc_v2, (&fout, (size_t)blocks * 256 * 4));
        TRY(g, cuEventRecord, (e0, st));
        for (unsigned r = 0; r < w->reps; r++)
            TRY(g, cuLaunchKernel, (ffma, blocks, 1, 1, 256, 1, 1, 0, st, args, NULL));
        TRY(g, cuEventRecord, (e1, st));
        {
            CUresult rc = elapsed(w, e0, e1, &s);

            if (rc != CUDA_SUCCESS) {
                g->error = failure(w, "cuLaunchKernel (fma)", rc);
                goto out;
            }
        }
        if (g->compute_method == NULL) /* the GEMMs' method when they ran */
            g->compute_method = xstrdup("fma-kernel");
        if (s > 0) {
            g->fma_flops = flop * w->reps / s;
            bench_gpu_set(g, BG_FMA);
        }
    }
out:
    if (w->ctx[dev] != NULL && w->cu.cuCtxSetCurrent(w->ctx[dev]) == CUDA_SUCCESS) {
        CUdeviceptr ptrs[] = { d1, d2, ta, tb, tc, sum, fout };

        for (size_t i = 0; i < ARRAY_SIZE(ptrs); i++) {
            if (ptrs[i] != 0)
                w->cu.cuMemFree_v2(ptrs[i]);
        }
        if (st != NULL)
            w->cu.cuStreamDestroy_v2(st);
        if (st2 != NULL)
            w->cu.cuStreamDestroy_v2(st2);
        CUevent evs[] = { e0, e1, e2, e3 };
        for (size_t i = 0; i < ARRAY_SIZE(evs); i++) {
            if (evs[i] != NULL)
                w->cu.cuEventDestroy_v2(evs[i]);
        }
    }
}

/* Frees the host side; a context must be current for the pinned buffers. */
static void free_host(struct worker *w)
{
    if (w->pinned != NULL)
        w->cu.cuMemFreeHost(w->pinned);
    if (w->pinned2 != NULL)
        w->cu.cuMemFreeHost(w->pinned2);
    free(w->pageable);
    free(w->hb);
    free(w->hc);
    w->pinned = w->pinned2 = w->pageable = NULL;
    w->hb = w->hc = NULL;
}

/*
 * The sustained load runs on every measured GPU at the same time, so that the GPUs heat and draw
 * power together, as under a training job: neighbours' exhaust, a shared power supply and a
 * common power budget show, and a GPU that falls behind its siblings under the same load is
 * seen. One thread per GPU, each with the GPU's context current: each thread times its own
 * launches with events and waits on them, so a GPU that is slow (or wedged) holds up only its
 * own thread, never the others' queues. Streams driven round-robin from one thread would have
 * to wait on one GPU's event while the others ran dry, or give up timing each launch.
 */
#define LOAD_MAX_LAUNCHES 4000000u

struct load_job {
    struct worker *w;
    int dev;
    struct bench_gpu *g;
    double measured_s; /* device seconds this thread timed (added up after the join) */
    pthread_t thread;
    bool started;
};

static void *load_gpu(void *arg)
{
    struct load_job *job = arg;
    struct worker *w = job->w;
    struct bench_gpu *g = job->g;
    int dev = job->dev, sms = 0;
    CUdeviceptr fout = 0;
    CUstream st = NULL;
    CUevent e0 = NULL, e1 = NULL;
    CUfunction ffma;
    unsigned blocks, iters = w->fma_iters, launches = 0, cap = 1024;
    float m = 0.999f, k = 0.001f;
    void *args[] = { &fout, &m, &k, &iters };
    double flop, total = 0, *times = xcalloc(cap, sizeof(*times));

    TRY(g, cuCtxSetCurrent, (w->ctx[dev]));
    TRY(g, cuModuleGetFunction, (&ffma, w->mods[3 * dev + 1], "gd_fma"));
    TRY(g, cuDeviceGetAttribute, (&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
    blocks = (unsigned)(sms > 0 ? sms : 1) * 4;
    flop = 16.0 * iters * blocks * 256.0;
    TRY(g, cuMemAlloc_v2, (&fout, (size_t)blocks * 256 * 4));
    TRY(g, cuStreamCreate, (&st, CU_STREAM_NON_BLOCKING));
    TRY(g, cuEventCreate, (&e0, CU_EVENT_DEFAULT));
    TRY(g, cuEventCreate, (&e1, CU_EVENT_DEFAULT));
    /* until the duration is reached in device time; the cap only guards against a timer
     * that reads 0 (the deadline ends a worker that loops anyway) */
    while (total < w->o->duration_s && launches < LOAD_MAX_LAUNCHES) {
        float ms = 0;

        if (launches == cap) {
            cap *= 2;
            times = xreallocarray(times, cap, sizeof(*times));
        }
        TRY(g, cuEventRecord, (e0, st));
        TRY(g, cuLaunchKernel, (ffma, blocks, 1, 1, 256, 1, 1, 0, st, args, NULL));
        TRY(g, cuEventRecord, (e1, st));
        TRY(g, cuEventSynchronize, (e1));
        TRY(g, cuEventElapsedTime, (&ms, e0, e1));
        times[launches++] = ms / 1e3;
        total += ms / 1e3;
    }
    job->measured_s = total;
    if (launches >= 10 && total > 0) {
        unsigned tenth = launches / 10;
        double t0 = 0, t1 = 0;

        for (unsigned i = 0; i < tenth; i++) {
            t0 += times[i];
            t1 += times[launches - 1 - i];
        }
        g->sustained_first_flops = t0 > 0 ? flop * tenth / t0 : 0;
        g->sustained_last_flops = t1 > 0 ? flop * tenth / t1 : 0;
        g->sustained_flops = flop * launches / total;
        g->sustained_s = total;
        bench_gpu_set(g, BG_SUSTAINED);
    }
out:
    if (fout != 0)
        w->cu.cuMemFree_v2(fout);
    if (st != NULL)
        w->cu.cuStreamDestroy_v2(st);
    if (e0 != NULL)
        w->cu.cuEventDestroy_v2(e0);
    if (e1 != NULL)
        w->cu.cuEventDestroy_v2(e1);
    free(times);
    return NULL;
}

/* The sustained load on the n GPUs of gpus (CUDA ordinals devs) whose measurement went
 * through; *wall_s its wall time. "load start" and "load end" lines tell the parent when to
 * sample NVML (run.c). */
static void load_all(struct worker *w, const int *devs, struct bench_gpu *gpus, size_t n,
                     double *wall_s)
{
    struct timespec t0, t1;
    struct load_job *jobs = xcalloc(n + 1, sizeof(*jobs));
    char list[160] = "";
    size_t used = 0, k = 0;

    for (size_t i = 0; i < n; i++) {
        if (gpus[i].error != NULL)
            continue;
        jobs[k] = (struct load_job){ .w = w, .dev = devs[i], .g = &gpus[i] };
        if (used < sizeof(list))
            used +=
                (size_t)snprintf(list + used, sizeof(list) - used, "%s%d", k ? "," : "", devs[i]);
        k++;
    }
    if (k == 0) {
        free(jobs);
        return;
    }
    step(w, BENCH_STEP_LOAD, k == 1 ? "" : "s", list, w->o->duration_s);
    (void)!write(w->fd, "load start\n", 11);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (size_t i = 0; i < k; i++) {
        int rc = pthread_create(&jobs[i].thread, NULL, load_gpu, &jobs[i]);

        jobs[i].started = rc == 0;
        if (rc != 0)
            jobs[i].g->error = xasprintf("cannot start the load thread: %s", strerror(rc));
    }
    for (size_t i = 0; i < k; i++) {
        if (jobs[i].started)
            pthread_join(jobs[i].thread, NULL);
        w->measured_s += jobs[i].measured_s;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    *wall_s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    (void)!write(w->fd, "load end\n", 9);
    free(jobs);
}

/* Peer copies from a to b: bandwidth and the latency of a 4-byte copy. */
static void measure_pair(struct worker *w, int a, int b, struct bench_pair *p, char **error)
{
    CUdeviceptr da = 0, db = 0;
    CUevent e0 = NULL, e1 = NULL;
    CUstream st = NULL;
    int can = 0;
    double s;
    CUresult rc;

#define PTRY(call, args)                                                                           \
    do {                                                                                           \
        rc = w->cu.call args;                                                                      \
        if (rc != CUDA_SUCCESS) {                                                                  \
            *error = failure(w, #call, rc);                                                        \
            goto out;                                                                              \
        }                                                                                          \
    } while (0)

    step(w, "gpus %d -> %d: " BENCH_STEP_PEER, a, b);
    PTRY(cuDeviceCanAccessPeer, (&can, a, b));
    p->peer_access = can != 0;
    PTRY(cuCtxSetCurrent, (w->ctx[b]));
    PTRY(cuMemAlloc_v2, (&db, w->copy_bytes));
    PTRY(cuCtxSetCurrent, (w->ctx[a]));
    if (can) {
        rc = w->cu.cuCtxEnablePeerAccess(w->ctx[b], 0);
        if (rc != CUDA_SUCCESS && rc != CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) {
            *error = failure(w, "cuCtxEnablePeerAccess", rc);
            goto out;
        }
    }
    PTRY(cuMemAlloc_v2, (&da, w->copy_bytes));
    PTRY(cuStreamCreate, (&st, CU_STREAM_NON_BLOCKING));
    PTRY(cuEventCreate, (&e0, CU_EVENT_DEFAULT));
    PTRY(cuEventCreate, (&e1, CU_EVENT_DEFAULT));
    PTRY(cuMemcpyPeerAsync, (db, w->ctx[b], da, w->ctx[a], w->copy_bytes, st)); /* warm-up */
    PTRY(cuEventRecord, (e0, st));
    for (unsigned r = 0; r < w->reps; r++)
        PTRY(cuMemcpyPeerAsync, (db, w->ctx[b], da, w->ctx[a], w->copy_bytes, st));
    PTRY(cuEventRecord, (e1, st));
    PTRY(cuEventSynchronize, (e1));
    rc = elapsed(w, e0, e1, &s);
    if (rc != CUDA_SUCCESS) {
        *error = failure(w, "cuEventElapsedTime", rc);
        goto out;
    }
    p->bytes_per_s = s > 0 ? (double)w->copy_bytes * w->reps / s : 0;
    PTRY(cuEventRecord, (e0, st));
    for (unsigned r = 0; r < 10; r++)
        PTRY(cuMemcpyPeerAsync, (db, w->ctx[b], da, w->ctx[a], 4, st));
    PTRY(cuEventRecord, (e1, st));
    rc = elapsed(w, e0, e1, &s);
    if (rc != CUDA_SUCCESS) {
        *error = failure(w, "cuEventElapsedTime", rc);
        goto out;
    }
    p->latency_us = s / 10 * 1e6;
#undef PTRY
out:
    if (w->cu.cuCtxSetCurrent(w->ctx[a]) == CUDA_SUCCESS) {
        if (da != 0)
            w->cu.cuMemFree_v2(da);
        if (st != NULL)
            w->cu.cuStreamDestroy_v2(st);
        if (e0 != NULL)
            w->cu.cuEventDestroy_v2(e0);
        if (e1 != NULL)
            w->cu.cuEventDestroy_v2(e1);
    }
    if (db != 0 && w->cu.cuCtxSetCurrent(w->ctx[b]) == CUDA_SUCCESS)
        w->cu.cuMemFree_v2(db);
}

static bool selected(const struct bench_opts *o, const char *bus)
{
    if (o->pci_bus_ids == NULL)
        return true;
    for (size_t i = 0; i < o->n_pci_bus_ids; i++) {
        if (bench_same_pci(o->pci_bus_ids[i], bus))
            return true;
    }
    return false;
}

static int report(int fd, struct bench_info *b)
{
    json_t *j = bench_info_to_json(b);
    char *text = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(17));
    int r = 0;

    json_decref(j);
    if (text == NULL)
        return 1;
    if (write(fd, "result ", 7) != 7 || write(fd, text, strlen(text)) != (ssize_t)strlen(text) ||
        write(fd, "\n", 1) != 1)
        r = 1;
    free(text);
    return r;
}

int bench_worker(const struct bench_opts *o, int fd)
{
    struct worker w = { .o = o, .fd = fd };
    struct bench_info b = { .state = BENCH_OK };
    char *cause = NULL;
    int count = 0, *devs = NULL;
    size_t n = 0;
    CUresult rc;
    int status;

    w.copy_bytes = (size_t)(o->full ? 256 : 32) << 20;
    w.triad_n = (size_t)(o->full ? 64 : 4) << 20;
    w.reps = o->full ? 20 : 5;
    w.fma_iters = o->full ? 65536 : 16384;
    step(&w, "%s", BENCH_STEP_DRIVER);
    if (cuda_lib_open(&w.cu, o->cuda_lib, &cause) != CUDA_LIB_OK) {
        b.state = BENCH_FAILED;
        b.detail = cause;
        goto done;
    }
    step(&w, "cuInit");
    rc = w.cu.cuInit(0);
    if (rc == CUDA_SUCCESS)
        rc = w.cu.cuDriverGetVersion(&b.driver_version);
    if (rc == CUDA_SUCCESS) {
        step(&w, "cuDeviceGetCount");
        rc = w.cu.cuDeviceGetCount(&count);
    }
    if (rc != CUDA_SUCCESS) {
        b.state = BENCH_FAILED;
        b.detail = failure(&w, "cuInit", rc);
        goto done;
    }
    bench_gemm_open(&w.gemm, &w.cu, fd, o->full, &b);
    w.ctx = xcalloc((size_t)count + 1, sizeof(*w.ctx));
    w.mods = xcalloc(3 * (size_t)count + 1, sizeof(*w.mods));
    devs = xcalloc((size_t)count + 1, sizeof(*devs));
    b.gpus = xcalloc((size_t)count + 1, sizeof(*b.gpus));
    for (int d = 0; d < count; d++) {
        struct bench_gpu *g = &b.gpus[n];
        char name[256] = "", bus[64] = "";

        step(&w, "gpu %d: cuDeviceGetName", d);
        rc = w.cu.cuDeviceGetName(name, sizeof(name), d);
        if (rc == CUDA_SUCCESS)
            rc = w.cu.cuDeviceGetPCIBusId(bus, sizeof(bus), d);
        if (rc != CUDA_SUCCESS) {
            b.state = BENCH_FAILED;
            b.detail = failure(&w, "cuDeviceGetPCIBusId", rc);
            goto done;
        }
        if (!selected(o, bus))
            continue;
        g->index = (uint32_t)d;
        g->name = xstrdup(name);
        g->pci_bus_id = xstrdup(bus);
        devs[n++] = d;
        b.n_gpus = n;
        measure_gpu(&w, d, g);
    }
    load_all(&w, devs, b.gpus, n, &b.load_elapsed_s);
    /* every ordered pair of GPUs whose own measurement went through */
    b.pairs = xcalloc(n * n + 1, sizeof(*b.pairs));
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k < n; k++) {
            struct bench_pair *p = &b.pairs[b.n_pairs];
            char *err = NULL;

            if (i == k || b.gpus[i].error != NULL || b.gpus[k].error != NULL)
                continue;
            p->src = (uint32_t)devs[i];
            p->dst = (uint32_t)devs[k];
            measure_pair(&w, devs[i], devs[k], p, &err);
            if (err != NULL) {
                if (b.gpus[i].error == NULL)
                    b.gpus[i].error = err;
                else
                    free(err);
                continue;
            }
            b.n_pairs++;
        }
    }
    free_host(&w); /* while the last GPU's context is current */
    for (int d = 0; d < count; d++) {
        if (w.ctx[d] != NULL)
            w.cu.cuDevicePrimaryCtxRelease_v2(d);
    }
done:
    free_host(&w); /* when the loop above ended early; else done already */
    b.measured_s = w.measured_s;
    step(&w, "%s", BENCH_STEP_REPORTING);
    status = report(fd, &b);
    bench_info_free(&b);
    free(w.ctx);
    free(w.mods);
    free(devs);
    bench_gemm_close(&w.gemm);
    cuda_lib_close(&w.cu);
    return status;
}
