/*
 * Acknowledgements: a finding an operator acknowledged with `gpudoctor ack` (kept in the state
 * file, read into the snapshot's state section) is marked, shown apart and not counted, until
 * it expires or the same GPU has a new event: an Xid logged after the acknowledgement, a higher
 * uncorrectable ECC count or more uncorrectable remapped rows than it covered, a row remap
 * failure or a memory repair pending that appeared after it. An acknowledgement never hides a
 * new event, nor a finding more severe than the one it was given for (docs/state.md).
 */
#include "rules/rule-impl.h"
#include "rules/rules.h"
#include "state/state.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

#define HAS(ev, slot) (((ev)->valid & (UINT64_C(1) << (slot))) != 0)

/* Whether the kernel-log event happened after the acknowledgement. */
static bool event_after(const struct snapshot *s, const struct klog_event *ev,
                        const struct state_ack *a)
{
    const char *boot = host_valid(&s->host, HOST_S_BOOT_ID) ? s->host.boot_id : NULL;

    if (a->boot_id && boot && strcmp(a->boot_id, boot) != 0)
        return state_event_this_boot(s, ev); /* given in an earlier boot: this boot's are new */
    if (a->boot_id && boot && a->uptime_us >= 0 && HAS(ev, KLOG_S_UPTIME))
        return ev->uptime_us > a->uptime_us; /* the kernel's clock: no wall-clock change moves it */
    return !HAS(ev, KLOG_S_TIME) || ev->time_ms > a->time_ms; /* unknown time: new */
}

/* Whether a counter shows more than the acknowledgement covered (unknown then: any count). */
static bool counter_rose(const struct gpu *g, enum gpu_slot slot, uint64_t now, int64_t covered)
{
    if (!gpu_valid(g, slot))
        return false;
    return covered < 0 ? now > 0 : now > (uint64_t)covered;
}

/* Whether the state file's event e was first seen at or before the acknowledgement: in its boot
 * by the kernel's uptime, else (another boot, or an uptime unknown) by the wall clock. */
static bool seen_by_ack(const struct state_event *e, const struct state_ack *a)
{
    if (a->boot_id && e->boot_id && strcmp(a->boot_id, e->boot_id) == 0 && a->uptime_us >= 0 &&
        e->uptime_us >= 0)
        return e->uptime_us <= a->uptime_us;
    return e->time_ms <= a->time_ms;
}

/*
 * Whether a memory fault the GPU shows now appeared after the acknowledgement (docs/state.md,
 * "new event"). A repair pending now is covered only by a record of this epoch (this boot, no
 * reset detected since it) with its flags, first seen at or before the acknowledgement: a reset
 * applies a pending repair, so one pending after a reset, or in a later boot, is new. NVML's
 * remapping failure flag says a remapping "ever failed", so it is covered by any record of it
 * first seen at or before the acknowledgement. Without such a record (none, or only later ones)
 * the fault is new: an acknowledgement never hides what it may not have seen.
 */
static bool memory_fault_after(const struct snapshot *s, const struct gpu *g,
                               const struct state_ack *a)
{
    const char *boot = host_valid(&s->host, HOST_S_BOOT_ID) ? s->host.boot_id : NULL;
    const struct state_gpu *sg =
        state_find_gpu(&s->state, gpu_valid(g, GPU_S_SERIAL) ? g->serial : NULL,
                       gpu_valid(g, GPU_S_UUID) ? g->uuid : NULL);
    int32_t repair =
        (gpu_valid(g, GPU_S_REMAP_PENDING) && g->remapped_rows_pending ? STATE_REPAIR_REMAP : 0) |
        (gpu_valid(g, GPU_S_RETIRED_PENDING) && g->retired_pages_pending ? STATE_REPAIR_RETIRE : 0);
    bool failure = gpu_valid(g, GPU_S_REMAP_FAILURE) && g->remapped_rows_failure;
    bool repair_covered = false, failure_covered = false;

    if (repair == 0 && !failure)
        return false;
    for (size_t i = 0; sg && i < sg->n_events; i++) {
        const struct state_event *e = &sg->events[i];

        if (e->kind == STATE_EV_REMAP_FAIL && seen_by_ack(e, a))
            failure_covered = true;
        if (e->kind == STATE_EV_REPAIR && boot && e->boot_id && strcmp(e->boot_id, boot) == 0 &&
            e->uptime_us >= 0 && !state_reset_since(sg, boot, e->uptime_us) &&
            (e->code == 0 || (repair & ~e->code) == 0) && seen_by_ack(e, a))
            repair_covered = true;
    }
    return (repair != 0 && !repair_covered) || (failure && !failure_covered);
}

