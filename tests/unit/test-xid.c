/* The XID catalogue generated from data/xid.tsv and data/xid-nvlink5.tsv: every row of the TSVs
 * must come back from the lookups exactly, codes the TSV lacks must not, and the generator must
 * refuse bad tables naming file, line and column. Then health.xid on kernel-log lines: the
 * severity policy, what the decoded fields change, and fix lines that are safe to paste. */
#include "collect/klog-parse.h"
#include "data/xid.h"
#include "rules/rules.h"
#include "facts/thresholds.h"
#include "snapshot/snapshot.h"
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

#include "tsv2c-run.h"

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
        const char *listed = cells[col(&t, "listed_in")];
        uint32_t causes = 0;
        bool known = true;

        assert_int_equal(n, t.n_header);
        assert_non_null(x);
        assert_int_equal(x->code, code);
        assert_int_equal(x->listed_in, strcmp(listed, "catalog+nverror") == 0 ? XID_LISTED_BOTH
                                       : strcmp(listed, "catalog") == 0       ? XID_LISTED_CATALOG
                                                                              : XID_LISTED_NVERROR);
        assert_str_or_null(x->nverror_name, cells[col(&t, "nverror_name")], "-");
        assert_str_or_null(x->mnemonic, cells[col(&t, "catalog_mnemonic")], "-");
        assert_str_or_null(x->description, cells[col(&t, "catalog_description")], "-");
        assert_str_or_null(x->immediate_action, cells[col(&t, "catalog_immediate_action")], "");
        assert_str_or_null(x->investigatory_action, cells[col(&t, "catalog_investigatory_action")],
                           "");
        assert_str_or_null(x->r555_name, cells[col(&t, "doc_r555_name")], "?");
        assert_string_equal(x->meaning, cells[col(&t, "meaning")]);
        assert_string_equal(xid_category_name(x->category), cells[col(&t, "category")]);
        assert_string_equal(xid_severity_name(x->severity), cells[col(&t, "severity")]);
        assert_string_equal(x->typical_cause, cells[col(&t, "typical_cause")]);
        assert_string_equal(x->action, cells[col(&t, "recommended_action")]);
        assert_str_or_null(x->example_log, cells[col(&t, "example_log")], "");
        assert_str_or_null(x->dcgm, cells[col(&t, "dcgm_health")], "-");
        assert_str_or_null(x->gpud, cells[col(&t, "gpud_action")], "-");
        assert_int_equal(x->app_error, strcmp(cells[col(&t, "k8s_dp_app_error")], "Y") == 0);
        for (unsigned f = 0; f < 7; f++) {
            const char *v = cells[col(&t, flags[f])];

            if (strcmp(v, "Y") == 0)
                causes |= 1u << f;
            known &= strcmp(v, "?") != 0;
        }
        assert_int_equal(x->causes, causes);
        assert_int_equal(x->causes_listed, known);
        rows++;
    }
    xid_all(&total);
    assert_int_equal(total, (size_t)rows);
    free(t.text);
}

/* Every code of NVIDIA's catalogue (1..172, 2025-10-29) and of nverror.h (13..176 at 595.45.04)
 * has a row, and listed_in says which of the two has it. */
static void test_whole_catalogue(void **state)
{
    /* Codes the catalogue has and nverror.h does not define. */
    static const int catalog_only[] = { 1,   2,   3,   4,   5,   6,   7,   8,   9,   10, 11,
                                        12,  15,  17,  18,  24,  25,  26,  37,  38,  46, 49,
                                        50,  51,  52,  53,  54,  55,  56,  57,  66,  67, 106,
                                        107, 109, 111, 112, 113, 114, 115, 116, 117, 118 };
    size_t n, k = 0;
    const struct xid_info *all = xid_all(&n);

    (void)state;
    assert_int_equal(n, 176);
    for (int code = 1; code <= 176; code++) {
        const struct xid_info *x = xid_lookup(code);
        enum xid_listed want = XID_LISTED_BOTH;

        assert_non_null(x);
        if (k < sizeof(catalog_only) / sizeof(catalog_only[0]) && catalog_only[k] == code) {
            want = XID_LISTED_CATALOG;
            k++;
        } else if (code > 172) {
            want = XID_LISTED_NVERROR;
        }
        assert_int_equal(x->listed_in, want);
        assert_true((x->nverror_name == NULL) == (want == XID_LISTED_CATALOG));
        assert_true((x->mnemonic == NULL) == (want == XID_LISTED_NVERROR));
        assert_non_null(x->meaning);
        assert_non_null(x->typical_cause);
        assert_non_null(x->action);
        assert_true(x->severity < XID_SEV__COUNT);
        /* an example line, where there is one, is one of its own code's lines */
        if (x->example_log != NULL) {
            char want_text[32];

            snprintf(want_text, sizeof(want_text), "): %d,", code);
            assert_non_null(strstr(x->example_log, want_text));
        }
    }
    assert_ptr_equal(all[0].code == 1 ? &all[0] : NULL, xid_lookup(1));
}

