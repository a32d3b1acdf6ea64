/*
 * The fleet's inputs: snapshots (or `check --json` reports, or `watch --record` recordings) in
 * files, in directories, or one after the other on standard input. Each becomes one node: the
 * rules run on it as `check --from` would run them, every figure of the metric table is read,
 * and it is held against the profile of its GPU model. Only the node's row is kept; the snapshot
 * is freed, so a fleet of thousands costs the memory of one snapshot per worker thread.
 */
#include "fleet/fleet.h"
#include "util/fileio.h"
#include "util/i18n.h"
#include "util/strutil.h"
#include "util/xalloc.h"
#include "watch/recording.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
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
static const struct fleet_profile *profile_for(const struct fleet_opts *o, const char *model)
{
    const struct fleet_profile *any = NULL;

    for (size_t i = 0; i < o->n_profiles; i++) {
        const struct profile *p = o->profiles[i].profile;

        if (p->set[PK_GPU_MODEL] && strcmp(p->text[PK_GPU_MODEL], model) == 0)
            return &o->profiles[i];
        if (!p->set[PK_GPU_MODEL] && any == NULL)
            any = &o->profiles[i];
    }
    return any;
}

/*
 * The node a snapshot describes, built without touching the fleet (only its options are read):
 * worker threads call it side by side.
 */
static void node_from_snapshot(const struct fleet_opts *o, const struct snapshot *s,
                               const char *source, struct fleet_node *n)
{
    struct rules_config rc = *o->rules;
    struct findings found = { 0 };
    struct profile_facts facts;
    const struct fleet_profile *fp;
    struct fleet_evidence e;

    /* The profile is judged here, per GPU model; not the configuration's (this machine's). */
    rc.th.profile = NULL;
    rules_run(s, NULL, &rc, &found);
    profile_facts_from_snapshot(&facts, s);
    fleet_node_init(n, s->hostname && *s->hostname ? s->hostname : source, source);
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
        if (f->title_l != NULL)
            ff->title_l = xstrdup(f->title_l);
        else if (f->title == NULL && i18n_active())
            ff->title_l = xstrdup(_(f->rule->title));
    }
    fp = profile_for(o, n->model);
    if (fp != NULL) {
        n->profile = fp->path;
        n->n_devs = profile_compare(fp->profile, &facts, &n->devs);
    }
    profile_facts_free(&facts);
    findings_free(&found);
}

void fleet_add_snapshot(struct fleet *fl, const struct snapshot *s, const char *source)
{
    char *shown = str_sanitized(source); /* as a file name is shown from the readers below */
    struct fleet_node n;

    node_from_snapshot(&fl->opts, s, shown, &n);
    fleet_push_node(fl, &n);
    free(shown);
}

/* ---- the readers: a pool of worker threads ---- */

/*
 * One input, in the order the operands name them: a file to read, a document of a stream, or an
 * error this thread already knows. A worker turns a file or a document into a node (or the reason
 * it could not); the nodes and errors join the fleet in the inputs' order once all are done, so
 * the report is the same byte for byte whatever the number of threads.
 */
struct job {
    char *source; /* the file, "stdin #3", as reports show it: str_sanitized */
    int fd;       /* the file to read, opened and judged regular by who queued it; else -1 */
    char *text;   /* freed once parsed */
    size_t len;
    bool if_first_error; /* an error only if none came before it ("no document on stdin") */
    bool done;
    bool have_node;
    struct fleet_node node;
    char *error; /* why it could not be read */
};

struct reader {
    const struct fleet_opts *opts;
    unsigned threads;     /* workers at most; 1: this thread does each job as it comes */
    struct job **jobs;    /* every input so far, in order */
    size_t n, cap, taken; /* jobs[taken..n) wait for a worker */
    bool closed;          /* no more jobs */
    pthread_mutex_t mu;
    pthread_cond_t work, room;
    pthread_t *tids;
    unsigned started;
    size_t inputs;    /* files and documents so far, read or not */
    size_t over;      /* of them, those beyond FLEET_MAX_INPUTS: not read */
    char *over_first; /* the first of those, as named */
};

