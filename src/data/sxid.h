/*
 * The NVSwitch SXid catalogue: the class and name NVIDIA's Fabric Manager User Guide gives each
 * SXid number it lists. Generated at build time from data/sxid.tsv (the source of truth, with its
 * sources) by src/data/tsv2c.c; this header is the only way to read it. docs/fabric.md explains
 * how fabric.sxid uses it.
 */
#ifndef GPUDOCTOR_DATA_SXID_H
#define GPUDOCTOR_DATA_SXID_H

#include <stddef.h>
#include <stdint.h>

/* X(ENUM, "name in data/sxid.tsv"): the guide's classes. */
#define SXID_CLASSES(X)                                                                            \
    X(CORRECTED, "corrected")                                                                      \
    X(NONFATAL, "nonfatal")                                                                        \
    X(FATAL, "fatal")                                                                              \
    X(ALWAYS_FATAL, "always_fatal")

enum sxid_class {
#define SXID_CLASS_ENUM(id, name) SXID_CLASS_##id,
    SXID_CLASSES(SXID_CLASS_ENUM)
#undef SXID_CLASS_ENUM
        SXID_CLASS__COUNT
};

struct sxid_info {
    int32_t sxid;
    enum sxid_class cls;
    const char *name; /* "sourcetrack timeout error" */
};

/* The catalogue's row for sxid, or NULL when the guide does not list it. */
const struct sxid_info *sxid_lookup(int32_t sxid);

/* Every row, by number (for tests and docs). */
extern const struct sxid_info sxid_rows[];
extern const size_t sxid_n_rows;

#endif
