/*
 * The facts: what several layers derive from a snapshot, derived once and in one place. Per GPU,
 * its history over the samples and who holds it (NVML's lists joined with the fd scan); per
 * process, its use over every GPU it holds and its verdict (active, idle, stopped, defunct,
 * orphaned...); a pid index. The rules read them, and so do `procs`, `reap` and `watch`, which
 * never go through the rules for a verdict. Reads the snapshot, a history of samples and the
 * thresholds only: never /proc, /sys or NVML.
 */
#ifndef GPUDOCTOR_FACTS_H
#define GPUDOCTOR_FACTS_H

#include "facts/thresholds.h"
#include "snapshot/snapshot.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The samples judged over: the check window, or a longer `watch` history. */
struct history {
    const struct sample *samples;
    size_t n;
};

/*
 * What a GPU process is doing. A process is stopped, defunct, orphaned or an idle holder exactly
 * when the rule of that name reports it: the rules read this verdict (facts_use.verdict).
 */
enum facts_verdict {
    FACTS_VERDICT_ACTIVE,      /* CPU or GPU work over the window */
    FACTS_VERDICT_IDLE,        /* idle over the window, but too young or holding too little */
    FACTS_VERDICT_IDLE_HOLDER, /* proc.idle-holder */
    FACTS_VERDICT_STOPPED,     /* proc.stopped-holder: state T or t */
    FACTS_VERDICT_DEFUNCT,     /* proc.zombie-holder: state Z or X */
    FACTS_VERDICT_ORPHANED,    /* proc.orphan-holder: re-parented to init, idle, holding memory */
    FACTS_VERDICT_NOT_VISIBLE, /* NVML lists it, /proc does not show it (other PID namespace) */
    FACTS_VERDICT_UNKNOWN,     /* idleness not known: no sampling window, GPU use unknown */
};

/* "active", "idle", "idle-holder", "stopped", "defunct", "orphaned", "not-visible", "unknown". */
extern const char *const facts_verdict_names[];

/* A process using one GPU, as NVML's list and the fd scan see it together. */
struct facts_holder {
    uint32_t pid;
    const struct proc *p;      /* NULL when the process table does not have it */
    const struct proc_gpu *pg; /* its entry for this GPU in the process table, or NULL */
    const struct gpu_proc *np; /* NVML's record, NULL when only the fd scan found it */
    uint32_t type_mask;        /* GPU_PROC_*: as NVML lists it, else as the fd scan saw it */
    bool used_valid;
    uint64_t used_bytes; /* GPU memory it holds here */
};

/* One GPU of the snapshot with what the history says about it. */
struct facts_gpu {
    const struct gpu *g;
    const struct pcie_device *pcie; /* sysfs view of the same device, or NULL */

    /* Utilisation over the history (falls back to the snapshot's reading). */
    bool util_valid;
    double util_mean, util_min, util_max;
    size_t util_n;

    /* Clock event reasons: OR over the samples, the latest reading, readings with each bit. */
    bool reasons_valid;
    uint64_t reasons_any, reasons_last;
    size_t reasons_n;
    uint16_t reason_count[16]; /* by bit number */

    /* PCIe replay counter at the first and last reading of the window. */
    bool replay_valid;
    uint32_t replay_first, replay_last;

    /* PCIe link generation: the lowest seen while the GPU was busy. */
    bool busy_gen_valid;
    uint32_t busy_gen_min;

    struct facts_holder *holders;
    size_t n_holders;
    size_t n_compute; /* holders NVML lists as compute or MPS (or, without NVML, the fd scan) */
};

/* One process over every GPU it uses, and the verdict on it. */
struct facts_use {
    int32_t pid;
    const struct proc *p; /* NULL when the process table does not have it */
    int32_t *gpus;        /* NVML indices, ascending */
    size_t n_gpus;
    int32_t top_gpu;     /* where it holds the most memory */
    bool used_valid;     /* some of its memory use is known */
    uint64_t used_bytes; /* summed over its GPUs */
    bool compute;        /* NVML lists it as a compute (or MPS) process somewhere */
    bool graphics_only;  /* NVML lists it only as a graphics process */
    bool sm_util_valid;
    uint32_t sm_util_pct; /* the highest per-process SM utilisation on any of its GPUs */
    enum facts_verdict verdict;
    /*
     * The verdict it would get once proven idle (IDLE, IDLE_HOLDER or ORPHANED), whatever its
     * verdict is: with verdict UNKNOWN, what a sampling window would decide.
     */
    enum facts_verdict if_idle;
};