/* Documents waiting for a worker, per worker: bounds what a fast stream puts in memory. */
#define QUEUE_PER_THREAD 2

unsigned fleet_threads(void)
{
    cpu_set_t set;
    long cpus = -1;

    if (sched_getaffinity(0, sizeof(set), &set) == 0)
        cpus = CPU_COUNT(&set);
    if (cpus < 1)
        cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (cpus < 1)
        return 1;
    return cpus > FLEET_MAX_THREADS ? FLEET_MAX_THREADS : (unsigned)cpus;
}

/*
 * Why a file or a document could not be read, without its name: the loaders start their messages
 * with the name they were given ("F:3:7: why", "F:3: why", "F: why"), and the fleet names the
 * source beside each error already (standard error, the report, the JSON's errors[]). The place
 * in it is said in words: "line 3, column 7: why".
 */
static char *error_without_source(const char *source, char *cause)
{
    size_t n = strlen(source);
    const char *rest = cause + n + 1;
    unsigned long line, column;
    int used = 0;
    char *out;

    if (strncmp(cause, source, n) != 0 || cause[n] != ':')
        return cause;
    if (isdigit((unsigned char)*rest) && sscanf(rest, "%lu:%lu: %n", &line, &column, &used) == 2 &&
        used > 0)
        out = xasprintf("line %lu, column %lu: %s", line, column, rest + used);
    else if (isdigit((unsigned char)*rest) && sscanf(rest, "%lu: %n", &line, &used) == 1 &&
             used > 0)
        out = xasprintf("line %lu: %s", line, rest + used);
    else
        out = xstrdup(rest + strspn(rest, " "));
    free(cause);
    return out;
}

static void job_run(const struct fleet_opts *o, struct job *j)
{
    char *cause = NULL;
    struct snapshot *s;

    if (j->fd >= 0) {
        /* Named in its messages as the report names it. */
        s = recording_load_fd(j->fd, j->source, NULL, 0, &cause);
        close(j->fd);
        j->fd = -1;
    } else {
        s = snapshot_from_json(j->text, j->len, j->source, &cause);
        free(j->text);
        j->text = NULL;
    }
    if (s == NULL) {
        j->error = error_without_source(j->source, cause);
        return;
    }
    node_from_snapshot(o, s, j->source, &j->node);
    j->have_node = true;
    snapshot_free(s); /* the node keeps its figures and findings only */
}

