/*
 * The fleet as text (a row per node, then the outliers with their evidence beside the group's)
 * and as JSON (docs/fleet.md, "gpudoctor.fleet/1").
 */
#include "fleet/fleet.h"
#include "render/format.h"
#include "util/i18n.h"
#include "util/strutil.h"
#include "util/xalloc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void fleet_value_text(char *buf, size_t size, int m, const struct fleet_value *v)
{
    const struct fleet_metric *mt = &fleet_metrics[m];

    if (!v->known)
        snprintf(buf, size, "?");
    else if (mt->kind == FLEET_TEXT)
        snprintf(buf, size, "%s", v->text ? v->text : "");
    else
        snprintf(buf, size, "%.10g%s%s", v->num, *mt->unit ? " " : "", mt->unit);
}

/*
 * The columns s takes on a terminal: a Chinese character two (render_width). In ASCII (--ascii,
 * a locale that is not UTF-8) one a character, as its ASCII copy (render_out_end) mostly prints.
 */
static size_t columns(const char *s, const struct render_opts *ro)
{
    size_t n = 0;

    if (!ro->ascii)
        return render_width(s, strlen(s));
    for (; *s; s++)
        n += ((unsigned char)*s & 0xc0) != 0x80;
    return n;
}

/* s, cut to w columns (with "…" when cut), then padded to w. */
static void cell(FILE *out, const char *s, size_t w, const struct render_opts *ro)
{
    size_t c = columns(s, ro);

    if (c > w) {
        size_t keep = 0, bytes = 0, n = strlen(s);

        while (s[bytes]) {
            size_t cols, len = render_char(s + bytes, n - bytes, &cols);

            if (ro->ascii) /* one a character, as columns() counts */
                cols = 1;

            if (keep + cols > w - 1)
                break;
            bytes += len;
            keep += cols;
        }
        fprintf(out, "%.*s…%*s", (int)bytes, s, (int)(w - 1 - keep), "");
        return;
    }
    fprintf(out, "%s%*s", s, (int)(w - c), "");
}

/* s, then blanks up to w columns (none when s is as wide or wider). */
static void pad(FILE *out, const char *s, size_t w, const struct render_opts *ro)
{
    size_t c = columns(s, ro);

    fprintf(out, "%s%*s", s, c < w ? (int)(w - c) : 0, "");
}

/* TRANSLATORS: the severity of a line of evidence in `gpudoctor fleet`: at most 8 columns (4
   Chinese characters) */
static const char *const severity_words[] = { N_("info"), N_("warning"), N_("critical") };

/* A node's own check in the node table: at most 9 columns (its column's width). */
static const char *check_text(int status, const struct render_opts *ro)
{
    /* TRANSLATORS: the CHECK column of `gpudoctor fleet`: at most 9 columns */
    static const char *const words[] = { N_("healthy"), N_("warning"), N_("critical"),
                                         N_("unknown") };
    const char *w;

    if (status < 0)
        return "?";
    w = _(words[status > 3 ? 3 : status]);
    return columns(w, ro) <= 9 ? w : render_status(status);
}

static const char *sev_color(const struct render_opts *ro, int sev)
{
    return sev == SEV_CRITICAL ? render_red(ro) : sev == SEV_WARNING ? render_yellow(ro) : "";
}

static const char *verdict_text(const struct fleet_node *n)
{
    if (n->verdict == FLEET_OUTLIER)
        return n->severity == SEV_CRITICAL ? _("outlier (critical)") : _("outlier");
    return n->verdict == FLEET_OK ? _("ok") : _("not judged");
}

/* A figure's unit for people: the words among them translated ("lanes"), symbols as they are. */
static const char *unit_text(const char *unit)
{
    /* TRANSLATORS: units of fleet's figures after a number: "16 lanes", "18 links", "4 ports" */
    static const char *const words[] = { N_("lanes"), N_("links"), N_("ports") };

    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
        if (strcmp(unit, words[i]) == 0)
            return _(words[i]);
    }
    return unit;
}

