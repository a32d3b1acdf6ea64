/*
 * Trends: what only a history shows. A process whose GPU memory grows steadily (with its slope
 * and the time until the GPU is full), utilisation swinging between busy and idle, clocks
 * throttled again and again, a temperature climbing toward the slowdown threshold, and a GPU idle
 * for a long time while its memory stays held. Pure functions of (snapshot, history) like every
 * rule: `watch` and `serve` pass their ring of samples, `check --from` a recording's samples.
 *
 * Series are read from the history's samples, whose GPUs normally keep the snapshot's order, and
 * fitted with least squares; times are the samples' t_ms, so irregular intervals are fine.
 */
#include "nvml/nvml-abi.h"
#include "rules/rule-impl.h"
#include "rules/rules-trend.h"
#include "util/xalloc.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB (1024.0 * 1024.0)

/* Readings a fit needs at least, whatever the thresholds say. */
#define MIN_POINTS 5
/* Readings of utilisation a swing count needs. */
#define MIN_SWING_READINGS 10
/* A temperature that drops this much below its peak starts a new climb. */
#define TEMP_DROP_C 2.0
/* Memory that drops this much (share of the peak, and at least LEAK_DROP_MIN) ends a growth. */
#define LEAK_DROP_SHARE 0.05
#define LEAK_DROP_MIN   (64.0 * MIB)

/* Clock event reasons that slow a busy GPU down (idle, sync boost, display are not throttling). */
#define THROTTLE_MASK                                                                              \
    (NVML_CLOCKS_EVENT_SW_POWER_CAP | NVML_CLOCKS_EVENT_HW_SLOWDOWN |                              \
     NVML_CLOCKS_EVENT_SW_THERMAL | NVML_CLOCKS_EVENT_HW_THERMAL |                                 \
     NVML_CLOCKS_EVENT_HW_POWER_BRAKE)

/* ---- history helpers ---- */

static double t_s(const struct sample *smp)
{
    return (double)smp->t_ms / 1000.0;
}

/* Seconds from the first to the last sample. */
static double history_span_s(const struct history *h)
{
    return h->n < 2 ? 0 : t_s(&h->samples[h->n - 1]) - t_s(&h->samples[0]);
}

/* Index of the first sample within window_s of the last one. */
static size_t history_since(const struct history *h, double window_s)
{
    size_t k = h->n;

    if (h->n == 0)
        return 0;
    while (k > 0 && t_s(&h->samples[h->n - 1]) - t_s(&h->samples[k - 1]) <= window_s)
        k--;
    return k;
}

static bool usable(const struct gpu *g)
{
    return g != NULL && g->handle_rc == 0;
}

/* One skip for the rule when the history is too short for any trend; false then. */
static bool need_history(const struct rule_ctx *ctx, struct findings *out)
{
    char need[16];

    if (history_span_s(ctx->facts->hist) >= th(ctx, TH_TREND_MIN_DURATION_S))
        return true;
    render_duration(need, sizeof(need), th(ctx, TH_TREND_MIN_DURATION_S));
    rule_skip(ctx, out, -1,
              "needs a history of %s or more (gpudoctor watch, serve, or check --from a recording)",
              need);
    return false;
}

/* ---- series and fits ---- */

struct series {
    double *t, *y; /* seconds, value */
    size_t n, cap;
};

static void series_add(struct series *s, double t, double y)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 64;
        s->t = xreallocarray(s->t, s->cap, sizeof(*s->t));
        s->y = xreallocarray(s->y, s->cap, sizeof(*s->y));
    }
    s->t[s->n] = t;
    s->y[s->n] = y;
    s->n++;
}

static void series_free(struct series *s)
{
    free(s->t);
    free(s->y);
    memset(s, 0, sizeof(*s));
}

/* A least-squares line through points [from, n) of s. */
struct fit {
    size_t n;
    double slope; /* value per second */
    double r2;    /* share of the variance the line explains, 0..1 */
};

static struct fit fit_line(const struct series *s, size_t from)
{
    struct fit f = { 0, 0, 0 };
    double mt = 0, my = 0, stt = 0, sty = 0, syy = 0;

    f.n = s->n - from;
    if (f.n < 2)
        return f;
    /* Centred sums: memory sizes are large and their variation small. */
    for (size_t i = from; i < s->n; i++) {
        mt += s->t[i];
        my += s->y[i];
    }
    mt /= (double)f.n;
    my /= (double)f.n;
    for (size_t i = from; i < s->n; i++) {
        double dt = s->t[i] - mt, dy = s->y[i] - my;

        stt += dt * dt;
        sty += dt * dy;
        syy += dy * dy;
    }
    if (stt <= 0 || syy <= 0)
        return f; /* no time spread, or a flat line: no trend */
    f.slope = sty / stt;
    f.r2 = (sty * sty) / (stt * syy);
    return f;
}

/*
 * Where the current rise of s starts: after the last drop of more than the tolerance below the
 * running peak (share of the peak, at least min_drop), at the last lowest point after it. A job
 * that freed memory or cooled down starts a new trend; a flat stretch before a climb is not part
 * of the climb.
 */
static size_t rise_start(const struct series *s, double share, double min_drop)
{
    size_t start = 0, low;
    double peak;

    if (s->n == 0)
        return 0;
    peak = s->y[0];
    for (size_t i = 1; i < s->n; i++) {
        double tol = peak * share > min_drop ? peak * share : min_drop;

        if (s->y[i] + tol < peak) {
            start = i;
            peak = s->y[i];
        } else if (s->y[i] > peak) {
            peak = s->y[i];
        }
    }
    low = start;
    for (size_t i = start; i < s->n; i++) {
        if (s->y[i] <= s->y[low])
            low = i;
    }
    return low;
}

/* Still rising at the end: the last value is above the value two thirds of the way in. */
static bool still_rising(const struct series *s, size_t from)
{
    double at = s->t[from] + (s->t[s->n - 1] - s->t[from]) * 2.0 / 3.0;
    size_t k = from;

    while (k + 1 < s->n && s->t[k] < at)
        k++;
    return k + 1 < s->n ? s->y[s->n - 1] > s->y[k] : false;
}

/* "480 MiB/min" */
static void per_minute(char *buf, size_t size, double bytes_per_s)
{
    render_bytes(buf, size, (uint64_t)(bytes_per_s * 60.0 + 0.5));
    strncat(buf, "/min", size - strlen(buf) - 1);
}

/* ---- mem.leak ---- */

static const struct gpu_proc *gpu_proc_of(const struct gpu *g, uint32_t pid)
{
    for (size_t i = 0; i < g->n_procs; i++) {
        if (g->procs[i].pid == pid)
            return &g->procs[i];
    }
    return NULL;
}

