#include "collect/klog-parse.h"
#include "data/xid.h"
#include "util/strutil.h"
#include "util/xalloc.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Xids whose messages say more than a sentence (docs/driver.md, "What is decoded"). */
#define XID_CONTAINED       94
#define XID_UNCONTAINED     95
#define XID_RECOVERY_ACTION 154

/* A hung-task warning's call trace is followed for at most this many lines. */
#define HUNG_TRACE_LINES 64
/* Two OOM lines about one pid this close together are one kill ("oom-kill:" + "Killed process"). */
#define OOM_MERGE_MS 2000

/* Driver messages worth an event of their own (KLOG_OTHER_NVRM), matched in the text after
 * "NVRM: ". Everything else the driver says is routine. */
static const char *const other_nvrm[] = {
    "API mismatch",         /* user-space library and kernel module versions differ */
    "RmInitAdapter failed", /* the GPU could not be initialised */
    "rm_init_adapter failed",
    "probe routine failed", /* the module loaded but claimed no GPU */
    "not supported by the", /* GPU too old or too new for this driver branch */
    "No NVIDIA",            /* "No NVIDIA GPU found." / "No NVIDIA graphics adapter found!" */
    "loading NVIDIA UNIX",  /* the module (re)loaded: dates a driver change */
};

static bool skip(const char **s, const char *lit)
{
    size_t n = strlen(lit);

    if (strncmp(*s, lit, n) != 0)
        return false;
    *s += n;
    return true;
}

static void skip_spaces(const char **s)
{
    while (**s == ' ' || **s == '\t')
        (*s)++;
}

/* Decimal digits at *s into *out (saturating checks); advances past them. */
static bool parse_uint(const char **s, uint64_t max, uint64_t *out)
{
    uint64_t v = 0;
    const char *p = *s;

    if (!isdigit((unsigned char)*p))
        return false;
    while (isdigit((unsigned char)*p)) {
        unsigned d = (unsigned)(*p - '0');

        if (v > (max - d) / 10)
            return false;
        v = v * 10 + d;
        p++;
    }
    *s = p;
    *out = v;
    return true;
}

static char *dup_trimmed(const char *s, size_t n)
{
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        n--;
    return xstrndup(s, n);
}

size_t klog_parse_pci(const char *s, char *out, size_t size)
{
    const char *p = s;
    size_t dom = 0;
    char buf[24];

    if (strncmp(p, "PCI:", 4) == 0)
        p += 4;
    while (isxdigit((unsigned char)p[dom]))
        dom++;
    if (dom < 4 || dom > 8 || p[dom] != ':' || !isxdigit((unsigned char)p[dom + 1]) ||
        !isxdigit((unsigned char)p[dom + 2]) || p[dom + 3] != ':' ||
        !isxdigit((unsigned char)p[dom + 4]) || !isxdigit((unsigned char)p[dom + 5]) ||
        isxdigit((unsigned char)p[dom + 6]))
        return 0;
    memcpy(buf, p, dom + 6);
    buf[dom + 6] = '\0';
    for (char *c = buf; *c; c++)
        *c = (char)tolower((unsigned char)*c);
    p += dom + 6;
    /* The function number, when printed, is not part of what the driver's Xid lines show. */
    if (p[0] == '.' && isxdigit((unsigned char)p[1]) && !isxdigit((unsigned char)p[2]))
        p += 2;
    if (out != NULL && size > 0) {
        strncpy(out, buf, size - 1);
        out[size - 1] = '\0';
    }
    return (size_t)(p - s);
}

/* Hex digits after "0x" at *s into *out (at most 32 bits); advances past them. */
static bool parse_hex32(const char **s, uint32_t *out)
{
    const char *p = *s;
    uint32_t v = 0;
    int digits = 0;

    if (p[0] != '0' || (p[1] != 'x' && p[1] != 'X'))
        return false;
    p += 2;
    while (isxdigit((unsigned char)*p)) {
        if (digits++ == 8)
            return false;
        v = v << 4 | (uint32_t)(isdigit((unsigned char)*p) ? *p - '0'
                                                           : tolower((unsigned char)*p) - 'a' + 10);
        p++;
    }
    if (digits == 0)
        return false;
    *s = p;
    *out = v;
    return true;
}

/* "[-]digits" at *s into *out. */
static bool parse_int32(const char **s, int32_t *out)
{
    const char *p = *s;
    bool neg = skip(&p, "-");
    uint64_t v;

    if (!parse_uint(&p, neg ? (uint64_t)INT32_MAX + 1 : INT32_MAX, &v))
        return false;
    *out = neg ? (int32_t)(-(int64_t)v) : (int32_t)v;
    *s = p;
    return true;
}

/*
 * Drivers from 570.124.04 end an Xid 45 line with " caused by previous Xid N" (kernel_rc.c,
 * krcReportXid_IMPL); it is only ever the end of the line, so text elsewhere does not count.
 */
static void decode_caused_by(struct klog_event *ev)
{
    static const char lit[] = "caused by previous Xid ";
    const char *m = ev->message, *at = NULL, *q;
    uint64_t v;

    for (const char *p = strstr(m, lit); p != NULL; p = strstr(p + 1, lit))
        at = p;
    if (at == NULL || (at > m && at[-1] != ' '))
        return;
    q = at + strlen(lit);
    if (parse_uint(&q, INT32_MAX, &v) && *q == '\0') {
        ev->caused_by_xid = (int32_t)v;
        ev->valid |= 1u << KLOG_S_CAUSED_BY;
    }
}

