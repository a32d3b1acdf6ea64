/* Parsers for the Fabric Manager evidence (collect/fabric-parse.h). */
#include "collect/fabric-parse.h"
#include "collect/sysfs-pci.h"
#include "util/strutil.h"
#include "util/xalloc.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#define FM_PACKAGE "nvidia-fabricmanager"
#define FM_COMM    "nv-fabricmanager" /* the program; the kernel keeps 15 bytes of its name */
#define FM_START   "Fabric Manager version "
#define NVSW_BIOS  "BIOS Version: "

/* The value of "Key: value" at line (up to its end), or NULL when line is another key. */
static const char *field(const char *line, const char *key, size_t *len)
{
    size_t k = strlen(key);

    if (strncmp(line, key, k) != 0 || line[k] != ':')
        return NULL;
    line += k + 1;
    while (*line == ' ' || *line == '\t')
        line++;
    *len = strcspn(line, "\n");
    while (*len > 0 && isspace((unsigned char)line[*len - 1]))
        (*len)--;
    return line;
}

/* "nvidia-fabricmanager" or "nvidia-fabricmanager-550": not -dev, not another package. */
static bool fm_package_name(const char *s, size_t n)
{
    size_t k = strlen(FM_PACKAGE);

    if (n < k || strncmp(s, FM_PACKAGE, k) != 0)
        return false;
    if (n == k)
        return true;
    if (s[k] != '-' || n == k + 1)
        return false;
    for (size_t i = k + 1; i < n; i++)
        if (!isdigit((unsigned char)s[i]))
            return false;
    return true;
}

int fabric_parse_dpkg(const char *text, char **package, char **version)
{
    const char *line = text;

    *package = NULL;
    *version = NULL;
    while (*line) {
        /* One stanza: lines up to an empty line. */
        const char *pkg = NULL, *ver = NULL;
        size_t pkg_n = 0, ver_n = 0;
        bool installed = false;

        while (*line && *line != '\n') {
            const char *v;
            size_t n;

            if ((v = field(line, "Package", &n)) != NULL) {
                pkg = v;
                pkg_n = n;
            } else if ((v = field(line, "Version", &n)) != NULL) {
                ver = v;
                ver_n = n;
            } else if ((v = field(line, "Status", &n)) != NULL) {
                /* "want flag status": only the last word says what is on disk */
                installed = n >= strlen(" installed") &&
                            strncmp(v + n - strlen(" installed"), " installed", 10) == 0;
            }
            line += strcspn(line, "\n");
            if (*line == '\n')
                line++;
        }
        while (*line == '\n')
            line++;
        if (installed && pkg != NULL && ver != NULL && ver_n > 0 && fm_package_name(pkg, pkg_n)) {
            *package = xstrndup(pkg, pkg_n);
            *version = xstrndup(ver, ver_n);
            return 1;
        }
    }
    return 0;
}

char *fabric_upstream_version(const char *v)
{
    const char *colon = strchr(v, ':');
    const char *dash;

    if (colon != NULL && strspn(v, "0123456789") == (size_t)(colon - v))
        v = colon + 1;
    dash = strrchr(v, '-');
    return xstrndup(v, dash ? (size_t)(dash - v) : strlen(v));
}

static void keep_line(struct fabric_log_scan *scan, const char *line, size_t n)
{
    size_t cap = sizeof(scan->lines) / sizeof(scan->lines[0]);

    if (n > 300)
        n = 300;
    if (scan->n_lines == cap) {
        free(scan->lines[0]);
        memmove(scan->lines, scan->lines + 1, (cap - 1) * sizeof(scan->lines[0]));
        scan->n_lines--;
    }
    scan->lines[scan->n_lines++] = xstrndup(line, n);
}