/* The sample's CPU reading of pid, for its start time (identity); NULL when it has none. */
static const struct proc_sample *sample_proc(const struct sample *smp, int32_t pid)
{
    size_t lo = 0, hi = smp->n_procs;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (smp->procs[mid].pid < pid)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < smp->n_procs && smp->procs[lo].pid == pid)
        return &smp->procs[lo];
    /* Samples read from a file need not be sorted. */
    for (size_t i = 0; i < smp->n_procs; i++) {
        if (smp->procs[i].pid == pid)
            return &smp->procs[i];
    }
    return NULL;
}

/*
 * The GPU memory pid held on the GPU at position pos, over the history. A sample in which NVML
 * did not list it, or in which the pid belonged to another process (its start time differs from
 * the one the snapshot knows), starts the series again.
 */
static void memory_series(const struct rule_ctx *ctx, size_t pos, uint32_t idx, uint32_t pid,
                          struct series *s)
{
    const struct proc *p = facts_proc_find(ctx->facts, (int32_t)pid);
    bool known = proc_ok(p, PROC_S_START_TICKS);

    for (size_t k = 0; k < ctx->facts->hist->n; k++) {
        const struct sample *smp = &ctx->facts->hist->samples[k];
        const struct gpu *g = sample_gpu(smp, pos, idx);
        const struct gpu_proc *gp;
        const struct proc_sample *ps;

        if (!usable(g) || g->rc[GPU_S_PROCESSES] != 0)
            continue; /* not known then: neither growth nor a break */
        gp = gpu_proc_of(g, pid);
        ps = known ? sample_proc(smp, (int32_t)pid) : NULL;
        if (gp == NULL || (ps != NULL && ps->start_ticks != p->start_ticks)) {
            s->n = 0;
            continue;
        }
        if (gp->valid & (1u << GPU_PROC_S_USED))
            series_add(s, t_s(smp), (double)gp->used_bytes);
    }
}

/* Bytes free on the GPU in its latest reading, or -1 when unknown. */
static double free_bytes(const struct gpu *g)
{
    if (gpu_valid(g, GPU_S_MEM_FREE))
        return (double)g->mem_free_bytes;
    if (gpu_valid(g, GPU_S_MEM_TOTAL) && gpu_valid(g, GPU_S_MEM_USED) &&
        g->mem_total_bytes >= g->mem_used_bytes)
        return (double)(g->mem_total_bytes - g->mem_used_bytes);
    return -1;
}

static void leak_finding(const struct rule_ctx *ctx, struct findings *out, const struct gpu *last,
                         uint32_t pid, const struct series *s, size_t from, const struct fit *fit)
{
    double span = s->t[s->n - 1] - s->t[from], free_b = free_bytes(last), ttf = -1;
    char rate[32], a[16], b[16], dur[16], full[16], label[200], fr[16], tot[16];
    struct finding *f = finding_new(ctx, out, (int32_t)last->index, (int32_t)pid);

    per_minute(rate, sizeof(rate), fit->slope);
    if (free_b >= 0)
        ttf = free_b / fit->slope;
    render_duration(full, sizeof(full), ttf);
    if (ttf >= 0)
        finding_title(f, "pid %" PRIu32 " on GPU %" PRIu32 " grows %s: GPU full in ~%s", pid,
                      last->index, rate, full);
    else
        finding_title(f, "pid %" PRIu32 " on GPU %" PRIu32 " grows %s", pid, last->index, rate);
    if (ttf >= 0 && ttf <= th(ctx, TH_LEAK_FULL_CRITICAL_S))
        f->severity = SEV_CRITICAL;
    proc_desc(label, sizeof(label), ctx, (int32_t)pid);
    render_bytes(a, sizeof(a), (uint64_t)s->y[from]);
    render_bytes(b, sizeof(b), (uint64_t)s->y[s->n - 1]);
    render_duration(dur, sizeof(dur), span);
    finding_evidence(f, "%s: GPU memory grew from %s to %s in %s (%zu readings)", label, a, b, dur,
                     s->n - from);
    finding_evidence(f, "growth %s (%.1f MiB/s); a straight line explains %.0f %% of it", rate,
                     fit->slope / MIB, fit->r2 * 100.0);
    if (ttf >= 0 && gpu_valid(last, GPU_S_MEM_TOTAL)) {
        render_bytes(fr, sizeof(fr), (uint64_t)free_b);
        render_bytes(tot, sizeof(tot), last->mem_total_bytes);
        finding_evidence(f, "GPU %" PRIu32 ": %s free of %s, full in %s at this rate", last->index,
                         fr, tot, full);
    }
    if (fix_pid_ok(pid))
        finding_fix(f, "py-spy dump --pid %" PRIu32 "   # what the job is doing while it grows",
                    pid);
    finding_fix(f, "# PyTorch: print(torch.cuda.memory_summary()) in the job; look for tensors "
                   "kept across steps (a loss summed without .item(), growing lists, caches)");
    if (fix_pid_ok(pid))
        finding_fix(f,
                    "kill -TERM %" PRIu32 "   # last resort, before GPU %" PRIu32
                    " is full: ask its owner, checkpoint first",
                    pid, last->index);
    f->impact = f->severity == SEV_CRITICAL ? 1.0 : 0.5;
}

static void check_leak(const struct rule_ctx *ctx, struct findings *out)
{
    const struct history *h = ctx->facts->hist;
    struct series s = { 0 };

    if (!need_history(ctx, out))
        return;
    for (size_t i = 0; i < ctx->facts->n_gpus; i++) {
        const struct gpu *g = ctx->facts->gpus[i].g;
        const struct gpu *last = sample_gpu(&h->samples[h->n - 1], i, g->index);

        if (!usable(g) || !usable(last) || last->rc[GPU_S_PROCESSES] != 0)
            continue;
        for (size_t k = 0; k < last->n_procs; k++) {
            size_t from;
            struct fit fit;

            s.n = 0;
            memory_series(ctx, i, g->index, last->procs[k].pid, &s);
            if (s.n < MIN_POINTS)
                continue;
            from = rise_start(&s, LEAK_DROP_SHARE, LEAK_DROP_MIN);
            if (s.n - from < MIN_POINTS ||
                s.t[s.n - 1] - s.t[from] < th(ctx, TH_TREND_MIN_DURATION_S) ||
                s.y[s.n - 1] - s.y[from] < th(ctx, TH_LEAK_MIN_GROWTH_MIB) * MIB ||
                !still_rising(&s, from))
                continue;
            fit = fit_line(&s, from);
            if (fit.slope <= 0 || fit.r2 * 100.0 < th(ctx, TH_TREND_MIN_FIT_PCT))
                continue;
            leak_finding(ctx, out, last, last->procs[k].pid, &s, from, &fit);
        }
    }
    series_free(&s);
}

