/*
 * The CUDA worker's steps for people (src/snapshot/bench-steps.c): every step the worker writes
 * is recognised (its GPU words and WHAT), values carried over, and anything else, or a step with
 * more after it, is left to be shown as it is (NULL). Without a catalogue the words are the
 * English ones, so what is checked is the recognising, not a language.
 */
#include "snapshot/bench-steps.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static void step_is(const char *step, const char *want)
{
    char *got = bench_step_l(step);
    const char *shown = step != NULL ? step : "(null)";

    if (want == NULL) {
        if (got != NULL)
            fail_msg("'%s' gave '%s', want NULL", shown, got);
    } else {
        if (got == NULL)
            fail_msg("'%s' gave NULL, want '%s'", shown, want);
        assert_string_equal(got, want);
    }
    free(got);
}

static void test_fixed_steps(void **state)
{
    static const char *const whats[] = {
        BENCH_STEP_CONTEXT,  BENCH_STEP_ALLOC,    BENCH_STEP_H2D,      BENCH_STEP_D2H,
        BENCH_STEP_PAGEABLE, BENCH_STEP_BIDIR,    BENCH_STEP_D2D,      BENCH_STEP_KERNELS,
        BENCH_STEP_TRIAD,    BENCH_STEP_CHECKSUM, BENCH_STEP_FMA,      BENCH_STEP_LT_HANDLE,
        BENCH_STEP_PEER,     BENCH_STEP_DRIVER,   BENCH_STEP_CUBLASLT, BENCH_STEP_REPORTING,
    };
    char step[256], want[256];

    (void)state;
    for (size_t i = 0; i < sizeof(whats) / sizeof(whats[0]); i++) {
        snprintf(step, sizeof(step), "gpu 3: %s", whats[i]);
        snprintf(want, sizeof(want), "GPU 3: %s", whats[i]);
        step_is(step, want);
        step_is(whats[i], whats[i]);
    }
    step_is("gpus 0 -> 1: " BENCH_STEP_PEER, "GPU 0 -> GPU 1: " BENCH_STEP_PEER);
}

static void test_steps_with_values(void **state)
{
    char step[256];

    (void)state;
    snprintf(step, sizeof(step), "gpu %d: " BENCH_STEP_GEMM, 1, "FP16");
    step_is(step, "GPU 1: cuBLASLt FP16 GEMM (cublasLtMatmul)");
    snprintf(step, sizeof(step), "gpu %d: " BENCH_STEP_GEMM_BUFFER, 2, 8192u, 8192u);
    step_is(step, "GPU 2: GEMM buffers (cuMemAlloc_v2, 8192 x 8192)");
    snprintf(step, sizeof(step), BENCH_STEP_LOAD, "s", "0,1,2,3,4,5,6,7", 30.0);
    step_is(step, "sustained load on GPUs 0,1,2,3,4,5,6,7 at once (30.0 s)");
    snprintf(step, sizeof(step), BENCH_STEP_LOAD, "", "5", 2.5);
    step_is(step, "sustained load on GPUs 5 at once (2.5 s)");
    /* a CUDA call's name is a step of its own, the same in every language */
    step_is("cuInit", "cuInit");
    step_is("gpu 4: cuDeviceGetName", "GPU 4: cuDeviceGetName");
}

static void test_not_a_step(void **state)
{
    (void)state;
    step_is(NULL, NULL);
    step_is("", NULL);
    step_is("gpu 3: something else", NULL);
    step_is("gpu 3: context and more", NULL);
    step_is("gpu x: context", NULL);
    step_is("gpu 1: cuBLASLt FP16 GEMM (cublasLtMatmul) then", NULL);
    step_is("gpu 1: cuBLASLt fp16; rm -rf / GEMM (cublasLtMatmul)", NULL);
    step_is("sustained load on GPUs 0,1 at once (30.0 s) and more", NULL);
    step_is("sustained load on GPUs $(reboot) at once (30.0 s)", NULL);
    step_is("cuInit; reboot", NULL);
}

static void test_detail(void **state)
{
    char detail[128], *got;

    (void)state;
    snprintf(detail, sizeof(detail), BENCH_DETAIL_TIMEOUT, 720.0);
    got = bench_detail_l(detail);
    assert_non_null(got);
    assert_string_equal(got, "the CUDA worker did not finish within 720 s");
    free(got);
    snprintf(detail, sizeof(detail), BENCH_DETAIL_INTERRUPTED, "SIGTERM");
    got = bench_detail_l(detail);
    assert_non_null(got);
    assert_string_equal(got, "interrupted by SIGTERM: the CUDA worker was ended");
    free(got);
    snprintf(detail, sizeof(detail), BENCH_DETAIL_KILLED, 9, "gpu 2: " BENCH_STEP_TRIAD);
    got = bench_detail_l(detail);
    assert_non_null(got);
    assert_string_equal(got,
                        "the CUDA worker was killed by signal 9 during: GPU 2: " BENCH_STEP_TRIAD);
    free(got);
    snprintf(detail, sizeof(detail), BENCH_DETAIL_ENDED, BENCH_STEP_STARTUP);
    got = bench_detail_l(detail);
    assert_non_null(got);
    assert_string_equal(got, "the CUDA worker ended without a result during: start-up");
    free(got);
    /* a step that is not the worker's is shown as it is, inside the translated sentence */
    got = bench_detail_l("the CUDA worker ended without a result during: \x1b[31m");
    assert_non_null(got);
    assert_string_equal(got, "the CUDA worker ended without a result during: \x1b[31m");
    free(got);
    assert_null(bench_detail_l("interrupted by SIGKILL: the CUDA worker was ended"));
    assert_null(bench_detail_l("the CUDA worker was killed by signal x during: cuInit"));
    assert_null(bench_detail_l(NULL));
    assert_null(bench_detail_l("the CUDA worker did not finish within s"));
    assert_null(bench_detail_l("the CUDA worker did not finish within 720 s, twice"));
    assert_null(bench_detail_l("cuInit: CUDA_ERROR_NO_DEVICE"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixed_steps),
        cmocka_unit_test(test_steps_with_values),
        cmocka_unit_test(test_not_a_step),
        cmocka_unit_test(test_detail),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
