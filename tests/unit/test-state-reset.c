/*
 * GPU resets within a boot (docs/state.md, "A GPU reset without a reboot"): each way one is
 * detected (a pending repair seen cleared, the energy counter going down, the driver's load
 * banner again) and what is not taken for one (the volatile ECC count going down, a flag that
 * could not be read, the first banner of a boot), the epochs they start (once-per-epoch records,
 * escalation "again after 1 GPU reset", "after 1 reboot and 1 reset"), the wall clock playing no
 * part, a replaced GPU starting clean, the file's new keys (an old file reads, bounds), and an
 * acknowledgement lifted by a memory fault that appeared after it.
 */
#include "rules/config.h"
#include "rules/rules.h"
#include "state/state.h"
#include "util/xalloc.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define BOOT_MS INT64_C(1700000000000) /* the wall-clock time of the boot */
#define S(x)    ((int64_t)(x)*1000000) /* seconds of uptime in microseconds */

/* One GPU seen at up_s seconds of uptime in boot, nothing wrong with it, no kernel-log line. */
static struct snapshot *seen(const char *serial, const char *boot, double up_s)
{
    struct snapshot *s = snapshot_new();
    struct gpu *g;

    s->time_ms = BOOT_MS + (int64_t)(up_s * 1000);
    s->host.uptime_s = up_s;
    host_set_valid(&s->host, HOST_S_UPTIME);
    s->host.boot_id = xstrdup(boot);
    host_set_valid(&s->host, HOST_S_BOOT_ID);
    s->gpus = xcalloc(1, sizeof(*s->gpus));
    s->n_gpus = 1;
    g = &s->gpus[0];
    gpu_init(g, 0);
    g->serial = xstrdup(serial);
    g->uuid = xasprintf("GPU-%s", serial);
    g->pci_bus_id = xstrdup("00000000:18:00.0");
    jfield_set_rc(&gpu_table, g, GPU_S_SERIAL, 0);
    jfield_set_rc(&gpu_table, g, GPU_S_UUID, 0);
    jfield_set_rc(&gpu_table, g, GPU_S_PCI_BUS_ID, 0);
    return s;
}

static void set_remap(struct snapshot *s, bool pending, bool failure)
{
    s->gpus[0].remapped_rows_pending = pending;
    s->gpus[0].remapped_rows_failure = failure;
    jfield_set_rc(&gpu_table, &s->gpus[0], GPU_S_REMAP_PENDING, 0);
    jfield_set_rc(&gpu_table, &s->gpus[0], GPU_S_REMAP_FAILURE, 0);
}

/* The energy counter, the GPU in persistence mode. */
static void set_energy(struct snapshot *s, uint64_t mj)
{
    s->gpus[0].energy_mj = mj;
    s->gpus[0].persistence_mode = true;
    jfield_set_rc(&gpu_table, &s->gpus[0], GPU_S_ENERGY, 0);
    jfield_set_rc(&gpu_table, &s->gpus[0], GPU_S_PERSISTENCE, 0);
}

static void set_volatile(struct snapshot *s, uint64_t n)
{
    s->gpus[0].ecc_mode = true;
    s->gpus[0].ecc_volatile_uncorrected = n;
    jfield_set_rc(&gpu_table, &s->gpus[0], GPU_S_ECC_MODE, 0);
    jfield_set_rc(&gpu_table, &s->gpus[0], GPU_S_ECC_VOL_UNCORR, 0);
}

/* A kernel-log line at at_s seconds of the boot: an Xid 48 about the GPU, or a load banner. */
static void add_line(struct snapshot *s, double at_s, bool banner, const char *text)
{
    struct klog_event *ev;

    s->driver.events =
        xreallocarray(s->driver.events, s->driver.n_events + 1, sizeof(*s->driver.events));
    ev = &s->driver.events[s->driver.n_events++];
    memset(ev, 0, sizeof(*ev));
    ev->uptime_us = (int64_t)(at_s * 1e6);
    ev->time_ms = BOOT_MS + (int64_t)(at_s * 1000);
    ev->valid = (UINT64_C(1) << KLOG_S_TIME) | (UINT64_C(1) << KLOG_S_UPTIME);
    if (banner) {
        ev->kind = KLOG_OTHER_NVRM;
        ev->message = xstrdup(text);
        return;
    }
    ev->kind = KLOG_XID;
    ev->xid = 48;
    ev->pci = xstrdup("0000:18:00");
    ev->message = xstrdup("48, pid=4121, name=python3, Double Bit ECC Error");
    ev->valid |= UINT64_C(1) << KLOG_S_XID;
}

