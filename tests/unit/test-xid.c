/* The XID catalogue generated from data/xid.tsv: every row of the TSV must come back from
 * xid_lookup() exactly, and codes the TSV lacks must not. */
#include "data/xid.h"
#include "util/fileio.h"
#include "util/xalloc.h"

#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#define MAX_COLS 32

/* A small TSV reader of its own, so the generator is checked by something independent. */
struct tsv {
    char *text, *next;
    char *header[MAX_COLS];
    int n_header;
};

static int split(char *line, char **cells)
{
    int n = 0;

    for (;;) {
        char *tab = strchr(line, '\t');

        assert_true(n < MAX_COLS);
        cells[n++] = line;
        if (tab == NULL)
            return n;
        *tab = '\0';
        line = tab + 1;
    }
}

static bool next_row(struct tsv *t, char **cells, int *n)
{
    while (t->next != NULL && *t->next) {
        char *line = t->next, *nl = strchr(line, '\n');

        t->next = nl ? nl + 1 : NULL;
        if (nl != NULL)
            *nl = '\0';
        if (*line == '\0' || *line == '#')
            continue;
        *n = split(line, cells);
        return true;
    }
    return false;
}

static void tsv_open(struct tsv *t, const char *path)
{
    assert_true(file_slurp_at(AT_FDCWD, path, 1u << 20, &t->text) > 0);
    t->next = t->text;
    assert_true(next_row(t, t->header, &t->n_header));
}

static int col(const struct tsv *t, const char *name)
{
    for (int i = 0; i < t->n_header; i++) {
        if (strcmp(t->header[i], name) == 0)
            return i;
    }
    fail_msg("no column %s", name);
    return -1;
}

static void assert_str_or_null(const char *got, const char *cell, const char *null_spelling)
{
    if (strcmp(cell, null_spelling) == 0)
        assert_null(got);
    else
        assert_string_equal(got, cell);
}

static void test_every_row_round_trips(void **state)
{
    static const char *const flags[] = { "HW", "DRV", "APP", "SYSMEM", "BUS", "THERM", "FB" };
    struct tsv t;
    char *cells[MAX_COLS];
    int n, rows = 0;
    size_t total;

    (void)state;
    tsv_open(&t, TEST_SOURCE_DIR "/data/xid.tsv");
    while (next_row(&t, cells, &n)) {
        int code = atoi(cells[col(&t, "xid")]);
        const struct xid_info *x = xid_lookup(code);
        uint32_t causes = 0;
        bool listed = true;

        assert_int_equal(n, t.n_header);
        assert_non_null(x);
        assert_int_equal(x->code, code);
        assert_str_or_null(x->nverror_name, cells[col(&t, "nverror_name")], "-");
        assert_string_equal(x->mnemonic, cells[col(&t, "catalog_mnemonic")]);
        assert_string_equal(x->description, cells[col(&t, "catalog_description")]);
        assert_string_equal(x->immediate_action, cells[col(&t, "catalog_immediate_action")]);
        assert_str_or_null(x->investigatory_action, cells[col(&t, "catalog_investigatory_action")],
                           "");
        assert_string_equal(xid_category_name(x->category), cells[col(&t, "category")]);
        assert_string_equal(x->typical_cause, cells[col(&t, "typical_cause")]);
        assert_string_equal(x->action, cells[col(&t, "recommended_action")]);
        assert_str_or_null(x->example_log, cells[col(&t, "example_log")], "");
        assert_int_equal(x->app_error, strcmp(cells[col(&t, "k8s_dp_app_error")], "Y") == 0);
        for (unsigned f = 0; f < 7; f++) {
            const char *v = cells[col(&t, flags[f])];

            if (strcmp(v, "Y") == 0)
                causes |= 1u << f;
            listed &= strcmp(v, "?") != 0;
        }
        assert_int_equal(x->causes, causes);
        assert_int_equal(x->causes_listed, listed);
        rows++;
    }
    xid_all(&total);
    assert_int_equal(total, (size_t)rows);
    assert_true(rows >= 26);
    free(t.text);
}

static void test_known_meanings(void **state)
{
    const struct xid_info *x;

    (void)state;
    x = xid_lookup(79);
    assert_non_null(x);
    assert_int_equal(x->category, XID_CAT_BUS);
    assert_string_equal(x->immediate_action, "RESTART_BM");
    assert_true(x->causes & XID_CAUSE_BUS);
    assert_false(x->app_error);
    x = xid_lookup(13);
    assert_int_equal(x->category, XID_CAT_APPLICATION);
    assert_true(x->app_error);
    assert_int_equal(xid_lookup(48)->category, XID_CAT_MEMORY);
    assert_int_equal(xid_lookup(74)->category, XID_CAT_NVLINK);
    assert_int_equal(xid_lookup(45)->category, XID_CAT_CONSEQUENCE);
    assert_int_equal(xid_lookup(119)->category, XID_CAT_DRIVER);
    x = xid_lookup(154);
    assert_int_equal(x->category, XID_CAT_INFO);
    assert_false(x->causes_listed);
    assert_null(xid_lookup(109)->nverror_name);
    assert_string_equal(xid_lookup(140)->nverror_name, "UNRECOVERABLE_ECC_ERROR_ESCAPE");
}