static void test_known_meanings(void **state)
{
    const struct xid_info *x;

    (void)state;
    x = xid_lookup(79);
    assert_non_null(x);
    assert_int_equal(x->category, XID_CAT_BUS);
    assert_int_equal(x->severity, XID_SEV_CRITICAL);
    assert_string_equal(x->immediate_action, "RESTART_BM");
    assert_string_equal(x->dcgm, "FAIL");
    assert_true(x->causes & XID_CAUSE_BUS);
    assert_false(x->app_error);
    x = xid_lookup(13);
    assert_int_equal(x->category, XID_CAT_APPLICATION);
    assert_int_equal(x->severity, XID_SEV_WARNING);
    assert_true(x->app_error);
    assert_null(x->dcgm);
    assert_int_equal(xid_lookup(48)->category, XID_CAT_MEMORY);
    assert_int_equal(xid_lookup(48)->severity, XID_SEV_CRITICAL);
    assert_int_equal(xid_lookup(74)->category, XID_CAT_NVLINK);
    assert_int_equal(xid_lookup(45)->category, XID_CAT_CONSEQUENCE);
    assert_int_equal(xid_lookup(45)->severity, XID_SEV_INFO);
    assert_int_equal(xid_lookup(119)->category, XID_CAT_DRIVER);
    assert_int_equal(xid_lookup(119)->severity, XID_SEV_CRITICAL);
    assert_int_equal(xid_lookup(94)->severity, XID_SEV_WARNING);
    assert_int_equal(xid_lookup(95)->severity, XID_SEV_CRITICAL);
    x = xid_lookup(154);
    assert_int_equal(x->category, XID_CAT_INFO);
    assert_int_equal(x->severity, XID_SEV_INFO);
    assert_string_equal(x->immediate_action, "XID_154");
    assert_false(x->causes_listed);
    assert_null(x->r555_name);
    assert_null(xid_lookup(109)->nverror_name);
    assert_string_equal(xid_lookup(140)->nverror_name, "UNRECOVERABLE_ECC_ERROR_ESCAPE");
    /* the catalogue leaves the actions of 162..172 blank */
    assert_null(xid_lookup(171)->immediate_action);
    assert_null(xid_lookup(171)->investigatory_action);
    /* only nverror.h has 173..176 */
    x = xid_lookup(175);
    assert_string_equal(x->nverror_name, "MEMORY_SUBSYSTEM_ERROR");
    assert_null(x->mnemonic);
    assert_null(x->description);
    assert_int_equal(x->category, XID_CAT_MEMORY);
    /* codes the catalogue calls unused carry the older listing's meaning */
    assert_non_null(strstr(xid_lookup(9)->meaning, "Driver error programming GPU"));
    assert_string_equal(xid_lookup(9)->description, "Unused");
    for (int code = XID_NVLINK5_FIRST; code <= XID_NVLINK5_LAST; code++)
        assert_string_equal(xid_lookup(code)->immediate_action, "WORKFLOW_NVLINK5_ERR");
}

