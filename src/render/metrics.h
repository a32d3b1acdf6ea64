/*
 * The Prometheus renderer: the text exposition format (version 0.0.4) of one collection, for
 * `gpudoctor serve` (/metrics) and for node_exporter's textfile collector (--textfile).
 *
 * Every metric family is one row of metric_families[] (metrics-table.c): name, type, help,
 * labels, and where the value comes from. GPU fields name their key in gpu_table and a unit
 * conversion (mW -> W, MHz -> Hz, percent -> ratio), so a value is declared once, in the
 * snapshot's table; the other families (clock event reasons, XIDs, processes, findings, collector
 * health) are loops over lists. docs/prometheus.md is generated from the same table
 * (`serve --describe-metrics`). A field that could not be read gives no series at all, never 0.
 */
#ifndef GPUDOCTOR_RENDER_METRICS_H
#define GPUDOCTOR_RENDER_METRICS_H

#include "rules/rules.h"
#include "snapshot/snapshot.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define METRICS_CONTENT_TYPE          "text/plain; version=0.0.4; charset=utf-8"
#define METRICS_DEFAULT_TOP_PROCESSES 20

enum metric_type {
    METRIC_GAUGE,
    METRIC_COUNTER,
};

/* Where a family's samples come from. */
enum metric_source {
    MSRC_GPU_FIELD,     /* one series per GPU from a field of gpu_table */
    MSRC_GPU_UP,        /* the GPU answers NVML (handle and no "lost" field) */
    MSRC_GPU_INFO,      /* 1, with the GPU's identity in labels */
    MSRC_CLOCK_REASON,  /* one series per clock event reason the GPU can report */
    MSRC_GPU_PROCESSES, /* processes NVML lists on the GPU */
    MSRC_XID,           /* kernel-log XIDs by GPU and code */
    MSRC_PROC_MEMORY,   /* per-process GPU memory, the largest N */
    MSRC_PROC_DROPPED,  /* processes left out of the above */
    MSRC_FINDING,       /* one series per finding */
    MSRC_FINDING_ACK,   /* one series per acknowledged finding (gpudoctor ack) */
    MSRC_FINDINGS,      /* findings by severity */
    MSRC_CHECK_STATUS,  /* the check's exit status */
    MSRC_COLLECTOR_UP,  /* per collector: ok or partial */
    MSRC_COLLECTOR_SECONDS,
    MSRC_NVML_UP,
    MSRC_NVML_DEVICES,
    MSRC_PCI_GPUS,
    MSRC_HOST_MEM_ERRORS, /* the host's EDAC counters */
    MSRC_DRIVER_INFO,
    MSRC_BUILD_INFO,
    MSRC_COLLECT_SECONDS,
    MSRC_COLLECT_SUCCESS,
    MSRC_COLLECT_CYCLES,
    MSRC_COLLECT_TIME,
    MSRC_DATA_AGE, /* rendered per scrape by metrics_render_age(), not by metrics_render() */
    /* the node's last bench result (metrics_cycle's bench; metrics-bench.c) */
    MSRC_BENCH_READ,
    MSRC_BENCH_TIME,
    MSRC_BENCH_HOST_COPY,
    MSRC_BENCH_MEMORY,
    MSRC_BENCH_FMA,
    MSRC_BENCH_CHECKSUM,
    MSRC_BENCH_P2P,
    MSRC_BENCH_P2P_LATENCY,
    /* InfiniBand / RoCE ports (the snapshot's ib section; metrics-ib.c) */
    MSRC_IB_PORT_ACTIVE,
    MSRC_IB_PORT_RATE,
    MSRC_IB_PORT_ERRORS,
    MSRC_IB_PORT_RCV_BYTES,
    MSRC_IB_PORT_XMIT_BYTES,
    MSRC_IB_PEERMEM,
    /* the GPUs' NVLinks (gpus[].nvlink; metrics-nvlink.c) */
    MSRC_NVLINK_LINKS_ACTIVE,
    MSRC_NVLINK_ACTIVE,
    MSRC_NVLINK_ERRORS,
    MSRC_NVLINK_DATA,
    /* NVSwitches, Fabric Manager and SXids (the fabric section; metrics-fabric.c) */
    MSRC_NVSWITCHES,
    MSRC_NVSWITCH_BOUND,
    MSRC_FM_RUNNING,
    MSRC_FM_INFO,
    MSRC_FM_LOG_ERRORS,
    MSRC_SXID,
};

