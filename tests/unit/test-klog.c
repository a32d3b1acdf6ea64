/* Kernel-log parsing: every Xid format of every driver generation for every catalogue code, what
 * the decoders read inside messages (154's recovery action, NVLink5 sub-codes, the cause of a 45,
 * 94/95 RST and D-RST), the companion lines, hung tasks, OOM kills, kmsg and syslog stamps,
 * garbage, and the bound on kept events. */
#include "collect/klog-parse.h"
#include "data/xid.h"
#include "util/fileio.h"
#include "util/strutil.h"
#include "util/xalloc.h"

#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#define BIT(slot) (UINT64_C(1) << (slot))

/* 2026-12-02T09:00:00Z: "now" for syslog stamps without a year. */
#define NOW_MS INT64_C(1796202000000)

static int setup_tz(void **state)
{
    (void)state;
    setenv("TZ", "UTC", 1);
    tzset();
    return 0;
}

static int64_t utc_ms(int y, int mo, int d, int h, int mi, int s)
{
    struct tm tm = { 0 };

    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = s;
    return (int64_t)timegm(&tm) * 1000;
}

static void test_xid_current_format(void **state)
{
    struct klog_event ev;

    (void)state;
    assert_int_equal(
        klog_parse_message(
            "NVRM: Xid (PCI:0000:3b:00): 13, pid=4121, name=python3, Graphics SM Warp Exception "
            "on (GPC 1, TPC 0, SM 0): Out Of Range Address",
            &ev),
        KLOG_PARSE_EVENT);
    assert_int_equal(ev.kind, KLOG_XID);
    assert_string_equal(ev.pci, "0000:3b:00");
    assert_int_equal(ev.xid, 13);
    assert_int_equal(ev.pid, 4121);
    assert_string_equal(ev.name, "python3");
    assert_string_equal(ev.message,
                        "Graphics SM Warp Exception on (GPC 1, TPC 0, SM 0): Out Of Range Address");
    assert_int_equal(ev.valid, BIT(KLOG_S_XID) | BIT(KLOG_S_PID));
    klog_event_free(&ev);

    /* No process context: no pid= and no name= at all (Xid 79 in 570+). */
    assert_int_equal(
        klog_parse_message("NVRM: Xid (PCI:0000:2b:00): 79, GPU has fallen off the bus.", &ev),
        KLOG_PARSE_EVENT);
    assert_int_equal(ev.xid, 79);
    assert_false(ev.valid & BIT(KLOG_S_PID));
    assert_null(ev.name);
    assert_string_equal(ev.message, "GPU has fallen off the bus.");
    klog_event_free(&ev);

    /* R570.124+: Xid 45 names its cause. */
    assert_int_equal(klog_parse_message("NVRM: Xid (PCI:0000:3b:00): 45, pid=4121, name=python3, "
                                        "Ch 00000008 caused by previous Xid 48",
                                        &ev),
                     KLOG_PARSE_EVENT);
    assert_int_equal(ev.xid, 45);
    assert_int_equal(ev.caused_by_xid, 48);
    assert_true(ev.valid & BIT(KLOG_S_CAUSED_BY));
    klog_event_free(&ev);

    /* Upper-case hex is normalised. */
    assert_int_equal(klog_parse_message("NVRM: Xid (PCI:0000:3B:0A): 8, ", &ev), KLOG_PARSE_EVENT);
    assert_string_equal(ev.pci, "0000:3b:0a");
    assert_string_equal(ev.message, "");
    klog_event_free(&ev);
}

static void test_xid_mig_variants(void **state)
{
    struct klog_event ev;

    (void)state;
    assert_int_equal(klog_parse_message("NVRM: Xid (PCI:0000:86:00 GPU-I:01 GPU-CI:00): 13, "
                                        "pid=5123, name=train.py, Graphics SM Warp Exception",
                                        &ev),
                     KLOG_PARSE_EVENT);
    assert_int_equal(ev.gpu_instance, 1);
    assert_int_equal(ev.compute_instance, 0);
    assert_true(ev.valid & BIT(KLOG_S_GPU_INSTANCE));
    assert_true(ev.valid & BIT(KLOG_S_COMPUTE_INSTANCE));
    assert_string_equal(ev.name, "train.py");
    klog_event_free(&ev);

    assert_int_equal(klog_parse_message("NVRM: Xid (PCI:0000:86:00 GPU-I:12): 31, pid=5200, "
                                        "name=infer, Ch 00000010, intr 00000000.",
                                        &ev),
                     KLOG_PARSE_EVENT);
    assert_int_equal(ev.gpu_instance, 12);
    assert_false(ev.valid & BIT(KLOG_S_COMPUTE_INSTANCE));
    assert_string_equal(ev.message, "Ch 00000010, intr 00000000.");
    klog_event_free(&ev);
}

static void test_xid_older_formats(void **state)
{
    struct klog_event ev;

    (void)state;
    /* 515-565: '<unknown>' placeholders. */
    assert_int_equal(klog_parse_message("NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', "
                                        "name=<unknown>, GPU has fallen off the bus.",
                                        &ev),
                     KLOG_PARSE_EVENT);
    assert_int_equal(ev.xid, 79);
    assert_false(ev.valid & BIT(KLOG_S_PID));
    assert_null(ev.name);
    assert_string_equal(ev.message, "GPU has fallen off the bus.");
    klog_event_free(&ev);

    /* Before name= existed. */
    assert_int_equal(klog_parse_message("NVRM: Xid (PCI:0000:10:1c): 63, pid=1896, Row Remapper: "
                                        "New row marked for remapping, reset gpu to activate.",
                                        &ev),
                     KLOG_PARSE_EVENT);
    assert_int_equal(ev.pid, 1896);
    assert_null(ev.name);
    assert_string_equal(ev.message,
                        "Row Remapper: New row marked for remapping, reset gpu to activate.");
    klog_event_free(&ev);

    /* 2010s: no "PCI:" prefix. */
    assert_int_equal(
        klog_parse_message("NVRM: Xid (0000:01:00): 3, C 00000005 SC 00000007 ...", &ev),
        KLOG_PARSE_EVENT);
    assert_string_equal(ev.pci, "0000:01:00");
    assert_int_equal(ev.xid, 3);
    assert_string_equal(ev.message, "C 00000005 SC 00000007 ...");
    klog_event_free(&ev);
}

/* Xid 154 (gpu.c): "GPU recovery action changed from 0x%x (%s) to 0x%x (%s)", every action. */
static void test_xid_recovery_action(void **state)
{
    static const char *const words[] = { "None",      "GPU Reset Required", "Node Reboot Required",
                                         "Drain P2P", "Drain and Reset",    "Recover IMEX Domain" };
    static const char *const bad[] = {
        "GPU recovery action changed from 0x0 (None) to 0x1 (Node Reboot Required)", /* name */
        "GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required",    /* no ')' */
        "GPU recovery action changed from 0x0 (None) to 1 (GPU Reset Required)",     /* no 0x */
        "GPU recovery action changed from 0x0 (None) to 0x (GPU Reset Required)",
        "GPU recovery action changed from 0x0 (None) to 0x100000000 (Unknown)",
        "recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)",
    };
    struct klog_event ev;
    char *line;

    (void)state;
    assert_int_equal(KLOG__RA_COUNT, ARRAY_SIZE(words));
    for (int to = 0; to < KLOG__RA_COUNT; to++) {
        int from = (to + 1) % KLOG__RA_COUNT;

        line = xasprintf("NVRM: Xid (PCI:0000:3b:00): 154, GPU recovery action changed from 0x%x "
                         "(%s) to 0x%x (%s)",
                         from, words[from], to, words[to]);
        assert_int_equal(klog_parse_message(line, &ev), KLOG_PARSE_EVENT);
        assert_int_equal(ev.xid, 154);
        assert_true(ev.valid & BIT(KLOG_S_RECOVERY));
        assert_true(ev.valid & BIT(KLOG_S_RECOVERY_PREV));
        assert_int_equal(ev.recovery_action, to);
        assert_int_equal(ev.recovery_action_prev, from);
        assert_string_equal(klog_recovery_action_driver_names[to], words[to]);
        klog_event_free(&ev);
        free(line);
    }
    assert_string_equal(klog_recovery_action_names[KLOG_RA_NODE_REBOOT], "node_reboot");
    assert_null(klog_recovery_action_names[KLOG__RA_COUNT]);

    /* A number newer than gpudoctor's table is kept as the number; the driver names it "Unknown".
     */
    assert_int_equal(klog_parse_message("NVRM: Xid (PCI:0000:3b:00): 154, GPU recovery action "
                                        "changed from 0x1 (GPU Reset Required) to 0x6 (Unknown)",
                                        &ev),
                     KLOG_PARSE_EVENT);
    assert_int_equal(ev.recovery_action, 6);
    assert_int_equal(ev.recovery_action_prev, KLOG_RA_GPU_RESET);
    klog_event_free(&ev);

    /* A previous action that does not read still leaves the new one. */
    assert_int_equal(klog_parse_message("NVRM: Xid (PCI:0000:3b:00): 154, GPU recovery action "
                                        "changed from 0x2 (Reboot) to 0x0 (None)",
                                        &ev),
                     KLOG_PARSE_EVENT);
    assert_false(ev.valid & BIT(KLOG_S_RECOVERY_PREV));
    assert_true(ev.valid & BIT(KLOG_S_RECOVERY));
    assert_int_equal(ev.recovery_action, KLOG_RA_NONE);
    klog_event_free(&ev);

    for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
        line = xasprintf("NVRM: Xid (PCI:0000:3b:00): 154, %s", bad[i]);
        assert_int_equal(klog_parse_message(line, &ev), KLOG_PARSE_EVENT);
        if (ev.valid & BIT(KLOG_S_RECOVERY))
            fail_msg("\"%s\": decoded as %d", bad[i], (int)ev.recovery_action);
        assert_string_equal(ev.message, bad[i]);
        klog_event_free(&ev);
        free(line);
    }
    /* Only Xid 154 carries it. */
    assert_int_equal(klog_parse_message("NVRM: Xid (PCI:0000:3b:00): 13, GPU recovery action "
                                        "changed from 0x0 (None) to 0x1 (GPU Reset Required)",
                                        &ev),
                     KLOG_PARSE_EVENT);
    assert_false(ev.valid & (BIT(KLOG_S_RECOVERY) | BIT(KLOG_S_RECOVERY_PREV)));
    klog_event_free(&ev);
}

