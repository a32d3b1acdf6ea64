#include "watch/recording.h"
#include "util/fileio.h"
#include "util/i18n.h"
#include "util/strutil.h"
#include "util/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
    char *why = NULL;
    /* Every user's command lines: only for the one who records them, and never a file that
     * someone else planted at the path (a link, their own file) overwritten as root. */
    int fd = file_open_private(path, &why);

    if (fd < 0) {
        *cause = xasprintf("--record %s: %s", path, why);
        free(why);
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
        *cause = xasprintf(_("recording to %s stopped: %s"), r->path, strerror(err));
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

/*
 * The reader: lines read with read(2) into one buffer, every byte counted against the limits
 * (fgets and strlen let NUL bytes through uncounted, so /dev/zero was read for ever).
 */
#define READ_CHUNK (64u << 10)

struct line_reader {
    int fd;
    char *buf; /* bytes read; [start, end) not yet consumed */
    size_t start, end, cap;
    size_t next; /* where the line after the current one starts */
    char *line;  /* the current line, NUL-terminated (its newline replaced) */
    size_t len;
    uint64_t lineno;
    bool ended; /* the line read ends with a newline */
    bool eof;
    bool stop_at_nul;  /* a NUL ends the reading at once (until the first line) */
    size_t nul_column; /* 1-based column of the first NUL in the line; 0: none */
    int err;           /* why read_line returned -1: errno, EFBIG (too long), EILSEQ (NUL) */
};

/*
 * Room after lr->end for READ_CHUNK bytes and a terminating NUL, moving the unconsumed bytes to
 * the front first. False when the bytes kept already pass limit.
 */
static bool make_room(struct line_reader *lr, size_t limit)
{
    size_t want;

    if (lr->start > 0 && lr->cap - lr->end < READ_CHUNK + 1) {
        memmove(lr->buf, lr->buf + lr->start, lr->end - lr->start);
        lr->end -= lr->start;
        lr->next -= lr->start;
        lr->start = 0;
    }
    if (lr->cap - lr->end >= READ_CHUNK + 1)
        return true;
    if (lr->end - lr->start > limit)
        return false;
    want = lr->cap ? lr->cap * 2 : 2 * READ_CHUNK;
    if (want < lr->end + READ_CHUNK + 1)
        want = lr->end + READ_CHUNK + 1;
    if (want > limit + READ_CHUNK + 1)
        want = limit + READ_CHUNK + 1;
    lr->buf = xrealloc(lr->buf, want);
    lr->cap = want;
    return true;
}

/* Reads more bytes after lr->end: 1, 0 at the end of the file, -1 with lr->err set. */
static int read_more(struct line_reader *lr, size_t limit)
{
    ssize_t n;

    if (!make_room(lr, limit)) {
        lr->err = EFBIG;
        return -1;
    }
    do
        n = read(lr->fd, lr->buf + lr->end, READ_CHUNK);
    while (n < 0 && errno == EINTR);
    if (n < 0) {
        lr->err = errno;
        return -1;
    }
    if (n == 0) {
        lr->eof = true;
        return 0;
    }
    lr->end += (size_t)n;
    return 1;
}

/*
 * Reads the next line into lr->line (without its newline; lr->nul_column says where a NUL is).
 * 1: a line; 0: end of file; -1: longer than RECORDING_MAX_LINE, a NUL while lr->stop_at_nul,
 * or a read error (lr->err).
 */
static int read_line(struct line_reader *lr)
{
    size_t scanned = 0; /* bytes of the line searched so far */
    char *nl;

    lr->start = lr->next;
    lr->ended = false;
    lr->nul_column = 0;
    for (;;) {
        size_t avail = lr->end - lr->start - scanned;
        /* no buffer yet on empty input: no pointer arithmetic on NULL */
        char *from = avail ? lr->buf + lr->start + scanned : NULL;

        nl = avail ? memchr(from, '\n', avail) : NULL;
        if (lr->stop_at_nul && avail > 0) {
            const char *nul = memchr(from, '\0', nl ? (size_t)(nl - from) : avail);

            if (nul != NULL) {
                lr->nul_column = (size_t)(nul - (lr->buf + lr->start)) + 1;
                lr->lineno++;
                lr->err = EILSEQ;
                return -1;
            }
        }
        if (nl != NULL || lr->eof)
            break;
        scanned = lr->end - lr->start;
        if (scanned > RECORDING_MAX_LINE) {
            lr->err = EFBIG;
            return -1;
        }
        if (read_more(lr, RECORDING_MAX_LINE) < 0)
            return -1;
    }
    if (nl != NULL) {
        lr->len = (size_t)(nl - (lr->buf + lr->start));
        *nl = '\0';
        lr->ended = true;
        lr->next = lr->start + lr->len + 1;
    } else {
        if (lr->end == lr->start)
            return 0;
        lr->len = lr->end - lr->start;
        lr->buf[lr->end] = '\0'; /* make_room kept a byte for it */
        lr->next = lr->end;
    }
    if (lr->len > RECORDING_MAX_LINE) {
        lr->err = EFBIG;
        return -1;
    }
    lr->line = lr->buf + lr->start;
    if (!lr->stop_at_nul) {
        const char *nul = memchr(lr->line, '\0', lr->len);

        lr->nul_column = nul ? (size_t)(nul - lr->line) + 1 : 0;
    }
    lr->lineno++;
    return 1;
}

static char *nul_error(const char *path, uint64_t line, size_t column)
{
    return xasprintf("%s:%" PRIu64 ":%zu: a NUL byte: neither a snapshot nor a recording (both "
                     "are text)",
                     path, line, column);
}

/* The message for a read_line that returned -1. */
static char *read_error(const struct line_reader *lr, const char *path)
{
    if (lr->err == EFBIG)
        return xasprintf("%s:%" PRIu64 ": line longer than " SNAPSHOT_MAX_TEXT
                         ", the most a snapshot or a recording line may hold",
                         path, lr->lineno + 1);
    if (lr->err == EILSEQ)
        return nul_error(path, lr->lineno, lr->nul_column);
    return xasprintf("%s: %s", path, strerror(lr->err));
}

static bool blank(const char *s)
{
    while (*s == ' ' || *s == '\t' || *s == '\r')
        s++;
    return *s == '\0';
}

/*
 * Whether the len bytes at s are one JSON object by their brackets (strings and their escapes
 * followed), with nothing but blanks around it: what a recording's lines are. It does not parse:
 * a line that holds the whole of a snapshot is not read twice, nor its tree built twice.
 */
static bool one_object(const char *s, size_t len)
{
    size_t i = 0, depth = 0;
    bool in_string = false;

    while (i < len && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r'))
        i++;
    if (i == len || s[i] != '{')
        return false;
    for (; i < len; i++) {
        char c = s[i];

        if (in_string) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_string = false;
            continue;
        }
        if (c == '"') {
            in_string = true;
        } else if (c == '{' || c == '[') {
            depth++;
        } else if (c == '}' || c == ']') {
            if (depth == 0)
                return false;
            if (--depth == 0)
                return blank(s + i + 1);
        }
    }
    return false;
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

/* Line and column (1-based) of offset off in text. */
static void position(const char *text, size_t off, uint64_t *line, size_t *column)
{
    const char *nl;

    *line = 1;
    *column = off + 1;
    for (const char *p = text; (nl = memchr(p, '\n', (size_t)(text + off - p))) != NULL;
         p = nl + 1) {
        (*line)++;
        *column = (size_t)(text + off - nl);
    }
}

/*
 * The first line was not a JSON object: the whole file is one (indented) snapshot, at most
 * SNAPSHOT_MAX_BYTES, read on into the same buffer (sized at once for a regular file).
 */
static struct snapshot *whole_document(struct line_reader *lr, const char *path, char **cause)
{
    size_t checked;
    struct stat st;

    if (lr->ended)
        lr->line[lr->len] = '\n';
    lr->next = lr->start;
    if (fstat(lr->fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
        size_t want =
            (uint64_t)st.st_size < SNAPSHOT_MAX_BYTES ? (size_t)st.st_size : SNAPSHOT_MAX_BYTES;

        want += READ_CHUNK + 1;
        if (lr->start > 0) {
            memmove(lr->buf, lr->buf + lr->start, lr->end - lr->start);
            lr->end -= lr->start;
            lr->next = lr->start = 0;
        }
        if (lr->cap < want) {
            lr->buf = xrealloc(lr->buf, want);
            lr->cap = want;
        }
    }
    checked = lr->len; /* from lr->start; the first line had no NUL */
    for (;;) {
        const char *nul =
            memchr(lr->buf + lr->start + checked, '\0', lr->end - lr->start - checked);

        if (nul != NULL) {
            uint64_t line;
            size_t column;

            position(lr->buf + lr->start, (size_t)(nul - (lr->buf + lr->start)), &line, &column);
            *cause = nul_error(path, line, column);
            return NULL;
        }
        if (lr->end - lr->start > SNAPSHOT_MAX_BYTES) {
            *cause = xasprintf(
                "%s: larger than " SNAPSHOT_MAX_TEXT ", the most a snapshot may hold", path);
            return NULL;
        }
        if (lr->eof)
            break;
        checked = lr->end - lr->start;
        if (read_more(lr, SNAPSHOT_MAX_BYTES) < 0) {
            *cause = lr->err == EFBIG ? xasprintf("%s: larger than " SNAPSHOT_MAX_TEXT
                                                  ", the most a snapshot may hold",
                                                  path)
                                      : xasprintf("%s: %s", path, strerror(lr->err));
            return NULL;
        }
    }
    lr->buf[lr->end] = '\0';
    return snapshot_from_json(lr->buf + lr->start, lr->end - lr->start, path, cause);
}

/*
 * A context line after the first: it replaces the snapshot, the samples carry on. Returns the
 * new snapshot (s is freed), or NULL with *cause set (s is left as it was).
 */
static struct snapshot *next_context(struct snapshot *s, const struct line_reader *lr,
                                     const char *path, char **cause)
{
    struct snapshot *next = snapshot_from_json(lr->line, lr->len, path, cause);
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

        if (jlocate(lr->line, err.path, &line, &column))
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
    lr->stop_at_nul = true;
    while ((rc = read_line(lr)) == 1 && blank(lr->line))
        ;
    if (rc <= 0) {
        *cause = rc == 0 ? xasprintf("%s: empty: neither a snapshot nor a recording", path)
                         : read_error(lr, path);
        return NULL;
    }
    lr->stop_at_nul = false;
    if (!one_object(lr->line, lr->len))
        return whole_document(lr, path, cause);
    {
        int line, column;

        if (!jlocate(lr->line, "schema", &line, &column)) {
            *cause = xasprintf("%s:%" PRIu64 ": a recording starts with a snapshot line "
                               "(\"schema\": \"" SNAPSHOT_SCHEMA "\"), not a sample",
                               path, lr->lineno);
            return NULL;
        }
    }
    s = snapshot_from_json(lr->line, lr->len, path, cause);
    if (s == NULL) {
        *cause = relocate(*cause, path, lr->lineno);
        return NULL;
    }
    origin_ms = s->time_ms;
    while ((rc = read_line(lr)) == 1) {
        json_error_t jerror;
        json_t *o;

        if (lr->nul_column > 0) {
            /* A crash can leave the end of a file full of NULs: the last line, cut short. */
            if (!lr->ended)
                break;
            *cause = nul_error(path, lr->lineno, lr->nul_column);
            goto fail;
        }
        if (blank(lr->line))
            continue;
        o = json_loadb(lr->line, lr->len, JSON_REJECT_DUPLICATES, &jerror);
        if (o == NULL) {
            char *near;

            /* Cut short by a crash mid-write: the last line, without its newline. */
            if (!lr->ended)
                break;
            near = str_excerpt(jerror.text, 200);
            *cause = xasprintf("%s:%" PRIu64 ":%d: %s", path, lr->lineno, jerror.column, near);
            free(near);
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
        *cause = read_error(lr, path);
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

struct snapshot *recording_load_fd(int fd, const char *name, const char *head, size_t n,
                                   char **cause)
{
    struct line_reader lr = { 0 };
    struct snapshot *s;

    lr.fd = fd;
    if (n > 0) {
        /* The bytes the caller read to recognise the file: the reader starts with them. */
        lr.cap = n + READ_CHUNK + 1;
        lr.buf = xmalloc(lr.cap);
        memcpy(lr.buf, head, n);
        lr.end = n;
    }
    s = read_recording(&lr, name, cause);
    free(lr.buf);
    return s;
}

struct snapshot *recording_load(const char *path, char **cause)
{
    struct snapshot *s;
    int fd = strcmp(path, "-") == 0 ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);

    if (fd < 0) {
        *cause = xasprintf("%s: %s", path, strerror(errno));
        return NULL;
    }
    s = recording_load_fd(fd, path, NULL, 0, cause);
    if (fd != STDIN_FILENO)
        close(fd);
    return s;
}
