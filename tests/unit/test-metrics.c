/*
 * The Prometheus renderer: the table's invariants (every field exists, one family per name,
 * conventions of names and types), exact values with their unit conversions, invalid fields
 * absent, label escaping, bounded per-process series, findings and XIDs.
 */
#include "render/metrics.h"
#include "rules/rules.h"
#include "snapshot/snapshot.h"
#include "util/xalloc.h"

#include <regex.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define UUID0 "GPU-5f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"
#define L0    "gpu=\"0\",uuid=\"" UUID0 "\",name=\"NVIDIA H100 80GB HBM3\""

/* ---- the table ---- */

static void test_table(void **state)
{
    regex_t name_re;

    (void)state;
    assert_int_equal(regcomp(&name_re, "^gpudoctor_[a-z0-9_]*[a-z0-9]$", REG_EXTENDED | REG_NOSUB),
                     0);
    for (size_t i = 0; i < n_metric_families; i++) {
        const struct metric_family *m = &metric_families[i];
        bool first = i == 0 || strcmp(metric_families[i - 1].name, m->name) != 0;
        size_t len = strlen(m->name);
        bool total = len > 6 && strcmp(m->name + len - 6, "_total") == 0;

        if (regexec(&name_re, m->name, 0, NULL, 0) != 0)
            fail_msg("%s: not a gpudoctor_ snake_case name", m->name);
        /* counters, and only counters, end in _total */
        if (total != (m->type == METRIC_COUNTER))
            fail_msg("%s: _total and the counter type go together", m->name);
        if (strstr(m->name, "_mhz") || strstr(m->name, "_mw") || strstr(m->name, "_pct") ||
            strstr(m->name, "percent"))
            fail_msg("%s: not in base units", m->name);
        if (first) {
            assert_non_null(m->help);
            /* a name used again later would be a second family with the same name */
            for (size_t k = i + 1; k < n_metric_families; k++) {
                if (strcmp(metric_families[k].name, m->name) == 0 &&
                    strcmp(metric_families[k - 1].name, m->name) != 0)
                    fail_msg("%s: rows of one family must be adjacent", m->name);
            }
        } else {
            assert_int_equal(m->type, metric_families[i - 1].type);
            assert_int_equal(m->source, metric_families[i - 1].source);
        }
        if (m->source == MSRC_GPU_FIELD) {
            const struct jfield *f = jtable_find(&gpu_table, m->field);

            if (f == NULL)
                fail_msg("%s: no GPU field %s", m->name, m->field);
            assert_true(f->type != JF_STR && f->type != JF_NONE);
            assert_true(m->mul >= 1);
            for (uint32_t d = m->div; d > 1; d /= 10)
                assert_int_equal(d % 10, 0); /* a power of ten: exact decimals */
        }
    }
    regfree(&name_re);
}

/* ---- a snapshot to render ---- */

static struct snapshot *one_gpu(void)
{
    struct snapshot *s = snapshot_new();
    struct gpu *g;

    s->n_gpus = 1;
    s->gpus = xcalloc(1, sizeof(*s->gpus));
    g = &s->gpus[0];
    gpu_init(g, 0);
    g->handle_rc = 0;
    g->name = xstrdup("NVIDIA H100 80GB HBM3");
    g->uuid = xstrdup(UUID0);
    gpu_set_rc(g, GPU_S_NAME, 0);
    gpu_set_rc(g, GPU_S_UUID, 0);
    g->power_mw = 612345;
    gpu_set_rc(g, GPU_S_POWER, 0);
    g->clock_sm_mhz = 1755;
    gpu_set_rc(g, GPU_S_CLOCK_SM, 0);
    g->util_gpu_pct = 97;
    gpu_set_rc(g, GPU_S_UTIL_GPU, 0);
    g->mem_used_bytes = 42949672960ull;
    gpu_set_rc(g, GPU_S_MEM_USED, 0);
    g->energy_mj = 123456789;
    gpu_set_rc(g, GPU_S_ENERGY, 0);
    g->temp_c = 64;
    gpu_set_rc(g, GPU_S_TEMP, 3); /* NOT_SUPPORTED: no series */
    g->pcie_replay_count = 7;
    gpu_set_rc(g, GPU_S_PCIE_REPLAY, 0);
    g->compute_mode = 3;
    gpu_set_rc(g, GPU_S_COMPUTE_MODE, 0);
    g->ecc_mode = true;
    gpu_set_rc(g, GPU_S_ECC_MODE, 0);
    g->pci_bus_id = xstrdup("00000000:18:00.0");
    gpu_set_rc(g, GPU_S_PCI_BUS_ID, 0);
    g->cc_major = 9;
    g->cc_minor = 0;
    gpu_set_rc(g, GPU_S_CC_MAJOR, 0);
    gpu_set_rc(g, GPU_S_CC_MINOR, 0);
    g->serial = xstrdup("1654922000001"); /* NOT_SUPPORTED below: no label */
    gpu_set_rc(g, GPU_S_SERIAL, 3);
    g->clocks_event_reasons = clock_reasons[5].bit; /* sw_thermal */
    gpu_set_rc(g, GPU_S_EVENT_REASONS, 0);
    g->clocks_event_reasons_supported = clock_reasons[5].bit | clock_reasons[0].bit;
    gpu_set_rc(g, GPU_S_EVENT_REASONS_SUPPORTED, 0);
    return s;
}