#define BANNER "loading NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024"
#define BANNER_OPEN                                                                                \
    "loading NVIDIA UNIX Open Kernel Module for x86_64  575.57.08  Release Build  "                \
    "(dvs-builder@U16-I3-B03-4-3)  Wed May 21 21:27:08 UTC 2025"

/* Judges s with the past st (a copy through the file's text, as a run reads it). */
static const struct finding *judge(struct snapshot *s, const struct state_info *st,
                                   struct findings *f, const char *id)
{
    struct config cfg;
    char *text = state_format(st);

    state_info_free(&s->state);
    state_parse(text, strlen(text), "t.json", &s->state);
    free(text);
    assert_int_equal(s->state.status, STATE_OK);
    config_init(&cfg);
    findings_free(f);
    rules_run(s, NULL, &cfg.rules, f);
    config_free(&cfg);
    for (size_t i = 0; i < f->n; i++) {
        if (strcmp(f->items[i].rule->id, id) == 0)
            return &f->items[i];
    }
    fail_msg("no %s finding", id);
    return NULL;
}

static size_t count_kind(const struct state_gpu *g, enum state_event_kind kind)
{
    size_t n = 0;

    for (size_t i = 0; i < g->n_events; i++)
        n += g->events[i].kind == (int32_t)kind;
    return n;
}

/* A row remap pending, applied (cleared) in the same boot, pending again: after 1, then 2 GPU
 * resets; a flag that could not be read is no evidence. */
static void test_pending_cleared_set_again(void **state)
{
    struct state_info st = { 0 };
    struct findings f = { 0 };
    const struct finding *x;
    struct snapshot *s;

    (void)state;
    s = seen("S1", "boot-a", 400);
    set_remap(s, true, false);
    assert_true(state_merge(&st, s, s->time_ms));
    x = judge(s, &st, &f, "health.memory-repair-pending");
    assert_string_equal(x->title, "GPU 0 needs a reset to remap bad memory");
    snapshot_free(s);
    assert_int_equal(count_kind(&st.gpus[0], STATE_EV_REPAIR), 1);
    assert_int_equal(st.gpus[0].events[0].code, STATE_REPAIR_REMAP);
    assert_int_equal(st.gpus[0].events[0].uptime_us, S(400));

    /* The flag unreadable at 450 s: nothing concluded. */
    s = seen("S1", "boot-a", 450);
    assert_false(state_merge(&st, s, s->time_ms));
    assert_int_equal(st.gpus[0].n_resets, 0);
    snapshot_free(s);

    /* Cleared at 500 s: a reset applied it, between 400 s and 500 s; recorded once. */
    s = seen("S1", "boot-a", 500);
    set_remap(s, false, false);
    assert_true(state_merge(&st, s, s->time_ms));
    assert_false(state_merge(&st, s, s->time_ms));
    assert_int_equal(st.gpus[0].n_resets, 1);
    assert_int_equal(st.gpus[0].resets[0].how, STATE_RESET_REPAIR_APPLIED);
    assert_int_equal(st.gpus[0].resets[0].after_us, S(400));
    assert_int_equal(st.gpus[0].resets[0].uptime_us, S(500));
    snapshot_free(s);

    /* Pending again at 600 s: a new epoch's fault, again after 1 GPU reset. */
    s = seen("S1", "boot-a", 600);
    set_remap(s, true, false);
    x = judge(s, &st, &f, "health.memory-repair-pending");
    assert_string_equal(x->title,
                        "GPU 0 needs a reset to remap bad memory, again after 1 GPU reset");
    assert_int_equal(x->severity, SEV_WARNING);
    assert_true(state_merge(&st, s, s->time_ms));
    assert_int_equal(count_kind(&st.gpus[0], STATE_EV_REPAIR), 2);
    snapshot_free(s);

    /* Applied again, pending a third time: critical after 2 resets. */
    s = seen("S1", "boot-a", 700);
    set_remap(s, false, false);
    assert_true(state_merge(&st, s, s->time_ms));
    snapshot_free(s);
    s = seen("S1", "boot-a", 800);
    set_remap(s, true, false);
    x = judge(s, &st, &f, "health.memory-repair-pending");
    assert_string_equal(x->title, "GPU 0 needs a reset to remap bad memory, again after 2 GPU "
                                  "resets: inspect or replace the GPU");
    assert_int_equal(x->severity, SEV_CRITICAL);
    findings_free(&f);
    snapshot_free(s);
    state_info_free(&st);
}

