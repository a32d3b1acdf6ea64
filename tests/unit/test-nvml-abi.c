/*
 * The NVML structs gpudoctor and the simulator declare (src/nvml/nvml-abi.h) against the layout
 * of NVIDIA's header, as reference/nvml-facts.md section 6 records it. The numbers are written
 * here as literals on purpose: a change to the header must not be able to change the test.
 */
#include "nvml/nvml-abi.h"
#include "snapshot/snap-gpu.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

static void test_pci_info(void **state)
{
    (void)state;
    assert_int_equal(sizeof(nvmlPciInfo_t), 68);
    assert_int_equal(offsetof(nvmlPciInfo_t, busIdLegacy), 0);
    assert_int_equal(sizeof(((nvmlPciInfo_t *)0)->busIdLegacy), 16);
    assert_int_equal(offsetof(nvmlPciInfo_t, domain), 16);
    assert_int_equal(offsetof(nvmlPciInfo_t, bus), 20);
    assert_int_equal(offsetof(nvmlPciInfo_t, device), 24);
    assert_int_equal(offsetof(nvmlPciInfo_t, pciDeviceId), 28);
    assert_int_equal(offsetof(nvmlPciInfo_t, pciSubSystemId), 32);
    assert_int_equal(offsetof(nvmlPciInfo_t, busId), 36);
    assert_int_equal(sizeof(((nvmlPciInfo_t *)0)->busId), 32);
}

static void test_pci_info_legacy(void **state)
{
    (void)state;
    assert_int_equal(sizeof(nvmlPciInfoLegacy_t), 52);
    assert_int_equal(offsetof(nvmlPciInfoLegacy_t, busId), 0);
    assert_int_equal(sizeof(((nvmlPciInfoLegacy_t *)0)->busId), 16);
    assert_int_equal(offsetof(nvmlPciInfoLegacy_t, domain), 16);
    assert_int_equal(offsetof(nvmlPciInfoLegacy_t, bus), 20);
    assert_int_equal(offsetof(nvmlPciInfoLegacy_t, device), 24);
    assert_int_equal(offsetof(nvmlPciInfoLegacy_t, pciDeviceId), 28);
    assert_int_equal(offsetof(nvmlPciInfoLegacy_t, pciSubSystemId), 32);
    assert_int_equal(offsetof(nvmlPciInfoLegacy_t, reserved0), 36);
    assert_int_equal(offsetof(nvmlPciInfoLegacy_t, reserved3), 48);
}

static void test_memory(void **state)
{
    (void)state;
    assert_int_equal(sizeof(nvmlMemory_t), 24);
    assert_int_equal(offsetof(nvmlMemory_t, total), 0);
    assert_int_equal(offsetof(nvmlMemory_t, free), 8);
    assert_int_equal(offsetof(nvmlMemory_t, used), 16);

    assert_int_equal(sizeof(nvmlMemory_v2_t), 40);
    assert_int_equal(offsetof(nvmlMemory_v2_t, version), 0);
    assert_int_equal(offsetof(nvmlMemory_v2_t, total), 8);
    assert_int_equal(offsetof(nvmlMemory_v2_t, reserved), 16);
    assert_int_equal(offsetof(nvmlMemory_v2_t, free), 24);
    assert_int_equal(offsetof(nvmlMemory_v2_t, used), 32);
    assert_int_equal(nvmlMemory_v2, 0x02000028);

    assert_int_equal(sizeof(nvmlBAR1Memory_t), 24);
    assert_int_equal(offsetof(nvmlBAR1Memory_t, bar1Total), 0);
    assert_int_equal(offsetof(nvmlBAR1Memory_t, bar1Free), 8);
    assert_int_equal(offsetof(nvmlBAR1Memory_t, bar1Used), 16);
}

static void test_utilization(void **state)
{
    (void)state;
    assert_int_equal(sizeof(nvmlUtilization_t), 8);
    assert_int_equal(offsetof(nvmlUtilization_t, gpu), 0);
    assert_int_equal(offsetof(nvmlUtilization_t, memory), 4);

    assert_int_equal(sizeof(nvmlProcessUtilizationSample_t), 32);
    assert_int_equal(offsetof(nvmlProcessUtilizationSample_t, pid), 0);
    assert_int_equal(offsetof(nvmlProcessUtilizationSample_t, timeStamp), 8);
    assert_int_equal(offsetof(nvmlProcessUtilizationSample_t, smUtil), 16);
    assert_int_equal(offsetof(nvmlProcessUtilizationSample_t, memUtil), 20);
    assert_int_equal(offsetof(nvmlProcessUtilizationSample_t, encUtil), 24);
    assert_int_equal(offsetof(nvmlProcessUtilizationSample_t, decUtil), 28);
}

/* The three process-record strides: 16 (unversioned), 24 (_v2, _v3), 32 (_v3 in early R535). */
static void test_process_info(void **state)
{
    (void)state;
    assert_int_equal(sizeof(nvmlProcessInfo_v1_t), 16);
    assert_int_equal(offsetof(nvmlProcessInfo_v1_t, pid), 0);
    assert_int_equal(offsetof(nvmlProcessInfo_v1_t, usedGpuMemory), 8);

    assert_int_equal(sizeof(nvmlProcessInfo_v2_t), 24);
    assert_int_equal(offsetof(nvmlProcessInfo_v2_t, pid), 0);
    assert_int_equal(offsetof(nvmlProcessInfo_v2_t, usedGpuMemory), 8);
    assert_int_equal(offsetof(nvmlProcessInfo_v2_t, gpuInstanceId), 16);
    assert_int_equal(offsetof(nvmlProcessInfo_v2_t, computeInstanceId), 20);

    assert_int_equal(sizeof(nvmlProcessInfo_r535_t), 32);
    assert_int_equal(offsetof(nvmlProcessInfo_r535_t, pid), 0);
    assert_int_equal(offsetof(nvmlProcessInfo_r535_t, usedGpuMemory), 8);
    assert_int_equal(offsetof(nvmlProcessInfo_r535_t, gpuInstanceId), 16);
    assert_int_equal(offsetof(nvmlProcessInfo_r535_t, computeInstanceId), 20);
    assert_int_equal(offsetof(nvmlProcessInfo_r535_t, usedGpuCcProtectedMemory), 24);
}

