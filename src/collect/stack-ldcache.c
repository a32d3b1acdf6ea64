#include "collect/stack-ldcache.h"
#include "util/xalloc.h"

#include <string.h>

#define MAGIC_OLD   "ld.so-1.7.0"
#define MAGIC_NEW   "glibc-ld.so.cache"
#define VERSION_NEW "1.1"

/* Sizes of the on-disk structures (glibc elf/dl-cache.h): the old header is the magic and an
 * entry count, old entries are three 32-bit words; the new header is 48 bytes and its entries
 * 24 (flags, key, value, osversion, 64-bit hwcap). */
#define OLD_HEADER    16u
#define OLD_ENTRY     12u
#define NEW_HEADER    48u
#define NEW_ENTRY     24u
#define NEW_NLIBS_AT  20u
#define NEW_FLAGS_AT  28u
#define ENDIAN_LITTLE 2u
#define ENDIAN_BIG    3u
#define MAX_ENTRIES   (1u << 20)

static uint32_t get32(const char *p)
{
    uint32_t v;

    memcpy(&v, p, sizeof(v));
    return v;
}

uint32_t ldcache_native_arch(void)
{
#if defined(__x86_64__)
    return 0x0300u; /* FLAG_X8664_LIB64 */
#elif defined(__aarch64__)
    return 0x0a00u; /* FLAG_AARCH64_LIB64 */
#elif defined(__powerpc64__)
    return 0x0500u; /* FLAG_POWERPC_LIB64 */
#else
    return 0;
#endif
}

/* A NUL-terminated string at offset off of the table that starts at base. */
static const char *string_at(const char *base, size_t avail, uint32_t off)
{
    if (off >= avail || memchr(base + off, '\0', avail - off) == NULL)
        return NULL;
    return base + off;
}

long ldcache_parse(const char *buf, size_t len, ldcache_fn fn, void *arg, char **cause)
{
    size_t start = 0;
    uint32_t nlibs;
    unsigned endian;
    const char *base;
    size_t avail;

    if (len >= OLD_HEADER && memcmp(buf, MAGIC_OLD, strlen(MAGIC_OLD)) == 0) {
        /* The old format first, then the new one at the next 8-byte boundary; only the new
         * format names the architecture, so the old part is skipped. */
        uint32_t nold = get32(buf + 12);

        if (nold > MAX_ENTRIES || OLD_HEADER + (size_t)nold * OLD_ENTRY > len) {
            *cause = xasprintf("truncated: the old-format part claims %u entries", nold);
            return -1;
        }
        start = (OLD_HEADER + (size_t)nold * OLD_ENTRY + 7u) & ~(size_t)7u;
        if (start + NEW_HEADER > len || memcmp(buf + start, MAGIC_NEW, strlen(MAGIC_NEW)) != 0) {
            *cause = xstrdup("only the old ld.so-1.7.0 format, which this reader does not read");
            return -1;
        }
    }
    if (len - start < strlen(MAGIC_NEW) || memcmp(buf + start, MAGIC_NEW, strlen(MAGIC_NEW)) != 0) {
        *cause = xstrdup("not an ld.so.cache file (no \"" MAGIC_NEW "\" magic)");
        return -1;
    }
    if (len - start < NEW_HEADER) {
        *cause = xasprintf("truncated: %zu bytes, the header alone is %u", len - start, NEW_HEADER);
        return -1;
    }
    if (memcmp(buf + start + strlen(MAGIC_NEW), VERSION_NEW, strlen(VERSION_NEW)) != 0) {
        *cause = xasprintf("cache format version \"%.3s\", this reader knows " VERSION_NEW,
                           buf + start + strlen(MAGIC_NEW));
        return -1;
    }
    endian = (unsigned char)buf[start + NEW_FLAGS_AT] & 3u;
    {
        uint16_t probe = 1;
        unsigned native = *(const unsigned char *)&probe ? ENDIAN_LITTLE : ENDIAN_BIG;

        if (endian != 0 && endian != native) {
            *cause = xstrdup("written for the other byte order");
            return -1;
        }
    }
    nlibs = get32(buf + start + NEW_NLIBS_AT);
    if (nlibs > MAX_ENTRIES || (len - start - NEW_HEADER) / NEW_ENTRY < nlibs) {
        *cause = xasprintf("truncated: %u entries need %zu bytes, the file has %zu", nlibs,
                           (size_t)NEW_HEADER + (size_t)nlibs * NEW_ENTRY, len - start);
        return -1;
    }
    /* String offsets count from the start of the new-format header. */
    base = buf + start;
    avail = len - start;
    for (uint32_t i = 0; i < nlibs; i++) {
        const char *e = base + NEW_HEADER + (size_t)i * NEW_ENTRY;
        const char *key = string_at(base, avail, get32(e + 4));
        const char *value = string_at(base, avail, get32(e + 8));

        if (key == NULL || value == NULL) {
            *cause = xasprintf("entry %u: a name lies outside the file", i);
            return -1;
        }
        fn(arg, key, value, get32(e));
    }
    return (long)nlibs;
}