/* The energy counter (since the driver loaded) going down: a reload between the two readings;
 * an Xid before it and one after it are two epochs. Rising, it is no news. */
static void test_energy_drop(void **state)
{
    struct state_info st = { 0 };
    struct findings f = { 0 };
    const struct finding *x;
    struct snapshot *s;

    (void)state;
    s = seen("S1", "boot-a", 400);
    set_energy(s, 5000000000);
    add_line(s, 300, false, NULL);
    assert_true(state_merge(&st, s, s->time_ms));
    snapshot_free(s);
    s = seen("S1", "boot-a", 500);
    set_energy(s, 6000000000);
    add_line(s, 300, false, NULL);
    assert_false(state_merge(&st, s, s->time_ms)); /* a reading is not news */
    assert_int_equal(st.gpus[0].energy_mj, 6000000000);
    assert_int_equal(st.gpus[0].energy_us, S(500));
    snapshot_free(s);
    s = seen("S1", "boot-a", 600);
    set_energy(s, 1000);
    add_line(s, 300, false, NULL);
    assert_true(state_merge(&st, s, s->time_ms));
    assert_int_equal(st.gpus[0].n_resets, 1);
    assert_int_equal(st.gpus[0].resets[0].how, STATE_RESET_ENERGY_DROP);
    assert_int_equal(st.gpus[0].resets[0].after_us, S(500));
    assert_int_equal(st.gpus[0].resets[0].uptime_us, S(600));
    snapshot_free(s);

    /* Without persistence mode the driver deinitialises an idle GPU: a lower reading proves
     * nothing, and none is kept to compare with. */
    s = seen("S1", "boot-a", 610);
    set_energy(s, 500);
    s->gpus[0].persistence_mode = false;
    state_merge(&st, s, s->time_ms);
    assert_int_equal(st.gpus[0].n_resets, 1);
    assert_int_equal(st.gpus[0].energy_mj, -1);
    snapshot_free(s);

    /* The old line alone: the same epoch, nothing claimed. */
    s = seen("S1", "boot-a", 700);
    add_line(s, 300, false, NULL);
    x = judge(s, &st, &f, "health.xid");
    assert_null(strstr(x->title, "again"));
    /* A new Xid 48 at 650 s, after the reload: again after 1 GPU reset, critical. */
    add_line(s, 650, false, NULL);
    x = judge(s, &st, &f, "health.xid");
    assert_non_null(strstr(x->title, "again after 1 GPU reset: inspect or replace the GPU"));
    assert_int_equal(x->severity, SEV_CRITICAL);
    assert_true(state_merge(&st, s, s->time_ms));
    snapshot_free(s);

    /* The next boot: the same Xid after 1 reboot and 1 reset. */
    s = seen("S1", "boot-b", 100);
    add_line(s, 90, false, NULL);
    x = judge(s, &st, &f, "health.xid");
    assert_non_null(strstr(x->title, "again after 1 reboot and 1 reset: inspect or replace"));
    findings_free(&f);
    snapshot_free(s);
    state_info_free(&st);
}

/* The volatile ECC count going down is not a reset: nvmlDeviceClearEccErrorCounts (nvidia-smi
 * -p 0) zeroes it without one. With the energy counter down too, it is a reload. */