void fleet_value_people(char *buf, size_t size, int m, const struct fleet_value *v)
{
    const struct fleet_metric *mt = &fleet_metrics[m];

    if (!v->known || mt->kind == FLEET_TEXT)
        fleet_value_text(buf, size, m, v);
    else
        snprintf(buf, size, "%.10g%s%s", v->num, *mt->unit ? " " : "", unit_text(mt->unit));
}

char *fleet_deviation_people(const struct fleet_node *n, const struct fleet_reason *r)
{
    const struct profile_deviation *d = r->dev;
    bool at_least = profile_keys[d->key].cmp == PROFILE_AT_LEAST;

    if (d->gpu >= 0 && at_least)
        /* TRANSLATORS: a deviation from the --profile of a key that sets a minimum (a PCIe
           link's width): the GPU, the key, the value found, the profile's file, the minimum */
        return xasprintf(_("GPU %d %s %s, the profile (%s) expects at least %s"), (int)d->gpu,
                         r->id, d->found, n->profile, d->expected);
    if (d->gpu >= 0)
        /* TRANSLATORS: a deviation from the --profile: the GPU, the key, the value found, the
           profile's file, the value it expects */
        return xasprintf(_("GPU %d %s %s, the profile (%s) expects %s"), (int)d->gpu, r->id,
                         d->found, n->profile, d->expected);
    if (at_least)
        /* TRANSLATORS: the same for the node as a whole, of a key that sets a minimum */
        return xasprintf(_("%s %s, the profile (%s) expects at least %s"), r->id, d->found,
                         n->profile, d->expected);
    /* TRANSLATORS: the same for the node as a whole: the key, the value found, the profile's
       file, the value it expects */
    return xasprintf(_("%s %s, the profile (%s) expects %s"), r->id, d->found, n->profile,
                     d->expected);
}

/* The severity of a line of evidence, in its colour, padded to 8 columns, then a blank. */
static void severity_cell(FILE *out, const struct fleet_reason *r, const struct render_opts *ro)
{
    const char *w = _(severity_words[r->severity]);
    size_t c = columns(w, ro);

    fprintf(out, "     %s%s%*s%s ", sev_color(ro, (int)r->severity), w, c < 8 ? (int)(8 - c) : 0,
            "", render_reset(ro));
}

/* One line of evidence: the node's side, then the group's. */
static void reason_line(FILE *out, const struct fleet_node *n, const struct fleet_reason *r,
                        const struct render_opts *ro)
{
    char mine[300], group[300] = "", gpu[24] = "";

    severity_cell(out, r, ro);
    if (r->kind == FLEET_BY_METRIC) {
        const struct fleet_metric *mt = &fleet_metrics[r->metric];

        fleet_value_people(mine, sizeof(mine), r->metric, r->value);
        if (r->value->gpu >= 0)
            snprintf(gpu, sizeof(gpu), " (GPU %d)", (int)r->value->gpu);
        if (mt->kind == FLEET_NUMBER) {
            char z[160];

            if (r->z_valid)
                snprintf(z, sizeof(z), "z %+.1f", r->z);
            else
                snprintf(z, sizeof(z), "%s", _("most nodes exactly at the median"));
            /* TRANSLATORS: the group's side of a figure: its median and unit, the MAD, then
               "z +3.9" or "most nodes exactly at the median" */
            snprintf(group, sizeof(group), _("group median %.10g%s%s, MAD %.3g; %s"), r->median,
                     *mt->unit ? " " : "", unit_text(mt->unit), r->mad, z);
        } else {
            /* TRANSLATORS: the group's side of a level or a version: the majority's value (and
               unit), how many nodes have it, of how many */
            snprintf(group, sizeof(group), _("group: %s%s%s (%zu of %zu nodes)"), r->majority,
                     *mt->unit && mt->kind == FLEET_LEVEL ? " " : "",
                     mt->kind == FLEET_LEVEL ? unit_text(mt->unit) : "", r->agree, r->of);
        }
        fprintf(out, "%-20s ", mt->name);
        strncat(mine, gpu, sizeof(mine) - strlen(mine) - 1);
        /* the evidence whole, however long: padded when short, never cut */
        pad(out, mine, 24, ro);
        fprintf(out, " %s\n", group);
    } else if (r->kind == FLEET_BY_FINDING) {
        const char *title = r->finding && r->finding->title_l ? r->finding->title_l : r->text;

        /* TRANSLATORS: a finding of few nodes of the group: its rule id, its title, how many of
           the group's nodes have it */
        fprintf(out, _("finding %s: %s (%zu of %zu nodes have it)"), r->id, title, r->agree, r->of);
        fputc('\n', out);
    } else if (r->dev != NULL) {
        char *text = fleet_deviation_people(n, r);

        fprintf(out, "%s%s\n", _("profile: "), text);
        free(text);
    } else {
        fprintf(out, "%s%s\n", _("profile: "), r->text);
    }
}