const struct rule rule_mem_leak = {
    .id = "mem.leak",
    .severity = SEV_WARNING,
    .category = CAT_MEMORY,
    .title = N_("GPU memory of a process growing steadily"),
    .explanation = N_(
        "A process's GPU memory has grown steadily for minutes without ever being given back: a "
        "leak. In training code it is usually a tensor kept alive across steps (a running loss "
        "summed without .item(), outputs appended to a list, a cache keyed by input shape); in "
        "inference servers, per-request state that is never freed. The job runs until the GPU is "
        "full, then fails with an out-of-memory error, often hours in, or slows down as the "
        "allocator struggles. The time-to-full says how long there is to act. Frameworks' caching "
        "allocators also grow, but in steps that stop once the working set is reached."),
    .detection =
        N_("over the history, the memory NVML lists for the process on one GPU, since it last "
           "dropped: grown for at least trend_min_duration_s and by at least leak_min_growth_mib, "
           "still growing in the last third, with a least-squares line explaining at least "
           "trend_min_fit_pct of the variance. The slope is that line's; time-to-full is the GPU's "
           "free memory divided by it; critical when that is within leak_full_critical_s. Needs a "
           "history (gpudoctor watch, serve, or check --from a recording)."),
    .fix = N_(
        "Find what the job keeps alive: torch.cuda.memory_summary() or the memory snapshot tools "
        "of the framework, py-spy to see where it runs. Fix the code (detach and .item() "
        "values kept for logging, bound caches). If it cannot be fixed now, checkpoint and "
        "restart the job before the GPU is full."),
    .thresholds = THRESHOLDS(TH_TREND_MIN_DURATION_S, TH_LEAK_MIN_GROWTH_MIB, TH_TREND_MIN_FIT_PCT,
                             TH_LEAK_FULL_CRITICAL_S),
    .check = check_leak,
};

/* ---- mem.idle-held ---- */

/* GPU memory held in a reading: what the listed processes hold, else all memory used. */
static bool held_bytes(const struct gpu *g, uint64_t *out)
{
    bool all = true;

    if (g->rc[GPU_S_PROCESSES] == 0) {
        *out = 0;
        for (size_t i = 0; i < g->n_procs; i++) {
            if (g->procs[i].valid & (1u << GPU_PROC_S_USED))
                *out += g->procs[i].used_bytes;
            else
                all = false;
        }
        /* A process whose memory NVML does not give holds an unknown amount, not none. */
        if (all)
            return true;
    }
    if (g->rc[GPU_S_MEM_USED] == 0) {
        *out = g->mem_used_bytes;
        return true;
    }
    return false;
}

static void check_idle_held(const struct rule_ctx *ctx, struct findings *out)
{
    const struct history *h = ctx->facts->hist;
    double idle_pct = th(ctx, TH_GPU_IDLE_UTIL_PCT), min_bytes = th(ctx, TH_HOLDER_MIN_MIB) * MIB;

    if (!need_history(ctx, out))
        return;
    for (size_t i = 0; i < ctx->facts->n_gpus; i++) {
        const struct facts_gpu *v = &ctx->facts->gpus[i];
        const struct gpu *last = sample_gpu(&h->samples[h->n - 1], i, v->g->index);
        size_t k = h->n, start = h->n;
        uint64_t held = 0, held_now = 0;
        double idle_s;
        char dur[16], mem[16];
        struct finding *f;

        if (!usable(v->g) || !usable(last))
            continue;
        /* Back from the latest reading while the GPU is idle and its memory held. */
        while (k > 0) {
            const struct gpu *g = sample_gpu(&h->samples[k - 1], i, v->g->index);

            if (!usable(g) || g->rc[GPU_S_UTIL_GPU] != 0 || g->util_gpu_pct > idle_pct ||
                !held_bytes(g, &held) || (double)held < min_bytes)
                break;
            if (k == h->n)
                held_now = held;
            start = --k;
        }
        if (start == h->n)
            continue;
        idle_s = t_s(&h->samples[h->n - 1]) - t_s(&h->samples[start]);
        if (idle_s < th(ctx, TH_IDLE_HELD_MIN_S))
            continue;
        render_duration(dur, sizeof(dur), idle_s);
        render_bytes(mem, sizeof(mem), held_now);
        f = finding_new(ctx, out, (int32_t)v->g->index, -1);
        finding_title(f, "GPU %" PRIu32 " idle for %s%s while %s of its memory is held",
                      v->g->index, start == 0 ? "at least " : "", dur, mem);
        finding_evidence(f,
                         "utilisation at most %.0f %% in all %zu readings of the last %s%s; "
                         "at least %.0f MiB held in each",
                         idle_pct, h->n - start, dur, start == 0 ? " (the whole history)" : "",
                         th(ctx, TH_HOLDER_MIN_MIB));
        rules_holder_evidence(ctx, f, v, 4);
        finding_fix(f,
                    "nvidia-smi -i %" PRIu32 " --query-compute-apps=pid,used_memory "
                    "--format=csv   # who holds it",
                    v->g->index);
        if (v->n_holders > 0 && fix_pid_ok(v->holders[0].pid))
            finding_fix(f, "ps -o pid,user,etime,stat,args -p %" PRIu32 "   # still needed?",
                        v->holders[0].pid);
        finding_fix(f, "# ask the owners; restart idle notebook kernels, end abandoned jobs "
                       "(kill -TERM PID) so others can use the GPU");
        f->impact = 1.0;
    }
}

const struct rule rule_mem_idle_held = {
    .id = "mem.idle-held",
    .severity = SEV_WARNING,
    .category = CAT_MEMORY,
    .title = N_("GPU idle for long while its memory is held"),
    .explanation = N_(
        "The GPU has done nothing for a long time, yet processes keep their memory on it, so it "
        "looks busy to the scheduler and to colleagues and nobody else can use it. Typical: a "
        "notebook kernel left open after an experiment, a job waiting forever on a lock, a peer "
        "or a dead node, a server with no traffic, a stopped or orphaned process. Where gpudoctor "
        "can name a stale holder (stopped, defunct, orphaned, idle process), that finding "
        "replaces this one."),
    .detection =
        N_("the latest readings of the history, back to the first that breaks the streak: "
           "GPU utilisation at or below gpu_idle_util_pct while the processes NVML lists "
           "hold at least holder_min_mib, for at least idle_held_min_s. Needs a history at "
           "least that long and of trend_min_duration_s (gpudoctor watch, serve, or check --from "
           "a recording)."),
    .fix =
        N_("Look at each holder (gpudoctor check lists them with state, CPU use and age) and ask "
           "its owner. Restart or close idle notebook kernels, end abandoned jobs, find what a "
           "waiting job waits for (py-spy dump --pid PID)."),
    .thresholds = THRESHOLDS(TH_GPU_IDLE_UTIL_PCT, TH_HOLDER_MIN_MIB, TH_IDLE_HELD_MIN_S,
                             TH_TREND_MIN_DURATION_S),
    .yields_to = YIELDS_TO("proc.stopped-holder", "proc.zombie-holder", "proc.orphan-holder",
                           "proc.idle-holder"),
    .check = check_idle_held,
};

