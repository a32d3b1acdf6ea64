/*
 * The library's state: the scenario loaded by the first nvmlInit and kept while the init
 * reference count is above zero, one lock around everything (clients call from several
 * threads), device handles, what a call inherits from the scenario's injected errors, delays
 * and hangs, and the error texts nvmlErrorString returns.
 */
#include "sim.h"
#include "util/strutil.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned refcount;
static struct sim_scenario *scn; /* non-NULL exactly while refcount > 0 */
static bool init_v1;
static bool t0_set;
static int64_t t0_mono_us;

/*
 * Why the last nvmlInit failed, in words, returned by nvmlErrorString for that code. Every text
 * ever made is kept until the process ends: a caller may hold the pointer nvmlErrorString gave
 * it for as long as it likes, as it may with the real library's static strings.
 */
struct detail {
    struct detail *next;
    int32_t rc;
    char *text;
};
static struct detail *details;
static const struct detail *current;

/*
 * NVIDIA's wording for every return code, as nvmlErrorString of the real library gives it
 * (docs/simulator.md, "Error texts", names the source of each): the texts of NVIDIA's
 * nvml_error_strings.h (NVIDIA/DCGM), which match what nvidia-smi prints ("Failed to initialize
 * NVML: Driver/library version mismatch"); texts seen from the library for 25 and 27; the
 * header's own comment for the codes no public source shows the library's text for.
 */
static const struct {
    nvmlReturn_t rc;
    const char *text;
} rc_texts[] = {
    { NVML_SUCCESS, "Success" },
    { NVML_ERROR_UNINITIALIZED, "Uninitialized" },
    { NVML_ERROR_INVALID_ARGUMENT, "Invalid Argument" },
    { NVML_ERROR_NOT_SUPPORTED, "Not Supported" },
    { NVML_ERROR_NO_PERMISSION, "Insufficient Permissions" },
    { NVML_ERROR_ALREADY_INITIALIZED, "Already Initialized" },
    { NVML_ERROR_NOT_FOUND, "Not Found" },
    { NVML_ERROR_INSUFFICIENT_SIZE, "Insufficient Size" },
    { NVML_ERROR_INSUFFICIENT_POWER, "Insufficient External Power" },
    { NVML_ERROR_DRIVER_NOT_LOADED, "Driver Not Loaded" },
    { NVML_ERROR_TIMEOUT, "Timeout" },
    { NVML_ERROR_IRQ_ISSUE, "Interrupt Request Issue" },
    { NVML_ERROR_LIBRARY_NOT_FOUND, "NVML Shared Library Not Found" },
    { NVML_ERROR_FUNCTION_NOT_FOUND, "Function Not Found" },
    { NVML_ERROR_CORRUPTED_INFOROM, "Corrupted infoROM" },
    { NVML_ERROR_GPU_IS_LOST, "GPU is lost" },
    { NVML_ERROR_RESET_REQUIRED, "GPU requires reset" },
    { NVML_ERROR_OPERATING_SYSTEM, "GPU access blocked by the operating system" },
    { NVML_ERROR_LIB_RM_VERSION_MISMATCH, "Driver/library version mismatch" },
    { NVML_ERROR_IN_USE, "In use by another client" },
    { NVML_ERROR_MEMORY, "Insufficient Memory" },
    { NVML_ERROR_NO_DATA, "No data" },
    { NVML_ERROR_VGPU_ECC_NOT_SUPPORTED,
      "The requested vgpu operation is not available on target device, becasue ECC is enabled" },
    { NVML_ERROR_INSUFFICIENT_RESOURCES, "Insufficient Resources" },
    { NVML_ERROR_FREQ_NOT_SUPPORTED, "Ran out of critical resources, other than memory" },
    { NVML_ERROR_ARGUMENT_VERSION_MISMATCH, "Argument version mismatch" },
    { NVML_ERROR_DEPRECATED, "The requested functionality has been deprecated" },
    { NVML_ERROR_NOT_READY, "System is not in ready state" },
    { NVML_ERROR_GPU_NOT_FOUND, "No GPUs were found" },
    { NVML_ERROR_INVALID_STATE, "Resource not in correct state to perform requested operation" },
    { NVML_ERROR_RESET_TYPE_NOT_SUPPORTED, "Reset not supported for given device/parameters" },
    { NVML_ERROR_UNKNOWN, "Unknown Error" },
};

