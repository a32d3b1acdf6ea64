/*
 * Exported: per-device getters. Each reads the fields of struct gpu whose gpu_table row names
 * it as the source (docs/snapshot.md); a field without a value makes the call return the
 * field's status (NOT_SUPPORTED when the scenario leaves the key out).
 */
#include "sim.h"

#include <stdio.h>
#include <string.h>

/* ---- one value, one field ---- */

static nvmlReturn_t get_u32(const char *fn, nvmlDevice_t device, enum gpu_slot slot,
                            unsigned int *out)
{
    struct sim_call c;
    nvmlReturn_t rc = sim_begin_dev(&c, fn, device, out != NULL, false);

    if (rc == NVML_SUCCESS)
        rc = sim_u32(&c, slot, out);
    return sim_end(&c, rc);
}

static nvmlReturn_t get_u64(const char *fn, nvmlDevice_t device, enum gpu_slot slot,
                            unsigned long long *out)
{
    struct sim_call c;
    nvmlReturn_t rc = sim_begin_dev(&c, fn, device, out != NULL, false);

    if (rc == NVML_SUCCESS)
        rc = sim_u64(&c, slot, out);
    return sim_end(&c, rc);
}

/* Integers, enums and booleans (nvmlEnableState_t): an int either way. */
static nvmlReturn_t get_int(const char *fn, nvmlDevice_t device, enum gpu_slot slot, int *out)
{
    struct sim_call c;
    nvmlReturn_t rc = sim_begin_dev(&c, fn, device, out != NULL, false);

    if (rc == NVML_SUCCESS)
        rc = sim_int(&c, slot, out);
    return sim_end(&c, rc);
}

static nvmlReturn_t get_str(const char *fn, nvmlDevice_t device, enum gpu_slot slot, char *buf,
                            unsigned int length)
{
    struct sim_call c;
    nvmlReturn_t rc = sim_begin_dev(&c, fn, device, buf != NULL, false);

    if (rc == NVML_SUCCESS)
        rc = sim_str(&c, slot, buf, length);
    return sim_end(&c, rc);
}

/* Two fields that one call returns together: both must have a value. */
static nvmlReturn_t get_int_pair(const char *fn, nvmlDevice_t device, enum gpu_slot s1, int *o1,
                                 enum gpu_slot s2, int *o2)
{
    struct sim_call c;
    nvmlReturn_t rc = sim_begin_dev(&c, fn, device, o1 != NULL && o2 != NULL, false);
    int a = 0, b = 0;

    if (rc == NVML_SUCCESS)
        rc = sim_int(&c, s1, &a);
    if (rc == NVML_SUCCESS)
        rc = sim_int(&c, s2, &b);
    if (rc == NVML_SUCCESS) {
        *o1 = a;
        *o2 = b;
    }
    return sim_end(&c, rc);
}

/* ---- MIG devices ---- */

uint32_t sim_mig_count(const struct sim_scenario *s, uint32_t gi, double t)
{
    uint64_t n = 0;

    if (sim_gpu_value(s, gi, GPU_S_MIG_DEVICES, t, &n) != 0)
        return 0;
    return n < SIM_MIG_MAX ? (uint32_t)n : SIM_MIG_MAX;
}

/* The parent's UUID with "MIG-" in front and the instance number in its last two digits. */
void sim_mig_uuid(const struct sim_gpu *sg, int32_t k, char *buf, size_t size)
{
    const char *parent = sg->g.rc[GPU_S_UUID] == 0 ? sg->g.uuid : "";
    size_t n;

    if (strncmp(parent, "GPU-", 4) == 0)
        parent += 4;
    n = strlen(parent);
    if (n < 2)
        snprintf(buf, size, "MIG-00000000-0000-0000-0000-0000000000%02x", (unsigned)k);
    else
        snprintf(buf, size, "MIG-%.*s%02x", (int)(n - 2), parent, (unsigned)k);
}

/*
 * A MIG device's name as NVML gives it: the parent's name and the profile, "1g.10gb". The
 * instances are taken to be equal: the largest A100/H100 profile of which n fit in 7 slices.
 */
