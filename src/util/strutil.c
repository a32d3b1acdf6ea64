#include "util/strutil.h"

#include "util/xalloc.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool str_starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

bool str_ends(const char *s, const char *suffix)
{
    size_t ls = strlen(s), lx = strlen(suffix);

    return ls >= lx && strcmp(s + ls - lx, suffix) == 0;
}

char *str_rtrim(char *s)
{
    size_t n = strlen(s);

    while (n > 0 && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

const char *str_ltrim(const char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    return s;
}

static bool rest_is_space(const char *end)
{
    return *str_ltrim(end) == '\0';
}

bool str_to_u64(const char *s, int base, uint64_t *out)
{
    unsigned long long v;
    char *end;

    s = str_ltrim(s);
    if (*s == '\0' || *s == '-' || *s == '+')
        return false;
    errno = 0;
    v = strtoull(s, &end, base);
    if (errno != 0 || end == s || !rest_is_space(end))
        return false;
    *out = v;
    return true;
}

bool str_to_i64(const char *s, int base, int64_t *out)
{
    long long v;
    char *end;

    s = str_ltrim(s);
    if (*s == '\0')
        return false;
    errno = 0;
    v = strtoll(s, &end, base);
    if (errno != 0 || end == s || !rest_is_space(end))
        return false;
    *out = v;
    return true;
}

bool str_to_u32(const char *s, int base, uint32_t *out)
{
    uint64_t v;

    if (!str_to_u64(s, base, &v) || v > UINT32_MAX)
        return false;
    *out = (uint32_t)v;
    return true;
}

bool str_to_double(const char *s, double *out)
{
    double v;
    char *end;

    s = str_ltrim(s);
    if (*s == '\0')
        return false;
    errno = 0;
    v = strtod(s, &end);
    if (errno != 0 || end == s || !rest_is_space(end) || !isfinite(v))
        return false;
    *out = v;
    return true;
}

int str_version_cmp(const char *a, const char *b)
{
    while (*a || *b) {
        unsigned long x = 0, y = 0;

        while (*a && !isdigit((unsigned char)*a))
            a++;
        while (*b && !isdigit((unsigned char)*b))
            b++;
        if (!*a && !*b)
            break;
        if (!*a)
            return -1;
        if (!*b)
            return 1;
        x = strtoul(a, (char **)&a, 10);
        y = strtoul(b, (char **)&b, 10);
        if (x != y)
            return x < y ? -1 : 1;
    }
    return 0;
}

unsigned long str_version_major(const char *v)
{
    return v != NULL && isdigit((unsigned char)*v) ? strtoul(v, NULL, 10) : 0;
}

/* Length of the valid UTF-8 sequence at p (at most n bytes), 0 when it is not one. */
static size_t utf8_len(const unsigned char *p, size_t n)
{
    size_t len;
    unsigned char lo = 0x80, hi = 0xbf;

    if (p[0] < 0x80)
        return 1;
    if (p[0] >= 0xc2 && p[0] <= 0xdf)
        len = 2;
    else if (p[0] >= 0xe0 && p[0] <= 0xef)
        len = 3;
    else if (p[0] >= 0xf0 && p[0] <= 0xf4)
        len = 4;
    else
        return 0;
    /* The second byte's range excludes overlong forms, surrogates and code points > U+10FFFF. */
    if (p[0] == 0xe0)
        lo = 0xa0;
    else if (p[0] == 0xed)
        hi = 0x9f;
    else if (p[0] == 0xf0)
        lo = 0x90;
    else if (p[0] == 0xf4)
        hi = 0x8f;
    if (n < len || p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++) {
        if (p[i] < 0x80 || p[i] > 0xbf)
            return 0;
    }
    return len;
}

/* The format characters that break a line or reorder what a terminal shows (all U+20xx). */
static bool line_format_char(const unsigned char *p, size_t len)
{
    if (len != 3 || p[0] != 0xe2)
        return false;
    if (p[1] == 0x80) /* U+2028, U+2029, U+202A..U+202E */
        return p[2] >= 0xa8 && p[2] <= 0xae;
    if (p[1] == 0x81) /* U+2066..U+2069 */
        return p[2] >= 0xa6 && p[2] <= 0xa9;
    return false;
}

/* Whether the character of len bytes at p is a control character (C0, DEL or C1). */
static bool is_control(const unsigned char *p, size_t len)
{
    /* C1 controls (U+0080..U+009F, CSI among them) are as harmful to a terminal as ESC. */
    return p[0] < 0x20 || p[0] == 0x7f || (len == 2 && p[0] == 0xc2 && p[1] < 0xa0);
}

/*
 * The printable form of the character at p (at most n bytes) into o, which has room for 4 bytes:
 * the character itself, or "\xNN" for its first byte (the bytes that continue it follow as bytes
 * of their own). With line_too, the format characters of line_format_char are escaped as well.
 * Sets *used to the bytes of p it stands for and returns the bytes written.
 */
static size_t printable_char(const unsigned char *p, size_t n, char *o, size_t *used, bool line_too)
{
    size_t len = utf8_len(p, n);

    if (len == 0 || is_control(p, len) || (line_too && line_format_char(p, len))) {
        static const char hex[] = "0123456789abcdef";

        o[0] = '\\';
        o[1] = 'x';
        o[2] = hex[p[0] >> 4];
        o[3] = hex[p[0] & 0xf];
        *used = 1;
        return 4;
    }
    memcpy(o, p, len);
    *used = len;
    return len;
}

/* Escapes as "\xNN" every byte that is not valid UTF-8 or is a control character, and with
 * line_too, the format characters of line_format_char. */
static char *printable(const char *s, size_t n, bool line_too)
{
    const unsigned char *p = (const unsigned char *)s;
    char *out = xmalloc(n * 4 + 1), *o = out;
    size_t i = 0;

    while (i < n) {
        size_t used;

        o += printable_char(p + i, n - i, o, &used, line_too);
        i += used;
    }
    *o = '\0';
    return out;
}

char *str_printablen(const char *s, size_t n)
{
    return printable(s, n, false);
}

char *str_printable_line(const char *s)
{
    return printable(s, strlen(s), true);
}

char *str_printable(const char *s)
{
    return str_printablen(s, strlen(s));
}

char *str_excerpt(const char *s, size_t max)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t n = strlen(s), i = 0, len = 0;
    char *out = xmalloc(max + 4), one[4];

    while (i < n) {
        size_t used, w = printable_char(p + i, n - i, one, &used, true);

        if (len + w > max) {
            memcpy(out + len, "...", 4);
            return out;
        }
        memcpy(out + len, one, w);
        len += w;
        i += used;
    }
    out[len] = '\0';
    return out;
}

char *str_sanitize(char *s)
{
    unsigned char *p = (unsigned char *)s;
    size_t n = s ? strlen(s) : 0;

    for (size_t i = 0; i < n;) {
        size_t len = utf8_len(p + i, n - i);

        if (len == 0) {
            p[i++] = '?';
            continue;
        }
        if (is_control(p + i, len) || line_format_char(p + i, len))
            memset(p + i, '?', len);
        i += len;
    }
    return s;
}

char *str_sanitized(const char *s)
{
    return s ? str_sanitize(xstrdup(s)) : NULL;
}

void str_utf8_trim(char *s)
{
    size_t len = strlen(s), lead = len, want;
    unsigned char c;

    /* Back over at most three continuation bytes to the character's first byte. */
    while (lead > 0 && len - lead < 4 && ((unsigned char)s[lead - 1] & 0xC0) == 0x80)
        lead--;
    if (lead == 0)
        return;
    c = (unsigned char)s[lead - 1];
    want = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    if (c >= 0xC0 && len - (lead - 1) < want)
        s[lead - 1] = '\0';
}

bool str_is_utf8(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t n = strlen(s);

    for (size_t i = 0; i < n;) {
        size_t len = utf8_len(p + i, n - i);

        if (len == 0)
            return false;
        i += len;
    }
    return true;
}

bool str_is_one_line(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;

    if (n == SIZE_MAX)
        n = strlen(s);
    for (size_t i = 0; i < n;) {
        size_t len = utf8_len(p + i, n - i);

        if (len == 0 || p[i] < 0x20 || p[i] == 0x7f ||
            (len == 2 && p[i] == 0xc2 && p[i + 1] < 0xa0) || line_format_char(p + i, len))
            return false;
        i += len;
    }
    return true;
}

static bool shell_bare(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           strchr("_./:=@%+,-", c) != NULL;
}

char *str_shell_quote(const char *s)
{
    size_t n = strlen(s), quotes = 0;
    bool bare = s[0] != '=';
    char *out, *o;

    if (n == 0 || !str_is_one_line(s, n))
        return NULL;
    for (size_t i = 0; i < n; i++) {
        bare &= shell_bare(s[i]);
        quotes += s[i] == '\'';
    }
    if (bare)
        return xstrdup(s);
    /* 'it'\''s': close the quotes, an escaped quote, open them again. */
    out = o = xmalloc(n + quotes * 3 + 3);
    *o++ = '\'';
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\'') {
            memcpy(o, "'\\''", 4);
            o += 4;
        } else {
            *o++ = s[i];
        }
    }
    *o++ = '\'';
    *o = '\0';
    return out;
}

void str_list_add_once(char *buf, size_t size, const char *item)
{
    size_t len = strlen(buf), n = strlen(item);
    const char *at = buf;

    if (n == 0)
        return;
    while ((at = strstr(at, item)) != NULL) {
        if ((at == buf || (at >= buf + 2 && at[-2] == ',' && at[-1] == ' ')) &&
            (at[n] == '\0' || at[n] == ','))
            return;
        at += n;
    }
    if (len + n + 3 <= size)
        snprintf(buf + len, size - len, "%s%s", len ? ", " : "", item);
}

uint64_t fnv1a64(uint64_t h, const void *p, size_t n)
{
    const unsigned char *c = p;

    for (size_t i = 0; i < n; i++)
        h = (h ^ c[i]) * UINT64_C(0x100000001b3);
    return h;
}
