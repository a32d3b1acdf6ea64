/*
 * The pieces of watch that are plain functions: history graphs, the two-run judgement (live
 * rules over the window, trend rules over the history, merged, trends yielding), new and cleared
 * findings, carrying slow collectors' parts between cycles, the NVLink and InfiniBand rows, and
 * recordings: written line by line,
 * read back by check --from with the samples as history, errors named by line and column.
 */
#include "rules/config.h"
#include "rules/rules-trend.h"
#include "rules/rules.h"
#include "util/xalloc.h"
#include "watch/graph.h"
#include "watch/recording.h"
#include "watch/watch.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#define GIB (UINT64_C(1) << 30)
#define MIB (UINT64_C(1) << 20)

/* ---- graphs ---- */

static void test_graph(void **state)
{
    const double v[] = { 0, 12.5, 25, 50, 75, 100, NAN, 150, -3 };
    char buf[64];

    (void)state;
    /* Eight heights; NaN a blank; out of range clamped. */
    assert_int_equal(graph_render(buf, sizeof(buf), v, 9, 0, 100, 9, false), 9);
    assert_string_equal(buf, "_.-=*# #_");
    /* Fewer readings than cells: blanks on the left; more: the newest. */
    graph_render(buf, sizeof(buf), v, 3, 0, 100, 5, false);
    assert_string_equal(buf, "  _.-");
    graph_render(buf, sizeof(buf), v, 6, 0, 100, 2, false);
    assert_string_equal(buf, "*#");
    /* UTF-8 blocks, three bytes a cell. */
    graph_render(buf, sizeof(buf), v, 2, 0, 100, 2, true);
    assert_string_equal(buf, "\u2581\u2582");
    /* A buffer too small gets fewer cells, still terminated. */
    assert_int_equal(graph_render(buf, 7, v, 6, 0, 100, 6, true), 2);
    assert_int_equal(strlen(buf), 6);
    /* A flat scale does not divide by zero. */
    graph_render(buf, sizeof(buf), v, 2, 5, 5, 2, false);
    assert_string_equal(buf, "_#");
}

/* ---- judging ---- */

/* A GPU 0 held by pid 4121, whose memory grows 10 MiB/s over `seconds` seconds of readings. */
static struct snapshot *leaking(double seconds)
{
    struct snapshot *s = snapshot_new();
    struct gpu *g;

    s->time_ms = 1764669600000;
    s->nvml.attempted = true;
    s->collectors[COLLECTOR_NVML].state = CS_OK;
    s->gpus = xcalloc(1, sizeof(*s->gpus));
    s->n_gpus = 1;
    g = &s->gpus[0];
    gpu_init(g, 0);
    g->handle_rc = 0;
    g->mem_total_bytes = 80 * GIB;
    g->util_gpu_pct = 90;
    gpu_set_rc(g, GPU_S_MEM_TOTAL, 0);
    gpu_set_rc(g, GPU_S_MEM_USED, 0);
    gpu_set_rc(g, GPU_S_UTIL_GPU, 0);
    gpu_set_rc(g, GPU_S_PROCESSES, 0);
    g->procs = xcalloc(1, sizeof(*g->procs));
    g->n_procs = 1;
    g->procs[0].pid = 4121;
    g->procs[0].type_mask = GPU_PROC_COMPUTE;
    g->procs[0].valid = 1u << GPU_PROC_S_USED;
    for (double t = 0; t <= seconds; t += 1) {
        struct sample *smp = snapshot_add_sample(s, (int64_t)(t * 1000));

        if (smp == NULL)
            abort();
        g->procs[0].used_bytes = 10 * GIB + (uint64_t)(t * 10.0 * (double)MIB);
        g->mem_used_bytes = g->procs[0].used_bytes;
        smp->gpus = xcalloc(1, sizeof(*smp->gpus));
        smp->n_gpus = 1;
        gpu_copy(&smp->gpus[0], g);
    }
    return s;
}

