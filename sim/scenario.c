/*
 * Reading a scenario: the file format is described in docs/simulator.md. The GPU objects are
 * the snapshot's own GPU format, read by gpu_from_json; this file reads what surrounds them
 * (system values, injected errors, delays, hangs, the timeline) and checks everything a call
 * will later rely on, so that a call never meets a malformed value.
 */
#include "sim.h"
#include "snapshot/snapshot.h"
#include "util/fileio.h"
#include "util/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Larger than any sensible scenario; a snapshot of a big server is a few MiB. */
#define SCENARIO_MAX_BYTES (64u << 20)
/* An hour: longer than any deadline a client could want to test; a hang is the "forever". */
#define DELAY_MAX_MS      3600000
#define SQUARE_MAX_VALUES 4096

#define SIM_FN_ROW(name, params) { #name, (void (*)(void))name },
const struct sim_fn sim_fns[] = { NVML_FUNCTIONS(SIM_FN_ROW) NVML_CLIENT_FUNCTIONS(SIM_FN_ROW) };
#undef SIM_FN_ROW
const size_t sim_n_fns = ARRAY_SIZE(sim_fns);

/* Functions that are one function under two names: an injection by the root reaches both. */
static const char *const renames[][2] = {
    { "nvmlDeviceGetTemperatureV", "nvmlDeviceGetTemperature" },
    { "nvmlDeviceGetCurrentClocksThrottleReasons", "nvmlDeviceGetCurrentClocksEventReasons" },
    { "nvmlDeviceGetSupportedClocksThrottleReasons", "nvmlDeviceGetSupportedClocksEventReasons" },
    { "nvmlDeviceGetPowerState", "nvmlDeviceGetPerformanceState" },
    { "nvmlDeviceGetGpuFabricInfoV", "nvmlDeviceGetGpuFabricInfo" },
    { "nvmlInitWithFlags", "nvmlInit" },
};

/* The functions whose lists may grow between a size query and the next call. */
static const char *const list_roots[] = {
    "nvmlDeviceGetComputeRunningProcesses",
    "nvmlDeviceGetGraphicsRunningProcesses",
    "nvmlDeviceGetMPSComputeRunningProcesses",
    "nvmlDeviceGetProcessUtilization",
};

const char *sim_fn_root(const char *fn, char *buf, size_t size)
{
    size_t n;

    snprintf(buf, size, "%s", fn);
    n = strlen(buf);
    /* strip a "_v<digits>" suffix */
    for (size_t i = n; i > 2; i--) {
        if (buf[i - 1] >= '0' && buf[i - 1] <= '9')
            continue;
        if (i < n && buf[i - 1] == 'v' && buf[i - 2] == '_')
            buf[i - 2] = '\0';
        break;
    }
    for (size_t i = 0; i < ARRAY_SIZE(renames); i++) {
        if (strcmp(buf, renames[i][0]) == 0) {
            snprintf(buf, size, "%s", renames[i][1]);
            break;
        }
    }
    return buf;
}

bool sim_fn_known(const char *name)
{
    for (size_t i = 0; i < sim_n_fns; i++) {
        char root[96];

        if (strcmp(sim_fns[i].name, name) == 0 ||
            strcmp(sim_fn_root(sim_fns[i].name, root, sizeof(root)), name) == 0)
            return true;
    }
    return false;
}

const struct sim_rule *sim_inject_find(const struct sim_inject *in, const char *fn)
{
    for (size_t i = 0; i < in->n_rules; i++) {
        if (strcmp(in->rules[i].fn, fn) == 0)
            return &in->rules[i];
    }
    return NULL;
}

static void inject_free(struct sim_inject *in)
{
    for (size_t i = 0; i < in->n_rules; i++)
        free((char *)in->rules[i].fn);
    free(in->rules);
    memset(in, 0, sizeof(*in));
}

static void extra_free(struct sim_extra *x)
{
    free(x->part_number);
    free(x->nvlinks);
    free(x->fields);
    memset(x, 0, sizeof(*x));
}

void sim_scenario_free(struct sim_scenario *s)
{
    if (s == NULL)
        return;
    free(s->path);
    free(s->driver_version);
    free(s->nvml_version);
    free(s->init_error);
    inject_free(&s->inject);
    for (size_t i = 0; i < s->n_gpus; i++) {
        gpu_free(&s->gpus[i].g);
        extra_free(&s->gpus[i].extra);
        inject_free(&s->gpus[i].inject);
    }
    free(s->gpus);
    for (size_t i = 0; i < s->n_events; i++)
        free(s->events[i].values);
    free(s->events);
    free(s);
}

/* ---- small readers ---- */

