/*
 * tsv2c: turns a data table of data/ into C at build time, so the TSV stays the one source of
 * truth and gpudoctor carries the table without reading files at run time.
 *
 *   tsv2c xid        data/xid.tsv                 xid-table.c
 *   tsv2c nvlink5    data/xid-nvlink5.tsv         nvlink5-table.c
 *   tsv2c cudacompat data/cuda-driver-compat.tsv  cudacompat-table.c
 *   tsv2c gpuspecs   data/gpu-specs.tsv           gpuspecs-table.c
 *   tsv2c sxid       data/sxid.tsv                sxid-table.c
 *   tsv2c cudaerr    data/cuda-errors.tsv         cudaerr-table.c
 *   tsv2c cudaarch   data/cuda-arch.tsv           cudaarch-table.c
 *   tsv2c torchbuilds data/torch-builds.tsv       torchbuilds-table.c
 *   tsv2c cudasonames data/cuda-sonames.tsv       cudasonames-table.c
 *
 * Lines starting with '#' are comments; the first other line names the columns, and columns are
 * found by name, so adding a column to the TSV does not break the build. Every value is checked:
 * a bad one stops the build with "file:line: column 'x': what is wrong".
 */
#include "data/cudaerr.h"
#include "data/sxid.h"
#include "data/torchbuilds.h"
#include "data/xid.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_COLS 64

struct tsv {
    const char *path;
    char *text;
    char *header[MAX_COLS];
    size_t n_header;
    /* the current row */
    char *cell[MAX_COLS];
    size_t n_cells;
    int line;
    char *next; /* where the next line starts */
};

static int fail(const struct tsv *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(const struct tsv *t, const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "%s:%d: ", t->path, t->line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return -1;
}

/*
 * The end of a generator's loop over the rows: r, the last read's result (< 0: an error, said);
 * a table without rows is refused; else the array is closed and its count written as NAME.
 */
static int end_rows(const struct tsv *t, FILE *out, int r, int rows, const char *name)
{
    if (r < 0)
        return -1;
    if (rows == 0)
        return fail(t, "no rows");
    fprintf(out, "};\n\nconst size_t %s = %d;\n", name, rows);
    return 0;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    size_t cap = 1 << 16, len = 0;
    char *buf;

    if (f == NULL) {
        fprintf(stderr, "tsv2c: %s: %s\n", path, strerror(errno));
        return NULL;
    }
    buf = malloc(cap);
    for (;;) {
        size_t n;

        if (buf == NULL) {
            fprintf(stderr, "tsv2c: out of memory\n");
            fclose(f);
            return NULL;
        }
        n = fread(buf + len, 1, cap - len - 1, f);
        len += n;
        if (n == 0)
            break;
        if (len + 1 >= cap) {
            char *bigger = realloc(buf, cap * 2);

            if (bigger == NULL)
                free(buf);
            buf = bigger;
            cap *= 2;
        }
    }
    fclose(f);
    buf[len] = '\0';
    if (memchr(buf, '\0', len) != NULL) {
        fprintf(stderr, "%s: contains a NUL byte: not a text table\n", path);
        free(buf);
        return NULL;
    }
    return buf;
}

/* Splits line (modified in place) at tabs into out; returns the count or -1 when too many. */
static int split(char *line, char **out)
{
    size_t n = 0;

    for (;;) {
        char *tab = strchr(line, '\t');

        if (n == MAX_COLS)
            return -1;
        out[n++] = line;
        if (tab == NULL)
            break;
        *tab = '\0';
        line = tab + 1;
    }
    return (int)n;
}

/* Advances to the next non-comment, non-empty line. Returns 1 with it in line, 0 at the end. */
static int next_line(struct tsv *t, char **line)
{
    while (t->next != NULL && *t->next != '\0') {
        char *l = t->next, *nl = strchr(l, '\n');
        size_t len;

        t->line++;
        if (nl != NULL) {
            *nl = '\0';
            t->next = nl + 1;
        } else {
            t->next = NULL;
        }
        len = strlen(l);
        if (len > 0 && l[len - 1] == '\r')
            l[--len] = '\0';
        if (len == 0 || l[0] == '#')
            continue;
        *line = l;
        return 1;
    }
    return 0;
}

static int tsv_open(struct tsv *t, const char *path)
{
    char *line;
    int n;

    memset(t, 0, sizeof(*t));
    t->path = path;
    t->text = slurp(path);
    if (t->text == NULL)
        return -1;
    t->next = t->text;
    if (!next_line(t, &line))
        return fail(t, "no header line naming the columns");
    n = split(line, t->header);
    if (n < 0)
        return fail(t, "more than %d columns", MAX_COLS);
    t->n_header = (size_t)n;
    return 0;
}

/* Reads the next row; 1 = a row, 0 = end, -1 = error (reported). */
static int tsv_row(struct tsv *t)
{
    char *line;
    int n;

    if (!next_line(t, &line))
        return 0;
    n = split(line, t->cell);
    if (n < 0 || (size_t)n != t->n_header)
        return fail(t, "%d columns, the header names %zu", n, t->n_header);
    t->n_cells = (size_t)n;
    return 1;
}

static int col(const struct tsv *t, const char *name)
{
    for (size_t i = 0; i < t->n_header; i++) {
        if (strcmp(t->header[i], name) == 0)
            return (int)i;
    }
    return -1;
}

static int need_cols(struct tsv *t, const char *const *names, int *idx, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        idx[i] = col(t, names[i]);
        if (idx[i] < 0) {
            t->line = 0;
            return fail(t, "no column named '%s'", names[i]);
        }
    }
    return 0;
}