/* Both runs, as a cycle of watch makes them. */
static void judge(const struct snapshot *s, const struct history *recent,
                  const struct history *full, const struct watch_rules *wr, struct findings *out)
{
    struct findings trends = { 0 };

    watch_trends(s, full, wr, &trends);
    watch_judge(s, recent, &trends, wr, out);
    findings_free(&trends);
}

static const struct finding *find(const struct findings *f, const char *id)
{
    for (size_t i = 0; i < f->n; i++) {
        if (strcmp(f->items[i].rule->id, id) == 0)
            return &f->items[i];
    }
    return NULL;
}

static void test_judge_two_runs(void **state)
{
    struct snapshot *s = leaking(300);
    struct history full = { s->samples, s->n_samples }, recent;
    struct config cfg;
    struct watch_rules wr;
    struct findings f = { 0 };

    (void)state;
    config_init(&cfg);
    watch_rules_init(&wr, &cfg.rules);
    recent = watch_recent(&full, 10000);
    assert_int_equal(recent.n, 11); /* readings within 10 s of the last, both ends included */
    assert_ptr_equal(recent.samples, full.samples + full.n - 11);
    /* The trend is in the history, not in the window. */
    judge(s, &recent, &full, &wr, &f);
    assert_non_null(find(&f, "mem.leak"));
    findings_free(&f);
    judge(s, &recent, &recent, &wr, &f);
    assert_null(find(&f, "mem.leak"));
    findings_free(&f);
    /* One trend run serves many cycles: each gets its own copies. */
    {
        struct findings trends = { 0 }, a = { 0 }, b = { 0 };
        const struct finding *leak;

        watch_trends(s, &full, &wr, &trends);
        watch_judge(s, &recent, &trends, &wr, &a);
        watch_judge(s, &recent, &trends, &wr, &b);
        findings_free(&a);
        findings_free(&trends);
        leak = find(&b, "mem.leak");
        if (leak == NULL)
            fail_msg("no leak in the second cycle");
        else if (strstr(leak->title, "pid 4121 on GPU 0 grows 600 MiB/min") == NULL ||
                 leak->n_evidence < 2 || leak->n_fix < 2 ||
                 strstr(leak->evidence[1], "growth 600 MiB/min") == NULL)
            fail_msg("the copy differs: %s", leak->title);
        findings_free(&b);
    }
    /* A rule disabled in the configuration stays disabled in both runs. */
    watch_rules_free(&wr);
    config_set(&cfg, "disable=mem.leak", &(char *){ NULL });
    watch_rules_init(&wr, &cfg.rules);
    judge(s, &recent, &full, &wr, &f);
    assert_null(find(&f, "mem.leak"));
    findings_free(&f);
    /* Each run has only its rules. */
    for (size_t i = 0; i < n_rules; i++) {
        assert_int_equal(wr.trend.disabled[i], !rule_is_trend(rule_table[i]) ||
                                                   strcmp(rule_table[i]->id, "mem.leak") == 0);
        assert_int_equal(wr.live.disabled[i], rule_is_trend(rule_table[i]));
    }
    watch_rules_free(&wr);
    config_free(&cfg);
    snapshot_free(s);
}

/* A GPU idle for 20 minutes with its memory held by a stopped process. */
static struct snapshot *stopped_holder(void)
{
    struct snapshot *s = snapshot_new();
    struct gpu *g;
    struct proc *p;