static int cmp_rank(const void *a, const void *b)
{
    const struct fleet_node *x = *(const struct fleet_node *const *)a;
    const struct fleet_node *y = *(const struct fleet_node *const *)b;

    return (x->rank > y->rank) - (x->rank < y->rank);
}

/* The node table's head: each label padded to its column by display width (the English one
 * when the translation does not fit). */
static void table_head(FILE *out, const struct render_opts *ro)
{
    /* TRANSLATORS: the node table's column heads of `gpudoctor fleet`; each must fit its column
       (25, 27, 4, 9 columns; a Chinese character takes two) */
    static const struct {
        const char *label;
        size_t width, gap;
        bool right;
    } head[] = { { N_("NODE"), 25, 1, false },
                 { N_("MODEL"), 27, 1, false },
                 { N_("GPUS"), 4, 2, true },
                 { N_("CHECK"), 9, 1, false },
                 { N_("VERDICT"), 0, 0, false } };
    size_t n = sizeof(head) / sizeof(head[0]);

    fprintf(out, "\n%s", render_bold(ro));
    for (size_t i = 0; i < n; i++) {
        const char *label = _(head[i].label);
        size_t w = columns(label, ro);

        if (i + 1 == n) {
            fputs(label, out);
            break;
        }
        if (w > head[i].width) {
            label = head[i].label;
            w = strlen(label);
        }
        fprintf(out, "%*s%s%*s", head[i].right ? (int)(head[i].width - w) : 0, "", label,
                (int)((head[i].right ? 0 : head[i].width - w) + head[i].gap), "");
    }
    fprintf(out, "%s\n", render_reset(ro));
}