/* ---- perf.util-swing ---- */

static void check_util_swing(const struct rule_ctx *ctx, struct findings *out)
{
    const struct history *h = ctx->facts->hist;
    size_t from;

    if (!need_history(ctx, out))
        return;
    from = history_since(h, th(ctx, TH_TREND_WINDOW_S));
    for (size_t i = 0; i < ctx->facts->n_gpus; i++) {
        const struct facts_gpu *v = &ctx->facts->gpus[i];
        double lo = 0, hi = 0, sum = 0, low_band, high_band;
        size_t n = 0, swings = 0, n_high = 0;
        int band = 0;
        char span[16], label[200];
        struct finding *f;

        if (!usable(v->g) || v->n_compute == 0)
            continue;
        for (size_t k = from; k < h->n; k++) {
            const struct gpu *g = sample_gpu(&h->samples[k], i, v->g->index);
            double u;

            if (!usable(g) || g->rc[GPU_S_UTIL_GPU] != 0)
                continue;
            u = g->util_gpu_pct;
            lo = n == 0 || u < lo ? u : lo;
            hi = n == 0 || u > hi ? u : hi;
            sum += u;
            n++;
        }
        if (n < MIN_SWING_READINGS || hi - lo < th(ctx, TH_UTIL_SWING_PCT))
            continue;
        /* A swing is a move from the lowest quarter of the range to the highest, or back. */
        low_band = lo + (hi - lo) / 4;
        high_band = hi - (hi - lo) / 4;
        for (size_t k = from; k < h->n; k++) {
            const struct gpu *g = sample_gpu(&h->samples[k], i, v->g->index);
            int now;

            if (!usable(g) || g->rc[GPU_S_UTIL_GPU] != 0)
                continue;
            now = g->util_gpu_pct <= low_band ? -1 : g->util_gpu_pct >= high_band ? 1 : 0;
            n_high += now == 1;
            if (now != 0 && band != 0 && now != band)
                swings++;
            if (now != 0)
                band = now;
        }
        if (swings < th(ctx, TH_UTIL_SWING_MIN_COUNT))
            continue;
        render_duration(span, sizeof(span), t_s(&h->samples[h->n - 1]) - t_s(&h->samples[from]));
        f = finding_new(ctx, out, (int32_t)v->g->index, -1);
        finding_title(f,
                      "GPU %" PRIu32 " utilisation swings between %.0f and %.0f %% (%zu times "
                      "in %s)",
                      v->g->index, lo, hi, swings, span);
        finding_evidence(f,
                         "%.0f %% busy on average over %zu readings; in the top quarter of the "
                         "range in %zu of them",
                         sum / (double)n, n, n_high);
        finding_evidence(f,
                         "the GPU computes in bursts and waits in between: for its input "
                         "(loading, decoding, augmenting), host-device copies or synchronisation");
        for (size_t k = 0; k < v->n_holders && k < 2; k++) {
            proc_desc(label, sizeof(label), ctx, (int32_t)v->holders[k].pid);
            finding_evidence(f, "on it: %s", label);
        }
        if (v->n_holders > 0 && fix_pid_ok(v->holders[0].pid))
            finding_fix(f, "py-spy top --pid %" PRIu32 "   # what the job's CPU side is doing",
                        v->holders[0].pid);
        finding_fix(f, "# PyTorch: DataLoader(num_workers=<cores per GPU>, pin_memory=True, "
                       "persistent_workers=True, prefetch_factor=4)");
        finding_fix(f,
                    "nvidia-smi dmon -i %" PRIu32 " -s u   # watch the swings, one line a second",
                    v->g->index);
        f->impact = (100.0 - sum / (double)n) / 200.0;
    }
}

const struct rule rule_perf_util_swing = {
    .id = "perf.util-swing",
    .severity = SEV_WARNING,
    .category = CAT_THROUGHPUT,
    .title = N_("GPU utilisation swinging between busy and idle"),
    .explanation = N_(
        "The GPU alternates between computing flat out and waiting, again and again: the job's "
        "input pipeline (reading, decoding, augmenting, collating batches), host-to-device copies "
        "or a synchronisation point cannot keep it fed. Readings of 'Volatile GPU-Util' jump up "
        "and down, and the job runs as fast as its slowest stage, not its GPU. When gpudoctor can "
        "show the job's CPU side is the bottleneck, perf.input-starved replaces this finding."),
    .detection =
        N_("over the last trend_window_s of the history, a GPU with compute processes whose "
           "utilisation spans at least util_swing_pct (max - min) and moves from the lowest "
           "quarter of that range to the highest, or back, at least util_swing_min_count "
           "times. Needs a history of trend_min_duration_s (gpudoctor watch, serve, or check "
           "--from a recording)."),
    .fix =
        N_("Profile the job's CPU side (py-spy top). More DataLoader workers, pinned memory, "
           "persistent workers and prefetching; overlap copies with compute (non_blocking=True); "
           "avoid per-step synchronisation (.item(), .cpu(), printing tensors); keep the data on "
           "fast local storage."),
    .thresholds = THRESHOLDS(TH_TREND_WINDOW_S, TH_UTIL_SWING_PCT, TH_UTIL_SWING_MIN_COUNT,
                             TH_TREND_MIN_DURATION_S),
    .yields_to = YIELDS_TO("perf.input-starved"),
    .check = check_util_swing,
};

/* ---- clock.throttle-episodes ---- */

/* "power cap, software thermal slowdown" for the throttle bits of reasons; people: translated. */
static void reason_words(char *buf, size_t size, uint64_t reasons, bool people)
{
    size_t len = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < n_clock_reasons && len < size; i++) {
        if (!(reasons & clock_reasons[i].bit & THROTTLE_MASK))
            continue;
        len += (size_t)snprintf(buf + len, size - len, "%s%s", len ? L_(people, ", ") : "",
                                L_(people, clock_reasons[i].label));
    }
}

