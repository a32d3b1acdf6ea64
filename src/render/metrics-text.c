/*
 * The text of the Prometheus exposition format: a growable buffer, label values escaped (and
 * bytes that are not UTF-8 replaced, which Prometheus would reject), numbers written exactly
 * (a field's value times a unit conversion, no float rounding), HELP text escaped.
 */
#include "render/metrics-internal.h"
#include "util/xalloc.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void mbuf_add(struct mbuf *b, const char *s, size_t n)
{
    xgrow(&b->p, &b->cap, b->len + n + 1, 1);
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

void mbuf_str(struct mbuf *b, const char *s)
{
    mbuf_add(b, s, strlen(s));
}

void mbuf_printf(struct mbuf *b, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        fatal("vsnprintf failed");
    xgrow(&b->p, &b->cap, b->len + (size_t)n + 1, 1);
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

/* Length of the valid UTF-8 sequence at s (1-4), or 0 when it is not one. */
static size_t utf8_len(const unsigned char *s)
{
    if (s[0] < 0x80)
        return 1;
    if (s[0] >= 0xc2 && s[0] <= 0xdf)
        return (s[1] & 0xc0) == 0x80 ? 2 : 0;
    if (s[0] >= 0xe0 && s[0] <= 0xef) {
        if ((s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80)
            return 0;
        if ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0))
            return 0; /* overlong, or a UTF-16 surrogate */
        return 3;
    }
    if (s[0] >= 0xf0 && s[0] <= 0xf4) {
        if ((s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80 || (s[3] & 0xc0) != 0x80)
            return 0;
        if ((s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] >= 0x90))
            return 0;
        return 4;
    }
    return 0;
}

void mbuf_escaped(struct mbuf *b, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;

    while (*p) {
        size_t n = utf8_len(p);

        if (*p == '\\')
            mbuf_add(b, "\\\\", 2);
        else if (*p == '"')
            mbuf_add(b, "\\\"", 2);
        else if (*p == '\n')
            mbuf_add(b, "\\n", 2);
        else if (n == 0)
            mbuf_add(b, "\xef\xbf\xbd", 3); /* U+FFFD for a byte that is not UTF-8 */
        else
            mbuf_add(b, (const char *)p, n);
        p += n ? n : 1;
    }
}

char *metrics_label_escape(const char *s)
{
    struct mbuf b = { 0 };

    mbuf_add(&b, "", 0);
    mbuf_escaped(&b, s);
    return b.p;
}

/* Appends `,key="value"` (or without the comma at the start of a label set). */
void mbuf_label(struct mbuf *b, const char *key, const char *value)
{
    if (b->len > 0 && b->p[b->len - 1] != '{')
        mbuf_add(b, ",", 1);
    mbuf_str(b, key);
    mbuf_add(b, "=\"", 2);
    mbuf_escaped(b, value);
    mbuf_add(b, "\"", 1);
}

bool metrics_field_number(const struct jfield *f, const void *obj, struct mval *v)
{
    const char *p = (const char *)obj + f->offset;
    int64_t i = 0;

    memset(v, 0, sizeof(*v));
    switch (f->type) {
    case JF_U32:
    case JF_HEX32:
        v->mag = *(const uint32_t *)p;
        return true;
    case JF_U64:
    case JF_LIMIT:
    case JF_HEX64:
        v->mag = *(const uint64_t *)p;
        return true;
    case JF_I32:
    case JF_ENUM:
        i = *(const int32_t *)p;
        break;
    case JF_I64:
        i = *(const int64_t *)p;
        break;
    case JF_BOOL:
        v->mag = *(const bool *)p ? 1 : 0;
        return true;
    case JF_DOUBLE:
        v->is_double = true;
        v->d = *(const double *)p;
        return true;
    default:
        return false;
    }
    v->neg = i < 0;
    v->mag = i < 0 ? (uint64_t)(-(i + 1)) + 1 : (uint64_t)i;
    return true;
}

/* Appends v * mul / div exactly: div is a power of ten, so the result is a finite decimal. */
void mbuf_value(struct mbuf *b, const struct mval *v, uint32_t mul, uint32_t div)
{
    uint64_t m = v->mag, q, r;
    unsigned digits = 0;
    char frac[24];

    if (v->is_double || (mul > 1 && m > UINT64_MAX / mul)) {
        double d = v->is_double ? v->d : (double)m * (v->neg ? -1 : 1);

        mbuf_printf(b, "%.17g", d * mul / div);
        return;
    }
    m *= mul;
    q = m / div;
    r = m % div;
    for (uint32_t d = div; d > 1; d /= 10)
        digits++;
    mbuf_printf(b, "%s%" PRIu64, v->neg && m ? "-" : "", q);
    if (r == 0)
        return;
    snprintf(frac, sizeof(frac), "%0*" PRIu64, (int)digits, r);
    for (size_t n = strlen(frac); n > 0 && frac[n - 1] == '0'; n--)
        frac[n - 1] = '\0';
    mbuf_printf(b, ".%s", frac);
}

void mbuf_u64(struct mbuf *b, uint64_t v)
{
    mbuf_printf(b, "%" PRIu64, v);
}

/* Seconds with millisecond precision (durations, ages, timestamps). */
void mbuf_seconds_ms(struct mbuf *b, int64_t ms)
{
    struct mval v = { ms < 0, false, ms < 0 ? (uint64_t)(-ms) : (uint64_t)ms, 0 };

    mbuf_value(b, &v, 1, 1000);
}

/* HELP text: backslash and newline escaped. */
void mbuf_help(struct mbuf *b, const char *s)
{
    for (; *s; s++) {
        if (*s == '\\')
            mbuf_add(b, "\\\\", 2);
        else if (*s == '\n')
            mbuf_add(b, "\\n", 2);
        else
            mbuf_add(b, s, 1);
    }
}
