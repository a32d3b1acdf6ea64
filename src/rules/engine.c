/*
 * The engine: builds the facts once (per-GPU history views, who holds each GPU, each process's
 * use and verdict, a pid index: src/facts), runs each rule of the table over them, drops findings
 * made redundant by a more specific one, and ranks.
 */
#include "nvml/nvml-abi.h"
#include "rules/rule-impl.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

const char *const severity_names[] = { "info", "warning", "critical", NULL };
const char *const category_names[] = { "health", "stack", "memory", "process", "throughput",
                                       "clocks", "pcie",  "fabric", NULL };

const struct rule *rule_find(const char *id)
{
    for (size_t i = 0; i < n_rules; i++) {
        if (strcmp(rule_table[i]->id, id) == 0)
            return rule_table[i];
    }
    return NULL;
}

size_t rule_position(const struct rule *r)
{
    for (size_t i = 0; i < n_rules; i++) {
        if (rule_table[i] == r)
            return i;
    }
    fatal("rule %s is not in the table", r->id);
}

/* ---- running ---- */

static void subject_free(struct subject *s)
{
    free(s->gpu_uuid);
    free(s->user);
    free(s->command);
    free(s->container);
    free(s->object);
    free(s->object_l);
}

static void finding_free(struct finding *f)
{
    subject_free(&f->subject);
    free(f->title);
    free(f->title_l);
    for (size_t i = 0; i < f->n_evidence; i++) {
        free(f->evidence[i]);
        if (f->evidence_l != NULL)
            free(f->evidence_l[i]);
    }
    free(f->evidence);
    free(f->evidence_l);
    for (size_t i = 0; i < f->n_fix; i++) {
        free(f->fix[i]);
        if (f->fix_l != NULL)
            free(f->fix_l[i]);
    }
    free(f->fix);
    free(f->fix_l);
    if (f->ack) {
        free(f->ack->note);
        free(f->ack->by);
        free(f->ack);
    }
}

void findings_free(struct findings *f)
{
    for (size_t i = 0; i < f->n; i++)
        finding_free(&f->items[i]);
    free(f->items);
    for (size_t i = 0; i < f->n_skips; i++) {
        free(f->skips[i].reason);
        free(f->skips[i].reason_l);
    }
    free(f->skips);
    memset(f, 0, sizeof(*f));
}

/*
 * A finding yields when a rule it names found something about the same GPU (and, when the
 * finding is about a process, the same process): the more specific finding explains it.
 */
static bool yields(const struct finding *f, const struct findings *all)
{
    if (f->rule->yields_to == NULL)
        return false;
    for (size_t i = 0; i < all->n; i++) {
        const struct finding *o = &all->items[i];

        if (o == f || o->subject.gpu_index != f->subject.gpu_index ||
            (f->subject.pid >= 0 && o->subject.pid != f->subject.pid))
            continue;
        for (size_t k = 0; f->rule->yields_to[k] != NULL; k++) {
            if (strcmp(f->rule->yields_to[k], o->rule->id) == 0)
                return true;
        }
    }
    return false;
}

static void drop_redundant(struct findings *out)
{
    bool *drop = xcalloc(out->n ? out->n : 1, sizeof(*drop));
    size_t n = 0;

    /* Decide first, then compact: a dropped finding may still be what another yields to. */
    for (size_t i = 0; i < out->n; i++)
        drop[i] = yields(&out->items[i], out);
    for (size_t i = 0; i < out->n; i++) {
        if (drop[i])
            finding_free(&out->items[i]);
        else
            out->items[n++] = out->items[i];
    }
    out->n = n;
    free(drop);
}

static int cmp_str(const char *a, const char *b)
{
    return strcmp(a ? a : "", b ? b : "");
}