static nvmlReturn_t mig_name(struct sim_call *c, char *buf, unsigned int length)
{
    /* memory per profile in eighths of the GPU's memory, by compute slices */
    static const unsigned eighths[SIM_MIG_MAX + 1] = { 0, 1, 2, 4, 4, 0, 0, 8 };
    static const unsigned slices[] = { 7, 4, 3, 2, 1 };
    uint32_t n = sim_mig_count(c->scn, c->gi, c->t);
    unsigned g = 1, mem_gb;
    unsigned long long total = 0;
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE + 32];
    nvmlReturn_t rc;

    if (c->gpu->g.rc[GPU_S_NAME] != 0)
        return c->gpu->g.rc[GPU_S_NAME] < 0 ? NVML_ERROR_NOT_SUPPORTED : c->gpu->g.rc[GPU_S_NAME];
    rc = sim_u64(c, GPU_S_MEM_TOTAL, &total);
    if (rc != NVML_SUCCESS)
        return rc;
    for (size_t i = 0; i < sizeof(slices) / sizeof(slices[0]); i++) {
        if (n * slices[i] <= SIM_MIG_MAX) {
            g = slices[i];
            break;
        }
    }
    mem_gb = (unsigned)((double)total / (1024.0 * 1024 * 1024) * eighths[g] / 8 + 0.5);
    snprintf(name, sizeof(name), "%s MIG %ug.%ugb", c->gpu->g.name, g, mem_gb);
    return sim_copy_str(name, buf, length);
}

/* ---- identity ---- */

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length)
{
    struct sim_call c;
    nvmlReturn_t rc = sim_begin_dev(&c, __func__, device, name != NULL, true);

    if (rc == NVML_SUCCESS)
        rc = c.mig >= 0 ? mig_name(&c, name, length) : sim_str(&c, GPU_S_NAME, name, length);
    return sim_end(&c, rc);
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length)
{
    struct sim_call c;
    nvmlReturn_t rc = sim_begin_dev(&c, __func__, device, uuid != NULL, true);
    char mig[NVML_DEVICE_UUID_V2_BUFFER_SIZE];

    if (rc == NVML_SUCCESS && c.mig >= 0) {
        sim_mig_uuid(c.gpu, c.mig, mig, sizeof(mig));
        rc = sim_copy_str(mig, uuid, length);
    } else if (rc == NVML_SUCCESS) {
        rc = sim_str(&c, GPU_S_UUID, uuid, length);
    }
    return sim_end(&c, rc);
}

nvmlReturn_t nvmlDeviceGetSerial(nvmlDevice_t device, char *serial, unsigned int length)
{
    return get_str(__func__, device, GPU_S_SERIAL, serial, length);
}

nvmlReturn_t nvmlDeviceGetVbiosVersion(nvmlDevice_t device, char *version, unsigned int length)
{
    return get_str(__func__, device, GPU_S_VBIOS, version, length);
}

nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int *minorNumber)
{
    return get_u32(__func__, device, GPU_S_MINOR, minorNumber);
}

/* ---- PCI ---- */

/* The ids every PCI info layout carries: all three fields must have a value. */
static nvmlReturn_t pci_ids(struct sim_call *c, unsigned int *device_id, unsigned int *subsys)
{
    nvmlReturn_t rc = c->gpu->g.rc[GPU_S_PCI_BUS_ID];

    if (rc != NVML_SUCCESS)
        return rc < 0 ? NVML_ERROR_NOT_SUPPORTED : rc;
    rc = sim_u32(c, GPU_S_PCI_DEVICE_ID, device_id);
    if (rc == NVML_SUCCESS)
        rc = sim_u32(c, GPU_S_PCI_SUBSYSTEM_ID, subsys);
    return rc;
}

/* The unversioned name and _v2 write the pre-415 52-byte layout (reference facts 6b). */
static nvmlReturn_t pci_legacy(const char *fn, nvmlDevice_t device, nvmlPciInfoLegacy_t *pci)
{
    struct sim_call c;
    nvmlReturn_t rc = sim_begin_dev(&c, fn, device, pci != NULL, false);
    unsigned int device_id, subsys;

    if (rc == NVML_SUCCESS)
        rc = pci_ids(&c, &device_id, &subsys);
    if (rc == NVML_SUCCESS) {
        memset(pci, 0, sizeof(*pci));
        snprintf(pci->busId, sizeof(pci->busId), "%04X:%02X:%02X.0", c.gpu->pci_domain,
                 c.gpu->pci_bus, c.gpu->pci_device);
        pci->domain = c.gpu->pci_domain;
        pci->bus = c.gpu->pci_bus;
        pci->device = c.gpu->pci_device;
        pci->pciDeviceId = device_id;
        pci->pciSubSystemId = subsys;
    }
    return sim_end(&c, rc);
}

nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t device, nvmlPciInfoLegacy_t *pci)
{
    return pci_legacy(__func__, device, pci);
}

nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t device, nvmlPciInfoLegacy_t *pci)
{
    return pci_legacy(__func__, device, pci);
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
    struct sim_call c;
    nvmlReturn_t rc = sim_begin_dev(&c, __func__, device, pci != NULL, false);
    unsigned int device_id, subsys;

    if (rc == NVML_SUCCESS)
        rc = pci_ids(&c, &device_id, &subsys);
    if (rc == NVML_SUCCESS) {
        memset(pci, 0, sizeof(*pci));
        snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), "%04X:%02X:%02X.0", c.gpu->pci_domain,
                 c.gpu->pci_bus, c.gpu->pci_device);
        snprintf(pci->busId, sizeof(pci->busId), "%08X:%02X:%02X.0", c.gpu->pci_domain,
                 c.gpu->pci_bus, c.gpu->pci_device);
        pci->domain = c.gpu->pci_domain;
        pci->bus = c.gpu->pci_bus;
        pci->device = c.gpu->pci_device;
        pci->pciDeviceId = device_id;
        pci->pciSubSystemId = subsys;
    }
    return sim_end(&c, rc);
}

nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int *major, int *minor)
{
    return get_int_pair(__func__, device, GPU_S_CC_MAJOR, major, GPU_S_CC_MINOR, minor);
}

/* ---- memory and utilisation ---- */

/*
 * v1 (24 bytes): used counts the memory the driver reserves, as R510 and later drivers report
 * it; a scenario without mem_reserved_bytes behaves like an older driver (nothing reserved).
 */
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)
{
    struct sim_call c;
    nvmlReturn_t rc = sim_begin_dev(&c, __func__, device, memory != NULL, false);
    unsigned long long total = 0, reserved = 0, used = 0, free_ = 0;

    if (rc == NVML_SUCCESS)
        rc = sim_u64(&c, GPU_S_MEM_TOTAL, &total);
    if (rc == NVML_SUCCESS)
        rc = sim_u64(&c, GPU_S_MEM_USED, &used);
    if (rc == NVML_SUCCESS)
        rc = sim_u64(&c, GPU_S_MEM_FREE, &free_);
    if (rc == NVML_SUCCESS) {
        if (sim_u64(&c, GPU_S_MEM_RESERVED, &reserved) != NVML_SUCCESS)
            reserved = 0;
        memory->total = total;
        memory->free = free_;
        memory->used = used + reserved;
    }
    return sim_end(&c, rc);
}

nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory)
{
    struct sim_call c;
    nvmlReturn_t rc = sim_begin_dev(&c, __func__, device, memory != NULL, false);
    unsigned long long total = 0, reserved = 0, used = 0, free_ = 0;

    /* A wrong version is FUNCTION_NOT_FOUND on every driver reported so far, 510.39.01 to the
     * CUDA 13.1 drivers (docs/simulator.md, "Wrong struct versions"). */
    if (rc == NVML_SUCCESS && memory->version != nvmlMemory_v2)
        rc = NVML_ERROR_FUNCTION_NOT_FOUND;
    if (rc == NVML_SUCCESS)
        rc = sim_u64(&c, GPU_S_MEM_TOTAL, &total);
    if (rc == NVML_SUCCESS)
        rc = sim_u64(&c, GPU_S_MEM_RESERVED, &reserved);
    if (rc == NVML_SUCCESS)
        rc = sim_u64(&c, GPU_S_MEM_USED, &used);
    if (rc == NVML_SUCCESS)
        rc = sim_u64(&c, GPU_S_MEM_FREE, &free_);
    if (rc == NVML_SUCCESS) {
        memory->total = total;
        memory->reserved = reserved;
        memory->used = used;
        memory->free = free_;
    }
    return sim_end(&c, rc);
}

