/*
 * What every fuzz harness shares. A harness is one file defining LLVMFuzzerTestOneInput (and
 * optionally LLVMFuzzerInitialize) over one parser's public function; it is linked either with
 * libFuzzer (clang, -DGPUDOCTOR_FUZZ=ON: `make fuzz`) or with replay.c, which feeds it every file
 * of its corpus so the corpora run as regression tests under any compiler (ctest fuzz/NAME).
 * docs/reliability.md says what each harness covers and what it checks beyond "no crash".
 */
#ifndef GPUDOCTOR_FUZZ_H
#define GPUDOCTOR_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/strutil.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* The input as a NUL-terminated string (parsers of text files take strings); caller frees. */
static inline char *fuzz_cstr(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);

    if (s == NULL)
        abort();
    if (size > 0)
        memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

/*
 * A property a parser promised does not hold: say which, and crash so that libFuzzer keeps the
 * input and the replay test fails.
 */
#define FUZZ_ASSERT(cond, ...)                                                                     \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz: %s:%d: %s: ", __FILE__, __LINE__, #cond);                       \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/*
 * Text that goes into reports printed on terminals and into JSON must be valid UTF-8 without
 * control characters: no C0 (ESC among them), no DEL, no C1 (U+0080-U+009F, CSI among them).
 */
#define FUZZ_PRINTABLE(what, s)                                                                    \
    do {                                                                                           \
        const unsigned char *p_ = (const unsigned char *)(s);                                      \
        FUZZ_ASSERT(str_is_utf8((const char *)p_), "%s is not UTF-8", what);                       \
        for (; *p_; p_++) {                                                                        \
            FUZZ_ASSERT(*p_ >= 0x20 && *p_ != 0x7f, "%s holds control character 0x%02x", what,     \
                        *p_);                                                                      \
            FUZZ_ASSERT(!(p_[0] == 0xc2 && p_[1] >= 0x80 && p_[1] < 0xa0),                         \
                        "%s holds C1 control U+%04X", what, p_[1]);                                \
        }                                                                                          \
    } while (0)

struct snapshot;
/*
 * What `check --from FILE` does with a snapshot it loaded: every rule, the exit status, the text
 * report, the JSON report, the Prometheus exposition and the procs table and JSON, output
 * discarded (check-from.c). Asserts the exit status is a verdict (0-3).
 */
void fuzz_check_from(const struct snapshot *s);

#endif
