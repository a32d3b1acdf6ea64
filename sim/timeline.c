/*
 * Values over time. A field's value at time t is its base value from the scenario, then each
 * timeline entry for that field in file order: a rate adds rate * (time spent inside its
 * window), rounded down and clamped; a window replaces the value while it is open; a square
 * wave cycles through its values while it is open. GPU memory follows its processes: what a
 * process gains or loses (or frees by going away) moves mem_used_bytes and mem_free_bytes.
 */
#include "sim.h"
#include "util/xalloc.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

uint64_t sim_raw_get(const void *obj, const struct jfield *f)
{
    const char *p = (const char *)obj + f->offset;

    switch (f->type) {
    case JF_U32:
    case JF_HEX32:
        return *(const uint32_t *)(const void *)p;
    case JF_I32:
    case JF_ENUM:
        return (uint64_t)(int64_t) * (const int32_t *)(const void *)p;
    case JF_U64:
    case JF_LIMIT:
    case JF_HEX64:
        return *(const uint64_t *)(const void *)p;
    case JF_I64:
        return (uint64_t) * (const int64_t *)(const void *)p;
    case JF_BOOL:
        return *(const bool *)(const void *)p;
    case JF_STR:
    case JF_DOUBLE:
    case JF_NONE:
        break;
    }
    return 0;
}

bool sim_field_is_numeric(const struct jfield *f)
{
    return f->type == JF_U32 || f->type == JF_I32 || f->type == JF_U64 || f->type == JF_I64;
}

static const struct jfield *slot_fields[GPU_S__COUNT];
static pthread_once_t slot_once = PTHREAD_ONCE_INIT;

static void index_slots(void)
{
    for (size_t i = 0; i < gpu_table.n_fields; i++) {
        const struct jfield *f = &gpu_table.fields[i];

        if (f->slot >= 0 && f->slot < GPU_S__COUNT)
            slot_fields[f->slot] = f;
    }
}

const struct jfield *sim_slot_field(enum gpu_slot slot)
{
    pthread_once(&slot_once, index_slots);
    if (slot_fields[slot] == NULL)
        fatal("gpu_table has no field for slot %d", (int)slot);
    return slot_fields[slot];
}

/* The range a field's C type holds, so that a rate never wraps around. */
static void type_range(const struct jfield *f, long double *lo, long double *hi)
{
    switch (f->type) {
    case JF_I32:
        *lo = INT32_MIN;
        *hi = INT32_MAX;
        return;
    case JF_U64:
        *lo = 0;
        *hi = (long double)INT64_MAX;
        return;
    case JF_I64:
        *lo = (long double)INT64_MIN;
        *hi = (long double)INT64_MAX;
        return;
    default:
        *lo = 0;
        *hi = UINT32_MAX;
        return;
    }
}

static bool is_signed(const struct jfield *f)
{
    return f->type == JF_I32 || f->type == JF_I64 || f->type == JF_ENUM;
}

static long double as_number(const struct jfield *f, uint64_t raw)
{
    return is_signed(f) ? (long double)(int64_t)raw : (long double)raw;
}

static uint64_t from_number(const struct jfield *f, long double x)
{
    long double lo, hi;

    type_range(f, &lo, &hi);
    if (x < lo)
        x = lo;
    if (x > hi)
        x = hi;
    return is_signed(f) ? (uint64_t)(int64_t)x : (uint64_t)x;
}

static uint64_t apply(const struct sim_event *ev, const struct jfield *f, uint64_t v, double t)
{
    switch (ev->kind) {
    case SIM_EV_RATE: {
        long double x;

        if (f == NULL || !(t > ev->from_s)) /* presence has no rates */
            return v;
        /* the small bias keeps 0.1 * 30 from rounding down to 2 */
        x = as_number(f, v) +
            floorl((long double)ev->rate_per_s * (fmin(t, ev->to_s) - ev->from_s) + 1e-9L);
        if (ev->has_max && x > ev->max)
            x = ev->max;
        if (ev->has_min && x < ev->min)
            x = ev->min;
        return from_number(f, x);
    }
    case SIM_EV_WINDOW:
        return t >= ev->from_s && t < ev->to_s ? ev->value : v;
    case SIM_EV_SQUARE: {
        double step = ev->period_s / (double)ev->n_values;
        double k;

        if (!(t >= ev->from_s && t < ev->to_s))
            return v;
        k = fmod(floor((t - ev->from_s) / step), (double)ev->n_values);
        return ev->values[(size_t)k];
    }
    }
    return v;
}

/* Value of field f (NULL: presence, a boolean) of GPU gi, process pi (-1: the GPU), starting from
 * v. */
