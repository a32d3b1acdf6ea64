/*
 * nvml-client: reads an NVML library the way an official binding does (dlopen by path,
 * dlsym of the unversioned and the versioned names, the struct layouts of nvml-abi.h) and
 * prints everything it reads as "key=value" lines, so that tests/e2e/sim-*.sh can assert exact
 * values. A call that fails prints "key=!RC" (RC the numeric NVML return code).
 *
 *   nvml-client LIB [--trace] [--init v1|v2|flags] COMMAND [ARGS]
 *     dump                   system values, then every function on every GPU
 *     call GPU GROUP...      only the named groups of calls (system, identity, pci, memory,
 *                            thermal, power, clocks, modes, ecc, pcie, procs, procutil,
 *                            client) on
 *                            GPU index GPU ("-": every GPU), and the time they took
 *     procs GPU              every process-list symbol: records written, stride, decoded entries
 *     grow GPU NAME          the two-call protocol step by step (count query, then two fills)
 *     errstr                 nvmlErrorString of every return code
 *     preinit                calls made before nvmlInit, and after the last nvmlShutdown
 *     refcount               init twice, shut down twice, with a call after each
 *     badargs                invalid handles, NULL pointers, out-of-range indices
 *     symbols                which NVML_FUNCTIONS and NVML_CLIENT_FUNCTIONS names the
 *                            library exports
 *     threads N ITER         N threads each doing ITER rounds of calls; counts disagreements
 *     pname PID              nvmlSystemGetProcessName
 * --trace prints "call=NAME" (flushed) before each call: a test can see which call hangs.
 */
#include "../../src/nvml/nvml-abi.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum sym {
#define SYM_ENUM(name, params) SYM_##name,
    NVML_FUNCTIONS(SYM_ENUM) NVML_CLIENT_FUNCTIONS(SYM_ENUM)
#undef SYM_ENUM
        SYM_nvmlErrorString,
    SYM__COUNT
};

static const char *const sym_names[SYM__COUNT] = {
#define SYM_NAME(name, params) #name,
    NVML_FUNCTIONS(SYM_NAME) NVML_CLIENT_FUNCTIONS(SYM_NAME)
#undef SYM_NAME
        "nvmlErrorString",
};

static void *syms[SYM__COUNT];
static int trace;

static void *traced(enum sym s)
{
    if (trace) {
        printf("call=%s\n", sym_names[s]);
        fflush(stdout);
    }
    return syms[s];
}

#define FN(name) ((name##_fn *)traced(SYM_##name))
#define ERRSTR   ((nvmlErrorString_fn *)syms[SYM_nvmlErrorString])

/* ---- printing ---- */

