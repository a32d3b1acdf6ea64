/* Exported: initialisation, system values, device count and handle lookups. */
#include "sim.h"
#include "util/fileio.h"
#include "util/strutil.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

nvmlReturn_t nvmlInit(void)
{
    return sim_init(__func__, true);
}

nvmlReturn_t nvmlInit_v2(void)
{
    return sim_init(__func__, false);
}

/* The flags (NO_GPUS, NO_ATTACH, FORCE_INIT) change nothing here: a scenario always attaches. */
nvmlReturn_t nvmlInitWithFlags(unsigned int flags)
{
    (void)flags;
    return sim_init(__func__, false);
}

nvmlReturn_t nvmlShutdown(void)
{
    struct sim_call c;
    nvmlReturn_t rc = sim_begin(&c, __func__, true);

    if (rc == NVML_SUCCESS)
        sim_unref();
    return sim_end(&c, rc);
}

nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length)
{
    struct sim_call c;
    nvmlReturn_t rc = sim_begin(&c, __func__, version != NULL);

    if (rc == NVML_SUCCESS)
        rc = c.scn->driver_version_rc != 0 ? c.scn->driver_version_rc
                                           : sim_copy_str(c.scn->driver_version, version, length);
    return sim_end(&c, rc);
}

nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length)
{
    struct sim_call c;
    nvmlReturn_t rc = sim_begin(&c, __func__, version != NULL);

    if (rc == NVML_SUCCESS)
        rc = c.scn->nvml_version_rc != 0 ? c.scn->nvml_version_rc
                                         : sim_copy_str(c.scn->nvml_version, version, length);
    return sim_end(&c, rc);
}

/*
 * The CUDA version a driver branch supports, for the unversioned nvmlSystemGetCudaDriverVersion,
 * which answers "a known supported version" when libcuda cannot be asked (reference facts 3).
 * First driver of each CUDA minor release (reference/cuda-driver-compat.tsv).
 */
static const struct {
    const char *driver;
    int cuda;
} cuda_by_driver[] = {
    { "610.43.02", 13030 }, { "595.45.04", 13020 }, { "590.44.01", 13010 }, { "580.65.06", 13000 },
    { "575.51.03", 12090 }, { "570.26", 12080 },    { "560.28.03", 12060 }, { "555.42.02", 12050 },
    { "550.54.14", 12040 }, { "545.23.06", 12030 }, { "535.54.03", 12020 }, { "530.30.02", 12010 },
    { "525.60.13", 12000 }, { "520.61.05", 11080 }, { "515.43.04", 11070 }, { "510.39.01", 11060 },
    { "495.29.05", 11050 }, { "470.42.01", 11040 }, { "465.19.01", 11030 }, { "460.27.03", 11020 },
    { "455.23", 11010 },    { "450.36.06", 11000 }, { "440.33", 10020 },    { "418.39", 10010 },
    { "410.48", 10000 },
};

nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *cudaDriverVersion)
{
    struct sim_call c;
    nvmlReturn_t rc = sim_begin(&c, __func__, cudaDriverVersion != NULL);

    if (rc != NVML_SUCCESS)
        return sim_end(&c, rc);
    if (c.scn->cuda_driver_version_rc == 0) {
        *cudaDriverVersion = c.scn->cuda_driver_version;
        return sim_end(&c, NVML_SUCCESS);
    }
    if (c.scn->driver_version != NULL) {
        for (size_t i = 0; i < sizeof(cuda_by_driver) / sizeof(cuda_by_driver[0]); i++) {
            if (str_version_cmp(c.scn->driver_version, cuda_by_driver[i].driver) >= 0) {
                *cudaDriverVersion = cuda_by_driver[i].cuda;
                return sim_end(&c, NVML_SUCCESS);
            }
        }
    }
    return sim_end(&c, c.scn->cuda_driver_version_rc);
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *cudaDriverVersion)
{
    struct sim_call c;
    nvmlReturn_t rc = sim_begin(&c, __func__, cudaDriverVersion != NULL);

    if (rc == NVML_SUCCESS) {
        rc = c.scn->cuda_driver_version_rc;
        if (rc == NVML_SUCCESS)
            *cudaDriverVersion = c.scn->cuda_driver_version;
    }
    return sim_end(&c, rc);
}

/*
 * Like the real library, the name comes from the process table of this machine: the first
 * word of /proc/PID/cmdline, else its comm. NVML_SIM_PROC names another directory to use as
 * /proc, so that a scenario and a fixture process tree agree.
 */
nvmlReturn_t nvmlSystemGetProcessName(unsigned int pid, char *name, unsigned int length)
{
    const char *proc = getenv("NVML_SIM_PROC");
    struct sim_call c;
    nvmlReturn_t rc = sim_begin(&c, __func__, name != NULL);
    char path[4096], buf[4096];
    ssize_t n;

    if (rc != NVML_SUCCESS)
        return sim_end(&c, rc);
    if (proc == NULL || *proc == '\0')
        proc = "/proc";
    snprintf(path, sizeof(path), "%s/%u/cmdline", proc, pid);
    n = file_read_at(AT_FDCWD, path, buf, sizeof(buf));
    if (n <= 0 || buf[0] == '\0') {
        snprintf(path, sizeof(path), "%s/%u/comm", proc, pid);
        n = file_read_at(AT_FDCWD, path, buf, sizeof(buf));
        if (n <= 0)
            return sim_end(&c, NVML_ERROR_NOT_FOUND);
        str_rtrim(buf);
    }
    return sim_end(&c, sim_copy_str(buf, name, length));
}

