/*
 * Safe clean-up of stale GPU processes: what `gpudoctor reap` selects, what it refuses to touch,
 * and how it signals. Selection is a function of a snapshot, the process rules' verdicts and a
 * policy (plan.c); every target then passes the safety checks (safety.c) twice: when the plan is
 * made, and again on the live process after it is pinned with pidfd_open(2) and its start time
 * is verified (signal.c). Every action is logged to syslog and stderr (log.c).
 *
 * `watch` ends the process selected in its view with reap_one(), the same checks and signals.
 */
#ifndef GPUDOCTOR_REAP_H
#define GPUDOCTOR_REAP_H

#include "facts/facts.h"
#include "snapshot/snapshot.h"

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---- facts about one process (facts.c) ---- */

#define REAP_COMM_MAX 64

/* What the safety checks and the defunct policy need to know about a process, read from /proc. */
struct reap_facts {
    int32_t pid, ppid;
    uint64_t start_ticks;
    char state;
    uint32_t flags; /* stat field 9 (PF_KTHREAD) */
    bool have_flags;
    bool have_uid;
    uint32_t uid; /* effective uid, as ps and procs show it: whose process it is */
    char comm[REAP_COMM_MAX];
    char *exe;     /* the executable's path; NULL when unreadable (kernel thread, zombie) */
    char *argv0;   /* first word of the command line; NULL when empty */
    char *cmdline; /* whole, joined with spaces and made printable; NULL when empty */
    bool have_tasks;
    uint32_t tasks_d;    /* threads in state D: stuck in the kernel, no signal reaches them */
    uint32_t tasks_live; /* threads that have not exited (state other than Z and X) */
    const char *user;    /* the owner's name for messages (borrowed), or NULL */
    /* NSpid: its pid in its own (innermost) PID namespace, and how many below the /proc's. */
    bool have_nspid;
    int32_t ns_pid;
    uint32_t ns_depth;
};

/*
 * Reads the facts of pid from proc_fd, a directory descriptor of a /proc (the live one, or
 * <root>/proc). The command line is not read for a process in state D (that read can block
 * behind it). Returns 0, -ESRCH when the process is not there, or another -errno (the stat file
 * unreadable or garbled: *cause says what). Free with reap_facts_free.
 */
int reap_facts_read(int proc_fd, int32_t pid, struct reap_facts *f, char **cause);
/* Facts from a snapshot's record, when /proc cannot be read (--from): no flags, no threads. */
void reap_facts_from_proc(const struct proc *p, struct reap_facts *f);
void reap_facts_free(struct reap_facts *f);

/* ---- safety (safety.c) ---- */

/* A process never touched unless named by pid: a display server, a daemon the GPUs need. */
struct reap_protected {
    const char *pattern; /* fnmatch(3) glob on the command name, executable or argv[0] */
    const char *why;
};

extern const struct reap_protected reap_protected_list[];
extern const size_t reap_n_protected;

/* The protected entry f matches, or NULL. */
const struct reap_protected *reap_protected_match(const struct reap_facts *f);

/* Who is running gpudoctor, and where it sits in the process tree. */
struct reap_guard {
    int32_t self;
    int32_t *ancestors; /* its parent, grandparent, ... up to PID 1 */
    size_t n_ancestors;
    uint32_t uid;  /* real uid */
    char user[64]; /* its name, or "uid N" */
    bool root;     /* effective uid 0 */
    bool all_users;
};

/* Fills g for this process from the live /proc. */
void reap_guard_init(struct reap_guard *g, bool all_users);
void reap_guard_free(struct reap_guard *g);

enum reap_refusal {
    REAP_ALLOWED,
    REAP_REFUSE_PID1,
    REAP_REFUSE_KTHREAD,
    REAP_REFUSE_SELF,
    REAP_REFUSE_ANCESTOR,
    REAP_REFUSE_OTHER_USER,
    REAP_REFUSE_OWNER_UNKNOWN,
    REAP_REFUSE_PROTECTED,
    REAP_REFUSE_NOT_GPU,     /* named by --pid, but neither a GPU process nor a worker of one */
    REAP_REFUSE_NOT_VISIBLE, /* NVML lists it, this PID namespace does not show it */
    REAP_REFUSE_CHANGED,     /* the pid is another process now */
    /* PID 1 of a PID namespace below this one (a container's init): ending it ends them all */
    REAP_REFUSE_CONTAINER_INIT,
};

/* "pid-1", "kernel-thread", "self", "ancestor", "other-user", ... for JSON. */
extern const char *const reap_refusal_names[];

/*
 * Whether f may be signalled: REAP_ALLOWED, or why not with a sentence in why (and its
 * translation in why_l when why_l is not NULL and a translation is in use, else ""). named: the
 * operator named this pid (--pid, or selected it in watch), which lifts the protected list only.
 */
enum reap_refusal reap_check(const struct reap_guard *g, const struct reap_facts *f, bool named,
                             char *why, char *why_l, size_t size);

