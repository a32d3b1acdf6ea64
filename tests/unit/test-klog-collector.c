/* The kernel-log collector over fixture trees: /dev/kmsg as a file, the fallback to syslog
 * files when /dev/kmsg cannot be read, and nothing readable at all. */
#include "collect/collect.h"
#include "snapshot/snapshot.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#define NOW_MS INT64_C(1796202000000) /* 2026-12-02T09:00:00Z */

static int setup_tz(void **state)
{
    (void)state;
    setenv("TZ", "UTC", 1);
    tzset();
    return 0;
}

static struct snapshot *run_klog_root(const char *root_path);

static struct snapshot *run_klog(const char *fixture)
{
    char *root = xasprintf("%s/klog/%s", TEST_FIXTURES, fixture);
    struct snapshot *s = run_klog_root(root);

    free(root);
    return s;
}

static struct snapshot *run_klog_root(const char *root_path)
{
    char *root = xstrdup(root_path), *cause = NULL;
    struct collect_opts o = { 0 };
    struct collect_ctx ctx;
    struct snapshot *s = snapshot_new();

    memset(&ctx, 0, sizeof(ctx));
    o.root = root;
    o.timeout_ms = 10000;
    ctx.opts = &o;
    if (sysroot_open(&ctx.root, root, &cause) != 0)
        fail_msg("%s", cause);
    ctx.start_mono_ms = time_mono_ms();
    ctx.deadline_mono_ms = ctx.start_mono_ms + o.timeout_ms;
    s->time_ms = NOW_MS;
    assert_null(collector_klog.start(&ctx, s));
    sysroot_close(&ctx.root);
    free(root);
    return s;
}

static const struct collector_status *status(const struct snapshot *s)
{
    return &s->collectors[COLLECTOR_KLOG];
}

static bool has_note(const struct snapshot *s, const char *text)
{
    for (size_t i = 0; i < status(s)->n_notes; i++) {
        if (strstr(status(s)->notes[i], text) != NULL)
            return true;
    }
    return false;
}

static void test_kmsg_file(void **state)
{
    struct snapshot *s = run_klog("kmsg");
    const struct driver_info *d = &s->driver;

    (void)state;
    assert_string_equal(d->klog_source, "/dev/kmsg");
    assert_int_equal(d->n_events, 7);
    assert_int_equal(d->klog_records, 11);
    assert_int_equal(d->klog_unparsed, 1);
    assert_int_equal(d->events[2].kind, KLOG_XID);
    assert_int_equal(d->events[2].xid, 48);
    /* btime 1796203140 from proc/stat + 372.000003 s */
    assert_int_equal(d->events[2].time_ms, INT64_C(1796203140000) + 372000);
    /* The garbage and the bad Xid line are reported, with where they are. */
    assert_int_equal(status(s)->state, CS_PARTIAL);
    assert_true(has_note(s, "/dev/kmsg: 1 driver line looked like an event but did not parse: "
                            "record 11"));
    assert_true(has_note(s, "/dev/kmsg: 2 lines were not in the expected format (first: line 8)"));
    snapshot_free(s);
}

static void test_fallback_to_kern_log(void **state)
{
    struct snapshot *s = run_klog("fallback");
    const struct driver_info *d = &s->driver;

    (void)state;
    assert_string_equal(d->klog_source, "/var/log/kern.log");
    assert_int_equal(status(s)->state, CS_PARTIAL);
    assert_true(has_note(s, "read /var/log/kern.log instead of the kernel's own log (/dev/kmsg: No "
                            "such file or directory)"));
    assert_int_equal(d->n_events, 8);
    assert_int_equal(d->events[0].xid, 63);
    assert_int_equal(d->events[3].kind, KLOG_HUNG_TASK);
    assert_int_equal(d->events[5].kind, KLOG_OOM_KILL);
    snapshot_free(s);
}

static void test_kmsg_not_a_file(void **state)
{
    struct snapshot *s = run_klog("kmsg-dir");
    const struct driver_info *d = &s->driver;

    (void)state;
    /* kern.log and messages are absent: syslog it is, and only the kernel's lines. */
    assert_string_equal(d->klog_source, "/var/log/syslog");
    assert_true(has_note(s, "/dev/kmsg: Is a directory"));
    assert_true(has_note(s, "/var/log/kern.log: No such file or directory"));
    assert_int_equal(d->klog_records, 3);
    assert_int_equal(d->n_events, 1);
    assert_int_equal(d->events[0].xid, 79);
    assert_string_equal(d->events[0].pci, "0000:65:00");
    snapshot_free(s);
}

static void test_nothing_readable(void **state)
{
    struct snapshot *s = run_klog("none");

    (void)state;
    assert_int_equal(status(s)->state, CS_UNAVAILABLE);
    assert_non_null(strstr(status(s)->detail, "no kernel log readable"));
    assert_non_null(strstr(status(s)->detail, "/var/log/syslog: No such file or directory"));
    assert_non_null(strstr(status(s)->detail, "systemd journal"));
    assert_null(s->driver.klog_source);
    assert_false(s->driver.valid & (1u << DRIVER_S_KLOG));
    assert_int_equal(s->driver.n_events, 0);
    snapshot_free(s);
}

/* This machine's own /dev/kmsg, where it can be read: the device is read to its end without
 * waiting, and every record is counted. */
static void test_live_device(void **state)
{
    struct snapshot *s;
    struct stat st;
    int fd;

    (void)state;
    if (stat("/dev/kmsg", &st) != 0 || !S_ISCHR(st.st_mode))
        skip();
    fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK);
    if (fd < 0)
        skip();
    close(fd);
    s = run_klog_root("/");
    assert_string_equal(s->driver.klog_source, "/dev/kmsg");
    assert_true(s->driver.valid & (1u << DRIVER_S_KLOG));
    assert_true(s->driver.klog_records > 0);
    assert_true(s->driver.n_events <= 256);
    assert_true(s->collectors[COLLECTOR_KLOG].state == CS_OK ||
                s->collectors[COLLECTOR_KLOG].state == CS_PARTIAL);
    snapshot_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kmsg_file),       cmocka_unit_test(test_fallback_to_kern_log),
        cmocka_unit_test(test_kmsg_not_a_file), cmocka_unit_test(test_nothing_readable),
        cmocka_unit_test(test_live_device),
    };

    return cmocka_run_group_tests(tests, setup_tz, NULL);
}
