#include "nvml/nvml-abi.h"

#include <string.h>

static const struct {
    nvmlReturn_t rc;
    const char *name;
} rc_names[] = {
    { NVML_SUCCESS, "SUCCESS" },
    { NVML_ERROR_UNINITIALIZED, "UNINITIALIZED" },
    { NVML_ERROR_INVALID_ARGUMENT, "INVALID_ARGUMENT" },
    { NVML_ERROR_NOT_SUPPORTED, "NOT_SUPPORTED" },
    { NVML_ERROR_NO_PERMISSION, "NO_PERMISSION" },
    { NVML_ERROR_ALREADY_INITIALIZED, "ALREADY_INITIALIZED" },
    { NVML_ERROR_NOT_FOUND, "NOT_FOUND" },
    { NVML_ERROR_INSUFFICIENT_SIZE, "INSUFFICIENT_SIZE" },
    { NVML_ERROR_INSUFFICIENT_POWER, "INSUFFICIENT_POWER" },
    { NVML_ERROR_DRIVER_NOT_LOADED, "DRIVER_NOT_LOADED" },
    { NVML_ERROR_TIMEOUT, "TIMEOUT" },
    { NVML_ERROR_IRQ_ISSUE, "IRQ_ISSUE" },
    { NVML_ERROR_LIBRARY_NOT_FOUND, "LIBRARY_NOT_FOUND" },
    { NVML_ERROR_FUNCTION_NOT_FOUND, "FUNCTION_NOT_FOUND" },
    { NVML_ERROR_CORRUPTED_INFOROM, "CORRUPTED_INFOROM" },
    { NVML_ERROR_GPU_IS_LOST, "GPU_IS_LOST" },
    { NVML_ERROR_RESET_REQUIRED, "RESET_REQUIRED" },
    { NVML_ERROR_OPERATING_SYSTEM, "OPERATING_SYSTEM" },
    { NVML_ERROR_LIB_RM_VERSION_MISMATCH, "LIB_RM_VERSION_MISMATCH" },
    { NVML_ERROR_IN_USE, "IN_USE" },
    { NVML_ERROR_MEMORY, "MEMORY" },
    { NVML_ERROR_NO_DATA, "NO_DATA" },
    { NVML_ERROR_VGPU_ECC_NOT_SUPPORTED, "VGPU_ECC_NOT_SUPPORTED" },
    { NVML_ERROR_INSUFFICIENT_RESOURCES, "INSUFFICIENT_RESOURCES" },
    { NVML_ERROR_FREQ_NOT_SUPPORTED, "FREQ_NOT_SUPPORTED" },
    { NVML_ERROR_ARGUMENT_VERSION_MISMATCH, "ARGUMENT_VERSION_MISMATCH" },
    { NVML_ERROR_DEPRECATED, "DEPRECATED" },
    { NVML_ERROR_NOT_READY, "NOT_READY" },
    { NVML_ERROR_GPU_NOT_FOUND, "GPU_NOT_FOUND" },
    { NVML_ERROR_INVALID_STATE, "INVALID_STATE" },
    { NVML_ERROR_RESET_TYPE_NOT_SUPPORTED, "RESET_TYPE_NOT_SUPPORTED" },
    { NVML_ERROR_UNKNOWN, "UNKNOWN" },
};

const char *nvml_rc_name(nvmlReturn_t rc)
{
    for (size_t i = 0; i < sizeof(rc_names) / sizeof(rc_names[0]); i++) {
        if (rc_names[i].rc == rc)
            return rc_names[i].name;
    }
    return NULL;
}

nvmlReturn_t nvml_rc_from_name(const char *name)
{
    if (strncmp(name, "NVML_ERROR_", 11) == 0)
        name += 11;
    else if (strncmp(name, "NVML_", 5) == 0)
        name += 5;
    for (size_t i = 0; i < sizeof(rc_names) / sizeof(rc_names[0]); i++) {
        if (strcmp(rc_names[i].name, name) == 0)
            return rc_names[i].rc;
    }
    return -1;
}
