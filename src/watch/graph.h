/*
 * Small history graphs for the live view: one character cell per reading, eight heights of block
 * characters on a UTF-8 terminal, eight ASCII characters otherwise.
 */
#ifndef GPUDOCTOR_WATCH_GRAPH_H
#define GPUDOCTOR_WATCH_GRAPH_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Writes the last `width` of the n values (oldest first) into buf as a NUL-terminated string of
 * exactly width cells, scaled so that lo is the lowest height and hi the highest (values outside
 * are clamped). Fewer values than cells leave blanks on the left; a NaN (a missing reading) is a
 * blank. buf needs 3 * width + 1 bytes for UTF-8, width + 1 for ASCII; a smaller buf gets fewer
 * cells. Returns the number of cells written.
 */
size_t graph_render(char *buf, size_t size, const double *v, size_t n, double lo, double hi,
                    size_t width, bool utf8);

#endif