struct facts {
    const struct snapshot *snap;
    const struct history *hist; /* the caller's, or own_hist: the snapshot's samples */
    const struct thresholds *th;

    struct facts_gpu *gpus; /* parallel to snap->gpus */
    size_t n_gpus;
    const struct proc **by_pid; /* the process table sorted by pid */
    size_t n_by_pid;
    bool procs_known;       /* the process collector ran and produced a table */
    struct facts_use *uses; /* every process using a GPU, by pid */
    size_t n_uses;

    struct history own_hist;
};

/*
 * Derives the facts of s over the history h (NULL: the snapshot's own samples) with thresholds
 * th. s, h and th are borrowed: they must outlive the facts. facts_free frees what this returns.
 */
struct facts *facts_create(const struct snapshot *s, const struct history *h,
                           const struct thresholds *th);
void facts_free(struct facts *f);

/* The process with this pid in the process table, or NULL. */
const struct proc *facts_proc_find(const struct facts *f, int32_t pid);
/* The GPU with NVML index idx, or NULL. */
const struct facts_gpu *facts_gpu_find(const struct facts *f, uint32_t idx);
/* The use record of a pid, or NULL when it uses no GPU. */
const struct facts_use *facts_use_find(const struct facts *f, int32_t pid);
/* Seconds since the process started, or -1 when unknown. */
double facts_proc_age_s(const struct facts *f, const struct proc *p);
/* Whether the history gave enough samples for a trend. */
bool facts_has_window(const struct facts *f);
/* How many readings of the window had clock event reason bit set. */
size_t facts_gpu_reason_count(const struct facts_gpu *v, uint64_t bit);

/* ---- the verdict (verdict.c) ---- */

/* The Slurm job the process runs in (its cgroup names one), or NULL. */
const char *facts_proc_slurm_job(const struct proc *p);
/* Whether the process's state is known and one of the /proc state letters in states ("Tt"). */
bool facts_proc_in_state(const struct proc *p, const char *states);
/*
 * Whether NVML's pid names another process here: one that has no NVIDIA device open although
 * its fds were read (another PID namespace's number, or a reused one). Its verdict is
 * not-visible: nothing is concluded about, or done to, the process that has the number here.
 */
bool facts_proc_pid_foreign(const struct proc *p);
/* The CPU the process and its children in the table used over the window; -1 unknown. */
double facts_tree_cpu_pct(const struct facts *f, const struct proc *p);
/* Whether the process is known to hold at least holder_min_mib of GPU memory. */
bool facts_holds_enough(const struct facts *f, const struct facts_use *u);
/*
 * The verdict on a process that uses a GPU; *if_idle gets the verdict it would have once proven
 * idle. facts_create stores both in every use: read them there (facts_use.verdict).
 */
enum facts_verdict facts_verdict_of(const struct facts *f, const struct facts_use *u,
                                    enum facts_verdict *if_idle);

/* The verdict on one process, for `procs` and `reap`. */
struct facts_judgement {
    int32_t pid;
    enum facts_verdict verdict;
    int64_t idle_for_ms; /* idle at least this long (the window that proves it); -1: not idle */
};

/* Every GPU process's verdict: how many, in *out sorted by pid; the caller frees *out. */
size_t facts_judge(const struct facts *f, struct facts_judgement **out);
/* The same for a snapshot, over the history h (NULL: its own samples), with thresholds th. */
size_t facts_judge_snapshot(const struct snapshot *s, const struct history *h,
                            const struct thresholds *th, struct facts_judgement **out);
/* The judgement of pid in what facts_judge returned, or NULL. */
const struct facts_judgement *facts_judgement_find(const struct facts_judgement *j, size_t n,
                                                   int32_t pid);

#endif
