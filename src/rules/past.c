/*
 * The past of a GPU in the state file (docs/state.md): in how many earlier epochs a fault was
 * seen (earlier boots, and the parts of a boot before a detected GPU reset), and the escalation
 * policy for a fault that returns after a reboot or a reset. A reboot or a reset resets the GPU,
 * so a fault it keeps is the GPU's. Shared by health.xid and the memory rules.
 */
#include "rules/rule-impl.h"
#include "state/state.h"
#include "util/timeutil.h"

#include <stdio.h>
#include <string.h>

#define HAS(ev, slot) (((ev)->valid & (UINT64_C(1) << (slot))) != 0)

/* An event of the fault: its kind, and for an Xid its code (repair_pending's code says which
 * repair, any of them is the fault). */
static bool of_fault(const struct state_event *e, enum state_event_kind kind, int32_t code)
{
    return e->kind == (int32_t)kind && (kind != STATE_EV_XID || e->code == code) &&
           e->boot_id != NULL;
}

/* When the fault is seen in this boot now: for an Xid the newest line of the code about g in
 * this boot (its kernel stamp), else the snapshot's uptime; -1 unknown. */
static int64_t now_of(const struct snapshot *s, const struct gpu *g, enum state_event_kind kind,
                      int32_t code)
{
    int64_t now = -1;

    if (kind != STATE_EV_XID)
        return state_now_us(s);
    for (size_t i = 0; i < s->driver.n_events; i++) {
        const struct klog_event *ev = &s->driver.events[i];

        if (ev->kind == KLOG_XID && HAS(ev, KLOG_S_XID) && ev->xid == code &&
            HAS(ev, KLOG_S_UPTIME) && state_event_gpu(s, ev) == g && state_event_this_boot(s, ev) &&
            ev->uptime_us > now)
            now = ev->uptime_us;
    }
    return now;
}

bool past_find(const struct rule_ctx *ctx, const struct gpu *g, enum state_event_kind kind,
               int32_t code, struct past *p)
{
    const struct snapshot *s = ctx->facts->snap;
    const char *here = host_valid(&s->host, HOST_S_BOOT_ID) ? s->host.boot_id : NULL;
    const char *boots[STATE_MAX_EVENTS];
    int64_t times[STATE_MAX_EVENTS + 1];
    const struct state_gpu *sg;
    size_t n_boots = 0;
    int64_t now;

    memset(p, 0, sizeof(*p));
    if (s->state.status != STATE_OK || here == NULL)
        return false;
    sg = state_find_gpu(&s->state, gpu_valid(g, GPU_S_SERIAL) ? g->serial : NULL,
                        gpu_valid(g, GPU_S_UUID) ? g->uuid : NULL);
    if (sg == NULL)
        return false;
    p->sg = sg;
    now = now_of(s, g, kind, code);
    /* The boots with the fault, this one last. */
    for (size_t i = 0; i < sg->n_events; i++) {
        const struct state_event *e = &sg->events[i];
        size_t k;

        if (!of_fault(e, kind, code))
            continue;
        if (strcmp(e->boot_id, here) != 0 || state_reset_between(sg, here, e->uptime_us, now))
            p->last = e; /* an earlier epoch's */
        for (k = 0; k < n_boots && strcmp(boots[k], e->boot_id) != 0; k++)
            ;
        if (k == n_boots && strcmp(e->boot_id, here) != 0)
            boots[n_boots++] = e->boot_id;
    }
    /* Each earlier boot: one epoch, more when resets are known to lie between its events. */
    for (size_t b = 0; b < n_boots; b++) {
        size_t n = 0, epochs;

        for (size_t i = 0; i < sg->n_events; i++) {
            const struct state_event *e = &sg->events[i];

            if (of_fault(e, kind, code) && strcmp(e->boot_id, boots[b]) == 0)
                times[n++] = e->uptime_us;
        }
        epochs = state_epochs(sg, boots[b], times, n);
        p->boots++;
        p->resets += epochs > 1 ? epochs - 1 : 0;
    }
    /* This boot, up to now: the epochs before the one the fault is seen in now. */
    if (now >= 0) {
        size_t n = 0, epochs;

        for (size_t i = 0; i < sg->n_events; i++) {
            const struct state_event *e = &sg->events[i];

            if (of_fault(e, kind, code) && strcmp(e->boot_id, here) == 0 && e->uptime_us >= 0 &&
                e->uptime_us <= now)
                times[n++] = e->uptime_us;
        }
        times[n++] = now;
        epochs = state_epochs(sg, here, times, n);
        p->resets += epochs - 1;
        p->here_resets = epochs - 1;
    }
    return p->boots + p->resets > 0;
}