static int cmp_finding(const void *a, const void *b)
{
    const struct finding *x = a, *y = b;
    size_t px, py;

    if (x->severity != y->severity)
        return x->severity > y->severity ? -1 : 1;
    if (x->impact != y->impact)
        return x->impact > y->impact ? -1 : 1;
    px = rule_position(x->rule);
    py = rule_position(y->rule);
    if (px != py)
        return px < py ? -1 : 1;
    if (x->subject.gpu_index != y->subject.gpu_index)
        return x->subject.gpu_index < y->subject.gpu_index ? -1 : 1;
    if (x->subject.pid != y->subject.pid)
        return x->subject.pid < y->subject.pid ? -1 : 1;
    return cmp_str(x->subject.object, y->subject.object);
}

/* ---- causes and consequences ---- */

const char *const link_scope_names[] = { N_("same GPU"), N_("same process"),
                                         N_("another process on the same GPU"),
                                         N_("anywhere on the host"), NULL };

const struct rule_link *rule_link_find(const struct rule *cause, const struct rule *consequence)
{
    for (size_t k = 0; cause->explains != NULL && cause->explains[k].rule_id != NULL; k++) {
        if (strcmp(cause->explains[k].rule_id, consequence->id) == 0)
            return &cause->explains[k];
    }
    return NULL;
}

/* Same GPU: the same index, or, when neither names one, the same object (a PCI address). */
static bool same_gpu(const struct subject *a, const struct subject *b)
{
    if (a->gpu_index >= 0 || b->gpu_index >= 0)
        return a->gpu_index == b->gpu_index;
    if (a->object == NULL || b->object == NULL)
        return false;
    return strcmp(a->object, b->object) == 0 || driver_pci_same(a->object, b->object);
}

static bool scope_holds(enum link_scope scope, const struct subject *c, const struct subject *e)
{
    switch (scope) {
    case LINK_SAME_GPU:
        return same_gpu(c, e);
    case LINK_SAME_PROCESS:
        return c->pid >= 0 && c->pid == e->pid;
    case LINK_OTHER_PROCESS_SAME_GPU:
        return c->gpu_index >= 0 && c->gpu_index == e->gpu_index && c->pid != e->pid;
    default:
        return true;
    }
}

/* Whether finding c explains finding e: a link of c's rule names e's rule and holds for both. */
static bool link_holds(const struct finding *c, const struct finding *e)
{
    const struct rule_link *l = c->rule->explains;

    if (c == e || l == NULL)
        return false;
    for (size_t k = 0; l[k].rule_id != NULL; k++) {
        if (strcmp(l[k].rule_id, e->rule->id) != 0)
            continue;
        if (l[k].when != NULL && (k >= 64 || !((c->explains_on >> k) & 1u)))
            continue;
        if (scope_holds(l[k].scope, &c->subject, &e->subject))
            return true;
    }
    return false;
}

/* Whether e is c or one of c's causes: linking c under e would close a circle. */
static bool cause_chain_has(const struct findings *out, size_t c, size_t e)
{
    for (size_t at = c, steps = 0; steps <= out->n; steps++) {
        if (at == e)
            return true;
        if (out->items[at].cause == 0)
            return false;
        at = out->items[at].cause - 1;
    }
    return true;
}

/*
 * Gives each finding at most one cause: the first, in ranking order, that explains it without
 * closing a circle. items are sorted by cmp_finding, so the choice is deterministic.
 */
static void link_causes(struct findings *out)
{
    for (size_t i = 0; i < out->n; i++)
        out->items[i].cause = 0;
    for (size_t i = 0; i < out->n; i++) {
        for (size_t j = 0; j < out->n; j++) {
            if (link_holds(&out->items[j], &out->items[i]) && !cause_chain_has(out, j, i)) {
                out->items[i].cause = (uint32_t)(j + 1);
                break;
            }
        }
    }
}

struct cause_group {
    size_t root; /* position of the root cause in the ranking by cmp_finding */
    enum severity severity;
    double impact; /* the worst of the group */
};

