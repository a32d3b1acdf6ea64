/*
 * The judgement: nodes grouped by GPU model; within a group large enough, each figure of each
 * node against the group's (median and MAD for numbers, the majority for levels and texts), each
 * finding against how many nodes share it; every node against the profile of its model. A node
 * with a reason is an outlier; outliers are ranked, the most serious first.
 */
#include "fleet/fleet.h"
#include "util/xalloc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- groups ---- */

static int cmp_by_model(const void *a, const void *b, void *ctx)
{
    const struct fleet *fl = ctx;
    const struct fleet_node *x = &fl->nodes[*(const size_t *)a];
    const struct fleet_node *y = &fl->nodes[*(const size_t *)b];
    int c = strcmp(x->model, y->model);

    return c ? c : strcmp(x->name, y->name);
}

static void make_groups(struct fleet *fl)
{
    size_t *order = xcalloc(fl->n ? fl->n : 1, sizeof(*order));

    for (size_t i = 0; i < fl->n; i++)
        order[i] = i;
    qsort_r(order, fl->n, sizeof(*order), cmp_by_model, fl);
    fl->groups = xcalloc(fl->n ? fl->n : 1, sizeof(*fl->groups));
    for (size_t i = 0; i < fl->n; i++) {
        struct fleet_node *n = &fl->nodes[order[i]];
        struct fleet_group *g;

        if (fl->n_groups == 0 || strcmp(fl->groups[fl->n_groups - 1].model, n->model) != 0) {
            size_t end = i + 1;

            /* the model's nodes follow each other in order: the group holds just them */
            while (end < fl->n && strcmp(fl->nodes[order[end]].model, n->model) == 0)
                end++;
            g = &fl->groups[fl->n_groups++];
            g->model = xstrdup(n->model);
            g->nodes = xcalloc(end - i, sizeof(*g->nodes));
        }
        g = &fl->groups[fl->n_groups - 1];
        g->nodes[g->n++] = order[i];
        n->group = fl->n_groups - 1;
    }
    for (size_t k = 0; k < fl->n_groups; k++)
        fl->groups[k].judged = fl->groups[k].n >= fl->opts.min_group;
    free(order);
}

/* ---- each figure of a group ---- */