/* NVLink5 Xids 144..150: "UNIT Fatal|Nonfatal XCn in Link L (INTRINFO ERRORSTATUS ...)". The
 * lines are from public logs (leptonai/gpud PRs #1160 and #1174). */
static void test_xid_nvlink5(void **state)
{
    static const struct {
        const char *line, *unit;
        bool fatal;
        int link;
        uint32_t intrinfo, status;
    } good[] = {
        { "NVRM: Xid (PCI:0018:01:00): 145, RLW_RXPIPE Nonfatal XC0 i0 Link 13 (0x0409a0c2 "
          "0x00000008 0x00000001 0x00000000 0x00100000 0x00000004)",
          "RLW_RXPIPE", false, 13, 0x0409a0c2, 0x8 },
        { "NVRM: Xid (PCI:0019:01:00): 149, NETIR Fatal XC0 i0 Link -1 (0x000fe406 0x00000000 "
          "0x00000000 0x00000000 0x00000000 0x00000000)",
          "NETIR", true, -1, 0x000fe406, 0 },
        { "NVRM: Xid (PCI:0000:00:00): 149, NETIR_LINK_EVT Fatal XC0 i0 Link 00 (0x025001c6 "
          "0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)",
          "NETIR_LINK_EVT", true, 0, 0x025001c6, 0 },
        { "NVRM: Xid (PCI:0000:01:00): 144, SAW_MVB Nonfatal XC0 i0 Link 0 (0x00000001 0x00000008 "
          "0x00000000 0x00000000 0x00000000 0x00000000)",
          "SAW_MVB", false, 0, 0x1, 0x8 },
        /* with a process, and a unit with its sub-unit */
        { "NVRM: Xid (PCI:0000:04:00): 146, pid=77, name=torchrun, TLW_RX/TLW_RX_PIPE0 Fatal XC1 "
          "i1 Link 05 (0x0000000a 0x00000004 0x00000000 0x00000000)",
          "TLW_RX/TLW_RX_PIPE0", true, 5, 0xa, 0x4 },
        /* the two words alone */
        { "NVRM: Xid (PCI:0000:04:00): 150, MSE_WATCHDOG Fatal XC0 i0 Link 00 (0x00000000 "
          "0x80000000)",
          "MSE_WATCHDOG", true, 0, 0, 0x80000000 },
    };
    static const char *const other_shapes[] = {
        "RLW_RXPIPE Nonfatal XC0 i0 Link 13 (0x0409a0c2)",             /* one word */
        "RLW_RXPIPE Nonfatal XC0 i0 Link 13 0x0409a0c2 0x00000008",    /* no parenthesis */
        "RLW_RXPIPE Non-fatal XC0 i0 Link 13 (0x0409a0c2 0x00000008)", /* not the driver's word */
        "RLW_RXPIPE Nonfatal XC0 i0 Link x (0x0409a0c2 0x00000008)",   /* link */
        "RLW_RXPIPE Nonfatal XC0 i0 Link 13 (0x1409a0c2a 0x00000008)", /* 9 digits */
        "rlw_rxpipe Nonfatal XC0 i0 Link 13 (0x0409a0c2 0x00000008)",  /* unit */
        "RLW_RXPIPE Nonfatal XC0 Link 13 (0x0409a0c2 0x00000008)",     /* no i */
        "Ch 00000001",
        "",
    };
    struct klog_event ev;
    char *line;

    (void)state;
    for (size_t i = 0; i < ARRAY_SIZE(good); i++) {
        assert_int_equal(klog_parse_message(good[i].line, &ev), KLOG_PARSE_EVENT);
        if (!(ev.valid & BIT(KLOG_S_NVLINK)))
            fail_msg("not decoded: %s", good[i].line);
        assert_string_equal(ev.nvlink_unit, good[i].unit);
        assert_int_equal(ev.nvlink_fatal, good[i].fatal);
        assert_int_equal(ev.nvlink_link, good[i].link);
        assert_int_equal(ev.nvlink_intrinfo, good[i].intrinfo);
        assert_int_equal(ev.nvlink_error_status, good[i].status);
        klog_event_free(&ev);
    }
    assert_int_equal(klog_parse_message(good[4].line, &ev), KLOG_PARSE_EVENT);
    assert_int_equal(ev.pid, 77);
    assert_string_equal(ev.name, "torchrun");
    klog_event_free(&ev);
    for (size_t i = 0; i < ARRAY_SIZE(other_shapes); i++) {
        line = xasprintf("NVRM: Xid (PCI:0018:01:00): 145, %s", other_shapes[i]);
        assert_int_equal(klog_parse_message(line, &ev), KLOG_PARSE_EVENT);
        if (ev.valid & BIT(KLOG_S_NVLINK))
            fail_msg("decoded: %s", line);
        assert_null(ev.nvlink_unit);
        klog_event_free(&ev);
        free(line);
    }
    /* Only 144..150 are NVLink5 Xids. */
    assert_int_equal(klog_parse_message("NVRM: Xid (PCI:0000:04:00): 74, SAW_MVB Fatal XC0 i0 Link "
                                        "00 (0x00000001 0x00000002)",
                                        &ev),
                     KLOG_PARSE_EVENT);
    assert_false(ev.valid & BIT(KLOG_S_NVLINK));
    klog_event_free(&ev);
}

/* " caused by previous Xid N" counts only as the end of the line, as the driver prints it. */
static void test_xid_caused_by(void **state)
{
    static const struct {
        const char *msg;
        int cause; /* -1: none */
    } cases[] = {
        { "Ch 00000001 caused by previous Xid 149", 149 },
        { "caused by previous Xid 48", 48 },
        { "Ch 00000001 caused by previous Xid 149   ", 149 }, /* trailing blanks are trimmed */
        { "Ch 00000001 caused by previous Xid 149 and more", -1 },
        { "Ch 00000001 caused by previous Xid", -1 },
        { "Ch 00000001 caused by previous Xid x", -1 },
        { "Ch 00000001 caused by previous Xid 99999999999", -1 },
        { "Ch 00000001 uncaused by previous Xid 13", -1 },
        { "Ch 00000001", -1 },
    };
    struct klog_event ev;
    char *line;

    (void)state;
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        line = xasprintf("NVRM: Xid (PCI:0000:dc:00): 45, pid=1818990, name=python3, %s",
                         cases[i].msg);
        assert_int_equal(klog_parse_message(line, &ev), KLOG_PARSE_EVENT);
        if (cases[i].cause < 0) {
            if (ev.valid & BIT(KLOG_S_CAUSED_BY))
                fail_msg("\"%s\": cause %d decoded", cases[i].msg, (int)ev.caused_by_xid);
        } else {
            assert_true(ev.valid & BIT(KLOG_S_CAUSED_BY));
            assert_int_equal(ev.caused_by_xid, cases[i].cause);
        }
        assert_int_equal(ev.pid, 1818990);
        klog_event_free(&ev);
        free(line);
    }
}

