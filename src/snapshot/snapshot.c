#include "snapshot/snapshot.h"
#include "util/fileio.h"
#include "util/i18n.h"
#include "util/strutil.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Reals keep ten significant digits: exact enough, readable, and stable across a round trip. */
#define SNAPSHOT_DUMP_FLAGS (JSON_INDENT(2) | JSON_REAL_PRECISION(10))

const char *const collector_names[COLLECTOR__COUNT] = {
    [COLLECTOR_NVML] = "nvml",   [COLLECTOR_PROCS] = "processes", [COLLECTOR_HOST] = "host",
    [COLLECTOR_PCIE] = "pcie",   [COLLECTOR_DRIVER] = "driver",   [COLLECTOR_KLOG] = "kernel_log",
    [COLLECTOR_STACK] = "stack", [COLLECTOR_IB] = "ib",           [COLLECTOR_FABRIC] = "fabric",
};

const char *const collector_state_names[] = {
    [CS_NOT_RUN] = "not_run",
    [CS_OK] = "ok",
    [CS_PARTIAL] = "partial",
    [CS_UNAVAILABLE] = "unavailable",
    [CS_NO_PERMISSION] = "no_permission",
    [CS_FAILED] = "failed",
    [CS_TIMEOUT] = "timeout",
    NULL,
};

/* Spelled as the names, so the English text reads as it always has. */
const char *const collector_state_words[] = {
    [CS_NOT_RUN] = N_("not_run"),
    [CS_OK] = N_("ok"),
    [CS_PARTIAL] = N_("partial"),
    [CS_UNAVAILABLE] = N_("unavailable"),
    [CS_NO_PERMISSION] = N_("no_permission"),
    [CS_FAILED] = N_("failed"),
    [CS_TIMEOUT] = N_("timeout"),
    NULL,
};

struct snapshot *snapshot_new(void)
{
    struct snapshot *s = xcalloc(1, sizeof(*s));

    s->procs.clk_tck = 100;
    return s;
}

void collector_status_free(struct collector_status *c)
{
    free(c->detail);
    free(c->detail_l);
    for (size_t i = 0; i < c->n_notes; i++)
        free(c->notes[i]);
    for (size_t i = 0; i < c->cap_notes_l; i++)
        free(c->notes_l[i]);
    free(c->notes);
    free(c->notes_l);
    memset(c, 0, sizeof(*c));
}

void sample_free(struct sample *smp)
{
    for (size_t i = 0; i < smp->n_gpus; i++)
        gpu_free(&smp->gpus[i]);
    free(smp->gpus);
    free(smp->procs);
    memset(smp, 0, sizeof(*smp));
}

void snapshot_free(struct snapshot *s)
{
    if (s == NULL)
        return;
    free(s->gpudoctor_version);
    free(s->hostname);
    free(s->root);
    nvml_system_free(&s->nvml);
    for (size_t i = 0; i < s->n_gpus; i++)
        gpu_free(&s->gpus[i]);
    free(s->gpus);
    proc_table_free(&s->procs);
    host_info_free(&s->host);
    pcie_info_free(&s->pcie);
    driver_info_free(&s->driver);
    stack_info_free(&s->stack);
    state_info_free(&s->state);
    bench_info_free(&s->bench);
    ib_info_free(&s->ib);
    fabric_info_free(&s->fabric);
    reported_info_free(&s->reported);
    for (size_t i = 0; i < COLLECTOR__COUNT; i++)
        collector_status_free(&s->collectors[i]);
    for (size_t i = 0; i < s->n_samples; i++)
        sample_free(&s->samples[i]);
    free(s->samples);
    free(s);
}

/* fmt formatted again with its translation, when one is in use and differs; else NULL. */
static char *localized(const char *fmt, va_list ap)
{
    const char *t;

    if (!i18n_active())
        return NULL;
    t = _(fmt);
    return t != fmt && strcmp(t, fmt) != 0 ? str_sanitize(xvasprintf(t, ap)) : NULL;
}

void collector_set(struct collector_status *c, enum collector_state state, const char *fmt, ...)
{
    va_list ap;

    c->state = state;
    free(c->detail);
    free(c->detail_l);
    c->detail = NULL;
    c->detail_l = NULL;
    if (fmt != NULL) {
        va_start(ap, fmt);
        c->detail = str_sanitize(xvasprintf(fmt, ap));
        va_end(ap);
        va_start(ap, fmt);
        c->detail_l = localized(fmt, ap);
        va_end(ap);
    }
}

