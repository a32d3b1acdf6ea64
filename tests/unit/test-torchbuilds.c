/* The CUDA builds of today's PyTorch releases (data/torch-builds.tsv): the rows as PyTorch's
 * PYTORCH_RELEASES_CODE_CC gives them, the wheel index the fix names for a GPU, and the generator
 * refusing a table it cannot vouch for (an index that is not its CUDA's, capabilities out of
 * order). */
#include "data/cudaarch.h"
#include "data/torchbuilds.h"
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

#include "tsv2c-run.h"

static void test_table(void **state)
{
    static const struct {
        const char *cuda;
        int version;
        const char *index;
        int ccs[TORCH_BUILD_MAX_CCS + 1];
    } want[] = {
        { "12.6", 126, "cu126", { 50, 60, 70, 80, 86, 90, 0 } },
        { "12.8", 128, "cu128", { 70, 80, 86, 90, 100, 120, 0 } },
        { "13.0", 130, "cu130", { 75, 80, 86, 90, 100, 110, 120, 0 } },
    };

    (void)state;
    assert_int_equal(torch_build_n_rows, sizeof(want) / sizeof(want[0]));
    for (size_t i = 0; i < torch_build_n_rows; i++) {
        const struct torch_build *b = &torch_build_rows[i];
        char index[16];
        size_t n = 0;

        assert_string_equal(b->cuda, want[i].cuda);
        assert_string_equal(b->index, want[i].index);
        assert_string_equal(b->source, "pytorch");
        assert_int_equal(b->version, want[i].version);
        if (i > 0)
            assert_true(torch_build_rows[i - 1].version < b->version); /* by CUDA version */
        snprintf(index, sizeof(index), "cu%d", b->version); /* "cu" + the digits of its CUDA */
        assert_string_equal(b->index, index);
        for (; b->ccs[n] != 0; n++) {
            assert_int_equal(b->ccs[n], want[i].ccs[n]);
            assert_non_null(cuda_arch_find(b->ccs[n])); /* a capability cuda-arch.tsv knows */
            if (n > 0)
                assert_true(b->ccs[n - 1] < b->ccs[n]);
        }
        assert_int_equal(want[i].ccs[n], 0);
        assert_true(n >= 1 && n <= TORCH_BUILD_MAX_CCS);
    }
}

static void test_for(void **state)
{
    static const struct {
        int cc;
        const char *index; /* NULL: no build of today runs on it */
    } cases[] = {
        /* the oldest build whose code runs on the GPU */
        { 50, "cu126" },
        { 52, "cu126" }, /* 5.0 code on a 5.2 GPU */
        { 61, "cu126" }, /* Pascal: gone from cu128 and cu130 */
        { 75, "cu126" }, /* 7.0 code on a Turing */
        { 89, "cu126" }, /* 8.6 code on an Ada */
        { 90, "cu126" },
        { 100, "cu128" },
        { 103, "cu128" }, /* 10.0 code on a 10.3 GPU */
        { 120, "cu128" }, /* an RTX 5090 */
        { 121, "cu128" }, /* 12.0 code on a GB10 */
        { 110, "cu130" }, /* Tegra: its own capability only, in cu130 alone */
        /* none of today's */
        { 37, NULL }, /* Kepler */
        { 20, NULL },
        { 53, NULL }, /* Tegra capabilities no build carries */
        { 72, NULL },
        { 87, NULL },
        /* capabilities cuda-arch.tsv does not know */
        { 101, NULL },
        { 130, NULL },
        { 0, NULL },
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct torch_build *b = torch_build_for(cases[i].cc);

        if (cases[i].index == NULL ? b != NULL : b == NULL || strcmp(b->index, cases[i].index) != 0)
            fail_msg("capability %d: %s, expected %s", cases[i].cc, b ? b->index : "none",
                     cases[i].index ? cases[i].index : "none");
    }
}

static void test_generator_rejects_bad_tables(void **state)
{
    static const char header[] = "cuda\tindex\tcc\tsource\n";
    static const struct {
        const char *rows;
        const char *want;
    } bad[] = {
        { "12.6\tcu128\t5.0\tpytorch\n", "table.tsv:2: column 'index': 'cu128' is not cu126" },
        { "12.8\tcu128\t7.0\tpytorch\n12.6\tcu126\t5.0\tpytorch\n",
          "table.tsv:3: column 'cuda': 12.6 after a higher one" },
        { "12\tcu12\t5.0\tpytorch\n", "column 'cuda': '12' is not a CUDA version" },
        { "12.6\tcu126\t6.0 5.0\tpytorch\n", "column 'cc': 5.0 after a higher one" },
        { "12.6\tcu126\t50 60\tpytorch\n", "column 'cc': '50' is not a compute capability" },
        { "12.6\tcu126\t5.0,6.0\tpytorch\n", "column 'cc': '5.0,6.0' is not" },
        { "12.6\tcu126\t\tpytorch\n", "column 'cc': '' is not" },
        { "12.6\tcu126\t5.0 6.0 7.0 8.0 8.6 9.0 10.0 12.0\tpytorch\n",
          "column 'cc': more than 7 capabilities" },
        { "12.6\tcu126\t5.0\t\n", "column 'source' must not be empty" },
    };
    char out[4096], *table;

    (void)state;
    table = xasprintf("%s12.6\tcu126\t5.0 6.0\tpytorch\n13.0\tcu130\t7.5\tpytorch\n", header);
    assert_int_equal(run_tsv2c("torchbuilds", table, out, sizeof(out)), 0);
    free(table);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        table = xasprintf("%s%s", header, bad[i].rows);
        assert_int_not_equal(run_tsv2c("torchbuilds", table, out, sizeof(out)), 0);
        if (strstr(out, bad[i].want) == NULL)
            fail_msg("case %zu: want '%s' in: %s", i, bad[i].want, out);
        free(table);
    }
    assert_int_not_equal(run_tsv2c("torchbuilds", header, out, sizeof(out)), 0);
    assert_non_null(strstr(out, "no rows"));
    assert_int_not_equal(run_tsv2c("torchbuilds", "cuda\tindex\tsource\n", out, sizeof(out)), 0);
    assert_non_null(strstr(out, "no column named 'cc'"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_for),
        cmocka_unit_test(test_generator_rejects_bad_tables),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