/* A C string literal for s, or NULL. Non-ASCII bytes become octal escapes. */
static void put_str(FILE *out, const char *s)
{
    if (s == NULL) {
        fputs("NULL", out);
        return;
    }
    fputc('"', out);
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c == '"' || *c == '\\')
            fprintf(out, "\\%c", *c);
        else if (*c < 0x20 || *c >= 0x7f)
            fprintf(out, "\\%03o", *c);
        else
            fputc(*c, out);
    }
    fputc('"', out);
}

/* "1.2.3": digits and single dots, 1 to 4 components. */
static int is_version(const char *s)
{
    int parts = 0;

    for (;;) {
        if (!isdigit((unsigned char)*s))
            return 0;
        while (isdigit((unsigned char)*s))
            s++;
        parts++;
        if (*s == '\0')
            return parts <= 4;
        if (*s != '.')
            return 0;
        s++;
    }
}

/* ">=550.54.14" or "550.54.14" -> "550.54.14"; NULL with an error reported when not a version. */
static const char *driver_cell(struct tsv *t, int c, const char *what)
{
    const char *v = t->cell[c];

    if (strncmp(v, ">=", 2) == 0)
        v += 2;
    if (!is_version(v)) {
        fail(t, "column '%s': '%s' is not a driver version (%s)", t->header[c], t->cell[c], what);
        return NULL;
    }
    return v;
}

/* ---- xid ---- */

static const char *const category_names[] = {
#define XID_CAT_NAME(id, name, label) name,
    XID_CATEGORIES(XID_CAT_NAME)
#undef XID_CAT_NAME
};
static const char *const category_enums[] = {
#define XID_CAT_ID(id, name, label) "XID_CAT_" #id,
    XID_CATEGORIES(XID_CAT_ID)
#undef XID_CAT_ID
};
static const char *const severity_names[] = {
#define XID_SEV_NAME(id, name) name,
    XID_SEVERITIES(XID_SEV_NAME)
#undef XID_SEV_NAME
};
static const char *const severity_enums[] = {
#define XID_SEV_ID(id, name) "XID_SEV_" #id,
    XID_SEVERITIES(XID_SEV_ID)
#undef XID_SEV_ID
};

/* The index of s in names[0..n), or -1. */
static int find_name(const char *const *names, size_t n, const char *s)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(names[i], s) == 0)
            return (int)i;
    }
    return -1;
}

static bool is_ident(const char *s)
{
    if (*s == '\0')
        return false;
    for (; *s; s++) {
        if (!isupper((unsigned char)*s) && !isdigit((unsigned char)*s) && *s != '_')
            return false;
    }
    return true;
}

/* gpud's "-", or "fatal", "warning:reboot+inspect": an event type and repair actions. */
static bool is_gpud_action(const char *s)
{
    static const char *const types[] = { "fatal", "critical", "warning", "info" };
    static const char *const actions[] = { "reboot", "inspect", "check-app", "ignore" };
    size_t n;
    bool type = false;

    if (strcmp(s, "-") == 0)
        return true;
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]) && !type; i++) {
        n = strlen(types[i]);
        if (strncmp(s, types[i], n) == 0 && (s[n] == '\0' || s[n] == ':')) {
            type = true;
            s += n;
        }
    }
    if (!type)
        return false;
    if (*s == '\0')
        return true;
    do {
        bool found = false;

        s++; /* ':' or '+' */
        for (size_t i = 0; i < sizeof(actions) / sizeof(actions[0]) && !found; i++) {
            n = strlen(actions[i]);
            if (strncmp(s, actions[i], n) == 0 && (s[n] == '\0' || s[n] == '+')) {
                found = true;
                s += n;
            }
        }
        if (!found)
            return false;
    } while (*s == '+');
    return *s == '\0';
}

/* An example line must be a driver Xid line of its own code: "NVRM: Xid (...): CODE, ...". */
static bool example_is_code(const char *s, long code)
{
    const char *p = strstr(s, "NVRM: Xid (");
    char *end;
    long v;

    if (p == NULL || (p = strstr(p, "): ")) == NULL)
        return false;
    errno = 0;
    v = strtol(p + 3, &end, 10);
    return errno == 0 && v == code && *end == ',';
}