static void line(const char *prefix, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void line(const char *prefix, const char *key, const char *fmt, ...)
{
    va_list ap;

    printf("%s%s=", prefix, key);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
}

/* Prints "key=!rc" and returns 0 when rc is an error; returns 1 on success. */
static int ok(const char *prefix, const char *key, nvmlReturn_t rc)
{
    if (rc != NVML_SUCCESS) {
        line(prefix, key, "!%d", rc);
        return 0;
    }
    return 1;
}

static void p_u_(const char *prefix, const char *key, nvmlReturn_t rc, unsigned long long v)
{
    if (ok(prefix, key, rc))
        line(prefix, key, "%llu", v);
}

static void p_i_(const char *prefix, const char *key, nvmlReturn_t rc, long long v)
{
    if (ok(prefix, key, rc))
        line(prefix, key, "%lld", v);
}

static void p_x_(const char *prefix, const char *key, nvmlReturn_t rc, unsigned long long v)
{
    if (ok(prefix, key, rc))
        line(prefix, key, "0x%llx", v);
}

static void p_s_(const char *prefix, const char *key, nvmlReturn_t rc, const char *s)
{
    if (ok(prefix, key, rc))
        line(prefix, key, "%s", s);
}

/*
 * The value printers take the call's result and the value it wrote: the macros sequence the
 * call before the value is read (argument evaluation order is unspecified).
 */
#define P_U(p, key, call, v)                                                                       \
    do {                                                                                           \
        nvmlReturn_t rc_ = (call);                                                                 \
        p_u_(p, key, rc_, v);                                                                      \
    } while (0)
#define P_I(p, key, call, v)                                                                       \
    do {                                                                                           \
        nvmlReturn_t rc_ = (call);                                                                 \
        p_i_(p, key, rc_, v);                                                                      \
    } while (0)
#define P_X(p, key, call, v)                                                                       \
    do {                                                                                           \
        nvmlReturn_t rc_ = (call);                                                                 \
        p_x_(p, key, rc_, v);                                                                      \
    } while (0)
#define P_S(p, key, call, v)                                                                       \
    do {                                                                                           \
        nvmlReturn_t rc_ = (call);                                                                 \
        p_s_(p, key, rc_, v);                                                                      \
    } while (0)

/* Bytes a call wrote into buf: run it twice over two fill patterns and take the furthest. */
static size_t last_changed(const unsigned char *b, size_t size, unsigned char fill)
{
    size_t last = 0;

    for (size_t i = 0; i < size; i++) {
        if (b[i] != fill)
            last = i + 1;
    }
    return last;
}

static double now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static char driver_version[96];

/* Compares dotted versions ("535.104.05") numerically, up to three parts. */
static int version_cmp(const char *a, const char *b)
{
    unsigned long x[3] = { 0, 0, 0 }, y[3] = { 0, 0, 0 };

    sscanf(a, "%lu.%lu.%lu", &x[0], &x[1], &x[2]);
    sscanf(b, "%lu.%lu.%lu", &y[0], &y[1], &y[2]);
    for (int i = 0; i < 3; i++) {
        if (x[i] != y[i])
            return x[i] < y[i] ? -1 : 1;
    }
    return 0;
}

/* A lookup that must find the handle we already hold: -1 when it finds another one. */
static nvmlReturn_t same(nvmlReturn_t rc, const nvmlDevice_t *found, nvmlDevice_t want)
{
    return rc != NVML_SUCCESS ? rc : *found == want ? NVML_SUCCESS : -1;
}

/* The stride an nvitop-style binding expects from _v3: 32 bytes only in the R535 window. */
static size_t expected_v3_stride(void)
{
    if (version_cmp(driver_version, "535.43.02") >= 0 &&
        version_cmp(driver_version, "535.86.05") <= 0)
        return sizeof(nvmlProcessInfo_r535_t);
    return sizeof(nvmlProcessInfo_v2_t);
}

/* ---- system ---- */

static void sys_versions(void)
{
    char buf[96];
    int v = 0;

    P_S("", "nvmlSystemGetDriverVersion", FN(nvmlSystemGetDriverVersion)(buf, sizeof(buf)), buf);
    P_S("", "nvmlSystemGetDriverVersion.len4", FN(nvmlSystemGetDriverVersion)(buf, 4), buf);
    P_S("", "nvmlSystemGetNVMLVersion", FN(nvmlSystemGetNVMLVersion)(buf, sizeof(buf)), buf);
    P_I("", "nvmlSystemGetCudaDriverVersion", FN(nvmlSystemGetCudaDriverVersion)(&v), v);
    P_I("", "nvmlSystemGetCudaDriverVersion_v2", FN(nvmlSystemGetCudaDriverVersion_v2)(&v), v);
}

static void sys_count(void)
{
    unsigned int n = 0;

    P_U("", "nvmlDeviceGetCount", FN(nvmlDeviceGetCount)(&n), n);
    P_U("", "nvmlDeviceGetCount_v2", FN(nvmlDeviceGetCount_v2)(&n), n);
}

static void sys_handles(void)
{
    unsigned int n = 0;
    nvmlDevice_t d;

    if (FN(nvmlDeviceGetCount_v2)(&n) != NVML_SUCCESS)
        return;
    for (unsigned int i = 0; i <= n; i++) {
        char key[64];

        snprintf(key, sizeof(key), "nvmlDeviceGetHandleByIndex.%u", i);
        P_S("", key, FN(nvmlDeviceGetHandleByIndex)(i, &d), "ok");
        snprintf(key, sizeof(key), "nvmlDeviceGetHandleByIndex_v2.%u", i);
        P_S("", key, FN(nvmlDeviceGetHandleByIndex_v2)(i, &d), "ok");
    }
}

/* ---- one device ---- */

static void d_identity(nvmlDevice_t d, const char *p)
{
    char buf[128];
    unsigned int u = 0;
    int major = 0, minor = 0;
    nvmlDevice_t other;

    P_U(p, "nvmlDeviceGetIndex", FN(nvmlDeviceGetIndex)(d, &u), u);
    P_S(p, "nvmlDeviceGetName", FN(nvmlDeviceGetName)(d, buf, sizeof(buf)), buf);
    P_S(p, "nvmlDeviceGetName.len4", FN(nvmlDeviceGetName)(d, buf, 4), buf);
    if (ok(p, "nvmlDeviceGetUUID", FN(nvmlDeviceGetUUID)(d, buf, sizeof(buf)))) {
        line(p, "nvmlDeviceGetUUID", "%s", buf);
        P_S(p, "nvmlDeviceGetHandleByUUID",
            same(FN(nvmlDeviceGetHandleByUUID)(buf, &other), &other, d), "same");
    }
    P_S(p, "nvmlDeviceGetSerial", FN(nvmlDeviceGetSerial)(d, buf, sizeof(buf)), buf);
    P_S(p, "nvmlDeviceGetVbiosVersion", FN(nvmlDeviceGetVbiosVersion)(d, buf, sizeof(buf)), buf);
    P_U(p, "nvmlDeviceGetMinorNumber", FN(nvmlDeviceGetMinorNumber)(d, &u), u);
    if (ok(p, "nvmlDeviceGetCudaComputeCapability",
           FN(nvmlDeviceGetCudaComputeCapability)(d, &major, &minor)))
        line(p, "nvmlDeviceGetCudaComputeCapability", "%d.%d", major, minor);
}

static void d_pci(nvmlDevice_t d, const char *p)
{
    unsigned char raw[128];
    nvmlPciInfo_t v3;
    nvmlPciInfoLegacy_t legacy;
    size_t n;
    nvmlDevice_t other;
    nvmlReturn_t rc;
    static const struct {
        const char *name;
        enum sym sym;
    } legacy_syms[] = {
        { "nvmlDeviceGetPciInfo", SYM_nvmlDeviceGetPciInfo },
        { "nvmlDeviceGetPciInfo_v2", SYM_nvmlDeviceGetPciInfo_v2 },
    };

    for (size_t i = 0; i < 2; i++) {
        char key[96];
        nvmlDeviceGetPciInfo_fn *fn = (nvmlDeviceGetPciInfo_fn *)traced(legacy_syms[i].sym);

        memset(raw, 0xA5, sizeof(raw));
        rc = fn(d, (nvmlPciInfoLegacy_t *)(void *)raw);
        n = last_changed(raw, sizeof(raw), 0xA5);
        memset(raw, 0x5A, sizeof(raw));
        fn(d, (nvmlPciInfoLegacy_t *)(void *)raw);
        if (last_changed(raw, sizeof(raw), 0x5A) > n)
            n = last_changed(raw, sizeof(raw), 0x5A);
        if (!ok(p, legacy_syms[i].name, rc))
            continue;
        memcpy(&legacy, raw, sizeof(legacy));
        snprintf(key, sizeof(key), "%s.written", legacy_syms[i].name);
        line(p, key, "%zu", n);
        snprintf(key, sizeof(key), "%s.busId", legacy_syms[i].name);
        line(p, key, "%.16s", legacy.busId);
        snprintf(key, sizeof(key), "%s.ids", legacy_syms[i].name);
        line(p, key, "%x:%x:%x 0x%08x 0x%08x", legacy.domain, legacy.bus, legacy.device,
             legacy.pciDeviceId, legacy.pciSubSystemId);
    }
    memset(raw, 0xA5, sizeof(raw));
    rc = FN(nvmlDeviceGetPciInfo_v3)(d, (nvmlPciInfo_t *)(void *)raw);
    n = last_changed(raw, sizeof(raw), 0xA5);
    if (!ok(p, "nvmlDeviceGetPciInfo_v3", rc))
        return;
    memcpy(&v3, raw, sizeof(v3));
    line(p, "nvmlDeviceGetPciInfo_v3.written", "%zu", n);
    line(p, "nvmlDeviceGetPciInfo_v3.busId", "%.32s", v3.busId);
    line(p, "nvmlDeviceGetPciInfo_v3.busIdLegacy", "%.16s", v3.busIdLegacy);
    line(p, "nvmlDeviceGetPciInfo_v3.ids", "%x:%x:%x 0x%08x 0x%08x", v3.domain, v3.bus, v3.device,
         v3.pciDeviceId, v3.pciSubSystemId);
    P_S(p, "nvmlDeviceGetHandleByPciBusId_v2",
        same(FN(nvmlDeviceGetHandleByPciBusId_v2)(v3.busId, &other), &other, d), "same");
    P_S(p, "nvmlDeviceGetHandleByPciBusId_v2.legacy",
        same(FN(nvmlDeviceGetHandleByPciBusId_v2)(v3.busIdLegacy, &other), &other, d), "same");
}

static void d_memory(nvmlDevice_t d, const char *p)
{
    unsigned char raw[96];
    nvmlMemory_t m1;
    nvmlMemory_v2_t m2;
    nvmlBAR1Memory_t bar1;
    nvmlUtilization_t util;
    unsigned int u = 0, period = 0;
    nvmlReturn_t rc;

    memset(raw, 0xA5, sizeof(raw));
    rc = FN(nvmlDeviceGetMemoryInfo)(d, (nvmlMemory_t *)(void *)raw);
    if (ok(p, "nvmlDeviceGetMemoryInfo", rc)) {
        memcpy(&m1, raw, sizeof(m1));
        line(p, "nvmlDeviceGetMemoryInfo.written", "%zu", last_changed(raw, sizeof(raw), 0xA5));
        line(p, "nvmlDeviceGetMemoryInfo", "total=%llu free=%llu used=%llu", m1.total, m1.free,
             m1.used);
    }
    memset(&m2, 0, sizeof(m2));
    m2.version = nvmlMemory_v2;
    if (ok(p, "nvmlDeviceGetMemoryInfo_v2", FN(nvmlDeviceGetMemoryInfo_v2)(d, &m2)))
        line(p, "nvmlDeviceGetMemoryInfo_v2", "total=%llu reserved=%llu free=%llu used=%llu",
             m2.total, m2.reserved, m2.free, m2.used);
    m2.version = 2; /* the mistake bindings made: the bare number, not the macro */
    P_S(p, "nvmlDeviceGetMemoryInfo_v2.version2", FN(nvmlDeviceGetMemoryInfo_v2)(d, &m2), "ok");
    if (ok(p, "nvmlDeviceGetBAR1MemoryInfo", FN(nvmlDeviceGetBAR1MemoryInfo)(d, &bar1)))
        line(p, "nvmlDeviceGetBAR1MemoryInfo", "total=%llu free=%llu used=%llu", bar1.bar1Total,
             bar1.bar1Free, bar1.bar1Used);
    if (ok(p, "nvmlDeviceGetUtilizationRates", FN(nvmlDeviceGetUtilizationRates)(d, &util)))
        line(p, "nvmlDeviceGetUtilizationRates", "gpu=%u memory=%u", util.gpu, util.memory);
    if (ok(p, "nvmlDeviceGetEncoderUtilization",
           FN(nvmlDeviceGetEncoderUtilization)(d, &u, &period)))
        line(p, "nvmlDeviceGetEncoderUtilization", "%u period_us=%u", u, period);
    if (ok(p, "nvmlDeviceGetDecoderUtilization",
           FN(nvmlDeviceGetDecoderUtilization)(d, &u, &period)))
        line(p, "nvmlDeviceGetDecoderUtilization", "%u period_us=%u", u, period);
}

static void d_thermal(nvmlDevice_t d, const char *p)
{
    static const char *const thresholds[] = { "shutdown",     "slowdown",     "mem_max",
                                              "gpu_max",      "acoustic_min", "acoustic_curr",
                                              "acoustic_max", "gps_curr",     "invalid8" };
    nvmlTemperature_v1_t tv;
    unsigned int u = 0, fans = 0;

    P_U(p, "nvmlDeviceGetTemperature", FN(nvmlDeviceGetTemperature)(d, NVML_TEMPERATURE_GPU, &u),
        u);
    P_U(p, "nvmlDeviceGetTemperature.sensor1", FN(nvmlDeviceGetTemperature)(d, 1, &u), u);
    memset(&tv, 0, sizeof(tv));
    tv.version = nvmlTemperature_v1;
    tv.sensorType = NVML_TEMPERATURE_GPU;
    P_I(p, "nvmlDeviceGetTemperatureV", FN(nvmlDeviceGetTemperatureV)(d, &tv), tv.temperature);
    tv.version = 1;
    P_I(p, "nvmlDeviceGetTemperatureV.version1", FN(nvmlDeviceGetTemperatureV)(d, &tv),
        tv.temperature);
    for (int i = 0; i < 9; i++) {
        char key[96];

        snprintf(key, sizeof(key), "nvmlDeviceGetTemperatureThreshold.%s", thresholds[i]);
        P_U(p, key, FN(nvmlDeviceGetTemperatureThreshold)(d, i, &u), u);
    }
    P_U(p, "nvmlDeviceGetFanSpeed", FN(nvmlDeviceGetFanSpeed)(d, &u), u);
    P_U(p, "nvmlDeviceGetNumFans", FN(nvmlDeviceGetNumFans)(d, &fans), fans);
    P_U(p, "nvmlDeviceGetFanSpeed_v2.0", FN(nvmlDeviceGetFanSpeed_v2)(d, 0, &u), u);
    P_U(p, "nvmlDeviceGetFanSpeed_v2.1", FN(nvmlDeviceGetFanSpeed_v2)(d, 1, &u), u);
}

static void d_power(nvmlDevice_t d, const char *p)
{
    unsigned int u = 0, lo = 0, hi = 0;
    unsigned long long e = 0;

    P_U(p, "nvmlDeviceGetPowerUsage", FN(nvmlDeviceGetPowerUsage)(d, &u), u);
    P_U(p, "nvmlDeviceGetPowerManagementLimit", FN(nvmlDeviceGetPowerManagementLimit)(d, &u), u);
    P_U(p, "nvmlDeviceGetPowerManagementDefaultLimit",
        FN(nvmlDeviceGetPowerManagementDefaultLimit)(d, &u), u);
    if (ok(p, "nvmlDeviceGetPowerManagementLimitConstraints",
           FN(nvmlDeviceGetPowerManagementLimitConstraints)(d, &lo, &hi)))
        line(p, "nvmlDeviceGetPowerManagementLimitConstraints", "%u %u", lo, hi);
    P_U(p, "nvmlDeviceGetEnforcedPowerLimit", FN(nvmlDeviceGetEnforcedPowerLimit)(d, &u), u);
    P_U(p, "nvmlDeviceGetTotalEnergyConsumption", FN(nvmlDeviceGetTotalEnergyConsumption)(d, &e),
        e);
}

static const char *const clock_types[] = { "graphics", "sm", "mem", "video" };

static void d_clocks(nvmlDevice_t d, const char *p)
{
    static const char *const ids[] = { "current", "app_target", "app_default", "boost_max" };
    unsigned int u = 0;
    unsigned long long r = 0;
    int ps = 0;

    for (int t = 0; t < 4; t++) {
        char key[96];

        snprintf(key, sizeof(key), "nvmlDeviceGetClockInfo.%s", clock_types[t]);
        P_U(p, key, FN(nvmlDeviceGetClockInfo)(d, t, &u), u);
        snprintf(key, sizeof(key), "nvmlDeviceGetMaxClockInfo.%s", clock_types[t]);
        P_U(p, key, FN(nvmlDeviceGetMaxClockInfo)(d, t, &u), u);
        snprintf(key, sizeof(key), "nvmlDeviceGetApplicationsClock.%s", clock_types[t]);
        P_U(p, key, FN(nvmlDeviceGetApplicationsClock)(d, t, &u), u);
        snprintf(key, sizeof(key), "nvmlDeviceGetDefaultApplicationsClock.%s", clock_types[t]);
        P_U(p, key, FN(nvmlDeviceGetDefaultApplicationsClock)(d, t, &u), u);
        for (int id = 0; id < 4; id++) {
            snprintf(key, sizeof(key), "nvmlDeviceGetClock.%s.%s", clock_types[t], ids[id]);
            P_U(p, key, FN(nvmlDeviceGetClock)(d, t, id, &u), u);
        }
    }
    P_U(p, "nvmlDeviceGetClockInfo.bad", FN(nvmlDeviceGetClockInfo)(d, 9, &u), u);
    P_X(p, "nvmlDeviceGetCurrentClocksEventReasons",
        FN(nvmlDeviceGetCurrentClocksEventReasons)(d, &r), r);
    P_X(p, "nvmlDeviceGetCurrentClocksThrottleReasons",
        FN(nvmlDeviceGetCurrentClocksThrottleReasons)(d, &r), r);
    P_X(p, "nvmlDeviceGetSupportedClocksEventReasons",
        FN(nvmlDeviceGetSupportedClocksEventReasons)(d, &r), r);
    P_X(p, "nvmlDeviceGetSupportedClocksThrottleReasons",
        FN(nvmlDeviceGetSupportedClocksThrottleReasons)(d, &r), r);
    P_I(p, "nvmlDeviceGetPerformanceState", FN(nvmlDeviceGetPerformanceState)(d, &ps), ps);
    P_I(p, "nvmlDeviceGetPowerState", FN(nvmlDeviceGetPowerState)(d, &ps), ps);
}

static void d_modes(nvmlDevice_t d, const char *p)
{
    int a = 0, b = 0;
    unsigned int cur = 0, pend = 0, max = 0;

    P_I(p, "nvmlDeviceGetPersistenceMode", FN(nvmlDeviceGetPersistenceMode)(d, &a), a);
    P_I(p, "nvmlDeviceGetComputeMode", FN(nvmlDeviceGetComputeMode)(d, &a), a);
    P_I(p, "nvmlDeviceGetDisplayMode", FN(nvmlDeviceGetDisplayMode)(d, &a), a);
    P_I(p, "nvmlDeviceGetDisplayActive", FN(nvmlDeviceGetDisplayActive)(d, &a), a);
    if (ok(p, "nvmlDeviceGetEccMode", FN(nvmlDeviceGetEccMode)(d, &a, &b)))
        line(p, "nvmlDeviceGetEccMode", "%d %d", a, b);
    if (ok(p, "nvmlDeviceGetMigMode", FN(nvmlDeviceGetMigMode)(d, &cur, &pend)))
        line(p, "nvmlDeviceGetMigMode", "%u %u", cur, pend);
    P_U(p, "nvmlDeviceGetMaxMigDeviceCount", FN(nvmlDeviceGetMaxMigDeviceCount)(d, &max), max);
    for (unsigned int k = 0; k < max + 1; k++) {
        nvmlDevice_t mig, back;
        char key[96], buf[128];

        snprintf(key, sizeof(key), "nvmlDeviceGetMigDeviceHandleByIndex.%u", k);
        if (!ok(p, key, FN(nvmlDeviceGetMigDeviceHandleByIndex)(d, k, &mig)))
            continue;
        line(p, key, "ok");
        snprintf(key, sizeof(key), "mig%u.nvmlDeviceGetName", k);
        P_S(p, key, FN(nvmlDeviceGetName)(mig, buf, sizeof(buf)), buf);
        snprintf(key, sizeof(key), "mig%u.nvmlDeviceGetUUID", k);
        if (ok(p, key, FN(nvmlDeviceGetUUID)(mig, buf, sizeof(buf)))) {
            line(p, key, "%s", buf);
            snprintf(key, sizeof(key), "mig%u.nvmlDeviceGetHandleByUUID", k);
            P_S(p, key, same(FN(nvmlDeviceGetHandleByUUID)(buf, &back), &back, mig), "same");
        }
        snprintf(key, sizeof(key), "mig%u.nvmlDeviceGetPowerUsage", k);
        P_U(p, key, FN(nvmlDeviceGetPowerUsage)(mig, &cur), cur);
    }
}

static void d_ecc(nvmlDevice_t d, const char *p)
{
    static const char *const causes[] = { "sbe", "dbe" };
    unsigned long long v = 0;
    unsigned int a = 0, b = 0, c = 0, e = 0;
    int pending = 0;

    for (int counter = 0; counter < 2; counter++) {
        for (int type = 0; type < 2; type++) {
            char key[96];

            snprintf(key, sizeof(key), "nvmlDeviceGetTotalEccErrors.%s.%s",
                     counter ? "aggregate" : "volatile", type ? "uncorrected" : "corrected");
            P_U(p, key, FN(nvmlDeviceGetTotalEccErrors)(d, type, counter, &v), v);
        }
    }
    for (int cause = 0; cause < 2; cause++) {
        unsigned long long addr[64], ts[64];
        unsigned int n = 0;
        char key[96];
        nvmlReturn_t rc;

        snprintf(key, sizeof(key), "nvmlDeviceGetRetiredPages.%s.query", causes[cause]);
        rc = FN(nvmlDeviceGetRetiredPages)(d, cause, &n, NULL);
        line(p, key, "%d %u", rc, n);
        if (rc != NVML_ERROR_INSUFFICIENT_SIZE || n > 64)
            continue;
        snprintf(key, sizeof(key), "nvmlDeviceGetRetiredPages.%s", causes[cause]);
        if (ok(p, key, FN(nvmlDeviceGetRetiredPages)(d, cause, &n, addr)))
            line(p, key, "%u first=0x%llx", n, addr[0]);
        snprintf(key, sizeof(key), "nvmlDeviceGetRetiredPages_v2.%s", causes[cause]);
        if (ok(p, key, FN(nvmlDeviceGetRetiredPages_v2)(d, cause, &n, addr, ts)))
            line(p, key, "%u first=0x%llx at=%llu", n, addr[0], ts[0]);
    }
    P_I(p, "nvmlDeviceGetRetiredPagesPendingStatus",
        FN(nvmlDeviceGetRetiredPagesPendingStatus)(d, &pending), pending);
    if (ok(p, "nvmlDeviceGetRemappedRows", FN(nvmlDeviceGetRemappedRows)(d, &a, &b, &c, &e)))
        line(p, "nvmlDeviceGetRemappedRows", "%u %u %u %u", a, b, c, e);
}

static void d_pcie(nvmlDevice_t d, const char *p)
{
    unsigned int u = 0;

    P_U(p, "nvmlDeviceGetCurrPcieLinkGeneration", FN(nvmlDeviceGetCurrPcieLinkGeneration)(d, &u),
        u);
    P_U(p, "nvmlDeviceGetMaxPcieLinkGeneration", FN(nvmlDeviceGetMaxPcieLinkGeneration)(d, &u), u);
    P_U(p, "nvmlDeviceGetGpuMaxPcieLinkGeneration",
        FN(nvmlDeviceGetGpuMaxPcieLinkGeneration)(d, &u), u);
    P_U(p, "nvmlDeviceGetCurrPcieLinkWidth", FN(nvmlDeviceGetCurrPcieLinkWidth)(d, &u), u);
    P_U(p, "nvmlDeviceGetMaxPcieLinkWidth", FN(nvmlDeviceGetMaxPcieLinkWidth)(d, &u), u);
    P_U(p, "nvmlDeviceGetPcieThroughput.tx",
        FN(nvmlDeviceGetPcieThroughput)(d, NVML_PCIE_UTIL_TX_BYTES, &u), u);
    P_U(p, "nvmlDeviceGetPcieThroughput.rx",
        FN(nvmlDeviceGetPcieThroughput)(d, NVML_PCIE_UTIL_RX_BYTES, &u), u);
    P_U(p, "nvmlDeviceGetPcieReplayCounter", FN(nvmlDeviceGetPcieReplayCounter)(d, &u), u);
}

/* ---- process lists ---- */

typedef nvmlReturn_t list_fn(nvmlDevice_t, unsigned int *, void *);

static const struct {
    const char *name;
    enum sym sym;
    int version; /* 1, 2, 3: decides the stride a binding reads with */
} lists[] = {
    { "nvmlDeviceGetComputeRunningProcesses", SYM_nvmlDeviceGetComputeRunningProcesses, 1 },
    { "nvmlDeviceGetComputeRunningProcesses_v2", SYM_nvmlDeviceGetComputeRunningProcesses_v2, 2 },
    { "nvmlDeviceGetComputeRunningProcesses_v3", SYM_nvmlDeviceGetComputeRunningProcesses_v3, 3 },
    { "nvmlDeviceGetGraphicsRunningProcesses", SYM_nvmlDeviceGetGraphicsRunningProcesses, 1 },
    { "nvmlDeviceGetGraphicsRunningProcesses_v2", SYM_nvmlDeviceGetGraphicsRunningProcesses_v2, 2 },
    { "nvmlDeviceGetGraphicsRunningProcesses_v3", SYM_nvmlDeviceGetGraphicsRunningProcesses_v3, 3 },
    { "nvmlDeviceGetMPSComputeRunningProcesses", SYM_nvmlDeviceGetMPSComputeRunningProcesses, 1 },
    { "nvmlDeviceGetMPSComputeRunningProcesses_v2", SYM_nvmlDeviceGetMPSComputeRunningProcesses_v2,
      2 },
    { "nvmlDeviceGetMPSComputeRunningProcesses_v3", SYM_nvmlDeviceGetMPSComputeRunningProcesses_v3,
      3 },
};

static size_t stride_of(int version)
{
    return version == 1   ? sizeof(nvmlProcessInfo_v1_t)
           : version == 2 ? sizeof(nvmlProcessInfo_v2_t)
                          : expected_v3_stride();
}

/* Prints process k of buf as a binding of that version reads it. */
static void print_record(const char *p, const char *name, unsigned int k, const void *buf,
                         int version)
{
    char key[160];

    snprintf(key, sizeof(key), "%s.%u", name, k);
    if (version == 1) {
        const nvmlProcessInfo_v1_t *r = (const nvmlProcessInfo_v1_t *)buf + k;

        line(p, key, "pid=%u used=%llu", r->pid, r->usedGpuMemory);
    } else if (stride_of(version) == sizeof(nvmlProcessInfo_v2_t)) {
        const nvmlProcessInfo_v2_t *r = (const nvmlProcessInfo_v2_t *)buf + k;

        line(p, key, "pid=%u used=%llu gi=0x%x ci=0x%x", r->pid, r->usedGpuMemory, r->gpuInstanceId,
             r->computeInstanceId);
    } else {
        const nvmlProcessInfo_r535_t *r = (const nvmlProcessInfo_r535_t *)buf + k;

        line(p, key, "pid=%u used=%llu gi=0x%x ci=0x%x cc=%llu", r->pid, r->usedGpuMemory,
             r->gpuInstanceId, r->computeInstanceId, r->usedGpuCcProtectedMemory);
    }
}

static void d_procs(nvmlDevice_t d, const char *p)
{
    for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
        list_fn *fn = (list_fn *)traced(lists[i].sym);
        unsigned int n = 0, cap;
        unsigned char *buf;
        size_t written;
        char key[160];
        nvmlReturn_t rc = fn(d, &n, NULL);

        snprintf(key, sizeof(key), "%s.query", lists[i].name);
        line(p, key, "%d %u", rc, n);
        if (rc != NVML_ERROR_INSUFFICIENT_SIZE)
            continue;
        cap = n + 4; /* over-allocate: the list may grow, and we measure what is written */
        buf = malloc((size_t)cap * 64);
        memset(buf, 0xA5, (size_t)cap * 64);
        rc = fn(d, &cap, buf);
        if (!ok(p, lists[i].name, rc)) {
            free(buf);
            continue;
        }
        written = last_changed(buf, (size_t)(n + 4) * 64, 0xA5);
        snprintf(key, sizeof(key), "%s.count", lists[i].name);
        line(p, key, "%u", cap);
        snprintf(key, sizeof(key), "%s.written", lists[i].name);
        line(p, key, "%zu", written);
        snprintf(key, sizeof(key), "%s.stride", lists[i].name);
        line(p, key, "%zu", cap ? written / cap : 0);
        for (unsigned int k = 0; k < cap; k++)
            print_record(p, lists[i].name, k, buf, lists[i].version);
        free(buf);
    }
}

