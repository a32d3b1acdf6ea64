#include "watch/recording.h"
#include "util/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * A snapshot given to check --from is at most this big, as snapshot_load says. Its first line is
 * read already (standard input cannot be read twice), so the rest is read here.
 */
#define SNAPSHOT_MAX_BYTES (256u << 20)

/* ---- writing ---- */

struct recorder {
    int fd;
    char *path;
    off_t written; /* bytes of whole lines: where to cut back to */
    uint64_t lines;
    uint64_t context_hash;
    int64_t context_t_ms;
    bool have_context;
};

struct recorder *recorder_open(const char *path, char **cause)
{
    struct recorder *r;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

    if (fd < 0) {
        *cause = xasprintf("--record %s: %s", path, strerror(errno));
        return NULL;
    }
    r = xcalloc(1, sizeof(*r));
    r->fd = fd;
    r->path = xstrdup(path);
    return r;
}

/* FNV-1a over what makes a new context line worth writing. */
static uint64_t mix(uint64_t h, uint64_t v)
{
    for (int i = 0; i < 8; i++) {
        h ^= (v >> (i * 8)) & 0xffu;
        h *= UINT64_C(0x100000001b3);
    }
    return h;
}

static uint64_t context_hash(const struct snapshot *s)
{
    uint64_t h = UINT64_C(0xcbf29ce484222325);

    h = mix(h, s->n_gpus);
    for (size_t i = 0; i < s->n_gpus; i++)
        h = mix(mix(h, s->gpus[i].index), (uint64_t)(uint32_t)s->gpus[i].handle_rc);
    h = mix(h, s->procs.n_procs);
    for (size_t i = 0; i < s->procs.n_procs; i++) {
        const struct proc *p = &s->procs.procs[i];

        h = mix(mix(mix(h, (uint64_t)(uint32_t)p->pid), p->start_ticks),
                (uint64_t)(unsigned char)p->state);
        h = mix(h, p->n_gpus);
    }
    /* Not the host's: it runs every cycle and its state follows each window's readings. */
    for (size_t i = 0; i < COLLECTOR__COUNT; i++) {
        if (i != COLLECTOR_HOST)
            h = mix(h, (uint64_t)s->collectors[i].state);
    }
    return h;
}

/* Writes one line whole; on failure cuts the file back to its last whole line. */
static int write_line(struct recorder *r, json_t *j, char **cause)
{
    char *text = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(10));
    size_t len, off = 0;
    int err = 0;

    json_decref(j);
    if (text == NULL)
        fatal("out of memory serialising a recording line");
    len = strlen(text);
    text[len++] = '\n'; /* replaces the NUL: the line is written with its end */
    while (off < len) {
        ssize_t n = write(r->fd, text + off, len - off);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            err = n < 0 ? errno : EIO;
            break;
        }
        off += (size_t)n;
    }
    free(text);
    if (err != 0) {
        /* A pipe or a full disk: keep the file a recording, then stop writing to it. */
        if (off > 0 && ftruncate(r->fd, r->written) == 0)
            (void)lseek(r->fd, r->written, SEEK_SET);
        *cause = xasprintf("recording to %s stopped: %s", r->path, strerror(err));
        close(r->fd);
        r->fd = -1;
        return -1;
    }
    r->written += (off_t)len;
    r->lines++;
    return 0;
}

int recorder_write(struct recorder *r, const struct snapshot *s, const struct sample *smp,
                   int64_t t_ms, char **cause)
{
    uint64_t h;
    json_t *j;

    if (r->fd < 0)
        return 0;
    h = context_hash(s);
    if (!r->have_context || h != r->context_hash ||
        t_ms - r->context_t_ms >= RECORDING_CONTEXT_EVERY_MS) {
        /* The context line carries no samples of its own: they follow, one a line. */
        struct snapshot ctx = *s;

        ctx.samples = NULL;
        ctx.n_samples = 0;
        if (write_line(r, snapshot_to_jansson(&ctx), cause) != 0)
            return -1;
        r->have_context = true;
        r->context_hash = h;
        r->context_t_ms = t_ms;
    }
    j = sample_to_json(smp);
    json_object_set_new(j, "t_ms", json_integer(t_ms));
    return write_line(r, j, cause);
}

