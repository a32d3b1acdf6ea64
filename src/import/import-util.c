/* What every importer uses: lines, notes, nvidia-smi's values and statuses, GPUs, processes. */
#include "collect/klog-parse.h"
#include "import/import-impl.h"
#include "nvml/nvml-abi.h"
#include "util/strutil.h"
#include "util/xalloc.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* ---- lines ---- */

void lines_init(struct lines *l, const char *text, size_t len)
{
    memset(l, 0, sizeof(*l));
    l->text = text;
    l->len = len;
}

bool lines_next(struct lines *l)
{
    const char *nl;
    size_t n, keep;

    if (l->pos >= l->len)
        return false;
    l->start = l->pos;
    nl = memchr(l->text + l->pos, '\n', l->len - l->pos);
    n = nl ? (size_t)(nl - (l->text + l->pos)) : l->len - l->pos;
    l->pos += n + (nl != NULL);
    if (n > 0 && l->text[l->start + n - 1] == '\r')
        n--;
    keep = 0;
    for (size_t i = 0; i < n && keep < sizeof(l->line) - 1; i++) {
        const char *c = l->text + l->start + i;

        /* Terminal escapes (colour, underline) that a redirected nvidia-smi or a copy kept. */
        if (c[0] == '\033' && i + 1 < n && c[1] == '[') {
            size_t k = i + 2;

            while (k < n && k - i < 16 &&
                   (isdigit((unsigned char)l->text[l->start + k]) || l->text[l->start + k] == ';'))
                k++;
            if (k < n && isalpha((unsigned char)l->text[l->start + k])) {
                i = k;
                continue;
            }
        }
        l->line[keep++] = *c;
    }
    l->line[keep] = '\0';
    l->n = keep;
    l->more = keep < n;
    l->no++;
    return true;
}

/* ---- messages ---- */

static char *where(const struct imp *im, unsigned long line)
{
    if (line == 0)
        return xasprintf("%s", im->name);
    return xasprintf("%s:%lu", im->name, im->line0 + line);
}

void imp_note(struct imp *im, enum collector_id c, unsigned long line, const char *fmt, ...)
{
    va_list ap;
    char *what, *at;

    imp_touch(im, c);
    if (im->notes[c] >= IMP_MAX_NOTES) {
        if (im->dropped[c]++ == 0)
            collector_note(&im->s->collectors[c], "%s: more notes left out", im->name);
        return;
    }
    im->notes[c]++;
    va_start(ap, fmt);
    what = xvasprintf(fmt, ap);
    va_end(ap);
    at = where(im, line);
    collector_note(&im->s->collectors[c], "%s: %s", at, what);
    free(at);
    free(what);
}

void imp_fail(struct imp *im, unsigned long line, const char *fmt, ...)
{
    va_list ap;
    char *what, *at;

    if (im->error != NULL)
        return;
    va_start(ap, fmt);
    what = xvasprintf(fmt, ap);
    va_end(ap);
    at = where(im, line ? line : 1);
    im->error = str_sanitize(xasprintf("%s: %s", at, what));
    free(at);
    free(what);
}

void imp_touch(struct imp *im, enum collector_id c)
{
    struct collector_status *st = &im->s->collectors[c];

    if (im->touched[c])
        return;
    im->touched[c] = true;
    if (st->state == CS_NOT_RUN)
        st->state = CS_PARTIAL;
    /* Imported evidence is never the whole of what a collector reads: partial, and whence. */
    if (im->line0 > 0)
        collector_note(st, "evidence from %s in %s (line %lu on)", im->format, im->name,
                       im->line0 + 1);
    else
        collector_note(st, "evidence from %s in %s", im->format, im->name);
}

/* ---- values ---- */

