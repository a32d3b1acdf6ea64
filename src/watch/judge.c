/*
 * Judging a cycle of watch. The rules describe the present over a short window ("any reading of
 * the window was throttled"): over a half-hour history a finding would stay for half an hour
 * after its cause went. So the rules see the last --window of the history and the trend rules
 * see all of it, in two runs of the same engine, merged here. Also: which findings are new and
 * which just cleared, for the view.
 */
#include "rules/rules-trend.h"
#include "util/xalloc.h"
#include "watch/watch.h"

#include <stdlib.h>
#include <string.h>

void watch_rules_init(struct watch_rules *wr, const struct rules_config *base)
{
    wr->live.th = base->th;
    wr->trend.th = base->th;
    wr->live.disabled = xcalloc(n_rules, sizeof(*wr->live.disabled));
    wr->trend.disabled = xcalloc(n_rules, sizeof(*wr->trend.disabled));
    for (size_t i = 0; i < n_rules; i++) {
        bool off = base->disabled && base->disabled[i], trend = rule_is_trend(rule_table[i]);

        wr->live.disabled[i] = off || trend;
        wr->trend.disabled[i] = off || !trend;
    }
}

void watch_rules_free(struct watch_rules *wr)
{
    free(wr->live.disabled);
    free(wr->trend.disabled);
    memset(wr, 0, sizeof(*wr));
}

struct history watch_recent(const struct history *h, int64_t window_ms)
{
    struct history r = *h;
    size_t k = h->n;

    while (k > 0 && h->samples[h->n - 1].t_ms - h->samples[k - 1].t_ms <= window_ms)
        k--;
    r.samples = h->samples + k;
    r.n = h->n - k;
    return r;
}

/* As the engine decides within one run: a finding of a rule f names, same GPU (and process). */
static bool yields(const struct finding *f, const struct findings *live)
{
    if (f->rule->yields_to == NULL)
        return false;
    for (size_t i = 0; i < live->n; i++) {
        const struct finding *o = &live->items[i];

        if (o->subject.gpu_index != f->subject.gpu_index ||
            (f->subject.pid >= 0 && o->subject.pid != f->subject.pid))
            continue;
        for (size_t k = 0; f->rule->yields_to[k] != NULL; k++) {
            if (strcmp(f->rule->yields_to[k], o->rule->id) == 0)
                return true;
        }
    }
    return false;
}

static char *dup_or_null(const char *s)
{
    return s ? xstrdup(s) : NULL;
}

static char **dup_list(char *const *v, size_t n)
{
    char **out = xcalloc(n ? n : 1, sizeof(*out));

    for (size_t i = 0; i < n; i++)
        out[i] = xstrdup(v[i]);
    return out;
}

/* A copy of a list of translations (finding.evidence_l, fix_l): NULL items stay NULL. */
static char **dup_list_l(char *const *v, size_t n)
{
    char **out;

    if (v == NULL)
        return NULL;
    out = xcalloc(n ? n : 1, sizeof(*out));
    for (size_t i = 0; i < n; i++)
        out[i] = dup_or_null(v[i]);
    return out;
}

/* Appends a deep copy of f to out. */
static void add_copy(struct findings *out, const struct finding *f)
{
    struct finding *d;

    xgrow(&out->items, &out->cap, out->n + 1, sizeof(*out->items));
    d = &out->items[out->n++];
    *d = *f;
    d->subject.gpu_uuid = dup_or_null(f->subject.gpu_uuid);
    d->subject.user = dup_or_null(f->subject.user);
    d->subject.command = dup_or_null(f->subject.command);
    d->subject.container = dup_or_null(f->subject.container);
    d->subject.object = dup_or_null(f->subject.object);
    d->subject.object_l = dup_or_null(f->subject.object_l);
    d->title = dup_or_null(f->title);
    d->title_l = dup_or_null(f->title_l);
    d->evidence = dup_list(f->evidence, f->n_evidence);
    d->evidence_l = dup_list_l(f->evidence_l, f->n_evidence);
    d->cap_evidence = f->n_evidence;
    d->fix = dup_list(f->fix, f->n_fix);
    d->fix_l = dup_list_l(f->fix_l, f->n_fix);
    d->cap_fix = f->n_fix;
    d->ack = finding_ack_dup(f->ack);
}

/* Appends f to out: the finding moves, out owns it now. */
static void take(struct findings *out, const struct finding *f)
{
    xgrow(&out->items, &out->cap, out->n + 1, sizeof(*out->items));
    out->items[out->n++] = *f;
}

void watch_trends(const struct snapshot *s, const struct history *full,
                  const struct watch_rules *wr, struct findings *out)
{
    rules_run(s, full, &wr->trend, out);
}

void watch_judge(const struct snapshot *s, const struct history *recent,
                 const struct findings *trends, const struct watch_rules *wr, struct findings *out)
{
    struct findings live = { 0 };

    rules_run(s, recent, &wr->live, &live);
    /* Both lists are ranked; by severity, the live findings first, then the trends. */
    for (int sev = SEV_CRITICAL; sev >= SEV_INFO; sev--) {
        for (size_t i = 0; i < live.n; i++) {
            if ((int)live.items[i].severity == sev)
                take(out, &live.items[i]);
        }
        for (size_t i = 0; trends && i < trends->n; i++) {
            if ((int)trends->items[i].severity == sev && !yields(&trends->items[i], &live))
                add_copy(out, &trends->items[i]);
        }
    }
    for (size_t i = 0; i < live.n_skips; i++) {
        xgrow(&out->skips, &out->cap_skips, out->n_skips + 1, sizeof(*out->skips));
        out->skips[out->n_skips++] = live.skips[i];
    }
    for (size_t i = 0; trends && i < trends->n_skips; i++) {
        xgrow(&out->skips, &out->cap_skips, out->n_skips + 1, sizeof(*out->skips));
        out->skips[out->n_skips] = trends->skips[i];
        out->skips[out->n_skips].reason = xstrdup(trends->skips[i].reason);
        out->skips[out->n_skips++].reason_l =
            trends->skips[i].reason_l ? xstrdup(trends->skips[i].reason_l) : NULL;
    }
    free(live.items);
    free(live.skips);
}

