/* Lookups in the XID catalogue generated from data/xid.tsv and data/xid-nvlink5.tsv. */
#include "data/xid.h"

#include <string.h>

/* Defined in the generated xid-table.c and nvlink5-table.c. */
extern const struct xid_info xid_rows[];
extern const size_t xid_n_rows;
extern const struct xid_nvlink5_rule xid_nvlink5_rows[];
extern const size_t xid_nvlink5_n_rows;

static const char *const severity_names[] = {
#define XID_SEV_NAME(id, name) name,
    XID_SEVERITIES(XID_SEV_NAME)
#undef XID_SEV_NAME
};

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

const char *xid_severity_name(enum xid_severity s)
{
    return (unsigned)s < XID_SEV__COUNT ? severity_names[s] : NULL;
}

/* unit is the sheet's "A/B", or A, or B. */
static bool unit_matches(const char *sheet, const char *unit)
{
    const char *slash = strchr(sheet, '/');
    size_t n = strlen(unit);

    if (strcmp(sheet, unit) == 0)
        return true;
    if (slash == NULL)
        return false;
    return ((size_t)(slash - sheet) == n && strncmp(sheet, unit, n) == 0) ||
           strcmp(slash + 1, unit) == 0;
}

const struct xid_nvlink5_rule *xid_nvlink5_lookup(int32_t xid, const char *unit, uint32_t intrinfo,
                                                  uint32_t error_status)
{
    for (size_t i = 0; i < xid_nvlink5_n_rows; i++) {
        const struct xid_nvlink5_rule *r = &xid_nvlink5_rows[i];

        if (r->xid != xid || r->error_status != error_status)
            continue;
        if ((intrinfo & r->v1_mask) != r->v1_bits && (intrinfo & r->v2_mask) != r->v2_bits)
            continue;
        if (unit != NULL && !unit_matches(r->unit, unit))
            continue;
        return r;
    }
    return NULL;
}

const struct xid_nvlink5_rule *xid_nvlink5_all(size_t *n)
{
    *n = xid_nvlink5_n_rows;
    return xid_nvlink5_rows;
}
