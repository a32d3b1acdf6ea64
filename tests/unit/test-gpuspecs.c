/* GPU model figures, generated from data/gpu-specs.tsv: every row comes back from gpu_spec_find()
 * with its figures in bytes/s and FLOP/s, unknown cells stay 0, and the generator refuses a table
 * it cannot vouch for (a bad number, a model twice, a row without a source). */
#include "data/gpuspecs.h"
#include "util/fileio.h"
#include "util/xalloc.h"

#include <fcntl.h>
#include <math.h>
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

static void assert_figure(double got, const char *cell, double scale)
{
    double want = cell[0] == '\0' ? 0 : strtod(cell, NULL) * scale;

    if (fabs(got - want) > want * 1e-12)
        fail_msg("figure %g, the TSV says '%s'", got, cell);
}

static void test_every_row(void **state)
{
    char *text, *line, *save = NULL;
    size_t n;
    int rows = 0;
    bool header = false;

    (void)state;
    assert_true(file_slurp_at(AT_FDCWD, TEST_SOURCE_DIR "/data/gpu-specs.tsv", 1u << 20, &text) >
                0);
    for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *cell[8], *p = line;
        const struct gpu_spec *s;
        int k = 0;

        if (*line == '#')
            continue;
        if (!header) {
            assert_string_equal(line, "model\tmem_bandwidth_gbps\tfp32_tflops\ttf32_tflops\t"
                                      "fp16_tflops\tbf16_tflops\tfp8_tflops\tsource");
            header = true;
            continue;
        }
        for (; k < 8; k++) {
            cell[k] = p;
            p = strchr(p, '\t');
            if (p == NULL)
                break;
            *p++ = '\0';
        }
        assert_int_equal(k, 7);
        s = gpu_spec_find(cell[0]);
        assert_non_null(s);
        assert_string_equal(s->model, cell[0]);
        assert_figure(s->mem_bytes_per_s, cell[1], 1e9);
        assert_figure(s->fp32_flops, cell[2], 1e12);
        assert_figure(s->tf32_flops, cell[3], 1e12);
        assert_figure(s->fp16_flops, cell[4], 1e12);
        assert_figure(s->bf16_flops, cell[5], 1e12);
        assert_figure(s->fp8_flops, cell[6], 1e12);
        assert_string_equal(s->source, cell[7]);
        rows++;
    }
    gpu_specs(&n);
    assert_int_equal((size_t)rows, n);
    free(text);
}

static void test_lookup(void **state)
{
    const struct gpu_spec *s;

    (void)state;
    /* the figures bench compares with, as NVIDIA's datasheet gives them */
    s = gpu_spec_find("NVIDIA H100 80GB HBM3");
    assert_non_null(s);
    assert_true(s->mem_bytes_per_s == 3.35e12);
    assert_true(s->fp32_flops == 67e12);
    s = gpu_spec_find("NVIDIA A100-SXM4-80GB");
    assert_non_null(s);
    assert_true(s->mem_bytes_per_s == 2.039e12);
    assert_true(s->fp8_flops == 0); /* no FP8 on Ampere: unknown, not 0 FLOPS measured */
    /* the whole name, any case, blanks around it ignored */
    assert_ptr_equal(gpu_spec_find("  nvidia h100 80gb hbm3 "),
                     gpu_spec_find("NVIDIA H100 80GB HBM3"));
    assert_null(gpu_spec_find("NVIDIA H100"));
    assert_null(gpu_spec_find("NVIDIA H100 80GB HBM3 (copy)"));
    assert_null(gpu_spec_find(""));
    assert_null(gpu_spec_find(NULL));
}

static void test_generator_rejects_bad_tables(void **state)
{
    static const char header[] = "model\tmem_bandwidth_gbps\tfp32_tflops\ttf32_tflops\t"
                                 "fp16_tflops\tbf16_tflops\tfp8_tflops\tsource\n";
    static const struct {
        const char *rows;
        const char *want;
    } bad[] = {
        { "X\t3.35TB/s\t\t\t\t\t\tsheet\n",
          "table.tsv:2: column 'mem_bandwidth_gbps': '3.35TB/s'" },
        { "X\t-1\t\t\t\t\t\tsheet\n", "column 'mem_bandwidth_gbps': '-1' is not a positive" },
        { "X\t\t0\t\t\t\t\tsheet\n", "column 'fp32_tflops': '0'" },
        { "X\t\t\t\t1e3\t\t\tsheet\n", "column 'fp16_tflops': '1e3'" },
        { "X\t100\t\t\t\t\t\t\n", "table.tsv:2: column 'source' is empty" },
        { "X\t\t\t\t\t\t\tsheet\n", "model 'X' has no figure" },
        { "\t100\t\t\t\t\t\tsheet\n", "column 'model': '' is empty" },
        { "X\t100\t\t\t\t\t\tsheet\nx\t200\t\t\t\t\t\tsheet\n",
          "table.tsv:3: column 'model': 'x' is listed twice" },
    };
    char out[4096], *table;

    (void)state;
    table = xasprintf("%sX\t100\t\t\t\t\t7.5\tsheet\n", header);
    assert_int_equal(run_tsv2c("gpuspecs", table, out, sizeof(out)), 0);
    free(table);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        table = xasprintf("%s%s", header, bad[i].rows);
        assert_int_not_equal(run_tsv2c("gpuspecs", table, out, sizeof(out)), 0);
        if (strstr(out, bad[i].want) == NULL)
            fail_msg("case %zu: want '%s' in: %s", i, bad[i].want, out);
        free(table);
    }
    assert_int_not_equal(run_tsv2c("gpuspecs", "model\tsource\nX\ty\n", out, sizeof(out)), 0);
    assert_non_null(strstr(out, "no column named 'mem_bandwidth_gbps'"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_row),
        cmocka_unit_test(test_lookup),
        cmocka_unit_test(test_generator_rejects_bad_tables),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