uint64_t recorder_lines(const struct recorder *r)
{
    return r->lines;
}

void recorder_close(struct recorder *r)
{
    if (r == NULL)
        return;
    if (r->fd >= 0)
        close(r->fd);
    free(r->path);
    free(r);
}

/* ---- reading ---- */

/* A GPU process's use in the process table: on GPU index, by pid. */
static struct proc_gpu *proc_use(struct snapshot *s, uint32_t pid, uint32_t index)
{
    struct proc *p = proc_table_find(&s->procs, (int32_t)pid);

    for (size_t k = 0; p != NULL && k < p->n_gpus; k++) {
        if (p->gpus[k].gpu_index == index)
            return &p->gpus[k];
    }
    return NULL;
}

/* The snapshot's GPU r->index, and its processes, take the reading r of a sample. */
static void take_reading(struct snapshot *s, const struct gpu *r)
{
    struct gpu *g = snapshot_gpu(s, r->index);

    if (g == NULL)
        return;
    jtable_copy(&gpu_table, g, r, JF_DYNAMIC);
    for (size_t i = 0; i < r->n_procs; i++) {
        const struct gpu_proc *rp = &r->procs[i];
        struct proc_gpu *u = proc_use(s, rp->pid, r->index);

        for (size_t k = 0; k < g->n_procs; k++) {
            if (g->procs[k].pid == rp->pid)
                jtable_copy(&gpu_proc_table, &g->procs[k], rp, JF_DYNAMIC);
        }
        if (u == NULL)
            continue;
        u->used_bytes = rp->used_bytes;
        u->sm_util_pct = rp->sm_util_pct;
        u->valid &= ~((UINT64_C(1) << PROC_GPU_S_USED) | (UINT64_C(1) << PROC_GPU_S_UTIL));
        if (rp->valid & (UINT64_C(1) << GPU_PROC_S_USED))
            u->valid |= UINT64_C(1) << PROC_GPU_S_USED;
        if (rp->valid & (UINT64_C(1) << GPU_PROC_S_UTIL))
            u->valid |= UINT64_C(1) << PROC_GPU_S_UTIL;
    }
}

struct line_reader {
    FILE *f;
    char *buf;
    size_t len, cap;
    uint64_t lineno;
    bool ended; /* the line read ends with a newline */
};

/* Reads the next line into lr->buf (without its newline). 1: a line; 0: end of file; -1: too
   long or a read error (errno). */
static int read_line(struct line_reader *lr)
{
    lr->len = 0;
    lr->ended = false;
    for (;;) {
        size_t got;

        if (lr->cap - lr->len < 65536) {
            if (lr->cap >= RECORDING_MAX_LINE + 65536) {
                errno = EFBIG;
                return -1;
            }
            lr->cap = lr->cap ? lr->cap * 2 : 65536 * 2;
            lr->buf = xrealloc(lr->buf, lr->cap);
        }
        if (fgets(lr->buf + lr->len, (int)(lr->cap - lr->len), lr->f) == NULL) {
            if (ferror(lr->f))
                return -1;
            break;
        }
        got = strlen(lr->buf + lr->len);
        lr->len += got;
        if (got > 0 && lr->buf[lr->len - 1] == '\n') {
            lr->buf[--lr->len] = '\0';
            lr->ended = true;
            break;
        }
    }
    if (lr->len == 0 && !lr->ended)
        return 0;
    lr->lineno++;
    return 1;
}

static bool blank(const char *s)
{
    while (*s == ' ' || *s == '\t' || *s == '\r')
        s++;
    return *s == '\0';
}

