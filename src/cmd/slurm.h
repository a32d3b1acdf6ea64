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

#endif
