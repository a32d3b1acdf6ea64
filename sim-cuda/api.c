/*
 * The exported cu* functions of the CUDA simulator. Each call: initialised? the scenario's
 * hang or injected error for it (the device's rule before the scenario's), then its own work.
 * A hung call waits for a signal that ends the process, without holding the lock, as a call
 * into a wedged driver does.
 */
#include "cuda-sim.h"
#include "cuda/cuda-lib.h"
#include "util/xalloc.h"

#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CSIM_DECLARE(name, params) CUDA_SIM_API CUresult name params;
CUDA_FUNCTIONS(CSIM_DECLARE)
CUDA_OPTIONAL_FUNCTIONS(CSIM_DECLARE)
#undef CSIM_DECLARE

/* Device pointers are made up (never a host address): device d's space starts here. */
#define CSIM_DPTR_BASE   0x100000000000ull
#define CSIM_DPTR_SPAN   (1ull << 36)
#define CSIM_MAX_ENTRIES 16

enum csim_kernel { K_OTHER, K_TRIAD, K_FMA, K_CHECKSUM };

struct csim_alloc {
    CUdeviceptr dptr; /* 0: a pinned host allocation */
    void *mem;
    size_t size;
    int dev;
};

struct CUstream_st {
    int dev;
    double t; /* simulated seconds at which the last operation queued on it ends */
};

struct CUctx_st {
    int dev;
    int refs;
    bool *peer; /* peer access enabled, per device */
    struct CUstream_st null_stream;
};

struct CUevent_st {
    int dev;
    bool recorded;
    double t;
};

struct CUfunc_st {
    enum csim_kernel kind;
    char name[64];
};

struct CUmod_st {
    struct CUfunc_st fns[CSIM_MAX_ENTRIES];
    size_t n_fns;
};

