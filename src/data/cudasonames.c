/* The soname table's readers (data/cudasonames.h); the rows come from data/cuda-sonames.tsv. */
#include "data/cudasonames.h"
#include "data/cudaarch.h"

#include <stdlib.h>
#include <string.h>

const struct cuda_soname *cuda_soname_find(const char *lib, const char *version)
{
    for (size_t i = 0; lib != NULL && version != NULL && i < cuda_soname_n_rows; i++) {
        if (strcmp(cuda_soname_rows[i].lib, lib) == 0 &&
            strcmp(cuda_soname_rows[i].version, version) == 0)
            return &cuda_soname_rows[i];
    }
    return NULL;
}

static bool in_range(const struct cuda_soname *row, int v)
{
    return v >= row->first_v && (row->last_v == 0 || v <= row->last_v);
}

/* The newest minor of major m that a row of the table names (118 for 11), or -1. */
static int last_known_minor(int m)
{
    int best = -1;

    for (size_t i = 0; i < cuda_soname_n_rows; i++) {
        const struct cuda_soname *r = &cuda_soname_rows[i];

        if (r->first_v / 10 == m && r->first_v > best)
            best = r->first_v;
        if (r->last_v / 10 == m && r->last_v > best)
            best = r->last_v;
    }
    return best;
}

bool cuda_soname_ships(const struct cuda_soname *row, const char *cuda)
{
    bool major_only;
    int v = cuda_release_value(cuda, &major_only), newest;

    if (row == NULL || v < 0)
        return false;
    if (!major_only)
        return in_range(row, v);
    /* "11" is some 11.x: only when every 11.x the table knows of (11.0 to 11.8) ships it */
    newest = last_known_minor(v / 10);
    return in_range(row, v) && in_range(row, newest > v ? newest : v);
}