/* memmem for a line that is not NUL-terminated at its end. */
static const char *find_in(const char *line, size_t n, const char *what)
{
    size_t k = strlen(what);

    for (size_t i = 0; i + k <= n; i++)
        if (memcmp(line + i, what, k) == 0)
            return line + i;
    return NULL;
}

void fabric_parse_log(const char *text, struct fabric_log_scan *scan)
{
    const char *line = text;

    memset(scan, 0, sizeof(*scan));
    while (*line) {
        size_t n = strcspn(line, "\n");
        const char *v = find_in(line, n, FM_START);

        if (v != NULL && find_in(line, n, " is running") != NULL) {
            size_t vn;

            v += strlen(FM_START);
            vn = strspn(v, "0123456789.");
            /* A new run: what the earlier ones logged is history. */
            fabric_log_scan_free(scan);
            scan->started = true;
            if (vn > 0 && vn < 32)
                scan->version = xstrndup(v, vn);
        } else if (find_in(line, n, "[ERROR]") != NULL || find_in(line, n, "[FATAL]") != NULL) {
            if (scan->errors < UINT32_MAX)
                scan->errors++;
            keep_line(scan, line, n);
        }
        line += n;
        if (*line == '\n')
            line++;
    }
}

void fabric_log_scan_free(struct fabric_log_scan *scan)
{
    for (size_t i = 0; i < scan->n_lines; i++)
        free(scan->lines[i]);
    free(scan->version);
    memset(scan, 0, sizeof(*scan));
}

bool fabric_is_fm_comm(const char *comm)
{
    /* comm holds at most 15 bytes: "nv-fabricmanage" */
    return strncmp(comm, FM_COMM, 15) == 0 && strlen(comm) >= 15;
}

/* n lower-case hex digits at s ('\0' stops the run). */
static bool lower_hex(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isdigit((unsigned char)s[i]) && !(s[i] >= 'a' && s[i] <= 'f'))
            return false;
    return true;
}

/* The length of the BIOS version at v (up to its end or a newline), 0 when v is not one. */
static size_t bios_version_len(const char *v)
{
    size_t first = strspn(v, "0123456789abcdef"), at;

    if (first < 2 || first > 8)
        return 0;
    at = first;
    for (int g = 0; g < 4; g++) {
        if (v[at] != '.' || !lower_hex(v + at + 1, 2))
            return 0;
        at += 3;
    }
    return at;
}

enum fabric_nvswitch_info fabric_parse_nvswitch_info(const char *text,
                                                     char version[FABRIC_BIOS_VERSION_SIZE])
{
    const char *v;
    size_t n;

    version[0] = '\0';
    if (strncmp(text, NVSW_BIOS, strlen(NVSW_BIOS)) != 0)
        return FABRIC_NVSW_INFO_MALFORMED;
    v = text + strlen(NVSW_BIOS);
    if (strncmp(v, "N/A", 3) == 0)
        n = 3;
    else
        n = bios_version_len(v);
    /* One line: the value, then one newline or the end. */
    if (n == 0 || !(v[n] == '\0' || (v[n] == '\n' && v[n + 1] == '\0')))
        return FABRIC_NVSW_INFO_MALFORMED;
    if (n == 3 && v[0] == 'N')
        return FABRIC_NVSW_INFO_NA;
    memcpy(version, v, n);
    version[n] = '\0';
    return FABRIC_NVSW_INFO_VERSION;
}

int fabric_nvswitch_entry(const char *name, const char *const *addrs, size_t n)
{
    if (!sysfs_pci_is_address(name))
        return FABRIC_NVSW_ENTRY_BAD;
    for (const char *c = name; *c; c++)
        if (*c >= 'A' && *c <= 'F')
            return FABRIC_NVSW_ENTRY_BAD; /* the driver prints lower-case hex */
    for (size_t i = 0; i < n && i <= INT32_MAX; i++)
        if (strcmp(name, addrs[i]) == 0)
            return (int)i;
    return FABRIC_NVSW_ENTRY_STRAY;
}