/* Xid 94/95 (kern_gpu_error_cont_ga100.c): "... RST: Yes|No, D-RST: Yes|No" at the end. */
static void test_xid_containment(void **state)
{
    static const struct {
        const char *line;
        int rst, drst; /* -1: not decoded */
    } cases[] = {
        { "NVRM: Xid (PCI:0000:01:00 GPU-I:05): 94, pid=7194, Contained: CE User Channel (0x9). "
          "RST: No, D-RST: No",
          0, 0 },
        { "NVRM: Xid (PCI:0000:01:00): 95, pid=7062, Uncontained: LTC TAG (0x2, 0x1). RST: Yes, "
          "D-RST: No",
          1, 0 },
        { "NVRM: Xid (PCI:0000:01:00): 95, Uncontained: DRAM (0x1, 0x0). physAddr: 0x12345678 "
          "RST: Yes, D-RST: Yes",
          1, 1 },
        { "NVRM: Xid (PCI:0000:01:00): 94, Contained: SM (0x1). RST: Maybe, D-RST: No", -1, -1 },
        { "NVRM: Xid (PCI:0000:01:00): 94, Contained: SM (0x1). RST: No, D-RST: No.", -1, -1 },
        { "NVRM: Xid (PCI:0000:01:00): 94, Contained: SM (0x1).", -1, -1 },
        /* only 94 and 95 carry it */
        { "NVRM: Xid (PCI:0000:01:00): 48, Contained: SM (0x1). RST: Yes, D-RST: Yes", -1, -1 },
    };
    struct klog_event ev;

    (void)state;
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        assert_int_equal(klog_parse_message(cases[i].line, &ev), KLOG_PARSE_EVENT);
        if (cases[i].rst < 0) {
            if (ev.valid & BIT(KLOG_S_CONTAINMENT))
                fail_msg("decoded: %s", cases[i].line);
        } else {
            assert_true(ev.valid & BIT(KLOG_S_CONTAINMENT));
            assert_int_equal(ev.reset_required, cases[i].rst);
            assert_int_equal(ev.drain_reset_required, cases[i].drst);
        }
        klog_event_free(&ev);
    }
}

static void test_companion_lines(void **state)
{
    struct klog_event ev;

    (void)state;
    assert_int_equal(klog_parse_message("NVRM: GPU at PCI:0000:2b:00: "
                                        "GPU-0b11d014-1685-04bd-26ed-5fc0bc1c44ae",
                                        &ev),
                     KLOG_PARSE_EVENT);
    assert_int_equal(ev.kind, KLOG_GPU_UUID);
    assert_string_equal(ev.pci, "0000:2b:00");
    assert_string_equal(ev.uuid, "GPU-0b11d014-1685-04bd-26ed-5fc0bc1c44ae");
    klog_event_free(&ev);

    assert_int_equal(klog_parse_message("NVRM: GPU 0000:2b:00.0: GPU has fallen off the bus.", &ev),
                     KLOG_PARSE_EVENT);
    assert_int_equal(ev.kind, KLOG_FALLEN_OFF_BUS);
    assert_string_equal(ev.pci, "0000:2b:00");
    klog_event_free(&ev);

    assert_int_equal(klog_parse_message("NVRM: GPU at 0000:02:00.0 has fallen off the bus.", &ev),
                     KLOG_PARSE_EVENT);
    assert_int_equal(ev.kind, KLOG_FALLEN_OFF_BUS);
    assert_string_equal(ev.pci, "0000:02:00");
    klog_event_free(&ev);

    assert_int_equal(klog_parse_message("NVRM: API mismatch: the client has the version "
                                        "535.161.08, but",
                                        &ev),
                     KLOG_PARSE_EVENT);
    assert_int_equal(ev.kind, KLOG_OTHER_NVRM);
    assert_null(ev.pci);
    klog_event_free(&ev);

    /* Routine driver chatter is not an event. */
    assert_int_equal(klog_parse_message("NVRM: GPU Board Serial Number: 1652123456789", &ev),
                     KLOG_PARSE_NONE);
    klog_event_free(&ev);
    assert_int_equal(klog_parse_message("NVRM: GPU at PCI:0000:2b:00: not a uuid", &ev),
                     KLOG_PARSE_NONE);
    klog_event_free(&ev);
    assert_int_equal(klog_parse_message("usb 1-1: new high-speed USB device", &ev),
                     KLOG_PARSE_NONE);
    klog_event_free(&ev);
}

/* The PCI -> UUID map is bounded: a log naming more GPUs counts the rest, and says so. */
static void test_uuid_map_bounded(void **state)
{
    struct klog_parse_opts o = { 0, 0, NOW_MS };
    struct klog_parser p;
    struct driver_info d;

    (void)state;
    memset(&d, 0, sizeof(d));
    klog_parser_init(&p, &o);
    for (unsigned i = 0; i < KLOG_MAX_GPUS + 76; i++) {
        char line[128];

        snprintf(line, sizeof(line), "NVRM: GPU at PCI:%04x:%02x:00: GPU-%08x-0000-0000-0000-%012x",
                 i / 256, i % 256, i, i);
        klog_feed_message(&p, line, false, 0, false, 0);
    }
    assert_int_equal(p.n_map, KLOG_MAX_GPUS);
    assert_int_equal(p.map_dropped, 76);
    klog_parser_finish(&p, &d);
    klog_parser_release(&p);
    driver_info_free(&d);
}

static void test_hung_and_oom_lines(void **state)
{
    struct klog_event ev;

    (void)state;
    assert_int_equal(
        klog_parse_message("INFO: task kworker/u8:2:301 blocked for more than 122 seconds.", &ev),
        KLOG_PARSE_HUNG);
    assert_int_equal(ev.kind, KLOG_HUNG_TASK);
    assert_string_equal(ev.name, "kworker/u8:2");
    assert_int_equal(ev.pid, 301);
    assert_int_equal(ev.blocked_s, 122);
    klog_event_free(&ev);

    assert_int_equal(klog_parse_message("Out of memory: Killed process 9001 (python) "
                                        "total-vm:98765432kB, anon-rss:61234567kB, "
                                        "file-rss:1024kB, shmem-rss:8kB, UID:1000",
                                        &ev),
                     KLOG_PARSE_EVENT);
    assert_int_equal(ev.kind, KLOG_OOM_KILL);
    assert_int_equal(ev.pid, 9001);
    assert_string_equal(ev.name, "python");
    assert_int_equal(ev.rss_bytes, (61234567ULL + 1024 + 8) * 1024);
    klog_event_free(&ev);

    /* A name with spaces and parentheses. */
    assert_int_equal(klog_parse_message("Memory cgroup out of memory: Killed process 9100 "
                                        "(data loader (w)) total-vm:2000kB, anon-rss:1000kB",
                                        &ev),
                     KLOG_PARSE_EVENT);
    assert_string_equal(ev.name, "data loader (w)");
    assert_int_equal(ev.rss_bytes, 1000 * 1024);
    klog_event_free(&ev);

    /* Older kernels: "Kill process ... score N or sacrifice child", no RSS. */
    assert_int_equal(klog_parse_message("Out of memory: Kill process 9200 (java) score 901 or "
                                        "sacrifice child",
                                        &ev),
                     KLOG_PARSE_EVENT);
    assert_string_equal(ev.name, "java");
    assert_false(ev.valid & BIT(KLOG_S_RSS));
    klog_event_free(&ev);

    assert_int_equal(klog_parse_message("oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),"
                                        "cpuset=/,mems_allowed=0,global_oom,task_memcg=/,"
                                        "task=python,pid=9001,uid=1000",
                                        &ev),
                     KLOG_PARSE_EVENT);
    assert_int_equal(ev.pid, 9001);
    assert_string_equal(ev.name, "python");
    klog_event_free(&ev);
}

static void test_malformed_messages(void **state)
{
    static const char *const bad[] = {
        "NVRM: Xid (PCI:0000:3b:00): ",
        "NVRM: Xid (PCI:0000:3b",
        "NVRM: Xid (PCI:0000:3b:00",
        "NVRM: Xid PCI:0000:3b:00): 13",
        "NVRM: Xid (PCI:zzzz:3b:00): 13, pid=1",
        "NVRM: Xid (PCI:00:3b:00): 13",
        "NVRM: Xid (PCI:0000:3b:000): 13",
        "NVRM: Xid (PCI:0000:3b:00 GPU-I:x): 13",
        "NVRM: Xid (PCI:0000:3b:00): 99999999999, pid=1",
        "NVRM: Xid (PCI:0000:3b:00): -1",
        "NVRM: Xid ",
        "INFO: task nameonly blocked for more than 120 seconds.",
        "INFO: task :12 blocked for more than 120 seconds.",
        "INFO: task x:12",
        "Out of memory: Killed process abc (python)",
        "Out of memory: Killed process 12 python",
        "Killed process 12 (unterminated",
        "oom-kill:constraint=CONSTRAINT_NONE,pid=12",
        "oom-kill:task=x,pid=y",
    };
    struct klog_event ev;

    (void)state;
    for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
        enum klog_parse_result r = klog_parse_message(bad[i], &ev);

        if (r != KLOG_PARSE_BAD)
            fail_msg("\"%s\": expected KLOG_PARSE_BAD, got %d", bad[i], (int)r);
        klog_event_free(&ev);
    }
    /* A garbage pid is left out, the rest is kept. */
    assert_int_equal(klog_parse_message("NVRM: Xid (PCI:0000:3b:00): 13, pid=12x, name=a, m", &ev),
                     KLOG_PARSE_EVENT);
    assert_false(ev.valid & BIT(KLOG_S_PID));
    assert_string_equal(ev.name, "a");
    klog_event_free(&ev);
}

