#include "util/timeutil.h"

#include <errno.h>
#include <stdio.h>
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
    time_t secs = (time_t)(real_ms / 1000);
    struct tm tm;

    gmtime_r(&secs, &tm);
    snprintf(buf, size, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(real_ms % 1000));
}