/* "path:1:col: what" of a one-line text, as "path:LINE:col: what". */
static char *relocate(char *cause, const char *path, uint64_t lineno)
{
    size_t n = strlen(path);
    char *out;

    if (strncmp(cause, path, n) == 0 && strncmp(cause + n, ":1:", 3) == 0)
        out = xasprintf("%s:%" PRIu64 ":%s", path, lineno, cause + n + 3);
    else if (strncmp(cause, path, n) == 0 && cause[n] == ':')
        out = xasprintf("%s:%" PRIu64 ":%s", path, lineno, cause + n + 1);
    else
        out = xasprintf("%s:%" PRIu64 ": %s", path, lineno, cause);
    free(cause);
    return out;
}

/* The first line was not a JSON object: the whole file is one (indented) snapshot. */
static struct snapshot *whole_document(struct line_reader *lr, const char *path, char **cause)
{
    size_t len = lr->len, cap = lr->len + 65536;
    char *text = xmalloc(cap);
    struct snapshot *s;

    memcpy(text, lr->buf, lr->len);
    if (lr->ended)
        text[len++] = '\n';
    for (;;) {
        size_t n;

        if (cap - len < 65536) {
            cap *= 2;
            text = xrealloc(text, cap);
        }
        n = fread(text + len, 1, cap - len - 1, lr->f);
        len += n;
        if (len > SNAPSHOT_MAX_BYTES) {
            *cause = xasprintf("%s: larger than 256 MiB, not a snapshot", path);
            free(text);
            return NULL;
        }
        if (n == 0)
            break;
    }
    if (ferror(lr->f)) {
        *cause = xasprintf("%s: %s", path, strerror(errno));
        free(text);
        return NULL;
    }
    text[len] = '\0';
    s = snapshot_from_json(text, len, path, cause);
    free(text);
    return s;
}

/*
 * A context line after the first: it replaces the snapshot, the samples carry on. Returns the
 * new snapshot (s is freed), or NULL with *cause set (s is left as it was).
 */
static struct snapshot *next_context(struct snapshot *s, const struct line_reader *lr,
                                     const char *path, char **cause)
{
    struct snapshot *next = snapshot_from_json(lr->buf, lr->len, path, cause);
    struct sample *own;
    size_t n_own, cap_own;

    if (next == NULL) {
        *cause = relocate(*cause, path, lr->lineno);
        return NULL;
    }
    own = next->samples;
    n_own = next->n_samples;
    cap_own = next->cap_samples;
    next->samples = s->samples;
    next->n_samples = s->n_samples;
    next->cap_samples = s->cap_samples;
    /* s takes the context line's own samples (normally none) to free them. */
    s->samples = own;
    s->n_samples = n_own;
    s->cap_samples = cap_own;
    snapshot_free(s);
    return next;
}

static int next_sample(struct snapshot *s, json_t *o, const struct line_reader *lr,
                       const char *path, char **cause)
{
    struct jerr err = { "", "" };
    int line, column;

    if (sample_from_json(s, o, "", &err) != 0) {
        const char *where = err.path[0] == '.' ? err.path + 1 : err.path;

        if (jlocate(lr->buf, err.path, &line, &column))
            *cause = xasprintf("%s:%" PRIu64 ":%d: %s%s%s", path, lr->lineno, column, where,
                               *where ? ": " : "", err.msg);
        else
            *cause = xasprintf("%s:%" PRIu64 ": %s%s%s", path, lr->lineno, where,
                               *where ? ": " : "", err.msg);
        return -1;
    }
    if (s->n_samples > 1 && s->samples[s->n_samples - 1].t_ms < s->samples[s->n_samples - 2].t_ms) {
        *cause = xasprintf("%s:%" PRIu64 ": t_ms %" PRId64 " is before the previous sample's "
                           "%" PRId64 " (samples must be in time order)",
                           path, lr->lineno, s->samples[s->n_samples - 1].t_ms,
                           s->samples[s->n_samples - 2].t_ms);
        return -1;
    }
    return 0;
}