nvmlReturn_t nvmlDeviceGetBAR1MemoryInfo(nvmlDevice_t device, nvmlBAR1Memory_t *bar1Memory)
{
    struct sim_call c;
    nvmlReturn_t rc = sim_begin_dev(&c, __func__, device, bar1Memory != NULL, false);
    unsigned long long total = 0, used = 0;

    if (rc == NVML_SUCCESS)
        rc = sim_u64(&c, GPU_S_BAR1_TOTAL, &total);
    if (rc == NVML_SUCCESS)
        rc = sim_u64(&c, GPU_S_BAR1_USED, &used);
    if (rc == NVML_SUCCESS) {
        bar1Memory->bar1Total = total;
        bar1Memory->bar1Used = used;
        bar1Memory->bar1Free = used < total ? total - used : 0;
    }
    return sim_end(&c, rc);
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t *utilization)
{
    struct sim_call c;
    nvmlReturn_t rc = sim_begin_dev(&c, __func__, device, utilization != NULL, false);
    unsigned int gpu = 0, mem = 0;

    if (rc == NVML_SUCCESS)
        rc = sim_u32(&c, GPU_S_UTIL_GPU, &gpu);
    if (rc == NVML_SUCCESS)
        rc = sim_u32(&c, GPU_S_UTIL_MEM, &mem);
    if (rc == NVML_SUCCESS) {
        utilization->gpu = gpu;
        utilization->memory = mem;
    }
    return sim_end(&c, rc);
}

static nvmlReturn_t codec_util(const char *fn, nvmlDevice_t device, enum gpu_slot slot,
                               unsigned int *utilization, unsigned int *samplingPeriodUs)
{
    struct sim_call c;
    nvmlReturn_t rc =
        sim_begin_dev(&c, fn, device, utilization != NULL && samplingPeriodUs != NULL, false);

    if (rc == NVML_SUCCESS)
        rc = sim_u32(&c, slot, utilization);
    if (rc == NVML_SUCCESS)
        *samplingPeriodUs = SIM_SAMPLE_PERIOD_US;
    return sim_end(&c, rc);
}

nvmlReturn_t nvmlDeviceGetEncoderUtilization(nvmlDevice_t device, unsigned int *utilization,
                                             unsigned int *samplingPeriodUs)
{
    return codec_util(__func__, device, GPU_S_UTIL_ENC, utilization, samplingPeriodUs);
}

nvmlReturn_t nvmlDeviceGetDecoderUtilization(nvmlDevice_t device, unsigned int *utilization,
                                             unsigned int *samplingPeriodUs)
{
    return codec_util(__func__, device, GPU_S_UTIL_DEC, utilization, samplingPeriodUs);
}

/* ---- temperature ---- */

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, int sensorType, unsigned int *temp)
{
    struct sim_call c;
    nvmlReturn_t rc = sim_begin_dev(&c, __func__, device,
                                    temp != NULL && sensorType == NVML_TEMPERATURE_GPU, false);

    if (rc == NVML_SUCCESS)
        rc = sim_u32(&c, GPU_S_TEMP, temp);
    return sim_end(&c, rc);
}

nvmlReturn_t nvmlDeviceGetTemperatureV(nvmlDevice_t device, nvmlTemperature_v1_t *temperature)
{
    struct sim_call c;
    nvmlReturn_t rc = sim_begin_dev(&c, __func__, device, temperature != NULL, false);
    int t = 0;

    /* No report of this call with a wrong version was found; versioned calls newer than the
     * 520 drivers answer ARGUMENT_VERSION_MISMATCH (docs/simulator.md, "Wrong struct versions"). */
    if (rc == NVML_SUCCESS && temperature->version != nvmlTemperature_v1)
        rc = NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    if (rc == NVML_SUCCESS && temperature->sensorType != NVML_TEMPERATURE_GPU)
        rc = NVML_ERROR_INVALID_ARGUMENT;
    if (rc == NVML_SUCCESS)
        rc = sim_int(&c, GPU_S_TEMP, &t);
    if (rc == NVML_SUCCESS)
        temperature->temperature = t;
    return sim_end(&c, rc);
}

nvmlReturn_t nvmlDeviceGetTemperatureThreshold(nvmlDevice_t device, int thresholdType,
                                               unsigned int *temp)
{
    static const enum gpu_slot slots[] = {
        [NVML_TEMPERATURE_THRESHOLD_SHUTDOWN] = GPU_S_TEMP_SHUTDOWN,
        [NVML_TEMPERATURE_THRESHOLD_SLOWDOWN] = GPU_S_TEMP_SLOWDOWN,
        [NVML_TEMPERATURE_THRESHOLD_MEM_MAX] = GPU_S_TEMP_MEM_MAX,
        [NVML_TEMPERATURE_THRESHOLD_GPU_MAX] = GPU_S_TEMP_GPU_MAX,
    };
    struct sim_call c;
    /* 0-3 are modelled; 4-7 (acoustic, GPS) exist but are not; 8 and above do not exist */
    nvmlReturn_t rc = sim_begin_dev(&c, __func__, device,
                                    temp != NULL && thresholdType >= 0 && thresholdType < 8, false);

    if (rc == NVML_SUCCESS && thresholdType >= (int)(sizeof(slots) / sizeof(slots[0])))
        rc = NVML_ERROR_NOT_SUPPORTED;
    if (rc == NVML_SUCCESS)
        rc = sim_u32(&c, slots[thresholdType], temp);
    return sim_end(&c, rc);
}

