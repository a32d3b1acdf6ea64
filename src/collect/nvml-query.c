#include "collect/nvml-query.h"
#include "collect/nvml-lib.h"
#include "collect/nvml-nvlink.h"
#include "nvml/nvml-abi.h"
#include "util/xalloc.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct nvml_query {
    char *lib_name;
    nvml_mark_fn *mark;
    void *mark_arg;
    bool opened;   /* loading was attempted */
    bool ready;    /* loaded and initialised */
    bool sampling; /* the query in progress is a sample */
    struct nvml_lib lib;
    struct nvml_system base; /* what loading and initialising said, repeated in every answer */
    char *driver_version;    /* decides the process-list record size */
    uint32_t process_stride; /* of the process list read last */
    uint32_t n_devices;
    nvmlDevice_t *devices;
    int32_t *handle_rc;
    struct nvml_nvlink_seen *nvlink_seen; /* per device */
};

/* ---- calling NVML with the watched page kept up to date ---- */

static void enter(struct nvml_query *q, enum nvml_sym sym, int gpu)
{
    if (q->mark != NULL)
        q->mark(q->mark_arg, nvml_sym_names[sym], gpu);
}

static nvmlReturn_t leave(struct nvml_query *q, nvmlReturn_t rc)
{
    if (q->mark != NULL)
        q->mark(q->mark_arg, NULL, -1);
    return rc;
}