/*
 * Unloaded (dlclose, or the end of the process): the explanations kept for nvmlErrorString and a
 * scenario a client never shut down go with the library, not left behind as leaks.
 */
__attribute__((destructor)) static void sim_unload(void)
{
    pthread_mutex_lock(&lock);
    current = NULL;
    while (details != NULL) {
        struct detail *d = details;

        details = d->next;
        free(d->text);
        free(d);
    }
    if (scn != NULL) {
        sim_scenario_free(scn);
        scn = NULL;
        refcount = 0;
    }
    pthread_mutex_unlock(&lock);
}

/* Remembers text (taking it) as the explanation of rc; prints it once unless quiet. */
static void set_detail(int32_t rc, char *text)
{
    const char *quiet = getenv("NVML_SIM_QUIET");
    struct detail *d;

    for (d = details; d != NULL; d = d->next) {
        if (d->rc == rc && strcmp(d->text, text) == 0)
            break;
    }
    if (d != NULL) {
        free(text);
    } else {
        d = xcalloc(1, sizeof(*d));
        d->rc = rc;
        d->text = text;
        d->next = details;
        details = d;
        if (quiet == NULL || *quiet == '\0')
            fprintf(stderr, "%s\n", text);
    }
    current = d;
}

const char *nvmlErrorString(nvmlReturn_t result)
{
    const char *s = NULL;

    pthread_mutex_lock(&lock);
    if (current != NULL && current->rc == result)
        s = current->text;
    pthread_mutex_unlock(&lock);
    if (s != NULL)
        return s;
    for (size_t i = 0; i < ARRAY_SIZE(rc_texts); i++) {
        if (rc_texts[i].rc == result)
            return rc_texts[i].text;
    }
    return "Unknown return code";
}

int64_t sim_now_real_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

double sim_clock(const struct sim_scenario *s)
{
    if (!isnan(s->epoch_s))
        return (double)sim_now_real_us() / 1e6 - s->epoch_s;
    return (double)(time_mono_us() - t0_mono_us) / 1e6;
}

/* Loads the scenario NVML_SIM_SCENARIO names; on failure records why and returns the code. */
static nvmlReturn_t load(struct sim_scenario **out)
{
    const char *path = getenv("NVML_SIM_SCENARIO");
    const char *epoch = getenv("NVML_SIM_EPOCH");
    struct sim_scenario *s;
    char *cause = NULL;

    if (path == NULL || *path == '\0') {
        set_detail(NVML_ERROR_DRIVER_NOT_LOADED,
                   xstrdup("NVML simulator: NVML_SIM_SCENARIO is not set: name a scenario file "
                           "(see docs/simulator.md)"));
        return NVML_ERROR_DRIVER_NOT_LOADED;
    }
    s = sim_scenario_load(path, &cause);
    if (s == NULL) {
        set_detail(NVML_ERROR_UNKNOWN, xasprintf("NVML simulator: %s", cause));
        free(cause);
        return NVML_ERROR_UNKNOWN;
    }
    if (epoch != NULL && *epoch != '\0' &&
        (!str_to_double(epoch, &s->epoch_s) || !isfinite(s->epoch_s))) {
        set_detail(NVML_ERROR_UNKNOWN,
                   xasprintf("NVML simulator: NVML_SIM_EPOCH=\"%s\": expected Unix seconds such "
                             "as 1767225600.25",
                             epoch));
        sim_scenario_free(s);
        return NVML_ERROR_UNKNOWN;
    }
    *out = s;
    return NVML_SUCCESS;
}

