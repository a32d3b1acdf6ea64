/* The host parsers (collect/hostfs.c) on strings and fixture files, and the window arithmetic. */
#include "collect/hostfs.h"
#include "util/fileio.h"
#include "util/xalloc.h"

#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define FIX TEST_FIXTURES "/host/"

static char *fixture(const char *rel)
{
    char *text = NULL;
    ssize_t n = file_slurp_at(AT_FDCWD, rel, 1u << 20, &text);

    if (n < 0)
        fail_msg("cannot read %s", rel);
    return text;
}

/* Asserts that the parser's complaint contains want, and frees it. */
static void assert_cause(char *cause, const char *want)
{
    assert_non_null(cause);
    if (strstr(cause, want) == NULL)
        fail_msg("cause \"%s\" does not contain \"%s\"", cause, want);
    free(cause);
}

static void test_stat(void **state)
{
    struct hostfs_cpu_times t;
    uint32_t lines;
    char *text = fixture(FIX "server/proc/stat"), *cause = NULL;

    (void)state;
    assert_int_equal(hostfs_parse_stat(text, &t, &lines, &cause), 0);
    assert_int_equal(t.user, 10000);
    assert_int_equal(t.nice, 500);
    assert_int_equal(t.system, 3000);
    assert_int_equal(t.idle, 80000);
    assert_int_equal(t.iowait, 4000);
    assert_int_equal(t.irq, 100);
    assert_int_equal(t.softirq, 200);
    assert_int_equal(t.steal, 300);
    assert_int_equal(lines, 4);
    free(text);

    /* Truncated, garbage, missing, doubled. */
    assert_int_equal(hostfs_parse_stat("cpu  10 20 3", &t, &lines, &cause), -1);
    assert_cause(cause, "has 3 numbers, expected at least 8");
    assert_int_equal(hostfs_parse_stat("cpu  1 2 3 4 5 6 x 8\n", &t, &lines, &cause), -1);
    assert_cause(cause, "line 1: expected a tick count, got \"x\"");
    assert_int_equal(hostfs_parse_stat("intr 1 2\nctxt 5\n", &t, &lines, &cause), -1);
    assert_cause(cause, "no \"cpu\" line");
    assert_int_equal(
        hostfs_parse_stat("cpu 1 2 3 4 5 6 7 8\ncpu 1 2 3 4 5 6 7 8\n", &t, &lines, &cause), -1);
    assert_cause(cause, "line 2: a second \"cpu\" line");
    assert_int_equal(hostfs_parse_stat("", &t, &lines, &cause), -1);
    assert_cause(cause, "no \"cpu\" line");
    /* A counter beyond 64 bits is garbage, not a wrap. */
    assert_int_equal(
        hostfs_parse_stat("cpu 1 2 3 99999999999999999999999 5 6 7 8\n", &t, &lines, &cause), -1);
    assert_cause(cause, "expected a tick count");
}

static void test_small_files(void **state)
{
    double load[3], up;
    uint32_t n;
    char *cause = NULL;

    (void)state;
    assert_int_equal(hostfs_parse_loadavg("3.50 2.25 1.00 3/512 12345\n", load, &cause), 0);
    assert_true(load[0] == 3.5 && load[1] == 2.25 && load[2] == 1.0);
    assert_int_equal(hostfs_parse_loadavg("load? high\n", load, &cause), -1);
    assert_cause(cause, "expected a load average, got \"load?\"");
    assert_int_equal(hostfs_parse_loadavg("1.0 2.0", load, &cause), -1);
    assert_cause(cause, "2 numbers, expected three");
    assert_int_equal(hostfs_parse_loadavg("-1 2 3", load, &cause), -1);
    assert_cause(cause, "expected a load average");
    assert_int_equal(hostfs_parse_loadavg("", load, &cause), -1);
    assert_cause(cause, "empty");

    assert_int_equal(hostfs_parse_uptime("86400.25 300000.00\n", &up, &cause), 0);
    assert_true(up == 86400.25);
    assert_int_equal(hostfs_parse_uptime("", &up, &cause), -1);
    assert_cause(cause, "empty");
    assert_int_equal(hostfs_parse_uptime("nan 3\n", &up, &cause), -1);
    assert_cause(cause, "expected seconds since boot");

    assert_int_equal(hostfs_parse_cpu_list("0-3\n", &n, &cause), 0);
    assert_int_equal(n, 4);
    assert_int_equal(hostfs_parse_cpu_list("0-3,8-11,16\n", &n, &cause), 0);
    assert_int_equal(n, 9);
    assert_int_equal(hostfs_parse_cpu_list("5", &n, &cause), 0);
    assert_int_equal(n, 1);
    assert_int_equal(hostfs_parse_cpu_list("0-\n", &n, &cause), -1);
    assert_cause(cause, "got \"0-\"");
    assert_int_equal(hostfs_parse_cpu_list("3-1", &n, &cause), -1);
    assert_cause(cause, "CPU number or range");
    assert_int_equal(hostfs_parse_cpu_list("\n", &n, &cause), -1);
    assert_cause(cause, "empty CPU list");
    assert_int_equal(hostfs_parse_cpu_list("0-4000000000", &n, &cause), -1);
    assert_cause(cause, "CPU number or range");
}