/* A missing symbol is NVML_ERROR_FUNCTION_NOT_FOUND for the fields it supplies. */
#define CALL(q, gpu, name, ...)                                                                    \
    (!NVML_HAS(&(q)->lib, name) ? NVML_ERROR_FUNCTION_NOT_FOUND                                    \
                                : (enter((q), NVML_SYM_##name, (gpu)),                             \
                                   leave((q), NVML_FN(&(q)->lib, name)(__VA_ARGS__))))
#define CALL0(q, name)                                                                             \
    (!NVML_HAS(&(q)->lib, name)                                                                    \
         ? NVML_ERROR_FUNCTION_NOT_FOUND                                                           \
         : (enter((q), NVML_SYM_##name, -1), leave((q), NVML_FN(&(q)->lib, name)())))

/*
 * A versioned call that refuses our struct: the symbol exists but this driver does not take that
 * layout (facts 1: a bad struct version may come back as FUNCTION_NOT_FOUND). The next older
 * symbol of an any-of group is then tried.
 */
static bool refused(nvmlReturn_t rc)
{
    return rc == NVML_ERROR_FUNCTION_NOT_FOUND || rc == NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
}

/* NVML strings are ASCII; anything else would not survive as JSON text, so it becomes '?'. */
static char *clean_string(char *buf, size_t size)
{
    buf[size - 1] = '\0';
    for (char *p = buf; *p; p++) {
        if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e)
            *p = '?';
    }
    return xstrdup(buf);
}

#define FIELD(g, type, offset) ((type *)((char *)(g) + (offset)))

/* ---- the simple getters, as tables ---- */

typedef nvmlReturn_t dev_str_fn(nvmlDevice_t, char *, unsigned int);
typedef nvmlReturn_t dev_uint_fn(nvmlDevice_t, unsigned int *);
typedef nvmlReturn_t dev_uint_arg_fn(nvmlDevice_t, int, unsigned int *);
typedef nvmlReturn_t dev_int_fn(nvmlDevice_t, int *);

enum getter_kind {
    G_STR,      /* dev_str_fn into char *, arg = buffer size */
    G_UINT,     /* dev_uint_fn into uint32_t */
    G_UINT_ARG, /* dev_uint_arg_fn(arg) into uint32_t */
    G_INT,      /* dev_int_fn into int32_t */
    G_BOOL,     /* dev_int_fn (nvmlEnableState_t) into bool */
    G_CUSTOM,
};

struct nvml_getter {
    enum getter_kind kind;
    int sym; /* enum nvml_sym */
    int arg;
    int slot; /* enum gpu_slot */
    size_t offset;
    bool dynamic; /* part of a sample */
    void (*custom)(struct nvml_query *q, struct gpu *g, nvmlDevice_t d);
};

/*
 * The _Generic term fails to compile unless the NVML function has exactly the signature the
 * getter kind calls it through, so a table row cannot call a function the wrong way.
 */
#define SIG(name, fn_type) (NVML_SYM_##name + _Generic((name##_fn *)0, fn_type * : 0))
#define STR(name, size, slot, member)                                                              \
    {                                                                                              \
        G_STR, SIG(name, dev_str_fn), size, slot, offsetof(struct gpu, member), false, NULL        \
    }
#define UINT(name, slot, member, dyn)                                                              \
    {                                                                                              \
        G_UINT, SIG(name, dev_uint_fn), 0, slot, offsetof(struct gpu, member), dyn, NULL           \
    }
#define UINT_ARG(name, arg, slot, member, dyn)                                                     \
    {                                                                                              \
        G_UINT_ARG, SIG(name, dev_uint_arg_fn), arg, slot, offsetof(struct gpu, member), dyn, NULL \
    }
#define INT(name, slot, member, dyn)                                                               \
    {                                                                                              \
        G_INT, SIG(name, dev_int_fn), 0, slot, offsetof(struct gpu, member), dyn, NULL             \
    }
#define BOOL(name, slot, member)                                                                   \
    {                                                                                              \
        G_BOOL, SIG(name, dev_int_fn), 0, slot, offsetof(struct gpu, member), false, NULL          \
    }
#define CUSTOM(fn, dyn)                                                                            \
    {                                                                                              \
        G_CUSTOM, 0, 0, 0, 0, dyn, fn                                                              \
    }

static void get_simple(struct nvml_query *q, const struct nvml_getter *t, struct gpu *g,
                       nvmlDevice_t d)
{
    int gpu = (int)g->index;
    nvmlReturn_t rc;

    if (q->lib.sym[t->sym] == NULL) {
        gpu_set_rc(g, (enum gpu_slot)t->slot, NVML_ERROR_FUNCTION_NOT_FOUND);
        return;
    }
    enter(q, (enum nvml_sym)t->sym, gpu);
    switch (t->kind) {
    case G_STR: {
        char buf[128];

        memset(buf, 0, sizeof(buf));
        rc = leave(q, ((dev_str_fn *)q->lib.sym[t->sym])(d, buf, (unsigned int)t->arg));
        if (rc == NVML_SUCCESS)
            *FIELD(g, char *, t->offset) = clean_string(buf, (size_t)t->arg);
        break;
    }
    case G_UINT: {
        unsigned int v = 0;

        rc = leave(q, ((dev_uint_fn *)q->lib.sym[t->sym])(d, &v));
        *FIELD(g, uint32_t, t->offset) = v;
        break;
    }
    case G_UINT_ARG: {
        unsigned int v = 0;

        rc = leave(q, ((dev_uint_arg_fn *)q->lib.sym[t->sym])(d, t->arg, &v));
        *FIELD(g, uint32_t, t->offset) = v;
        break;
    }
    case G_INT:
    case G_BOOL: {
        int v = 0;

        rc = leave(q, ((dev_int_fn *)q->lib.sym[t->sym])(d, &v));
        if (t->kind == G_INT)
            *FIELD(g, int32_t, t->offset) = v;
        else
            *FIELD(g, bool, t->offset) = v == NVML_FEATURE_ENABLED;
        break;
    }
    default:
        fatal("getter kind %d is not simple", (int)t->kind);
    }
    gpu_set_rc(g, (enum gpu_slot)t->slot, rc);
}

/* ---- getters that need more than one value or a fallback ---- */

static void set_rc2(struct gpu *g, enum gpu_slot a, enum gpu_slot b, nvmlReturn_t rc)
{
    gpu_set_rc(g, a, rc);
    gpu_set_rc(g, b, rc);
}

static void get_pci(struct nvml_query *q, struct gpu *g, nvmlDevice_t d)
{
    int gpu = (int)g->index;
    nvmlReturn_t rc = NVML_ERROR_FUNCTION_NOT_FOUND;

    if (NVML_HAS(&q->lib, nvmlDeviceGetPciInfo_v3)) {
        nvmlPciInfo_t pci;

        memset(&pci, 0, sizeof(pci));
        rc = CALL(q, gpu, nvmlDeviceGetPciInfo_v3, d, &pci);
        if (rc == NVML_SUCCESS) {
            g->pci_bus_id = clean_string(pci.busId, sizeof(pci.busId));
            g->pci_device_id = pci.pciDeviceId;
            g->pci_subsystem_id = pci.pciSubSystemId;
        }
    }
    if (refused(rc) && NVML_HAS(&q->lib, nvmlDeviceGetPciInfo_v2)) {
        /* Drivers before 415 only have the 52-byte layout, with the short bus id. */
        nvmlPciInfoLegacy_t pci;

        memset(&pci, 0, sizeof(pci));
        rc = CALL(q, gpu, nvmlDeviceGetPciInfo_v2, d, &pci);
        if (rc == NVML_SUCCESS) {
            g->pci_bus_id = clean_string(pci.busId, sizeof(pci.busId));
            g->pci_device_id = pci.pciDeviceId;
            g->pci_subsystem_id = pci.pciSubSystemId;
        }
    }
    gpu_set_rc(g, GPU_S_PCI_BUS_ID, rc);
    set_rc2(g, GPU_S_PCI_DEVICE_ID, GPU_S_PCI_SUBSYSTEM_ID, rc);
}

static void get_compute_capability(struct nvml_query *q, struct gpu *g, nvmlDevice_t d)
{
    int major = 0, minor = 0;
    nvmlReturn_t rc = CALL(q, (int)g->index, nvmlDeviceGetCudaComputeCapability, d, &major, &minor);

    g->cc_major = major;
    g->cc_minor = minor;
    set_rc2(g, GPU_S_CC_MAJOR, GPU_S_CC_MINOR, rc);
}

static void get_memory(struct nvml_query *q, struct gpu *g, nvmlDevice_t d)
{
    int gpu = (int)g->index;
    nvmlReturn_t rc = NVML_ERROR_FUNCTION_NOT_FOUND, rc1;
    nvmlMemory_t m1;

    if (NVML_HAS(&q->lib, nvmlDeviceGetMemoryInfo_v2)) {
        nvmlMemory_v2_t m;

        memset(&m, 0, sizeof(m));
        m.version = nvmlMemory_v2; /* the versioned constant, never the bare 2 */
        rc = CALL(q, gpu, nvmlDeviceGetMemoryInfo_v2, d, &m);
        if (rc == NVML_SUCCESS) {
            g->mem_total_bytes = m.total;
            g->mem_reserved_bytes = m.reserved;
            g->mem_used_bytes = m.used;
            g->mem_free_bytes = m.free;
        }
        if (!refused(rc)) {
            set_rc2(g, GPU_S_MEM_TOTAL, GPU_S_MEM_RESERVED, rc);
            set_rc2(g, GPU_S_MEM_USED, GPU_S_MEM_FREE, rc);
            return;
        }
    }
    memset(&m1, 0, sizeof(m1));
    rc1 = CALL(q, gpu, nvmlDeviceGetMemoryInfo, d, &m1);
    g->mem_total_bytes = m1.total;
    g->mem_free_bytes = m1.free;
    set_rc2(g, GPU_S_MEM_TOTAL, GPU_S_MEM_FREE, rc1);
    gpu_set_rc(g, GPU_S_MEM_RESERVED, rc);
    /*
     * v1 "used" counts reserved memory too on the drivers that have _v2 (R510 on), so it only
     * means "allocated" when _v2 does not exist at all; otherwise used stays unknown.
     */
    if (!NVML_HAS(&q->lib, nvmlDeviceGetMemoryInfo_v2)) {
        g->mem_used_bytes = m1.used;
        gpu_set_rc(g, GPU_S_MEM_USED, rc1);
    } else {
        gpu_set_rc(g, GPU_S_MEM_USED, rc1 != NVML_SUCCESS ? rc1 : rc);
    }
}

static void get_bar1(struct nvml_query *q, struct gpu *g, nvmlDevice_t d)
{
    nvmlBAR1Memory_t b;
    nvmlReturn_t rc;

    memset(&b, 0, sizeof(b));
    rc = CALL(q, (int)g->index, nvmlDeviceGetBAR1MemoryInfo, d, &b);
    g->bar1_total_bytes = b.bar1Total;
    g->bar1_used_bytes = b.bar1Used;
    set_rc2(g, GPU_S_BAR1_TOTAL, GPU_S_BAR1_USED, rc);
}

static void get_utilization(struct nvml_query *q, struct gpu *g, nvmlDevice_t d)
{
    nvmlUtilization_t u;
    nvmlReturn_t rc;

    memset(&u, 0, sizeof(u));
    rc = CALL(q, (int)g->index, nvmlDeviceGetUtilizationRates, d, &u);
    g->util_gpu_pct = u.gpu;
    g->util_mem_pct = u.memory;
    set_rc2(g, GPU_S_UTIL_GPU, GPU_S_UTIL_MEM, rc);
}

static void get_codec(struct nvml_query *q, struct gpu *g, nvmlDevice_t d)
{
    unsigned int util = 0, period_us = 0;
    nvmlReturn_t rc;

    rc = CALL(q, (int)g->index, nvmlDeviceGetEncoderUtilization, d, &util, &period_us);
    g->util_enc_pct = util;
    gpu_set_rc(g, GPU_S_UTIL_ENC, rc);
    util = 0;
    rc = CALL(q, (int)g->index, nvmlDeviceGetDecoderUtilization, d, &util, &period_us);
    g->util_dec_pct = util;
    gpu_set_rc(g, GPU_S_UTIL_DEC, rc);
}

static void get_temperature(struct nvml_query *q, struct gpu *g, nvmlDevice_t d)
{
    int gpu = (int)g->index;
    nvmlReturn_t rc = NVML_ERROR_FUNCTION_NOT_FOUND;
    unsigned int t = 0;

    if (NVML_HAS(&q->lib, nvmlDeviceGetTemperatureV)) {
        nvmlTemperature_v1_t tv;

        memset(&tv, 0, sizeof(tv));
        tv.version = nvmlTemperature_v1;
        tv.sensorType = NVML_TEMPERATURE_GPU;
        rc = CALL(q, gpu, nvmlDeviceGetTemperatureV, d, &tv);
        /* A GPU below 0 C does not happen; a negative reading is not a temperature. */
        if (rc == NVML_SUCCESS && tv.temperature < 0)
            rc = NVML_ERROR_UNKNOWN;
        t = rc == NVML_SUCCESS ? (unsigned int)tv.temperature : 0;
    }
    if (refused(rc))
        rc = CALL(q, gpu, nvmlDeviceGetTemperature, d, NVML_TEMPERATURE_GPU, &t);
    g->temp_c = t;
    gpu_set_rc(g, GPU_S_TEMP, rc);
}

static void get_power_constraints(struct nvml_query *q, struct gpu *g, nvmlDevice_t d)
{
    unsigned int lo = 0, hi = 0;
    nvmlReturn_t rc =
        CALL(q, (int)g->index, nvmlDeviceGetPowerManagementLimitConstraints, d, &lo, &hi);

    g->power_min_limit_mw = lo;
    g->power_max_limit_mw = hi;
    set_rc2(g, GPU_S_POWER_MIN_LIMIT, GPU_S_POWER_MAX_LIMIT, rc);
}

static void get_energy(struct nvml_query *q, struct gpu *g, nvmlDevice_t d)
{
    unsigned long long mj = 0;
    nvmlReturn_t rc = CALL(q, (int)g->index, nvmlDeviceGetTotalEnergyConsumption, d, &mj);

    g->energy_mj = mj;
    gpu_set_rc(g, GPU_S_ENERGY, rc);
}

/* ClocksEventReasons (535+) and ClocksThrottleReasons are one any-of group each. */
static void get_event_reasons(struct nvml_query *q, struct gpu *g, nvmlDevice_t d)
{
    unsigned long long r = 0;
    nvmlReturn_t rc = CALL(q, (int)g->index, nvmlDeviceGetCurrentClocksEventReasons, d, &r);

    if (refused(rc))
        rc = CALL(q, (int)g->index, nvmlDeviceGetCurrentClocksThrottleReasons, d, &r);
    g->clocks_event_reasons = r;
    gpu_set_rc(g, GPU_S_EVENT_REASONS, rc);
}

static void get_supported_reasons(struct nvml_query *q, struct gpu *g, nvmlDevice_t d)
{
    unsigned long long r = 0;
    nvmlReturn_t rc = CALL(q, (int)g->index, nvmlDeviceGetSupportedClocksEventReasons, d, &r);

    if (refused(rc))
        rc = CALL(q, (int)g->index, nvmlDeviceGetSupportedClocksThrottleReasons, d, &r);
    g->clocks_event_reasons_supported = r;
    gpu_set_rc(g, GPU_S_EVENT_REASONS_SUPPORTED, rc);
}

static void get_pstate(struct nvml_query *q, struct gpu *g, nvmlDevice_t d)
{
    int p = NVML_PSTATE_UNKNOWN;
    nvmlReturn_t rc = CALL(q, (int)g->index, nvmlDeviceGetPerformanceState, d, &p);

    if (refused(rc))
        rc = CALL(q, (int)g->index, nvmlDeviceGetPowerState, d, &p);
    g->pstate = p;
    gpu_set_rc(g, GPU_S_PSTATE, rc);
}

static void get_mig(struct nvml_query *q, struct gpu *g, nvmlDevice_t d)
{
    int gpu = (int)g->index;
    unsigned int cur = 0, pending = 0, max = 0, n = 0;
    nvmlReturn_t rc = CALL(q, gpu, nvmlDeviceGetMigMode, d, &cur, &pending);

    g->mig_mode = cur == NVML_DEVICE_MIG_ENABLE;
    g->mig_mode_pending = pending == NVML_DEVICE_MIG_ENABLE;
    set_rc2(g, GPU_S_MIG_MODE, GPU_S_MIG_MODE_PENDING, rc);
    g->mig_devices = 0;
    if (rc != NVML_SUCCESS || !g->mig_mode) {
        /* Without MIG there are no MIG devices; that is a value, not an error. */
        gpu_set_rc(g, GPU_S_MIG_DEVICES, rc);
        return;
    }
    rc = CALL(q, gpu, nvmlDeviceGetMaxMigDeviceCount, d, &max);
    if (rc == NVML_SUCCESS && max > NVML_QUERY_MAX_GPUS)
        max = NVML_QUERY_MAX_GPUS;
    /*
     * Slots are sparse: an index without an instance answers NOT_FOUND. Any other error, even
     * INVALID_ARGUMENT (no index asked is beyond the count), leaves the count unknown: counted as
     * 0 it would read as "MIG on with no instance", a finding made of an error.
     */
    for (unsigned int i = 0; rc == NVML_SUCCESS && i < max; i++) {
        nvmlDevice_t mig = NULL;
        nvmlReturn_t r = CALL(q, gpu, nvmlDeviceGetMigDeviceHandleByIndex, d, i, &mig);

        if (r == NVML_SUCCESS)
            n++;
        else if (r != NVML_ERROR_NOT_FOUND)
            rc = r;
    }
    g->mig_devices = n;
    gpu_set_rc(g, GPU_S_MIG_DEVICES, rc);
}

static void get_ecc_mode(struct nvml_query *q, struct gpu *g, nvmlDevice_t d)
{
    int cur = 0, pending = 0;
    nvmlReturn_t rc = CALL(q, (int)g->index, nvmlDeviceGetEccMode, d, &cur, &pending);

    g->ecc_mode = cur == NVML_FEATURE_ENABLED;
    g->ecc_mode_pending = pending == NVML_FEATURE_ENABLED;
    set_rc2(g, GPU_S_ECC_MODE, GPU_S_ECC_MODE_PENDING, rc);
}

static void get_ecc_count(struct nvml_query *q, struct gpu *g, nvmlDevice_t d, int type,
                          int counter, uint64_t *out, enum gpu_slot slot)
{
    unsigned long long n = 0;
    nvmlReturn_t rc = CALL(q, (int)g->index, nvmlDeviceGetTotalEccErrors, d, type, counter, &n);

    *out = n;
    gpu_set_rc(g, slot, rc);
}

static void get_ecc_volatile(struct nvml_query *q, struct gpu *g, nvmlDevice_t d)
{
    get_ecc_count(q, g, d, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC,
                  &g->ecc_volatile_corrected, GPU_S_ECC_VOL_CORR);
    get_ecc_count(q, g, d, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC,
                  &g->ecc_volatile_uncorrected, GPU_S_ECC_VOL_UNCORR);
}

static void get_ecc_aggregate(struct nvml_query *q, struct gpu *g, nvmlDevice_t d)
{
    get_ecc_count(q, g, d, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_AGGREGATE_ECC,
                  &g->ecc_aggregate_corrected, GPU_S_ECC_AGG_CORR);
    get_ecc_count(q, g, d, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_AGGREGATE_ECC,
                  &g->ecc_aggregate_uncorrected, GPU_S_ECC_AGG_UNCORR);
}

static void get_retired_count(struct nvml_query *q, struct gpu *g, nvmlDevice_t d, int cause,
                              uint32_t *out, enum gpu_slot slot)
{
    unsigned int count = 0;
    /* pageCount 0 with no buffer asks only for the count. */
    nvmlReturn_t rc = CALL(q, (int)g->index, nvmlDeviceGetRetiredPages, d, cause, &count, NULL);

    if (rc == NVML_ERROR_INSUFFICIENT_SIZE)
        rc = NVML_SUCCESS;
    *out = count;
    gpu_set_rc(g, slot, rc);
}

static void get_retired(struct nvml_query *q, struct gpu *g, nvmlDevice_t d)
{
    get_retired_count(q, g, d, NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS,
                      &g->retired_pages_sbe, GPU_S_RETIRED_SBE);
    get_retired_count(q, g, d, NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR,
                      &g->retired_pages_dbe, GPU_S_RETIRED_DBE);
}

static void get_remapped(struct nvml_query *q, struct gpu *g, nvmlDevice_t d)
{
    unsigned int corr = 0, unc = 0, pending = 0, failure = 0;
    nvmlReturn_t rc =
        CALL(q, (int)g->index, nvmlDeviceGetRemappedRows, d, &corr, &unc, &pending, &failure);

    g->remapped_rows_correctable = corr;
    g->remapped_rows_uncorrectable = unc;
    g->remapped_rows_pending = pending != 0;
    g->remapped_rows_failure = failure != 0;
    set_rc2(g, GPU_S_REMAP_CORR, GPU_S_REMAP_UNCORR, rc);
    set_rc2(g, GPU_S_REMAP_PENDING, GPU_S_REMAP_FAILURE, rc);
}

/*
 * What the driver says the GPU needs (NVML_FI_DEV_GET_GPU_RECOVERY_ACTION): a field value, whose
 * own return code says whether this driver has it. A value past the ones the header names is
 * kept as it is (the snapshot writes it as a number).
 */
static void get_recovery_action(struct nvml_query *q, struct gpu *g, nvmlDevice_t d)
{
    nvmlFieldValue_t v;
    uint64_t x = 0;
    nvmlReturn_t rc;

    memset(&v, 0, sizeof(v));
    v.fieldId = NVML_FI_DEV_GET_GPU_RECOVERY_ACTION;
    v.nvmlReturn = NVML_ERROR_UNKNOWN; /* a library that skips the value leaves this */
    rc = CALL(q, (int)g->index, nvmlDeviceGetFieldValues, d, 1, &v);
    if (rc == NVML_SUCCESS)
        rc = v.nvmlReturn;
    if (rc == NVML_SUCCESS && (!nvml_field_as_u64(&v, &x) || x > INT32_MAX))
        rc = NVML_ERROR_UNKNOWN; /* not a value we can read */
    g->recovery_action = (int32_t)x;
    gpu_set_rc(g, GPU_S_RECOVERY, rc);
}

/* nvmlDeviceArchitecture_t into enum gpu_arch (its values have gaps). */
static void get_architecture(struct nvml_query *q, struct gpu *g, nvmlDevice_t d)
{
    unsigned int arch = 0;
    nvmlReturn_t rc = CALL(q, (int)g->index, nvmlDeviceGetArchitecture, d, &arch);

    g->architecture = gpu_arch_of_nvml(arch);
    gpu_set_rc(g, GPU_S_ARCH, rc);
}

/* NVML counts PCIe throughput in KB/s (1024 bytes) over a 20 ms window. */
static void get_pcie_throughput(struct nvml_query *q, struct gpu *g, nvmlDevice_t d)
{
    unsigned int kb = 0;
    nvmlReturn_t rc;

    rc = CALL(q, (int)g->index, nvmlDeviceGetPcieThroughput, d, NVML_PCIE_UTIL_TX_BYTES, &kb);
    g->pcie_tx_bytes_per_s = (uint64_t)kb * 1024;
    gpu_set_rc(g, GPU_S_PCIE_TX, rc);
    kb = 0;
    rc = CALL(q, (int)g->index, nvmlDeviceGetPcieThroughput, d, NVML_PCIE_UTIL_RX_BYTES, &kb);
    g->pcie_rx_bytes_per_s = (uint64_t)kb * 1024;
    gpu_set_rc(g, GPU_S_PCIE_RX, rc);
}

/* ---- process lists ---- */

/* One kind of list, its three generations newest first (NVML_SYM__COUNT: none). */
struct proc_list {
    uint32_t type; /* GPU_PROC_* */
    enum nvml_sym sym[3];
};

static const struct proc_list proc_lists[] = {
    { GPU_PROC_COMPUTE,
      { NVML_SYM_nvmlDeviceGetComputeRunningProcesses_v3,
        NVML_SYM_nvmlDeviceGetComputeRunningProcesses_v2,
        NVML_SYM_nvmlDeviceGetComputeRunningProcesses } },
    { GPU_PROC_GRAPHICS,
      { NVML_SYM_nvmlDeviceGetGraphicsRunningProcesses_v3,
        NVML_SYM_nvmlDeviceGetGraphicsRunningProcesses_v2,
        NVML_SYM_nvmlDeviceGetGraphicsRunningProcesses } },
    { GPU_PROC_MPS,
      { NVML_SYM_nvmlDeviceGetMPSComputeRunningProcesses_v3, NVML_SYM__COUNT, NVML_SYM__COUNT } },
};

static const enum nvml_proc_api proc_apis[3] = { NVML_PROC_API_V3, NVML_PROC_API_V2,
                                                 NVML_PROC_API_V1 };

static nvmlReturn_t call_proc_list(struct nvml_query *q, int gpu, enum nvml_sym sym,
                                   enum nvml_proc_api api, nvmlDevice_t d, unsigned int *count,
                                   void *buf)
{
    enter(q, sym, gpu);
    switch (api) {
    case NVML_PROC_API_V1:
        return leave(q,
                     ((nvmlDeviceGetComputeRunningProcesses_fn *)q->lib.sym[sym])(d, count, buf));
    case NVML_PROC_API_V2:
        return leave(
            q, ((nvmlDeviceGetComputeRunningProcesses_v2_fn *)q->lib.sym[sym])(d, count, buf));
    case NVML_PROC_API_V3:
        break;
    }
    return leave(q, ((nvmlDeviceGetComputeRunningProcesses_v3_fn *)q->lib.sym[sym])(d, count, buf));
}

static struct gpu_proc *find_proc(struct gpu *g, uint32_t pid)
{
    for (size_t i = 0; i < g->n_procs; i++) {
        if (g->procs[i].pid == pid)
            return &g->procs[i];
    }
    return NULL;
}

/* Decodes one record at the decided stride and merges it into g->procs by pid. */
static void merge_record(struct gpu *g, size_t *cap, const unsigned char *rec, uint32_t stride,
                         uint32_t type)
{
    struct gpu_proc *p;
    uint32_t pid, gi = UINT32_MAX, ci = UINT32_MAX;
    uint64_t used;

    memcpy(&pid, rec + offsetof(nvmlProcessInfo_v1_t, pid), sizeof(pid));
    memcpy(&used, rec + offsetof(nvmlProcessInfo_v1_t, usedGpuMemory), sizeof(used));
    if (stride >= sizeof(nvmlProcessInfo_v2_t)) {
        memcpy(&gi, rec + offsetof(nvmlProcessInfo_v2_t, gpuInstanceId), sizeof(gi));
        memcpy(&ci, rec + offsetof(nvmlProcessInfo_v2_t, computeInstanceId), sizeof(ci));
    }
    p = find_proc(g, pid);
    if (p == NULL) {
        xgrow(&g->procs, cap, g->n_procs + 1, sizeof(*g->procs));
        p = &g->procs[g->n_procs++];
        memset(p, 0, sizeof(*p));
        p->pid = pid;
    }
    p->type_mask |= type;
    /* NVML_VALUE_NOT_AVAILABLE (under WDDM and some vGPU setups) is unknown, not 16 EiB. */
    if (used != NVML_VALUE_NOT_AVAILABLE_ULL && !(p->valid & (1u << GPU_PROC_S_USED))) {
        p->used_bytes = used;
        p->valid |= 1u << GPU_PROC_S_USED;
    }
    /* 0xFFFFFFFF means "not a MIG instance". */
    if (gi != UINT32_MAX && ci != UINT32_MAX && !(p->valid & (1u << GPU_PROC_S_INSTANCE))) {
        p->gpu_instance_id = gi;
        p->compute_instance_id = ci;
        p->valid |= 1u << GPU_PROC_S_INSTANCE;
    }
}

/*
 * One list with the two-call protocol: ask for the count, then read with room for processes that
 * start in between; a list that still outgrew the buffer is asked again, a bounded number of
 * times. Falls back to the older generation when a symbol is missing or refuses its layout.
 */
static nvmlReturn_t read_proc_list(struct nvml_query *q, struct gpu *g, size_t *cap, nvmlDevice_t d,
                                   const struct proc_list *l, uint32_t *stride_out)
{
    nvmlReturn_t rc = NVML_ERROR_FUNCTION_NOT_FOUND;

    for (size_t gen = 0; gen < 3 && refused(rc); gen++) {
        enum nvml_sym sym = l->sym[gen];
        uint32_t stride = nvml_process_stride(proc_apis[gen], q->driver_version);
        unsigned char *buf = NULL;
        unsigned int count = 0;

        if (sym == NVML_SYM__COUNT || q->lib.sym[sym] == NULL)
            continue;
        rc = call_proc_list(q, (int)g->index, sym, proc_apis[gen], d, &count, NULL);
        for (int attempt = 0; rc == NVML_ERROR_INSUFFICIENT_SIZE && attempt < 5; attempt++) {
            unsigned int room;

            if (count > NVML_QUERY_MAX_PROCS)
                count = NVML_QUERY_MAX_PROCS;
            room = count + count / 4 + 8;
            free(buf);
            buf = xcalloc(room, stride);
            count = room;
            rc = call_proc_list(q, (int)g->index, sym, proc_apis[gen], d, &count, buf);
            if (rc == NVML_SUCCESS && count > room)
                count = room; /* a library that claims more than it could have written */
        }
        if (rc == NVML_SUCCESS) {
            *stride_out = stride;
            for (unsigned int i = 0; buf != NULL && i < count; i++)
                merge_record(g, cap, buf + (size_t)i * stride, stride, l->type);
        }
        free(buf);
    }
    return rc;
}

/* A list that is simply not offered on this GPU does not make the others incomplete. */
static bool list_absent(nvmlReturn_t rc)
{
    return rc == NVML_ERROR_NOT_SUPPORTED || rc == NVML_ERROR_FUNCTION_NOT_FOUND;
}

static void get_process_util(struct nvml_query *q, struct gpu *g, nvmlDevice_t d)
{
    nvmlProcessUtilizationSample_t *samples = NULL;
    unsigned long long *newest;
    unsigned int count = 0;
    nvmlReturn_t rc;

    rc = CALL(q, (int)g->index, nvmlDeviceGetProcessUtilization, d, NULL, &count, 0);
    for (int attempt = 0; rc == NVML_ERROR_INSUFFICIENT_SIZE && attempt < 5; attempt++) {
        unsigned int room;

        if (count > NVML_QUERY_MAX_PROCS)
            count = NVML_QUERY_MAX_PROCS;
        room = count + count / 4 + 8;
        free(samples);
        samples = xcalloc(room, sizeof(*samples));
        count = room;
        rc = CALL(q, (int)g->index, nvmlDeviceGetProcessUtilization, d, samples, &count, 0);
        if (rc == NVML_SUCCESS && count > room)
            count = room;
    }
    gpu_set_rc(g, GPU_S_PROCESS_UTIL, rc);
    if (rc != NVML_SUCCESS || samples == NULL || g->n_procs == 0) {
        free(samples);
        return;
    }
    /* The driver keeps several samples per process: the newest one is "now". */
    newest = xcalloc(g->n_procs, sizeof(*newest));
    for (unsigned int i = 0; i < count; i++) {
        const nvmlProcessUtilizationSample_t *s = &samples[i];
        struct gpu_proc *p = find_proc(g, s->pid);
        size_t k;

        if (p == NULL)
            continue;
        k = (size_t)(p - g->procs);
        if ((p->valid & (1u << GPU_PROC_S_UTIL)) && s->timeStamp < newest[k])
            continue;
        newest[k] = s->timeStamp;
        p->sm_util_pct = s->smUtil;
        p->mem_util_pct = s->memUtil;
        p->enc_util_pct = s->encUtil;
        p->dec_util_pct = s->decUtil;
        p->valid |= 1u << GPU_PROC_S_UTIL;
    }
    free(newest);
    free(samples);
}

static void get_processes(struct nvml_query *q, struct gpu *g, nvmlDevice_t d)
{
    nvmlReturn_t rc[ARRAY_SIZE(proc_lists)];
    uint32_t stride[ARRAY_SIZE(proc_lists)] = { 0 };
    size_t cap = 0;

    for (size_t i = 0; i < ARRAY_SIZE(proc_lists); i++)
        rc[i] = read_proc_list(q, g, &cap, d, &proc_lists[i], &stride[i]);
    if (stride[0] != 0 || stride[1] != 0)
        q->process_stride = stride[0] != 0 ? stride[0] : stride[1];
    /*
     * The compute list decides; a failing graphics list makes the merged list incomplete, so its
     * error wins unless it merely does not exist. The MPS list is optional.
     */
    if (rc[0] == NVML_SUCCESS && !list_absent(rc[1]) && rc[1] != NVML_SUCCESS)
        rc[0] = rc[1];
    else if (list_absent(rc[0]) && rc[1] == NVML_SUCCESS)
        rc[0] = NVML_SUCCESS;
    gpu_set_rc(g, GPU_S_PROCESSES, rc[0]);
    if (rc[0] != NVML_SUCCESS) {
        free(g->procs);
        g->procs = NULL;
        g->n_procs = 0;
        gpu_set_rc(g, GPU_S_PROCESS_UTIL, rc[0]);
        return;
    }
    get_process_util(q, g, d);
}

static void get_nvlink(struct nvml_query *q, struct gpu *g, nvmlDevice_t d)
{
    const struct nvml_nvlink_ctx c = { &q->lib, q->mark, q->mark_arg };

    nvml_nvlink_query(&c, g, d, q->sampling, &q->nvlink_seen[g->index]);
}

static void get_fabric(struct nvml_query *q, struct gpu *g, nvmlDevice_t d)
{
    const struct nvml_nvlink_ctx c = { &q->lib, q->mark, q->mark_arg };

    nvml_fabric_query(&c, g, d);
}

/* ---- the other GPUs, as this one reaches them ---- */

static int32_t topology_of(int level)
{
    switch (level) {
    case NVML_TOPOLOGY_INTERNAL:
        return GPU_TOPO_INTERNAL;
    case NVML_TOPOLOGY_SINGLE:
        return GPU_TOPO_SINGLE;
    case NVML_TOPOLOGY_MULTIPLE:
        return GPU_TOPO_MULTIPLE;
    case NVML_TOPOLOGY_HOSTBRIDGE:
        return GPU_TOPO_HOSTBRIDGE;
    case NVML_TOPOLOGY_NODE:
        return GPU_TOPO_NODE;
    case NVML_TOPOLOGY_SYSTEM:
        return GPU_TOPO_SYSTEM;
    default:
        return GPU_TOPO_UNKNOWN;
    }
}

static int32_t p2p_of(int status)
{
    return status >= NVML_P2P_STATUS_OK && status <= NVML_P2P_STATUS_UNKNOWN ? status
                                                                             : GPU_P2P_UNKNOWN;
}

/* The code every value of every peer failed with (a GPU whose driver answers NOT_SUPPORTED to
 * both calls has no peer list), else NVML_SUCCESS. */
static int32_t same_failure(const struct gpu *g)
{
    int32_t rc = g->n_peers > 0 ? g->peers[0].rc[0] : NVML_SUCCESS;

    for (size_t i = 0; i < g->n_peers && rc != NVML_SUCCESS; i++) {
        for (int k = 0; k < PEER_S__COUNT; k++) {
            if (g->peers[i].rc[k] != rc)
                return NVML_SUCCESS;
        }
    }
    return rc;
}

/*
 * Every other GPU NVML gave a handle for: their closest common ancestor, and whether P2P reads
 * and P2P over NVLink work. Pairs grow as the square of the GPUs: past GPU_MAX_PEERS + 1 GPUs
 * the list is not collected. Each value keeps its own status; when all of them failed alike, the
 * list takes that status instead.
 */
static void get_peers(struct nvml_query *q, struct gpu *g, nvmlDevice_t d)
{
    int gpu = (int)g->index;

    if (!NVML_HAS(&q->lib, nvmlDeviceGetTopologyCommonAncestor) &&
        !NVML_HAS(&q->lib, nvmlDeviceGetP2PStatus)) {
        gpu_set_rc(g, GPU_S_PEERS, NVML_ERROR_FUNCTION_NOT_FOUND);
        return;
    }
    if (q->n_devices > GPU_MAX_PEERS + 1)
        return; /* JF_RC_NOT_COLLECTED, as gpu_init left it */
    g->peers = xcalloc(q->n_devices ? q->n_devices : 1, sizeof(*g->peers));
    for (uint32_t k = 0; k < q->n_devices; k++) {
        struct gpu_peer *p;
        int level = 0, read = 0, nvlink = 0;

        if (k == g->index || q->handle_rc[k] != NVML_SUCCESS)
            continue;
        p = &g->peers[g->n_peers++];
        gpu_peer_init(p, k);
        p->rc[PEER_S_TOPOLOGY] =
            CALL(q, gpu, nvmlDeviceGetTopologyCommonAncestor, d, q->devices[k], &level);
        if (p->rc[PEER_S_TOPOLOGY] == NVML_SUCCESS)
            p->topology = topology_of(level);
        p->rc[PEER_S_P2P_READ] =
            CALL(q, gpu, nvmlDeviceGetP2PStatus, d, q->devices[k], NVML_P2P_CAPS_INDEX_READ, &read);
        if (p->rc[PEER_S_P2P_READ] == NVML_SUCCESS)
            p->p2p_read = p2p_of(read);
        p->rc[PEER_S_P2P_NVLINK] = CALL(q, gpu, nvmlDeviceGetP2PStatus, d, q->devices[k],
                                        NVML_P2P_CAPS_INDEX_NVLINK, &nvlink);
        if (p->rc[PEER_S_P2P_NVLINK] == NVML_SUCCESS)
            p->p2p_nvlink = p2p_of(nvlink);
    }
    gpu_set_rc(g, GPU_S_PEERS, same_failure(g));
    if (g->rc[GPU_S_PEERS] != NVML_SUCCESS) {
        free(g->peers);
        g->peers = NULL;
        g->n_peers = 0;
    }
}

/* ---- the table: every field of struct gpu, in gpu_table order ---- */

static const struct nvml_getter getters[] = {
    STR(nvmlDeviceGetName, NVML_DEVICE_NAME_V2_BUFFER_SIZE, GPU_S_NAME, name),
    STR(nvmlDeviceGetUUID, NVML_DEVICE_UUID_V2_BUFFER_SIZE, GPU_S_UUID, uuid),
    STR(nvmlDeviceGetSerial, NVML_DEVICE_SERIAL_BUFFER_SIZE, GPU_S_SERIAL, serial),
    STR(nvmlDeviceGetVbiosVersion, NVML_DEVICE_VBIOS_VERSION_BUFFER_SIZE, GPU_S_VBIOS,
        vbios_version),
    INT(nvmlDeviceGetBrand, GPU_S_BRAND, brand, false),
    CUSTOM(get_architecture, false),
    STR(nvmlDeviceGetBoardPartNumber, NVML_DEVICE_PART_NUMBER_BUFFER_SIZE, GPU_S_PART_NUMBER,
        board_part_number),
    CUSTOM(get_pci, false),
    UINT(nvmlDeviceGetMinorNumber, GPU_S_MINOR, minor_number, false),
    CUSTOM(get_compute_capability, false),
    CUSTOM(get_memory, true),
    CUSTOM(get_bar1, true),
    CUSTOM(get_utilization, true),
    CUSTOM(get_codec, true),
    CUSTOM(get_temperature, true),
    UINT_ARG(nvmlDeviceGetTemperatureThreshold, NVML_TEMPERATURE_THRESHOLD_SLOWDOWN,
             GPU_S_TEMP_SLOWDOWN, temp_slowdown_c, false),
    UINT_ARG(nvmlDeviceGetTemperatureThreshold, NVML_TEMPERATURE_THRESHOLD_SHUTDOWN,
             GPU_S_TEMP_SHUTDOWN, temp_shutdown_c, false),
    UINT_ARG(nvmlDeviceGetTemperatureThreshold, NVML_TEMPERATURE_THRESHOLD_GPU_MAX,
             GPU_S_TEMP_GPU_MAX, temp_gpu_max_c, false),
    UINT_ARG(nvmlDeviceGetTemperatureThreshold, NVML_TEMPERATURE_THRESHOLD_MEM_MAX,
             GPU_S_TEMP_MEM_MAX, temp_mem_max_c, false),
    UINT(nvmlDeviceGetPowerUsage, GPU_S_POWER, power_mw, true),
    UINT(nvmlDeviceGetPowerManagementLimit, GPU_S_POWER_LIMIT, power_limit_mw, false),
    UINT(nvmlDeviceGetPowerManagementDefaultLimit, GPU_S_POWER_DEFAULT_LIMIT,
         power_default_limit_mw, false),
    UINT(nvmlDeviceGetEnforcedPowerLimit, GPU_S_POWER_ENFORCED_LIMIT, power_enforced_limit_mw,
         false),
    CUSTOM(get_power_constraints, false),
    CUSTOM(get_energy, true),
    UINT_ARG(nvmlDeviceGetClockInfo, NVML_CLOCK_GRAPHICS, GPU_S_CLOCK_GRAPHICS, clock_graphics_mhz,
             true),
    UINT_ARG(nvmlDeviceGetClockInfo, NVML_CLOCK_SM, GPU_S_CLOCK_SM, clock_sm_mhz, true),
    UINT_ARG(nvmlDeviceGetClockInfo, NVML_CLOCK_MEM, GPU_S_CLOCK_MEM, clock_mem_mhz, true),
    UINT_ARG(nvmlDeviceGetClockInfo, NVML_CLOCK_VIDEO, GPU_S_CLOCK_VIDEO, clock_video_mhz, true),
    UINT_ARG(nvmlDeviceGetMaxClockInfo, NVML_CLOCK_GRAPHICS, GPU_S_CLOCK_GRAPHICS_MAX,
             clock_graphics_max_mhz, false),
    UINT_ARG(nvmlDeviceGetMaxClockInfo, NVML_CLOCK_SM, GPU_S_CLOCK_SM_MAX, clock_sm_max_mhz, false),
    UINT_ARG(nvmlDeviceGetMaxClockInfo, NVML_CLOCK_MEM, GPU_S_CLOCK_MEM_MAX, clock_mem_max_mhz,
             false),
    UINT_ARG(nvmlDeviceGetApplicationsClock, NVML_CLOCK_SM, GPU_S_CLOCK_SM_APP, clock_sm_app_mhz,
             false),
    UINT_ARG(nvmlDeviceGetDefaultApplicationsClock, NVML_CLOCK_SM, GPU_S_CLOCK_SM_APP_DEFAULT,
             clock_sm_app_default_mhz, false),
    UINT_ARG(nvmlDeviceGetApplicationsClock, NVML_CLOCK_MEM, GPU_S_CLOCK_MEM_APP, clock_mem_app_mhz,
             false),
    UINT_ARG(nvmlDeviceGetDefaultApplicationsClock, NVML_CLOCK_MEM, GPU_S_CLOCK_MEM_APP_DEFAULT,
             clock_mem_app_default_mhz, false),
    CUSTOM(get_event_reasons, true),
    CUSTOM(get_supported_reasons, false),
    CUSTOM(get_pstate, true),
    UINT(nvmlDeviceGetFanSpeed, GPU_S_FAN, fan_speed_pct, true),
    BOOL(nvmlDeviceGetPersistenceMode, GPU_S_PERSISTENCE, persistence_mode),
    BOOL(nvmlDeviceGetAccountingMode, GPU_S_ACCOUNTING, accounting_mode),
    INT(nvmlDeviceGetComputeMode, GPU_S_COMPUTE_MODE, compute_mode, false),
    CUSTOM(get_mig, false),
    BOOL(nvmlDeviceGetDisplayMode, GPU_S_DISPLAY_MODE, display_mode),
    BOOL(nvmlDeviceGetDisplayActive, GPU_S_DISPLAY_ACTIVE, display_active),
    CUSTOM(get_ecc_mode, false),
    CUSTOM(get_ecc_volatile, true),
    CUSTOM(get_ecc_aggregate, false),
    CUSTOM(get_retired, false),
    BOOL(nvmlDeviceGetRetiredPagesPendingStatus, GPU_S_RETIRED_PENDING, retired_pages_pending),
    CUSTOM(get_remapped, false),
    CUSTOM(get_recovery_action, true),
    UINT(nvmlDeviceGetCurrPcieLinkGeneration, GPU_S_PCIE_GEN, pcie_gen, true),
    UINT(nvmlDeviceGetMaxPcieLinkGeneration, GPU_S_PCIE_GEN_MAX, pcie_gen_max, false),
    UINT(nvmlDeviceGetGpuMaxPcieLinkGeneration, GPU_S_PCIE_GEN_GPU_MAX, pcie_gen_gpu_max, false),
    UINT(nvmlDeviceGetCurrPcieLinkWidth, GPU_S_PCIE_WIDTH, pcie_width, true),
    UINT(nvmlDeviceGetMaxPcieLinkWidth, GPU_S_PCIE_WIDTH_MAX, pcie_width_max, false),
    CUSTOM(get_pcie_throughput, true),
    UINT(nvmlDeviceGetPcieReplayCounter, GPU_S_PCIE_REPLAY, pcie_replay_count, true),
    CUSTOM(get_processes, true),
    CUSTOM(get_nvlink, true),
    CUSTOM(get_fabric, false),
    CUSTOM(get_peers, false),
};

static void query_gpu(struct nvml_query *q, struct gpu *g, nvmlDevice_t d, bool dynamic_only)
{
    for (size_t i = 0; i < ARRAY_SIZE(getters); i++) {
        const struct nvml_getter *t = &getters[i];

        if (dynamic_only && !t->dynamic)
            continue;
        if (t->kind == G_CUSTOM)
            t->custom(q, g, d);
        else
            get_simple(q, t, g, d);
    }
}

/* ---- system ---- */

static void open_and_init(struct nvml_query *q)
{
    struct nvml_system *b = &q->base;
    nvmlReturn_t rc;

    q->opened = true;
    b->attempted = true;
    b->init_rc = JF_RC_NOT_COLLECTED;
    /* Loading runs the library's constructors, which can block like any call. */
    if (q->mark != NULL)
        q->mark(q->mark_arg, "dlopen", -1);
    if (nvml_lib_open(&q->lib, q->lib_name, b) != 0) {
        if (q->mark != NULL)
            q->mark(q->mark_arg, NULL, -1);
        return;
    }
    if (q->mark != NULL)
        q->mark(q->mark_arg, NULL, -1);
    /* nvmlInit_v2 counts GPUs this user cannot open, so they are reported, not hidden. */
    if (NVML_HAS(&q->lib, nvmlInit_v2))
        rc = CALL0(q, nvmlInit_v2);
    else
        rc = CALL0(q, nvmlInit);
    b->init_rc = rc;
    if (rc != NVML_SUCCESS) {
        const char *text;

        enter(q, NVML_SYM_nvmlErrorString, -1);
        text = NVML_FN(&q->lib, nvmlErrorString)(rc);
        leave(q, NVML_SUCCESS);
        if (text != NULL) {
            char buf[512];

            snprintf(buf, sizeof(buf), "%s", text);
            b->init_error = clean_string(buf, sizeof(buf));
        }
        return;
    }
    q->ready = true;
}

static char *get_string(struct nvml_query *q, enum nvml_sym sym, unsigned int size, int32_t *rc)
{
    char buf[128];

    *rc = NVML_ERROR_FUNCTION_NOT_FOUND;
    if (q->lib.sym[sym] == NULL)
        return NULL;
    memset(buf, 0, sizeof(buf));
    enter(q, sym, -1);
    /* nvmlSystemGetDriverVersion and nvmlSystemGetNVMLVersion share this signature. */
    *rc = leave(q, ((nvmlSystemGetDriverVersion_fn *)q->lib.sym[sym])(buf, size));
    return *rc == NVML_SUCCESS ? clean_string(buf, size) : NULL;
}

static void query_system(struct nvml_query *q, struct nvml_system *sys)
{
    int cuda = 0;
    unsigned int count = 0;

    sys->driver_version =
        get_string(q, NVML_SYM_nvmlSystemGetDriverVersion, NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE,
                   &sys->driver_version_rc);
    sys->nvml_version = get_string(q, NVML_SYM_nvmlSystemGetNVMLVersion,
                                   NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE, &sys->nvml_version_rc);
    /*
     * Only a missing _v2 falls back: the unversioned call answers "a known supported version"
     * when libcuda is absent, where _v2 says LIBRARY_NOT_FOUND, which is the truth.
     */
    if (NVML_HAS(&q->lib, nvmlSystemGetCudaDriverVersion_v2))
        sys->cuda_driver_version_rc = CALL(q, -1, nvmlSystemGetCudaDriverVersion_v2, &cuda);
    else
        sys->cuda_driver_version_rc = CALL(q, -1, nvmlSystemGetCudaDriverVersion, &cuda);
    sys->cuda_driver_version = sys->cuda_driver_version_rc == NVML_SUCCESS ? cuda : 0;
    if (NVML_HAS(&q->lib, nvmlDeviceGetCount_v2))
        sys->device_count_rc = CALL(q, -1, nvmlDeviceGetCount_v2, &count);
    else
        sys->device_count_rc = CALL(q, -1, nvmlDeviceGetCount, &count);
    sys->device_count = sys->device_count_rc == NVML_SUCCESS ? count : 0;

    /* The layout of the process lists depends on the library's own version. */
    free(q->driver_version);
    if (sys->driver_version != NULL)
        q->driver_version = xstrdup(sys->driver_version);
    else if (sys->library_version != NULL)
        q->driver_version = xstrdup(sys->library_version);
    else
        q->driver_version = NULL;
}

static void get_handles(struct nvml_query *q, uint32_t n)
{
    free(q->devices);
    free(q->handle_rc);
    q->n_devices = n;
    q->devices = xcalloc(n ? n : 1, sizeof(*q->devices));
    q->handle_rc = xcalloc(n ? n : 1, sizeof(*q->handle_rc));
    free(q->nvlink_seen);
    q->nvlink_seen = xcalloc(n ? n : 1, sizeof(*q->nvlink_seen));
    for (uint32_t i = 0; i < n; i++) {
        if (NVML_HAS(&q->lib, nvmlDeviceGetHandleByIndex_v2))
            q->handle_rc[i] = CALL(q, (int)i, nvmlDeviceGetHandleByIndex_v2, i, &q->devices[i]);
        else
            q->handle_rc[i] = CALL(q, (int)i, nvmlDeviceGetHandleByIndex, i, &q->devices[i]);
    }
}

static void copy_str(char **dst, const char *src)
{
    *dst = src ? xstrdup(src) : NULL;
}

struct nvml_query *nvml_query_new(const char *lib, nvml_mark_fn *mark, void *mark_arg)
{
    struct nvml_query *q = xcalloc(1, sizeof(*q));

    q->lib_name = xstrdup(lib);
    q->mark = mark;
    q->mark_arg = mark_arg;
    return q;
}

static void query_gpus(struct nvml_query *q, struct gpu **gpus, size_t *n_gpus, bool dynamic_only)
{
    *gpus = xcalloc(q->n_devices ? q->n_devices : 1, sizeof(**gpus));
    *n_gpus = q->n_devices;
    q->sampling = dynamic_only;
    for (uint32_t i = 0; i < q->n_devices; i++) {
        struct gpu *g = &(*gpus)[i];

        gpu_init(g, i);
        g->handle_rc = q->handle_rc[i];
        if (g->handle_rc == NVML_SUCCESS)
            query_gpu(q, g, q->devices[i], dynamic_only);
    }
}

void nvml_query_full(struct nvml_query *q, struct nvml_system *sys, struct gpu **gpus,
                     size_t *n_gpus)
{
    const struct nvml_system *b = &q->base;

    memset(sys, 0, sizeof(*sys));
    *gpus = NULL;
    *n_gpus = 0;
    if (!q->opened)
        open_and_init(q);
    sys->attempted = true;
    copy_str(&sys->library, b->library);
    copy_str(&sys->library_version, b->library_version);
    sys->load_error = b->load_error;
    copy_str(&sys->load_detail, b->load_detail);
    sys->init_rc = b->init_rc;
    copy_str(&sys->init_error, b->init_error);
    sys->driver_version_rc = sys->nvml_version_rc = JF_RC_NOT_COLLECTED;
    sys->cuda_driver_version_rc = sys->device_count_rc = JF_RC_NOT_COLLECTED;
    if (!q->ready)
        return;
    query_system(q, sys);
    get_handles(q, sys->device_count_rc != NVML_SUCCESS      ? 0
                   : sys->device_count > NVML_QUERY_MAX_GPUS ? NVML_QUERY_MAX_GPUS
                                                             : sys->device_count);
    q->process_stride = 0;
    query_gpus(q, gpus, n_gpus, false);
    sys->process_stride = q->process_stride;
}

void nvml_query_sample(struct nvml_query *q, struct gpu **gpus, size_t *n_gpus)
{
    *gpus = NULL;
    *n_gpus = 0;
    if (!q->ready || q->devices == NULL)
        return;
    query_gpus(q, gpus, n_gpus, true);
}

void nvml_query_free(struct nvml_query *q)
{
    if (q == NULL)
        return;
    if (q->ready)
        (void)CALL0(q, nvmlShutdown);
    nvml_lib_close(&q->lib);
    nvml_system_free(&q->base);
    free(q->driver_version);
    free(q->devices);
    free(q->handle_rc);
    free(q->nvlink_seen);
    free(q->lib_name);
    free(q);
}
