/*
 * The fleet's inputs: snapshots (or `check --json` reports, or `watch --record` recordings) in
 * files, in directories, or one after the other on standard input. Each becomes one node: the
 * rules run on it as `check --from` would run them, every figure of the metric table is read,
 * and it is held against the profile of its GPU model. Only the node's row is kept; the snapshot
 * is freed, so a fleet of thousands costs the memory of one snapshot at a time.
 */
#include "fleet/fleet.h"
#include "util/strutil.h"
#include "util/xalloc.h"
#include "watch/recording.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The most common of the GPUs' models, "unknown" when none was read. */
static char *node_model(const struct profile_facts *f)
{
    const char *best = NULL;
    size_t best_n = 0;

    for (size_t i = 0; i < f->n_gpus; i++) {
        size_t c = 0;

        if (f->gpus[i].model == NULL)
            continue;
        for (size_t j = 0; j < f->n_gpus; j++)
            c += f->gpus[j].model && strcmp(f->gpus[j].model, f->gpus[i].model) == 0;
        if (c > best_n || (c == best_n && best && strcmp(f->gpus[i].model, best) < 0)) {
            best = f->gpus[i].model;
            best_n = c;
        }
    }
    return xstrdup(best ? best : "unknown");
}

/* The profile for a node of this model: the first naming the model, else the first naming none. */
static const struct fleet_profile *profile_for(const struct fleet *fl, const char *model)
{
    const struct fleet_profile *any = NULL;

    for (size_t i = 0; i < fl->opts.n_profiles; i++) {
        const struct profile *p = fl->opts.profiles[i].profile;

        if (p->set[PK_GPU_MODEL] && strcmp(p->text[PK_GPU_MODEL], model) == 0)
            return &fl->opts.profiles[i];
        if (!p->set[PK_GPU_MODEL] && any == NULL)
            any = &fl->opts.profiles[i];
    }
    return any;
}

void fleet_add_snapshot(struct fleet *fl, const struct snapshot *s, const char *source)
{
    struct rules_config rc = *fl->opts.rules;
    struct findings found = { 0 };
    struct profile_facts facts;
    const struct fleet_profile *fp;
    struct fleet_evidence e;
    struct fleet_node *n;

    /* The profile is judged here, per GPU model; not the configuration's (this machine's). */
    rc.th.profile = NULL;
    rules_run(s, NULL, &rc, &found);
    profile_facts_from_snapshot(&facts, s);
    n = fleet_add_node(fl, s->hostname && *s->hostname ? s->hostname : source, source);
    n->time_ms = s->time_ms;
    n->model = node_model(&facts);
    n->n_gpus = facts.count_valid ? facts.gpu_count : (uint32_t)s->n_gpus;
    n->check_status = rules_exit_status(s, &found);
    e = (struct fleet_evidence){ s, &found, &facts, &rc.th };
    for (size_t m = 0; m < fleet_n_metrics; m++) {
        if (fleet_metrics[m].from_snapshot)
            fleet_metrics[m].from_snapshot(&e, &n->values[m]);
    }
    n->findings = xcalloc(found.n ? found.n : 1, sizeof(*n->findings));
    for (size_t i = 0; i < found.n; i++) {
        const struct finding *f = &found.items[i];
        struct fleet_finding *ff = &n->findings[n->n_findings++];

        ff->id = xstrdup(f->rule->id);
        ff->severity = f->severity;
        ff->subject = subject_key(&f->subject);
        ff->title = xstrdup(f->title ? f->title : f->rule->title);
    }
    fp = profile_for(fl, n->model);
    if (fp != NULL) {
        n->profile = fp->path;
        n->n_devs = profile_compare(fp->profile, &facts, &n->devs);
    }
    profile_facts_free(&facts);
    findings_free(&found);
}

/* ---- files and directories ---- */

static size_t read_file(struct fleet *fl, const char *path)
{
    char *cause = NULL;
    struct snapshot *s = recording_load(path, &cause);

    if (s == NULL) {
        fleet_error(fl, path, "%s", cause);
        free(cause);
        return 0;
    }
    fleet_add_snapshot(fl, s, path);
    snapshot_free(s);
    return 1;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static size_t read_dir(struct fleet *fl, const char *path)
{
    DIR *d = opendir(path);
    char **names = NULL;
    size_t n = 0, cap = 0, added = 0;
    struct dirent *de;

    if (d == NULL) {
        fleet_error(fl, path, "%s", strerror(errno));
        return 0;
    }
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.' ||
            !(str_ends(de->d_name, ".json") || str_ends(de->d_name, ".jsonl")))
            continue;
        xgrow(&names, &cap, n + 1, sizeof(*names));
        names[n++] = xstrdup(de->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof(*names), cmp_name);
    for (size_t i = 0; i < n; i++) {
        char *p = xasprintf("%s%s%s", path, str_ends(path, "/") ? "" : "/", names[i]);
        struct stat st;

        if (stat(p, &st) == 0 && S_ISREG(st.st_mode))
            added += read_file(fl, p);
        free(p);
        free(names[i]);
    }
    free(names);
    if (n == 0)
        fleet_error(fl, path, "no *.json or *.jsonl file in this directory");
    return added;
}

