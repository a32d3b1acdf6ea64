/*
 * NVSwitches and Fabric Manager: the parsers (collect/fabric-parse.c: dpkg's status database,
 * Debian versions, the Fabric Manager log, process names, the NVSwitch driver's information file
 * and device entries), the fabric collector on the healthy HGX tree of tests/fixtures/fabric and
 * on copies changed for each story (stopped, not installed, another version, errors in the log,
 * hostile text, a FIFO in the log's place, switches the NVSwitch driver did not take), and the
 * section's JSON round trip, old sections without the driver's view included.
 */
#include "collect/collect.h"
#include "collect/fabric-parse.h"
#include "data/sxid.h"
#include "util/xalloc.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#define HGX TEST_FIXTURES "/fabric/hgx"

static void test_dpkg(void **state)
{
    static const struct {
        const char *text, *package, *version;
    } cases[] = {
        { "Package: nvidia-fabricmanager-550\nStatus: install ok installed\nVersion: "
          "550.54.15-1\n",
          "nvidia-fabricmanager-550", "550.54.15-1" },
        /* the unversioned name (CUDA repository's meta package), fields in another order */
        { "Version: 535.161.08-1\nPackage: nvidia-fabricmanager\nStatus: install ok installed\n",
          "nvidia-fabricmanager", "535.161.08-1" },
        /* removed, config files left: not installed */
        { "Package: nvidia-fabricmanager-545\nStatus: deinstall ok config-files\nVersion: "
          "545.23.08-1\n",
          NULL, NULL },
        /* the development package and look-alikes are not Fabric Manager */
        { "Package: nvidia-fabricmanager-dev-550\nStatus: install ok installed\nVersion: "
          "550.54.15-1\n\nPackage: nvidia-fabricmanagerx\nStatus: install ok installed\n"
          "Version: 1\n\nPackage: libnvidia-nscq-550\nStatus: install ok installed\nVersion: "
          "550.54.15-1\n",
          NULL, NULL },
        /* the second stanza is the one; a stanza without a version is skipped */
        { "Package: nvidia-fabricmanager-550\nStatus: install ok installed\n\n\nPackage: "
          "nvidia-fabricmanager-560\nStatus: install ok installed\nVersion: 560.35.03-1\n",
          "nvidia-fabricmanager-560", "560.35.03-1" },
        /* unpacked but not configured: not "installed" */
        { "Package: nvidia-fabricmanager-550\nStatus: install ok unpacked\nVersion: 550-1\n", NULL,
          NULL },
        { "", NULL, NULL },
        { "\n\n\n", NULL, NULL },
        { "Package:\nStatus:\nVersion:\n", NULL, NULL },
    };

    (void)state;
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        char *pkg = (char *)"unset", *ver = (char *)"unset";
        int r = fabric_parse_dpkg(cases[i].text, &pkg, &ver);

        if (cases[i].package == NULL) {
            if (r != 0 || pkg != NULL || ver != NULL)
                fail_msg("case %zu: found %s %s", i, pkg ? pkg : "-", ver ? ver : "-");
            continue;
        }
        if (r != 1)
            fail_msg("case %zu: not found", i);
        assert_string_equal(pkg, cases[i].package);
        assert_string_equal(ver, cases[i].version);
        free(pkg);
        free(ver);
    }
}

static void test_upstream_version(void **state)
{
    static const char *const cases[][2] = {
        { "550.54.15-1", "550.54.15" },     { "1:550.54.15-1", "550.54.15" },
        { "550.54.15", "550.54.15" },       { "560.35.03-1ubuntu1", "560.35.03" },
        { "550.54.15-0-1", "550.54.15-0" }, { "x:550-1", "x:550" },
    };

    (void)state;
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        char *v = fabric_upstream_version(cases[i][0]);

        assert_string_equal(v, cases[i][1]);
        free(v);
    }
}