static void test_meminfo_vmstat(void **state)
{
    struct hostfs_meminfo m;
    uint64_t in = 0, out = 0;
    char *text = fixture(FIX "server/proc/meminfo"), *cause = NULL;

    (void)state;
    assert_int_equal(hostfs_parse_meminfo(text, &m, &cause), 0);
    free(text);
    assert_int_equal(m.have, HOSTFS_MEM_TOTAL | HOSTFS_MEM_AVAILABLE | HOSTFS_SWAP_TOTAL |
                                 HOSTFS_SWAP_FREE);
    assert_int_equal(m.mem_total, 263840476ULL * 1024);
    assert_int_equal(m.mem_available, 4194304ULL * 1024);
    assert_int_equal(m.swap_total, 8388604ULL * 1024);
    assert_int_equal(m.swap_free, 2097148ULL * 1024);

    /* An old kernel: no MemAvailable, not an error. */
    text = fixture(FIX "old/proc/meminfo");
    assert_int_equal(hostfs_parse_meminfo(text, &m, &cause), 0);
    free(text);
    assert_int_equal(m.have, HOSTFS_MEM_TOTAL | HOSTFS_SWAP_TOTAL | HOSTFS_SWAP_FREE);

    /* Truncated in the middle of a value: what came before still counts. */
    text = fixture(FIX "garbage/proc/meminfo");
    assert_int_equal(hostfs_parse_meminfo(text, &m, &cause), -1);
    free(text);
    assert_cause(cause, "line 2: MemAvailable has no \"kB\" unit (truncated?)");
    assert_int_equal(m.have, HOSTFS_MEM_TOTAL);
    assert_int_equal(m.mem_total, 16384000ULL * 1024);
    assert_int_equal(hostfs_parse_meminfo("MemTotal: many kB\nSwapFree: 4 kB\n", &m, &cause), -1);
    assert_cause(cause, "line 1: expected a number of kB, got \"many\"");
    assert_int_equal(m.have, HOSTFS_SWAP_FREE);
    assert_int_equal(hostfs_parse_meminfo("MemTotal: 18446744073709551615 kB\n", &m, &cause), -1);
    assert_cause(cause, "out of range");

    text = fixture(FIX "server/proc/vmstat");
    assert_int_equal(hostfs_parse_vmstat(text, &in, &out, &cause), 0);
    free(text);
    assert_int_equal(in, 1000);
    assert_int_equal(out, 2000);
    assert_int_equal(hostfs_parse_vmstat("pswpin x\npswpout 3\n", &in, &out, &cause), -1);
    assert_cause(cause, "line 1: expected a page count, got \"x\"");
    assert_int_equal(hostfs_parse_vmstat("pswpin 3\n", &in, &out, &cause), -1);
    assert_cause(cause, "pswpin or pswpout missing");
    assert_int_equal(hostfs_parse_vmstat("nr_free_pages 3\n", &in, &out, &cause), -1);
    assert_cause(cause, "no pswpin or pswpout line");
}

