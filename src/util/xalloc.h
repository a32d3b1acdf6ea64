/* Allocation that cannot fail, and fatal() for the impossible. */
#ifndef GPUDOCTOR_XALLOC_H
#define GPUDOCTOR_XALLOC_H

#include <stdarg.h>
#include <stddef.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Prints "gpudoctor: fatal: ..." and aborts. Only for out-of-memory and bugs. */
_Noreturn void fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

void *xmalloc(size_t size);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t size);
void *xreallocarray(void *p, size_t n, size_t size);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
/* Returns a newly allocated string; the caller frees it. */
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *xvasprintf(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

/* Grows *items (of *cap elements of size) so that it holds at least need elements. */
void xgrow(void *items, size_t *cap, size_t need, size_t size);

#endif