static void test_log(void **state)
{
    struct fabric_log_scan s;

    (void)state;
    /* errors before the last start are history */
    fabric_parse_log("[a] [INFO] [tid 1] Fabric Manager version 550.54.14 is running with the "
                     "following configuration options\n"
                     "[b] [ERROR] [tid 1] old error\n"
                     "[c] [INFO] [tid 2] Fabric Manager version 550.54.15 is running with the "
                     "following configuration options\n"
                     "[d] [INFO] [tid 2] fine\n",
                     &s);
    assert_true(s.started);
    assert_string_equal(s.version, "550.54.15");
    assert_int_equal(s.errors, 0);
    assert_int_equal(s.n_lines, 0);
    fabric_log_scan_free(&s);

    /* seven errors after the start: all counted, the last five kept, oldest first */
    fabric_parse_log("Fabric Manager version 535.161.08 is running\n"
                     "[ERROR] e1\n[ERROR] e2\n[FATAL] e3\n[INFO] fine\n[ERROR] e4\n[ERROR] e5\n"
                     "[ERROR] e6\n[ERROR] e7",
                     &s);
    assert_true(s.started);
    assert_string_equal(s.version, "535.161.08");
    assert_int_equal(s.errors, 7);
    assert_int_equal(s.n_lines, 5);
    assert_string_equal(s.lines[0], "[FATAL] e3");
    assert_string_equal(s.lines[4], "[ERROR] e7");
    fabric_log_scan_free(&s);

    /* no start line: every error counts; a lower-case "error" word is not a level */
    fabric_parse_log("[ERROR] one\nan error in a message\n[WARNING] two\n", &s);
    assert_false(s.started);
    assert_null(s.version);
    assert_int_equal(s.errors, 1);
    assert_string_equal(s.lines[0], "[ERROR] one");
    fabric_log_scan_free(&s);

    /* a start line without a version still starts a run */
    fabric_parse_log("[ERROR] x\nFabric Manager version  is running\n", &s);
    assert_true(s.started);
    assert_null(s.version);
    assert_int_equal(s.errors, 0);
    fabric_log_scan_free(&s);

    fabric_parse_log("", &s);
    assert_false(s.started);
    assert_int_equal(s.errors, 0);
    fabric_log_scan_free(&s);
}

static void test_comm(void **state)
{
    (void)state;
    assert_true(fabric_is_fm_comm("nv-fabricmanage"));
    assert_true(fabric_is_fm_comm("nv-fabricmanager"));
    assert_false(fabric_is_fm_comm("nv-fabricmanag"));
    assert_false(fabric_is_fm_comm("nvidia-persiste"));
    assert_false(fabric_is_fm_comm(""));
}