static void test_psi(void **state)
{
    struct hostfs_psi p;
    char *text = fixture(FIX "server/proc/pressure/io"), *cause = NULL;

    (void)state;
    assert_int_equal(hostfs_parse_psi(text, &p, &cause), 0);
    free(text);
    assert_true(p.some.avg10 == 40.0 && p.some.avg60 == 35.5 && p.some.avg300 == 20.0);
    assert_int_equal(p.some.total_us, 5000000);
    assert_true(p.has_full);
    assert_true(p.full.avg10 == 20.0 && p.full.avg60 == 15.25);
    assert_int_equal(p.full.total_us, 3000000);

    /* Before 5.13 the cpu file has no "full" line. */
    assert_int_equal(
        hostfs_parse_psi("some avg10=1.00 avg60=2.00 avg300=3.00 total=7\n", &p, &cause), 0);
    assert_false(p.has_full);
    assert_int_equal(p.some.total_us, 7);

    assert_int_equal(hostfs_parse_psi("some avg10=abc avg60=0 avg300=0 total=0\n", &p, &cause), -1);
    assert_cause(cause, "expected a number after the '=', got \"avg10=abc\"");
    assert_int_equal(hostfs_parse_psi("some avg10=0.00 avg60=0.00", &p, &cause), -1);
    assert_cause(cause, "(truncated?)");
    assert_int_equal(hostfs_parse_psi("full avg10=0 avg60=0 avg300=0 total=0\n", &p, &cause), -1);
    assert_cause(cause, "no \"some\" line");
    assert_int_equal(hostfs_parse_psi("\x01\x02\xff junk\n", &p, &cause), -1);
    /* Garbage is quoted printable: the message goes into JSON, which must be UTF-8. */
    assert_cause(cause, "got \"\\x01\\x02\\xff\"");
    assert_int_equal(
        hostfs_parse_psi("some avg10=1 avg60=1 avg300=1 total=1 extra=2\n", &p, &cause), -1);
    assert_cause(cause, "avg10=, avg60=, avg300= or total=");
}

static void test_diskstats(void **state)
{
    struct hostfs_diskstat *d = NULL;
    size_t n = 0;
    char *text = fixture(FIX "server/proc/diskstats"), *cause = NULL;

    (void)state;
    /* 4.18 (15 counters), 5.5 (17) and pre-4.18 (11) lines side by side. */
    assert_int_equal(hostfs_parse_diskstats(text, &d, &n, &cause), 0);
    free(text);
    assert_int_equal(n, 10);
    assert_string_equal(d[1].name, "sda");
    assert_int_equal(d[1].major, 8);
    assert_int_equal(d[1].minor, 0);
    assert_int_equal(d[1].reads, 1000);
    assert_int_equal(d[1].read_sectors, 80000);
    assert_int_equal(d[1].read_ms, 5000);
    assert_int_equal(d[1].writes, 500);
    assert_int_equal(d[1].write_sectors, 40000);
    assert_int_equal(d[1].write_ms, 2500);
    assert_int_equal(d[1].io_ticks_ms, 10000);
    assert_string_equal(d[3].name, "nvme0n1");
    assert_int_equal(d[3].io_ticks_ms, 2000);
    assert_string_equal(d[9].name, "zram0");
    assert_int_equal(d[9].io_ticks_ms, 2);
    free(d);

    text = fixture(FIX "garbage/proc/diskstats");
    assert_int_equal(hostfs_parse_diskstats(text, &d, &n, &cause), 4);
    free(text);
    assert_cause(cause, "line 1: expected a major device number, got \"this\"");
    assert_int_equal(n, 1);
    assert_string_equal(d[0].name, "sda");
    assert_int_equal(d[0].io_ticks_ms, 10);
    free(d);

    assert_int_equal(hostfs_parse_diskstats("8 1 sda1 1 2\n", &d, &n, &cause), 1);
    assert_cause(cause, "sda1 has 2 counters, expected at least 11 (truncated?)");
    free(d);
    /* A name that would climb out of /sys/block. */
    assert_int_equal(hostfs_parse_diskstats("8 1 ../x 1 2 3 4 5 6 7 8 9 10 11\n", &d, &n, &cause),
                     1);
    assert_cause(cause, "expected a device name");
    assert_int_equal(n, 0);
    free(d);
}

