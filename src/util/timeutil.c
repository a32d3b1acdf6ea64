#include "util/timeutil.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int64_t clock_us(clockid_t id)
{
    struct timespec ts;

    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t time_mono_us(void)
{
    return clock_us(CLOCK_MONOTONIC);
}

int64_t time_mono_ms(void)
{
    return clock_us(CLOCK_MONOTONIC) / 1000;
}

int64_t time_real_ms(void)
{
    return clock_us(CLOCK_REALTIME) / 1000;
}

void time_sleep_ms(int64_t ms)
{
    struct timespec ts;

    if (ms <= 0)
        return;
    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (ms % 1000) * 1000000;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

void time_format_iso(int64_t real_ms, char *buf, unsigned size)
{
    /* Floored, so that a time before 1970 (a file's negative value) is still a date:
     * -5 ms is 23:59:59.995 of the day before, not ".-05". */
    bool before = real_ms % 1000 < 0;
    int64_t frac = before ? real_ms % 1000 + 1000 : real_ms % 1000;
    time_t secs = (time_t)(real_ms / 1000 - (before ? 1 : 0));
    struct tm tm;

    if (gmtime_r(&secs, &tm) == NULL) { /* past the years gmtime can name */
        snprintf(buf, size, "%lld ms", (long long)real_ms);
        return;
    }
    snprintf(buf, size, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)frac);
}

/* The units of a duration, largest first: a duration names each at most once, in this order. */
static const struct {
    const char *name;
    int64_t ms;
} duration_units[] = {
    { "d", 86400000 }, { "h", 3600000 }, { "m", 60000 }, { "s", 1000 }, { "ms", 1 },
};

#define N_DURATION_UNITS (sizeof(duration_units) / sizeof(duration_units[0]))
#define DURATION_MAX_MS  1e15 /* some 31,700 years */

/* The unit at s (the longest name that matches and is not followed by a letter), or -1. */
static int duration_unit(const char *s, size_t len)
{
    int best = -1;

    for (size_t u = 0; u < N_DURATION_UNITS; u++) {
        size_t n = strlen(duration_units[u].name);

        if (n <= len && strncmp(s, duration_units[u].name, n) == 0 &&
            (n == len || !isalpha((unsigned char)s[n])) &&
            (best < 0 || n > strlen(duration_units[best].name)))
            best = (int)u;
    }
    return best;
}

bool time_parse_duration_ms(const char *s, int64_t *out_ms)
{
    double total = 0;
    int last = -1;
    size_t len;

    while (isspace((unsigned char)*s))
        s++;
    len = strlen(s);
    while (len > 0 && isspace((unsigned char)s[len - 1]))
        len--;
    if (len == 0)
        return false;
    for (size_t i = 0; i < len;) {
        char num[32];
        size_t start = i, digits = 0, dots = 0;
        int u;

        for (; i < len && (isdigit((unsigned char)s[i]) || s[i] == '.'); i++) {
            digits += s[i] != '.';
            dots += s[i] == '.';
        }
        if (digits == 0 || dots > 1 || i - start >= sizeof(num))
            return false;
        memcpy(num, s + start, i - start);
        num[i - start] = '\0';
        if (start == 0 && i == len) {
            total = strtod(num, NULL) * 1000; /* a plain number: seconds */
            break;
        }
        u = duration_unit(s + i, len - i);
        if (u <= last)
            return false; /* no unit, or not in order: "1h30", "30m1h", "1m1m" */
        last = u;
        i += strlen(duration_units[u].name);
        /* Only digits and one '.' reach strtod: never hex, a sign, an exponent or "inf". */
        total += strtod(num, NULL) * (double)duration_units[u].ms;
    }
    if (!(total <= DURATION_MAX_MS))
        return false;
    *out_ms = (int64_t)(total + 0.5);
    return true;
}