    s->time_ms = 1764669600000;
    s->nvml.attempted = true;
    s->collectors[COLLECTOR_NVML].state = CS_OK;
    s->collectors[COLLECTOR_PROCS].state = CS_OK;
    s->gpus = xcalloc(1, sizeof(*s->gpus));
    s->n_gpus = 1;
    g = &s->gpus[0];
    gpu_init(g, 0);
    g->handle_rc = 0;
    g->mem_total_bytes = 80 * GIB;
    g->mem_used_bytes = 70 * GIB;
    gpu_set_rc(g, GPU_S_MEM_TOTAL, 0);
    gpu_set_rc(g, GPU_S_MEM_USED, 0);
    gpu_set_rc(g, GPU_S_UTIL_GPU, 0);
    gpu_set_rc(g, GPU_S_PROCESSES, 0);
    g->procs = xcalloc(1, sizeof(*g->procs));
    g->n_procs = 1;
    g->procs[0].pid = 39104;
    g->procs[0].type_mask = GPU_PROC_COMPUTE;
    g->procs[0].used_bytes = 70 * GIB;
    g->procs[0].valid = 1u << GPU_PROC_S_USED;
    s->procs.procs = xcalloc(1, sizeof(*s->procs.procs));
    s->procs.n_procs = 1;
    s->procs.valid = 1u << PROC_TABLE_S_SCAN;
    p = &s->procs.procs[0];
    p->pid = 39104;
    p->ppid = 1000;
    p->state = 'T';
    p->start_ticks = 5;
    p->start_time_ms = s->time_ms - 7200000;
    p->uid = 1000;
    p->comm = xstrdup("python");
    p->valid = (1u << PROC_S_STAT) | (1u << PROC_S_START_TIME) | (1u << PROC_S_USER);
    p->gpus = xcalloc(1, sizeof(*p->gpus));
    p->n_gpus = 1;
    p->gpus[0].gpu_index = 0;
    p->gpus[0].minor = 0;
    p->gpus[0].nvml_listed = true;
    p->gpus[0].type_mask = GPU_PROC_COMPUTE;
    p->gpus[0].used_bytes = 70 * GIB;
    p->gpus[0].valid = (1u << PROC_GPU_S_INDEX) | (1u << PROC_GPU_S_USED);
    for (double t = 0; t <= 1200; t += 5) {
        struct sample *smp = snapshot_add_sample(s, (int64_t)(t * 1000));

        if (smp == NULL)
            abort();
        smp->gpus = xcalloc(1, sizeof(*smp->gpus));
        smp->n_gpus = 1;
        gpu_copy(&smp->gpus[0], g);
    }
    return s;
}

static void test_judge_trend_yields_to_live(void **state)
{
    struct snapshot *s = stopped_holder();
    struct history full = { s->samples, s->n_samples }, recent = watch_recent(&full, 10000);
    struct config cfg;
    struct watch_rules wr;
    struct findings f = { 0 }, trend_only = { 0 };
    size_t crit = 0;

    (void)state;
    config_init(&cfg);
    watch_rules_init(&wr, &cfg.rules);
    /* Alone, the trend rule finds the idle GPU... */
    watch_trends(s, &full, &wr, &trend_only);
    assert_non_null(find(&trend_only, "mem.idle-held"));
    /* ...but the stopped holder the live rules name explains it: the trend finding goes. */
    judge(s, &recent, &full, &wr, &f);
    assert_non_null(find(&f, "proc.stopped-holder"));
    assert_null(find(&f, "mem.idle-held"));
    /* Ranked by severity. */
    for (size_t i = 0; i < f.n; i++) {
        if (f.items[i].severity == SEV_CRITICAL)
            assert_int_equal(i, crit++);
    }
    assert_true(crit > 0);
    findings_free(&f);
    findings_free(&trend_only);
    watch_rules_free(&wr);
    config_free(&cfg);
    snapshot_free(s);
}

/* ---- new and cleared ---- */