/* /proc/driver/nvidia-nvswitch/devices/ADDR/information, as the driver prints it and not. */
static void test_nvswitch_info(void **state)
{
    static const struct {
        const char *text;
        enum fabric_nvswitch_info want;
        const char *version;
    } cases[] = {
        { "BIOS Version: 96.10.6d.00.01\n", FABRIC_NVSW_INFO_VERSION, "96.10.6d.00.01" },
        { "BIOS Version: 96.10.6d.00.01", FABRIC_NVSW_INFO_VERSION, "96.10.6d.00.01" },
        /* the first group is the upper 32 bits, printed %02llx: more digits can come */
        { "BIOS Version: 1a2b.00.00.00.00\n", FABRIC_NVSW_INFO_VERSION, "1a2b.00.00.00.00" },
        { "BIOS Version: ffffffff.ff.ff.ff.ff\n", FABRIC_NVSW_INFO_VERSION,
          "ffffffff.ff.ff.ff.ff" },
        { "BIOS Version: N/A\n", FABRIC_NVSW_INFO_NA, "" },
        { "BIOS Version: N/A", FABRIC_NVSW_INFO_NA, "" },
        /* not the driver's form: hostile or broken text is never kept */
        { "", FABRIC_NVSW_INFO_MALFORMED, "" },
        { "\n", FABRIC_NVSW_INFO_MALFORMED, "" },
        { "BIOS Version: \n", FABRIC_NVSW_INFO_MALFORMED, "" },
        { "BIOS Version:96.10.6d.00.01\n", FABRIC_NVSW_INFO_MALFORMED, "" },
        { "bios version: 96.10.6d.00.01\n", FABRIC_NVSW_INFO_MALFORMED, "" },
        { "BIOS Version: 96.10.6D.00.01\n", FABRIC_NVSW_INFO_MALFORMED, "" }, /* upper case */
        { "BIOS Version: 96.10.6d.00\n", FABRIC_NVSW_INFO_MALFORMED, "" },    /* four groups */
        { "BIOS Version: 96.10.6d.00.01.02\n", FABRIC_NVSW_INFO_MALFORMED, "" },
        { "BIOS Version: 96.10.6d.00.1\n", FABRIC_NVSW_INFO_MALFORMED, "" },
        { "BIOS Version: 6.10.6d.00.01\n", FABRIC_NVSW_INFO_MALFORMED, "" },
        { "BIOS Version: 123456789.10.6d.00.01\n", FABRIC_NVSW_INFO_MALFORMED, "" },
        { "BIOS Version: 96.10.6d.00.01 \n", FABRIC_NVSW_INFO_MALFORMED, "" },
        { "BIOS Version: 96.10.6d.00.01\n\n", FABRIC_NVSW_INFO_MALFORMED, "" },
        { "BIOS Version: 96.10.6d.00.01\nBIOS Version: 97.00.00.00.00\n",
          FABRIC_NVSW_INFO_MALFORMED, "" },
        { "BIOS Version: N/A\nmore", FABRIC_NVSW_INFO_MALFORMED, "" },
        { "BIOS Version: N/AB\n", FABRIC_NVSW_INFO_MALFORMED, "" },
        { "BIOS Version: 96.10.6d.00.01\033]0;x\007\n", FABRIC_NVSW_INFO_MALFORMED, "" },
        { " BIOS Version: 96.10.6d.00.01\n", FABRIC_NVSW_INFO_MALFORMED, "" },
    };

    (void)state;
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        char version[FABRIC_BIOS_VERSION_SIZE];
        enum fabric_nvswitch_info got;

        memset(version, 'x', sizeof(version));
        got = fabric_parse_nvswitch_info(cases[i].text, version);
        if (got != cases[i].want)
            fail_msg("case %zu: got %d, want %d", i, (int)got, (int)cases[i].want);
        assert_string_equal(version, cases[i].version);
    }
}

/* The entries of /proc/driver/nvidia-nvswitch/devices against the switches on the bus. */
static void test_nvswitch_entry(void **state)
{
    static const char *const bus[] = { "0000:c5:00.0", "0000:c6:00.0", "10000:07:00.0" };

    (void)state;
    assert_int_equal(fabric_nvswitch_entry("0000:c5:00.0", bus, 3), 0);
    assert_int_equal(fabric_nvswitch_entry("0000:c6:00.0", bus, 3), 1);
    assert_int_equal(fabric_nvswitch_entry("10000:07:00.0", bus, 3), 2); /* a 5-digit domain */
    /* an address of no switch on the bus */
    assert_int_equal(fabric_nvswitch_entry("0000:c7:00.0", bus, 3), FABRIC_NVSW_ENTRY_STRAY);
    assert_int_equal(fabric_nvswitch_entry("0000:c5:00.1", bus, 3), FABRIC_NVSW_ENTRY_STRAY);
    assert_int_equal(fabric_nvswitch_entry("0000:c5:00.0", bus, 0), FABRIC_NVSW_ENTRY_STRAY);
    /* not as the driver names an entry */
    assert_int_equal(fabric_nvswitch_entry("0000:C5:00.0", bus, 3), FABRIC_NVSW_ENTRY_BAD);
    assert_int_equal(fabric_nvswitch_entry("0000:c5:00", bus, 3), FABRIC_NVSW_ENTRY_BAD);
    assert_int_equal(fabric_nvswitch_entry("0000:c5:00.0 ", bus, 3), FABRIC_NVSW_ENTRY_BAD);
    assert_int_equal(fabric_nvswitch_entry("c5:00.0", bus, 3), FABRIC_NVSW_ENTRY_BAD);
    assert_int_equal(fabric_nvswitch_entry("permissions", bus, 3), FABRIC_NVSW_ENTRY_BAD);
    assert_int_equal(fabric_nvswitch_entry("", bus, 3), FABRIC_NVSW_ENTRY_BAD);
}