void collector_note(struct collector_status *c, const char *fmt, ...)
{
    va_list ap;
    char *en, *l;

    va_start(ap, fmt);
    /* A note may quote what a collector read (a path, a line): one line, safe to print. */
    en = xvasprintf(fmt, ap);
    va_end(ap);
    va_start(ap, fmt);
    l = localized(fmt, ap);
    va_end(ap);
    collector_note_take(c, en, l);
}

void collector_note_take(struct collector_status *c, char *en, char *l)
{
    size_t k = c->n_notes;

    xgrow(&c->notes, &c->cap_notes, c->n_notes + 1, sizeof(*c->notes));
    c->notes[c->n_notes++] = str_sanitize(en);
    if (l != NULL) {
        if (k >= c->cap_notes_l) {
            c->notes_l = xreallocarray(c->notes_l, c->cap_notes, sizeof(*c->notes_l));
            memset(c->notes_l + c->cap_notes_l, 0,
                   (c->cap_notes - c->cap_notes_l) * sizeof(*c->notes_l));
            c->cap_notes_l = c->cap_notes;
        }
        c->notes_l[k] = str_sanitize(l);
    }
    if (c->state == CS_OK)
        c->state = CS_PARTIAL;
}

const char *collector_detail_text(const struct collector_status *c)
{
    return c->detail_l != NULL ? c->detail_l : c->detail;
}

const char *collector_note_text(const struct collector_status *c, size_t k)
{
    return k < c->cap_notes_l && c->notes_l[k] != NULL ? c->notes_l[k] : c->notes[k];
}

struct sample *snapshot_add_sample(struct snapshot *s, int64_t t_ms)
{
    struct sample *smp;

    xgrow(&s->samples, &s->cap_samples, s->n_samples + 1, sizeof(*s->samples));
    smp = &s->samples[s->n_samples++];
    memset(smp, 0, sizeof(*smp));
    smp->t_ms = t_ms;
    return smp;
}

struct gpu *snapshot_gpu(const struct snapshot *s, uint32_t idx)
{
    for (size_t i = 0; i < s->n_gpus; i++) {
        if (s->gpus[i].index == idx)
            return &s->gpus[i];
    }
    return NULL;
}

const struct gpu *sample_gpu(const struct sample *smp, size_t pos, uint32_t idx)
{
    if (pos < smp->n_gpus && smp->gpus[pos].index == idx)
        return &smp->gpus[pos];
    for (size_t i = 0; i < smp->n_gpus; i++) {
        if (smp->gpus[i].index == idx)
            return &smp->gpus[i];
    }
    return NULL;
}

/* ---- writing ---- */

static json_t *jstr_or_null(const char *s)
{
    return jstring_safe(s);
}

static json_t *collectors_to_json(const struct snapshot *s)
{
    json_t *j = json_object();

    for (size_t i = 0; i < COLLECTOR__COUNT; i++) {
        const struct collector_status *c = &s->collectors[i];
        json_t *o = json_object(), *notes = json_array();

        json_object_set_new(o, "state", json_string(collector_state_names[c->state]));
        json_object_set_new(o, "detail", jstr_or_null(c->detail));
        for (size_t k = 0; k < c->n_notes; k++)
            json_array_append_new(notes, jstring_safe(c->notes[k]));
        json_object_set_new(o, "notes", notes);
        json_object_set_new(o, "elapsed_us", json_integer(c->elapsed_us));
        json_object_set_new(j, collector_names[i], o);
    }
    return j;
}

json_t *sample_to_json(const struct sample *smp)
{
    json_t *j = json_object(), *gpus = json_array(), *procs = json_array();

    json_object_set_new(j, "t_ms", json_integer(smp->t_ms));
    for (size_t i = 0; i < smp->n_gpus; i++)
        json_array_append_new(gpus, gpu_to_json(&smp->gpus[i], JF_ID | JF_DYNAMIC));
    json_object_set_new(j, "gpus", gpus);
    json_object_set_new(j, "host", host_sample_to_json(&smp->host));
    for (size_t i = 0; i < smp->n_procs; i++)
        json_array_append_new(procs, proc_sample_to_json(&smp->procs[i]));
    json_object_set_new(j, "processes", procs);
    return j;
}

