/*
 * Each row of gpu_table names, in `source`, the NVML function that supplies the field. The
 * simulator must honour that: a field whose status is an error makes exactly the functions of
 * that family (all versions and renamings of the source) return it, plus the few documented
 * functions that derive from the field too (docs/simulator.md), and no other device function.
 * Runs through the built library with dlopen, every device function with every argument.
 */
#include "snapshot/snapshot.h"
#include "nvml/nvml-abi.h"

#include <dlfcn.h>
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#define SIM_LIB  TEST_BINARY_DIR "/sim/libnvidia-ml.so.1"
#define FULL     TEST_FIXTURES "/scenarios/full.json"
#define INJECTED NVML_ERROR_INSUFFICIENT_POWER

static void *lib;
static char dir[] = "/tmp/test-sim-sources.XXXXXX";
static char path[256];

/* ---- calling every device function with each argument it can take ---- */

/* What a set of calls returned: some call returned `want`, some call succeeded. */
#define SAW_WANT 1u
#define SAW_OK   2u

static unsigned seen(nvmlReturn_t rc, nvmlReturn_t want)
{
    return (rc == want ? SAW_WANT : 0) | (rc == NVML_SUCCESS ? SAW_OK : 0);
}

/* A size query: INSUFFICIENT_SIZE or SUCCESS both mean the list could be read. */
static unsigned sized(nvmlReturn_t rc, nvmlReturn_t want)
{
    return seen(rc == NVML_ERROR_INSUFFICIENT_SIZE ? NVML_SUCCESS : rc, want);
}

enum sig { SIG_U32, SIG_U64, SIG_INT, SIG_STR, SIG_SPECIAL };

typedef unsigned special_fn(void *fn, nvmlDevice_t d, nvmlReturn_t want);

static unsigned call_enum2(void *fn, nvmlDevice_t d, nvmlReturn_t want, int n)
{
    unsigned r = 0, v;

    for (int i = 0; i < n; i++)
        r |= seen(((nvmlReturn_t(*)(nvmlDevice_t, int, unsigned *))fn)(d, i, &v), want);
    return r;
}

static unsigned s_clock4(void *fn, nvmlDevice_t d, nvmlReturn_t want)
{
    return call_enum2(fn, d, want, 4);
}

static unsigned s_threshold(void *fn, nvmlDevice_t d, nvmlReturn_t want)
{
    return call_enum2(fn, d, want, 8);
}

static unsigned s_pcie_tp(void *fn, nvmlDevice_t d, nvmlReturn_t want)
{
    return call_enum2(fn, d, want, 2);
}

static unsigned s_temperature(void *fn, nvmlDevice_t d, nvmlReturn_t want)
{
    unsigned v;

    return seen(((nvmlDeviceGetTemperature_fn *)fn)(d, NVML_TEMPERATURE_GPU, &v), want);
}

static unsigned s_temperature_v(void *fn, nvmlDevice_t d, nvmlReturn_t want)
{
    nvmlTemperature_v1_t t = { nvmlTemperature_v1, NVML_TEMPERATURE_GPU, 0 };

    return seen(((nvmlDeviceGetTemperatureV_fn *)fn)(d, &t), want);
}

static unsigned s_get_clock(void *fn, nvmlDevice_t d, nvmlReturn_t want)
{
    unsigned r = 0, v;

    for (int type = 0; type < 4; type++) {
        for (int id = 0; id < 4; id++)
            r |= seen(((nvmlDeviceGetClock_fn *)fn)(d, type, id, &v), want);
    }
    return r;
}

static unsigned s_two_u32(void *fn, nvmlDevice_t d, nvmlReturn_t want)
{
    unsigned a, b;

    return seen(((nvmlReturn_t(*)(nvmlDevice_t, unsigned *, unsigned *))fn)(d, &a, &b), want);
}

static unsigned s_codec(void *fn, nvmlDevice_t d, nvmlReturn_t want)
{
    return s_two_u32(fn, d, want);
}