static int cmp_group(const void *a, const void *b)
{
    const struct cause_group *x = a, *y = b;

    if (x->severity != y->severity)
        return x->severity > y->severity ? -1 : 1;
    if (x->impact != y->impact)
        return x->impact > y->impact ? -1 : 1;
    return x->root < y->root ? -1 : x->root > y->root;
}

/* Appends item i and, depth first, what it explains (in ranking order) to order. */
static void emit_group(const struct findings *out, size_t i, size_t *order, size_t *n)
{
    order[(*n)++] = i;
    for (size_t j = 0; j < out->n; j++) {
        if (out->items[j].cause == i + 1)
            emit_group(out, j, order, n);
    }
}

/*
 * Ranks by cause: each root cause with everything it explains, the groups by the worst severity
 * and impact in them (a cause ranks at least as high as what it explains), each cause before its
 * consequences; causes are renumbered to the new positions.
 */
static void order_by_cause(struct findings *out)
{
    if (out->n < 2)
        return;
    size_t n = out->n, n_groups = 0, n_order = 0;
    struct cause_group *groups = xcalloc(n ? n : 1, sizeof(*groups));
    size_t *order = xcalloc(n ? n : 1, sizeof(*order)), *pos = xcalloc(n ? n : 1, sizeof(*pos));
    struct finding *items = xcalloc(n ? n : 1, sizeof(*items));

    for (size_t i = 0; i < n; i++) {
        if (out->items[i].cause == 0)
            groups[n_groups++] =
                (struct cause_group){ i, out->items[i].severity, out->items[i].impact };
    }
    for (size_t i = 0; i < n; i++) {
        size_t r = i;

        while (out->items[r].cause != 0)
            r = out->items[r].cause - 1;
        for (size_t g = 0; g < n_groups; g++) {
            if (groups[g].root != r)
                continue;
            if (out->items[i].severity > groups[g].severity ||
                (out->items[i].severity == groups[g].severity &&
                 out->items[i].impact > groups[g].impact)) {
                groups[g].severity = out->items[i].severity;
                groups[g].impact = out->items[i].impact;
            }
        }
    }
    if (n_groups > 1)
        qsort(groups, n_groups, sizeof(*groups), cmp_group);
    for (size_t g = 0; g < n_groups; g++)
        emit_group(out, groups[g].root, order, &n_order);
    if (n_order != n)
        fatal("ranking by cause lost findings (%zu of %zu)", n_order, n);
    for (size_t k = 0; k < n; k++)
        pos[order[k]] = k;
    for (size_t k = 0; k < n; k++) {
        items[k] = out->items[order[k]];
        if (items[k].cause != 0)
            items[k].cause = (uint32_t)(pos[items[k].cause - 1] + 1);
    }
    memcpy(out->items, items, n * sizeof(*items));
    free(items);
    free(pos);
    free(order);
    free(groups);
}

const struct finding *finding_cause(const struct findings *f, size_t i)
{
    /* A copy of one finding (watch's detail view) keeps a cause it no longer holds. */
    if (i >= f->n || f->items[i].cause == 0 || f->items[i].cause > f->n ||
        f->items[i].cause - 1 == i)
        return NULL;
    return &f->items[f->items[i].cause - 1];
}

bool finding_fix_in_cause(const struct findings *f, size_t i)
{
    const struct finding *c = finding_cause(f, i);
    const struct rule_link *l = c ? rule_link_find(c->rule, f->items[i].rule) : NULL;

    return l != NULL && l->fix == LINK_FIX_IN_CAUSE;
}

size_t finding_n_explained(const struct findings *f, size_t i)
{
    size_t n = 0;

    for (size_t j = 0; j < f->n; j++)
        n += finding_cause(f, j) == &f->items[i];
    return n;
}

void rules_run(const struct snapshot *s, const struct history *h, const struct rules_config *cfg,
               struct findings *out)
{
    struct facts *facts = facts_create(s, h, &cfg->th);
    struct rule_ctx ctx = { .facts = facts };

