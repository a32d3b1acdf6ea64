#include "collect/hostfs.h"
#include "util/strutil.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SECTOR_BYTES 512u /* /proc/diskstats counts 512-byte sectors whatever the disk's */
#define MAX_CPUS     (1u << 20)

char *hostfs_textn(const char *s, size_t n)
{
    return str_printablen(s, n);
}

char *hostfs_text(const char *s)
{
    return hostfs_textn(s, strlen(s));
}

/* A line of text: [p, end). */
struct span {
    const char *p, *end;
};

/* Moves *text past the next line and returns it (without the newline); false at the end. */
static bool next_line(const char **text, struct span *line)
{
    const char *nl;

    if (**text == '\0')
        return false;
    nl = strchr(*text, '\n');
    line->p = *text;
    line->end = nl ? nl : *text + strlen(*text);
    *text = nl ? nl + 1 : line->end;
    return true;
}

static bool is_blank(char c)
{
    return c == ' ' || c == '\t';
}

/* Takes the next blank-separated token of *line into tok; false when the line has no more. */
static bool next_token(struct span *line, struct span *tok)
{
    while (line->p < line->end && is_blank(*line->p))
        line->p++;
    if (line->p >= line->end) {
        /* An empty token, so that a message about the missing one can quote it. */
        tok->p = tok->end = line->end;
        return false;
    }
    tok->p = line->p;
    while (line->p < line->end && !is_blank(*line->p))
        line->p++;
    tok->end = line->p;
    return true;
}

static bool tok_is(const struct span *tok, const char *s)
{
    size_t n = strlen(s);

    return (size_t)(tok->end - tok->p) == n && memcmp(tok->p, s, n) == 0;
}

/* Copies a token into buf for the number parsers; false when it does not fit. */
static bool tok_copy(const struct span *tok, char *buf, size_t size)
{
    size_t n = (size_t)(tok->end - tok->p);

    if (n >= size)
        return false;
    memcpy(buf, tok->p, n);
    buf[n] = '\0';
    return true;
}

static bool tok_u64(const struct span *tok, uint64_t *out)
{
    char buf[32];

    return tok_copy(tok, buf, sizeof(buf)) && str_to_u64(buf, 10, out);
}

static bool tok_double(const struct span *tok, double *out)
{
    char buf[64];

    return tok_copy(tok, buf, sizeof(buf)) && str_to_double(buf, out);
}

/* The token quoted for a message, shortened (garbage can be long) and made printable. */
static char *tok_quote(const struct span *tok)
{
    size_t n = (size_t)(tok->end - tok->p);
    char *text, *q;

    if (n == 0)
        return xstrdup("nothing (truncated?)");
    text = hostfs_textn(tok->p, n > 40 ? 40 : n);
    q = xasprintf("\"%s%s\"", text, n > 40 ? "..." : "");

    free(text);
    return q;
}

static int bad_token(char **cause, unsigned lineno, const char *what, const struct span *tok)
{
    char *q = tok_quote(tok);

    *cause = xasprintf("line %u: expected %s, got %s", lineno, what, q);
    free(q);
    return -1;
}

int hostfs_parse_stat(const char *text, struct hostfs_cpu_times *t, uint32_t *cpu_lines,
                      char **cause)
{
    uint64_t *fields[] = { &t->user,   &t->nice, &t->system,  &t->idle,
                           &t->iowait, &t->irq,  &t->softirq, &t->steal };
    bool found = false;
    struct span line, tok;
    unsigned lineno = 0;

    memset(t, 0, sizeof(*t));
    *cpu_lines = 0;
    while (next_line(&text, &line)) {
        size_t k = 0;

        lineno++;
        if (!next_token(&line, &tok) || (size_t)(tok.end - tok.p) < 3 ||
            memcmp(tok.p, "cpu", 3) != 0)
            continue;
        if (!tok_is(&tok, "cpu")) {
            (*cpu_lines)++;
            continue;
        }
        if (found) {
            *cause = xasprintf("line %u: a second \"cpu\" line", lineno);
            return -1;
        }
        found = true;
        /* user nice system idle iowait irq softirq steal [guest guest_nice] */
        while (next_token(&line, &tok)) {
            uint64_t v;

            if (!tok_u64(&tok, &v))
                return bad_token(cause, lineno, "a tick count", &tok);
            if (k < ARRAY_SIZE(fields))
                *fields[k] = v;
            k++;
        }
        if (k < ARRAY_SIZE(fields)) {
            *cause = xasprintf("line %u: the \"cpu\" line has %zu numbers, expected at least %zu "
                               "(truncated?)",
                               lineno, k, ARRAY_SIZE(fields));
            return -1;
        }
    }
    if (!found) {
        *cause = xstrdup("no \"cpu\" line");
        return -1;
    }
    return 0;
}