/* ---- power ---- */

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int *power)
{
    return get_u32(__func__, device, GPU_S_POWER, power);
}

nvmlReturn_t nvmlDeviceGetPowerManagementLimit(nvmlDevice_t device, unsigned int *limit)
{
    return get_u32(__func__, device, GPU_S_POWER_LIMIT, limit);
}

nvmlReturn_t nvmlDeviceGetPowerManagementDefaultLimit(nvmlDevice_t device,
                                                      unsigned int *defaultLimit)
{
    return get_u32(__func__, device, GPU_S_POWER_DEFAULT_LIMIT, defaultLimit);
}

nvmlReturn_t nvmlDeviceGetPowerManagementLimitConstraints(nvmlDevice_t device,
                                                          unsigned int *minLimit,
                                                          unsigned int *maxLimit)
{
    struct sim_call c;
    nvmlReturn_t rc =
        sim_begin_dev(&c, __func__, device, minLimit != NULL && maxLimit != NULL, false);
    unsigned int lo = 0, hi = 0;

    if (rc == NVML_SUCCESS)
        rc = sim_u32(&c, GPU_S_POWER_MIN_LIMIT, &lo);
    if (rc == NVML_SUCCESS)
        rc = sim_u32(&c, GPU_S_POWER_MAX_LIMIT, &hi);
    if (rc == NVML_SUCCESS) {
        *minLimit = lo;
        *maxLimit = hi;
    }
    return sim_end(&c, rc);
}

nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t device, unsigned int *limit)
{
    return get_u32(__func__, device, GPU_S_POWER_ENFORCED_LIMIT, limit);
}

nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device, unsigned long long *energy)
{
    return get_u64(__func__, device, GPU_S_ENERGY, energy);
}

/* ---- clocks ---- */

/* Slot of a clock of type for each clock id; GPU_S__COUNT: a clock NVML has but we do not. */
static const enum gpu_slot clock_slots[4][4] = {
    [NVML_CLOCK_ID_CURRENT] = { GPU_S_CLOCK_GRAPHICS, GPU_S_CLOCK_SM, GPU_S_CLOCK_MEM,
                                GPU_S_CLOCK_VIDEO },
    /* application clocks: the graphics clock target is the SM clock target */
    [NVML_CLOCK_ID_APP_CLOCK_TARGET] = { GPU_S_CLOCK_SM_APP, GPU_S_CLOCK_SM_APP,
                                         GPU_S_CLOCK_MEM_APP, GPU_S__COUNT },
    [NVML_CLOCK_ID_APP_CLOCK_DEFAULT] = { GPU_S_CLOCK_SM_APP_DEFAULT, GPU_S_CLOCK_SM_APP_DEFAULT,
                                          GPU_S_CLOCK_MEM_APP_DEFAULT, GPU_S__COUNT },
    [NVML_CLOCK_ID_CUSTOMER_BOOST_MAX] = { GPU_S_CLOCK_GRAPHICS_MAX, GPU_S_CLOCK_SM_MAX,
                                           GPU_S_CLOCK_MEM_MAX, GPU_S__COUNT },
};

static nvmlReturn_t clock_of(const char *fn, nvmlDevice_t device, int type, int id,
                             unsigned int *mhz)
{
    struct sim_call c;
    nvmlReturn_t rc = sim_begin_dev(
        &c, fn, device, mhz != NULL && type >= 0 && type < 4 && id >= 0 && id < 4, false);

    if (rc != NVML_SUCCESS)
        return sim_end(&c, rc);
    /* the maximum video clock is a key only scenarios have (not a snapshot field) */
    if (type == NVML_CLOCK_VIDEO && id == NVML_CLOCK_ID_CUSTOMER_BOOST_MAX) {
        if (c.gpu->extra.video_max_state != SIM_KEY_SET)
            return sim_end(&c, NVML_ERROR_NOT_SUPPORTED);
        *mhz = c.gpu->extra.clock_video_max_mhz;
        return sim_end(&c, NVML_SUCCESS);
    }
    if (clock_slots[id][type] == GPU_S__COUNT)
        return sim_end(&c, NVML_ERROR_NOT_SUPPORTED);
    return sim_end(&c, sim_u32(&c, clock_slots[id][type], mhz));
}

nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, int type, unsigned int *clock)
{
    return clock_of(__func__, device, type, NVML_CLOCK_ID_CURRENT, clock);
}

nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t device, int type, unsigned int *clock)
{
    return clock_of(__func__, device, type, NVML_CLOCK_ID_CUSTOMER_BOOST_MAX, clock);
}

nvmlReturn_t nvmlDeviceGetClock(nvmlDevice_t device, int clockType, int clockId,
                                unsigned int *clockMHz)
{
    return clock_of(__func__, device, clockType, clockId, clockMHz);
}

nvmlReturn_t nvmlDeviceGetApplicationsClock(nvmlDevice_t device, int clockType,
                                            unsigned int *clockMHz)
{
    return clock_of(__func__, device, clockType, NVML_CLOCK_ID_APP_CLOCK_TARGET, clockMHz);
}

nvmlReturn_t nvmlDeviceGetDefaultApplicationsClock(nvmlDevice_t device, int clockType,
                                                   unsigned int *clockMHz)
{
    return clock_of(__func__, device, clockType, NVML_CLOCK_ID_APP_CLOCK_DEFAULT, clockMHz);
}

nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t device,
                                                    unsigned long long *reasons)
{
    return get_u64(__func__, device, GPU_S_EVENT_REASONS, reasons);
}

nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t device,
                                                       unsigned long long *reasons)
{
    return get_u64(__func__, device, GPU_S_EVENT_REASONS, reasons);
}

nvmlReturn_t nvmlDeviceGetSupportedClocksEventReasons(nvmlDevice_t device,
                                                      unsigned long long *reasons)
{
    return get_u64(__func__, device, GPU_S_EVENT_REASONS_SUPPORTED, reasons);
}

nvmlReturn_t nvmlDeviceGetSupportedClocksThrottleReasons(nvmlDevice_t device,
                                                         unsigned long long *reasons)
{
    return get_u64(__func__, device, GPU_S_EVENT_REASONS_SUPPORTED, reasons);
}

nvmlReturn_t nvmlDeviceGetPerformanceState(nvmlDevice_t device, int *pState)
{
    return get_int(__func__, device, GPU_S_PSTATE, pState);
}

nvmlReturn_t nvmlDeviceGetPowerState(nvmlDevice_t device, int *pState)
{
    return get_int(__func__, device, GPU_S_PSTATE, pState);
}

/* ---- fans ---- */

/* A scenario has one fan speed: a GPU with one fan, or none (fan_speed_pct left out). */
nvmlReturn_t nvmlDeviceGetFanSpeed(nvmlDevice_t device, unsigned int *speed)
{
    return get_u32(__func__, device, GPU_S_FAN, speed);
}

nvmlReturn_t nvmlDeviceGetFanSpeed_v2(nvmlDevice_t device, unsigned int fan, unsigned int *speed)
{
    struct sim_call c;
    nvmlReturn_t rc = sim_begin_dev(&c, __func__, device, speed != NULL, false);

    if (rc == NVML_SUCCESS)
        rc = sim_u32(&c, GPU_S_FAN, speed);
    if (rc == NVML_SUCCESS && fan != 0)
        rc = NVML_ERROR_INVALID_ARGUMENT;
    return sim_end(&c, rc);
}

nvmlReturn_t nvmlDeviceGetNumFans(nvmlDevice_t device, unsigned int *numFans)
{
    struct sim_call c;
    nvmlReturn_t rc = sim_begin_dev(&c, __func__, device, numFans != NULL, false);
    unsigned int speed;

    if (rc == NVML_SUCCESS)
        rc = sim_u32(&c, GPU_S_FAN, &speed);
    if (rc == NVML_SUCCESS)
        *numFans = 1;
    return sim_end(&c, rc);
}

/* ---- modes ---- */

nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t device, int *mode)
{
    return get_int(__func__, device, GPU_S_PERSISTENCE, mode);
}

nvmlReturn_t nvmlDeviceGetComputeMode(nvmlDevice_t device, int *mode)
{
    return get_int(__func__, device, GPU_S_COMPUTE_MODE, mode);
}

nvmlReturn_t nvmlDeviceGetDisplayMode(nvmlDevice_t device, int *display)
{
    return get_int(__func__, device, GPU_S_DISPLAY_MODE, display);
}

