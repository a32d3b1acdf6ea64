/*
 * The trend rules (src/rules/rules-trend.c) over histories built sample by sample: a leak is
 * found with its pid, slope and time-to-full, and a caching allocator's warm-up, a sawtooth, a
 * reused pid or a noisy series are not; an idle GPU holding memory, swinging utilisation,
 * repeated throttling and a temperature climb are found past their thresholds and not before.
 */
#include "nvml/nvml-abi.h"
#include "rules/config.h"
#include "rules/rules-trend.h"
#include "rules/rules.h"
#include "util/xalloc.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define MIB (UINT64_C(1) << 20)
#define GIB (UINT64_C(1) << 30)

/* ---- building snapshots ---- */

static void valid(struct gpu *g, enum gpu_slot slot)
{
    gpu_set_rc(g, slot, 0);
}

/* A snapshot of n healthy, busy 80 GiB GPUs without processes, at a fixed time. */
static struct snapshot *snap_new(size_t n)
{
    struct snapshot *s = snapshot_new();

    s->time_ms = 1764669600000;
    s->nvml.attempted = true;
    s->collectors[COLLECTOR_NVML].state = CS_OK;
    s->collectors[COLLECTOR_PROCS].state = CS_OK;
    s->gpus = xcalloc(n, sizeof(*s->gpus));
    s->n_gpus = n;
    for (size_t i = 0; i < n; i++) {
        struct gpu *g = &s->gpus[i];

        gpu_init(g, (uint32_t)i);
        g->handle_rc = 0;
        g->mem_total_bytes = 80 * GIB;
        g->mem_used_bytes = 1 * GIB;
        g->mem_free_bytes = 79 * GIB;
        g->util_gpu_pct = 90;
        g->temp_c = 60;
        g->temp_slowdown_c = 89;
        g->temp_shutdown_c = 92;
        g->clock_sm_mhz = 1980;
        g->power_mw = 500000;
        g->power_limit_mw = 700000;
        valid(g, GPU_S_MEM_TOTAL);
        valid(g, GPU_S_MEM_USED);
        valid(g, GPU_S_MEM_FREE);
        valid(g, GPU_S_UTIL_GPU);
        valid(g, GPU_S_TEMP);
        valid(g, GPU_S_TEMP_SLOWDOWN);
        valid(g, GPU_S_TEMP_SHUTDOWN);
        valid(g, GPU_S_EVENT_REASONS);
        valid(g, GPU_S_CLOCK_SM);
        valid(g, GPU_S_POWER);
        valid(g, GPU_S_POWER_LIMIT);
        valid(g, GPU_S_PROCESSES);
    }
    return s;
}

/* Lists pid as a compute process on GPU gi holding bytes (in the snapshot itself). */
static void gpu_add_proc(struct gpu *g, uint32_t pid, uint64_t bytes)
{
    struct gpu_proc *p;

    g->procs = xreallocarray(g->procs, g->n_procs + 1, sizeof(*g->procs));
    p = &g->procs[g->n_procs++];
    memset(p, 0, sizeof(*p));
    p->pid = pid;
    p->type_mask = GPU_PROC_COMPUTE;
    p->used_bytes = bytes;
    p->valid = 1u << GPU_PROC_S_USED;
}

/* A process table entry: a running python job of alice started an hour before the snapshot. */
static void table_add_proc(struct snapshot *s, int32_t pid, uint64_t start_ticks)
{
    struct proc *p;

    s->procs.procs = xreallocarray(s->procs.procs, s->procs.n_procs + 1, sizeof(*s->procs.procs));
    p = &s->procs.procs[s->procs.n_procs++];
    memset(p, 0, sizeof(*p));
    p->pid = pid;
    p->ppid = 1000;
    p->start_ticks = start_ticks;
    p->start_time_ms = s->time_ms - 3600000;
    p->state = 'R';
    p->user = xstrdup("alice");
    p->comm = xstrdup("python");
    p->cmdline = xstrdup("python train.py");
    p->valid = (UINT64_C(1) << PROC_S_STAT) | (UINT64_C(1) << PROC_S_START_TIME) |
               (UINT64_C(1) << PROC_S_USER) | (UINT64_C(1) << PROC_S_USER_NAME) |
               (UINT64_C(1) << PROC_S_CMDLINE);
}