static unsigned s_two_int(void *fn, nvmlDevice_t d, nvmlReturn_t want)
{
    int a, b;

    return seen(((nvmlReturn_t(*)(nvmlDevice_t, int *, int *))fn)(d, &a, &b), want);
}

static unsigned s_pci_legacy(void *fn, nvmlDevice_t d, nvmlReturn_t want)
{
    nvmlPciInfoLegacy_t p;

    return seen(((nvmlDeviceGetPciInfo_fn *)fn)(d, &p), want);
}

static unsigned s_pci_v3(void *fn, nvmlDevice_t d, nvmlReturn_t want)
{
    nvmlPciInfo_t p;

    return seen(((nvmlDeviceGetPciInfo_v3_fn *)fn)(d, &p), want);
}

static unsigned s_memory(void *fn, nvmlDevice_t d, nvmlReturn_t want)
{
    nvmlMemory_t m;

    return seen(((nvmlDeviceGetMemoryInfo_fn *)fn)(d, &m), want);
}

static unsigned s_memory_v2(void *fn, nvmlDevice_t d, nvmlReturn_t want)
{
    nvmlMemory_v2_t m = { .version = nvmlMemory_v2 };

    return seen(((nvmlDeviceGetMemoryInfo_v2_fn *)fn)(d, &m), want);
}

static unsigned s_bar1(void *fn, nvmlDevice_t d, nvmlReturn_t want)
{
    nvmlBAR1Memory_t m;

    return seen(((nvmlDeviceGetBAR1MemoryInfo_fn *)fn)(d, &m), want);
}

static unsigned s_util(void *fn, nvmlDevice_t d, nvmlReturn_t want)
{
    nvmlUtilization_t u;

    return seen(((nvmlDeviceGetUtilizationRates_fn *)fn)(d, &u), want);
}

static unsigned s_fan_v2(void *fn, nvmlDevice_t d, nvmlReturn_t want)
{
    unsigned v;

    return seen(((nvmlDeviceGetFanSpeed_v2_fn *)fn)(d, 0, &v), want);
}

static unsigned s_mig_handle(void *fn, nvmlDevice_t d, nvmlReturn_t want)
{
    nvmlDevice_t m;

    return seen(((nvmlDeviceGetMigDeviceHandleByIndex_fn *)fn)(d, 0, &m), want);
}

static unsigned s_ecc(void *fn, nvmlDevice_t d, nvmlReturn_t want)
{
    unsigned r = 0;
    unsigned long long v;

    for (int type = 0; type < 2; type++) {
        for (int counter = 0; counter < 2; counter++)
            r |= seen(((nvmlDeviceGetTotalEccErrors_fn *)fn)(d, type, counter, &v), want);
    }
    return r;
}

static unsigned s_retired(void *fn, nvmlDevice_t d, nvmlReturn_t want)
{
    unsigned r = 0;

    for (int cause = 0; cause < 2; cause++) {
        unsigned n = 0;

        r |= sized(((nvmlDeviceGetRetiredPages_fn *)fn)(d, cause, &n, NULL), want);
    }
    return r;
}

static unsigned s_retired_v2(void *fn, nvmlDevice_t d, nvmlReturn_t want)
{
    unsigned r = 0;

    for (int cause = 0; cause < 2; cause++) {
        unsigned n = 0;

        r |= sized(((nvmlDeviceGetRetiredPages_v2_fn *)fn)(d, cause, &n, NULL, NULL), want);
    }
    return r;
}

static unsigned s_remapped(void *fn, nvmlDevice_t d, nvmlReturn_t want)
{
    unsigned a, b, c, e;

    return seen(((nvmlDeviceGetRemappedRows_fn *)fn)(d, &a, &b, &c, &e), want);
}

