/* The CUDA library sonames (data/cuda-sonames.tsv): the rows as their sources give them, the
 * releases that ship a soname (which is not the CUDA release its version looks like), and the
 * generator refusing a table it cannot vouch for (rows out of order, overlapping ranges). */
#include "data/cudasonames.h"
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
        const char *soname, *first, *last; /* last NULL: today's releases still ship it */
    } want[] = {
        { "libcublas.so.8.0", "8.0", "8.0" },    { "libcublas.so.9.0", "9.0", "9.0" },
        { "libcublas.so.9.1", "9.1", "9.1" },    { "libcublas.so.9.2", "9.2", "9.2" },
        { "libcublas.so.10.0", "10.0", "10.0" }, { "libcublas.so.10", "10.1", "10.2" },
        { "libcublas.so.11", "11.0", "11.8" },   { "libcublas.so.12", "12.0", "12.9" },
        { "libcublas.so.13", "13.0", NULL },     { "libcublasLt.so.10", "10.1", "10.2" },
        { "libcublasLt.so.11", "11.0", "11.8" }, { "libcublasLt.so.12", "12.0", "12.9" },
        { "libcublasLt.so.13", "13.0", NULL },   { "libcudart.so.8.0", "8.0", "8.0" },
        { "libcudart.so.9.0", "9.0", "9.0" },    { "libcudart.so.9.1", "9.1", "9.1" },
        { "libcudart.so.9.2", "9.2", "9.2" },    { "libcudart.so.10.0", "10.0", "10.0" },
        { "libcudart.so.10.1", "10.1", "10.1" }, { "libcudart.so.10.2", "10.2", "10.2" },
        { "libcudart.so.11.0", "11.0", "11.8" }, { "libcudart.so.12", "12.0", "12.9" },
        { "libcudart.so.13", "13.0", NULL },     { "libcufft.so.8.0", "8.0", "8.0" },
        { "libcufft.so.9.0", "9.0", "9.0" },     { "libcufft.so.9.1", "9.1", "9.1" },
        { "libcufft.so.9.2", "9.2", "9.2" },     { "libcufft.so.10.0", "10.0", "10.0" },
        { "libcufft.so.10", "10.1", "11.8" },    { "libcufft.so.11", "12.0", "12.9" },
        { "libcufft.so.12", "13.0", NULL },      { "libcurand.so.8.0", "8.0", "8.0" },
        { "libcurand.so.9.0", "9.0", "9.0" },    { "libcurand.so.9.1", "9.1", "9.1" },
        { "libcurand.so.9.2", "9.2", "9.2" },    { "libcurand.so.10.0", "10.0", "10.0" },
        { "libcurand.so.10", "10.1", NULL },     { "libcusolver.so.8.0", "8.0", "8.0" },
        { "libcusolver.so.9.0", "9.0", "9.0" },  { "libcusolver.so.9.1", "9.1", "9.1" },
        { "libcusolver.so.9.2", "9.2", "9.2" },  { "libcusolver.so.10.0", "10.0", "10.0" },
        { "libcusolver.so.10", "10.1", "11.0" }, { "libcusolver.so.11", "11.1", "12.9" },
        { "libcusolver.so.12", "13.0", NULL },   { "libcusparse.so.8.0", "8.0", "8.0" },
        { "libcusparse.so.9.0", "9.0", "9.0" },  { "libcusparse.so.9.1", "9.1", "9.1" },
        { "libcusparse.so.9.2", "9.2", "9.2" },  { "libcusparse.so.10.0", "10.0", "10.0" },
        { "libcusparse.so.10", "10.1", "10.2" }, { "libcusparse.so.11", "11.0", "11.8" },
        { "libcusparse.so.12", "12.0", NULL },   { "libnvrtc.so.10.1", "10.1", "10.1" },
        { "libnvrtc.so.10.2", "10.2", "10.2" },  { "libnvrtc.so.11.0", "11.0", "11.0" },
        { "libnvrtc.so.11.1", "11.1", "11.1" },  { "libnvrtc.so.11.2", "11.2", "11.8" },
        { "libnvrtc.so.12", "12.0", "12.9" },    { "libnvrtc.so.13", "13.0", NULL },
    };

    (void)state;
    assert_int_equal(cuda_soname_n_rows, sizeof(want) / sizeof(want[0]));
    for (size_t i = 0; i < cuda_soname_n_rows; i++) {
        const struct cuda_soname *r = &cuda_soname_rows[i];
        char soname[64];

        assert_string_equal(r->soname, want[i].soname);
        assert_string_equal(r->first, want[i].first);
        if (want[i].last == NULL) {
            assert_null(r->last);
            assert_int_equal(r->last_v, 0);
        } else {
            assert_non_null(r->last);
            assert_string_equal(r->last, want[i].last);
            assert_true(r->last_v >= r->first_v); /* a range, not upside down */
        }
        /* the soname is lib, the name, .so. and the version: each field of the one string */
        snprintf(soname, sizeof(soname), "lib%s.so.%s", r->lib, r->version);
        assert_string_equal(r->soname, soname);
        assert_true(r->first_v >= 80 && r->first_v <= 130); /* CUDA 8.0 to 13.0 */
        assert_true(r->source != NULL && r->source[0] != '\0');
        if (i > 0) {
            const struct cuda_soname *p = &cuda_soname_rows[i - 1];
            int order = strcmp(p->lib, r->lib);

            assert_true(order < 0 || (order == 0 && p->first_v < r->first_v));
            if (order == 0) /* the same library: the ranges follow each other */
                assert_true(p->last_v != 0 && p->last_v < r->first_v);
        }
    }
}