void fleet_print(FILE *out, const struct fleet *fl, const struct render_opts *ro,
                 bool outliers_only)
{
    size_t critical, n_out = fleet_outliers(fl, &critical), k = 0;
    const struct fleet_node **ranked = xcalloc(n_out + 1, sizeof(*ranked));
    bool missing = false;

    fputs(render_bold(ro), out);
    /* TRANSLATORS: the report's first line: "12 nodes, 1 GPU model: "; each %s after a number is
       the English plural's "s" (write %.0s to leave it out) */
    fprintf(out, _("%zu node%s, %zu GPU model%s: "), fl->n, fl->n == 1 ? "" : "s", fl->n_groups,
            fl->n_groups == 1 ? "" : "s");
    if (n_out == 0)
        fputs(_("no outlier"), out);
    else
        /* TRANSLATORS: "3 outliers (1 critical)"; %s is the English plural's "s" */
        fprintf(out, _("%zu outlier%s (%zu critical)"), n_out, n_out == 1 ? "" : "s", critical);
    if (fl->prometheus)
        /* TRANSLATORS: after the first line: the Prometheus server the nodes were read from */
        fprintf(out, _(" — from %s"), fl->prometheus);
    fputc('\n', out);
    fputs(render_reset(ro), out);
    for (size_t i = 0; i < fl->n_errors; i++)
        fprintf(out, "%s%s%s: %s: %s\n", render_red(ro), _("not read"), render_reset(ro),
                fl->errors[i].source, fl->errors[i].message);
    if (fl->duplicates)
        /* TRANSLATORS: %s is the English plural's "s" */
        fprintf(out, _("%zu older snapshot%s of nodes already read left out (the newest counts)\n"),
                fl->duplicates, fl->duplicates == 1 ? "" : "s");
    for (size_t i = 0; i < fl->duplicates; i++)
        /* TRANSLATORS: "left out: FILE: an older snapshot of HOST than FILE" */
        fprintf(out, _("left out: %s: an older snapshot of %s than %s\n"), fl->dups[i].source,
                fl->dups[i].name, fl->dups[i].kept);

    if (fl->n > 0) {
        table_head(out, ro);
        for (size_t i = 0; i < fl->n; i++) {
            const struct fleet_node *n = &fl->nodes[i];

            if (outliers_only && n->verdict != FLEET_OUTLIER)
                continue;
            cell(out, n->name, 25, ro);
            fputc(' ', out);
            cell(out, n->model, 27, ro);
            fprintf(out, " %4u  ", (unsigned)n->n_gpus);
            cell(out, check_text(n->check_status, ro), 9, ro);
            fprintf(out, " %s%s%s\n", sev_color(ro, n->severity), verdict_text(n),
                    render_reset(ro));
        }
    }

    for (size_t i = 0; i < fl->n; i++) {
        if (fl->nodes[i].rank > 0)
            ranked[k++] = &fl->nodes[i];
    }
    qsort(ranked, k, sizeof(*ranked), cmp_rank);
    if (k > 0)
        fprintf(out, "\n%s%s%s\n", render_bold(ro), _("Outliers, most serious first"),
                render_reset(ro));
    for (size_t i = 0; i < k; i++) {
        const struct fleet_node *n = ranked[i];
        const struct fleet_group *g = &fl->groups[n->group];

        fprintf(out, "\n%zu. %s%s%s — ", n->rank, render_bold(ro), n->name, render_reset(ro));
        /* TRANSLATORS: an outlier's heading after its name: its GPU model, its GPUs (%s: the
           English plural's "s"), the nodes of its group, then ", too small to compare" or "" */
        fprintf(out, _("%s, %u GPU%s (group of %zu%s)"), n->model, (unsigned)n->n_gpus,
                n->n_gpus == 1 ? "" : "s", g->n, g->judged ? "" : _(", too small to compare"));
        fputc('\n', out);
        for (size_t r = 0; r < n->n_reasons; r++)
            reason_line(out, n, &n->reasons[r], ro);
    }

    if (fl->n_groups > 0)
        fprintf(out, "\n%s%s%s\n", render_bold(ro), _("Groups"), render_reset(ro));
    for (size_t i = 0; i < fl->n_groups; i++) {
        const struct fleet_group *g = &fl->groups[i];
        size_t shown = 0;

        /* TRANSLATORS: a group: its GPU model, its nodes (%s: the English plural's "s"), then
           ", not compared (fewer than --min-group)" or "" */
        fprintf(out, _("  %s: %zu node%s%s\n"), g->model, g->n, g->n == 1 ? "" : "s",
                g->judged ? "" : _(", not compared (fewer than --min-group)"));
        for (size_t c = 0; c < g->n_common && shown < 5; c++) {
            if (2 * g->common[c].nodes < g->n)
                break;
            /* TRANSLATORS: a finding most of a group's nodes have: how many, of how many, its
               rule id */
            fprintf(out, _("    common to %zu of %zu: %s\n"), g->common[c].nodes, g->n,
                    g->common[c].id);
            shown++;
        }
        for (size_t m = 0; m < fleet_n_metrics; m++) {
            const struct fleet_stat *st = &g->stats[m];

            if (fleet_metrics[m].section == NULL && st->n > 0 &&
                fleet_metrics[m].kind != FLEET_NUMBER && st->majority == NULL)
                /* TRANSLATORS: %s is a figure's name (clock_sm_busy_mhz) */
                fprintf(out, _("    %s: no value held by more than half the nodes\n"),
                        fleet_metrics[m].name);
        }
    }
    for (size_t m = 0; m < fleet_n_metrics; m++)
        missing |= fleet_metrics[m].section != NULL;
    if (missing) {
        fputc('\n', out);
        /* TRANSLATORS: followed by the names of the figures, each after a blank */
        fputs(_("Not in the evidence yet (snapshots have no such section):"), out);
        for (size_t m = 0; m < fleet_n_metrics; m++) {
            if (fleet_metrics[m].section)
                fprintf(out, " %s", fleet_metrics[m].name);
        }
        fputc('\n', out);
    }
    free(ranked);
}

