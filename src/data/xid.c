/* Lookups in the XID catalogue generated from data/xid.tsv. */
#include "data/xid.h"

/* Defined in the generated xid-table.c. */
extern const struct xid_info xid_rows[];
extern const size_t xid_n_rows;

static const char *const category_names[] = {
#define XID_CAT_NAME(id, name, label) name,
    XID_CATEGORIES(XID_CAT_NAME)
#undef XID_CAT_NAME
};

static const char *const category_labels[] = {
#define XID_CAT_LABEL(id, name, label) label,
    XID_CATEGORIES(XID_CAT_LABEL)
#undef XID_CAT_LABEL
};

const struct xid_info *xid_lookup(int32_t code)
{
    size_t lo = 0, hi = xid_n_rows;

    /* The generator guarantees the rows are sorted by code and unique. */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (xid_rows[mid].code == code)
            return &xid_rows[mid];
        if (xid_rows[mid].code < code)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

const struct xid_info *xid_all(size_t *n)
{
    *n = xid_n_rows;
    return xid_rows;
}

const char *xid_category_name(enum xid_category c)
{
    return (unsigned)c < XID_CAT__COUNT ? category_names[c] : NULL;
}

const char *xid_category_label(enum xid_category c)
{
    return (unsigned)c < XID_CAT__COUNT ? category_labels[c] : NULL;
}
