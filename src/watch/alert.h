/*
 * Alerts for `watch`: conditions on findings (by rule id, a glob of ids, or a severity) and on
 * per-GPU readings ("mem_used_pct>95 for 60s"), each with an optional command. An alert fires
 * once per episode, when its condition has held for its `for` duration, and once more when the
 * episode clears: after the condition has been false for as long (and at least a few readings),
 * with a band of hysteresis on readings. docs/watch.md gives the syntax.
 *
 * Three parts: the spec parser; the engine, a pure function of (findings, readings, time) that
 * keeps the episodes and returns what fired and cleared; and the runner, which starts each
 * command with fork and execve (an argument vector, no shell, the alert in GPUDOCTOR_ALERT_*
 * environment variables), reaps it, and kills it after a timeout, never blocking the caller.
 */
#ifndef GPUDOCTOR_WATCH_ALERT_H
#define GPUDOCTOR_WATCH_ALERT_H

#include "rules/rules.h"
#include "snapshot/snapshot.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum alert_kind {
    ALERT_RULE,     /* findings of a rule id, or of ids matching a glob ("proc.*") */
    ALERT_SEVERITY, /* findings of this severity or worse */
    ALERT_METRIC,   /* a reading of each GPU compared with a value */
};

enum alert_op { ALERT_GT, ALERT_GE, ALERT_LT, ALERT_LE };

/* A per-GPU reading an alert can compare. */
struct alert_metric {
    const char *name; /* "mem_used_pct" */
    const char *unit;
    double band; /* hysteresis: a firing value must move this far back past the value to clear */
    /* The reading from the latest sample (dyn) and the snapshot's static fields (stat). */
    bool (*get)(const struct gpu *stat, const struct gpu *dyn, double *out);
    const char *help;
};

extern const struct alert_metric alert_metrics[];
extern const size_t n_alert_metrics;

struct alert_spec {
    char *text; /* the condition as written, without the command */
    enum alert_kind kind;
    char *pattern;                     /* ALERT_RULE */
    enum severity min_severity;        /* ALERT_SEVERITY */
    const struct alert_metric *metric; /* ALERT_METRIC */
    enum alert_op op;
    double value;
    int64_t for_ms; /* the condition must hold this long before the alert fires */
    char **argv;    /* the command, NULL-terminated; NULL when there is none */
    char *path;     /* the command's executable, resolved through $PATH when needed */
};

/*
 * Parses "CONDITION [for DURATION][:COMMAND [ARG...]]". Returns 0, or -1 with *cause saying
 * what is wrong (the caller frees it). Free a parsed spec with alert_spec_free.
 */
int alert_spec_parse(struct alert_spec *a, const char *spec, char **cause);
void alert_spec_free(struct alert_spec *a);

/* One alert firing or clearing: what its command is told. */
struct alert_event {
    const struct alert_spec *spec;
    bool firing;      /* false: cleared */
    char *id;         /* the rule id, or the metric's name */
    char *severity;   /* "critical", "warning", "info" */
    char *subject;    /* "gpu=3 pid=4121", as subject_key() writes it */
    int32_t gpu, pid; /* -1 when not about one */
    char *title;
    char *value; /* the reading, for metric alerts; "" otherwise */
};

struct alert_events {
    struct alert_event *items;
    size_t n, cap;
};

void alert_events_free(struct alert_events *ev);

struct alert_engine;

/*
 * An engine for n specs (borrowed: they must outlive it). An episode clears after its condition
 * has been false for the alert's `for` duration, and never sooner than clear_min_ms.
 */
struct alert_engine *alert_engine_new(const struct alert_spec *specs, size_t n,
                                      int64_t clear_min_ms);
void alert_engine_free(struct alert_engine *e);

/*
 * Judges every alert at time now_ms (any clock, the same every call) against the findings and
 * the latest reading (latest may be NULL: metric alerts then see nothing), s giving the GPUs'
 * static fields. Appends what fired and what cleared to ev.
 */
void alert_engine_eval(struct alert_engine *e, const struct snapshot *s,
                       const struct sample *latest, const struct findings *f, int64_t now_ms,
                       struct alert_events *ev);

/* Episodes firing now. */
size_t alert_engine_firing(const struct alert_engine *e);

struct alert_runner;

struct alert_runner_stats {
    uint64_t fired, cleared;  /* events seen */
    uint64_t started, failed; /* commands started; those that exited non-zero or were killed */
    uint64_t dropped;         /* events whose command could not start or wait */
    size_t running;
};

/* A runner killing commands after timeout_ms; hostname goes to GPUDOCTOR_ALERT_HOST. */
struct alert_runner *alert_runner_new(int64_t timeout_ms, const char *hostname);

/* Starts the command of an event (or queues it while too many run). now is time_mono_ms(). */
void alert_runner_submit(struct alert_runner *r, const struct alert_event *ev, int64_t now_ms);
/* Reaps finished commands, kills late ones, starts queued ones. Never blocks. */
void alert_runner_poll(struct alert_runner *r, int64_t now_ms);
/* The monotonic time poll should next run by, or -1 when nothing is running. */
int64_t alert_runner_due(const struct alert_runner *r);
void alert_runner_stats(const struct alert_runner *r, struct alert_runner_stats *out);
/* The last problem with a command, in one line, or NULL; borrowed until the next call. */
const char *alert_runner_last_error(const struct alert_runner *r);

/*
 * At exit: drops queued commands, gives running ones until grace_ms (monotonic) to finish, kills
 * what remains, reaps, frees r.
 */
void alert_runner_finish(struct alert_runner *r, int64_t grace_ms);

/* The environment a command of ev gets: environ plus GPUDOCTOR_ALERT_*. NULL-terminated. */
char **alert_environment(const struct alert_event *ev, const char *hostname, int64_t now_real_ms);
void alert_environment_free(char **env);

#endif
