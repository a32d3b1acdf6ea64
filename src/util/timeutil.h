/* Clocks, in the units their names say. */
#ifndef GPUDOCTOR_TIMEUTIL_H
#define GPUDOCTOR_TIMEUTIL_H

#include <stdbool.h>
#include <stdint.h>

int64_t time_mono_ms(void);
int64_t time_mono_us(void);
int64_t time_real_ms(void);
/* Sleeps for ms milliseconds, resuming after signals. */
void time_sleep_ms(int64_t ms);
/*
 * Parses a duration into milliseconds: a plain decimal number of seconds ("1.5", "0"), or numbers
 * each followed by a unit, largest first and each unit once: d, h, m, s, ms ("500ms", "2s",
 * "1h30m", "7d", "1d12h", "2m30.5s"). Surrounding blanks are allowed; signs, exponents, hex,
 * blanks inside and anything else are not. Returns false on anything else or past 10^15 ms.
 */
bool time_parse_duration_ms(const char *s, int64_t *out_ms);
/* Formats a Unix time in milliseconds as ISO 8601 UTC ("2026-12-02T09:19:00.000Z") into buf; a
 * negative one is before 1970 (-5 is "1969-12-31T23:59:59.995Z"); one gmtime cannot name is
 * written as "N ms". */
void time_format_iso(int64_t real_ms, char *buf, unsigned size);

#endif
