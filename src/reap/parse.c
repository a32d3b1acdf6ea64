/* The values reap's options take: memory sizes and lists of pids or GPU indices. */
#include "reap/reap.h"
#include "util/strutil.h"
#include "util/xalloc.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

bool reap_parse_size(const char *s, uint64_t *bytes)
{
    static const char units[] = "KMGTP";
    const char *u;
    char *end;
    double v, mult = 1;

    if (s == NULL || !isdigit((unsigned char)*s))
        return false;
    errno = 0;
    v = strtod(s, &end);
    if (errno != 0 || end == s || !isfinite(v))
        return false;
    if (*end != '\0') {
        u = strchr(units, toupper((unsigned char)*end));
        if (u == NULL)
            return false;
        mult = pow(1024.0, (double)(u - units + 1));
        end++;
        if (*end == 'i')
            end++;
        if (*end == 'B' || *end == 'b')
            end++;
        if (*end != '\0')
            return false;
    } else if (v != floor(v)) {
        return false; /* a fraction of a byte */
    }
    v *= mult;
    if (v >= 18446744073709551615.0)
        return false;
    *bytes = (uint64_t)v;
    return true;
}

bool reap_parse_ints(const char *s, int32_t min, int32_t **v, size_t *n)
{
    char *copy = xstrdup(s), *save = NULL;
    bool ok = true;
    size_t added = 0;

    for (char *w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
        int64_t x;

        if (!str_to_i64(w, 10, &x) || x < min || x > INT32_MAX) {
            ok = false;
            break;
        }
        *v = xreallocarray(*v, *n + 1, sizeof(**v));
        (*v)[(*n)++] = (int32_t)x;
        added++;
    }
    free(copy);
    return ok && added > 0;
}