/* ---- JSON ---- */

/* A JSON string of s; bytes that are not UTF-8 (a file name given on the command line) shown as
 * \xNN rather than the member lost. */
static json_t *jstr(const char *s)
{
    json_t *j = json_string(s);
    char *p;

    if (j != NULL)
        return j;
    p = str_printable(s);
    j = json_string(p);
    free(p);
    return j;
}

static json_t *value_json(int m, const struct fleet_value *v)
{
    json_t *j;

    if (!v->known)
        return json_null();
    j = json_object();
    if (fleet_metrics[m].kind == FLEET_TEXT)
        json_object_set_new(j, "value", jstr(v->text ? v->text : ""));
    else
        json_object_set_new(j, "value", json_real(v->num));
    json_object_set_new(j, "gpu", v->gpu >= 0 ? json_integer(v->gpu) : json_null());
    return j;
}

static json_t *num_or_null(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}

static json_t *reason_json(const struct fleet_reason *r)
{
    json_t *j = json_object();

    json_object_set_new(j, "kind", jstr(fleet_reason_kind_names[r->kind]));
    json_object_set_new(j, "severity", jstr(severity_names[r->severity]));
    if (r->kind == FLEET_BY_METRIC) {
        const struct fleet_metric *mt = &fleet_metrics[r->metric];

        json_object_set_new(j, "metric", jstr(mt->name));
        json_object_set_new(j, "unit", jstr(mt->unit));
        json_object_set_new(j, "node", value_json(r->metric, r->value));
        if (mt->kind == FLEET_NUMBER) {
            json_object_set_new(j, "median", num_or_null(r->median));
            json_object_set_new(j, "mad", num_or_null(r->mad));
            json_object_set_new(j, "z", r->z_valid ? num_or_null(r->z) : json_null());
        } else {
            json_object_set_new(j, "majority", jstr(r->majority));
            json_object_set_new(j, "agree", json_integer((json_int_t)r->agree));
        }
        json_object_set_new(j, "compared", json_integer((json_int_t)r->of));
    } else {
        json_object_set_new(j, r->kind == FLEET_BY_FINDING ? "id" : "key", jstr(r->id));
        json_object_set_new(j, "text", jstr(r->text));
        if (r->kind == FLEET_BY_FINDING) {
            json_object_set_new(j, "nodes_with_it", json_integer((json_int_t)r->agree));
            json_object_set_new(j, "compared", json_integer((json_int_t)r->of));
        }
    }
    return j;
}

