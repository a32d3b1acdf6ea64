/*
 * The JSON report of `check --json`: schema "gpudoctor.check/1", documented in docs/check.md.
 * Built with jansson, never printf.
 */
#ifndef GPUDOCTOR_RENDER_JSON_H
#define GPUDOCTOR_RENDER_JSON_H

#include "rules/rules.h"
#include "snapshot/snapshot.h"

#include <jansson.h>

#define CHECK_SCHEMA "gpudoctor.check/1"

/*
 * {"schema", "hostname", "time_ms", "verdict", "findings", "not_checked"}: the report without the
 * snapshot, as serve's /findings gives it. exit_code is the check's status.
 */
json_t *render_findings_json(const char *schema, const struct snapshot *s, const struct findings *f,
                             int exit_code);
/* The same with "snapshot" appended: `check --json`. */
json_t *render_check_json(const struct snapshot *s, const struct findings *f, int exit_code);
/* One finding as JSON (also used by `serve` for /findings). */
json_t *render_finding_json(const struct finding *f);

#endif