static const struct {
    const char *word;
    int32_t rc;
} statuses[] = {
    { "N/A", NVML_ERROR_NOT_SUPPORTED },
    { "[N/A]", NVML_ERROR_NOT_SUPPORTED },
    { "[Not Supported]", NVML_ERROR_NOT_SUPPORTED },
    { "Not Supported", NVML_ERROR_NOT_SUPPORTED },
    { "Not Available", NVML_ERROR_NOT_SUPPORTED },
    { "[Not Available]", NVML_ERROR_NOT_SUPPORTED },
    { "[Insufficient Permissions]", NVML_ERROR_NO_PERMISSION },
    { "Insufficient Permissions", NVML_ERROR_NO_PERMISSION },
    { "[Unknown Error]", NVML_ERROR_UNKNOWN },
    { "Unknown Error", NVML_ERROR_UNKNOWN },
    { "ERR!", NVML_ERROR_UNKNOWN },
    { "ERR%", NVML_ERROR_UNKNOWN }, /* the table's fan cell when the fan did not answer */
    { "[GPU is lost]", NVML_ERROR_GPU_IS_LOST },
    { "GPU is lost", NVML_ERROR_GPU_IS_LOST },
    { "[GPU requires reset]", NVML_ERROR_RESET_REQUIRED },
    { "[Reset Required]", NVML_ERROR_RESET_REQUIRED },
    { "[Timeout]", NVML_ERROR_TIMEOUT },
    { "[Not Found]", NVML_ERROR_NOT_FOUND },
    { "Not Found", NVML_ERROR_NOT_FOUND },
    { "Requested functionality has been deprecated", NVML_ERROR_DEPRECATED },
    { "[Requested functionality has been deprecated]", NVML_ERROR_DEPRECATED },
    { "[Driver Not Loaded]", NVML_ERROR_DRIVER_NOT_LOADED },
    { "[Unable to communicate with GPU because it is insufficiently powered]",
      NVML_ERROR_INSUFFICIENT_POWER },
};

bool imp_status(const char *v, int32_t *rc)
{
    for (size_t i = 0; i < ARRAY_SIZE(statuses); i++) {
        if (strcasecmp(v, statuses[i].word) == 0) {
            *rc = statuses[i].rc;
            return true;
        }
    }
    /* Any other "[...]" is an error nvidia-smi could not name better. */
    if (v[0] == '[' && v[strlen(v) - 1] == ']') {
        *rc = NVML_ERROR_UNKNOWN;
        return true;
    }
    return false;
}

char *imp_trim(char *s)
{
    char *p = s;
    size_t n;

    while (*p == ' ' || *p == '\t')
        p++;
    n = strlen(p);
    while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t' || p[n - 1] == '\r'))
        n--;
    memmove(s, p, n);
    s[n] = '\0';
    return s;
}

bool imp_starts(const char *s, const char *prefix)
{
    return strncasecmp(s, prefix, strlen(prefix)) == 0;
}

/* A number with an optional fraction, then the rest after blanks: "63.25 W" -> 63.25, "W". */
static bool number(const char *v, double *out, const char **rest)
{
    char *end;
    double d;

    while (*v == ' ')
        v++;
    if (!isdigit((unsigned char)*v))
        return false;
    d = strtod(v, &end);
    if (end == v || d < 0 || d > 1e18)
        return false;
    while (*end == ' ')
        end++;
    *out = d;
    *rest = end;
    return true;
}

static bool word_is(const char *rest, const char *a, const char *b)
{
    return strcasecmp(rest, a) == 0 || (b != NULL && strcasecmp(rest, b) == 0);
}

static const struct {
    const char *word;
    bool value;
} bools[] = {
    { "Enabled", true }, { "Disabled", false }, { "On", true },        { "Off", false },
    { "Yes", true },     { "No", false },       { "Active", true },    { "Not Active", false },
    { "True", true },    { "False", false },    { "Supported", true }, { "Not Supported", false },
};

