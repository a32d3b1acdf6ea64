/* collect_snapshot with a borrowed NVML session: watch and serve reuse one helper process. */
#include "collect/collect.h"
#include "collect/nvml-session.h"
#include "util/timeutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include <cmocka.h>

#define SIM_LIB  TEST_BINARY_DIR "/sim/libnvidia-ml.so.1"
#define SCENARIO TEST_SOURCE_DIR "/scenarios/healthy-8xh100.json"

static void test_borrowed_session_survives_collections(void **state)
{
    struct collect_opts opts;
    struct nvml_session *ss;
    char *cause = NULL;
    pid_t helper;

    (void)state;
    setenv("NVML_SIM_SCENARIO", SCENARIO, 1);
    ss = nvml_session_open(SIM_LIB, &cause);
    assert_non_null(ss);
    memset(&opts, 0, sizeof(opts));
    opts.root = "/";
    opts.timeout_ms = 10000;
    opts.only = 1u << COLLECTOR_NVML;
    opts.nvml_session = ss;
    for (int round = 0; round < 3; round++) {
        struct snapshot *s = collect_snapshot(&opts, &cause);

        assert_non_null(s);
        assert_int_equal(s->collectors[COLLECTOR_NVML].state, CS_OK);
        assert_int_equal(s->n_gpus, 8);
        assert_true(gpu_valid(&s->gpus[0], GPU_S_MEM_TOTAL));
        if (round == 0)
            helper = nvml_session_pid(ss);
        /* The same helper answered every time, and is still there. */
        assert_int_not_equal(nvml_session_pid(ss), 0);
        assert_int_equal(nvml_session_pid(ss), helper);
        snapshot_free(s);
    }
    nvml_session_close(ss, time_mono_ms() + 1000);
}

static void test_owned_session_is_closed(void **state)
{
    struct collect_opts opts;
    struct snapshot *s;
    char *cause = NULL;

    (void)state;
    setenv("NVML_SIM_SCENARIO", SCENARIO, 1);
    memset(&opts, 0, sizeof(opts));
    opts.root = "/";
    opts.timeout_ms = 10000;
    opts.only = 1u << COLLECTOR_NVML;
    opts.nvml_lib = SIM_LIB;
    s = collect_snapshot(&opts, &cause);
    assert_non_null(s);
    assert_int_equal(s->collectors[COLLECTOR_NVML].state, CS_OK);
    assert_int_equal(s->n_gpus, 8);
    snapshot_free(s);
    /* Nothing left to reap: the helper exited and was waited for. */
    assert_int_equal(nvml_session_reap(), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_borrowed_session_survives_collections),
        cmocka_unit_test(test_owned_session_is_closed),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
