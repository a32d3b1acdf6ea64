/*
 * Kernel-log text as people copy it: /var/log/kern.log and syslog ("Mar  3 14:22:01 host kernel:
 * ..."), journalctl -k (its default, short-iso, short-precise and short-monotonic forms), dmesg
 * ("[  512.123456] ..."), dmesg -T ("[Mon Mar  3 14:22:01 2025] ..."), dmesg -r ("<4>[...]"),
 * and bare driver lines ("NVRM: Xid ..."). The collector's parser (collect/klog-parse.c) reads
 * each message, so XIDs, SXids, fallen-off-the-bus, hung tasks, OOM kills and the driver's
 * version-mismatch lines mean the same as in a live log. Other lines are skipped.
 */
#include "collect/klog-parse.h"
#include "import/import-impl.h"
#include "util/strutil.h"
#include "util/xalloc.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";

static bool month_at(const char *s)
{
    const char *m;

    if (strlen(s) < 4 || s[3] != ' ')
        return false;
    m = strstr(months, (char[4]){ s[0], s[1], s[2], '\0' });
    return m != NULL && (m - months) % 3 == 0;
}

/* "[  512.123456] " at s: the kernel's stamp. */
static bool uptime_at(const char *s, int64_t *us, const char **rest)
{
    unsigned long long secs;
    char frac[16];
    int n = 0;

    if (sscanf(s, "[ %llu.%15[0-9]]%n", &secs, frac, &n) != 2 || n == 0 ||
        secs > INT64_MAX / 1000000 - 1)
        return false;
    {
        size_t k = strlen(frac);
        unsigned long long f = 0;

        for (size_t i = 0; i < 6; i++)
            f = f * 10 + (i < k ? (unsigned long long)(frac[i] - '0') : 0);
        *us = (int64_t)(secs * 1000000ULL + f);
    }
    *rest = str_ltrim(s + n);
    return true;
}

/* "[Mon Mar  3 14:22:01 2025] " (dmesg -T): local time. */
static bool ctime_at(const char *s, int64_t *ms, const char **rest)
{
    const char *end;
    char stamp[40];

    if (s[0] != '[' || !isalpha((unsigned char)s[1]) || (end = strchr(s, ']')) == NULL ||
        end - s - 1 >= (long)sizeof(stamp))
        return false;
    snprintf(stamp, sizeof(stamp), "%.*s", (int)(end - s - 1), s + 1);
    *ms = imp_time_ctime(stamp);
    if (*ms == 0)
        return false;
    *rest = str_ltrim(end + 1);
    return true;
}

/* The message after "HOST kernel: " in a journal or syslog line whose stamp was read. */
static const char *after_kernel(const char *s)
{
    const char *k = strstr(s, " kernel: ");

    if (k == NULL || k - s > 256)
        return NULL;
    return str_ltrim(k + 9);
}

static bool driver_line(const char *s)
{
    return strstr(s, "NVRM") || strstr(s, "Xid") || strstr(s, "SXid") || strstr(s, "nvidia") ||
           strstr(s, "Out of memory") || strstr(s, "oom-kill") || strstr(s, "blocked for more") ||
           strstr(s, "pcieport") || strstr(s, "AER:");
}

static bool detect(const char *text, size_t len)
{
    struct lines l;
    unsigned hits = 0;

    lines_init(&l, text, len);
    while (lines_next(&l) && l.no < 20000) {
        const char *s = l.line, *rest;
        int64_t x;

        if (strstr(s, "NVRM: ") || strstr(s, "NVRM:Xid") || strstr(s, "Xid (PCI:"))
            return true;
        if ((uptime_at(s, &x, &rest) || ctime_at(s, &x, &rest) ||
             ((month_at(s) || isdigit((unsigned char)s[0])) && (rest = after_kernel(s)))) &&
            driver_line(rest))
            hits++;
        if (hits >= 1)
            return true;
    }
    return false;
}

struct reader {
    struct imp *im;
    struct klog_parser p;
    unsigned long lines, read;
    bool any_stamp;
};