nvmlReturn_t nvmlDeviceGetDisplayActive(nvmlDevice_t device, int *isActive)
{
    return get_int(__func__, device, GPU_S_DISPLAY_ACTIVE, isActive);
}

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int *currentMode,
                                  unsigned int *pendingMode)
{
    struct sim_call c;
    nvmlReturn_t rc =
        sim_begin_dev(&c, __func__, device, currentMode != NULL && pendingMode != NULL, false);
    unsigned int cur = 0, pend = 0;

    if (rc == NVML_SUCCESS)
        rc = sim_u32(&c, GPU_S_MIG_MODE, &cur);
    if (rc == NVML_SUCCESS)
        rc = sim_u32(&c, GPU_S_MIG_MODE_PENDING, &pend);
    if (rc == NVML_SUCCESS) {
        *currentMode = cur;
        *pendingMode = pend;
    }
    return sim_end(&c, rc);
}

/* Supported where MIG mode is (A100/H100 class): 7 slices, whatever the mode. */
nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int *count)
{
    struct sim_call c;
    nvmlReturn_t rc = sim_begin_dev(&c, __func__, device, count != NULL, false);
    unsigned int mode;

    if (rc == NVML_SUCCESS)
        rc = sim_u32(&c, GPU_S_MIG_MODE, &mode);
    if (rc == NVML_SUCCESS)
        *count = SIM_MIG_MAX;
    return sim_end(&c, rc);
}

nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index,
                                                 nvmlDevice_t *migDevice)
{
    struct sim_call c;
    nvmlReturn_t rc = sim_begin_dev(&c, __func__, device, migDevice != NULL, true);
    unsigned int n = 0;

    if (rc == NVML_SUCCESS && (c.mig >= 0 || index >= SIM_MIG_MAX))
        rc = NVML_ERROR_INVALID_ARGUMENT;
    if (rc == NVML_SUCCESS)
        rc = sim_u32(&c, GPU_S_MIG_DEVICES, &n);
    if (rc == NVML_SUCCESS && index >= sim_mig_count(c.scn, c.gi, c.t))
        rc = NVML_ERROR_NOT_FOUND;
    if (rc == NVML_SUCCESS)
        *migDevice = &c.gpu->migs[index];
    return sim_end(&c, rc);
}

/* ---- ECC, retired pages, remapped rows ---- */

nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t device, int *current, int *pending)
{
    return get_int_pair(__func__, device, GPU_S_ECC_MODE, current, GPU_S_ECC_MODE_PENDING, pending);
}

nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device, int errorType, int counterType,
                                         unsigned long long *eccCounts)
{
    static const enum gpu_slot slots[2][2] = {
        [NVML_VOLATILE_ECC] = { GPU_S_ECC_VOL_CORR, GPU_S_ECC_VOL_UNCORR },
        [NVML_AGGREGATE_ECC] = { GPU_S_ECC_AGG_CORR, GPU_S_ECC_AGG_UNCORR },
    };
    struct sim_call c;
    nvmlReturn_t rc = sim_begin_dev(&c, __func__, device,
                                    eccCounts != NULL && errorType >= 0 && errorType < 2 &&
                                        counterType >= 0 && counterType < 2,
                                    false);

    if (rc == NVML_SUCCESS)
        rc = sim_u64(&c, slots[counterType][errorType], eccCounts);
    return sim_end(&c, rc);
}

/*
 * Retired pages: the scenario gives counts; addresses and times are made up, the same on
 * every call: page k of cause x on GPU i is at 0x<i>0<x>00000 + k pages, retired at
 * 2026-01-01 plus k days.
 */
static nvmlReturn_t retired(const char *fn, nvmlDevice_t device, int cause, unsigned int *pageCount,
                            unsigned long long *addresses, unsigned long long *timestamps)
{
    struct sim_call c;
    nvmlReturn_t rc =
        sim_begin_dev(&c, fn, device, pageCount != NULL && (cause == 0 || cause == 1), false);
    unsigned int n = 0;

    if (rc == NVML_SUCCESS)
        rc = sim_u32(&c, cause == 0 ? GPU_S_RETIRED_SBE : GPU_S_RETIRED_DBE, &n);
    if (rc != NVML_SUCCESS)
        return sim_end(&c, rc);
    if (n == 0) {
        *pageCount = 0;
        return sim_end(&c, NVML_SUCCESS);
    }
    if (*pageCount < n || addresses == NULL) {
        *pageCount = n;
        return sim_end(&c, NVML_ERROR_INSUFFICIENT_SIZE);
    }
    for (unsigned int k = 0; k < n; k++) {
        addresses[k] = ((unsigned long long)c.gi << 28) + ((unsigned long long)cause << 20) +
                       0x100000ULL + k * 0x1000ULL;
        if (timestamps != NULL)
            timestamps[k] = 1767225600ULL + k * 86400ULL;
    }
    *pageCount = n;
    return sim_end(&c, NVML_SUCCESS);
}