static void test_unknown_codes(void **state)
{
    (void)state;
    assert_null(xid_lookup(0));
    assert_null(xid_lookup(-1));
    assert_null(xid_lookup(177));
    assert_null(xid_lookup(999));
    assert_null(xid_lookup(100000));
    assert_null(xid_lookup(INT32_MAX));
    assert_null(xid_lookup(INT32_MIN));
    assert_null(xid_category_name(XID_CAT__COUNT));
    assert_null(xid_severity_name(XID_SEV__COUNT));
    assert_string_equal(xid_category_name(XID_CAT_THERMAL), "thermal");
    assert_string_equal(xid_severity_name(XID_SEV_CRITICAL), "critical");
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

/* "------000000----------0000100001" -> intrinfo with the pattern's bits and 0 elsewhere. */
static uint32_t pattern_value(const char *s)
{
    uint32_t v = 0;

    assert_int_equal(strlen(s), 32);
    for (int i = 0; i < 32; i++) {
        if (s[i] == '1')
            v |= 1u << (31 - i);
    }
    return v;
}

/* Every row of data/xid-nvlink5.tsv comes back from xid_nvlink5_all() and is what
 * xid_nvlink5_lookup() finds for its own patterns (unless an earlier row of the sheet covers
 * the same code, unit, pattern and status: then that one). */
static void test_nvlink5_rows(void **state)
{
    struct tsv t;
    char *cells[MAX_COLS];
    int n;
    size_t i = 0, total;
    const struct xid_nvlink5_rule *all = xid_nvlink5_all(&total);

    (void)state;
    tsv_open(&t, TEST_SOURCE_DIR "/data/xid-nvlink5.tsv");
    while (next_row(&t, cells, &n)) {
        const struct xid_nvlink5_rule *r = &all[i];
        int code = atoi(cells[col(&t, "xid")]);
        uint32_t status = (uint32_t)strtoul(cells[col(&t, "error_status")], NULL, 16);
        const char *sev = cells[col(&t, "nvidia_severity")];
        const struct xid_nvlink5_rule *found;

        assert_int_equal(n, t.n_header);
        assert_true(i < total);
        assert_int_equal(r->xid, code);
        assert_string_equal(r->unit, cells[col(&t, "unit")]);
        assert_int_equal(r->error_status, status);
        assert_string_equal(r->nvidia_severity, sev);
        assert_int_equal(r->fatal, strncmp(sev, "Non-fatal", 9) != 0);
        assert_string_equal(r->immediate_action, cells[col(&t, "immediate_action")]);
        assert_string_equal(r->investigatory_action, cells[col(&t, "investigatory_action")]);
        assert_str_or_null(r->action2, cells[col(&t, "action2")], "-");
        assert_string_equal(r->hw_sw, cells[col(&t, "hw_sw")]);
        assert_string_equal(r->effect, cells[col(&t, "effect")]);
        for (int v = 0; v < 2; v++) {
            uint32_t intrinfo = pattern_value(cells[col(&t, v ? "intrinfo_v2" : "intrinfo_v1")]);

            found = xid_nvlink5_lookup(code, r->unit, intrinfo, status);
            assert_non_null(found);
            assert_true(found <= r);
            assert_int_equal(found->xid, code);
            assert_int_equal(found->error_status, status);
        }
        i++;
    }
    assert_int_equal(i, total);
    free(t.text);
}

/* Lines from public logs (leptonai/gpud PRs #1160 and #1174) against NVIDIA's decode sheet. */
static void test_nvlink5_lookup(void **state)
{
    const struct xid_nvlink5_rule *r;

    (void)state;
    /* 145, RLW_RXPIPE Nonfatal XC0 i0 Link 13 (0x0409a0c2 0x00000008 ...) */
    r = xid_nvlink5_lookup(145, "RLW_RXPIPE", 0x0409a0c2, 0x8);
    assert_non_null(r);
    assert_false(r->fatal);
    assert_string_equal(r->immediate_action, "IGNORE");
    assert_string_equal(r->hw_sw, "HW/SW");
    /* 149, NETIR_LINK_EVT Fatal XC0 i0 Link 00 (0x025001c6 0x00000000 ...): sub-code 37 */
    assert_int_equal(xid_nvlink5_subcode(0x025001c6), 37);
    r = xid_nvlink5_lookup(149, "NETIR_LINK_EVT", 0x025001c6, 0);
    assert_non_null(r);
    assert_true(r->fatal);
    assert_string_equal(r->unit, "NETIR_LINK_EVT/NETIR_LINK_DOWN");
    assert_string_equal(r->immediate_action, "RESET_GPU");
    assert_string_equal(r->investigatory_action, "INVESTIGATE_PEER_DEVICE");
    /* sub-code 38 is another reason for the link going down */
    r = xid_nvlink5_lookup(149, "NETIR_LINK_EVT", 0x026001c6, 0);
    assert_non_null(r);
    assert_string_equal(r->immediate_action, "IGNORE");
    assert_string_equal(r->investigatory_action, "INVESTIGATE_SW/USER");
    /* 149, NETIR Fatal XC0 i0 Link -1 (0x000fe406 0x00000000 ...): the driver prints "NETIR" */
    r = xid_nvlink5_lookup(149, "NETIR", 0x000fe406, 0);
    assert_non_null(r);
    assert_string_equal(r->unit, "NETIR/NETIR_INT");
    assert_string_equal(r->investigatory_action, "SYMPATHETIC_REPORT_SOLO");
    assert_ptr_equal(xid_nvlink5_lookup(149, "NETIR_INT", 0x000fe406, 0), r);
    assert_ptr_equal(xid_nvlink5_lookup(149, NULL, 0x000fe406, 0), r);
    /* 144, SAW_MVB Nonfatal XC0 i0 Link 0 (0x00000001 0x00000008 ...): the sheet's second layout */
    r = xid_nvlink5_lookup(144, "SAW_MVB", 0x00000001, 0x8);
    assert_non_null(r);
    assert_false(r->fatal);
    assert_non_null(strstr(r->effect, "Xid94"));
    /* 150 has one row: the MSE watchdog, fatal */
    r = xid_nvlink5_lookup(150, "MSE_WATCHDOG", 0, 0);
    assert_non_null(r);
    assert_true(r->fatal);
    assert_string_equal(r->hw_sw, "FW");
    /* what the sheet does not have */
    assert_null(xid_nvlink5_lookup(145, "RLW_RXPIPE", 0x0409a0c2, 0x400)); /* status */
    assert_null(xid_nvlink5_lookup(149, "NETIR_LINK", 0x025001c6, 0));     /* unit */
    assert_null(xid_nvlink5_lookup(149, "SAW_MVB", 0x025001c6, 0));        /* another unit's */
    assert_null(xid_nvlink5_lookup(145, "RLW_RXPIPE", 0x0409a0c3, 0x8));   /* intrinfo */
    assert_null(xid_nvlink5_lookup(74, "RLW_RXPIPE", 0x0409a0c2, 0x8));    /* not NVLink5 */
}

static void test_generator_rejects_bad_tables(void **state)
{
    static const char header[] =
        "# comment\n"
        "xid\tlisted_in\tnverror_name\tcatalog_mnemonic\tcatalog_description\t"
        "catalog_immediate_action\tcatalog_investigatory_action\tdoc_r555_name\tHW\tDRV\tAPP\t"
        "SYSMEM\tBUS\tTHERM\tFB\tk8s_dp_app_error\tdcgm_health\tgpud_action\tmeaning\tcategory\t"
        "severity\ttypical_cause\trecommended_action\texample_log\n";
    /* 24 columns; the cells after the flags vary below */
    static const char start[] =
        "13\tcatalog+nverror\tX\tM\tD\tRESTART_APP\t\tName\tY\tN\tY\tN\tN\tN\tN\t";
    static const char good_tail[] =
        "Y\t-\twarning:check-app\tmeaning\tapplication\twarning\tapp\tdo "
        "it\tNVRM: Xid (PCI:0000:3b:00): 13, pid=1, name=a, b\n";
    static const struct {
        const char *row; /* the whole row, or NULL: start + tail */
        const char *tail;
        const char *want;
    } bad[] = {
        { NULL, "Y\t-\t-\tm\tmemry\twarning\tc\ta\t\n", "table.tsv:3: column 'category': 'memry'" },
        { NULL, "Y\t-\t-\tm\tmemory\tfatal\tc\ta\t\n", "table.tsv:3: column 'severity': 'fatal'" },
        { NULL, "Y\tFATAL\t-\tm\tmemory\tinfo\tc\ta\t\n", "column 'dcgm_health': 'FATAL'" },
        { NULL, "Y\t-\twarning:retry\tm\tmemory\tinfo\tc\ta\t\n", "column 'gpud_action'" },
        { NULL, "Y\t-\t-\t\tmemory\tinfo\tc\ta\t\n", "column 'meaning' is empty" },
        { NULL, "Y\t-\t-\tm\tmemory\tinfo\tc\ta\tNVRM: Xid (PCI:0000:3b:00): 31, x\n",
          "table.tsv:3: column 'example_log': not a driver line of Xid 13" },
        { "13\tboth\tX\tM\tD\tRESTART_APP\t\tN\tY\tN\tY\tN\tN\tN\tN\tY\t-\t-"
          "\tm\tinfo\tinfo\tc\ta\t\n",
          NULL, "column 'listed_in': 'both'" },
        { "13\tcatalog\tX\tM\tD\tRESTART_APP\t\tN\tY\tN\tY\tN\tN\tN\tN\tY\t-\t-"
          "\tm\tinfo\tinfo\tc\ta\t\n",
          NULL, "column 'nverror_name': 'X' must be '-'" },
        { "173\tnverror\tC2C\tM\tD\t\t\t?\t?\t?\t?\t?\t?\t?\t?\tN\t-\t-\tm\tinfo\tinfo\tc\ta\t\n",
          NULL, "catalogue columns must be '-' or empty: listed_in is nverror" },
        { "13\tcatalog+nverror\tX\t-\tD\tRESTART_APP\t\tN\tY\tN\tY\tN\tN\tN\tN\tY\t-\t-"
          "\tm\tinfo\tinfo\tc"
          "\ta\t\n",
          NULL, "column 'catalog_mnemonic' is empty but listed_in says the catalogue has it" },
        { "13\tcatalog+nverror\tX\tM\tD\tRESTART_APP\t\t?\tY\tN\tY\tN\tN\tN\tN\tY\t-\t-"
          "\tm\tinfo\tinfo\tc"
          "\ta\t\n",
          NULL, "column 'doc_r555_name': '?' but the cause flags are known" },
    };
    char out[4096], *table;

    (void)state;
    table = xasprintf("%s%s%s", header, start, good_tail);
    assert_int_equal(run_tsv2c("xid", table, out, sizeof(out)), 0);
    free(table);

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (bad[i].row)
            table = xasprintf("%s%s", header, bad[i].row);
        else
            table = xasprintf("%s%s%s", header, start, bad[i].tail);
        assert_int_not_equal(run_tsv2c("xid", table, out, sizeof(out)), 0);
        if (strstr(out, bad[i].want) == NULL)
            fail_msg("case %zu: want '%s' in: %s", i, bad[i].want, out);
        assert_non_null(strstr(out, "table.tsv:3:"));
        free(table);
    }

    table = xasprintf("%s%s%s%s%s", header, start, good_tail, start, good_tail);
    assert_int_not_equal(run_tsv2c("xid", table, out, sizeof(out)), 0);
    assert_non_null(strstr(out, "table.tsv:4:"));
    assert_non_null(strstr(out, "sorted and unique"));
    free(table);

    table = xasprintf("%s%s", header, "13\tonly three\tcolumns\n");
    assert_int_not_equal(run_tsv2c("xid", table, out, sizeof(out)), 0);
    assert_non_null(strstr(out, "table.tsv:3: 3 columns, the header names 24"));
    free(table);

    assert_int_not_equal(run_tsv2c("xid", "xid\tsomething\n1\t2\n", out, sizeof(out)), 0);
    assert_non_null(strstr(out, "no column named 'listed_in'"));

    table = xstrdup("toolkit\ttoolkit_version\tlinux_x86_64_toolkit_driver_min\t"
                    "windows_x86_64_toolkit_driver_min\tcompat_min_linux\tcompat_below\tsource\n"
                    "CUDA 12.4 GA\t12.4.0\t>=550.54.x\t>=551.61\t525.60.13\t580\tsome page\n");
    assert_int_not_equal(run_tsv2c("cudacompat", table, out, sizeof(out)), 0);
    assert_non_null(strstr(out, "table.tsv:2: column 'linux_x86_64_toolkit_driver_min'"));
    free(table);
}