static uint64_t at(const struct sim_scenario *s, uint32_t gi, long pi, long li,
                   const struct jfield *f, uint64_t v, double t)
{
    for (size_t i = 0; i < s->n_events; i++) {
        const struct sim_event *ev = &s->events[i];

        if (ev->gpu == gi && ev->proc == pi && ev->link == li && ev->field == f)
            v = apply(ev, f, v, t);
    }
    return v;
}

/* Whether pid has an entry in /proc (or $NVML_SIM_PROC): a zombie still has one. */
static bool pid_alive(uint32_t pid)
{
    const char *proc = getenv("NVML_SIM_PROC");
    char path[4096];

    snprintf(path, sizeof(path), "%s/%u", proc && *proc ? proc : "/proc", pid);
    return access(path, F_OK) == 0;
}

bool sim_proc_present(const struct sim_scenario *s, uint32_t gi, size_t pi, double t)
{
    if (s->processes_follow_proc && !pid_alive(s->gpus[gi].g.procs[pi].pid))
        return false;
    return at(s, gi, (long)pi, -1, NULL, 1, t) != 0;
}

int32_t sim_proc_value(const struct sim_scenario *s, uint32_t gi, size_t pi, const struct jfield *f,
                       double t, uint64_t *out)
{
    const struct gpu_proc *p = &s->gpus[gi].g.procs[pi];

    if (!jfield_valid(&gpu_proc_table, p, f))
        return NVML_ERROR_NOT_SUPPORTED;
    *out = at(s, gi, (long)pi, -1, f, sim_raw_get(p, f), t);
    return 0;
}

/* How much the GPU's processes hold now beyond what the scenario lists them with. */
static long double proc_mem_delta(const struct sim_scenario *s, uint32_t gi, double t)
{
    const struct gpu *g = &s->gpus[gi].g;
    const struct jfield *used = jtable_find(&gpu_proc_table, "used_bytes");
    long double delta = 0;

    for (size_t i = 0; i < g->n_procs; i++) {
        uint64_t now;

        if (sim_proc_value(s, gi, i, used, t, &now) != 0)
            continue;
        if (!sim_proc_present(s, gi, i, t))
            now = 0;
        delta += (long double)now - (long double)g->procs[i].used_bytes;
    }
    return delta;
}

int32_t sim_gpu_value(const struct sim_scenario *s, uint32_t gi, enum gpu_slot slot, double t,
                      uint64_t *out)
{
    const struct gpu *g = &s->gpus[gi].g;
    const struct jfield *f = sim_slot_field(slot);
    int32_t rc = g->rc[slot];
    uint64_t v;

    if (rc != 0) /* negative: not collected in a replayed snapshot, reads as unsupported */
        return rc < 0 ? NVML_ERROR_NOT_SUPPORTED : rc;
    v = at(s, gi, -1, -1, f, sim_raw_get(g, f), t);
    if (slot == GPU_S_MEM_USED) {
        long double x = (long double)v + proc_mem_delta(s, gi, t);

        if (g->rc[GPU_S_MEM_TOTAL] == 0 && x > (long double)g->mem_total_bytes)
            x = (long double)g->mem_total_bytes;
        v = from_number(f, x);
    } else if (slot == GPU_S_MEM_FREE && g->rc[GPU_S_MEM_USED] == 0) {
        uint64_t used;

        sim_gpu_value(s, gi, GPU_S_MEM_USED, t, &used);
        v = from_number(f, (long double)v - ((long double)used - (long double)g->mem_used_bytes));
    }
    *out = v;
    return 0;
}

const struct jfield *sim_link_field(enum gpu_nvlink_slot slot)
{
    for (size_t i = 0; i < gpu_nvlink_table.n_fields; i++) {
        if (gpu_nvlink_table.fields[i].slot == (int)slot)
            return &gpu_nvlink_table.fields[i];
    }
    fatal("gpu_nvlink_table has no field for slot %d", (int)slot);
}

int32_t sim_link_value(const struct sim_scenario *s, uint32_t gi, size_t li,
                       enum gpu_nvlink_slot slot, double t, uint64_t *out)
{
    const struct gpu_nvlink *l = &s->gpus[gi].g.nvlinks[li];
    const struct jfield *f = sim_link_field(slot);
    int32_t rc = l->rc[slot];

    if (rc != 0) /* negative: not collected in a replayed snapshot, reads as unsupported */
        return rc < 0 ? NVML_ERROR_NOT_SUPPORTED : rc;
    *out = at(s, gi, -1, (long)li, f, sim_raw_get(l, f), t);
    return 0;
}
