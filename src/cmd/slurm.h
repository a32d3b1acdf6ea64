/*
 * The parts of `gpudoctor slurm-check` (cmd-slurm.c) that tests drive directly: reading
 * `scontrol show node -o`, deciding whether to drain or resume, and running scontrol.
 */
#ifndef GPUDOCTOR_CMD_SLURM_H
#define GPUDOCTOR_CMD_SLURM_H

#include "rules/config.h"
#include "rules/rules.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Every reason gpudoctor sets starts with this; only such drains are ever undone. */
#define SLURM_REASON_PREFIX "gpudoctor: "
/* Reasons longer than this are cut (Slurm shows them in sinfo -R; keep them readable). */
#define SLURM_REASON_MAX 200

struct slurm_node {
    char *name;
    char *state;  /* "IDLE+DRAIN", "MIXED", "DOWN+DRAIN+NOT_RESPONDING" */
    char *reason; /* without Slurm's " [user@time]" stamp; NULL when none */
    bool drain;   /* DRAIN (drained or draining) is among the state's flags */
};

/*
 * Parses one node of `scontrol show node -o NAME`. Returns 0, or -1 with *cause saying what is
 * missing (the caller frees it).
 */
int slurm_parse_node(const char *text, struct slurm_node *n, char **cause);
void slurm_node_free(struct slurm_node *n);

/* Whether the reason is one gpudoctor set. */
bool slurm_reason_is_ours(const char *reason);

/*
 * What a rule's findings are about: 1 the node (hardware, driver, fabric, cooling, a lost GPU:
 * drain it), 0 a job or a user (a stopped or leaking process, a job's own CUDA stack: the node is
 * fine for the next job), -1 a rule cmd-slurm.c's table does not list (drains, as a node fault).
 * slurm_rule_scopes() is the number of rules the table lists.
 */
int slurm_rule_scope(const struct rule *r);
size_t slurm_rule_scopes(void);

/*
 * Whether finding f drains the node under policy p (the configuration's slurm_drain; NULL: the
 * default, node-faults): a critical finding whose rule the policy counts.
 */
bool slurm_drains(const struct finding *f, const struct slurm_drain_policy *p);

/*
 * The drain reason for the findings: SLURM_REASON_PREFIX and the title of the first finding that
 * drains (slurm_drains), "(+N more)" when others do, control characters replaced, cut at
 * SLURM_REASON_MAX bytes on a character boundary. NULL when none drains.
 */
char *slurm_reason(const struct findings *f, const struct slurm_drain_policy *p);

enum slurm_action {
    SLURM_NOTHING,
    SLURM_DRAIN,  /* State=DRAIN Reason=... */
    SLURM_RESUME, /* State=RESUME */
};

/*
 * What to do, given the node as scontrol shows it, the check's exit status (0-3) and the reason
 * slurm_reason() gave (NULL: nothing drains): drain on a finding that drains unless someone else
 * drained it already (or we did, with the same reason); resume only a drain whose reason is
 * ours, once nothing that drains remains (critical findings about jobs may); nothing when the
 * check could not run (status 3). *why says why, in a few words.
 */
enum slurm_action slurm_decide(const struct slurm_node *n, int status, const char *reason,
                               const char **why);

/*
 * Runs argv[0] (a path) with execve, no shell, standard input from /dev/null; collects stdout
 * and stderr together (at most 64 KiB) into *out. Kills it after timeout_ms. Returns its exit
 * status (0-255), or -1 with *cause set when it could not run, was killed or timed out.
 */
int slurm_run(const char *const argv[], int64_t timeout_ms, char **out, char **cause);

/* The scontrol to run: the first executable "scontrol" in $PATH, then /usr/bin, /usr/local/bin. */
char *slurm_find_scontrol(void);

/* This node's Slurm name: given, else $SLURMD_NODENAME, else the short host name; NULL if none. */
char *slurm_node_name(const char *given);
/* `scontrol show node -o NODE` into n. Returns 0, or -1 after saying why (as "gpudoctor CMD"). */
int slurm_show_node(const char *cmd, const char *scontrol, const char *node, struct slurm_node *n);
/* `scontrol update NodeName=NODE State=DRAIN Reason=...` (or State=RESUME). 0, or -1 said. */
int slurm_update_node(const char *cmd, const char *scontrol, const char *node,
                      enum slurm_action act, const char *reason);

/* ---- jobs: the prolog's and the epilog's view of the GPUs (slurm-job.c) ---- */

/*
 * Every reason the prolog and the epilog drain with starts with this, then the GPU's NVML index:
 * "gpudoctor: GPU 3 held by leftover pid 4121 (job 4400, alice: python train.py)", or
 * "gpudoctor: GPU 3 held by leftover memory: 70.0 GiB, no process listed". slurm-check resumes
 * such a drain only once that pid no longer holds the GPU (or its memory is free).
 */
#define SLURM_LEFTOVER_PREFIX SLURM_REASON_PREFIX "GPU "

/* Who a process holding a GPU belongs to. */
enum slurm_holder_kind {
    SLURM_HOLDER_THIS_JOB,    /* the job the prolog or epilog runs for */
    SLURM_HOLDER_RUNNING_JOB, /* another job still running here (a slurmstepd above it): a
                                 shared GPU (gres/shard, MPS), not a leftover */
    SLURM_HOLDER_LEFTOVER,    /* an ended job's process, or one outside any job */
};

extern const char *const slurm_holder_kind_names[]; /* "this-job", "running-job", "leftover" */