/* row with its "%s" replaced by the two pattern cells p. */
static char *with_patterns(const char *row, const char *p)
{
    const char *at = strstr(row, "%s");

    assert_non_null(at);
    return xasprintf("%.*s%s%s", (int)(at - row), row, p, at + 2);
}

static void test_generator_rejects_bad_nvlink5(void **state)
{
    static const char header[] =
        "xid\tunit\tintrinfo_v1\tintrinfo_v2\terror_status\tnvidia_severity\t"
        "immediate_action\tinvestigatory_action\taction2\thw_sw\teffect\n";
    static const char p[] = "------000000----------0000100001\t------000000-------------0000001\t";
    static const struct {
        const char *row, *want;
    } bad[] = {
        { "74\tSAW_MVB\t%s0x1\tFatal\tRESET_GPU\tCONTACT_SUPPORT\t-\tHW\tx\n",
          "table.tsv:2: column 'xid': '74' is not an NVLink5 Xid (144..150)" },
        { "144\tsaw mvb\t%s0x1\tFatal\tRESET_GPU\tCONTACT_SUPPORT\t-\tHW\tx\n", "column 'unit'" },
        { "144\tSAW_MVB\t%s1\tFatal\tRESET_GPU\tCONTACT_SUPPORT\t-\tHW\tx\n",
          "column 'error_status': '1'" },
        { "144\tSAW_MVB\t%s0x1\tDeadly\tRESET_GPU\tCONTACT_SUPPORT\t-\tHW\tx\n",
          "column 'nvidia_severity': 'Deadly'" },
        { "144\tSAW_MVB\t%s0x1\tFatal\tRESET_GPU\tCONTACT_SUPPORT\t-\tHWSW\tx\n",
          "column 'hw_sw': 'HWSW'" },
        { "144\tSAW_MVB\t----\t%s0x1\tFatal\tRESET_GPU\tCONTACT_SUPPORT\t-\tHW\n",
          "column 'intrinfo_v1': '----'" },
    };
    char out[4096], *row, *table;

    (void)state;
    table = xasprintf("%s144\tSAW_MVB\t%s0x1\tFatal**\tRESET_GPU\tCONTACT_SUPPORT\t-\tHW\tx\n",
                      header, p);
    assert_int_equal(run_tsv2c("nvlink5", table, out, sizeof(out)), 0);
    free(table);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        row = with_patterns(bad[i].row, p);
        table = xasprintf("%s%s", header, row);
        assert_int_not_equal(run_tsv2c("nvlink5", table, out, sizeof(out)), 0);
        if (strstr(out, bad[i].want) == NULL)
            fail_msg("case %zu: want '%s' in: %s", i, bad[i].want, out);
        free(row);
        free(table);
    }
}

/* ---- health.xid on kernel-log lines ---- */

/* GPU 0 at 3b:00, GPU 1 at 0018:01:00, GPU 2 at 0019:01:00 (a Blackwell node's domains). */
static const char machine[] =
    "{\"schema\": \"gpudoctor.snapshot/1\", \"time_ms\": 1796202000000, \"window_ms\": 0,"
    "\"nvml\": {\"attempted\": true, \"device_count\": 3, \"driver_version\": \"580.95.05\"},"
    "\"gpus\": ["
    "{\"index\": 0, \"uuid\": \"GPU-00000000-aaaa-bbbb-cccc-dddddddddddd\","
    " \"pci_bus_id\": \"00000000:3B:00.0\"},"
    "{\"index\": 1, \"uuid\": \"GPU-11111111-aaaa-bbbb-cccc-dddddddddddd\","
    " \"pci_bus_id\": \"00000018:01:00.0\"},"
    "{\"index\": 2, \"uuid\": \"GPU-22222222-aaaa-bbbb-cccc-dddddddddddd\","
    " \"pci_bus_id\": \"00000019:01:00.0\"}]}";