    for (size_t i = 0; i < n_rules; i++) {
        if (cfg->disabled && cfg->disabled[i])
            continue;
        ctx.rule = rule_table[i];
        rule_table[i]->check(&ctx, out);
    }
    facts_free(facts);
    drop_redundant(out);
    if (out->n > 1)
        qsort(out->items, out->n, sizeof(*out->items), cmp_finding);
    link_causes(out);
    order_by_cause(out);
    findings_name_gpus_by_id(s, out);
    rules_apply_acks(s, out);
}

size_t findings_count(const struct findings *f, enum severity sev)
{
    size_t n = 0;

    for (size_t i = 0; i < f->n; i++)
        n += f->items[i].severity == sev && f->items[i].ack == NULL;
    return n;
}

int findings_worst(const struct findings *f)
{
    int worst = -1;

    for (size_t i = 0; i < f->n; i++) {
        if (f->items[i].ack == NULL && (int)f->items[i].severity > worst)
            worst = (int)f->items[i].severity;
    }
    return worst;
}

char *rules_cannot_check(const struct snapshot *s, const struct findings *f, bool people)
{
    const struct nvml_system *n = &s->nvml;
    const char *why, *lib;

    if (s->n_gpus > 0 || findings_worst(f) == SEV_CRITICAL)
        return NULL;
    if (!n->attempted)
        return xstrdup(L_(people, "NVML was not queried, so nothing is known about GPUs."));
    if (n->load_error != 0 && n->load_error != NVML_ERROR_LIBRARY_NOT_FOUND)
        return xasprintf(L_(people, "No GPU could be checked: %s."),
                         n->load_detail ? n->load_detail
                                        : L_(people, "the NVML library cannot be used"));
    if (n->load_error != 0) {
        lib = n->library ? n->library : "libnvidia-ml.so.1";
        if (s->pcie.n_gpus == 0 && s->collectors[COLLECTOR_PCIE].state == CS_OK)
            return xasprintf(L_(people,
                                "No NVIDIA GPU found: the NVIDIA driver's NVML library (%s) is not "
                                "installed and no NVIDIA GPU is on the PCI bus."),
                             lib);
        return xasprintf(
            L_(people,
               "No NVIDIA GPU found: the NVIDIA driver's NVML library (%s) is not installed."),
            lib);
    }
    if (n->init_rc != 0) {
        why = n->init_error ? n->init_error : nvml_rc_name(n->init_rc);
        return xasprintf(L_(people, "NVML could not start (%s), so nothing is known about GPUs."),
                         why ? why : L_(people, "unknown error"));
    }
    if (n->device_count_rc == 0 && n->device_count == 1)
        return xstrdup(L_(people, "NVML counts 1 GPU, but it was not read, so it could not be "
                                  "checked."));
    if (n->device_count_rc == 0 && n->device_count > 0)
        return xasprintf(L_(people, "NVML counts %u GPUs, but none of them was read, so none "
                                    "could be checked."),
                         n->device_count);
    return xstrdup(L_(people, "NVML answered but reports no GPU on this machine."));
}

int rules_exit_status(const struct snapshot *s, const struct findings *f)
{
    char *why = rules_cannot_check(s, f, false);

    if (why != NULL) {
        free(why);
        return 3;
    }
    switch (findings_worst(f)) {
    case SEV_CRITICAL:
        return 2;
    case SEV_WARNING:
        return 1;
    default:
        return 0;
    }
}

char *subject_key(const struct subject *s)
{
    char buf[512];
    size_t len = 0;

    buf[0] = '\0';
    if (s->gpu_index >= 0)
        len += (size_t)snprintf(buf + len, sizeof(buf) - len, "gpu=%d", (int)s->gpu_index);
    if (s->pid >= 0 && len < sizeof(buf))
        len +=
            (size_t)snprintf(buf + len, sizeof(buf) - len, "%spid=%d", len ? " " : "", (int)s->pid);
    if (s->object && len < sizeof(buf))
        len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%sobject=%s", len ? " " : "",
                                s->object);
    return xstrdup(len ? buf : "host");
}
