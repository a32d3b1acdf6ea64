/*
 * The configuration file: `key = value` lines, `#` comments. Keys are the thresholds of
 * facts/thresholds.h, plus `disable = RULE-ID[, RULE-ID...]` to switch rules off, and
 * `slurm_drain` for slurm-check, and a [profile] section: the node's expected hardware
 * (rules/profile.h; `--set profile.KEY=VALUE` sets one of its keys). Read from
 * /etc/gpudoctor.conf when it exists (or $GPUDOCTOR_CONFIG), or the file --config names;
 * --set key=value overrides single keys. docs/config.md documents every key.
 */
#ifndef GPUDOCTOR_RULES_CONFIG_H
#define GPUDOCTOR_RULES_CONFIG_H

#include "rules/profile.h"
#include "rules/rules.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CONFIG_DEFAULT_PATH           "/etc/gpudoctor.conf"
#define CONFIG_ENV                    "GPUDOCTOR_CONFIG"
#define CONFIG_MAX_BYTES              (1u << 20)
#define CONFIG_SLURM_BENCH_MAX_AGE_MS (24 * 3600 * 1000LL) /* a day */

/*
 * slurm_drain = node-faults | critical [, RULE-ID | -RULE-ID ...]: which critical findings make
 * `gpudoctor slurm-check` drain the node (docs/slurm.md). node-faults, the default: those of the
 * rules cmd-slurm.c counts as the node's (hardware, driver, fabric, a lost GPU), not a job's;
 * critical: every critical finding. A RULE-ID adds that rule's, -RULE-ID takes it away.
 */
struct slurm_drain_policy {
    bool every_critical; /* "critical" */
    signed char *rules;  /* NULL, or n_rules entries: 1 drains, -1 never, 0 as the base says */
};

struct config {
    struct rules_config rules;
    struct slurm_drain_policy slurm_drain;
    /* The [profile] section (and --set profile.KEY=VALUE); NULL when no key was given. When set,
     * rules.th.profile points to it. */
    struct profile *profile;
    char *path;      /* the file read, NULL when none */
    char *state_dir; /* state_dir: the state directory, "off" for none; NULL: the default */
    /* slurm_bench = off | quick: slurm-check runs a quick bench when the last result is older
     * than slurm_bench_max_age (docs/slurm.md) */
    bool slurm_bench;
    int64_t slurm_bench_max_age_ms;
    char **origins; /* "file:line" strings the thresholds' origin fields point to */
    size_t n_origins, cap_origins;
};

void config_init(struct config *c);
void config_free(struct config *c);

/* The file to read by default: $GPUDOCTOR_CONFIG when set, else /etc/gpudoctor.conf. */
const char *config_default_path(void);

/*
 * Reads a configuration file. With optional, a file that does not exist is not an error.
 * Returns 0, or -1 with *cause = "path:line: what is wrong" (the caller frees it).
 */
int config_load(struct config *c, const char *path, bool optional, char **cause);
/* Parses the text of a configuration file; name is used in messages. */
int config_parse(struct config *c, const char *text, const char *name, char **cause);
/* Applies one "key=value" (from --set). Returns 0, or -1 with *cause set. */
int config_set(struct config *c, const char *assignment, char **cause);

/* Up to max known names (threshold keys, "disable", "slurm_drain", "state_dir") close to a misspelt
 * key. */
size_t config_suggest(const char *key, const char **out, size_t max);

#endif