struct run {
    struct snapshot *s;
    struct findings f;
};

/* The machine with these kernel messages (no stamps: their age is unknown, so they count). */
static void run_lines(struct run *r, const char *const *lines, size_t n)
{
    struct klog_parser p;
    struct rules_config cfg;
    char *cause = NULL;

    r->s = snapshot_from_json(machine, strlen(machine), "test", &cause);
    if (r->s == NULL)
        fail_msg("machine does not load: %s", cause);
    klog_parser_init(&p, NULL);
    for (size_t i = 0; i < n; i++)
        klog_feed_message(&p, lines[i], false, 0, false, 0);
    klog_parser_finish(&p, &r->s->driver);
    klog_parser_release(&p);
    memset(&cfg, 0, sizeof(cfg));
    thresholds_init(&cfg.th);
    memset(&r->f, 0, sizeof(r->f));
    rules_run(r->s, NULL, &cfg, &r->f);
}

static void run_free(struct run *r)
{
    findings_free(&r->f);
    snapshot_free(r->s);
}

/* The health.xid finding about Xid code on GPU gpu (-1: not a GPU of the snapshot), or NULL. */
static const struct finding *xfind(const struct run *r, int32_t gpu, int code)
{
    char want[32];

    snprintf(want, sizeof(want), "Xid %d (", code);
    for (size_t i = 0; i < r->f.n; i++) {
        const struct finding *f = &r->f.items[i];

        if (strcmp(f->rule->id, "health.xid") == 0 && f->subject.gpu_index == gpu &&
            strstr(f->title, want) != NULL)
            return f;
    }
    return NULL;
}

static const struct finding *xneed(const struct run *r, int32_t gpu, int code)
{
    const struct finding *f = xfind(r, gpu, code);

    if (f == NULL) {
        for (size_t i = 0; i < r->f.n; i++)
            print_message("  have: [%s] %s\n", r->f.items[i].rule->id, r->f.items[i].title);
        fail_msg("no health.xid finding for Xid %d on GPU %d", code, (int)gpu);
    }
    return f;
}

static bool has_fix(const struct finding *f, const char *text)
{
    for (size_t i = 0; i < f->n_fix; i++) {
        if (strstr(f->fix[i], text) != NULL)
            return true;
    }
    return false;
}

static bool has_fix_start(const struct finding *f, const char *text)
{
    for (size_t i = 0; i < f->n_fix; i++) {
        if (strncmp(f->fix[i], text, strlen(text)) == 0)
            return true;
    }
    return false;
}

static bool has_evidence(const struct finding *f, const char *text)
{
    for (size_t i = 0; i < f->n_evidence; i++) {
        if (strstr(f->evidence[i], text) != NULL)
            return true;
    }
    return false;
}

/*
 * Every fix line of every health.xid finding is a comment or a whole command of the few the rule
 * writes, and none holds a string from the log (forbidden: the names and messages of the lines).
 */
static void assert_fixes_safe(const struct run *r, const char *const *forbidden)
{
    static const char *const commands[] = {
        "sudo nvidia-smi -r -i ", "sudo nvidia-bug-report.sh   # ",
        "sudo dmesg -T | grep -E 'NVRM: Xid' | tail -20   # ",
        "sudo dmesg -T | grep -iE 'AER|pcieport' | tail -20   # ", "nvidia-smi nvlink -s -i "
    };

    for (size_t i = 0; i < r->f.n; i++) {
        const struct finding *f = &r->f.items[i];

        if (strcmp(f->rule->id, "health.xid") != 0)
            continue;
        assert_true(f->n_fix > 0);
        for (size_t k = 0; k < f->n_fix; k++) {
            const char *line = f->fix[k];
            bool ok = line[0] == '#';

            for (size_t c = 0; !ok && c < sizeof(commands) / sizeof(commands[0]); c++)
                ok = strncmp(line, commands[c], strlen(commands[c])) == 0;
            if (!ok)
                fail_msg("fix line is neither a comment nor a known command: %s", line);
            assert_null(strchr(line, '\n'));
            for (size_t j = 0; forbidden && forbidden[j]; j++) {
                if (strstr(line, forbidden[j]) != NULL)
                    fail_msg("fix line holds '%s' from the log: %s", forbidden[j], line);
            }
        }
    }
}

/* Xid 154: each recovery action the driver can name, as the last word on the GPU. */
static void test_finding_154_each_action(void **state)
{
    static const struct {
        const char *to;
        enum severity sev;
        const char *fix; /* a fix line holds this */
        const char *evidence;
    } cases[] = {
        { "0x0 (None)", SEV_INFO, "# nothing to do", "no recovery action is needed" },
        { "0x1 (GPU Reset Required)", SEV_CRITICAL, "sudo nvidia-smi -r -i 0", "reset it" },
        { "0x2 (Node Reboot Required)", SEV_CRITICAL, "sudo reboot", "reboot the node" },
        { "0x3 (Drain P2P)", SEV_WARNING, "peer-to-peer", "UVM persistence" },
        { "0x4 (Drain and Reset)", SEV_CRITICAL, "sudo nvidia-smi -r -i 0", "drain" },
        { "0x5 (Recover IMEX Domain)", SEV_CRITICAL, "IMEX domain", "fabric memory allocation" },
        { "0x6 (Unknown)", SEV_WARNING, "sudo dmesg", "does not know recovery action 0x6" },
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *line = xasprintf("NVRM: Xid (PCI:0000:3b:00): 154, GPU recovery action changed "
                               "from 0x0 (None) to %s",
                               cases[i].to);
        const char *lines[] = { line };
        const struct finding *f;
        struct run r;

        if (i == 0) { /* None after an earlier action: the latest one counts */
            free(line);
            line = xasprintf("NVRM: Xid (PCI:0000:3b:00): 154, GPU recovery action changed from "
                             "0x1 (GPU Reset Required) to 0x0 (None)");
            lines[0] = line;
        }
        run_lines(&r, lines, 1);
        f = xneed(&r, 0, 154);
        if (f->severity != cases[i].sev)
            fail_msg("%s: severity %d, want %d", cases[i].to, (int)f->severity, (int)cases[i].sev);
        if (!has_fix(f, cases[i].fix))
            fail_msg("%s: no fix line with '%s'", cases[i].to, cases[i].fix);
        if (!has_evidence(f, cases[i].evidence))
            fail_msg("%s: no evidence with '%s'", cases[i].to, cases[i].evidence);
        assert_true(has_evidence(f, "recovery action now: "));
        /* only a reboot is a reboot, only a reset needs a reset */
        assert_int_equal(has_fix(f, "sudo reboot"), strstr(cases[i].to, "Reboot") != NULL);
        assert_int_equal(has_fix(f, "nvidia-smi -r"), strstr(cases[i].to, "Reset") != NULL);
        assert_fixes_safe(&r, NULL);
        run_free(&r);
        free(line);
    }
}