/* Appends a sample at t_s seconds whose GPUs are copies of the snapshot's. */
static struct sample *add_sample(struct snapshot *s, double t_s)
{
    struct sample *smp = snapshot_add_sample(s, (int64_t)llround(t_s * 1000.0));

    if (smp == NULL)
        abort();
    smp->gpus = xcalloc(s->n_gpus, sizeof(*smp->gpus));
    smp->n_gpus = s->n_gpus;
    for (size_t i = 0; i < s->n_gpus; i++)
        gpu_copy(&smp->gpus[i], &s->gpus[i]);
    return smp;
}

/* Sets pid's memory on GPU g of a sample, keeping the GPU's used and free figures consistent. */
static void set_used(struct gpu *g, uint32_t pid, uint64_t bytes)
{
    for (size_t i = 0; i < g->n_procs; i++) {
        if (g->procs[i].pid == pid) {
            g->mem_used_bytes = g->mem_used_bytes - g->procs[i].used_bytes + bytes;
            g->mem_free_bytes = g->mem_total_bytes - g->mem_used_bytes;
            g->procs[i].used_bytes = bytes;
        }
    }
}

/* The snapshot's own GPUs take the values of its last sample (as a collection leaves them). */
static void settle(struct snapshot *s)
{
    const struct sample *last = &s->samples[s->n_samples - 1];

    for (size_t i = 0; i < s->n_gpus; i++) {
        gpu_free(&s->gpus[i]);
        gpu_copy(&s->gpus[i], &last->gpus[i]);
    }
}

static void run(const struct snapshot *s, struct config *cfg, struct findings *f)
{
    memset(f, 0, sizeof(*f));
    rules_run(s, NULL, &cfg->rules, f);
}

static void set(struct config *cfg, const char *assignment)
{
    char *cause = NULL;

    if (config_set(cfg, assignment, &cause) != 0)
        fail_msg("%s", cause);
}

static const struct finding *find(const struct findings *f, const char *id, int32_t gpu)
{
    for (size_t i = 0; i < f->n; i++) {
        if (strcmp(f->items[i].rule->id, id) == 0 && f->items[i].subject.gpu_index == gpu)
            return &f->items[i];
    }
    return NULL;
}

/* The finding, or the test fails. */
static const struct finding *must_find(const struct findings *f, const char *id, int32_t gpu)
{
    const struct finding *x = find(f, id, gpu);

    if (x == NULL) {
        fail_msg("no %s finding on GPU %d", id, (int)gpu);
        abort(); /* not reached: cmocka's fail does not return */
    }
    return x;
}

static size_t count(const struct findings *f, const char *id)
{
    size_t n = 0;

    for (size_t i = 0; i < f->n; i++)
        n += strcmp(f->items[i].rule->id, id) == 0;
    return n;
}

static bool has_evidence(const struct finding *f, const char *text)
{
    for (size_t i = 0; i < f->n_evidence; i++) {
        if (strstr(f->evidence[i], text))
            return true;
    }
    return false;
}

/* ---- mem.leak ---- */

/*
 * GPU 0 runs pid 4121 (and pid 5000, steady at 4 GiB); pid 4121's memory is bytes_at(t) at each
 * second from 0 to seconds.
 */
static struct snapshot *leak_snap(double seconds, uint64_t (*bytes_at)(double t, void *arg),
                                  void *arg)
{
    struct snapshot *s = snap_new(2);

    gpu_add_proc(&s->gpus[0], 4121, 0);
    gpu_add_proc(&s->gpus[0], 5000, 4 * GIB);
    s->gpus[0].mem_used_bytes = 4 * GIB;
    s->gpus[0].mem_free_bytes = 76 * GIB;
    table_add_proc(s, 4121, 777);
    table_add_proc(s, 5000, 888);
    for (double t = 0; t <= seconds; t += 1) {
        struct sample *smp = add_sample(s, t);

        set_used(&smp->gpus[0], 4121, bytes_at(t, arg));
    }
    settle(s);
    return s;
}