/* Lists are asked for their size. */
static unsigned s_list(void *fn, nvmlDevice_t d, nvmlReturn_t want)
{
    unsigned n = 0;

    return sized(((nvmlDeviceGetComputeRunningProcesses_v3_fn *)fn)(d, &n, NULL), want);
}

static unsigned s_proc_util(void *fn, nvmlDevice_t d, nvmlReturn_t want)
{
    unsigned n = 0;

    return sized(((nvmlDeviceGetProcessUtilization_fn *)fn)(d, NULL, &n, 0), want);
}

/* Links 0 to 3: full.json's GPU 0 has four. */
static unsigned s_link_state(void *fn, nvmlDevice_t d, nvmlReturn_t want)
{
    unsigned r = 0;
    int v;

    for (unsigned link = 0; link < 4; link++)
        r |= seen(((nvmlDeviceGetNvLinkState_fn *)fn)(d, link, &v), want);
    return r;
}

static unsigned s_link_version(void *fn, nvmlDevice_t d, nvmlReturn_t want)
{
    unsigned r = 0, v;

    for (unsigned link = 0; link < 4; link++)
        r |= seen(((nvmlDeviceGetNvLinkVersion_fn *)fn)(d, link, &v), want);
    return r;
}

static unsigned s_link_remote_pci(void *fn, nvmlDevice_t d, nvmlReturn_t want)
{
    unsigned r = 0;
    nvmlPciInfo_t pci;

    for (unsigned link = 0; link < 4; link++)
        r |= seen(((nvmlDeviceGetNvLinkRemotePciInfo_v2_fn *)fn)(d, link, &pci), want);
    return r;
}

static unsigned s_link_remote_type(void *fn, nvmlDevice_t d, nvmlReturn_t want)
{
    unsigned r = 0;
    int v;

    for (unsigned link = 0; link < 4; link++)
        r |= seen(((nvmlDeviceGetNvLinkRemoteDeviceType_fn *)fn)(d, link, &v), want);
    return r;
}

/* The call's own code: values carry theirs (tests/e2e/sim-fields.sh checks those). */
static unsigned s_field_values(void *fn, nvmlDevice_t d, nvmlReturn_t want)
{
    nvmlFieldValue_t v[2];

    memset(v, 0, sizeof(v));
    v[0].fieldId = NVML_FI_DEV_NVLINK_ERROR_DL_CRC;
    v[1].fieldId = NVML_FI_DEV_NVLINK_ERROR_DL_REPLAY;
    v[1].scopeId = 1;
    return seen(((nvmlDeviceGetFieldValues_fn *)fn)(d, 2, v), want);
}

static unsigned s_fabric_v(void *fn, nvmlDevice_t d, nvmlReturn_t want)
{
    nvmlGpuFabricInfo_v3_t f;

    memset(&f, 0, sizeof(f));
    f.version = nvmlGpuFabricInfo_v3;
    return seen(((nvmlDeviceGetGpuFabricInfoV_fn *)fn)(d, &f), want);
}

static unsigned s_fabric(void *fn, nvmlDevice_t d, nvmlReturn_t want)
{
    nvmlGpuFabricInfo_t f;

    return seen(((nvmlDeviceGetGpuFabricInfo_fn *)fn)(d, &f), want);
}

/* The calls between two GPUs: full.json's GPU 0 lists GPU 1 as its peer. */
static nvmlDevice_t gpu1(void)
{
    nvmlDevice_t d = NULL;

    (void)((nvmlDeviceGetHandleByIndex_v2_fn *)dlsym(lib, "nvmlDeviceGetHandleByIndex_v2"))(1, &d);
    return d;
}

static unsigned s_topology(void *fn, nvmlDevice_t d, nvmlReturn_t want)
{
    int level;

    return seen(((nvmlDeviceGetTopologyCommonAncestor_fn *)fn)(d, gpu1(), &level), want);
}

