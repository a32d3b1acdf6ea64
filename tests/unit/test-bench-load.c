/*
 * The readings bench takes during the sustained load (src/bench/sample.c): what one GPU's
 * readings add up to, fields NVML did not give left out, and the bench section's JSON round
 * trip of the load fields.
 */
#include "bench/bench.h"
#include "nvml/nvml-abi.h"
#include "util/xalloc.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static struct gpu reading(uint32_t sm, uint32_t mem, uint32_t temp, uint32_t mw, uint64_t reasons)
{
    struct gpu g;

    gpu_init(&g, 0);
    g.clock_sm_mhz = sm;
    g.clock_mem_mhz = mem;
    g.temp_c = temp;
    g.power_mw = mw;
    g.clocks_event_reasons = reasons;
    gpu_set_rc(&g, GPU_S_CLOCK_SM, 0);
    gpu_set_rc(&g, GPU_S_CLOCK_MEM, 0);
    gpu_set_rc(&g, GPU_S_TEMP, 0);
    gpu_set_rc(&g, GPU_S_POWER, 0);
    gpu_set_rc(&g, GPU_S_EVENT_REASONS, 0);
    return g;
}

static void test_readings(void **state)
{
    struct bench_load a = { 0 };
    struct bench_gpu bg = { 0 };
    struct gpu r1 = reading(1980, 2619, 61, 690000, 0);
    struct gpu r2 = reading(1410, 2619, 88, 700000, NVML_CLOCKS_EVENT_SW_THERMAL);
    struct gpu r3 = reading(1755, 2600, 84, 500000, NVML_CLOCKS_EVENT_SW_POWER_CAP);
    struct gpu lost = reading(0, 0, 0, 0, 0);

    (void)state;
    lost.handle_rc = 15; /* GPU_IS_LOST: not a reading */
    bench_load_add(&a, &r1);
    bench_load_add(&a, &r2);
    bench_load_add(&a, &lost);
    bench_load_add(&a, &r3);
    bench_load_fill(&bg, &a);
    assert_int_equal(bg.load_samples, 3);
    assert_int_equal(bg.load_clock_sm_min_mhz, 1410);
    assert_int_equal(bg.load_clock_sm_max_mhz, 1980);
    assert_int_equal(bg.load_clock_mem_min_mhz, 2600);
    assert_int_equal(bg.load_clock_mem_max_mhz, 2619);
    assert_int_equal(bg.load_temp_max_c, 88);
    assert_int_equal(bg.load_power_max_mw, 700000);
    assert_int_equal(bg.load_power_mean_mw, 630000);
    assert_int_equal(bg.load_clocks_event_reasons,
                     NVML_CLOCKS_EVENT_SW_THERMAL | NVML_CLOCKS_EVENT_SW_POWER_CAP);
    assert_true(bench_gpu_valid(&bg, BG_LOAD_SAMPLES) && bench_gpu_valid(&bg, BG_LOAD_CLOCK_SM) &&
                bench_gpu_valid(&bg, BG_LOAD_CLOCK_MEM) && bench_gpu_valid(&bg, BG_LOAD_TEMP) &&
                bench_gpu_valid(&bg, BG_LOAD_POWER) && bench_gpu_valid(&bg, BG_LOAD_REASONS));
    gpu_free(&r1);
    gpu_free(&r2);
    gpu_free(&r3);
    gpu_free(&lost);
}

/* A field NVML never gave stays unknown (null), never 0; the count says how many readings. */
static void test_missing_fields(void **state)
{
    struct bench_load a = { 0 };
    struct bench_gpu bg = { 0 };
    struct gpu r = reading(1980, 2619, 61, 690000, 0);

    (void)state;
    gpu_set_rc(&r, GPU_S_POWER, 3);         /* NOT_SUPPORTED */
    gpu_set_rc(&r, GPU_S_EVENT_REASONS, 4); /* NO_PERMISSION */
    bench_load_add(&a, &r);
    bench_load_add(&a, &r);
    bench_load_fill(&bg, &a);
    assert_int_equal(bg.load_samples, 2);
    assert_true(bench_gpu_valid(&bg, BG_LOAD_TEMP));
    assert_false(bench_gpu_valid(&bg, BG_LOAD_POWER));
    assert_false(bench_gpu_valid(&bg, BG_LOAD_REASONS));
    gpu_free(&r);

    /* no reading at all: 0 readings, every figure unknown */
    memset(&a, 0, sizeof(a));
    memset(&bg, 0, sizeof(bg));
    bench_load_fill(&bg, &a);
    assert_true(bench_gpu_valid(&bg, BG_LOAD_SAMPLES));
    assert_int_equal(bg.load_samples, 0);
    assert_false(bench_gpu_valid(&bg, BG_LOAD_CLOCK_SM));
    assert_false(bench_gpu_valid(&bg, BG_LOAD_TEMP));
}

static void test_json_round_trip(void **state)
{
    struct bench_info b = { .state = BENCH_OK }, back = { 0 };
    struct bench_gpu *g;
    struct jerr err = { "", "" };
    json_t *j, *jg;

    (void)state;
    b.gpus = xcalloc(1, sizeof(*b.gpus));
    b.n_gpus = 1;
    b.load_note = xstrdup("NVML stopped answering during the load, sampling ended: x");
    g = &b.gpus[0];
    g->load_samples = 12;
    g->load_clock_sm_min_mhz = 1410;
    g->load_clock_sm_max_mhz = 1980;
    g->load_clocks_event_reasons = 0x60;
    bench_gpu_set(g, BG_LOAD_SAMPLES);
    bench_gpu_set(g, BG_LOAD_CLOCK_SM);
    bench_gpu_set(g, BG_LOAD_REASONS);
    j = bench_info_to_json(&b);
    jg = json_array_get(json_object_get(j, "gpus"), 0);
    assert_string_equal(json_string_value(json_object_get(jg, "load_clocks_event_reasons")),
                        "0x0000000000000060");
    assert_true(json_is_null(json_object_get(jg, "load_temp_max_c")));
    assert_int_equal(bench_info_from_json(&back, j, "bench", &err), 0);
    assert_int_equal(back.gpus[0].load_samples, 12);
    assert_int_equal(back.gpus[0].load_clock_sm_min_mhz, 1410);
    assert_int_equal(back.gpus[0].load_clocks_event_reasons, 0x60);
    assert_false(bench_gpu_valid(&back.gpus[0], BG_LOAD_TEMP));
    assert_string_equal(back.load_note, b.load_note);
    json_decref(j);
    bench_info_free(&b);
    bench_info_free(&back);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_readings),
        cmocka_unit_test(test_missing_fields),
        cmocka_unit_test(test_json_round_trip),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
