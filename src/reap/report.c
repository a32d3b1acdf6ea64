/*
 * What reap prints: the plan (what would be signalled and why, what is not touched and why,
 * where killing cannot help and what can), the GPU memory freed, and all of it as JSON
 * ("gpudoctor.reap/1", docs/reap.md).
 */
#include "reap/reap.h"
#include "render/format.h"
#include "util/i18n.h"
#include "util/xalloc.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* ---- memory freed ---- */

static bool mem_used(const struct snapshot *s, uint32_t idx, uint64_t *out)
{
    const struct gpu *g = s ? snapshot_gpu(s, idx) : NULL;

    if (g == NULL || !gpu_valid(g, GPU_S_MEM_USED))
        return false;
    *out = g->mem_used_bytes;
    return true;
}

size_t reap_freed_compute(const struct snapshot *before, const struct snapshot *after,
                          const struct reap_plan *plan, const struct reap_result *results,
                          struct reap_freed **out)
{
    size_t n = 0, cap = 0;

    *out = NULL;
    for (size_t i = 0; i < plan->n; i++) {
        const struct reap_target *t = &plan->targets[i];

        if (results == NULL || !reap_outcome_ended(results[i].outcome))
            continue;
        for (size_t k = 0; k < t->n_gpus; k++) {
            uint32_t idx = (uint32_t)t->gpus[k];
            struct reap_freed *f;
            bool seen = false;

            for (size_t m = 0; m < n; m++)
                seen |= (*out)[m].gpu_index == idx;
            if (seen)
                continue;
            xgrow(out, &cap, n + 1, sizeof(**out));
            f = &(*out)[n++];
            memset(f, 0, sizeof(*f));
            f->gpu_index = idx;
            f->before_valid = mem_used(before, idx, &f->before_bytes);
            f->after_valid = mem_used(after, idx, &f->after_bytes);
        }
    }
    return n;
}

void reap_freed_line(char *buf, size_t size, const struct reap_freed *f)
{
    char a[16] = "?", b[16] = "?", d[16];

    if (f->before_valid)
        render_bytes(a, sizeof(a), f->before_bytes);
    if (f->after_valid)
        render_bytes(b, sizeof(b), f->after_bytes);
    if (f->before_valid && f->after_valid && f->after_bytes <= f->before_bytes) {
        render_bytes(d, sizeof(d), f->before_bytes - f->after_bytes);
        snprintf(buf, size, _("GPU %" PRIu32 ": %s \u2192 %s (%s freed)"), f->gpu_index, a, b, d);
    } else if (f->before_valid && f->after_valid) {
        snprintf(buf, size,
                 _("GPU %" PRIu32 ": %s \u2192 %s (nothing freed: other processes grew)"),
                 f->gpu_index, a, b);
    } else {
        snprintf(buf, size, _("GPU %" PRIu32 ": %s \u2192 %s (memory use not known)"), f->gpu_index,
                 a, b);
    }
}

/* ---- the plan as text ---- */

/* Line i for people: its translation where there is one, else the English. */
static const char *text(char *const *en, char *const *l, size_t i)
{
    return l != NULL && l[i] != NULL ? l[i] : en[i];
}

static void target_head(FILE *out, const struct reap_target *t)
{
    fprintf(out, "  pid %d (%s) %s\n", (int)t->pid, t->user ? t->user : "?",
            t->command ? render_command(t->command) : "?");
    if (t->why)
        fprintf(out, "    %s\n", t->why_l ? t->why_l : t->why);
    for (size_t i = 0; i < t->n_evidence; i++)
        fprintf(out, "    - %s\n", text(t->evidence, t->evidence_l, i));
}

void reap_plan_print(FILE *out, const struct reap_plan *plan, const struct reap_exec *x,
                     bool dry_run)
{
    size_t n_sig = reap_plan_count(plan, REAP_SIGNAL);
    size_t n_ref = reap_plan_count(plan, REAP_REFUSED);
    size_t n_cant = reap_plan_count(plan, REAP_CANNOT_HELP);
    char grace[16];

    render_duration(grace, sizeof(grace), (double)x->grace_ms / 1000.0);
    if (plan->n == 0)
        fputs(_("Nothing to reap: no GPU process matches.\n"), out);
    if (n_sig) {
        fprintf(out,
                dry_run ? _("Would signal %zu process%s:\n") : _("Signalling %zu process%s:\n"),
                n_sig, n_sig == 1 ? "" : "es");
        for (size_t i = 0; i < plan->n; i++) {
            const struct reap_target *t = &plan->targets[i];

            if (t->disposition != REAP_SIGNAL)
                continue;
            target_head(out, t);
            fprintf(
                out,
                t->state == 'T'
                    ? _("    SIGTERM and SIGCONT (it is stopped), then SIGKILL after %s if it is "
                        "still there\n")
                    : _("    SIGTERM, then SIGKILL after %s if it is still there\n"),
                grace);
        }
    }
    if (n_ref) {
        fprintf(out, _("%sNot touched (%zu):\n"), n_sig ? "\n" : "", n_ref);
        for (size_t i = 0; i < plan->n; i++) {
            const struct reap_target *t = &plan->targets[i];

            if (t->disposition != REAP_REFUSED)
                continue;
            target_head(out, t);
            for (size_t k = 0; k < t->n_advice; k++)
                fprintf(out, "    %s%s\n", k == 0 ? _("refused: ") : "",
                        text(t->advice, t->advice_l, k));
        }
    }
    if (n_cant) {
        fprintf(out, _("%sKilling cannot help (%zu):\n"), n_sig + n_ref ? "\n" : "", n_cant);
        for (size_t i = 0; i < plan->n; i++) {
            const struct reap_target *t = &plan->targets[i];

            if (t->disposition != REAP_CANNOT_HELP)
                continue;
            target_head(out, t);
            fputs(_("    instead:\n"), out);
            for (size_t k = 0; k < t->n_advice; k++)
                fprintf(out, "      %s\n", text(t->advice, t->advice_l, k));
        }
    }
    if (plan->n_notes) {
        fputs(plan->n ? _("\nAlso looked at:\n") : _("Also looked at:\n"), out);
        for (size_t i = 0; i < plan->n_notes; i++)
            fprintf(out, "  %s\n", text(plan->notes, plan->notes_l, i));
    }
    if (dry_run && n_sig)
        fputs(_("\nDry run: nothing was signalled. Add --kill to do it.\n"), out);
}