static int gen_xid(struct tsv *t, FILE *out)
{
    static const char *const names[] = {
        "xid",
        "listed_in",
        "nverror_name",
        "catalog_mnemonic",
        "catalog_description",
        "catalog_immediate_action",
        "catalog_investigatory_action",
        "doc_r555_name",
        "k8s_dp_app_error",
        "dcgm_health",
        "gpud_action",
        "meaning",
        "category",
        "severity",
        "typical_cause",
        "recommended_action",
        "example_log",
        /* the cause flags, in enum xid_cause_bit order */
        "HW",
        "DRV",
        "APP",
        "SYSMEM",
        "BUS",
        "THERM",
        "FB",
    };
    static const char *const listed_names[] = { "catalog+nverror", "catalog", "nverror" };
    static const char *const listed_enums[] = { "XID_LISTED_BOTH", "XID_LISTED_CATALOG",
                                                "XID_LISTED_NVERROR" };
    enum {
        XID,
        LISTED,
        NAME,
        MNEM,
        DESC,
        IMM,
        INV,
        R555,
        K8S,
        DCGM,
        GPUD,
        MEANING,
        CATEGORY,
        SEVERITY,
        TYPICAL,
        ACTION,
        EXAMPLE,
        FLAGS
    };
    int c[sizeof(names) / sizeof(names[0])];
    long last = 0;
    int r, rows = 0;

    if (need_cols(t, names, c, sizeof(names) / sizeof(names[0])) != 0)
        return -1;
    fprintf(out, "#include \"data/xid.h\"\n\nconst struct xid_info xid_rows[] = {\n");
    while ((r = tsv_row(t)) == 1) {
        const char *v[sizeof(names) / sizeof(names[0])];
        char *end;
        long code;
        unsigned causes = 0, unknown = 0;
        int listed, cat, sev;
        bool in_catalog, in_nverror;

        for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++)
            v[k] = t->cell[c[k]];
        errno = 0;
        code = strtol(v[XID], &end, 10);
        if (errno != 0 || end == v[XID] || *end != '\0' || code <= 0 || code > 100000)
            return fail(t, "column 'xid': '%s' is not an Xid number", v[XID]);
        if (code <= last)
            return fail(t, "column 'xid': %ld after %ld: rows must be sorted and unique", code,
                        last);
        last = code;
        listed = find_name(listed_names, 3, v[LISTED]);
        if (listed < 0)
            return fail(t, "column 'listed_in': '%s' is not catalog+nverror, catalog or nverror",
                        v[LISTED]);
        in_catalog = listed != 2;
        in_nverror = listed != 1;
        if (in_nverror ? !is_ident(v[NAME]) : strcmp(v[NAME], "-") != 0)
            return fail(t, "column 'nverror_name': '%s' must be %s (listed_in is %s)", v[NAME],
                        in_nverror ? "a #define name" : "'-'", v[LISTED]);
        if (in_catalog) {
            if (v[MNEM][0] == '\0' || strcmp(v[MNEM], "-") == 0 || v[DESC][0] == '\0' ||
                strcmp(v[DESC], "-") == 0)
                return fail(t, "column '%s' is empty but listed_in says the catalogue has it",
                            v[MNEM][0] == '\0' || strcmp(v[MNEM], "-") == 0 ? names[MNEM]
                                                                            : names[DESC]);
        } else if (strcmp(v[MNEM], "-") != 0 || strcmp(v[DESC], "-") != 0 || v[IMM][0] ||
                   v[INV][0]) {
            return fail(t, "catalogue columns must be '-' or empty: listed_in is nverror");
        }
        for (int f = 0; f < 7; f++) {
            const char *x = v[FLAGS + f];

            if (strcmp(x, "Y") == 0)
                causes |= 1u << f;
            else if (strcmp(x, "?") == 0)
                unknown++;
            else if (strcmp(x, "N") != 0)
                return fail(t, "column '%s': '%s' is not Y, N or ?", names[FLAGS + f], x);
        }
        if (unknown != 0 && unknown != 7)
            return fail(t, "cause flags mix '?' with Y/N");
        if ((unknown == 7) != (strcmp(v[R555], "?") == 0))
            return fail(t, "column 'doc_r555_name': '%s' but the cause flags %s", v[R555],
                        unknown ? "are '?'" : "are known");
        if (strcmp(v[K8S], "Y") != 0 && strcmp(v[K8S], "N") != 0)
            return fail(t, "column 'k8s_dp_app_error': '%s' is not Y or N", v[K8S]);
        if (strcmp(v[DCGM], "FAIL") != 0 && strcmp(v[DCGM], "WARN") != 0 &&
            strcmp(v[DCGM], "-") != 0)
            return fail(t, "column 'dcgm_health': '%s' is not FAIL, WARN or -", v[DCGM]);
        if (!is_gpud_action(v[GPUD]))
            return fail(t,
                        "column 'gpud_action': '%s' is not '-' or TYPE[:ACTION+...] (fatal, "
                        "warning, info; reboot, inspect, check-app, ignore)",
                        v[GPUD]);
        cat = find_name(category_names, XID_CAT__COUNT, v[CATEGORY]);
        if (cat < 0)
            return fail(t, "column 'category': '%s' is not a category of src/data/xid.h",
                        v[CATEGORY]);
        sev = find_name(severity_names, XID_SEV__COUNT, v[SEVERITY]);
        if (sev < 0)
            return fail(t, "column 'severity': '%s' is not info, warning or critical", v[SEVERITY]);
        if (v[MEANING][0] == '\0' || v[TYPICAL][0] == '\0' || v[ACTION][0] == '\0')
            return fail(t, "column '%s' is empty",
                        v[MEANING][0] == '\0'   ? names[MEANING]
                        : v[TYPICAL][0] == '\0' ? names[TYPICAL]
                                                : names[ACTION]);
        if (v[EXAMPLE][0] && !example_is_code(v[EXAMPLE], code))
            return fail(t, "column 'example_log': not a driver line of Xid %ld", code);
        fprintf(out, "    { %ld, %s, ", code, listed_enums[listed]);
        put_str(out, in_nverror ? v[NAME] : NULL);
        fputs(", ", out);
        put_str(out, in_catalog ? v[MNEM] : NULL);
        fputs(", ", out);
        put_str(out, in_catalog ? v[DESC] : NULL);
        fputs(", ", out);
        put_str(out, v[IMM][0] ? v[IMM] : NULL);
        fputs(", ", out);
        put_str(out, v[INV][0] ? v[INV] : NULL);
        fputs(", ", out);
        put_str(out, unknown ? NULL : v[R555]);
        fputs(", ", out);
        put_str(out, v[MEANING]);
        fprintf(out, ", %s, %s, 0x%02xu, %s, %s, ", category_enums[cat], severity_enums[sev],
                causes, unknown ? "false" : "true", strcmp(v[K8S], "Y") == 0 ? "true" : "false");
        put_str(out, strcmp(v[DCGM], "-") == 0 ? NULL : v[DCGM]);
        fputs(", ", out);
        put_str(out, strcmp(v[GPUD], "-") == 0 ? NULL : v[GPUD]);
        fputs(", ", out);
        put_str(out, v[TYPICAL]);
        fputs(", ", out);
        put_str(out, v[ACTION]);
        fputs(", ", out);
        put_str(out, v[EXAMPLE][0] ? v[EXAMPLE] : NULL);
        fputs(" },\n", out);
        rows++;
    }
    return end_rows(t, out, r, rows, "xid_n_rows");
}