static void d_proc_util(nvmlDevice_t d, const char *p)
{
    nvmlProcessUtilizationSample_t s[64];
    unsigned int n = 0;
    nvmlReturn_t rc = FN(nvmlDeviceGetProcessUtilization)(d, NULL, &n, 0);

    line(p, "nvmlDeviceGetProcessUtilization.query", "%d %u", rc, n);
    P_S(p, "nvmlDeviceGetProcessUtilization.future",
        FN(nvmlDeviceGetProcessUtilization)(d, NULL, &n, ~0ULL), "ok");
    if (rc != NVML_ERROR_INSUFFICIENT_SIZE || n > 64)
        return;
    n = 64;
    if (!ok(p, "nvmlDeviceGetProcessUtilization", FN(nvmlDeviceGetProcessUtilization)(d, s, &n, 0)))
        return;
    line(p, "nvmlDeviceGetProcessUtilization.count", "%u", n);
    for (unsigned int k = 0; k < n; k++) {
        char key[96];

        snprintf(key, sizeof(key), "nvmlDeviceGetProcessUtilization.%u", k);
        line(p, key, "pid=%u sm=%u mem=%u enc=%u dec=%u ts_nonzero=%d", s[k].pid, s[k].smUtil,
             s[k].memUtil, s[k].encUtil, s[k].decUtil, s[k].timeStamp != 0);
    }
}