/* Formats a JSON path for a message; a path too long for the buffer is cut short. */
static void pathf(char *out, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void pathf(char *out, size_t size, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(out, size, fmt, ap);
    va_end(ap);
}

static void join(char *out, size_t size, const char *prefix, const char *key)
{
    pathf(out, size, "%s%s%s", prefix, *prefix ? "." : "", key);
}

static int check_keys(const json_t *obj, const char *const *allowed, const char *path,
                      const char *what, struct jerr *err)
{
    const char *key;
    json_t *v;

    json_object_foreach((json_t *)obj, key, v)
    {
        size_t i;

        for (i = 0; allowed[i] != NULL; i++) {
            if (strcmp(allowed[i], key) == 0)
                break;
        }
        if (allowed[i] == NULL) {
            char kpath[300];

            join(kpath, sizeof(kpath), path, key);
            jerr_set(err, kpath, "unknown key \"%s\" in %s", key, what);
            return -1;
        }
    }
    return 0;
}

static int get_object(const json_t *parent, const char *key, const char *path, const json_t **out,
                      struct jerr *err)
{
    const json_t *v = json_object_get(parent, key);
    char kpath[300];

    *out = NULL;
    if (v == NULL || json_is_null(v))
        return 0;
    if (!json_is_object(v)) {
        join(kpath, sizeof(kpath), path, key);
        jerr_set(err, kpath, "expected an object");
        return -1;
    }
    *out = v;
    return 0;
}

/* A number at key: 1 when present, 0 when absent, -1 on a wrong type. */
static int get_number(const json_t *obj, const char *key, const char *path, double *out,
                      struct jerr *err)
{
    const json_t *v = json_object_get(obj, key);
    char kpath[300];

    if (v == NULL)
        return 0;
    if (!json_is_number(v)) {
        join(kpath, sizeof(kpath), path, key);
        jerr_set(err, kpath, "expected a number");
        return -1;
    }
    *out = json_number_value(v);
    return 1;
}

/* ---- injected errors, delays, hangs ---- */

/* The rule of in for fn, made empty when there is none yet. */
static struct sim_rule *rule_for(struct sim_inject *in, const char *fn)
{
    struct sim_rule *r = (struct sim_rule *)sim_inject_find(in, fn);

    if (r != NULL)
        return r;
    in->rules = xreallocarray(in->rules, in->n_rules + 1, sizeof(*in->rules));
    r = &in->rules[in->n_rules++];
    memset(r, 0, sizeof(*r));
    r->fn = xstrdup(fn);
    return r;
}

static int check_fn(const char *fn, const char *path, struct jerr *err)
{
    if (!sim_fn_known(fn)) {
        jerr_set(err, path, "unknown NVML function \"%s\"", fn);
        return -1;
    }
    return 0;
}

static int read_errors(struct sim_inject *in, const json_t *obj, const char *path, struct jerr *err)
{
    const char *fn;
    json_t *v;

    json_object_foreach((json_t *)obj, fn, v)
    {
        char kpath[300];
        struct sim_rule *r;
        int64_t rc = -1;

        join(kpath, sizeof(kpath), path, fn);
        if (check_fn(fn, kpath, err) != 0)
            return -1;
        if (json_is_string(v))
            rc = nvml_rc_from_name(json_string_value(v));
        else if (json_is_integer(v) && json_integer_value(v) <= INT32_MAX)
            rc = json_integer_value(v);
        if (rc <= 0) {
            jerr_set(err, kpath, "expected an NVML error name such as \"NO_PERMISSION\"");
            return -1;
        }
        r = rule_for(in, fn);
        r->has_error = true;
        r->error = (int32_t)rc;
    }
    return 0;
}

static int read_delays(struct sim_inject *in, const json_t *obj, const char *path, struct jerr *err)
{
    const char *fn;
    json_t *v;

    json_object_foreach((json_t *)obj, fn, v)
    {
        char kpath[300];
        struct sim_rule *r;

        join(kpath, sizeof(kpath), path, fn);
        if (check_fn(fn, kpath, err) != 0)
            return -1;
        if (!json_is_integer(v) || json_integer_value(v) < 0 ||
            json_integer_value(v) > DELAY_MAX_MS) {
            jerr_set(err, kpath, "expected milliseconds, 0 to %d", DELAY_MAX_MS);
            return -1;
        }
        r = rule_for(in, fn);
        r->has_delay = true;
        r->delay_ms = json_integer_value(v);
    }
    return 0;
}

static int read_hangs(struct sim_inject *in, const json_t *arr, const char *path, struct jerr *err)
{
    size_t i;
    json_t *v;

    if (!json_is_array(arr)) {
        jerr_set(err, path, "expected an array of NVML function names");
        return -1;
    }
    json_array_foreach(arr, i, v)
    {
        char ipath[300];

        pathf(ipath, sizeof(ipath), "%s[%zu]", path, i);
        if (!json_is_string(v)) {
            jerr_set(err, ipath, "expected an NVML function name");
            return -1;
        }
        if (check_fn(json_string_value(v), ipath, err) != 0)
            return -1;
        rule_for(in, json_string_value(v))->hang = true;
    }
    return 0;
}

static int read_growth(struct sim_inject *in, const json_t *obj, const char *path, struct jerr *err)
{
    const char *fn;
    json_t *v;

    json_object_foreach((json_t *)obj, fn, v)
    {
        char kpath[300], root[96];
        struct sim_rule *r;
        size_t k;

        join(kpath, sizeof(kpath), path, fn);
        if (check_fn(fn, kpath, err) != 0)
            return -1;
        sim_fn_root(fn, root, sizeof(root));
        for (k = 0; k < ARRAY_SIZE(list_roots); k++) {
            if (strcmp(root, list_roots[k]) == 0)
                break;
        }
        if (k == ARRAY_SIZE(list_roots)) {
            jerr_set(err, kpath, "%s returns no list that could grow", fn);
            return -1;
        }
        if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 65535) {
            jerr_set(err, kpath, "expected how many entries appear, 1 to 65535");
            return -1;
        }
        r = rule_for(in, fn);
        r->has_growth = true;
        r->growth = (uint32_t)json_integer_value(v);
    }
    return 0;
}

/* The "errors", "delays_ms", "hang" and "list_growth" keys of obj (top level or one GPU). */
static int read_inject(struct sim_inject *in, const json_t *obj, const char *prefix,
                       struct jerr *err)
{
    const json_t *v;
    char path[300];

    join(path, sizeof(path), prefix, "errors");
    if (get_object(obj, "errors", prefix, &v, err) != 0 ||
        (v != NULL && read_errors(in, v, path, err) != 0))
        return -1;
    join(path, sizeof(path), prefix, "delays_ms");
    if (get_object(obj, "delays_ms", prefix, &v, err) != 0 ||
        (v != NULL && read_delays(in, v, path, err) != 0))
        return -1;
    join(path, sizeof(path), prefix, "list_growth");
    if (get_object(obj, "list_growth", prefix, &v, err) != 0 ||
        (v != NULL && read_growth(in, v, path, err) != 0))
        return -1;
    join(path, sizeof(path), prefix, "hang");
    v = json_object_get(obj, "hang");
    if (v != NULL && !json_is_null(v) && read_hangs(in, v, path, err) != 0)
        return -1;
    return 0;
}

/* ---- system ---- */

static int read_system(struct sim_scenario *s, const json_t *sys, struct jerr *err)
{
    static const char *const keys[] = { "driver_version", "nvml_version", "cuda_driver_version",
                                        "init_error", NULL };
    char *init_error = NULL;
    int64_t cuda = -1;

    if (sys == NULL)
        return 0;
    if (check_keys(sys, keys, "system", "system", err) != 0 ||
        jget_str(sys, "driver_version", "system", &s->driver_version, err) != 0 ||
        jget_str(sys, "nvml_version", "system", &s->nvml_version, err) != 0 ||
        jget_int(sys, "cuda_driver_version", "system", &cuda, err) != 0 ||
        jget_str(sys, "init_error", "system", &init_error, err) != 0)
        goto fail;
    if (s->driver_version != NULL)
        s->driver_version_rc = 0;
    if (s->nvml_version != NULL)
        s->nvml_version_rc = 0;
    if (json_object_get(sys, "cuda_driver_version") != NULL) {
        if (cuda < 1000 || cuda > INT32_MAX) {
            jerr_set(err, "system.cuda_driver_version",
                     "expected a CUDA version as cuDriverGetVersion gives it (12040 = 12.4)");
            goto fail;
        }
        s->cuda_driver_version = (int32_t)cuda;
        s->cuda_driver_version_rc = 0;
    }
    if (init_error != NULL) {
        s->init_rc = nvml_rc_from_name(init_error);
        if (s->init_rc <= 0) {
            jerr_set(err, "system.init_error", "expected an NVML error name such as \"%s\"",
                     "LIB_RM_VERSION_MISMATCH");
            goto fail;
        }
    }
    free(init_error);
    return 0;
fail:
    free(init_error);
    return -1;
}

/* ---- GPUs ---- */

static const char *const gpu_extra_keys[] = { "errors",
                                              "delays_ms",
                                              "hang",
                                              "list_growth",
                                              "brand",
                                              "architecture",
                                              "board_part_number",
                                              "accounting_mode",
                                              "clock_video_max_mhz",
                                              "nvlinks",
                                              "field_values",
                                              NULL };

/* ---- what only scenarios say about a GPU (struct sim_extra) ---- */