bool imp_value(const char *v, enum imp_unit u, uint64_t *out)
{
    const char *rest;
    double d;
    uint64_t x;

    switch (u) {
    case IU_STR:
        return false;
    case IU_BOOL:
        for (size_t i = 0; i < ARRAY_SIZE(bools); i++) {
            if (strcasecmp(v, bools[i].word) == 0) {
                *out = bools[i].value;
                return true;
            }
        }
        return false;
    case IU_PSTATE:
        if ((v[0] == 'P' || v[0] == 'p') && str_to_u64(v + 1, 10, &x) && x <= 15) {
            *out = x;
            return true;
        }
        return false;
    case IU_COMPUTE: {
        static const struct {
            const char *word;
            int mode;
        } modes[] = {
            { "Default", NVML_COMPUTEMODE_DEFAULT },
            { "Exclusive_Thread", NVML_COMPUTEMODE_EXCLUSIVE_THREAD },
            { "E. Thread", NVML_COMPUTEMODE_EXCLUSIVE_THREAD },
            { "Exclusive Thread", NVML_COMPUTEMODE_EXCLUSIVE_THREAD },
            { "Prohibited", NVML_COMPUTEMODE_PROHIBITED },
            { "Exclusive_Process", NVML_COMPUTEMODE_EXCLUSIVE_PROCESS },
            { "E. Process", NVML_COMPUTEMODE_EXCLUSIVE_PROCESS },
            { "Exclusive Process", NVML_COMPUTEMODE_EXCLUSIVE_PROCESS },
        };

        for (size_t i = 0; i < ARRAY_SIZE(modes); i++) {
            if (strcasecmp(v, modes[i].word) == 0) {
                *out = (uint64_t)modes[i].mode;
                return true;
            }
        }
        return false;
    }
    case IU_HEX:
        return (imp_starts(v, "0x") && str_to_u64(v + 2, 16, out)) || str_to_u64(v, 16, out);
    case IU_WIDTH:
        if (v[0] == 'x' || v[0] == 'X')
            v++;
        if (!number(v, &d, &rest) || !(rest[0] == '\0' || word_is(rest, "x", NULL)))
            return false;
        *out = (uint64_t)d;
        return d == (double)*out;
    default:
        break;
    }
    if (!number(v, &d, &rest))
        return false;
    switch (u) {
    case IU_NUM:
        if (*rest != '\0' || d != (double)(uint64_t)d)
            return false;
        *out = (uint64_t)d;
        return true;
    case IU_PCT:
        if (!(*rest == '\0' || word_is(rest, "%", NULL)))
            return false;
        break;
    case IU_C:
        if (!word_is(rest, "C", "°C"))
            return false;
        break;
    case IU_MHZ:
        if (!word_is(rest, "MHz", NULL))
            return false;
        break;
    case IU_W:
        if (!word_is(rest, "W", NULL))
            return false;
        d *= 1000.0;
        break;
    case IU_KBS:
        if (!word_is(rest, "KB/s", "KiB/s"))
            return false;
        d *= 1024.0;
        break;
    case IU_MIB:
        if (word_is(rest, "MiB", "MB"))
            d *= 1024.0 * 1024.0;
        else if (word_is(rest, "GiB", "GB"))
            d *= 1024.0 * 1024.0 * 1024.0;
        else if (word_is(rest, "KiB", "KB"))
            d *= 1024.0;
        else if (!word_is(rest, "B", "bytes"))
            return false;
        break;
    default:
        return false;
    }
    if (d > 1.8e19)
        return false;
    *out = (uint64_t)(d + 0.5);
    return true;
}

static const struct jfield *gpu_field(const char *key)
{
    const struct jfield *f = jtable_find(&gpu_table, key);

    if (f == NULL || f->slot < 0)
        fatal("import: no GPU field %s", key);
    return f;
}

void imp_gpu_set_rc(struct gpu *g, const char *key, int32_t rc)
{
    const struct jfield *f = gpu_field(key);

    /* A status fills only what nothing said yet: a value, or a status, is kept. */
    if (g->rc[f->slot] == JF_RC_NOT_COLLECTED)
        g->rc[f->slot] = rc;
}

void imp_gpu_set_u64(struct gpu *g, const char *key, uint64_t value)
{
    const struct jfield *f = gpu_field(key);
    char *at = (char *)g + f->offset;

    if (g->rc[f->slot] == 0)
        return; /* known already: the first piece that had it gives it */
    switch (f->type) {
    case JF_U32:
    case JF_HEX32:
        if (value > UINT32_MAX)
            return;
        *(uint32_t *)at = (uint32_t)value;
        break;
    case JF_I32:
    case JF_ENUM:
        if (value > INT32_MAX)
            return;
        *(int32_t *)at = (int32_t)value;
        break;
    case JF_U64:
    case JF_LIMIT:
    case JF_HEX64:
        if (value > INT64_MAX)
            return;
        *(uint64_t *)at = value;
        break;
    case JF_BOOL:
        *(bool *)at = value != 0;
        break;
    default:
        fatal("import: GPU field %s is not a number", f->name);
    }
    g->rc[f->slot] = 0;
}