static unsigned s_p2p(void *fn, nvmlDevice_t d, nvmlReturn_t want)
{
    unsigned r = 0;
    int status;

    for (int index = NVML_P2P_CAPS_INDEX_READ; index <= NVML_P2P_CAPS_INDEX_PCI; index++)
        r |= seen(((nvmlDeviceGetP2PStatus_fn *)fn)(d, gpu1(), index, &status), want);
    return r;
}

static const struct invoker {
    const char *name;
    enum sig sig;
    special_fn *special;
} invokers[] = {
    { "nvmlDeviceGetIndex", SIG_U32, NULL },
    { "nvmlDeviceGetName", SIG_STR, NULL },
    { "nvmlDeviceGetUUID", SIG_STR, NULL },
    { "nvmlDeviceGetSerial", SIG_STR, NULL },
    { "nvmlDeviceGetVbiosVersion", SIG_STR, NULL },
    { "nvmlDeviceGetBrand", SIG_INT, NULL },
    { "nvmlDeviceGetArchitecture", SIG_U32, NULL },
    { "nvmlDeviceGetBoardPartNumber", SIG_STR, NULL },
    { "nvmlDeviceGetAccountingMode", SIG_INT, NULL },
    { "nvmlDeviceGetMinorNumber", SIG_U32, NULL },
    { "nvmlDeviceGetPciInfo", SIG_SPECIAL, s_pci_legacy },
    { "nvmlDeviceGetPciInfo_v2", SIG_SPECIAL, s_pci_legacy },
    { "nvmlDeviceGetPciInfo_v3", SIG_SPECIAL, s_pci_v3 },
    { "nvmlDeviceGetCudaComputeCapability", SIG_SPECIAL, s_two_int },
    { "nvmlDeviceGetMemoryInfo", SIG_SPECIAL, s_memory },
    { "nvmlDeviceGetMemoryInfo_v2", SIG_SPECIAL, s_memory_v2 },
    { "nvmlDeviceGetBAR1MemoryInfo", SIG_SPECIAL, s_bar1 },
    { "nvmlDeviceGetUtilizationRates", SIG_SPECIAL, s_util },
    { "nvmlDeviceGetEncoderUtilization", SIG_SPECIAL, s_codec },
    { "nvmlDeviceGetDecoderUtilization", SIG_SPECIAL, s_codec },
    { "nvmlDeviceGetTemperature", SIG_SPECIAL, s_temperature },
    { "nvmlDeviceGetTemperatureV", SIG_SPECIAL, s_temperature_v },
    { "nvmlDeviceGetTemperatureThreshold", SIG_SPECIAL, s_threshold },
    { "nvmlDeviceGetPowerUsage", SIG_U32, NULL },
    { "nvmlDeviceGetPowerManagementLimit", SIG_U32, NULL },
    { "nvmlDeviceGetPowerManagementDefaultLimit", SIG_U32, NULL },
    { "nvmlDeviceGetPowerManagementLimitConstraints", SIG_SPECIAL, s_two_u32 },
    { "nvmlDeviceGetEnforcedPowerLimit", SIG_U32, NULL },
    { "nvmlDeviceGetTotalEnergyConsumption", SIG_U64, NULL },
    { "nvmlDeviceGetClockInfo", SIG_SPECIAL, s_clock4 },
    { "nvmlDeviceGetMaxClockInfo", SIG_SPECIAL, s_clock4 },
    { "nvmlDeviceGetClock", SIG_SPECIAL, s_get_clock },
    { "nvmlDeviceGetApplicationsClock", SIG_SPECIAL, s_clock4 },
    { "nvmlDeviceGetDefaultApplicationsClock", SIG_SPECIAL, s_clock4 },
    { "nvmlDeviceGetCurrentClocksEventReasons", SIG_U64, NULL },
    { "nvmlDeviceGetCurrentClocksThrottleReasons", SIG_U64, NULL },
    { "nvmlDeviceGetSupportedClocksEventReasons", SIG_U64, NULL },
    { "nvmlDeviceGetSupportedClocksThrottleReasons", SIG_U64, NULL },
    { "nvmlDeviceGetPerformanceState", SIG_INT, NULL },
    { "nvmlDeviceGetPowerState", SIG_INT, NULL },
    { "nvmlDeviceGetFanSpeed", SIG_U32, NULL },
    { "nvmlDeviceGetFanSpeed_v2", SIG_SPECIAL, s_fan_v2 },
    { "nvmlDeviceGetNumFans", SIG_U32, NULL },
    { "nvmlDeviceGetPersistenceMode", SIG_INT, NULL },
    { "nvmlDeviceGetComputeMode", SIG_INT, NULL },
    { "nvmlDeviceGetDisplayMode", SIG_INT, NULL },
    { "nvmlDeviceGetDisplayActive", SIG_INT, NULL },
    { "nvmlDeviceGetMigMode", SIG_SPECIAL, s_two_u32 },
    { "nvmlDeviceGetMaxMigDeviceCount", SIG_U32, NULL },
    { "nvmlDeviceGetMigDeviceHandleByIndex", SIG_SPECIAL, s_mig_handle },
    { "nvmlDeviceGetEccMode", SIG_SPECIAL, s_two_int },
    { "nvmlDeviceGetTotalEccErrors", SIG_SPECIAL, s_ecc },
    { "nvmlDeviceGetRetiredPages", SIG_SPECIAL, s_retired },
    { "nvmlDeviceGetRetiredPages_v2", SIG_SPECIAL, s_retired_v2 },
    { "nvmlDeviceGetRetiredPagesPendingStatus", SIG_INT, NULL },
    { "nvmlDeviceGetRemappedRows", SIG_SPECIAL, s_remapped },
    { "nvmlDeviceGetCurrPcieLinkGeneration", SIG_U32, NULL },
    { "nvmlDeviceGetMaxPcieLinkGeneration", SIG_U32, NULL },
    { "nvmlDeviceGetGpuMaxPcieLinkGeneration", SIG_U32, NULL },
    { "nvmlDeviceGetCurrPcieLinkWidth", SIG_U32, NULL },
    { "nvmlDeviceGetMaxPcieLinkWidth", SIG_U32, NULL },
    { "nvmlDeviceGetPcieThroughput", SIG_SPECIAL, s_pcie_tp },
    { "nvmlDeviceGetPcieReplayCounter", SIG_U32, NULL },
    { "nvmlDeviceGetComputeRunningProcesses", SIG_SPECIAL, s_list },
    { "nvmlDeviceGetComputeRunningProcesses_v2", SIG_SPECIAL, s_list },
    { "nvmlDeviceGetComputeRunningProcesses_v3", SIG_SPECIAL, s_list },
    { "nvmlDeviceGetGraphicsRunningProcesses", SIG_SPECIAL, s_list },
    { "nvmlDeviceGetGraphicsRunningProcesses_v2", SIG_SPECIAL, s_list },
    { "nvmlDeviceGetGraphicsRunningProcesses_v3", SIG_SPECIAL, s_list },
    { "nvmlDeviceGetMPSComputeRunningProcesses_v3", SIG_SPECIAL, s_list },
    { "nvmlDeviceGetProcessUtilization", SIG_SPECIAL, s_proc_util },
    { "nvmlDeviceGetNvLinkState", SIG_SPECIAL, s_link_state },
    { "nvmlDeviceGetNvLinkVersion", SIG_SPECIAL, s_link_version },
    { "nvmlDeviceGetNvLinkRemotePciInfo_v2", SIG_SPECIAL, s_link_remote_pci },
    { "nvmlDeviceGetNvLinkRemoteDeviceType", SIG_SPECIAL, s_link_remote_type },
    { "nvmlDeviceGetFieldValues", SIG_SPECIAL, s_field_values },
    { "nvmlDeviceGetGpuFabricInfoV", SIG_SPECIAL, s_fabric_v },
    { "nvmlDeviceGetGpuFabricInfo", SIG_SPECIAL, s_fabric },
    { "nvmlDeviceGetTopologyCommonAncestor", SIG_SPECIAL, s_topology },
    { "nvmlDeviceGetP2PStatus", SIG_SPECIAL, s_p2p },
};
#define N_INVOKERS (sizeof(invokers) / sizeof(invokers[0]))