int hostfs_parse_loadavg(const char *text, double load[3], char **cause)
{
    struct span line, tok;

    if (!next_line(&text, &line)) {
        *cause = xstrdup("empty");
        return -1;
    }
    for (int i = 0; i < 3; i++) {
        if (!next_token(&line, &tok)) {
            *cause = xasprintf("line 1: %d numbers, expected three load averages (truncated?)", i);
            return -1;
        }
        if (!tok_double(&tok, &load[i]) || load[i] < 0)
            return bad_token(cause, 1, "a load average", &tok);
    }
    return 0;
}

int hostfs_parse_uptime(const char *text, double *uptime_s, char **cause)
{
    struct span line, tok;

    if (!next_line(&text, &line) || !next_token(&line, &tok)) {
        *cause = xstrdup("empty");
        return -1;
    }
    if (!tok_double(&tok, uptime_s) || *uptime_s < 0)
        return bad_token(cause, 1, "seconds since boot", &tok);
    return 0;
}

int hostfs_parse_cpu_list(const char *text, uint32_t *count, char **cause)
{
    char *copy = str_rtrim(xstrdup(str_ltrim(text)));
    char *save = NULL;
    uint64_t total = 0;
    int rc = 0;

    if (*copy == '\0') {
        *cause = xstrdup("empty CPU list");
        rc = -1;
        goto out;
    }
    for (char *r = strtok_r(copy, ",", &save); r; r = strtok_r(NULL, ",", &save)) {
        char *dash = strchr(r, '-');
        uint32_t lo, hi;

        if (dash != NULL)
            *dash = '\0';
        if (!str_to_u32(r, 10, &lo) || !str_to_u32(dash ? dash + 1 : r, 10, &hi) || hi < lo ||
            hi >= MAX_CPUS) {
            if (dash != NULL)
                *dash = '-';
            *cause = xasprintf("expected a CPU number or range such as 0-3, got \"%.40s\"", r);
            rc = -1;
            goto out;
        }
        total += (uint64_t)hi - lo + 1;
    }
    if (total > MAX_CPUS) {
        *cause = xasprintf("%llu CPUs is not believable", (unsigned long long)total);
        rc = -1;
        goto out;
    }
    *count = (uint32_t)total;
out:
    free(copy);
    return rc;
}

/* Parses the value of a meminfo line (after the key) as kB into bytes. */
static int meminfo_value(struct span *line, unsigned lineno, const char *key, uint64_t *bytes,
                         char **cause)
{
    struct span tok, unit;
    uint64_t kib;

    if (!next_token(line, &tok) || !tok_u64(&tok, &kib))
        return bad_token(cause, lineno, "a number of kB", &tok);
    /* A value cut short loses its unit: insisting on it catches a truncated file. */
    if (!next_token(line, &unit) || !tok_is(&unit, "kB")) {
        *cause = xasprintf("line %u: %.*s has no \"kB\" unit (truncated?)", lineno,
                           (int)strlen(key) - 1, key);
        return -1;
    }
    if (kib > UINT64_MAX / 1024) {
        *cause = xasprintf("line %u: %llu kB is out of range", lineno, (unsigned long long)kib);
        return -1;
    }
    *bytes = kib * 1024;
    return 0;
}

int hostfs_parse_meminfo(const char *text, struct hostfs_meminfo *m, char **cause)
{
    static const struct {
        const char *key;
        size_t offset;
        unsigned bit;
    } keys[] = {
        { "MemTotal:", offsetof(struct hostfs_meminfo, mem_total), HOSTFS_MEM_TOTAL },
        { "MemAvailable:", offsetof(struct hostfs_meminfo, mem_available), HOSTFS_MEM_AVAILABLE },
        { "SwapTotal:", offsetof(struct hostfs_meminfo, swap_total), HOSTFS_SWAP_TOTAL },
        { "SwapFree:", offsetof(struct hostfs_meminfo, swap_free), HOSTFS_SWAP_FREE },
    };
    struct span line, tok;
    unsigned lineno = 0;
    int rc = 0;

    memset(m, 0, sizeof(*m));
    while (next_line(&text, &line)) {
        lineno++;
        if (!next_token(&line, &tok))
            continue;
        for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
            char *why = NULL;

            if (!tok_is(&tok, keys[i].key))
                continue;
            if (meminfo_value(&line, lineno, keys[i].key, (uint64_t *)((char *)m + keys[i].offset),
                              &why) == 0) {
                m->have |= keys[i].bit;
            } else if (rc++ == 0) {
                *cause = why;
            } else {
                free(why);
            }
            break;
        }
    }
    return rc ? -1 : 0;
}

