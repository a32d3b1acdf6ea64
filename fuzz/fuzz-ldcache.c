/*
 * The dynamic linker's cache reader (stack-ldcache.c), a binary format whose every offset comes
 * from the file. The count it returns is the number of entries it reported, every entry has a
 * soname and a path, and a failure says why.
 */
#include "collect/stack-ldcache.h"
#include "fuzz.h"

struct seen {
    long n;
    size_t bytes;
};

static void entry(void *arg, const char *soname, const char *path, uint32_t flags)
{
    struct seen *s = arg;

    (void)flags;
    FUZZ_ASSERT(soname != NULL && path != NULL, "an entry without soname or path");
    s->n++;
    s->bytes += strlen(soname) + strlen(path); /* reads them whole: ASan sees an overrun */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct seen s = { 0, 0 };
    char *cause = NULL;
    long n = ldcache_parse((const char *)data, size, entry, &s, &cause);

    if (n < 0) {
        FUZZ_ASSERT(n == -1 && cause != NULL, "failed (%ld) without a reason", n);
        free(cause);
    } else {
        FUZZ_ASSERT(n == s.n, "returned %ld entries, reported %ld", n, s.n);
    }
    return 0;
}
