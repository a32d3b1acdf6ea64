/*
 * The fleet: many nodes, and which of them is the odd one out. A layer above the rules: it reads
 * snapshots (files, directories, a stream) or a Prometheus server that scrapes `gpudoctor serve`,
 * runs the rules on each snapshot, and never reaches into collectors.
 *
 * Every figure nodes are compared on is a row of one table (fleet_metrics: name, unit, how to
 * read it from a snapshot and from Prometheus, which direction is bad, the smallest difference
 * that matters), so a figure whose section does not exist yet is a row that says "not in the
 * evidence" until the section lands (bench, NVLink, InfiniBand and Fabric Manager did). Nodes are
 * grouped by GPU model; within a group numbers are judged with robust statistics (median and MAD,
 * a modified z-score), levels and texts (GPU count, PCIe width, versions) by majority, findings by
 * how many nodes share them, and each node against the profile of its GPU model when one is given.
 * docs/fleet.md describes it all.
 */
#ifndef GPUDOCTOR_FLEET_H
#define GPUDOCTOR_FLEET_H

#include "render/text.h"
#include "rules/config.h"
#include "rules/profile.h"
#include "rules/rules.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* How a figure is judged. */
enum fleet_kind {
    FLEET_NUMBER, /* continuous: median and MAD, a modified z-score */
    FLEET_LEVEL,  /* a count or a setting (GPUs, PCIe width): the majority's value */
    FLEET_TEXT,   /* a version, a model: the majority's value */
};

/* Which way a figure goes wrong. */
enum fleet_bad {
    FLEET_BAD_LOW,  /* lower is worse: clocks, link width, bandwidth */
    FLEET_BAD_HIGH, /* higher is worse: temperature, errors */
    FLEET_BAD_ANY,  /* any difference (texts) */
};

/* One figure of one node. */
struct fleet_value {
    bool known;
    double num;  /* FLEET_NUMBER, FLEET_LEVEL */
    char *text;  /* FLEET_TEXT */
    int32_t gpu; /* the GPU the node's (worst) value comes from; -1: the node as a whole */
};

/* What a snapshot-side extractor reads. */
struct fleet_evidence {
    const struct snapshot *snap;
    const struct findings *findings;
    const struct profile_facts *facts;
    const struct thresholds *th;
};

/* How a Prometheus query's series (one per GPU, or per node) become the node's value. */
enum fleet_fold {
    FOLD_MIN,
    FOLD_MAX,
    FOLD_SUM,
    FOLD_LABELS, /* FLEET_TEXT: the distinct values of label prom_label */
};

struct fleet_metric {
    const char *name;  /* "clock_sm_busy_mhz": JSON key, column, docs */
    const char *label; /* "SM clock of busy GPUs" */
    const char *unit;  /* "MHz", "°C", "" */
    enum fleet_kind kind;
    enum fleet_bad bad;
    double min_delta; /* a difference from the group smaller than this never makes an outlier */
    bool critical;    /* a node worse than the group is critical (a GPU missing), not a warning */
    const char *section; /* the snapshot section it needs when none exists yet, else NULL */
    void (*from_snapshot)(const struct fleet_evidence *e, struct fleet_value *v);
    const char *promql; /* the instant query, NULL when Prometheus does not have the figure */
    enum fleet_fold fold;
    const char *prom_label; /* FOLD_LABELS: the label that holds the text */
    const char *help;       /* one line for docs and --help */
};

extern const struct fleet_metric fleet_metrics[];
extern const size_t fleet_n_metrics;
/* The position of the metric named name, or -1. */
int fleet_metric_find(const char *name);

/* A finding of one node, as fleet keeps it. */
struct fleet_finding {
    char *id;
    enum severity severity;
    char *subject; /* subject_key: "gpu=3", "host" */
    char *title;
    char *title_l; /* the title for people in the locale's language; NULL when it is the English */
};