int hostfs_parse_vmstat(const char *text, uint64_t *pswpin, uint64_t *pswpout, char **cause)
{
    struct span line, tok;
    unsigned lineno = 0, have = 0;

    while (next_line(&text, &line)) {
        uint64_t *dst;

        lineno++;
        if (!next_token(&line, &tok))
            continue;
        if (tok_is(&tok, "pswpin")) {
            dst = pswpin;
            have |= 1;
        } else if (tok_is(&tok, "pswpout")) {
            dst = pswpout;
            have |= 2;
        } else {
            continue;
        }
        if (!next_token(&line, &tok) || !tok_u64(&tok, dst))
            return bad_token(cause, lineno, "a page count", &tok);
    }
    if (have != 3) {
        *cause = xstrdup(have == 0 ? "no pswpin or pswpout line" : "pswpin or pswpout missing");
        return -1;
    }
    return 0;
}

static int parse_psi_line(struct span *line, unsigned lineno, struct hostfs_psi_line *out,
                          char **cause)
{
    static const char *const keys[] = { "avg10=", "avg60=", "avg300=", "total=" };
    double *avgs[] = { &out->avg10, &out->avg60, &out->avg300 };
    struct span tok, value;
    unsigned have = 0;

    while (next_token(line, &tok)) {
        size_t i;

        for (i = 0; i < ARRAY_SIZE(keys); i++) {
            size_t n = strlen(keys[i]);

            if ((size_t)(tok.end - tok.p) > n && memcmp(tok.p, keys[i], n) == 0)
                break;
        }
        if (i == ARRAY_SIZE(keys))
            return bad_token(cause, lineno, "avg10=, avg60=, avg300= or total=", &tok);
        value = tok;
        value.p += strlen(keys[i]);
        if (i == 3 ? !tok_u64(&value, &out->total_us) : !tok_double(&value, avgs[i])) {
            return bad_token(cause, lineno, "a number after the '='", &tok);
        }
        have |= 1u << i;
    }
    if (have != 0xf) {
        *cause = xasprintf("line %u: avg10, avg60, avg300 and total expected (truncated?)", lineno);
        return -1;
    }
    return 0;
}

int hostfs_parse_psi(const char *text, struct hostfs_psi *p, char **cause)
{
    struct span line, tok;
    unsigned lineno = 0;
    bool has_some = false;

    memset(p, 0, sizeof(*p));
    while (next_line(&text, &line)) {
        struct hostfs_psi_line *dst;

        lineno++;
        if (!next_token(&line, &tok))
            continue;
        if (tok_is(&tok, "some")) {
            dst = &p->some;
            has_some = true;
        } else if (tok_is(&tok, "full")) {
            dst = &p->full;
            p->has_full = true;
        } else {
            return bad_token(cause, lineno, "\"some\" or \"full\"", &tok);
        }
        if (parse_psi_line(&line, lineno, dst, cause) != 0)
            return -1;
    }
    if (!has_some) {
        *cause = xstrdup("no \"some\" line");
        return -1;
    }
    return 0;
}