/* ---- nvlink5 ---- */

/* "------000000----------0000100001": 32 of 0, 1, -, bit 31 first -> mask and bits. */
static bool parse_pattern(const char *s, uint32_t *mask, uint32_t *bits)
{
    *mask = 0;
    *bits = 0;
    if (strlen(s) != 32)
        return false;
    for (int i = 0; i < 32; i++) {
        uint32_t bit = 1u << (31 - i);

        if (s[i] == '0' || s[i] == '1') {
            *mask |= bit;
            if (s[i] == '1')
                *bits |= bit;
        } else if (s[i] != '-') {
            return false;
        }
    }
    return true;
}

/* "Fatal", "Link Fatal", "Non-fatal", with the sheet's footnote marks ('*', '?') after it. */
static int severity_fatal(const char *s)
{
    static const char *const words[] = { "Non-fatal", "Fatal", "Link Fatal" };

    for (int i = 0; i < 3; i++) {
        size_t n = strlen(words[i]);

        if (strncmp(s, words[i], n) == 0 && strspn(s + n, "*?") == strlen(s + n))
            return i != 0;
    }
    return -1;
}

static int gen_nvlink5(struct tsv *t, FILE *out)
{
    static const char *const names[] = {
        "xid",
        "unit",
        "intrinfo_v1",
        "intrinfo_v2",
        "error_status",
        "nvidia_severity",
        "immediate_action",
        "investigatory_action",
        "action2",
        "hw_sw",
        "effect",
    };
    static const char *const hw_sw[] = { "HW", "SW", "FW", "HW/SW", "NA" };
    enum { XID, UNIT, V1, V2, STATUS, SEVERITY, IMM, INV, ACTION2, HWSW, EFFECT };
    int c[sizeof(names) / sizeof(names[0])];
    int r, rows = 0;

    if (need_cols(t, names, c, sizeof(names) / sizeof(names[0])) != 0)
        return -1;
    fprintf(out,
            "#include \"data/xid.h\"\n\nconst struct xid_nvlink5_rule xid_nvlink5_rows[] = {\n");
    while ((r = tsv_row(t)) == 1) {
        const char *v[sizeof(names) / sizeof(names[0])];
        uint32_t m1, b1, m2, b2;
        unsigned long status;
        char *end;
        long code;
        int fatal;

        for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++)
            v[k] = t->cell[c[k]];
        errno = 0;
        code = strtol(v[XID], &end, 10);
        if (errno != 0 || *end != '\0' || code < XID_NVLINK5_FIRST || code > XID_NVLINK5_LAST)
            return fail(t, "column 'xid': '%s' is not an NVLink5 Xid (%d..%d)", v[XID],
                        XID_NVLINK5_FIRST, XID_NVLINK5_LAST);
        if (strspn(v[UNIT], "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_/") != strlen(v[UNIT]) ||
            v[UNIT][0] == '\0')
            return fail(t, "column 'unit': '%s' is not a unit name (A-Z, 0-9, _ and /)", v[UNIT]);
        if (!parse_pattern(v[V1], &m1, &b1))
            return fail(t, "column 'intrinfo_v1': '%s' is not 32 of 0, 1 and -", v[V1]);
        if (!parse_pattern(v[V2], &m2, &b2))
            return fail(t, "column 'intrinfo_v2': '%s' is not 32 of 0, 1 and -", v[V2]);
        errno = 0;
        status = strtoul(v[STATUS], &end, 16);
        if (strncmp(v[STATUS], "0x", 2) != 0 || errno != 0 || *end != '\0' ||
            status > 0xffffffffUL || end - v[STATUS] < 3)
            return fail(t, "column 'error_status': '%s' is not a 32-bit hex number (0x...)",
                        v[STATUS]);
        fatal = severity_fatal(v[SEVERITY]);
        if (fatal < 0)
            return fail(t, "column 'nvidia_severity': '%s' is not Fatal, Link Fatal or Non-fatal",
                        v[SEVERITY]);
        if (!is_ident(v[IMM]))
            return fail(t, "column 'immediate_action': '%s' is not a resolution bucket", v[IMM]);
        if (v[INV][0] == '\0' || v[EFFECT][0] == '\0' || v[ACTION2][0] == '\0')
            return fail(t, "column '%s' is empty",
                        v[INV][0] == '\0'      ? names[INV]
                        : v[EFFECT][0] == '\0' ? names[EFFECT]
                                               : names[ACTION2]);
        if (find_name(hw_sw, 5, v[HWSW]) < 0)
            return fail(t, "column 'hw_sw': '%s' is not HW, SW, FW, HW/SW or NA", v[HWSW]);
        fprintf(out, "    { %ld, ", code);
        put_str(out, v[UNIT]);
        fprintf(out, ", 0x%08xu, 0x%08xu, 0x%08xu, 0x%08xu, 0x%08lxu, ", m1, b1, m2, b2, status);
        put_str(out, v[SEVERITY]);
        fprintf(out, ", %s, ", fatal ? "true" : "false");
        put_str(out, v[IMM]);
        fputs(", ", out);
        put_str(out, v[INV]);
        fputs(", ", out);
        put_str(out, strcmp(v[ACTION2], "-") == 0 ? NULL : v[ACTION2]);
        fputs(", ", out);
        put_str(out, v[HWSW]);
        fputs(", ", out);
        put_str(out, v[EFFECT]);
        fputs(" },\n", out);
        rows++;
    }
    return end_rows(t, out, r, rows, "xid_nvlink5_n_rows");
}

/* ---- sxid ---- */