/* The SXid catalogue of data/sxid.tsv: sorted, one row a number, and what the guide says. */
static void test_sxid_catalogue(void **state)
{
    const struct sxid_info *x;

    (void)state;
    assert_true(sxid_n_rows >= 90);
    for (size_t i = 0; i < sxid_n_rows; i++) {
        assert_true(sxid_rows[i].name[0] != '\0');
        assert_true(sxid_rows[i].cls >= 0 && sxid_rows[i].cls < SXID_CLASS__COUNT);
        if (i > 0)
            assert_true(sxid_rows[i - 1].sxid < sxid_rows[i].sxid);
        assert_ptr_equal(sxid_lookup(sxid_rows[i].sxid), &sxid_rows[i]);
    }
    x = sxid_lookup(24007);
    assert_non_null(x);
    assert_int_equal(x->cls, SXID_CLASS_FATAL);
    assert_string_equal(x->name, "sourcetrack timeout error");
    x = sxid_lookup(20034);
    assert_int_equal(x->cls, SXID_CLASS_FATAL);
    assert_string_equal(x->name, "LTSSM Fault Up");
    assert_int_equal(sxid_lookup(23001)->cls, SXID_CLASS_ALWAYS_FATAL);
    assert_int_equal(sxid_lookup(22003)->cls, SXID_CLASS_ALWAYS_FATAL);
    assert_int_equal(sxid_lookup(11012)->cls, SXID_CLASS_CORRECTED);
    assert_int_equal(sxid_lookup(12028)->cls, SXID_CLASS_NONFATAL);
    assert_null(sxid_lookup(99999));
    assert_null(sxid_lookup(0));
    assert_null(sxid_lookup(-1));
}

struct run {
    struct collect_opts opts;
    struct collect_ctx ctx;
    struct snapshot *s;
};

static void run_fabric(struct run *r, const char *root)
{
    char *cause = NULL;

    memset(r, 0, sizeof(*r));
    r->opts.root = root;
    r->opts.timeout_ms = 10000;
    r->ctx.opts = &r->opts;
    if (sysroot_open(&r->ctx.root, root, &cause) != 0)
        fail_msg("%s", cause);
    r->s = snapshot_new();
    collector_fabric.start(&r->ctx, r->s);
    sysroot_close(&r->ctx.root);
}

/* A copy of the healthy tree in a new directory, changed by the shell command change. */
static char *tree(const char *change)
{
    char tmpl[] = "/tmp/gpudoctor-fabric-XXXXXX", cmd[1024];
    char *dir = mkdtemp(tmpl);

    assert_non_null(dir);
    snprintf(cmd, sizeof(cmd), "cp -a '%s/.' '%s' && cd '%s' && { %s; }", HGX, dir, dir, change);
    assert_int_equal(system(cmd), 0);
    return xstrdup(dir);
}

static void drop_tree(char *dir)
{
    char cmd[512];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
    free(dir);
}

