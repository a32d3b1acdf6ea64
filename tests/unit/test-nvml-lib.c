/* NVML loading: driver version from the library's file name, version ranges, process strides. */
#include "collect/nvml-lib.h"
#include "snapshot/snap-gpu.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

static void expect_version(const char *path, const char *want)
{
    char *got = nvml_lib_version_from_path(path);

    if (want == NULL) {
        assert_null(got);
    } else {
        assert_non_null(got);
        assert_string_equal(got, want);
    }
    free(got);
}

static void test_version_from_path(void **state)
{
    (void)state;
    expect_version("/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.54.15", "550.54.15");
    expect_version("libnvidia-ml.so.535.104.05", "535.104.05");
    expect_version("/opt/x/libnvidia-ml.so.470.57", "470.57");
    /* sonames and development links carry no driver version */
    expect_version("/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1", NULL);
    expect_version("/usr/lib/libnvidia-ml.so", NULL);
    /* only the file name counts, and only a clean dotted number */
    expect_version("/libnvidia-ml.so.550.54.15/libfoo.so.1", NULL);
    expect_version("libnvidia-ml.so.550.54.15~rc1", NULL);
    expect_version("libnvidia-ml.so.550..15", NULL);
    expect_version("libnvidia-ml.so.550.54.", NULL);
    expect_version("libcuda.so.550.54.15", NULL);
    expect_version("", NULL);
    expect_version(NULL, NULL);
}

static void test_version_range(void **state)
{
    (void)state;
    assert_true(nvml_version_in_range("535.43.02", NVML_R535_V3_FIRST, NVML_R535_V3_LAST));
    assert_true(nvml_version_in_range("535.54.03", NVML_R535_V3_FIRST, NVML_R535_V3_LAST));
    assert_true(nvml_version_in_range("535.86.05", NVML_R535_V3_FIRST, NVML_R535_V3_LAST));
    /* numeric, not textual: 535.104.05 is after 535.86.05 */
    assert_false(nvml_version_in_range("535.104.05", NVML_R535_V3_FIRST, NVML_R535_V3_LAST));
    assert_false(nvml_version_in_range("535.98", NVML_R535_V3_FIRST, NVML_R535_V3_LAST));
    assert_false(nvml_version_in_range("535.43.01", NVML_R535_V3_FIRST, NVML_R535_V3_LAST));
    assert_false(nvml_version_in_range("530.30.02", NVML_R535_V3_FIRST, NVML_R535_V3_LAST));
    assert_false(nvml_version_in_range("550.54.15", NVML_R535_V3_FIRST, NVML_R535_V3_LAST));
    assert_false(nvml_version_in_range(NULL, NVML_R535_V3_FIRST, NVML_R535_V3_LAST));
    assert_false(nvml_version_in_range("garbage", NVML_R535_V3_FIRST, NVML_R535_V3_LAST));
    assert_false(nvml_version_in_range("535", NVML_R535_V3_FIRST, NVML_R535_V3_LAST));
}

static void test_process_stride(void **state)
{
    (void)state;
    /* facts 6a: the R535 window is the only place _v3 writes 32-byte records */
    assert_int_equal(nvml_process_stride(NVML_PROC_API_V3, "535.54.03"), 32);
    assert_int_equal(nvml_process_stride(NVML_PROC_API_V3, "535.43.02"), 32);
    assert_int_equal(nvml_process_stride(NVML_PROC_API_V3, "535.86.05"), 32);
    assert_int_equal(nvml_process_stride(NVML_PROC_API_V3, "535.104.05"), 24);
    assert_int_equal(nvml_process_stride(NVML_PROC_API_V3, "550.54.15"), 24);
    assert_int_equal(nvml_process_stride(NVML_PROC_API_V3, "510.39.01"), 24);
    assert_int_equal(nvml_process_stride(NVML_PROC_API_V3, NULL), 24);
    /* _v2 and the unversioned symbols never changed */
    assert_int_equal(nvml_process_stride(NVML_PROC_API_V2, "535.54.03"), 24);
    assert_int_equal(nvml_process_stride(NVML_PROC_API_V1, "535.54.03"), 16);
    assert_int_equal(nvml_process_stride(NVML_PROC_API_V1, NULL), 16);
}

