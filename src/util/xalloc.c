#include "util/xalloc.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void fatal(const char *fmt, ...)
{
    va_list ap;

    fflush(stdout);
    fputs("gpudoctor: fatal: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    abort();
}

void *xmalloc(size_t size)
{
    void *p = malloc(size ? size : 1);

    if (p == NULL)
        fatal("out of memory allocating %zu bytes", size);
    return p;
}

void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);

    if (p == NULL)
        fatal("out of memory allocating %zu x %zu bytes", n, size);
    return p;
}

void *xrealloc(void *p, size_t size)
{
    void *q = realloc(p, size ? size : 1);

    if (q == NULL)
        fatal("out of memory reallocating %zu bytes", size);
    return q;
}

void *xreallocarray(void *p, size_t n, size_t size)
{
    if (size != 0 && n > SIZE_MAX / size)
        fatal("allocation of %zu x %zu bytes overflows", n, size);
    return xrealloc(p, n * size);
}

char *xstrdup(const char *s)
{
    char *p = strdup(s);

    if (p == NULL)
        fatal("out of memory duplicating a string");
    return p;
}

char *xstrndup(const char *s, size_t n)
{
    char *p = strndup(s, n);

    if (p == NULL)
        fatal("out of memory duplicating a string");
    return p;
}

char *xvasprintf(const char *fmt, va_list ap)
{
    char *s;

    if (vasprintf(&s, fmt, ap) < 0)
        fatal("out of memory formatting a string");
    return s;
}

char *xasprintf(const char *fmt, ...)
{
    va_list ap;
    char *s;

    va_start(ap, fmt);
    s = xvasprintf(fmt, ap);
    va_end(ap);
    return s;
}

void xgrow(void *items, size_t *cap, size_t need, size_t size)
{
    void **pp = items;
    size_t ncap = *cap ? *cap : 8;

    if (need <= *cap)
        return;
    while (ncap < need) {
        if (ncap > SIZE_MAX / 2)
            fatal("array of %zu elements is too large", need);
        ncap *= 2;
    }
    *pp = xreallocarray(*pp, ncap, size);
    *cap = ncap;
}
