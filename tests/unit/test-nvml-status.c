/* What each NVML outcome becomes in the collector status: state, sentence, notes. */
#include "collect/nvml-status.h"
#include "nvml/nvml-abi.h"
#include "snapshot/snapshot.h"
#include "util/xalloc.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static void contains(const char *text, const char *want)
{
    assert_non_null(text);
    if (strstr(text, want) == NULL)
        fail_msg("\"%s\" does not contain \"%s\"", text, want);
}

struct judged {
    struct nvml_system sys;
    struct gpu gpus[3];
    size_t n;
    struct collector_status c;
};

static void setup_ok(struct judged *j, size_t n)
{
    memset(j, 0, sizeof(*j));
    j->sys.attempted = true;
    j->sys.library = xstrdup("/usr/lib/libnvidia-ml.so.550.54.15");
    j->sys.library_version = xstrdup("550.54.15");
    j->sys.device_count = (uint32_t)n;
    j->n = n;
    for (size_t i = 0; i < n; i++) {
        gpu_init(&j->gpus[i], (uint32_t)i);
        for (size_t s = 0; s < GPU_S__COUNT; s++)
            j->gpus[i].rc[s] = 0;
    }
}

static void teardown(struct judged *j)
{
    nvml_system_free(&j->sys);
    for (size_t i = 0; i < j->n; i++)
        gpu_free(&j->gpus[i]);
    free(j->c.detail);
    for (size_t i = 0; i < j->c.n_notes; i++)
        free(j->c.notes[i]);
    free(j->c.notes);
}

static bool judge(struct judged *j)
{
    return nvml_status_judge(&j->sys, j->gpus, j->n, &j->c);
}

static void test_library_missing(void **state)
{
    struct judged j;

    (void)state;
    setup_ok(&j, 0);
    free(j.sys.library);
    j.sys.library = xstrdup("libnvidia-ml.so.1");
    j.sys.load_error = NVML_ERROR_LIBRARY_NOT_FOUND;
    assert_false(judge(&j));
    assert_int_equal(j.c.state, CS_UNAVAILABLE);
    assert_string_equal(j.c.detail, "NVIDIA driver not installed: cannot load libnvidia-ml.so.1");
    teardown(&j);
}

static void test_not_nvml(void **state)
{
    struct judged j;

    (void)state;
    setup_ok(&j, 0);
    j.sys.load_error = NVML_ERROR_FUNCTION_NOT_FOUND;
    j.sys.load_detail = xstrdup("x does not export nvmlShutdown");
    assert_false(judge(&j));
    assert_int_equal(j.c.state, CS_FAILED);
    contains(j.c.detail, "is not a usable NVML library: x does not export nvmlShutdown");
    teardown(&j);
}

static void expect_init(int32_t rc, const char *error, const char *want)
{
    struct judged j;

    setup_ok(&j, 0);
    j.sys.init_rc = rc;
    j.sys.init_error = error ? xstrdup(error) : NULL;
    assert_false(judge(&j));
    assert_int_equal(j.c.state, CS_FAILED);
    contains(j.c.detail, want);
    if (error != NULL)
        contains(j.c.detail, error);
    teardown(&j);
}

static void test_init_errors(void **state)
{
    (void)state;
    expect_init(NVML_ERROR_DRIVER_NOT_LOADED, "Driver Not Loaded",
                "the NVIDIA kernel module is not loaded (nvmlInit: DRIVER_NOT_LOADED: ");
    expect_init(NVML_ERROR_LIB_RM_VERSION_MISMATCH, NULL,
                "driver/library version mismatch: the NVML library "
                "/usr/lib/libnvidia-ml.so.550.54.15 (version 550.54.15) does not match the "
                "loaded kernel module");
    expect_init(NVML_ERROR_NO_PERMISSION, "Insufficient Permissions",
                "no permission to use the NVIDIA driver");
    expect_init(NVML_ERROR_UNKNOWN, "NVML simulator: s.json:3:7: bad",
                "NVML could not be initialised (nvmlInit: UNKNOWN: NVML simulator: s.json:3:7");
    expect_init(1234, NULL, "(nvmlInit: an unknown error)");
}

