/*
 * What the parts of the Prometheus renderer share (src/render/metrics*.c, and only they): the
 * text buffer and its writers (metrics-text.c), the state of one rendering, and the loops of
 * each source of samples. metrics.c says which part is where.
 */
#ifndef GPUDOCTOR_METRICS_INTERNAL_H
#define GPUDOCTOR_METRICS_INTERNAL_H

#include "render/metrics.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A growable text buffer, always NUL-terminated once something was added. */
struct mbuf {
    char *p;
    size_t len, cap;
};

/* A field's value as sign and magnitude, or a double; false when the type has no number. */
struct mval {
    bool neg, is_double;
    uint64_t mag;
    double d;
};

/* One rendering of the exposition. */
struct render {
    const struct snapshot *s;
    const struct findings *f;
    const struct metrics_cycle *cyc;
    const struct metrics_opts *o;
    const struct metrics_memory *mem; /* the caller's, or one made for this rendering */
    char **gpu_labels;                /* per GPU of s: gpu="0",uuid="...",name="..." */
    struct mbuf out;                  /* the whole exposition */
    struct mbuf fam;                  /* the samples of the family being rendered */
};

/* metrics-text.c */
void mbuf_add(struct mbuf *b, const char *s, size_t n);
void mbuf_str(struct mbuf *b, const char *s);
void mbuf_printf(struct mbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void mbuf_escaped(struct mbuf *b, const char *s);
/* Appends `,key="value"` (or without the comma at the start of a label set). */
void mbuf_label(struct mbuf *b, const char *key, const char *value);
bool metrics_field_number(const struct jfield *f, const void *obj, struct mval *v);
/* Appends v * mul / div exactly: div is a power of ten, so the result is a finite decimal. */
void mbuf_value(struct mbuf *b, const struct mval *v, uint32_t mul, uint32_t div);
void mbuf_u64(struct mbuf *b, uint64_t v);
/* Seconds with millisecond precision (durations, ages, timestamps). */
void mbuf_seconds_ms(struct mbuf *b, int64_t ms);
/* HELP text: backslash and newline escaped. */
void mbuf_help(struct mbuf *b, const char *s);

/* metrics.c: a sample line of the current family, name{base labels, extra labels} value. */
void metrics_sample_begin(struct render *r, const struct metric_family *m, const char *base,
                          const char *extra);
void metrics_sample_u64(struct render *r, const struct metric_family *m, const char *base,
                        const char *extra, uint64_t v);

/* metrics-gpu.c: the samples of one family, by its source. */
void metrics_gpu_field(struct render *r, const struct metric_family *m);
void metrics_gpu_up(struct render *r, const struct metric_family *m);
void metrics_gpu_info(struct render *r, const struct metric_family *m);
void metrics_clock_reasons(struct render *r, const struct metric_family *m);
void metrics_gpu_processes(struct render *r, const struct metric_family *m);
/* The largest --top-processes, or (dropped) how many were left out. */
void metrics_proc_memory(struct render *r, const struct metric_family *m, bool dropped);

/* metrics-memory.c: g's label set, with what m remembers of it when it does not answer (m may
 * be NULL); and the counter samples of the kernel-log lines of one kind (enum metrics_log_kind). */
char *metrics_gpu_labels(const struct gpu *g, const struct metrics_memory *m);
void metrics_log_counts(struct render *r, const struct metric_family *m, int kind);

/* metrics-health.c */
void metrics_findings(struct render *r, const struct metric_family *m);
void metrics_findings_count(struct render *r, const struct metric_family *m);
void metrics_findings_acked(struct render *r, const struct metric_family *m);
/* A collector that read everything or part of it. */
bool metrics_collector_up(enum collector_state st);
/* Per collector: up, or (seconds) the time it took. */
void metrics_collectors(struct render *r, const struct metric_family *m, bool seconds);
void metrics_driver_info(struct render *r, const struct metric_family *m);

/* metrics-bench.c: the families of the last bench result (MSRC_BENCH_*). */
void metrics_bench(struct render *r, const struct metric_family *m);
void metrics_ib(struct render *r, const struct metric_family *m);
/* metrics-nvlink.c: the NVLink families (MSRC_NVLINK_*). */
void metrics_nvlink(struct render *r, const struct metric_family *m);
/* metrics-fabric.c: NVSwitches, Fabric Manager and SXids (MSRC_NVSWITCHES ... MSRC_SXID). */
void metrics_fabric(struct render *r, const struct metric_family *m);

#endif
