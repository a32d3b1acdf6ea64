/*
 * The past, as gpudoctor remembered it: the state file's content (XIDs, ECC and row-remap events
 * per GPU with the boot they happened in, and the acknowledgements of `gpudoctor ack`), read into
 * the snapshot so that rules judge with the history that was recorded, and `check --from FILE`
 * with the history the file was captured with. docs/state.md describes the file and the policy.
 */
#ifndef GPUDOCTOR_SNAP_STATE_H
#define GPUDOCTOR_SNAP_STATE_H

#include "snapshot/jfield.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define STATE_VERSION    1
#define STATE_MAX_GPUS   64  /* GPUs remembered; the longest unseen is dropped first */
#define STATE_MAX_EVENTS 64  /* events per GPU; the oldest is dropped first */
#define STATE_MAX_ACKS   256 /* acknowledgements; the oldest is dropped first */
#define STATE_MAX_RESETS 16  /* GPU resets remembered per GPU; the oldest is dropped first */

/* How reading the state went. */
enum state_status {
    STATE_NOT_READ,   /* not looked at (--no-state, or a snapshot without the section) */
    STATE_OK,         /* read */
    STATE_MISSING,    /* no state file yet: nothing is known about the past */
    STATE_CORRUPT,    /* unreadable as a state file: ignored, kept aside and rewritten at the
                         next record */
    STATE_UNREADABLE, /* could not be opened or read (permissions, I/O), or a newer version:
                         ignored, never replaced */
};
extern const char *const state_status_names[]; /* "not_read", "ok", "missing", ... */

enum state_event_kind {
    STATE_EV_XID,   /* an Xid line of the kernel log: code is the Xid */
    STATE_EV_ECC,   /* the aggregate uncorrectable ECC count rose: value is the new count */
    STATE_EV_REMAP, /* the uncorrectable remapped rows rose: value is the new count */
    /*
     * Faults seen in a boot, one event per GPU and boot, so that the same fault in a later boot
     * is told from the one the reboot should have cleared (the rules' escalation):
     */
    STATE_EV_ECC_VOL, /* uncorrectable ECC errors since the driver loaded: value, the most seen */
    STATE_EV_REMAP_FAIL, /* a row remapping failure reported */
    STATE_EV_REPAIR,     /* a row remap or page retirement pending a reset (code: which) */
};
/*
 * The faults above, except the counters, are recorded once per GPU and epoch: a boot, or the
 * part of a boot after a detected GPU reset (struct state_reset), each with the kernel uptime it
 * was first seen at (uptime_us). A repair_pending event's code says which flag was seen:
 */
#define STATE_REPAIR_REMAP  0x1 /* a row remap pending */
#define STATE_REPAIR_RETIRE 0x2 /* a page retirement pending */
/* "xid", "ecc_uncorrected", "remapped_rows", "ecc_volatile", "remap_failure", "repair_pending" */
extern const char *const state_event_kind_names[];

struct state_event {
    int32_t kind;      /* enum state_event_kind */
    int32_t code;      /* STATE_EV_XID: the Xid; else 0 */
    uint64_t value;    /* STATE_EV_ECC, _REMAP, _ECC_VOL: the counter; else 1 */
    char *boot_id;     /* the boot it happened in; NULL when unknown */
    int64_t uptime_us; /* when in that boot (kernel stamp); -1 when unknown */
    int64_t time_ms;   /* Unix time of the event, or when it was first seen (counters) */
};

/* How a GPU reset within a boot was detected (docs/state.md, "A GPU reset without a reboot"). */
enum state_reset_how {
    STATE_RESET_REPAIR_APPLIED, /* a pending row remap or page retirement cleared in the boot */
    STATE_RESET_ENERGY_DROP,    /* NVML's energy counter (since the driver loaded) went down */
    STATE_RESET_DRIVER_LOAD,    /* the driver's load banner in the kernel log, loaded before */
};
/* "repair_applied", "energy_drop", "driver_load" */
extern const char *const state_reset_how_names[];