json_t *snapshot_to_jansson(const struct snapshot *s)
{
    json_t *j = json_object(), *gpus = json_array(), *samples = json_array();
    char iso[40];

    time_format_iso(s->time_ms, iso, sizeof(iso));
    json_object_set_new(j, "schema", json_string(SNAPSHOT_SCHEMA));
    json_object_set_new(j, "gpudoctor_version", jstr_or_null(s->gpudoctor_version));
    json_object_set_new(j, "hostname", jstr_or_null(s->hostname));
    json_object_set_new(j, "time_ms", json_integer(s->time_ms));
    json_object_set_new(j, "time_utc", json_string(iso));
    json_object_set_new(j, "window_ms", json_integer(s->window_ms));
    json_object_set_new(j, "root", jstr_or_null(s->root));
    json_object_set_new(j, "collectors", collectors_to_json(s));
    json_object_set_new(j, "nvml", nvml_system_to_json(&s->nvml));
    for (size_t i = 0; i < s->n_gpus; i++)
        json_array_append_new(gpus, gpu_to_json(&s->gpus[i], 0));
    json_object_set_new(j, "gpus", gpus);
    json_object_set_new(j, "processes", proc_table_to_json(&s->procs));
    json_object_set_new(j, "host", host_info_to_json(&s->host));
    json_object_set_new(j, "pcie", pcie_info_to_json(&s->pcie));
    json_object_set_new(j, "driver", driver_info_to_json(&s->driver));
    json_object_set_new(j, "stack", stack_info_to_json(&s->stack));
    if (s->state.status != STATE_NOT_READ) /* a snapshot without it reads as before */
        json_object_set_new(j, "state", state_info_to_json(&s->state));
    if (s->bench.state !=
        BENCH_NOT_RUN) /* only bench measures: other snapshots stay as they were */
        json_object_set_new(j, "bench", bench_info_to_json(&s->bench));
    if (s->ib.valid != 0) /* read by the ib collector: snapshots before it stay as they were */
        json_object_set_new(j, "ib", ib_info_to_json(&s->ib));
    if (s->fabric.valid != 0) /* read by the fabric collector */
        json_object_set_new(j, "fabric", fabric_info_to_json(&s->fabric));
    if (s->reported.n_errors > 0) /* only when the user gave an error */
        json_object_set_new(j, "reported", reported_info_to_json(&s->reported));
    for (size_t i = 0; i < s->n_samples; i++)
        json_array_append_new(samples, sample_to_json(&s->samples[i]));
    json_object_set_new(j, "samples", samples);
    return j;
}

char *snapshot_to_json(const struct snapshot *s)
{
    json_t *j = snapshot_to_jansson(s);
    char *text = json_dumps(j, SNAPSHOT_DUMP_FLAGS);
    char *out;

    json_decref(j);
    if (text == NULL)
        fatal("out of memory serialising the snapshot");
    /* json_dumps allocates with jansson's allocator; hand the caller a string for free(). */
    out = xasprintf("%s\n", text);
    free(text);
    return out;
}

/* ---- reading ---- */

static int read_collectors(struct snapshot *s, const json_t *j, struct jerr *err)
{
    if (j == NULL)
        return 0;
    if (!json_is_object(j)) {
        jerr_set(err, "collectors", "expected an object");
        return -1;
    }
    for (size_t i = 0; i < COLLECTOR__COUNT; i++) {
        struct collector_status *c = &s->collectors[i];
        const json_t *o = json_object_get(j, collector_names[i]);
        const json_t *state, *notes;
        char path[64];
        int64_t elapsed = 0;
        size_t k;

        if (o == NULL)
            continue;
        snprintf(path, sizeof(path), "collectors.%s", collector_names[i]);
        state = json_object_get(o, "state");
        if (!json_is_string(state)) {
            jerr_set(err, path, "state: expected a string");
            return -1;
        }
        for (k = 0; collector_state_names[k] != NULL; k++) {
            if (strcmp(collector_state_names[k], json_string_value(state)) == 0)
                break;
        }
        if (collector_state_names[k] == NULL) {
            jerr_set(err, path, "state: unknown state \"%s\"", json_string_value(state));
            return -1;
        }
        c->state = (enum collector_state)k;
        if (jget_str(o, "detail", path, &c->detail, err) != 0 ||
            jget_int(o, "elapsed_us", path, &elapsed, err) != 0)
            return -1;
        c->elapsed_us = elapsed;
        notes = json_object_get(o, "notes");
        if (notes != NULL) {
            json_t *n;

            if (!json_is_array(notes)) {
                jerr_set(err, path, "notes: expected an array of strings");
                return -1;
            }
            json_array_foreach(notes, k, n)
            {
                if (!json_is_string(n)) {
                    jerr_set(err, path, "notes[%zu]: expected a string", k);
                    return -1;
                }
                xgrow(&c->notes, &c->cap_notes, c->n_notes + 1, sizeof(*c->notes));
                c->notes[c->n_notes++] = str_sanitized(json_string_value(n));
            }
        }
    }
    return 0;
}