static void check_throttle_episodes(const struct rule_ctx *ctx, struct findings *out)
{
    const struct history *h = ctx->facts->hist;
    size_t from;

    if (!need_history(ctx, out))
        return;
    from = history_since(h, th(ctx, TH_TREND_WINDOW_S));
    for (size_t i = 0; i < ctx->facts->n_gpus; i++) {
        const struct facts_gpu *v = &ctx->facts->gpus[i];
        size_t n = 0, n_throttled = 0, episodes = 0;
        double ep_start = 0, longest = 0;
        uint32_t sm_lo = 0, sm_hi = 0, temp_hi = 0;
        uint64_t seen = 0;
        bool in = false, sm = false, temp = false, setting;
        char span[16], words[256], words_l[512], lng[16];
        struct finding *f;

        if (!usable(v->g))
            continue;
        for (size_t k = from; k < h->n; k++) {
            const struct gpu *g = sample_gpu(&h->samples[k], i, v->g->index);
            double t = t_s(&h->samples[k]);
            uint64_t r;

            if (!usable(g) || g->rc[GPU_S_EVENT_REASONS] != 0)
                continue;
            r = g->clocks_event_reasons & THROTTLE_MASK;
            n++;
            if (r != 0 && !in) {
                episodes++;
                ep_start = t;
            }
            /* An episode lasts until the first reading without throttling (or the last one). */
            if (in && (r == 0 || k + 1 == h->n) && t - ep_start > longest)
                longest = t - ep_start;
            if (r != 0) {
                n_throttled++;
                seen |= r;
            }
            in = r != 0;
            if (g->rc[GPU_S_TEMP] == 0 && g->temp_c <= 200) {
                temp_hi = !temp || g->temp_c > temp_hi ? g->temp_c : temp_hi;
                temp = true;
            }
            if (g->rc[GPU_S_CLOCK_SM] == 0) {
                sm_lo = !sm || g->clock_sm_mhz < sm_lo ? g->clock_sm_mhz : sm_lo;
                sm_hi = !sm || g->clock_sm_mhz > sm_hi ? g->clock_sm_mhz : sm_hi;
                sm = true;
            }
        }
        if (episodes < th(ctx, TH_THROTTLE_MIN_EPISODES))
            continue;
        render_duration(span, sizeof(span), t_s(&h->samples[h->n - 1]) - t_s(&h->samples[from]));
        reason_words(words, sizeof(words), seen, false);
        reason_words(words_l, sizeof(words_l), seen, true);
        f = finding_new(ctx, out, (int32_t)v->g->index, -1);
        finding_title_take(f, TWICE("GPU %" PRIu32 " throttled %zu times in %s (%s)",
                                    (v->g->index, episodes, span, words),
                                    (v->g->index, episodes, span, words_l)));
        finding_evidence(f, "throttled in %zu of %zu readings (%.0f %% of the time)", n_throttled,
                         n, pct((double)n_throttled, (double)n));
        render_duration(lng, sizeof(lng), longest);
        finding_evidence(f, "longest episode %s; clocks that keep changing make step times uneven",
                         lng);
        if (sm && sm_hi > sm_lo)
            finding_evidence(f, "SM clock between %" PRIu32 " and %" PRIu32 " MHz over that time",
                             sm_lo, sm_hi);
        finding_fix(f,
                    "nvidia-smi -i %" PRIu32 " --query-gpu=clocks_event_reasons.active,"
                    "temperature.gpu,power.draw,clocks.sm --format=csv -l 1   # catch an episode",
                    v->g->index);
        /* Software thermal slowdown alone, on a GPU whose maximum operating temperature is set
         * far under its slowdown threshold and that stayed clear of the threshold: the setting
         * slows it, not heat, and the cooling is not to blame (as clock.thermal-slowdown says). */
        setting = (seen & NVML_CLOCKS_EVENT_SW_THERMAL) && !(seen & NVML_CLOCKS_EVENT_HW_THERMAL) &&
                  gpu_max_temp_set_low(v->g) && temp &&
                  temp_hi + th(ctx, TH_THERMAL_MARGIN_C) < v->g->temp_slowdown_c;
        if ((seen & NVML_CLOCKS_EVENT_SW_THERMAL) && gpu_max_temp_set_low(v->g))
            gpu_max_temp_set_low_fixes(f, v->g);
        if ((seen & (NVML_CLOCKS_EVENT_SW_THERMAL | NVML_CLOCKS_EVENT_HW_THERMAL)) && !setting)
            finding_fix(f, "# thermal: check fans, airflow and inlet temperature; compare with "
                           "the neighbour GPUs");
        if (seen & (NVML_CLOCKS_EVENT_SW_POWER_CAP | NVML_CLOCKS_EVENT_HW_POWER_BRAKE))
            finding_fix(f,
                        "nvidia-smi -i %" PRIu32 " -q -d POWER   # the power limit in force; "
                        "power brake means the system's power supply asked for it",
                        v->g->index);
        f->impact = 0.3 * pct((double)n_throttled, (double)n) / 100.0 + 0.1;
    }
}

const struct rule rule_clock_throttle_episodes = {
    .id = "clock.throttle-episodes",
    .severity = SEV_WARNING,
    .category = CAT_CLOCKS,
    .title = N_("GPU clocks throttled again and again"),
    .explanation = N_(
        "The GPU slows its clocks down, recovers, and slows down again: repeated episodes of "
        "power capping, thermal slowdown or hardware slowdown. Each one stretches the steps that "
        "run during it, so step times become uneven and multi-GPU jobs wait for the slowest GPU. "
        "A single episode can be a burst of load; a pattern points at cooling that cannot keep "
        "up, a power limit set too low for the load, or a power supply that brakes the GPUs."),
    .detection =
        N_("over the last trend_window_s of the history, runs of readings whose clock event "
           "reasons include sw_power_cap, hw_slowdown, sw_thermal, hw_thermal or "
           "hw_power_brake: at least throttle_min_episodes separate runs. Needs a history of "
           "trend_min_duration_s (gpudoctor watch, serve, or check --from a recording)."),
    .fix =
        N_("Catch an episode with nvidia-smi --query-gpu=clocks_event_reasons.active -l 1 and see "
           "which reason it is. Thermal: fix the cooling (fans, airflow, blanking panels, inlet "
           "temperature), unless the GPU's maximum operating temperature is set far below its "
           "slowdown threshold: then the platform's thermal policy. Power cap: raise the power "
           "limit if it was lowered, or accept it. Power "
           "brake: the chassis power supply, ask the vendor."),
    .thresholds = THRESHOLDS(TH_TREND_WINDOW_S, TH_THROTTLE_MIN_EPISODES, TH_TREND_MIN_DURATION_S),
    .check = check_throttle_episodes,
};

/* ---- clock.temp-rising ---- */