static uint64_t linear(double t, void *arg)
{
    double per_s = *(const double *)arg;

    return 10 * GIB + (uint64_t)(per_s * t);
}

static void test_leak_found_with_pid_slope_and_time_to_full(void **state)
{
    double rate = 10.0 * MIB; /* 600 MiB a minute */
    struct snapshot *s = leak_snap(300, linear, &rate);
    struct config cfg;
    struct findings f;
    const struct finding *leak;

    (void)state;
    config_init(&cfg);
    run(s, &cfg, &f);
    assert_int_equal(count(&f, "mem.leak"), 1);
    leak = must_find(&f, "mem.leak", 0);
    assert_int_equal(leak->subject.pid, 4121);
    assert_string_equal(leak->subject.user, "alice");
    /* 80 GiB - 4 GiB - 10 GiB - 3000 MiB = 63.07 GiB free, at 600 MiB/min: 1h47m. */
    assert_string_equal(leak->title, "pid 4121 on GPU 0 grows 600 MiB/min: GPU full in ~1h47m");
    assert_int_equal(leak->severity, SEV_WARNING);
    assert_true(has_evidence(leak, "growth 600 MiB/min (10.0 MiB/s)"));
    assert_true(has_evidence(leak, "explains 100 %"));
    assert_true(has_evidence(leak, "grew from 10.0 GiB to 12.9 GiB in 5m"));
    findings_free(&f);
    config_free(&cfg);
    snapshot_free(s);
}

static void test_leak_critical_when_full_soon(void **state)
{
    double rate = 50.0 * MIB; /* 3000 MiB a minute: 80 GiB fills in minutes */
    struct snapshot *s = leak_snap(300, linear, &rate);
    struct config cfg;
    struct findings f;
    const struct finding *leak;

    (void)state;
    config_init(&cfg);
    run(s, &cfg, &f);
    leak = must_find(&f, "mem.leak", 0);
    assert_int_equal(leak->severity, SEV_CRITICAL);
    if (strstr(leak->title, "grows 2.9 GiB/min") == NULL)
        fail_msg("title: %s", leak->title);
    findings_free(&f);
    /* The threshold decides: with 0 s nothing is critical. */
    set(&cfg, "leak_full_critical_s=0");
    run(s, &cfg, &f);
    assert_int_equal(must_find(&f, "mem.leak", 0)->severity, SEV_WARNING);
    findings_free(&f);
    config_free(&cfg);
    snapshot_free(s);
}

/* A caching allocator: 6 GiB in the first 20 s, then flat. */
static uint64_t warm_up(double t, void *arg)
{
    (void)arg;
    return t < 20 ? 2 * GIB + (uint64_t)(t * 0.3 * GIB) : 8 * GIB;
}

/* Grows 20 MiB/s for 100 s, frees it all, grows again: the last rise is too short. */
static uint64_t sawtooth(double t, void *arg)
{
    (void)arg;
    return 2 * GIB + (uint64_t)(fmod(t, 100.0) * 20.0 * MIB);
}

/* Grows 1 GiB over 5 minutes but jumps by +-1.5 GiB around that line. */
static uint64_t noisy(double t, void *arg)
{
    (void)arg;
    return 4 * GIB + (uint64_t)(t * GIB / 300.0) + ((long)t % 2 ? 3 * GIB / 2 : 0);
}

static void test_leak_not_found_for_plateaus_sawtooth_noise(void **state)
{
    uint64_t (*cases[])(double, void *) = { warm_up, sawtooth, noisy };
    struct config cfg;

    (void)state;
    config_init(&cfg);
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        struct snapshot *s = leak_snap(300, cases[i], NULL);
        struct findings f;

        run(s, &cfg, &f);
        if (count(&f, "mem.leak") != 0)
            fail_msg("case %zu: unexpected leak: %s", i, must_find(&f, "mem.leak", 0)->title);
        findings_free(&f);
        snapshot_free(s);
    }
    config_free(&cfg);
}