void imp_gpu_set(struct imp *im, struct gpu *g, const char *key, const char *v, enum imp_unit u,
                 unsigned long line)
{
    const struct jfield *f = gpu_field(key);
    int32_t rc;
    uint64_t x;

    if (g->rc[f->slot] == 0)
        return;
    if (imp_status(v, &rc)) {
        imp_gpu_set_rc(g, key, rc);
        return;
    }
    if (f->type == JF_STR) {
        char **p = (char **)((char *)g + f->offset);

        if (*v == '\0')
            return;
        free(*p);
        *p = str_sanitized(v);
        g->rc[f->slot] = 0;
        return;
    }
    if (!imp_value(v, u, &x)) {
        char *shown = str_excerpt(v, 40);

        imp_note(im, COLLECTOR_NVML, line, "GPU %u %s: \"%s\" is not a value gpudoctor reads",
                 g->index, key, shown);
        free(shown);
        return;
    }
    imp_gpu_set_u64(g, key, x);
}

/* ---- GPUs ---- */

bool imp_pci_nvml(const char *in, char *out, size_t size)
{
    unsigned long dom = 0, bus, dev, fn = 0;
    const char *p = in;
    char *end;
    unsigned long parts[4];
    int n = 0;

    if (imp_starts(p, "PCI:"))
        p += 4;
    /* Up to four hex fields: [domain:]bus:device[.function] */
    while (n < 4) {
        if (!isxdigit((unsigned char)*p))
            return false;
        parts[n++] = strtoul(p, &end, 16);
        if (end - p > 8)
            return false;
        p = end;
        if (*p == ':') {
            p++;
            continue;
        }
        if (*p == '.') {
            p++;
            if (!isxdigit((unsigned char)*p))
                return false;
            fn = strtoul(p, &end, 16);
            p = end;
        }
        break;
    }
    if (n == 3) {
        dom = parts[0];
        bus = parts[1];
        dev = parts[2];
    } else if (n == 2) {
        bus = parts[0];
        dev = parts[1];
    } else {
        return false;
    }
    if (isalnum((unsigned char)*p) || bus > 0xff || dev > 0x1f || fn > 7 || dom > 0xffffffffUL)
        return false;
    snprintf(out, size, "%08lX:%02lX:%02lX.%lX", dom, bus, dev, fn);
    return true;
}

static bool index_used(const struct snapshot *s, uint32_t index)
{
    for (size_t i = 0; i < s->n_gpus; i++) {
        if (s->gpus[i].index == index)
            return true;
    }
    return false;
}

struct gpu *imp_gpu(struct imp *im, const char *bus, int64_t index, unsigned long line)
{
    struct snapshot *s = im->s;
    char pci[32];
    bool have_pci = bus != NULL && imp_pci_nvml(bus, pci, sizeof(pci));
    struct gpu *g;