static void level_text(char *buf, size_t size, int m, const struct fleet_value *v)
{
    if (fleet_metrics[m].kind == FLEET_TEXT)
        snprintf(buf, size, "%s", v->text ? v->text : "");
    else
        snprintf(buf, size, "%.10g", v->num);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void group_stat(const struct fleet *fl, const struct fleet_group *g, int m,
                       struct fleet_stat *st)
{
    const struct fleet_metric *mt = &fleet_metrics[m];

    memset(st, 0, sizeof(*st));
    if (mt->kind == FLEET_NUMBER) {
        double *v = xcalloc(g->n ? g->n : 1, sizeof(*v));

        for (size_t i = 0; i < g->n; i++) {
            const struct fleet_value *x = &fl->nodes[g->nodes[i]].values[m];

            if (x->known && isfinite(x->num))
                v[st->n++] = x->num;
        }
        if (st->n > 0)
            fleet_spread(v, st->n, &st->median, &st->mad);
        free(v);
    } else {
        char **t = xcalloc(g->n ? g->n : 1, sizeof(*t));
        size_t best = 0, at = 0;

        for (size_t i = 0; i < g->n; i++) {
            const struct fleet_value *x = &fl->nodes[g->nodes[i]].values[m];
            char buf[512];

            if (!x->known)
                continue;
            level_text(buf, sizeof(buf), m, x);
            t[st->n++] = xstrdup(buf);
        }
        qsort(t, st->n, sizeof(*t), cmp_str);
        for (size_t i = 0; i < st->n; i = at) {
            for (at = i; at < st->n && strcmp(t[at], t[i]) == 0; at++)
                ;
            if (at - i > best) {
                best = at - i;
                free(st->majority);
                st->majority = xstrdup(t[i]);
            }
        }
        st->agree = best;
        if (2 * best <= st->n) { /* no value has more than half: no majority */
            free(st->majority);
            st->majority = NULL;
        }
        for (size_t i = 0; i < st->n; i++)
            free(t[i]);
        free(t);
    }
}

/* How many of the group's nodes have a finding of each rule (warning or worse). */
static void group_common(const struct fleet *fl, struct fleet_group *g)
{
    size_t cap = 0;

    for (size_t i = 0; i < g->n; i++) {
        const struct fleet_node *n = &fl->nodes[g->nodes[i]];

        for (size_t k = 0; k < n->n_findings; k++) {
            const char *id = n->findings[k].id;
            bool seen = false;
            size_t c;

            if (n->findings[k].severity < SEV_WARNING)
                continue;
            for (size_t j = 0; j < k && !seen; j++)
                seen = n->findings[j].severity >= SEV_WARNING && strcmp(n->findings[j].id, id) == 0;
            if (seen)
                continue; /* count a node once */
            for (c = 0; c < g->n_common && strcmp(g->common[c].id, id) != 0; c++)
                ;
            if (c == g->n_common) {
                xgrow(&g->common, &cap, g->n_common + 1, sizeof(*g->common));
                g->common[g->n_common].id = xstrdup(id);
                g->common[g->n_common++].nodes = 0;
            }
            g->common[c].nodes++;
        }
    }
}

static size_t common_count(const struct fleet_group *g, const char *id)
{
    for (size_t c = 0; c < g->n_common; c++) {
        if (strcmp(g->common[c].id, id) == 0)
            return g->common[c].nodes;
    }
    return 0;
}

static int cmp_common(const void *a, const void *b)
{
    const struct fleet_common *x = a, *y = b;

    if (x->nodes != y->nodes)
        return x->nodes > y->nodes ? -1 : 1;
    return strcmp(x->id, y->id);
}

/* ---- each node ---- */

static struct fleet_reason *add_reason(struct fleet_node *n, size_t *cap,
                                       enum fleet_reason_kind kind, enum severity sev)
{
    struct fleet_reason *r;

    xgrow(&n->reasons, cap, n->n_reasons + 1, sizeof(*n->reasons));
    r = &n->reasons[n->n_reasons++];
    memset(r, 0, sizeof(*r));
    r->kind = kind;
    r->severity = sev;
    r->metric = -1;
    return r;
}

/* Whether the node's figure m sets it apart from its group; adds the reason. */
static void judge_metric(const struct fleet *fl, struct fleet_node *n, size_t *cap, int m,
                         const struct fleet_stat *st)
{
    const struct fleet_metric *mt = &fleet_metrics[m];
    const struct fleet_value *v = &n->values[m];
    struct fleet_reason *r;

    /* a figure known on fewer nodes than a group needs is not judged either (bench, NVLink,
     * InfiniBand figures are often on a few nodes only) */
    if (!v->known || st->n < fl->opts.min_group)
        return;
    if (mt->kind == FLEET_NUMBER) {
        double dev = v->num - st->median, z = st->mad > 0 ? dev / st->mad : NAN;

        if (st->n < 2 || (mt->bad == FLEET_BAD_LOW && dev >= 0) ||
            (mt->bad == FLEET_BAD_HIGH && dev <= 0) || fabs(dev) < mt->min_delta)
            return;
        /* MAD 0: most nodes have the median exactly, and min_delta alone decides */
        if (st->mad > 0 && fabs(z) < fl->opts.z)
            return;
        r = add_reason(n, cap, FLEET_BY_METRIC, mt->critical ? SEV_CRITICAL : SEV_WARNING);
        r->z_valid = st->mad > 0;
        r->z = z;
        r->median = st->median;
        r->mad = st->mad;
        r->of = st->n;
    } else {
        char buf[512];
        bool worse;

        if (st->majority == NULL)
            return;
        level_text(buf, sizeof(buf), m, v);
        if (strcmp(buf, st->majority) == 0)
            return;
        worse = mt->kind == FLEET_LEVEL && mt->bad == FLEET_BAD_LOW && v->num < atof(st->majority);
        r = add_reason(n, cap, FLEET_BY_METRIC, mt->critical && worse ? SEV_CRITICAL : SEV_WARNING);
        r->majority = xstrdup(st->majority);
        r->agree = st->agree;
        r->of = st->n;
    }
    r->metric = m;
    r->value = v;
}

static void judge_findings(const struct fleet_group *g, struct fleet_node *n, size_t *cap)
{
    for (size_t k = 0; k < n->n_findings; k++) {
        const struct fleet_finding *f = &n->findings[k];
        size_t shared = common_count(g, f->id);
        bool dup = false;
        struct fleet_reason *r;

        if (f->severity < SEV_WARNING || 2 * shared >= g->n)
            continue;
        for (size_t i = 0; i < n->n_reasons && !dup; i++) {
            r = &n->reasons[i];
            if (r->kind == FLEET_BY_FINDING && strcmp(r->id, f->id) == 0) {
                dup = true;
                if (f->severity > r->severity) { /* the worst of the node's findings of it */
                    r->severity = f->severity;
                    free(r->text);
                    r->text = xstrdup(f->title);
                    r->finding = f;
                }
            }
        }
        if (dup)
            continue;
        r = add_reason(n, cap, FLEET_BY_FINDING, f->severity);
        r->id = f->id;
        r->text = xstrdup(f->title);
        r->finding = f;
        r->agree = shared;
        r->of = g->n;
    }
}

static void judge_profile(struct fleet_node *n, size_t *cap)
{
    for (size_t k = 0; k < n->n_devs; k++) {
        const struct profile_deviation *d = &n->devs[k];
        const struct profile_key_def *def = &profile_keys[d->key];
        struct fleet_reason *r;

        if (d->outcome != PROFILE_DEVIATES)
            continue;
        r = add_reason(n, cap, FLEET_BY_PROFILE,
                       d->key == PK_GPU_COUNT && d->fewer ? SEV_CRITICAL : SEV_WARNING);
        r->id = def->name;
        r->dev = d;
        if (d->gpu >= 0)
            r->text = xasprintf("GPU %d %s %s, the profile (%s) expects %s%s", (int)d->gpu,
                                def->name, d->found, n->profile,
                                def->cmp == PROFILE_AT_LEAST ? "at least " : "", d->expected);
        else
            r->text =
                xasprintf("%s %s, the profile (%s) expects %s%s", def->name, d->found, n->profile,
                          def->cmp == PROFILE_AT_LEAST ? "at least " : "", d->expected);
    }
}

static double reason_weight(const struct fleet_reason *r)
{
    if (r->kind == FLEET_BY_METRIC && fleet_metrics[r->metric].kind == FLEET_NUMBER)
        return r->z_valid ? fmin(fabs(r->z), 999) : 999;
    return 10;
}

static int cmp_reason(const void *a, const void *b)
{
    const struct fleet_reason *x = a, *y = b;
    double wx = reason_weight(x), wy = reason_weight(y);

    if (x->severity != y->severity)
        return x->severity > y->severity ? -1 : 1;
    if (x->kind != y->kind)
        return x->kind > y->kind ? -1 : 1; /* profile, then finding, then figures */
    if (wx != wy)
        return wx > wy ? -1 : 1;
    return x->metric - y->metric;
}

static int cmp_rank(const void *a, const void *b, void *ctx)
{
    const struct fleet *fl = ctx;
    const struct fleet_node *x = &fl->nodes[*(const size_t *)a];
    const struct fleet_node *y = &fl->nodes[*(const size_t *)b];

    /* severity on its own first: a score could let 1000 warnings outweigh a critical */
    if (x->severity != y->severity)
        return x->severity > y->severity ? -1 : 1;
    if (x->score != y->score)
        return x->score > y->score ? -1 : 1;
    return strcmp(x->name, y->name);
}

void fleet_judge(struct fleet *fl)
{
    size_t *ranked, n_ranked = 0;

    make_groups(fl);
    for (size_t k = 0; k < fl->n_groups; k++) {
        struct fleet_group *g = &fl->groups[k];

        g->stats = xcalloc(fleet_n_metrics, sizeof(*g->stats));
        for (size_t m = 0; m < fleet_n_metrics; m++)
            group_stat(fl, g, (int)m, &g->stats[m]);
        group_common(fl, g);
        if (g->n_common > 1)
            qsort(g->common, g->n_common, sizeof(*g->common), cmp_common);
    }
    ranked = xcalloc(fl->n ? fl->n : 1, sizeof(*ranked));
    for (size_t i = 0; i < fl->n; i++) {
        struct fleet_node *n = &fl->nodes[i];
        const struct fleet_group *g = &fl->groups[n->group];
        size_t cap = 0;
        double most = 0;

        judge_profile(n, &cap);
        if (g->judged) {
            for (size_t m = 0; m < fleet_n_metrics; m++)
                judge_metric(fl, n, &cap, (int)m, &g->stats[m]);
            judge_findings(g, n, &cap);
        }
        if (n->n_reasons > 1)
            qsort(n->reasons, n->n_reasons, sizeof(*n->reasons), cmp_reason);
        for (size_t r = 0; r < n->n_reasons; r++)
            most = fmax(most, reason_weight(&n->reasons[r]));
        n->severity = n->n_reasons ? (int)n->reasons[0].severity : -1;
        n->verdict = n->n_reasons ? FLEET_OUTLIER : g->judged ? FLEET_OK : FLEET_NOT_JUDGED;
        n->score = n->n_reasons ? (n->severity + 1) * 1e6 + (double)n->n_reasons * 1e3 + most : 0;
        if (n->n_reasons)
            ranked[n_ranked++] = i;
    }
    qsort_r(ranked, n_ranked, sizeof(*ranked), cmp_rank, fl);
    for (size_t r = 0; r < n_ranked; r++)
        fl->nodes[ranked[r]].rank = r + 1;
    free(ranked);
}

size_t fleet_outliers(const struct fleet *fl, size_t *critical)
{
    size_t n = 0;

    *critical = 0;
    for (size_t i = 0; i < fl->n; i++) {
        n += fl->nodes[i].verdict == FLEET_OUTLIER;
        *critical += fl->nodes[i].severity == SEV_CRITICAL;
    }
    return n;
}

int fleet_status(const struct fleet *fl)
{
    size_t critical, n = fleet_outliers(fl, &critical);

    if (critical > 0)
        return 2;
    if (fl->n == 0 || fl->n_errors > 0)
        return 3;
    return n > 0 ? 1 : 0;
}