static char *render(const struct snapshot *s, const struct findings *f, size_t top)
{
    struct metrics_cycle cyc = { .duration_s = 0.25,
                                 .success = true,
                                 .cycles = 3,
                                 .completed_ms = 1767225600123,
                                 .check_status = 2 };
    struct metrics_opts o = { top };

    return metrics_render(s, f, &cyc, &o, NULL);
}

/* The exact line must be in text, as a whole line. */
static void has_line(const char *text, const char *line)
{
    size_t n = strlen(line);

    for (const char *p = text; (p = strstr(p, line)) != NULL; p++) {
        if ((p == text || p[-1] == '\n') && (p[n] == '\n' || p[n] == '\0'))
            return;
    }
    fail_msg("missing line: %s", line);
}

static void lacks(const char *text, const char *what)
{
    if (strstr(text, what) != NULL)
        fail_msg("unexpected: %s", what);
}

static size_t count(const char *text, const char *what)
{
    size_t n = 0;

    for (const char *p = text; (p = strstr(p, what)) != NULL; p += strlen(what))
        n++;
    return n;
}

static void test_values(void **state)
{
    struct snapshot *s = one_gpu();
    char *t;

    (void)state;
    t = render(s, NULL, 20);
    has_line(t, "gpudoctor_gpu_power_watts{" L0 "} 612.345");
    has_line(t, "gpudoctor_gpu_clock_hertz{" L0 ",clock=\"sm\"} 1755000000");
    has_line(t, "gpudoctor_gpu_utilization_ratio{" L0 "} 0.97");
    has_line(t, "gpudoctor_gpu_memory_used_bytes{" L0 "} 42949672960");
    has_line(t, "gpudoctor_gpu_energy_joules_total{" L0 "} 123456.789");
    has_line(t, "gpudoctor_gpu_pcie_replays_total{" L0 "} 7");
    has_line(t, "gpudoctor_gpu_compute_mode{" L0 ",mode=\"exclusive_process\"} 1");
    has_line(t, "gpudoctor_gpu_ecc_mode{" L0 "} 1");
    has_line(t, "gpudoctor_gpu_up{" L0 "} 1");
    has_line(t, "gpudoctor_gpu_info{" L0
                ",pci_bus_id=\"00000000:18:00.0\",compute_capability=\"9.0\"} 1");
    /* reasons the GPU can report: on, off; the others absent */
    has_line(t, "gpudoctor_gpu_clock_event_reason{" L0 ",reason=\"sw_thermal\"} 1");
    has_line(t, "gpudoctor_gpu_clock_event_reason{" L0 ",reason=\"gpu_idle\"} 0");
    lacks(t, "reason=\"hw_slowdown\"");
    /* invalid fields are absent, never 0 */
    lacks(t, "gpudoctor_gpu_temperature_celsius{");
    lacks(t, "gpudoctor_gpu_fan_speed_ratio{");
    lacks(t, "gpudoctor_gpu_power_limit_watts{");
    /* collection health */
    has_line(t, "gpudoctor_collect_duration_seconds 0.25");
    has_line(t, "gpudoctor_collect_success 1");
    has_line(t, "gpudoctor_collect_cycles_total 3");
    has_line(t, "gpudoctor_last_collect_timestamp_seconds 1767225600.123");
    has_line(t, "gpudoctor_build_info{version=\"" GPUDOCTOR_VERSION "\"} 1");
    /* one HELP and one TYPE per family, TYPE right after HELP */
    assert_int_equal(count(t, "# HELP gpudoctor_gpu_clock_hertz "), 1);
    assert_int_equal(count(t, "# TYPE gpudoctor_gpu_clock_hertz gauge\n"), 1);
    assert_int_equal(count(t, "# TYPE gpudoctor_gpu_pcie_replays_total counter\n"), 1);
    /* a family without samples has no header either */
    lacks(t, "# HELP gpudoctor_gpu_temperature_celsius");
    free(t);
    snapshot_free(s);
}