static void test_pci_spellings(void **state)
{
    char out[24];

    (void)state;
    assert_int_equal(klog_parse_pci("PCI:0000:3B:00)", out, sizeof(out)), 14);
    assert_string_equal(out, "0000:3b:00");
    assert_int_equal(klog_parse_pci("0000:3b:00.1: x", out, sizeof(out)), 12);
    assert_string_equal(out, "0000:3b:00");
    assert_int_equal(klog_parse_pci("00000000:3b:00.0", out, sizeof(out)), 16);
    assert_string_equal(out, "00000000:3b:00");
    assert_int_equal(klog_parse_pci("000:3b:00", out, sizeof(out)), 0);
    assert_int_equal(klog_parse_pci("0000:3b:0", out, sizeof(out)), 0);
    assert_int_equal(klog_parse_pci("", out, sizeof(out)), 0);
    assert_true(driver_pci_same("0000:3b:00", "00000000:3B:00.0"));
    assert_true(driver_pci_same("PCI:0000:3b:00", "0000:3b:00.0"));
    assert_false(driver_pci_same("0000:3b:00.1", "0000:3b:00.0"));
    assert_false(driver_pci_same("0000:3b:00", "0000:3c:00"));
    assert_false(driver_pci_same("0001:3b:00", "0000:3b:00"));
    assert_false(driver_pci_same("garbage", "0000:3b:00"));
    assert_false(driver_pci_same(NULL, "0000:3b:00"));
}

/* Feeds every line of a fixture log to the parser. */
static void feed_fixture(struct klog_parser *p, const char *name, bool kmsg)
{
    char *path = xasprintf("%s/klog/%s", TEST_FIXTURES, name), *text = NULL;
    ssize_t n = file_slurp_at(AT_FDCWD, path, 1u << 20, &text);
    const char *line = text;

    assert_true(n > 0);
    while (line < text + n) {
        const char *nl = memchr(line, '\n', (size_t)(text + n - line));
        size_t len = nl ? (size_t)(nl - line) : (size_t)(text + n - line);

        if (len > 0 && !(kmsg && line[0] == ' ')) {
            if (kmsg)
                klog_feed_kmsg(p, line, len);
            else
                klog_feed_syslog(p, line, len);
        }
        line += len + 1;
    }
    free(text);
    free(path);
}

static void parse_fixture(const char *name, struct driver_info *d, struct klog_parser *p)
{
    struct klog_parse_opts o = { 0, 0, NOW_MS };

    memset(d, 0, sizeof(*d));
    klog_parser_init(p, &o);
    feed_fixture(p, name, false);
    klog_parser_finish(p, d);
}

static void assert_xid(const struct klog_event *e, int xid, const char *pci, int pid,
                       const char *name)
{
    assert_int_equal(e->kind, KLOG_XID);
    assert_int_equal(e->xid, xid);
    assert_string_equal(e->pci, pci);
    if (pid < 0) {
        assert_false(e->valid & BIT(KLOG_S_PID));
    } else {
        assert_true(e->valid & BIT(KLOG_S_PID));
        assert_int_equal(e->pid, pid);
    }
    if (name == NULL)
        assert_null(e->name);
    else
        assert_string_equal(e->name, name);
}

static void test_fixture_r570(void **state)
{
    struct driver_info d;
    struct klog_parser p;
    const struct klog_event *e;

    (void)state;
    parse_fixture("gen-570.log", &d, &p);
    assert_int_equal(d.n_events, 11);
    assert_int_equal(d.klog_records, 14);
    assert_int_equal(d.klog_unparsed, 0);
    assert_int_equal(p.malformed, 0);
    e = d.events;
    assert_int_equal(e[0].kind, KLOG_OTHER_NVRM);
    assert_non_null(strstr(e[0].message, "570.124.06"));
    assert_int_equal(e[0].time_ms, utc_ms(2026, 12, 1, 10, 25, 3));
    assert_int_equal(e[0].uptime_us, 5234567);
    assert_int_equal(e[1].kind, KLOG_GPU_UUID);
    assert_xid(&e[2], 48, "0000:3b:00", 4121, "python3");
    /* The UUID line before it maps the PCI address. */
    assert_string_equal(e[2].uuid, "GPU-5a8e6c4e-1c4f-4b1d-9c6e-2f9d3a7b8c01");
    assert_int_equal(e[2].time_ms, utc_ms(2026, 12, 1, 10, 31, 10));
    assert_int_equal(e[2].uptime_us, 372000003);
    assert_xid(&e[3], 45, "0000:3b:00", 4121, "python3");
    assert_int_equal(e[3].caused_by_xid, 48);
    assert_xid(&e[4], 13, "0000:86:00", 5123, "train.py");
    assert_null(e[4].uuid);
    assert_int_equal(e[4].gpu_instance, 1);
    assert_xid(&e[5], 31, "0000:86:00", 5200, "infer");
    assert_int_equal(e[5].gpu_instance, 2);
    assert_int_equal(e[6].kind, KLOG_GPU_UUID);
    assert_xid(&e[7], 79, "0000:2b:00", -1, NULL);
    assert_string_equal(e[7].uuid, "GPU-0b11d014-1685-04bd-26ed-5fc0bc1c44ae");
    assert_int_equal(e[8].kind, KLOG_FALLEN_OFF_BUS);
    assert_string_equal(e[8].uuid, "GPU-0b11d014-1685-04bd-26ed-5fc0bc1c44ae");
    assert_xid(&e[9], 119, "0000:3b:00", 4121, "python3");
    assert_non_null(strstr(e[9].message, "GSP_RM_CONTROL"));
    assert_xid(&e[10], 154, "0000:3b:00", -1, NULL);
    assert_int_equal(e[10].recovery_action, KLOG_RA_GPU_RESET);
    assert_int_equal(e[10].recovery_action_prev, KLOG_RA_NONE);
    driver_info_free(&d);
    klog_parser_release(&p);
}

static void test_fixture_r535(void **state)
{
    struct driver_info d;
    struct klog_parser p;
    const struct klog_event *e;

    (void)state;
    parse_fixture("gen-535.log", &d, &p);
    assert_int_equal(d.n_events, 6);
    e = d.events;
    assert_int_equal(e[0].kind, KLOG_GPU_UUID);
    assert_xid(&e[1], 79, "0000:07:00", -1, NULL);
    assert_string_equal(e[1].uuid, "GPU-2c6f7b31-8a4e-11ee-b9d1-0242ac120002");
    /* RFC 3339 stamp with an offset: 08:00:01.223 at +01:00 is 07:00:01.223 UTC. */
    assert_int_equal(e[1].time_ms, utc_ms(2024, 3, 14, 7, 0, 1) + 223);
    assert_xid(&e[2], 94, "0000:0f:00", 2211, "python");
    assert_xid(&e[3], 63, "0000:0f:00", -1, NULL);
    assert_xid(&e[4], 95, "0000:0f:00", -1, NULL);
    assert_int_equal(e[4].gpu_instance, 3);
    assert_int_equal(e[4].compute_instance, 1);
    assert_int_equal(e[5].kind, KLOG_OTHER_NVRM);
    assert_non_null(strstr(e[5].message, "API mismatch"));
    assert_int_equal(e[5].time_ms, utc_ms(2024, 3, 14, 8, 7, 0));
    driver_info_free(&d);
    klog_parser_release(&p);
}

static void test_fixture_r470_hung_and_oom(void **state)
{
    struct driver_info d;
    struct klog_parser p;
    const struct klog_event *e;

    (void)state;
    parse_fixture("gen-470.log", &d, &p);
    e = d.events;
    assert_int_equal(d.n_events, 8);
    assert_xid(&e[0], 63, "0000:10:1c", 1896, NULL);
    assert_int_equal(e[0].uptime_us, 8123456789);
    /* June is in the past at NOW (December): this year. */
    assert_int_equal(e[0].time_ms, utc_ms(2026, 6, 12, 3, 14, 15));
    assert_xid(&e[1], 13, "0000:10:1c", 2004, NULL);
    assert_xid(&e[2], 43, "0000:10:1c", -1, NULL);
    assert_string_equal(e[2].message, "Ch 00000010");
    /* nvidia-smi itself hung; python hung inside the driver; jbd2 is not the driver's. */
    assert_int_equal(e[3].kind, KLOG_HUNG_TASK);
    assert_string_equal(e[3].name, "nvidia-smi");
    assert_int_equal(e[3].pid, 7711);
    assert_int_equal(e[3].blocked_s, 120);
    assert_int_equal(e[4].kind, KLOG_HUNG_TASK);
    assert_string_equal(e[4].name, "python");
    assert_int_equal(e[4].blocked_s, 240);
    /* "oom-kill:" and "Killed process" are one kill. */
    assert_int_equal(e[5].kind, KLOG_OOM_KILL);
    assert_int_equal(e[5].pid, 9001);
    assert_string_equal(e[5].name, "python");
    assert_int_equal(e[5].rss_bytes, (61234567ULL + 1024) * 1024);
    assert_true(strstr(e[5].message, "Killed process 9001") != NULL);
    assert_int_equal(e[6].pid, 9100);
    assert_string_equal(e[6].name, "data loader (w)");
    assert_int_equal(e[7].pid, 9200);
    assert_int_equal(e[7].rss_bytes, 2048 * 1024);
    assert_int_equal(d.klog_events_total, 8);
    driver_info_free(&d);
    klog_parser_release(&p);
}