    if (have_pci) {
        for (size_t i = 0; i < s->n_gpus; i++) {
            g = &s->gpus[i];
            if (!gpu_valid(g, GPU_S_PCI_BUS_ID) || !driver_pci_same(g->pci_bus_id, pci))
                continue;
            /* A partial -q read before numbered it by its place: this piece knows its index. */
            if (g->index_by_order && index >= 0 && index <= UINT32_MAX &&
                (g->index == (uint32_t)index || !index_used(s, (uint32_t)index))) {
                g->index = (uint32_t)index;
                g->index_by_order = false;
            }
            return g;
        }
    }
    if (index >= 0) {
        for (size_t i = 0; i < s->n_gpus; i++) {
            g = &s->gpus[i];
            /* The same index with another address is another machine's GPU: not merged. */
            if (g->index != (uint32_t)index ||
                (have_pci && gpu_valid(g, GPU_S_PCI_BUS_ID) && g->handle_rc == 0))
                continue;
            /* -L read first: the address is what this piece adds. */
            if (have_pci && !gpu_valid(g, GPU_S_PCI_BUS_ID)) {
                free(g->pci_bus_id);
                g->pci_bus_id = xstrdup(pci);
                g->rc[GPU_S_PCI_BUS_ID] = 0;
            }
            return g;
        }
    }
    if (s->n_gpus >= IMP_MAX_GPUS) {
        imp_note(im, COLLECTOR_NVML, line, "more than %d GPUs: the others are left out",
                 IMP_MAX_GPUS);
        return NULL;
    }
    if (index < 0 || index > UINT32_MAX || index_used(s, (uint32_t)index)) {
        if (index >= 0)
            imp_note(im, COLLECTOR_NVML, line,
                     "GPU %lld has another address than the GPU %lld already read: kept as "
                     "another GPU",
                     (long long)index, (long long)index);
        for (index = 0; index_used(s, (uint32_t)index); index++)
            ;
    }
    s->gpus = xreallocarray(s->gpus, s->n_gpus + 1, sizeof(*s->gpus));
    g = &s->gpus[s->n_gpus++];
    gpu_init(g, (uint32_t)index);
    if (have_pci) {
        g->pci_bus_id = xstrdup(pci);
        g->rc[GPU_S_PCI_BUS_ID] = 0;
    }
    imp_touch(im, COLLECTOR_NVML);
    return g;
}

struct gpu *imp_gpu_listed(struct imp *im, const char *bus, size_t position, unsigned long line)
{
    size_t before = im->s->n_gpus;
    struct gpu *g = imp_gpu(im, bus, (int64_t)position, line);

    if (g != NULL && im->s->n_gpus > before)
        g->index_by_order = true;
    return g;
}

/* ---- processes ---- */

struct gpu_proc *imp_gpu_proc(struct imp *im, struct gpu *g, uint32_t pid, unsigned long line)
{
    struct gpu_proc *p;

    if (!proc_pid_valid(pid)) {
        imp_note(im, COLLECTOR_NVML, line, "GPU %u: pid %u is not a process id: left out", g->index,
                 pid);
        return NULL;
    }
    for (size_t i = 0; i < g->n_procs; i++) {
        if (g->procs[i].pid == pid)
            return &g->procs[i];
    }
    if (g->n_procs >= IMP_MAX_GPU_PROCS) {
        imp_note(im, COLLECTOR_NVML, line,
                 "GPU %u: more than %d processes: the others are left "
                 "out",
                 g->index, IMP_MAX_GPU_PROCS);
        return NULL;
    }
    g->procs = xreallocarray(g->procs, g->n_procs + 1, sizeof(*g->procs));
    p = &g->procs[g->n_procs++];
    memset(p, 0, sizeof(*p));
    p->pid = pid;
    return p;
}

static int cmp_proc(const void *a, const void *b)
{
    const struct proc *x = a, *y = b;

    return (x->pid > y->pid) - (x->pid < y->pid);
}

void imp_proc_name(struct imp *im, uint32_t pid, const char *name)
{
    struct proc_table *t = &im->s->procs;
    struct proc *p;
    int32_t rc;

    if (!proc_pid_valid(pid) || name == NULL || *name == '\0' || imp_status(name, &rc))
        return;
    p = proc_table_find(t, (int32_t)pid);
    if (p == NULL) {
        if (t->n_procs >= IMP_MAX_PROCS)
            return;
        t->procs = xreallocarray(t->procs, t->n_procs + 1, sizeof(*t->procs));
        p = &t->procs[t->n_procs++];
        memset(p, 0, sizeof(*p));
        p->pid = (int32_t)pid;
        qsort(t->procs, t->n_procs, sizeof(*t->procs), cmp_proc);
        p = proc_table_find(t, (int32_t)pid);
        imp_touch(im, COLLECTOR_PROCS);
    }
    if (p->valid & PROC_BIT(PROC_S_CMDLINE))
        return;
    /* What nvidia-smi shows of a process: its command, often cut. Nothing else is known. */
    p->cmdline = str_sanitized(name);
    p->valid |= PROC_BIT(PROC_S_CMDLINE);
}