static int gen_sxid(struct tsv *t, FILE *out)
{
    static const char *const names[] = { "sxid", "class", "name" };
    static const char *const classes[] = {
#define SXID_CLASS_NAME(id, name) name,
        SXID_CLASSES(SXID_CLASS_NAME)
#undef SXID_CLASS_NAME
    };
    static const char *const class_ids[] = {
#define SXID_CLASS_ID(id, name) "SXID_CLASS_" #id,
        SXID_CLASSES(SXID_CLASS_ID)
#undef SXID_CLASS_ID
    };
    int c[3], r, rows = 0, cls;
    long prev = -1;

    if (need_cols(t, names, c, 3) != 0)
        return -1;
    fprintf(out, "#include \"data/sxid.h\"\n\nconst struct sxid_info sxid_rows[] = {\n");
    while ((r = tsv_row(t)) == 1) {
        const char *num = t->cell[c[0]], *klass = t->cell[c[1]], *name = t->cell[c[2]];
        char *end;
        long code;

        errno = 0;
        code = strtol(num, &end, 10);
        if (errno != 0 || *end != '\0' || code < 1 || code > 99999 || end - num != 5)
            return fail(t, "column 'sxid': '%s' is not a five-digit SXid", num);
        if (code <= prev)
            return fail(t, "column 'sxid': %ld after %ld: the rows must be sorted by number, once",
                        code, prev);
        prev = code;
        cls = find_name(classes, SXID_CLASS__COUNT, klass);
        if (cls < 0)
            return fail(t, "column 'class': '%s' is not corrected, nonfatal, fatal or always_fatal",
                        klass);
        if (name[0] == '\0')
            return fail(t, "column 'name' is empty");
        fprintf(out, "    { %ld, %s, ", code, class_ids[cls]);
        put_str(out, name);
        fputs(" },\n", out);
        rows++;
    }
    return end_rows(t, out, r, rows, "sxid_n_rows");
}

/* ---- cudaerr ---- */

static int gen_cudaerr(struct tsv *t, FILE *out)
{
    static const char *const names[] = { "api", "number", "name", "kind", "pattern", "meaning" };
    static const char *const apis[] = {
        "cuda-runtime", "cuda-driver", "pytorch", "nccl",       "nvidia-container-toolkit",
        "nvml",         "docker",      "dlopen",  "tensorflow", "cudnn",
        "python",       "linux",       "cublas",  "kmod",       "pycuda"
    };
    static const char *const kinds[] = {
#define CUDAERR_KIND_NAME(id, name) name,
        CUDAERR_KINDS(CUDAERR_KIND_NAME)
#undef CUDAERR_KIND_NAME
    };
    static const char *const kind_ids[] = {
#define CUDAERR_KIND_ID(id, name) "CUDAERR_" #id,
        CUDAERR_KINDS(CUDAERR_KIND_ID)
#undef CUDAERR_KIND_ID
    };
    enum { API, NUMBER, NAME, KIND, PATTERN, MEANING };
    int c[6], r, rows = 0, kind;

    if (need_cols(t, names, c, 6) != 0)
        return -1;
    fprintf(out, "#include \"data/cudaerr.h\"\n\nconst struct cudaerr_info cudaerr_rows[] = {\n");
    while ((r = tsv_row(t)) == 1) {
        const char *v[6];
        long number = -1;

        for (int k = 0; k < 6; k++)
            v[k] = t->cell[c[k]];
        if (find_name(apis, sizeof(apis) / sizeof(apis[0]), v[API]) < 0)
            return fail(t,
                        "column 'api': '%s' is not cuda-runtime, cuda-driver, pytorch, nccl, "
                        "nvidia-container-toolkit, nvml, docker, dlopen, tensorflow, cudnn, "
                        "python, linux or cublas",
                        v[API]);
        if (strcmp(v[NUMBER], "-") != 0) {
            char *end;

            errno = 0;
            number = strtol(v[NUMBER], &end, 10);
            if (errno != 0 || end == v[NUMBER] || *end != '\0' || number < 0 || number > 100000)
                return fail(t, "column 'number': '%s' is not an error number or -", v[NUMBER]);
        }
        kind = find_name(kinds, CUDAERR__COUNT, v[KIND]);
        if (kind < 0)
            return fail(t, "column 'kind': '%s' is not a kind of src/data/cudaerr.h", v[KIND]);
        if (strlen(v[NAME]) < 4 || (strlen(v[PATTERN]) < 4 && strcmp(v[PATTERN], "-") != 0))
            return fail(t, "column '%s' is shorter than 4 characters: it would match anything",
                        strlen(v[NAME]) < 4 ? "name" : "pattern");
        if (v[PATTERN][0] == '*' || v[PATTERN][strlen(v[PATTERN]) - 1] == '*' ||
            strstr(v[PATTERN], "**") != NULL)
            return fail(t, "column 'pattern': '%s': '*' stands between two parts", v[PATTERN]);
        if (v[MEANING][0] == '\0')
            return fail(t, "column 'meaning' is empty");
        fputs("    { ", out);
        put_str(out, v[API]);
        fprintf(out, ", %ld, ", number);
        put_str(out, v[NAME]);
        fprintf(out, ", %s, ", kind_ids[kind]);
        put_str(out, strcmp(v[PATTERN], "-") == 0 ? NULL : v[PATTERN]);
        fputs(", ", out);
        put_str(out, v[MEANING]);
        fputs(" },\n", out);
        rows++;
    }
    return end_rows(t, out, r, rows, "cudaerr_n_rows");
}

/* ---- cudacompat ---- */

