#include "collect/sysfs-pci.h"
#include "util/strutil.h"
#include "util/xalloc.h"

#include <ctype.h>
#include <math.h>
#include <string.h>

enum sysfs_speed sysfs_pci_parse_speed(const char *text, double *gts)
{
    const char *p = str_ltrim(text);
    char num[16];
    size_t n = strspn(p, "0123456789.");
    double v;

    if (str_starts(p, "Unknown"))
        return SYSFS_SPEED_UNKNOWN;
    if (n == 0 || n >= sizeof(num))
        return SYSFS_SPEED_MALFORMED;
    memcpy(num, p, n);
    num[n] = '\0';
    if (!str_to_double(num, &v) || v <= 0 || v > 1000)
        return SYSFS_SPEED_MALFORMED;
    p += n;
    if (!str_starts(p, " GT/s"))
        return SYSFS_SPEED_MALFORMED;
    p += strlen(" GT/s");
    /* Linux 5.x appends " PCIe"; nothing else may follow. */
    if (str_starts(p, " PCIe"))
        p += strlen(" PCIe");
    if (*str_ltrim(p) != '\0')
        return SYSFS_SPEED_MALFORMED;
    *gts = v;
    return SYSFS_SPEED_OK;
}

uint32_t sysfs_pci_speed_gen(double gts)
{
    static const double speeds[] = { 2.5, 5.0, 8.0, 16.0, 32.0, 64.0 };

    for (size_t i = 0; i < ARRAY_SIZE(speeds); i++) {
        if (fabs(gts - speeds[i]) < 0.01)
            return (uint32_t)i + 1;
    }
    return 0;
}

bool sysfs_pci_parse_width(const char *text, uint32_t *lanes)
{
    uint32_t v;

    if (!str_to_u32(text, 10, &v) || v == 0 || v > 32)
        return false;
    *lanes = v;
    return true;
}

int sysfs_pci_parse_aer(const char *text, const char *total_key, uint64_t *total, char **cause)
{
    size_t klen = strlen(total_key);
    unsigned lineno = 0;
    const char *line = text;

    while (*line != '\0') {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);

        lineno++;
        if (len > klen && strncmp(line, total_key, klen) == 0 && (line[klen] == ' ')) {
            char num[32];
            size_t n = len - klen - 1;

            if (n == 0 || n >= sizeof(num)) {
                *cause = xasprintf("line %u: %s has no count (truncated?)", lineno, total_key);
                return -1;
            }
            memcpy(num, line + klen + 1, n);
            num[n] = '\0';
            if (!str_to_u64(num, 10, total)) {
                *cause = xasprintf("line %u: %s: expected a count, got \"%.32s\"", lineno,
                                   total_key, num);
                return -1;
            }
            return 0;
        }
        line = nl ? nl + 1 : line + len;
    }
    *cause = xasprintf("no %s line (truncated?)", total_key);
    return -1;
}

static bool hex_run(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (!isxdigit((unsigned char)s[i]))
            return false;
    }
    return true;
}

/* Checks [s, s+len) against domain:bus:device.function, 4 or 5 hex digits of domain. */
static bool is_address_n(const char *s, size_t len)
{
    size_t dom = len == 12 ? 4 : len == 13 ? 5 : 0;

    if (dom == 0)
        return false;
    return hex_run(s, dom) && s[dom] == ':' && hex_run(s + dom + 1, 2) && s[dom + 3] == ':' &&
           hex_run(s + dom + 4, 2) && s[dom + 6] == '.' && s[dom + 7] >= '0' && s[dom + 7] <= '7';
}

bool sysfs_pci_is_address(const char *s)
{
    return is_address_n(s, strlen(s));
}

int sysfs_pci_path_chain(const char *path, char (*addrs)[SYSFS_PCI_ADDR_SIZE], size_t max)
{
    size_t n = 0;
    const char *p = path;

    while (*p != '\0') {
        size_t len = strcspn(p, "/");

        if (is_address_n(p, len)) {
            if (n == max)
                return -1;
            memcpy(addrs[n], p, len);
            addrs[n][len] = '\0';
            n++;
        }
        p += len;
        while (*p == '/')
            p++;
    }
    return (int)n;
}
