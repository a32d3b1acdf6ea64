#include "render/json.h"
#include "render/text.h"
#include "snapshot/jfield.h"

#include <stdlib.h>

/*
 * Text that comes from outside (titles and evidence carry process names, paths, log lines):
 * json_string() refuses what is not UTF-8 and json_object_set_new() then drops the key without a
 * word, so every such string goes through jstring_safe (null for NULL, "\xNN" for bad bytes).
 */
static json_t *str_or_null(const char *s)
{
    return jstring_safe(s);
}

static json_t *int_or_null(int32_t v)
{
    return v >= 0 ? json_integer(v) : json_null();
}

static json_t *strings(char *const *items, size_t n)
{
    json_t *a = json_array();

    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, jstring_safe(items[i]));
    return a;
}

json_t *render_finding_json(const struct finding *f)
{
    json_t *j = json_object(), *sub = json_object();

    json_object_set_new(j, "id", json_string(f->rule->id));
    json_object_set_new(j, "severity", json_string(severity_names[f->severity]));
    json_object_set_new(j, "category", json_string(category_names[f->rule->category]));
    json_object_set_new(sub, "gpu_index", int_or_null(f->subject.gpu_index));
    json_object_set_new(sub, "gpu_uuid", str_or_null(f->subject.gpu_uuid));
    json_object_set_new(sub, "pid", int_or_null(f->subject.pid));
    json_object_set_new(sub, "user", str_or_null(f->subject.user));
    json_object_set_new(sub, "command", str_or_null(f->subject.command));
    json_object_set_new(sub, "container", str_or_null(f->subject.container));
    json_object_set_new(sub, "object", str_or_null(f->subject.object));
    json_object_set_new(j, "subject", sub);
    json_object_set_new(j, "title", jstring_safe(f->title ? f->title : f->rule->title));
    json_object_set_new(j, "evidence", strings(f->evidence, f->n_evidence));
    json_object_set_new(j, "explanation", json_string(f->rule->explanation));
    json_object_set_new(j, "fix", strings(f->fix, f->n_fix));
    json_object_set_new(j, "impact", json_real(f->impact));
    if (f->ack != NULL) { /* only then: a report without acknowledgements reads as before */
        json_t *a = json_object();

        json_object_set_new(a, "by", str_or_null(f->ack->by));
        json_object_set_new(a, "note", str_or_null(f->ack->note));
        json_object_set_new(a, "time_ms", json_integer(f->ack->time_ms));
        json_object_set_new(a, "expires_ms",
                            f->ack->expires_ms ? json_integer(f->ack->expires_ms) : json_null());
        json_object_set_new(j, "acknowledged", a);
    }
    return j;
}

json_t *render_findings_json(const char *schema, const struct snapshot *s, const struct findings *f,
                             int exit_code)
{
    json_t *j = json_object(), *v = json_object(), *list = json_array(), *skips = json_array();
    char *text = render_verdict(s, f, false);

    json_object_set_new(j, "schema", json_string(schema));
    json_object_set_new(j, "hostname", jstring_safe(s->hostname));
    json_object_set_new(j, "time_ms", json_integer(s->time_ms));
    json_object_set_new(v, "status", json_string(render_status(exit_code)));
    json_object_set_new(v, "exit_code", json_integer(exit_code));
    json_object_set_new(v, "critical", json_integer((json_int_t)findings_count(f, SEV_CRITICAL)));
    json_object_set_new(v, "warning", json_integer((json_int_t)findings_count(f, SEV_WARNING)));
    json_object_set_new(v, "info", json_integer((json_int_t)findings_count(f, SEV_INFO)));
    json_object_set_new(v, "acknowledged", json_integer((json_int_t)findings_acked(f)));
    json_object_set_new(v, "text", jstring_safe(text));
    free(text);
    json_object_set_new(j, "verdict", v);
    for (size_t i = 0; i < f->n; i++) {
        json_t *one = render_finding_json(&f->items[i]), *explains = json_array();
        const struct finding *cause = finding_cause(f, i);

        /* Causes and consequences by number: the finding's 1-based place in this list. */
        json_object_set_new(one, "number", json_integer((json_int_t)i + 1));
        json_object_set_new(one, "caused_by",
                            cause ? json_integer((json_int_t)(cause - f->items) + 1) : json_null());
        for (size_t k = 0; k < f->n; k++) {
            if (finding_cause(f, k) == &f->items[i])
                json_array_append_new(explains, json_integer((json_int_t)k + 1));
        }
        json_object_set_new(one, "explains", explains);
        /* The cause's fix is this one's: a reader showing fixes shows the cause's instead. */
        json_object_set_new(one, "fix_in_cause", json_boolean(finding_fix_in_cause(f, i)));
        json_array_append_new(list, one);
    }
    json_object_set_new(j, "findings", list);
    for (size_t i = 0; i < f->n_skips; i++) {
        json_t *k = json_object();

        json_object_set_new(k, "rule", json_string(f->skips[i].rule->id));
        json_object_set_new(k, "gpu_index", int_or_null(f->skips[i].gpu_index));
        json_object_set_new(k, "reason", jstring_safe(f->skips[i].reason));
        json_array_append_new(skips, k);
    }
    json_object_set_new(j, "not_checked", skips);
    return j;
}

json_t *render_check_json(const struct snapshot *s, const struct findings *f, int exit_code)
{
    json_t *j = render_findings_json(CHECK_SCHEMA, s, f, exit_code);

    json_object_set_new(j, "snapshot", snapshot_to_jansson(s));
    return j;
}