static int gen_cudacompat(struct tsv *t, FILE *out)
{
    static const char *const names[] = {
        "toolkit",
        "toolkit_version",
        "linux_x86_64_toolkit_driver_min",
        "windows_x86_64_toolkit_driver_min",
        "compat_min_linux",
        "compat_below",
        "source",
    };
    enum { TOOLKIT, VERSION, LINUX, WINDOWS, COMPAT, BELOW, SOURCE };
    int c[sizeof(names) / sizeof(names[0])];
    int r, rows = 0;

    if (need_cols(t, names, c, sizeof(names) / sizeof(names[0])) != 0)
        return -1;
    fprintf(out, "#include \"data/cudacompat.h\"\n\nconst struct cuda_release cuda_rows[] = {\n");
    while ((r = tsv_row(t)) == 1) {
        const char *linux_min, *windows = NULL, *compat = NULL, *below = NULL;

        if (t->cell[c[TOOLKIT]][0] == '\0')
            return fail(t, "column 'toolkit' is empty");
        if (!is_version(t->cell[c[VERSION]]) || strchr(t->cell[c[VERSION]], '.') == NULL)
            return fail(t, "column 'toolkit_version': '%s' is not a version such as 12.4.1",
                        t->cell[c[VERSION]]);
        linux_min = driver_cell(t, c[LINUX], "the toolkit's Linux driver");
        if (linux_min == NULL)
            return -1;
        if (strcmp(t->cell[c[WINDOWS]], "N/A") != 0 &&
            (windows = driver_cell(t, c[WINDOWS], "Windows driver or N/A")) == NULL)
            return -1;
        if (strcmp(t->cell[c[COMPAT]], "-") != 0 &&
            (compat = driver_cell(t, c[COMPAT], "minor-compat minimum or -")) == NULL)
            return -1;
        if (strcmp(t->cell[c[BELOW]], "-") != 0 &&
            (below = driver_cell(t, c[BELOW], "end of the compat range or -")) == NULL)
            return -1;
        fputs("    { ", out);
        put_str(out, t->cell[c[TOOLKIT]]);
        fputs(", ", out);
        put_str(out, t->cell[c[VERSION]]);
        fputs(", ", out);
        put_str(out, linux_min);
        fputs(", ", out);
        put_str(out, windows);
        fputs(", ", out);
        put_str(out, compat);
        fputs(", ", out);
        put_str(out, below);
        fprintf(out, ", %s, ", strncmp(t->cell[c[SOURCE]], "SECONDARY", 9) == 0 ? "true" : "false");
        put_str(out, t->cell[c[SOURCE]]);
        fputs(" },\n", out);
        rows++;
    }
    return end_rows(t, out, r, rows, "cuda_n_rows");
}

/* ---- gpuspecs ---- */

/* A figure cell: empty (unknown, 0), or a positive decimal number times scale; -1 when bad. */
static int spec_cell(const struct tsv *t, const char *col, const char *cell, double scale,
                     double *v)
{
    char *end;

    *v = 0;
    if (cell[0] == '\0')
        return 0;
    errno = 0;
    *v = strtod(cell, &end);
    if (errno != 0 || *end != '\0' || !(*v > 0) || *v > 1e6 ||
        strspn(cell, "0123456789.") != strlen(cell))
        return fail(t, "column '%s': '%s' is not a positive number or empty (unknown)", col, cell);
    *v *= scale;
    return 0;
}

static int gen_gpuspecs(struct tsv *t, FILE *out)
{
    static const char *const names[] = {
        "model",       "mem_bandwidth_gbps", "fp32_tflops", "tf32_tflops",
        "fp16_tflops", "bf16_tflops",        "fp8_tflops",  "source",
    };
    enum { MODEL, MEM, FP32, TF32, FP16, BF16, FP8, SOURCE, N_COLS };
    int c[N_COLS];
    char *seen[1024];
    int r, rows = 0;

    if (need_cols(t, names, c, N_COLS) != 0)
        return -1;
    fprintf(out, "#include \"data/gpuspecs.h\"\n\nconst struct gpu_spec gpu_spec_rows[] = {\n");
    while ((r = tsv_row(t)) == 1) {
        const char *model = t->cell[c[MODEL]];
        double v[N_COLS];
        bool any = false;

        if (model[0] == '\0' || isspace((unsigned char)model[0]) ||
            isspace((unsigned char)model[strlen(model) - 1]))
            return fail(t, "column 'model': '%s' is empty or has blanks around it", model);
        for (int i = 0; i < rows; i++) {
            if (strcasecmp(seen[i], model) == 0)
                return fail(t, "column 'model': '%s' is listed twice", model);
        }
        if (rows == (int)(sizeof(seen) / sizeof(seen[0])))
            return fail(t, "more than %zu models", sizeof(seen) / sizeof(seen[0]));
        seen[rows] = t->cell[c[MODEL]];
        for (int k = MEM; k <= FP8; k++) {
            if (spec_cell(t, names[k], t->cell[c[k]], k == MEM ? 1e9 : 1e12, &v[k]) != 0)
                return -1;
            any = any || v[k] > 0;
        }
        if (!any)
            return fail(t, "model '%s' has no figure: leave it out instead", model);
        if (t->cell[c[SOURCE]][0] == '\0')
            return fail(t, "column 'source' is empty: every figure needs one");
        fputs("    { ", out);
        put_str(out, model);
        for (int k = MEM; k <= FP8; k++)
            fprintf(out, ", %.17g", v[k]);
        fputs(", ", out);
        put_str(out, t->cell[c[SOURCE]]);
        fputs(" },\n", out);
        rows++;
    }
    return end_rows(t, out, r, rows, "gpu_spec_n_rows");
}

/* 86 from "8.6", 128 from "12.8"; -1 when not major.minor with a one-digit minor. */
static int tenths(const char *s)
{
    char *end;
    long major, minor;

    if (*s < '0' || *s > '9')
        return -1;
    major = strtol(s, &end, 10);
    if (*end != '.' || end[1] < '0' || end[1] > '9' || end[2] != '\0' || major < 1 || major > 99)
        return -1;
    minor = end[1] - '0';
    return (int)(major * 10 + minor);
}