struct metric_family {
    const char *name; /* gpudoctor_..., base unit last, _total for counters */
    enum metric_type type;
    enum metric_source source;
    const char *field;     /* MSRC_GPU_FIELD: key in gpu_table */
    const char *labels;    /* constant labels added to each series ("clock=\"sm\""), or NULL */
    uint32_t mul, div;     /* MSRC_GPU_FIELD: value * mul / div; div a power of ten */
    const char *label_doc; /* labels, for the docs */
    const char *help;
};

extern const struct metric_family metric_families[];
extern const size_t n_metric_families;

/*
 * What an exporter remembers from one collection to the next so that its series stay the same
 * series (metrics-memory.c): the identity of each GPU seen answering, so that a GPU that stops
 * answering keeps its uuid and name labels, and the kernel-log errors counted so far, so that the
 * XID and SXid counters never go down when the log rotates.
 */
struct metrics_gpu_ident {
    uint32_t index; /* NVML's index when last seen answering */
    char *uuid;
    char *name;    /* NULL: never read */
    char *pci;     /* NULL: never read */
    uint64_t seen; /* the update it was last seen answering in */
};

enum metrics_log_kind {
    METRICS_LOG_XID,
    METRICS_LOG_SXID,
};

/* One counter series of kernel-log lines. */
struct metrics_log_series {
    int kind;     /* enum metrics_log_kind */
    char *labels; /* without the XID: gpu="0",uuid="...",name="...", or pci="..." (and fatal) */
    long gpu;     /* for the order: the GPU's index, -1 for a series labelled by address */
    int32_t xid;  /* METRICS_LOG_XID */
    uint64_t n;
};

struct metrics_memory {
    struct metrics_gpu_ident *gpus;
    size_t n_gpus, cap_gpus;
    struct metrics_log_series *series;
    size_t n_series, cap_series;
    uint64_t *seen; /* fingerprints of the lines counted, as of the last read of the log; sorted */
    size_t n_seen;
    bool log_read; /* a kernel log has been read: later reads count only lines not seen */
    uint64_t updates;
};

/*
 * Takes in what s shows: the GPUs that answer, and the XID and SXid lines of its kernel log that
 * are not among those already counted (the first read counts them all). s may be NULL.
 */
void metrics_memory_update(struct metrics_memory *m, const struct snapshot *s);
void metrics_memory_free(struct metrics_memory *m);

/* What the caller knows about the collection cycle that produced the snapshot. */
struct metrics_cycle {
    double duration_s;    /* how long collection + rules took */
    bool success;         /* the collection produced a snapshot */
    uint64_t cycles;      /* completed cycles so far, this one included */
    int64_t completed_ms; /* Unix time the cycle completed, milliseconds */
    int check_status;     /* rules_exit_status() */
    /* The node's last bench result (bench-last.json), NULL: none. bench_read: 1 it was read, -1
     * the file is unusable (the caller says why), 0 there is none or the state is off. */
    const struct bench_info *bench;
    int64_t bench_completed_ms; /* Unix time that bench ended, milliseconds */
    int bench_read;
    /* serve's memory, updated with this snapshot; NULL: the snapshot alone (its log counted as
     * it is, a GPU that does not answer labelled by its index only) */
    const struct metrics_memory *memory;
};

struct metrics_opts {
    size_t top_processes; /* per-process series: at most this many, largest memory first */
};

/* The whole exposition for one collection (s and f may be NULL when collection failed). */
char *metrics_render(const struct snapshot *s, const struct findings *f,
                     const struct metrics_cycle *cyc, const struct metrics_opts *o, size_t *len);

/*
 * The families that change between scrapes of one collection: gpudoctor_data_age_seconds.
 * Writes at most size bytes (NUL included) into buf; returns the length.
 */
size_t metrics_render_age(char *buf, size_t size, double age_s);

/* The Markdown table of every family, for docs/prometheus.md. */
void metrics_describe(FILE *out);

/*
 * Appends s to out as a label value: backslash, double quote and newline escaped, and bytes
 * that are not UTF-8 replaced by U+FFFD (Prometheus rejects them). For tests and the renderer.
 */
char *metrics_label_escape(const char *s);

#endif
