/*
 * The small parsers behind command-line values and alert conditions: durations (--window,
 * --timeout), numbers, dotted versions, sizes and pid lists (reap), alert conditions (watch
 * --alert, its public alert_spec_parse), and the text cleaners (str_printable, str_excerpt and
 * str_sanitize, which keeps the length). Each line of the input is one value. A value that parses
 * is in range (a duration is never negative) and a failure says why; version comparison is
 * antisymmetric.
 */
#include "fuzz.h"
#include "reap/reap.h"
#include "util/strutil.h"
#include "util/timeutil.h"
#include "watch/alert.h"

#include <math.h>

static int sign(int x)
{
    return (x > 0) - (x < 0);
}

static void one(const char *v, const char *prev)
{
    int64_t ms, i64;
    uint64_t u64, bytes;
    uint32_t u32;
    double d;
    int32_t *ints = NULL;
    size_t n_ints = 0;
    struct alert_spec a;
    char *cause = NULL, *p;

    if (time_parse_duration_ms(v, &ms))
        FUZZ_ASSERT(ms >= 0, "duration '%s' is %lld ms", v, (long long)ms);
    (void)str_to_u64(v, 10, &u64);
    (void)str_to_u64(v, 16, &u64);
    (void)str_to_i64(v, 10, &i64);
    (void)str_to_u32(v, 0, &u32);
    if (str_to_double(v, &d))
        FUZZ_ASSERT(!isnan(d), "'%s' parses as NaN", v);
    FUZZ_ASSERT(sign(str_version_cmp(v, prev)) == -sign(str_version_cmp(prev, v)),
                "version order of '%s' and '%s' is not antisymmetric", v, prev);
    (void)reap_parse_size(v, &bytes);
    if (reap_parse_ints(v, 1, &ints, &n_ints))
        for (size_t i = 0; i < n_ints; i++)
            FUZZ_ASSERT(ints[i] >= 1, "'%s' gave %d below the minimum", v, ints[i]);
    free(ints);
    memset(&a, 0, sizeof(a));
    if (alert_spec_parse(&a, v, &cause) == 0)
        alert_spec_free(&a);
    else
        FUZZ_ASSERT(cause != NULL, "alert '%s' refused without a reason", v);
    free(cause);
    p = str_printable(v);
    FUZZ_PRINTABLE("str_printable", p);
    free(p);
    p = str_excerpt(v, 16);
    FUZZ_PRINTABLE("str_excerpt", p);
    free(p);
    p = str_sanitized(v);
    FUZZ_PRINTABLE("str_sanitize", p);
    FUZZ_ASSERT(strlen(p) == strlen(v), "str_sanitize changed the length of '%s'", v);
    free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_cstr(data, size), *line, *save = NULL, *p;
    const char *prev = "";

    for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        one(line, prev);
        prev = line;
    }
    p = str_printablen((const char *)data, size);
    FUZZ_PRINTABLE("str_printablen", p);
    free(p);
    free(text);
    return 0;
}