static bool new_event(const struct snapshot *s, const struct gpu *g, const struct state_ack *a)
{
    const struct driver_info *d = &s->driver;

    for (size_t i = 0; i < d->n_events; i++) {
        const struct klog_event *ev = &d->events[i];

        if ((ev->kind == KLOG_XID || ev->kind == KLOG_FALLEN_OFF_BUS) &&
            state_event_gpu(s, ev) == g && event_after(s, ev, a))
            return true;
    }
    return counter_rose(g, GPU_S_ECC_AGG_UNCORR, g->ecc_aggregate_uncorrected,
                        a->ecc_uncorrected) ||
           counter_rose(g, GPU_S_REMAP_UNCORR, g->remapped_rows_uncorrectable, a->remapped_rows) ||
           memory_fault_after(s, g, a);
}

static const struct gpu *gpu_by_uuid(const struct snapshot *s, const char *uuid)
{
    for (size_t i = 0; i < s->n_gpus; i++) {
        if (gpu_valid(&s->gpus[i], GPU_S_UUID) && s->gpus[i].uuid &&
            strcmp(s->gpus[i].uuid, uuid) == 0)
            return &s->gpus[i];
    }
    return NULL;
}

static const struct state_ack *ack_for(const struct snapshot *s, const struct finding *f)
{
    const struct state_info *st = &s->state;
    const struct gpu *g;

    if (f->subject.gpu_uuid == NULL)
        return NULL;
    g = gpu_by_uuid(s, f->subject.gpu_uuid);
    for (size_t i = 0; i < st->n_acks; i++) {
        const struct state_ack *a = &st->acks[i];

        if (strcmp(a->rule, f->rule->id) != 0 || strcmp(a->gpu_uuid, f->subject.gpu_uuid) != 0)
            continue;
        if (a->expires_ms != 0 && a->expires_ms <= s->time_ms)
            continue;
        if (g == NULL || new_event(s, g, a))
            continue;
        return a;
    }
    return NULL;
}

const struct finding *findings_lead(const struct findings *f)
{
    for (size_t i = 0; i < f->n; i++) {
        if (f->items[i].ack == NULL)
            return &f->items[i];
    }
    return NULL;
}

size_t findings_acked(const struct findings *f)
{
    size_t n = 0;

    for (size_t i = 0; i < f->n; i++)
        n += f->items[i].ack != NULL;
    return n;
}

struct finding_ack *finding_ack_dup(const struct finding_ack *a)
{
    struct finding_ack *d;

    if (a == NULL)
        return NULL;
    d = xcalloc(1, sizeof(*d));
    *d = *a;
    d->note = a->note ? xstrdup(a->note) : NULL;
    d->by = a->by ? xstrdup(a->by) : NULL;
    return d;
}

/*
 * Says in the finding's evidence that an acknowledgement of a milder finding (a warning, when it
 * is critical now) does not cover it: it escalated since the operator saw it.
 */
static void say_escalated(struct finding *f, const struct state_ack *a)
{
    char when[40];

    time_format_iso(a->time_ms, when, sizeof(when));
    finding_evidence(f, "acknowledged at %s by %s at %s%s%s%s: not covered, it is %s now",
                     severity_names[a->severity], a->by ? a->by : "?", when, a->note ? " (\"" : "",
                     a->note ? a->note : "", a->note ? "\")" : "", severity_names[f->severity]);
}

void rules_apply_acks(const struct snapshot *s, struct findings *f)
{
    for (size_t i = 0; i < f->n && s->state.n_acks > 0; i++) {
        const struct state_ack *a = ack_for(s, &f->items[i]);
        struct finding_ack fa;

        if (a == NULL)
            continue;
        if (a->severity >= 0 && (int32_t)f->items[i].severity > a->severity) {
            say_escalated(&f->items[i], a);
            continue;
        }
        fa.note = a->note;
        fa.by = a->by;
        fa.time_ms = a->time_ms;
        fa.expires_ms = a->expires_ms;
        f->items[i].ack = finding_ack_dup(&fa);
    }
    /* Marked in place, never removed or moved: a finding's cause is its position in the list.
     * Renderers show the acknowledged apart; the verdict names findings_lead. */
}
