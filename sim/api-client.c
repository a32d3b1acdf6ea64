/*
 * Exported: what clients written against NVIDIA's bindings read and gpudoctor does not (the
 * NVML_CLIENT_FUNCTIONS list): brand, architecture, board part number, driver model, accounting
 * mode. Each answers from the GPU's struct sim_extra, read from
 * the scenario keys docs/simulator.md describes under "Beyond the snapshot". Return codes follow
 * the 13.3.29 header's documentation of each function.
 */
#include "sim.h"

#include <string.h>

/* The value of a key that only scenarios have: NOT_SUPPORTED when absent or null. */
static nvmlReturn_t extra_rc(enum sim_key_state state)
{
    return state == SIM_KEY_SET ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
}

nvmlReturn_t nvmlDeviceGetBrand(nvmlDevice_t device, int *type)
{
    struct sim_call c;
    nvmlReturn_t rc = sim_begin_dev(&c, __func__, device, type != NULL, false);

    if (rc == NVML_SUCCESS)
        rc = extra_rc(c.gpu->extra.brand_state);
    if (rc == NVML_SUCCESS)
        *type = c.gpu->extra.brand;
    return sim_end(&c, rc);
}

/*
 * The architecture of a compute capability (CUDA C++ Programming Guide, "Compute Capability";
 * developer.nvidia.com/cuda-gpus): 3 Kepler, 5 Maxwell, 6 Pascal, 7.0 and 7.2 Volta, 7.5
 * Turing, 8.0 to 8.7 Ampere, 8.9 Ada, 9 Hopper, 10 and 12 Blackwell; anything else UNKNOWN.
 */
static unsigned int arch_of_cc(int major, int minor)
{
    switch (major) {
    case 3:
        return NVML_DEVICE_ARCH_KEPLER;
    case 5:
        return NVML_DEVICE_ARCH_MAXWELL;
    case 6:
        return NVML_DEVICE_ARCH_PASCAL;
    case 7:
        return minor >= 5 ? NVML_DEVICE_ARCH_TURING : NVML_DEVICE_ARCH_VOLTA;
    case 8:
        return minor == 9 ? NVML_DEVICE_ARCH_ADA : NVML_DEVICE_ARCH_AMPERE;
    case 9:
        return NVML_DEVICE_ARCH_HOPPER;
    case 10:
    case 12:
        return NVML_DEVICE_ARCH_BLACKWELL;
    default:
        return NVML_DEVICE_ARCH_UNKNOWN;
    }
}

/* "architecture" when the scenario gives it, else what the compute capability says. */
nvmlReturn_t nvmlDeviceGetArchitecture(nvmlDevice_t device, unsigned int *arch)
{
    struct sim_call c;
    nvmlReturn_t rc = sim_begin_dev(&c, __func__, device, arch != NULL, false);
    const struct sim_extra *x;
    int major = 0, minor = 0;

    if (rc != NVML_SUCCESS)
        return sim_end(&c, rc);
    x = &c.gpu->extra;
    if (x->arch_state != SIM_KEY_ABSENT) {
        rc = extra_rc(x->arch_state);
        if (rc == NVML_SUCCESS)
            *arch = x->arch;
        return sim_end(&c, rc);
    }
    rc = sim_int(&c, GPU_S_CC_MAJOR, &major);
    if (rc == NVML_SUCCESS)
        rc = sim_int(&c, GPU_S_CC_MINOR, &minor);
    if (rc == NVML_SUCCESS)
        *arch = arch_of_cc(major, minor);
    return sim_end(&c, rc);
}

nvmlReturn_t nvmlDeviceGetBoardPartNumber(nvmlDevice_t device, char *partNumber,
                                          unsigned int length)
{
    struct sim_call c;
    nvmlReturn_t rc = sim_begin_dev(&c, __func__, device, partNumber != NULL, false);

    if (rc == NVML_SUCCESS)
        rc = extra_rc(c.gpu->extra.part_state);
    if (rc == NVML_SUCCESS)
        rc = sim_copy_str(c.gpu->extra.part_number, partNumber, length);
    return sim_end(&c, rc);
}

/*
 * The driver model is a Windows notion: "NVML_ERROR_NOT_SUPPORTED if the platform is not
 * windows". INVALID_ARGUMENT only when both outputs are NULL.
 */
static nvmlReturn_t driver_model(const char *fn, nvmlDevice_t device, int *current, int *pending)
{
    struct sim_call c;
    nvmlReturn_t rc = sim_begin_dev(&c, fn, device, current != NULL || pending != NULL, false);

    if (rc == NVML_SUCCESS)
        rc = NVML_ERROR_NOT_SUPPORTED;
    return sim_end(&c, rc);
}

nvmlReturn_t nvmlDeviceGetDriverModel(nvmlDevice_t device, int *current, int *pending)
{
    return driver_model(__func__, device, current, pending);
}

nvmlReturn_t nvmlDeviceGetDriverModel_v2(nvmlDevice_t device, int *current, int *pending)
{
    return driver_model(__func__, device, current, pending);
}

/*
 * Disabled unless the scenario says otherwise: the mode "will default to disabled after driver
 * unloads", and "on MIG-enabled GPUs, accounting mode would be set to DISABLED" (header notes of
 * nvmlDeviceSetAccountingMode).
 */
nvmlReturn_t nvmlDeviceGetAccountingMode(nvmlDevice_t device, int *mode)
{
    struct sim_call c;
    nvmlReturn_t rc = sim_begin_dev(&c, __func__, device, mode != NULL, false);
    const struct sim_extra *x;
    unsigned int mig = 0;

    if (rc != NVML_SUCCESS)
        return sim_end(&c, rc);
    x = &c.gpu->extra;
    if (x->accounting_state == SIM_KEY_NULL)
        return sim_end(&c, NVML_ERROR_NOT_SUPPORTED);
    if (sim_u32(&c, GPU_S_MIG_MODE, &mig) != NVML_SUCCESS)
        mig = 0;
    *mode = x->accounting_state == SIM_KEY_SET && x->accounting && !mig ? NVML_FEATURE_ENABLED
                                                                        : NVML_FEATURE_DISABLED;
    return sim_end(&c, NVML_SUCCESS);
}