static void test_marks(void **state)
{
    struct snapshot *s = leaking(300);
    struct history full = { s->samples, s->n_samples };
    struct config cfg;
    struct watch_rules wr;
    struct findings f = { 0 }, none = { 0 };
    struct watch_marks m = { 0 };
    const struct watch_mark *mk;

    (void)state;
    config_init(&cfg);
    watch_rules_init(&wr, &cfg.rules);
    judge(s, &full, &full, &wr, &f);
    watch_marks_update(&m, &f, 1000);
    mk = watch_marks_find(&m, find(&f, "mem.leak"));
    assert_non_null(mk);
    assert_string_equal(mk->key, "mem.leak gpu=0 pid=4121");
    assert_int_equal(mk->since_ms, 1000);
    assert_int_equal(mk->cleared_ms, -1);
    watch_marks_update(&m, &f, 2000);
    mk = watch_marks_find(&m, find(&f, "mem.leak"));
    assert_true(mk != NULL && mk->since_ms == 1000);
    /* Gone: cleared, kept a while, then forgotten. */
    watch_marks_update(&m, &none, 3000);
    assert_int_equal(m.n, f.n);
    for (size_t i = 0; i < m.n; i++)
        assert_int_equal(m.items[i].cleared_ms, 3000);
    watch_marks_update(&m, &none, 3000 + WATCH_CLEARED_SHOW_MS);
    assert_int_equal(m.n, f.n);
    watch_marks_update(&m, &none, 3001 + WATCH_CLEARED_SHOW_MS);
    assert_int_equal(m.n, 0);
    /* Back again: new again. */
    watch_marks_update(&m, &f, 50000);
    mk = watch_marks_find(&m, find(&f, "mem.leak"));
    assert_true(mk != NULL && mk->since_ms == 50000);
    watch_marks_free(&m);
    findings_free(&f);
    watch_rules_free(&wr);
    config_free(&cfg);
    snapshot_free(s);
}

/* ---- carrying slow collectors' parts ---- */

static void test_carry(void **state)
{
    struct snapshot *prev = snapshot_new(), *s = snapshot_new();

    (void)state;
    prev->collectors[COLLECTOR_PROCS].state = CS_OK;
    prev->procs.procs = xcalloc(1, sizeof(*prev->procs.procs));
    prev->procs.n_procs = 1;
    prev->procs.procs[0].pid = 77;
    prev->collectors[COLLECTOR_STACK].state = CS_PARTIAL;
    collector_note(&prev->collectors[COLLECTOR_STACK], "a note");
    prev->collectors[COLLECTOR_DRIVER].state = CS_OK;
    prev->collectors[COLLECTOR_KLOG].state = CS_OK;
    prev->driver.klog_records = 12;
    prev->collectors[COLLECTOR_PCIE].state = CS_OK;
    prev->pcie.devices_scanned = 9;
    /* s ran the PCIe collector itself: its own part stays. */
    s->collectors[COLLECTOR_PCIE].state = CS_UNAVAILABLE;
    watch_carry(s, prev);
    assert_int_equal(s->procs.n_procs, 1);
    assert_int_equal(s->procs.procs[0].pid, 77);
    assert_int_equal(s->collectors[COLLECTOR_PROCS].state, CS_OK);
    assert_int_equal(prev->procs.n_procs, 0);
    assert_int_equal(s->collectors[COLLECTOR_STACK].state, CS_PARTIAL);
    assert_string_equal(s->collectors[COLLECTOR_STACK].notes[0], "a note");
    assert_int_equal(s->driver.klog_records, 12);
    assert_int_equal(s->collectors[COLLECTOR_KLOG].state, CS_OK);
    assert_int_equal(s->collectors[COLLECTOR_PCIE].state, CS_UNAVAILABLE);
    assert_int_equal(s->pcie.devices_scanned, 0);
    watch_carry(s, NULL);
    snapshot_free(prev);
    snapshot_free(s);
}

/* The fabric collector runs every 10 s in watch: the cycles between carry its part. */
static void test_carry_fabric(void **state)
{
    struct snapshot *prev = snapshot_new(), *s = snapshot_new();

    (void)state;
    prev->collectors[COLLECTOR_FABRIC].state = CS_OK;
    prev->fabric.fm_running = true;
    prev->fabric.fm_pid = 4242;
    watch_carry(s, prev);
    assert_int_equal(s->collectors[COLLECTOR_FABRIC].state, CS_OK);
    assert_true(s->fabric.fm_running);
    assert_int_equal(s->fabric.fm_pid, 4242);
    /* a cycle that ran it keeps its own */
    snapshot_free(prev);
    prev = s;
    s = snapshot_new();
    s->collectors[COLLECTOR_FABRIC].state = CS_UNAVAILABLE;
    watch_carry(s, prev);
    assert_false(s->fabric.fm_running);
    snapshot_free(prev);
    snapshot_free(s);
}

