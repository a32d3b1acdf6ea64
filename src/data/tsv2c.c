/*
 * tsv2c: turns a data table of data/ into C at build time, so the TSV stays the one source of
 * truth and gpudoctor carries the table without reading files at run time.
 *
 *   tsv2c xid        data/xid.tsv                 xid-table.c
 *   tsv2c cudacompat data/cuda-driver-compat.tsv  cudacompat-table.c
 *
 * Lines starting with '#' are comments; the first other line names the columns, and columns are
 * found by name, so adding a column to the TSV does not break the build. Every value is checked:
 * a bad one stops the build with "file:line: column 'x': what is wrong".
 */
#include "data/xid.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static int gen_xid(struct tsv *t, FILE *out)
{
    static const char *const names[] = {
        "xid",
        "nverror_name",
        "catalog_mnemonic",
        "catalog_description",
        "catalog_immediate_action",
        "catalog_investigatory_action",
        "k8s_dp_app_error",
        "typical_cause",
        "recommended_action",
        "example_log",
        "category",
        /* the cause flags, in enum xid_cause_bit order */
        "HW",
        "DRV",
        "APP",
        "SYSMEM",
        "BUS",
        "THERM",
        "FB",
    };
    enum { XID, NAME, MNEM, DESC, IMM, INV, K8S, TYPICAL, ACTION, EXAMPLE, CATEGORY, FLAGS };
    int c[sizeof(names) / sizeof(names[0])];
    long last = 0;
    int r, rows = 0;

    if (need_cols(t, names, c, sizeof(names) / sizeof(names[0])) != 0)
        return -1;
    fprintf(out, "#include \"data/xid.h\"\n\nconst struct xid_info xid_rows[] = {\n");
    while ((r = tsv_row(t)) == 1) {
        char *end;
        long code;
        unsigned causes = 0, unknown = 0;
        size_t cat;

        errno = 0;
        code = strtol(t->cell[c[XID]], &end, 10);
        if (errno != 0 || end == t->cell[c[XID]] || *end != '\0' || code <= 0 || code > 100000)
            return fail(t, "column 'xid': '%s' is not an Xid number", t->cell[c[XID]]);
        if (code <= last)
            return fail(t, "column 'xid': %ld after %ld: rows must be sorted and unique", code,
                        last);
        last = code;
        for (int f = 0; f < 7; f++) {
            const char *v = t->cell[c[FLAGS + f]];

            if (strcmp(v, "Y") == 0)
                causes |= 1u << f;
            else if (strcmp(v, "?") == 0)
                unknown++;
            else if (strcmp(v, "N") != 0)
                return fail(t, "column '%s': '%s' is not Y, N or ?", names[FLAGS + f], v);
        }
        if (unknown != 0 && unknown != 7)
            return fail(t, "cause flags mix '?' with Y/N");
        if (strcmp(t->cell[c[K8S]], "Y") != 0 && strcmp(t->cell[c[K8S]], "N") != 0)
            return fail(t, "column 'k8s_dp_app_error': '%s' is not Y or N", t->cell[c[K8S]]);
        for (cat = 0; cat < XID_CAT__COUNT; cat++) {
            if (strcmp(category_names[cat], t->cell[c[CATEGORY]]) == 0)
                break;
        }
        if (cat == XID_CAT__COUNT)
            return fail(t, "column 'category': '%s' is not a category of src/data/xid.h",
                        t->cell[c[CATEGORY]]);
        for (int k = MNEM; k <= ACTION; k++) {
            if (k != INV && k != K8S && t->cell[c[k]][0] == '\0')
                return fail(t, "column '%s' is empty", names[k]);
        }
        fprintf(out, "    { %ld, ", code);
        put_str(out, strcmp(t->cell[c[NAME]], "-") == 0 ? NULL : t->cell[c[NAME]]);
        fputs(", ", out);
        put_str(out, t->cell[c[MNEM]]);
        fputs(", ", out);
        put_str(out, t->cell[c[DESC]]);
        fputs(", ", out);
        put_str(out, t->cell[c[IMM]]);
        fputs(", ", out);
        put_str(out, t->cell[c[INV]][0] ? t->cell[c[INV]] : NULL);
        fprintf(out, ", %s, 0x%02xu, %s, %s, ", category_enums[cat], causes,
                unknown ? "false" : "true", strcmp(t->cell[c[K8S]], "Y") == 0 ? "true" : "false");
        put_str(out, t->cell[c[TYPICAL]]);
        fputs(", ", out);
        put_str(out, t->cell[c[ACTION]]);
        fputs(", ", out);
        put_str(out, t->cell[c[EXAMPLE]][0] ? t->cell[c[EXAMPLE]] : NULL);
        fputs(" },\n", out);
        rows++;
    }
    if (r < 0)
        return -1;
    if (rows == 0)
        return fail(t, "no rows");
    fprintf(out, "};\n\nconst size_t xid_n_rows = %d;\n", rows);
    return 0;
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
    if (r < 0)
        return -1;
    if (rows == 0)
        return fail(t, "no rows");
    fprintf(out, "};\n\nconst size_t cuda_n_rows = %d;\n", rows);
    return 0;
}

int main(int argc, char **argv)
{
    struct tsv t;
    char *tmp;
    FILE *out;
    int rc;

    if (argc != 4 || (strcmp(argv[1], "xid") != 0 && strcmp(argv[1], "cudacompat") != 0)) {
        fprintf(stderr, "usage: tsv2c xid|cudacompat TABLE.tsv OUT.c\n");
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
    rc = strcmp(argv[1], "xid") == 0 ? gen_xid(&t, out) : gen_cudacompat(&t, out);
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