static void *worker_main(void *arg)
{
    struct reader *r = arg;

    pthread_mutex_lock(&r->mu);
    for (;;) {
        struct job *j;

        while (r->taken == r->n && !r->closed)
            pthread_cond_wait(&r->work, &r->mu);
        if (r->taken == r->n)
            break;
        j = r->jobs[r->taken++];
        pthread_cond_signal(&r->room);
        pthread_mutex_unlock(&r->mu);
        if (!j->done)
            job_run(r->opts, j);
        pthread_mutex_lock(&r->mu);
    }
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

static void reader_init(struct reader *r, const struct fleet_opts *o)
{
    memset(r, 0, sizeof(*r));
    r->opts = o;
    r->threads = o->threads ? o->threads : fleet_threads();
    if (r->threads > 1) {
        pthread_mutex_init(&r->mu, NULL);
        pthread_cond_init(&r->work, NULL);
        pthread_cond_init(&r->room, NULL);
        r->tids = xcalloc(r->threads, sizeof(*r->tids));
    }
}

/* Runs the jobs no worker took yet, in this thread. */
static void run_pending(struct reader *r)
{
    pthread_mutex_lock(&r->mu);
    while (r->taken < r->n) {
        struct job *j = r->jobs[r->taken++];

        pthread_mutex_unlock(&r->mu);
        if (!j->done)
            job_run(r->opts, j);
        pthread_mutex_lock(&r->mu);
    }
    pthread_mutex_unlock(&r->mu);
}

/* Queues a job (this thread's), waiting while enough wait already; one thread: runs it now. */
static void reader_push(struct reader *r, struct job *j)
{
    if (r->threads <= 1) {
        xgrow(&r->jobs, &r->cap, r->n + 1, sizeof(*r->jobs));
        r->jobs[r->n++] = j;
        if (!j->done)
            job_run(r->opts, j);
        return;
    }
    pthread_mutex_lock(&r->mu);
    while (r->started > 0 && r->n - r->taken >= (size_t)r->threads * QUEUE_PER_THREAD)
        pthread_cond_wait(&r->room, &r->mu);
    xgrow(&r->jobs, &r->cap, r->n + 1, sizeof(*r->jobs));
    r->jobs[r->n++] = j;
    pthread_cond_signal(&r->work);
    pthread_mutex_unlock(&r->mu);
    /* Workers start as jobs come, up to r->threads. */
    if (r->started < r->threads && pthread_create(&r->tids[r->started], NULL, worker_main, r) == 0)
        r->started++;
    if (r->started == 0)
        run_pending(r); /* no thread could start: fewer threads is no failure */
}

/*
 * Counts an input; true when it is beyond FLEET_MAX_INPUTS: it is not read, only counted (the
 * first named), so that memory stays bounded however many tiny documents a stream holds.
 */
static bool reader_full(struct reader *r, const char *source)
{
    if (r->inputs++ < FLEET_MAX_INPUTS)
        return false;
    if (r->over++ == 0)
        r->over_first = xstrdup(source);
    return true;
}

/*
 * A job from source: a file name may be anyone's in a shared directory, and is shown (report,
 * standard error, node name) as str_sanitize shows host names, so it cannot carry an escape
 * sequence, a newline or a bidirectional override into what people read.
 */
static struct job *job_new(const char *source)
{
    struct job *j = xcalloc(1, sizeof(*j));

    j->source = str_sanitized(source);
    j->fd = -1;
    return j;
}

/*
 * A file to read: name, relative to dirfd, shown as source. It is opened here, before it is
 * queued (the queue is short, so are the descriptors it holds), and what was opened is judged,
 * not the name: a FIFO, even one swapped in after the directory was listed, is refused without
 * waiting for a writer. An entry of a directory (in_dir) is never followed when it is a symbolic
 * link: whoever can write into a shared snapshot directory could point it at any file (fleet may
 * run as root), and the link's target is neither read nor its first bytes shown in an error. A
 * file named on the command line is the user's choice, a link to one followed.
 */
static void push_file(struct reader *r, int dirfd, const char *name, const char *source,
                      bool in_dir)
{
    struct job *j;
    int fd;

    if (reader_full(r, source))
        return;
    j = job_new(source);
    fd = file_open_regular_at(dirfd, name, in_dir ? FILE_OPEN_NOFOLLOW : 0);
    if (fd == -ELOOP && in_dir)
        j->error = xstrdup("a symbolic link, which is not followed in a directory: name its "
                           "target to read it");
    else if (fd == -EINVAL)
        j->error = xstrdup("not a regular file (a FIFO, a device or a socket): a stream is "
                           "read from '-'");
    else if (fd < 0)
        j->error = xstrdup(strerror(-fd));
    else
        j->fd = fd;
    j->done = j->error != NULL;
    reader_push(r, j);
}

static void push_error(struct reader *r, const char *source, const char *message)
{
    struct job *j;

    if (reader_full(r, source))
        return;
    j = job_new(source);

    j->error = xstrdup(message);
    j->done = true;
    reader_push(r, j);
}

/*
 * Waits for every job, then adds their nodes and errors to the fleet in order and frees them.
 * Returns the nodes added.
 */
static size_t reader_finish(struct reader *r, struct fleet *fl)
{
    size_t added = 0;

    if (r->threads > 1) {
        pthread_mutex_lock(&r->mu);
        r->closed = true;
        pthread_cond_broadcast(&r->work);
        pthread_mutex_unlock(&r->mu);
        run_pending(r); /* this thread helps with the last ones */
        for (unsigned i = 0; i < r->started; i++)
            pthread_join(r->tids[i], NULL);
        pthread_cond_destroy(&r->work);
        pthread_cond_destroy(&r->room);
        pthread_mutex_destroy(&r->mu);
        free(r->tids);
    }
    for (size_t i = 0; i < r->n; i++) {
        struct job *j = r->jobs[i];

        if (j->have_node) {
            fleet_push_node(fl, &j->node);
            added++;
        } else if (j->error != NULL && !(j->if_first_error && fl->n_errors > 0)) {
            fleet_error(fl, j->source, "%s", j->error);
        }
        free(j->source);
        if (j->fd >= 0)
            close(j->fd);
        free(j->text);
        free(j->error);
        free(j);
    }
    free(r->jobs);
    if (r->over > 0) {
        char *shown = str_sanitized(r->over_first);

        fleet_error(fl, shown,
                    "not read, nor the %zu input%s after it: fleet reads at most %d files and "
                    "documents",
                    r->over - 1, r->over == 2 ? "" : "s", FLEET_MAX_INPUTS);
        free(shown);
        free(r->over_first);
    }
    return added;
}

/* ---- files and directories ---- */

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void read_dir(struct reader *r, const char *path)
{
    /* Its entries are opened relative to the directory listed, whatever its name points to by
     * then. */
    int dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;

    if (d == NULL) {
        push_error(r, path, strerror(errno));
        if (dfd >= 0)
            close(dfd);
        return;
    }
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.' ||
            !(str_ends(de->d_name, ".json") || str_ends(de->d_name, ".jsonl")))
            continue;
        xgrow(&names, &cap, n + 1, sizeof(*names));
        names[n++] = xstrdup(de->d_name);
    }
    qsort(names, n, sizeof(*names), cmp_name);
    for (size_t i = 0; i < n; i++) {
        /* Not judged by its name's stat: the file read is checked once opened (push_file), and
         * what is not one is named, not passed over. */
        char *p = xasprintf("%s%s%s", path, str_ends(path, "/") ? "" : "/", names[i]);

        push_file(r, dirfd(d), names[i], p, true);
        free(p);
        free(names[i]);
    }
    closedir(d);
    free(names);
    if (n == 0)
        push_error(r, path, "no *.json or *.jsonl file in this directory");
}

