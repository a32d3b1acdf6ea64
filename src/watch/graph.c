#include "watch/graph.h"

#include <math.h>
#include <string.h>

/* U+2581..U+2588, lower one eighth block to full block. */
static const char *const blocks[8] = { "\u2581", "\u2582", "\u2583", "\u2584",
                                       "\u2585", "\u2586", "\u2587", "\u2588" };
static const char ascii[8] = { '_', '.', '-', '~', '=', '+', '*', '#' };

static int level(double v, double lo, double hi)
{
    double x;
    int l;

    if (!(hi > lo))
        return v > lo ? 7 : 0;
    x = (v - lo) / (hi - lo);
    if (x <= 0)
        return 0;
    l = (int)(x * 8.0);
    return l > 7 ? 7 : l;
}

size_t graph_render(char *buf, size_t size, const double *v, size_t n, double lo, double hi,
                    size_t width, bool utf8)
{
    size_t cell = utf8 ? 3 : 1, len = 0, cells = 0, skip;

    if (size == 0)
        return 0;
    if (width > (size - 1) / cell)
        width = (size - 1) / cell;
    skip = n > width ? n - width : 0;
    /* Blanks for the readings there are not yet. */
    for (size_t i = n - skip; i < width; i++) {
        buf[len++] = ' ';
        cells++;
    }
    for (size_t i = skip; i < n && cells < width; i++, cells++) {
        if (isnan(v[i])) {
            buf[len++] = ' ';
        } else if (utf8) {
            memcpy(buf + len, blocks[level(v[i], lo, hi)], 3);
            len += 3;
        } else {
            buf[len++] = ascii[level(v[i], lo, hi)];
        }
    }
    buf[len] = '\0';
    return cells;
}
