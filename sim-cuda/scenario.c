/*
 * The CUDA simulator's scenario: the devices of the NVML part (read by the NVML simulator's own
 * reader, so both libraries see the same GPUs), and the "cuda" object for what only a
 * measurement shows. Keys are checked: a misspelt one is an error naming its path.
 */
#include "bench/bench-pcie.h"
#include "cuda-sim.h"
#include "cuda/cublaslt-lib.h"
#include "cuda/cuda-lib.h"
#include "sim/sim.h"
#include "util/xalloc.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

double csim_pcie_bps(uint32_t gen, uint32_t width, double efficiency)
{
    return bench_pcie_link_bps(gen, width) * efficiency;
}

static void inject_free(struct csim_inject *in)
{
    for (size_t i = 0; i < in->n; i++)
        free(in->rules[i].fn);
    free(in->rules);
}

void csim_scenario_free(struct csim_scenario *s)
{
    if (s == NULL)
        return;
    for (size_t i = 0; i < s->n_devs; i++) {
        free(s->devs[i].name);
        inject_free(&s->devs[i].inject);
        inject_free(&s->devs[i].cublaslt);
    }
    free(s->devs);
    free(s->pairs);
    inject_free(&s->inject);
    inject_free(&s->cublaslt);
    free(s);
}

static const struct csim_rule *inject_find(const struct csim_inject *in, const char *fn)
{
    for (size_t i = 0; i < in->n; i++) {
        if (strcmp(in->rules[i].fn, fn) == 0)
            return &in->rules[i];
    }
    return NULL;
}

const struct csim_rule *csim_rule(const struct csim_scenario *s, int dev, const char *fn)
{
    const struct csim_rule *r = NULL;

    if (dev >= 0 && (size_t)dev < s->n_devs)
        r = inject_find(&s->devs[dev].inject, fn);
    return r != NULL ? r : inject_find(&s->inject, fn);
}

const struct csim_rule *csim_cublaslt_rule(const struct csim_scenario *s, int dev, const char *fn)
{
    const struct csim_rule *r = NULL;

    if (dev >= 0 && (size_t)dev < s->n_devs)
        r = inject_find(&s->devs[dev].cublaslt, fn);
    return r != NULL ? r : inject_find(&s->cublaslt, fn);
}