/* Per device: its context, the engines' busy-until times and the work done (for throttling). */
struct csim_state {
    struct CUctx_st ctx;
    double h2d_busy, d2h_busy, compute_busy;
    double work_s;
    double lag; /* real_time: simulated time 0 of this device is wall time epoch_s + lag */
    uint64_t allocated, next_offset;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct csim_scenario *scn;
static struct csim_state *states;
static struct csim_alloc *allocs;
static size_t n_allocs;
static uint64_t allocated_total;
static _Thread_local struct CUctx_st *current;
static double epoch_s; /* CLOCK_MONOTONIC at cuInit: simulated time 0 of real_time scenarios */

/* ---- entry and exit of every call ---- */

static void hang_forever(void)
{
    for (;;)
        pause();
}

/* 0 to go on (lock held), else the code to return (lock not held). */
/*
 * CUDA_SIM_STATS=FILE: the seconds spent inside the simulator's calls (what a driver and a GPU
 * would do), rewritten in FILE after each call; make bench subtracts them from a run's wall time
 * to find gpudoctor's own (bench/bench-overhead.bench.sh).
 */
static int stats_fd = -2;
static double stats_in_s, stats_t0;

static double stats_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void stats_leave(void)
{
    char buf[64];
    int n;

    if (stats_fd < 0)
        return;
    double t1 = stats_now();

    stats_in_s += t1 - stats_t0;
    n = snprintf(buf, sizeof(buf), "%.6f\n", stats_in_s);
    if (n > 0 && pwrite(stats_fd, buf, (size_t)n, 0) < 0)
        stats_fd = -1;
    stats_in_s += stats_now() - t1; /* the write is the simulator's time too (the next says it) */
}

static CUresult enter(const char *fn, int dev)
{
    const struct csim_rule *r;

    pthread_mutex_lock(&lock);
    if (stats_fd == -2) {
        const char *path = getenv("CUDA_SIM_STATS");

        stats_fd = path && *path ? open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600) : -1;
    }
    if (stats_fd >= 0)
        stats_t0 = stats_now();
    if (scn == NULL) {
        pthread_mutex_unlock(&lock);
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    r = csim_rule(scn, dev, fn);
    if (r != NULL && r->hang) {
        pthread_mutex_unlock(&lock);
        hang_forever();
    }
    if (r != NULL && r->error != 0) {
        pthread_mutex_unlock(&lock);
        return r->error;
    }
    return CUDA_SUCCESS;
}

static CUresult leave(CUresult rc)
{
    stats_leave();
    pthread_mutex_unlock(&lock);
    return rc;
}

static int cur_dev(void)
{
    return current != NULL ? current->dev : -1;
}

#define ENTER(dev)                                                                                 \
    do {                                                                                           \
        CUresult enter_rc = enter(__func__, (dev));                                                \
        if (enter_rc != CUDA_SUCCESS)                                                              \
            return enter_rc;                                                                       \
    } while (0)

static bool dev_ok(CUdevice d)
{
    return d >= 0 && (size_t)d < scn->n_devs;
}

/* ---- time ---- */

static double mono_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * real_time: a device's simulated time t happens at wall time epoch_s + lag + t. A call that
 * waits for t while the wall clock is already past it finds the device idle, as the host was
 * slower than the device: the device's lag moves up so that t is now. Otherwise it waits until
 * the wall clock gets there, as a host waits for a busy GPU. Durations (events) stay the
 * simulated ones; only waiting follows the wall clock. With the lock held; returns the wall
 * time (since epoch_s) to wait for, or a negative number.
 */
static double pace(int dev, double t)
{
    double wall;

    if (!scn->real_time || dev < 0 || (size_t)dev >= scn->n_devs)
        return -1;
    wall = mono_s() - epoch_s;
    if (states[dev].lag + t <= wall) {
        states[dev].lag = wall - t;
        return -1;
    }
    return states[dev].lag + t;
}

/* Sleeps until the wall time until (since epoch_s); call without the lock. */
static void wait_until(double until)
{
    for (;;) {
        double left = until - (mono_s() - epoch_s);
        struct timespec ts;

        if (until < 0 || left <= 0)
            return;
        ts.tv_sec = (time_t)left;
        ts.tv_nsec = (long)((left - (double)ts.tv_sec) * 1e9);
        nanosleep(&ts, NULL);
    }
}

/* How fast device d runs now: after throttle_after_s of work, at throttle_share. */
static double speed(int d)
{
    const struct csim_dev *dv = &scn->devs[d];

    return states[d].work_s >= dv->throttle_after_s ? dv->throttle_factor : 1.0;
}

/* Queues an operation of duration seconds on stream s, on an engine: returns when it ends. */
static void schedule(struct CUstream_st *s, double *engine, double duration, int work_dev)
{
    double start = s->t > *engine ? s->t : *engine;

    s->t = start + duration;
    *engine = s->t;
    if (work_dev >= 0)
        states[work_dev].work_s += duration;
}

static struct CUstream_st *stream_of(CUstream h)
{
    if (h != NULL)
        return h;
    return current != NULL ? &current->null_stream : NULL;
}

/* ---- memory ---- */

static struct csim_alloc *find_dptr(CUdeviceptr p, size_t len, void **host)
{
    for (size_t i = 0; i < n_allocs; i++) {
        struct csim_alloc *a = &allocs[i];

        if (a->dptr != 0 && p >= a->dptr && p - a->dptr <= a->size &&
            len <= a->size - (p - a->dptr)) {
            *host = (char *)a->mem + (p - a->dptr);
            return a;
        }
    }
    return NULL;
}

static bool host_pinned(const void *p, size_t len)
{
    for (size_t i = 0; i < n_allocs; i++) {
        const struct csim_alloc *a = &allocs[i];
        const char *c = p, *m = a->mem;

        if (a->dptr == 0 && c >= m && c + len <= m + a->size)
            return true;
    }
    return false;
}

static CUresult add_alloc(CUdeviceptr dptr, size_t size, int dev, void **mem)
{
    void *p;

    if (size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (size > scn->memory_limit_bytes - allocated_total)
        return CUDA_ERROR_OUT_OF_MEMORY;
    p = aligned_alloc(256, (size + 255) / 256 * 256);
    if (p == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    allocs = xreallocarray(allocs, n_allocs + 1, sizeof(*allocs));
    allocs[n_allocs++] = (struct csim_alloc){ dptr, p, size, dev };
    allocated_total += size;
    *mem = p;
    return CUDA_SUCCESS;
}

static void drop_alloc(size_t i)
{
    allocated_total -= allocs[i].size;
    if (allocs[i].dev >= 0 && allocs[i].dptr != 0)
        states[allocs[i].dev].allocated -= allocs[i].size;
    free(allocs[i].mem);
    allocs[i] = allocs[--n_allocs];
}

/* ---- initialisation and devices ---- */

CUresult cuInit(unsigned int Flags)
{
    const char *path = getenv("NVML_SIM_SCENARIO");
    char *cause = NULL;

    if (Flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    if (scn == NULL) {
        if (path == NULL || *path == '\0') {
            pthread_mutex_unlock(&lock);
            return CUDA_ERROR_NO_DEVICE;
        }
        scn = csim_scenario_load(path, &cause);
        if (scn == NULL) {
            const char *quiet = getenv("NVML_SIM_QUIET");

            if (quiet == NULL || *quiet == '\0')
                fprintf(stderr, "CUDA simulator: %s\n", cause);
            free(cause);
            pthread_mutex_unlock(&lock);
            return CUDA_ERROR_INVALID_VALUE;
        }
        states = xcalloc(scn->n_devs + 1, sizeof(*states));
        epoch_s = mono_s();
        for (size_t i = 0; i < scn->n_devs; i++) {
            states[i].ctx.dev = (int)i;
            states[i].ctx.null_stream.dev = (int)i;
            states[i].ctx.peer = xcalloc(scn->n_devs + 1, sizeof(bool));
        }
    }
    pthread_mutex_unlock(&lock);
    ENTER(-1);
    if (scn->init_rc != 0)
        return leave(scn->init_rc);
    return leave(scn->n_devs == 0 ? CUDA_ERROR_NO_DEVICE : CUDA_SUCCESS);
}

CUresult cuDriverGetVersion(int *driverVersion)
{
    if (driverVersion == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    /* answers before cuInit, as the real one does */
    if (scn == NULL) {
        *driverVersion = 13000;
        return CUDA_SUCCESS;
    }
    ENTER(-1);
    *driverVersion = scn->driver_version;
    return leave(CUDA_SUCCESS);
}

CUresult cuDeviceGetCount(int *count)
{
    ENTER(-1);
    if (count == NULL)
        return leave(CUDA_ERROR_INVALID_VALUE);
    *count = (int)scn->n_devs;
    return leave(CUDA_SUCCESS);
}

CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
    ENTER(ordinal);
    if (device == NULL)
        return leave(CUDA_ERROR_INVALID_VALUE);
    if (!dev_ok(ordinal))
        return leave(CUDA_ERROR_INVALID_DEVICE);
    *device = ordinal;
    return leave(CUDA_SUCCESS);
}

CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
    ENTER(dev);
    if (name == NULL || len <= 0)
        return leave(CUDA_ERROR_INVALID_VALUE);
    if (!dev_ok(dev))
        return leave(CUDA_ERROR_INVALID_DEVICE);
    snprintf(name, (size_t)len, "%s", scn->devs[dev].name);
    return leave(CUDA_SUCCESS);
}

CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
    const struct csim_dev *d;

    ENTER(dev);
    if (pi == NULL)
        return leave(CUDA_ERROR_INVALID_VALUE);
    if (!dev_ok(dev))
        return leave(CUDA_ERROR_INVALID_DEVICE);
    d = &scn->devs[dev];
    switch (attrib) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
        *pi = d->cc_major;
        break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
        *pi = d->cc_minor;
        break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
        *pi = d->sm_count;
        break;
    case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID:
        *pi = d->pci_domain;
        break;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID:
        *pi = d->pci_bus;
        break;
    case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID:
        *pi = d->pci_device;
        break;
    case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT:
        *pi = 2;
        break;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
        *pi = 1;
        break;
    default:
        return leave(CUDA_ERROR_INVALID_VALUE);
    }
    return leave(CUDA_SUCCESS);
}

CUresult cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev)
{
    ENTER(dev);
    if (pciBusId == NULL || len <= 0)
        return leave(CUDA_ERROR_INVALID_VALUE);
    if (!dev_ok(dev))
        return leave(CUDA_ERROR_INVALID_DEVICE);
    snprintf(pciBusId, (size_t)len, "%s", scn->devs[dev].pci_bus_id);
    return leave(CUDA_SUCCESS);
}

CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
    ENTER(dev);
    if (bytes == NULL)
        return leave(CUDA_ERROR_INVALID_VALUE);
    if (!dev_ok(dev))
        return leave(CUDA_ERROR_INVALID_DEVICE);
    *bytes = scn->devs[dev].mem_total_bytes;
    return leave(CUDA_SUCCESS);
}

static const struct csim_pair *pair_of(int a, int b)
{
    for (size_t i = 0; i < scn->n_pairs; i++) {
        const struct csim_pair *p = &scn->pairs[i];

        if ((p->a == a && p->b == b) || (p->a == b && p->b == a))
            return p;
    }
    return NULL;
}

CUresult cuDeviceCanAccessPeer(int *canAccessPeer, CUdevice dev, CUdevice peerDev)
{
    const struct csim_pair *p;

    ENTER(dev);
    if (canAccessPeer == NULL)
        return leave(CUDA_ERROR_INVALID_VALUE);
    if (!dev_ok(dev) || !dev_ok(peerDev))
        return leave(CUDA_ERROR_INVALID_DEVICE);
    p = pair_of(dev, peerDev);
    *canAccessPeer = dev != peerDev && (p == NULL || !p->no_access);
    return leave(CUDA_SUCCESS);
}

/* ---- contexts ---- */

CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    ENTER(dev);
    if (pctx == NULL)
        return leave(CUDA_ERROR_INVALID_VALUE);
    if (!dev_ok(dev))
        return leave(CUDA_ERROR_INVALID_DEVICE);
    states[dev].ctx.refs++;
    *pctx = &states[dev].ctx;
    return leave(CUDA_SUCCESS);
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    ENTER(dev);
    if (!dev_ok(dev))
        return leave(CUDA_ERROR_INVALID_DEVICE);
    if (states[dev].ctx.refs == 0)
        return leave(CUDA_ERROR_INVALID_CONTEXT);
    if (--states[dev].ctx.refs == 0) {
        /* the primary context's memory goes with it */
        for (size_t i = n_allocs; i-- > 0;) {
            if (allocs[i].dev == dev && allocs[i].dptr != 0)
                drop_alloc(i);
        }
        memset(states[dev].ctx.peer, 0, scn->n_devs * sizeof(bool));
        if (current == &states[dev].ctx)
            current = NULL;
    }
    return leave(CUDA_SUCCESS);
}