/*
 * What the scenario injects into fn on GPU sg (NULL for system functions): the most specific
 * rule that says something wins, in this order: the GPU's rule for exactly fn, the GPU's rule
 * for fn's root name, the scenario's rule for fn, the scenario's rule for the root.
 */
static void resolve(const struct sim_scenario *s, const struct sim_gpu *sg, const char *fn,
                    struct sim_effect *eff)
{
    const struct sim_rule *r[4];
    char root[96];

    sim_fn_root(fn, root, sizeof(root));
    r[0] = sg ? sim_inject_find(&sg->inject, fn) : NULL;
    r[1] = sg ? sim_inject_find(&sg->inject, root) : NULL;
    r[2] = sim_inject_find(&s->inject, fn);
    r[3] = sim_inject_find(&s->inject, root);
    memset(eff, 0, sizeof(*eff));
    for (int i = 3; i >= 0; i--) {
        if (r[i] == NULL)
            continue;
        if (r[i]->has_error)
            eff->error = r[i]->error;
        if (r[i]->has_delay)
            eff->delay_ms = r[i]->delay_ms;
        if (r[i]->has_growth)
            eff->growth = r[i]->growth;
        eff->hang = eff->hang || r[i]->hang;
    }
}

/* A delay or a hang, served without the lock so that other threads carry on. */
static void wait_effect(const struct sim_effect *eff)
{
    if (eff->hang) {
        for (;;)
            pause(); /* a wedged driver: only a signal that kills the process ends this */
    }
    time_sleep_ms(eff->delay_ms);
}

nvmlReturn_t sim_init(const char *fn, bool v1)
{
    bool waited = false;

    for (;;) {
        struct sim_scenario *s;
        struct sim_effect eff;
        nvmlReturn_t rc = NVML_SUCCESS;
        bool owned;

        pthread_mutex_lock(&lock);
        owned = refcount == 0;
        if (owned) {
            rc = load(&s);
            if (rc != NVML_SUCCESS) {
                pthread_mutex_unlock(&lock);
                return rc;
            }
        } else {
            s = scn;
        }
        resolve(s, NULL, fn, &eff);
        if (!waited && (eff.hang || eff.delay_ms > 0)) {
            if (owned)
                sim_scenario_free(s);
            pthread_mutex_unlock(&lock);
            wait_effect(&eff);
            waited = true;
            continue; /* the world may have changed meanwhile: start again */
        }
        if (owned && s->init_rc != 0) {
            rc = s->init_rc;
            if (s->init_error != NULL)
                set_detail(rc, xstrdup(s->init_error));
        } else if (eff.error != 0) {
            rc = eff.error;
        }
        if (rc != NVML_SUCCESS) {
            if (owned)
                sim_scenario_free(s);
            pthread_mutex_unlock(&lock);
            return rc;
        }
        if (owned) {
            scn = s;
            init_v1 = v1;
            current = NULL;
            if (!t0_set) {
                t0_set = true;
                t0_mono_us = time_mono_us();
            }
        }
        refcount++;
        pthread_mutex_unlock(&lock);
        return NVML_SUCCESS;
    }
}

void sim_unref(void)
{
    if (refcount > 0 && --refcount == 0) {
        sim_scenario_free(scn);
        scn = NULL;
    }
}

bool sim_v1_init(void)
{
    return init_v1;
}

bool sim_gpu_inaccessible(const struct sim_gpu *g)
{
    return g->g.handle_rc == NVML_ERROR_NO_PERMISSION;
}

struct sim_gpu *sim_find_handle(struct sim_scenario *s, nvmlDevice_t device, int32_t *mig)
{
    uintptr_t d = (uintptr_t)device;