/* The host's EDAC counters: both types where an EDAC driver counts, nothing where none does. */
static void test_host_memory_errors(void **state)
{
    struct snapshot *s = one_gpu();
    char *t;

    (void)state;
    t = render(s, NULL, 20);
    lacks(t, "gpudoctor_host_memory_errors_total");
    free(t);
    s->host.edac_controllers = 2;
    s->host.mem_ue_count = 3;
    s->host.mem_ce_count = 1234;
    s->host.valid |= UINT64_C(1) << HOST_S_EDAC;
    t = render(s, NULL, 20);
    has_line(t, "gpudoctor_host_memory_errors_total{type=\"uncorrectable\"} 3");
    has_line(t, "gpudoctor_host_memory_errors_total{type=\"corrected\"} 1234");
    assert_int_equal(count(t, "# TYPE gpudoctor_host_memory_errors_total counter\n"), 1);
    free(t);
    snapshot_free(s);
}

/* The last sample of the window is the freshest reading of a dynamic field. */
static void test_latest_sample(void **state)
{
    struct snapshot *s = one_gpu();
    struct sample *smp = snapshot_add_sample(s, 2000);
    char *t;

    (void)state;
    smp->n_gpus = 1;
    smp->gpus = xcalloc(1, sizeof(*smp->gpus));
    gpu_init(&smp->gpus[0], 0);
    smp->gpus[0].handle_rc = 0;
    smp->gpus[0].power_mw = 100000;
    gpu_set_rc(&smp->gpus[0], GPU_S_POWER, 0);
    t = render(s, NULL, 20);
    has_line(t, "gpudoctor_gpu_power_watts{" L0 "} 100");
    /* not in the sample: the snapshot's reading */
    has_line(t, "gpudoctor_gpu_clock_hertz{" L0 ",clock=\"sm\"} 1755000000");
    free(t);

    /* a GPU that stopped answering during the window */
    smp->gpus[0].handle_rc = 15; /* GPU_IS_LOST */
    t = render(s, NULL, 20);
    has_line(t, "gpudoctor_gpu_up{" L0 "} 0");
    free(t);
    snapshot_free(s);
}