static void check_temp_rising(const struct rule_ctx *ctx, struct findings *out)
{
    const struct history *h = ctx->facts->hist;
    struct series s = { 0 };
    size_t from;

    if (!need_history(ctx, out))
        return;
    from = history_since(h, th(ctx, TH_TREND_WINDOW_S));
    for (size_t i = 0; i < ctx->facts->n_gpus; i++) {
        const struct gpu *g = ctx->facts->gpus[i].g;
        double slope_min, now, eta, limit;
        size_t start;
        struct fit fit;
        char eta_s[16], span[16];
        struct finding *f;

        /* A threshold of 0 or above 200 °C is not one (see clock.thermal-slowdown). */
        if (!usable(g) || !gpu_valid(g, GPU_S_TEMP_SLOWDOWN) || g->temp_slowdown_c == 0 ||
            g->temp_slowdown_c > 200)
            continue;
        s.n = 0;
        for (size_t k = from; k < h->n; k++) {
            const struct gpu *sg = sample_gpu(&h->samples[k], i, g->index);

            if (usable(sg) && sg->rc[GPU_S_TEMP] == 0 && sg->temp_c <= 200)
                series_add(&s, t_s(&h->samples[k]), sg->temp_c);
        }
        if (s.n < MIN_POINTS)
            continue;
        start = rise_start(&s, 0, TEMP_DROP_C);
        if (s.n - start < MIN_POINTS ||
            s.t[s.n - 1] - s.t[start] < th(ctx, TH_TREND_MIN_DURATION_S))
            continue;
        fit = fit_line(&s, start);
        slope_min = fit.slope * 60.0;
        now = s.y[s.n - 1];
        limit = g->temp_slowdown_c;
        /* Already at the threshold's margin: clock.thermal-slowdown says so. */
        if (slope_min < th(ctx, TH_TEMP_RISE_MIN_C_PER_MIN) ||
            fit.r2 * 100.0 < th(ctx, TH_TREND_MIN_FIT_PCT) ||
            now + th(ctx, TH_THERMAL_MARGIN_C) >= limit)
            continue;
        eta = (limit - now) / fit.slope;
        if (eta > th(ctx, TH_TEMP_RISE_ETA_S))
            continue;
        render_duration(eta_s, sizeof(eta_s), eta);
        render_duration(span, sizeof(span), s.t[s.n - 1] - s.t[start]);
        f = finding_new(ctx, out, (int32_t)g->index, -1);
        finding_title(f,
                      "GPU %" PRIu32 " heating up %.1f °C/min: %.0f °C, slowdown at %.0f °C in "
                      "~%s",
                      g->index, slope_min, now, limit, eta_s);
        finding_evidence(f,
                         "temperature %.0f °C -> %.0f °C over %s (%zu readings); a straight line "
                         "explains %.0f %% of it",
                         s.y[start], now, span, s.n - start, fit.r2 * 100.0);
        if (gpu_valid(g, GPU_S_POWER) && gpu_valid(g, GPU_S_POWER_LIMIT))
            finding_evidence(f, "power draw %.0f W of a %.0f W limit", g->power_mw / 1000.0,
                             g->power_limit_mw / 1000.0);
        if (gpu_valid(g, GPU_S_FAN))
            finding_evidence(f, "fan %" PRIu32 " %%", g->fan_speed_pct);
        finding_fix(f,
                    "nvidia-smi -i %" PRIu32 " -q -d TEMPERATURE,PERFORMANCE   # temperatures "
                    "and slowdowns",
                    g->index);
        finding_fix(f, "# check the airflow now: fans, blanking panels, dust filters, the room's "
                       "inlet temperature (ipmitool sdr type Temperature)");
        f->impact = 0.3;
    }
    series_free(&s);
}

const struct rule rule_clock_temp_rising = {
    .id = "clock.temp-rising",
    .severity = SEV_WARNING,
    .category = CAT_CLOCKS,
    .title = N_("GPU temperature climbing toward slowdown"),
    .explanation = N_(
        "The GPU's temperature has been climbing steadily and, at this rate, reaches the slowdown "
        "threshold soon: then the GPU lowers its clocks and the job slows down. A climb under a "
        "steady load means the cooling is falling behind: a fan failing, a blocked inlet, a hot "
        "room or rack, or a neighbour's exhaust. Acting before the threshold keeps the clocks "
        "steady. Once the GPU is within thermal_margin_c, clock.thermal-slowdown reports it."),
    .detection =
        N_("over the last trend_window_s of the history, the temperature since it last "
           "dropped (at its lowest point after that) for at least trend_min_duration_s: a "
           "least-squares line explaining at least trend_min_fit_pct of the variance, rising "
           "at least temp_rise_min_c_per_min, that reaches the slowdown temperature "
           "(nvmlDeviceGetTemperatureThreshold SLOWDOWN) within temp_rise_eta_s, while the "
           "GPU is still more than thermal_margin_c below it. Needs a history (gpudoctor watch, "
           "serve, or check --from a recording)."),
    .fix =
        N_("Check the cooling while there is time: fans, airflow, filters, the room's inlet "
           "temperature, the neighbour GPUs and nodes. A lower power limit (nvidia-smi -pl) gives "
           "less heat at a small cost in speed until the cooling is fixed."),
    .thresholds = THRESHOLDS(TH_TREND_WINDOW_S, TH_TREND_MIN_DURATION_S, TH_TREND_MIN_FIT_PCT,
                             TH_TEMP_RISE_MIN_C_PER_MIN, TH_TEMP_RISE_ETA_S, TH_THERMAL_MARGIN_C),
    .yields_to = YIELDS_TO("clock.thermal-slowdown"),
    .check = check_temp_rising,
};

/* ---- perf.collective-stalled ---- */

/*
 * A multi-GPU job: its GPUs, and the processes on them. Ranks of one job share a container, a
 * Slurm job or a pod; outside those, the launcher that started them (torchrun, mpirun: their
 * parent). A process alone on several GPUs is a job too.
 */
struct stall_job {
    char key[96];
    uint32_t gpus[16]; /* NVML indices, ascending */
    size_t n_gpus;
    uint32_t pids[16];
    size_t n_pids;
};

static void job_key(char *buf, size_t size, const struct facts_holder *h)
{
    proc_container(buf, size, h->p);
    if (buf[0])
        return;
    if (proc_ok(h->p, PROC_S_PPID) && h->p->ppid > 1)
        snprintf(buf, size, "the processes started by pid %d", (int)h->p->ppid);
    else
        snprintf(buf, size, "pid %" PRIu32, h->pid);
}

static void job_add(struct stall_job *j, uint32_t gpu, uint32_t pid)
{
    size_t k;

    for (k = 0; k < j->n_gpus && j->gpus[k] != gpu; k++)
        ;
    if (k == j->n_gpus && j->n_gpus < ARRAY_SIZE(j->gpus)) {
        while (k > 0 && j->gpus[k - 1] > gpu) {
            j->gpus[k] = j->gpus[k - 1];
            k--;
        }
        j->gpus[k] = gpu;
        j->n_gpus++;
    }
    for (k = 0; k < j->n_pids && j->pids[k] != pid; k++)
        ;
    if (k == j->n_pids && j->n_pids < ARRAY_SIZE(j->pids))
        j->pids[j->n_pids++] = pid;
}