static void test_fixture_3xx(void **state)
{
    struct driver_info d;
    struct klog_parser p;
    const struct klog_event *e;

    (void)state;
    parse_fixture("gen-3xx.log", &d, &p);
    e = d.events;
    assert_int_equal(d.n_events, 5);
    assert_xid(&e[0], 3, "0000:01:00", -1, NULL);
    assert_xid(&e[1], 8, "0000:01:00", -1, NULL);
    assert_int_equal(e[2].kind, KLOG_FALLEN_OFF_BUS);
    assert_string_equal(e[2].pci, "0000:02:00");
    assert_int_equal(e[3].kind, KLOG_OTHER_NVRM);
    assert_null(e[3].pci);
    assert_int_equal(e[4].kind, KLOG_OTHER_NVRM);
    driver_info_free(&d);
    klog_parser_release(&p);
}

/* The Blackwell node: NVLink5 sub-codes, a 45 naming its cause, 154 moving through actions. */
static void test_fixture_blackwell(void **state)
{
    struct driver_info d;
    struct klog_parser p;
    const struct klog_event *e;

    (void)state;
    parse_fixture("gen-580-blackwell.log", &d, &p);
    e = d.events;
    assert_int_equal(d.n_events, 13);
    assert_int_equal(d.klog_unparsed, 0);
    assert_int_equal(e[0].kind, KLOG_OTHER_NVRM);
    assert_xid(&e[2], 145, "0018:01:00", -1, NULL);
    assert_string_equal(e[2].uuid, "GPU-7c2d4e19-0b3a-4f6e-9a1d-3e5f7a9b1c2d");
    assert_string_equal(e[2].nvlink_unit, "RLW_RXPIPE");
    assert_false(e[2].nvlink_fatal);
    assert_int_equal(e[2].nvlink_link, 13);
    assert_xid(&e[4], 149, "0019:01:00", -1, NULL);
    assert_string_equal(e[4].nvlink_unit, "NETIR");
    assert_int_equal(e[4].nvlink_link, -1);
    assert_xid(&e[5], 149, "0019:01:00", -1, NULL);
    assert_int_equal(e[5].nvlink_intrinfo, 0x025001c6);
    assert_true(e[5].nvlink_fatal);
    assert_xid(&e[6], 45, "0019:01:00", 1818990, "python3");
    assert_int_equal(e[6].caused_by_xid, 149);
    assert_int_equal(e[7].recovery_action, KLOG_RA_DRAIN_P2P);
    assert_int_equal(e[8].recovery_action_prev, KLOG_RA_DRAIN_P2P);
    assert_int_equal(e[8].recovery_action, KLOG_RA_GPU_RESET);
    assert_xid(&e[9], 94, "0018:01:00", 2211, "python");
    assert_int_equal(e[9].gpu_instance, 2);
    assert_true(e[9].valid & BIT(KLOG_S_CONTAINMENT));
    assert_false(e[9].reset_required);
    assert_true(e[10].reset_required);
    assert_true(e[10].drain_reset_required);
    assert_int_equal(e[11].recovery_action, KLOG_RA_DRAIN_AND_RESET);
    assert_int_equal(e[12].recovery_action, KLOG_RA_NODE_REBOOT);
    assert_string_equal(e[12].uuid, "GPU-7c2d4e19-0b3a-4f6e-9a1d-3e5f7a9b1c2d");
    driver_info_free(&d);
    klog_parser_release(&p);
}

/*
 * Every code of the catalogue in every header format the drivers print (fixture README): each
 * line is an event of its code, the code has its catalogue row, and the format's process and MIG
 * fields are read. What the decoders read is the same in every format.
 */
static void test_fixture_every_code(void **state)
{
    /* per format: PCI, pid (-1: none), name, GPU instance and compute instance (-1: none) */
    static const struct {
        const char *pci;
        int pid;
        const char *name;
        int gi, ci;
    } fmt[] = {
        { "0000:3b:00", 4121, "python3", -1, -1 }, { "0000:3b:00", -1, NULL, -1, -1 },
        { "0000:3b:00", -1, NULL, -1, -1 },        { "0000:86:00", 5123, "train.py", 1, 0 },
        { "0000:86:00", -1, NULL, 2, -1 },         { "0000:86:00", -1, NULL, 3, 1 },
        { "0000:10:1c", 1896, NULL, -1, -1 },      { "0000:01:00", -1, NULL, -1, -1 },
    };
    struct klog_parse_opts o = { 4096, 0, NOW_MS };
    struct driver_info d = { 0 };
    struct klog_parser p;
    size_t n_codes;
    const struct xid_info *all = xid_all(&n_codes);

    (void)state;
    klog_parser_init(&p, &o);
    feed_fixture(&p, "xid-every-code.log", false);
    klog_parser_finish(&p, &d);
    assert_int_equal(d.klog_unparsed, 0);
    assert_int_equal(p.malformed, 0);
    assert_int_equal(d.n_events, n_codes * ARRAY_SIZE(fmt));
    for (size_t i = 0; i < d.n_events; i++) {
        const struct klog_event *e = &d.events[i];
        size_t f = i % ARRAY_SIZE(fmt);
        const struct xid_info *x = &all[i / ARRAY_SIZE(fmt)];

        assert_xid(e, x->code, fmt[f].pci, fmt[f].pid, fmt[f].name);
        assert_ptr_equal(xid_lookup(e->xid), x);
        assert_int_equal(!!(e->valid & BIT(KLOG_S_GPU_INSTANCE)), fmt[f].gi >= 0);
        assert_int_equal(!!(e->valid & BIT(KLOG_S_COMPUTE_INSTANCE)), fmt[f].ci >= 0);
        if (fmt[f].gi >= 0)
            assert_int_equal(e->gpu_instance, fmt[f].gi);
        if (fmt[f].ci >= 0)
            assert_int_equal(e->compute_instance, fmt[f].ci);
        assert_non_null(e->message);
        assert_int_equal(!!(e->valid & BIT(KLOG_S_RECOVERY)), x->code == 154);
        assert_int_equal(!!(e->valid & BIT(KLOG_S_NVLINK)),
                         x->code >= XID_NVLINK5_FIRST && x->code <= XID_NVLINK5_LAST);
        assert_int_equal(!!(e->valid & BIT(KLOG_S_CONTAINMENT)), x->code == 94 || x->code == 95);
        /* drivers print the cause only since 570.124: the first two MIG-less and MIG formats */
        assert_int_equal(!!(e->valid & BIT(KLOG_S_CAUSED_BY)),
                         x->code == 45 && (f == 0 || f == 1 || f == 3 || f == 4));
        if (e->valid & BIT(KLOG_S_NVLINK))
            assert_non_null(xid_nvlink5_lookup(e->xid, e->nvlink_unit, e->nvlink_intrinfo,
                                               e->nvlink_error_status));
    }
    driver_info_free(&d);
    klog_parser_release(&p);
}

static void test_fixture_garbage(void **state)
{
    struct driver_info d;
    struct klog_parser p;
    const struct klog_event *e;

    (void)state;
    parse_fixture("garbage.log", &d, &p);
    e = d.events;
    assert_int_equal(d.n_events, 4);
    assert_xid(&e[0], 31, "0000:3b:00", 77, "ok");
    /* A NUL ends the line: what is before it still parses. */
    assert_xid(&e[1], 13, "0000:3b:00", -1, NULL);
    /* A line longer than the parser's limit is cut, not dropped. */
    assert_int_equal(e[2].xid, 32);
    assert_true(strlen(e[2].message) < KLOG_MAX_LINE);
    /* The last line has no newline. */
    assert_xid(&e[3], 62, "0000:3b:00", 7, NULL);
    assert_int_equal(d.klog_unparsed, 6);
    assert_int_equal(p.malformed, 4);
    assert_int_equal(p.first_malformed_record, 1);
    assert_non_null(p.first_unparsed);
    assert_int_equal(p.first_unparsed_record, 2);
    driver_info_free(&d);
    klog_parser_release(&p);
}