/* One GPU of a "gpus" array (the snapshot's or a sample's), its NVML pids checked: index i. */
static int read_gpu(struct gpu *g, uint32_t i, const json_t *j, const char *path, struct jerr *err)
{
    gpu_init(g, i);
    if (gpu_from_json(g, j, path, JF_RC_NOT_COLLECTED, NULL, err) != 0 ||
        gpu_pids_check(g, path, err) != 0)
        return -1;
    return 0;
}

static int read_gpus(struct gpu **out, size_t *n_out, const json_t *j, const char *name,
                     struct jerr *err)
{
    size_t i;
    json_t *g;

    if (j == NULL)
        return 0;
    if (!json_is_array(j)) {
        jerr_set(err, name, "expected an array");
        return -1;
    }
    *out = xcalloc(json_array_size(j) ? json_array_size(j) : 1, sizeof(**out));
    json_array_foreach(j, i, g)
    {
        char path[64];

        snprintf(path, sizeof(path), "%s[%zu]", name, i);
        *n_out = i + 1;
        if (read_gpu(&(*out)[i], (uint32_t)i, g, path, err) != 0)
            return -1;
    }
    return 0;
}

int sample_from_json(struct snapshot *s, const json_t *o, const char *path, struct jerr *err)
{
    char sub[96];
    int64_t t_ms = 0;
    struct sample *smp;
    const json_t *procs, *host;

    if (!json_is_object(o)) {
        jerr_set(err, path, "expected an object");
        return -1;
    }
    if (jget_int(o, "t_ms", path, &t_ms, err) != 0)
        return -1;
    smp = snapshot_add_sample(s, t_ms);
    snprintf(sub, sizeof(sub), "%s.gpus", path);
    if (read_gpus(&smp->gpus, &smp->n_gpus, json_object_get(o, "gpus"), sub, err) != 0)
        return -1;
    host = json_object_get(o, "host");
    snprintf(sub, sizeof(sub), "%s.host", path);
    if (host != NULL && host_sample_from_json(&smp->host, host, sub, err) != 0)
        return -1;
    procs = json_object_get(o, "processes");
    if (procs != NULL) {
        size_t k;
        json_t *p;

        if (!json_is_array(procs)) {
            jerr_set(err, path, "processes: expected an array");
            return -1;
        }
        smp->procs = xcalloc(json_array_size(procs) + 1, sizeof(*smp->procs));
        json_array_foreach(procs, k, p)
        {
            snprintf(sub, sizeof(sub), "%s.processes[%zu]", path, k);
            if (proc_sample_from_json(&smp->procs[k], p, sub, err) != 0)
                return -1;
            smp->n_procs = k + 1;
        }
    }
    return 0;
}

static int read_samples(struct snapshot *s, const json_t *j, struct jerr *err)
{
    size_t i;
    json_t *o;

    if (j == NULL)
        return 0;
    if (!json_is_array(j)) {
        jerr_set(err, "samples", "expected an array");
        return -1;
    }
    json_array_foreach(j, i, o)
    {
        char path[64];

        snprintf(path, sizeof(path), "samples[%zu]", i);
        if (sample_from_json(s, o, path, err) != 0)
            return -1;
    }
    return 0;
}

static int read_section(const json_t *root, const char *key, struct jerr *err,
                        int (*fn)(void *, const json_t *, const char *, struct jerr *), void *obj)
{
    const json_t *j = json_object_get(root, key);

    if (j == NULL || json_is_null(j))
        return 0;
    return fn(obj, j, key, err);
}

/* Adapters so the section readers fit one signature. */
#define SECTION_READER(name, type)                                                                 \
    static int read_##name(void *obj, const json_t *j, const char *path, struct jerr *err)         \
    {                                                                                              \
        return name##_from_json((type *)obj, j, path, err);                                        \
    }
