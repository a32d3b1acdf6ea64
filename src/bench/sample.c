/*
 * NVML read by the parent while the worker runs the sustained load on every selected GPU
 * (docs/bench.md): SM and memory clocks, temperature, power draw and clock event reasons, every
 * BENCH_SAMPLE_INTERVAL_MS, through an NVML session as `watch` samples
 * (src/collect/nvml-session.h): the library lives in a helper process and every request has a
 * deadline, so a driver that stops answering ends the sampling, said in load_note, never the bench.
 */
#include "bench/bench.h"
#include "collect/nvml-lib.h"
#include "collect/nvml-session.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

/* How long the helper may take to shut NVML down when sampling ends. */
#define SAMPLER_CLOSE_MS 1000

struct bench_sampler {
    struct nvml_session *ss;
    char **pci; /* per NVML index: its PCI address (from the full request), NULL when unknown */
    struct bench_load *acc; /* per NVML index */
    size_t n;
    char *note; /* why sampling did not start or stopped */
};

void bench_load_add(struct bench_load *a, const struct gpu *g)
{
    if (g->handle_rc != 0)
        return;
    a->samples++;
    if (gpu_valid(g, GPU_S_CLOCK_SM)) {
        if (!a->sm || g->clock_sm_mhz < a->sm_min)
            a->sm_min = g->clock_sm_mhz;
        if (!a->sm || g->clock_sm_mhz > a->sm_max)
            a->sm_max = g->clock_sm_mhz;
        a->sm = true;
    }
    if (gpu_valid(g, GPU_S_CLOCK_MEM)) {
        if (!a->mem || g->clock_mem_mhz < a->mem_min)
            a->mem_min = g->clock_mem_mhz;
        if (!a->mem || g->clock_mem_mhz > a->mem_max)
            a->mem_max = g->clock_mem_mhz;
        a->mem = true;
    }
    if (gpu_valid(g, GPU_S_TEMP) && (!a->temp || g->temp_c > a->temp_max)) {
        a->temp_max = g->temp_c;
        a->temp = true;
    }
    if (gpu_valid(g, GPU_S_POWER)) {
        if (a->n_power == 0 || g->power_mw > a->power_max)
            a->power_max = g->power_mw;
        a->power_sum += g->power_mw;
        a->n_power++;
    }
    if (gpu_valid(g, GPU_S_EVENT_REASONS)) {
        a->reasons |= g->clocks_event_reasons;
        a->reasons_valid = true;
    }
}

void bench_load_fill(struct bench_gpu *g, const struct bench_load *a)
{
    g->load_samples = a->samples;
    bench_gpu_set(g, BG_LOAD_SAMPLES);
    if (a->sm) {
        g->load_clock_sm_min_mhz = a->sm_min;
        g->load_clock_sm_max_mhz = a->sm_max;
        bench_gpu_set(g, BG_LOAD_CLOCK_SM);
    }
    if (a->mem) {
        g->load_clock_mem_min_mhz = a->mem_min;
        g->load_clock_mem_max_mhz = a->mem_max;
        bench_gpu_set(g, BG_LOAD_CLOCK_MEM);
    }
    if (a->temp) {
        g->load_temp_max_c = a->temp_max;
        bench_gpu_set(g, BG_LOAD_TEMP);
    }
    if (a->n_power > 0) {
        g->load_power_max_mw = a->power_max;
        g->load_power_mean_mw = (uint32_t)((a->power_sum + a->n_power / 2) / a->n_power);
        bench_gpu_set(g, BG_LOAD_POWER);
    }
    if (a->reasons_valid) {
        g->load_clocks_event_reasons = a->reasons;
        bench_gpu_set(g, BG_LOAD_REASONS);
    }
}

static const char *library_name(const char *lib)
{
    const char *env = getenv("GPUDOCTOR_NVML_LIB");

    if (lib != NULL && *lib)
        return lib;
    if (env != NULL && *env)
        return env;
    return NVML_DEFAULT_LIB;
}

