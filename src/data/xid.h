/*
 * The XID catalogue: what each NVIDIA Xid code means, its most likely cause, what NVIDIA
 * recommends doing and how serious gpudoctor takes it; and NVIDIA's decode table for the NVLink5
 * Xids 144..150. The tables are generated at build time from data/xid.tsv and
 * data/xid-nvlink5.tsv (the sources of truth) by src/data/tsv2c.c; this header is the only way to
 * read them. docs/driver.md explains the columns, the sources and the severity policy.
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
    X(NVLINK, "nvlink", "NVLink (between GPUs, or NVLink-C2C to the CPU) or NVSwitch")             \
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

/* gpudoctor's severity for an Xid of this code with nothing decoded from its message. */
#define XID_SEVERITIES(X)                                                                          \
    X(INFO, "info")                                                                                \
    X(WARNING, "warning")                                                                          \
    X(CRITICAL, "critical")

enum xid_severity {
#define XID_SEV_ENUM(id, name) XID_SEV_##id,
    XID_SEVERITIES(XID_SEV_ENUM)
#undef XID_SEV_ENUM
        XID_SEV__COUNT
};

/* Where NVIDIA lists the code (column listed_in). */
enum xid_listed {
    XID_LISTED_BOTH,    /* the catalogue and nverror.h */
    XID_LISTED_CATALOG, /* only the catalogue: nverror.h has no #define */
    XID_LISTED_NVERROR, /* only nverror.h: newer than the catalogue */
};

struct xid_info {
    int32_t code;
    enum xid_listed listed_in;
    const char *nverror_name;         /* #define in nverror.h; NULL when it has none */
    const char *mnemonic;             /* NVIDIA catalogue mnemonic; NULL when not in it */
    const char *description;          /* NVIDIA catalogue description; NULL when not in it */
    const char *immediate_action;     /* catalogue bucket: RESTART_APP, RESET_GPU ...; NULL: none */
    const char *investigatory_action; /* catalogue bucket for when it recurs; NULL when none */
    const char *r555_name;            /* NVIDIA's older listing (r555); NULL when not in it */
    const char *meaning;              /* one line for a title: never NULL */
    enum xid_category category;       /* the most likely cause */
    enum xid_severity severity;       /* gpudoctor's policy, before decoding the message */
    uint32_t causes;                  /* XID_CAUSE_* bits */
    bool causes_listed;               /* false: the listing does not have this code */
    bool app_error;   /* NVIDIA's k8s device plugin ignores it as an application error */
    const char *dcgm; /* "FAIL" or "WARN" when DCGM's health watch reports it, else NULL */
    const char *gpud; /* gpud's event type and repair actions ("fatal:reboot+inspect"), or NULL */
    const char *typical_cause;
    const char *action;      /* NVIDIA's recommended action, in words */
    const char *example_log; /* a kernel-log line of this Xid; NULL when none */
};

/* The entry for code, or NULL when the catalogue does not list it. */
const struct xid_info *xid_lookup(int32_t code);

/* The whole catalogue, sorted by code. */
const struct xid_info *xid_all(size_t *n);

/* "warning", or NULL for a value out of range. */
const char *xid_severity_name(enum xid_severity s);

/* The NVLink5 Xids (144..150): one row of NVIDIA's decode sheet (data/xid-nvlink5.tsv). */
struct xid_nvlink5_rule {
    int32_t xid;
    const char *unit; /* "NETIR_LINK_EVT/NETIR_LINK_DOWN": the driver prints a part, or all */
    uint32_t v1_mask, v1_bits; /* intrinfo matches when (intrinfo & mask) == bits */
    uint32_t v2_mask, v2_bits; /* the same for the second layout of the sheet */
    uint32_t error_status;
    const char *nvidia_severity;  /* as the sheet writes it: "Fatal", "Link Fatal", "Non-fatal" */
    bool fatal;                   /* nvidia_severity is not "Non-fatal" */
    const char *immediate_action; /* RESET_GPU, IGNORE, XID_154_EVAL */
    const char *investigatory_action; /* CONTACT_SUPPORT, INVESTIGATE_PEER_DEVICE, ... */
    const char *action2;              /* the sheet's second action, or NULL */
    const char *hw_sw;                /* HW, SW, FW, HW/SW, NA */
    const char *effect;               /* what else to expect locally and on the peer */
};

#define XID_NVLINK5_FIRST 144
#define XID_NVLINK5_LAST  150

/* Bits 20..25 of intrinfo: the sub-code (NETIR_LINK_DOWN's reason, for one). */
static inline uint32_t xid_nvlink5_subcode(uint32_t intrinfo)
{
    return (intrinfo >> 20) & 0x3fu;
}

/*
 * The decode row for an NVLink5 Xid: same code and error status, intrinfo matching one of the
 * row's patterns and, when unit is not NULL, the row's unit equal to unit or to one of its
 * '/'-separated parts. NULL when no row applies.
 */
const struct xid_nvlink5_rule *xid_nvlink5_lookup(int32_t xid, const char *unit, uint32_t intrinfo,
                                                  uint32_t error_status);

/* The whole decode sheet, in the sheet's order. */
const struct xid_nvlink5_rule *xid_nvlink5_all(size_t *n);

/* "memory", or NULL for a value out of range. */
const char *xid_category_name(enum xid_category c);
/* A sentence fragment for the operator ("GPU memory: ECC errors, ..."). */
const char *xid_category_label(enum xid_category c);

#endif
