/*
 * What the importers share: the session filling one snapshot, the piece of text being imported,
 * lines, notes and errors with line numbers, and the setters that fill GPU fields from the values
 * nvidia-smi prints ("34 C", "N/A", "[Not Supported]") so that a value already known is kept and
 * a status never hides a value. Only src/import includes it.
 */
#ifndef GPUDOCTOR_IMPORT_IMPL_H
#define GPUDOCTOR_IMPORT_IMPL_H

#include "import/import.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define IMP_MAX_LINE      4096  /* a longer line is read cut to this (no format needs more) */
#define IMP_MAX_GPUS      1024  /* as the NVML collector: more are counted in a note */
#define IMP_MAX_GPU_PROCS 4096  /* processes listed on one GPU */
#define IMP_MAX_PROCS     65536 /* processes named in the process table */
#define IMP_MAX_NOTES     12    /* notes a piece adds to one collector; then "N more" */
#define IMP_MAX_EVENTS    1024  /* kernel-log events kept over every piece (the most recent) */
#define IMP_MAX_TOPO      256   /* rows and columns of a topo -m matrix */

/* Lines of a text, one at a time: a NUL-terminated copy, cut to IMP_MAX_LINE - 1 bytes. */
struct lines {
    const char *text;
    size_t len, pos;
    size_t start;     /* offset of the current line in text */
    unsigned long no; /* its number, 1-based, counted from the text's start */
    char line[IMP_MAX_LINE];
    size_t n;  /* its length (as cut), without the newline and a trailing CR */
    bool more; /* it was longer than IMP_MAX_LINE - 1 */
};

void lines_init(struct lines *l, const char *text, size_t len);
bool lines_next(struct lines *l);

/* One cell of nvidia-smi topo -m: row GPU index, column label ("GPU3", "mlx5_0"), the link. */
struct topo_link {
    int gpu;
    char *peer;
    char *link; /* "NV12", "PIX", "PXB", "PHB", "NODE", "SYS", "X" */
};

struct topo_gpu {
    int gpu;
    bool numa_known;
    int32_t numa;
};

/*
 * The BMC event log's power supply, power unit, boot and log-state events, kept across the files
 * of a session and replayed in time order after each (ipmi-sel.c): files merged in any order,
 * and a record read twice, give one history. The replay follows one slot per sensor and kind of
 * fault.
 */
#define SEL_EVENTS_MAX 16384
#define SEL_TRACK_MAX  64
#define SEL_SEEN_MAX   (1u << 18)
enum sel_fault_kind {
    SEL_LOSS, /* the supply or the supplies' redundancy is gone: failed, AC lost, removed */
    SEL_RISK, /* it still delivers: predicted to fail, AC out of range, a configuration error */
};
struct sel_event {
    char sensor[64], event[48];
    char id[8]; /* the record's id, as the list writes it */
    bool asserted, dated;
    int64_t ms;    /* its time; undated: the dated entry before it in its file, else 0 */
    uint32_t file; /* which file of the session, in the order read */
    uint32_t line; /* its place in that file */
};
struct sel_fault {
    char sensor[64];
    char key[40];  /* the kind of event the slot follows ("Failure detected", "redundancy") */
    char text[48]; /* the event that set its state, as ipmitool words it */
    int kind;      /* enum sel_fault_kind */
    bool open, dated, stale; /* stale: a power-on was logged after it */
    int64_t ms;              /* when it opened, when dated */
};
struct sel_state {
    bool read;      /* an ipmitool list was read (Supermicro's lines are read for memory only) */
    bool base_kept; /* the base snapshot had its own counts: they are kept, not replaced */
    uint32_t files;
    struct sel_event *ev;
    size_t n_ev, cap_ev;
    uint32_t dropped; /* events beyond SEL_EVENTS_MAX, not kept */
    /* Every record of ipmitool's lists read so far, as a fingerprint (open addressing, 0 is
     * free): a record read again, from one file given twice or two dumps of one log, is not
     * counted again. Past SEL_SEEN_MAX records, later ones are counted unchecked (seen_full). */
    uint64_t *seen;
    size_t n_seen, cap_seen;
    bool seen_full;
    /* The replay's result. */
    struct sel_fault f[SEL_TRACK_MAX];
    size_t n;
    uint32_t untracked; /* fault events no slot could follow: their state is not known */
    bool full;          /* "Log full" or all logging disabled, not reset since */
};

