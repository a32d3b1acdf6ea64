/*
 * `gpudoctor procs`: the GPU processes of a snapshot as rows (with the process rules' verdict on
 * each), filtered and sorted, then printed as a table or a tree readable at 80 columns, or as
 * JSON ("gpudoctor.procs/1", docs/procs.md). Reads the snapshot only, never /proc.
 */
#ifndef GPUDOCTOR_RENDER_PROCS_H
#define GPUDOCTOR_RENDER_PROCS_H

#include "facts/facts.h"
#include "render/text.h"
#include "snapshot/snapshot.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define PROCS_SCHEMA "gpudoctor.procs/1"

enum procs_sort {
    PROCS_SORT_MEM, /* GPU memory held, most first (the default) */
    PROCS_SORT_SM,  /* SM utilisation, most first */
    PROCS_SORT_CPU, /* CPU %, most first */
    PROCS_SORT_AGE, /* oldest first */
    PROCS_SORT_PID,
};

extern const char *const procs_sort_names[]; /* "mem", "sm", "cpu", "age", "pid" */

struct procs_filter {
    const char *user;      /* name or uid; NULL: any */
    const int32_t *gpus;   /* NVML indices; a process using any of them */
    size_t n_gpus;         /* 0: any */
    const char *container; /* container id prefix, pod UID prefix, Slurm job id, or "host" */
};

struct procs_row {
    const struct proc *p;
    bool gpu_user; /* uses a GPU (has a verdict); false: a worker shown in the tree */
    enum facts_verdict verdict;
    int64_t idle_for_ms; /* proven idle at least this long; -1 not idle or unknown */
    bool used_valid;
    uint64_t used_bytes; /* over its GPUs */
    bool sm_valid;
    uint32_t sm_util_pct; /* the highest of its GPUs */
    int64_t age_ms;       /* -1 unknown */
    unsigned depth;       /* in the tree: 0 for a root */
    int32_t parent_pid;   /* in the tree: the row it hangs under; -1 for a root */
    bool context;         /* shown in the tree only as an ancestor of a row that matched */
};

struct procs_view {
    struct procs_row *rows; /* in display order */
    size_t n;
    size_t n_gpu_users; /* rows that use a GPU */
    bool tree;
    int64_t window_ms; /* what CPU % and idleness were measured over */
    size_t n_loops;    /* loops of parent links (garbled input) cut to draw the tree */
    int32_t loop_pid;  /* where the first was cut: that row is drawn as a root */
};

/* Whether p passes the filter (a NULL filter passes everything). */
bool procs_filter_match(const struct procs_filter *f, const struct proc *p);

/*
 * The table draws this many levels of the tree; deeper rows that are there only as ancestors are
 * folded into one line ("... 4,990 more levels"). The JSON has every row.
 */
#define PROCS_TREE_LEVELS 10

/*
 * Builds the rows: every GPU process of s that passes the filter, sorted. With tree, also their
 * ancestors (context: the launcher, the shell, sshd) and their workers (children that use no
 * GPU), each row followed by its children; siblings in the order of the best row under them.
 * Linear in the processes but for sorting; any depth, loops of parent links cut.
 */
void procs_view_build(struct procs_view *v, const struct snapshot *s,
                      const struct facts_judgement *j, size_t n_j, const struct procs_filter *f,
                      enum procs_sort sort, bool tree);
void procs_view_free(struct procs_view *v);

/* "docker 3f2a1b9c0d1e", "k8s pod 1d2e3f4a-5b6c", "slurm job 4411", or "" on the host. */
void procs_job_label(char *buf, size_t size, const struct proc *p);

/*
 * The table, cut to width columns (the command is what gives way). Then a summary line and what
 * could not be seen (collector notes) on the lines after it.
 */
void procs_render_table(FILE *out, const struct procs_view *v, const struct snapshot *s,
                        const struct render_opts *ro, unsigned width);
/* The rows as a "gpudoctor.procs/1" document. */
json_t *procs_render_json(const struct procs_view *v, const struct snapshot *s);

#endif