/* ---- a stream of documents ---- */

struct stream_ctx {
    struct fleet *fl;
    size_t added;
};

static void one_doc(void *ctx, size_t index, const char *text, size_t len, const char *why)
{
    struct stream_ctx *c = ctx;
    char name[48], *cause = NULL;
    struct snapshot *s;

    snprintf(name, sizeof(name), "stdin #%zu", index + 1);
    if (text == NULL) {
        fleet_error(c->fl, name, "%s", why);
        return;
    }
    s = snapshot_from_json(text, len, name, &cause);
    if (s == NULL) {
        fleet_error(c->fl, name, "%s", cause);
        free(cause);
        return;
    }
    fleet_add_snapshot(c->fl, s, name);
    snapshot_free(s);
    c->added++;
}

size_t fleet_split_stream(int fd, size_t max, fleet_doc_fn *fn, void *ctx)
{
    size_t cap = 1 << 16, len = 0, pos = 0, start = 0, docs = 0;
    char *buf = xmalloc(cap);
    int depth = 0;
    bool in_string = false, escaped = false, in_doc = false;

    for (;;) {
        ssize_t got;

        if (pos == len) {
            /* Keep only the document under way. */
            if (start > 0) {
                memmove(buf, buf + start, len - start);
                len -= start;
                pos -= start;
                start = 0;
            }
            if (len + 4096 > cap) {
                if (cap > max + 4096) {
                    fn(ctx, docs, NULL, 0, "a document larger than " SNAPSHOT_MAX_TEXT);
                    break;
                }
                cap *= 2;
                buf = xrealloc(buf, cap);
            }
            got = read(fd, buf + len, cap - len - 1);
            if (got < 0 && errno == EINTR)
                continue;
            if (got < 0) {
                char why[128];

                snprintf(why, sizeof(why), "cannot read standard input: %s", strerror(errno));
                fn(ctx, docs, NULL, 0, why);
                break;
            }
            if (got == 0) {
                if (in_doc)
                    fn(ctx, docs, NULL, 0, "the stream ends inside a document");
                break;
            }
            len += (size_t)got;
        }
        for (; pos < len; pos++) {
            char ch = buf[pos];

            if (!in_doc) {
                if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r')
                    continue;
                if (ch != '{') {
                    fn(ctx, docs, NULL, 0, "not a JSON object where a document should start");
                    free(buf);
                    return docs;
                }
                in_doc = true;
                start = pos;
                depth = 0;
            }
            if (pos - start >= max) {
                fn(ctx, docs, NULL, 0, "a document larger than " SNAPSHOT_MAX_TEXT);
                free(buf);
                return docs;
            }
            if (in_string) {
                if (escaped)
                    escaped = false;
                else if (ch == '\\')
                    escaped = true;
                else if (ch == '"')
                    in_string = false;
                continue;
            }
            if (ch == '"') {
                in_string = true;
            } else if (ch == '{' || ch == '[') {
                depth++;
            } else if ((ch == '}' || ch == ']') && --depth == 0) {
                char saved = buf[pos + 1];

                buf[pos + 1] = '\0'; /* the room is there: reads leave one byte */
                fn(ctx, docs++, buf + start, pos + 1 - start, NULL);
                buf[pos + 1] = saved;
                in_doc = false;
                start = pos + 1;
            }
        }
    }
    free(buf);
    return docs;
}

size_t fleet_read(struct fleet *fl, const char *operand)
{
    struct stat st;

    if (strcmp(operand, "-") == 0) {
        struct stream_ctx c = { fl, 0 };
        size_t docs = fleet_split_stream(STDIN_FILENO, SNAPSHOT_MAX_BYTES, one_doc, &c);

        if (docs == 0 && fl->n_errors == 0)
            fleet_error(fl, "stdin", "no document on standard input");
        return c.added;
    }
    if (stat(operand, &st) != 0) {
        fleet_error(fl, operand, "%s", strerror(errno));
        return 0;
    }
    if (S_ISDIR(st.st_mode))
        return read_dir(fl, operand);
    return read_file(fl, operand);
}

/* ---- one row per node ---- */

static int cmp_name_time(const void *a, const void *b)
{
    const struct fleet_node *x = a, *y = b;
    int c = strcmp(x->name, y->name);

    if (c)
        return c;
    return (x->time_ms < y->time_ms) - (x->time_ms > y->time_ms); /* newest first */
}

void fleet_dedupe(struct fleet *fl)
{
    size_t k = 0;

    if (fl->n > 1)
        qsort(fl->nodes, fl->n, sizeof(*fl->nodes), cmp_name_time);
    for (size_t i = 0; i < fl->n; i++) {
        if (k > 0 && strcmp(fl->nodes[k - 1].name, fl->nodes[i].name) == 0) {
            fleet_node_free(&fl->nodes[i]); /* an older snapshot of a node already kept */
            fl->duplicates++;
            continue;
        }
        if (k != i)
            fl->nodes[k] = fl->nodes[i];
        k++;
    }
    fl->n = k;
}
