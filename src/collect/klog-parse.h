/*
 * Kernel-log parsing: turns /dev/kmsg records and syslog lines into struct klog_event (XIDs in
 * every driver generation's format, fallen off the bus, PCI -> UUID lines, hung tasks in the
 * driver, OOM kills). Pure: no I/O, so every format is tested line by line (docs/driver.md).
 */
#ifndef GPUDOCTOR_KLOG_PARSE_H
#define GPUDOCTOR_KLOG_PARSE_H

#include "collect/klog-hostmem.h"
#include "snapshot/snap-driver.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KLOG_MAX_EVENTS 256  /* events kept by default: the most recent */
#define KLOG_MAX_LINE   4096 /* longer lines are cut: no driver line comes near */
#define KLOG_MAX_GPUS   1024 /* PCI -> UUID pairs remembered (more are counted, not kept) */
#define KLOG_MAX_HOST_MEM                                                                          \
    32 /* host memory events kept (the most recent): a failing DIMM's flood                        \
        * of them must not push the GPUs' events out */

struct klog_parse_opts {
    size_t max_events;    /* events kept (the most recent); 0 = KLOG_MAX_EVENTS */
    int64_t boot_time_ms; /* Unix time of boot, to date kernel stamps; 0 = unknown */
    int64_t now_ms;       /* Unix time now: gives syslog stamps without a year their year */
};

/* What klog_parse_message found in one message. */
enum klog_parse_result {
    KLOG_PARSE_NONE,  /* nothing of interest */
    KLOG_PARSE_EVENT, /* *ev is filled */
    KLOG_PARSE_BAD,   /* looked like an event (an Xid line, an OOM kill) but did not parse */
    KLOG_PARSE_HUNG,  /* a hung-task header: *ev is filled, the stack that follows decides */
};

struct klog_uuid_map {
    char pci[24];
    char *uuid;
};

struct klog_parser {
    struct klog_parse_opts o;
    struct klog_event *ring; /* the most recent events, oldest at head */
    size_t cap, head, n;
    uint64_t records, total, dropped, unparsed;
    uint64_t malformed; /* records or lines not in the source's format */
    uint64_t first_malformed_record;
    struct klog_uuid_map *map; /* PCI -> UUID, one pair per GPU the log named */
    size_t n_map, cap_map;
    uint64_t map_dropped; /* GPUs named after KLOG_MAX_GPUS were: their UUID is not known */
    /* A hung-task warning waiting for its call trace to tell whether the driver is involved. */
    struct klog_event hung;
    bool hung_pending, hung_nvidia;
    unsigned hung_lines;
    /* A firmware error record (GHES) being read: its number and severities, and an uncorrected
     * memory error of it waiting for its "DIMM location" line. */
    bool ghes_open, ghes_pending;
    uint32_t ghes_record;
    enum ghes_severity ghes_severity, ghes_section;
    char ghes_severity_word[16], ghes_section_word[16]; /* the firmware's words for them */
    struct klog_event ghes;
    size_t n_host_mem;                       /* KLOG_HOST_MEM events in the ring */
    uint64_t mem_corrected, mem_uncorrected; /* host memory errors reported (corrected: counts) */
    /* The first line that did not parse and its record number, for a collector note. */
    char *first_unparsed;
    uint64_t first_unparsed_record;
};

void klog_parser_init(struct klog_parser *p, const struct klog_parse_opts *o);
void klog_parser_release(struct klog_parser *p);

/*
 * One /dev/kmsg record: "PRI,SEQ,TIMESTAMP_US,FLAGS[,...];MESSAGE" (anything after the first
 * newline, the " KEY=VALUE" dictionary, is ignored). Records from user space (facility other
 * than kernel) are ignored, so a process writing to /dev/kmsg cannot forge driver events.
 * Returns false when rec is not a kmsg record.
 */
bool klog_feed_kmsg(struct klog_parser *p, const char *rec, size_t len);

/*
 * One syslog line: "Mmm dd hh:mm:ss HOST kernel: [UPTIME] MESSAGE" (local time) or the RFC 3339
 * form "2026-12-02T09:19:00.123456+01:00 HOST kernel: ...". Lines of other programs are counted
 * and ignored. Returns false when the line has no recognisable stamp.
 */
bool klog_feed_syslog(struct klog_parser *p, const char *line, size_t len);

/* One kernel message (no prefix) with its stamps; has_* false when unknown. */
void klog_feed_message(struct klog_parser *p, const char *msg, bool has_time, int64_t time_ms,
                       bool has_uptime, int64_t uptime_us);

/*
 * Moves the events (oldest first) and counters into d and sets DRIVER_S_KLOG. The parser is
 * empty afterwards but must still be released.
 */
void klog_parser_finish(struct klog_parser *p, struct driver_info *d);

/*
 * Parses one kernel message (the text after any stamps). ev is zeroed first and owns its strings
 * afterwards (klog_event_free) whatever the result.
 */
enum klog_parse_result klog_parse_message(const char *msg, struct klog_event *ev);

/*
 * Normalises a PCI address at s ("PCI:0000:3B:00", "0000:3b:00.0") to "0000:3b:00" in out.
 * Returns the characters consumed, 0 when s does not start with one.
 */
size_t klog_parse_pci(const char *s, char *out, size_t size);

#endif
