#include "util/strutil.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

bool str_starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

bool str_ends(const char *s, const char *suffix)
{
    size_t ls = strlen(s), lx = strlen(suffix);

    return ls >= lx && strcmp(s + ls - lx, suffix) == 0;
}

char *str_rtrim(char *s)
{
    size_t n = strlen(s);

    while (n > 0 && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

const char *str_ltrim(const char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    return s;
}

static bool rest_is_space(const char *end)
{
    return *str_ltrim(end) == '\0';
}

bool str_to_u64(const char *s, int base, uint64_t *out)
{
    unsigned long long v;
    char *end;

    s = str_ltrim(s);
    if (*s == '\0' || *s == '-' || *s == '+')
        return false;
    errno = 0;
    v = strtoull(s, &end, base);
    if (errno != 0 || end == s || !rest_is_space(end))
        return false;
    *out = v;
    return true;
}

bool str_to_i64(const char *s, int base, int64_t *out)
{
    long long v;
    char *end;

    s = str_ltrim(s);
    if (*s == '\0')
        return false;
    errno = 0;
    v = strtoll(s, &end, base);
    if (errno != 0 || end == s || !rest_is_space(end))
        return false;
    *out = v;
    return true;
}

bool str_to_u32(const char *s, int base, uint32_t *out)
{
    uint64_t v;

    if (!str_to_u64(s, base, &v) || v > UINT32_MAX)
        return false;
    *out = (uint32_t)v;
    return true;
}

bool str_to_double(const char *s, double *out)
{
    double v;
    char *end;

    s = str_ltrim(s);
    if (*s == '\0')
        return false;
    errno = 0;
    v = strtod(s, &end);
    if (errno != 0 || end == s || !rest_is_space(end) || !isfinite(v))
        return false;
    *out = v;
    return true;
}

bool str_to_duration_ms(const char *s, int64_t *out_ms)
{
    static const struct {
        const char *suffix;
        double ms;
    } units[] = { { "ms", 1 }, { "s", 1000 }, { "m", 60000 }, { "h", 3600000 }, { "", 1000 } };
    double v;
    char *end;

    s = str_ltrim(s);
    if (*s == '\0' || *s == '-')
        return false;
    errno = 0;
    v = strtod(s, &end);
    if (errno != 0 || end == s || !isfinite(v) || v < 0)
        return false;
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        size_t n = strlen(units[i].suffix);

        if (strncmp(end, units[i].suffix, n) == 0 && rest_is_space(end + n)) {
            double ms = v * units[i].ms;

            if (ms > (double)INT64_MAX / 2)
                return false;
            *out_ms = (int64_t)(ms + 0.5);
            return true;
        }
    }
    return false;
}

int str_version_cmp(const char *a, const char *b)
{
    while (*a || *b) {
        unsigned long x = 0, y = 0;

        while (*a && !isdigit((unsigned char)*a))
            a++;
        while (*b && !isdigit((unsigned char)*b))
            b++;
        if (!*a && !*b)
            break;
        if (!*a)
            return -1;
        if (!*b)
            return 1;
        x = strtoul(a, (char **)&a, 10);
        y = strtoul(b, (char **)&b, 10);
        if (x != y)
            return x < y ? -1 : 1;
    }
    return 0;
}