/* ---- the plan (plan.c) ---- */

struct reap_policy {
    bool stopped, defunct, orphaned; /* by the process rules' verdicts */
    bool idle;
    int64_t idle_ms; /* --idle DUR: idle for at least this long, proven */
    int32_t *pids;   /* --pid: named processes */
    size_t n_pids;
    /* Naming a pid does not lift the protected list: the epilog names every process of a job,
     * which is not an operator's choice of one (reap --pid and watch lift it). */
    bool keep_protected;
    /* Filters: every selected process must pass them all. */
    bool has_min_mem;
    uint64_t min_mem_bytes;
    char **names; /* --name GLOB: command name, program or command line */
    size_t n_names;
    regex_t *match;   /* --match REGEX on the command line; NULL when none */
    const char *user; /* --user NAME or UID */
    int32_t *gpus;    /* --gpu N */
    size_t n_gpus;
};

enum reap_role {
    REAP_ROLE_SELF,   /* the stale GPU process itself */
    REAP_ROLE_PARENT, /* the parent that does not reap a defunct GPU process */
    REAP_ROLE_WORKER, /* a child of a defunct GPU process that still has its device open */
};

enum reap_disposition {
    REAP_SIGNAL,      /* would be (or is) signalled */
    REAP_REFUSED,     /* a safety check says no */
    REAP_CANNOT_HELP, /* no signal frees its memory: the advice says what can */
};

extern const char *const reap_role_names[];        /* "self", "parent", "worker" */
extern const char *const reap_disposition_names[]; /* "signal", "refused", "cannot-help" */

/* A defunct child a parent target is signalled for: identity is (pid, start time). */
struct reap_child {
    int32_t pid;
    uint64_t start_ticks;
};

struct reap_target {
    int32_t pid;
    uint64_t start_ticks;
    int64_t start_time_ms; /* Unix ms; -1 unknown */
    enum reap_role role;
    int32_t gpu_pid; /* the GPU process whose memory this frees (pid itself for SELF) */
    /* PARENT: every defunct child it was selected for (gpu_pid first); it is signalled only
     * while one of them is still its defunct child, the same one (start time). */
    struct reap_child *defunct;
    size_t n_defunct;
    enum facts_verdict verdict; /* of gpu_pid */
    enum reap_disposition disposition;
    enum reap_refusal refusal;
    bool named;
    char state;
    bool have_uid;
    uint32_t uid;
    char *user;
    char *command;
    int32_t *gpus; /* NVML indices (or minors when the index is unknown) of gpu_pid */
    size_t n_gpus;
    bool used_valid;
    uint64_t used_bytes; /* what gpu_pid holds, over its GPUs */
    char *why;           /* one line: why it is selected */
    char **evidence;     /* what the why rests on */
    size_t n_evidence;
    char **advice; /* cannot-help and refused: what to do instead */
    size_t n_advice;
    /* The same texts for people where a translation is in use (i18n.h), else NULL: why_l, and
     * one entry per line (NULL: no translation of that line). --json and the log keep the English.
     */
    char *why_l;
    char **evidence_l;
    char **advice_l;
};

struct reap_plan {
    struct reap_target *targets;
    size_t n, cap;
    char **notes;   /* what was looked at but not selected, and why */
    char **notes_l; /* their translations, as reap_target's *_l */
    size_t n_notes, cap_notes;
    int64_t window_ms; /* the window that proves idleness */
};

/*
 * Builds the plan: the GPU processes the policy selects (or the pids it names), their targets
 * (the process, or for a defunct one its parent, its workers, or nothing but advice), each
 * checked against g. j are the verdicts facts_judge gave for s. proc_fd is the /proc the
 * snapshot was read from (for parents, threads and fresh facts), or -1 (--from: the snapshot's
 * records only).
 */
void reap_plan_build(struct reap_plan *plan, const struct snapshot *s,
                     const struct facts_judgement *j, size_t n_j, const struct reap_policy *pol,
                     const struct reap_guard *g, int proc_fd);
void reap_plan_free(struct reap_plan *plan);
/* How many targets have disposition d. */
size_t reap_plan_count(const struct reap_plan *plan, enum reap_disposition d);

/* ---- signalling (signal.c) ---- */

enum reap_outcome {
    REAP_OUT_EXITED,   /* ended after SIGTERM */
    REAP_OUT_KILLED,   /* ended after SIGKILL */
    REAP_OUT_GONE,     /* had already exited when it was to be pinned */
    REAP_OUT_CHANGED,  /* the pid is another process now: not signalled */
    REAP_OUT_REFUSED,  /* the live process failed a safety check: not signalled */
    REAP_OUT_STUCK,    /* still there after SIGKILL: stuck in the kernel (the driver) */
    REAP_OUT_FAILED,   /* a signal could not be sent (EPERM, ...) */
    REAP_OUT_DECLINED, /* the operator said no */
};

