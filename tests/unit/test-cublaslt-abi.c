/*
 * The cuBLASLt ABI gpudoctor declares (src/cuda/cublaslt-abi.h) against the values of NVIDIA's
 * cublasLt.h, cublas_api.h and library_types.h (CUDA 13.0 toolkit, cuBLAS 13.1.0). Written here
 * as literals on purpose: a change to the header must not be able to change the test.
 * e2e/cublaslt-abi-header compares the header with NVIDIA's itself. Also the loader's answers
 * when the library is absent or is not cuBLASLt.
 */
#include "cuda/cublaslt-lib.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static void test_statuses(void **state)
{
    (void)state;
    assert_int_equal(sizeof(cublasStatus_t), 4);
    assert_int_equal(CUBLAS_STATUS_SUCCESS, 0);
    assert_int_equal(CUBLAS_STATUS_NOT_INITIALIZED, 1);
    assert_int_equal(CUBLAS_STATUS_ALLOC_FAILED, 3);
    assert_int_equal(CUBLAS_STATUS_INVALID_VALUE, 7);
    assert_int_equal(CUBLAS_STATUS_ARCH_MISMATCH, 8);
    assert_int_equal(CUBLAS_STATUS_MAPPING_ERROR, 11);
    assert_int_equal(CUBLAS_STATUS_EXECUTION_FAILED, 13);
    assert_int_equal(CUBLAS_STATUS_INTERNAL_ERROR, 14);
    assert_int_equal(CUBLAS_STATUS_NOT_SUPPORTED, 15);
    assert_int_equal(CUBLAS_STATUS_LICENSE_ERROR, 16);
}

static void test_constants(void **state)
{
    (void)state;
    assert_int_equal(CUDA_R_32F, 0);
    assert_int_equal(CUDA_R_16F, 2);
    assert_int_equal(CUDA_R_16BF, 14);
    assert_int_equal(CUDA_R_8F_E4M3, 28);
    assert_int_equal(CUDA_R_8F_E5M2, 29);
    assert_int_equal(CUBLAS_COMPUTE_16F, 64);
    assert_int_equal(CUBLAS_COMPUTE_32F, 68);
    assert_int_equal(CUBLAS_COMPUTE_32F_FAST_TF32, 77);
    assert_int_equal(CUBLAS_OP_N, 0);
    assert_int_equal(CUBLAS_OP_T, 1);
    assert_int_equal(CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, 0);
    assert_int_equal(CUBLASLT_MATMUL_DESC_SCALE_TYPE, 1);
    assert_int_equal(CUBLASLT_MATMUL_DESC_TRANSA, 3);
    assert_int_equal(CUBLASLT_MATMUL_DESC_TRANSB, 4);
    assert_int_equal(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, 1);
    assert_int_equal(GPUDOCTOR_CUBLASLT_ABI_HEADER_VERSION, 130100);
}

static void test_layouts(void **state)
{
    (void)state;
    assert_int_equal(sizeof(cublasLtMatmulDescOpaque_t), 256);
    assert_int_equal(sizeof(cublasLtMatrixLayoutOpaque_t), 64);
    assert_int_equal(sizeof(cublasLtMatmulPreferenceOpaque_t), 64);
    assert_int_equal(sizeof(cublasLtMatmulAlgo_t), 64);
    assert_int_equal(sizeof(cublasLtMatmulHeuristicResult_t), 96);
    assert_int_equal(offsetof(cublasLtMatmulHeuristicResult_t, algo), 0);
    assert_int_equal(offsetof(cublasLtMatmulHeuristicResult_t, workspaceSize), 64);
    assert_int_equal(offsetof(cublasLtMatmulHeuristicResult_t, state), 72);
    assert_int_equal(offsetof(cublasLtMatmulHeuristicResult_t, wavesCount), 76);
    assert_int_equal(offsetof(cublasLtMatmulHeuristicResult_t, reserved), 80);
}

static void test_status_names(void **state)
{
    char buf[64];

    (void)state;
    assert_string_equal(cublaslt_status_name(15, buf, sizeof(buf)), "CUBLAS_STATUS_NOT_SUPPORTED");
    assert_string_equal(cublaslt_status_name(42, buf, sizeof(buf)), "cublasStatus_t 42");
    assert_int_equal(cublaslt_status_parse("EXECUTION_FAILED"), 13);
    assert_int_equal(cublaslt_status_parse("CUBLAS_STATUS_ARCH_MISMATCH"), 8);
    assert_int_equal(cublaslt_status_parse("14"), 14);
    assert_int_equal(cublaslt_status_parse("NO_SUCH_STATUS"), -1);
}

static void test_loader_absent(void **state)
{
    struct cublaslt_lib lib;
    char *cause = NULL;

    (void)state;
    assert_int_equal(cublaslt_lib_open(&lib, "/nonexistent/libcublasLt.so.13", &cause), -1);
    assert_non_null(cause);
    assert_string_equal(cause, "cuBLASLt not found: no /nonexistent/libcublasLt.so.13");
    assert_null(lib.dl);
    free(cause);
    cause = NULL;
    /* a library that loads and is not cuBLASLt */
    assert_int_equal(cublaslt_lib_open(&lib, "libm.so.6", &cause), -1);
    assert_non_null(cause);
    assert_non_null(strstr(cause, "libm.so.6 is not cuBLASLt: cublasLtCreate, "));
    assert_non_null(strstr(cause, "cublasLtGetVersion are missing"));
    assert_null(lib.dl);
    free(cause);
    cause = NULL;
    /* a file that is not a library */
    assert_int_equal(cublaslt_lib_open(&lib, TEST_SOURCE_DIR "/README.md", &cause), -1);
    assert_non_null(strstr(cause, "README.md is not a library that can be loaded: "));
    free(cause);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_statuses),      cmocka_unit_test(test_constants),
        cmocka_unit_test(test_layouts),       cmocka_unit_test(test_status_names),
        cmocka_unit_test(test_loader_absent),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