/* "0x1 (GPU Reset Required)": the driver's number and its name, which must agree. A number
 * the table does not know (a newer driver) is kept as it is. */
static bool parse_recovery(const char **s, int32_t *out)
{
    const char *p = *s, *close;
    uint32_t v;

    if (!parse_hex32(&p, &v) || v > INT32_MAX || !skip(&p, " ("))
        return false;
    close = strchr(p, ')');
    if (close == NULL)
        return false;
    if (v < KLOG__RA_COUNT &&
        ((size_t)(close - p) != strlen(klog_recovery_action_driver_names[v]) ||
         strncmp(p, klog_recovery_action_driver_names[v], (size_t)(close - p)) != 0))
        return false;
    *out = (int32_t)v;
    *s = close + 1;
    return true;
}

/* Xid 154 (gpu.c): "GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)" */
static void decode_recovery(struct klog_event *ev)
{
    const char *p = ev->message;
    int32_t from, to;

    if (!skip(&p, "GPU recovery action changed from "))
        return;
    if (parse_recovery(&p, &from)) {
        ev->recovery_action_prev = from;
        ev->valid |= 1u << KLOG_S_RECOVERY_PREV;
    } else {
        /* an unknown name before " to ": skip to it, the new action still counts */
        p = strstr(p, " to 0x");
        if (p == NULL)
            return;
    }
    if (skip(&p, " to ") && parse_recovery(&p, &to)) {
        ev->recovery_action = to;
        ev->valid |= 1u << KLOG_S_RECOVERY;
    }
}

/*
 * NVLink5 Xids 144..150, printed by the GSP firmware as
 *   "RLW_RXPIPE Nonfatal XC0 i0 Link 13 (0x0409a0c2 0x00000008 0x00000001 ...)"
 * the unit, Fatal or Nonfatal, two fields gpudoctor does not interpret, the link (-1: none),
 * then intrinfo and the error status (docs/driver.md; NVIDIA's decode sheet is
 * data/xid-nvlink5.tsv). A message of another shape leaves the fields unset.
 */