static void test_required_tier(void **state)
{
    struct nvml_lib lib;
    char *missing;

    (void)state;
    memset(&lib, 0, sizeof(lib));
    missing = nvml_lib_missing_required(&lib);
    assert_non_null(missing);
    assert_string_equal(missing, "nvmlInit_v2 (or nvmlInit), nvmlShutdown, nvmlDeviceGetCount_v2 "
                                 "(or nvmlDeviceGetCount), nvmlDeviceGetHandleByIndex_v2 (or "
                                 "nvmlDeviceGetHandleByIndex), nvmlErrorString");
    free(missing);

    /* the older symbol of a group is enough; optional symbols are never required */
    lib.sym[NVML_SYM_nvmlInit] = &lib;
    lib.sym[NVML_SYM_nvmlShutdown] = &lib;
    lib.sym[NVML_SYM_nvmlDeviceGetCount_v2] = &lib;
    lib.sym[NVML_SYM_nvmlDeviceGetHandleByIndex] = &lib;
    missing = nvml_lib_missing_required(&lib);
    assert_non_null(missing);
    assert_string_equal(missing, "nvmlErrorString");
    free(missing);
    lib.sym[NVML_SYM_nvmlErrorString] = &lib;
    assert_null(nvml_lib_missing_required(&lib));
}

static void test_symbol_names(void **state)
{
    (void)state;
    assert_string_equal(nvml_sym_names[NVML_SYM_nvmlInit_v2], "nvmlInit_v2");
    assert_string_equal(nvml_sym_names[NVML_SYM_nvmlDeviceGetComputeRunningProcesses_v3],
                        "nvmlDeviceGetComputeRunningProcesses_v3");
    assert_string_equal(nvml_sym_names[NVML_SYM_nvmlErrorString], "nvmlErrorString");
    for (size_t i = 0; i < NVML_SYM__COUNT; i++) {
        assert_non_null(nvml_sym_names[i]);
        assert_memory_equal(nvml_sym_names[i], "nvml", 4);
    }
}

static void test_open_missing(void **state)
{
    struct nvml_system sys;
    struct nvml_lib lib;

    (void)state;
    memset(&sys, 0, sizeof(sys));
    assert_int_equal(nvml_lib_open(&lib, "/nonexistent/libnvidia-ml.so.1", &sys), -1);
    assert_int_equal(sys.load_error, 12); /* NVML_ERROR_LIBRARY_NOT_FOUND */
    assert_string_equal(sys.library, "/nonexistent/libnvidia-ml.so.1");
    assert_non_null(sys.load_detail);
    assert_non_null(strstr(sys.load_detail, "/nonexistent/libnvidia-ml.so.1"));
    assert_null(lib.dl);
    nvml_system_free(&sys);
}

static void test_open_not_nvml(void **state)
{
    struct nvml_system sys;
    struct nvml_lib lib;

    (void)state;
    /* a real library that is not NVML: loads, exports nothing of NVML's (not "not installed") */
    memset(&sys, 0, sizeof(sys));
    assert_int_equal(nvml_lib_open(&lib, "libm.so.6", &sys), -1);
    assert_int_equal(sys.load_error, 13); /* NVML_ERROR_FUNCTION_NOT_FOUND */
    assert_non_null(sys.library);
    assert_non_null(strstr(sys.library, "libm"));
    assert_non_null(strstr(sys.load_detail, "libm"));
    assert_non_null(strstr(sys.load_detail, " is not NVML: it exports none of NVML's functions"));
    assert_null(sys.library_version);
    assert_null(lib.dl);
    nvml_system_free(&sys);
}

static void test_open_not_a_library(void **state)
{
    struct nvml_system sys;
    struct nvml_lib lib;
    char path[] = "/tmp/gpudoctor-test-nvml-XXXXXX";
    int fd = mkstemp(path);

    (void)state;
    /* a file that is there but is no library: not "not installed" either */
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "not ELF\n", 8), 8);
    close(fd);
    memset(&sys, 0, sizeof(sys));
    assert_int_equal(nvml_lib_open(&lib, path, &sys), -1);
    assert_int_equal(sys.load_error, 999); /* NVML_ERROR_UNKNOWN */
    assert_non_null(strstr(sys.load_detail, " is not a library that can be loaded: "));
    assert_null(lib.dl);
    nvml_system_free(&sys);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version_from_path), cmocka_unit_test(test_version_range),
        cmocka_unit_test(test_process_stride),    cmocka_unit_test(test_required_tier),
        cmocka_unit_test(test_symbol_names),      cmocka_unit_test(test_open_missing),
        cmocka_unit_test(test_open_not_nvml),     cmocka_unit_test(test_open_not_a_library),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
