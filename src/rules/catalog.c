/*
 * The rule table: every diagnosis gpudoctor makes, in the order `explain --list` and
 * docs/rules.md show them (and the tie-break order of the report). The rows themselves live next
 * to their check functions in rules-*.c; RULE_LIST in rule-impl.h names them once.
 */
#include "rules/rule-impl.h"
#include "util/xalloc.h"

#define RULE_ADDRESS(name) &rule_##name,
const struct rule *const rule_table[] = { RULE_LIST(RULE_ADDRESS) };
#undef RULE_ADDRESS

const size_t n_rules = ARRAY_SIZE(rule_table);