static void test_find(void **state)
{
    const struct cuda_soname *r;

    (void)state;
    r = cuda_soname_find("cudart", "11.0");
    assert_non_null(r);
    assert_string_equal(r->soname, "libcudart.so.11.0");
    assert_int_equal(r->first_v, 110);
    assert_int_equal(r->last_v, 118);
    r = cuda_soname_find("cufft", "10"); /* cuFFT 10.x: CUDA 10.1 to 11.8 */
    assert_non_null(r);
    assert_string_equal(r->first, "10.1");
    assert_string_equal(r->last, "11.8");
    r = cuda_soname_find("cusolver", "11"); /* cuSOLVER 11.x: 11.1 to 12.9 */
    assert_non_null(r);
    assert_int_equal(r->first_v, 111);
    assert_int_equal(r->last_v, 129);
    r = cuda_soname_find("curand", "10"); /* still shipping */
    assert_non_null(r);
    assert_null(r->last);
    assert_non_null(cuda_soname_find("cublasLt", "13"));
    assert_non_null(cuda_soname_find("nvrtc", "11.2"));
    /* unknown: no guess */
    assert_null(cuda_soname_find("cublas", "99"));
    assert_null(cuda_soname_find("cudart", "11"));   /* 11.x's is 11.0 */
    assert_null(cuda_soname_find("cudart", "10"));   /* 10.x's is 10.N */
    assert_null(cuda_soname_find("nvrtc", "9.0"));   /* left out: no source */
    assert_null(cuda_soname_find("cublaslt", "11")); /* names are case-sensitive */
    assert_null(cuda_soname_find("cudnn", "8"));
    assert_null(cuda_soname_find("cudart", ""));
    assert_null(cuda_soname_find(NULL, "11.0"));
    assert_null(cuda_soname_find("cudart", NULL));
}

static void test_ships(void **state)
{
    static const struct {
        const char *lib, *version, *cuda;
        bool ships;
    } cases[] = {
        /* the review's case: libcudart.so.11.0 is every 11.x's */
        { "cudart", "11.0", "11.0", true },
        { "cudart", "11.0", "11.8", true },
        { "cudart", "11.0", "11.8.89", true },
        { "cudart", "11.0", "11", true }, /* every 11.x */
        { "cudart", "11.0", "10.2", false },
        { "cudart", "11.0", "12.0", false },
        { "cudart", "11.0", "12", false },
        { "cudart", "12", "12", true },
        { "cusolver", "11", "11", false }, /* 11.0 has .10: not every 11.x */
        { "cusolver", "10", "11", false }, /* 11.1 on have .11 */
        { "cusolver", "11", "12", true },
        { "cusparse", "12", "13", true },
        /* libraries whose soname major is not the CUDA major */
        { "cufft", "10", "10.1", true },
        { "cufft", "10", "11.8.0", true },
        { "cufft", "10", "10.0", false },
        { "cufft", "10", "12.4", false },
        { "cufft", "11", "12.9", true },
        { "cufft", "12", "13.0", true },
        { "cusolver", "10", "11.0", true },
        { "cusolver", "10", "11.1", false },
        { "cusparse", "12", "13.0", true },
        { "curand", "10", "13.0.96", true }, /* open: today's too */
        { "curand", "10", "99.9", true },
        { "curand", "10", "13", true },
        { "curand", "10", "10", false }, /* 10.0's is 10.0 */
        { "nvrtc", "11.2", "11.5.119", true },
        { "nvrtc", "11.2", "11.1", false },
        { "cublas", "9.1", "9.1", true },
        { "cublas", "9.1", "9.0", false },
        { "cublas", "10", "10", false }, /* 10.0 has another */
        /* not versions */
        { "cudart", "11.0", NULL, false },
        { "cudart", "11.0", "", false },
        { "cudart", "11.0", "abc", false },
        { "cudart", "11.0", "11.8abc", false },
        { "cudart", "11.0", "11abc", false },
        { "cudart", "11.0", "11.", false },
        { "cudart", "11.0", "11.10", false },
        { "cudart", "11.0", "0.9", false },
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct cuda_soname *r = cuda_soname_find(cases[i].lib, cases[i].version);

        assert_non_null(r);
        if (cuda_soname_ships(r, cases[i].cuda) != cases[i].ships)
            fail_msg("lib%s.so.%s in CUDA %s: expected %s", cases[i].lib, cases[i].version,
                     cases[i].cuda ? cases[i].cuda : "(null)", cases[i].ships ? "yes" : "no");
    }
    assert_false(cuda_soname_ships(NULL, "11.8"));
}