/* ---- the fabric rows ---- */

/* A reading of GPU idx with links 0 and 1: link 1 down; counters as given (link 0, link 1). */
static void nvlink_gpu(struct gpu *g, uint32_t idx, uint64_t tx0, uint64_t tx1, uint64_t replay1)
{
    gpu_init(g, idx);
    g->handle_rc = 0;
    g->rc[GPU_S_NVLINK] = 0;
    g->nvlinks = xcalloc(2, sizeof(*g->nvlinks));
    g->n_nvlinks = 2;
    for (uint32_t l = 0; l < 2; l++) {
        struct gpu_nvlink *k = &g->nvlinks[l];

        gpu_nvlink_init(k, l);
        k->active = l == 0;
        k->tx_kib = l == 0 ? tx0 : tx1;
        k->rx_kib = k->tx_kib / 2;
        k->replay_errors = l == 1 ? replay1 : 0;
        for (int slot = 0; slot < NVL_S__COUNT; slot++)
            k->rc[slot] = 0;
    }
}

static void test_nvlink_rows(void **state)
{
    struct sample smp[3] = { { .t_ms = 0 }, { .t_ms = 1000 }, { .t_ms = 3000 } };
    struct history h = { smp, 3 };
    struct watch_nvlink nv;
    int32_t worst;

    (void)state;
    for (size_t i = 0; i < 3; i++) {
        smp[i].gpus = xcalloc(2, sizeof(*smp[i].gpus));
        smp[i].n_gpus = 2;
        gpu_init(&smp[i].gpus[1], 1); /* GPU 1: no NVLink (the list not supported) */
        smp[i].gpus[1].handle_rc = 0;
        smp[i].gpus[1].rc[GPU_S_NVLINK] = 3;
    }
    nvlink_gpu(&smp[0].gpus[0], 0, 0, 0, 0);
    nvlink_gpu(&smp[1].gpus[0], 0, 1024, 2048, 5);
    /* 2 s later: link 0 moved 4096 KiB sent + 2048 received; link 1's counter was reset */
    nvlink_gpu(&smp[2].gpus[0], 0, 5120, 1024, 12);
    assert_true(watch_nvlink_of(&h, 0, &nv));
    assert_int_equal(nv.known, 2);
    assert_int_equal(nv.up, 1);
    assert_true(nv.traffic_known);
    /* (4096 + 2048) + (1024 + 512 from the reset) KiB over 2 s */
    assert_float_equal(nv.bytes_per_s, (6144.0 + 1536.0) * 1024.0 / 2.0, 0.001);
    assert_true(nv.errors_known);
    assert_int_equal(nv.errors, 7);
    assert_false(watch_nvlink_of(&h, 1, &nv));
    assert_false(watch_nvlink_of(&h, 9, &nv));
    assert_true(watch_nvlink_total(&h, &nv, &worst));
    assert_int_equal(worst, 0);
    assert_int_equal(nv.errors, 7);

    /* A counter not read in the reading before: the errors are not known, the state still is */
    smp[1].gpus[0].nvlinks[1].rc[NVL_S_REPLAY] = 3;
    assert_true(watch_nvlink_of(&h, 0, &nv));
    assert_false(nv.errors_known);
    assert_int_equal(nv.errors, 0);
    assert_true(watch_nvlink_total(&h, &nv, &worst));
    assert_int_equal(worst, -1);

    /* One reading only: links, no rates */
    h.n = 1;
    assert_true(watch_nvlink_of(&h, 0, &nv));
    assert_int_equal(nv.up, 1);
    assert_false(nv.traffic_known);
    assert_false(nv.errors_known);
    h.n = 3;
    /* A GPU NVML lost: nothing to show */
    smp[2].gpus[0].handle_rc = 15;
    assert_false(watch_nvlink_of(&h, 0, &nv));
    for (size_t i = 0; i < 3; i++) {
        for (size_t k = 0; k < smp[i].n_gpus; k++)
            gpu_free(&smp[i].gpus[k]);
        free(smp[i].gpus);
    }
}