static unsigned invoke(const struct invoker *iv, nvmlDevice_t d, nvmlReturn_t want)
{
    void *fn = dlsym(lib, iv->name);
    unsigned u32;
    unsigned long long u64;
    int i;
    char buf[96];

    assert_non_null(fn);
    switch (iv->sig) {
    case SIG_U32:
        return seen(((nvmlReturn_t(*)(nvmlDevice_t, unsigned *))fn)(d, &u32), want);
    case SIG_U64:
        return seen(((nvmlReturn_t(*)(nvmlDevice_t, unsigned long long *))fn)(d, &u64), want);
    case SIG_INT:
        return seen(((nvmlReturn_t(*)(nvmlDevice_t, int *))fn)(d, &i), want);
    case SIG_STR:
        return seen(((nvmlReturn_t(*)(nvmlDevice_t, char *, unsigned))fn)(d, buf, sizeof(buf)),
                    want);
    case SIG_SPECIAL:
        return iv->special(fn, d, want);
    }
    return 0;
}

/* ---- what the simulator promises ---- */

/* The name shared by every version and renaming of a function (docs/simulator.md). */
static void root_of(const char *fn, char *out, size_t size)
{
    static const char *const renames[][2] = {
        { "nvmlDeviceGetTemperatureV", "nvmlDeviceGetTemperature" },
        { "nvmlDeviceGetCurrentClocksThrottleReasons", "nvmlDeviceGetCurrentClocksEventReasons" },
        { "nvmlDeviceGetSupportedClocksThrottleReasons",
          "nvmlDeviceGetSupportedClocksEventReasons" },
        { "nvmlDeviceGetPowerState", "nvmlDeviceGetPerformanceState" },
        { "nvmlDeviceGetGpuFabricInfoV", "nvmlDeviceGetGpuFabricInfo" },
    };
    char *v;

    snprintf(out, size, "%s", fn);
    v = strstr(out, "_v");
    if (v != NULL && v[2] >= '0' && v[2] <= '9')
        *v = '\0';
    for (size_t i = 0; i < sizeof(renames) / sizeof(renames[0]); i++) {
        if (strcmp(out, renames[i][0]) == 0)
            snprintf(out, size, "%s", renames[i][1]);
    }
}