extern const char *const reap_outcome_names[]; /* "exited", "killed", "gone", "changed", ... */

struct reap_result {
    enum reap_outcome outcome;
    int last_signal; /* the last signal sent, 0 when none */
    int64_t elapsed_ms;
    char *detail; /* one sentence, English: --json and the log */
    /* The same sentence for people where a translation is in use (i18n.h), else NULL. */
    char *detail_l;
    uint64_t plan_id; /* reap_one: what its plan signals (pid, start time, role of each target) */
};

struct reap_exec {
    int64_t grace_ms;     /* SIGTERM, then SIGKILL after this */
    int64_t kill_wait_ms; /* how long an exit after SIGKILL may take */
    const struct reap_guard *guard;
    bool log_stderr; /* also log to stderr (not from a full-screen view) */
};

/*
 * Ends one target of a plan: pins the pid with pidfd_open, re-reads the live process through
 * /proc and checks that its start time is still the planned one and that it still passes
 * reap_check, then sends SIGTERM (and SIGCONT to a stopped process, so it can act on it), waits
 * up to grace_ms for the exit, sends SIGKILL, and waits again. Every signal and every refusal is
 * logged. Only REAP_SIGNAL targets are signalled.
 */
void reap_execute(const struct reap_target *t, const struct reap_exec *x, struct reap_result *r);
void reap_result_free(struct reap_result *r);
/* Replaces r's detail with these two texts (TWICE: the English, the text for people or NULL). */
void reap_result_take(struct reap_result *r, char *detail, char *detail_l);
/* r's detail for people: the translation where there is one, else the English. */
const char *reap_result_text(const struct reap_result *r);
/* Whether the outcome means the process is gone (what it held is freed). */
bool reap_outcome_ended(enum reap_outcome o);

/* ---- the action log (log.c) ---- */

/*
 * Logs one action on a target to syslog (facility authpriv, ident "gpudoctor") and, when
 * to_stderr, to stderr: who ran it, the target's pid, start time, user and command, the signal
 * (0: none) and the result.
 */
void reap_log(const struct reap_target *t, int signal, const char *result, bool failed,
              bool to_stderr);

/* ---- for watch (one.c) ---- */

struct reap_one_opts {
    int64_t grace_ms;
    bool all_users;
    bool dry_run;    /* plan and check, signal nothing: for the confirmation line */
    bool log_stderr; /* false from a full-screen view */
    /* Not a dry run: the plan_id the dry run gave, which the plan must still have (0: any). */
    uint64_t expect_plan;
};

/*
 * Ends the process (pid, start_ticks) of snapshot s with every check of `reap --pid PID --kill`
 * (a defunct process: its parent, or advice). Fills *r: with dry_run, REAP_OUT_DECLINED and what
 * would be done in r->detail; REAP_OUT_REFUSED / REAP_OUT_CHANGED when it will not; otherwise
 * the outcome of the signals. Blocks up to grace_ms + a few seconds. Returns 0 when the process
 * ended (or, dry run, would be signalled), -1 otherwise.
 */
int reap_one(const struct snapshot *s, int32_t pid, uint64_t start_ticks,
             const struct reap_one_opts *o, struct reap_result *r);

/* ---- command-line values (parse.c) ---- */

/*
 * A size: "10G", "10GiB", "10GB", "512M", "1.5T", "4096" (bytes). K, M, G, T are powers of 1024,
 * as nvidia-smi counts GPU memory, with or without "i" and "B".
 */
bool reap_parse_size(const char *s, uint64_t *bytes);
/* Appends the integers of "4121,4122" (or one) to *v; false on anything else. */
bool reap_parse_ints(const char *s, int32_t min, int32_t **v, size_t *n);

/* ---- reports (report.c) ---- */

/* GPU memory before and after, for one GPU a target held memory on. */
struct reap_freed {
    uint32_t gpu_index;
    bool before_valid, after_valid;
    uint64_t before_bytes, after_bytes;
};

/* The GPUs the plan's ended targets held memory on, with their memory in before and after. */
size_t reap_freed_compute(const struct snapshot *before, const struct snapshot *after,
                          const struct reap_plan *plan, const struct reap_result *results,
                          struct reap_freed **out);
/* "GPU 3: 78.7 GiB → 0.4 GiB (78.3 GiB freed)" into buf, for people (translated). */
void reap_freed_line(char *buf, size_t size, const struct reap_freed *f);

/* The plan as text: targets first, then what is not touched, what killing cannot help. */
void reap_plan_print(FILE *out, const struct reap_plan *plan, const struct reap_exec *x,
                     bool dry_run);
/* The plan, the results (NULL in a dry run) and what was freed, as JSON. */
json_t *reap_plan_json(const struct reap_plan *plan, const struct reap_result *results,
                       const struct reap_freed *freed, size_t n_freed, bool dry_run, int status);

#endif