/* ---- a stream of documents ---- */

/* This thread splits the stream; each document is a copy a worker parses and frees. */
static void one_doc(void *ctx, size_t index, const char *text, size_t len, const char *why)
{
    struct reader *r = ctx;
    char name[48];
    struct job *j;

    snprintf(name, sizeof(name), "stdin #%zu", index + 1);
    if (text == NULL) {
        push_error(r, name, why);
        return;
    }
    if (reader_full(r, name))
        return; /* counted, not copied */
    j = job_new(name);
    j->text = xmalloc(len + 1);
    memcpy(j->text, text, len);
    j->text[len] = '\0';
    j->len = len;
    reader_push(r, j);
}

/* "line 3" or "lines 3 to 9": where in the stream a document or a stretch of text was. */
static void lines_text(char *buf, size_t size, size_t first, size_t last)
{
    if (last <= first)
        snprintf(buf, size, "line %zu", first);
    else
        snprintf(buf, size, "lines %zu to %zu", first, last);
}

/*
 * Whether a '{' may start a value after prev, the last byte of the document outside strings that
 * is not blank, in the container at depth (arrays: bit d-1 set when the container at depth d is
 * an array; unknown past 64, taken as one). A document cut off (an ssh connection dropped) is
 * followed by the next one's '{' where no value may start: after a key, a value, or a comma
 * between an object's members.
 */
static bool value_may_start(char prev, int depth, uint64_t arrays)
{
    if (prev == ':' || prev == '[')
        return true;
    if (prev == ',')
        return depth > 64 || (arrays >> (depth - 1) & 1);
    return false;
}

/* ", column 7" when the next document starts inside a line, as it does where no line break
 * followed the cut; nothing when it starts the line. */
static void column_text(char *buf, size_t size, size_t column)
{
    if (column > 1)
        snprintf(buf, size, ", column %zu", column);
    else
        buf[0] = '\0';
}

/*
 * A '{' inside a string of the document under way, followed by nothing but blanks so far: where
 * the next document may have started, when the string turns out to be none. Its offset is from
 * the document's start (the buffer moves); last: the document's last line before it.
 */