static void test_leak_thresholds(void **state)
{
    double rate = 1.0 * MIB; /* 300 MiB in 5 minutes */
    struct snapshot *s = leak_snap(300, linear, &rate);
    struct config cfg;
    struct findings f;

    (void)state;
    config_init(&cfg);
    run(s, &cfg, &f);
    assert_non_null(find(&f, "mem.leak", 0));
    findings_free(&f);
    /* Less growth than leak_min_growth_mib is not a leak. */
    set(&cfg, "leak_min_growth_mib=512");
    run(s, &cfg, &f);
    assert_null(find(&f, "mem.leak", 0));
    findings_free(&f);
    /* Nor a growth shorter than trend_min_duration_s. */
    config_free(&cfg);
    config_init(&cfg);
    set(&cfg, "trend_min_duration_s=400");
    run(s, &cfg, &f);
    assert_null(find(&f, "mem.leak", 0));
    findings_free(&f);
    config_free(&cfg);
    snapshot_free(s);
}

static void test_leak_history_too_short_is_a_skip(void **state)
{
    double rate = 10.0 * MIB;
    struct snapshot *s = leak_snap(60, linear, &rate);
    struct config cfg;
    struct findings f;
    size_t skips = 0;

    (void)state;
    config_init(&cfg);
    run(s, &cfg, &f);
    assert_null(find(&f, "mem.leak", 0));
    for (size_t i = 0; i < f.n_skips; i++) {
        if (rule_is_trend(f.skips[i].rule)) {
            assert_string_equal(f.skips[i].reason, "needs a history of 3m or more (gpudoctor "
                                                   "watch, serve, or check --from a recording)");
            assert_int_equal(f.skips[i].gpu_index, -1);
            skips++;
        }
    }
    assert_int_equal(skips, 6); /* one per trend rule, not per GPU */
    findings_free(&f);
    config_free(&cfg);
    snapshot_free(s);
}

/* The pid belonged to another process for the first half: only the second half counts. */
static void test_leak_pid_reuse_restarts_the_series(void **state)
{
    double rate = 10.0 * MIB;
    struct snapshot *s = leak_snap(300, linear, &rate);
    struct config cfg;
    struct findings f;

    (void)state;
    config_init(&cfg);
    for (size_t k = 0; k < s->n_samples; k++) {
        struct sample *smp = &s->samples[k];

        smp->procs = xcalloc(1, sizeof(*smp->procs));
        smp->n_procs = 1;
        smp->procs[0].pid = 4121;
        smp->procs[0].start_ticks = k < 200 ? 111 : 777;
    }
    run(s, &cfg, &f);
    assert_null(find(&f, "mem.leak", 0)); /* 100 s of the current process: too short */
    findings_free(&f);
    set(&cfg, "trend_min_duration_s=60");
    run(s, &cfg, &f);
    assert_non_null(find(&f, "mem.leak", 0));
    assert_true(has_evidence(must_find(&f, "mem.leak", 0), "(101 readings)"));
    findings_free(&f);
    config_free(&cfg);
    snapshot_free(s);
}

/* ---- mem.idle-held ---- */

static struct snapshot *idle_snap(double seconds, double busy_at)
{
    struct snapshot *s = snap_new(1);

    gpu_add_proc(&s->gpus[0], 4121, 20 * GIB);
    s->gpus[0].mem_used_bytes = 20 * GIB;
    table_add_proc(s, 4121, 777);
    for (double t = 0; t <= seconds; t += 5) {
        struct sample *smp = add_sample(s, t);

        smp->gpus[0].util_gpu_pct = t == busy_at ? 50 : 0;
    }
    settle(s);
    return s;
}