static void test_escaping(void **state)
{
    struct snapshot *s = one_gpu();
    char *t, *e;

    (void)state;
    e = metrics_label_escape("a\"b\\c\nd");
    assert_string_equal(e, "a\\\"b\\\\c\\nd");
    free(e);
    e = metrics_label_escape("x\xff\xc3(y\xe2\x82\xac");
    assert_string_equal(e, "x\xef\xbf\xbd\xef\xbf\xbd(y\xe2\x82\xac"); /* bad bytes -> U+FFFD */
    free(e);
    e = metrics_label_escape("\xed\xa0\x80"); /* a UTF-16 surrogate is not UTF-8 */
    assert_string_equal(e, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
    free(e);

    free(s->gpus[0].name);
    s->gpus[0].name = xstrdup("evil\"} 1\ngpudoctor_fake 2");
    t = render(s, NULL, 20);
    has_line(t, "gpudoctor_gpu_power_watts{gpu=\"0\",uuid=\"" UUID0
                "\",name=\"evil\\\"} 1\\ngpudoctor_fake 2\"} 612.345");
    lacks(t, "\ngpudoctor_fake");
    free(t);
    snapshot_free(s);
}

static void add_proc(struct gpu *g, uint32_t pid, uint64_t used)
{
    g->procs = xrealloc(g->procs, (g->n_procs + 1) * sizeof(*g->procs));
    memset(&g->procs[g->n_procs], 0, sizeof(*g->procs));
    g->procs[g->n_procs].pid = pid;
    g->procs[g->n_procs].used_bytes = used;
    g->procs[g->n_procs].valid = UINT64_C(1) << GPU_PROC_S_USED;
    g->n_procs++;
}

static void test_processes(void **state)
{
    struct snapshot *s = one_gpu();
    struct gpu *g = &s->gpus[0];
    struct proc *p;
    char *t;

    (void)state;
    gpu_set_rc(g, GPU_S_PROCESSES, 0);
    add_proc(g, 100, 1000);
    add_proc(g, 200, 5000);
    add_proc(g, 300, 3000);
    add_proc(g, 400, 0);
    g->procs[3].valid = 0; /* memory unknown: never a series */
    s->procs.n_procs = 1;
    s->procs.procs = p = xcalloc(1, sizeof(*p));
    p->pid = 200;
    p->comm = xstrdup("python3");
    p->user = xstrdup("alice");
    p->valid = (UINT64_C(1) << PROC_S_STAT) | (UINT64_C(1) << PROC_S_USER_NAME);

    t = render(s, NULL, 2);
    has_line(t, "gpudoctor_gpu_processes{" L0 "} 4");
    has_line(t, "gpudoctor_process_gpu_memory_bytes{gpu=\"0\",uuid=\"" UUID0
                "\",pid=\"200\",command=\"python3\",user=\"alice\"} 5000");
    has_line(t,
             "gpudoctor_process_gpu_memory_bytes{gpu=\"0\",uuid=\"" UUID0 "\",pid=\"300\"} 3000");
    lacks(t, "pid=\"100\"");
    lacks(t, "pid=\"400\"");
    has_line(t, "gpudoctor_process_gpu_memory_omitted 1");
    /* largest first */
    assert_true(strstr(t, "pid=\"200\"") < strstr(t, "pid=\"300\""));
    free(t);
    snapshot_free(s);
}

static void test_findings_and_xids(void **state)
{
    struct snapshot *s = one_gpu();
    struct findings f = { 0 };
    struct klog_event *e;
    char *t;

    (void)state;
    s->driver.n_events = 4;
    s->driver.events = e = xcalloc(4, sizeof(*e));
    for (int i = 0; i < 4; i++) {
        e[i].kind = KLOG_XID;
        e[i].xid = i < 2 ? 79 : 13;
        e[i].pci = xstrdup(i == 3 ? "0000:3b:00" : "0000:18:00");
        e[i].valid = UINT64_C(1) << KLOG_S_XID;
    }

    f.n = f.cap = 3;
    f.items = xcalloc(3, sizeof(*f.items));
    for (size_t i = 0; i < 3; i++) {
        f.items[i].rule = rule_table[0];
        f.items[i].severity = SEV_CRITICAL;
        f.items[i].subject.gpu_index = i == 2 ? 1 : 0;
        f.items[i].subject.pid = -1;
    }
    t = render(s, &f, 20);
    has_line(t, "gpudoctor_gpu_xid_errors_total{" L0 ",xid=\"13\"} 1");
    has_line(t, "gpudoctor_gpu_xid_errors_total{" L0 ",xid=\"79\"} 2");
    has_line(t, "gpudoctor_gpu_xid_errors_total{pci=\"0000:3b:00\",xid=\"13\"} 1");
    /* two findings of one rule about one subject are one series */
    assert_int_equal(count(t, "gpudoctor_finding{"), 2);
    {
        char line[256];

        snprintf(line, sizeof(line),
                 "gpudoctor_finding{id=\"%s\",severity=\"critical\",subject=\"gpu=1\"} 1",
                 rule_table[0]->id);
        has_line(t, line);
    }
    has_line(t, "gpudoctor_findings{severity=\"critical\"} 3");
    has_line(t, "gpudoctor_findings{severity=\"warning\"} 0");
    has_line(t, "gpudoctor_check_status 2");
    free(t);
    findings_free(&f);
    snapshot_free(s);
}

/* ---- what serve remembers between collections ---- */

/* Sets s's kernel log to n XID lines: line i has kernel stamp stamps[i] (µs), XID xids[i]. */
static void set_log(struct snapshot *s, size_t n, const int64_t *stamps, const int *xids,
                    const char *pci, enum collector_state state)
{
    struct klog_event *e = xcalloc(n + 1, sizeof(*e));

    for (size_t i = 0; i < s->driver.n_events; i++) {
        free(s->driver.events[i].pci);
        free(s->driver.events[i].message);
    }
    free(s->driver.events);
    for (size_t i = 0; i < n; i++) {
        e[i].kind = KLOG_XID;
        e[i].xid = xids[i];
        e[i].uptime_us = stamps[i];
        e[i].pci = xstrdup(pci);
        e[i].message = xstrdup("pid=1, name=python, Ch 00000008");
        e[i].valid = UINT64_C(1) << KLOG_S_XID | UINT64_C(1) << KLOG_S_UPTIME;
    }
    s->driver.events = e;
    s->driver.n_events = n;
    s->driver.valid |= 1u << DRIVER_S_KLOG;
    s->collectors[COLLECTOR_KLOG].state = state;
}

static char *render_with(const struct snapshot *s, const struct metrics_memory *m)
{
    struct metrics_cycle cyc = { .success = true, .cycles = 1, .memory = m };
    struct metrics_opts o = { 20 };

    return metrics_render(s, NULL, &cyc, &o, NULL);
}

/* The log rotates while XIDs arrive: the counter counts each line once and never goes down. */
static void test_xid_counter_survives_rotation(void **state)
{
    struct snapshot *s = one_gpu();
    struct metrics_memory m = { 0 };
    const int64_t t1[] = { 100, 200, 300 }, t2[] = { 200, 300, 400 }, t3[] = { 400, 500, 500 };
    const int x1[] = { 13, 13, 79 }, x2[] = { 13, 79, 13 }, x3[] = { 13, 13, 13 };
    char *t;

    (void)state;
    /* one_gpu's GPU is at 00000000:18:00.0 */
    set_log(s, 3, t1, x1, "0000:18:00", CS_OK);
    metrics_memory_update(&m, s);
    t = render_with(s, &m);
    has_line(t, "gpudoctor_gpu_xid_errors_total{" L0 ",xid=\"13\"} 2");
    has_line(t, "gpudoctor_gpu_xid_errors_total{" L0 ",xid=\"79\"} 1");
    free(t);

    /* the line at 100 left the log, one at 400 came: 3 lines of XID 13 seen, not 2 */
    set_log(s, 3, t2, x2, "0000:18:00", CS_OK);
    metrics_memory_update(&m, s);
    t = render_with(s, &m);
    has_line(t, "gpudoctor_gpu_xid_errors_total{" L0 ",xid=\"13\"} 3");
    has_line(t, "gpudoctor_gpu_xid_errors_total{" L0 ",xid=\"79\"} 1");
    free(t);
    /* the log counted as it is says 2: what the counter did before */
    t = render_with(s, NULL);
    has_line(t, "gpudoctor_gpu_xid_errors_total{" L0 ",xid=\"13\"} 2");
    free(t);

    /* the same log again: nothing new */
    metrics_memory_update(&m, s);
    t = render_with(s, &m);
    has_line(t, "gpudoctor_gpu_xid_errors_total{" L0 ",xid=\"13\"} 3");
    free(t);

    /* two identical lines (one stamp) are two XIDs; the one at 400 was counted already */
    set_log(s, 3, t3, x3, "0000:18:00", CS_OK);
    metrics_memory_update(&m, s);
    t = render_with(s, &m);
    has_line(t, "gpudoctor_gpu_xid_errors_total{" L0 ",xid=\"13\"} 5");
    free(t);

    /* no log read this time: the counts stay */
    s->driver.valid &= ~(1u << DRIVER_S_KLOG);
    set_log(s, 0, NULL, NULL, "", CS_FAILED);
    s->driver.valid &= ~(1u << DRIVER_S_KLOG);
    metrics_memory_update(&m, s);
    t = render_with(s, &m);
    has_line(t, "gpudoctor_gpu_xid_errors_total{" L0 ",xid=\"13\"} 5");
    has_line(t, "gpudoctor_gpu_xid_errors_total{" L0 ",xid=\"79\"} 1");
    free(t);
    metrics_memory_free(&m);
    snapshot_free(s);
}

/* A read cut short leaves lines out; when they come back they are not counted again. */
static void test_xid_counter_partial_read(void **state)
{
    struct snapshot *s = one_gpu();
    struct metrics_memory m = { 0 };
    const int64_t t[] = { 100, 200, 300 };
    const int x[] = { 48, 48, 48 };
    char *text;

    (void)state;
    set_log(s, 3, t, x, "0000:3b:00", CS_OK);
    metrics_memory_update(&m, s);
    set_log(s, 2, t, x, "0000:3b:00", CS_PARTIAL);
    metrics_memory_update(&m, s);
    set_log(s, 3, t, x, "0000:3b:00", CS_OK);
    metrics_memory_update(&m, s);
    text = render_with(s, &m);
    /* no GPU has the address: labelled by it */
    has_line(text, "gpudoctor_gpu_xid_errors_total{pci=\"0000:3b:00\",xid=\"48\"} 3");
    free(text);
    metrics_memory_free(&m);
    snapshot_free(s);
}

/* A GPU that stops answering keeps the labels it had, and its XID 79 counts in its series. */
static void test_lost_gpu_keeps_its_labels(void **state)
{
    struct snapshot *s = one_gpu();
    struct metrics_memory m = { 0 };
    struct gpu *g = &s->gpus[0];
    const int64_t t1[] = { 100 }, t2[] = { 100, 900 };
    const int x1[] = { 13 }, x2[] = { 13, 79 };
    char *t;

    (void)state;
    set_log(s, 1, t1, x1, "0000:18:00", CS_OK); /* one_gpu's GPU is at 00000000:18:00.0 */
    metrics_memory_update(&m, s);

    g->handle_rc = 15; /* GPU_IS_LOST: nothing of it is read */
    set_log(s, 2, t2, x2, "0000:18:00", CS_OK);
    metrics_memory_update(&m, s);
    t = render_with(s, &m);
    has_line(t, "gpudoctor_gpu_up{" L0 "} 0");
    has_line(t, "gpudoctor_gpu_xid_errors_total{" L0 ",xid=\"13\"} 1");
    has_line(t, "gpudoctor_gpu_xid_errors_total{" L0 ",xid=\"79\"} 1");
    lacks(t, "pci=\"0000:18:00\"");
    free(t);

    /* without the memory: its index alone, its XIDs by address */
    t = render_with(s, NULL);
    has_line(t, "gpudoctor_gpu_up{gpu=\"0\"} 0");
    has_line(t, "gpudoctor_gpu_xid_errors_total{pci=\"0000:18:00\",xid=\"79\"} 1");
    free(t);

    /* another GPU at that index, at another address, is not the one remembered */
    g->handle_rc = 0;
    free(g->uuid);
    g->uuid = NULL;
    gpu_set_rc(g, GPU_S_UUID, 3);
    free(g->pci_bus_id);
    g->pci_bus_id = xstrdup("00000000:9a:00.0");
    t = render_with(s, &m);
    has_line(t, "gpudoctor_gpu_up{gpu=\"0\",name=\"NVIDIA H100 80GB HBM3\"} 1");
    free(t);
    metrics_memory_free(&m);
    snapshot_free(s);
}

/* SXid counters do not go down either. */
static void test_sxid_counter_survives_rotation(void **state)
{
    struct snapshot *s = one_gpu();
    struct metrics_memory m = { 0 };
    const int64_t t1[] = { 100, 200 }, t2[] = { 300 };
    const int x[] = { 12028, 12028 };
    char *t;

    (void)state;
    set_log(s, 2, t1, x, "0000:05:00", CS_OK);
    for (size_t i = 0; i < 2; i++) {
        s->driver.events[i].kind = KLOG_SXID;
        s->driver.events[i].sxid = 12028;
        s->driver.events[i].sxid_fatal = true;
        s->driver.events[i].valid = UINT64_C(1) << KLOG_S_SXID | UINT64_C(1) << KLOG_S_UPTIME;
    }
    metrics_memory_update(&m, s);
    set_log(s, 1, t2, x, "0000:05:00", CS_OK);
    s->driver.events[0].kind = KLOG_SXID;
    s->driver.events[0].sxid = 12028;
    s->driver.events[0].sxid_fatal = true;
    s->driver.events[0].valid = UINT64_C(1) << KLOG_S_SXID | UINT64_C(1) << KLOG_S_UPTIME;
    metrics_memory_update(&m, s);
    t = render_with(s, &m);
    has_line(t, "gpudoctor_nvswitch_sxid_errors_total{pci=\"0000:05:00\",fatal=\"true\"} 3");
    free(t);
    metrics_memory_free(&m);
    snapshot_free(s);
}

/* A failed collection: only its own health, no GPU series. */
static void test_failed_cycle(void **state)
{
    struct metrics_cycle cyc = { .duration_s = 0.5, .cycles = 1, .check_status = 3 };
    struct metrics_opts o = { 20 };
    char *t = metrics_render(NULL, NULL, &cyc, &o, NULL);

    (void)state;
    has_line(t, "gpudoctor_collect_success 0");
    lacks(t, "gpudoctor_gpu_");
    lacks(t, "gpudoctor_last_collect_timestamp_seconds");
    lacks(t, "gpudoctor_check_status");
    free(t);
}

/* Before the first collection: no success or duration of a collection that did not happen. */
static void test_before_first_cycle(void **state)
{
    struct metrics_cycle cyc = { .cycles = 0, .check_status = 3 };
    struct metrics_opts o = { 20 };
    char *t = metrics_render(NULL, NULL, &cyc, &o, NULL);

    (void)state;
    has_line(t, "gpudoctor_collect_cycles_total 0");
    lacks(t, "gpudoctor_collect_success");
    lacks(t, "gpudoctor_collect_duration_seconds");
    lacks(t, "gpudoctor_last_collect_timestamp_seconds");
    free(t);
}

/* ---- the last bench result ---- */

static void bench_gpu_fill(struct bench_gpu *g, uint32_t index, const char *name, const char *pci)
{
    g->index = index;
    g->name = xstrdup(name);
    g->pci_bus_id = xstrdup(pci);
    g->h2d_pinned_bytes_per_s = 50.4e9;
    bench_gpu_set(g, BG_H2D_PINNED);
    g->d2h_pinned_bytes_per_s = 49e9;
    bench_gpu_set(g, BG_D2H_PINNED);
    g->triad_bytes_per_s = 3.0e12;
    bench_gpu_set(g, BG_TRIAD);
    g->fma_flops = 5e13;
    bench_gpu_set(g, BG_FMA);
    g->checksum_ok = true;
    bench_gpu_set(g, BG_CHECKSUM);
}

static void test_bench(void **state)
{
    struct snapshot *s = one_gpu();
    struct bench_info b = { .state = BENCH_OK };
    struct metrics_cycle cyc = { .success = true, .cycles = 1, .bench = &b, .bench_read = 1 };
    struct metrics_opts o = { 20 };
    char *t;

    (void)state;
    cyc.bench_completed_ms = 1767225600250;
    b.n_gpus = 2;
    b.gpus = xcalloc(2, sizeof(*b.gpus));
    /* CUDA writes the domain with 4 digits, NVML with 8: the same GPU */
    bench_gpu_fill(&b.gpus[0], 0, "NVIDIA H100 80GB HBM3", "0000:18:00.0");
    bench_gpu_fill(&b.gpus[1], 1, "NVIDIA H100 80GB HBM3", "0000:2a:00.0");
    b.gpus[1].checksum_ok = false;
    b.gpus[1].fma_flops = 0;
    b.gpus[1].valid &= ~(UINT64_C(1) << BG_FMA); /* not measured: no series */
    b.n_pairs = 1;
    b.pairs = xcalloc(1, sizeof(*b.pairs));
    b.pairs[0] = (struct bench_pair){ .src = 0, .dst = 1, .bytes_per_s = 4e11, .latency_us = 2.5 };
    t = metrics_render(s, NULL, &cyc, &o, NULL);
    has_line(t, "gpudoctor_bench_last_read 1");
    has_line(t, "gpudoctor_bench_last_timestamp_seconds 1767225600.25");
    has_line(t, "# TYPE gpudoctor_bench_host_copy_bytes_per_second gauge");
    has_line(t, "gpudoctor_bench_host_copy_bytes_per_second{" L0
                ",pci_bus_id=\"0000:18:00.0\",direction=\"h2d\",memory=\"pinned\"} 5.04e+10");
    has_line(t, "gpudoctor_bench_host_copy_bytes_per_second{name=\"NVIDIA H100 80GB HBM3\","
                "pci_bus_id=\"0000:2a:00.0\",direction=\"d2h\",memory=\"pinned\"} 4.9e+10");
    has_line(t, "gpudoctor_bench_memory_bytes_per_second{" L0
                ",pci_bus_id=\"0000:18:00.0\",method=\"triad\"} 3e+12");
    has_line(t, "gpudoctor_bench_compute_flops{" L0 ",pci_bus_id=\"0000:18:00.0\"} 5e+13");
    lacks(t, "gpudoctor_bench_compute_flops{name");
    has_line(t, "gpudoctor_bench_checksum_ok{" L0 ",pci_bus_id=\"0000:18:00.0\"} 1");
    has_line(t, "gpudoctor_bench_checksum_ok{name=\"NVIDIA H100 80GB HBM3\","
                "pci_bus_id=\"0000:2a:00.0\"} 0");
    has_line(t,
             "gpudoctor_bench_p2p_bytes_per_second{src_gpu=\"0\",src_pci_bus_id=\"0000:18:00.0\","
             "dst_pci_bus_id=\"0000:2a:00.0\"} 4e+11");
    has_line(t, "gpudoctor_bench_p2p_latency_seconds{src_gpu=\"0\",src_pci_bus_id=\"0000:18:00.0\","
                "dst_pci_bus_id=\"0000:2a:00.0\"} 2.5e-06");
    lacks(t, "gpudoctor_bench_memory_bytes_per_second{name=\"NVIDIA H100 80GB HBM3\","
             "pci_bus_id=\"0000:2a:00.0\",method=\"device_copy\"}");
    free(t);

    /* an unusable file: the gauge says so, no figure is shown */
    cyc.bench = NULL;
    cyc.bench_read = -1;
    t = metrics_render(s, NULL, &cyc, &o, NULL);
    has_line(t, "gpudoctor_bench_last_read 0");
    lacks(t, "gpudoctor_bench_host_copy");
    lacks(t, "gpudoctor_bench_last_timestamp");
    free(t);
    /* no bench kept (or the state off): nothing at all */
    cyc.bench_read = 0;
    t = metrics_render(s, NULL, &cyc, &o, NULL);
    lacks(t, "gpudoctor_bench_");
    free(t);
    /* the bench figures stay when the collection failed: they come from a file */
    cyc.bench = &b;
    cyc.bench_read = 1;
    cyc.success = false;
    t = metrics_render(NULL, NULL, &cyc, &o, NULL);
    has_line(t, "gpudoctor_bench_checksum_ok{name=\"NVIDIA H100 80GB HBM3\","
                "pci_bus_id=\"0000:18:00.0\"} 1");
    free(t);
    bench_info_free(&b);
    snapshot_free(s);
}

static void test_age(void **state)
{
    char buf[256], tiny[16];
    size_t n;

    (void)state;
    n = metrics_render_age(buf, sizeof(buf), 1.5);
    assert_int_equal(n, strlen(buf));
    has_line(buf, "gpudoctor_data_age_seconds 1.500");
    has_line(buf, "# TYPE gpudoctor_data_age_seconds gauge");
    metrics_render_age(buf, sizeof(buf), -3);
    has_line(buf, "gpudoctor_data_age_seconds 0.000");
    assert_int_equal(metrics_render_age(tiny, sizeof(tiny), 1), sizeof(tiny) - 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_values),
        cmocka_unit_test(test_latest_sample),
        cmocka_unit_test(test_escaping),
        cmocka_unit_test(test_processes),
        cmocka_unit_test(test_findings_and_xids),
        cmocka_unit_test(test_failed_cycle),
        cmocka_unit_test(test_xid_counter_survives_rotation),
        cmocka_unit_test(test_xid_counter_partial_read),
        cmocka_unit_test(test_lost_gpu_keeps_its_labels),
        cmocka_unit_test(test_sxid_counter_survives_rotation),
        cmocka_unit_test(test_before_first_cycle),
        cmocka_unit_test(test_age),
        cmocka_unit_test(test_bench),
        cmocka_unit_test(test_host_memory_errors),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
