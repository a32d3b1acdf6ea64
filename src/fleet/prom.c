/*
 * `fleet --prometheus URL`: the nodes as a Prometheus server that scrapes `gpudoctor serve` sees
 * them, one instant query (GET /api/v1/query) per figure. A node is an `instance`; its series
 * (one per GPU, or one per node) fold into its figure as the metric table says (the lowest clock,
 * the hottest GPU, the sum of the errors, the distinct versions). docs/fleet.md lists the queries.
 */
#include "fleet/fleet.h"
#include "fleet/http.h"
#include "util/strutil.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * What one answer may hold. The largest real answers are the per-GPU ones, gpudoctor_gpu_info
 * the largest of them: with the exporter's labels and Prometheus's instance and job, a series is
 * some 350 bytes, 3 JSON objects or arrays and 24 other values (keys, label values, the sample).
 * A fleet at its cap (FLEET_MAX_INPUTS, 50,000 instances) of 8-GPU nodes answers 135 MiB: 256 MiB
 * leaves room for target labels twice as long, or 38,000 nodes of 16 GPUs. Parsed, a real answer
 * costs some 7 times its size; one of empty objects ("[{},{},...]") 75 times, so bytes alone
 * would let a broken or hostile server take 20 GB. The objects and arrays and the other values
 * are counted before the answer is parsed, bounded at what 256 MiB of real series hold (760,000
 * series: 2.3 million and 18 million) and a margin: no answer then costs more than some 3 GB.
 * Beyond any of them is an error that names the query and the limit.
 */
#define PROM_MAX_ANSWER     (256u << 20)
#define PROM_MAX_CONTAINERS 3000000u  /* objects and arrays */
#define PROM_MAX_SCALARS    24000000u /* keys, strings, numbers, literals */

/* ---- instance -> node ---- */

struct index {
    size_t *slot; /* node index + 1; 0 empty */
    size_t cap;
};

static uint64_t hash(const char *s)
{
    return fnv1a64(FNV1A64_INIT, s, strlen(s));
}

static void index_put(struct index *ix, const struct fleet *fl, size_t node)
{
    size_t at = hash(fl->nodes[node].name) & (ix->cap - 1);

    while (ix->slot[at])
        at = (at + 1) & (ix->cap - 1);
    ix->slot[at] = node + 1;
}

static void index_build(struct index *ix, const struct fleet *fl)
{
    ix->cap = 16;
    while (ix->cap < 2 * fl->n + 16)
        ix->cap *= 2;
    ix->slot = xcalloc(ix->cap, sizeof(*ix->slot));
    for (size_t i = 0; i < fl->n; i++)
        index_put(ix, fl, i);
}

/*
 * The node of an instance (the label, unsanitized), added when new (the index grows with it; the
 * nodes may move, hence an index, not a pointer). SIZE_MAX when it is new and the fleet has
 * FLEET_MAX_INPUTS nodes already: its series is counted in fl->prom_left_out and left out, so
 * that an answer naming a million instances cannot take a million nodes' memory.
 */
static size_t node_of(struct index *ix, struct fleet *fl, const char *label)
{
    char *instance = str_sanitized(label);
    size_t at = hash(instance) & (ix->cap - 1);

    for (; ix->slot[at]; at = (at + 1) & (ix->cap - 1)) {
        if (strcmp(fl->nodes[ix->slot[at] - 1].name, instance) == 0) {
            free(instance);
            return ix->slot[at] - 1;
        }
    }
    if (fl->n >= FLEET_MAX_INPUTS) {
        fl->prom_left_out++;
        free(instance);
        return SIZE_MAX;
    }
    fleet_add_node(fl, instance, fl->prometheus ? fl->prometheus : "prometheus");
    free(instance);
    if (2 * fl->n + 16 > ix->cap) {
        free(ix->slot);
        index_build(ix, fl);
    } else {
        index_put(ix, fl, fl->n - 1);
    }
    return fl->n - 1;
}

/* ---- one answer ---- */

/*
 * Whether the answer may be parsed: its objects and arrays, and its other values, counted
 * outside strings without parsing it (see PROM_MAX_CONTAINERS). Else -1, *cause set.
 */