/* Functions that read a field without being its source, and where a status does not reach. */
static const struct {
    const char *field, *fn;
    bool reaches;
} exceptions[] = {
    /* the number of fans is known when the fan speed is */
    { "fan_speed_pct", "nvmlDeviceGetNumFans", true },
    /* MIG capacity is known where MIG mode is */
    { "mig_mode", "nvmlDeviceGetMaxMigDeviceCount", true },
    /* nvmlDeviceGetClock asks for any clock by id */
    { "clock_graphics_mhz", "nvmlDeviceGetClock", true },
    { "clock_sm_mhz", "nvmlDeviceGetClock", true },
    { "clock_mem_mhz", "nvmlDeviceGetClock", true },
    { "clock_video_mhz", "nvmlDeviceGetClock", true },
    { "clock_graphics_max_mhz", "nvmlDeviceGetClock", true },
    { "clock_sm_max_mhz", "nvmlDeviceGetClock", true },
    { "clock_mem_max_mhz", "nvmlDeviceGetClock", true },
    { "clock_sm_app_mhz", "nvmlDeviceGetClock", true },
    { "clock_sm_app_default_mhz", "nvmlDeviceGetClock", true },
    { "clock_mem_app_mhz", "nvmlDeviceGetClock", true },
    { "clock_mem_app_default_mhz", "nvmlDeviceGetClock", true },
    /* one status for all the running-process lists */
    { "processes", "nvmlDeviceGetGraphicsRunningProcesses", true },
    { "processes", "nvmlDeviceGetGraphicsRunningProcesses_v2", true },
    { "processes", "nvmlDeviceGetGraphicsRunningProcesses_v3", true },
    { "processes", "nvmlDeviceGetMPSComputeRunningProcesses_v3", true },
    /* the link list's status is that of every link call: a GPU without NVLink has no links */
    { "nvlink", "nvmlDeviceGetNvLinkVersion", true },
    { "nvlink", "nvmlDeviceGetNvLinkRemotePciInfo_v2", true },
    { "nvlink", "nvmlDeviceGetNvLinkRemoteDeviceType", true },
    /* the peer list's status is that of both calls between two GPUs */
    { "peers", "nvmlDeviceGetP2PStatus", true },
    /* v1 memory info does without the reserved figure, as pre-R510 drivers did */
    { "mem_reserved_bytes", "nvmlDeviceGetMemoryInfo", false },
    /* keys the simulator reads apart (docs/simulator.md, "Beyond the snapshot"): null is
     * NOT_SUPPORTED, a status in nvml_status is not theirs */
    { "brand", "nvmlDeviceGetBrand", false },
    { "architecture", "nvmlDeviceGetArchitecture", false },
    { "board_part_number", "nvmlDeviceGetBoardPartNumber", false },
    { "accounting_mode", "nvmlDeviceGetAccountingMode", false },
    /* a field value's status is its own nvmlReturn, not the call's (e2e/nvml-recovery) */
    { "recovery_action", "nvmlDeviceGetFieldValues", false },
};