struct sim_name {
    const char *name;
    int64_t value;
};

/* Names as NVIDIA's header spells the constants, without the prefix, in lower case. */
static const struct sim_name brands[] = {
    { "unknown", NVML_BRAND_UNKNOWN },
    { "quadro", NVML_BRAND_QUADRO },
    { "tesla", NVML_BRAND_TESLA },
    { "nvs", NVML_BRAND_NVS },
    { "grid", NVML_BRAND_GRID },
    { "geforce", NVML_BRAND_GEFORCE },
    { "titan", NVML_BRAND_TITAN },
    { "nvidia_vapps", NVML_BRAND_NVIDIA_VAPPS },
    { "nvidia_vpc", NVML_BRAND_NVIDIA_VPC },
    { "nvidia_vcs", NVML_BRAND_NVIDIA_VCS },
    { "nvidia_vws", NVML_BRAND_NVIDIA_VWS },
    { "nvidia_cloud_gaming", NVML_BRAND_NVIDIA_CLOUD_GAMING },
    { "quadro_rtx", NVML_BRAND_QUADRO_RTX },
    { "nvidia_rtx", NVML_BRAND_NVIDIA_RTX },
    { "nvidia", NVML_BRAND_NVIDIA },
    { "geforce_rtx", NVML_BRAND_GEFORCE_RTX },
    { "titan_rtx", NVML_BRAND_TITAN_RTX },
    { NULL, 0 },
};

static const struct sim_name archs[] = {
    { "kepler", NVML_DEVICE_ARCH_KEPLER },
    { "maxwell", NVML_DEVICE_ARCH_MAXWELL },
    { "pascal", NVML_DEVICE_ARCH_PASCAL },
    { "volta", NVML_DEVICE_ARCH_VOLTA },
    { "turing", NVML_DEVICE_ARCH_TURING },
    { "ampere", NVML_DEVICE_ARCH_AMPERE },
    { "ada", NVML_DEVICE_ARCH_ADA },
    { "hopper", NVML_DEVICE_ARCH_HOPPER },
    { "blackwell", NVML_DEVICE_ARCH_BLACKWELL },
    { "rubin", NVML_DEVICE_ARCH_RUBIN },
    { "unknown", NVML_DEVICE_ARCH_UNKNOWN },
    { NULL, 0 },
};

static const struct sim_name value_types[] = {
    { "double", NVML_VALUE_TYPE_DOUBLE },
    { "unsigned_int", NVML_VALUE_TYPE_UNSIGNED_INT },
    { "unsigned_long", NVML_VALUE_TYPE_UNSIGNED_LONG },
    { "unsigned_long_long", NVML_VALUE_TYPE_UNSIGNED_LONG_LONG },
    { "signed_long_long", NVML_VALUE_TYPE_SIGNED_LONG_LONG },
    { "signed_int", NVML_VALUE_TYPE_SIGNED_INT },
    { "unsigned_short", NVML_VALUE_TYPE_UNSIGNED_SHORT },
    { NULL, 0 },
};

/* The names of a table, "a", "b", ..., for a message. */
static void name_list(const struct sim_name *t, char *buf, size_t size)
{
    size_t used = 0;

    buf[0] = '\0';
    for (size_t i = 0; t[i].name != NULL && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, "%s\"%s\"", i ? ", " : "", t[i].name);
}

/* v as one of the names of t, or a number from 0 to max: 0 and *out, or -1 with *err set. */
static int read_named(const json_t *v, const struct sim_name *t, int64_t max, const char *kpath,
                      struct jerr *err, int64_t *out)
{
    char names[400];

    if (json_is_integer(v) && json_integer_value(v) >= 0 && json_integer_value(v) <= max) {
        *out = json_integer_value(v);
        return 0;
    }
    for (size_t i = 0; json_is_string(v) && t[i].name != NULL; i++) {
        if (strcmp(t[i].name, json_string_value(v)) == 0) {
            *out = t[i].value;
            return 0;
        }
    }
    name_list(t, names, sizeof(names));
    jerr_set(err, kpath, "expected one of %s, or a number from 0 to %lld", names, (long long)max);
    return -1;
}

/* The state of key in obj: absent, null, or a value (*v) for the caller to read. */
static enum sim_key_state key_state(const json_t *obj, const char *key, const json_t **v)
{
    *v = json_object_get(obj, key);
    if (*v == NULL)
        return SIM_KEY_ABSENT;
    return json_is_null(*v) ? SIM_KEY_NULL : SIM_KEY_SET;
}

/* One value of field_values, checked against its type. */
static int read_field_value(struct sim_field_value *fv, const json_t *v, const char *path,
                            struct jerr *err)
{
    const char *msg = NULL;
    double d = json_number_value(v);
    json_int_t i = json_integer_value(v);

    switch (fv->type) {
    case NVML_VALUE_TYPE_DOUBLE:
        if (!json_is_number(v))
            msg = "a number";
        fv->value.dVal = d;
        break;
    case NVML_VALUE_TYPE_SIGNED_INT:
        if (!json_is_integer(v) || i < INT32_MIN || i > INT32_MAX)
            msg = "an integer from -2147483648 to 2147483647 (signed_int)";
        fv->value.siVal = (int)i;
        break;
    case NVML_VALUE_TYPE_UNSIGNED_INT:
        if (!json_is_integer(v) || i < 0 || i > (json_int_t)UINT32_MAX)
            msg = "an integer from 0 to 4294967295 (unsigned_int)";
        fv->value.uiVal = (unsigned int)i;
        break;
    case NVML_VALUE_TYPE_UNSIGNED_SHORT:
        if (!json_is_integer(v) || i < 0 || i > 65535)
            msg = "an integer from 0 to 65535 (unsigned_short)";
        fv->value.usVal = (unsigned short)i;
        break;
    case NVML_VALUE_TYPE_SIGNED_LONG_LONG:
        if (!json_is_integer(v))
            msg = "an integer (signed_long_long)";
        fv->value.sllVal = i;
        break;
    default: /* unsigned long, unsigned long long: JSON integers reach 2^63 - 1 */
        if (!json_is_integer(v) || i < 0)
            msg = "a non-negative integer";
        fv->value.ullVal = (unsigned long long)i;
        break;
    }
    if (msg != NULL) {
        jerr_set(err, path, "expected %s", msg);
        return -1;
    }
    return 0;
}

static int read_field_values(struct sim_extra *x, const json_t *arr, const char *path,
                             struct jerr *err)
{
    static const char *const keys[] = { "id", "scope", "type", "value", "status", NULL };
    size_t i;
    json_t *e;