static void test_generator_rejects_bad_tables(void **state)
{
    static const char header[] = "soname\tfirst\tlast\tsource\n";
    static const struct {
        const char *rows;
        const char *want;
    } bad[] = {
        { "cudart.so.11.0\t11.0\t11.8\ttf\n", "table.tsv:2: column 'soname': 'cudart.so.11.0'" },
        { "libcudart.so\t11.0\t11.8\ttf\n", "column 'soname': 'libcudart.so' is not a soname" },
        { "libcudart.so.11.x\t11.0\t11.8\ttf\n", "column 'soname': 'libcudart.so.11.x'" },
        { "lib.so.11\t11.0\t11.8\ttf\n", "column 'soname': 'lib.so.11'" },
        { "libcu-dart.so.11\t11.0\t11.8\ttf\n", "column 'soname': 'libcu-dart.so.11'" },
        { "libcudart.so.11.0\t11\t11.8\ttf\n", "column 'first': '11' is not a CUDA version" },
        { "libcudart.so.11.0\t11.0\t11.10\ttf\n", "column 'last': '11.10' is not" },
        { "libcudart.so.11.0\t11.8\t11.0\ttf\n",
          "column 'last': '11.0' is not a CUDA version from" },
        { "libcudart.so.11.0\t11.0\t\ttf\n", "column 'last': '' is not" },
        { "libcudart.so.11.0\t11.0\t11.8\t\n", "column 'source' must not be empty" },
        { "libcufft.so.10\t10.1\t11.8\ttf\nlibcudart.so.11.0\t11.0\t11.8\ttf\n",
          "table.tsv:3: column 'soname': libcudart.so.11.0 after libcufft.so.10" },
        { "libcudart.so.12\t12.0\t12.9\ttf\nlibcudart.so.11.0\t11.0\t11.8\ttf\n",
          "column 'soname': libcudart.so.11.0 after libcudart.so.12" },
        { "libcufft.so.10\t10.1\t11.8\ttf\nlibcufft.so.11\t11.8\t12.9\ttf\n",
          "column 'first': 11.8 of libcufft.so.11 overlaps libcufft.so.10" },
        { "libcurand.so.10\t10.1\t-\ttf\nlibcurand.so.11\t14.0\t-\ttf\n",
          "column 'first': 14.0 of libcurand.so.11 overlaps libcurand.so.10" },
        { "libcudart.so.11\t11.0\t11.8\ttf\tmore\n", "5 columns, the header names 4" },
    };
    char out[4096], *table;

    (void)state;
    table = xasprintf("%slibcublas.so.11\t11.0\t11.8\ttf\nlibcublas.so.12\t12.0\t-\tconda\n"
                      "libcublasLt.so.12\t12.0\t-\tconda\n",
                      header);
    assert_int_equal(run_tsv2c("cudasonames", table, out, sizeof(out)), 0);
    free(table);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        table = xasprintf("%s%s", header, bad[i].rows);
        assert_int_not_equal(run_tsv2c("cudasonames", table, out, sizeof(out)), 0);
        if (strstr(out, bad[i].want) == NULL)
            fail_msg("case %zu: want '%s' in: %s", i, bad[i].want, out);
        free(table);
    }
    assert_int_not_equal(run_tsv2c("cudasonames", header, out, sizeof(out)), 0);
    assert_non_null(strstr(out, "no rows"));
    assert_int_not_equal(run_tsv2c("cudasonames", "soname\tfirst\tsource\n", out, sizeof(out)), 0);
    assert_non_null(strstr(out, "no column named 'last'"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_find),
        cmocka_unit_test(test_ships),
        cmocka_unit_test(test_generator_rejects_bad_tables),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