/* ---- completing a cheap cycle ---- */

#define SWAP(a, b)                                                                                 \
    do {                                                                                           \
        __typeof__(a) tmp_ = (a);                                                                  \
        (a) = (b);                                                                                 \
        (b) = tmp_;                                                                                \
    } while (0)

static bool ran(const struct snapshot *s, enum collector_id id)
{
    return s->collectors[id].state != CS_NOT_RUN;
}

static bool carry_from(const struct snapshot *s, const struct snapshot *prev, enum collector_id id)
{
    return !ran(s, id) && ran(prev, id);
}

void watch_carry(struct snapshot *s, struct snapshot *prev)
{
    if (prev == NULL)
        return;
    if (carry_from(s, prev, COLLECTOR_PROCS)) {
        SWAP(s->procs, prev->procs);
        SWAP(s->collectors[COLLECTOR_PROCS], prev->collectors[COLLECTOR_PROCS]);
    }
    if (carry_from(s, prev, COLLECTOR_PCIE)) {
        SWAP(s->pcie, prev->pcie);
        SWAP(s->collectors[COLLECTOR_PCIE], prev->collectors[COLLECTOR_PCIE]);
    }
    /* The driver and kernel-log collectors fill one section: they run together. */
    if (carry_from(s, prev, COLLECTOR_DRIVER) && !ran(s, COLLECTOR_KLOG)) {
        SWAP(s->driver, prev->driver);
        SWAP(s->collectors[COLLECTOR_DRIVER], prev->collectors[COLLECTOR_DRIVER]);
        SWAP(s->collectors[COLLECTOR_KLOG], prev->collectors[COLLECTOR_KLOG]);
    }
    if (carry_from(s, prev, COLLECTOR_STACK)) {
        SWAP(s->stack, prev->stack);
        SWAP(s->collectors[COLLECTOR_STACK], prev->collectors[COLLECTOR_STACK]);
    }
    if (carry_from(s, prev, COLLECTOR_FABRIC)) {
        SWAP(s->fabric, prev->fabric);
        SWAP(s->collectors[COLLECTOR_FABRIC], prev->collectors[COLLECTOR_FABRIC]);
    }
}

/* ---- new and cleared findings ---- */

static char *mark_key(const struct finding *f)
{
    char *subject = subject_key(&f->subject), *key = xasprintf("%s %s", f->rule->id, subject);

    free(subject);
    return key;
}

static struct watch_mark *mark_find(const struct watch_marks *m, const char *key)
{
    for (size_t i = 0; i < m->n; i++) {
        if (strcmp(m->items[i].key, key) == 0)
            return &m->items[i];
    }
    return NULL;
}

static void mark_free(struct watch_mark *k)
{
    free(k->key);
    free(k->id);
    free(k->title);
}

void watch_marks_update(struct watch_marks *m, const struct findings *f, int64_t now_ms)
{
    bool *seen = xcalloc(m->n + f->n + 1, sizeof(*seen));
    size_t k = 0;

    for (size_t i = 0; i < f->n; i++) {
        char *key = mark_key(&f->items[i]);
        struct watch_mark *mk = mark_find(m, key);

        if (mk == NULL) {
            xgrow(&m->items, &m->cap, m->n + 1, sizeof(*m->items));
            mk = &m->items[m->n++];
            memset(mk, 0, sizeof(*mk));
            mk->key = key;
            mk->id = xstrdup(f->items[i].rule->id);
            mk->since_ms = now_ms;
            mk->cleared_ms = -1;
        } else {
            free(key);
            if (mk->cleared_ms >= 0) { /* back: new again */
                mk->since_ms = now_ms;
                mk->cleared_ms = -1;
            }
        }
        free(mk->title);
        mk->title = xstrdup(f->items[i].title ? f->items[i].title : f->items[i].rule->title);
        mk->severity = f->items[i].severity;
        mk->gpu = f->items[i].subject.gpu_index;
        mk->pid = f->items[i].subject.pid;
        seen[mk - m->items] = true;
    }
    for (size_t i = 0; i < m->n; i++) {
        struct watch_mark *mk = &m->items[i];

        if (!seen[i] && mk->cleared_ms < 0)
            mk->cleared_ms = now_ms;
        if (mk->cleared_ms >= 0 && now_ms - mk->cleared_ms > WATCH_CLEARED_SHOW_MS) {
            mark_free(mk);
            continue;
        }
        m->items[k++] = *mk;
    }
    m->n = k;
    free(seen);
}

const struct watch_mark *watch_marks_find(const struct watch_marks *m, const struct finding *f)
{
    char *key = mark_key(f);
    const struct watch_mark *mk = mark_find(m, key);

    free(key);
    return mk;
}

void watch_marks_free(struct watch_marks *m)
{
    for (size_t i = 0; i < m->n; i++)
        mark_free(&m->items[i]);
    free(m->items);
    memset(m, 0, sizeof(*m));
}