SECTION_READER(nvml_system, struct nvml_system)
SECTION_READER(proc_table, struct proc_table)
SECTION_READER(host_info, struct host_info)
SECTION_READER(pcie_info, struct pcie_info)
SECTION_READER(driver_info, struct driver_info)
SECTION_READER(stack_info, struct stack_info)
SECTION_READER(state_info, struct state_info)
SECTION_READER(bench_info, struct bench_info)
SECTION_READER(ib_info, struct ib_info)
SECTION_READER(fabric_info, struct fabric_info)
SECTION_READER(reported_info, struct reported_info)
#undef SECTION_READER

static const char *const top_keys[] = { "schema",    "gpudoctor_version",
                                        "hostname",  "time_ms",
                                        "time_utc",  "window_ms",
                                        "root",      "collectors",
                                        "nvml",      "gpus",
                                        "processes", "host",
                                        "pcie",      "driver",
                                        "stack",     "samples",
                                        "state",     "bench",
                                        "ib",        "fabric",
                                        "reported",  NULL };

static int snapshot_read(struct snapshot *s, const json_t *root, struct jerr *err)
{
    const json_t *schema;
    const char *key;
    json_t *v;

    if (!json_is_object(root)) {
        jerr_set(err, "", "a snapshot is a JSON object");
        return -1;
    }
    schema = json_object_get(root, "schema");
    if (!json_is_string(schema)) {
        jerr_set(err, "", "not a gpudoctor snapshot: no \"schema\" key");
        return -1;
    }
    if (strcmp(json_string_value(schema), SNAPSHOT_SCHEMA) != 0) {
        jerr_set(err, "schema", "unsupported schema \"%s\" (this gpudoctor reads \"%s\")",
                 json_string_value(schema), SNAPSHOT_SCHEMA);
        return -1;
    }
    json_object_foreach((json_t *)root, key, v)
    {
        size_t k;

        for (k = 0; top_keys[k] != NULL; k++) {
            if (strcmp(top_keys[k], key) == 0)
                break;
        }
        if (top_keys[k] == NULL) {
            jerr_set(err, "", "unknown key \"%s\" in the snapshot", key);
            return -1;
        }
    }
    if (jget_str(root, "gpudoctor_version", "", &s->gpudoctor_version, err) != 0 ||
        jget_str(root, "hostname", "", &s->hostname, err) != 0 ||
        jget_int(root, "time_ms", "", &s->time_ms, err) != 0 ||
        jget_int(root, "window_ms", "", &s->window_ms, err) != 0 ||
        jget_str(root, "root", "", &s->root, err) != 0)
        return -1;
    if (read_collectors(s, json_object_get(root, "collectors"), err) != 0 ||
        read_section(root, "nvml", err, read_nvml_system, &s->nvml) != 0 ||
        read_gpus(&s->gpus, &s->n_gpus, json_object_get(root, "gpus"), "gpus", err) != 0 ||
        read_section(root, "processes", err, read_proc_table, &s->procs) != 0 ||
        read_section(root, "host", err, read_host_info, &s->host) != 0 ||
        read_section(root, "pcie", err, read_pcie_info, &s->pcie) != 0 ||
        read_section(root, "driver", err, read_driver_info, &s->driver) != 0 ||
        read_section(root, "stack", err, read_stack_info, &s->stack) != 0 ||
        read_section(root, "state", err, read_state_info, &s->state) != 0 ||
        read_section(root, "bench", err, read_bench_info, &s->bench) != 0 ||
        read_section(root, "ib", err, read_ib_info, &s->ib) != 0 ||
        read_section(root, "fabric", err, read_fabric_info, &s->fabric) != 0 ||
        read_section(root, "reported", err, read_reported_info, &s->reported) != 0 ||
        read_samples(s, json_object_get(root, "samples"), err) != 0)
        return -1;
    return 0;
}

char *jerr_format(const struct jerr *err, const char *text, const char *name)
{
    int line, column;

    if (text != NULL && jlocate(text, err->path, &line, &column))
        return xasprintf("%s:%d:%d: %s%s%s", name, line, column, err->path, *err->path ? ": " : "",
                         err->msg);
    return xasprintf("%s: %s%s%s", name, err->path, *err->path ? ": " : "", err->msg);
}

/*
 * The snapshot in a document: the document itself, or the one a report of `check --json`
 * (schema gpudoctor.check/1, render/json.h) carries under "snapshot", judged again when read.
 */