    if (!json_is_array(arr)) {
        jerr_set(err, path,
                 "expected an array of {\"id\": field id, \"type\": ..., \"value\": ...}");
        return -1;
    }
    x->fields = xcalloc(json_array_size(arr) + 1, sizeof(*x->fields));
    json_array_foreach(arr, i, e)
    {
        struct sim_field_value *fv = &x->fields[i];
        const json_t *id = json_object_get(e, "id"), *scope = json_object_get(e, "scope");
        const json_t *type = json_object_get(e, "type"), *value = json_object_get(e, "value");
        const json_t *status = json_object_get(e, "status");
        char epath[300], kpath[320];
        int64_t t;

        pathf(epath, sizeof(epath), "%s[%zu]", path, i);
        if (!json_is_object(e)) {
            jerr_set(err, epath, "expected an object");
            return -1;
        }
        if (check_keys(e, keys, epath, "a field value", err) != 0)
            return -1;
        join(kpath, sizeof(kpath), epath, "id");
        if (!json_is_integer(id) || json_integer_value(id) < 0 ||
            json_integer_value(id) > (json_int_t)UINT32_MAX) {
            jerr_set(err, id ? kpath : epath, "expected \"id\": an NVML_FI_* field id");
            return -1;
        }
        fv->id = (uint32_t)json_integer_value(id);
        fv->any_scope = scope == NULL;
        if (scope != NULL) {
            join(kpath, sizeof(kpath), epath, "scope");
            if (!json_is_integer(scope) || json_integer_value(scope) < 0 ||
                json_integer_value(scope) > (json_int_t)UINT32_MAX) {
                jerr_set(err, kpath, "expected a scope id (e.g. the NVLink), 0 to 4294967295");
                return -1;
            }
            fv->scope = (uint32_t)json_integer_value(scope);
        }
        for (size_t k = 0; k < i; k++) {
            const struct sim_field_value *o = &x->fields[k];

            if (o->id != fv->id || (!o->any_scope && !fv->any_scope && o->scope != fv->scope))
                continue;
            if (fv->any_scope)
                jerr_set(err, epath, "field %u is already given by %s[%zu]", fv->id, path, k);
            else
                jerr_set(err, epath, "field %u at scope %u is already given by %s[%zu]", fv->id,
                         fv->scope, path, k);
            return -1;
        }
        x->n_fields = i + 1;
        if ((value != NULL) == (status != NULL)) {
            jerr_set(err, epath, "give exactly one of \"value\" (with \"type\") and \"status\"");
            return -1;
        }
        if (status != NULL) {
            join(kpath, sizeof(kpath), epath, "status");
            fv->rc = json_is_string(status) ? nvml_rc_from_name(json_string_value(status)) : -1;
            if (fv->rc <= 0) {
                jerr_set(err, kpath, "expected an NVML error name such as \"NOT_SUPPORTED\"");
                return -1;
            }
            if (type != NULL) {
                join(kpath, sizeof(kpath), epath, "type");
                jerr_set(err, kpath, "a field that fails has no type");
                return -1;
            }
            continue;
        }
        join(kpath, sizeof(kpath), epath, "type");
        if (type == NULL) {
            jerr_set(err, epath, "missing \"type\": the nvmlValueType_t of the value");
            return -1;
        }
        if (read_named(type, value_types, NVML_VALUE_TYPE_COUNT - 1, kpath, err, &t) != 0)
            return -1;
        fv->type = (int32_t)t;
        join(kpath, sizeof(kpath), epath, "value");
        if (read_field_value(fv, value, kpath, err) != 0)
            return -1;
    }
    return 0;
}

/* The keys of struct sim_extra in the GPU object j. */
static int read_extra(struct sim_extra *x, const json_t *j, const char *path, struct jerr *err)
{
    const json_t *v;
    char kpath[300];
    int64_t n;
    size_t i;
    json_t *e;

    join(kpath, sizeof(kpath), path, "brand");
    if ((x->brand_state = key_state(j, "brand", &v)) == SIM_KEY_SET) {
        if (read_named(v, brands, INT32_MAX, kpath, err, &n) != 0)
            return -1;
        x->brand = (int32_t)n;
    }
    join(kpath, sizeof(kpath), path, "architecture");
    if ((x->arch_state = key_state(j, "architecture", &v)) == SIM_KEY_SET) {
        if (read_named(v, archs, UINT32_MAX, kpath, err, &n) != 0)
            return -1;
        x->arch = (uint32_t)n;
    }
    join(kpath, sizeof(kpath), path, "board_part_number");
    if ((x->part_state = key_state(j, "board_part_number", &v)) == SIM_KEY_SET) {
        if (!json_is_string(v)) {
            jerr_set(err, kpath, "expected a string");
            return -1;
        }
        x->part_number = xstrdup(json_string_value(v));
    }
    join(kpath, sizeof(kpath), path, "accounting_mode");
    if ((x->accounting_state = key_state(j, "accounting_mode", &v)) == SIM_KEY_SET) {
        if (!json_is_boolean(v)) {
            jerr_set(err, kpath, "expected true or false");
            return -1;
        }
        x->accounting = json_is_true(v);
    }
    join(kpath, sizeof(kpath), path, "clock_video_max_mhz");
    if ((x->video_max_state = key_state(j, "clock_video_max_mhz", &v)) == SIM_KEY_SET) {
        if (!json_is_integer(v) || json_integer_value(v) < 0 ||
            json_integer_value(v) > (json_int_t)UINT32_MAX) {
            jerr_set(err, kpath, "expected a non-negative integer");
            return -1;
        }
        x->clock_video_max_mhz = (uint32_t)json_integer_value(v);
    }
    join(kpath, sizeof(kpath), path, "nvlinks");
    if ((x->nvlink_state = key_state(j, "nvlinks", &v)) == SIM_KEY_SET) {
        if (!json_is_array(v) || json_array_size(v) > NVML_NVLINK_MAX_LINKS) {
            jerr_set(err, kpath, "expected an array of up to %d booleans, one per link (active)",
                     NVML_NVLINK_MAX_LINKS);
            return -1;
        }
        x->nvlinks = xcalloc(json_array_size(v) + 1, sizeof(*x->nvlinks));
        x->n_nvlinks = json_array_size(v);
        json_array_foreach(v, i, e)
        {
            char ipath[320];

            pathf(ipath, sizeof(ipath), "%s[%zu]", kpath, i);
            if (!json_is_boolean(e)) {
                jerr_set(err, ipath, "expected true (active) or false");
                return -1;
            }
            x->nvlinks[i] = json_is_true(e);
        }
    }
    join(kpath, sizeof(kpath), path, "field_values");
    if ((x->fields_state = key_state(j, "field_values", &v)) == SIM_KEY_SET)
        return read_field_values(x, v, kpath, err);
    return 0;
}