struct brace {
    bool set;
    bool line_start;
    size_t off, line, column, last;
};

size_t fleet_split_stream(int fd, size_t max, fleet_doc_fn *fn, void *ctx)
{
    size_t cap = 1 << 16, len = 0, pos = 0, start = 0, docs = 0;
    size_t line = 1, first = 0, last = 0; /* pos's line; the document's (or skipped text's) */
    size_t column = 1;                    /* pos's, in bytes */
    char *buf = xmalloc(cap), prev = 0, where[64], at[48], why[256];
    struct brace brace = { 0 };
    const char *skip_why = NULL; /* skipping text up to a line that starts with '{': why */
    uint64_t arrays = 0;
    int depth = 0;
    bool in_string = false, escaped = false, in_doc = false, line_start = true;

    for (;;) {
        ssize_t got;

        if (pos == len) {
            /* Keep only the document under way. */
            if (!in_doc)
                start = len;
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
                snprintf(why, sizeof(why), "cannot read standard input: %s", strerror(errno));
                fn(ctx, docs, NULL, 0, why);
                break;
            }
            if (got == 0) {
                lines_text(where, sizeof(where), first, last);
                if (skip_why != NULL) {
                    snprintf(why, sizeof(why), "%s: %s (skipped to the end)", where, skip_why);
                    fn(ctx, docs++, NULL, 0, why);
                } else if (in_doc) {
                    snprintf(why, sizeof(why), "%s: the stream ends inside this document", where);
                    fn(ctx, docs++, NULL, 0, why);
                }
                break;
            }
            len += (size_t)got;
        }
        for (; pos < len; pos++) {
            char ch = buf[pos];
            size_t here = line, here_column = column, last_before = last;
            bool at_line_start = line_start;

            line += ch == '\n';
            line_start = ch == '\n';
            column = ch == '\n' ? 1 : column + 1;
            if (skip_why != NULL) {
                /* Text that is no document (garbage, a document too large, the rest of one cut
                 * off) runs to a line that starts with '{': the next document, as JSON Lines and
                 * indented JSON both start one. The documents after it are read. */
                if (ch != '{' || !at_line_start) {
                    if (ch != ' ' && ch != '\t' && ch != '\n' && ch != '\r')
                        last = here;
                    continue;
                }
                lines_text(where, sizeof(where), first, last);
                snprintf(why, sizeof(why), "%s: %s (skipped to line %zu)", where, skip_why, here);
                fn(ctx, docs++, NULL, 0, why);
                skip_why = NULL;
            }
            if (in_doc && ch == '{' &&
                ((at_line_start && in_string) ||
                 (!in_string && !value_may_start(prev, depth, arrays)))) {
                /* A '{' where it cannot be part of this document (a string has no raw line
                 * break; outside one, no value may start after a key, a value or an object's
                 * comma): this one was cut off, and the next begins here, at a line's start or
                 * inside the line when no line break followed the cut. */
                lines_text(where, sizeof(where), first, last);
                column_text(at, sizeof(at), here_column);
                snprintf(why, sizeof(why),
                         "%s: cut off: the document does not end before the next one starts on "
                         "line %zu%s",
                         where, here, at);
                fn(ctx, docs++, NULL, 0, why);
                in_doc = false;
            }
            if (!in_doc) {
                if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r')
                    continue;
                first = last = here;
                if (ch != '{') {
                    skip_why = "not a JSON object where a document should start";
                    continue;
                }
                in_doc = true;
                start = pos;
                depth = 0;
                arrays = 0;
                prev = 0;
                in_string = escaped = false;
                brace.set = false;
            }
            if (ch != ' ' && ch != '\t' && ch != '\n' && ch != '\r')
                last = here;
            if (pos - start >= max) {
                skip_why = "a document larger than " SNAPSHOT_MAX_TEXT;
                in_doc = false;
                continue;
            }
            if (in_string) {
                bool closes = !escaped && ch == '"';

                if (ch == '{')
                    brace = (struct brace){ true, at_line_start, pos - start,
                                            here, here_column,   last_before };
                else if (!closes && ch != ' ' && ch != '\t' && ch != '\n' && ch != '\r')
                    brace.set = false;
                if (escaped)
                    escaped = false;
                else if (ch == '\\')
                    escaped = true;
                else if (closes)
                    in_string = false;
                if (!in_string)
                    prev = ch;
                continue;
            }
            if (prev == '"' && brace.set && ch != ',' && ch != ':' && ch != '}' && ch != ']' &&
                ch != ' ' && ch != '\t' && ch != '\n' && ch != '\r') {
                /* Nothing but these may follow a string: the last one was none. It was cut off
                 * inside a string, and the next document started at its '{' ("hostn{"schema"),
                 * whose first key's quote closed what looked like a string. The cut one ends
                 * before that '{', and the next is read again from it. */
                lines_text(where, sizeof(where), first, brace.last);
                column_text(at, sizeof(at), brace.column);
                snprintf(why, sizeof(why),
                         "%s: cut off: the document does not end before the next one starts on "
                         "line %zu%s",
                         where, brace.line, at);
                fn(ctx, docs++, NULL, 0, why);
                in_doc = false;
                /* The loop steps on to the '{' (off > 0: the document starts before it). */
                pos = start + brace.off - 1;
                line = brace.line;
                column = brace.column;
                line_start = brace.line_start;
                brace.set = false;
                continue;
            }
            if (ch != ' ' && ch != '\t' && ch != '\n' && ch != '\r')
                brace.set = false;
            if (ch == '"') {
                in_string = true;
            } else if (ch == '{' || ch == '[') {
                uint64_t bit = depth < 64 ? 1ull << depth : 0;

                depth++;
                arrays = ch == '[' ? arrays | bit : arrays & ~bit;
                prev = ch;
            } else if ((ch == '}' || ch == ']') && --depth == 0) {
                char saved = buf[pos + 1];

                buf[pos + 1] = '\0'; /* the room is there: reads leave one byte */
                fn(ctx, docs++, buf + start, pos + 1 - start, NULL);
                buf[pos + 1] = saved;
                in_doc = false;
                start = pos + 1;
            } else if (ch != ' ' && ch != '\t' && ch != '\n' && ch != '\r') {
                prev = ch;
            }
        }
    }
    free(buf);
    return docs;
}

