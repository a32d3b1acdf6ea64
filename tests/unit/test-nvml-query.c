/*
 * NVML queries in this process (no helper), against the simulator: the any-of fallbacks, the
 * call marks the helper's watched page relies on, and, under ASan, leaks of the helper's code.
 * Skipped when the simulator is not built.
 */
#include "collect/nvml-query.h"
#include "nvml/nvml-abi.h"
#include "util/xalloc.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#define SIM_LIB TEST_BINARY_DIR "/sim/libnvidia-ml.so.1"

static char scenario_path[64];

static void use_scenario(const char *text)
{
    FILE *f;
    int fd;

    if (scenario_path[0] != '\0')
        unlink(scenario_path); /* a test may write more than one */
    snprintf(scenario_path, sizeof(scenario_path), "/tmp/test-nvml-query-XXXXXX");
    fd = mkstemp(scenario_path);
    assert_true(fd >= 0);
    f = fdopen(fd, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
    setenv("NVML_SIM_SCENARIO", scenario_path, 1);
    setenv("NVML_SIM_QUIET", "1", 1);
}

static int setup(void **state)
{
    (void)state;
    if (access(SIM_LIB, R_OK) != 0) {
        print_message("simulator not built: %s\n", SIM_LIB);
        skip();
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    if (scenario_path[0] != '\0')
        unlink(scenario_path);
    scenario_path[0] = '\0';
    return 0;
}

/* What the mark hook saw: calls entered, calls left, and the pairing of the two. */
struct marks {
    int entered, left;
    bool in_call, nested;
    char last[64];
    int last_gpu;
    int init_seen, shutdown_seen, dlopen_seen;
};

static void mark(void *arg, const char *call, int gpu)
{
    struct marks *m = arg;

    if (call == NULL) {
        m->left++;
        if (!m->in_call)
            m->nested = true; /* a leave without an enter */
        m->in_call = false;
        return;
    }
    if (m->in_call)
        m->nested = true; /* an enter before the previous call left */
    m->in_call = true;
    m->entered++;
    snprintf(m->last, sizeof(m->last), "%s", call);
    m->last_gpu = gpu;
    m->init_seen += strcmp(call, "nvmlInit_v2") == 0;
    m->shutdown_seen += strcmp(call, "nvmlShutdown") == 0;
    m->dlopen_seen += strcmp(call, "dlopen") == 0;
}

static void free_gpus(struct gpu *g, size_t n)
{
    for (size_t i = 0; i < n; i++)
        gpu_free(&g[i]);
    free(g);
}

static const char scenario_fallbacks[] =
    "{\"schema\": \"gpudoctor.scenario/1\", \"system\": {\"driver_version\": \"550.54.15\"},"
    " \"gpus\": ["
    "  {\"index\": 0, \"name\": \"plain\", \"pci_bus_id\": \"00000000:18:00.0\","
    "   \"pci_device_id\": \"0x233010de\", \"pci_subsystem_id\": \"0x16c110de\","
    "   \"mem_total_bytes\": 1000, \"mem_reserved_bytes\": 100, \"mem_used_bytes\": 300,"
    "   \"mem_free_bytes\": 600, \"temp_c\": 50, \"clocks_event_reasons\": \"0x20\","
    "   \"pstate\": 2},"
    "  {\"index\": 1, \"name\": \"refusing\", \"pci_bus_id\": \"00000000:2A:00.0\","
    "   \"pci_device_id\": \"0x233010de\", \"pci_subsystem_id\": \"0x16c110de\","
    "   \"mem_total_bytes\": 1000, \"mem_reserved_bytes\": 100, \"mem_used_bytes\": 300,"
    "   \"mem_free_bytes\": 600, \"temp_c\": 51, \"clocks_event_reasons\": \"0x20\","
    "   \"pstate\": 3,"
    "   \"errors\": {\"nvmlDeviceGetMemoryInfo_v2\": \"ARGUMENT_VERSION_MISMATCH\","
    "              \"nvmlDeviceGetTemperatureV\": \"FUNCTION_NOT_FOUND\","
    "              \"nvmlDeviceGetPciInfo_v3\": \"FUNCTION_NOT_FOUND\"}}"
    "]}";

static void test_fallbacks(void **state)
{
    struct marks m = { 0 };
    struct nvml_system sys;
    struct nvml_query *q;
    struct gpu *g = NULL;
    size_t n = 0;

    (void)state;
    use_scenario(scenario_fallbacks);
    q = nvml_query_new(SIM_LIB, mark, &m);
    nvml_query_full(q, &sys, &g, &n);
    assert_int_equal(sys.init_rc, 0);
    assert_int_equal(n, 2);

    /* the newest symbols answer */
    assert_string_equal(g[0].pci_bus_id, "00000000:18:00.0");
    assert_int_equal(g[0].mem_used_bytes, 300);
    assert_int_equal(g[0].mem_reserved_bytes, 100);
    assert_int_equal(g[0].temp_c, 50);
    assert_int_equal(g[0].clocks_event_reasons, 0x20);
    assert_int_equal(g[0].pstate, 2);

    /*
     * Each refusal falls back to the older symbol of its group. (The simulator treats
     * ClocksEventReasons/ClocksThrottleReasons and PerformanceState/PowerState as one function
     * under two names, so those groups cannot be refused one symbol at a time here.)
     */
    assert_string_equal(g[1].pci_bus_id, "0000:2A:00.0"); /* the legacy 52-byte layout */
    assert_int_equal(g[1].pci_device_id, 0x233010de);
    assert_int_equal(g[1].temp_c, 51);
    assert_int_equal(g[1].clocks_event_reasons, 0x20);
    assert_int_equal(g[1].pstate, 3);
    /* v1 memory: total and free are right; v1 "used" includes reserved memory on a driver that
     * has _v2, so used and reserved stay unknown with the code _v2 gave */
    assert_int_equal(g[1].mem_total_bytes, 1000);
    assert_int_equal(g[1].mem_free_bytes, 600);
    assert_int_equal(g[1].rc[GPU_S_MEM_USED], NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
    assert_int_equal(g[1].rc[GPU_S_MEM_RESERVED], NVML_ERROR_ARGUMENT_VERSION_MISMATCH);

    /* every call was marked before it ran and after it returned, never nested */
    assert_int_equal(m.dlopen_seen, 1);
    assert_int_equal(m.init_seen, 1);
    assert_true(m.entered > 100);
    assert_int_equal(m.entered, m.left);
    assert_false(m.nested);
    assert_false(m.in_call);
    free_gpus(g, n);
    nvml_system_free(&sys);

    /* a sample asks only for the dynamic fields */
    m.entered = m.left = 0;
    nvml_query_sample(q, &g, &n);
    assert_int_equal(n, 2);
    assert_int_equal(g[0].temp_c, 50);
    assert_int_equal(g[0].rc[GPU_S_NAME], JF_RC_NOT_COLLECTED);
    assert_int_equal(g[0].rc[GPU_S_MEM_TOTAL], 0); /* comes with used/free in one call */
    assert_int_equal(g[0].rc[GPU_S_TEMP_SLOWDOWN], JF_RC_NOT_COLLECTED);
    assert_true(m.entered > 10 && m.entered < 60);
    free_gpus(g, n);

    nvml_query_free(q);
    assert_int_equal(m.shutdown_seen, 1);
    assert_int_equal(m.entered, m.left);
}

static void test_init_failure(void **state)
{
    struct marks m = { 0 };
    struct nvml_system sys;
    struct nvml_query *q;
    struct gpu *g = NULL;
    size_t n = 0;

    (void)state;
    use_scenario("{\"schema\": \"gpudoctor.scenario/1\","
                 " \"system\": {\"init_error\": \"DRIVER_NOT_LOADED\"}, \"gpus\": []}");
    q = nvml_query_new(SIM_LIB, mark, &m);
    nvml_query_full(q, &sys, &g, &n);
    assert_int_equal(sys.init_rc, NVML_ERROR_DRIVER_NOT_LOADED);
    assert_non_null(sys.init_error);
    assert_int_equal(sys.device_count_rc, JF_RC_NOT_COLLECTED);
    assert_int_equal(sys.driver_version_rc, JF_RC_NOT_COLLECTED);
    assert_int_equal(n, 0);
    assert_string_equal(m.last, "nvmlErrorString");
    free(g);
    nvml_system_free(&sys);
    nvml_query_sample(q, &g, &n);
    assert_int_equal(n, 0);
    assert_null(g);
    nvml_query_free(q);
    assert_int_equal(m.shutdown_seen, 0); /* never initialised, so never shut down */
}

/* Odd bytes in NVML strings become '?', so the JSON stays valid text. */
static void test_strings_cleaned(void **state)
{
    struct nvml_system sys;
    struct nvml_query *q;
    struct gpu *g = NULL;
    size_t n = 0;

    (void)state;
    use_scenario("{\"schema\": \"gpudoctor.scenario/1\", \"gpus\": [{\"index\": 0,"
                 " \"name\": \"caf\\u00e9 \\u0001GPU\\ttab\"}]}");
    q = nvml_query_new(SIM_LIB, NULL, NULL);
    nvml_query_full(q, &sys, &g, &n);
    assert_int_equal(n, 1);
    assert_string_equal(g[0].name, "caf?? ?GPU?tab");
    free_gpus(g, n);
    nvml_system_free(&sys);
    nvml_query_free(q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_fallbacks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_init_failure, setup, teardown),
        cmocka_unit_test_setup_teardown(test_strings_cleaned, setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