static void test_idle_held(void **state)
{
    struct snapshot *s = idle_snap(1200, 100);
    struct config cfg;
    struct findings f;
    const struct finding *idle;

    (void)state;
    config_init(&cfg);
    run(s, &cfg, &f);
    idle = must_find(&f, "mem.idle-held", 0);
    assert_string_equal(idle->title, "GPU 0 idle for 18m while 20.0 GiB of its memory is held");
    assert_true(has_evidence(idle, "in all 220 readings"));
    assert_true(has_evidence(idle, "pid 4121 (alice: python train.py) holds 20.0 GiB"));
    findings_free(&f);
    snapshot_free(s);

    /* Busy 5 minutes ago: idle for 5 minutes only. */
    s = idle_snap(1200, 900);
    run(s, &cfg, &f);
    assert_null(find(&f, "mem.idle-held", 0));
    findings_free(&f);
    set(&cfg, "idle_held_min_s=240");
    run(s, &cfg, &f);
    assert_non_null(find(&f, "mem.idle-held", 0));
    findings_free(&f);
    snapshot_free(s);

    /* Idle from the first reading: "at least". */
    s = idle_snap(1200, -1);
    run(s, &cfg, &f);
    assert_non_null(strstr(must_find(&f, "mem.idle-held", 0)->title, "idle for at least 20m"));
    findings_free(&f);
    snapshot_free(s);
    config_free(&cfg);
}

static void test_idle_without_memory_is_not_held(void **state)
{
    struct snapshot *s = idle_snap(1200, -1);
    struct config cfg;
    struct findings f;

    (void)state;
    config_init(&cfg);
    for (size_t k = 0; k < s->n_samples; k++)
        set_used(&s->samples[k].gpus[0], 4121, 100 * MIB); /* below holder_min_mib */
    run(s, &cfg, &f);
    assert_null(find(&f, "mem.idle-held", 0));
    findings_free(&f);
    config_free(&cfg);
    snapshot_free(s);
}

/* ---- perf.util-swing ---- */

/* GPU 0 with a compute process; utilisation from util_at(t) every second for 10 minutes. */
static struct snapshot *util_snap(uint32_t (*util_at)(double t))
{
    struct snapshot *s = snap_new(1);

    gpu_add_proc(&s->gpus[0], 4121, 20 * GIB);
    table_add_proc(s, 4121, 777);
    for (double t = 0; t <= 600; t += 1)
        add_sample(s, t)->gpus[0].util_gpu_pct = util_at(t);
    settle(s);
    return s;
}

/* 30 s at 98 %, 30 s at 5 %: 20 changes of band in 10 minutes and a second. */
static uint32_t square_wave(double t)
{
    return fmod(t, 60.0) < 30 ? 98 : 5;
}

static uint32_t steady(double t)
{
    return 90 + (uint32_t)fmod(t, 7.0); /* 90-96 %: noise, not swings */
}

/* One drop in the middle of a busy run. */
static uint32_t one_dip(double t)
{
    return t > 300 && t < 320 ? 0 : 97;
}

static void test_util_swing(void **state)
{
    struct snapshot *s = util_snap(square_wave);
    struct config cfg;
    struct findings f;
    const struct finding *sw;

    (void)state;
    config_init(&cfg);
    run(s, &cfg, &f);
    sw = must_find(&f, "perf.util-swing", 0);
    assert_string_equal(sw->title, "GPU 0 utilisation swings between 5 and 98 % (20 times in 10m)");
    assert_true(has_evidence(sw, "52 % busy on average over 601 readings"));
    findings_free(&f);
    set(&cfg, "util_swing_min_count=21");
    run(s, &cfg, &f);
    assert_null(find(&f, "perf.util-swing", 0));
    findings_free(&f);
    snapshot_free(s);

    s = util_snap(steady);
    run(s, &cfg, &f);
    assert_null(find(&f, "perf.util-swing", 0));
    findings_free(&f);
    snapshot_free(s);
    s = util_snap(one_dip);
    run(s, &cfg, &f);
    assert_null(find(&f, "perf.util-swing", 0));
    findings_free(&f);
    snapshot_free(s);
    config_free(&cfg);
}

/* ---- clock.throttle-episodes ---- */