/* A sequence on one GPU: the finding follows the last action, and names the one before. */
static void test_finding_154_sequence(void **state)
{
    static const char *const lines[] = {
        "NVRM: Xid (PCI:0019:01:00): 154, GPU recovery action changed from 0x0 (None) to 0x3 "
        "(Drain P2P)",
        "NVRM: Xid (PCI:0019:01:00): 154, GPU recovery action changed from 0x3 (Drain P2P) to 0x1 "
        "(GPU Reset Required)",
        /* an older snapshot's wording the parser cannot read leaves the last decoded one */
        "NVRM: Xid (PCI:0019:01:00): 154, GPU recovery action: Drain and Reset",
    };
    const struct finding *f;
    struct run r;

    (void)state;
    run_lines(&r, lines, 3);
    f = xneed(&r, 2, 154);
    assert_int_equal(f->severity, SEV_CRITICAL);
    assert_non_null(strstr(f->title, "GPU Reset Required"));
    assert_non_null(strstr(f->title, "3 times"));
    assert_true(has_evidence(f, "before: Drain P2P"));
    assert_true(has_fix(f, "sudo nvidia-smi -r -i 2"));
    run_free(&r);

    /* nothing decoded at all: a warning that says so */
    run_lines(&r, lines + 2, 1);
    f = xneed(&r, 2, 154);
    assert_int_equal(f->severity, SEV_WARNING);
    assert_true(has_evidence(f, "could not be read"));
    run_free(&r);
}

static void test_finding_119_48_13(void **state)
{
    static const char *const lines[] = {
        "NVRM: Xid (PCI:0000:3b:00): 119, pid=4121, name=python3, Timeout after 6s of waiting for "
        "RPC response from GPU0 GSP! Expected function 76 (GSP_RM_CONTROL) sequence 12345 "
        "(0x20802a02 0x8).",
        "NVRM: Xid (PCI:0018:01:00): 48, pid=4121, name=python3, Double Bit ECC Error",
        "NVRM: Xid (PCI:0019:01:00): 13, pid=5123, name=$(reboot);rm, Graphics SM Warp "
        "Exception on (GPC 1, TPC 0, SM 0): Out Of Range Address",
        "NVRM: Xid (PCI:0019:01:00): 13, pid=5124, name=`id`, Graphics SM Warp Exception",
    };
    static const char *const forbidden[] = { "python3",        "reboot);",     "`id`",
                                             "GSP_RM_CONTROL", "Out Of Range", NULL };
    const struct finding *f;
    struct run r;

    (void)state;
    run_lines(&r, lines, 4);
    f = xneed(&r, 0, 119);
    assert_int_equal(f->severity, SEV_CRITICAL);
    assert_true(has_evidence(f, "likely cause (driver)"));
    assert_true(has_evidence(f, "GSP firmware"));
    assert_true(has_fix(f, "sudo nvidia-smi -r -i 0"));
    assert_false(has_fix(f, "sudo reboot"));
    f = xneed(&r, 1, 48);
    assert_int_equal(f->severity, SEV_CRITICAL);
    assert_true(has_evidence(f, "likely cause (memory)"));
    assert_true(has_fix(f, "sudo nvidia-smi -r -i 1"));
    f = xneed(&r, 2, 13);
    assert_int_equal(f->severity, SEV_WARNING);
    assert_non_null(strstr(f->title, "2 times"));
    assert_true(has_evidence(f, "likely cause (application)"));
    /* the latest pid, an integer the parser read; the names stay in the evidence */
    assert_true(has_fix(f, "(pid 5124)"));
    assert_true(has_evidence(f, "`id`"));
    assert_false(has_fix(f, "nvidia-smi -r"));
    assert_fixes_safe(&r, forbidden);
    run_free(&r);
}

/* Xid 79 is health.gpu-lost's: health.xid leaves it out. */
static void test_finding_79(void **state)
{
    static const char *const lines[] = {
        "NVRM: Xid (PCI:0018:01:00): 79, GPU has fallen off the bus.",
    };
    struct run r;
    bool lost = false;

    (void)state;
    run_lines(&r, lines, 1);
    assert_null(xfind(&r, 1, 79));
    for (size_t i = 0; i < r.f.n; i++) {
        if (strcmp(r.f.items[i].rule->id, "health.gpu-lost") == 0 &&
            r.f.items[i].subject.gpu_index == 1) {
            lost = true;
            assert_int_equal(r.f.items[i].severity, SEV_CRITICAL);
        }
    }
    assert_true(lost);
    run_free(&r);
}