static void test_kmsg_records(void **state)
{
    struct klog_parse_opts o = { 0, INT64_C(1796203140000), NOW_MS };
    struct driver_info d = { 0 };
    struct klog_parser p;
    const struct klog_event *e;

    (void)state;
    klog_parser_init(&p, &o);
    feed_fixture(&p, "kmsg/dev/kmsg", true);
    klog_parser_finish(&p, &d);
    e = d.events;
    assert_int_equal(d.n_events, 7);
    assert_int_equal(d.klog_records, 11);
    assert_int_equal(p.malformed, 2);
    assert_int_equal(d.klog_unparsed, 1);
    assert_int_equal(e[0].kind, KLOG_OTHER_NVRM);
    assert_non_null(strstr(e[0].message, "Open Kernel Module"));
    assert_xid(&e[2], 48, "0000:3b:00", 4121, "python3");
    assert_int_equal(e[2].uptime_us, 372000003);
    /* Boot time + kernel stamp. */
    assert_int_equal(e[2].time_ms, INT64_C(1796203140000) + 372000);
    assert_string_equal(e[2].uuid, "GPU-5a8e6c4e-1c4f-4b1d-9c6e-2f9d3a7b8c01");
    assert_int_equal(e[3].caused_by_xid, 48);
    /* The record written by a user process (facility 1) is not an event. */
    assert_xid(&e[4], 79, "0000:2b:00", -1, NULL);
    assert_int_equal(e[5].kind, KLOG_FALLEN_OFF_BUS);
    assert_int_equal(e[6].kind, KLOG_OOM_KILL);
    assert_int_equal(e[6].rss_bytes, 2048 * 1024);
    driver_info_free(&d);
    klog_parser_release(&p);

    /* Without a boot time, events have the kernel stamp only. */
    o.boot_time_ms = 0;
    klog_parser_init(&p, &o);
    {
        static const char rec[] = "4,1,5000000,-;NVRM: Xid (PCI:0000:01:00): 62, x\n X=1";

        assert_true(klog_feed_kmsg(&p, rec, strlen(rec)));
    }
    klog_parser_finish(&p, &d);
    assert_int_equal(d.n_events, 1);
    assert_int_equal(d.events[0].valid & (BIT(KLOG_S_TIME) | BIT(KLOG_S_UPTIME)),
                     BIT(KLOG_S_UPTIME));
    assert_int_equal(d.events[0].uptime_us, 5000000);
    driver_info_free(&d);
    klog_parser_release(&p);
}

static void test_syslog_stamps(void **state)
{
    struct klog_parse_opts o = { 0, 0, NOW_MS };
    struct driver_info d = { 0 };
    struct klog_parser p;
    static const char *const lines[] = {
        /* December 30 is after "now" (Dec 2): last year's. */
        "Dec 30 23:59:59 h kernel: NVRM: Xid (PCI:0000:01:00): 1, a",
        "2026-12-02T08:00:00,5+0100 h kernel: [ 1.5] NVRM: Xid (PCI:0000:01:00): 2, b",
        "2026-12-02T08:00:00-05:30 h kernel: NVRM: Xid (PCI:0000:01:00): 3, c",
        "Dec  2 08:59:59 h kernel:NVRM: Xid (PCI:0000:01:00): 4, d",
    };
    static const char *const bad[] = {
        "2026-13-02T08:00:00Z h kernel: x", /* month 13 */
        "2026-12-02T08:00:00 h kernel: x",  /* no zone */
        "Dec  2 25:00:00 h kernel: x",      /* hour 25 */
    };

    (void)state;
    klog_parser_init(&p, &o);
    for (size_t i = 0; i < ARRAY_SIZE(lines); i++)
        assert_true(klog_feed_syslog(&p, lines[i], strlen(lines[i])));
    for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
        assert_false(klog_feed_syslog(&p, bad[i], strlen(bad[i])));
    klog_parser_finish(&p, &d);
    assert_int_equal(d.n_events, 4);
    assert_int_equal(d.events[0].time_ms, utc_ms(2025, 12, 30, 23, 59, 59));
    assert_int_equal(d.events[1].time_ms, utc_ms(2026, 12, 2, 7, 0, 0) + 500);
    assert_int_equal(d.events[1].uptime_us, 1500000);
    assert_int_equal(d.events[2].time_ms, utc_ms(2026, 12, 2, 13, 30, 0));
    assert_int_equal(d.events[3].time_ms, utc_ms(2026, 12, 2, 8, 59, 59));
    assert_int_equal(p.malformed, 3);
    driver_info_free(&d);
    klog_parser_release(&p);
}

static void assert_host_mem(const struct klog_event *e, enum klog_mem_source source, uint32_t count,
                            const char *dimm)
{
    assert_int_equal(e->kind, KLOG_HOST_MEM);
    assert_true(e->valid & BIT(KLOG_S_HOST_MEM));
    assert_int_equal(e->mem_source, source);
    assert_int_equal(e->mem_count, count);
    if (dimm == NULL) {
        assert_false(e->valid & BIT(KLOG_S_DIMM));
        assert_null(e->dimm);
    } else {
        assert_true(e->valid & BIT(KLOG_S_DIMM));
        assert_string_equal(e->dimm, dimm);
    }
}

/* EDAC, firmware (APEI) records, machine check and memory failure lines of one host. */
static void test_fixture_host_memory(void **state)
{
    struct driver_info d;
    struct klog_parser p;
    const struct klog_event *e;

    (void)state;
    parse_fixture("host-memory.log", &d, &p);
    e = d.events;
    assert_int_equal(d.n_events, 10);
    assert_xid(&e[0], 13, "0000:3b:00", 4121, "python3");
    assert_host_mem(&e[1], KLOG_MEM_EDAC, 1, "CPU_SrcID#1_MC#0_Chan#0_DIMM#0");
    assert_true(str_starts(e[1].message, "EDAC MC1: 1 UE memory read error on "));
    assert_int_equal(e[1].time_ms, utc_ms(2026, 12, 1, 9, 30, 0));
    /* No message between the type and "on"; the count is the line's. */
    assert_host_mem(&e[2], KLOG_MEM_EDAC, 2, "DIMM_B2");
    /* Kernels before 3.6: no count, the label in quotes. */
    assert_host_mem(&e[3], KLOG_MEM_EDAC, 1, "DIMM_C3");
    /* A firmware record with two memory sections: the first names its DIMM. */
    assert_host_mem(&e[4], KLOG_MEM_APEI, 1, "NODE 4 CPU1_DIMM_A1");
    assert_string_equal(e[4].message, "APEI memory error, severity recoverable");
    assert_int_equal(e[4].uptime_us, 7200000500);
    assert_host_mem(&e[5], KLOG_MEM_APEI, 1, NULL);
    assert_string_equal(e[5].message, "APEI memory error, severity fatal");
    assert_host_mem(&e[6], KLOG_MEM_MCE, 1, NULL);
    assert_string_equal(e[6].message,
                        "Uncorrected hardware memory error in user-access at 8a398a400");
    /* The process killed for reading it; "already hardware poisoned" repeats one. */
    assert_host_mem(&e[7], KLOG_MEM_MEMORY_FAILURE, 1, NULL);
    assert_true(e[7].valid & BIT(KLOG_S_PID));
    assert_int_equal(e[7].pid, 4121);
    assert_string_equal(e[7].name, "pt_main_thread");
    assert_host_mem(&e[8], KLOG_MEM_MEMORY_FAILURE, 1, NULL);
    assert_false(e[8].valid & BIT(KLOG_S_PID));
    /* A fatal record closed by the next kernel line; a user's forged line is not the kernel's,
     * "1 UE" without a DIMM and a count of 0 are not EDAC's error lines. */
    assert_host_mem(&e[9], KLOG_MEM_APEI, 1, NULL);
    assert_int_equal(e[9].time_ms, utc_ms(2026, 12, 1, 11, 10, 0));
    assert_true(d.valid & BIT(DRIVER_S_KLOG_MEM));
    assert_int_equal(d.klog_mem_uncorrected, 10);
    /* EDAC's 1 + 3, and the firmware's corrected record; the "info" record counts as neither. */
    assert_int_equal(d.klog_mem_corrected, 5);
    assert_int_equal(d.klog_unparsed, 0);
    driver_info_free(&d);
    klog_parser_release(&p);
}