static void test_ecc_volatile_drop(void **state)
{
    struct state_info st = { 0 };
    struct findings f = { 0 };
    const struct finding *x;
    struct snapshot *s;

    (void)state;
    s = seen("S1", "boot-a", 400);
    set_volatile(s, 3);
    set_energy(s, 900000);
    assert_true(state_merge(&st, s, s->time_ms));
    snapshot_free(s);
    s = seen("S1", "boot-a", 500);
    set_volatile(s, 1);
    set_energy(s, 1000000);
    assert_false(state_merge(&st, s, s->time_ms)); /* fewer errors: no reset, no new event */
    assert_int_equal(st.gpus[0].n_resets, 0);
    assert_int_equal(count_kind(&st.gpus[0], STATE_EV_ECC_VOL), 1);
    x = judge(s, &st, &f, "health.ecc-uncorrectable");
    assert_string_equal(x->title, "GPU 0 had 1 uncorrectable ECC error since the driver loaded");
    snapshot_free(s);
    s = seen("S1", "boot-a", 600);
    set_volatile(s, 1);
    set_energy(s, 20000);
    x = judge(s, &st, &f, "health.ecc-uncorrectable");
    assert_string_equal(x->title, "GPU 0 had 1 uncorrectable ECC error since the driver loaded");
    assert_true(state_merge(&st, s, s->time_ms)); /* the reload, then this epoch's errors */
    assert_int_equal(st.gpus[0].n_resets, 1);
    assert_int_equal(count_kind(&st.gpus[0], STATE_EV_ECC_VOL), 2);
    snapshot_free(s);
    s = seen("S1", "boot-a", 700);
    set_volatile(s, 2);
    set_energy(s, 30000);
    x = judge(s, &st, &f, "health.ecc-uncorrectable");
    assert_string_equal(x->title, "GPU 0 had 2 uncorrectable ECC errors since the driver loaded, "
                                  "again after 1 GPU reset: inspect or replace the GPU");
    findings_free(&f);
    snapshot_free(s);
    state_info_free(&st);
}

/* The driver's load banner: the first of a boot is no reset; a second one is, as is one after a
 * run saw the GPU through NVML; both banner forms; every banner once. */
static void test_load_banner(void **state)
{
    struct state_info st = { 0 };
    struct snapshot *s;

    (void)state;
    s = seen("S1", "boot-a", 400);
    add_line(s, 5, true, BANNER);
    assert_true(state_merge(&st, s, s->time_ms)); /* the GPU is new */
    assert_int_equal(st.gpus[0].n_resets, 0);
    assert_int_equal(st.gpus[0].boot_seen_us, S(400));
    add_line(s, 350, true, BANNER_OPEN); /* loaded again (open module form) */
    assert_true(state_merge(&st, s, s->time_ms));
    assert_false(state_merge(&st, s, s->time_ms));
    assert_int_equal(st.gpus[0].n_resets, 1);
    assert_int_equal(st.gpus[0].resets[0].how, STATE_RESET_DRIVER_LOAD);
    assert_int_equal(st.gpus[0].resets[0].uptime_us, S(350));
    snapshot_free(s);
    /* The first banner lost from the log: one at 450 s, after a run saw the GPU at 400 s. */
    s = seen("S1", "boot-a", 500);
    add_line(s, 450, true, BANNER);
    assert_true(state_merge(&st, s, s->time_ms));
    assert_int_equal(st.gpus[0].n_resets, 2);
    assert_int_equal(st.gpus[0].resets[1].uptime_us, S(450));
    snapshot_free(s);
    /* Another GPU first seen after its boot's only banner (a late first load): no reset. */
    s = seen("S2", "boot-c", 2000);
    add_line(s, 1843, true, BANNER);
    state_merge(&st, s, s->time_ms);
    assert_int_equal(st.gpus[1].n_resets, 0);
    snapshot_free(s);
    state_info_free(&st);
}

/* Epochs go by the kernel's uptime: a wall clock a year back or ahead changes nothing. */
static void test_clock_changes(void **state)
{
    const int64_t year = INT64_C(365) * 86400000;
    struct state_info st = { 0 };
    struct findings f = { 0 };
    const struct finding *x;
    struct snapshot *s;

    (void)state;
    s = seen("S1", "boot-a", 400);
    set_remap(s, true, false);
    state_merge(&st, s, s->time_ms);
    snapshot_free(s);
    s = seen("S1", "boot-a", 500);
    s->time_ms -= year;
    set_remap(s, false, false);
    assert_true(state_merge(&st, s, s->time_ms));
    assert_int_equal(st.gpus[0].n_resets, 1);
    snapshot_free(s);
    s = seen("S1", "boot-a", 600);
    s->time_ms += year;
    set_remap(s, true, false);
    x = judge(s, &st, &f, "health.memory-repair-pending");
    assert_string_equal(x->title,
                        "GPU 0 needs a reset to remap bad memory, again after 1 GPU reset");
    findings_free(&f);
    snapshot_free(s);
    state_info_free(&st);
}