/* NVLink5: the printed word and NVIDIA's decode sheet set the severity and the fixes. */
static void test_finding_144_149(void **state)
{
    static const struct {
        const char *line;
        int32_t gpu;
        int code;
        enum severity sev;
        const char *evidence, *fix; /* fix NULL: no reset */
    } cases[] = {
        /* SAW_MVB status 0x8: non-fatal, IGNORE then CONTACT_SUPPORT */
        { "NVRM: Xid (PCI:0000:3b:00): 144, SAW_MVB Nonfatal XC0 i0 Link 0 (0x00000001 0x00000008 "
          "0x00000000 0x00000000 0x00000000 0x00000000)",
          0, 144, SEV_WARNING, "NVIDIA's decode (SAW_MVB, HW): Non-fatal; immediate action IGNORE",
          NULL },
        /* SAW_MVB status 0x2: fatal, RESET_GPU */
        { "NVRM: Xid (PCI:0000:3b:00): 144, SAW_MVB Fatal XC0 i0 Link 3 (0x00000001 0x00000002 "
          "0x00000000 0x00000000 0x00000000 0x00000000)",
          0, 144, SEV_CRITICAL, "on link 3, error status 0x00000002", "sudo nvidia-smi -r -i 0" },
        /* SAW_MVB status 0x4: IGNORE and IGNORE: information */
        { "NVRM: Xid (PCI:0000:3b:00): 144, SAW_MVB Nonfatal XC0 i0 Link 0 (0x00000001 0x00000004 "
          "0x00000000 0x00000000 0x00000000 0x00000000)",
          0, 144, SEV_INFO, "immediate action IGNORE, if it recurs IGNORE", NULL },
        /* NETIR_LINK_DOWN, sub-code 37: the peer device */
        { "NVRM: Xid (PCI:0019:01:00): 149, NETIR_LINK_EVT Fatal XC0 i0 Link 00 (0x025001c6 "
          "0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)",
          2, 149, SEV_CRITICAL, "sub-code 37", "sudo nvidia-smi -r -i 2" },
        /* a status the sheet lacks: the driver's word decides */
        { "NVRM: Xid (PCI:0018:01:00): 145, RLW_RXPIPE Nonfatal XC0 i0 Link 13 (0x0409a0c2 "
          "0x00000400 0x00000001 0x00000000 0x00100000 0x00000004)",
          1, 145, SEV_WARNING, "has no row for this unit", NULL },
        /* RLW_REMAP 0x1: XID_154_EVAL */
        { "NVRM: Xid (PCI:0018:01:00): 145, RLW_REMAP Nonfatal XC0 i0 Link 2 (0x00000004 "
          "0x00000001 0x00000000 0x00000000 0x00000000 0x00000000)",
          1, 145, SEV_WARNING, "XID_154_EVAL", NULL },
        /* MSE watchdog, no single link */
        { "NVRM: Xid (PCI:0018:01:00): 150, MSE_WATCHDOG Fatal XC0 i0 Link -1 (0x00000000 "
          "0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)",
          1, 150, SEV_CRITICAL, "(no single link)", "sudo nvidia-smi -r -i 1" },
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *lines[] = { cases[i].line };
        const struct finding *f;
        struct run r;

        run_lines(&r, lines, 1);
        f = xneed(&r, cases[i].gpu, cases[i].code);
        if (f->severity != cases[i].sev)
            fail_msg("case %zu: severity %d, want %d", i, (int)f->severity, (int)cases[i].sev);
        if (!has_evidence(f, cases[i].evidence))
            fail_msg("case %zu: no evidence with '%s'", i, cases[i].evidence);
        if (cases[i].fix)
            assert_true(has_fix(f, cases[i].fix));
        else
            assert_false(has_fix(f, "nvidia-smi -r"));
        assert_fixes_safe(&r, NULL);
        run_free(&r);
    }

    /* one group: the worst event sets the severity, and the peer is named */
    {
        static const char *const lines[] = { cases[0].line, cases[3].line };
        static const char *const two[] = {
            "NVRM: Xid (PCI:0019:01:00): 149, NETIR_LINK_EVT Fatal XC0 i0 Link 00 (0x025001c6 "
            "0x00000000)",
            "NVRM: Xid (PCI:0019:01:00): 149, NETIR_BER_EVENT Nonfatal XC0 i0 Link 01 (0x00000013 "
            "0x00000001)",
        };
        const struct finding *f;
        struct run r;

        run_lines(&r, lines, 2);
        assert_int_equal(xneed(&r, 0, 144)->severity, SEV_WARNING);
        assert_int_equal(xneed(&r, 2, 149)->severity, SEV_CRITICAL);
        run_free(&r);
        run_lines(&r, two, 2);
        f = xneed(&r, 2, 149);
        assert_int_equal(f->severity, SEV_CRITICAL);
        assert_true(has_evidence(f, "worst event: NETIR_LINK_EVT Fatal"));
        assert_true(has_fix(f, "peer"));
        run_free(&r);
    }
}

/* A consequence points at its cause; when the cause left no line, it stands for it. */
static void test_finding_45(void **state)
{
    static const char *const with_cause[] = {
        "NVRM: Xid (PCI:0000:3b:00): 48, pid=4121, name=python3, Double Bit ECC Error",
        "NVRM: Xid (PCI:0000:3b:00): 45, pid=4121, name=python3, Ch 00000008 caused by previous "
        "Xid 48",
    };
    static const char *const cause_missing[] = {
        "NVRM: Xid (PCI:0000:3b:00): 45, pid=4121, name=python3, Ch 00000008 caused by previous "
        "Xid 48",
    };
    static const char *const old_driver[] = {
        "NVRM: Xid (PCI:0000:3b:00): 13, pid=4121, name=python3, Graphics SM Warp Exception",
        "NVRM: Xid (PCI:0000:3b:00): 45, pid=4121, name=python3, Ch 00000008",
    };
    static const char *const alone[] = {
        "NVRM: Xid (PCI:0000:3b:00): 45, pid='<unknown>', name=<unknown>, Ch 00000008",
    };
    const struct finding *f;
    struct run r;

    (void)state;
    run_lines(&r, with_cause, 2);
    f = xneed(&r, 0, 45);
    assert_int_equal(f->severity, SEV_INFO);
    assert_non_null(strstr(f->title, "caused by Xid 48"));
    assert_true(has_evidence(f, "names Xid 48 (Double Bit ECC Error) as the cause: see that"));
    assert_int_equal(xneed(&r, 0, 48)->severity, SEV_CRITICAL);
    assert_fixes_safe(&r, NULL);
    run_free(&r);

    run_lines(&r, cause_missing, 1);
    f = xneed(&r, 0, 45);
    assert_int_equal(f->severity, SEV_CRITICAL);
    assert_true(has_evidence(f, "has no line of it: this finding stands for it"));
    run_free(&r);

    run_lines(&r, old_driver, 2);
    f = xneed(&r, 0, 45);
    assert_int_equal(f->severity, SEV_INFO);
    assert_true(has_evidence(f, "this GPU also has Xid 13"));
    run_free(&r);

    run_lines(&r, alone, 1);
    f = xneed(&r, 0, 45);
    assert_int_equal(f->severity, SEV_WARNING);
    assert_true(has_fix(f, "Fabric Manager"));
    assert_fixes_safe(&r, NULL);
    run_free(&r);
}