/* The compute jobs of the snapshot that span two GPUs or more, into jobs[] (at most max). */
static size_t stall_jobs(const struct rule_ctx *ctx, struct stall_job *jobs, size_t max)
{
    size_t n = 0;

    for (size_t i = 0; i < ctx->facts->n_gpus; i++) {
        const struct facts_gpu *v = &ctx->facts->gpus[i];

        for (size_t k = 0; k < v->n_holders; k++) {
            const struct facts_holder *h = &v->holders[k];
            char key[96];
            size_t j;

            if (!holder_compute(h))
                continue;
            job_key(key, sizeof(key), h);
            for (j = 0; j < n && strcmp(jobs[j].key, key) != 0; j++)
                ;
            if (j == n) {
                if (n == max)
                    continue;
                memset(&jobs[n], 0, sizeof(jobs[n]));
                snprintf(jobs[n].key, sizeof(jobs[n].key), "%s", key);
                n++;
            }
            job_add(&jobs[j], v->g->index, h->pid);
        }
    }
    for (size_t j = 0; j < n;) { /* only jobs that span GPUs exchange anything between them */
        if (jobs[j].n_gpus < 2)
            jobs[j] = jobs[--n];
        else
            j++;
    }
    return n;
}

/*
 * The power limit a reading is judged against: its own, else the snapshot's (samples carry only
 * what changes, and the limit rarely does); 0 when neither is known.
 */
static uint32_t stall_limit_mw(const struct gpu *g, const struct gpu *ref)
{
    if (g->rc[GPU_S_POWER_LIMIT] == 0 && g->power_limit_mw > 0)
        return g->power_limit_mw;
    if (ref != NULL && ref->rc[GPU_S_POWER_LIMIT] == 0)
        return ref->power_limit_mw;
    return 0;
}

/* What a stall needs of a GPU's reading: utilisation, power and a limit, PCIe traffic. */
static bool stall_readable(const struct gpu *g, const struct gpu *ref)
{
    return usable(g) && g->rc[GPU_S_UTIL_GPU] == 0 && g->rc[GPU_S_POWER] == 0 &&
           stall_limit_mw(g, ref) > 0 && g->rc[GPU_S_PCIE_TX] == 0 && g->rc[GPU_S_PCIE_RX] == 0;
}

static bool stalled(const struct rule_ctx *ctx, const struct gpu *g, const struct gpu *ref)
{
    if (!stall_readable(g, ref))
        return false;
    return g->util_gpu_pct >= th(ctx, TH_STALL_UTIL_PCT) &&
           100.0 * g->power_mw / stall_limit_mw(g, ref) <= th(ctx, TH_STALL_POWER_PCT) &&
           (double)(g->pcie_tx_bytes_per_s + g->pcie_rx_bytes_per_s) / MIB <=
               th(ctx, TH_STALL_PCIE_MIB_PER_S);
}

/* The NVML index's position in the snapshot's GPU list (the samples keep that order). */
static size_t gpu_pos(const struct rule_ctx *ctx, uint32_t index)
{
    for (size_t i = 0; i < ctx->facts->n_gpus; i++) {
        if (ctx->facts->gpus[i].g->index == index)
            return i;
    }
    return ctx->facts->n_gpus;
}

/*
 * The NVLink traffic of the job's GPUs over the readings from start to the latest, into
 * rate[] (bytes per second, NAN where not read). Returns how many GPUs it was read for.
 */
static size_t stall_nvlink(const struct rule_ctx *ctx, const struct stall_job *j, size_t start,
                           double *rate)
{
    const struct history *h = ctx->facts->hist;
    const struct sample *first = &h->samples[start], *last = &h->samples[h->n - 1];
    size_t known = 0;

    for (size_t k = 0; k < j->n_gpus; k++) {
        size_t pos = gpu_pos(ctx, j->gpus[k]);

        rate[k] = NAN;
        if (pos < ctx->facts->n_gpus &&
            gpu_nvlink_traffic(sample_gpu(first, pos, j->gpus[k]),
                               sample_gpu(last, pos, j->gpus[k]), t_s(last) - t_s(first), &rate[k]))
            known++;
    }
    return known;
}

static void stall_finding(const struct rule_ctx *ctx, struct findings *out,
                          const struct stall_job *j, size_t start, const double *nvlink,
                          size_t nvlink_known)
{
    const struct history *h = ctx->facts->hist;
    const struct sample *last = &h->samples[h->n - 1];
    double span = t_s(last) - t_s(&h->samples[start]);
    char gpus[96], dur[16], rates[320] = "";
    int32_t list[16], unread[16];
    size_t n_unread = 0, used = 0;
    struct finding *f;

    for (size_t k = 0; k < j->n_gpus; k++)
        list[k] = (int32_t)j->gpus[k];
    render_ranges(gpus, sizeof(gpus), list, j->n_gpus);
    render_duration(dur, sizeof(dur), span);
    f = finding_new(ctx, out, (int32_t)j->gpus[0], (int32_t)j->pids[0]);
    finding_title(f,
                  "GPUs %s of one job busy but drawing idle power for %s%s: a stalled collective?",
                  gpus, start == 0 ? "at least " : "", dur);
    finding_evidence(f, "the job: %s, %zu process%s on GPUs %s", j->key, j->n_pids,
                     j->n_pids == 1 ? "" : "es", gpus);
    for (size_t k = 0; k < j->n_gpus; k++) {
        size_t pos = gpu_pos(ctx, j->gpus[k]);
        const struct gpu *g = sample_gpu(last, pos, j->gpus[k]);
        uint32_t limit;
        char tx[16], rx[16];

        if (g == NULL || pos == ctx->facts->n_gpus)
            continue;
        limit = stall_limit_mw(g, ctx->facts->gpus[pos].g);
        render_bytes(tx, sizeof(tx), g->pcie_tx_bytes_per_s);
        render_bytes(rx, sizeof(rx), g->pcie_rx_bytes_per_s);
        finding_evidence(f,
                         "GPU %" PRIu32 ": utilisation %" PRIu32 " %%, power %" PRIu32
                         " of %" PRIu32 " W (%.0f %%), PCIe %s/s out, %s/s in (latest reading)",
                         g->index, g->util_gpu_pct, g->power_mw / 1000, limit / 1000,
                         limit ? 100.0 * g->power_mw / limit : 0.0, tx, rx);
    }
    finding_evidence(f,
                     "so in all %zu readings of the last %s%s: at least %.0f %% busy, at most "
                     "%.0f %% of the power limit, at most %.0f MiB/s over PCIe",
                     h->n - start, dur, start == 0 ? " (the whole history)" : "",
                     th(ctx, TH_STALL_UTIL_PCT), th(ctx, TH_STALL_POWER_PCT),
                     th(ctx, TH_STALL_PCIE_MIB_PER_S));
    for (size_t k = 0; k < j->n_gpus; k++) {
        char b[16];

        if (isnan(nvlink[k])) {
            unread[n_unread++] = (int32_t)j->gpus[k];
            continue;
        }
        render_bytes(b, sizeof(b), (uint64_t)nvlink[k]);
        if (used < sizeof(rates))
            used += (size_t)snprintf(rates + used, sizeof(rates) - used, "%sGPU %" PRIu32 " %s/s",
                                     used ? ", " : "", j->gpus[k], b);
    }
    if (nvlink_known > 0)
        finding_evidence(f, "NVLink traffic over those readings, both directions: %s", rates);
    if (n_unread > 0) {
        char which[96];

        render_ranges(which, sizeof(which), unread, n_unread);
        finding_evidence(f,
                         "NVLink traffic not read on GPUs %s (no NVLink, or no data counters): "
                         "utilisation, power and PCIe traffic decide for them",
                         which);
    }
    for (size_t k = 0; k < j->n_pids && k < 4; k++) {
        if (fix_pid_ok(j->pids[k]))
            finding_fix(f, "py-spy dump --pid %" PRIu32 "   # where each rank waits", j->pids[k]);
    }
    finding_fix(f,
                "# every rank inside one collective (ncclAllReduce, all_gather...) for minutes: a "
                "peer died, hangs or diverged; look at the other ranks and nodes, then end and "
                "restart the job");
    finding_fix(f, "# next run: NCCL_DEBUG=INFO, and TORCH_NCCL_ASYNC_ERROR_HANDLING=1 with a "
                   "timeout (init_process_group(timeout=...)) turn a hang into an error");
    f->impact = (double)j->n_gpus;
}

