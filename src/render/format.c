#include "render/format.h"
#include "util/xalloc.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

void render_bytes(char *buf, size_t size, uint64_t bytes)
{
    static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
    double v = (double)bytes;
    size_t u = 0;

    while (v >= 1024.0 && u + 1 < ARRAY_SIZE(units)) {
        v /= 1024.0;
        u++;
    }
    if (u == 0)
        snprintf(buf, size, "%" PRIu64 " B", bytes);
    else if (v >= 100.0)
        snprintf(buf, size, "%.0f %s", v, units[u]);
    else
        snprintf(buf, size, "%.1f %s", v, units[u]);
}

void render_duration(char *buf, size_t size, double seconds)
{
    static const struct {
        const char *unit;
        uint64_t s;
    } units[] = { { "d", 86400 }, { "h", 3600 }, { "m", 60 }, { "s", 1 } };
    uint64_t t;

    if (!(seconds >= 0)) {
        snprintf(buf, size, "?");
        return;
    }
    t = (uint64_t)(seconds + 0.5);
    for (size_t i = 0; i < ARRAY_SIZE(units); i++) {
        uint64_t hi = t / units[i].s, lo;

        if (hi == 0 && i + 1 < ARRAY_SIZE(units))
            continue;
        if (i + 1 == ARRAY_SIZE(units)) {
            snprintf(buf, size, "%" PRIu64 "s", t);
            return;
        }
        lo = (t % units[i].s) / units[i + 1].s;
        if (lo == 0 || hi >= 10)
            snprintf(buf, size, "%" PRIu64 "%s", hi, units[i].unit);
        else
            snprintf(buf, size, "%" PRIu64 "%s%" PRIu64 "%s", hi, units[i].unit, lo,
                     units[i + 1].unit);
        return;
    }
}

const char *render_command(const char *cmd)
{
    const char *program = cmd;

    for (const char *c = cmd; *c && *c != ' '; c++) {
        if (*c == '/' && c[1] && c[1] != ' ')
            program = c + 1;
    }
    return program;
}

void render_ranges(char *buf, size_t size, const int32_t *v, size_t n)
{
    size_t len = 0;

    if (size == 0)
        return;
    buf[0] = '\0';
    for (size_t i = 0; i < n;) {
        size_t j = i;
        int w;

        while (j + 1 < n && v[j + 1] == v[j] + 1)
            j++;
        if (j >= i + 2)
            w = snprintf(buf + len, size - len, "%s%" PRId32 "-%" PRId32, i ? ", " : "", v[i],
                         v[j]);
        else if (j == i + 1)
            w = snprintf(buf + len, size - len, "%s%" PRId32 ", %" PRId32, i ? ", " : "", v[i],
                         v[j]);
        else
            w = snprintf(buf + len, size - len, "%s%" PRId32, i ? ", " : "", v[i]);
        if (w < 0 || (size_t)w >= size - len)
            return;
        len += (size_t)w;
        i = j + 1;
    }
}
