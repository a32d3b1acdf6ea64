/*
 * The past of a GPU in the state file (docs/state.md): in how many earlier boots a fault was
 * seen, and the escalation policy for a fault that returns after a reboot. A reboot resets the
 * GPU, so a fault it keeps is the GPU's. Shared by health.xid and the memory rules.
 */
#include "rules/rule-impl.h"
#include "util/timeutil.h"

#include <stdio.h>
#include <string.h>

size_t past_boots(const struct rule_ctx *ctx, const struct gpu *g, enum state_event_kind kind,
                  int32_t code, const struct state_event **last)
{
    const struct snapshot *s = ctx->facts->snap;
    const struct state_gpu *sg;
    const char *boots[STATE_MAX_EVENTS];
    size_t n = 0;

    *last = NULL;
    if (s->state.status != STATE_OK || !host_valid(&s->host, HOST_S_BOOT_ID) ||
        s->host.boot_id == NULL)
        return 0;
    sg = state_find_gpu(&s->state, gpu_valid(g, GPU_S_SERIAL) ? g->serial : NULL,
                        gpu_valid(g, GPU_S_UUID) ? g->uuid : NULL);
    for (size_t i = 0; sg && i < sg->n_events && n < STATE_MAX_EVENTS; i++) {
        const struct state_event *e = &sg->events[i];
        size_t k;

        if (e->kind != (int32_t)kind || e->code != code || e->boot_id == NULL ||
            strcmp(e->boot_id, s->host.boot_id) == 0)
            continue;
        *last = e;
        for (k = 0; k < n && strcmp(boots[k], e->boot_id) != 0; k++)
            ;
        if (k == n)
            boots[n++] = e->boot_id;
    }
    return n;
}

void past_said(struct finding *f, const char *what, size_t boots, const struct state_event *last)
{
    char when[40];

    time_format_iso(last->time_ms, when, sizeof(when));
    finding_evidence(
        f, "the state file remembers %s on this GPU in %zu earlier boot%s, the last at %s", what,
        boots, boots == 1 ? "" : "s", when);
}

enum severity past_escalate(struct finding *f, const struct gpu *g, size_t boots, enum severity sev,
                            char *suffix, size_t size)
{
    size_t len = strlen(suffix);

    if (boots >= 2 || sev == SEV_CRITICAL) {
        snprintf(suffix + len, size - len, ", again after %zu reboot%s: inspect or replace the GPU",
                 boots, boots == 1 ? "" : "s");
        finding_fix(f,
                    "# the fault survived %zu reboot%s: inspect or replace this GPU (its serial "
                    "is in the evidence)",
                    boots, boots == 1 ? "" : "s");
        finding_evidence(f, "serial %s, UUID %s", gpu_valid(g, GPU_S_SERIAL) ? g->serial : "?",
                         gpu_valid(g, GPU_S_UUID) ? g->uuid : "?");
        return SEV_CRITICAL;
    }
    snprintf(suffix + len, size - len, ", again after %zu reboot", boots);
    return sev > SEV_WARNING ? sev : SEV_WARNING;
}