/* Throttled by reasons for 20 s at the start of each of the first `episodes` minutes of ten. */
static struct snapshot *throttle_snap(unsigned episodes, uint64_t reasons)
{
    struct snapshot *s = snap_new(1);

    for (double t = 0; t <= 600; t += 1) {
        struct gpu *g = &add_sample(s, t)->gpus[0];
        bool on = t < 60.0 * episodes && fmod(t, 60.0) < 20;

        g->clocks_event_reasons = on ? reasons : 0;
        g->clock_sm_mhz = on ? 1410 : 1980;
    }
    settle(s);
    return s;
}

static void test_throttle_episodes(void **state)
{
    struct snapshot *s =
        throttle_snap(4, NVML_CLOCKS_EVENT_SW_THERMAL | NVML_CLOCKS_EVENT_SW_POWER_CAP);
    struct config cfg;
    struct findings f;
    const struct finding *th;

    (void)state;
    config_init(&cfg);
    run(s, &cfg, &f);
    th = must_find(&f, "clock.throttle-episodes", 0);
    assert_string_equal(th->title, "GPU 0 throttled 4 times in 10m (software power cap, software "
                                   "thermal slowdown)");
    assert_true(has_evidence(th, "throttled in 80 of 601 readings (13 % of the time)"));
    assert_true(has_evidence(th, "longest episode 20s"));
    assert_true(has_evidence(th, "SM clock between 1410 and 1980 MHz"));
    findings_free(&f);
    snapshot_free(s);

    /* Two episodes are below throttle_min_episodes; the idle reason is not throttling. */
    s = throttle_snap(2, NVML_CLOCKS_EVENT_SW_THERMAL);
    run(s, &cfg, &f);
    assert_null(find(&f, "clock.throttle-episodes", 0));
    findings_free(&f);
    snapshot_free(s);
    s = throttle_snap(8, NVML_CLOCKS_EVENT_GPU_IDLE);
    run(s, &cfg, &f);
    assert_null(find(&f, "clock.throttle-episodes", 0));
    findings_free(&f);
    /* Episodes older than trend_window_s do not count. */
    snapshot_free(s);
    s = throttle_snap(4, NVML_CLOCKS_EVENT_HW_SLOWDOWN);
    set(&cfg, "trend_window_s=400");
    run(s, &cfg, &f);
    assert_null(find(&f, "clock.throttle-episodes", 0));
    findings_free(&f);
    snapshot_free(s);
    config_free(&cfg);
}

/* ---- clock.temp-rising ---- */

/* Flat at 60 °C for `flat` seconds, then climbing per_min °C a minute, to 600 s. */
static struct snapshot *temp_snap(double flat, double per_min)
{
    struct snapshot *s = snap_new(1);

    for (double t = 0; t <= 600; t += 1) {
        double c = 60 + (t > flat ? (t - flat) * per_min / 60.0 : 0);

        add_sample(s, t)->gpus[0].temp_c = (uint32_t)c;
    }
    settle(s);
    return s;
}

static void test_temp_rising(void **state)
{
    struct snapshot *s = temp_snap(240, 2.0); /* 72 °C after 6 minutes of climbing */
    struct config cfg;
    struct findings f;
    const struct finding *tr;

    (void)state;
    config_init(&cfg);
    run(s, &cfg, &f);
    tr = must_find(&f, "clock.temp-rising", 0);
    /* The flat start is not part of the climb: 2 °C/min, (89 - 72) / 2 = 8.5 minutes. */
    assert_non_null(
        strstr(tr->title, "GPU 0 heating up 2.0 °C/min: 72 °C, slowdown at 89 °C in ~8m"));
    findings_free(&f);
    /* Too slow to matter within temp_rise_eta_s. */
    snapshot_free(s);
    s = temp_snap(0, 0.5);
    run(s, &cfg, &f);
    assert_null(find(&f, "clock.temp-rising", 0));
    findings_free(&f);
    snapshot_free(s);
    /* Within thermal_margin_c of slowdown: clock.thermal-slowdown's case, not this one. */
    s = temp_snap(0, 2.6); /* 86 °C at the end */
    run(s, &cfg, &f);
    assert_null(find(&f, "clock.temp-rising", 0));
    assert_non_null(find(&f, "clock.thermal-slowdown", 0));
    findings_free(&f);
    snapshot_free(s);
    config_free(&cfg);
}