static void test_count_error(void **state)
{
    struct judged j;

    (void)state;
    setup_ok(&j, 0);
    j.sys.device_count_rc = NVML_ERROR_NO_PERMISSION;
    assert_false(judge(&j));
    assert_int_equal(j.c.state, CS_FAILED);
    assert_string_equal(j.c.detail, "NVML cannot count the GPUs (nvmlDeviceGetCount: "
                                    "NO_PERMISSION)");
    teardown(&j);
}

static void test_no_gpu(void **state)
{
    struct judged j;

    (void)state;
    setup_ok(&j, 0);
    assert_false(judge(&j)); /* nothing to sample */
    assert_int_equal(j.c.state, CS_OK);
    assert_string_equal(j.c.detail, "NVML reports no GPU");
    teardown(&j);
}

static void test_fields_are_data(void **state)
{
    struct judged j;

    (void)state;
    setup_ok(&j, 2);
    /* per-field codes do not make the collector partial */
    j.gpus[0].rc[GPU_S_POWER] = NVML_ERROR_NO_PERMISSION;
    j.gpus[1].rc[GPU_S_FAN] = NVML_ERROR_NOT_SUPPORTED;
    j.gpus[1].rc[GPU_S_ECC_VOL_CORR] = NVML_ERROR_UNKNOWN;
    assert_true(judge(&j));
    assert_int_equal(j.c.state, CS_OK);
    assert_null(j.c.detail);
    assert_int_equal(j.c.n_notes, 0);
    teardown(&j);
}

static void test_lost_gpus(void **state)
{
    struct judged j;

    (void)state;
    setup_ok(&j, 3);
    j.gpus[1].handle_rc = NVML_ERROR_GPU_IS_LOST;
    j.gpus[2].pci_bus_id = xstrdup("00000000:3B:00.0");
    j.gpus[2].rc[GPU_S_POWER] = NVML_ERROR_GPU_IS_LOST;
    assert_true(judge(&j));
    assert_int_equal(j.c.state, CS_PARTIAL);
    assert_int_equal(j.c.n_notes, 2);
    assert_string_equal(j.c.notes[0], "GPU 1 has fallen off the bus or is otherwise inaccessible "
                                      "(nvmlDeviceGetHandleByIndex: GPU_IS_LOST)");
    assert_string_equal(j.c.notes[1], "GPU 2 (00000000:3B:00.0) fell off the bus during "
                                      "collection (nvmlDeviceGetPowerUsage: GPU_IS_LOST)");
    assert_string_equal(nvml_status_lost_field(&j.gpus[2])->name, "power_mw");
    assert_null(nvml_status_lost_field(&j.gpus[0]));
    teardown(&j);
}

static void test_inaccessible_gpu(void **state)
{
    struct judged j;

    (void)state;
    setup_ok(&j, 1);
    j.gpus[0].handle_rc = NVML_ERROR_NO_PERMISSION;
    assert_true(judge(&j));
    assert_int_equal(j.c.state, CS_PARTIAL);
    assert_int_equal(j.c.n_notes, 1);
    assert_string_equal(j.c.notes[0], "GPU 0 cannot be opened by this user "
                                      "(nvmlDeviceGetHandleByIndex: NO_PERMISSION)");
    teardown(&j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_library_missing), cmocka_unit_test(test_not_nvml),
        cmocka_unit_test(test_init_errors),     cmocka_unit_test(test_count_error),
        cmocka_unit_test(test_no_gpu),          cmocka_unit_test(test_fields_are_data),
        cmocka_unit_test(test_lost_gpus),       cmocka_unit_test(test_inaccessible_gpu),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
