/* Lookups in the CUDA toolkit -> driver table generated from data/cuda-driver-compat.tsv. */
#include "data/cudacompat.h"
#include "util/strutil.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Defined in the generated cudacompat-table.c. */
extern const struct cuda_release cuda_rows[];
extern const size_t cuda_n_rows;

#define MAX_PARTS 4

/* "12.4.1" -> {12, 4, 1}; returns the count, or 0 when s is not digits and dots. */
static int parse_version(const char *s, unsigned long *part)
{
    int n = 0;

    for (;;) {
        char *end;

        if (!isdigit((unsigned char)*s) || n == MAX_PARTS)
            return 0;
        errno = 0;
        part[n++] = strtoul(s, &end, 10);
        if (errno != 0)
            return 0;
        s = end;
        if (*s == '\0')
            return n;
        if (*s != '.')
            return 0;
        s++;
    }
}

static bool same_prefix(const unsigned long *a, const unsigned long *b, int n)
{
    for (int i = 0; i < n; i++) {
        if (a[i] != b[i])
            return false;
    }
    return true;
}

int cuda_min_driver(const char *cuda, struct cuda_driver_req *out)
{
    unsigned long want[MAX_PARTS];
    const struct cuda_release *family = NULL, *minor = NULL;
    int n;

    memset(out, 0, sizeof(*out));
    if (cuda == NULL || (n = parse_version(cuda, want)) == 0)
        return -EINVAL;
    for (size_t i = 0; i < cuda_n_rows; i++) {
        const struct cuda_release *r = &cuda_rows[i];
        unsigned long have[MAX_PARTS];
        int m = parse_version(r->version, have);

        if (m == 0 || have[0] != want[0])
            continue;
        family = r;
        if (m == n && same_prefix(have, want, n)) {
            out->release = r;
            out->exact = true;
            break;
        }
        if (n >= 2 && m >= 2 && have[1] == want[1]) {
            /* The release of that minor: its GA when the table marks one, else the earliest. */
            bool ga = strstr(r->toolkit, " GA") != NULL;

            if (minor == NULL || (ga && strstr(minor->toolkit, " GA") == NULL) ||
                (ga == (strstr(minor->toolkit, " GA") != NULL) &&
                 str_version_cmp(r->version, minor->version) < 0))
                minor = r;
        }
    }
    if (family == NULL)
        return -ENOENT;
    if (out->release == NULL)
        out->release = minor;
    if (out->release != NULL)
        family = out->release;
    out->min_driver = out->release ? out->release->linux_min : NULL;
    out->min_driver_compat = family->compat_min;
    out->compat_below = family->compat_below;
    return 0;
}

enum cuda_driver_verdict cuda_driver_check(const char *driver, const char *cuda,
                                           struct cuda_driver_req *req)
{
    struct cuda_driver_req local;
    unsigned long d[MAX_PARTS];

    if (req == NULL)
        req = &local;
    if (cuda_min_driver(cuda, req) != 0 || driver == NULL || parse_version(driver, d) == 0)
        return CUDA_DRIVER_UNKNOWN;
    if (req->min_driver != NULL && str_version_cmp(driver, req->min_driver) >= 0)
        return CUDA_DRIVER_OK;
    if (req->min_driver_compat != NULL && str_version_cmp(driver, req->min_driver_compat) >= 0)
        return CUDA_DRIVER_MINOR_COMPAT;
    if (req->min_driver == NULL && req->min_driver_compat == NULL)
        return CUDA_DRIVER_UNKNOWN;
    return CUDA_DRIVER_TOO_OLD;
}

const struct cuda_release *cuda_releases(size_t *n)
{
    *n = cuda_n_rows;
    return cuda_rows;
}
