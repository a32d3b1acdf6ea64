/* Clocks, in the units their names say. */
#ifndef GPUDOCTOR_TIMEUTIL_H
#define GPUDOCTOR_TIMEUTIL_H

#include <stdint.h>

int64_t time_mono_ms(void);
int64_t time_mono_us(void);
int64_t time_real_ms(void);
/* Sleeps for ms milliseconds, resuming after signals. */
void time_sleep_ms(int64_t ms);
/* Formats a Unix time in milliseconds as ISO 8601 UTC ("2026-12-02T09:19:00.000Z") into buf. */
void time_format_iso(int64_t real_ms, char *buf, unsigned size);

#endif