/* A replaced GPU (a new serial in the same slot) has no past: its first pending is its first. */
static void test_replaced_gpu_clean(void **state)
{
    struct state_info st = { 0 };
    struct findings f = { 0 };
    const struct finding *x;
    struct snapshot *s;

    (void)state;
    s = seen("S1", "boot-a", 400);
    set_remap(s, true, false);
    state_merge(&st, s, s->time_ms);
    snapshot_free(s);
    s = seen("S1", "boot-a", 500);
    set_remap(s, false, false);
    state_merge(&st, s, s->time_ms);
    snapshot_free(s);
    s = seen("S9", "boot-a", 600);
    set_remap(s, true, false);
    x = judge(s, &st, &f, "health.memory-repair-pending");
    assert_string_equal(x->title, "GPU 0 needs a reset to remap bad memory");
    findings_free(&f);
    snapshot_free(s);
    state_info_free(&st);
}

/* A file of version 1 without the new keys still reads (unknown: -1, no resets); with them it
 * is a fixed point; more than STATE_MAX_RESETS are cut to the newest, on reading and merging. */
static void test_file_format(void **state)
{
    const char *old = "{\"version\": 1, \"gpus\": [{\"serial\": \"S1\", \"uuid\": \"GPU-S1\", "
                      "\"index\": 0, \"last_seen_ms\": 5, \"events\": [{\"kind\": "
                      "\"repair_pending\", \"code\": 0, \"value\": 1, \"boot_id\": \"boot-a\", "
                      "\"time_ms\": 4}]}], \"acks\": []}";
    struct state_info st = { 0 }, again = { 0 };
    char *text, *back, *big;
    size_t len = 0, cap = 1 << 16;
    struct snapshot *s;

    (void)state;
    state_parse(old, strlen(old), "old.json", &st);
    assert_int_equal(st.status, STATE_OK);
    assert_int_equal(st.gpus[0].boot_seen_us, -1);
    assert_int_equal(st.gpus[0].energy_mj, -1);
    assert_int_equal(st.gpus[0].events[0].uptime_us, -1);
    assert_int_equal(st.gpus[0].n_resets, 0);
    /* An old once-per-boot record (no uptime) is not taken for this epoch's flags: cleared
     * afterwards proves nothing, and a new record of this epoch is made. */
    s = seen("S1", "boot-a", 500);
    set_remap(s, false, false);
    state_merge(&st, s, s->time_ms);
    assert_int_equal(st.gpus[0].n_resets, 0);
    snapshot_free(s);
    s = seen("S1", "boot-a", 600);
    set_energy(s, 100);
    state_merge(&st, s, s->time_ms);
    snapshot_free(s);
    s = seen("S1", "boot-a", 700);
    set_energy(s, 50);
    state_merge(&st, s, s->time_ms);
    assert_int_equal(st.gpus[0].n_resets, 1);
    snapshot_free(s);
    text = state_format(&st);
    state_parse(text, strlen(text), "again.json", &again);
    assert_int_equal(again.status, STATE_OK);
    back = state_format(&again);
    assert_string_equal(text, back);
    assert_int_equal(again.gpus[0].resets[0].how, STATE_RESET_ENERGY_DROP);
    free(text);
    free(back);
    state_info_free(&again);
    /* 17 resets on reading: the newest 16 kept. */
    big = xmalloc(cap);
    len += (size_t)snprintf(big + len, cap - len,
                            "{\"version\": 1, \"gpus\": [{\"serial\": \"S1\", \"resets\": [");
    for (int i = 0; i < STATE_MAX_RESETS + 1; i++)
        len += (size_t)snprintf(big + len, cap - len,
                                "%s{\"boot_id\": \"b\", \"after_us\": %d, \"uptime_us\": %d, "
                                "\"how\": \"driver_load\", \"time_ms\": 1}",
                                i ? "," : "", i * 10, i * 10 + 1);
    snprintf(big + len, cap - len, "]}], \"acks\": []}");
    state_parse(big, strlen(big), "big.json", &again);
    assert_int_equal(again.status, STATE_OK);
    assert_int_equal(again.gpus[0].n_resets, STATE_MAX_RESETS);
    assert_int_equal(again.gpus[0].resets[0].after_us, 10);
    state_info_free(&again);
    /* A reset without its boot: refused with a note. */
    snprintf(big, cap,
             "{\"version\": 1, \"gpus\": [{\"serial\": \"S1\", \"resets\": [{\"how\": "
             "\"energy_drop\"}]}]}");
    state_parse(big, strlen(big), "bad.json", &again);
    assert_int_equal(again.status, STATE_CORRUPT);
    assert_non_null(strstr(again.note, "a GPU reset needs a boot_id and a how"));
    state_info_free(&again);
    free(big);
    state_info_free(&st);
}

