/*
 * Trend rules (rules-trend.c): judgements over a long history rather than the present: a process
 * whose GPU memory grows steadily (a leak), utilisation swinging, repeated throttle episodes, a
 * temperature climbing toward slowdown, a GPU idle for long while its memory is held. They are
 * ordinary rows of the rule table; `watch` runs them over its whole history and the other rules
 * over the last few seconds, so it needs to tell them apart.
 */
#ifndef GPUDOCTOR_RULES_TREND_H
#define GPUDOCTOR_RULES_TREND_H

#include "rules/rules.h"

#include <stdbool.h>

/* Whether r is one of the trend rules. */
bool rule_is_trend(const struct rule *r);

#endif