static void test_unknown_codes(void **state)
{
    (void)state;
    assert_null(xid_lookup(0));
    assert_null(xid_lookup(-1));
    assert_null(xid_lookup(1));
    assert_null(xid_lookup(14));
    assert_null(xid_lookup(100000));
    assert_null(xid_lookup(INT32_MAX));
    assert_null(xid_category_name(XID_CAT__COUNT));
    assert_string_equal(xid_category_name(XID_CAT_THERMAL), "thermal");
    assert_non_null(strstr(xid_category_label(XID_CAT_BUS), "PCIe"));
}

static void test_sorted_and_unique(void **state)
{
    size_t n;
    const struct xid_info *all = xid_all(&n);

    (void)state;
    for (size_t i = 1; i < n; i++)
        assert_true(all[i - 1].code < all[i].code);
    for (size_t i = 0; i < n; i++)
        assert_ptr_equal(xid_lookup(all[i].code), &all[i]);
}

/* Runs the generator on a table; returns its exit status and what it printed. */
static int run_tsv2c(const char *kind, const char *table, char *out, size_t size)
{
    char dir[] = TEST_BINARY_DIR "/tsv2c-XXXXXX";
    char *in, *c_out, *cmd;
    FILE *f, *p;
    size_t n;
    int status;

    assert_non_null(mkdtemp(dir));
    in = xasprintf("%s/table.tsv", dir);
    c_out = xasprintf("%s/table.c", dir);
    f = fopen(in, "w");
    assert_non_null(f);
    fputs(table, f);
    fclose(f);
    cmd = xasprintf("'%s/src/data/gpudoctor-tsv2c' %s '%s' '%s' 2>&1", TEST_BINARY_DIR, kind, in,
                    c_out);
    p = popen(cmd, "r");
    assert_non_null(p);
    n = fread(out, 1, size - 1, p);
    out[n] = '\0';
    status = pclose(p);
    unlink(in);
    unlink(c_out);
    rmdir(dir);
    free(in);
    free(c_out);
    free(cmd);
    return status;
}

static void test_generator_rejects_bad_tables(void **state)
{
    static const char header[] =
        "# comment\n"
        "xid\tnverror_name\tcatalog_mnemonic\tcatalog_description\tcatalog_immediate_action\t"
        "catalog_investigatory_action\tHW\tDRV\tAPP\tSYSMEM\tBUS\tTHERM\tFB\tk8s_dp_app_error\t"
        "typical_cause\trecommended_action\texample_log\tcategory\n";
    static const char good[] =
        "13\tX\tM\tD\tRESTART_APP\t\tY\tN\tY\tN\tN\tN\tN\tY\tapp\tdo it\t\tapplication\n";
    char out[4096], *table;

    (void)state;
    table = xasprintf("%s%s", header, good);
    assert_int_equal(run_tsv2c("xid", table, out, sizeof(out)), 0);
    free(table);

    table = xasprintf("%s%s", header,
                      "13\tX\tM\tD\tRESTART_APP\t\tY\tN\tY\tN\tN\tN\tN\tY\tapp\tdo\t\tmemry\n");
    assert_int_not_equal(run_tsv2c("xid", table, out, sizeof(out)), 0);
    assert_non_null(strstr(out, "table.tsv:3: column 'category': 'memry'"));
    free(table);

    table = xasprintf("%s%s%s", header, good, good);
    assert_int_not_equal(run_tsv2c("xid", table, out, sizeof(out)), 0);
    assert_non_null(strstr(out, "table.tsv:4:"));
    assert_non_null(strstr(out, "sorted and unique"));
    free(table);

    table = xasprintf("%s%s", header, "13\tonly three\tcolumns\n");
    assert_int_not_equal(run_tsv2c("xid", table, out, sizeof(out)), 0);
    assert_non_null(strstr(out, "table.tsv:3: 3 columns, the header names 18"));
    free(table);

    assert_int_not_equal(run_tsv2c("xid", "xid\tsomething\n1\t2\n", out, sizeof(out)), 0);
    assert_non_null(strstr(out, "no column named 'nverror_name'"));

    table = xstrdup("toolkit\ttoolkit_version\tlinux_x86_64_toolkit_driver_min\t"
                    "windows_x86_64_toolkit_driver_min\tcompat_min_linux\tcompat_below\tsource\n"
                    "CUDA 12.4 GA\t12.4.0\t>=550.54.x\t>=551.61\t525.60.13\t580\tsome page\n");
    assert_int_not_equal(run_tsv2c("cudacompat", table, out, sizeof(out)), 0);
    assert_non_null(strstr(out, "table.tsv:2: column 'linux_x86_64_toolkit_driver_min'"));
    free(table);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_row_round_trips),
        cmocka_unit_test(test_known_meanings),
        cmocka_unit_test(test_unknown_codes),
        cmocka_unit_test(test_sorted_and_unique),
        cmocka_unit_test(test_generator_rejects_bad_tables),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