/* One line, whatever its form; false when it holds no kernel message. */
static bool feed(struct reader *r, char *line)
{
    const char *s = str_ltrim(line), *rest;
    int64_t us, ms;

    /* dmesg -r: "<4>[ ...": the priority goes. */
    if (s[0] == '<' && isdigit((unsigned char)s[1])) {
        const char *gt = strchr(s, '>');

        if (gt != NULL && gt - s <= 4)
            s = gt + 1;
    }
    if (uptime_at(s, &us, &rest)) {
        const char *k = after_kernel(rest); /* journalctl -o short-monotonic: "[..] host kernel:" */

        if (k != NULL && strchr(rest, ':') && strstr(rest, " kernel: ") == strchr(rest, ' '))
            rest = k;
        klog_feed_message(&r->p, rest, false, 0, true, us);
        return true;
    }
    if (ctime_at(s, &ms, &rest)) {
        klog_feed_message(&r->p, rest, true, ms, false, 0);
        return true;
    }
    if ((month_at(s) || isdigit((unsigned char)s[0])) && after_kernel(s) != NULL) {
        char copy[IMP_MAX_LINE];

        snprintf(copy, sizeof(copy), "%s", s);
        /* journalctl -o short-precise: "Mar 03 14:22:01.123456": the fraction goes. */
        if (month_at(copy) && strlen(copy) > 16 && copy[15] == '.') {
            size_t f = 16;

            while (isdigit((unsigned char)copy[f]))
                f++;
            memmove(copy + 15, copy + f, strlen(copy + f) + 1);
        }
        /* journalctl -o short-iso writes "+0100"; the parser also takes that form. */
        if (klog_feed_syslog(&r->p, copy, strlen(copy)))
            return true;
    }
    /* A bare driver line, or one whose stamp was cut off by the copy. */
    rest = strstr(s, "NVRM: ");
    if (rest == NULL)
        rest = strstr(s, "NVRM:Xid");
    if (rest != NULL) {
        klog_feed_message(&r->p, rest, false, 0, false, 0);
        return true;
    }
    return false;
}

static void run(struct imp *im, const char *text, size_t len)
{
    struct klog_parse_opts o = { 0, 0, 0 };
    struct reader r;
    struct lines l;
    char source[512];

    memset(&r, 0, sizeof(r));
    r.im = im;
    /* Stamps without a year take the evidence's year (that of its time, else this one). */
    o.now_ms = im->klog_now_ms ? im->klog_now_ms : im->is->time_ms;
    o.max_events = KLOG_MAX_EVENTS;
    klog_parser_init(&r.p, &o);
    lines_init(&l, text, len);
    while (lines_next(&l)) {
        r.lines++;
        if (feed(&r, l.line))
            r.read++;
    }
    if (r.read == 0) {
        klog_parser_release(&r.p);
        imp_fail(im, 1, "no kernel-log line (dmesg, journalctl -k, kern.log or \"NVRM:\")");
        return;
    }
    im->found = true;
    if (im->line0 > 0)
        snprintf(source, sizeof(source), "%s (line %lu on)", im->name, im->line0 + 1);
    else
        snprintf(source, sizeof(source), "%s", im->name);
    if (r.p.unparsed != 0)
        imp_note(im, COLLECTOR_KLOG, 0,
                 r.p.unparsed == 1
                     ? "%llu driver line looked like an event but did not parse: \"%s\""
                     : "%llu driver lines looked like events but did not parse; the first: \"%s\"",
                 (unsigned long long)r.p.unparsed, r.p.first_unparsed ? r.p.first_unparsed : "");
    if (r.p.dropped != 0)
        imp_note(im, COLLECTOR_KLOG, 0, "%llu older events beyond the %d kept were left out",
                 (unsigned long long)r.p.dropped, KLOG_MAX_EVENTS);
    imp_klog_merge(im, &r.p, source);
    klog_parser_release(&r.p);
}

const struct importer importer_klog = {
    "kernel-log",
    "a kernel log: dmesg (-T, -r), journalctl -k, /var/log/kern.log or syslog, \"NVRM:\" lines",
    detect,
    run,
};