/* What a call relies on that gpu_from_json cannot check: positions, bus ids, unique pids. */
static int check_gpu(struct sim_gpu *sg, size_t i, const char *path, struct jerr *err)
{
    const struct gpu *g = &sg->g;
    char fpath[300];

    sg->handle.gpu = sg;
    sg->handle.mig = -1;
    for (int32_t k = 0; k < SIM_MIG_MAX; k++) {
        sg->migs[k].gpu = sg;
        sg->migs[k].mig = k;
    }
    if (g->index != i) {
        join(fpath, sizeof(fpath), path, "index");
        jerr_set(err, fpath, "expected %zu: GPUs are listed in NVML index order", i);
        return -1;
    }
    if (g->handle_rc != 0)
        return 0;
    if (g->rc[GPU_S_PCI_BUS_ID] == 0) {
        unsigned long long dom;
        unsigned bus, dev, fn;
        int end = 0;

        if (sscanf(g->pci_bus_id, "%llx:%x:%x.%x%n", &dom, &bus, &dev, &fn, &end) != 4 ||
            g->pci_bus_id[end] != '\0' || dom > 0xffffffffULL || bus > 0xff || dev > 0x1f ||
            fn > 7) {
            join(fpath, sizeof(fpath), path, "pci_bus_id");
            jerr_set(err, fpath, "expected a PCI address \"DDDDDDDD:BB:DD.F\"");
            return -1;
        }
        sg->pci_domain = (uint32_t)dom;
        sg->pci_bus = bus;
        sg->pci_device = dev;
        sg->pci_function = fn;
    }
    for (size_t p = 0; p < g->n_procs; p++) {
        for (size_t q = 0; q < p; q++) {
            if (g->procs[q].pid == g->procs[p].pid) {
                pathf(fpath, sizeof(fpath), "%s.processes[%zu].pid", path, p);
                jerr_set(err, fpath, "pid %u is listed twice on this GPU", g->procs[p].pid);
                return -1;
            }
        }
    }
    return 0;
}

/* "DDDDDDDD:BB:DD.F" into its four numbers; false when it is not one. */
static bool split_bus_id(const char *id, uint32_t out[4])
{
    unsigned long long dom;
    unsigned bus, dev, fn;
    int end = 0;

    if (sscanf(id, "%llx:%x:%x.%x%n", &dom, &bus, &dev, &fn, &end) != 4 || id[end] != '\0' ||
        dom > 0xffffffffULL || bus > 0xff || dev > 0x1f || fn > 7)
        return false;
    out[0] = (uint32_t)dom;
    out[1] = bus;
    out[2] = dev;
    out[3] = fn;
    return true;
}

/*
 * The links and the fabric: the snapshot's "nvlink" list, or the older scenario key "nvlinks"
 * (booleans), made into the same list so that every NVLink call reads one thing.
 */
static int check_links(struct sim_gpu *sg, const json_t *j, const char *path, struct jerr *err)
{
    struct gpu *g = &sg->g;
    struct sim_extra *x = &sg->extra;
    char fpath[300];

    if (j != NULL && x->nvlink_state != SIM_KEY_ABSENT && json_object_get(j, "nvlink") != NULL) {
        join(fpath, sizeof(fpath), path, "nvlinks");
        jerr_set(err, fpath, "give \"nvlink\" (the snapshot's list) or \"nvlinks\", not both");
        return -1;
    }
    if (x->nvlink_state == SIM_KEY_NULL || (x->nvlink_state == SIM_KEY_SET && x->n_nvlinks == 0))
        g->rc[GPU_S_NVLINK] = NVML_ERROR_NOT_SUPPORTED;
    if (x->nvlink_state == SIM_KEY_SET && x->n_nvlinks > 0) {
        g->nvlinks = xcalloc(x->n_nvlinks, sizeof(*g->nvlinks));
        for (size_t i = 0; i < x->n_nvlinks; i++) {
            struct gpu_nvlink *l = &g->nvlinks[i];

            gpu_nvlink_init(l, (uint32_t)i);
            for (size_t k = 0; k < NVL_S__COUNT; k++)
                l->rc[k] = NVML_ERROR_NOT_SUPPORTED;
            l->active = x->nvlinks[i];
            l->rc[NVL_S_ACTIVE] = 0;
        }
        g->n_nvlinks = x->n_nvlinks;
        g->rc[GPU_S_NVLINK] = 0;
    }
    for (size_t i = 0; g->rc[GPU_S_NVLINK] == 0 && i < g->n_nvlinks; i++) {
        const struct gpu_nvlink *l = &g->nvlinks[i];

        if (gpu_nvlink_valid(l, NVL_S_REMOTE_BUS) &&
            !split_bus_id(l->remote_pci_bus_id, sg->link_pci[i])) {
            pathf(fpath, sizeof(fpath), "%s.nvlink[%zu].remote_pci_bus_id", path, i);
            jerr_set(err, fpath, "expected a PCI address \"DDDDDDDD:BB:DD.F\"");
            return -1;
        }
    }
    if (g->rc[GPU_S_FABRIC] == 0 && (g->fabric.valid & (UINT64_C(1) << FAB_S_INFO))) {
        const char *u = g->fabric.cluster_uuid;
        size_t n = 0;

        for (size_t i = 0; u[i] != '\0' && n < 2 * NVML_GPU_FABRIC_UUID_LEN + 1; i++) {
            const char *hex = "0123456789abcdef", *d;

            if (u[i] == '-' && (n == 8 || n == 12 || n == 16 || n == 20))
                continue;
            if ((d = strchr(hex, tolower((unsigned char)u[i]))) == NULL)
                break;
            sg->fabric_uuid[n / 2] =
                (unsigned char)(sg->fabric_uuid[n / 2] << 4 | (unsigned)(d - hex));
            n++;
        }
        if (n != 2 * NVML_GPU_FABRIC_UUID_LEN || strlen(u) != 36) {
            pathf(fpath, sizeof(fpath), "%s.fabric.cluster_uuid", path);
            jerr_set(err, fpath, "expected 32 hex digits as 8-4-4-4-12");
            return -1;
        }
    }
    return 0;
}

static int read_gpus(struct sim_scenario *s, const json_t *arr, struct jerr *err)
{
    size_t i;
    json_t *j;

    if (arr == NULL || json_is_null(arr))
        return 0;
    if (!json_is_array(arr)) {
        jerr_set(err, "gpus", "expected an array of GPU objects");
        return -1;
    }
    s->gpus = xcalloc(json_array_size(arr) + 1, sizeof(*s->gpus));
    json_array_foreach(arr, i, j)
    {
        struct sim_gpu *sg = &s->gpus[i];
        json_t *own = json_is_object(j) ? json_copy(j) : json_incref(j);
        char path[64];
        int r;

        pathf(path, sizeof(path), "gpus[%zu]", i);
        gpu_init(&sg->g, (uint32_t)i);
        s->n_gpus = i + 1;
        /* The keys the simulator reads itself (read_extra) are its own, also where the
         * snapshot knows them: a scenario may give the architecture as NVML's number. */
        for (size_t k = 0; gpu_extra_keys[k] != NULL && json_is_object(own); k++)
            json_object_del(own, gpu_extra_keys[k]);
        r = gpu_from_json(&sg->g, own, path, NVML_ERROR_NOT_SUPPORTED, gpu_extra_keys, err);
        json_decref(own);
        if (r != 0 || check_gpu(sg, i, path, err) != 0)
            return -1;
        if (sg->g.handle_rc == 0 &&
            (read_inject(&sg->inject, j, path, err) != 0 ||
             read_extra(&sg->extra, j, path, err) != 0 || check_links(sg, j, path, err) != 0))
            return -1;
    }
    return 0;
}

/* ---- timeline ---- */