static void test_mountinfo(void **state)
{
    struct hostfs_mounts m;
    const struct hostfs_mount *hit;
    char *text = fixture(FIX "server/proc/self/mountinfo"), *cause = NULL;

    (void)state;
    assert_int_equal(hostfs_parse_mountinfo(text, &m, &cause), 0);
    free(text);
    assert_int_equal(m.n, 7);
    assert_string_equal(m.v[0].mount_point, "/");
    assert_string_equal(m.v[0].source, "/dev/mapper/vg0-root");
    assert_string_equal(m.v[0].fstype, "ext4");
    assert_int_equal(m.v[0].major, 253);
    assert_int_equal(m.v[0].minor, 0);
    assert_string_equal(m.v[5].mount_point, "/scratch space");

    hit = hostfs_mount_find(&m, "/home/bob");
    assert_string_equal(hit->mount_point, "/");
    hit = hostfs_mount_find(&m, "/tmp");
    assert_string_equal(hit->fstype, "tmpfs");
    hit = hostfs_mount_find(&m, "/data/jobs/alice");
    assert_string_equal(hit->mount_point, "/data");
    /* A component boundary: /database is not under /data. */
    hit = hostfs_mount_find(&m, "/database");
    assert_string_equal(hit->mount_point, "/");
    hit = hostfs_mount_find(&m, "/data/datasets/imagenet");
    assert_string_equal(hit->mount_point, "/data/datasets");
    hit = hostfs_mount_find(&m, "/scratch space/run1");
    assert_string_equal(hit->source, "/dev/nvme0n1p2");
    assert_null(hostfs_mount_find(&m, "relative/path"));
    hostfs_mounts_free(&m);

    /* A later mount on the same point hides the earlier one. */
    assert_int_equal(hostfs_parse_mountinfo("1 0 8:1 / / rw - ext4 /dev/sda1 rw\n"
                                            "2 1 0:40 / /tmp rw - ext4 /dev/sdb rw\n"
                                            "3 1 0:41 / /tmp rw - tmpfs tmpfs rw\n",
                                            &m, &cause),
                     0);
    assert_int_equal(hostfs_mount_find(&m, "/tmp/x")->minor, 41);
    hostfs_mounts_free(&m);
}

static void test_mountinfo_garbage(void **state)
{
    struct hostfs_mounts m;
    char *text = fixture(FIX "garbage/proc/self/mountinfo"), *cause = NULL;

    (void)state;
    assert_int_equal(hostfs_parse_mountinfo(text, &m, &cause), 3);
    free(text);
    assert_cause(cause, "line 1: expected a mount id, got \"garbage\"");
    assert_int_equal(m.n, 1);
    assert_string_equal(m.v[0].source, "/dev/root");
    hostfs_mounts_free(&m);

    assert_int_equal(hostfs_parse_mountinfo("24 22 0:22 / /sys rw,relatime shared:7\n", &m, &cause),
                     1);
    assert_cause(cause, "no \" - \" separator");
    hostfs_mounts_free(&m);
    assert_int_equal(hostfs_parse_mountinfo("24 22 0:22 / /sys rw -\n", &m, &cause), 1);
    assert_cause(cause, "no filesystem type");
    hostfs_mounts_free(&m);
    assert_int_equal(hostfs_parse_mountinfo("24 22 0:22 / sys rw - proc proc rw\n", &m, &cause), 1);
    assert_cause(cause, "absolute mount point");
    hostfs_mounts_free(&m);
}

static void test_text(void **state)
{
    char *t;

    (void)state;
    t = hostfs_text("plain /data/日本語");
    assert_string_equal(t, "plain /data/日本語");
    free(t);
    t = hostfs_text("tab\there\x7f");
    assert_string_equal(t, "tab\\x09here\\x7f");
    free(t);
    /* Invalid UTF-8: a lone continuation, an overlong '/', a surrogate, a cut sequence. */
    t = hostfs_text("\x80 \xc0\xaf \xed\xa0\x80 \xe6\x97");
    assert_string_equal(t, "\\x80 \\xc0\\xaf \\xed\\xa0\\x80 \\xe6\\x97");
    free(t);
    t = hostfs_textn("abcdef", 3);
    assert_string_equal(t, "abc");
    free(t);
}

