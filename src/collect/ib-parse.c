#include "collect/ib-parse.h"
#include "util/strutil.h"

#include <math.h>
#include <string.h>

/* Copies the n bytes at s into out when they are printable ASCII and fit. */
static bool copy_name(const char *s, size_t n, char out[IB_NAME_SIZE])
{
    if (n >= IB_NAME_SIZE)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < 0x20 || s[i] > 0x7e)
            return false;
    }
    memcpy(out, s, n);
    out[n] = '\0';
    return true;
}

/* Length of text without trailing whitespace. */
static size_t trimmed_len(const char *s)
{
    size_t n = strlen(s);

    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\n' || s[n - 1] == '\t' || s[n - 1] == '\r'))
        n--;
    return n;
}

bool ib_parse_state(const char *text, uint32_t *code, char name[IB_NAME_SIZE])
{
    const char *p = str_ltrim(text);
    size_t digits = strspn(p, "0123456789"), len;
    uint32_t v = 0;

    if (digits == 0 || digits > 3)
        return false;
    for (size_t i = 0; i < digits; i++)
        v = v * 10 + (uint32_t)(p[i] - '0');
    if (v > 255)
        return false;
    p += digits;
    if (*p != ':')
        return false;
    p++;
    while (*p == ' ')
        p++;
    len = trimmed_len(p);
    if (!copy_name(p, len, name))
        return false;
    *code = v;
    return true;
}

bool ib_parse_rate(const char *text, double *gbps, uint32_t *width, char speed[IB_NAME_SIZE])
{
    const char *p = str_ltrim(text), *end;
    size_t digits = strspn(p, "0123456789");
    double v = 0;
    uint32_t w = 0;

    if (digits == 0 || digits > 6)
        return false;
    for (size_t i = 0; i < digits; i++)
        v = v * 10 + (p[i] - '0');
    p += digits;
    if (str_starts(p, ".5")) {
        v += 0.5;
        p += 2;
    }
    if (!str_starts(p, " Gb/sec ("))
        return false;
    p += strlen(" Gb/sec (");
    digits = strspn(p, "0123456789");
    if (digits == 0 || digits > 2)
        return false;
    for (size_t i = 0; i < digits; i++)
        w = w * 10 + (uint32_t)(p[i] - '0');
    if (w != 1 && w != 2 && w != 4 && w != 8 && w != 12)
        return false;
    p += digits;
    if (*p++ != 'X')
        return false;
    if (*p == ' ')
        p++;
    end = strchr(p, ')');
    if (end == NULL || !copy_name(p, (size_t)(end - p), speed) || strchr(speed, ' ') != NULL)
        return false;
    if (trimmed_len(end + 1) != 0 || v <= 0 || !isfinite(v))
        return false;
    *gbps = v;
    *width = w;
    return true;
}

int ib_parse_link_layer(const char *text)
{
    const char *p = str_ltrim(text);
    size_t n = trimmed_len(p);

    if (n == strlen("InfiniBand") && strncmp(p, "InfiniBand", n) == 0)
        return IB_LL_INFINIBAND;
    if (n == strlen("Ethernet") && strncmp(p, "Ethernet", n) == 0)
        return IB_LL_ETHERNET;
    return -1;
}

bool ib_parse_counter(const char *text, uint64_t *value)
{
    const char *p = str_ltrim(text);

    /* str_to_u64 would take a sign or a base prefix; a counter is plain digits. */
    if (*p < '0' || *p > '9')
        return false;
    return str_to_u64(p, 10, value);
}

static bool is_name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
}

int ib_parse_modules(const char *text, const char *const *names, bool *loaded, size_t n)
{
    int lines = 0;

    for (size_t i = 0; i < n; i++)
        loaded[i] = false;
    for (const char *line = text; *line;) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line), word = 0;

        while (word < len && is_name_char(line[word]))
            word++;
        if (len > 0) {
            /* "nvidia_peermem 16384 0 - Live 0x0000000000000000" */
            if (word == 0 || (word < len && line[word] != ' '))
                return -1;
            lines++;
            for (size_t i = 0; i < n; i++) {
                if (strlen(names[i]) == word && strncmp(line, names[i], word) == 0)
                    loaded[i] = true;
            }
        }
        if (nl == NULL)
            break;
        line = nl + 1;
    }
    return lines;
}

bool ib_is_device_name(const char *name)
{
    size_t n = strlen(name);

    if (n == 0 || n >= IB_NAME_SIZE || name[0] == '.')
        return false;
    for (size_t i = 0; i < n; i++) {
        if (!is_name_char(name[i]) && name[i] != '.')
            return false;
    }
    return true;
}
