/*
 * The processes collector: who holds the GPUs, in what state, in which container. start() scans
 * /proc once (procfs-scan.c) and joins NVML's lists, which the NVML collector filled before;
 * sample() reads the CPU time of the processes found; finish() turns those readings into CPU %.
 */
#include "collect/collect.h"
#include "collect/procfs-scan.h"
#include "collect/procfs.h"
#include "util/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool has(const struct proc *p, enum proc_slot slot)
{
    return (p->valid >> slot) & 1u;
}

struct procs_state {
    int proc_fd; /* <root>/proc */
};

static void *start(struct collect_ctx *ctx, struct snapshot *s)
{
    struct collector_status *cs = &s->collectors[COLLECTOR_PROCS];
    struct procfs_scan_opts o;
    struct procs_state *st;

    memset(&o, 0, sizeof(o));
    o.root_fd = ctx->root.fd;
    o.live = ctx->live;
    collector_set(cs, CS_OK, NULL);
    if (procfs_scan(&o, s, cs) != 0)
        return NULL;
    st = xcalloc(1, sizeof(*st));
    st->proc_fd = openat(ctx->root.fd, "proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    return st;
}

/* The CPU time of one process now, if it is still the same process. */
static bool read_cpu(int proc_fd, const struct proc *p, uint32_t clk_tck, uint64_t *cpu_ms)
{
    char name[32], buf[2048], why[8];
    struct procfs_stat st;

    snprintf(name, sizeof(name), "%d/stat", p->pid);
    if (file_read_at(proc_fd, name, buf, sizeof(buf)) < 0 ||
        procfs_parse_stat(buf, &st, why, sizeof(why)) != 0 || st.start_ticks != p->start_ticks)
        return false;
    *cpu_ms = (st.utime_ticks + st.stime_ticks) * 1000 / clk_tck;
    return true;
}

static void sample(struct collect_ctx *ctx, void *state, struct snapshot *s, struct sample *smp)
{
    const struct procs_state *st = state;
    const struct proc_table *t = &s->procs;
    uint32_t tck = t->clk_tck ? t->clk_tck : 100;

    if (st == NULL)
        return;
    smp->procs = xcalloc(t->n_procs + 1, sizeof(*smp->procs));
    for (size_t i = 0; i < t->n_procs; i++) {
        const struct proc *p = &t->procs[i];
        struct proc_sample *ps = &smp->procs[smp->n_procs];

        if (!has(p, PROC_S_STAT))
            continue;
        /* Without a window there is no rate to compute: record the scan's reading, read nothing. */
        if (ctx->opts->window_ms == 0 || st->proc_fd < 0)
            ps->cpu_time_ms = p->cpu_time_ms;
        else if (!read_cpu(st->proc_fd, p, tck, &ps->cpu_time_ms))
            continue; /* exited, or its pid is another process's now */
        ps->pid = p->pid;
        ps->start_ticks = p->start_ticks;
        smp->n_procs++;
    }
}

/* This process's reading in one sample, or NULL. Samples are written in pid order. */
static const struct proc_sample *find_reading(const struct sample *smp, const struct proc *p)
{
    size_t lo = 0, hi = smp->n_procs;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (smp->procs[mid].pid < p->pid)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < smp->n_procs && smp->procs[lo].pid == p->pid &&
        smp->procs[lo].start_ticks == p->start_ticks)
        return &smp->procs[lo];
    /* Samples read from a file need not be sorted. */
    for (size_t i = 0; i < smp->n_procs; i++) {
        if (smp->procs[i].pid == p->pid && smp->procs[i].start_ticks == p->start_ticks)
            return &smp->procs[i];
    }
    return NULL;
}

/* CPU % of each process between the first and the last sample that saw it. */
static void compute_cpu_pct(struct snapshot *s)
{
    for (size_t i = 0; i < s->procs.n_procs; i++) {
        struct proc *p = &s->procs.procs[i];
        const struct proc_sample *first = NULL, *last = NULL;
        int64_t t_first = 0, t_last = 0;
        uint64_t used;

        p->valid &= ~(UINT64_C(1) << PROC_S_CPU_PCT);
        if (!has(p, PROC_S_STAT))
            continue;
        for (size_t k = 0; k < s->n_samples; k++) {
            const struct proc_sample *r = find_reading(&s->samples[k], p);

            if (r == NULL)
                continue;
            if (first == NULL) {
                first = r;
                t_first = s->samples[k].t_ms;
            }
            last = r;
            t_last = s->samples[k].t_ms;
        }
        if (first == NULL || t_last <= t_first)
            continue;
        /* Counters only grow; a smaller reading is a glitch, not negative time. */
        used = last->cpu_time_ms > first->cpu_time_ms ? last->cpu_time_ms - first->cpu_time_ms : 0;
        p->cpu_pct = (double)used * 100.0 / (double)(t_last - t_first);
        p->valid |= UINT64_C(1) << PROC_S_CPU_PCT;
    }
}

static void finish(struct collect_ctx *ctx, void *state, struct snapshot *s)
{
    struct procs_state *st = state;

    (void)ctx;
    compute_cpu_pct(s);
    if (st != NULL) {
        if (st->proc_fd >= 0)
            close(st->proc_fd);
        free(st);
    }
}

const struct collector_ops collector_procs = { COLLECTOR_PROCS, start, sample, finish };