static bool should_reach(const struct jfield *f, const char *fn)
{
    char a[96], b[96];

    for (size_t i = 0; i < sizeof(exceptions) / sizeof(exceptions[0]); i++) {
        if (strcmp(exceptions[i].field, f->name) == 0 && strcmp(exceptions[i].fn, fn) == 0)
            return exceptions[i].reaches;
    }
    root_of(f->source, a, sizeof(a));
    root_of(fn, b, sizeof(b));
    return strcmp(a, b) == 0;
}

/* ---- scenarios ---- */

static json_t *full_gpu(json_t **doc)
{
    json_error_t e;

    *doc = json_load_file(FULL, 0, &e);
    assert_non_null(*doc);
    return json_array_get(json_object_get(*doc, "gpus"), 0);
}

/* full.json with field f of GPU 0 replaced by the status INJECTED. */
static void write_scenario(const struct jfield *f)
{
    json_t *doc, *gpu = full_gpu(&doc);

    if (f != NULL) {
        if (f->type == JF_NONE)
            json_object_set_new(gpu, f->name, json_null()); /* lists: null plus a status */
        else
            json_object_del(gpu, f->name);
        json_object_set_new(gpu, "nvml_status",
                            json_pack("{s:s}", f->name, nvml_rc_name(INJECTED)));
    }
    assert_int_equal(json_dump_file(doc, path, 0), 0);
    json_decref(doc);
}

static nvmlDevice_t open_gpu0(void)
{
    nvmlDevice_t d = NULL;

    assert_int_equal(((nvmlInit_v2_fn *)dlsym(lib, "nvmlInit_v2"))(), NVML_SUCCESS);
    assert_int_equal(
        ((nvmlDeviceGetHandleByIndex_v2_fn *)dlsym(lib, "nvmlDeviceGetHandleByIndex_v2"))(0, &d),
        NVML_SUCCESS);
    return d;
}

static void close_lib(void)
{
    assert_int_equal(((nvmlShutdown_fn *)dlsym(lib, "nvmlShutdown"))(), NVML_SUCCESS);
}