static void decode_nvlink5(struct klog_event *ev)
{
    const char *p = ev->message;
    size_t unit = strspn(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_/");
    uint64_t v;
    int32_t link;
    uint32_t intrinfo, status;
    bool fatal;

    if (unit == 0 || unit > 64 || p[unit] != ' ')
        return;
    p += unit + 1;
    if (skip(&p, "Fatal "))
        fatal = true;
    else if (skip(&p, "Nonfatal "))
        fatal = false;
    else
        return;
    if (!skip(&p, "XC") || !parse_uint(&p, UINT32_MAX, &v) || !skip(&p, " i") ||
        !parse_uint(&p, UINT32_MAX, &v) || !skip(&p, " Link ") || !parse_int32(&p, &link) ||
        !skip(&p, " (") || !parse_hex32(&p, &intrinfo) || !skip(&p, " ") ||
        !parse_hex32(&p, &status) || (*p != ' ' && *p != ')'))
        return;
    ev->nvlink_unit = xstrndup(ev->message, unit);
    ev->nvlink_fatal = fatal;
    ev->nvlink_link = link;
    ev->nvlink_intrinfo = intrinfo;
    ev->nvlink_error_status = status;
    ev->valid |= 1u << KLOG_S_NVLINK | 1u << KLOG_S_NVLINK_UNIT;
}

static bool parse_yes_no(const char **s, bool *out)
{
    if (skip(s, "Yes"))
        *out = true;
    else if (skip(s, "No"))
        *out = false;
    else
        return false;
    return true;
}

/* Xid 94/95 (kern_gpu_error_cont_ga100.c): "... RST: Yes, D-RST: No" at the end: whether the
 * GPU must be reset, and whether its work must be drained first. */
static void decode_containment(struct klog_event *ev)
{
    const char *p = NULL;
    bool rst, drst;

    for (const char *q = strstr(ev->message, " RST: "); q != NULL; q = strstr(q + 1, " RST: "))
        p = q;
    if (p == NULL)
        return;
    p += strlen(" RST: ");
    if (parse_yes_no(&p, &rst) && skip(&p, ", D-RST: ") && parse_yes_no(&p, &drst) && *p == '\0') {
        ev->reset_required = rst;
        ev->drain_reset_required = drst;
        ev->valid |= 1u << KLOG_S_CONTAINMENT;
    }
}

/* "NVRM: Xid (PCI:0000:3b:00 GPU-I:01 GPU-CI:00): 13, pid=..., name=..., message" */
static enum klog_parse_result parse_xid(const char *r, struct klog_event *ev)
{
    char pci[24];
    size_t n;
    uint64_t v;

    ev->kind = KLOG_XID;
    if (!skip(&r, "("))
        return KLOG_PARSE_BAD;
    n = klog_parse_pci(r, pci, sizeof(pci));
    if (n == 0)
        return KLOG_PARSE_BAD;
    r += n;
    ev->pci = xstrdup(pci);
    if (skip(&r, " GPU-I:")) {
        if (!parse_uint(&r, UINT32_MAX, &v))
            return KLOG_PARSE_BAD;
        ev->gpu_instance = (uint32_t)v;
        ev->valid |= 1u << KLOG_S_GPU_INSTANCE;
    }
    if (skip(&r, " GPU-CI:")) {
        if (!parse_uint(&r, UINT32_MAX, &v))
            return KLOG_PARSE_BAD;
        ev->compute_instance = (uint32_t)v;
        ev->valid |= 1u << KLOG_S_COMPUTE_INSTANCE;
    }
    if (!skip(&r, "):"))
        return KLOG_PARSE_BAD;
    skip_spaces(&r);
    if (!parse_uint(&r, INT32_MAX, &v))
        return KLOG_PARSE_BAD;
    ev->xid = (int32_t)v;
    ev->valid |= 1u << KLOG_S_XID;
    skip_spaces(&r);
    if (*r == ',')
        r++;
    skip_spaces(&r);
    /* pid= and name= are there when the driver knew the process; '<unknown>' (515-565) or
     * absent otherwise. Drivers before name= existed print pid= alone. */
    if (skip(&r, "pid=")) {
        const char *end = strchr(r, ',');
        const char *q = r;

        if (end == NULL)
            end = r + strlen(r);
        if (parse_uint(&q, INT32_MAX, &v) && q == end) {
            ev->pid = (int32_t)v;
            ev->valid |= 1u << KLOG_S_PID;
        }
        r = *end ? end + 1 : end;
        skip_spaces(&r);
    }
    if (skip(&r, "name=")) {
        const char *end = strstr(r, ", ");

        if (end == NULL)
            end = r + strlen(r);
        if (end > r && strncmp(r, "<unknown>", (size_t)(end - r)) != 0)
            ev->name = xstrndup(r, (size_t)(end - r));
        r = *end ? end + 2 : end;
    }
    ev->message = dup_trimmed(r, strlen(r));
    decode_caused_by(ev);
    if (ev->xid == XID_RECOVERY_ACTION)
        decode_recovery(ev);
    else if (ev->xid >= XID_NVLINK5_FIRST && ev->xid <= XID_NVLINK5_LAST)
        decode_nvlink5(ev);
    else if (ev->xid == XID_CONTAINED || ev->xid == XID_UNCONTAINED)
        decode_containment(ev);
    return KLOG_PARSE_EVENT;
}

/*
 * "nvidia-nvswitch3: SXid (PCI:0000:c3:00.0): 12028, Non-fatal, Link 37 egress non-posted PRIV
 * error (First)": an NVSwitch error (docs/fabric.md); the driver prints Fatal, Non-fatal or
 * Correctable (nvswitch's NVSWITCH_REPORT_*), decided when the error happens, so the word on the
 * line is what counts, not the number. r is the text after "SXid (". The lines the
 * driver adds after one (", Data {0x...}", ", Severity 1 Engine instance ...") carry no error of
 * their own and are not events.
 */
static enum klog_parse_result parse_sxid(const char *r, struct klog_event *ev)
{
    char pci[24];
    size_t n;
    uint64_t v;

    ev->kind = KLOG_SXID;
    n = klog_parse_pci(r, pci, sizeof(pci));
    if (n == 0)
        return KLOG_PARSE_BAD;
    r += n;
    ev->pci = xstrdup(pci);
    if (!skip(&r, "):"))
        return KLOG_PARSE_BAD;
    skip_spaces(&r);
    if (!parse_uint(&r, INT32_MAX, &v))
        return KLOG_PARSE_BAD;
    ev->sxid = (int32_t)v;
    if (!skip(&r, ","))
        return KLOG_PARSE_BAD;
    skip_spaces(&r);
    if (skip(&r, "Fatal"))
        ev->sxid_fatal = true;
    else if (skip(&r, "Non-fatal") || skip(&r, "Nonfatal"))
        ev->sxid_fatal = false;
    else if (skip(&r, "Correctable"))
        ev->sxid_correctable = true;
    else if (str_starts(r, "Data {") || str_starts(r, "Severity "))
        return KLOG_PARSE_NONE;
    else
        return KLOG_PARSE_BAD;
    ev->valid |= 1u << KLOG_S_SXID;
    if (*r == ',')
        r++;
    skip_spaces(&r);
    if (str_starts(r, "Link ")) {
        const char *q = r + strlen("Link ");
        int32_t link;

        if (parse_int32(&q, &link) && link >= 0 && (*q == ' ' || *q == ',' || *q == '\0')) {
            ev->sxid_link = link;
            ev->valid |= 1u << KLOG_S_SXID_LINK;
        }
    }
    ev->message = dup_trimmed(r, strlen(r));
    return KLOG_PARSE_EVENT;
}

/* The first PCI address in s, into ev->pci. */
static void find_pci(const char *s, struct klog_event *ev)
{
    char pci[24];

    for (const char *p = s; *p; p++) {
        if ((p == s || !isxdigit((unsigned char)p[-1])) && klog_parse_pci(p, pci, sizeof(pci))) {
            ev->pci = xstrdup(pci);
            return;
        }
    }
}

static bool mentions_driver(const char *s)
{
    const char *t = str_ltrim(s);

    return strstr(s, "nvidia") != NULL || str_starts(t, "nv_") || str_starts(t, "? nv_") ||
           strstr(s, " nv_") != NULL;
}

/* "INFO: task NAME:PID blocked for more than N seconds." NAME may itself hold ':'. */
static enum klog_parse_result parse_hung(const char *r, const char *msg, struct klog_event *ev)
{
    const char *blocked = strstr(r, " blocked for more than ");
    const char *colon = NULL, *q;
    uint64_t v;

    ev->kind = KLOG_HUNG_TASK;
    if (blocked == NULL)
        return KLOG_PARSE_BAD;
    for (const char *c = r; c < blocked; c++) {
        if (*c == ':')
            colon = c;
    }
    q = colon ? colon + 1 : NULL;
    if (colon == NULL || colon == r || !parse_uint(&q, INT32_MAX, &v) || q != blocked)
        return KLOG_PARSE_BAD;
    ev->name = xstrndup(r, (size_t)(colon - r));
    ev->pid = (int32_t)v;
    ev->valid |= 1u << KLOG_S_PID;
    q = blocked + strlen(" blocked for more than ");
    if (parse_uint(&q, UINT32_MAX, &v)) {
        ev->blocked_s = (uint32_t)v;
        ev->valid |= 1u << KLOG_S_BLOCKED;
    }
    ev->message = dup_trimmed(msg, strlen(msg));
    return KLOG_PARSE_HUNG;
}

/* "oom-kill:constraint=...,task=python,pid=1234,uid=1000" */
static enum klog_parse_result parse_oom_summary(const char *r, const char *msg,
                                                struct klog_event *ev)
{
    const char *task = strstr(r, ",task="), *pid = strstr(r, ",pid=");
    uint64_t v;

    ev->kind = KLOG_OOM_KILL;
    if (task == NULL || pid == NULL)
        return KLOG_PARSE_BAD;
    pid += strlen(",pid=");
    if (!parse_uint(&pid, INT32_MAX, &v))
        return KLOG_PARSE_BAD;
    ev->pid = (int32_t)v;
    ev->valid |= 1u << KLOG_S_PID;
    task += strlen(",task=");
    ev->name = xstrndup(task, strcspn(task, ","));
    ev->message = dup_trimmed(msg, strlen(msg));
    return KLOG_PARSE_EVENT;
}

/* Adds "<key>NkB" found in s to *kb; true when found. */
static bool add_kb(const char *s, const char *key, uint64_t *kb)
{
    const char *p = strstr(s, key);
    uint64_t v;

    if (p == NULL)
        return false;
    p += strlen(key);
    if (!parse_uint(&p, UINT64_MAX / 4096, &v) || !str_starts(p, "kB"))
        return false;
    *kb += v;
    return true;
}

/* "... Killed process 1234 (python) total-vm:..kB, anon-rss:..kB, file-rss:..kB, ..." and the
 * older "Out of memory: Kill process 1234 (python) score 900 or sacrifice child". */
static enum klog_parse_result parse_oom_kill(const char *at, const char *msg, struct klog_event *ev)
{
    const char *p = at, *end;
    uint64_t v, kb = 0;
    bool any;

    ev->kind = KLOG_OOM_KILL;
    if (!skip(&p, "Killed process ") && !skip(&p, "Kill process "))
        return KLOG_PARSE_BAD;
    if (!parse_uint(&p, INT32_MAX, &v) || !skip(&p, " ("))
        return KLOG_PARSE_BAD;
    ev->pid = (int32_t)v;
    ev->valid |= 1u << KLOG_S_PID;
    /* The name may hold spaces and parentheses: it ends at the ')' before the fields. */
    end = strstr(p, ") total-vm");
    if (end == NULL)
        end = strstr(p, ") score");
    if (end == NULL)
        end = strrchr(p, ')');
    if (end == NULL)
        return KLOG_PARSE_BAD;
    ev->name = xstrndup(p, (size_t)(end - p));
    any = add_kb(end, "anon-rss:", &kb);
    any |= add_kb(end, "file-rss:", &kb);
    any |= add_kb(end, "shmem-rss:", &kb);
    if (any) {
        ev->rss_bytes = kb * 1024;
        ev->valid |= 1u << KLOG_S_RSS;
    }
    ev->message = dup_trimmed(msg, strlen(msg));
    return KLOG_PARSE_EVENT;
}

enum klog_parse_result klog_parse_message(const char *msg, struct klog_event *ev)
{
    const char *nvrm, *r, *oom;

    memset(ev, 0, sizeof(*ev));
    nvrm = strstr(msg, "NVRM: ");
    if (nvrm != NULL) {
        r = nvrm + strlen("NVRM: ");
        if (skip(&r, "Xid "))
            return parse_xid(r, ev);
        if (strstr(r, "fallen off the bus") != NULL) {
            ev->kind = KLOG_FALLEN_OFF_BUS;
            find_pci(r, ev);
            ev->message = dup_trimmed(r, strlen(r));
            return KLOG_PARSE_EVENT;
        }
        if (skip(&r, "GPU at ")) {
            char pci[24];
            size_t n = klog_parse_pci(r, pci, sizeof(pci));

            if (n == 0)
                return KLOG_PARSE_NONE;
            r += n;
            if (!skip(&r, ": ") || (!str_starts(r, "GPU-") && !str_starts(r, "MIG-")))
                return KLOG_PARSE_NONE;
            ev->kind = KLOG_GPU_UUID;
            ev->pci = xstrdup(pci);
            ev->uuid = xstrndup(r, strcspn(r, " \t"));
            ev->message = dup_trimmed(nvrm + 6, strlen(nvrm + 6));
            return KLOG_PARSE_EVENT;
        }
        for (size_t i = 0; i < ARRAY_SIZE(other_nvrm); i++) {
            if (strstr(r, other_nvrm[i]) != NULL) {
                ev->kind = KLOG_OTHER_NVRM;
                find_pci(r, ev);
                ev->message = dup_trimmed(r, strlen(r));
                return KLOG_PARSE_EVENT;
            }
        }
        return KLOG_PARSE_NONE;
    }
    if (str_starts(msg, "nvidia-nvswitch")) {
        r = strstr(msg, ": SXid (");
        if (r != NULL && strspn(msg + strlen("nvidia-nvswitch"), "0123456789") ==
                             (size_t)(r - msg) - strlen("nvidia-nvswitch"))
            return parse_sxid(r + strlen(": SXid ("), ev);
        return KLOG_PARSE_NONE;
    }
    if (str_starts(msg, "INFO: task "))
        return parse_hung(msg + strlen("INFO: task "), msg, ev);
    if (str_starts(msg, "oom-kill:"))
        return parse_oom_summary(msg, msg, ev);
    if (str_starts(msg, "Killed process "))
        return parse_oom_kill(msg, msg, ev);
    oom = strstr(msg, "ut of memory: Kill");
    if (oom != NULL)
        return parse_oom_kill(oom + strlen("ut of memory: "), msg, ev);
    return KLOG_PARSE_NONE;
}

/* ---- the parser: stamps, the ring of recent events, PCI -> UUID ---- */

void klog_parser_init(struct klog_parser *p, const struct klog_parse_opts *o)
{
    memset(p, 0, sizeof(*p));
    if (o != NULL)
        p->o = *o;
    p->cap = p->o.max_events ? p->o.max_events : KLOG_MAX_EVENTS;
    p->ring = xcalloc(p->cap, sizeof(*p->ring));
}

void klog_parser_release(struct klog_parser *p)
{
    for (size_t i = 0; i < p->n; i++)
        klog_event_free(&p->ring[(p->head + i) % p->cap]);
    free(p->ring);
    for (size_t i = 0; i < p->n_map; i++)
        free(p->map[i].uuid);
    free(p->map);
    if (p->hung_pending)
        klog_event_free(&p->hung);
    if (p->ghes_pending)
        klog_event_free(&p->ghes);
    free(p->first_unparsed);
    memset(p, 0, sizeof(*p));
}

static struct klog_event *tail(struct klog_parser *p)
{
    return p->n ? &p->ring[(p->head + p->n - 1) % p->cap] : NULL;
}

/* Takes the oldest host memory event out of the ring (the others keep their order). */
static void drop_oldest_host_mem(struct klog_parser *p)
{
    size_t i = 0;

    while (i < p->n && p->ring[(p->head + i) % p->cap].kind != KLOG_HOST_MEM)
        i++;
    if (i == p->n)
        return;
    klog_event_free(&p->ring[(p->head + i) % p->cap]);
    for (; i + 1 < p->n; i++)
        p->ring[(p->head + i) % p->cap] = p->ring[(p->head + i + 1) % p->cap];
    p->n--;
    p->n_host_mem--;
    p->dropped++;
}

static void push(struct klog_parser *p, struct klog_event *ev)
{
    p->total++;
    if (ev->kind == KLOG_HOST_MEM) {
        if (p->n_host_mem == KLOG_MAX_HOST_MEM)
            drop_oldest_host_mem(p);
        p->n_host_mem++;
    }
    if (p->n == p->cap) {
        if (p->ring[p->head].kind == KLOG_HOST_MEM)
            p->n_host_mem--;
        klog_event_free(&p->ring[p->head]);
        p->ring[p->head] = *ev;
        p->head = (p->head + 1) % p->cap;
        p->dropped++;
    } else {
        p->ring[(p->head + p->n) % p->cap] = *ev;
        p->n++;
    }
    memset(ev, 0, sizeof(*ev));
}

static void map_uuid(struct klog_parser *p, const char *pci, const char *uuid)
{
    size_t i;

    for (i = 0; i < p->n_map; i++) {
        if (strcmp(p->map[i].pci, pci) == 0)
            break;
    }
    if (i == p->n_map) {
        /* Bounded, so a hostile log naming a million GPUs cannot make each lookup cost more. */
        if (p->n_map == KLOG_MAX_GPUS) {
            p->map_dropped++;
            return;
        }
        xgrow(&p->map, &p->cap_map, p->n_map + 1, sizeof(*p->map));
        p->n_map++;
        snprintf(p->map[i].pci, sizeof(p->map[i].pci), "%s", pci);
    } else {
        free(p->map[i].uuid);
    }
    p->map[i].uuid = xstrdup(uuid);
}

static const char *lookup_uuid(const struct klog_parser *p, const char *pci)
{
    for (size_t i = 0; i < p->n_map; i++) {
        if (strcmp(p->map[i].pci, pci) == 0)
            return p->map[i].uuid;
    }
    return NULL;
}

static void stamp(const struct klog_parser *p, struct klog_event *ev, bool has_time,
                  int64_t time_ms, bool has_uptime, int64_t uptime_us)
{
    if (has_uptime) {
        ev->uptime_us = uptime_us;
        ev->valid |= 1u << KLOG_S_UPTIME;
        if (!has_time && p->o.boot_time_ms > 0) {
            has_time = true;
            time_ms = p->o.boot_time_ms + uptime_us / 1000;
        }
    }
    if (has_time) {
        ev->time_ms = time_ms;
        ev->valid |= 1u << KLOG_S_TIME;
    }
}

static void flush_hung(struct klog_parser *p)
{
    if (!p->hung_pending)
        return;
    p->hung_pending = false;
    if (p->hung_nvidia)
        push(p, &p->hung);
    else
        klog_event_free(&p->hung);
}

static void flush_ghes(struct klog_parser *p)
{
    if (!p->ghes_pending)
        return;
    p->ghes_pending = false;
    push(p, &p->ghes);
}

static void copy_word(char *dst, size_t size, const struct ghes_line *g)
{
    snprintf(dst, size, "%.*s", (int)g->word_len, g->word);
}

/* One line of a firmware error record: the severities come first, then each section. */
static void feed_ghes(struct klog_parser *p, const struct ghes_line *g, bool has_time,
                      int64_t time_ms, bool has_uptime, int64_t uptime_us)
{
    enum ghes_severity sev;
    const char *w;

    if (!p->ghes_open || g->record != p->ghes_record) {
        flush_ghes(p);
        p->ghes_open = true;
        p->ghes_record = g->record;
        p->ghes_severity = p->ghes_section = GHES_SEV_UNKNOWN;
    }
    switch (g->what) {
    case GHES_SEVERITY:
        flush_ghes(p);
        p->ghes_severity = g->severity;
        p->ghes_section = GHES_SEV_UNKNOWN;
        copy_word(p->ghes_severity_word, sizeof(p->ghes_severity_word), g);
        break;
    case GHES_SECTION:
        flush_ghes(p);
        p->ghes_section = g->severity;
        copy_word(p->ghes_section_word, sizeof(p->ghes_section_word), g);
        break;
    case GHES_MEMORY:
        flush_ghes(p);
        sev = p->ghes_section != GHES_SEV_UNKNOWN ? p->ghes_section : p->ghes_severity;
        w = p->ghes_section != GHES_SEV_UNKNOWN ? p->ghes_section_word : p->ghes_severity_word;
        if (sev == GHES_SEV_CORRECTED) {
            p->mem_corrected++;
        } else if (sev == GHES_SEV_UNCORRECTED) {
            klog_hostmem_ghes_event(&p->ghes, w, strlen(w));
            stamp(p, &p->ghes, has_time, time_ms, has_uptime, uptime_us);
            p->mem_uncorrected++;
            p->ghes_pending = true;
        }
        break;
    case GHES_DIMM:
        if (p->ghes_pending && p->ghes.dimm == NULL)
            klog_hostmem_set_dimm(&p->ghes, g->dimm, g->dimm_len);
        break;
    case GHES_OTHER:
        break;
    }
}

/* The host's memory errors: true when msg was one of their lines. */
static bool feed_host_mem(struct klog_parser *p, const char *msg, bool has_time, int64_t time_ms,
                          bool has_uptime, int64_t uptime_us)
{
    struct klog_event ev;
    struct ghes_line g;
    uint64_t count;

    switch (klog_parse_hostmem(msg, &ev, &count, &g)) {
    case HOSTMEM_NONE:
        klog_event_free(&ev);
        flush_ghes(p);
        p->ghes_open = false;
        return false;
    case HOSTMEM_GHES:
        klog_event_free(&ev);
        feed_ghes(p, &g, has_time, time_ms, has_uptime, uptime_us);
        return true;
    case HOSTMEM_CORRECTED:
        klog_event_free(&ev);
        flush_ghes(p);
        p->mem_corrected += count;
        return true;
    case HOSTMEM_UNCORRECTED:
        flush_ghes(p);
        stamp(p, &ev, has_time, time_ms, has_uptime, uptime_us);
        p->mem_uncorrected += ev.mem_count;
        push(p, &ev);
        return true;
    }
    return false;
}

/* One kill is often logged twice ("oom-kill:..." then "Killed process ..."): keep one event. */
static bool merge_oom(struct klog_parser *p, struct klog_event *ev)
{
    struct klog_event *t = tail(p);
    int64_t dt;

    if (t == NULL || t->kind != KLOG_OOM_KILL || t->pid != ev->pid)
        return false;
    dt = t->time_ms - ev->time_ms;
    if ((t->valid & ev->valid & (1u << KLOG_S_TIME)) && (dt > OOM_MERGE_MS || dt < -OOM_MERGE_MS))
        return false;
    if (ev->valid & (1u << KLOG_S_RSS)) {
        t->rss_bytes = ev->rss_bytes;
        t->valid |= 1u << KLOG_S_RSS;
    }
    /* The "Killed process" line says more (memory) than the "oom-kill:" summary. */
    if (strstr(ev->message, "Killed process ") != NULL ||
        strstr(ev->message, "Kill process ") != NULL) {
        free(t->message);
        t->message = ev->message;
        ev->message = NULL;
    }
    klog_event_free(ev);
    return true;
}

static void feed_clean(struct klog_parser *p, const char *msg, bool has_time, int64_t time_ms,
                       bool has_uptime, int64_t uptime_us)
{
    struct klog_event ev;
    const char *uuid;

    if (p->hung_pending) {
        if (str_starts(msg, "INFO: task ")) {
            flush_hung(p);
        } else {
            p->hung_lines++;
            if (mentions_driver(msg))
                p->hung_nvidia = true;
            if (strstr(msg, "</TASK>") != NULL || p->hung_lines >= HUNG_TRACE_LINES)
                flush_hung(p);
        }
    }
    if (feed_host_mem(p, msg, has_time, time_ms, has_uptime, uptime_us))
        return;
    switch (klog_parse_message(msg, &ev)) {
    case KLOG_PARSE_NONE:
        klog_event_free(&ev);
        return;
    case KLOG_PARSE_BAD:
        klog_event_free(&ev);
        if (p->unparsed++ == 0) {
            p->first_unparsed = dup_trimmed(msg, strlen(msg) > 160 ? 160 : strlen(msg));
            p->first_unparsed_record = p->records;
        }
        return;
    case KLOG_PARSE_HUNG:
        stamp(p, &ev, has_time, time_ms, has_uptime, uptime_us);
        p->hung = ev;
        p->hung_pending = true;
        p->hung_lines = 0;
        /* nvidia-smi, nvidia-persistenced, nv_queue: the driver's own threads and tools. */
        p->hung_nvidia = strstr(ev.name, "nvidia") != NULL || str_starts(ev.name, "nv_");
        return;
    case KLOG_PARSE_EVENT:
        break;
    }
    stamp(p, &ev, has_time, time_ms, has_uptime, uptime_us);
    if (ev.kind == KLOG_GPU_UUID)
        map_uuid(p, ev.pci, ev.uuid);
    else if (ev.pci != NULL && ev.uuid == NULL && (uuid = lookup_uuid(p, ev.pci)) != NULL)
        ev.uuid = xstrdup(uuid);
    if (ev.kind == KLOG_OOM_KILL && merge_oom(p, &ev))
        return;
    push(p, &ev);
}

void klog_feed_message(struct klog_parser *p, const char *msg, bool has_time, int64_t time_ms,
                       bool has_uptime, int64_t uptime_us)
{
    /* Anyone can log a line (logger, a process name): what is kept of it is safe to print. */
    char *clean = str_sanitized(msg);

    feed_clean(p, clean, has_time, time_ms, has_uptime, uptime_us);
    free(clean);
}

static bool malformed(struct klog_parser *p)
{
    if (p->malformed++ == 0)
        p->first_malformed_record = p->records;
    return false;
}

bool klog_feed_kmsg(struct klog_parser *p, const char *rec, size_t len)
{
    char line[KLOG_MAX_LINE];
    const char *s = line, *semi;
    uint64_t pri, seq, ts;
    size_t n = 0;

    while (n < len && n < sizeof(line) - 1 && rec[n] != '\n' && rec[n] != '\0')
        n++;
    memcpy(line, rec, n);
    line[n] = '\0';
    p->records++;
    semi = strchr(line, ';');
    if (semi == NULL || !parse_uint(&s, 1u << 20, &pri) || !skip(&s, ",") ||
        !parse_uint(&s, UINT64_MAX, &seq) || !skip(&s, ",") || !parse_uint(&s, INT64_MAX, &ts) ||
        (*s != ',' && *s != ';') || s > semi)
        return malformed(p);
    /* Facility 0 is the kernel; anything else was written by a process. */
    if ((pri >> 3) != 0)
        return true;
    klog_feed_message(p, semi + 1, false, 0, true, (int64_t)ts);
    return true;
}

static int month_index(const char *s)
{
    static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";

    for (int i = 0; i < 12; i++) {
        if (strncmp(s, months + 3 * i, 3) == 0)
            return i;
    }
    return -1;
}

/* "Dec  2 09:19:00" in local time, the year the one that puts it at most a day after now. */
static bool parse_bsd_stamp(const char **s, int64_t now_ms, int64_t *out_ms)
{
    const char *p = *s;
    struct tm tm, now_tm;
    time_t now = (time_t)(now_ms / 1000), t;
    uint64_t day, hh, mm, ss;
    int mon = month_index(p);

    if (mon < 0 || p[3] != ' ')
        return false;
    p += 4;
    skip_spaces(&p);
    if (!parse_uint(&p, 31, &day) || !skip(&p, " ") || !parse_uint(&p, 23, &hh) || !skip(&p, ":") ||
        !parse_uint(&p, 59, &mm) || !skip(&p, ":") || !parse_uint(&p, 60, &ss))
        return false;
    if (now_ms <= 0)
        now = time(NULL);
    localtime_r(&now, &now_tm);
    for (int back = 0; back < 2; back++) {
        memset(&tm, 0, sizeof(tm));
        tm.tm_year = now_tm.tm_year - back;
        tm.tm_mon = mon;
        tm.tm_mday = (int)day;
        tm.tm_hour = (int)hh;
        tm.tm_min = (int)mm;
        tm.tm_sec = (int)ss;
        tm.tm_isdst = -1;
        t = mktime(&tm);
        if (t == (time_t)-1)
            return false;
        if (t <= now + 86400)
            break;
    }
    *out_ms = (int64_t)t * 1000;
    *s = p;
    return true;
}

/* "2026-12-02T09:19:00.123456+01:00" (or Z, or +0100). */
static bool parse_rfc3339(const char **s, int64_t *out_ms)
{
    const char *p = *s;
    struct tm tm;
    uint64_t y, mo, d, hh, mm, ss, oh = 0, om = 0;
    int64_t frac_ms = 0, sign = 0;
    time_t t;

    if (!parse_uint(&p, 9999, &y) || !skip(&p, "-") || !parse_uint(&p, 12, &mo) || !skip(&p, "-") ||
        !parse_uint(&p, 31, &d) || !skip(&p, "T") || !parse_uint(&p, 23, &hh) || !skip(&p, ":") ||
        !parse_uint(&p, 59, &mm) || !skip(&p, ":") || !parse_uint(&p, 60, &ss))
        return false;
    if (*p == '.' || *p == ',') {
        int digits = 0;

        p++;
        while (isdigit((unsigned char)*p)) {
            if (digits++ < 3)
                frac_ms = frac_ms * 10 + (*p - '0');
            p++;
        }
        while (digits++ < 3)
            frac_ms *= 10;
    }
    if (*p == 'Z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        sign = *p == '+' ? 1 : -1;
        p++;
        if (!isdigit((unsigned char)p[0]) || !isdigit((unsigned char)p[1]))
            return false;
        oh = (uint64_t)((p[0] - '0') * 10 + (p[1] - '0'));
        p += 2;
        skip(&p, ":");
        if (!isdigit((unsigned char)p[0]) || !isdigit((unsigned char)p[1]))
            return false;
        om = (uint64_t)((p[0] - '0') * 10 + (p[1] - '0'));
        p += 2;
    } else {
        return false;
    }
    memset(&tm, 0, sizeof(tm));
    tm.tm_year = (int)y - 1900;
    tm.tm_mon = (int)mo - 1;
    tm.tm_mday = (int)d;
    tm.tm_hour = (int)hh;
    tm.tm_min = (int)mm;
    tm.tm_sec = (int)ss;
    t = timegm(&tm);
    *out_ms = ((int64_t)t - sign * (int64_t)(oh * 3600 + om * 60)) * 1000 + frac_ms;
    *s = p;
    return true;
}

/* "[ 1234.567890] " at *s: the kernel's own stamp, kept in the message by syslog daemons. */
static bool parse_uptime(const char **s, int64_t *us)
{
    const char *p = *s;
    uint64_t secs, frac = 0;
    int digits = 0;

    if (!skip(&p, "["))
        return false;
    skip_spaces(&p);
    if (!parse_uint(&p, INT64_MAX / 1000000 - 1, &secs) || !skip(&p, "."))
        return false;
    while (isdigit((unsigned char)*p)) {
        if (digits++ < 6)
            frac = frac * 10 + (uint64_t)(*p - '0');
        p++;
    }
    if (digits == 0 || !skip(&p, "]"))
        return false;
    while (digits++ < 6)
        frac *= 10;
    skip_spaces(&p);
    *us = (int64_t)(secs * 1000000 + frac);
    *s = p;
    return true;
}

bool klog_feed_syslog(struct klog_parser *p, const char *text, size_t len)
{
    char line[KLOG_MAX_LINE];
    const char *s = line;
    int64_t time_ms, uptime_us = 0;
    bool has_uptime;
    size_t n = 0;

    while (n < len && n < sizeof(line) - 1 && text[n] != '\n' && text[n] != '\0')
        n++;
    memcpy(line, text, n);
    line[n] = '\0';
    p->records++;
    if (!(isdigit((unsigned char)*s) ? parse_rfc3339(&s, &time_ms)
                                     : parse_bsd_stamp(&s, p->o.now_ms, &time_ms)))
        return malformed(p);
    if (!skip(&s, " "))
        return malformed(p);
    s += strcspn(s, " "); /* the host name */
    skip_spaces(&s);
    if (!skip(&s, "kernel:"))
        return true; /* another program's line */
    skip_spaces(&s);
    has_uptime = parse_uptime(&s, &uptime_us);
    klog_feed_message(p, s, true, time_ms, has_uptime, uptime_us);
    return true;
}

void klog_parser_finish(struct klog_parser *p, struct driver_info *d)
{
    flush_hung(p);
    flush_ghes(p);
    for (size_t i = 0; i < d->n_events; i++)
        klog_event_free(&d->events[i]);
    free(d->events);
    d->events = xcalloc(p->n + 1, sizeof(*d->events));
    for (size_t i = 0; i < p->n; i++)
        d->events[i] = p->ring[(p->head + i) % p->cap];
    d->n_events = p->n;
    p->n = 0;
    p->head = 0;
    d->klog_records = p->records;
    d->klog_events_total = p->total;
    d->klog_events_dropped = p->dropped;
    d->klog_unparsed = p->unparsed;
    d->klog_mem_corrected = p->mem_corrected;
    d->klog_mem_uncorrected = p->mem_uncorrected;
    d->valid |= 1u << DRIVER_S_KLOG | 1u << DRIVER_S_KLOG_MEM;
    p->n_host_mem = 0;
}