static int parse_diskstat_line(struct span *line, unsigned lineno, struct hostfs_diskstat *d,
                               char **cause)
{
    uint64_t v[11];
    struct span tok;
    size_t k = 0;

    memset(d, 0, sizeof(*d));
    if (!next_token(line, &tok) || !tok_u64(&tok, &v[0]) || v[0] > UINT32_MAX)
        return bad_token(cause, lineno, "a major device number", &tok);
    d->major = (uint32_t)v[0];
    if (!next_token(line, &tok) || !tok_u64(&tok, &v[0]) || v[0] > UINT32_MAX)
        return bad_token(cause, lineno, "a minor device number", &tok);
    d->minor = (uint32_t)v[0];
    /* The name becomes a path under /sys/block: no '/', no "." or "..". */
    if (!next_token(line, &tok) || !tok_copy(&tok, d->name, sizeof(d->name)) ||
        strchr(d->name, '/') != NULL || strcmp(d->name, ".") == 0 || strcmp(d->name, "..") == 0)
        return bad_token(cause, lineno, "a device name", &tok);
    /* 11 fields since 2.6.25; 4.18 added 4 for discards, 5.5 two for flushes: ignored. */
    while (next_token(line, &tok)) {
        uint64_t x;

        if (!tok_u64(&tok, &x))
            return bad_token(cause, lineno, "a counter", &tok);
        if (k < ARRAY_SIZE(v))
            v[k] = x;
        k++;
    }
    if (k < ARRAY_SIZE(v)) {
        *cause = xasprintf("line %u: %s has %zu counters, expected at least 11 (truncated?)",
                           lineno, d->name, k);
        return -1;
    }
    d->reads = v[0];
    d->read_sectors = v[2];
    d->read_ms = v[3];
    d->writes = v[4];
    d->write_sectors = v[6];
    d->write_ms = v[7];
    d->io_ticks_ms = v[9];
    return 0;
}

int hostfs_parse_diskstats(const char *text, struct hostfs_diskstat **out, size_t *n, char **cause)
{
    struct span line, probe, tok;
    unsigned lineno = 0;
    size_t cap = 0;
    int bad = 0;

    *out = NULL;
    *n = 0;
    while (next_line(&text, &line)) {
        struct hostfs_diskstat d;
        char *why = NULL;

        lineno++;
        probe = line;
        if (!next_token(&probe, &tok))
            continue;
        if (parse_diskstat_line(&line, lineno, &d, &why) != 0) {
            if (bad++ == 0)
                *cause = why;
            else
                free(why);
            continue;
        }
        xgrow(out, &cap, *n + 1, sizeof(**out));
        (*out)[(*n)++] = d;
    }
    return bad;
}

/* Undoes mountinfo's octal escapes (\040 space, \011 tab, \012 newline, \134 backslash). */
static char *unescape(const struct span *tok)
{
    size_t n = (size_t)(tok->end - tok->p);
    char *s = xmalloc(n + 1), *o = s;

    for (const char *p = tok->p; p < tok->end; p++) {
        if (*p == '\\' && tok->end - p >= 4 && p[1] >= '0' && p[1] <= '3' && p[2] >= '0' &&
            p[2] <= '7' && p[3] >= '0' && p[3] <= '7') {
            *o++ = (char)((p[1] - '0') * 64 + (p[2] - '0') * 8 + (p[3] - '0'));
            p += 3;
        } else {
            *o++ = *p;
        }
    }
    *o = '\0';
    return s;
}

static int parse_mount_line(struct span *line, unsigned lineno, struct hostfs_mount *m,
                            char **cause)
{
    struct span tok = { NULL, NULL }, point = { NULL, NULL }; /* quoted empty when never set */
    char buf[32], *colon;
    uint32_t id, major, minor;

    /* id parent major:minor root mount-point options [optional...] - fstype source super */
    for (int i = 0; i < 2; i++) {
        if (!next_token(line, &tok) || !tok_copy(&tok, buf, sizeof(buf)) ||
            !str_to_u32(buf, 10, &id))
            return bad_token(cause, lineno, "a mount id", &tok);
    }
    if (!next_token(line, &tok) || !tok_copy(&tok, buf, sizeof(buf)) ||
        (colon = strchr(buf, ':')) == NULL)
        return bad_token(cause, lineno, "major:minor", &tok);
    *colon = '\0';
    if (!str_to_u32(buf, 10, &major) || !str_to_u32(colon + 1, 10, &minor))
        return bad_token(cause, lineno, "major:minor", &tok);
    if (!next_token(line, &tok) || !next_token(line, &point) || *point.p != '/')
        return bad_token(cause, lineno, "a root and an absolute mount point", &point);
    do {
        if (!next_token(line, &tok)) {
            *cause = xasprintf("line %u: no \" - \" separator before the filesystem type "
                               "(truncated?)",
                               lineno);
            return -1;
        }
    } while (!tok_is(&tok, "-"));
    if (!next_token(line, &tok)) {
        *cause = xasprintf("line %u: no filesystem type after \" - \" (truncated?)", lineno);
        return -1;
    }
    m->major = major;
    m->minor = minor;
    m->mount_point = unescape(&point);
    m->fstype = unescape(&tok);
    m->source = next_token(line, &tok) ? unescape(&tok) : xstrdup("none");
    return 0;
}