static void test_healthy(void **state)
{
    const struct fabric_info *f;
    struct run r;

    (void)state;
    run_fabric(&r, HGX);
    f = &r.s->fabric;
    assert_int_equal(r.s->collectors[COLLECTOR_FABRIC].state, CS_OK);
    /* four NVSwitches, sorted; the GPU and the Intel bridge are not switches */
    assert_int_equal(f->n_switches, 4);
    assert_string_equal(f->switches[0].pci_address, "0000:c5:00.0");
    assert_string_equal(f->switches[3].pci_address, "0000:c8:00.0");
    assert_int_equal(f->switches[0].device_id, 0x22a3);
    /* the NVSwitch driver took all four and read their BIOS */
    assert_true(fabric_valid(f, FABRIC_S_NVSW));
    assert_int_equal(f->nvswitch_proc, FABRIC_NVSW_PRESENT);
    for (size_t i = 0; i < f->n_switches; i++) {
        assert_true(fabric_switch_valid(&f->switches[i], FSW_S_DRIVER));
        assert_true(f->switches[i].driver_bound);
        assert_true(fabric_switch_valid(&f->switches[i], FSW_S_BIOS));
        assert_string_equal(f->switches[i].bios_version, "96.10.6d.00.01");
    }
    assert_true(f->fm_binary);
    assert_true(f->fm_packaged);
    assert_string_equal(f->fm_package, "nvidia-fabricmanager-550");
    assert_string_equal(f->fm_package_version, "550.54.15-1");
    assert_string_equal(f->fm_version, "550.54.15");
    assert_string_equal(f->fm_version_from, "dpkg");
    assert_true(f->fm_running);
    assert_int_equal(f->fm_pid, 4242);
    assert_true(f->fm_enabled);
    assert_string_equal(f->log_path, "/var/log/fabricmanager.log");
    assert_true(f->log_started);
    assert_int_equal(f->log_errors, 0); /* the one error is from the run before */
    snapshot_free(r.s);
}

static void test_stories(void **state)
{
    const struct fabric_info *f;
    struct run r;
    char *t;

    (void)state;
    /* stopped and disabled; its log says why */
    t = tree(
        "rm -r proc/4242 etc/systemd/system/multi-user.target.wants && "
        "printf '[x] [ERROR] [tid 9] fabric manager NVIDIA GPU driver interface version "
        "550.54.15 don'\\''t match with driver version 550.90.07\\n' >>var/log/fabricmanager.log");
    run_fabric(&r, t);
    f = &r.s->fabric;
    assert_true(fabric_valid(f, FABRIC_S_PROCESS));
    assert_false(f->fm_running);
    assert_false(fabric_valid(f, FABRIC_S_PID));
    assert_true(fabric_valid(f, FABRIC_S_UNIT));
    assert_false(f->fm_enabled);
    assert_int_equal(f->log_errors, 1);
    assert_int_equal(f->n_log_lines, 1);
    assert_non_null(strstr(f->log_lines[0].text, "don't match with driver version 550.90.07"));
    snapshot_free(r.s);
    drop_tree(t);

    /* not installed: no package, no program; no dpkg at all gives the version from the log */
    t = tree("rm usr/bin/nv-fabricmanager && rm var/lib/dpkg/status");
    run_fabric(&r, t);
    f = &r.s->fabric;
    assert_false(f->fm_binary);
    assert_false(fabric_valid(f, FABRIC_S_PACKAGE));
    assert_string_equal(f->fm_version, "550.54.15");
    assert_string_equal(f->fm_version_from, "log");
    assert_true(f->fm_running); /* still running from before: the process says so */
    snapshot_free(r.s);
    drop_tree(t);

    /* no NVSwitch and no Fabric Manager: nothing else is read */
    t = tree(
        "rm -r sys/bus/pci/devices/0000:c* usr/bin/nv-fabricmanager && : >var/lib/dpkg/status");
    run_fabric(&r, t);
    f = &r.s->fabric;
    assert_int_equal(r.s->collectors[COLLECTOR_FABRIC].state, CS_OK);
    assert_string_equal(r.s->collectors[COLLECTOR_FABRIC].detail,
                        "no NVSwitch and no Fabric Manager");
    assert_int_equal(f->n_switches, 0);
    assert_true(fabric_valid(f, FABRIC_S_SWITCHES));
    assert_false(fabric_valid(f, FABRIC_S_PROCESS));
    assert_false(fabric_valid(f, FABRIC_S_LOG));
    snapshot_free(r.s);
    drop_tree(t);

    /* the configuration names another log; terminal escapes in it are made harmless */
    t = tree("mkdir -p srv/fm && sed -i 's#^LOG_FILE_NAME=.*#LOG_FILE_NAME=/srv/fm/fm.log#' "
             "usr/share/nvidia/nvswitch/fabricmanager.cfg && printf 'Fabric Manager version 1.2 "
             "is running\\n[ERROR] \\033]0;owned\\007 bad\\n' >srv/fm/fm.log");
    run_fabric(&r, t);
    f = &r.s->fabric;
    assert_string_equal(f->log_path, "/srv/fm/fm.log");
    assert_int_equal(f->log_errors, 1);
    assert_null(strchr(f->log_lines[0].text, '\033'));
    assert_null(strchr(f->log_lines[0].text, '\007'));
    assert_string_equal(f->fm_version, "550.54.15"); /* dpkg's wins over the log's "1.2" */
    snapshot_free(r.s);
    drop_tree(t);

    /* a FIFO in the log's place is refused at once, and said */
    t = tree("rm var/log/fabricmanager.log && mkfifo var/log/fabricmanager.log");
    run_fabric(&r, t);
    f = &r.s->fabric;
    assert_false(fabric_valid(f, FABRIC_S_LOG));
    assert_int_equal(r.s->collectors[COLLECTOR_FABRIC].state, CS_PARTIAL);
    assert_int_equal(r.s->collectors[COLLECTOR_FABRIC].n_notes, 1);
    assert_non_null(strstr(r.s->collectors[COLLECTOR_FABRIC].notes[0], "fabricmanager.log"));
    snapshot_free(r.s);
    drop_tree(t);
}

