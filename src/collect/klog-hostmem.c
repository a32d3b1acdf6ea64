/* Host memory errors in the kernel log: see klog-hostmem.h. */
#include "collect/klog-hostmem.h"
#include "util/strutil.h"
#include "util/xalloc.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

static bool skip(const char **s, const char *lit)
{
    size_t n = strlen(lit);

    if (strncmp(*s, lit, n) != 0)
        return false;
    *s += n;
    return true;
}

/* Decimal digits at *s (at most 9 of them) into *out; advances past them. */
static bool digits(const char **s, uint32_t *out)
{
    const char *p = *s;
    uint32_t v = 0;

    if (!isdigit((unsigned char)*p))
        return false;
    while (isdigit((unsigned char)*p)) {
        if (p - *s == 9)
            return false;
        v = v * 10 + (uint32_t)(*p - '0');
        p++;
    }
    *s = p;
    *out = v;
    return true;
}

static void new_event(struct klog_event *ev, enum klog_mem_source source, uint32_t count,
                      const char *message)
{
    ev->kind = KLOG_HOST_MEM;
    ev->mem_source = source;
    ev->mem_count = count;
    ev->valid |= 1u << KLOG_S_HOST_MEM;
    ev->message = xstrdup(message);
}

void klog_hostmem_set_dimm(struct klog_event *ev, const char *s, size_t n)
{
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        n--;
    while (n > 0 && isspace((unsigned char)*s)) {
        s++;
        n--;
    }
    if (n == 0)
        return;
    ev->dimm = xstrndup(s, n < HOSTMEM_DIMM_MAX ? n : HOSTMEM_DIMM_MAX);
    ev->valid |= 1u << KLOG_S_DIMM;
}

/*
 * The EDAC core (edac_mc.c): "EDAC MC0: 1 UE memory read error on CPU_SrcID#0_Ha#0_Chan#1_DIMM#0
 * (channel:1 slot:0 page:0x... )"; "%d CE ..." for corrected ones. The message between the type
 * and " on " may be empty ("1 UE on DIMM_A1 (...)"). Kernels before 3.6 wrote
 * "UE page 0x..., ..., labels \"DIMM_A1\": ..." without a count.
 */
static enum hostmem_result parse_edac(const char *r, const char *msg, struct klog_event *ev,
                                      uint64_t *count)
{
    uint32_t n = 1;
    bool ue;
    const char *label = NULL, *end;

    if (digits(&r, &n) && !skip(&r, " "))
        return HOSTMEM_NONE;
    if (skip(&r, "CE "))
        ue = false;
    else if (skip(&r, "UE "))
        ue = true;
    else
        return HOSTMEM_NONE;
    if (n == 0)
        return HOSTMEM_NONE;
    if (!ue) {
        *count = n;
        return HOSTMEM_CORRECTED;
    }
    new_event(ev, KLOG_MEM_EDAC, n, msg);
    if (str_starts(r, "on "))
        label = r + 3;
    else if ((label = strstr(r, " on ")) != NULL)
        label += 4;
    if (label != NULL) {
        end = strstr(label, " (");
        klog_hostmem_set_dimm(ev, label, end != NULL ? (size_t)(end - label) : strlen(label));
    } else if ((label = strstr(r, "label \"")) != NULL ||
               (label = strstr(r, "labels \"")) != NULL) {
        label = strchr(label, '"') + 1;
        end = strchr(label, '"');
        if (end != NULL)
            klog_hostmem_set_dimm(ev, label, (size_t)(end - label));
    }
    return HOSTMEM_UNCORRECTED;
}

/* "...: Sending SIGBUS to python:4242 due to hardware memory corruption" (memory-failure.c,
 * ghes.c): the process the kernel killed for reading the bad memory. */
static bool parse_sigbus(const char *msg, struct klog_event *ev, enum klog_mem_source source)
{
    const char *who = strstr(msg, "Sending SIGBUS to "), *end, *colon = NULL;
    uint32_t pid;

    if (who == NULL || (end = strstr(who, " due to hardware memory corruption")) == NULL)
        return false;
    who += strlen("Sending SIGBUS to ");
    /* The name (comm) may hold a colon: the pid follows the last one. */
    for (const char *c = who; c < end; c++)
        if (*c == ':')
            colon = c;
    new_event(ev, source, 1, msg);
    if (colon != NULL) {
        const char *p = colon + 1;

        if (digits(&p, &pid) && p == end) {
            ev->pid = (int32_t)pid;
            ev->name = xstrndup(who, (size_t)(colon - who));
            ev->valid |= 1u << KLOG_S_PID;
        }
    }
    return true;
}

