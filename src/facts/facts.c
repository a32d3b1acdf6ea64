/*
 * Deriving the facts: per-GPU views of the history, who holds each GPU (NVML's lists joined with
 * the fd scan), each process's use over its GPUs, and the pid index; then every process's verdict
 * (verdict.c). Built once per run, read by the rules, `procs`, `reap` and `watch`.
 */
#include "facts/facts.h"
#include "nvml/nvml-abi.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

static int cmp_proc_pid(const void *a, const void *b)
{
    const struct proc *x = *(const struct proc *const *)a, *y = *(const struct proc *const *)b;

    return (x->pid > y->pid) - (x->pid < y->pid);
}

const struct proc *facts_proc_find(const struct facts *f, int32_t pid)
{
    size_t lo = 0, hi = f->n_by_pid;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int32_t p = f->by_pid[mid]->pid;

        if (p == pid)
            return f->by_pid[mid];
        if (p < pid)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

const struct facts_gpu *facts_gpu_find(const struct facts *f, uint32_t idx)
{
    for (size_t i = 0; i < f->n_gpus; i++) {
        if (f->gpus[i].g->index == idx)
            return &f->gpus[i];
    }
    return NULL;
}

double facts_proc_age_s(const struct facts *f, const struct proc *p)
{
    int64_t ms;

    if (p == NULL || f->snap->time_ms <= 0)
        return -1;
    ms = proc_age_ms(p, f->snap->time_ms);
    return ms < 0 ? -1 : (double)ms / 1000.0;
}

bool facts_has_window(const struct facts *f)
{
    return f->hist->n >= 2 && f->hist->samples[f->hist->n - 1].t_ms > 0;
}

static const struct pcie_device *find_pcie(const struct snapshot *s, const struct gpu *g)
{
    if (!gpu_valid(g, GPU_S_PCI_BUS_ID) || g->pci_bus_id == NULL)
        return NULL;
    for (size_t i = 0; i < s->pcie.n_gpus; i++) {
        if (s->pcie.gpus[i].address && driver_pci_same(s->pcie.gpus[i].address, g->pci_bus_id))
            return &s->pcie.gpus[i];
    }
    return NULL;
}

static void add_reasons(struct facts_gpu *v, uint64_t reasons)
{
    v->reasons_valid = true;
    v->reasons_any |= reasons;
    v->reasons_last = reasons;
    v->reasons_n++;
    for (unsigned b = 0; b < ARRAY_SIZE(v->reason_count); b++) {
        if (reasons & (UINT64_C(1) << b))
            v->reason_count[b]++;
    }
}

size_t facts_gpu_reason_count(const struct facts_gpu *v, uint64_t bit)
{
    for (unsigned b = 0; b < ARRAY_SIZE(v->reason_count); b++) {
        if (bit == (UINT64_C(1) << b))
            return v->reason_count[b];
    }
    return 0;
}

static void view_history(struct facts_gpu *v, size_t pos, const struct history *h, double busy_pct)
{
    const struct gpu *g = v->g;
    double sum = 0;

    for (size_t k = 0; k < h->n; k++) {
        const struct gpu *sg = sample_gpu(&h->samples[k], pos, g->index);

        if (sg == NULL || sg->handle_rc != 0)
            continue;
        if (sg->rc[GPU_S_UTIL_GPU] == 0) {
            double u = sg->util_gpu_pct;

            if (v->util_n == 0 || u < v->util_min)
                v->util_min = u;
            if (v->util_n == 0 || u > v->util_max)
                v->util_max = u;
            sum += u;
            v->util_n++;
            if (u >= busy_pct && sg->rc[GPU_S_PCIE_GEN] == 0 &&
                (!v->busy_gen_valid || sg->pcie_gen < v->busy_gen_min)) {
                v->busy_gen_valid = true;
                v->busy_gen_min = sg->pcie_gen;
            }
        }
        if (sg->rc[GPU_S_EVENT_REASONS] == 0)
            add_reasons(v, sg->clocks_event_reasons);
        if (sg->rc[GPU_S_PCIE_REPLAY] == 0) {
            if (!v->replay_valid)
                v->replay_first = sg->pcie_replay_count;
            v->replay_valid = true;
            v->replay_last = sg->pcie_replay_count;
        }
    }
    /* With no usable sample, the snapshot's own reading is the one point of history. */
    if (v->util_n == 0 && gpu_valid(g, GPU_S_UTIL_GPU)) {
        v->util_min = v->util_max = sum = g->util_gpu_pct;
        v->util_n = 1;
        if (g->util_gpu_pct >= busy_pct && gpu_valid(g, GPU_S_PCIE_GEN)) {
            v->busy_gen_valid = true;
            v->busy_gen_min = g->pcie_gen;
        }
    }
    if (v->util_n > 0) {
        v->util_valid = true;
        v->util_mean = sum / (double)v->util_n;
    }
    if (!v->reasons_valid && gpu_valid(g, GPU_S_EVENT_REASONS))
        add_reasons(v, g->clocks_event_reasons);
    if (!v->replay_valid && gpu_valid(g, GPU_S_PCIE_REPLAY)) {
        v->replay_valid = true;
        v->replay_first = v->replay_last = g->pcie_replay_count;
    }
}

static struct facts_holder *add_holder(struct facts_gpu *v, size_t *cap, uint32_t pid)
{
    struct facts_holder *h;

    xgrow(&v->holders, cap, v->n_holders + 1, sizeof(*v->holders));
    h = &v->holders[v->n_holders++];
    memset(h, 0, sizeof(*h));
    h->pid = pid;
    return h;
}

static bool is_compute(uint32_t type_mask)
{
    return (type_mask & (GPU_PROC_COMPUTE | GPU_PROC_MPS)) != 0;
}

/* NVML's word on what kind of process it is, else the fd scan's. */
static uint32_t holder_type(const struct facts_holder *h)
{
    return h->np ? h->np->type_mask : (h->pg ? h->pg->type_mask : 0);
}

/* Joins NVML's process list of each GPU with the process table's view of who has it open. */
static void build_holders(struct facts *f)
{
    const struct proc_table *t = &f->snap->procs;
    size_t *cap = xcalloc(f->n_gpus ? f->n_gpus : 1, sizeof(*cap));

    for (size_t i = 0; i < f->n_gpus; i++) {
        struct facts_gpu *v = &f->gpus[i];
        const struct gpu *g = v->g;

        for (size_t k = 0; k < g->n_procs; k++) {
            const struct gpu_proc *np = &g->procs[k];
            struct facts_holder *h = add_holder(v, &cap[i], np->pid);

            h->np = np;
            h->p = facts_proc_find(f, (int32_t)np->pid);
            /* The process here with NVML's number is not NVML's (another PID namespace's, or a
             * reused pid): the holder is invisible from here, as one /proc lacks. */
            if (facts_proc_pid_foreign(h->p))
                h->p = NULL;
            if (np->valid & (1u << GPU_PROC_S_USED)) {
                h->used_valid = true;
                h->used_bytes = np->used_bytes;
            }
        }
    }
    for (size_t i = 0; i < t->n_procs; i++) {
        const struct proc *p = &t->procs[i];

        for (size_t k = 0; k < p->n_gpus; k++) {
            const struct proc_gpu *pg = &p->gpus[k];
            struct facts_gpu *v = NULL;
            struct facts_holder *h = NULL;

            for (size_t j = 0; j < f->n_gpus && (pg->valid & (UINT64_C(1) << PROC_GPU_S_INDEX));
                 j++) {
                if (f->gpus[j].g->index == pg->gpu_index)
                    v = &f->gpus[j];
            }
            if (v == NULL)
                continue;
            for (size_t j = 0; j < v->n_holders; j++) {
                if (v->holders[j].pid == (uint32_t)p->pid)
                    h = &v->holders[j];
            }
            if (h == NULL) {
                h = add_holder(v, &cap[v - f->gpus], (uint32_t)p->pid);
                h->p = p;
            }
            h->pg = pg;
            if (!h->used_valid && (pg->valid & (UINT64_C(1) << PROC_GPU_S_USED))) {
                h->used_valid = true;
                h->used_bytes = pg->used_bytes;
            }
        }
    }
    for (size_t i = 0; i < f->n_gpus; i++) {
        struct facts_gpu *v = &f->gpus[i];

        for (size_t k = 0; k < v->n_holders; k++) {
            struct facts_holder *h = &v->holders[k];

            h->type_mask = holder_type(h);
            v->n_compute += is_compute(h->type_mask);
        }
    }
    free(cap);
}

struct use_ref {
    int32_t pid;
    uint32_t gpu;
    const struct facts_holder *h;
};

static int cmp_use_ref(const void *a, const void *b)
{
    const struct use_ref *x = a, *y = b;

    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    return (x->gpu > y->gpu) - (x->gpu < y->gpu);
}

/* Groups every GPU's holders by process: one record per pid with all its GPUs. */
static void build_uses(struct facts *f)
{
    struct use_ref *refs;
    size_t n = 0, cap = 0, i = 0;
    uint64_t top_bytes = 0;

    for (size_t k = 0; k < f->n_gpus; k++)
        cap += f->gpus[k].n_holders;
    refs = xcalloc(cap ? cap : 1, sizeof(*refs));
    for (size_t k = 0; k < f->n_gpus; k++) {
        for (size_t j = 0; j < f->gpus[k].n_holders; j++) {
            refs[n].pid = (int32_t)f->gpus[k].holders[j].pid;
            refs[n].gpu = f->gpus[k].g->index;
            refs[n].h = &f->gpus[k].holders[j];
            n++;
        }
    }
    qsort(refs, n, sizeof(*refs), cmp_use_ref);
    f->uses = xcalloc(n ? n : 1, sizeof(*f->uses));
    while (i < n) {
        struct facts_use *u = &f->uses[f->n_uses++];
        bool graphics = false;

        u->pid = refs[i].pid;
        u->p = refs[i].h->p;
        u->top_gpu = (int32_t)refs[i].gpu;
        top_bytes = 0;
        u->gpus = xcalloc(1, sizeof(*u->gpus));
        for (; i < n && refs[i].pid == u->pid; i++) {
            const struct facts_holder *h = refs[i].h;
            uint32_t mask = h->type_mask;

            u->gpus = xreallocarray(u->gpus, u->n_gpus + 1, sizeof(*u->gpus));
            u->gpus[u->n_gpus++] = (int32_t)refs[i].gpu;
            if (h->used_valid) {
                u->used_valid = true;
                u->used_bytes += h->used_bytes;
                if (h->used_bytes > top_bytes) {
                    top_bytes = h->used_bytes;
                    u->top_gpu = (int32_t)refs[i].gpu;
                }
            }
            u->compute |= is_compute(mask);
            graphics |= (mask & GPU_PROC_GRAPHICS) != 0;
            if (h->np && (h->np->valid & (1u << GPU_PROC_S_UTIL))) {
                if (!u->sm_util_valid || h->np->sm_util_pct > u->sm_util_pct)
                    u->sm_util_pct = h->np->sm_util_pct;
                u->sm_util_valid = true;
            } else if (h->pg && (h->pg->valid & (UINT64_C(1) << PROC_GPU_S_UTIL))) {
                if (!u->sm_util_valid || h->pg->sm_util_pct > u->sm_util_pct)
                    u->sm_util_pct = h->pg->sm_util_pct;
                u->sm_util_valid = true;
            }
        }
        u->graphics_only = graphics && !u->compute;
    }
    free(refs);
}

const struct facts_use *facts_use_find(const struct facts *f, int32_t pid)
{
    size_t lo = 0, hi = f->n_uses;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (f->uses[mid].pid == pid)
            return &f->uses[mid];
        if (f->uses[mid].pid < pid)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

struct facts *facts_create(const struct snapshot *s, const struct history *h,
                           const struct thresholds *th)
{
    struct facts *f = xcalloc(1, sizeof(*f));

    f->snap = s;
    f->own_hist.samples = s->samples;
    f->own_hist.n = s->n_samples;
    f->hist = h ? h : &f->own_hist;
    f->th = th;
    /* The table can vouch for a pid's absence only when /proc was actually scanned. */
    f->procs_known = s->procs.n_procs > 0 || s->collectors[COLLECTOR_PROCS].state == CS_OK ||
                     s->collectors[COLLECTOR_PROCS].state == CS_PARTIAL;

    f->n_by_pid = s->procs.n_procs;
    f->by_pid = xcalloc(f->n_by_pid ? f->n_by_pid : 1, sizeof(*f->by_pid));
    for (size_t i = 0; i < s->procs.n_procs; i++)
        f->by_pid[i] = &s->procs.procs[i];
    qsort(f->by_pid, f->n_by_pid, sizeof(*f->by_pid), cmp_proc_pid);

    f->n_gpus = s->n_gpus;
    f->gpus = xcalloc(s->n_gpus ? s->n_gpus : 1, sizeof(*f->gpus));
    for (size_t i = 0; i < s->n_gpus; i++) {
        struct facts_gpu *v = &f->gpus[i];

        v->g = &s->gpus[i];
        v->pcie = find_pcie(s, v->g);
        view_history(v, i, f->hist, th->v[TH_GPU_BUSY_UTIL_PCT]);
    }
    build_holders(f);
    build_uses(f);
    /* Last: the verdict reads the uses, the views and the pid index. */
    for (size_t i = 0; i < f->n_uses; i++)
        f->uses[i].verdict = facts_verdict_of(f, &f->uses[i], &f->uses[i].if_idle);
    return f;
}

void facts_free(struct facts *f)
{
    if (f == NULL)
        return;
    for (size_t i = 0; i < f->n_gpus; i++)
        free(f->gpus[i].holders);
    free(f->gpus);
    free(f->by_pid);
    for (size_t i = 0; i < f->n_uses; i++)
        free(f->uses[i].gpus);
    free(f->uses);
    free(f);
}