enum fleet_reason_kind {
    FLEET_BY_METRIC,  /* a figure far from its group */
    FLEET_BY_FINDING, /* a finding few of its group share */
    FLEET_BY_PROFILE, /* a deviation from the profile of its GPU model */
};

extern const char *const fleet_reason_kind_names[]; /* "metric", "finding", "profile" */

/* Why a node is an outlier: one line of evidence, the node's side by the group's. */
struct fleet_reason {
    enum fleet_reason_kind kind;
    enum severity severity;
    int metric;                      /* FLEET_BY_METRIC: the row of fleet_metrics; else -1 */
    const struct fleet_value *value; /* the node's (borrowed from the node) */
    double median, mad, z;           /* FLEET_NUMBER; z NAN when the group does not vary at all */
    bool z_valid;
    char *majority;   /* FLEET_LEVEL / FLEET_TEXT: the group's value, as text */
    size_t agree, of; /* nodes with the majority's value (or sharing the finding), and how
                         many nodes were compared */
    char *text;       /* FLEET_BY_FINDING / FLEET_BY_PROFILE: what it is, in English */
    const char *id;   /* FLEET_BY_FINDING: the rule; FLEET_BY_PROFILE: the key */
    /* what the text report formats for people (borrowed from the node): the finding whose title
       text holds (FLEET_BY_FINDING), the deviation text tells (FLEET_BY_PROFILE) */
    const struct fleet_finding *finding;
    const struct profile_deviation *dev;
};

enum fleet_verdict {
    FLEET_OK,         /* nothing sets it apart */
    FLEET_OUTLIER,    /* at least one reason */
    FLEET_NOT_JUDGED, /* its group is smaller than min_group (profile deviations still count) */
};

extern const char *const fleet_verdict_names[]; /* "ok", "outlier", "not-judged" */

struct fleet_node {
    char *name;   /* its host name (snapshot) or instance (Prometheus) */
    char *source; /* where it came from: a file, "stdin #3", a Prometheus URL */
    int64_t time_ms;
    char *model;                /* its GPUs' most common model; "unknown" when none was read */
    uint32_t n_gpus;            /* GPUs read */
    int check_status;           /* its own check's exit status (0-3); -1 unknown */
    struct fleet_value *values; /* fleet_n_metrics */
    struct fleet_finding *findings;
    size_t n_findings;
    struct profile_deviation *devs; /* against the profile of its model, when one was given */
    size_t n_devs;
    const char *profile; /* that profile's file, NULL when none applied */
    /* the judgement */
    size_t group;
    enum fleet_verdict verdict;
    struct fleet_reason *reasons; /* worst first */
    size_t n_reasons;
    int severity; /* the worst reason's, -1 none */
    double score; /* ranks outliers: severity first, then how far and how many */
    size_t rank;  /* 1 = the most serious outlier; 0 = not an outlier */
};

/* What one group's nodes look like, figure by figure. */
struct fleet_stat {
    size_t n;           /* nodes with the figure */
    double median, mad; /* FLEET_NUMBER: MAD scaled by 1.4826 (a standard deviation's worth);
                            0 when more than half the nodes have the median exactly */
    char *majority;     /* FLEET_LEVEL / FLEET_TEXT: the value most nodes have, NULL when none has
                           more than half */
    size_t agree;       /* nodes with it */
};

/* A finding rule and how many of a group's nodes have it. */
struct fleet_common {
    char *id;
    size_t nodes;
};

struct fleet_group {
    char *model;
    size_t *nodes; /* indices into fleet.nodes */
    size_t n;
    bool judged;                 /* n >= min_group */
    struct fleet_stat *stats;    /* fleet_n_metrics */
    struct fleet_common *common; /* finding rules, by how many nodes have them (most first) */
    size_t n_common;
};

/* An input that could not be read. */
struct fleet_error {
    char *source;
    char *message;
};