CUresult cuCtxSetCurrent(CUcontext ctx)
{
    ENTER(ctx != NULL ? ctx->dev : -1);
    if (ctx != NULL && ctx->refs == 0)
        return leave(CUDA_ERROR_INVALID_CONTEXT);
    current = ctx;
    return leave(CUDA_SUCCESS);
}

CUresult cuCtxSynchronize(void)
{
    const struct csim_state *st;
    double until;

    ENTER(cur_dev());
    if (current == NULL)
        return leave(CUDA_ERROR_INVALID_CONTEXT);
    st = &states[current->dev];
    until = current->null_stream.t;
    until = st->h2d_busy > until ? st->h2d_busy : until;
    until = st->d2h_busy > until ? st->d2h_busy : until;
    until = st->compute_busy > until ? st->compute_busy : until;
    until = pace(current->dev, until);
    leave(CUDA_SUCCESS);
    wait_until(until);
    return CUDA_SUCCESS;
}

CUresult cuCtxEnablePeerAccess(CUcontext peerContext, unsigned int Flags)
{
    const struct csim_pair *p;

    ENTER(cur_dev());
    if (current == NULL)
        return leave(CUDA_ERROR_INVALID_CONTEXT);
    if (peerContext == NULL || Flags != 0)
        return leave(CUDA_ERROR_INVALID_VALUE);
    p = pair_of(current->dev, peerContext->dev);
    if (peerContext->dev == current->dev || (p != NULL && p->no_access))
        return leave(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED);
    if (current->peer[peerContext->dev])
        return leave(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED);
    current->peer[peerContext->dev] = true;
    return leave(CUDA_SUCCESS);
}

/* ---- memory ---- */

CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total)
{
    const struct csim_dev *d;
    uint64_t used;

    ENTER(cur_dev());
    if (current == NULL)
        return leave(CUDA_ERROR_INVALID_CONTEXT);
    if (free_bytes == NULL || total == NULL)
        return leave(CUDA_ERROR_INVALID_VALUE);
    d = &scn->devs[current->dev];
    used = d->mem_used_bytes + states[current->dev].allocated;
    *total = d->mem_total_bytes;
    *free_bytes = used < d->mem_total_bytes ? d->mem_total_bytes - used : 0;
    return leave(CUDA_SUCCESS);
}

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    struct csim_state *st;
    const struct csim_dev *d;
    CUdeviceptr p;
    CUresult rc;
    void *mem;

    ENTER(cur_dev());
    if (current == NULL)
        return leave(CUDA_ERROR_INVALID_CONTEXT);
    if (dptr == NULL)
        return leave(CUDA_ERROR_INVALID_VALUE);
    st = &states[current->dev];
    d = &scn->devs[current->dev];
    if (d->mem_used_bytes + st->allocated + bytesize > d->mem_total_bytes ||
        st->next_offset + bytesize > CSIM_DPTR_SPAN)
        return leave(CUDA_ERROR_OUT_OF_MEMORY);
    p = CSIM_DPTR_BASE + (uint64_t)current->dev * CSIM_DPTR_SPAN + st->next_offset;
    rc = add_alloc(p, bytesize, current->dev, &mem);
    if (rc != CUDA_SUCCESS)
        return leave(rc);
    st->allocated += bytesize;
    st->next_offset += (bytesize + 4095) / 4096 * 4096;
    *dptr = p;
    return leave(CUDA_SUCCESS);
}

CUresult cuMemFree_v2(CUdeviceptr dptr)
{
    ENTER(cur_dev());
    for (size_t i = 0; i < n_allocs; i++) {
        if (allocs[i].dptr != 0 && allocs[i].dptr == dptr) {
            drop_alloc(i);
            return leave(CUDA_SUCCESS);
        }
    }
    return leave(CUDA_ERROR_INVALID_VALUE);
}

CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
    (void)Flags;
    ENTER(cur_dev());
    if (pp == NULL)
        return leave(CUDA_ERROR_INVALID_VALUE);
    return leave(add_alloc(0, bytesize, -1, pp));
}