/* An error message "path: what" into *cause. */
static int fail(char **cause, const char *file, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(char **cause, const char *file, const char *path, const char *fmt, ...)
{
    char msg[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    *cause = xasprintf("%s: cuda%s: %s", file, path, msg);
    return -1;
}

static int check_keys(const json_t *obj, const char *const *keys, const char *file,
                      const char *path, char **cause)
{
    const char *key;
    json_t *v;

    if (!json_is_object(obj))
        return fail(cause, file, path, "expected an object");
    json_object_foreach((json_t *)obj, key, v)
    {
        size_t i;

        for (i = 0; keys[i] != NULL && strcmp(keys[i], key) != 0; i++)
            ;
        if (keys[i] == NULL)
            return fail(cause, file, path, "unknown key \"%s\"", key);
    }
    return 0;
}

/* A non-negative number at key (absent: *out unchanged). */
static int get_num(const json_t *obj, const char *key, const char *file, const char *path,
                   double *out, char **cause)
{
    const json_t *v = json_object_get(obj, key);

    if (v == NULL)
        return 0;
    if (!json_is_number(v) || json_number_value(v) < 0 || !isfinite(json_number_value(v)))
        return fail(cause, file, path, "\"%s\": expected a non-negative number", key);
    *out = json_number_value(v);
    return 0;
}

static int get_bool(const json_t *obj, const char *key, const char *file, const char *path,
                    bool *out, char **cause)
{
    const json_t *v = json_object_get(obj, key);

    if (v == NULL)
        return 0;
    if (!json_is_boolean(v))
        return fail(cause, file, path, "\"%s\": expected true or false", key);
    *out = json_is_true(v);
    return 0;
}

static struct csim_rule *rule_for(struct csim_inject *in, const char *fn)
{
    for (size_t i = 0; i < in->n; i++) {
        if (strcmp(in->rules[i].fn, fn) == 0)
            return &in->rules[i];
    }
    in->rules = xreallocarray(in->rules, in->n + 1, sizeof(*in->rules));
    memset(&in->rules[in->n], 0, sizeof(in->rules[0]));
    in->rules[in->n].fn = xstrdup(fn);
    return &in->rules[in->n++];
}

static bool known_fn(const char *fn)
{
    static const char *const names[] = {
#define CSIM_NAME(name, params) #name,
        CUDA_FUNCTIONS(CSIM_NAME) CUDA_OPTIONAL_FUNCTIONS(CSIM_NAME)
#undef CSIM_NAME
    };

    for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
        if (strcmp(names[i], fn) == 0)
            return true;
    }
    return false;
}

/* "errors": { "cuMemAlloc_v2": "OUT_OF_MEMORY" }, "hang": [ "cuLaunchKernel" ] */
static int read_inject(struct csim_inject *in, const json_t *obj, const char *file,
                       const char *path, char **cause)
{
    const json_t *errors = json_object_get(obj, "errors"), *hang = json_object_get(obj, "hang");
    const char *fn;
    json_t *v;
    size_t i;

    if (errors != NULL) {
        if (!json_is_object(errors))
            return fail(cause, file, path, "\"errors\": expected an object");
        json_object_foreach((json_t *)errors, fn, v)
        {
            int rc = json_is_string(v)    ? cuda_result_parse(json_string_value(v))
                     : json_is_integer(v) ? (int)json_integer_value(v)
                                          : -1;

            if (!known_fn(fn))
                return fail(cause, file, path, "\"errors\": no CUDA function \"%s\"", fn);
            if (rc <= 0)
                return fail(cause, file, path,
                            "\"errors\".\"%s\": expected a CUresult name (\"OUT_OF_MEMORY\", "
                            "\"CUDA_ERROR_LAUNCH_FAILED\") or a non-zero number",
                            fn);
            rule_for(in, fn)->error = rc;
        }
    }
    if (hang != NULL) {
        if (!json_is_array(hang))
            return fail(cause, file, path, "\"hang\": expected an array of function names");
        json_array_foreach(hang, i, v)
        {
            if (!json_is_string(v) || !known_fn(json_string_value(v)))
                return fail(cause, file, path, "\"hang\"[%zu]: expected a CUDA function name", i);
            rule_for(in, json_string_value(v))->hang = true;
        }
    }
    return 0;
}

static bool known_cublaslt_fn(const char *fn)
{
    static const char *const names[] = {
#define CSIM_NAME(name, params) #name,
        CUBLASLT_FUNCTIONS(CSIM_NAME)
#undef CSIM_NAME
    };

    for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
        if (strcmp(names[i], fn) == 0)
            return true;
    }
    return false;
}

/* "cublaslt_errors": { "cublasLtMatmul": "EXECUTION_FAILED" }, "cublaslt_hang": [ ... ] */
static int read_cublaslt_inject(struct csim_inject *in, const json_t *obj, const char *file,
                                const char *path, char **cause)
{
    const json_t *errors = json_object_get(obj, "cublaslt_errors");
    const json_t *hang = json_object_get(obj, "cublaslt_hang");
    const char *fn;
    json_t *v;
    size_t i;

    if (errors != NULL) {
        if (!json_is_object(errors))
            return fail(cause, file, path, "\"cublaslt_errors\": expected an object");
        json_object_foreach((json_t *)errors, fn, v)
        {
            int st = json_is_string(v)    ? cublaslt_status_parse(json_string_value(v))
                     : json_is_integer(v) ? (int)json_integer_value(v)
                                          : -1;

            if (!known_cublaslt_fn(fn))
                return fail(cause, file, path, "\"cublaslt_errors\": no cuBLASLt function \"%s\"",
                            fn);
            if (st <= 0)
                return fail(cause, file, path,
                            "\"cublaslt_errors\".\"%s\": expected a cublasStatus_t name "
                            "(\"EXECUTION_FAILED\", \"CUBLAS_STATUS_NOT_SUPPORTED\") or a "
                            "non-zero number",
                            fn);
            rule_for(in, fn)->error = st;
        }
    }
    if (hang != NULL) {
        if (!json_is_array(hang))
            return fail(cause, file, path,
                        "\"cublaslt_hang\": expected an array of function names");
        json_array_foreach(hang, i, v)
        {
            if (!json_is_string(v) || !known_cublaslt_fn(json_string_value(v)))
                return fail(cause, file, path,
                            "\"cublaslt_hang\"[%zu]: expected a cuBLASLt function name", i);
            rule_for(in, json_string_value(v))->hang = true;
        }
    }
    return 0;
}

