/* The SXid catalogue's lookup (data/sxid.h); the rows are generated from data/sxid.tsv. */
#include "data/sxid.h"

const struct sxid_info *sxid_lookup(int32_t sxid)
{
    size_t lo = 0, hi = sxid_n_rows;

    /* tsv2c refuses a table that is not sorted by number */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (sxid_rows[mid].sxid == sxid)
            return &sxid_rows[mid];
        if (sxid_rows[mid].sxid < sxid)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}