void imp_gpu_procs_known(struct imp *im, struct gpu *g)
{
    (void)im;
    if (g->rc[GPU_S_PROCESSES] != 0)
        g->rc[GPU_S_PROCESSES] = 0;
}

/* ---- time ---- */

int64_t imp_time_ctime(const char *s)
{
    static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
    char mon[4];
    int day, hh, mm, ss, year;
    struct tm tm;
    const char *m;
    time_t t;

    /* "Wed Apr 17 17:09:17 2024": the weekday is not checked (nvidia-smi's locale is C). */
    while (*s == ' ')
        s++;
    if (strlen(s) < 20 || sscanf(s + 4, "%3s %d %d:%d:%d %d", mon, &day, &hh, &mm, &ss, &year) != 6)
        return 0;
    m = strstr(months, mon);
    if (m == NULL || (m - months) % 3 != 0 || strlen(mon) != 3 || day < 1 || day > 31 || hh > 23 ||
        mm > 59 || ss > 60 || year < 1990 || year > 9999 || hh < 0 || mm < 0 || ss < 0)
        return 0;
    memset(&tm, 0, sizeof(tm));
    tm.tm_year = year - 1900;
    tm.tm_mon = (int)((m - months) / 3);
    tm.tm_mday = day;
    tm.tm_hour = hh;
    tm.tm_min = mm;
    tm.tm_sec = ss;
    tm.tm_isdst = -1;
    t = mktime(&tm);
    return t == (time_t)-1 ? 0 : (int64_t)t * 1000;
}

void imp_time(struct imp *im, int64_t ms)
{
    if (ms <= 0)
        return;
    if (im->time_ms == 0)
        im->time_ms = ms;
    if (ms > im->is->time_ms)
        im->is->time_ms = ms;
}

bool imp_cuda_version(const char *v, int32_t *out)
{
    unsigned major, minor = 0;
    char extra;

    if (sscanf(v, "%u.%u%c", &major, &minor, &extra) != 2 && sscanf(v, "%u%c", &major, &extra) != 1)
        return false;
    if (major == 0 || major > 99 || minor > 99)
        return false;
    *out = (int32_t)(major * 1000 + minor * 10);
    return true;
}

/* ---- kernel-log events ---- */

static bool same_text(const struct klog_event *a, const struct klog_event *b)
{
    if (a->kind != b->kind || a->xid != b->xid)
        return false;
    if ((a->pci == NULL) != (b->pci == NULL) || (a->pci && strcmp(a->pci, b->pci) != 0))
        return false;
    return (a->message == NULL) == (b->message == NULL) &&
           (a->message == NULL || strcmp(a->message, b->message) == 0);
}

static bool same_event(const struct klog_event *a, const struct klog_event *b)
{
    uint64_t up = UINT64_C(1) << KLOG_S_UPTIME, tm = UINT64_C(1) << KLOG_S_TIME;

    if (!same_text(a, b))
        return false;
    /* The same line read twice (kern.log and dmesg in one bug report): the same kernel stamp. */
    if ((a->valid & up) && (b->valid & up))
        return a->uptime_us == b->uptime_us;
    if ((a->valid & tm) && (b->valid & tm))
        return a->time_ms == b->time_ms;
    return false;
}

/*
 * One copy has only the time of day (kern.log, journalctl -k), the other only the seconds since
 * boot (dmesg): the stamps cannot be compared. Such lines are paired one to one, so the same log
 * read in both forms counts each event once (with both stamps), and a line one copy has more
 * often still counts.
 */
static bool other_stamp(const struct klog_event *a, const struct klog_event *b)
{
    uint64_t up = UINT64_C(1) << KLOG_S_UPTIME, tm = UINT64_C(1) << KLOG_S_TIME;
    uint64_t sa = a->valid & (up | tm), sb = b->valid & (up | tm);

    return ((sa == up && sb == tm) || (sa == tm && sb == up)) && same_text(a, b);
}