/* A process NVML lists on one of the job's GPUs. */
struct slurm_holder {
    int32_t pid;
    uint32_t gpu;         /* NVML index */
    const struct proc *p; /* its /proc record in the snapshot, NULL when not there */
    bool used_valid;
    uint64_t used_bytes;
    char *job; /* the Slurm job it belongs to (its cgroup, else the slurmstepd above it) */
    enum slurm_holder_kind kind;
};

/* A job GPU's memory that no listed process accounts for. */
struct slurm_gpu_memory {
    uint32_t gpu;
    uint64_t used_bytes, unaccounted_bytes;
};

/*
 * The GPUs of a job, as NVML indices, from spec: SLURM_JOB_GPUS's or CUDA_VISIBLE_DEVICES's value
 * (comma-separated; numbers are device minors, /dev/nvidiaN, as gres.conf's File= names them;
 * "GPU-..." are UUIDs). Returns 0 with *out sorted (the caller frees it), or -1 with *cause naming
 * what matches no GPU of the snapshot (a MIG UUID, an index the node does not have).
 */
int slurm_job_gpus(const struct snapshot *s, const char *spec, int32_t **out, size_t *n,
                   char **cause);

/*
 * Every process NVML lists on the GPUs gpus (n_gpus; NULL: every GPU) and whose it is, for job
 * (the prolog's or epilog's SLURM_JOB_ID). An MPS server is not a holder. Returns how many, in
 * *out (free with slurm_holders_free).
 */
size_t slurm_gpu_holders(const struct snapshot *s, const char *job, const int32_t *gpus,
                         size_t n_gpus, struct slurm_holder **out);
void slurm_holders_free(struct slurm_holder *h, size_t n);

/*
 * The holders that ended since an earlier snapshot, before, saw them, and that NVML still lists
 * (the driver has not given their memory back): gone from /proc, or defunct with the same start
 * time (a zombie has lost its cgroup and command line). They are described as before saw them:
 * command, user, job, and SLURM_HOLDER_THIS_JOB when that job is job. The epilog's later looks
 * use its first one, so the job's own process is still named as the job's after the reap. h[i].p
 * then points into before, which must outlive h.
 */
void slurm_holders_recall(struct slurm_holder *h, size_t n, const struct snapshot *before,
                          const char *job);

/*
 * The job GPUs whose used memory minus what the listed processes hold is at least min_bytes.
 * Returns how many, in *out (the caller frees it).
 */
size_t slurm_unaccounted(const struct snapshot *s, const int32_t *gpus, size_t n_gpus,
                         uint64_t min_bytes, struct slurm_gpu_memory **out);

/*
 * The drain reason for what holds a job's GPUs: the first leftover holder (else the first GPU
 * with unaccounted memory), "(+N more)" for the rest, as slurm_reason cuts it. NULL when nothing
 * is left over. held: the holders whose kind is SLURM_HOLDER_LEFTOVER (or, in the epilog, this
 * job's too).
 */
char *slurm_leftover_reason(const struct snapshot *s, const struct slurm_holder *const *held,
                            size_t n_held, const struct slurm_gpu_memory *mem, size_t n_mem);

/*
 * For a drain reason the prolog or epilog wrote (SLURM_LEFTOVER_PREFIX): whether what it names is
 * gone in snapshot s: the pid no longer listed on that GPU, or that GPU's unaccounted memory below
 * min_bytes; a reason that named only the first of several ("(+N more)") also needs every GPU
 * free of leftovers and of unaccounted memory. -1 when the reason is not such a reason.
 */
int slurm_leftover_cleared(const struct snapshot *s, const char *reason, uint64_t min_bytes);

/* ---- what the prolog and the epilog share (slurm-job.c) ---- */

/* The options both take; the command's own parse fills it. */
struct slurm_job_opts {
    const char *job, *gpus, *node, *scontrol;
    bool dry_run, warn_only;
};

/* A prolog's or epilog's run: the job, its GPUs, and the snapshot that was judged. */
struct slurm_job_run {
    const char *cmd; /* "slurm-prolog" */
    char *job;
    int32_t *gpus; /* NVML indices; NULL: every GPU of the node */
    size_t n_gpus;
    const char *gpus_from; /* "--gpus", "SLURM_JOB_GPUS", "CUDA_VISIBLE_DEVICES", NULL */
};

/*
 * The job (--job, else $SLURM_JOB_ID) into r. Returns 0, or EXIT_USAGE after saying that there is
 * none.
 */
int slurm_job_begin(struct slurm_job_run *r, const char *cmd, const struct slurm_job_opts *o);
/* The job's GPUs in snapshot s (--gpus, else $SLURM_JOB_GPUS, else $CUDA_VISIBLE_DEVICES, else
 * every GPU); a list that names no GPU here is said, and every GPU is looked at instead. */
void slurm_job_gpus_of(struct slurm_job_run *r, const struct snapshot *s,
                       const struct slurm_job_opts *o);
void slurm_job_end(struct slurm_job_run *r);
/* "GPUs 0-3" / "every GPU" for messages, into buf. */
void slurm_job_gpu_text(const struct slurm_job_run *r, char *buf, size_t size);
/* One line a holder: "GPU 3: pid 4121 (job 4400, alice: python train.py), 70.0 GiB". */
void slurm_holder_line(char *buf, size_t size, const struct slurm_holder *h);

/*
 * Drains the node with reason unless someone else drained it already (their reason is kept). With
 * o->dry_run only says what it would do. Returns 0, or -1 when scontrol could not be run or
 * failed (said).
 */
int slurm_job_drain(const struct slurm_job_run *r, const struct slurm_job_opts *o,
                    const char *reason);

#endif