static int setup(void **state)
{
    (void)state;
    lib = dlopen(SIM_LIB, RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL || mkdtemp(dir) == NULL)
        return -1;
    snprintf(path, sizeof(path), "%s/scenario.json", dir);
    setenv("NVML_SIM_SCENARIO", path, 1);
    setenv("NVML_SIM_QUIET", "1", 1);
    unsetenv("NVML_SIM_EPOCH");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    unlink(path);
    rmdir(dir);
    return 0;
}

/* Every source names an exported function; every device function of the list is invoked. */
static void test_sources_are_functions(void **state)
{
#define NAME_ROW(name, params) { #name, #params },
    static const struct {
        const char *name, *params;
    } fns[] = { NVML_FUNCTIONS(NAME_ROW) };
#undef NAME_ROW
    (void)state;
    for (size_t i = 0; i < gpu_table.n_fields; i++) {
        const struct jfield *f = &gpu_table.fields[i];
        size_t k;

        for (k = 0; k < sizeof(fns) / sizeof(fns[0]); k++) {
            if (strcmp(fns[k].name, f->source) == 0)
                break;
        }
        if (k == sizeof(fns) / sizeof(fns[0]))
            fail_msg("field %s: source %s is not in NVML_FUNCTIONS", f->name, f->source);
        assert_non_null(dlsym(lib, f->source));
    }
    for (size_t k = 0; k < sizeof(fns) / sizeof(fns[0]); k++) {
        size_t j;

        if (strncmp(fns[k].params, "(nvmlDevice_t device", 20) != 0)
            continue;
        for (j = 0; j < N_INVOKERS; j++) {
            if (strcmp(invokers[j].name, fns[k].name) == 0)
                break;
        }
        if (j == N_INVOKERS)
            fail_msg("device function %s is not exercised by this test", fns[k].name);
    }
}

/* With every field present, every function answers (for some argument). */
static void test_full_scenario_answers(void **state)
{
    nvmlDevice_t d;

    (void)state;
    write_scenario(NULL);
    d = open_gpu0();
    for (size_t j = 0; j < N_INVOKERS; j++) {
        unsigned r = invoke(&invokers[j], d, INJECTED);

        if (r & SAW_WANT)
            fail_msg("%s returned %d with no error in the scenario", invokers[j].name, INJECTED);
        /* nothing runs on MIG here: a MIG handle cannot be had */
        if (!(r & SAW_OK) && strcmp(invokers[j].name, "nvmlDeviceGetMigDeviceHandleByIndex"))
            fail_msg("%s never succeeded on a complete GPU", invokers[j].name);
    }
    close_lib();
}

static void test_status_reaches_its_suppliers(void **state)
{
    int checked = 0;

    (void)state;
    for (size_t i = 0; i < gpu_table.n_fields; i++) {
        const struct jfield *f = &gpu_table.fields[i];
        nvmlDevice_t d;

        if (f->slot < 0)
            continue;
        write_scenario(f);
        d = open_gpu0();
        for (size_t j = 0; j < N_INVOKERS; j++) {
            bool reached = invoke(&invokers[j], d, INJECTED) & SAW_WANT;

            if (reached != should_reach(f, invokers[j].name))
                fail_msg("%s with status %s: %s %s", f->name, nvml_rc_name(INJECTED),
                         invokers[j].name, reached ? "returned it" : "did not return it");
        }
        close_lib();
        checked++;
    }
    assert_true(checked > 70);
}

/* After each test, whatever it left: a failed assertion skips its own shutdown. */
static int uninit(void **state)
{
    (void)state;
    while (((nvmlShutdown_fn *)dlsym(lib, "nvmlShutdown"))() == NVML_SUCCESS)
        continue;
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_sources_are_functions, uninit),
        cmocka_unit_test_teardown(test_full_scenario_answers, uninit),
        cmocka_unit_test_teardown(test_status_reaches_its_suppliers, uninit),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