static int answer_bounded(const char *json, size_t len, char **cause)
{
    size_t containers = 0, scalars = 0;
    bool in_string = false, escaped = false, in_scalar = false;

    for (size_t i = 0; i < len; i++) {
        char ch = json[i];

        if (in_string) {
            if (escaped)
                escaped = false;
            else if (ch == '\\')
                escaped = true;
            else if (ch == '"')
                in_string = false;
            continue;
        }
        if (strchr("{}[]:,\" \t\r\n", ch) == NULL || ch == '\0') {
            scalars += !in_scalar;
            in_scalar = true;
            continue;
        }
        in_scalar = false;
        if (ch == '"') {
            in_string = true;
            scalars++;
        } else if (ch == '{' || ch == '[') {
            containers++;
        }
    }
    if (containers > PROM_MAX_CONTAINERS || scalars > PROM_MAX_SCALARS) {
        *cause = xasprintf("the answer holds more than %u objects and arrays or %u other values, "
                           "the most fleet parses of one query",
                           PROM_MAX_CONTAINERS, PROM_MAX_SCALARS);
        return -1;
    }
    return 0;
}

/* The vector of an answer, or NULL with *cause set. */
static json_t *vector(json_t *root, char **cause)
{
    const char *status = json_string_value(json_object_get(root, "status"));
    json_t *data = json_object_get(root, "data"), *result;

    if (status == NULL || strcmp(status, "success") != 0) {
        const char *err = json_string_value(json_object_get(root, "error"));
        char *shown = str_excerpt(err ? err : "no status", 200);

        *cause = xasprintf("Prometheus says: %s", shown);
        free(shown);
        return NULL;
    }
    result = json_object_get(data, "result");
    status = json_string_value(json_object_get(data, "resultType"));
    if (!json_is_array(result) || status == NULL || strcmp(status, "vector") != 0) {
        *cause = xstrdup("the answer is not an instant vector");
        return NULL;
    }
    return result;
}

/* A sample's labels and value; false when it has no instance or no number. */
static bool sample(json_t *s, json_t **labels, const char **instance, double *value, double *t)
{
    json_t *v = json_object_get(s, "value");
    const char *text = json_string_value(json_array_get(v, 1));

    *labels = json_object_get(s, "metric");
    *instance = json_string_value(json_object_get(*labels, "instance"));
    if (*instance == NULL || text == NULL || !str_to_double(text, value))
        return false;
    *t = json_number_value(json_array_get(v, 0));
    return true;
}

/* A label's value made safe for the report (labels can hold anything), NULL when absent. */
static char *label(json_t *labels, const char *name)
{
    const char *v = json_string_value(json_object_get(labels, name));

    return v ? str_sanitized(v) : NULL;
}