/* A snapshot left out because a newer one of the same host name was read (fleet_dedupe). */
struct fleet_duplicate {
    char *name;   /* the host name both give */
    char *source; /* the snapshot left out */
    int64_t time_ms;
    char *kept; /* the source of the snapshot that is the node's row */
};

/* A profile given with --profile, and the GPU model it is for (NULL: any). */
struct fleet_profile {
    char *path;
    struct profile *profile;
};

struct fleet_opts {
    double z;         /* the modified z-score beyond which a figure is an outlier (3.5) */
    size_t min_group; /* the fewest nodes of a model that are judged against each other (5) */
    const struct rules_config *rules; /* thresholds for the rules run on each snapshot */
    struct fleet_profile *profiles;
    size_t n_profiles;
    unsigned threads; /* threads reading and judging snapshots: 1 in order, 0 fleet_threads() */
};

/*
 * The most inputs one run reads: files and documents (a directory's entries, a stream's
 * documents, all operands together), or a Prometheus server's instances. Each becomes a node's
 * row (some 25 KB for an 8-GPU server, 1.5 KB for a document that says almost nothing) or an
 * error; those beyond are counted and named in one error, not read, so that a flood of tiny
 * documents or instances cannot take memory without bound.
 */
#define FLEET_MAX_INPUTS 50000

#define FLEET_DEFAULT_Z         3.5
#define FLEET_DEFAULT_MIN_GROUP 5
#define FLEET_SCHEMA            "gpudoctor.fleet/1"

struct fleet {
    struct fleet_opts opts;
    struct fleet_node *nodes;
    size_t n, cap;
    struct fleet_group *groups;
    size_t n_groups;
    struct fleet_error *errors;
    size_t n_errors, cap_errors;
    struct fleet_duplicate *dups; /* older snapshots of a node that a newer one replaced,
                                     named so a stale or spoofed copy never hides a node unseen */
    size_t duplicates, cap_dups;
    char *prometheus;     /* the server, when the nodes came from one */
    size_t prom_left_out; /* its series of instances beyond FLEET_MAX_INPUTS, not read */
};