/* ---- what NVIDIA's bindings read and gpudoctor does not (NVML_CLIENT_FUNCTIONS) ---- */

static void d_client(nvmlDevice_t d, const char *p)
{
    nvmlFieldValue_t fv[3];
    char buf[NVML_DEVICE_PART_NUMBER_BUFFER_SIZE];
    int a = -1, b = -1;
    unsigned int u = 0;

    P_I(p, "nvmlDeviceGetBrand", FN(nvmlDeviceGetBrand)(d, &a), a);
    P_X(p, "nvmlDeviceGetArchitecture", FN(nvmlDeviceGetArchitecture)(d, &u), u);
    P_S(p, "nvmlDeviceGetBoardPartNumber", FN(nvmlDeviceGetBoardPartNumber)(d, buf, sizeof(buf)),
        buf);
    P_I(p, "nvmlDeviceGetDriverModel", FN(nvmlDeviceGetDriverModel)(d, &a, &b), a);
    P_I(p, "nvmlDeviceGetDriverModel_v2", FN(nvmlDeviceGetDriverModel_v2)(d, &a, &b), a);
    P_I(p, "nvmlDeviceGetAccountingMode", FN(nvmlDeviceGetAccountingMode)(d, &a), a);
    for (unsigned int link = 0; link < 3; link++) {
        char key[64];

        snprintf(key, sizeof(key), "nvmlDeviceGetNvLinkState.%u", link);
        P_I(p, key, FN(nvmlDeviceGetNvLinkState)(d, link, &a), a);
    }
    memset(fv, 0, sizeof(fv));
    fv[0].fieldId = 91;  /* NVML_FI_DEV_NVLINK_LINK_COUNT */
    fv[1].fieldId = 138; /* NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX */
    fv[1].scopeId = 1;
    fv[2].fieldId = 82; /* NVML_FI_DEV_MEMORY_TEMP */
    if (ok(p, "nvmlDeviceGetFieldValues", FN(nvmlDeviceGetFieldValues)(d, 3, fv))) {
        for (int i = 0; i < 3; i++) {
            char key[64];

            snprintf(key, sizeof(key), "nvmlDeviceGetFieldValues.%u.%u", fv[i].fieldId,
                     fv[i].scopeId);
            if (ok(p, key, fv[i].nvmlReturn))
                line(p, key, "type=%d u=%u ull=%llu", fv[i].valueType, fv[i].value.uiVal,
                     fv[i].value.ullVal);
        }
    }
}