static int gen_cudaarch(struct tsv *t, FILE *out)
{
    static const char *const names[] = { "cc", "arch", "first", "removed", "tegra", "source" };
    enum { CC, ARCH, FIRST, REMOVED, TEGRA, SOURCE };
    int c[6], r, rows = 0, prev = 0;

    if (need_cols(t, names, c, 6) != 0)
        return -1;
    fprintf(out, "#include \"data/cudaarch.h\"\n\nconst struct cuda_arch cuda_arch_rows[] = {\n");
    while ((r = tsv_row(t)) == 1) {
        int cc = tenths(t->cell[c[CC]]), first = tenths(t->cell[c[FIRST]]), removed = 0;
        const char *tegra = t->cell[c[TEGRA]];

        if (cc < 0)
            return fail(t, "column 'cc': '%s' is not a compute capability such as 8.6",
                        t->cell[c[CC]]);
        if (cc <= prev)
            return fail(t, "column 'cc': %s after a higher one: the rows must be sorted, once",
                        t->cell[c[CC]]);
        prev = cc;
        if (first < 0)
            return fail(t, "column 'first': '%s' is not a CUDA version such as 11.8",
                        t->cell[c[FIRST]]);
        if (strcmp(t->cell[c[REMOVED]], "-") != 0) {
            removed = tenths(t->cell[c[REMOVED]]);
            if (removed <= first)
                return fail(t, "column 'removed': '%s' is not a CUDA version after 'first' or -",
                            t->cell[c[REMOVED]]);
        }
        if (strcmp(tegra, "y") != 0 && strcmp(tegra, "n") != 0)
            return fail(t, "column 'tegra': '%s' is not y or n", tegra);
        if (t->cell[c[ARCH]][0] == '\0' || t->cell[c[SOURCE]][0] == '\0')
            return fail(t, "columns 'arch' and 'source' must not be empty");
        fprintf(out, "    { %d, ", cc);
        put_str(out, t->cell[c[ARCH]]);
        fprintf(out, ", %d, %d, %s, ", first, removed, tegra[0] == 'y' ? "true" : "false");
        put_str(out, t->cell[c[SOURCE]]);
        fputs(" },\n", out);
        rows++;
    }
    return end_rows(t, out, r, rows, "cuda_arch_n_rows");
}

static int gen_torchbuilds(struct tsv *t, FILE *out)
{
    static const char *const names[] = { "cuda", "index", "cc", "source" };
    enum { CUDA, INDEX, CC, SOURCE };
    int c[4], r, rows = 0, prev = 0;

    if (need_cols(t, names, c, 4) != 0)
        return -1;
    fprintf(out,
            "#include \"data/torchbuilds.h\"\n\nconst struct torch_build torch_build_rows[] = {\n");
    while ((r = tsv_row(t)) == 1) {
        int version = tenths(t->cell[c[CUDA]]), ccs[TORCH_BUILD_MAX_CCS], n = 0;
        char index[16], *tok = t->cell[c[CC]];

        if (version < 0)
            return fail(t, "column 'cuda': '%s' is not a CUDA version such as 12.8",
                        t->cell[c[CUDA]]);
        if (version <= prev)
            return fail(t, "column 'cuda': %s after a higher one: the rows must be sorted, once",
                        t->cell[c[CUDA]]);
        prev = version;
        snprintf(index, sizeof(index), "cu%d", version);
        if (strcmp(t->cell[c[INDEX]], index) != 0)
            return fail(t, "column 'index': '%s' is not %s, the wheel index of CUDA %s",
                        t->cell[c[INDEX]], index, t->cell[c[CUDA]]);
        if (t->cell[c[SOURCE]][0] == '\0')
            return fail(t, "column 'source' must not be empty");
        fprintf(out, "    { ");
        put_str(out, t->cell[c[CUDA]]);
        fprintf(out, ", %d, ", version);
        put_str(out, index);
        fputs(", { ", out);
        while (tok != NULL) {
            char *space = strchr(tok, ' ');
            int cc;

            if (space != NULL)
                *space = '\0';
            cc = tenths(tok);
            if (cc < 0)
                return fail(t,
                            "column 'cc': '%s' is not a compute capability such as 8.6 (one space "
                            "between them)",
                            tok);
            if (n > 0 && cc <= ccs[n - 1])
                return fail(t, "column 'cc': %s after a higher one: list them ascending, once",
                            tok);
            if (n == TORCH_BUILD_MAX_CCS)
                return fail(t, "column 'cc': more than %d capabilities", TORCH_BUILD_MAX_CCS);
            ccs[n++] = cc;
            fprintf(out, "%d, ", cc);
            tok = space != NULL ? space + 1 : NULL;
        }
        fputs("0 }, ", out);
        put_str(out, t->cell[c[SOURCE]]);
        fputs(" },\n", out);
        rows++;
    }
    return end_rows(t, out, r, rows, "torch_build_n_rows");
}

/* "cudart" and "11.0" of "libcudart.so.11.0" into name and version (each at most size - 1
 * bytes); false when it is not lib, a name of letters, digits and '_', ".so." and a version. */
static bool soname_split(const char *s, char *name, char *version, size_t size)
{
    const char *so;
    size_t n;

    if (strncmp(s, "lib", 3) != 0)
        return false;
    s += 3;
    so = strstr(s, ".so.");
    if (so == NULL || so == s || (size_t)(so - s) >= size)
        return false;
    n = (size_t)(so - s);
    for (size_t i = 0; i < n; i++) {
        if (!isalnum((unsigned char)s[i]) && s[i] != '_')
            return false;
    }
    if (!is_version(so + 4) || strlen(so + 4) >= size)
        return false;
    memcpy(name, s, n);
    name[n] = '\0';
    strcpy(version, so + 4);
    return true;
}