/* Ends the sampling; the first reason given stays ("NVML was not sampled ...: cause"). */
static void stop(struct bench_sampler *sp, const char *what, const char *cause)
{
    if (sp->note == NULL)
        sp->note = xasprintf("%s: %s", what, cause ? cause : "no reason given");
    if (sp->ss != NULL)
        nvml_session_close(sp->ss, time_mono_ms() + SAMPLER_CLOSE_MS);
    sp->ss = NULL;
}

struct bench_sampler *bench_sampler_open(const char *lib, int64_t deadline_mono_ms)
{
    struct bench_sampler *sp = xcalloc(1, sizeof(*sp));
    struct nvml_system sys = { 0 };
    struct gpu *gpus = NULL;
    size_t n = 0;
    char *hung = NULL, *cause = NULL;

    sp->ss = nvml_session_open(library_name(lib), &cause);
    if (sp->ss == NULL) {
        stop(sp, "NVML was not sampled during the load", cause);
        free(cause);
        return sp;
    }
    if (nvml_session_full(sp->ss, deadline_mono_ms, &sys, &gpus, &n, &hung, &cause) !=
        NVML_SESSION_OK) {
        stop(sp, "NVML was not sampled during the load", cause);
    } else if (sys.init_rc != 0 || sys.load_error != 0) {
        stop(sp, "NVML was not sampled during the load",
             sys.init_error    ? sys.init_error
             : sys.load_detail ? sys.load_detail
                               : "the library did not initialise");
    } else {
        sp->n = n;
        sp->pci = xcalloc(n + 1, sizeof(*sp->pci));
        sp->acc = xcalloc(n + 1, sizeof(*sp->acc));
        for (size_t i = 0; i < n; i++) {
            if (gpus[i].handle_rc == 0 && gpu_valid(&gpus[i], GPU_S_PCI_BUS_ID))
                sp->pci[i] = xstrdup(gpus[i].pci_bus_id);
        }
    }
    for (size_t i = 0; i < n; i++)
        gpu_free(&gpus[i]);
    free(gpus);
    nvml_system_free(&sys);
    free(hung);
    free(cause);
    return sp;
}

bool bench_sampler_live(const struct bench_sampler *sp)
{
    return sp != NULL && sp->ss != NULL;
}

void bench_sampler_take(struct bench_sampler *sp, int64_t deadline_mono_ms)
{
    struct gpu *gpus = NULL;
    size_t n = 0;
    char *hung = NULL, *cause = NULL;

    if (!bench_sampler_live(sp))
        return;
    switch (nvml_session_sample(sp->ss, deadline_mono_ms, &gpus, &n, &hung, &cause)) {
    case NVML_SESSION_OK:
        for (size_t i = 0; i < n; i++) {
            if (gpus[i].index < sp->n)
                bench_load_add(&sp->acc[gpus[i].index], &gpus[i]);
        }
        break;
    case NVML_SESSION_TIMEOUT:
    case NVML_SESSION_FAILED:
        stop(sp, "NVML stopped answering during the load, sampling ended", cause);
        break;
    }
    for (size_t i = 0; i < n; i++)
        gpu_free(&gpus[i]);
    free(gpus);
    free(hung);
    free(cause);
}

void bench_sampler_close(struct bench_sampler *sp, struct bench_info *b, bool loaded)
{
    if (sp == NULL)
        return;
    if (sp->ss != NULL)
        nvml_session_close(sp->ss, time_mono_ms() + SAMPLER_CLOSE_MS);
    if (b != NULL && loaded) {
        for (size_t i = 0; i < b->n_gpus; i++) {
            for (size_t k = 0; k < sp->n; k++) {
                if (sp->pci[k] != NULL && bench_same_pci(sp->pci[k], b->gpus[i].pci_bus_id) &&
                    bench_gpu_valid(&b->gpus[i], BG_SUSTAINED))
                    bench_load_fill(&b->gpus[i], &sp->acc[k]);
            }
        }
    }
    if (b != NULL && sp->note != NULL) {
        free(b->load_note);
        b->load_note = sp->note;
        sp->note = NULL;
    }
    for (size_t i = 0; i < sp->n; i++)
        free(sp->pci[i]);
    free(sp->pci);
    free(sp->acc);
    free(sp->note);
    free(sp);
}