/* ---- commands ---- */

typedef void dev_printer(nvmlDevice_t d, const char *prefix);

static const struct {
    const char *name; /* what `call` matches: a function name these printers start with */
    dev_printer *fn;
} printers[] = {
    { "identity", d_identity },  { "pci", d_pci },
    { "memory", d_memory },      { "thermal", d_thermal },
    { "power", d_power },        { "clocks", d_clocks },
    { "modes", d_modes },        { "ecc", d_ecc },
    { "pcie", d_pcie },          { "procs", d_procs },
    { "procutil", d_proc_util }, { "client", d_client },
};

static nvmlReturn_t init(const char *how)
{
    nvmlReturn_t rc;

    if (strcmp(how, "v1") == 0)
        rc = FN(nvmlInit)();
    else if (strcmp(how, "flags") == 0)
        rc = FN(nvmlInitWithFlags)(0);
    else
        rc = FN(nvmlInit_v2)();
    line("", "init", "%d", rc);
    if (rc != NVML_SUCCESS) {
        line("", "init.error", "%s", ERRSTR(rc));
        return rc;
    }
    FN(nvmlSystemGetDriverVersion)(driver_version, sizeof(driver_version));
    return rc;
}

static int wanted(const char *group, char **names, int n_names)
{
    for (int j = 0; j < n_names; j++) {
        if (strcmp(names[j], group) == 0)
            return 1;
    }
    return n_names == 0;
}