/* "gemm_flops": { "tf32": 4e14, "fp16": 8e14, "bf16": 8e14, "fp8": 0 } (absent: unchanged) */
static int read_gemm(struct csim_dev *d, const json_t *j, const char *file, const char *path,
                     char **cause)
{
    static const char *const keys[] = { "tf32", "fp16", "bf16", "fp8", NULL };
    const json_t *g = json_object_get(j, "gemm_flops");
    char sub[96];

    if (g == NULL)
        return 0;
    snprintf(sub, sizeof(sub), "%s.gemm_flops", path);
    if (check_keys(g, keys, file, sub, cause) != 0)
        return -1;
    for (int p = 0; p < CSIM_PRECS; p++) {
        if (get_num(g, keys[p], file, sub, &d->gemm_flops[p], cause) != 0)
            return -1;
    }
    return 0;
}

static int read_dev(struct csim_dev *d, const json_t *j, const char *file, const char *path,
                    char **cause)
{
    static const char *const keys[] = {
        "host_copy_share",
        "host_copy_bytes_per_s",
        "pageable_share",
        "mem_bandwidth_bytes_per_s",
        "fma_flops",
        "sm_count",
        "throttle_after_s",
        "throttle_share",
        "corrupt",
        "errors",
        "hang",
        "gemm_flops",
        "cublaslt_errors",
        "cublaslt_hang",
        NULL,
    };
    double share = -1, host = -1, sm = d->sm_count;

    if (check_keys(j, keys, file, path, cause) != 0 ||
        get_num(j, "host_copy_share", file, path, &share, cause) != 0 ||
        get_num(j, "host_copy_bytes_per_s", file, path, &host, cause) != 0 ||
        get_num(j, "pageable_share", file, path, &d->pageable_factor, cause) != 0 ||
        get_num(j, "mem_bandwidth_bytes_per_s", file, path, &d->mem_bps, cause) != 0 ||
        get_num(j, "fma_flops", file, path, &d->fma_flops, cause) != 0 ||
        get_num(j, "sm_count", file, path, &sm, cause) != 0 ||
        get_num(j, "throttle_after_s", file, path, &d->throttle_after_s, cause) != 0 ||
        get_num(j, "throttle_share", file, path, &d->throttle_factor, cause) != 0 ||
        get_bool(j, "corrupt", file, path, &d->corrupt, cause) != 0 ||
        read_inject(&d->inject, j, file, path, cause) != 0 ||
        read_cublaslt_inject(&d->cublaslt, j, file, path, cause) != 0 ||
        read_gemm(d, j, file, path, cause) != 0)
        return -1;
    if (share >= 0) {
        d->h2d_pinned_bps *= share / BENCH_PCIE_USABLE_SHARE;
        d->d2h_pinned_bps *= share / BENCH_PCIE_USABLE_SHARE;
    }
    if (host >= 0)
        d->h2d_pinned_bps = d->d2h_pinned_bps = host;
    if (sm < 1 || sm > 4096)
        return fail(cause, file, path, "\"sm_count\": expected 1 to 4096");
    d->sm_count = (int)sm;
    if (d->mem_bps <= 0 || d->fma_flops <= 0 || d->h2d_pinned_bps <= 0 || d->pageable_factor <= 0)
        return fail(cause, file, path, "rates must be above 0");
    if (d->throttle_factor <= 0 || d->throttle_factor > 1)
        return fail(cause, file, path, "\"throttle_share\": expected more than 0, at most 1");
    return 0;
}

