/*
 * The XID catalogue: what each NVIDIA Xid code means, its most likely cause and what NVIDIA
 * recommends doing. The table is generated at build time from data/xid.tsv (the source of truth)
 * by src/data/tsv2c.c; this header is the only way to read it.
 */
#ifndef GPUDOCTOR_DATA_XID_H
#define GPUDOCTOR_DATA_XID_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Likely-cause categories: X(ENUM, "name in data/xid.tsv", "what it means for the operator").
 * The generator includes this list too, so a category the TSV names must exist here.
 */
#define XID_CATEGORIES(X)                                                                          \
    X(APPLICATION, "application", "the application: a bug in the program, or it was killed")       \
    X(DRIVER, "driver", "the driver or the GPU's firmware")                                        \
    X(HARDWARE, "hardware", "the GPU hardware")                                                    \
    X(MEMORY, "memory", "GPU memory: ECC errors, retired pages, row remapping")                    \
    X(BUS, "bus", "the PCIe link: slot, riser, cabling, power, signal quality")                    \
    X(THERMAL, "thermal", "overheating")                                                           \
    X(NVLINK, "nvlink", "NVLink or NVSwitch")                                                      \
    X(CONSEQUENCE, "consequence", "a consequence of an earlier error: look at the Xid before it")  \
    X(INFO, "info", "informational: not a fault by itself")

enum xid_category {
#define XID_CAT_ENUM(id, name, label) XID_CAT_##id,
    XID_CATEGORIES(XID_CAT_ENUM)
#undef XID_CAT_ENUM
        XID_CAT__COUNT
};

/* Possible causes ticked in NVIDIA's Xid listing (columns HW ... FB of data/xid.tsv). */
enum xid_cause_bit {
    XID_CAUSE_HW = 1u << 0,     /* hardware error */
    XID_CAUSE_DRIVER = 1u << 1, /* driver error */
    XID_CAUSE_APP = 1u << 2,    /* user application error */
    XID_CAUSE_SYSMEM = 1u << 3, /* system memory corruption */
    XID_CAUSE_BUS = 1u << 4,    /* bus error */
    XID_CAUSE_THERMAL = 1u << 5,
    XID_CAUSE_FB = 1u << 6, /* frame buffer (GPU memory) corruption */
};

struct xid_info {
    int32_t code;
    const char *nverror_name;         /* #define in nverror.h; NULL when it has none */
    const char *mnemonic;             /* NVIDIA catalogue mnemonic */
    const char *description;          /* NVIDIA catalogue description: the meaning */
    const char *immediate_action;     /* catalogue bucket: RESTART_APP, RESET_GPU, RESTART_BM ... */
    const char *investigatory_action; /* catalogue bucket for when it recurs; NULL when none */
    enum xid_category category;       /* the most likely cause */
    uint32_t causes;                  /* XID_CAUSE_* bits */
    bool causes_listed;               /* false: the listing does not have this code */
    bool app_error; /* NVIDIA's k8s device plugin ignores it as an application error */
    const char *typical_cause;
    const char *action;      /* NVIDIA's recommended action, in words */
    const char *example_log; /* a kernel-log line of this Xid; NULL when none */
};

/* The entry for code, or NULL when the catalogue does not list it. */
const struct xid_info *xid_lookup(int32_t code);

/* The whole catalogue, sorted by code. */
const struct xid_info *xid_all(size_t *n);

/* "memory", or NULL for a value out of range. */
const char *xid_category_name(enum xid_category c);
/* A sentence fragment for the operator ("GPU memory: ECC errors, ..."). */
const char *xid_category_label(enum xid_category c);

#endif