/* 94/95: RST and D-RST, unknown codes, codes only nverror.h has, a GPU the snapshot lacks. */
static void test_finding_containment_and_others(void **state)
{
    static const char *const lines[] = {
        "NVRM: Xid (PCI:0000:3b:00 GPU-I:05): 94, pid=7194, Contained: CE User Channel (0x9). "
        "RST: No, D-RST: No",
        "NVRM: Xid (PCI:0018:01:00): 94, pid=7194, Contained: SM (0x1). RST: Yes, D-RST: No",
        "NVRM: Xid (PCI:0019:01:00): 95, pid=7062, Uncontained: LTC TAG (0x2, 0x1). RST: Yes, "
        "D-RST: Yes",
        "NVRM: Xid (PCI:0000:3b:00): 999, something new",
        "NVRM: Xid (PCI:0018:01:00): 175, Timeout after 6s of waiting for RPC response from GPU1 "
        "GSP! Expected function 76 (GSP_RM_CONTROL) sequence 1 (0x0 0x0).",
        "NVRM: Xid (PCI:0000:aa:00): 48, Double Bit ECC Error",
    };
    const struct finding *f;
    struct run r;

    (void)state;
    run_lines(&r, lines, 6);
    f = xneed(&r, 0, 94);
    assert_int_equal(f->severity, SEV_WARNING);
    assert_true(has_evidence(f, "GPU reset required: no"));
    assert_false(has_fix(f, "nvidia-smi -r"));
    f = xneed(&r, 1, 94);
    assert_int_equal(f->severity, SEV_CRITICAL);
    assert_true(has_fix(f, "sudo nvidia-smi -r -i 1"));
    f = xneed(&r, 2, 95);
    assert_int_equal(f->severity, SEV_CRITICAL);
    assert_true(has_evidence(f, "drain and reset required: yes"));
    assert_true(has_fix(f, "# drain"));
    assert_true(has_fix(f, "sudo nvidia-smi -r -i 2"));
    f = xneed(&r, 0, 999);
    assert_int_equal(f->severity, SEV_WARNING);
    assert_true(has_evidence(f, "does not list Xid 999"));
    f = xneed(&r, 1, 175);
    assert_int_equal(f->severity, SEV_CRITICAL);
    assert_true(has_evidence(f, "newer than NVIDIA's Xid catalogue"));
    assert_true(has_fix(f, "sudo nvidia-smi -r -i 1"));
    /* not a GPU of the snapshot: no index to reset, so a comment says how to find it */
    f = xneed(&r, -1, 48);
    assert_non_null(strstr(f->title, "GPU at PCI 0000:aa:00"));
    assert_false(has_fix_start(f, "sudo nvidia-smi -r -i "));
    assert_true(has_fix_start(f, "# "));
    assert_true(has_fix(f, "nvidia-smi -r -i INDEX"));
    assert_fixes_safe(&r, NULL);
    run_free(&r);
}

/* Every catalogue code in every header format: one finding per code and GPU, each with its
 * catalogue severity or a decoded refinement, and only safe fix lines. */
static void test_finding_every_code(void **state)
{
    struct klog_parse_opts o = { 4096, 0, 1796202000000 };
    struct klog_parser p;
    struct rules_config cfg;
    struct run r;
    char *path = xasprintf("%s/klog/xid-every-code.log", TEST_FIXTURES), *text = NULL,
         *cause = NULL;
    ssize_t n = file_slurp_at(AT_FDCWD, path, 4u << 20, &text);
    size_t codes, found = 0;
    const struct xid_info *all = xid_all(&codes);

    (void)state;
    assert_true(n > 0);
    r.s = snapshot_from_json(machine, strlen(machine), "test", &cause);
    assert_non_null(r.s);
    klog_parser_init(&p, &o);
    for (char *line = text, *nl; line < text + n; line = nl + 1) {
        nl = strchr(line, '\n');
        assert_non_null(nl);
        klog_feed_syslog(&p, line, (size_t)(nl - line));
    }
    klog_parser_finish(&p, &r.s->driver);
    klog_parser_release(&p);
    memset(&cfg, 0, sizeof(cfg));
    thresholds_init(&cfg.th);
    memset(&r.f, 0, sizeof(r.f));
    rules_run(r.s, NULL, &cfg, &r.f);
    for (size_t i = 0; i < codes; i++) {
        const struct finding *f = xfind(&r, 0, all[i].code);

        if (all[i].code == 79) {
            assert_null(f);
            continue;
        }
        if (f == NULL)
            fail_msg("no finding for Xid %d", (int)all[i].code);
        found++;
        assert_non_null(strstr(f->title, all[i].meaning));
        assert_non_null(strstr(f->title, "3 times"));
    }
    assert_int_equal(found, codes - 1);
    assert_fixes_safe(&r, NULL);
    free(text);
    free(path);
    run_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_row_round_trips),
        cmocka_unit_test(test_whole_catalogue),
        cmocka_unit_test(test_known_meanings),
        cmocka_unit_test(test_unknown_codes),
        cmocka_unit_test(test_sorted_and_unique),
        cmocka_unit_test(test_nvlink5_rows),
        cmocka_unit_test(test_nvlink5_lookup),
        cmocka_unit_test(test_generator_rejects_bad_tables),
        cmocka_unit_test(test_generator_rejects_bad_nvlink5),
        cmocka_unit_test(test_finding_154_each_action),
        cmocka_unit_test(test_finding_154_sequence),
        cmocka_unit_test(test_finding_119_48_13),
        cmocka_unit_test(test_finding_79),
        cmocka_unit_test(test_finding_144_149),
        cmocka_unit_test(test_finding_45),
        cmocka_unit_test(test_finding_containment_and_others),
        cmocka_unit_test(test_finding_every_code),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