nvmlReturn_t nvmlDeviceGetRetiredPages(nvmlDevice_t device, int cause, unsigned int *pageCount,
                                       unsigned long long *addresses)
{
    return retired(__func__, device, cause, pageCount, addresses, NULL);
}

nvmlReturn_t nvmlDeviceGetRetiredPages_v2(nvmlDevice_t device, int cause, unsigned int *pageCount,
                                          unsigned long long *addresses,
                                          unsigned long long *timestamps)
{
    return retired(__func__, device, cause, pageCount, addresses, timestamps);
}

nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t device, int *isPending)
{
    return get_int(__func__, device, GPU_S_RETIRED_PENDING, isPending);
}

nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t device, unsigned int *corrRows,
                                       unsigned int *uncRows, unsigned int *isPending,
                                       unsigned int *failureOccurred)
{
    static const enum gpu_slot slots[4] = { GPU_S_REMAP_CORR, GPU_S_REMAP_UNCORR,
                                            GPU_S_REMAP_PENDING, GPU_S_REMAP_FAILURE };
    unsigned int *outs[4] = { corrRows, uncRows, isPending, failureOccurred };
    unsigned int v[4] = { 0, 0, 0, 0 };
    struct sim_call c;
    nvmlReturn_t rc = sim_begin_dev(&c, __func__, device,
                                    corrRows && uncRows && isPending && failureOccurred, false);

    for (int i = 0; i < 4 && rc == NVML_SUCCESS; i++)
        rc = sim_u32(&c, slots[i], &v[i]);
    for (int i = 0; i < 4 && rc == NVML_SUCCESS; i++)
        *outs[i] = v[i];
    return sim_end(&c, rc);
}

/* ---- PCIe link ---- */

nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t device, unsigned int *currLinkGen)
{
    return get_u32(__func__, device, GPU_S_PCIE_GEN, currLinkGen);
}

nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t device, unsigned int *maxLinkGen)
{
    return get_u32(__func__, device, GPU_S_PCIE_GEN_MAX, maxLinkGen);
}

nvmlReturn_t nvmlDeviceGetGpuMaxPcieLinkGeneration(nvmlDevice_t device,
                                                   unsigned int *maxLinkGenDevice)
{
    return get_u32(__func__, device, GPU_S_PCIE_GEN_GPU_MAX, maxLinkGenDevice);
}

nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t device, unsigned int *currLinkWidth)
{
    return get_u32(__func__, device, GPU_S_PCIE_WIDTH, currLinkWidth);
}

nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t device, unsigned int *maxLinkWidth)
{
    return get_u32(__func__, device, GPU_S_PCIE_WIDTH_MAX, maxLinkWidth);
}

/* NVML reports KB/s; the snapshot keeps bytes per second: KB here is 1024 bytes. */
nvmlReturn_t nvmlDeviceGetPcieThroughput(nvmlDevice_t device, int counter, unsigned int *value)
{
    struct sim_call c;
    nvmlReturn_t rc = sim_begin_dev(
        &c, __func__, device,
        value != NULL && (counter == NVML_PCIE_UTIL_TX_BYTES || counter == NVML_PCIE_UTIL_RX_BYTES),
        false);
    unsigned long long bytes = 0;

    if (rc == NVML_SUCCESS)
        rc =
            sim_u64(&c, counter == NVML_PCIE_UTIL_TX_BYTES ? GPU_S_PCIE_TX : GPU_S_PCIE_RX, &bytes);
    if (rc == NVML_SUCCESS)
        *value = bytes / 1024 > UINT32_MAX ? UINT32_MAX : (unsigned int)(bytes / 1024);
    return sim_end(&c, rc);
}

nvmlReturn_t nvmlDeviceGetPcieReplayCounter(nvmlDevice_t device, unsigned int *value)
{
    return get_u32(__func__, device, GPU_S_PCIE_REPLAY, value);
}