static void check_collective_stalled(const struct rule_ctx *ctx, struct findings *out)
{
    const struct history *h = ctx->facts->hist;
    struct stall_job jobs[16];
    size_t n_jobs;

    if (!need_history(ctx, out))
        return;
    n_jobs = stall_jobs(ctx, jobs, ARRAY_SIZE(jobs));
    for (size_t j = 0; j < n_jobs; j++) {
        const struct sample *last = &h->samples[h->n - 1];
        size_t k = h->n, start = h->n;
        bool readable = true;

        for (size_t g = 0; g < jobs[j].n_gpus; g++) {
            uint32_t idx = jobs[j].gpus[g];
            size_t pos = gpu_pos(ctx, idx);

            if (!stall_readable(sample_gpu(last, pos, idx), ctx->facts->gpus[pos].g)) {
                rule_skip(ctx, out, (int32_t)idx,
                          "utilisation, power or PCIe traffic not read in the latest reading");
                readable = false;
            }
        }
        if (!readable)
            continue;
        /* Back from the latest reading while every GPU of the job spins. */
        while (k > 0) {
            bool all = true;

            for (size_t g = 0; g < jobs[j].n_gpus && all; g++) {
                uint32_t idx = jobs[j].gpus[g];
                size_t pos = gpu_pos(ctx, idx);

                all =
                    stalled(ctx, sample_gpu(&h->samples[k - 1], pos, idx), ctx->facts->gpus[pos].g);
            }
            if (!all)
                break;
            start = --k;
        }
        if (start < h->n && t_s(last) - t_s(&h->samples[start]) >= th(ctx, TH_STALL_MIN_S)) {
            double nvlink[16];
            size_t known = stall_nvlink(ctx, &jobs[j], start, nvlink);
            bool moving = false;

            /* data flowing over NVLink is a collective that progresses, not one that waits */
            for (size_t g = 0; g < jobs[j].n_gpus; g++)
                moving |= !isnan(nvlink[g]) && nvlink[g] / MIB > th(ctx, TH_STALL_PCIE_MIB_PER_S);
            if (!moving)
                stall_finding(ctx, out, &jobs[j], start, nvlink, known);
        }
    }
}

const struct rule rule_perf_collective_stalled = {
    .id = "perf.collective-stalled",
    .severity = SEV_WARNING,
    .category = CAT_THROUGHPUT,
    .title = N_("Multi-GPU job spinning: a stalled collective"),
    .explanation = N_(
        "Every GPU of one job shows high utilisation, yet draws little power and moves almost "
        "nothing over PCIe, for minutes. Utilisation only says that a kernel is resident: a NCCL "
        "collective (all-reduce, all-gather, a barrier) waiting for a peer that died, hung or took "
        "a different branch spins in such a kernel on every rank, so the job looks 100 % busy "
        "while it makes no progress. Without a timeout it waits until the job's time limit, and "
        "the GPUs are lost to everyone meanwhile. A job that computes draws far more power."),
    .detection = N_(
        "over the history, the compute processes grouped into jobs (a container, a Slurm job or a "
        "pod, else the parent that launched them); for each job on two GPUs or more, the "
        "readings back from the latest in which every one of its GPUs is at or above "
        "stall_util_pct utilisation, at or below stall_power_pct of its power limit, and at or "
        "below stall_pcie_mib_per_s of PCIe traffic (both directions), lasting at least "
        "stall_min_s; where NVML gives the NVLink data counters, the NVLink traffic of each GPU "
        "over those readings must be at or below stall_pcie_mib_per_s too (data moving over "
        "NVLink is a collective that progresses). Needs a history of trend_min_duration_s "
        "(gpudoctor watch, serve, or check --from a recording)."),
    .fix = N_(
        "Dump the ranks' stacks (py-spy dump --pid PID) to see the collective they wait in, look "
        "for the rank or node that is missing (its log, its own GPU's errors, the network), then "
        "end and restart the job. Make the next hang an error: NCCL_DEBUG=INFO, and in PyTorch "
        "TORCH_NCCL_ASYNC_ERROR_HANDLING=1 with a timeout for the process group."),
    .thresholds = THRESHOLDS(TH_STALL_UTIL_PCT, TH_STALL_POWER_PCT, TH_STALL_PCIE_MIB_PER_S,
                             TH_STALL_MIN_S, TH_TREND_MIN_DURATION_S),
    .check = check_collective_stalled,
};

bool rule_is_trend(const struct rule *r)
{
    return r == &rule_mem_leak || r == &rule_mem_idle_held || r == &rule_perf_util_swing ||
           r == &rule_clock_throttle_episodes || r == &rule_clock_temp_rising ||
           r == &rule_perf_collective_stalled;
}