/* The groups named (all when none), on GPU index gpu ("-": every GPU). */
static int cmd_dump(const char *how, const char *gpu, char **names, int n_names)
{
    unsigned int n = 0;

    if (init(how) != NVML_SUCCESS)
        return 0;
    if (wanted("system", names, n_names)) {
        sys_versions();
        sys_count();
        sys_handles();
    }
    if (FN(nvmlDeviceGetCount_v2)(&n) == NVML_SUCCESS) {
        for (unsigned int i = 0; i < n; i++) {
            char prefix[32];
            nvmlDevice_t d;

            if (strcmp(gpu, "-") != 0 && (unsigned)atoi(gpu) != i)
                continue;
            snprintf(prefix, sizeof(prefix), "gpu%u.", i);
            if (!ok(prefix, "handle", FN(nvmlDeviceGetHandleByIndex_v2)(i, &d)))
                continue;
            for (size_t k = 0; k < sizeof(printers) / sizeof(printers[0]); k++) {
                if (wanted(printers[k].name, names, n_names))
                    printers[k].fn(d, prefix);
            }
        }
    }
    line("", "shutdown", "%d", FN(nvmlShutdown)());
    return 0;
}

/* `call GPU GROUP...`: timed, so that a test can see an injected delay. */
static int cmd_call(const char *how, const char *gpu, char **names, int n_names)
{
    double t0 = now_ms();

    cmd_dump(how, gpu, names, n_names);
    line("", "elapsed_ms", "%.0f", now_ms() - t0);
    return 0;
}

