/*
 * serve's Accept-Encoding parser (serve_coding_parse), one field value as the HTTP server hands
 * it over. Checks: every weight it keeps is a qvalue (0 to 1000 thousandths) or -1; a second
 * field that refuses gzip ("gzip;q=0") always wins, whatever the first said.
 */
#include "fuzz.h"
#include "serve/serve.h"

static void check_weights(const struct serve_coding *c)
{
    FUZZ_ASSERT(c->q_gzip >= -1 && c->q_gzip <= 1000, "gzip weight %d", c->q_gzip);
    FUZZ_ASSERT(c->q_identity >= -1 && c->q_identity <= 1000, "identity weight %d", c->q_identity);
    FUZZ_ASSERT(c->q_any >= -1 && c->q_any <= 1000, "* weight %d", c->q_any);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *value = fuzz_cstr(data, size); /* a NUL ends it, as it ends a header value */
    struct serve_coding c;

    serve_coding_init(&c);
    serve_coding_parse(&c, value);
    check_weights(&c);
    (void)serve_coding_gzip(&c);
    serve_coding_parse(&c, "gzip;q=0");
    check_weights(&c);
    FUZZ_ASSERT(!serve_coding_gzip(&c), "gzip after a field refusing it: %s", value);
    free(value);
    return 0;
}