void fleet_init(struct fleet *fl, const struct fleet_opts *o);
void fleet_free(struct fleet *fl);
void fleet_error(struct fleet *fl, const char *source, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A new node at the end of fl->nodes, its values unknown. */
struct fleet_node *fleet_add_node(struct fleet *fl, const char *name, const char *source);
/* A node named name from source, its values unknown; not yet in a fleet. */
void fleet_node_init(struct fleet_node *n, const char *name, const char *source);
/* Moves *n (fleet_node_init's) to the end of fl->nodes. */
struct fleet_node *fleet_push_node(struct fleet *fl, const struct fleet_node *n);
void fleet_node_free(struct fleet_node *n);

/* ---- inputs (input.c) ---- */

/*
 * Adds the node a snapshot describes (a snapshot, a report or a recording's last context):
 * runs the rules, reads every figure, holds it against the profile of its model. s stays the
 * caller's.
 */
void fleet_add_snapshot(struct fleet *fl, const struct snapshot *s, const char *source);
/*
 * How many threads read snapshots when fleet_opts.threads is 0: the CPUs this process may run on,
 * at most FLEET_MAX_THREADS.
 */
#define FLEET_MAX_THREADS 16
unsigned fleet_threads(void);
/*
 * Reads the operands, each a file (snapshot, `check --json` report, `watch --record`
 * recording), a directory (its *.json and *.jsonl files, in name order) or "-": a stream of JSON
 * documents on standard input, one after the other (snapshots or reports, JSON Lines or not).
 * Snapshots are parsed, run through the rules and measured by fl->opts.threads worker threads,
 * each holding one snapshot at a time, while this thread lists directories and splits streams;
 * the nodes and errors are added in the operands' order, exactly as one thread would add them.
 * What cannot be read is an error of fl, and the rest is read on. Returns the nodes added.
 */
size_t fleet_read_all(struct fleet *fl, char *const *operands, size_t n);
/*
 * Reads one operand: a file (snapshot, `check --json` report, `watch --record` recording), a
 * directory (its *.json and *.jsonl files, in name order), or "-": a stream of JSON documents on
 * standard input, one after the other (snapshots or reports, JSON Lines or not). What cannot be
 * read is an error of fl, and the rest is read on. Returns the nodes added.
 */
size_t fleet_read(struct fleet *fl, const char *operand);
/*
 * One row per node: of several snapshots of one host name, the newest is kept (the others are
 * fl->dups, with the source of the one kept). Before fleet_judge.
 */
void fleet_dedupe(struct fleet *fl);
/*
 * Splits a stream of JSON documents: calls fn for each top-level object's text. A document cut
 * off (a line that starts with '{' where the document under way cannot go on: the next one
 * starts there), text that is not a document, and a document longer than max bytes are each
 * reported through fn with text NULL and why naming the stream's lines they took, and the
 * splitting goes on at the next line that starts with '{'. Returns the documents and reports.
 */
typedef void fleet_doc_fn(void *ctx, size_t index, const char *text, size_t len, const char *why);
size_t fleet_split_stream(int fd, size_t max, fleet_doc_fn *fn, void *ctx);

/* ---- Prometheus (prom.c) ---- */

/*
 * Builds the nodes from a Prometheus server's HTTP API (GET /api/v1/query, one instant query per
 * figure: docs/fleet.md lists them): one node per `instance` that gpudoctor serve exports. Each
 * query may take timeout_ms, all of them together deadline_ms. Returns 0, or -1 with *cause set
 * (the server cannot be reached, answers no JSON, or not before the deadline).
 */
int fleet_read_prometheus(struct fleet *fl, const char *url, int64_t timeout_ms,
                          int64_t deadline_ms, char **cause);
/* Folds the answer to one query (the JSON of /api/v1/query) into the nodes; for tests. */
int fleet_prom_answer(struct fleet *fl, int metric, const char *json, size_t len, char **cause);

/* ---- the judgement (judge.c, stats.c) ---- */

/* Groups the nodes by model and judges every one: verdicts, reasons, ranks. */
void fleet_judge(struct fleet *fl);
/* The exit status: 2 a critical outlier, 3 no node (or an input unread), 1 an outlier, 0 none. */
int fleet_status(const struct fleet *fl);
/* How many nodes are outliers, and of those critical. */
size_t fleet_outliers(const struct fleet *fl, size_t *critical);

/* The median of n values (sorted in place). */
double fleet_median(double *v, size_t n);
/*
 * The median of n values and their median absolute deviation times 1.4826 (a standard
 * deviation's worth for normally distributed values); 0 when more than half the values are equal.
 * v is reordered.
 */
void fleet_spread(double *v, size_t n, double *median, double *mad);

/* ---- output (report.c, html.c) ---- */

/* The text report: a table of every node (or only the outliers), then the outliers' evidence. */
void fleet_print(FILE *out, const struct fleet *fl, const struct render_opts *ro,
                 bool outliers_only);
json_t *fleet_to_json(const struct fleet *fl, int status);
/* The whole HTML page (inline CSS, JS and data; nothing fetched). The caller frees it. */
char *fleet_html(const struct fleet *fl, int status);
/* A value as text with its unit: "1980 MHz", "x16", "550.54.15", "?" when unknown. */
void fleet_value_text(char *buf, size_t size, int metric, const struct fleet_value *v);
/* The same for people: the units that are words ("lanes") in the locale's language. */
void fleet_value_people(char *buf, size_t size, int metric, const struct fleet_value *v);
/* A profile deviation (r->dev) for people, in the locale's language; the caller frees it. */
char *fleet_deviation_people(const struct fleet_node *n, const struct fleet_reason *r);

#endif
