/*
 * The host's own memory errors in the kernel log: the EDAC core's "EDAC MC0: 1 UE ... on DIMM"
 * lines, the x86 machine-check handler's "Uncorrected hardware memory error" and memory-failure's
 * "Memory failure: ..." lines, and the firmware's error records (APEI GHES, "{1}[Hardware Error]:
 * ..."), which firmware-first servers print instead of EDAC lines. Pure, like klog-parse.c: the
 * formats are the kernel's (drivers/edac/edac_mc.c, drivers/firmware/efi/cper.c,
 * arch/x86/kernel/cpu/mce/core.c, mm/memory-failure.c), tested line by line (docs/host.md).
 */
#ifndef GPUDOCTOR_KLOG_HOSTMEM_H
#define GPUDOCTOR_KLOG_HOSTMEM_H

#include "snapshot/snap-driver.h"

#include <stddef.h>
#include <stdint.h>

enum hostmem_result {
    HOSTMEM_NONE,        /* not about the host's memory */
    HOSTMEM_UNCORRECTED, /* *ev is a KLOG_HOST_MEM event (not yet stamped) */
    HOSTMEM_CORRECTED,   /* *count corrected errors */
    HOSTMEM_GHES,        /* one line of a firmware error record: *g */
};

/* What one line of a GHES record ("{N}[Hardware Error]: ...") says. */
enum ghes_what {
    GHES_OTHER,
    GHES_SEVERITY, /* "event severity: recoverable": the record's */
    GHES_SECTION,  /* " Error 0, type: recoverable": the section's that follows */
    GHES_MEMORY,   /* "  section_type: memory error" */
    GHES_DIMM,     /* "  DIMM location: NODE 4 CPU1_DIMM_A1" */
};

enum ghes_severity {
    GHES_SEV_UNKNOWN,
    GHES_SEV_CORRECTED,   /* "corrected" */
    GHES_SEV_UNCORRECTED, /* "recoverable" or "fatal" */
    GHES_SEV_INFO,        /* "info" */
};

struct ghes_line {
    uint32_t record; /* the N of "{N}": lines of one record share it */
    enum ghes_what what;
    enum ghes_severity severity; /* GHES_SEVERITY, GHES_SECTION */
    const char *word;            /* ... the firmware's word, in msg */
    size_t word_len;
    const char *dimm; /* GHES_DIMM: the location, in msg */
    size_t dimm_len;
};

#define HOSTMEM_DIMM_MAX 96 /* longer DIMM labels are cut */

/*
 * Parses one kernel message (sanitised, no stamps). ev is zeroed first and owns its strings
 * afterwards (klog_event_free) whatever the result; *count and *g are set for their results.
 */
enum hostmem_result klog_parse_hostmem(const char *msg, struct klog_event *ev, uint64_t *count,
                                       struct ghes_line *g);

/* Sets ev's DIMM to the n bytes at s, trimmed and cut to HOSTMEM_DIMM_MAX; nothing when blank. */
void klog_hostmem_set_dimm(struct klog_event *ev, const char *s, size_t n);

/* A KLOG_HOST_MEM event for an uncorrected memory error in a GHES record; severity is the word. */
void klog_hostmem_ghes_event(struct klog_event *ev, const char *word, size_t word_len);

#endif