static void add_text(struct fleet_value *v, const char *t)
{
    /* The distinct values, sorted, as the snapshot reader joins them. */
    char **parts = NULL, *save = NULL, *copy;
    size_t n = 0, len = 0;

    if (v->known && v->text) {
        copy = xstrdup(v->text);
        for (char *p = strtok_r(copy, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
            parts = xreallocarray(parts, n + 1, sizeof(*parts));
            parts[n++] = xstrdup(str_ltrim(p));
        }
        free(copy);
    }
    for (size_t i = 0; i < n; i++) {
        if (strcmp(parts[i], t) == 0)
            goto out;
    }
    parts = xreallocarray(parts, n + 1, sizeof(*parts));
    parts[n++] = xstrdup(t);
    for (size_t i = 1; i < n; i++) { /* insertion sort: a handful of values */
        for (size_t k = i; k > 0 && strcmp(parts[k - 1], parts[k]) > 0; k--) {
            char *x = parts[k];

            parts[k] = parts[k - 1];
            parts[k - 1] = x;
        }
    }
    for (size_t i = 0; i < n; i++)
        len += strlen(parts[i]) + 2;
    free(v->text);
    v->text = xmalloc(len + 1);
    v->text[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        if (i)
            strcat(v->text, ", ");
        strcat(v->text, parts[i]);
    }
    v->known = true;
out:
    for (size_t i = 0; i < n; i++)
        free(parts[i]);
    free(parts);
}

/*
 * Every figure fleet asks Prometheus for is a count, a size, a rate, a temperature or a level:
 * never negative, never beyond 1e15 (a petabyte a second). A sample that is (an exporter's bug, a
 * hostile one) tells nothing and is left out: the node's figure stays unknown, not judged.
 */
static bool plausible(double x)
{
    return isfinite(x) && x >= 0 && x <= 1e15;
}

/* x (plausible) as a uint32_t, saturated. */
static uint32_t as_u32(double x)
{
    return x >= (double)UINT32_MAX ? UINT32_MAX : (uint32_t)x;
}

static void fold(struct fleet_value *v, enum fleet_fold how, double x, int32_t gpu)
{
    bool better;

    switch (how) {
    case FOLD_SUM:
        v->num = v->known ? v->num + x : x;
        v->known = true;
        return;
    case FOLD_MIN:
    case FOLD_MAX:
        better = !v->known || (how == FOLD_MIN ? x < v->num : x > v->num);
        if (better) {
            v->known = true;
            v->num = x;
            v->gpu = gpu;
        }
        return;
    case FOLD_LABELS:
        return;
    }
}

int fleet_prom_answer(struct fleet *fl, int metric, const char *json, size_t len, char **cause)
{
    const struct fleet_metric *mt = &fleet_metrics[metric];
    json_error_t err;
    json_t *root, *result, *s;
    struct index ix;
    size_t i;

    if (answer_bounded(json, len, cause) != 0)
        return -1;
    root = json_loadb(json, len, 0, &err);
    if (root == NULL) {
        *cause = xasprintf("%s: the answer is not JSON (line %d, column %d: %s)", mt->name,
                           err.line, err.column, err.text);
        return -1;
    }
    result = vector(root, cause);
    if (result == NULL) {
        json_decref(root);
        return -1;
    }
    index_build(&ix, fl);
    json_array_foreach(result, i, s)
    {
        json_t *labels;
        const char *instance;
        double x, t;
        char *gpu_text;
        uint32_t gpu = 0;
        bool has_gpu;
        struct fleet_node *n;
        size_t k;

        if (!sample(s, &labels, &instance, &x, &t) || !plausible(x))
            continue;
        k = node_of(&ix, fl, instance);
        if (k == SIZE_MAX)
            continue;
        n = &fl->nodes[k];
        if (t > 0 && (int64_t)(t * 1000) > n->time_ms)
            n->time_ms = (int64_t)(t * 1000);
        gpu_text = label(labels, "gpu");
        has_gpu = gpu_text && str_to_u32(gpu_text, 10, &gpu);
        free(gpu_text);
        if (mt->fold == FOLD_LABELS) {
            char *t_label = label(labels, mt->prom_label);

            if (t_label && *t_label)
                add_text(&n->values[metric], t_label);
            free(t_label);
        } else {
            fold(&n->values[metric], mt->fold, x, has_gpu ? (int32_t)gpu : -1);
        }
    }
    free(ix.slot);
    json_decref(root);
    return 0;
}

/* ---- what is not a figure: models, findings, verdicts ---- */

struct info_sort {
    const size_t *node;
    char *const *model;
};

static int cmp_info(const void *a, const void *b, void *ctx)
{
    const struct info_sort *c = ctx;
    size_t x = *(const size_t *)a, y = *(const size_t *)b;

    if (c->node[x] != c->node[y])
        return c->node[x] < c->node[y] ? -1 : 1;
    return strcmp(c->model[x] ? c->model[x] : "", c->model[y] ? c->model[y] : "");
}

/* gpudoctor_gpu_info: each node's GPU count and most common model. */
static void fold_info(struct fleet *fl, json_t *result)
{
    struct index ix;
    json_t *s;
    size_t i, *node = xcalloc(json_array_size(result) + 1, sizeof(*node));
    char **model = xcalloc(json_array_size(result) + 1, sizeof(*model));

    index_build(&ix, fl);
    json_array_foreach(result, i, s)
    {
        json_t *labels;
        const char *instance;
        double x, t;

        node[i] = SIZE_MAX;
        if (!sample(s, &labels, &instance, &x, &t))
            continue;
        node[i] = node_of(&ix, fl, instance);
        if (node[i] == SIZE_MAX)
            continue;
        fl->nodes[node[i]].n_gpus++;
        model[i] = label(labels, "name");
    }
    /* Per node, the model most of its series name (ties: the first in byte order): the series
     * sorted by node and model, then each run counted. */
    {
        size_t n = json_array_size(result), *ord = xcalloc(n + 1, sizeof(*ord));
        size_t *run = xcalloc(fl->n + 1, sizeof(*run)); /* the longest run of each node */
        struct info_sort ctx = { node, model };

        for (i = 0; i < n; i++)
            ord[i] = i;
        qsort_r(ord, n, sizeof(*ord), cmp_info, &ctx);
        for (size_t a = 0, b; a < n; a = b) {
            for (b = a; b < n && node[ord[b]] == node[ord[a]] &&
                        strcmp(model[ord[b]] ? model[ord[b]] : "",
                               model[ord[a]] ? model[ord[a]] : "") == 0;
                 b++)
                ;
            if (node[ord[a]] != SIZE_MAX && model[ord[a]] != NULL) {
                struct fleet_node *nd = &fl->nodes[node[ord[a]]];

                /* runs of one node come in model order: a longer run wins, a tie keeps the
                 * first */
                if (nd->model == NULL || b - a > run[node[ord[a]]]) {
                    free(nd->model);
                    nd->model = xstrdup(model[ord[a]]);
                    run[node[ord[a]]] = b - a;
                }
            }
        }
        free(ord);
        free(run);
    }
    for (i = 0; i < json_array_size(result); i++)
        free(model[i]);
    free(model);
    free(node);
    free(ix.slot);
}

/* gpudoctor_finding{id, severity, subject} */
static void fold_findings(struct fleet *fl, json_t *result)
{
    struct index ix;
    json_t *s;
    size_t i;

    index_build(&ix, fl);
    json_array_foreach(result, i, s)
    {
        json_t *labels;
        const char *instance;
        double x, t;
        char *id, *sev, *subject;
        struct fleet_node *n;
        struct fleet_finding *f;
        size_t at;
        int k;

        if (!sample(s, &labels, &instance, &x, &t) || x != 1)
            continue;
        at = node_of(&ix, fl, instance);
        if (at == SIZE_MAX)
            continue;
        n = &fl->nodes[at];
        id = label(labels, "id");
        sev = label(labels, "severity");
        subject = label(labels, "subject");
        for (k = 0; sev && severity_names[k] && strcmp(severity_names[k], sev) != 0; k++)
            ;
        if (id && sev && severity_names[k]) {
            n->findings = xreallocarray(n->findings, n->n_findings + 1, sizeof(*n->findings));
            f = &n->findings[n->n_findings++];
            f->id = id;
            f->severity = (enum severity)k;
            f->subject = subject ? subject : xstrdup("host");
            f->title = xasprintf("%s (%s)", id, f->subject);
            f->title_l = NULL; /* the rule id and subject: the same in every language */
            id = subject = NULL;
        }
        free(id);
        free(sev);
        free(subject);
    }
    free(ix.slot);
}

/* gpudoctor_check_status */
static void fold_status(struct fleet *fl, json_t *result)
{
    struct index ix;
    json_t *s;
    size_t i;

    index_build(&ix, fl);
    json_array_foreach(result, i, s)
    {
        json_t *labels;
        const char *instance;
        double x, t;
        size_t k;

        if (!sample(s, &labels, &instance, &x, &t))
            continue;
        k = node_of(&ix, fl, instance);
        if (k != SIZE_MAX && x >= 0 && x <= 3)
            fl->nodes[k].check_status = (int)x;
    }
    free(ix.slot);
}

/* ---- the queries ---- */

/* promql with {busy} and {idle} replaced by the thresholds as ratios. */
static char *expand(const char *promql, const struct thresholds *th)
{
    char *out = xstrdup(promql);
    const char *keys[] = { "{busy}", "{idle}" };
    double vals[] = { th->v[TH_GPU_BUSY_UTIL_PCT] / 100.0, th->v[TH_GPU_IDLE_UTIL_PCT] / 100.0 };

    for (size_t k = 0; k < 2; k++) {
        char *at;

        while ((at = strstr(out, keys[k])) != NULL) {
            char *next = xasprintf("%.*s%g%s", (int)(at - out), out, vals[k], at + strlen(keys[k]));

            free(out);
            out = next;
        }
    }
    return out;
}

/* How long the queries may take: each, and all of them together. */
struct budget {
    int64_t timeout_ms;  /* one query (--timeout) */
    int64_t deadline_ms; /* all of them (--deadline) */
    int64_t end_ms;      /* time_mono_ms() when all must be done */
    size_t asked, total; /* queries answered so far, of how many */
};

/* Why the deadline ended the queries, as *cause says it. */
static char *deadline_cause(const struct budget *b)
{
    return xasprintf("the queries did not finish within --deadline (%.10g s): %zu of %zu "
                     "answered",
                     (double)b->deadline_ms / 1000, b->asked, b->total);
}

/*
 * GET base/api/v1/query?query=q, within --timeout and what is left of --deadline. Returns the
 * body, or NULL with *cause set (the deadline's when it is what ended the query).
 */
static char *query(const char *base, const char *q, struct budget *b, size_t *len, char **cause)
{
    int64_t left = b->end_ms - time_mono_ms();
    char *esc, *url, *body = NULL;
    int status;

    if (left <= 0) {
        *cause = deadline_cause(b);
        return NULL;
    }
    esc = fleet_url_escape(q);
    url = xasprintf("%s/api/v1/query?query=%s", base, esc);
    status = fleet_http_get(url, left < b->timeout_ms ? left : b->timeout_ms, PROM_MAX_ANSWER,
                            &body, len, cause);
    free(esc);
    free(url);
    if (status < 0 && time_mono_ms() >= b->end_ms) {
        free(*cause);
        *cause = deadline_cause(b);
    }
    if (status < 0)
        return NULL;
    b->asked++;
    if (status != 200 && status != 400 && status != 422) {
        /* 400 and 422 carry Prometheus's own error in JSON: let it say what */
        *cause = xasprintf("HTTP status %d", status);
        free(body);
        return NULL;
    }
    return body;
}

static int fetch(struct fleet *fl, const char *base, const char *q, struct budget *b,
                 void (*fn)(struct fleet *, json_t *), char **cause)
{
    size_t len;
    char *why = NULL, *body = query(base, q, b, &len, &why);
    json_error_t err;
    json_t *root, *result;

    if (body == NULL) {
        *cause = xasprintf("%s: %s", q, why);
        free(why);
        return -1;
    }
    if (answer_bounded(body, len, &why) != 0) {
        *cause = xasprintf("%s: %s", q, why);
        free(why);
        free(body);
        return -1;
    }
    root = json_loadb(body, len, 0, &err);
    free(body);
    if (root == NULL) {
        *cause = xasprintf("%s: the answer is not JSON (%s)", q, err.text);
        return -1;
    }
    result = vector(root, &why);
    if (result == NULL) {
        *cause = xasprintf("%s: %s", q, why);
        free(why);
        json_decref(root);
        return -1;
    }
    fn(fl, result);
    json_decref(root);
    return 0;
}

/* Nodes whose GPUs Prometheus does not describe: model unknown, count from NVML's. */
static void settle_models(struct fleet *fl)
{
    int m = fleet_metric_find("gpu_count");

    for (size_t i = 0; i < fl->n; i++) {
        struct fleet_node *n = &fl->nodes[i];

        if (n->model == NULL)
            n->model = xstrdup("unknown");
        if (n->values[m].known)
            n->n_gpus = as_u32(n->values[m].num);
    }
}

/* Profile facts from the figures Prometheus has (per node: the worst GPU stands for all). */
static void judge_profiles(struct fleet *fl)
{
    for (size_t i = 0; i < fl->n; i++) {
        struct fleet_node *n = &fl->nodes[i];
        const struct fleet_profile *fp = NULL;
        struct profile_facts f;
        int m;

        for (size_t k = 0; k < fl->opts.n_profiles && fp == NULL; k++) {
            const struct profile *p = fl->opts.profiles[k].profile;

            if (!p->set[PK_GPU_MODEL] || strcmp(p->text[PK_GPU_MODEL], n->model) == 0)
                fp = &fl->opts.profiles[k];
        }
        if (fp == NULL)
            continue;
        memset(&f, 0, sizeof(f));
        for (int k = 0; k < PK__COUNT; k++)
            f.has_section[k] = profile_keys[k].section == NULL;
        m = fleet_metric_find("gpu_count");
        f.count_valid = n->values[m].known;
        f.gpu_count = as_u32(n->values[m].num);
        f.count_source = xstrdup("NVML");
        f.gpus = xcalloc(1, sizeof(*f.gpus));
        f.n_gpus = 1;
        f.gpus[0].index = -1;
        f.gpus[0].model = xstrdup(n->model);
        m = fleet_metric_find("gpu_memory_mib");
        f.gpus[0].mem_valid = n->values[m].known;
        f.gpus[0].mem_mib = (uint64_t)n->values[m].num;
        if (n->values[m].gpu >= 0)
            f.gpus[0].index = n->values[m].gpu;
        m = fleet_metric_find("pcie_gen_max");
        f.gpus[0].gen_valid = n->values[m].known;
        f.gpus[0].pcie_gen = as_u32(n->values[m].num);
        m = fleet_metric_find("pcie_width");
        f.gpus[0].width_valid = n->values[m].known;
        f.gpus[0].pcie_width = as_u32(n->values[m].num);
        m = fleet_metric_find("vbios_version");
        if (n->values[m].known)
            f.gpus[0].vbios = xstrdup(n->values[m].text);
        m = fleet_metric_find("driver_version");
        if (n->values[m].known)
            f.driver_version = xstrdup(n->values[m].text);
        m = fleet_metric_find("cuda_version");
        if (n->values[m].known)
            f.cuda_version = xstrdup(n->values[m].text);
        m = fleet_metric_find("fabricmanager_version");
        if (n->values[m].known) {
            f.fabricmanager_version = xstrdup(n->values[m].text);
            f.has_section[PK_FABRICMANAGER_VERSION] = true;
        }
        n->profile = fp->path;
        n->n_devs = profile_compare(fp->profile, &f, &n->devs);
        profile_facts_free(&f);
    }
}

int fleet_read_prometheus(struct fleet *fl, const char *url, int64_t timeout_ms,
                          int64_t deadline_ms, char **cause)
{
    char *base = xstrdup(url);
    struct budget b = { timeout_ms, deadline_ms, time_mono_ms() + deadline_ms, 0, 3 };
    int rc = -1;

    for (size_t m = 0; m < fleet_n_metrics; m++)
        b.total += fleet_metrics[m].promql != NULL;
    while (*base && base[strlen(base) - 1] == '/')
        base[strlen(base) - 1] = '\0';
    fl->prometheus = fleet_url_shown(base); /* what every output names; base keeps a password */
    /* The nodes first: every exporter says its verdict. */
    if (fetch(fl, base, "gpudoctor_check_status", &b, fold_status, cause) != 0)
        goto out;
    if (fetch(fl, base, "gpudoctor_gpu_info", &b, fold_info, cause) != 0)
        goto out;
    if (fetch(fl, base, "gpudoctor_finding", &b, fold_findings, cause) != 0)
        goto out;
    for (size_t m = 0; m < fleet_n_metrics; m++) {
        size_t len;
        char *q, *body, *why = NULL;

        if (fleet_metrics[m].promql == NULL)
            continue;
        q = expand(fleet_metrics[m].promql, &fl->opts.rules->th);
        body = query(base, q, &b, &len, &why);
        if (body == NULL || fleet_prom_answer(fl, (int)m, body, len, &why) != 0) {
            *cause = xasprintf("%s: %s", q, why);
            free(why);
            free(body);
            free(q);
            goto out;
        }
        free(body);
        free(q);
    }
    settle_models(fl);
    judge_profiles(fl);
    if (fl->prom_left_out > 0)
        fleet_error(fl, fl->prometheus,
                    "more instances than fleet reads (%d): %zu series of the others left out",
                    FLEET_MAX_INPUTS, fl->prom_left_out);
    if (fl->n == 0) {
        *cause = xasprintf("%s has no gpudoctor series (gpudoctor_check_status): is it scraping "
                           "gpudoctor serve?",
                           fl->prometheus);
        goto out;
    }
    rc = 0;
out:
    free(base);
    return rc;
}