static int cmd_grow(const char *how, unsigned int gpu, const char *name)
{
    unsigned char buf[64 * 64];
    unsigned int n = 0, n1, n2;
    list_fn *fn = NULL;
    int version = 3;
    nvmlDevice_t d;
    nvmlReturn_t rc;

    for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
        if (strcmp(lists[i].name, name) == 0) {
            fn = (list_fn *)traced(lists[i].sym);
            version = lists[i].version;
        }
    }
    if (fn == NULL || init(how) != NVML_SUCCESS)
        return fn == NULL ? 64 : 0;
    if (!ok("", "handle", FN(nvmlDeviceGetHandleByIndex_v2)(gpu, &d)))
        return 0;
    rc = fn(d, &n, NULL);
    line("", "grow.query", "%d %u", rc, n);
    n1 = n;
    rc = fn(d, &n1, buf); /* exactly what the query said: the list has grown since */
    line("", "grow.fill1", "%d %u", rc, n1);
    n2 = n1 < 64 ? n1 : 64;
    rc = fn(d, &n2, buf);
    line("", "grow.fill2", "%d %u", rc, n2);
    for (unsigned int k = 0; rc == NVML_SUCCESS && k < n2; k++)
        print_record("", "grow", k, buf, version);
    FN(nvmlShutdown)();
    return 0;
}

static int cmd_errstr(void)
{
    for (int rc = 0; rc <= 31; rc++) {
        char key[32];

        snprintf(key, sizeof(key), "errstr.%d", rc);
        line("", key, "%s", ERRSTR(rc));
    }
    line("", "errstr.999", "%s", ERRSTR(NVML_ERROR_UNKNOWN));
    return 0;
}

static void every_call(const char *p)
{
    char buf[96];
    unsigned int n = 0;
    int v = 0;
    nvmlDevice_t d;

    P_U(p, "nvmlDeviceGetCount_v2", FN(nvmlDeviceGetCount_v2)(&n), n);
    P_U(p, "nvmlDeviceGetCount", FN(nvmlDeviceGetCount)(&n), n);
    P_S(p, "nvmlDeviceGetHandleByIndex_v2", FN(nvmlDeviceGetHandleByIndex_v2)(0, &d), "ok");
    P_S(p, "nvmlSystemGetDriverVersion", FN(nvmlSystemGetDriverVersion)(buf, sizeof(buf)), buf);
    P_I(p, "nvmlSystemGetCudaDriverVersion_v2", FN(nvmlSystemGetCudaDriverVersion_v2)(&v), v);
    P_S(p, "nvmlSystemGetProcessName", FN(nvmlSystemGetProcessName)(1, buf, sizeof(buf)), buf);
    line(p, "nvmlShutdown", "!%d", FN(nvmlShutdown)());
}

static int cmd_preinit(const char *how)
{
    every_call("preinit.");
    if (init(how) != NVML_SUCCESS)
        return 0;
    line("", "shutdown", "%d", FN(nvmlShutdown)());
    every_call("after.");
    return 0;
}

static int cmd_refcount(void)
{
    unsigned int n = 0;

    line("", "init1", "%d", FN(nvmlInit_v2)());
    line("", "init2", "%d", FN(nvmlInit)());
    P_U("", "count.2refs", FN(nvmlDeviceGetCount_v2)(&n), n);
    line("", "shutdown1", "%d", FN(nvmlShutdown)());
    P_U("", "count.1ref", FN(nvmlDeviceGetCount_v2)(&n), n);
    line("", "shutdown2", "%d", FN(nvmlShutdown)());
    P_U("", "count.0refs", FN(nvmlDeviceGetCount_v2)(&n), n);
    line("", "shutdown3", "%d", FN(nvmlShutdown)());
    line("", "init3", "%d", FN(nvmlInit_v2)());
    P_U("", "count.again", FN(nvmlDeviceGetCount_v2)(&n), n);
    line("", "shutdown4", "%d", FN(nvmlShutdown)());
    return 0;
}

static int cmd_badargs(const char *how)
{
    struct nvmlDevice_st *fake = (struct nvmlDevice_st *)(void *)&(char[64]){ 0 };
    unsigned int n = 0, u = 0;
    nvmlDevice_t d = NULL;
    char buf[96];

    if (init(how) != NVML_SUCCESS)
        return 0;
    FN(nvmlDeviceGetCount_v2)(&n);
    P_S("", "handle.past_end", FN(nvmlDeviceGetHandleByIndex_v2)(n, &d), "ok");
    P_S("", "handle.null_out", FN(nvmlDeviceGetHandleByIndex_v2)(0, NULL), "ok");
    P_S("", "count.null", FN(nvmlDeviceGetCount_v2)(NULL), "ok");
    P_S("", "driver.null", FN(nvmlSystemGetDriverVersion)(NULL, 80), "ok");
    P_S("", "name.fake_handle", FN(nvmlDeviceGetName)(fake, buf, sizeof(buf)), buf);
    P_S("", "name.null_handle", FN(nvmlDeviceGetName)(NULL, buf, sizeof(buf)), buf);
    P_U("", "power.fake_handle", FN(nvmlDeviceGetPowerUsage)(fake, &u), u);
    P_S("", "uuid.unknown", FN(nvmlDeviceGetHandleByUUID)("GPU-nope", &d), "ok");
    P_S("", "busid.unknown", FN(nvmlDeviceGetHandleByPciBusId_v2)("0000:FF:1F.7", &d), "ok");
    P_S("", "busid.garbage", FN(nvmlDeviceGetHandleByPciBusId_v2)("not a bus id", &d), "ok");
    if (FN(nvmlDeviceGetHandleByIndex_v2)(0, &d) == NVML_SUCCESS) {
        P_S("", "name.null_buf", FN(nvmlDeviceGetName)(d, NULL, 96), "ok");
        P_U("", "power.null_out", FN(nvmlDeviceGetPowerUsage)(d, NULL), 0);
        P_S("", "procs.null_count", FN(nvmlDeviceGetComputeRunningProcesses_v3)(d, NULL, NULL),
            "ok");
        P_S("", "memory_v2.null", FN(nvmlDeviceGetMemoryInfo_v2)(d, NULL), "ok");
        P_U("", "threshold.99", FN(nvmlDeviceGetTemperatureThreshold)(d, 99, &u), u);
        P_U("", "ecc.bad_type",
            FN(nvmlDeviceGetTotalEccErrors)(d, 5, 0, &(unsigned long long){ 0 }), 0);
    }
    line("", "shutdown", "%d", FN(nvmlShutdown)());
    return 0;
}

static int cmd_symbols(void)
{
    int missing = 0;

    for (int i = 0; i < SYM__COUNT; i++) {
        if (syms[i] == NULL) {
            line("", "missing", "%s", sym_names[i]);
            missing++;
        }
    }
    line("", "symbols", "%d", SYM__COUNT);
    line("", "symbols.missing", "%d", missing);
    return 0;
}

struct worker {
    pthread_t tid;
    int iterations;
    unsigned long calls;
    unsigned long disagreements;
    char name0[96]; /* what the main thread read: every thread must read the same */
    unsigned int count;
};