void past_words(const struct past *p, struct text2 *w)
{
    const char *boot_s = p->boots == 1 ? "" : "s", *reset_s = p->resets == 1 ? "" : "s";
    char *boots_l, *resets_l, *l = NULL;

    if (p->resets == 0) {
        if (i18n_active())
            l = xasprintf(P_("%zu reboot", "%zu reboots", p->boots), p->boots);
        text2_add_take(w, xasprintf("%zu reboot%s", p->boots, boot_s), l);
    } else if (p->boots == 0) {
        if (i18n_active())
            l = xasprintf(P_("%zu GPU reset", "%zu GPU resets", p->resets), p->resets);
        text2_add_take(w, xasprintf("%zu GPU reset%s", p->resets, reset_s), l);
    } else {
        if (i18n_active()) {
            boots_l = xasprintf(P_("%zu reboot", "%zu reboots", p->boots), p->boots);
            resets_l = xasprintf(P_("%zu reset", "%zu resets", p->resets), p->resets);
            /* TRANSLATORS: "2 reboots and 1 reset": after how many a fault came back. */
            l = xasprintf(_("%s and %s"), boots_l, resets_l);
            free(boots_l);
            free(resets_l);
        }
        text2_add_take(
            w, xasprintf("%zu reboot%s and %zu reset%s", p->boots, boot_s, p->resets, reset_s), l);
    }
}

/* How each reset of this boot was seen, for the evidence. */
static void resets_said(struct finding *f, const struct rule_ctx *ctx, const struct past *p)
{
    const struct snapshot *s = ctx->facts->snap;
    size_t said = 0;

    for (size_t i = 0; p->sg && i < p->sg->n_resets && said < 3; i++) {
        const struct state_reset *r = &p->sg->resets[i];
        const char *how;

        if (r->boot_id == NULL || strcmp(r->boot_id, s->host.boot_id) != 0)
            continue;
        switch (r->how) {
        case STATE_RESET_REPAIR_APPLIED:
            how = N_("a pending row remap or page retirement was applied (only a reset does "
                     "that)");
            break;
        case STATE_RESET_ENERGY_DROP:
            how = N_("NVML's energy counter, which counts since the driver loaded, went down: "
                     "the driver reloaded");
            break;
        default:
            how = N_("the driver's load banner appeared again in the kernel log: the driver "
                     "reloaded");
            break;
        }
        finding_evidence_take(
            f, TWICE("GPU reset in this boot between %.0fs and %.0fs of uptime: %s",
                     ((double)r->after_us / 1e6, (double)r->uptime_us / 1e6, how),
                     ((double)r->after_us / 1e6, (double)r->uptime_us / 1e6, _(how))));
        said++;
    }
}

void past_said(struct finding *f, const struct rule_ctx *ctx, const char *what,
               const struct past *p)
{
    struct text2 words = { 0 };
    char when[40];

    time_format_iso(p->last ? p->last->time_ms : 0, when, sizeof(when));
    if (p->resets == 0) {
        finding_evidence_take(
            f,
            xasprintf(
                "the state file remembers %s on this GPU in %zu earlier boot%s, the last at %s",
                what, p->boots, p->boots == 1 ? "" : "s", when),
            i18n_active() ? xasprintf(P_("the state file remembers %s on this GPU in %zu earlier "
                                         "boot, the last at %s",
                                         "the state file remembers %s on this GPU in %zu earlier "
                                         "boots, the last at %s",
                                         p->boots),
                                      _(what), p->boots, when)
                          : NULL);
        return;
    }
    past_words(p, &words);
    finding_evidence_take(f,
                          TWICE("the state file remembers %s on this GPU before %s, the last at %s",
                                (what, words.en, when), (_(what), words.l, when)));
    text2_free(&words);
    if (p->here_resets > 0)
        resets_said(f, ctx, p);
}

enum severity past_escalate(struct finding *f, const struct gpu *g, const struct past *p,
                            enum severity sev, struct text2 *suffix)
{
    struct text2 words = { 0 };
    size_t epochs = p->boots + p->resets;

    past_words(p, &words);
    if (epochs >= 2 || sev == SEV_CRITICAL) {
        text2_add_take(
            suffix, TWICE(", again after %s: inspect or replace the GPU", (words.en), (words.l)));
        finding_fix_take(f, TWICE("# the fault survived %s: inspect or replace this GPU (its "
                                  "serial is in the evidence)",
                                  (words.en), (words.l)));
        finding_evidence(f, "serial %s, UUID %s", gpu_valid(g, GPU_S_SERIAL) ? g->serial : "?",
                         gpu_valid(g, GPU_S_UUID) ? g->uuid : "?");
        sev = SEV_CRITICAL;
    } else {
        text2_add_take(suffix, TWICE(", again after %s", (words.en), (words.l)));
        sev = sev > SEV_WARNING ? sev : SEV_WARNING;
    }
    text2_free(&words);
    return sev;
}