static const json_t *report_snapshot(const json_t *root)
{
    const json_t *schema = json_object_get(root, "schema");
    const json_t *inner = json_object_get(root, "snapshot");

    if (json_is_string(schema) && strcmp(json_string_value(schema), "gpudoctor.check/1") == 0 &&
        json_is_object(inner))
        return inner;
    return root;
}

/*
 * The streaming reader. jansson's tree costs about four times the text (a 184 MB snapshot took
 * 1.8 GB with our structs beside it): the arrays that make a snapshot big (its GPUs, its
 * processes, its samples) are parsed one element at a time instead, each element's tree freed
 * as soon as it is converted. The rest, small, is kept as a tree with those arrays empty and read
 * by snapshot_read as before; the elements read ahead are put in place after it.
 *
 * It applies to documents that start with the right "schema" (every snapshot gpudoctor writes,
 * and jq keeps the order). Anything else, and any syntax error or duplicate key, is read whole by
 * json_loadb, so its messages are jansson's own, as they were.
 */
struct cursor {
    const char *text;
    size_t len, pos;
};

enum stream_rc {
    STREAM_OK,
    STREAM_WHOLE, /* read it whole instead: not a snapshot we stream, or a syntax error */
    STREAM_ERROR, /* a value was wrong: err says which */
};

/* What was read ahead of the small tree. */
struct streamed {
    struct gpu *gpus;
    size_t n_gpus, cap_gpus;
    bool have_gpus;
    struct proc *procs;
    size_t n_procs, cap_procs;
    bool have_procs;
};

static bool at(struct cursor *c, char ch)
{
    while (c->pos < c->len && (c->text[c->pos] == ' ' || c->text[c->pos] == '\t' ||
                               c->text[c->pos] == '\n' || c->text[c->pos] == '\r'))
        c->pos++;
    return c->pos < c->len && c->text[c->pos] == ch;
}

static bool take(struct cursor *c, char ch)
{
    if (!at(c, ch))
        return false;
    c->pos++;
    return true;
}

/* The next JSON value (after blanks), or NULL on a syntax error. */
static json_t *next_value(struct cursor *c)
{
    json_error_t e;
    json_t *v = json_loadb(c->text + c->pos, c->len - c->pos,
                           JSON_DECODE_ANY | JSON_DISABLE_EOF_CHECK | JSON_REJECT_DUPLICATES, &e);

    if (v != NULL)
        c->pos += (size_t)e.position;
    return v;
}

/* The next key and its ':' into *key (the caller decrefs), or false on a syntax error. */
static bool next_key(struct cursor *c, json_t **key)
{
    *key = at(c, '"') ? next_value(c) : NULL;
    if (*key != NULL && json_is_string(*key) && take(c, ':'))
        return true;
    json_decref(*key);
    *key = NULL;
    return false;
}

typedef int (*element_fn)(struct snapshot *s, struct streamed *st, const json_t *j,
                          const char *path, struct jerr *err);

static int read_gpu_element(struct snapshot *s, struct streamed *st, const json_t *j,
                            const char *path, struct jerr *err)
{
    struct gpu *g;

    (void)s;
    xgrow(&st->gpus, &st->cap_gpus, st->n_gpus + 1, sizeof(*st->gpus));
    g = &st->gpus[st->n_gpus];
    st->n_gpus++;
    return read_gpu(g, (uint32_t)(st->n_gpus - 1), j, path, err);
}

static int read_proc_element(struct snapshot *s, struct streamed *st, const json_t *j,
                             const char *path, struct jerr *err)
{
    struct proc *p;

    (void)s;
    xgrow(&st->procs, &st->cap_procs, st->n_procs + 1, sizeof(*st->procs));
    p = &st->procs[st->n_procs++];
    memset(p, 0, sizeof(*p));
    return proc_from_json(p, j, path, err);
}

static int read_sample_element(struct snapshot *s, struct streamed *st, const json_t *j,
                               const char *path, struct jerr *err)
{
    (void)st;
    return sample_from_json(s, j, path, err);
}