/* ---- JSON ---- */

static json_t *strings(char *const *v, size_t n)
{
    json_t *a = json_array();

    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, jstring_safe(v[i]));
    return a;
}

static json_t *target_json(const struct reap_target *t, const struct reap_result *r)
{
    json_t *o = json_object(), *gpus = json_array();
    char state[2] = { t->state, '\0' };

    json_object_set_new(o, "pid", json_integer(t->pid));
    json_object_set_new(o, "start_ticks", json_integer((json_int_t)t->start_ticks));
    json_object_set_new(o, "start_time_ms",
                        t->start_time_ms >= 0 ? json_integer(t->start_time_ms) : json_null());
    json_object_set_new(o, "role", json_string(reap_role_names[t->role]));
    json_object_set_new(o, "gpu_pid", json_integer(t->gpu_pid));
    json_object_set_new(o, "verdict", json_string(facts_verdict_names[t->verdict]));
    json_object_set_new(o, "disposition", json_string(reap_disposition_names[t->disposition]));
    json_object_set_new(o, "refusal",
                        t->disposition == REAP_REFUSED ? json_string(reap_refusal_names[t->refusal])
                                                       : json_null());
    json_object_set_new(o, "named", json_boolean(t->named));
    json_object_set_new(o, "state", t->state ? json_string(state) : json_null());
    json_object_set_new(o, "uid", t->have_uid ? json_integer(t->uid) : json_null());
    json_object_set_new(o, "user", jstring_safe(t->user));
    json_object_set_new(o, "command", jstring_safe(t->command));
    for (size_t i = 0; i < t->n_gpus; i++)
        json_array_append_new(gpus, json_integer(t->gpus[i]));
    json_object_set_new(o, "gpus", gpus);
    json_object_set_new(o, "used_bytes",
                        t->used_valid ? json_integer((json_int_t)t->used_bytes) : json_null());
    json_object_set_new(o, "why", jstring_safe(t->why));
    json_object_set_new(o, "evidence", strings(t->evidence, t->n_evidence));
    json_object_set_new(o, "advice", strings(t->advice, t->n_advice));
    if (r != NULL) {
        json_t *res = json_object();

        json_object_set_new(res, "outcome", json_string(reap_outcome_names[r->outcome]));
        json_object_set_new(res, "last_signal", json_integer(r->last_signal));
        json_object_set_new(res, "elapsed_ms", json_integer(r->elapsed_ms));
        json_object_set_new(res, "detail", jstring_safe(r->detail));
        json_object_set_new(o, "result", res);
    } else {
        json_object_set_new(o, "result", json_null());
    }
    return o;
}

json_t *reap_plan_json(const struct reap_plan *plan, const struct reap_result *results,
                       const struct reap_freed *freed, size_t n_freed, bool dry_run, int status)
{
    json_t *o = json_object(), *targets = json_array(), *fa = json_array();

    json_object_set_new(o, "schema", json_string("gpudoctor.reap/1"));
    json_object_set_new(o, "dry_run", json_boolean(dry_run));
    json_object_set_new(o, "exit_status", json_integer(status));
    json_object_set_new(o, "window_ms", json_integer(plan->window_ms));
    for (size_t i = 0; i < plan->n; i++)
        json_array_append_new(targets,
                              target_json(&plan->targets[i], results ? &results[i] : NULL));
    json_object_set_new(o, "targets", targets);
    for (size_t i = 0; i < n_freed; i++) {
        const struct reap_freed *f = &freed[i];
        json_t *fj = json_object();

        json_object_set_new(fj, "gpu_index", json_integer(f->gpu_index));
        json_object_set_new(fj, "before_bytes",
                            f->before_valid ? json_integer((json_int_t)f->before_bytes)
                                            : json_null());
        json_object_set_new(fj, "after_bytes",
                            f->after_valid ? json_integer((json_int_t)f->after_bytes)
                                           : json_null());
        json_array_append_new(fa, fj);
    }
    json_object_set_new(o, "freed", fa);
    json_object_set_new(o, "notes", strings(plan->notes, plan->n_notes));
    return o;
}