/*
 * A GPU reset (or driver reload) detected within a boot: it happened after uptime after_us and
 * at or before uptime_us, kernel uptimes of boot_id (the wall clock plays no part). It starts a
 * new epoch of the GPU in that boot.
 */
struct state_reset {
    char *boot_id;
    int64_t after_us;  /* the last moment it is known not to have happened yet */
    int64_t uptime_us; /* the moment it is known to have happened */
    int32_t how;       /* enum state_reset_how */
    int64_t time_ms;   /* Unix time it was detected */
};

/* One GPU's past. It is the same GPU when the serial agrees (else, without one, the UUID). */
struct state_gpu {
    char *serial; /* NULL when the GPU does not report one */
    char *uuid;
    char *pci;            /* where it was last seen */
    int32_t index;        /* its NVML index when last seen */
    int64_t last_seen_ms; /* Unix time */
    struct state_event *events;
    size_t n_events;
    /* What detects a reset within a boot: the boot it was last seen in, the uptime a run first
     * saw it in that boot, NVML's energy counter as last recorded and when (-1: unknown). */
    char *boot_id;
    int64_t boot_seen_us;
    int64_t energy_mj, energy_us;
    struct state_reset *resets; /* oldest first */
    size_t n_resets;
};

/* A finding an operator acknowledged (`gpudoctor ack`), and what it covers. */
struct state_ack {
    char *rule;     /* rule id: "health.xid" */
    char *gpu_uuid; /* the GPU: its UUID */
    char *note;     /* NULL: none */
    char *by;       /* the user who acknowledged it */
    int64_t time_ms;
    int64_t expires_ms; /* Unix time; 0: never */
    /* The newest event it covers: kernel-log events after this point are new. */
    char *boot_id;     /* the boot it was given in; NULL when unknown */
    int64_t uptime_us; /* when in that boot; -1 unknown */
    /* Counters at the time: more than this is a new event. -1: unknown. */
    int64_t ecc_uncorrected, remapped_rows;
    /* The most severe finding it covers (enum severity, rules.h: state_ack_severity_names): a
     * more severe one of its rule and GPU is not acknowledged. -1: not recorded (a file written
     * before it was): any severity, as then. */
    int32_t severity;
};

struct state_info {
    int32_t status; /* enum state_status */
    char *path;     /* the file it was read from */
    char *note;     /* why it was not read (corrupt: "FILE:line:col: ...; ignored ...") */
    struct state_gpu *gpus;
    size_t n_gpus;
    struct state_ack *acks;
    size_t n_acks;
};

/* "info", "warning", "critical": enum severity's order (rules.h), which this module lies below */
extern const char *const state_ack_severity_names[];

extern const struct jtable state_event_table;
extern const struct jtable state_gpu_table;
extern const struct jtable state_ack_table;
extern const struct jtable state_reset_table;

void state_gpu_free(struct state_gpu *g);
void state_ack_free(struct state_ack *a);
/* Frees what the section owns and zeroes it. */
void state_info_free(struct state_info *st);

/*
 * The remembered content (GPUs and acknowledgements) as JSON, and back: the codec of both the
 * state file and the snapshot's "state" section. Unknown keys are ignored (a newer gpudoctor of
 * the same version may add some); a wrong type is an error. Returns 0, or -1 with *err set.
 */
void state_content_to_json(const struct state_info *st, json_t *out);
int state_content_from_json(struct state_info *st, const json_t *j, const char *path,
                            struct jerr *err);

/* The snapshot section: the content plus status, path and note. */
json_t *state_info_to_json(const struct state_info *st);
int state_info_from_json(struct state_info *st, const json_t *j, const char *path,
                         struct jerr *err);

/* The remembered GPU that g's serial (else UUID) names, or NULL. */
struct state_gpu *state_find_gpu(const struct state_info *st, const char *serial, const char *uuid);

/* A serial that identifies a GPU: not NULL, empty, or NVML's "N/A" placeholders. */
bool state_serial_known(const char *serial);

#endif
