/*
 * The snapshot: everything gpudoctor saw, as plain data with one owner and one free.
 * Collectors fill it, rules read it, renderers print it. It serialises to versioned JSON
 * ("gpudoctor.snapshot/1") and loads back, so `check --from FILE` runs the same rules as a live
 * check. Each section has its own header and codec (snap-*.h); docs/snapshot.md describes every
 * field.
 */
#ifndef GPUDOCTOR_SNAPSHOT_H
#define GPUDOCTOR_SNAPSHOT_H

#include "snapshot/snap-bench.h"
#include "snapshot/snap-driver.h"
#include "snapshot/snap-gpu.h"
#include "snapshot/snap-host.h"
#include "snapshot/snap-fabric.h"
#include "snapshot/snap-ib.h"
#include "snapshot/snap-pcie.h"
#include "snapshot/snap-procs.h"
#include "snapshot/snap-reported.h"
#include "snapshot/snap-stack.h"
#include "snapshot/snap-state.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SNAPSHOT_SCHEMA "gpudoctor.snapshot/1"
/*
 * The most a snapshot document may hold, and so one line of a recording (a context line is a
 * snapshot). Every reader counts every byte read, NUL bytes included, against it.
 */
#define SNAPSHOT_MAX_BYTES (256u << 20)
#define SNAPSHOT_MAX_TEXT  "256 MiB"

/* The collectors, in the order they run. */
enum collector_id {
    COLLECTOR_NVML,
    COLLECTOR_PROCS,
    COLLECTOR_HOST,
    COLLECTOR_PCIE,
    COLLECTOR_DRIVER,
    COLLECTOR_KLOG,
    COLLECTOR_STACK,
    COLLECTOR_IB,
    COLLECTOR_FABRIC,
    COLLECTOR__COUNT
};

enum collector_state {
    CS_NOT_RUN,       /* not attempted (skipped, or absent from a loaded snapshot) */
    CS_OK,            /* everything read */
    CS_PARTIAL,       /* some things could not be read: see notes */
    CS_UNAVAILABLE,   /* the source does not exist here (no driver, no PSI, ...) */
    CS_NO_PERMISSION, /* the source exists but we may not read it */
    CS_FAILED,        /* an error: see detail */
    CS_TIMEOUT,       /* did not answer before the deadline */
};

struct collector_status {
    enum collector_state state;
    char *detail; /* one line: why it is not ok */
    char **notes; /* what could not be read and why, one line each */
    size_t n_notes, cap_notes;
    int64_t elapsed_us;
    /*
     * The same texts for people in the locale's language, made beside the English when a
     * translation is in use (as a finding's title_l): NULL where there is none, never written
     * to JSON. collector_detail_text() and collector_note_text() pick.
     */
    char *detail_l;
    char **notes_l; /* cap_notes_l items */
    size_t cap_notes_l;
};

/* One point of history: the values that change, at one time. */
struct sample {
    int64_t t_ms;     /* milliseconds since the first sample */
    struct gpu *gpus; /* dynamic fields only */
    size_t n_gpus;
    struct host_sample host;
    struct proc_sample *procs;
    size_t n_procs;
};

struct snapshot {
    char *gpudoctor_version;
    char *hostname;
    int64_t time_ms;   /* Unix time of the capture, milliseconds */
    int64_t window_ms; /* sampling window */
    char *root;        /* root directory the host collectors read ("/" when live) */

    struct nvml_system nvml;
    struct gpu *gpus;
    size_t n_gpus;

    struct proc_table procs;
    struct host_info host;
    struct pcie_info pcie;
    struct driver_info driver;
    struct stack_info stack;
    struct state_info state;   /* the remembered past (state file); status STATE_NOT_READ: none */
    struct bench_info bench;   /* gpudoctor bench; state BENCH_NOT_RUN elsewhere */
    struct ib_info ib;         /* InfiniBand / RoCE ports and GPUDirect RDMA (collect/ib.c) */
    struct fabric_info fabric; /* NVSwitches and Fabric Manager (collect/fabric.c) */
    struct reported_info reported; /* the errors the user saw: --error (collect/reported.c) */

    struct collector_status collectors[COLLECTOR__COUNT];

    struct sample *samples;
    size_t n_samples, cap_samples;
};

extern const char *const collector_names[COLLECTOR__COUNT];
extern const char *const collector_state_names[];
/* The same states for people, marked for translation: print them through _(). */
extern const char *const collector_state_words[];

struct snapshot *snapshot_new(void);
void snapshot_free(struct snapshot *s);

void collector_set(struct collector_status *c, enum collector_state state, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void collector_note(struct collector_status *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/*
 * A note made in both languages by the caller (TWICE, util/i18n.h), for notes whose arguments are
 * words too: en is the English, l the reader's (or NULL); both are taken.
 */
void collector_note_take(struct collector_status *c, char *en, char *l);
/* Frees what a collector status owns and zeroes it. */
void collector_status_free(struct collector_status *c);
/* The detail, and note k, for people: the locale's words where a translation was made. */
const char *collector_detail_text(const struct collector_status *c);
const char *collector_note_text(const struct collector_status *c, size_t k);

/* Frees what a sample owns and zeroes it (a history ring reuses its slots). */
void sample_free(struct sample *smp);

/* Appends an empty sample at t_ms and returns it. */
struct sample *snapshot_add_sample(struct snapshot *s, int64_t t_ms);

/* The GPU with NVML index idx, or NULL. */
struct gpu *snapshot_gpu(const struct snapshot *s, uint32_t idx);
/* The GPU with NVML index idx in a sample (one reading of the history), or NULL; pos is where it
 * usually is (samples keep the snapshot's order of GPUs), SIZE_MAX when not known. */
const struct gpu *sample_gpu(const struct sample *smp, size_t pos, uint32_t idx);

/* Serialises to JSON text (indented, keys in a fixed order). The caller frees the result. */
char *snapshot_to_json(const struct snapshot *s);
json_t *snapshot_to_jansson(const struct snapshot *s);

/*
 * Parses a snapshot from text; name is used in messages. On error returns NULL and sets *cause
 * to "name:line:column: what" (the caller frees it).
 */
struct snapshot *snapshot_from_json(const char *text, size_t len, const char *name, char **cause);
struct snapshot *snapshot_load(const char *path, char **cause);

/*
 * One history sample as JSON, and back: the codec of the snapshot's "samples" array, also used
 * for recordings (JSON Lines, one sample a line). sample_from_json appends the sample it reads
 * to s; path names it in messages. Returns 0, or -1 with *err set.
 */
json_t *sample_to_json(const struct sample *smp);
int sample_from_json(struct snapshot *s, const json_t *o, const char *path, struct jerr *err);

/* Formats a message for a jerr located in text: "name:line:column: path: msg". */
char *jerr_format(const struct jerr *err, const char *text, const char *name);

#endif
