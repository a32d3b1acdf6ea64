/* GPU architectures and the CUDA toolkits that compile for them (data/cuda-arch.tsv): which code
 * runs on which GPU, and the verdict on a build of a CUDA version for a GPU's capability. */
#include "data/cudaarch.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

static void test_table(void **state)
{
    (void)state;
    assert_true(cuda_arch_n_rows >= 20);
    for (size_t i = 1; i < cuda_arch_n_rows; i++)
        assert_true(cuda_arch_rows[i - 1].cc < cuda_arch_rows[i].cc);
    /* rows checked against the sources the TSV names */
    assert_int_equal(cuda_arch_find(86)->first, 111);
    assert_int_equal(cuda_arch_find(90)->first, 118);
    assert_int_equal(cuda_arch_find(120)->first, 128);
    assert_int_equal(cuda_arch_find(37)->removed, 120);
    assert_int_equal(cuda_arch_find(70)->removed, 130);
    assert_int_equal(cuda_arch_find(75)->removed, 0);
    assert_true(cuda_arch_find(87)->tegra);
    assert_false(cuda_arch_find(89)->tegra);
    assert_null(cuda_arch_find(130));
    assert_null(cuda_arch_find(0));
}

static void test_runs_on(void **state)
{
    (void)state;
    /* the same major, an equal or higher minor */
    assert_true(cuda_arch_runs_on(cuda_arch_find(80), cuda_arch_find(86)));
    assert_true(cuda_arch_runs_on(cuda_arch_find(86), cuda_arch_find(89)));
    assert_false(cuda_arch_runs_on(cuda_arch_find(86), cuda_arch_find(80)));
    assert_false(cuda_arch_runs_on(cuda_arch_find(90), cuda_arch_find(120)));
    /* Tegra: its own capability only; 10.1 was renamed 11.0 */
    assert_false(cuda_arch_runs_on(cuda_arch_find(80), cuda_arch_find(87)));
    assert_false(cuda_arch_runs_on(cuda_arch_find(70), cuda_arch_find(72)));
    assert_false(cuda_arch_runs_on(cuda_arch_find(100), cuda_arch_find(110)));
    assert_null(cuda_arch_find(101)); /* no source for its first toolkit: not judged */
    assert_null(cuda_arch_find(88));
}

static void test_verdicts(void **state)
{
    static const struct {
        const char *cuda;
        int cc;
        enum cuda_arch_verdict v;
        int need;
    } cases[] = {
        /* a GPU newer than the toolkit */
        { "12.4", 120, CUDA_ARCH_TOO_NEW, 128 },
        { "11.7", 90, CUDA_ARCH_TOO_NEW, 118 },
        { "10.2", 86, CUDA_ARCH_TOO_NEW, 110 },
        { "11.3", 87, CUDA_ARCH_TOO_NEW, 114 },
        /* supported, also through an older minor's code */
        { "12.8", 120, CUDA_ARCH_OK, 128 },
        { "12.8.93", 121, CUDA_ARCH_OK, 128 },
        { "11.0", 86, CUDA_ARCH_OK, 110 },
        { "11.7", 89, CUDA_ARCH_OK, 110 },
        { "12.9", 70, CUDA_ARCH_OK, 90 },
        { "11.8", 37, CUDA_ARCH_OK, 60 },
        { "10.2", 30, CUDA_ARCH_OK, 60 },
        /* a GPU the toolkit dropped */
        { "13.0", 70, CUDA_ARCH_TOO_OLD, 90 },
        { "13.0", 61, CUDA_ARCH_TOO_OLD, 80 },
        { "12.1", 37, CUDA_ARCH_TOO_OLD, 60 },
        { "11.0", 30, CUDA_ARCH_TOO_OLD, 60 },
        { "9.0", 20, CUDA_ARCH_TOO_OLD, 30 },
        /* a major alone: judged where every minor agrees */
        { "12", 70, CUDA_ARCH_OK, 90 },
        { "13", 61, CUDA_ARCH_TOO_OLD, 80 },
        { "12", 37, CUDA_ARCH_TOO_OLD, 60 },
        { "12", 120, CUDA_ARCH_UNKNOWN, 128 },
        /* what the table does not know */
        { "12.4", 130, CUDA_ARCH_UNKNOWN, 0 },
        { "8.0", 21, CUDA_ARCH_UNKNOWN, 0 },
        { "abc", 86, CUDA_ARCH_UNKNOWN, 0 },
        { "", 86, CUDA_ARCH_UNKNOWN, 0 },
        { NULL, 86, CUDA_ARCH_UNKNOWN, 0 },
        { "12.10", 86, CUDA_ARCH_UNKNOWN, 0 },
        { "12abc", 86, CUDA_ARCH_UNKNOWN, 0 },
        { "64_101", 70, CUDA_ARCH_UNKNOWN, 0 },
        { "12.4abc", 86, CUDA_ARCH_UNKNOWN, 0 },
        /* Tegra: their own capability only */
        { "12.6", 110, CUDA_ARCH_TOO_NEW, 130 },
        { "13.0", 110, CUDA_ARCH_OK, 130 },
        { "11.4", 87, CUDA_ARCH_OK, 114 },
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int need = -1;
        enum cuda_arch_verdict v = cuda_arch_check(cases[i].cuda, cases[i].cc, &need);

        if (v != cases[i].v || (cases[i].v != CUDA_ARCH_UNKNOWN && need != cases[i].need))
            fail_msg("CUDA %s on %d: verdict %d need %d, expected %d need %d",
                     cases[i].cuda ? cases[i].cuda : "(null)", cases[i].cc, v, need, cases[i].v,
                     cases[i].need);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_runs_on),
        cmocka_unit_test(test_verdicts),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