static json_t *node_json(const struct fleet *fl, const struct fleet_node *n)
{
    json_t *j = json_object(), *vals = json_object(), *reasons = json_array(),
           *finds = json_array(), *devs = json_array();

    json_object_set_new(j, "name", jstr(n->name));
    json_object_set_new(j, "source", jstr(n->source));
    json_object_set_new(j, "model", jstr(n->model));
    json_object_set_new(j, "group", json_integer((json_int_t)n->group));
    json_object_set_new(j, "gpus", json_integer(n->n_gpus));
    json_object_set_new(j, "time_ms", n->time_ms > 0 ? json_integer(n->time_ms) : json_null());
    json_object_set_new(j, "check_status",
                        n->check_status >= 0 ? json_integer(n->check_status) : json_null());
    json_object_set_new(j, "verdict", jstr(fleet_verdict_names[n->verdict]));
    json_object_set_new(j, "severity",
                        n->severity >= 0 ? jstr(severity_names[n->severity]) : json_null());
    json_object_set_new(j, "rank", n->rank ? json_integer((json_int_t)n->rank) : json_null());
    for (size_t m = 0; m < fleet_n_metrics; m++) {
        if (fleet_metrics[m].section == NULL)
            json_object_set_new(vals, fleet_metrics[m].name, value_json((int)m, &n->values[m]));
    }
    json_object_set_new(j, "values", vals);
    for (size_t r = 0; r < n->n_reasons; r++)
        json_array_append_new(reasons, reason_json(&n->reasons[r]));
    json_object_set_new(j, "reasons", reasons);
    for (size_t i = 0; i < n->n_findings; i++) {
        json_t *f = json_object();

        json_object_set_new(f, "id", jstr(n->findings[i].id));
        json_object_set_new(f, "severity", jstr(severity_names[n->findings[i].severity]));
        json_object_set_new(f, "subject", jstr(n->findings[i].subject));
        json_object_set_new(f, "title", jstr(n->findings[i].title));
        json_array_append_new(finds, f);
    }
    json_object_set_new(j, "findings", finds);
    json_object_set_new(j, "profile", n->profile ? jstr(n->profile) : json_null());
    for (size_t i = 0; i < n->n_devs; i++) {
        const struct profile_deviation *d = &n->devs[i];
        json_t *o = json_object();

        json_object_set_new(o, "key", jstr(profile_keys[d->key].name));
        json_object_set_new(o, "gpu", d->gpu >= 0 ? json_integer(d->gpu) : json_null());
        json_object_set_new(o, "outcome",
                            jstr(d->outcome == PROFILE_DEVIATES  ? "deviates"
                                 : d->outcome == PROFILE_UNKNOWN ? "unknown"
                                                                 : "not_in_evidence"));
        json_object_set_new(o, "expected", jstr(d->expected));
        json_object_set_new(o, "found", d->found ? jstr(d->found) : json_null());
        json_array_append_new(devs, o);
    }
    json_object_set_new(j, "profile_deviations", devs);
    (void)fl;
    return j;
}

static json_t *group_json(const struct fleet_group *g)
{
    json_t *j = json_object(), *stats = json_object(), *common = json_array();

    json_object_set_new(j, "model", jstr(g->model));
    json_object_set_new(j, "nodes", json_integer((json_int_t)g->n));
    json_object_set_new(j, "judged", json_boolean(g->judged));
    for (size_t m = 0; m < fleet_n_metrics; m++) {
        const struct fleet_stat *st = &g->stats[m];
        json_t *o;

        if (fleet_metrics[m].section != NULL)
            continue;
        o = json_object();
        json_object_set_new(o, "n", json_integer((json_int_t)st->n));
        if (fleet_metrics[m].kind == FLEET_NUMBER) {
            json_object_set_new(o, "median", st->n ? num_or_null(st->median) : json_null());
            json_object_set_new(o, "mad", st->n ? num_or_null(st->mad) : json_null());
        } else {
            json_object_set_new(o, "majority", st->majority ? jstr(st->majority) : json_null());
            json_object_set_new(o, "agree", json_integer((json_int_t)st->agree));
        }
        json_object_set_new(stats, fleet_metrics[m].name, o);
    }
    json_object_set_new(j, "metrics", stats);
    for (size_t c = 0; c < g->n_common; c++) {
        json_t *o = json_object();

        json_object_set_new(o, "id", jstr(g->common[c].id));
        json_object_set_new(o, "nodes", json_integer((json_int_t)g->common[c].nodes));
        json_array_append_new(common, o);
    }
    json_object_set_new(j, "findings", common);
    return j;
}