/* The array at c, one element at a time, each read by fn and freed; name is its path. */
static enum stream_rc each_element(struct cursor *c, const char *name, element_fn fn,
                                   struct snapshot *s, struct streamed *st, struct jerr *err)
{
    if (!take(c, '['))
        return STREAM_WHOLE;
    if (take(c, ']'))
        return STREAM_OK;
    for (size_t i = 0;; i++) {
        json_t *v = next_value(c);
        char path[64];
        int rc;

        if (v == NULL)
            return STREAM_WHOLE;
        snprintf(path, sizeof(path), "%s[%zu]", name, i);
        rc = fn(s, st, v, path, err);
        json_decref(v);
        if (rc != 0)
            return STREAM_ERROR;
        if (take(c, ']'))
            return STREAM_OK;
        if (!take(c, ','))
            return STREAM_WHOLE;
    }
}

/* Adds key = value to the small tree; false for a duplicate key (read whole: jansson says). */
static bool keep(json_t *obj, json_t *key, json_t *value)
{
    const char *k = json_string_value(key);
    bool fresh = json_object_get(obj, k) == NULL;

    if (fresh)
        json_object_set_new(obj, k, value);
    else
        json_decref(value);
    json_decref(key);
    return fresh;
}

/* An array that streams: its key, the path of its elements, their reader. */
struct stream_key {
    const char *key, *path;
    element_fn fn;
    bool *seen;
};

static enum stream_rc members(struct cursor *c, json_t *obj, const struct stream_key *streams,
                              bool top, struct snapshot *s, struct streamed *st, struct jerr *err);

/* The value of key at c into *value: streamed, or a tree (NULL on a syntax error). */
static enum stream_rc member_value(struct cursor *c, const char *key, json_t **value,
                                   const struct stream_key *streams, bool top, struct snapshot *s,
                                   struct streamed *st, struct jerr *err)
{
    for (const struct stream_key *k = streams; k->key != NULL; k++) {
        if (strcmp(k->key, key) == 0 && at(c, '[')) {
            *k->seen = true;
            *value = json_array();
            return each_element(c, k->path, k->fn, s, st, err);
        }
    }
    /* The process table: an object whose "processes" array streams. */
    if (top && strcmp(key, "processes") == 0 && at(c, '{')) {
        const struct stream_key procs[] = {
            { "processes", "processes.processes", read_proc_element, &st->have_procs },
            { NULL, NULL, NULL, NULL },
        };

        c->pos++;
        *value = json_object();
        return members(c, *value, procs, false, s, st, err);
    }
    *value = next_value(c);
    return *value != NULL ? STREAM_OK : STREAM_WHOLE;
}

/* The members of the object at c (after its '{') into obj, streaming the arrays streams names. */
static enum stream_rc members(struct cursor *c, json_t *obj, const struct stream_key *streams,
                              bool top, struct snapshot *s, struct streamed *st, struct jerr *err)
{
    if (take(c, '}'))
        return STREAM_OK;
    for (;;) {
        enum stream_rc rc;
        json_t *key, *value = NULL;

        if (!next_key(c, &key))
            return STREAM_WHOLE;
        rc = member_value(c, json_string_value(key), &value, streams, top, s, st, err);
        if (value == NULL) {
            json_decref(key);
            return STREAM_WHOLE;
        }
        if (!keep(obj, key, value))
            return STREAM_WHOLE;
        if (rc != STREAM_OK)
            return rc;
        if (take(c, '}'))
            return STREAM_OK;
        if (!take(c, ','))
            return STREAM_WHOLE;
    }
}

/* The snapshot at c into s, the small rest into *root. */
static enum stream_rc stream_snapshot(struct cursor *c, struct snapshot *s, struct streamed *st,
                                      json_t **root, struct jerr *err)
{
    const struct stream_key top[] = {
        { "gpus", "gpus", read_gpu_element, &st->have_gpus },
        { "samples", "samples", read_sample_element, &(bool){ false } },
        { NULL, NULL, NULL, NULL },
    };
    json_t *key, *schema;
    enum stream_rc rc;

    *root = NULL;
    if (!take(c, '{') || !next_key(c, &key))
        return STREAM_WHOLE;
    schema = strcmp(json_string_value(key), "schema") == 0 ? next_value(c) : NULL;
    if (!json_is_string(schema) || strcmp(json_string_value(schema), SNAPSHOT_SCHEMA) != 0) {
        json_decref(key);
        json_decref(schema);
        return STREAM_WHOLE;
    }
    *root = json_object();
    keep(*root, key, schema);
    if (take(c, '}'))
        rc = STREAM_OK;
    else if (!take(c, ','))
        return STREAM_WHOLE;
    else
        rc = members(c, *root, top, true, s, st, err);
    if (rc == STREAM_OK) {
        at(c, '\0'); /* skips the blanks after the document */
        if (c->pos != c->len)
            rc = STREAM_WHOLE;
    }
    return rc;
}