/* The NVSwitch driver's view: switches it did not take, hostile files, the view absent. */
static void test_nvswitch_view(void **state)
{
    const struct collector_status *st;
    const struct fabric_info *f;
    struct run r;
    char *t;

    (void)state;
    /* c6's probe failed: no entry; c7's BIOS could not be read (N/A); c8's file is garbage */
    t = tree("cd proc/driver/nvidia-nvswitch/devices && rm -r 0000:c6:00.0 && "
             "printf 'BIOS Version: N/A\\n' >0000:c7:00.0/information && "
             "printf 'BIOS Version: \\033[31m96.10\\n' >0000:c8:00.0/information");
    run_fabric(&r, t);
    f = &r.s->fabric;
    st = &r.s->collectors[COLLECTOR_FABRIC];
    assert_int_equal(f->nvswitch_proc, FABRIC_NVSW_PRESENT);
    assert_true(f->switches[0].driver_bound);
    assert_string_equal(f->switches[0].bios_version, "96.10.6d.00.01");
    assert_true(fabric_switch_valid(&f->switches[1], FSW_S_DRIVER));
    assert_false(f->switches[1].driver_bound);
    assert_false(fabric_switch_valid(&f->switches[1], FSW_S_BIOS));
    assert_true(f->switches[2].driver_bound);
    assert_false(fabric_switch_valid(&f->switches[2], FSW_S_BIOS)); /* N/A: no version */
    assert_null(f->switches[2].bios_version);
    assert_true(f->switches[3].driver_bound); /* its entry is there, whatever the file says */
    assert_false(fabric_switch_valid(&f->switches[3], FSW_S_BIOS));
    assert_int_equal(st->state, CS_PARTIAL);
    assert_int_equal(st->n_notes, 1);
    assert_non_null(strstr(st->notes[0], "0000:c8:00.0/information: malformed"));
    assert_null(strchr(st->notes[0], '\033'));
    snapshot_free(r.s);
    drop_tree(t);

    /* an information file far too long, one that is a directory, a stray entry and a bad name */
    t = tree("cd proc/driver/nvidia-nvswitch/devices && "
             "head -c 100000 /dev/zero | tr '\\0' 9 >0000:c5:00.0/information && "
             "rm 0000:c6:00.0/information && mkdir 0000:c6:00.0/information && "
             "mkdir 0000:c9:00.0 0000:ca:00.0 'x\033y'");
    run_fabric(&r, t);
    f = &r.s->fabric;
    st = &r.s->collectors[COLLECTOR_FABRIC];
    assert_int_equal(f->nvswitch_proc, FABRIC_NVSW_PRESENT);
    assert_int_equal(f->n_switches, 4);
    for (size_t i = 0; i < 4; i++)
        assert_true(f->switches[i].driver_bound);
    assert_false(fabric_switch_valid(&f->switches[0], FSW_S_BIOS));
    assert_false(fabric_switch_valid(&f->switches[1], FSW_S_BIOS));
    assert_string_equal(f->switches[2].bios_version, "96.10.6d.00.01");
    assert_int_equal(st->n_notes, 4);
    {
        bool too_long = false, dir = false, stray = false, bad = false;

        for (size_t i = 0; i < st->n_notes; i++) {
            too_long |= strstr(st->notes[i], "c5:00.0/information: longer than") != NULL;
            dir |= strstr(st->notes[i], "c6:00.0/information: Is a directory") != NULL;
            stray |= strstr(st->notes[i], "2 entries for no NVSwitch on the PCI bus (the "
                                          "first 0000:c") != NULL;
            bad |= strstr(st->notes[i], "1 entry not named as the driver names a device") != NULL;
            assert_null(strchr(st->notes[i], '\033'));
        }
        assert_true(too_long && dir && stray && bad);
    }
    snapshot_free(r.s);
    drop_tree(t);

    /* the nvidia module not loaded: the view is absent, and nothing is known per switch */
    t = tree("rm -r proc/driver");
    run_fabric(&r, t);
    f = &r.s->fabric;
    assert_int_equal(r.s->collectors[COLLECTOR_FABRIC].state, CS_OK);
    assert_true(fabric_valid(f, FABRIC_S_NVSW));
    assert_int_equal(f->nvswitch_proc, FABRIC_NVSW_ABSENT);
    assert_false(fabric_switch_valid(&f->switches[0], FSW_S_DRIVER));
    snapshot_free(r.s);
    drop_tree(t);

    /* there, but devices/ is not a directory: unreadable, said, and unknown per switch */
    t = tree("rm -r proc/driver/nvidia-nvswitch/devices && : >proc/driver/nvidia-nvswitch/devices");
    run_fabric(&r, t);
    f = &r.s->fabric;
    assert_int_equal(f->nvswitch_proc, FABRIC_NVSW_UNREADABLE);
    assert_false(fabric_switch_valid(&f->switches[0], FSW_S_DRIVER));
    assert_int_equal(r.s->collectors[COLLECTOR_FABRIC].n_notes, 1);
    assert_non_null(strstr(r.s->collectors[COLLECTOR_FABRIC].notes[0],
                           "/proc/driver/nvidia-nvswitch/devices: Not a directory"));
    snapshot_free(r.s);
    drop_tree(t);

    /* no NVSwitch and no Fabric Manager: the view is not looked at */
    t = tree(
        "rm -r sys/bus/pci/devices/0000:c* usr/bin/nv-fabricmanager && : >var/lib/dpkg/status");
    run_fabric(&r, t);
    assert_false(fabric_valid(&r.s->fabric, FABRIC_S_NVSW));
    snapshot_free(r.s);
    drop_tree(t);
}