static void *work(void *arg)
{
    struct worker *w = arg;

    for (int it = 0; it < w->iterations; it++) {
        unsigned int n = 0;

        w->calls++;
        if (((nvmlInit_v2_fn *)syms[SYM_nvmlInit_v2])() != NVML_SUCCESS) {
            w->disagreements++;
            continue;
        }
        w->calls++;
        if (((nvmlDeviceGetCount_v2_fn *)syms[SYM_nvmlDeviceGetCount_v2])(&n) != NVML_SUCCESS ||
            n != w->count)
            w->disagreements++;
        for (unsigned int i = 0; i < n; i++) {
            nvmlDevice_t d;
            char name[96];
            nvmlMemory_v2_t m = { .version = nvmlMemory_v2 };
            unsigned int cnt = 0, t = 0;
            nvmlProcessInfo_v2_t procs[32];

            w->calls += 5;
            if (((nvmlDeviceGetHandleByIndex_v2_fn *)syms[SYM_nvmlDeviceGetHandleByIndex_v2])(
                    i, &d) != NVML_SUCCESS)
                continue; /* a GPU without a handle stays without one */
            if (i == 0 && (((nvmlDeviceGetName_fn *)syms[SYM_nvmlDeviceGetName])(
                               d, name, sizeof(name)) != NVML_SUCCESS ||
                           strcmp(name, w->name0) != 0))
                w->disagreements++;
            ((nvmlDeviceGetMemoryInfo_v2_fn *)syms[SYM_nvmlDeviceGetMemoryInfo_v2])(d, &m);
            ((nvmlDeviceGetTemperature_fn *)syms[SYM_nvmlDeviceGetTemperature])(d, 0, &t);
            if (((nvmlDeviceGetComputeRunningProcesses_v3_fn *)
                     syms[SYM_nvmlDeviceGetComputeRunningProcesses_v3])(d, &cnt, NULL) ==
                NVML_ERROR_INSUFFICIENT_SIZE) {
                cnt = 32;
                ((nvmlDeviceGetComputeRunningProcesses_v3_fn *)
                     syms[SYM_nvmlDeviceGetComputeRunningProcesses_v3])(d, &cnt, procs);
            }
        }
        w->calls++;
        if (((nvmlShutdown_fn *)syms[SYM_nvmlShutdown])() != NVML_SUCCESS)
            w->disagreements++;
    }
    return NULL;
}

static int cmd_threads(int n_threads, int iterations)
{
    struct worker *w = calloc((size_t)n_threads, sizeof(*w));
    unsigned long calls = 0, bad = 0;
    char name0[96] = "";
    unsigned int count = 0;
    nvmlDevice_t d;

    /* one reference held throughout, so the threads share one loaded scenario */
    if (w == NULL || init("v2") != NVML_SUCCESS)
        return 1;
    FN(nvmlDeviceGetCount_v2)(&count);
    if (FN(nvmlDeviceGetHandleByIndex_v2)(0, &d) == NVML_SUCCESS)
        FN(nvmlDeviceGetName)(d, name0, sizeof(name0));
    for (int i = 0; i < n_threads; i++) {
        w[i].iterations = iterations;
        w[i].count = count;
        memcpy(w[i].name0, name0, sizeof(name0));
        pthread_create(&w[i].tid, NULL, work, &w[i]);
    }
    for (int i = 0; i < n_threads; i++) {
        pthread_join(w[i].tid, NULL);
        calls += w[i].calls;
        bad += w[i].disagreements;
    }
    line("", "threads.calls", "%lu", calls);
    line("", "threads.disagreements", "%lu", bad);
    line("", "shutdown", "%d", FN(nvmlShutdown)());
    free(w);
    return 0;
}

static int usage(void)
{
    fprintf(stderr, "usage: nvml-client LIB [--trace] [--init v1|v2|flags] COMMAND [ARGS]\n"
                    "commands: dump, call GPU GROUP..., procs GPU, grow GPU NAME, errstr,\n"
                    "          preinit, refcount, badargs, symbols, threads N ITER, pname PID\n");
    return 64;
}

int main(int argc, char **argv)
{
    const char *how = "v2";
    void *lib;
    int i = 2;

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 3)
        return usage();
    lib = dlopen(argv[1], RTLD_LAZY | RTLD_GLOBAL);
    if (lib == NULL) {
        fprintf(stderr, "nvml-client: %s\n", dlerror());
        return 1;
    }
    for (int s = 0; s < SYM__COUNT; s++)
        syms[s] = dlsym(lib, sym_names[s]);
    for (; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
        if (strcmp(argv[i], "--trace") == 0)
            trace = 1;
        else if (strcmp(argv[i], "--init") == 0 && i + 1 < argc)
            how = argv[++i];
        else
            return usage();
    }
    if (i >= argc)
        return usage();
    if (strcmp(argv[i], "symbols") == 0)
        return cmd_symbols();
    for (int s = 0; s < SYM__COUNT; s++) {
        if (syms[s] == NULL) {
            fprintf(stderr, "nvml-client: %s does not export %s\n", argv[1], sym_names[s]);
            return 1;
        }
    }
    if (strcmp(argv[i], "dump") == 0)
        return cmd_dump(how, "-", NULL, 0);
    if (strcmp(argv[i], "call") == 0 && i + 2 < argc)
        return cmd_call(how, argv[i + 1], argv + i + 2, argc - i - 2);
    if (strcmp(argv[i], "procs") == 0 && i + 1 < argc) {
        char *group[] = { (char *)"procs", (char *)"procutil" };

        return cmd_dump(how, argv[i + 1], group, 2);
    }
    if (strcmp(argv[i], "grow") == 0 && i + 2 < argc)
        return cmd_grow(how, (unsigned)atoi(argv[i + 1]), argv[i + 2]);
    if (strcmp(argv[i], "errstr") == 0)
        return cmd_errstr();
    if (strcmp(argv[i], "preinit") == 0)
        return cmd_preinit(how);
    if (strcmp(argv[i], "refcount") == 0)
        return cmd_refcount();
    if (strcmp(argv[i], "badargs") == 0)
        return cmd_badargs(how);
    if (strcmp(argv[i], "threads") == 0 && i + 2 < argc)
        return cmd_threads(atoi(argv[i + 1]), atoi(argv[i + 2]));
    if (strcmp(argv[i], "pname") == 0 && i + 1 < argc) {
        char name[256];

        if (init(how) != NVML_SUCCESS)
            return 0;
        P_S("", "nvmlSystemGetProcessName",
            FN(nvmlSystemGetProcessName)((unsigned)atoi(argv[i + 1]), name, sizeof(name)), name);
        P_S("", "nvmlSystemGetProcessName.len2",
            FN(nvmlSystemGetProcessName)((unsigned)atoi(argv[i + 1]), name, 2), name);
        FN(nvmlShutdown)();
        return 0;
    }
    return usage();
}