static void give_ack(struct state_info *st, const char *rule, const char *boot, double at_s)
{
    struct state_ack *a;

    st->acks = xreallocarray(st->acks, st->n_acks + 1, sizeof(*st->acks));
    a = &st->acks[st->n_acks++];
    memset(a, 0, sizeof(*a));
    a->rule = xstrdup(rule);
    a->gpu_uuid = xstrdup("GPU-S1");
    a->by = xstrdup("alice");
    a->boot_id = xstrdup(boot);
    a->uptime_us = (int64_t)(at_s * 1e6);
    a->time_ms = BOOT_MS + (int64_t)(at_s * 1000);
    a->ecc_uncorrected = a->remapped_rows = -1;
    a->severity = -1;
}

/* An acknowledgement is lifted by a repair pending after a reset that followed it, or by a row
 * remap failure first seen after it; the fault it saw keeps it. */
static void test_ack_memory_fault(void **state)
{
    struct state_info st = { 0 };
    struct findings f = { 0 };
    struct snapshot *s;

    (void)state;
    s = seen("S1", "boot-a", 400);
    set_remap(s, true, false);
    state_merge(&st, s, s->time_ms);
    give_ack(&st, "health.memory-repair-pending", "boot-a", 450);
    s->host.uptime_s = 460;
    s->time_ms += 60000;
    assert_non_null(judge(s, &st, &f, "health.memory-repair-pending")->ack); /* the one it saw */
    snapshot_free(s);
    /* Applied by a reset, pending again: new. */
    s = seen("S1", "boot-a", 500);
    set_remap(s, false, false);
    state_merge(&st, s, s->time_ms);
    snapshot_free(s);
    s = seen("S1", "boot-a", 600);
    set_remap(s, true, false);
    assert_null(judge(s, &st, &f, "health.memory-repair-pending")->ack);
    /* Recorded (first seen at 600 s), then acknowledged again at 650 s: held. */
    state_merge(&st, s, s->time_ms);
    state_ack_free(&st.acks[0]);
    st.n_acks = 0;
    give_ack(&st, "health.memory-repair-pending", "boot-a", 650);
    s->host.uptime_s = 700;
    assert_non_null(judge(s, &st, &f, "health.memory-repair-pending")->ack);
    /* A row remap failure that appears after it: new, for this acknowledgement too. */
    set_remap(s, true, true);
    assert_null(judge(s, &st, &f, "health.memory-repair-pending")->ack);
    /* The failure recorded before an acknowledgement: covered by it, also after a reset. */
    state_merge(&st, s, s->time_ms);
    state_ack_free(&st.acks[0]);
    st.n_acks = 0;
    give_ack(&st, "health.row-remap-failure", "boot-a", 750);
    s->host.uptime_s = 800;
    assert_non_null(judge(s, &st, &f, "health.row-remap-failure")->ack);
    findings_free(&f);
    snapshot_free(s);
    state_info_free(&st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pending_cleared_set_again),
        cmocka_unit_test(test_energy_drop),
        cmocka_unit_test(test_ecc_volatile_drop),
        cmocka_unit_test(test_load_banner),
        cmocka_unit_test(test_clock_changes),
        cmocka_unit_test(test_replaced_gpu_clean),
        cmocka_unit_test(test_file_format),
        cmocka_unit_test(test_ack_memory_fault),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
