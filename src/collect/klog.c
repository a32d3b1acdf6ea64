/*
 * The kernel-log collector: NVIDIA events (XIDs, fallen off the bus, PCI -> UUID lines, hung
 * tasks in the driver) and OOM kills, into s->driver.events.
 *
 * Source: <root>/dev/kmsg read non-blocking to its end (it never waits for new records); when it
 * cannot be opened (dmesg_restrict without root, a container without it), the last 16 MiB of
 * /var/log/kern.log, /var/log/messages or /var/log/syslog, with a note saying so. A regular file
 * at <root>/dev/kmsg is read as kmsg records, which is how fixture trees provide one.
 */
#include "collect/collect.h"
#include "collect/klog-parse.h"
#include "util/fileio.h"
#include "util/i18n.h"
#include "util/strutil.h"
#include "util/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define KLOG_MAX_FILE_BYTES (16u << 20) /* of a log file, only the end is read */
#define KLOG_MAX_RECORDS    2000000u    /* /dev/kmsg records read at most */
#define KLOG_RECORD_BYTES   8192        /* the kernel's limit for one kmsg record (text + dict) */
#define KLOG_CHECK_EVERY    4096        /* records between deadline checks */

static const char *const log_files[] = {
    "/var/log/kern.log",
    "/var/log/messages",
    "/var/log/syslog",
};

enum source_kind { SOURCE_KMSG, SOURCE_SYSLOG };

/* Unix time of boot from btime in <root>/proc/stat, or 0. */
static int64_t boot_time_ms(int rootfd)
{
    char *text = NULL, *line;
    int64_t ms = 0;

    if (file_slurp_at(rootfd, "proc/stat", 1u << 20, &text) < 0)
        return 0;
    line = strstr(text, "\nbtime ");
    if (line != NULL) {
        uint64_t secs;
        char *end = strchr(line + 7, '\n');

        if (end != NULL)
            *end = '\0';
        if (str_to_u64(line + 7, 10, &secs) && secs > 0 && secs < INT64_MAX / 1000)
            ms = (int64_t)secs * 1000;
    }
    free(text);
    return ms;
}

/* Feeds the lines of the last KLOG_MAX_FILE_BYTES of a regular file. Returns 0 or -errno. */
static int feed_file(int rootfd, const char *path, enum source_kind kind, struct klog_parser *p)
{
    char *buf, *line;
    ssize_t got = file_tail_at(rootfd, sysroot_rel(path), KLOG_MAX_FILE_BYTES, &buf);
    size_t len;

    if (got < 0)
        return (int)got;
    len = (size_t)got;
    for (line = buf; line < buf + len;) {
        char *nl = memchr(line, '\n', (size_t)(buf + len - line));
        size_t n = nl ? (size_t)(nl - line) : (size_t)(buf + len - line);

        /* A NUL inside a line (a corrupted log) ends that line early; the parsers stop there. */
        if (kind == SOURCE_KMSG) {
            /* Continuation lines (" KEY=VALUE") belong to the record before. */
            if (n > 0 && line[0] != ' ')
                klog_feed_kmsg(p, line, n);
        } else if (n > 0) {
            klog_feed_syslog(p, line, n);
        }
        line += n + 1;
    }
    free(buf);
    return 0;
}

/* Reads /dev/kmsg (the device) until no record is left. Returns 0 or -errno. */
static int feed_kmsg_device(struct collect_ctx *ctx, int fd, struct klog_parser *p,
                            struct collector_status *c)
{
    char *rec = xmalloc(KLOG_RECORD_BYTES + 1);
    uint64_t lost = 0;
    unsigned count = 0;
    int rc = 0;

    for (;;) {
        ssize_t n = read(fd, rec, KLOG_RECORD_BYTES);

        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EPIPE) {
                /* Overwritten while we read: the next read resumes at the oldest left. */
                lost++;
                continue;
            }
            if (errno == EINVAL && count > 0) {
                /* A record too large for the buffer: the kernel does not move past it. Keep
                 * what was read. */
                collector_note(c,
                               "stopped at a kernel-log record larger than %d bytes, after "
                               "%u records",
                               KLOG_RECORD_BYTES, count);
            } else if (errno != EAGAIN) {
                rc = -errno;
            }
            break;
        }
        if (n == 0)
            break;
        klog_feed_kmsg(p, rec, (size_t)n);
        if (++count >= KLOG_MAX_RECORDS) {
            collector_note(c, "stopped after %u kernel-log records", count);
            break;
        }
        if (count % KLOG_CHECK_EVERY == 0 && collect_time_left(ctx) == 0) {
            collector_note(c, "stopped reading the kernel log at the deadline, after %u records",
                           count);
            break;
        }
    }
    if (lost != 0)
        collector_note(c, "%llu kernel-log records were overwritten while being read",
                       (unsigned long long)lost);
    free(rec);
    return rc;
}