static void ib_port_set(struct ib_port *p, const char *dev, uint32_t state, const char *name)
{
    p->device = xstrdup(dev);
    p->port = 1;
    p->state = state;
    p->state_name = xstrdup(name);
    p->valid = UINT64_C(1) << IB_S_STATE;
    for (int c = 0; c < IB_C__COUNT; c++)
        p->valid |= UINT64_C(1) << (IB_S_COUNTER + c) | UINT64_C(1) << (IB_S_WINDOW + c);
}

static void test_ib_rows(void **state)
{
    struct snapshot *s = snapshot_new();
    struct watch_ib ib;

    (void)state;
    s->window_ms = 500;
    s->ib.ports = xcalloc(2, sizeof(*s->ib.ports));
    s->ib.n_ports = 2;
    ib_port_set(&s->ib.ports[0], "mlx5_0", IB_STATE_ACTIVE, "ACTIVE");
    ib_port_set(&s->ib.ports[1], "mlx5_1", IB_STATE_DOWN, "DOWN");
    s->ib.ports[0].window[IB_C_PORT_RCV_DATA] = 1000; /* 4-byte words */
    s->ib.ports[0].window[IB_C_PORT_XMIT_DATA] = 250;
    s->ib.ports[0].window[IB_C_SYMBOL_ERROR] = 3;
    s->ib.ports[0].window[IB_C_PORT_XMIT_DISCARDS] = 40; /* congestion, not an error */
    s->ib.ports[1].window[IB_C_LINK_DOWNED] = 1;
    watch_ib_port(s, &s->ib.ports[0], &ib);
    assert_int_equal(ib.active, 1);
    assert_null(ib.first_down);
    assert_true(ib.traffic_known);
    assert_float_equal(ib.rx_bytes_per_s, 8000.0, 0.001);
    assert_float_equal(ib.tx_bytes_per_s, 2000.0, 0.001);
    assert_true(ib.errors_known);
    assert_int_equal(ib.errors, 3);
    assert_true(watch_ib_total(s, &ib));
    assert_int_equal(ib.ports, 2);
    assert_int_equal(ib.active, 1);
    assert_ptr_equal(ib.first_down, &s->ib.ports[1]);
    assert_int_equal(ib.errors, 4);
    /* One port without a counter read: the total is unknown, not smaller */
    s->ib.ports[1].valid &= ~(UINT64_C(1) << (IB_S_WINDOW + IB_C_SYMBOL_ERROR));
    assert_true(watch_ib_total(s, &ib));
    assert_false(ib.errors_known);
    assert_true(ib.traffic_known);
    /* No window: no rates, no growth */
    s->window_ms = 0;
    watch_ib_port(s, &s->ib.ports[0], &ib);
    assert_false(ib.traffic_known);
    assert_false(ib.errors_known);
    snapshot_free(s);
    s = snapshot_new();
    assert_false(watch_ib_total(s, &ib));
    snapshot_free(s);
}

/* ---- recordings ---- */

static char tmpdir[64];