static void test_virtual_disks(void **state)
{
    (void)state;
    assert_true(hostfs_disk_is_virtual("loop0"));
    assert_true(hostfs_disk_is_virtual("zram0"));
    assert_true(hostfs_disk_is_virtual("dm-3"));
    assert_true(hostfs_disk_is_virtual("md127"));
    assert_true(hostfs_disk_is_virtual("sr0"));
    assert_false(hostfs_disk_is_virtual("sda"));
    assert_false(hostfs_disk_is_virtual("nvme0n1"));
    assert_false(hostfs_disk_is_virtual("vda"));
    assert_false(hostfs_disk_is_virtual("mmcblk0"));
}

/* The counters of a fixture tree at time t_us, as the collector would read them. */
static void load_counters(const char *dir, int64_t t_us, struct hostfs_counters *c)
{
    static const char *const psi[HOSTFS_PSI__COUNT] = { "cpu", "memory", "io" };
    char path[512], *text, *cause = NULL;
    uint32_t lines;

    memset(c, 0, sizeof(*c));
    c->t_us = t_us;
    snprintf(path, sizeof(path), "%s/proc/stat", dir);
    text = fixture(path);
    c->have_cpu = hostfs_parse_stat(text, &c->cpu, &lines, &cause) == 0;
    free(text);
    snprintf(path, sizeof(path), "%s/proc/vmstat", dir);
    text = fixture(path);
    c->have_swap = hostfs_parse_vmstat(text, &c->pswpin, &c->pswpout, &cause) == 0;
    free(text);
    snprintf(path, sizeof(path), "%s/proc/diskstats", dir);
    text = fixture(path);
    assert_int_equal(hostfs_parse_diskstats(text, &c->disks, &c->n_disks, &cause), 0);
    c->have_disks = true;
    free(text);
    for (int i = 0; i < HOSTFS_PSI__COUNT; i++) {
        snprintf(path, sizeof(path), "%s/proc/pressure/%s", dir, psi[i]);
        text = fixture(path);
        c->have_psi[i] = hostfs_parse_psi(text, &c->psi[i], &cause) == 0;
        free(text);
    }
    assert_true(c->have_cpu && c->have_swap);
}

static void add_disk(struct host_info *h, const char *name)
{
    h->disks = xreallocarray(h->disks, h->n_disks + 1, sizeof(*h->disks));
    memset(&h->disks[h->n_disks], 0, sizeof(*h->disks));
    h->disks[h->n_disks++].name = xstrdup(name);
}

static void assert_near(double got, double want)
{
    if (got < want - 1e-9 || got > want + 1e-9)
        fail_msg("got %.12g, want %.12g", got, want);
}