static void test_temperature(void **state)
{
    (void)state;
    assert_int_equal(sizeof(nvmlTemperature_v1_t), 12);
    assert_int_equal(offsetof(nvmlTemperature_v1_t, version), 0);
    assert_int_equal(offsetof(nvmlTemperature_v1_t, sensorType), 4);
    assert_int_equal(offsetof(nvmlTemperature_v1_t, temperature), 8);
    assert_int_equal(nvmlTemperature_v1, 0x0100000C);
}

/* nvmlFieldValue_t and nvmlValue_t, computed from the 13.3.29 header's declarations. */
static void test_field_value(void **state)
{
    (void)state;
    assert_int_equal(sizeof(nvmlValue_t), 8);
    assert_int_equal(sizeof(nvmlFieldValue_t), 40);
    assert_int_equal(offsetof(nvmlFieldValue_t, fieldId), 0);
    assert_int_equal(offsetof(nvmlFieldValue_t, scopeId), 4);
    assert_int_equal(offsetof(nvmlFieldValue_t, timestamp), 8);
    assert_int_equal(offsetof(nvmlFieldValue_t, latencyUsec), 16);
    assert_int_equal(offsetof(nvmlFieldValue_t, valueType), 24);
    assert_int_equal(offsetof(nvmlFieldValue_t, nvmlReturn), 28);
    assert_int_equal(offsetof(nvmlFieldValue_t, value), 32);
    /* the field ids read, as the header numbers them */
    assert_int_equal(NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, 138);
    assert_int_equal(NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX, 139);
    assert_int_equal(NVML_FI_DEV_NVLINK_ERROR_DL_REPLAY, 161);
    assert_int_equal(NVML_FI_DEV_NVLINK_ERROR_DL_RECOVERY, 162);
    assert_int_equal(NVML_FI_DEV_NVLINK_ERROR_DL_CRC, 163);
    assert_int_equal(NVML_FI_DEV_GET_GPU_RECOVERY_ACTION, 230);
    assert_int_equal(NVML_GPU_RECOVERY_ACTION_NONE, 0);
    assert_int_equal(NVML_GPU_RECOVERY_ACTION_GPU_RESET, 1);
    assert_int_equal(NVML_GPU_RECOVERY_ACTION_NODE_REBOOT, 2);
    assert_int_equal(NVML_GPU_RECOVERY_ACTION_DRAIN_P2P, 3);
    assert_int_equal(NVML_GPU_RECOVERY_ACTION_DRAIN_AND_RESET, 4);
    assert_int_equal(NVML_GPU_RECOVERY_ACTION_RECOVER_IMEX_DOMAIN, 5);
    /* the snapshot's names follow the header's order */
    assert_int_equal(GPU_RECOVERY_RECOVER_IMEX_DOMAIN,
                     NVML_GPU_RECOVERY_ACTION_RECOVER_IMEX_DOMAIN);
    assert_int_equal(NVML_DEVICE_ARCH_HOPPER, 9);
    assert_int_equal(NVML_DEVICE_ARCH_BLACKWELL, 10);
    assert_int_equal(NVML_DEVICE_ARCH_RUBIN, 13);
    assert_int_equal(NVML_BRAND_NVIDIA, 14);
    assert_int_equal(NVML_BRAND_TITAN_RTX, 16);
}

static void test_scalars(void **state)
{
    (void)state;
    assert_int_equal(sizeof(nvmlDevice_t), 8);
    assert_int_equal(sizeof(nvmlReturn_t), 4);
    assert_int_equal(NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE, 32);
    assert_int_equal(NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE, 16);
    assert_int_equal(NVML_DEVICE_UUID_V2_BUFFER_SIZE, 96);
    assert_int_equal(NVML_DEVICE_NAME_V2_BUFFER_SIZE, 96);
    assert_int_equal(NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE, 80);
    assert_int_equal(NVML_CLOCKS_EVENT_ALL, 0x1FF);
    assert_int_equal(NVML_ERROR_ARGUMENT_VERSION_MISMATCH, 25);
    assert_int_equal(NVML_ERROR_RESET_TYPE_NOT_SUPPORTED, 30);
    assert_int_equal(NVML_ERROR_UNKNOWN, 999);
    assert_int_equal(NVML_CUDA_DRIVER_VERSION_MAJOR(12040), 12);
    assert_int_equal(NVML_CUDA_DRIVER_VERSION_MINOR(12040), 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pci_info),     cmocka_unit_test(test_pci_info_legacy),
        cmocka_unit_test(test_memory),       cmocka_unit_test(test_utilization),
        cmocka_unit_test(test_process_info), cmocka_unit_test(test_temperature),
        cmocka_unit_test(test_scalars),      cmocka_unit_test(test_field_value),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