CUresult cuMemFreeHost(void *p)
{
    ENTER(cur_dev());
    for (size_t i = 0; i < n_allocs; i++) {
        if (allocs[i].dptr == 0 && allocs[i].mem == p) {
            drop_alloc(i);
            return leave(CUDA_SUCCESS);
        }
    }
    return leave(CUDA_ERROR_INVALID_VALUE);
}

/* ---- copies ---- */

static CUresult copy_host(bool to_dev, CUdeviceptr dptr, void *host, size_t n, CUstream hs)
{
    struct CUstream_st *s = stream_of(hs);
    struct csim_alloc *a;
    const struct csim_dev *d;
    double bps;
    void *mem;

    if (s == NULL)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (host == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    a = find_dptr(dptr, n, &mem);
    if (a == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (to_dev)
        memcpy(mem, host, n);
    else
        memcpy(host, mem, n);
    d = &scn->devs[a->dev];
    bps = to_dev ? d->h2d_pinned_bps : d->d2h_pinned_bps;
    if (!host_pinned(host, n))
        bps *= d->pageable_factor;
    schedule(s, to_dev ? &states[a->dev].h2d_busy : &states[a->dev].d2h_busy, (double)n / bps, -1);
    return CUDA_SUCCESS;
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
{
    ENTER(cur_dev());
    return leave(copy_host(true, dstDevice, (void *)(uintptr_t)srcHost, ByteCount, NULL));
}

CUresult cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
    ENTER(cur_dev());
    return leave(copy_host(false, srcDevice, dstHost, ByteCount, NULL));
}

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount,
                              CUstream hStream)
{
    ENTER(cur_dev());
    return leave(copy_host(true, dstDevice, (void *)(uintptr_t)srcHost, ByteCount, hStream));
}

CUresult cuMemcpyDtoHAsync_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount,
                              CUstream hStream)
{
    ENTER(cur_dev());
    return leave(copy_host(false, srcDevice, dstHost, ByteCount, hStream));
}

CUresult cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount)
{
    struct CUstream_st *s;
    struct csim_alloc *a, *b;
    void *dst, *src;
    int d;

    ENTER(cur_dev());
    s = stream_of(NULL);
    if (s == NULL)
        return leave(CUDA_ERROR_INVALID_CONTEXT);
    a = find_dptr(dstDevice, ByteCount, &dst);
    b = find_dptr(srcDevice, ByteCount, &src);
    if (a == NULL || b == NULL || a->dev != b->dev)
        return leave(CUDA_ERROR_INVALID_VALUE);
    memmove(dst, src, ByteCount);
    d = a->dev;
    /* read and write: twice the bytes through device memory */
    schedule(s, &states[d].compute_busy,
             2.0 * (double)ByteCount / (scn->devs[d].mem_bps * speed(d)), d);
    return leave(CUDA_SUCCESS);
}

static CUresult copy_peer(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx,
                          size_t n, CUstream hs)
{
    struct CUstream_st *s = stream_of(hs);
    const struct csim_pair *p;
    struct csim_alloc *a, *b;
    void *dm, *sm;
    double bps, lat;

    if (s == NULL || dctx == NULL || sctx == NULL)
        return CUDA_ERROR_INVALID_CONTEXT;
    a = find_dptr(dst, n, &dm);
    b = find_dptr(src, n, &sm);
    if (a == NULL || b == NULL || a->dev != dctx->dev || b->dev != sctx->dev)
        return CUDA_ERROR_INVALID_VALUE;
    memmove(dm, sm, n);
    p = pair_of(a->dev, b->dev);
    bps = p != NULL ? p->bps : scn->p2p_bps;
    lat = p != NULL ? p->latency_s : scn->p2p_latency_s;
    schedule(s, &states[b->dev].d2h_busy, lat + (double)n / bps, -1);
    return CUDA_SUCCESS;
}

CUresult cuMemcpyPeer(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                      CUcontext srcContext, size_t ByteCount)
{
    ENTER(cur_dev());
    return leave(copy_peer(dstDevice, dstContext, srcDevice, srcContext, ByteCount, NULL));
}

CUresult cuMemcpyPeerAsync(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                           CUcontext srcContext, size_t ByteCount, CUstream hStream)
{
    ENTER(cur_dev());
    return leave(copy_peer(dstDevice, dstContext, srcDevice, srcContext, ByteCount, hStream));
}

/* ---- streams and events ---- */

CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
    (void)Flags;
    ENTER(cur_dev());
    if (current == NULL)
        return leave(CUDA_ERROR_INVALID_CONTEXT);
    if (phStream == NULL)
        return leave(CUDA_ERROR_INVALID_VALUE);
    *phStream = xcalloc(1, sizeof(**phStream));
    (*phStream)->dev = current->dev;
    {
        /* a new stream starts now: after everything queued so far on the device */
        const struct csim_state *st = &states[current->dev];
        double t = current->null_stream.t;

        t = st->h2d_busy > t ? st->h2d_busy : t;
        t = st->d2h_busy > t ? st->d2h_busy : t;
        t = st->compute_busy > t ? st->compute_busy : t;
        (*phStream)->t = t;
    }
    return leave(CUDA_SUCCESS);
}

CUresult cuStreamSynchronize(CUstream hStream)
{
    struct CUstream_st *s;
    double until;

    ENTER(cur_dev());
    s = stream_of(hStream);
    if (s == NULL)
        return leave(CUDA_ERROR_INVALID_CONTEXT);
    until = pace(s->dev, s->t);
    leave(CUDA_SUCCESS);
    wait_until(until);
    return CUDA_SUCCESS;
}

CUresult cuStreamDestroy_v2(CUstream hStream)
{
    ENTER(cur_dev());
    if (hStream == NULL)
        return leave(CUDA_ERROR_INVALID_HANDLE);
    free(hStream);
    return leave(CUDA_SUCCESS);
}

CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
    (void)Flags;
    ENTER(cur_dev());
    if (current == NULL)
        return leave(CUDA_ERROR_INVALID_CONTEXT);
    if (phEvent == NULL)
        return leave(CUDA_ERROR_INVALID_VALUE);
    *phEvent = xcalloc(1, sizeof(**phEvent));
    (*phEvent)->dev = current->dev;
    return leave(CUDA_SUCCESS);
}

CUresult cuEventRecord(CUevent hEvent, CUstream hStream)
{
    struct CUstream_st *s;

    ENTER(cur_dev());
    s = stream_of(hStream);
    if (hEvent == NULL)
        return leave(CUDA_ERROR_INVALID_HANDLE);
    if (s == NULL)
        return leave(CUDA_ERROR_INVALID_CONTEXT);
    hEvent->recorded = true;
    hEvent->t = s->t;
    return leave(CUDA_SUCCESS);
}

CUresult cuEventSynchronize(CUevent hEvent)
{
    double until;

    ENTER(cur_dev());
    if (hEvent == NULL)
        return leave(CUDA_ERROR_INVALID_HANDLE);
    until = hEvent->recorded ? pace(hEvent->dev, hEvent->t) : -1;
    leave(CUDA_SUCCESS);
    wait_until(until);
    return CUDA_SUCCESS;
}

static CUresult elapsed(float *ms, CUevent a, CUevent b)
{
    if (ms == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (a == NULL || b == NULL || !a->recorded || !b->recorded)
        return CUDA_ERROR_INVALID_HANDLE;
    *ms = (float)((b->t - a->t) * 1e3);
    return CUDA_SUCCESS;
}

CUresult cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
    ENTER(cur_dev());
    return leave(elapsed(pMilliseconds, hStart, hEnd));
}

CUresult cuEventElapsedTime_v2(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
    ENTER(cur_dev());
    return leave(elapsed(pMilliseconds, hStart, hEnd));
}

CUresult cuEventDestroy_v2(CUevent hEvent)
{
    ENTER(cur_dev());
    if (hEvent == NULL)
        return leave(CUDA_ERROR_INVALID_HANDLE);
    free(hEvent);
    return leave(CUDA_SUCCESS);
}

/* ---- modules and kernels ---- */

/* The parameters each kernel of src/cuda/kernels takes (their .param lines). */
static const struct {
    const char *name;
    enum csim_kernel kind;
    int params;
} known_kernels[] = {
    { "gd_triad", K_TRIAD, 5 },
    { "gd_fma", K_FMA, 4 },
    { "gd_checksum", K_CHECKSUM, 3 },
};

/* Reads the .entry names of PTX text; a known kernel must have its parameter count. */
static CUresult parse_ptx(struct CUmod_st *m, const char *ptx)
{
    const char *p = ptx;

    if (strstr(ptx, ".version") == NULL || strstr(ptx, ".target") == NULL)
        return CUDA_ERROR_INVALID_IMAGE;
    while ((p = strstr(p, ".entry ")) != NULL && m->n_fns < CSIM_MAX_ENTRIES) {
        struct CUfunc_st *f = &m->fns[m->n_fns];
        const char *end = strchr(p, ')');
        size_t len;
        int params = 0;

        p += strlen(".entry ");
        len = strcspn(p, "( \t\n");
        if (len == 0 || len >= sizeof(f->name) || end == NULL)
            return CUDA_ERROR_INVALID_PTX;
        memcpy(f->name, p, len);
        f->name[len] = '\0';
        for (const char *q = p; q < end && (q = strstr(q, ".param")) != NULL && q < end; q++)
            params++;
        f->kind = K_OTHER;
        for (size_t i = 0; i < ARRAY_SIZE(known_kernels); i++) {
            if (strcmp(known_kernels[i].name, f->name) == 0) {
                if (known_kernels[i].params != params)
                    return CUDA_ERROR_INVALID_PTX;
                f->kind = known_kernels[i].kind;
            }
        }
        m->n_fns++;
        p = end;
    }
    return m->n_fns == 0 ? CUDA_ERROR_INVALID_PTX : CUDA_SUCCESS;
}

CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions,
                            CUjit_option *options, void **optionValues)
{
    struct CUmod_st *m;
    CUresult rc;

    (void)numOptions;
    (void)options;
    (void)optionValues;
    ENTER(cur_dev());
    if (current == NULL)
        return leave(CUDA_ERROR_INVALID_CONTEXT);
    if (module == NULL || image == NULL)
        return leave(CUDA_ERROR_INVALID_VALUE);
    m = xcalloc(1, sizeof(*m));
    rc = parse_ptx(m, image);
    if (rc != CUDA_SUCCESS) {
        free(m);
        return leave(rc);
    }
    *module = m;
    return leave(CUDA_SUCCESS);
}

CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
    ENTER(cur_dev());
    if (hfunc == NULL || hmod == NULL || name == NULL)
        return leave(CUDA_ERROR_INVALID_VALUE);
    for (size_t i = 0; i < hmod->n_fns; i++) {
        if (strcmp(hmod->fns[i].name, name) == 0) {
            *hfunc = &hmod->fns[i];
            return leave(CUDA_SUCCESS);
        }
    }
    return leave(CUDA_ERROR_NOT_FOUND);
}

CUresult cuModuleUnload(CUmodule hmod)
{
    ENTER(cur_dev());
    if (hmod == NULL)
        return leave(CUDA_ERROR_INVALID_HANDLE);
    free(hmod);
    return leave(CUDA_SUCCESS);
}

/* The words the checksum kernel mixes: see src/cuda/kernels/checksum.cu. */
static uint64_t mix(uint64_t i, uint32_t w)
{
    uint64_t v = (i << 32) ^ w;

    v ^= v >> 33;
    v *= 0xff51afd7ed558ccdULL;
    v ^= v >> 33;
    return v;
}