static void test_window(void **state)
{
    struct hostfs_counters a, b;
    struct host_info h;

    (void)state;
    memset(&h, 0, sizeof(h));
    add_disk(&h, "sda");
    add_disk(&h, "nvme0n1");
    add_disk(&h, "dm-0");
    add_disk(&h, "sdz"); /* gone by the end of the window */
    load_counters(FIX "server", 1000000, &a);
    load_counters(FIX "later", 3000000, &b);
    hostfs_apply_window(&a, &b, &h);

    /* 1000 ticks: user+nice 400, system+irq+softirq 200, idle 200, iowait 150, steal 50. */
    assert_true(host_valid(&h, HOST_S_CPU_PCT));
    assert_near(h.cpu_user_pct, 40);
    assert_near(h.cpu_system_pct, 20);
    assert_near(h.cpu_idle_pct, 20);
    assert_near(h.cpu_iowait_pct, 15);
    assert_near(h.cpu_steal_pct, 5);
    /* 200 pages in and 100 out over 2 s. */
    assert_true(host_valid(&h, HOST_S_SWAP_RATE));
    assert_near(h.swap_in_pages_per_s, 100);
    assert_near(h.swap_out_pages_per_s, 50);
    /* Stall time over the window from total=: 0.5 s, 0.2/0.1 s, 0.6/0.2 s of 2 s. */
    assert_true(host_valid(&h, HOST_S_PSI_CPU_WINDOW));
    assert_near(h.psi_cpu_some_window_pct, 25);
    assert_true(host_valid(&h, HOST_S_PSI_MEM_WINDOW));
    assert_near(h.psi_mem_some_window_pct, 10);
    assert_near(h.psi_mem_full_window_pct, 5);
    assert_true(host_valid(&h, HOST_S_PSI_IO_WINDOW));
    assert_near(h.psi_io_some_window_pct, 30);
    assert_near(h.psi_io_full_window_pct, 10);
    /* sda: 1.5 s busy of 2; 8000 and 2000 sectors; 1500 ms over 150 I/Os. */
    assert_int_equal(h.disks[0].valid, (1u << DISK_S_RATES) | (1u << DISK_S_AWAIT));
    assert_near(h.disks[0].util_pct, 75);
    assert_near(h.disks[0].read_bytes_per_s, 8000.0 * 512 / 2);
    assert_near(h.disks[0].write_bytes_per_s, 2000.0 * 512 / 2);
    assert_near(h.disks[0].await_ms, 10);
    /* nvme0n1: idle is a measurement (0 %), but await has no I/O to average. */
    assert_int_equal(h.disks[1].valid, 1u << DISK_S_RATES);
    assert_near(h.disks[1].util_pct, 0);
    assert_near(h.disks[1].read_bytes_per_s, 0);
    /* dm-0: 2.5 s of busy time in 2 s is capped. */
    assert_near(h.disks[2].util_pct, 100);
    assert_int_equal(h.disks[3].valid, 0);

    /* No time passed: nothing is a rate. */
    host_info_free(&h);
    memset(&h, 0, sizeof(h));
    hostfs_apply_window(&a, &a, &h);
    assert_int_equal(h.valid, 0);
    hostfs_counters_free(&a);
    hostfs_counters_free(&b);
}

static void test_window_counters_going_back(void **state)
{
    struct hostfs_counters a, b;
    struct host_info h;

    (void)state;
    memset(&a, 0, sizeof(a));
    memset(&b, 0, sizeof(b));
    memset(&h, 0, sizeof(h));
    a.t_us = 0;
    b.t_us = 1000000;
    a.have_cpu = b.have_cpu = true;
    a.have_swap = b.have_swap = true;
    /* iowait may go backwards on NO_HZ kernels; a reset swap counter must not read as huge. */
    a.cpu = (struct hostfs_cpu_times){ 100, 0, 100, 100, 500, 0, 0, 0 };
    b.cpu = (struct hostfs_cpu_times){ 150, 0, 150, 200, 400, 0, 0, 0 };
    a.pswpin = 1000;
    b.pswpin = 10;
    hostfs_apply_window(&a, &b, &h);
    assert_near(h.cpu_iowait_pct, 0);
    assert_near(h.cpu_user_pct, 25);
    assert_near(h.cpu_idle_pct, 50);
    assert_near(h.swap_in_pages_per_s, 0);
    /* Without PSI or disks on either side, those stay invalid. */
    assert_false(host_valid(&h, HOST_S_PSI_CPU_WINDOW));

    {
        double busy, iowait, steal;

        assert_true(hostfs_cpu_pct(&a.cpu, &b.cpu, &busy, &iowait, &steal));
        assert_near(busy, 50);
        assert_near(iowait, 0);
        assert_false(hostfs_cpu_pct(&a.cpu, &a.cpu, &busy, &iowait, &steal));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stat),
        cmocka_unit_test(test_small_files),
        cmocka_unit_test(test_meminfo_vmstat),
        cmocka_unit_test(test_psi),
        cmocka_unit_test(test_diskstats),
        cmocka_unit_test(test_mountinfo),
        cmocka_unit_test(test_mountinfo_garbage),
        cmocka_unit_test(test_text),
        cmocka_unit_test(test_virtual_disks),
        cmocka_unit_test(test_window),
        cmocka_unit_test(test_window_counters_going_back),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