/* Parses v as a value of ev's field with the field's own reader (hex strings, enum names...). */
static int parse_value(const struct sim_event *ev, const json_t *v, const char *path, uint64_t *out,
                       struct jerr *err)
{
    const struct jtable *t = ev->link >= 0  ? &gpu_nvlink_table
                             : ev->proc < 0 ? &gpu_table
                                            : &gpu_proc_table;
    const char *id_key = ev->link >= 0 ? "link" : ev->proc < 0 ? "index" : "pid";
    json_t *obj;
    int r;

    if (ev->field == NULL) {
        if (!json_is_boolean(v)) {
            jerr_set(err, path, "\"present\" takes true or false");
            return -1;
        }
        *out = json_is_true(v);
        return 0;
    }
    if (json_is_null(v)) {
        jerr_set(err, path, "expected a value for %s, got null", ev->field->name);
        return -1;
    }
    obj = json_pack("{s:i, s:O}", id_key, 0, ev->field->name, v);
    if (ev->link >= 0) {
        struct gpu_nvlink tmp;

        gpu_nvlink_init(&tmp, 0);
        r = jtable_read(t, &tmp, obj, "", NVML_ERROR_NOT_SUPPORTED, NULL, err);
        if (r == 0)
            *out = sim_raw_get(&tmp, ev->field);
        jtable_free(t, &tmp);
    } else if (ev->proc < 0) {
        struct gpu tmp;

        gpu_init(&tmp, 0);
        r = jtable_read(t, &tmp, obj, "", NVML_ERROR_NOT_SUPPORTED, NULL, err);
        if (r == 0)
            *out = sim_raw_get(&tmp, ev->field);
        jtable_free(t, &tmp);
    } else {
        struct gpu_proc tmp;

        memset(&tmp, 0, sizeof(tmp));
        r = jtable_read(t, &tmp, obj, "", 0, NULL, err);
        if (r == 0)
            *out = sim_raw_get(&tmp, ev->field);
    }
    json_decref(obj);
    if (r != 0) /* the reader named the field; the place to fix is this value */
        snprintf(err->path, sizeof(err->path), "%s", path);
    return r;
}

static int read_square(struct sim_event *ev, const json_t *sq, const char *path, struct jerr *err)
{
    static const char *const keys[] = { "period_s", "values", NULL };
    const json_t *values = json_object_get(sq, "values");
    char kpath[300];
    size_t i;
    json_t *v;
    int r;

    if (!json_is_object(sq)) {
        jerr_set(err, path, "expected {\"period_s\": seconds, \"values\": [...]}");
        return -1;
    }
    if (check_keys(sq, keys, path, "a square wave", err) != 0)
        return -1;
    join(kpath, sizeof(kpath), path, "period_s");
    r = get_number(sq, "period_s", path, &ev->period_s, err);
    if (r < 0)
        return -1;
    if (r == 0 || !(ev->period_s > 0)) {
        if (r == 0)
            jerr_set(err, path, "missing \"period_s\": the period in seconds");
        else
            jerr_set(err, kpath, "expected a period in seconds, greater than 0");
        return -1;
    }
    join(kpath, sizeof(kpath), path, "values");
    if (!json_is_array(values) || json_array_size(values) == 0 ||
        json_array_size(values) > SQUARE_MAX_VALUES) {
        if (values == NULL)
            jerr_set(err, path, "missing \"values\": the values to cycle through");
        else
            jerr_set(err, kpath, "expected an array of 1 to %d values", SQUARE_MAX_VALUES);
        return -1;
    }
    ev->values = xcalloc(json_array_size(values), sizeof(*ev->values));
    json_array_foreach(values, i, v)
    {
        char vpath[320];

        pathf(vpath, sizeof(vpath), "%s[%zu]", kpath, i);
        if (parse_value(ev, v, vpath, &ev->values[i], err) != 0)
            return -1;
        ev->n_values = i + 1;
    }
    return 0;
}

/* "link": N names a link of the GPU's "nvlink" list; "field" one of its numbers or "active". */
static int read_link_target(struct sim_event *ev, const struct gpu *g, const json_t *e,
                            const json_t *jl, const json_t *jp, const char *path, struct jerr *err)
{
    const json_t *jf = json_object_get(e, "field");
    char kpath[300];
    const char *name;

    join(kpath, sizeof(kpath), path, "link");
    if (jp != NULL) {
        jerr_set(err, kpath, "a timeline entry changes a process or a link, not both");
        return -1;
    }
    if (!json_is_integer(jl)) {
        jerr_set(err, kpath, "expected a link number");
        return -1;
    }
    for (size_t i = 0; g->rc[GPU_S_NVLINK] == 0 && i < g->n_nvlinks; i++) {
        if (g->nvlinks[i].link == json_integer_value(jl))
            ev->link = (long)i;
    }
    if (ev->link < 0) {
        jerr_set(err, kpath, "GPU %u lists no link %lld in \"nvlink\"", ev->gpu,
                 (long long)json_integer_value(jl));
        return -1;
    }
    join(kpath, sizeof(kpath), path, "field");
    if (!json_is_string(jf)) {
        jerr_set(err, jf ? kpath : path, "expected \"field\": the name of a link field");
        return -1;
    }
    name = json_string_value(jf);
    ev->field = jtable_find(&gpu_nvlink_table, name);
    if (ev->field == NULL || ev->field->slot < 0 || ev->field->type == JF_STR ||
        ev->field->type == JF_ENUM) {
        jerr_set(err, kpath, "\"%s\" is not a link field that can change", name);
        return -1;
    }
    if (g->nvlinks[ev->link].rc[ev->field->slot] != 0) {
        jerr_set(err, kpath, "link %u of GPU %u has no %s to change (give it a value)",
                 g->nvlinks[ev->link].link, ev->gpu, name);
        return -1;
    }
    return 0;
}