static CUresult launch(const struct CUfunc_st *f, uint64_t threads, CUstream hs, void **args)
{
    struct CUstream_st *s = stream_of(hs);
    int d = current->dev;
    const struct csim_dev *dv = &scn->devs[d];
    double rate = speed(d);
    void *a, *b, *c;

    if (s == NULL)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (args == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    switch (f->kind) {
    case K_TRIAD: {
        uint64_t n = *(uint64_t *)args[4];
        float sc = *(float *)args[3];
        float *fa, *fb, *fc;

        if (find_dptr(*(CUdeviceptr *)args[0], n * 4, &a) == NULL ||
            find_dptr(*(CUdeviceptr *)args[1], n * 4, &b) == NULL ||
            find_dptr(*(CUdeviceptr *)args[2], n * 4, &c) == NULL)
            return CUDA_ERROR_ILLEGAL_ADDRESS;
        fa = a;
        fb = b;
        fc = c;
        for (uint64_t i = 0; i < n; i++) {
            float prod = sc * fc[i];

            fa[i] = fb[i] + prod;
        }
        if (dv->corrupt && n > 0) {
            uint32_t w;

            memcpy(&w, &fa[n / 2], 4);
            w ^= 1u << 7; /* one flipped bit, as a failing memory cell gives */
            memcpy(&fa[n / 2], &w, 4);
        }
        schedule(s, &states[d].compute_busy, 12.0 * (double)n / (dv->mem_bps * rate), d);
        return CUDA_SUCCESS;
    }
    case K_FMA: {
        float m = *(float *)args[1], k = *(float *)args[2];
        uint32_t iters = *(uint32_t *)args[3];
        float x[8] = { 1.0f, 1.5f, 2.0f, 2.5f, 3.0f, 3.5f, 4.0f, 4.5f }, r;
        float *out;

        if (find_dptr(*(CUdeviceptr *)args[0], threads * 4, &a) == NULL)
            return CUDA_ERROR_ILLEGAL_ADDRESS;
        /* every thread computes the same: once here, the result written for all */
        for (uint32_t i = 0; i < iters; i++) {
            for (int j = 0; j < 8; j++)
                x[j] = fmaf(x[j], m, k);
        }
        r = ((x[0] + x[1]) + (x[2] + x[3])) + ((x[4] + x[5]) + (x[6] + x[7]));
        out = a;
        for (uint64_t t = 0; t < threads; t++)
            out[t] = r;
        schedule(s, &states[d].compute_busy,
                 16.0 * (double)iters * (double)threads / (dv->fma_flops * rate), d);
        return CUDA_SUCCESS;
    }
    case K_CHECKSUM: {
        uint64_t n = *(uint64_t *)args[2], sum = 0, *out;
        const uint32_t *w;

        if (find_dptr(*(CUdeviceptr *)args[0], 8, &a) == NULL ||
            find_dptr(*(CUdeviceptr *)args[1], n * 4, &b) == NULL)
            return CUDA_ERROR_ILLEGAL_ADDRESS;
        w = b;
        for (uint64_t i = 0; i < n; i++)
            sum += mix(i, w[i]);
        out = a;
        *out += sum;
        schedule(s, &states[d].compute_busy, 4.0 * (double)n / (dv->mem_bps * rate), d);
        return CUDA_SUCCESS;
    }
    case K_OTHER:
        break;
    }
    /* the simulator runs gpudoctor's own kernels only */
    return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                        unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                        unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                        void **kernelParams, void **extra)
{
    uint64_t threads = (uint64_t)gridDimX * gridDimY * gridDimZ * blockDimX * blockDimY * blockDimZ;

    (void)sharedMemBytes;
    ENTER(cur_dev());
    if (current == NULL)
        return leave(CUDA_ERROR_INVALID_CONTEXT);
    if (f == NULL)
        return leave(CUDA_ERROR_INVALID_HANDLE);
    if (threads == 0 || blockDimX * blockDimY * blockDimZ > 1024 || extra != NULL)
        return leave(CUDA_ERROR_INVALID_VALUE);
    return leave(launch(f, threads, hStream, kernelParams));
}

/* ---- error texts ---- */

CUresult cuGetErrorName(CUresult error, const char **pStr)
{
    const char *s = cuda_result_known_name(error);

    if (pStr == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *pStr = s;
    return s != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGetErrorString(CUresult error, const char **pStr)
{
    return cuGetErrorName(error, pStr);
}

/* ---- what the fake libcublasLt calls (cuda-sim.h) ---- */

int gpudoctor_csim_cublaslt_enter(const char *fn)
{
    const struct csim_rule *r;
    int dev;

    pthread_mutex_lock(&lock);
    if (scn == NULL || current == NULL) {
        pthread_mutex_unlock(&lock);
        return -1;
    }
    dev = current->dev;
    r = csim_cublaslt_rule(scn, dev, fn);
    pthread_mutex_unlock(&lock);
    if (r != NULL && r->hang)
        hang_forever();
    return r != NULL ? r->error : 0;
}

/* The rate of precision prec on device d: 0 where it has none. */
static double gemm_rate(int d, int prec)
{
    const struct csim_dev *dv = &scn->devs[d];
    int cc = dv->cc_major * 10 + dv->cc_minor;
    static const int since[CSIM_PRECS] = {
        [CSIM_TF32] = 80, [CSIM_FP16] = 70, [CSIM_BF16] = 80, [CSIM_FP8] = 89
    };

    if (prec < 0 || prec >= CSIM_PRECS || cc < since[prec])
        return 0;
    return dv->gemm_flops[prec];
}

double gpudoctor_csim_gemm_rate(int prec)
{
    double r = 0;

    pthread_mutex_lock(&lock);
    if (scn != NULL && current != NULL)
        r = gemm_rate(current->dev, prec);
    pthread_mutex_unlock(&lock);
    return r;
}

int gpudoctor_csim_gemm(CUstream hs, int prec, uint64_t n, CUdeviceptr a, size_t a_bytes,
                        CUdeviceptr b, size_t b_bytes, CUdeviceptr d, size_t d_bytes)
{
    const struct csim_alloc *x, *y, *z;
    struct CUstream_st *s;
    void *unused;
    double rate;
    int dev;

    ENTER(cur_dev());
    s = stream_of(hs);
    if (s == NULL || current == NULL)
        return leave(CUDA_ERROR_INVALID_CONTEXT);
    dev = current->dev;
    x = find_dptr(a, a_bytes, &unused);
    y = find_dptr(b, b_bytes, &unused);
    z = find_dptr(d, d_bytes, &unused);
    if (x == NULL || y == NULL || z == NULL || x->dev != dev || y->dev != dev || z->dev != dev ||
        s->dev != dev)
        return leave(CUDA_ERROR_ILLEGAL_ADDRESS);
    rate = gemm_rate(dev, prec);
    if (rate <= 0)
        return leave(CUDA_ERROR_NOT_SUPPORTED);
    schedule(s, &states[dev].compute_busy, 2.0 * (double)n * n * n / (rate * speed(dev)), dev);
    return leave(CUDA_SUCCESS);
}