static int gen_cudasonames(struct tsv *t, FILE *out)
{
    static const char *const names[] = { "soname", "first", "last", "source" };
    enum { SONAME, FIRST, LAST, SOURCE };
    int c[4], r, rows = 0, prev_last = 0;
    char prev_name[64] = "", prev_soname[96] = "";
    int prev_first = 0;

    if (need_cols(t, names, c, 4) != 0)
        return -1;
    fprintf(out,
            "#include \"data/cudasonames.h\"\n\nconst struct cuda_soname cuda_soname_rows[] = {\n");
    while ((r = tsv_row(t)) == 1) {
        const char *soname = t->cell[c[SONAME]], *last_s = t->cell[c[LAST]];
        int first = tenths(t->cell[c[FIRST]]), last = 0, order;
        char name[64], version[32];

        if (!soname_split(soname, name, version, sizeof(version)))
            return fail(t, "column 'soname': '%s' is not a soname such as libcudart.so.11.0",
                        soname);
        if (first < 0)
            return fail(t, "column 'first': '%s' is not a CUDA version such as 11.8",
                        t->cell[c[FIRST]]);
        if (strcmp(last_s, "-") != 0) {
            last = tenths(last_s);
            if (last < first)
                return fail(t, "column 'last': '%s' is not a CUDA version from 'first' on, or -",
                            last_s);
        }
        order = strcmp(name, prev_name);
        if (order < 0 || (order == 0 && first <= prev_first))
            return fail(t,
                        "column 'soname': %s after %s: the rows must be sorted by library, "
                        "then by first",
                        soname, prev_soname);
        if (order == 0 && (prev_last == 0 || prev_last >= first))
            return fail(t, "column 'first': %s of %s overlaps %s", t->cell[c[FIRST]], soname,
                        prev_soname);
        if (t->cell[c[SOURCE]][0] == '\0')
            return fail(t, "column 'source' must not be empty");
        snprintf(prev_name, sizeof(prev_name), "%s", name);
        snprintf(prev_soname, sizeof(prev_soname), "%s", soname);
        prev_first = first;
        prev_last = last;
        fputs("    { ", out);
        put_str(out, soname);
        fputs(", ", out);
        put_str(out, name);
        fputs(", ", out);
        put_str(out, version);
        fputs(", ", out);
        put_str(out, t->cell[c[FIRST]]);
        fputs(", ", out);
        put_str(out, last ? last_s : NULL);
        fprintf(out, ", %d, %d, ", first, last);
        put_str(out, t->cell[c[SOURCE]]);
        fputs(" },\n", out);
        rows++;
    }
    return end_rows(t, out, r, rows, "cuda_soname_n_rows");
}

int main(int argc, char **argv)
{
    struct tsv t;
    char *tmp;
    FILE *out;
    int rc;

    if (argc != 4 || (strcmp(argv[1], "xid") != 0 && strcmp(argv[1], "nvlink5") != 0 &&
                      strcmp(argv[1], "cudacompat") != 0 && strcmp(argv[1], "gpuspecs") != 0 &&
                      strcmp(argv[1], "sxid") != 0 && strcmp(argv[1], "cudaerr") != 0 &&
                      strcmp(argv[1], "cudaarch") != 0 && strcmp(argv[1], "torchbuilds") != 0 &&
                      strcmp(argv[1], "cudasonames") != 0)) {
        fprintf(stderr, "usage: tsv2c xid|nvlink5|cudacompat|gpuspecs|sxid|cudaerr|cudaarch|"
                        "torchbuilds|cudasonames TABLE.tsv OUT.c\n");
        return 2;
    }
    if (tsv_open(&t, argv[2]) != 0) {
        free(t.text);
        return 1;
    }
    tmp = malloc(strlen(argv[3]) + 5);
    if (tmp == NULL)
        return 1;
    sprintf(tmp, "%s.tmp", argv[3]);
    out = fopen(tmp, "w");
    if (out == NULL) {
        fprintf(stderr, "tsv2c: %s: %s\n", tmp, strerror(errno));
        free(tmp);
        free(t.text);
        return 1;
    }
    fprintf(out, "/* Generated from %s by src/data/tsv2c.c: edit the TSV, not this file. */\n",
            argv[2]);
    if (strcmp(argv[1], "xid") == 0)
        rc = gen_xid(&t, out);
    else if (strcmp(argv[1], "nvlink5") == 0)
        rc = gen_nvlink5(&t, out);
    else if (strcmp(argv[1], "cudacompat") == 0)
        rc = gen_cudacompat(&t, out);
    else if (strcmp(argv[1], "sxid") == 0)
        rc = gen_sxid(&t, out);
    else if (strcmp(argv[1], "cudaerr") == 0)
        rc = gen_cudaerr(&t, out);
    else if (strcmp(argv[1], "cudaarch") == 0)
        rc = gen_cudaarch(&t, out);
    else if (strcmp(argv[1], "torchbuilds") == 0)
        rc = gen_torchbuilds(&t, out);
    else if (strcmp(argv[1], "cudasonames") == 0)
        rc = gen_cudasonames(&t, out);
    else
        rc = gen_gpuspecs(&t, out);
    if (fclose(out) != 0)
        rc = -1;
    if (rc == 0 && rename(tmp, argv[3]) != 0) {
        fprintf(stderr, "tsv2c: %s: %s\n", argv[3], strerror(errno));
        rc = -1;
    }
    if (rc != 0)
        remove(tmp);
    free(tmp);
    free(t.text);
    return rc == 0 ? 0 : 1;
}