static void read_operand(struct reader *r, const char *operand)
{
    struct stat st;

    if (strcmp(operand, "-") == 0) {
        if (fleet_split_stream(STDIN_FILENO, SNAPSHOT_MAX_BYTES, one_doc, r) == 0) {
            struct job *j = job_new("stdin");

            j->error = xstrdup("no document on standard input");
            j->if_first_error = true;
            j->done = true;
            reader_push(r, j);
        }
        return;
    }
    if (stat(operand, &st) != 0) {
        push_error(r, operand, strerror(errno));
        return;
    }
    if (S_ISDIR(st.st_mode))
        read_dir(r, operand);
    else
        push_file(r, AT_FDCWD, operand, operand, false);
}

size_t fleet_read_all(struct fleet *fl, char *const *operands, size_t n)
{
    struct reader r;

    reader_init(&r, &fl->opts);
    for (size_t i = 0; i < n; i++)
        read_operand(&r, operands[i]);
    return reader_finish(&r, fl);
}

size_t fleet_read(struct fleet *fl, const char *operand)
{
    struct reader r;

    reader_init(&r, &fl->opts);
    read_operand(&r, operand);
    return reader_finish(&r, fl);
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
            /* an older snapshot of a node already kept: named, for it may be the real one */
            struct fleet_duplicate *d;

            xgrow(&fl->dups, &fl->cap_dups, fl->duplicates + 1, sizeof(*fl->dups));
            d = &fl->dups[fl->duplicates++];
            d->name = xstrdup(fl->nodes[i].name);
            d->source = xstrdup(fl->nodes[i].source);
            d->time_ms = fl->nodes[i].time_ms;
            d->kept = xstrdup(fl->nodes[k - 1].source);
            fleet_node_free(&fl->nodes[i]);
            continue;
        }
        if (k != i)
            fl->nodes[k] = fl->nodes[i];
        k++;
    }
    fl->n = k;
}