static void test_host_memory_lines(void **state)
{
    struct klog_event ev;
    struct ghes_line g;
    uint64_t count;
    char long_label[300], line[400];

    (void)state;
    /* A process name with a colon: the pid follows the last one. */
    assert_int_equal(klog_parse_hostmem("Memory failure: 0x1: Sending SIGBUS to a:b:77 due to "
                                        "hardware memory corruption",
                                        &ev, &count, &g),
                     HOSTMEM_UNCORRECTED);
    assert_int_equal(ev.pid, 77);
    assert_string_equal(ev.name, "a:b");
    klog_event_free(&ev);
    /* The firmware-first path's own SIGBUS lines. */
    assert_int_equal(klog_parse_hostmem("GHES: 0x8a398a: Sending SIGBUS to python:9 due to "
                                        "hardware memory corruption",
                                        &ev, &count, &g),
                     HOSTMEM_UNCORRECTED);
    assert_int_equal(ev.mem_source, KLOG_MEM_APEI);
    assert_int_equal(ev.pid, 9);
    klog_event_free(&ev);
    assert_int_equal(klog_parse_hostmem("{7}[Hardware Error]: 0x8a398a: Sending SIGBUS to "
                                        "python:10 due to hardware memory corruption",
                                        &ev, &count, &g),
                     HOSTMEM_UNCORRECTED);
    assert_int_equal(ev.pid, 10);
    klog_event_free(&ev);
    /* A pid that is not a number is left out, the error is not. */
    assert_int_equal(klog_parse_hostmem("Memory failure: 0x1: Sending SIGBUS to x:y1 due to "
                                        "hardware memory corruption",
                                        &ev, &count, &g),
                     HOSTMEM_UNCORRECTED);
    assert_false(ev.valid & BIT(KLOG_S_PID));
    klog_event_free(&ev);
    assert_int_equal(klog_parse_hostmem("EDAC MC3: 12 CE on DIMM_A1 (x)", &ev, &count, &g),
                     HOSTMEM_CORRECTED);
    assert_int_equal(count, 12);
    klog_event_free(&ev);
    /* A label longer than any board's is cut. */
    memset(long_label, 'L', sizeof(long_label) - 1);
    long_label[sizeof(long_label) - 1] = '\0';
    snprintf(line, sizeof(line), "EDAC MC0: 1 UE on %s (x)", long_label);
    assert_int_equal(klog_parse_hostmem(line, &ev, &count, &g), HOSTMEM_UNCORRECTED);
    assert_int_equal(strlen(ev.dimm), HOSTMEM_DIMM_MAX);
    klog_event_free(&ev);
    assert_int_equal(
        klog_parse_hostmem("{12}[Hardware Error]:  Error 3, type: corrected", &ev, &count, &g),
        HOSTMEM_GHES);
    assert_int_equal(g.record, 12);
    assert_int_equal(g.what, GHES_SECTION);
    assert_int_equal(g.severity, GHES_SEV_CORRECTED);
    klog_event_free(&ev);
    /* Not the host's memory: an Xid, a record without its number, a partial EDAC line. */
    assert_int_equal(klog_parse_hostmem("NVRM: Xid (PCI:0000:01:00): 48, DBE", &ev, &count, &g),
                     HOSTMEM_NONE);
    klog_event_free(&ev);
    assert_int_equal(
        klog_parse_hostmem("{}[Hardware Error]: event severity: fatal", &ev, &count, &g),
        HOSTMEM_NONE);
    klog_event_free(&ev);
    assert_int_equal(klog_parse_hostmem("EDAC MC0: 1 XE on D", &ev, &count, &g), HOSTMEM_NONE);
    klog_event_free(&ev);
}

/* 100 lines: an Xid 79 every 25th, EDAC's uncorrectable errors on DIMM_<line> between. */
static void feed_flood(struct klog_parser *p, struct driver_info *d, size_t max_events)
{
    struct klog_parse_opts o = { max_events, 0, NOW_MS };

    memset(d, 0, sizeof(*d));
    klog_parser_init(p, &o);
    for (int i = 1; i <= 100; i++) {
        char msg[96];

        if (i % 25 == 0)
            snprintf(msg, sizeof(msg),
                     "NVRM: Xid (PCI:0000:01:00): 79, GPU has fallen off the bus.");
        else
            snprintf(msg, sizeof(msg), "EDAC MC0: 1 UE on DIMM_%d (x)", i);
        klog_feed_message(p, msg, true, i, false, 0);
    }
    klog_parser_finish(p, d);
}

/* A failing DIMM's flood of lines keeps its most recent errors and never the GPUs' events out. */
static void test_host_memory_bound(void **state)
{
    struct driver_info d;
    struct klog_parser p;
    size_t host = 0, xids = 0;

    (void)state;
    /* A ring of 16 holds fewer than the 32 host memory events allowed: the ring decides. */
    feed_flood(&p, &d, 16);
    assert_int_equal(d.n_events, 16);
    assert_int_equal(d.events[15].kind, KLOG_XID);
    assert_string_equal(d.events[14].message, "EDAC MC0: 1 UE on DIMM_99 (x)");
    assert_int_equal(d.klog_mem_uncorrected, 96);
    driver_info_free(&d);
    klog_parser_release(&p);

    feed_flood(&p, &d, 256);
    for (size_t i = 0; i < d.n_events; i++) {
        host += d.events[i].kind == KLOG_HOST_MEM;
        xids += d.events[i].kind == KLOG_XID;
    }
    assert_int_equal(xids, 4);
    assert_int_equal(host, KLOG_MAX_HOST_MEM);
    assert_int_equal(d.n_events, 4 + KLOG_MAX_HOST_MEM);
    assert_int_equal(d.klog_events_dropped, 96 - KLOG_MAX_HOST_MEM);
    /* The most recent ones, in order: the last host error is the 99th line, the first kept the
     * 67th (lines 67..99 less the Xid at 75); the Xid of line 100 comes last. */
    assert_int_equal(d.events[d.n_events - 1].kind, KLOG_XID);
    assert_string_equal(d.events[d.n_events - 2].message, "EDAC MC0: 1 UE on DIMM_99 (x)");
    for (size_t i = 0; i < d.n_events; i++) {
        if (d.events[i].kind == KLOG_HOST_MEM) {
            assert_string_equal(d.events[i].dimm, "DIMM_67");
            break;
        }
    }
    for (size_t i = 1; i < d.n_events; i++)
        assert_true(d.events[i - 1].time_ms < d.events[i].time_ms);
    driver_info_free(&d);
    klog_parser_release(&p);
}

static void test_bound_keeps_most_recent(void **state)
{
    struct klog_parse_opts o = { 3, 0, NOW_MS };
    struct driver_info d = { 0 };
    struct klog_parser p;

    (void)state;
    klog_parser_init(&p, &o);
    for (int i = 1; i <= 10; i++) {
        char msg[64];

        snprintf(msg, sizeof(msg), "NVRM: Xid (PCI:0000:01:00): %d, m", i);
        klog_feed_message(&p, msg, true, i, false, 0);
    }
    klog_parser_finish(&p, &d);
    assert_int_equal(d.n_events, 3);
    assert_int_equal(d.klog_events_total, 10);
    assert_int_equal(d.klog_events_dropped, 7);
    assert_int_equal(d.events[0].xid, 8);
    assert_int_equal(d.events[2].xid, 10);
    assert_int_equal(d.events[2].time_ms, 10);
    assert_true(d.valid & BIT(DRIVER_S_KLOG));
    driver_info_free(&d);
    klog_parser_release(&p);
}

static void test_hung_task_without_end(void **state)
{
    struct klog_parse_opts o = { 0, 0, NOW_MS };
    struct driver_info d = { 0 };
    struct klog_parser p;

    (void)state;
    /* A trace cut off by the end of the log still counts when it named the driver. */
    klog_parser_init(&p, &o);
    klog_feed_message(&p, "INFO: task python:12 blocked for more than 60 seconds.", false, 0, false,
                      0);
    klog_feed_message(&p, " uvm_va_space_destroy+0x10/0x20 [nvidia_uvm]", false, 0, false, 0);
    klog_parser_finish(&p, &d);
    assert_int_equal(d.n_events, 1);
    assert_int_equal(d.events[0].kind, KLOG_HUNG_TASK);
    driver_info_free(&d);
    klog_parser_release(&p);

    /* A long trace that never mentions the driver is not kept. */
    klog_parser_init(&p, &o);
    klog_feed_message(&p, "INFO: task dd:13 blocked for more than 60 seconds.", false, 0, false, 0);
    for (int i = 0; i < 100; i++)
        klog_feed_message(&p, " io_schedule+0x16/0x40", false, 0, false, 0);
    klog_feed_message(&p, " nvidia_ioctl+0x1/0x2 [nvidia]", false, 0, false, 0);
    klog_parser_finish(&p, &d);
    assert_int_equal(d.n_events, 0);
    driver_info_free(&d);
    klog_parser_release(&p);
}

/* Every prefix of every fixture line, and pseudo-random bytes, through every entry point: the
 * sanitizer build checks nothing reads or writes out of bounds. */