static int read_kmsg(struct collect_ctx *ctx, struct klog_parser *p, struct collector_status *c)
{
    struct stat st;
    int fd, rc;

    fd = openat(ctx->root.fd, "dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return -errno;
    if (fstat(fd, &st) != 0) {
        rc = -errno;
    } else if (S_ISCHR(st.st_mode)) {
        rc = feed_kmsg_device(ctx, fd, p, c);
    } else if (S_ISREG(st.st_mode)) {
        rc = feed_file(ctx->root.fd, "/dev/kmsg", SOURCE_KMSG, p);
    } else {
        rc = S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
    }
    close(fd);
    return rc;
}

static bool dmesg_restricted(int rootfd)
{
    char buf[16];

    return file_read_at(rootfd, "proc/sys/kernel/dmesg_restrict", buf, sizeof(buf)) > 0 &&
           buf[0] == '1';
}

static void note_parse_problems(struct collector_status *c, const struct klog_parser *p,
                                const char *source)
{
    if (p->unparsed != 0)
        collector_note_take(
            c, TWICE_N("%s: %llu driver line looked like an event but did not parse: record "
                       "%llu, \"%s\"",
                       "%s: %llu driver lines looked like events but did not parse; the first, "
                       "record %llu: \"%s\"",
                       p->unparsed,
                       (source, (unsigned long long)p->unparsed,
                        (unsigned long long)p->first_unparsed_record, p->first_unparsed),
                       (source, (unsigned long long)p->unparsed,
                        (unsigned long long)p->first_unparsed_record, p->first_unparsed)));
    if (p->map_dropped != 0)
        collector_note(c,
                       "%s: names more than %d GPUs; the UUIDs of %llu more are not kept, so "
                       "their events are known by PCI address only",
                       source, KLOG_MAX_GPUS, (unsigned long long)p->map_dropped);
    if (p->malformed != 0)
        collector_note_take(
            c, TWICE_N("%s: %llu line was not in the expected format (line %llu)",
                       "%s: %llu lines were not in the expected format (first: line %llu)",
                       p->malformed,
                       (source, (unsigned long long)p->malformed,
                        (unsigned long long)p->first_malformed_record),
                       (source, (unsigned long long)p->malformed,
                        (unsigned long long)p->first_malformed_record)));
}

static void *start(struct collect_ctx *ctx, struct snapshot *s)
{
    struct collector_status *c = &s->collectors[COLLECTOR_KLOG];
    struct klog_parse_opts o = { 0, boot_time_ms(ctx->root.fd), s->time_ms };
    struct klog_parser p;
    const char *source = NULL;
    char *tried = NULL;
    bool denied = false;
    int rc;

    klog_parser_init(&p, &o);
    collector_set(c, CS_OK, NULL);
    rc = read_kmsg(ctx, &p, c);
    if (rc == 0) {
        source = "/dev/kmsg";
        if (o.boot_time_ms == 0)
            collector_note(c, "boot time unknown (no btime in /proc/stat): events have kernel "
                              "stamps only");
    } else {
        denied = rc == -EPERM || rc == -EACCES;
        tried = xasprintf("/dev/kmsg: %s%s", strerror(-rc),
                          denied && dmesg_restricted(ctx->root.fd)
                              ? " (kernel.dmesg_restrict=1 and not root)"
                              : "");
        /* Whatever was fed before the error is discarded: the file repeats it. */
        klog_parser_release(&p);
        klog_parser_init(&p, &o);
        for (size_t i = 0; i < ARRAY_SIZE(log_files) && source == NULL; i++) {
            char *more;

            rc = feed_file(ctx->root.fd, log_files[i], SOURCE_SYSLOG, &p);
            if (rc == 0) {
                source = log_files[i];
                break;
            }
            denied |= rc == -EPERM || rc == -EACCES;
            more = xasprintf("%s; %s: %s", tried, log_files[i], strerror(-rc));
            free(tried);
            tried = more;
            klog_parser_release(&p);
            klog_parser_init(&p, &o);
        }
        if (source != NULL)
            collector_note(c, "read %s instead of the kernel's own log (%s)", source, tried);
    }
    if (source == NULL) {
        struct stat st;
        bool journal = fstatat(ctx->root.fd, "var/log/journal", &st, 0) == 0;

        collector_set(
            c, denied ? CS_NO_PERMISSION : CS_UNAVAILABLE, "no kernel log readable (%s)%s", tried,
            journal ? "; the systemd journal is not read: run as root to read /dev/kmsg" : "");
        free(tried);
        klog_parser_release(&p);
        return NULL;
    }
    free(tried);
    note_parse_problems(c, &p, source);
    free(s->driver.klog_source);
    s->driver.klog_source = xstrdup(source);
    klog_parser_finish(&p, &s->driver);
    klog_parser_release(&p);
    return NULL;
}

const struct collector_ops collector_klog = { COLLECTOR_KLOG, start, NULL, NULL };