int hostfs_parse_mountinfo(const char *text, struct hostfs_mounts *m, char **cause)
{
    struct span line, probe, tok;
    unsigned lineno = 0;
    size_t cap = 0;
    int bad = 0;

    m->v = NULL;
    m->n = 0;
    while (next_line(&text, &line)) {
        struct hostfs_mount mnt;
        char *why = NULL;

        lineno++;
        probe = line;
        if (!next_token(&probe, &tok))
            continue;
        memset(&mnt, 0, sizeof(mnt));
        if (parse_mount_line(&line, lineno, &mnt, &why) != 0) {
            if (bad++ == 0)
                *cause = why;
            else
                free(why);
            continue;
        }
        xgrow(&m->v, &cap, m->n + 1, sizeof(*m->v));
        m->v[m->n++] = mnt;
    }
    return bad;
}

void hostfs_mounts_free(struct hostfs_mounts *m)
{
    for (size_t i = 0; i < m->n; i++) {
        free(m->v[i].mount_point);
        free(m->v[i].fstype);
        free(m->v[i].source);
    }
    free(m->v);
    m->v = NULL;
    m->n = 0;
}

/* Whether the mount point mp contains path: "/data" holds "/data/x" but not "/database". */
static bool mount_holds(const char *mp, const char *path)
{
    size_t n = strlen(mp);

    while (n > 1 && mp[n - 1] == '/')
        n--;
    if (n == 1 && mp[0] == '/')
        return path[0] == '/';
    return strncmp(mp, path, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

const struct hostfs_mount *hostfs_mount_find(const struct hostfs_mounts *m, const char *path)
{
    const struct hostfs_mount *best = NULL;
    size_t best_len = 0;

    for (size_t i = 0; i < m->n; i++) {
        size_t len = strlen(m->v[i].mount_point);

        /* ">=": a later mount on the same point hides the earlier one. */
        if (mount_holds(m->v[i].mount_point, path) && (best == NULL || len >= best_len)) {
            best = &m->v[i];
            best_len = len;
        }
    }
    return best;
}

bool hostfs_disk_is_virtual(const char *name)
{
    static const char *const prefixes[] = { "loop", "ram", "zram", "dm-", "md", "nbd", "sr", "fd" };

    for (size_t i = 0; i < ARRAY_SIZE(prefixes); i++) {
        if (str_starts(name, prefixes[i]))
            return true;
    }
    return false;
}

void hostfs_counters_free(struct hostfs_counters *c)
{
    free(c->disks);
    memset(c, 0, sizeof(*c));
}

/* b - a for counters that must only grow: a reset or a wrap counts as no progress. */
static uint64_t delta(uint64_t a, uint64_t b)
{
    return b > a ? b - a : 0;
}

static double pct(uint64_t part, uint64_t whole)
{
    double v = whole ? 100.0 * (double)part / (double)whole : 0.0;

    return v > 100.0 ? 100.0 : v;
}

/* CPU time spent between two readings, grouped as the host section reports it. */
struct cpu_delta {
    uint64_t user, system, idle, iowait, steal, total;
};

static struct cpu_delta cpu_delta(const struct hostfs_cpu_times *a,
                                  const struct hostfs_cpu_times *b)
{
    struct cpu_delta d;

    d.user = delta(a->user, b->user) + delta(a->nice, b->nice);
    d.system = delta(a->system, b->system) + delta(a->irq, b->irq) + delta(a->softirq, b->softirq);
    d.idle = delta(a->idle, b->idle);
    d.iowait = delta(a->iowait, b->iowait);
    d.steal = delta(a->steal, b->steal);
    d.total = d.user + d.system + d.idle + d.iowait + d.steal;
    return d;
}

bool hostfs_cpu_pct(const struct hostfs_cpu_times *a, const struct hostfs_cpu_times *b,
                    double *busy_pct, double *iowait_pct, double *steal_pct)
{
    struct cpu_delta d = cpu_delta(a, b);

    if (d.total == 0)
        return false;
    *busy_pct = pct(d.user + d.system, d.total);
    *iowait_pct = pct(d.iowait, d.total);
    *steal_pct = pct(d.steal, d.total);
    return true;
}

static void window_cpu(const struct hostfs_cpu_times *a, const struct hostfs_cpu_times *b,
                       struct host_info *h)
{
    struct cpu_delta d = cpu_delta(a, b);

    if (d.total == 0)
        return;
    h->cpu_user_pct = pct(d.user, d.total);
    h->cpu_system_pct = pct(d.system, d.total);
    h->cpu_iowait_pct = pct(d.iowait, d.total);
    h->cpu_steal_pct = pct(d.steal, d.total);
    h->cpu_idle_pct = pct(d.idle, d.total);
    host_set_valid(h, HOST_S_CPU_PCT);
}

static const struct hostfs_diskstat *find_disk(const struct hostfs_counters *c, const char *name)
{
    for (size_t i = 0; i < c->n_disks; i++) {
        if (strcmp(c->disks[i].name, name) == 0)
            return &c->disks[i];
    }
    return NULL;
}

static void window_disk(const struct hostfs_diskstat *a, const struct hostfs_diskstat *b,
                        int64_t elapsed_us, struct host_disk *d)
{
    double secs = (double)elapsed_us / 1e6;
    uint64_t ios = delta(a->reads, b->reads) + delta(a->writes, b->writes);

    d->util_pct = pct(delta(a->io_ticks_ms, b->io_ticks_ms) * 1000, (uint64_t)elapsed_us);
    d->read_bytes_per_s = (double)delta(a->read_sectors, b->read_sectors) * SECTOR_BYTES / secs;
    d->write_bytes_per_s = (double)delta(a->write_sectors, b->write_sectors) * SECTOR_BYTES / secs;
    d->valid |= UINT64_C(1) << DISK_S_RATES;
    if (ios > 0) {
        d->await_ms =
            (double)(delta(a->read_ms, b->read_ms) + delta(a->write_ms, b->write_ms)) / (double)ios;
        d->valid |= UINT64_C(1) << DISK_S_AWAIT;
    }
}

void hostfs_apply_window(const struct hostfs_counters *a, const struct hostfs_counters *b,
                         struct host_info *h)
{
    static const enum host_slot psi_slot[HOSTFS_PSI__COUNT] = { HOST_S_PSI_CPU_WINDOW,
                                                                HOST_S_PSI_MEM_WINDOW,
                                                                HOST_S_PSI_IO_WINDOW };
    double *psi_some[HOSTFS_PSI__COUNT] = { &h->psi_cpu_some_window_pct,
                                            &h->psi_mem_some_window_pct,
                                            &h->psi_io_some_window_pct };
    double *psi_full[HOSTFS_PSI__COUNT] = { NULL, &h->psi_mem_full_window_pct,
                                            &h->psi_io_full_window_pct };
    int64_t elapsed_us = b->t_us - a->t_us;
    double secs = (double)elapsed_us / 1e6;

    if (elapsed_us <= 0)
        return;
    if (a->have_cpu && b->have_cpu)
        window_cpu(&a->cpu, &b->cpu, h);
    if (a->have_swap && b->have_swap) {
        h->swap_in_pages_per_s = (double)delta(a->pswpin, b->pswpin) / secs;
        h->swap_out_pages_per_s = (double)delta(a->pswpout, b->pswpout) / secs;
        host_set_valid(h, HOST_S_SWAP_RATE);
    }
    for (int r = 0; r < HOSTFS_PSI__COUNT; r++) {
        const struct hostfs_psi *pa = &a->psi[r], *pb = &b->psi[r];

        if (!a->have_psi[r] || !b->have_psi[r])
            continue;
        *psi_some[r] = pct(delta(pa->some.total_us, pb->some.total_us), (uint64_t)elapsed_us);
        if (psi_full[r] != NULL) {
            if (!pa->has_full || !pb->has_full)
                continue;
            *psi_full[r] = pct(delta(pa->full.total_us, pb->full.total_us), (uint64_t)elapsed_us);
        }
        host_set_valid(h, psi_slot[r]);
    }
    for (size_t i = 0; i < h->n_disks; i++) {
        const struct hostfs_diskstat *da = find_disk(a, h->disks[i].name);
        const struct hostfs_diskstat *db = find_disk(b, h->disks[i].name);

        if (da != NULL && db != NULL)
            window_disk(da, db, elapsed_us, &h->disks[i]);
    }
}