/* Puts what was read ahead in place of the empty arrays snapshot_read read. */
static void install(struct snapshot *s, struct streamed *st)
{
    if (st->have_gpus) {
        for (size_t i = 0; i < s->n_gpus; i++)
            gpu_free(&s->gpus[i]);
        free(s->gpus);
        s->gpus = st->gpus;
        s->n_gpus = st->n_gpus;
        st->gpus = NULL;
        st->n_gpus = 0;
    }
    if (st->have_procs) {
        for (size_t i = 0; i < s->procs.n_procs; i++)
            proc_free(&s->procs.procs[i]);
        free(s->procs.procs);
        s->procs.procs = st->procs;
        s->procs.n_procs = st->n_procs;
        st->procs = NULL;
        st->n_procs = 0;
    }
}

static void streamed_free(struct streamed *st)
{
    for (size_t i = 0; i < st->n_gpus; i++)
        gpu_free(&st->gpus[i]);
    free(st->gpus);
    for (size_t i = 0; i < st->n_procs; i++)
        proc_free(&st->procs[i]);
    free(st->procs);
}

/* The whole document as one tree: what is not streamed, and every syntax error's message. */
static struct snapshot *read_whole(const char *text, size_t len, const char *name, char **cause)
{
    json_error_t jerror;
    struct jerr err = { "", "" };
    struct snapshot *s;
    json_t *root;

    root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerror);
    if (root == NULL) {
        /* jansson quotes the text near the error: escaped, as every quote of the input is. */
        char *near = str_excerpt(jerror.text, 200);

        *cause = xasprintf("%s:%d:%d: %s", name, jerror.line, jerror.column, near);
        free(near);
        return NULL;
    }
    s = snapshot_new();
    if (snapshot_read(s, report_snapshot(root), &err) != 0) {
        if (report_snapshot(root) != root) { /* the path in the whole document */
            const char *pre = *err.path ? "snapshot." : "snapshot";
            size_t p = strlen(pre), n = strlen(err.path);

            if (p + n < sizeof(err.path)) {
                memmove(err.path + p, err.path, n + 1);
                memcpy(err.path, pre, p);
            }
        }
        *cause = jerr_format(&err, text, name);
        snapshot_free(s);
        s = NULL;
    }
    json_decref(root);
    return s;
}

struct snapshot *snapshot_from_json(const char *text, size_t len, const char *name, char **cause)
{
    struct cursor c = { text, len, 0 };
    struct jerr err = { "", "" };
    struct streamed st = { 0 };
    struct snapshot *s = snapshot_new();
    enum stream_rc rc;
    json_t *root;

    rc = stream_snapshot(&c, s, &st, &root, &err);
    if (rc == STREAM_OK && snapshot_read(s, root, &err) != 0)
        rc = STREAM_ERROR;
    json_decref(root);
    if (rc == STREAM_OK)
        install(s, &st);
    streamed_free(&st);
    if (rc == STREAM_OK)
        return s;
    snapshot_free(s);
    if (rc == STREAM_WHOLE)
        return read_whole(text, len, name, cause);
    *cause = jerr_format(&err, text, name);
    return NULL;
}

struct snapshot *snapshot_load(const char *path, char **cause)
{
    struct snapshot *s;
    char *text = NULL;
    ssize_t n;

    n = file_slurp_text_at(AT_FDCWD, strcmp(path, "-") == 0 ? "/dev/stdin" : path,
                           SNAPSHOT_MAX_BYTES, &text);
    if (n == -EILSEQ) {
        /* text holds what came before the NUL: its end is where the NUL is. */
        const char *line = text, *nl;
        int lineno = 1;

        while ((nl = strchr(line, '\n')) != NULL) {
            lineno++;
            line = nl + 1;
        }
        *cause = xasprintf("%s:%d:%zu: a NUL byte: not a snapshot (it is text)", path, lineno,
                           strlen(line) + 1);
        free(text);
        return NULL;
    }
    if (n < 0) {
        *cause = xasprintf("%s: %s", path,
                           n == -EFBIG ? "larger than " SNAPSHOT_MAX_TEXT
                                         ", the most a snapshot may hold"
                                       : strerror((int)-n));
        return NULL;
    }
    s = snapshot_from_json(text, (size_t)n, path, cause);
    free(text);
    return s;
}
