/*
 * The diagnosis: rules are rows in one table (rule_table in catalog.c), each a pure function of
 * (snapshot, history, thresholds) that appends findings. Rules never touch /proc, /sys or NVML, so
 * a live check, `check --from FILE` and a long `watch` history run exactly the same code.
 *
 * A finding: which rule, how severe, about what (GPU, process, disk...), a one-line title with the
 * key number, the evidence it rests on, and the commands that fix it with the subject filled in.
 * A rule whose inputs are missing records what it could not check and why (a "skip"), so "not
 * supported" never reads as "healthy".
 */
#ifndef GPUDOCTOR_RULES_H
#define GPUDOCTOR_RULES_H

#include "facts/facts.h"
#include "facts/thresholds.h"
#include "snapshot/snapshot.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum severity {
    SEV_INFO,
    SEV_WARNING,
    SEV_CRITICAL,
};

enum rule_category {
    CAT_HEALTH,
    CAT_STACK,
    CAT_MEMORY,
    CAT_PROCESS,
    CAT_THROUGHPUT,
    CAT_CLOCKS,
    CAT_PCIE,
    CAT_FABRIC,
};

extern const char *const severity_names[]; /* "info", "warning", "critical" */
extern const char *const category_names[]; /* "health", "stack", "memory", ... */

/* What a finding is about. Absent parts: -1 / NULL. */
struct subject {
    int32_t gpu_index;
    char *gpu_uuid;
    int32_t pid;
    char *user;
    char *command;
    char *container;
    char *object; /* a disk ("sda"), a file system ("/tmp"), a PCI address, a library */
    char
        *object_l; /* the object for people where it is a word they read translated; NULL: object */
};

/* What acknowledged a finding (`gpudoctor ack`, rules/ack.c). */
struct finding_ack {
    char *note; /* NULL: none */
    char *by;
    int64_t time_ms;
    int64_t expires_ms; /* 0: never */
};

struct finding {
    const struct rule *rule;
    /*
     * Causes and consequences (rules_run links them, rules.h's struct rule_link): cause is 1 +
     * the position in findings.items of the finding that explains this one, 0 when none does.
     * explains_on sets bit k when this finding declared its rule's evidence-dependent link
     * rule->explains[k] (finding_explains).
     */
    uint32_t cause;
    uint64_t explains_on;
    enum severity severity; /* the rule's, unless the evidence makes it worse (or milder) */
    struct subject subject;
    char *title;
    char **evidence;
    size_t n_evidence, cap_evidence;
    char **fix; /* commands, with "# why" comments */
    size_t n_fix, cap_fix;
    /*
     * The same texts for people in the locale's language (i18n.h), made beside the English when a
     * translation is in use: NULL (or a NULL item) where there is none. --json and the exporters
     * keep the English; finding_text() picks.
     */
    char *title_l;
    char **evidence_l; /* cap_evidence items */
    char **fix_l;      /* cap_fix items */
    double impact;     /* ranks findings of one severity: roughly GPUs' worth of capacity lost */
    struct finding_ack *ack; /* acknowledged: shown apart, not counted; NULL when not */
};

/* A finding's title, evidence line k or fix line k for people: the translation when there is one.
 */
const char *finding_title_text(const struct finding *f);
const char *finding_evidence_text(const struct finding *f, size_t k);
const char *finding_fix_text(const struct finding *f, size_t k);

/* Something a rule could not check, and why. */
struct skip {
    const struct rule *rule;
    int32_t gpu_index; /* -1: not about one GPU */
    char *reason;      /* "temp_c NOT_SUPPORTED", "needs a sampling window (--window)" */
    char *reason_l;    /* the same in the locale's language, or NULL (skip_reason_text) */
    /* What would supply the missing evidence ("nvidia-smi -q -d PERFORMANCE"), static; NULL:
     * nothing to say (the evidence says the GPU cannot, or no command would). skip_command(). */
    const char *command;
};

/* The skip's reason for people: the translation where there is one, else the English. */
const char *skip_reason_text(const struct skip *k);

/*
 * The command whose output (given to check --from) holds a GPU field ("clocks_event_reasons" ->
 * "nvidia-smi -q -d PERFORMANCE", gpu_table's names) or a collector's section (COLLECTOR_KLOG ->
 * dmesg); NULL when none would. Static strings.
 */
const char *skip_command_gpu(const char *field);
const char *skip_command_collector(enum collector_id id);

struct findings {
    struct finding *items;
    size_t n, cap;
    struct skip *skips;
    size_t n_skips, cap_skips;
};

/* Settings a run takes: thresholds, and rules switched off by the config file. */
struct rules_config {
    struct thresholds th;
    bool *disabled; /* n_rules entries, or NULL when none is */
};

struct rule_ctx;

/*
 * A causal link: findings of this rule explain findings of another (an uncorrectable memory error
 * wedges the driver, so NVML hangs). The engine puts each consequence under one cause, ranks the
 * cause first and names it in the verdict. Unlike yields_to, which drops a finding that says the
 * same thing again, a consequence stays in the report: it is true and has its own fixes.
 */
enum link_scope {
    LINK_SAME_GPU,               /* about the same GPU (both about none: the same object) */
    LINK_SAME_PROCESS,           /* about the same process */
    LINK_OTHER_PROCESS_SAME_GPU, /* about another process (or none) on the same GPU */
    LINK_ANY,                    /* anything on the host */
};