/* GPUs a count or an index sees: all of them, or the accessible ones (v1 semantics). */
static bool counted(const struct sim_gpu *sg, bool accessible_only)
{
    return !accessible_only || !sim_gpu_inaccessible(sg);
}

static nvmlReturn_t count(const char *fn, unsigned int *deviceCount, bool v1)
{
    struct sim_call c;
    nvmlReturn_t rc = sim_begin(&c, fn, deviceCount != NULL);

    if (rc == NVML_SUCCESS && c.scn->device_count_rc != 0)
        rc = c.scn->device_count_rc;
    if (rc == NVML_SUCCESS) {
        unsigned int n = 0;

        for (size_t i = 0; i < c.scn->n_gpus; i++)
            n += counted(&c.scn->gpus[i], v1 || sim_v1_init());
        *deviceCount = n;
    }
    return sim_end(&c, rc);
}

nvmlReturn_t nvmlDeviceGetCount(unsigned int *deviceCount)
{
    return count(__func__, deviceCount, true);
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount)
{
    return count(__func__, deviceCount, false);
}

static nvmlReturn_t by_index(const char *fn, unsigned int index, nvmlDevice_t *device, bool v1)
{
    struct sim_call c;
    nvmlReturn_t rc = sim_begin(&c, fn, device != NULL);
    unsigned int k = 0;

    if (rc != NVML_SUCCESS)
        return sim_end(&c, rc);
    for (size_t i = 0; i < c.scn->n_gpus; i++) {
        struct sim_gpu *sg = &c.scn->gpus[i];

        if (!counted(sg, v1 || sim_v1_init()) || k++ != index)
            continue;
        if (sg->g.handle_rc != 0)
            return sim_end(&c, sg->g.handle_rc);
        *device = &sg->handle;
        return sim_end(&c, NVML_SUCCESS);
    }
    return sim_end(&c, NVML_ERROR_INVALID_ARGUMENT);
}

nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *device)
{
    return by_index(__func__, index, device, true);
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
    return by_index(__func__, index, device, false);
}

nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device)
{
    struct sim_call c;
    nvmlReturn_t rc = sim_begin(&c, __func__, uuid != NULL && device != NULL);

    if (rc != NVML_SUCCESS)
        return sim_end(&c, rc);
    for (size_t i = 0; i < c.scn->n_gpus; i++) {
        struct sim_gpu *sg = &c.scn->gpus[i];
        uint32_t migs;

        if (sg->g.handle_rc != 0 || sg->g.rc[GPU_S_UUID] != 0)
            continue;
        if (strcmp(sg->g.uuid, uuid) == 0) {
            *device = &sg->handle;
            return sim_end(&c, NVML_SUCCESS);
        }
        migs = sim_mig_count(c.scn, (uint32_t)i, c.t);
        for (uint32_t k = 0; k < migs; k++) {
            char mig_uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];

            sim_mig_uuid(sg, (int32_t)k, mig_uuid, sizeof(mig_uuid));
            if (strcmp(mig_uuid, uuid) == 0) {
                *device = &sg->migs[k];
                return sim_end(&c, NVML_SUCCESS);
            }
        }
    }
    return sim_end(&c, NVML_ERROR_NOT_FOUND);
}

/* "DDDDDDDD:BB:DD.F", "DDDD:BB:DD.F" or "BB:DD.F" (domain 0), in any case. */
static bool parse_bus_id(const char *s, uint32_t out[4])
{
    unsigned long long dom = 0;
    unsigned bus, dev, fn;
    int end = 0;

    if (sscanf(s, "%llx:%x:%x.%x%n", &dom, &bus, &dev, &fn, &end) != 4 || s[end] != '\0') {
        dom = 0;
        end = 0;
        if (sscanf(s, "%x:%x.%x%n", &bus, &dev, &fn, &end) != 3 || s[end] != '\0')
            return false;
    }
    if (dom > 0xffffffffULL || bus > 0xff || dev > 0x1f || fn > 7)
        return false;
    out[0] = (uint32_t)dom;
    out[1] = bus;
    out[2] = dev;
    out[3] = fn;
    return true;
}

nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *pciBusId, nvmlDevice_t *device)
{
    struct sim_call c;
    nvmlReturn_t rc = sim_begin(&c, __func__, pciBusId != NULL && device != NULL);
    uint32_t want[4];

    if (rc != NVML_SUCCESS)
        return sim_end(&c, rc);
    if (!parse_bus_id(pciBusId, want))
        return sim_end(&c, NVML_ERROR_INVALID_ARGUMENT);
    for (size_t i = 0; i < c.scn->n_gpus; i++) {
        struct sim_gpu *sg = &c.scn->gpus[i];

        if (sg->g.handle_rc != 0 || sg->g.rc[GPU_S_PCI_BUS_ID] != 0)
            continue;
        if (sg->pci_domain == want[0] && sg->pci_bus == want[1] && sg->pci_device == want[2] &&
            sg->pci_function == want[3]) {
            *device = &sg->handle;
            return sim_end(&c, NVML_SUCCESS);
        }
    }
    return sim_end(&c, NVML_ERROR_NOT_FOUND);
}

nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int *index)
{
    struct sim_call c;
    nvmlReturn_t rc = sim_begin_dev(&c, __func__, device, index != NULL, false);

    if (rc == NVML_SUCCESS)
        *index = c.gpu->g.index;
    return sim_end(&c, rc);
}
