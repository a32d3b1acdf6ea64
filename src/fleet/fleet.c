/* The fleet's nodes, groups and errors: their lifetimes. */
#include "fleet/fleet.h"
#include "util/xalloc.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

const char *const fleet_reason_kind_names[] = { "metric", "finding", "profile", NULL };
const char *const fleet_verdict_names[] = { "ok", "outlier", "not-judged", NULL };

void fleet_init(struct fleet *fl, const struct fleet_opts *o)
{
    memset(fl, 0, sizeof(*fl));
    fl->opts = *o;
}

static void value_free(struct fleet_value *v)
{
    free(v->text);
}

void fleet_node_free(struct fleet_node *n)
{
    free(n->name);
    free(n->source);
    free(n->model);
    for (size_t i = 0; i < fleet_n_metrics; i++)
        value_free(&n->values[i]);
    free(n->values);
    for (size_t i = 0; i < n->n_findings; i++) {
        free(n->findings[i].id);
        free(n->findings[i].subject);
        free(n->findings[i].title);
        free(n->findings[i].title_l);
    }
    free(n->findings);
    profile_deviations_free(n->devs, n->n_devs);
    for (size_t i = 0; i < n->n_reasons; i++) {
        free(n->reasons[i].majority);
        free(n->reasons[i].text);
    }
    free(n->reasons);
}

void fleet_free(struct fleet *fl)
{
    for (size_t i = 0; i < fl->n; i++)
        fleet_node_free(&fl->nodes[i]);
    free(fl->nodes);
    for (size_t g = 0; g < fl->n_groups; g++) {
        struct fleet_group *gr = &fl->groups[g];

        free(gr->model);
        free(gr->nodes);
        for (size_t i = 0; gr->stats && i < fleet_n_metrics; i++)
            free(gr->stats[i].majority);
        free(gr->stats);
        for (size_t i = 0; i < gr->n_common; i++)
            free(gr->common[i].id);
        free(gr->common);
    }
    free(fl->groups);
    for (size_t i = 0; i < fl->n_errors; i++) {
        free(fl->errors[i].source);
        free(fl->errors[i].message);
    }
    free(fl->errors);
    for (size_t i = 0; i < fl->duplicates; i++) {
        free(fl->dups[i].name);
        free(fl->dups[i].source);
        free(fl->dups[i].kept);
    }
    free(fl->dups);
    free(fl->prometheus);
    memset(fl, 0, sizeof(*fl));
}

void fleet_error(struct fleet *fl, const char *source, const char *fmt, ...)
{
    va_list ap;
    struct fleet_error *e;

    xgrow(&fl->errors, &fl->cap_errors, fl->n_errors + 1, sizeof(*fl->errors));
    e = &fl->errors[fl->n_errors++];
    e->source = xstrdup(source);
    va_start(ap, fmt);
    e->message = xvasprintf(fmt, ap);
    va_end(ap);
}

void fleet_node_init(struct fleet_node *n, const char *name, const char *source)
{
    memset(n, 0, sizeof(*n));
    n->name = xstrdup(name);
    n->source = xstrdup(source);
    n->check_status = -1;
    n->severity = -1;
    n->values = xcalloc(fleet_n_metrics, sizeof(*n->values));
    for (size_t i = 0; i < fleet_n_metrics; i++)
        n->values[i].gpu = -1;
}

struct fleet_node *fleet_push_node(struct fleet *fl, const struct fleet_node *n)
{
    xgrow(&fl->nodes, &fl->cap, fl->n + 1, sizeof(*fl->nodes));
    fl->nodes[fl->n] = *n;
    return &fl->nodes[fl->n++];
}

struct fleet_node *fleet_add_node(struct fleet *fl, const char *name, const char *source)
{
    struct fleet_node n;

    fleet_node_init(&n, name, source);
    return fleet_push_node(fl, &n);
}