    for (size_t i = 0; i < s->n_gpus; i++) {
        struct sim_gpu *sg = &s->gpus[i];
        uintptr_t first = (uintptr_t)&sg->migs[0];

        if (sg->g.handle_rc != 0)
            continue;
        if (device == &sg->handle) {
            *mig = -1;
            return sg;
        }
        if (d >= first && d < first + sizeof(sg->migs) && (d - first) % sizeof(sg->migs[0]) == 0) {
            *mig = (int32_t)((d - first) / sizeof(sg->migs[0]));
            return sg;
        }
    }
    return NULL;
}

static nvmlReturn_t begin(struct sim_call *c, const char *fn, bool is_dev, nvmlDevice_t device,
                          bool args_ok, bool mig_ok)
{
    bool waited = false;

    memset(c, 0, sizeof(*c));
    c->fn = fn;
    c->mig = -1;
    for (;;) {
        pthread_mutex_lock(&lock);
        c->locked = true;
        if (refcount == 0)
            return NVML_ERROR_UNINITIALIZED;
        c->scn = scn;
        c->t = sim_clock(scn);
        if (is_dev) {
            c->gpu = sim_find_handle(scn, device, &c->mig);
            if (c->gpu == NULL)
                return NVML_ERROR_INVALID_ARGUMENT;
            c->gi = (uint32_t)(c->gpu - scn->gpus);
        }
        if (!args_ok)
            return NVML_ERROR_INVALID_ARGUMENT;
        resolve(scn, c->gpu, fn, &c->effect);
        if (waited || (!c->effect.hang && c->effect.delay_ms == 0))
            break;
        pthread_mutex_unlock(&lock);
        c->locked = false;
        wait_effect(&c->effect);
        waited = true;
    }
    if (c->effect.error != 0)
        return c->effect.error;
    if (c->mig >= 0 && !mig_ok)
        return NVML_ERROR_NOT_SUPPORTED;
    return NVML_SUCCESS;
}

nvmlReturn_t sim_begin(struct sim_call *c, const char *fn, bool args_ok)
{
    return begin(c, fn, false, NULL, args_ok, false);
}

nvmlReturn_t sim_begin_dev(struct sim_call *c, const char *fn, nvmlDevice_t device, bool args_ok,
                           bool mig_ok)
{
    return begin(c, fn, true, device, args_ok, mig_ok);
}

nvmlReturn_t sim_end(struct sim_call *c, nvmlReturn_t rc)
{
    if (c->locked) {
        c->locked = false;
        pthread_mutex_unlock(&lock);
    }
    return rc;
}

nvmlReturn_t sim_u64(struct sim_call *c, enum gpu_slot slot, unsigned long long *out)
{
    uint64_t v;
    int32_t rc = sim_gpu_value(c->scn, c->gi, slot, c->t, &v);

    if (rc == 0)
        *out = v;
    return rc;
}

nvmlReturn_t sim_u32(struct sim_call *c, enum gpu_slot slot, unsigned int *out)
{
    uint64_t v;
    int32_t rc = sim_gpu_value(c->scn, c->gi, slot, c->t, &v);

    if (rc == 0)
        *out = (unsigned int)v;
    return rc;
}

nvmlReturn_t sim_int(struct sim_call *c, enum gpu_slot slot, int *out)
{
    uint64_t v;
    int32_t rc = sim_gpu_value(c->scn, c->gi, slot, c->t, &v);

    if (rc == 0)
        *out = (int)(int64_t)v;
    return rc;
}

nvmlReturn_t sim_copy_str(const char *s, char *buf, unsigned int length)
{
    size_t n = strlen(s);

    if (n + 1 > length)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(buf, s, n + 1);
    return NVML_SUCCESS;
}

nvmlReturn_t sim_str(struct sim_call *c, enum gpu_slot slot, char *buf, unsigned int length)
{
    const struct gpu *g = &c->gpu->g;
    const struct jfield *f = sim_slot_field(slot);

    if (g->rc[slot] != 0)
        return g->rc[slot] < 0 ? NVML_ERROR_NOT_SUPPORTED : g->rc[slot];
    return sim_copy_str(*(char *const *)(const void *)((const char *)g + f->offset), buf, length);
}
