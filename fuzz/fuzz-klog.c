/*
 * The kernel-log parser (klog-parse.c): the input is read as /dev/kmsg records, one per line as
 * in a fixture file and also as one record with its dictionary lines; as syslog lines; and as one
 * bare kernel message. The ring keeps few events so that it wraps. What the parser keeps must be
 * a valid part of a snapshot: written to JSON and read back, it gives the same JSON (strings from
 * the log are made UTF-8, stamps stay in range).
 */
#include "collect/klog-parse.h"
#include "fuzz.h"
#include "snapshot/snapshot.h"

static size_t line_len(const char *line, const char *end)
{
    const char *nl = memchr(line, '\n', (size_t)(end - line));

    return nl ? (size_t)(nl - line) : (size_t)(end - line);
}

static const char *next_line(const char *line, const char *end)
{
    size_t n = line_len(line, end);

    return n < (size_t)(end - line) ? line + n + 1 : end;
}

static void finish_and_check(struct klog_parser *p, size_t max_events)
{
    struct driver_info d, back;
    struct jerr err = { "", "" };
    json_t *j, *j2;
    char *a, *b;

    memset(&d, 0, sizeof(d));
    memset(&back, 0, sizeof(back));
    klog_parser_finish(p, &d);
    FUZZ_ASSERT(d.n_events <= max_events, "%zu events kept, bound %zu", d.n_events, max_events);
    j = driver_info_to_json(&d);
    a = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
    FUZZ_ASSERT(a != NULL, "the events do not serialise (a string that is not UTF-8?)");
    FUZZ_ASSERT(driver_info_from_json(&back, j, "driver", &err) == 0, "%s: %s", err.path, err.msg);
    j2 = driver_info_to_json(&back);
    b = json_dumps(j2, JSON_COMPACT | JSON_SORT_KEYS);
    FUZZ_ASSERT(b != NULL && strcmp(a, b) == 0, "round trip changed the events:\n%s\n%s", a, b);
    free(a);
    free(b);
    json_decref(j);
    json_decref(j2);
    driver_info_free(&d);
    driver_info_free(&back);
    klog_parser_release(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const struct klog_parse_opts o = { .max_events = 4,
                                       .boot_time_ms = 1764000000000,
                                       .now_ms = 1764660000000 };
    const char *text = (const char *)data, *line, *end = text + size;
    struct klog_parser p;
    struct klog_event ev;
    char *msg, pci[24];

    /* kmsg records, one a line; continuation lines (" KEY=VALUE") belong to the one before */
    klog_parser_init(&p, &o);
    for (line = text; line < end; line = next_line(line, end)) {
        size_t n = line_len(line, end);

        if (n > 0 && line[0] != ' ')
            klog_feed_kmsg(&p, line, n);
    }
    finish_and_check(&p, o.max_events);

    /* the whole input as one record, as one read() of /dev/kmsg returns it */
    klog_parser_init(&p, &o);
    klog_feed_kmsg(&p, text, size);
    finish_and_check(&p, o.max_events);

    /* syslog lines */
    klog_parser_init(&p, &o);
    for (line = text; line < end; line = next_line(line, end)) {
        size_t n = line_len(line, end);

        if (n > 0)
            klog_feed_syslog(&p, line, n);
    }
    finish_and_check(&p, o.max_events);

    /* one bare message, and a PCI address at its start */
    msg = fuzz_cstr(data, size);
    (void)klog_parse_message(msg, &ev);
    klog_event_free(&ev);
    (void)klog_parse_pci(msg, pci, sizeof(pci));
    free(msg);
    return 0;
}
