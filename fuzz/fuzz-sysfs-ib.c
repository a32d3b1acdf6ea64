/*
 * The InfiniBand attribute parsers (collect/ib-parse.c): port state and physical state, rate,
 * link layer, counters, /proc/modules and device names. What they accept is in range: a state
 * code 0-255 with a printable name, a positive finite rate on 1, 2, 4, 8 or 12 lanes with a
 * printable speed name, a link layer that is one of the two, a module count that is a line count.
 */
#include "collect/ib-parse.h"
#include "fuzz.h"

#include <math.h>

static bool printable(const char *s)
{
    for (; *s; s++) {
        if (*s < 0x20 || *s > 0x7e)
            return false;
    }
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const names[] = { "nvidia_peermem", "nv_peer_mem" };
    char *text = fuzz_cstr(data, size), name[IB_NAME_SIZE];
    bool loaded[2];
    uint32_t code, width;
    uint64_t count;
    double gbps;
    int ll, lines;

    if (ib_parse_state(text, &code, name)) {
        FUZZ_ASSERT(code <= 255, "state code %u", code);
        FUZZ_ASSERT(memchr(name, '\0', sizeof(name)) != NULL && printable(name),
                    "state name not printable");
    }
    if (ib_parse_rate(text, &gbps, &width, name)) {
        FUZZ_ASSERT(isfinite(gbps) && gbps > 0, "rate %g", gbps);
        FUZZ_ASSERT(width == 1 || width == 2 || width == 4 || width == 8 || width == 12, "%u lanes",
                    width);
        FUZZ_ASSERT(memchr(name, '\0', sizeof(name)) != NULL && printable(name) &&
                        strchr(name, ' ') == NULL,
                    "speed name not one printable word");
    }
    ll = ib_parse_link_layer(text);
    FUZZ_ASSERT(ll == -1 || ll == IB_LL_INFINIBAND || ll == IB_LL_ETHERNET, "link layer %d", ll);
    (void)ib_parse_counter(text, &count);
    lines = ib_parse_modules(text, names, loaded, 2);
    if (lines >= 0)
        FUZZ_ASSERT((size_t)lines <= size, "%d lines in %zu bytes", lines, size);
    if (lines == 0)
        FUZZ_ASSERT(!loaded[0] && !loaded[1], "a module loaded in no line");
    if (ib_is_device_name(text))
        FUZZ_ASSERT(strchr(text, '/') == NULL && strlen(text) < IB_NAME_SIZE,
                    "unsafe device name accepted");
    free(text);
    return 0;
}