/* Whose fixes a consequence shows. */
enum link_fix {
    LINK_FIX_OWN, /* its own, after a pointer to the cause's: fixing the cause may clear it */
    /*
     * only a pointer to its cause's: the cause's fix is the consequence's too, and its own fixes
     * would only repeat it or cannot work before it (restarting Fabric Manager while an NVSwitch
     * is not probed). JSON says fix_in_cause; its fixes stay in "fix".
     */
    LINK_FIX_IN_CAUSE,
};

struct rule_link {
    const char *rule_id; /* the rule whose findings are explained */
    enum link_scope scope;
    /*
     * NULL: the link holds whenever both findings are there. Otherwise it depends on the evidence
     * and holds only for a finding that declares it (finding_explains); the text says when
     * ("the Xid is 48, 63, ...") for explain and docs/rules.md.
     */
    const char *when;
    const char *how; /* the chain in a few words: "the driver wedged, so NVML hangs" */
    enum link_fix fix;
};

extern const char *const link_scope_names[]; /* "same GPU", "same process", ... */

struct rule {
    const char *id; /* stable: "proc.stopped-holder" */
    enum severity severity;
    enum rule_category category;
    const char *title;       /* generic one-liner for lists */
    const char *explanation; /* what it means and why it matters */
    const char *detection;   /* how it is detected: which fields, which comparisons */
    const char *fix;         /* how to fix it, in general (findings carry the exact commands) */
    const enum threshold_id *thresholds; /* the thresholds it reads, ended by TH__COUNT */
    /* Rules whose finding about the same GPU makes this one redundant (NULL-terminated). */
    const char *const *yields_to;
    /* Findings this rule's findings explain (ended by a NULL rule_id; NULL: none). */
    const struct rule_link *explains;
    void (*check)(const struct rule_ctx *ctx, struct findings *out);
};

extern const struct rule *const rule_table[];
extern const size_t n_rules;

/* The rule with this id, or NULL. */
const struct rule *rule_find(const char *id);
/* Position in rule_table (for rules_config.disabled). */
size_t rule_position(const struct rule *r);

/*
 * Runs every rule over the snapshot and its history (NULL: the snapshot's own samples), links
 * each consequence to its cause (finding.cause), then ranks: cause groups by the worst severity
 * and impact in them, each cause followed by what it explains; otherwise severity, then impact,
 * then table order and subject. out must be zeroed or freed.
 */
void rules_run(const struct snapshot *s, const struct history *h, const struct rules_config *cfg,
               struct findings *out);

void findings_free(struct findings *f);
/*
 * Marks the findings the snapshot's state acknowledges (rules/ack.c): same rule and GPU UUID,
 * not expired at the snapshot's time, and no event on that GPU newer than the acknowledgement
 * (an Xid after it, a higher uncorrectable ECC count or more remapped rows). It only marks: no
 * finding is removed or moved, so positions in the list (a finding's cause) stay valid.
 * rules_run calls it.
 */
void rules_apply_acks(const struct snapshot *s, struct findings *f);
/* The first finding not acknowledged (the one a verdict names), or NULL when none is. */
const struct finding *findings_lead(const struct findings *f);
/* How many findings are acknowledged. */
size_t findings_acked(const struct findings *f);
/* A copy of an acknowledgement (NULL for NULL), for a copy of a finding. */
struct finding_ack *finding_ack_dup(const struct finding_ack *a);
/* The finding that explains items[i] (NULL: none), and how many findings items[i] explains. */
const struct finding *finding_cause(const struct findings *f, size_t i);
size_t finding_n_explained(const struct findings *f, size_t i);
/* The link of the cause's rule that explains the consequence's rule, or NULL. */
const struct rule_link *rule_link_find(const struct rule *cause, const struct rule *consequence);
/* Whether items[i]'s cause fixes it (its link is LINK_FIX_IN_CAUSE): its own are not shown. */
bool finding_fix_in_cause(const struct findings *f, size_t i);

/* How many findings have severity sev (acknowledged ones are not counted). */
size_t findings_count(const struct findings *f, enum severity sev);
/* The worst severity present among the findings not acknowledged, or -1 for none. */
int findings_worst(const struct findings *f);

/*
 * Why a check established nothing about GPUs (no GPU found and no finding explains it), as one
 * plain sentence the caller frees (in the locale's language for people, else English); NULL
 * when it could check.
 */
char *rules_cannot_check(const struct snapshot *s, const struct findings *f, bool people);
/*
 * The exit status of a check (cmd.h's convention): 0 nothing of warning or worse, 1 warning,
 * 2 critical, 3 when nothing about GPUs could be established.
 */
int rules_exit_status(const struct snapshot *s, const struct findings *f);

/*
 * Where the comment of a fix line begins: the first '#' that starts a word outside quotes, as a
 * shell reads the line; strlen(fix) when it has none. "kill 4121   # why" gives 10.
 */
size_t fix_comment_start(const char *fix);

/* A stable one-line key for a subject: "gpu=3 pid=4121", "object=/tmp", "host". Caller frees. */
char *subject_key(const struct subject *s);

#endif