/* The session: one snapshot filled by every piece, and what only the end can settle. */
struct import_session {
    struct sel_state sel;
    struct snapshot *s;
    int64_t time_ms;      /* the latest time a piece says it was taken (0: none says) */
    int64_t klog_last_ms; /* the latest kernel-log stamp, when no piece says its time */
    unsigned pieces;
    struct topo_link *links; /* from topo -m: applied when the session ends */
    size_t n_links, cap_links;
    struct topo_gpu *topo_gpus;
    size_t n_topo_gpus, cap_topo_gpus;
    uint64_t events_dropped; /* kernel-log events beyond IMP_MAX_EVENTS */
};

/* One piece of text being imported (a file, or a section of a bug report). */
struct imp {
    struct import_session *is;
    struct snapshot *s;
    const char *name;    /* the file, in messages */
    const char *format;  /* the importer running */
    unsigned long line0; /* the file's line number of the piece's line 1, minus one */
    int64_t time_ms;     /* the piece's own time, 0 when it does not say */
    int64_t klog_now_ms; /* for kernel-log stamps without a year: the evidence's time */
    bool found;          /* the importer recognised its format in the piece */
    bool list_complete;  /* lspci: the list of NVIDIA devices is complete (a bug report's) */
    char *error;         /* why the piece cannot be read: "name:line: what" */
    unsigned notes[COLLECTOR__COUNT], dropped[COLLECTOR__COUNT];
    bool touched[COLLECTOR__COUNT];
};

/* The importers (one file each). */
struct importer {
    const char *name;
    const char *summary;
    /* Whether text shows this format (a cheap look at its lines). */
    bool (*detect)(const char *text, size_t len);
    /* Imports what it recognises; sets im->found, or im->error when nothing could be read. */
    void (*run)(struct imp *im, const char *text, size_t len);
};

extern const struct importer importer_smi_table;
extern const struct importer importer_smi_query;
extern const struct importer importer_smi_xml;
extern const struct importer importer_topo;
extern const struct importer importer_nvlink;
extern const struct importer importer_lspci;
extern const struct importer importer_klog;
extern const struct importer importer_bug_report;
extern const struct importer importer_ipmi_sel;

/* Runs importer r on a part of a piece (a bug report's section) starting at its line line0. */
void imp_run_part(struct imp *parent, const struct importer *r, const char *text, size_t len,
                  unsigned long line0, bool list_complete);

/* ---- messages ---- */