/* Resolves "gpu", "pid" and "field" of a timeline entry. */
static int read_target(const struct sim_scenario *s, struct sim_event *ev, const json_t *e,
                       const char *path, struct jerr *err)
{
    const json_t *jg = json_object_get(e, "gpu"), *jp = json_object_get(e, "pid");
    const json_t *jl = json_object_get(e, "link");
    const json_t *jf = json_object_get(e, "field");
    const struct gpu *g;
    char kpath[300];
    const char *name;

    join(kpath, sizeof(kpath), path, "gpu");
    if (!json_is_integer(jg) || json_integer_value(jg) < 0 ||
        (size_t)json_integer_value(jg) >= s->n_gpus) {
        if (jg == NULL)
            jerr_set(err, path, "missing \"gpu\": the index of a GPU of the scenario");
        else if (s->n_gpus == 0)
            jerr_set(err, kpath, "the scenario has no GPUs");
        else
            jerr_set(err, kpath, "expected the index of a GPU of the scenario, 0 to %zu",
                     s->n_gpus - 1);
        return -1;
    }
    ev->gpu = (uint32_t)json_integer_value(jg);
    g = &s->gpus[ev->gpu].g;
    if (g->handle_rc != 0) {
        jerr_set(err, kpath, "GPU %u has no handle (handle_status), nothing of it can change",
                 ev->gpu);
        return -1;
    }
    ev->proc = -1;
    ev->link = -1;
    if (jl != NULL)
        return read_link_target(ev, g, e, jl, jp, path, err);
    if (jp != NULL) {
        join(kpath, sizeof(kpath), path, "pid");
        if (!json_is_integer(jp)) {
            jerr_set(err, kpath, "expected a process id");
            return -1;
        }
        for (size_t i = 0; i < g->n_procs; i++) {
            if (g->procs[i].pid == json_integer_value(jp))
                ev->proc = (long)i;
        }
        if (ev->proc < 0) {
            jerr_set(err, kpath, "GPU %u lists no process %lld", ev->gpu,
                     (long long)json_integer_value(jp));
            return -1;
        }
    }
    join(kpath, sizeof(kpath), path, "field");
    if (!json_is_string(jf)) {
        if (jf == NULL)
            jerr_set(err, path, "missing \"field\": the name of a %s field",
                     ev->proc < 0 ? "GPU" : "process");
        else
            jerr_set(err, kpath, "expected the name of a %s field",
                     ev->proc < 0 ? "GPU" : "process");
        return -1;
    }
    name = json_string_value(jf);
    if (ev->proc >= 0) {
        if (strcmp(name, "present") == 0)
            return 0; /* field NULL: whether the process exists */
        ev->field = jtable_find(&gpu_proc_table, name);
        if (ev->field == NULL || ev->field->slot < 0) {
            jerr_set(err, kpath, "\"%s\" is not a process field that can change", name);
            return -1;
        }
        if (!jfield_valid(&gpu_proc_table, &g->procs[ev->proc], ev->field)) {
            jerr_set(err, kpath, "process %u on GPU %u has no %s to change", g->procs[ev->proc].pid,
                     ev->gpu, name);
            return -1;
        }
        return 0;
    }
    ev->field = jtable_find(&gpu_table, name);
    if (ev->field == NULL || ev->field->slot < 0 || ev->field->type == JF_NONE) {
        jerr_set(err, kpath, "\"%s\" is not a GPU field that can change", name);
        return -1;
    }
    if (ev->field->type == JF_STR) {
        jerr_set(err, kpath, "%s is a string; the timeline changes numbers and booleans", name);
        return -1;
    }
    if (g->rc[ev->field->slot] != 0) {
        jerr_set(err, kpath, "GPU %u has no %s to change (give it a value)", ev->gpu, name);
        return -1;
    }
    return 0;
}

static int read_event(const struct sim_scenario *s, struct sim_event *ev, const json_t *e,
                      const char *path, struct jerr *err)
{
    static const char *const keys[] = { "gpu",        "pid", "link", "field", "from_s", "to_s",
                                        "rate_per_s", "min", "max",  "value", "square", NULL };
    const json_t *rate = json_object_get(e, "rate_per_s"), *value = json_object_get(e, "value");
    const json_t *square = json_object_get(e, "square");
    char kpath[300];
    int r;

    if (!json_is_object(e)) {
        jerr_set(err, path, "expected a timeline entry object");
        return -1;
    }
    if (check_keys(e, keys, path, "a timeline entry", err) != 0 ||
        read_target(s, ev, e, path, err) != 0)
        return -1;
    ev->from_s = 0;
    ev->to_s = INFINITY;
    if (get_number(e, "from_s", path, &ev->from_s, err) < 0 ||
        get_number(e, "to_s", path, &ev->to_s, err) < 0)
        return -1;
    if (!(ev->from_s < ev->to_s)) {
        join(kpath, sizeof(kpath), path, "to_s");
        jerr_set(err, kpath, "to_s must be later than from_s");
        return -1;
    }
    if ((rate != NULL) + (value != NULL) + (square != NULL) != 1) {
        jerr_set(err, path, "give exactly one of rate_per_s, value, square");
        return -1;
    }
    if (rate == NULL && (json_object_get(e, "min") || json_object_get(e, "max"))) {
        join(kpath, sizeof(kpath), path, json_object_get(e, "min") ? "min" : "max");
        jerr_set(err, kpath, "min and max limit a rate_per_s");
        return -1;
    }
    if (rate != NULL) {
        ev->kind = SIM_EV_RATE;
        join(kpath, sizeof(kpath), path, "rate_per_s");
        if (ev->field == NULL || !sim_field_is_numeric(ev->field)) {
            jerr_set(err, kpath, "%s is not an integer quantity; use value or square",
                     ev->field ? ev->field->name : "present");
            return -1;
        }
        if (get_number(e, "rate_per_s", path, &ev->rate_per_s, err) < 0 ||
            (r = get_number(e, "min", path, &ev->min, err)) < 0)
            return -1;
        ev->has_min = r > 0;
        if ((r = get_number(e, "max", path, &ev->max, err)) < 0)
            return -1;
        ev->has_max = r > 0;
        if (ev->has_min && ev->has_max && ev->min > ev->max) {
            join(kpath, sizeof(kpath), path, "max");
            jerr_set(err, kpath, "max is below min");
            return -1;
        }
        return 0;
    }
    if (value != NULL) {
        ev->kind = SIM_EV_WINDOW;
        join(kpath, sizeof(kpath), path, "value");
        return parse_value(ev, value, kpath, &ev->value, err);
    }
    ev->kind = SIM_EV_SQUARE;
    join(kpath, sizeof(kpath), path, "square");
    return read_square(ev, square, kpath, err);
}

static int read_timeline(struct sim_scenario *s, const json_t *arr, struct jerr *err)
{
    size_t i;
    json_t *e;

    if (arr == NULL || json_is_null(arr))
        return 0;
    if (!json_is_array(arr)) {
        jerr_set(err, "timeline", "expected an array of timeline entries");
        return -1;
    }
    s->events = xcalloc(json_array_size(arr) + 1, sizeof(*s->events));
    json_array_foreach(arr, i, e)
    {
        char path[64];

        pathf(path, sizeof(path), "timeline[%zu]", i);
        s->n_events = i + 1;
        if (read_event(s, &s->events[i], e, path, err) != 0)
            return -1;
    }
    return 0;
}

/* ---- whole documents ---- */

static struct sim_scenario *scenario_new(const char *name)
{
    struct sim_scenario *s = xcalloc(1, sizeof(*s));

    s->path = xstrdup(name);
    s->driver_version_rc = NVML_ERROR_NOT_SUPPORTED;
    s->nvml_version_rc = NVML_ERROR_NOT_SUPPORTED;
    s->cuda_driver_version_rc = NVML_ERROR_LIBRARY_NOT_FOUND;
    s->epoch_s = NAN;
    return s;
}