static void test_round_trip(void **state)
{
    char *first, *second, *cause = NULL;
    struct snapshot *back;
    struct run r;

    (void)state;
    run_fabric(&r, HGX);
    first = snapshot_to_json(r.s);
    back = snapshot_from_json(first, strlen(first), "first", &cause);
    if (back == NULL)
        fail_msg("%s", cause);
    second = snapshot_to_json(back);
    assert_string_equal(first, second);
    assert_int_equal(back->fabric.valid, r.s->fabric.valid);
    assert_int_equal(back->fabric.n_switches, 4);
    assert_int_equal(back->fabric.nvswitch_proc, FABRIC_NVSW_PRESENT);
    assert_int_equal(back->fabric.switches[1].valid, r.s->fabric.switches[1].valid);
    assert_string_equal(back->fabric.switches[1].bios_version, "96.10.6d.00.01");
    free(first);
    free(second);
    snapshot_free(back);
    snapshot_free(r.s);

    /* a section with a bad list is an error naming where */
    {
        static const char bad[] = "{\"schema\": \"gpudoctor.snapshot/1\", \"fabric\": "
                                  "{\"fm_package\": null, \"fm_package_version\": null, "
                                  "\"log_path\": null, \"switches\": [{\"pci_address\": 5}]}}";

        back = snapshot_from_json(bad, strlen(bad), "bad.json", &cause);
    }
    assert_null(back);
    if (strstr(cause, "fabric.switches[0].pci_address") == NULL)
        fail_msg("%s", cause);
    free(cause);
    /* a section written before the driver's view was read: it and each switch's are unknown */
    {
        static const char old[] =
            "{\"schema\": \"gpudoctor.snapshot/1\", \"fabric\": {\"fm_binary\": true, "
            "\"fm_package\": null, \"fm_package_version\": null, \"log_path\": null, "
            "\"switches\": [{\"pci_address\": \"0000:c5:00.0\", \"device_id\": "
            "\"0x000022a3\"}]}}";

        back = snapshot_from_json(old, strlen(old), "old.json", &cause);
    }
    if (back == NULL)
        fail_msg("%s", cause);
    assert_true(fabric_valid(&back->fabric, FABRIC_S_SWITCHES));
    assert_false(fabric_valid(&back->fabric, FABRIC_S_NVSW));
    assert_int_equal(back->fabric.n_switches, 1);
    assert_false(fabric_switch_valid(&back->fabric.switches[0], FSW_S_DRIVER));
    assert_false(fabric_switch_valid(&back->fabric.switches[0], FSW_S_BIOS));
    snapshot_free(back);
    /* an unknown state of the view is an error naming the choices */
    {
        static const char bad[] = "{\"schema\": \"gpudoctor.snapshot/1\", \"fabric\": "
                                  "{\"fm_package\": null, \"fm_package_version\": null, "
                                  "\"log_path\": null, \"nvswitch_proc\": \"loaded\"}}";

        back = snapshot_from_json(bad, strlen(bad), "bad.json", &cause);
    }
    assert_null(back);
    if (strstr(cause, "fabric.nvswitch_proc") == NULL || strstr(cause, "\"absent\"") == NULL)
        fail_msg("%s", cause);
    free(cause);
    {
        static const char empty[] = "{\"schema\": \"gpudoctor.snapshot/1\", \"fabric\": {}}";

        back = snapshot_from_json(empty, strlen(empty), "bad.json", &cause);
    }
    assert_null(back);
    if (strstr(cause, "missing required key \"fm_package\"") == NULL)
        fail_msg("%s", cause);
    free(cause);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dpkg),          cmocka_unit_test(test_upstream_version),
        cmocka_unit_test(test_log),           cmocka_unit_test(test_comm),
        cmocka_unit_test(test_healthy),       cmocka_unit_test(test_stories),
        cmocka_unit_test(test_round_trip),    cmocka_unit_test(test_sxid_catalogue),
        cmocka_unit_test(test_nvswitch_info), cmocka_unit_test(test_nvswitch_entry),
        cmocka_unit_test(test_nvswitch_view),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