static int read_pair(struct csim_scenario *s, struct csim_pair *p, const json_t *j,
                     const char *file, const char *path, char **cause)
{
    static const char *const keys[] = { "gpus", "bytes_per_s", "latency_us", "access", NULL };
    const json_t *g = json_object_get(j, "gpus");
    double lat = p->latency_s * 1e6;
    bool access = true;

    if (check_keys(j, keys, file, path, cause) != 0)
        return -1;
    if (!json_is_array(g) || json_array_size(g) != 2 || !json_is_integer(json_array_get(g, 0)) ||
        !json_is_integer(json_array_get(g, 1)))
        return fail(cause, file, path, "\"gpus\": expected two device ordinals [a, b]");
    p->a = (int)json_integer_value(json_array_get(g, 0));
    p->b = (int)json_integer_value(json_array_get(g, 1));
    if (p->a < 0 || p->b < 0 || (size_t)p->a >= s->n_devs || (size_t)p->b >= s->n_devs ||
        p->a == p->b)
        return fail(cause, file, path, "\"gpus\": two different devices of the %zu there are",
                    s->n_devs);
    if (get_num(j, "bytes_per_s", file, path, &p->bps, cause) != 0 ||
        get_num(j, "latency_us", file, path, &lat, cause) != 0 ||
        get_bool(j, "access", file, path, &access, cause) != 0)
        return -1;
    if (p->bps <= 0)
        return fail(cause, file, path, "\"bytes_per_s\": expected more than 0");
    p->latency_s = lat / 1e6;
    p->no_access = !access;
    return 0;
}

/* The defaults of device i from its NVML entry. */
static void dev_from_nvml(struct csim_dev *d, const struct sim_gpu *sg)
{
    const struct gpu *g = &sg->g;
    double link = 0;

    d->name = xstrdup(g->name != NULL && g->rc[GPU_S_NAME] == 0 ? g->name : "NVIDIA GPU");
    d->pci_domain = (int)sg->pci_domain;
    d->pci_bus = (int)sg->pci_bus;
    d->pci_device = (int)sg->pci_device;
    snprintf(d->pci_bus_id, sizeof(d->pci_bus_id), "%04x:%02x:%02x.%x", sg->pci_domain & 0xffff,
             sg->pci_bus, sg->pci_device, sg->pci_function);
    d->cc_major = g->rc[GPU_S_CC_MAJOR] == 0 ? g->cc_major : 8;
    d->cc_minor = g->rc[GPU_S_CC_MINOR] == 0 ? g->cc_minor : 0;
    d->mem_total_bytes = g->rc[GPU_S_MEM_TOTAL] == 0 ? g->mem_total_bytes : (16ull << 30);
    d->mem_used_bytes = g->rc[GPU_S_MEM_USED] == 0 ? g->mem_used_bytes : 0;
    if (g->rc[GPU_S_PCIE_GEN] == 0 && g->rc[GPU_S_PCIE_WIDTH] == 0)
        link = csim_pcie_bps(g->pcie_gen, g->pcie_width, BENCH_PCIE_USABLE_SHARE);
    d->h2d_pinned_bps = d->d2h_pinned_bps = link > 0 ? link : 12e9;
    d->pageable_factor = 0.5;
    d->mem_bps = 1e12;
    d->fma_flops = 1e13;
    d->sm_count = 16;
    d->throttle_after_s = INFINITY;
    d->throttle_factor = 1;
    /* the fake cuBLASLt: 8, 16, 16 and 32 times the default FMA rate (made-up multiples) */
    d->gemm_flops[CSIM_TF32] = 8e13;
    d->gemm_flops[CSIM_FP16] = 1.6e14;
    d->gemm_flops[CSIM_BF16] = 1.6e14;
    d->gemm_flops[CSIM_FP8] = 3.2e14;
}