/* A note in collector c's status: "name:line: what" (line 0: none), at most IMP_MAX_NOTES. */
void imp_note(struct imp *im, enum collector_id c, unsigned long line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The piece cannot be read: the first error is kept, "name:line: what". */
void imp_fail(struct imp *im, unsigned long line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/*
 * Collector c's part of the snapshot comes (partly) from this piece: a collector not run becomes
 * partial, and says where its evidence came from (once per piece).
 */
void imp_touch(struct imp *im, enum collector_id c);

/* ---- values ---- */

/*
 * The NVML return code a live reading would have had for what nvidia-smi prints in place of a
 * value: "N/A" and "[Not Supported]" NOT_SUPPORTED, "[Insufficient Permissions]" NO_PERMISSION,
 * "[Unknown Error]" and "ERR!" UNKNOWN, "[GPU is lost]" GPU_IS_LOST, ... False for a value.
 */
bool imp_status(const char *v, int32_t *rc);

/* How a value is written. */
enum imp_unit {
    IU_STR,     /* text as it is */
    IU_NUM,     /* an integer */
    IU_HEX,     /* "0x1B0610DE" */
    IU_PCT,     /* "36 %", "36%" */
    IU_C,       /* "35 C", "35C" */
    IU_W,       /* "63.25 W", "63W": to milliwatts */
    IU_MIB,     /* "11439 MiB" (also KiB, GiB, MB): to bytes */
    IU_MHZ,     /* "1380 MHz" */
    IU_KBS,     /* "1000 KB/s": NVML's KiB/s, to bytes per second */
    IU_WIDTH,   /* "16x", "x16" */
    IU_BOOL,    /* Enabled/Disabled, On/Off, Yes/No, Active/Not Active */
    IU_PSTATE,  /* "P8" */
    IU_COMPUTE, /* "Default", "Exclusive_Process", "E. Process", ... */
};

/* Parses v as unit u into *out (bool as 0/1; IU_STR is not parsed). */
bool imp_value(const char *v, enum imp_unit u, uint64_t *out);

/*
 * Sets GPU g's field key (a key of gpu_table, "temp_c") from the text v, written in unit u, read
 * at line (for a note when it does not parse). A value already known stays (the first piece that
 * has one gives it); a status word records its NVML code where nothing better is known.
 */
void imp_gpu_set(struct imp *im, struct gpu *g, const char *key, const char *v, enum imp_unit u,
                 unsigned long line);
/* The same with a value already parsed (strings: imp_gpu_set with IU_STR). */
void imp_gpu_set_u64(struct gpu *g, const char *key, uint64_t value);
void imp_gpu_set_rc(struct gpu *g, const char *key, int32_t rc);

/*
 * The GPU with PCI address bus (any spelling; NULL when the piece does not say), else the one
 * with NVML index index (-1: unknown), else a new one (index: the one given, else the first
 * free). NULL after a note when IMP_MAX_GPUS are already known.
 */
struct gpu *imp_gpu(struct imp *im, const char *bus, int64_t index, unsigned long line);

/*
 * The GPU of a block of nvidia-smi -q (text or XML), the position-th of its output: imp_gpu with
 * that place as the index, and a GPU new to the snapshot marked index_by_order, since the output
 * may list only some GPUs (-q -i 3, a grep). smi_top_end clears the marks when the output listed
 * every GPU attached: its order is then NVML's.
 */
struct gpu *imp_gpu_listed(struct imp *im, const char *bus, size_t position, unsigned long line);

/* "0000:3b:00.0", "3B:00.0", "00000000:3B:00.0" as NVML writes it: "00000000:3B:00.0". */
bool imp_pci_nvml(const char *in, char *out, size_t size);

/*
 * Adds a process to GPU g's list (what NVML's process lists hold) and, with a name, to the
 * process table (pid and command only). Known pids are not added twice.
 */
struct gpu_proc *imp_gpu_proc(struct imp *im, struct gpu *g, uint32_t pid, unsigned long line);
void imp_proc_name(struct imp *im, uint32_t pid, const char *name);
/* GPU g's process list is complete in this piece ("No running processes found" included). */
void imp_gpu_procs_known(struct imp *im, struct gpu *g);

/*
 * nvidia-smi's time stamps ("Wed Apr 17 17:09:17 2024", "Thu Sep  7 10:55:26 2017"), read in
 * the local time zone as syslog stamps are: Unix milliseconds, or 0.
 */
int64_t imp_time_ctime(const char *s);
/* The piece was taken at ms: the session keeps the latest. */
void imp_time(struct imp *im, int64_t ms);

/* "12.2" -> 12020; false when it is not a version. */
bool imp_cuda_version(const char *v, int32_t *out);

/* Strips blanks at both ends in place; returns s. */
char *imp_trim(char *s);
/* Case-insensitive prefix test. */
bool imp_starts(const char *s, const char *prefix);

/* Kernel-log events of a finished parser, added to the snapshot without duplicates. */
struct klog_parser;
void imp_klog_merge(struct imp *im, struct klog_parser *p, const char *source);

/* The -q text and XML share one table of fields (smi-fields.c). */
struct smi_gpu; /* one GPU being read */
struct smi_gpu *smi_gpu_begin(struct imp *im, struct gpu *g);
/* path: sections joined by '/', as in the text ("FB Memory Usage/Used"). xml: tag path. */
void smi_gpu_text(struct smi_gpu *sg, const char *path, const char *value, unsigned long line);
void smi_gpu_xml(struct smi_gpu *sg, const char *path, const char *value, unsigned long line);
/* A section opened (text: a line without a value; xml: an element with children). */
void smi_gpu_section(struct smi_gpu *sg, const char *path, bool xml, unsigned long line);
/* Ends the GPU: sums (ECC), bitmasks (clock event reasons), the process list. */
void smi_gpu_end(struct smi_gpu *sg, bool complete);
/* The top-level values (driver, CUDA, attached GPUs, timestamp), text or XML names. */
void smi_top(struct imp *im, const char *key, const char *value, unsigned long line);
/* The top of an -q output ended with this many GPU blocks read. */
void smi_top_end(struct imp *im, size_t n_gpus, bool complete, unsigned long line);
/* After the GPU blocks of an output (smi_top_end calls it): when they were every GPU attached,
 * their order is NVML's index (imp_gpu_listed's marks cleared); else a note says how they are
 * numbered. */
void smi_listed_end(struct imp *im, size_t n_gpus, bool complete, unsigned long line);

#endif