/* ---- the table ---- */

static void test_trend_rules_in_table(void **state)
{
    static const char *const ids[] = { "mem.leak",          "mem.idle-held",
                                       "perf.util-swing",   "clock.throttle-episodes",
                                       "clock.temp-rising", "perf.collective-stalled" };
    size_t n = 0;

    (void)state;
    for (size_t i = 0; i < ARRAY_SIZE(ids); i++) {
        const struct rule *r = rule_find(ids[i]);

        assert_non_null(r);
        assert_true(rule_is_trend(r));
    }
    for (size_t i = 0; i < n_rules; i++)
        n += rule_is_trend(rule_table[i]);
    assert_int_equal(n, ARRAY_SIZE(ids));
    assert_false(rule_is_trend(rule_find("mem.full-idle")));
}

/* A long history on eight GPUs is judged, and nothing is found on a healthy server. */
static void test_long_healthy_history(void **state)
{
    struct snapshot *s = snap_new(8);
    struct config cfg;
    struct findings f;

    (void)state;
    config_init(&cfg);
    for (size_t i = 0; i < 8; i++)
        gpu_add_proc(&s->gpus[i], 100 + (uint32_t)i, 60 * GIB);
    for (double t = 0; t < 3600; t += 1) {
        struct sample *smp = add_sample(s, t);

        for (size_t i = 0; i < 8; i++)
            smp->gpus[i].util_gpu_pct = 95 + (uint32_t)fmod(t + (double)i, 5.0);
    }
    settle(s);
    run(s, &cfg, &f);
    for (size_t i = 0; i < f.n; i++)
        if (rule_is_trend(f.items[i].rule))
            fail_msg("unexpected %s: %s", f.items[i].rule->id, f.items[i].title);
    findings_free(&f);
    config_free(&cfg);
    snapshot_free(s);
}

/* ---- perf.collective-stalled ---- */

/*
 * Two GPUs, one rank of a job on each (pids 4121 and 4122, launched by the same parent), for
 * `seconds`; from `stall_at` on both spin: 100 % busy, 120 of 700 W, 1 MiB/s over PCIe. Before
 * that they work (95 %, 600 W, 2 GiB/s).
 */
static struct snapshot *stall_snap(double seconds, double stall_at, uint32_t stall_power_w)
{
    struct snapshot *s = snap_new(2);

    for (uint32_t i = 0; i < 2; i++) {
        gpu_add_proc(&s->gpus[i], 4121 + i, 30 * GIB);
        valid(&s->gpus[i], GPU_S_PCIE_TX);
        valid(&s->gpus[i], GPU_S_PCIE_RX);
        table_add_proc(s, (int32_t)(4121 + i), 777);
    }
    for (double t = 0; t <= seconds; t += 5) {
        struct sample *smp = add_sample(s, t);

        for (size_t i = 0; i < 2; i++) {
            struct gpu *g = &smp->gpus[i];
            bool spin = stall_at >= 0 && t >= stall_at;

            g->util_gpu_pct = spin ? 100 : 95;
            g->power_mw = spin ? stall_power_w * 1000 : 600000;
            g->pcie_tx_bytes_per_s = spin ? MIB / 2 : 2 * GIB;
            g->pcie_rx_bytes_per_s = spin ? MIB / 2 : 2 * GIB;
        }
    }
    settle(s);
    return s;
}

