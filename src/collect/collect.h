/*
 * Collection: runs every collector over a sampling window and fills one snapshot.
 * Collectors are rows in a table (collect.c), run in that order; each fills its own part of the
 * snapshot and records in snapshot->collectors[id] what it could not read and why.
 */
#ifndef GPUDOCTOR_COLLECT_H
#define GPUDOCTOR_COLLECT_H

#include "snapshot/snapshot.h"
#include "util/fileio.h"

struct nvml_session;

#include <stdbool.h>
#include <stdint.h>

struct collect_opts {
    const char *root;     /* "/" live; a fixture tree in tests */
    int64_t window_ms;    /* sampling window; 0 = one instant reading */
    int64_t interval_ms;  /* time between samples inside the window; 0 = automatic */
    int64_t timeout_ms;   /* the whole collection ends by then, whatever hangs */
    const char *nvml_lib; /* NULL: $GPUDOCTOR_NVML_LIB, else "libnvidia-ml.so.1" */
    bool progress;        /* show progress on stderr (a terminal) */
    /*
     * Borrowed NVML session kept open across collections (watch, serve), or NULL to open one for
     * this collection only. A session that timed out or died stays dead: its owner sees the NVML
     * collector's state (timeout/failed) and opens a new one for the next collection.
     */
    struct nvml_session *nvml_session;
    unsigned only; /* bitmask of (1 << collector_id) to run; 0 = all */
};

/* What every collector gets. */
struct collect_ctx {
    const struct collect_opts *opts;
    struct sysroot root;
    bool live;             /* the root is this machine's own "/": its environment applies */
    int64_t start_mono_ms; /* when collection began */
    int64_t deadline_mono_ms;
};

/* Milliseconds left before the deadline (0 when passed). */
int64_t collect_time_left(const struct collect_ctx *ctx);

struct collector_ops {
    enum collector_id id;
    /* Collects everything at the start; returns private state for sample/finish (may be NULL). */
    void *(*start)(struct collect_ctx *ctx, struct snapshot *s);
    /* Adds this collector's values to one sample of the window (may be NULL). */
    void (*sample)(struct collect_ctx *ctx, void *state, struct snapshot *s, struct sample *smp);
    /* Ends the window: computes rates from the samples, frees state (may be NULL). */
    void (*finish)(struct collect_ctx *ctx, void *state, struct snapshot *s);
};

extern const struct collector_ops collector_nvml;
extern const struct collector_ops collector_procs;
extern const struct collector_ops collector_host;
extern const struct collector_ops collector_pcie;
extern const struct collector_ops collector_driver;
extern const struct collector_ops collector_klog;
extern const struct collector_ops collector_stack;
extern const struct collector_ops collector_ib;
extern const struct collector_ops collector_fabric;

/*
 * Runs the collectors and returns the snapshot (never NULL). Returns NULL only when the root
 * directory cannot be opened, with *cause set. When the timeout leaves no room for the whole
 * sampling window, sampling stops early and the snapshot's window_ms is the window sampled.
 */
struct snapshot *collect_snapshot(const struct collect_opts *opts, char **cause);

/*
 * The state collector (collect/state.c): reads the state file of dir into s->state, the past
 * the rules judge with (XIDs before this boot, acknowledgements). Never fails: a missing or
 * corrupt file is said in s->state's status and note, which the report shows.
 */
void collect_state(struct snapshot *s, const char *dir);

/*
 * For programs that collect again and again (watch, serve): one NVML helper kept across cycles.
 * collect_session_lend opens *held when needed (unless co->only leaves NVML out) and lends it
 * through co->nvml_session; collect_session_check closes it after a cycle whose NVML collector
 * timed out or failed, so the next cycle starts a new helper. Without a session the collector
 * opens its own and says why that failed.
 */
/*
 * The user's own evidence: an error text they saw (--error), sanitised, kept to
 * REPORTED_TEXT_MAX bytes (of a longer one, its recognised lines, else its end) and recognised
 * with data/cuda-errors.tsv, appended to s->reported.
 * Returns 0, or -1 when s already holds REPORTED_ERRORS_MAX texts (nothing added).
 */
int collect_reported_add(struct snapshot *s, const char *text);
/* Recognises every reported text of s again with this gpudoctor's catalogue (a loaded snapshot). */
void collect_reported_recognise(struct snapshot *s);

void collect_session_lend(struct nvml_session **held, struct collect_opts *co);
void collect_session_check(struct nvml_session **held, const struct snapshot *s);

#endif