static int64_t event_ms(const struct klog_event *e)
{
    return (e->valid & (UINT64_C(1) << KLOG_S_TIME)) ? e->time_ms : 0;
}

/*
 * Oldest first, as the collector keeps them; events of the same second (or without a time) in
 * the order read: a stable insertion sort (qsort is not stable). The lists are short (at most
 * IMP_MAX_EVENTS plus one piece's KLOG_MAX_EVENTS) and mostly in order already.
 */
static void sort_events(struct klog_event *ev, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        struct klog_event cur = ev[i];
        size_t k = i;

        while (k > 0 && event_ms(&ev[k - 1]) > event_ms(&cur)) {
            ev[k] = ev[k - 1];
            k--;
        }
        ev[k] = cur;
    }
}

void imp_klog_merge(struct imp *im, struct klog_parser *p, const char *source)
{
    struct driver_info fresh, *d = &im->s->driver;
    size_t before;
    bool *paired; /* the events before this piece already paired with one of it */

    memset(&fresh, 0, sizeof(fresh));
    klog_parser_finish(p, &fresh);
    imp_touch(im, COLLECTOR_KLOG);
    d->events = xreallocarray(d->events, d->n_events + fresh.n_events + 1, sizeof(*d->events));
    before = d->n_events;
    paired = xcalloc(before + 1, sizeof(*paired));
    for (size_t i = 0; i < fresh.n_events; i++) {
        struct klog_event *ev = &fresh.events[i];
        bool dup = false;

        /* The same line in another piece (a report's kern.log and its dmesg); not a repeat. */
        for (size_t k = 0; k < before && !dup; k++)
            dup = same_event(&d->events[k], ev);
        for (size_t k = 0; k < before && !dup; k++) {
            struct klog_event *was = &d->events[k];

            if (paired[k] || !other_stamp(was, ev))
                continue;
            /* One event, now with both stamps. */
            dup = paired[k] = true;
            if (ev->valid & (UINT64_C(1) << KLOG_S_TIME)) {
                was->time_ms = ev->time_ms;
                if (was->time_ms > im->is->klog_last_ms)
                    im->is->klog_last_ms = was->time_ms;
            } else {
                was->uptime_us = ev->uptime_us;
            }
            was->valid |= ev->valid & (UINT64_C(1) << KLOG_S_TIME | UINT64_C(1) << KLOG_S_UPTIME);
        }
        if (dup) {
            klog_event_free(ev);
            continue;
        }
        if ((ev->valid & (UINT64_C(1) << KLOG_S_TIME)) && ev->time_ms > im->is->klog_last_ms)
            im->is->klog_last_ms = ev->time_ms;
        d->events[d->n_events++] = *ev;
    }
    free(fresh.events);
    free(paired);
    sort_events(d->events, d->n_events);
    if (d->n_events > IMP_MAX_EVENTS) {
        size_t drop = d->n_events - IMP_MAX_EVENTS;

        for (size_t i = 0; i < drop; i++)
            klog_event_free(&d->events[i]);
        memmove(d->events, d->events + drop, IMP_MAX_EVENTS * sizeof(*d->events));
        d->n_events = IMP_MAX_EVENTS;
        im->is->events_dropped += drop;
    }
    d->klog_records += fresh.klog_records;
    d->klog_events_total += fresh.klog_events_total;
    d->klog_events_dropped = fresh.klog_events_dropped + im->is->events_dropped;
    d->klog_unparsed += fresh.klog_unparsed;
    d->klog_mem_corrected += fresh.klog_mem_corrected;
    d->klog_mem_uncorrected += fresh.klog_mem_uncorrected;
    d->valid |= UINT64_C(1) << DRIVER_S_KLOG | UINT64_C(1) << DRIVER_S_KLOG_MEM;
    if (d->klog_source == NULL) {
        d->klog_source = str_sanitized(source);
    } else if (strstr(d->klog_source, source) == NULL && strlen(d->klog_source) < 1000) {
        char *both = xasprintf("%s, %s", d->klog_source, source);

        free(d->klog_source);
        d->klog_source = str_sanitize(both);
    }
}