json_t *fleet_to_json(const struct fleet *fl, int status)
{
    json_t *j = json_object(), *nodes = json_array(), *groups = json_array(),
           *outliers = json_array(), *errors = json_array(), *missing = json_array(),
           *metrics = json_array(), *left_out = json_array();
    size_t critical, n_out = fleet_outliers(fl, &critical);
    const struct fleet_node **ranked = xcalloc(n_out + 1, sizeof(*ranked));

    json_object_set_new(j, "schema", jstr(FLEET_SCHEMA));
    json_object_set_new(j, "gpudoctor_version", jstr(GPUDOCTOR_VERSION));
    json_object_set_new(j, "status", json_integer(status));
    json_object_set_new(j, "source", fl->prometheus ? jstr(fl->prometheus) : json_null());
    json_object_set_new(j, "z_threshold", json_real(fl->opts.z));
    json_object_set_new(j, "min_group", json_integer((json_int_t)fl->opts.min_group));
    json_object_set_new(j, "duplicates", json_integer((json_int_t)fl->duplicates));
    for (size_t m = 0; m < fleet_n_metrics; m++) {
        const struct fleet_metric *mt = &fleet_metrics[m];
        json_t *o = json_object();

        json_object_set_new(o, "name", jstr(mt->name));
        json_object_set_new(o, "unit", jstr(mt->unit));
        json_object_set_new(o, "kind",
                            jstr(mt->kind == FLEET_NUMBER  ? "number"
                                 : mt->kind == FLEET_LEVEL ? "level"
                                                           : "text"));
        json_object_set_new(o, "bad",
                            jstr(mt->bad == FLEET_BAD_LOW    ? "low"
                                 : mt->bad == FLEET_BAD_HIGH ? "high"
                                                             : "any"));
        json_object_set_new(o, "in_evidence", json_boolean(mt->section == NULL));
        json_array_append_new(metrics, o);
        if (mt->section)
            json_array_append_new(missing, jstr(mt->name));
    }
    json_object_set_new(j, "metrics", metrics);
    json_object_set_new(j, "not_in_evidence", missing);
    for (size_t g = 0; g < fl->n_groups; g++)
        json_array_append_new(groups, group_json(&fl->groups[g]));
    json_object_set_new(j, "groups", groups);
    for (size_t i = 0; i < fl->n; i++) {
        json_array_append_new(nodes, node_json(fl, &fl->nodes[i]));
        if (fl->nodes[i].rank > 0)
            ranked[fl->nodes[i].rank - 1] = &fl->nodes[i];
    }
    json_object_set_new(j, "nodes", nodes);
    for (size_t r = 0; r < n_out; r++) {
        if (ranked[r])
            json_array_append_new(outliers, jstr(ranked[r]->name));
    }
    json_object_set_new(j, "outliers", outliers);
    for (size_t i = 0; i < fl->n_errors; i++) {
        json_t *o = json_object();

        json_object_set_new(o, "source", jstr(fl->errors[i].source));
        json_object_set_new(o, "message", jstr(fl->errors[i].message));
        json_array_append_new(errors, o);
    }
    json_object_set_new(j, "errors", errors);
    for (size_t i = 0; i < fl->duplicates; i++) {
        json_t *o = json_object();

        json_object_set_new(o, "name", jstr(fl->dups[i].name));
        json_object_set_new(o, "source", jstr(fl->dups[i].source));
        json_object_set_new(o, "time_ms", json_integer(fl->dups[i].time_ms));
        json_object_set_new(o, "kept", jstr(fl->dups[i].kept));
        json_array_append_new(left_out, o);
    }
    json_object_set_new(j, "left_out", left_out);
    free(ranked);
    return j;
}