static int make_tmp(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/test-watch-XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int remove_tmp(void **state)
{
    char cmd[128];

    (void)state;
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");

    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static size_t count_lines(const char *path, size_t *snapshots)
{
    char line[1 << 16];
    size_t n = 0;
    FILE *f = fopen(path, "r");

    *snapshots = 0;
    assert_non_null(f);
    while (fgets(line, sizeof(line), f)) {
        n++;
        *snapshots += strstr(line, "\"schema\"") != NULL;
    }
    fclose(f);
    return n;
}

static void test_recording_round_trip(void **state)
{
    struct snapshot *s = leaking(300), *back;
    char path[128], *cause = NULL;
    struct recorder *r;
    struct config cfg;
    struct findings f = { 0 };
    const struct finding *leak;
    size_t lines, contexts;

    (void)state;
    snprintf(path, sizeof(path), "%s/rec.jsonl", tmpdir);
    r = recorder_open(path, &cause);
    assert_non_null(r);
    for (size_t k = 0; k < s->n_samples; k++) {
        /* The process table changes once: a new context line. */
        if (k == 200) {
            s->procs.procs = xcalloc(1, sizeof(*s->procs.procs));
            s->procs.n_procs = 1;
            s->procs.procs[0].pid = 4121;
            s->procs.procs[0].start_ticks = 9;
            s->procs.procs[0].valid = 1u << PROC_S_STAT;
        }
        if (recorder_write(r, s, &s->samples[k], s->samples[k].t_ms, &cause) != 0)
            fail_msg("%s", cause);
    }
    assert_int_equal(recorder_lines(r), s->n_samples + 2);
    recorder_close(r);
    lines = count_lines(path, &contexts);
    assert_int_equal(lines, s->n_samples + 2);
    assert_int_equal(contexts, 2);
    /* Read back: the last context, every sample, judged at the end of the recording. */
    back = recording_load(path, &cause);
    if (back == NULL)
        fail_msg("%s", cause);
    assert_int_equal(back->n_samples, s->n_samples);
    assert_int_equal(back->procs.n_procs, 1);
    assert_int_equal(back->time_ms, s->time_ms + 300000);
    assert_int_equal(back->samples[150].gpus[0].procs[0].used_bytes,
                     s->samples[150].gpus[0].procs[0].used_bytes);
    config_init(&cfg);
    rules_run(back, NULL, &cfg.rules, &f);
    leak = find(&f, "mem.leak");
    if (leak == NULL)
        fail_msg("no leak found in the recording");
    else
        assert_int_equal(leak->subject.pid, 4121);
    findings_free(&f);
    config_free(&cfg);
    snapshot_free(back);
    snapshot_free(s);
}

/* A recording cut short mid-line (the recorder was killed): the whole lines are kept. */
static void test_recording_cut_short(void **state)
{
    char path[128], *cause = NULL;
    struct snapshot *back;

    (void)state;
    snprintf(path, sizeof(path), "%s/cut.jsonl", tmpdir);
    write_file(path, "{\"schema\": \"gpudoctor.snapshot/1\", \"time_ms\": 1000}\n"
                     "{\"t_ms\": 0, \"gpus\": []}\n"
                     "{\"t_ms\": 1000, \"gpus\": []}\n"
                     "{\"t_ms\": 2000, \"gp");
    back = recording_load(path, &cause);
    if (back == NULL)
        fail_msg("%s", cause);
    assert_int_equal(back->n_samples, 2);
    assert_int_equal(back->time_ms, 2000);
    snapshot_free(back);
}

static void load_fails(const char *text, const char *want)
{
    char path[128], *cause = NULL;
    struct snapshot *s;

    snprintf(path, sizeof(path), "%s/bad.jsonl", tmpdir);
    write_file(path, text);
    s = recording_load(path, &cause);
    if (s != NULL)
        fail_msg("loaded: %s", text);
    if (strncmp(cause, path, strlen(path)) != 0 || strstr(cause, want) == NULL)
        fail_msg("message \"%s\" lacks \"%s\"", cause, want);
    free(cause);
}

static void test_recording_errors(void **state)
{
    (void)state;
    /* Each error names the line and, where it can, the column and the field. */
    load_fails("{\"schema\": \"gpudoctor.snapshot/1\"}\n{\"t_ms\": 0}\n{\"t_ms\": \"x\"}\n", ":3:");
    load_fails("{\"schema\": \"gpudoctor.snapshot/1\"}\n{\"t_ms\": 0}\n{\"t_ms\": \"x\"}\n",
               "t_ms");
    load_fails("{\"schema\": \"gpudoctor.snapshot/1\"}\n{\"t_ms\": 0, \"gpus\": [{\"index\": 0, "
               "\"temp_c\": \"hot\"}]}\n",
               ":2:");
    load_fails("{\"schema\": \"gpudoctor.snapshot/1\"}\n{\"t_ms\": 0, \"gpus\": [{\"index\": 0, "
               "\"temp_c\": \"hot\"}]}\n",
               "gpus[0].temp_c");
    load_fails("{\"schema\": \"gpudoctor.snapshot/1\"}\n{\"t_ms\": 0}\nnot json\n{\"t_ms\": 5}\n",
               ":3:3: '[' or '{' expected near 'not'");
    load_fails("{\"schema\": \"gpudoctor.snapshot/1\"}\n[1, 2]\n", ":2: expected a JSON object");
    load_fails("{\"schema\": \"gpudoctor.snapshot/1\"}\n{\"t_ms\": 5000}\n{\"t_ms\": 1000}\n",
               ":3: t_ms 1000 is before the previous sample's 5000");
    load_fails("{\"t_ms\": 0}\n{\"t_ms\": 1000}\n", ":1: a recording starts with a snapshot");
    load_fails("{\"schema\": \"gpudoctor.snapshot/1\"}\n{\"schema\": \"other/2\"}\n", ":2:");
    load_fails("{\"schema\": \"gpudoctor.snapshot/9\"}\n", "unsupported schema");
    load_fails("", "empty");
    load_fails("\n\n", "empty");
    /* Not a recording: an indented snapshot is read whole, its errors as snapshot_load's. */
    load_fails("{\n  \"schema\": \"gpudoctor.snapshot/1\",\n  \"time_ms\": \"soon\"\n}\n",
               "time_ms: expected an integer");
    load_fails("{\n  \"schema\": \"gpudoctor.snapshot/1\",\n  \"time_ms\": }\n", ":3:14:");
}

static void test_indented_snapshot_still_loads(void **state)
{
    char path[128], *cause = NULL;
    struct snapshot *s;

    (void)state;
    snprintf(path, sizeof(path), "%s/snap.json", tmpdir);
    write_file(path, "{\n  \"schema\": \"gpudoctor.snapshot/1\",\n  \"time_ms\": 42,\n"
                     "  \"samples\": [{\"t_ms\": 0}, {\"t_ms\": 2000}]\n}\n");
    s = recording_load(path, &cause);
    if (s == NULL)
        fail_msg("%s", cause);
    assert_int_equal(s->time_ms, 42);
    assert_int_equal(s->n_samples, 2);
    snapshot_free(s);
    s = recording_load("/nonexistent/rec.jsonl", &cause);
    assert_null(s);
    assert_string_equal(cause, "/nonexistent/rec.jsonl: No such file or directory");
    free(cause);
}

/* A write that fails leaves whole lines only, and stops the recorder with a reason. */
static void test_recorder_full_disk(void **state)
{
    struct snapshot *s = leaking(5);
    struct recorder *r;
    char *cause = NULL;
    int rc = 0;

    (void)state;
    if (access("/dev/full", W_OK) != 0)
        skip();
    r = recorder_open("/dev/full", &cause);
    assert_non_null(r);
    for (size_t k = 0; k < s->n_samples && rc == 0; k++)
        rc = recorder_write(r, s, &s->samples[k], s->samples[k].t_ms, &cause);
    assert_int_equal(rc, -1);
    assert_non_null(strstr(cause, "recording to /dev/full stopped: No space left on device"));
    free(cause);
    cause = NULL;
    /* Later writes do nothing. */
    assert_int_equal(recorder_write(r, s, &s->samples[0], 0, &cause), 0);
    recorder_close(r);
    snapshot_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_graph),
        cmocka_unit_test(test_judge_two_runs),
        cmocka_unit_test(test_judge_trend_yields_to_live),
        cmocka_unit_test(test_marks),
        cmocka_unit_test(test_carry),
        cmocka_unit_test(test_carry_fabric),
        cmocka_unit_test(test_nvlink_rows),
        cmocka_unit_test(test_ib_rows),
        cmocka_unit_test(test_recording_round_trip),
        cmocka_unit_test(test_recording_cut_short),
        cmocka_unit_test(test_recording_errors),
        cmocka_unit_test(test_indented_snapshot_still_loads),
        cmocka_unit_test(test_recorder_full_disk),
    };

    return cmocka_run_group_tests(tests, make_tmp, remove_tmp);
}