static int read_scenario(struct sim_scenario *s, const json_t *root, struct jerr *err)
{
    static const char *const keys[] = {
        "schema", "description", "system", "errors",   "delays_ms",
        "hang",   "list_growth", "gpus",   "timeline", "processes_follow_proc",
        "cuda", /* read by the CUDA simulator (sim-cuda/) */
        NULL
    };
    const json_t *follow = json_object_get(root, "processes_follow_proc");
    const json_t *schema = json_object_get(root, "schema"), *sys;
    const json_t *desc = json_object_get(root, "description");

    if (!json_is_string(schema) || strcmp(json_string_value(schema), SIM_SCENARIO_SCHEMA) != 0) {
        jerr_set(err, schema ? "schema" : "",
                 "expected \"schema\": \"%s\" (or a gpudoctor snapshot, \"%s\")",
                 SIM_SCENARIO_SCHEMA, SNAPSHOT_SCHEMA);
        return -1;
    }
    if (check_keys(root, keys, "", "the scenario", err) != 0)
        return -1;
    if (desc != NULL && !json_is_string(desc)) {
        jerr_set(err, "description", "expected a string");
        return -1;
    }
    if (follow != NULL && !json_is_boolean(follow)) {
        jerr_set(err, "processes_follow_proc", "expected true or false");
        return -1;
    }
    s->processes_follow_proc = json_is_true(follow);
    if (get_object(root, "system", "", &sys, err) != 0 || read_system(s, sys, err) != 0 ||
        read_inject(&s->inject, root, "", err) != 0 ||
        read_gpus(s, json_object_get(root, "gpus"), err) != 0 ||
        read_timeline(s, json_object_get(root, "timeline"), err) != 0)
        return -1;
    return 0;
}

static char *steal(char **p)
{
    char *s = *p;

    *p = NULL;
    return s;
}

/*
 * What a snapshot records of the keys the simulator keeps apart (brand, architecture, board part
 * number, accounting mode): played back as captured, a value that failed as not supported, one
 * an older snapshot did not record as the simulator's default.
 */
static enum sim_key_state replayed(const struct gpu *g, enum gpu_slot slot)
{
    if (g->rc[slot] == JF_RC_NOT_COLLECTED)
        return SIM_KEY_ABSENT; /* an older snapshot: the simulator's default */
    return gpu_valid(g, slot) ? SIM_KEY_SET : SIM_KEY_NULL;
}

static void replay_extra(struct sim_gpu *sg)
{
    const struct gpu *g = &sg->g;
    struct sim_extra *x = &sg->extra;

    x->brand_state = replayed(g, GPU_S_BRAND);
    x->brand = g->brand;
    x->arch_state = replayed(g, GPU_S_ARCH);
    x->arch = gpu_arch_nvml(g->architecture);
    x->part_state = replayed(g, GPU_S_PART_NUMBER);
    if (x->part_state == SIM_KEY_SET)
        x->part_number = xstrdup(g->board_part_number ? g->board_part_number : "");
    x->accounting_state = replayed(g, GPU_S_ACCOUNTING);
    x->accounting = g->accounting_mode;
}

/* A gpudoctor snapshot replayed: its NVML system values and its GPUs, as captured. */
static int read_snapshot(struct sim_scenario *s, const char *text, size_t len, const char *name,
                         char **cause)
{
    struct snapshot *snap = snapshot_from_json(text, len, name, cause);
    struct nvml_system *nv;
    struct jerr err = { "", "" };
    int r = 0;

    if (snap == NULL)
        return -1;
    nv = &snap->nvml;
    s->driver_version = steal(&nv->driver_version);
    s->driver_version_rc = s->driver_version           ? 0
                           : nv->driver_version_rc > 0 ? nv->driver_version_rc
                                                       : NVML_ERROR_NOT_SUPPORTED;
    s->nvml_version = steal(&nv->nvml_version);
    s->nvml_version_rc = s->nvml_version           ? 0
                         : nv->nvml_version_rc > 0 ? nv->nvml_version_rc
                                                   : NVML_ERROR_NOT_SUPPORTED;
    if (nv->cuda_driver_version_rc > 0) {
        s->cuda_driver_version_rc = nv->cuda_driver_version_rc;
    } else if (nv->cuda_driver_version > 0) {
        s->cuda_driver_version = nv->cuda_driver_version;
        s->cuda_driver_version_rc = 0;
    }
    s->device_count_rc = nv->device_count_rc > 0 ? nv->device_count_rc : 0;
    /* A capture whose library did not load replays as a library that will not initialise. */
    s->init_rc = nv->load_error > 0 ? nv->load_error : nv->init_rc > 0 ? nv->init_rc : 0;
    if (s->init_rc != 0)
        s->init_error = steal(nv->load_error > 0 ? &nv->load_detail : &nv->init_error);

    s->gpus = xcalloc(snap->n_gpus + 1, sizeof(*s->gpus));
    for (size_t i = 0; i < snap->n_gpus; i++) {
        char path[64];

        /* take ownership of the GPU's strings and processes */
        s->gpus[i].g = snap->gpus[i];
        memset(&snap->gpus[i], 0, sizeof(snap->gpus[i]));
        replay_extra(&s->gpus[i]);
        s->n_gpus = i + 1;
        pathf(path, sizeof(path), "gpus[%zu]", i);
        if (check_gpu(&s->gpus[i], i, path, &err) != 0 ||
            (s->gpus[i].g.handle_rc == 0 && check_links(&s->gpus[i], NULL, path, &err) != 0)) {
            *cause = jerr_format(&err, text, name);
            r = -1;
            break;
        }
    }
    snapshot_free(snap);
    return r;
}

struct sim_scenario *sim_scenario_parse(const char *text, size_t len, const char *name,
                                        char **cause)
{
    struct sim_scenario *s = scenario_new(name);
    struct jerr err = { "", "" };
    json_error_t jerror;
    const json_t *schema;
    json_t *root;

    root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerror);
    if (root == NULL) {
        *cause = xasprintf("%s:%d:%d: %s", name, jerror.line, jerror.column, jerror.text);
        sim_scenario_free(s);
        return NULL;
    }
    if (!json_is_object(root)) {
        jerr_set(&err, "", "a scenario is a JSON object");
        goto fail;
    }
    schema = json_object_get(root, "schema");
    if (json_is_string(schema) && strcmp(json_string_value(schema), SNAPSHOT_SCHEMA) == 0) {
        json_decref(root);
        if (read_snapshot(s, text, len, name, cause) != 0) {
            sim_scenario_free(s);
            return NULL;
        }
        return s;
    }
    if (read_scenario(s, root, &err) != 0)
        goto fail;
    json_decref(root);
    return s;
fail:
    *cause = jerr_format(&err, text, name);
    json_decref(root);
    sim_scenario_free(s);
    return NULL;
}

struct sim_scenario *sim_scenario_load(const char *path, char **cause)
{
    struct sim_scenario *s;
    char *text = NULL;
    ssize_t n = file_slurp_at(AT_FDCWD, path, SCENARIO_MAX_BYTES, &text);

    if (n < 0) {
        *cause = xasprintf("%s: %s", path,
                           n == -EFBIG ? "larger than 64 MiB, not a scenario" : strerror((int)-n));
        return NULL;
    }
    s = sim_scenario_parse(text, (size_t)n, path, cause);
    free(text);
    return s;
}