static void test_collective_stalled(void **state)
{
    struct snapshot *s = stall_snap(1200, 600, 120);
    struct config cfg;
    struct findings f;
    const struct finding *x;

    (void)state;
    config_init(&cfg);
    run(s, &cfg, &f);
    x = must_find(&f, "perf.collective-stalled", 0);
    assert_int_equal(count(&f, "perf.collective-stalled"), 1); /* one job, one finding */
    assert_string_equal(x->title, "GPUs 0, 1 of one job busy but drawing idle power for 10m: a "
                                  "stalled collective?");
    assert_true(
        has_evidence(x, "the job: the processes started by pid 1000, 2 processes on GPUs 0, 1"));
    assert_true(has_evidence(x, "GPU 1: utilisation 100 %, power 120 of 700 W (17 %)"));
    assert_true(has_evidence(x, "in all 121 readings of the last 10m"));
    assert_non_null(strstr(x->fix[0], "py-spy dump --pid 4121"));
    findings_free(&f);

    /* Shorter than stall_min_s: not yet. */
    set(&cfg, "stall_min_s=900");
    run(s, &cfg, &f);
    assert_null(find(&f, "perf.collective-stalled", 0));
    findings_free(&f);
    config_free(&cfg);
    snapshot_free(s);

    /* Busy and drawing power: working, not stalled. */
    config_init(&cfg);
    s = stall_snap(1200, 600, 450);
    run(s, &cfg, &f);
    assert_null(find(&f, "perf.collective-stalled", 0));
    findings_free(&f);
    snapshot_free(s);
    config_free(&cfg);
}

/* Two jobs of one GPU each (different parents) are not one collective; nor is one job's GPU alone.
 */
static void test_collective_needs_one_job_on_two_gpus(void **state)
{
    struct snapshot *s = stall_snap(1200, 0, 120);
    struct config cfg;
    struct findings f;

    (void)state;
    config_init(&cfg);
    s->procs.procs[1].ppid = 2000;
    run(s, &cfg, &f);
    assert_null(find(&f, "perf.collective-stalled", 0));
    findings_free(&f);
    /* The same parent again: one job, stalled since the first reading ("at least"). */
    s->procs.procs[1].ppid = 1000;
    run(s, &cfg, &f);
    assert_non_null(strstr(must_find(&f, "perf.collective-stalled", 0)->title, "for at least 20m"));
    findings_free(&f);
    snapshot_free(s);
    config_free(&cfg);
}

/* PCIe traffic not read: not judged, and said. */
static void test_collective_unknown_traffic_is_a_skip(void **state)
{
    struct snapshot *s = stall_snap(1200, 0, 120);
    struct config cfg;
    struct findings f;
    bool skipped = false;

    (void)state;
    config_init(&cfg);
    gpu_set_rc(&s->samples[s->n_samples - 1].gpus[1], GPU_S_PCIE_TX, NVML_ERROR_NOT_SUPPORTED);
    run(s, &cfg, &f);
    assert_null(find(&f, "perf.collective-stalled", 0));
    for (size_t i = 0; i < f.n_skips; i++)
        skipped |= strcmp(f.skips[i].rule->id, "perf.collective-stalled") == 0 &&
                   f.skips[i].gpu_index == 1;
    assert_true(skipped);
    findings_free(&f);
    snapshot_free(s);
    config_free(&cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_leak_found_with_pid_slope_and_time_to_full),
        cmocka_unit_test(test_leak_critical_when_full_soon),
        cmocka_unit_test(test_leak_not_found_for_plateaus_sawtooth_noise),
        cmocka_unit_test(test_leak_thresholds),
        cmocka_unit_test(test_leak_history_too_short_is_a_skip),
        cmocka_unit_test(test_leak_pid_reuse_restarts_the_series),
        cmocka_unit_test(test_idle_held),
        cmocka_unit_test(test_collective_stalled),
        cmocka_unit_test(test_collective_needs_one_job_on_two_gpus),
        cmocka_unit_test(test_collective_unknown_traffic_is_a_skip),
        cmocka_unit_test(test_idle_without_memory_is_not_held),
        cmocka_unit_test(test_util_swing),
        cmocka_unit_test(test_throttle_episodes),
        cmocka_unit_test(test_temp_rising),
        cmocka_unit_test(test_trend_rules_in_table),
        cmocka_unit_test(test_long_healthy_history),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