static int read_cuda(struct csim_scenario *s, const json_t *c, const char *file, char **cause)
{
    static const char *const keys[] = {
        "driver_version",
        "init_error",
        "memory_limit_bytes",
        "p2p_bytes_per_s",
        "p2p_latency_us",
        "errors",
        "hang",
        "cublaslt_errors",
        "cublaslt_hang",
        "gpus",
        "pairs",
        "real_time",
        NULL,
    };
    const json_t *gpus = json_object_get(c, "gpus"), *pairs = json_object_get(c, "pairs");
    const json_t *v;
    double limit = (double)s->memory_limit_bytes, lat = s->p2p_latency_s * 1e6;
    char path[64];
    size_t i;
    json_t *e;

    if (check_keys(c, keys, file, "", cause) != 0)
        return -1;
    if ((v = json_object_get(c, "driver_version")) != NULL) {
        if (!json_is_integer(v) || json_integer_value(v) < 1000 || json_integer_value(v) > 999999)
            return fail(cause, file, ".driver_version",
                        "expected the version as cuDriverGetVersion encodes it (13000 = 13.0)");
        s->driver_version = (int)json_integer_value(v);
    }
    if ((v = json_object_get(c, "init_error")) != NULL) {
        s->init_rc = json_is_string(v) ? cuda_result_parse(json_string_value(v)) : -1;
        if (s->init_rc <= 0)
            return fail(cause, file, ".init_error", "expected a CUresult name (\"NO_DEVICE\")");
    }
    if (get_num(c, "memory_limit_bytes", file, "", &limit, cause) != 0 ||
        get_num(c, "p2p_bytes_per_s", file, "", &s->p2p_bps, cause) != 0 ||
        get_num(c, "p2p_latency_us", file, "", &lat, cause) != 0 ||
        get_bool(c, "real_time", file, "", &s->real_time, cause) != 0 ||
        read_inject(&s->inject, c, file, "", cause) != 0 ||
        read_cublaslt_inject(&s->cublaslt, c, file, "", cause) != 0)
        return -1;
    s->memory_limit_bytes = (uint64_t)limit;
    s->p2p_latency_s = lat / 1e6;
    if (gpus != NULL) {
        if (!json_is_array(gpus) || json_array_size(gpus) > s->n_devs)
            return fail(cause, file, ".gpus",
                        "expected an array of at most %zu objects, one "
                        "per GPU of \"gpus\" in order",
                        s->n_devs);
        json_array_foreach(gpus, i, e)
        {
            snprintf(path, sizeof(path), ".gpus[%zu]", i);
            if (read_dev(&s->devs[i], e, file, path, cause) != 0)
                return -1;
        }
    }
    if (pairs != NULL) {
        if (!json_is_array(pairs))
            return fail(cause, file, ".pairs", "expected an array of pair objects");
        s->pairs = xcalloc(json_array_size(pairs) + 1, sizeof(*s->pairs));
        json_array_foreach(pairs, i, e)
        {
            snprintf(path, sizeof(path), ".pairs[%zu]", i);
            s->pairs[i].latency_s = s->p2p_latency_s;
            if (read_pair(s, &s->pairs[i], e, file, path, cause) != 0)
                return -1;
            s->n_pairs = i + 1;
        }
    }
    return 0;
}

struct csim_scenario *csim_scenario_load(const char *path, char **cause)
{
    struct sim_scenario *nv = sim_scenario_load(path, cause);
    struct csim_scenario *s;
    json_error_t jerror;
    json_t *root;

    if (nv == NULL)
        return NULL;
    s = xcalloc(1, sizeof(*s));
    s->driver_version = nv->cuda_driver_version_rc == 0 ? nv->cuda_driver_version : 13000;
    s->init_rc = nv->init_rc != 0 ? CUDA_ERROR_SYSTEM_DRIVER_MISMATCH : 0;
    s->memory_limit_bytes = 512ull << 20;
    s->p2p_bps = 20e9;
    s->p2p_latency_s = 10e-6;
    /* the devices CUDA enumerates: those NVML can open */
    s->devs = xcalloc(nv->n_gpus + 1, sizeof(*s->devs));
    for (size_t i = 0; i < nv->n_gpus; i++) {
        if (nv->gpus[i].g.handle_rc == 0)
            dev_from_nvml(&s->devs[s->n_devs++], &nv->gpus[i]);
    }
    sim_scenario_free(nv);
    root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerror);
    if (root == NULL) {
        *cause = xasprintf("%s:%d:%d: %s", path, jerror.line, jerror.column, jerror.text);
        csim_scenario_free(s);
        return NULL;
    }
    if (json_object_get(root, "cuda") != NULL &&
        read_cuda(s, json_object_get(root, "cuda"), path, cause) != 0) {
        json_decref(root);
        csim_scenario_free(s);
        return NULL;
    }
    json_decref(root);
    return s;
}
