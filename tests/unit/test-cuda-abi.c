/*
 * The CUDA driver ABI gpudoctor declares (src/cuda/cuda-abi.h) against the values of NVIDIA's
 * cuda.h (CUDA 13.0). Written here as literals on purpose: a change to the header must not be
 * able to change the test. e2e/cuda-abi-header compares the header with cuda.h itself.
 */
#include "cuda/cuda-abi.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

static void test_results(void **state)
{
    (void)state;
    assert_int_equal(sizeof(CUresult), 4);
    assert_int_equal(CUDA_SUCCESS, 0);
    assert_int_equal(CUDA_ERROR_INVALID_VALUE, 1);
    assert_int_equal(CUDA_ERROR_OUT_OF_MEMORY, 2);
    assert_int_equal(CUDA_ERROR_NOT_INITIALIZED, 3);
    assert_int_equal(CUDA_ERROR_DEINITIALIZED, 4);
    assert_int_equal(CUDA_ERROR_STUB_LIBRARY, 34);
    assert_int_equal(CUDA_ERROR_DEVICE_UNAVAILABLE, 46);
    assert_int_equal(CUDA_ERROR_NO_DEVICE, 100);
    assert_int_equal(CUDA_ERROR_INVALID_DEVICE, 101);
    assert_int_equal(CUDA_ERROR_INVALID_IMAGE, 200);
    assert_int_equal(CUDA_ERROR_INVALID_CONTEXT, 201);
    assert_int_equal(CUDA_ERROR_NO_BINARY_FOR_GPU, 209);
    assert_int_equal(CUDA_ERROR_ECC_UNCORRECTABLE, 214);
    assert_int_equal(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, 217);
    assert_int_equal(CUDA_ERROR_INVALID_PTX, 218);
    assert_int_equal(CUDA_ERROR_NVLINK_UNCORRECTABLE, 220);
    assert_int_equal(CUDA_ERROR_JIT_COMPILER_NOT_FOUND, 221);
    assert_int_equal(CUDA_ERROR_UNSUPPORTED_PTX_VERSION, 222);
    assert_int_equal(CUDA_ERROR_INVALID_HANDLE, 400);
    assert_int_equal(CUDA_ERROR_NOT_FOUND, 500);
    assert_int_equal(CUDA_ERROR_NOT_READY, 600);
    assert_int_equal(CUDA_ERROR_ILLEGAL_ADDRESS, 700);
    assert_int_equal(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, 701);
    assert_int_equal(CUDA_ERROR_LAUNCH_TIMEOUT, 702);
    assert_int_equal(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, 704);
    assert_int_equal(CUDA_ERROR_HARDWARE_STACK_ERROR, 714);
    assert_int_equal(CUDA_ERROR_LAUNCH_FAILED, 719);
    assert_int_equal(CUDA_ERROR_NOT_PERMITTED, 800);
    assert_int_equal(CUDA_ERROR_NOT_SUPPORTED, 801);
    assert_int_equal(CUDA_ERROR_SYSTEM_NOT_READY, 802);
    assert_int_equal(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, 803);
    assert_int_equal(CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE, 804);
    assert_int_equal(CUDA_ERROR_TIMEOUT, 909);
    assert_int_equal(CUDA_ERROR_UNKNOWN, 999);
}

static void test_attributes(void **state)
{
    (void)state;
    assert_int_equal(CU_DEVICE_ATTRIBUTE_CLOCK_RATE, 13);
    assert_int_equal(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 16);
    assert_int_equal(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, 33);
    assert_int_equal(CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, 34);
    assert_int_equal(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, 36);
    assert_int_equal(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, 37);
    assert_int_equal(CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT, 40);
    assert_int_equal(CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 41);
    assert_int_equal(CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, 50);
    assert_int_equal(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 75);
    assert_int_equal(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 76);
}

static void test_flags_and_types(void **state)
{
    (void)state;
    assert_int_equal(CU_STREAM_DEFAULT, 0);
    assert_int_equal(CU_STREAM_NON_BLOCKING, 1);
    assert_int_equal(CU_EVENT_DEFAULT, 0);
    assert_int_equal(CU_EVENT_BLOCKING_SYNC, 1);
    assert_int_equal(CU_MEMHOSTALLOC_PORTABLE, 1);
    assert_int_equal(CU_JIT_INFO_LOG_BUFFER, 3);
    assert_int_equal(CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, 4);
    assert_int_equal(CU_JIT_ERROR_LOG_BUFFER, 5);
    assert_int_equal(CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, 6);
    assert_int_equal(sizeof(CUdeviceptr), 8);
    assert_int_equal(sizeof(CUdevice), 4);
    assert_int_equal(GPUDOCTOR_CUDA_ABI_HEADER_VERSION, 13000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_results),
        cmocka_unit_test(test_attributes),
        cmocka_unit_test(test_flags_and_types),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