static enum ghes_severity severity_word(const char *w, size_t n)
{
    if (n == 9 && strncmp(w, "corrected", n) == 0)
        return GHES_SEV_CORRECTED;
    if ((n == 11 && strncmp(w, "recoverable", n) == 0) || (n == 5 && strncmp(w, "fatal", n) == 0))
        return GHES_SEV_UNCORRECTED;
    if (n == 4 && strncmp(w, "info", n) == 0)
        return GHES_SEV_INFO;
    return GHES_SEV_UNKNOWN;
}

static void word(struct ghes_line *g, const char *r)
{
    size_t n = strlen(r);

    while (n > 0 && isspace((unsigned char)r[n - 1]))
        n--;
    g->word = r;
    g->word_len = n;
    g->severity = severity_word(r, n);
}

/* "{N}[Hardware Error]: BODY" (ghes.c's prefix; cper.c indents the body by section). */
static bool parse_ghes(const char *msg, struct ghes_line *g)
{
    const char *r = msg;
    uint32_t rec, k;

    if (!skip(&r, "{") || !digits(&r, &rec) || !skip(&r, "}[Hardware Error]: "))
        return false;
    memset(g, 0, sizeof(*g));
    g->record = rec;
    while (*r == ' ')
        r++;
    if (skip(&r, "event severity: ")) {
        g->what = GHES_SEVERITY;
        word(g, r);
    } else if (skip(&r, "Error ") && digits(&r, &k) && skip(&r, ", type: ")) {
        g->what = GHES_SECTION;
        word(g, r);
    } else if (str_starts(r, "section_type: memory error")) {
        g->what = GHES_MEMORY;
    } else if (skip(&r, "DIMM location: ")) {
        g->what = GHES_DIMM;
        g->dimm = r;
        g->dimm_len = strlen(r);
    }
    return true;
}

void klog_hostmem_ghes_event(struct klog_event *ev, const char *w, size_t n)
{
    char msg[64];

    memset(ev, 0, sizeof(*ev));
    snprintf(msg, sizeof(msg), "APEI memory error, severity %.*s", (int)(n < 16 ? n : 16), w);
    new_event(ev, KLOG_MEM_APEI, 1, msg);
}

enum hostmem_result klog_parse_hostmem(const char *msg, struct klog_event *ev, uint64_t *count,
                                       struct ghes_line *g)
{
    const char *r = msg;
    uint32_t mc;

    memset(ev, 0, sizeof(*ev));
    *count = 0;
    if (skip(&r, "EDAC MC") && digits(&r, &mc) && skip(&r, ": "))
        return parse_edac(r, msg, ev, count);
    if (str_starts(msg, "mce: Uncorrected hardware memory error in user-access")) {
        new_event(ev, KLOG_MEM_MCE, 1, msg + strlen("mce: "));
        return HOSTMEM_UNCORRECTED;
    }
    r = msg;
    if (skip(&r, "Memory failure: ")) {
        if (parse_sigbus(r, ev, KLOG_MEM_MEMORY_FAILURE))
            return HOSTMEM_UNCORRECTED;
        /* "0x8a398a: recovery action for dirty LRU page: Recovered"; "already hardware
         * poisoned" repeats an error already reported. */
        if (strstr(r, ": recovery action for ") != NULL) {
            new_event(ev, KLOG_MEM_MEMORY_FAILURE, 1, r);
            return HOSTMEM_UNCORRECTED;
        }
        return HOSTMEM_NONE;
    }
    if (parse_ghes(msg, g)) {
        if (parse_sigbus(msg, ev, KLOG_MEM_APEI))
            return HOSTMEM_UNCORRECTED;
        return HOSTMEM_GHES;
    }
    if (str_starts(msg, "GHES: ") && parse_sigbus(msg, ev, KLOG_MEM_APEI))
        return HOSTMEM_UNCORRECTED;
    return HOSTMEM_NONE;
}