static void test_truncations_and_noise(void **state)
{
    static const char *const files[] = { "gen-570.log", "gen-535.log", "gen-470.log",
                                         "gen-3xx.log", "garbage.log", "kmsg/dev/kmsg" };
    /* Mostly the characters the formats are made of. */
    static const char alphabet[] = "NVRM: Xid (PCI:0000:3b:00) GPU-I:1,pid=name=;45 caused by "
                                   "previous \n[]0123456789.Killed process (x)oom-kill:task=INFO: "
                                   "task blocked for more than Dec  2 09:00:00 kernel: "
                                   "2026-12-02T\x01\xff";
    struct klog_parse_opts o = { 4, INT64_C(1796203140000), NOW_MS };
    struct driver_info d = { 0 };
    struct klog_parser p;
    uint32_t seed = 12345;

    (void)state;
    klog_parser_init(&p, &o);
    for (size_t f = 0; f < ARRAY_SIZE(files); f++) {
        char *path = xasprintf("%s/klog/%s", TEST_FIXTURES, files[f]), *text = NULL;
        ssize_t n = file_slurp_at(AT_FDCWD, path, 1u << 20, &text);

        assert_true(n > 0);
        for (const char *line = text; line < text + n;) {
            const char *nl = memchr(line, '\n', (size_t)(text + n - line));
            size_t len = nl ? (size_t)(nl - line) : (size_t)(text + n - line);

            for (size_t cut = 0; cut <= len && cut < 600; cut++) {
                char *piece = xstrndup(line, cut);
                struct klog_event ev;

                klog_feed_kmsg(&p, piece, cut);
                klog_feed_syslog(&p, piece, cut);
                klog_parse_message(piece, &ev);
                klog_event_free(&ev);
                free(piece);
            }
            line += len + 1;
        }
        free(text);
        free(path);
    }
    for (int i = 0; i < 20000; i++) {
        char buf[96];
        size_t len = 0;

        for (; len < sizeof(buf) - 1; len++) {
            seed = seed * 1103515245u + 12345u;
            buf[len] = alphabet[(seed >> 16) % (sizeof(alphabet) - 1)];
        }
        buf[len] = '\0';
        {
            struct klog_event ev;

            klog_feed_kmsg(&p, buf, len);
            klog_feed_syslog(&p, buf, len);
            klog_parse_message(buf, &ev);
            klog_event_free(&ev);
        }
    }
    klog_parser_finish(&p, &d);
    assert_true(d.n_events <= 4);
    assert_true(d.klog_events_total >= d.n_events);
    driver_info_free(&d);
    klog_parser_release(&p);
}

/* NVSwitch errors: "nvidia-nvswitchN: SXid (PCI:ADDR): NUMBER, Fatal|Non-fatal, [Link L] TEXT";
 * the lines that follow one (Severity ..., Data {...}) are not events of their own. */
static void test_sxid(void **state)
{
    static const struct {
        const char *line;
        enum klog_parse_result r;
        const char *pci;
        int32_t sxid;
        bool fatal;
        int32_t link; /* -1: none */
        const char *message;
    } cases[] = {
        { "nvidia-nvswitch3: SXid (PCI:0000:c3:00.0): 12028, Non-fatal, Link 37 egress "
          "non-posted PRIV error (First)",
          KLOG_PARSE_EVENT, "0000:c3:00", 12028, false, 37,
          "Link 37 egress non-posted PRIV error (First)" },
        { "nvidia-nvswitch0: SXid (PCI:0000:07:00.0): 24007, Fatal, Link 36 sourcetrack timeout "
          "error",
          KLOG_PARSE_EVENT, "0000:07:00", 24007, true, 36, "Link 36 sourcetrack timeout error" },
        /* the number is printed %05d; a link alone; no link at all */
        { "nvidia-nvswitch12: SXid (PCI:0001:C5:00.0): 20009, Non-fatal, Link 04", KLOG_PARSE_EVENT,
          "0001:c5:00", 20009, false, 4, "Link 04" },
        { "nvidia-nvswitch0: SXid (PCI:0000:00:00.0): 11001, Fatal, ingress invalid command",
          KLOG_PARSE_EVENT, "0000:00:00", 11001, true, -1, "ingress invalid command" },
        { "nvidia-nvswitch0: SXid (PCI:0000:00:00.0): 01234, Nonfatal, x", KLOG_PARSE_EVENT,
          "0000:00:00", 1234, false, -1, "x" },
        /* corrected by the switch: neither fatal nor an error of the non-fatal kind */
        { "nvidia-nvswitch2: SXid (PCI:0000:c7:00.0): 19049, Correctable, Link 07 NCISOC HDR ECC "
          "limit",
          KLOG_PARSE_EVENT, "0000:c7:00", 19049, false, 7, "Link 07 NCISOC HDR ECC limit" },
        /* a PRI error: no link, the instance and chiplet instead */
        { "nvidia-nvswitch2: SXid (PCI:0000:c7:00.0): 10001, Fatal, PRI error, instance=0, "
          "chiplet=1",
          KLOG_PARSE_EVENT, "0000:c7:00", 10001, true, -1, "PRI error, instance=0, chiplet=1" },
        /* the companion lines */
        { "nvidia-nvswitch3: SXid (PCI:0000:c3:00.0): 12028, Severity 0 Engine instance 37 "
          "Sub-engine instance 00",
          KLOG_PARSE_NONE, NULL, 0, false, -1, NULL },
        { "nvidia-nvswitch3: SXid (PCI:0000:c3:00.0): 12028, Data {0x00000000, 0x00000000, "
          "0x00000000}",
          KLOG_PARSE_NONE, NULL, 0, false, -1, NULL },
        /* malformed */
        { "nvidia-nvswitch3: SXid (PCI:zz): 1, Fatal", KLOG_PARSE_BAD, NULL, 0, false, -1, NULL },
        { "nvidia-nvswitch3: SXid (PCI:0000:c3:00.0): x, Fatal", KLOG_PARSE_BAD, NULL, 0, false, -1,
          NULL },
        { "nvidia-nvswitch3: SXid (PCI:0000:c3:00.0): 12028 Fatal", KLOG_PARSE_BAD, NULL, 0, false,
          -1, NULL },
        { "nvidia-nvswitch3: SXid (PCI:0000:c3:00.0): 12028, Sometimes", KLOG_PARSE_BAD, NULL, 0,
          false, -1, NULL },
        { "nvidia-nvswitch3: SXid (PCI:0000:c3:00.0): 99999999999, Fatal", KLOG_PARSE_BAD, NULL, 0,
          false, -1, NULL },
        /* not an NVSwitch's SXid line */
        { "nvidia-nvswitch3: probe of 0000:c3:00.0 succeeded", KLOG_PARSE_NONE, NULL, 0, false, -1,
          NULL },
        { "nvidia-nvswitchX: SXid (PCI:0000:c3:00.0): 12028, Fatal", KLOG_PARSE_NONE, NULL, 0,
          false, -1, NULL },
        { "myapp: SXid (PCI:0000:c3:00.0): 12028, Fatal", KLOG_PARSE_NONE, NULL, 0, false, -1,
          NULL },
    };

    (void)state;
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        struct klog_event ev;
        enum klog_parse_result r = klog_parse_message(cases[i].line, &ev);

        if (r != cases[i].r)
            fail_msg("case %zu \"%s\": result %d", i, cases[i].line, (int)r);
        if (r == KLOG_PARSE_EVENT) {
            assert_int_equal(ev.kind, KLOG_SXID);
            assert_string_equal(ev.pci, cases[i].pci);
            assert_true(ev.valid & BIT(KLOG_S_SXID));
            assert_false(ev.valid & BIT(KLOG_S_XID));
            assert_int_equal(ev.sxid, cases[i].sxid);
            assert_int_equal(ev.sxid_fatal, cases[i].fatal);
            assert_int_equal(ev.sxid_correctable, strstr(cases[i].line, "Correctable") != NULL);
            if (cases[i].link < 0) {
                assert_false(ev.valid & BIT(KLOG_S_SXID_LINK));
            } else {
                assert_true(ev.valid & BIT(KLOG_S_SXID_LINK));
                assert_int_equal(ev.sxid_link, cases[i].link);
            }
            assert_string_equal(ev.message, cases[i].message);
        }
        klog_event_free(&ev);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_xid_current_format),
        cmocka_unit_test(test_xid_mig_variants),
        cmocka_unit_test(test_xid_older_formats),
        cmocka_unit_test(test_xid_recovery_action),
        cmocka_unit_test(test_xid_nvlink5),
        cmocka_unit_test(test_xid_caused_by),
        cmocka_unit_test(test_xid_containment),
        cmocka_unit_test(test_companion_lines),
        cmocka_unit_test(test_uuid_map_bounded),
        cmocka_unit_test(test_hung_and_oom_lines),
        cmocka_unit_test(test_malformed_messages),
        cmocka_unit_test(test_pci_spellings),
        cmocka_unit_test(test_fixture_r570),
        cmocka_unit_test(test_fixture_r535),
        cmocka_unit_test(test_fixture_r470_hung_and_oom),
        cmocka_unit_test(test_fixture_3xx),
        cmocka_unit_test(test_fixture_blackwell),
        cmocka_unit_test(test_fixture_every_code),
        cmocka_unit_test(test_fixture_garbage),
        cmocka_unit_test(test_kmsg_records),
        cmocka_unit_test(test_syslog_stamps),
        cmocka_unit_test(test_bound_keeps_most_recent),
        cmocka_unit_test(test_hung_task_without_end),
        cmocka_unit_test(test_truncations_and_noise),
        cmocka_unit_test(test_sxid),
        cmocka_unit_test(test_fixture_host_memory),
        cmocka_unit_test(test_host_memory_lines),
        cmocka_unit_test(test_host_memory_bound),
    };

    return cmocka_run_group_tests(tests, setup_tz, NULL);
}