static struct snapshot *read_recording(struct line_reader *lr, const char *path, char **cause)
{
    struct snapshot *s = NULL;
    bool sample_lines = false; /* a snapshot on one line (jq -c) is not a recording */
    int64_t origin_ms;
    int rc;

    /* The first line, a JSON object on its own: a recording. Anything else: one document. */
    while ((rc = read_line(lr)) == 1 && blank(lr->buf))
        ;
    if (rc <= 0) {
        *cause = rc == 0 ? xasprintf("%s: empty: neither a snapshot nor a recording", path)
                         : xasprintf("%s: %s", path, strerror(errno));
        return NULL;
    }
    {
        json_t *first = json_loadb(lr->buf, lr->len, JSON_REJECT_DUPLICATES, NULL);
        bool object = json_is_object(first), schema = object && json_object_get(first, "schema");

        json_decref(first);
        if (!object)
            return whole_document(lr, path, cause);
        if (!schema) {
            *cause = xasprintf("%s:%" PRIu64 ": a recording starts with a snapshot line "
                               "(\"schema\": \"" SNAPSHOT_SCHEMA "\"), not a sample",
                               path, lr->lineno);
            return NULL;
        }
    }
    s = snapshot_from_json(lr->buf, lr->len, path, cause);
    if (s == NULL) {
        *cause = relocate(*cause, path, lr->lineno);
        return NULL;
    }
    origin_ms = s->time_ms;
    while ((rc = read_line(lr)) == 1) {
        json_error_t jerror;
        json_t *o;

        if (blank(lr->buf))
            continue;
        o = json_loadb(lr->buf, lr->len, JSON_REJECT_DUPLICATES, &jerror);
        if (o == NULL) {
            /* Cut short by a crash mid-write: the last line, without its newline. */
            if (!lr->ended && feof(lr->f))
                break;
            *cause =
                xasprintf("%s:%" PRIu64 ":%d: %s", path, lr->lineno, jerror.column, jerror.text);
            goto fail;
        }
        if (!json_is_object(o)) {
            *cause = xasprintf("%s:%" PRIu64 ": expected a JSON object (a snapshot or a sample)",
                               path, lr->lineno);
            json_decref(o);
            goto fail;
        }
        if (json_object_get(o, "schema") != NULL) {
            struct snapshot *next;

            json_decref(o);
            next = next_context(s, lr, path, cause);
            if (next == NULL)
                goto fail;
            s = next;
            continue;
        }
        rc = next_sample(s, o, lr, path, cause);
        json_decref(o);
        if (rc != 0)
            goto fail;
        sample_lines = true;
    }
    if (rc < 0) {
        *cause = xasprintf("%s:%" PRIu64 ": %s", path, lr->lineno + 1,
                           errno == EFBIG ? "line longer than 64 MiB" : strerror(errno));
        goto fail;
    }
    /*
     * Judged as of its last sample: ages and "now" are the end of the recording, and the
     * readings a report's tables show (each GPU's, each GPU process's memory and SM use) are
     * the last ones, not the context's.
     */
    if (sample_lines && s->n_samples > 0 && origin_ms > 0) {
        const struct sample *last = &s->samples[s->n_samples - 1];

        s->time_ms = origin_ms + last->t_ms;
        s->window_ms = last->t_ms - s->samples[0].t_ms;
        for (size_t i = 0; i < last->n_gpus; i++)
            take_reading(s, &last->gpus[i]);
    }
    return s;
fail:
    snapshot_free(s);
    return NULL;
}

struct snapshot *recording_load(const char *path, char **cause)
{
    struct line_reader lr = { 0 };
    struct snapshot *s;

    lr.f = strcmp(path, "-") == 0 ? stdin : fopen(path, "re");
    if (lr.f == NULL) {
        *cause = xasprintf("%s: %s", path, strerror(errno));
        return NULL;
    }
    s = read_recording(&lr, path, cause);
    if (lr.f != stdin)
        fclose(lr.f);
    free(lr.buf);
    return s;
}
