/*
 * Exported: running-process lists and per-process utilisation, with the two-call protocol
 * (ask for the count with *count = 0, then call again with a buffer) and the record layout
 * each symbol writes on a real driver (reference facts 6a):
 *   unversioned                 16-byte nvmlProcessInfo_v1_t
 *   _v2                         24-byte nvmlProcessInfo_v2_t
 *   _v3                         24 bytes, but 32 (nvmlProcessInfo_r535_t) when the scenario's
 *                               driver is 535.43.02 to 535.86.05, the releases that changed it
 */
#include "sim.h"
#include "util/strutil.h"
#include "util/xalloc.h"

#include <string.h>

#define R535_V3_FIRST "535.43.02"
#define R535_V3_LAST  "535.86.05"

static size_t v3_stride(const struct sim_scenario *s)
{
    if (s->driver_version != NULL && str_version_cmp(s->driver_version, R535_V3_FIRST) >= 0 &&
        str_version_cmp(s->driver_version, R535_V3_LAST) <= 0)
        return sizeof(nvmlProcessInfo_r535_t);
    return sizeof(nvmlProcessInfo_v2_t);
}

static const struct jfield *proc_field(const char *name)
{
    const struct jfield *f = jtable_find(&gpu_proc_table, name);

    if (f == NULL)
        fatal("gpu_proc_table has no field %s", name);
    return f;
}

static uint64_t proc_u64(struct sim_call *c, size_t pi, const char *name, uint64_t missing)
{
    uint64_t v;

    return sim_proc_value(c->scn, c->gi, pi, proc_field(name), c->t, &v) == 0 ? v : missing;
}

/* Writes the record of process pi in the layout of stride bytes at rec. */
static void write_record(struct sim_call *c, size_t pi, void *rec, size_t stride)
{
    const struct gpu_proc *p = &c->gpu->g.procs[pi];
    unsigned long long used = proc_u64(c, pi, "used_bytes", NVML_VALUE_NOT_AVAILABLE_ULL);
    unsigned int gi = (unsigned int)proc_u64(c, pi, "gpu_instance_id", 0xFFFFFFFFu);
    unsigned int ci = (unsigned int)proc_u64(c, pi, "compute_instance_id", 0xFFFFFFFFu);

    memset(rec, 0, stride);
    if (stride == sizeof(nvmlProcessInfo_v1_t)) {
        nvmlProcessInfo_v1_t *r = rec;

        r->pid = p->pid;
        r->usedGpuMemory = used;
    } else if (stride == sizeof(nvmlProcessInfo_v2_t)) {
        nvmlProcessInfo_v2_t *r = rec;

        r->pid = p->pid;
        r->usedGpuMemory = used;
        r->gpuInstanceId = gi;
        r->computeInstanceId = ci;
    } else {
        nvmlProcessInfo_r535_t *r = rec;

        r->pid = p->pid;
        r->usedGpuMemory = used;
        r->gpuInstanceId = gi;
        r->computeInstanceId = ci;
        r->usedGpuCcProtectedMemory = 0; /* no confidential computing here */
    }
}

/*
 * How many entries a call shows: all n, except that a size query leaves out the entries the
 * scenario says appear just after it (list_growth), as when a process starts between calls.
 */
static unsigned int visible(const struct sim_call *c, unsigned int n, bool query)
{
    if (!query)
        return n;
    return n > c->effect.growth ? n - c->effect.growth : 0;
}

static nvmlReturn_t proc_list(const char *fn, nvmlDevice_t device, uint32_t type,
                              unsigned int *infoCount, void *infos, size_t stride)
{
    struct sim_call c;
    nvmlReturn_t rc = sim_begin_dev(&c, fn, device, infoCount != NULL, false);
    unsigned int n = 0, shown, k = 0;
    bool query;

    if (rc != NVML_SUCCESS)
        return sim_end(&c, rc);
    if (stride == 0)
        stride = v3_stride(c.scn);
    rc = c.gpu->g.rc[GPU_S_PROCESSES];
    if (rc != NVML_SUCCESS)
        return sim_end(&c, rc < 0 ? NVML_ERROR_NOT_SUPPORTED : rc);
    for (size_t i = 0; i < c.gpu->g.n_procs; i++)
        n += (c.gpu->g.procs[i].type_mask & type) && sim_proc_present(c.scn, c.gi, i, c.t);
    query = *infoCount == 0 || infos == NULL;
    shown = visible(&c, n, query);
    if (shown == 0) {
        *infoCount = 0;
        return sim_end(&c, NVML_SUCCESS);
    }
    if (query || *infoCount < shown) {
        *infoCount = shown;
        return sim_end(&c, NVML_ERROR_INSUFFICIENT_SIZE);
    }
    for (size_t i = 0; i < c.gpu->g.n_procs; i++) {
        if ((c.gpu->g.procs[i].type_mask & type) && sim_proc_present(c.scn, c.gi, i, c.t))
            write_record(&c, i, (char *)infos + (size_t)k++ * stride, stride);
    }
    *infoCount = n;
    return sim_end(&c, NVML_SUCCESS);
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device, unsigned int *infoCount,
                                                  nvmlProcessInfo_v1_t *infos)
{
    return proc_list(__func__, device, GPU_PROC_COMPUTE, infoCount, infos, sizeof(*infos));
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device, unsigned int *infoCount,
                                                     nvmlProcessInfo_v2_t *infos)
{
    return proc_list(__func__, device, GPU_PROC_COMPUTE, infoCount, infos, sizeof(*infos));
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *infoCount,
                                                     void *infos)
{
    return proc_list(__func__, device, GPU_PROC_COMPUTE, infoCount, infos, 0);
}

nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses(nvmlDevice_t device, unsigned int *infoCount,
                                                   nvmlProcessInfo_v1_t *infos)
{
    return proc_list(__func__, device, GPU_PROC_GRAPHICS, infoCount, infos, sizeof(*infos));
}

nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v2(nvmlDevice_t device, unsigned int *infoCount,
                                                      nvmlProcessInfo_v2_t *infos)
{
    return proc_list(__func__, device, GPU_PROC_GRAPHICS, infoCount, infos, sizeof(*infos));
}

nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t device, unsigned int *infoCount,
                                                      void *infos)
{
    return proc_list(__func__, device, GPU_PROC_GRAPHICS, infoCount, infos, 0);
}

nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses(nvmlDevice_t device, unsigned int *infoCount,
                                                     nvmlProcessInfo_v1_t *infos)
{
    return proc_list(__func__, device, GPU_PROC_MPS, infoCount, infos, sizeof(*infos));
}

nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v2(nvmlDevice_t device,
                                                        unsigned int *infoCount,
                                                        nvmlProcessInfo_v2_t *infos)
{
    return proc_list(__func__, device, GPU_PROC_MPS, infoCount, infos, sizeof(*infos));
}

nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v3(nvmlDevice_t device,
                                                        unsigned int *infoCount, void *infos)
{
    return proc_list(__func__, device, GPU_PROC_MPS, infoCount, infos, 0);
}

/*
 * When the driver last sampled process pid, at Unix time now (microseconds): it samples each
 * process once per period, every process at its own moment of the period (a phase taken from
 * the pid, so that it stays put from call to call). A real driver's samples carry one time
 * stamp per process too (NVIDIA/go-nvml#51: one read, seven processes, seven time stamps).
 */
static unsigned long long sample_time(unsigned int pid, unsigned long long now)
{
    unsigned long long phase = (unsigned long long)pid * 2654435761ULL % SIM_SAMPLE_PERIOD_US;

    if (now < phase)
        return 0;
    return (now - phase) / SIM_SAMPLE_PERIOD_US * SIM_SAMPLE_PERIOD_US + phase;
}

/* Whether process i has a utilisation sample newer than last_seen; its sm_util_pct in *sm. */
static bool has_sample(struct sim_call *c, size_t i, unsigned long long now,
                       unsigned long long last_seen, uint64_t *sm)
{
    return sim_proc_value(c->scn, c->gi, i, proc_field("sm_util_pct"), c->t, sm) == 0 &&
           sim_proc_present(c->scn, c->gi, i, c->t) &&
           sample_time(c->gpu->g.procs[i].pid, now) > last_seen;
}

/*
 * Per-process utilisation: one sample per listed process that has sm_util_pct (and the other
 * three), stamped with the moment the driver last sampled that process (sample_time). Only
 * samples newer than lastSeenTimeStamp count; NOT_FOUND when none does.
 */
nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t device,
                                             nvmlProcessUtilizationSample_t *utilization,
                                             unsigned int *processSamplesCount,
                                             unsigned long long lastSeenTimeStamp)
{
    struct sim_call c;
    nvmlReturn_t rc = sim_begin_dev(&c, __func__, device, processSamplesCount != NULL, false);
    unsigned long long now;
    unsigned int n = 0, shown, k = 0;
    unsigned int mig = 0;
    uint64_t v;
    bool query;

    if (rc != NVML_SUCCESS)
        return sim_end(&c, rc);
    rc = c.gpu->g.rc[GPU_S_PROCESS_UTIL];
    if (rc != NVML_SUCCESS)
        return sim_end(&c, rc < 0 ? NVML_ERROR_NOT_SUPPORTED : rc);
    if (sim_u32(&c, GPU_S_MIG_MODE, &mig) == NVML_SUCCESS && mig)
        return sim_end(&c, NVML_ERROR_NOT_SUPPORTED);
    now = (unsigned long long)sim_now_real_us();
    for (size_t i = 0; i < c.gpu->g.n_procs; i++)
        n += has_sample(&c, i, now, lastSeenTimeStamp, &v);
    query = *processSamplesCount == 0 || utilization == NULL;
    shown = visible(&c, n, query);
    if (shown == 0)
        return sim_end(&c, NVML_ERROR_NOT_FOUND);
    if (query || *processSamplesCount < shown) {
        *processSamplesCount = shown;
        return sim_end(&c, NVML_ERROR_INSUFFICIENT_SIZE);
    }
    for (size_t i = 0; i < c.gpu->g.n_procs; i++) {
        nvmlProcessUtilizationSample_t *s;

        if (!has_sample(&c, i, now, lastSeenTimeStamp, &v))
            continue;
        s = &utilization[k++];
        memset(s, 0, sizeof(*s));
        s->pid = c.gpu->g.procs[i].pid;
        s->timeStamp = sample_time(s->pid, now);
        s->smUtil = (unsigned int)v;
        s->memUtil = (unsigned int)proc_u64(&c, i, "mem_util_pct", 0);
        s->encUtil = (unsigned int)proc_u64(&c, i, "enc_util_pct", 0);
        s->decUtil = (unsigned int)proc_u64(&c, i, "dec_util_pct", 0);
    }
    *processSamplesCount = n;
    return sim_end(&c, NVML_SUCCESS);
}
