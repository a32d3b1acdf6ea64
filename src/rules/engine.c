/*
 * The engine: builds the context once (per-GPU history views, who holds each GPU, a pid index),
 * runs each rule of the table, drops findings made redundant by a more specific one, and ranks.
 */
#include "nvml/nvml-abi.h"
#include "rules/rule-impl.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

const char *const severity_names[] = { "info", "warning", "critical", NULL };
const char *const category_names[] = { "health",     "stack",  "memory", "process",
                                       "throughput", "clocks", "pcie",   NULL };

const struct rule *rule_find(const char *id)
{
    for (size_t i = 0; i < n_rules; i++) {
        if (strcmp(rule_table[i]->id, id) == 0)
            return rule_table[i];
    }
    return NULL;
}

size_t rule_position(const struct rule *r)
{
    for (size_t i = 0; i < n_rules; i++) {
        if (rule_table[i] == r)
            return i;
    }
    fatal("rule %s is not in the table", r->id);
}

/* ---- the context ---- */

static int cmp_proc_pid(const void *a, const void *b)
{
    const struct proc *x = *(const struct proc *const *)a, *y = *(const struct proc *const *)b;

    return (x->pid > y->pid) - (x->pid < y->pid);
}

const struct proc *ctx_proc(const struct rule_ctx *ctx, int32_t pid)
{
    size_t lo = 0, hi = ctx->n_by_pid;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int32_t p = ctx->by_pid[mid]->pid;

        if (p == pid)
            return ctx->by_pid[mid];
        if (p < pid)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

const struct gpu_view *ctx_gpu(const struct rule_ctx *ctx, uint32_t idx)
{
    for (size_t i = 0; i < ctx->n_gpus; i++) {
        if (ctx->gpus[i].g->index == idx)
            return &ctx->gpus[i];
    }
    return NULL;
}

int64_t ctx_now_ms(const struct rule_ctx *ctx)
{
    return ctx->snap->time_ms;
}

double ctx_proc_age_s(const struct rule_ctx *ctx, const struct proc *p)
{
    int64_t ms;

    if (p == NULL || ctx->snap->time_ms <= 0)
        return -1;
    ms = proc_age_ms(p, ctx->snap->time_ms);
    return ms < 0 ? -1 : (double)ms / 1000.0;
}

bool ctx_has_window(const struct rule_ctx *ctx)
{
    return ctx->hist->n >= 2 && ctx->hist->samples[ctx->hist->n - 1].t_ms > 0;
}

/* The GPU with NVML index idx in a sample; samples normally keep the snapshot's order. */
static const struct gpu *sample_gpu(const struct sample *smp, size_t pos, uint32_t idx)
{
    if (pos < smp->n_gpus && smp->gpus[pos].index == idx)
        return &smp->gpus[pos];
    for (size_t i = 0; i < smp->n_gpus; i++) {
        if (smp->gpus[i].index == idx)
            return &smp->gpus[i];
    }
    return NULL;
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

static void add_reasons(struct gpu_view *v, uint64_t reasons)
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

size_t view_reason_count(const struct gpu_view *v, uint64_t bit)
{
    for (unsigned b = 0; b < ARRAY_SIZE(v->reason_count); b++) {
        if (bit == (UINT64_C(1) << b))
            return v->reason_count[b];
    }
    return 0;
}

static void view_history(struct gpu_view *v, size_t pos, const struct history *h, double busy_pct)
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

static struct holder *add_holder(struct gpu_view *v, size_t *cap, uint32_t pid)
{
    struct holder *h;

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

/* Joins NVML's process list of each GPU with the process table's view of who has it open. */
static void build_holders(struct rule_ctx *ctx)
{
    const struct proc_table *t = &ctx->snap->procs;
    size_t *cap = xcalloc(ctx->n_gpus ? ctx->n_gpus : 1, sizeof(*cap));

    for (size_t i = 0; i < ctx->n_gpus; i++) {
        struct gpu_view *v = &ctx->gpus[i];
        const struct gpu *g = v->g;

        for (size_t k = 0; k < g->n_procs; k++) {
            const struct gpu_proc *np = &g->procs[k];
            struct holder *h = add_holder(v, &cap[i], np->pid);

            h->np = np;
            h->p = ctx_proc(ctx, (int32_t)np->pid);
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
            struct gpu_view *v = NULL;
            struct holder *h = NULL;

            for (size_t j = 0; j < ctx->n_gpus && (pg->valid & (UINT64_C(1) << PROC_GPU_S_INDEX));
                 j++) {
                if (ctx->gpus[j].g->index == pg->gpu_index)
                    v = &ctx->gpus[j];
            }
            if (v == NULL)
                continue;
            for (size_t j = 0; j < v->n_holders; j++) {
                if (v->holders[j].pid == (uint32_t)p->pid)
                    h = &v->holders[j];
            }
            if (h == NULL) {
                h = add_holder(v, &cap[v - ctx->gpus], (uint32_t)p->pid);
                h->p = p;
            }
            h->pg = pg;
            if (!h->used_valid && (pg->valid & (UINT64_C(1) << PROC_GPU_S_USED))) {
                h->used_valid = true;
                h->used_bytes = pg->used_bytes;
            }
        }
    }
    for (size_t i = 0; i < ctx->n_gpus; i++) {
        struct gpu_view *v = &ctx->gpus[i];

        for (size_t k = 0; k < v->n_holders; k++) {
            const struct holder *h = &v->holders[k];

            if ((h->np && is_compute(h->np->type_mask)) ||
                (!h->np && h->pg && is_compute(h->pg->type_mask)))
                v->n_compute++;
        }
    }
    free(cap);
}

struct use_ref {
    int32_t pid;
    uint32_t gpu;
    const struct holder *h;
};

static int cmp_use_ref(const void *a, const void *b)
{
    const struct use_ref *x = a, *y = b;

    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    return (x->gpu > y->gpu) - (x->gpu < y->gpu);
}

/* Groups every GPU's holders by process: one record per pid with all its GPUs. */
static void build_uses(struct rule_ctx *ctx)
{
    struct use_ref *refs;
    size_t n = 0, cap = 0, i = 0;
    uint64_t top_bytes = 0;

    for (size_t k = 0; k < ctx->n_gpus; k++)
        cap += ctx->gpus[k].n_holders;
    refs = xcalloc(cap ? cap : 1, sizeof(*refs));
    for (size_t k = 0; k < ctx->n_gpus; k++) {
        for (size_t j = 0; j < ctx->gpus[k].n_holders; j++) {
            refs[n].pid = (int32_t)ctx->gpus[k].holders[j].pid;
            refs[n].gpu = ctx->gpus[k].g->index;
            refs[n].h = &ctx->gpus[k].holders[j];
            n++;
        }
    }
    qsort(refs, n, sizeof(*refs), cmp_use_ref);
    ctx->uses = xcalloc(n ? n : 1, sizeof(*ctx->uses));
    while (i < n) {
        struct proc_use *u = &ctx->uses[ctx->n_uses++];
        bool graphics = false;

        u->pid = refs[i].pid;
        u->p = refs[i].h->p;
        u->top_gpu = (int32_t)refs[i].gpu;
        top_bytes = 0;
        u->gpus = xcalloc(1, sizeof(*u->gpus));
        for (; i < n && refs[i].pid == u->pid; i++) {
            const struct holder *h = refs[i].h;
            uint32_t mask = h->np ? h->np->type_mask : (h->pg ? h->pg->type_mask : 0);

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

const struct proc_use *ctx_use(const struct rule_ctx *ctx, int32_t pid)
{
    size_t lo = 0, hi = ctx->n_uses;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (ctx->uses[mid].pid == pid)
            return &ctx->uses[mid];
        if (ctx->uses[mid].pid < pid)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

static void ctx_build(struct rule_ctx *ctx, const struct snapshot *s, const struct history *h,
                      const struct thresholds *t)
{
    memset(ctx, 0, sizeof(*ctx));
    ctx->snap = s;
    ctx->hist = h;
    ctx->th = t;
    /* The table can vouch for a pid's absence only when /proc was actually scanned. */
    ctx->procs_known = s->procs.n_procs > 0 || s->collectors[COLLECTOR_PROCS].state == CS_OK ||
                       s->collectors[COLLECTOR_PROCS].state == CS_PARTIAL;

    ctx->n_by_pid = s->procs.n_procs;
    ctx->by_pid = xcalloc(ctx->n_by_pid ? ctx->n_by_pid : 1, sizeof(*ctx->by_pid));
    for (size_t i = 0; i < s->procs.n_procs; i++)
        ctx->by_pid[i] = &s->procs.procs[i];
    qsort(ctx->by_pid, ctx->n_by_pid, sizeof(*ctx->by_pid), cmp_proc_pid);

    ctx->n_gpus = s->n_gpus;
    ctx->gpus = xcalloc(s->n_gpus ? s->n_gpus : 1, sizeof(*ctx->gpus));
    for (size_t i = 0; i < s->n_gpus; i++) {
        struct gpu_view *v = &ctx->gpus[i];

        v->g = &s->gpus[i];
        v->pcie = find_pcie(s, v->g);
        view_history(v, i, h, t->v[TH_GPU_BUSY_UTIL_PCT]);
    }
    build_holders(ctx);
    build_uses(ctx);
}

static void ctx_free(struct rule_ctx *ctx)
{
    for (size_t i = 0; i < ctx->n_gpus; i++)
        free(ctx->gpus[i].holders);
    free(ctx->gpus);
    free(ctx->by_pid);
    for (size_t i = 0; i < ctx->n_uses; i++)
        free(ctx->uses[i].gpus);
    free(ctx->uses);
}

/* ---- running ---- */

static void subject_free(struct subject *s)
{
    free(s->gpu_uuid);
    free(s->user);
    free(s->command);
    free(s->container);
    free(s->object);
}

static void finding_free(struct finding *f)
{
    subject_free(&f->subject);
    free(f->title);
    for (size_t i = 0; i < f->n_evidence; i++)
        free(f->evidence[i]);
    free(f->evidence);
    for (size_t i = 0; i < f->n_fix; i++)
        free(f->fix[i]);
    free(f->fix);
}

void findings_free(struct findings *f)
{
    for (size_t i = 0; i < f->n; i++)
        finding_free(&f->items[i]);
    free(f->items);
    for (size_t i = 0; i < f->n_skips; i++)
        free(f->skips[i].reason);
    free(f->skips);
    memset(f, 0, sizeof(*f));
}

/*
 * A finding yields when a rule it names found something about the same GPU (and, when the
 * finding is about a process, the same process): the more specific finding explains it.
 */
static bool yields(const struct finding *f, const struct findings *all)
{
    if (f->rule->yields_to == NULL)
        return false;
    for (size_t i = 0; i < all->n; i++) {
        const struct finding *o = &all->items[i];

        if (o == f || o->subject.gpu_index != f->subject.gpu_index ||
            (f->subject.pid >= 0 && o->subject.pid != f->subject.pid))
            continue;
        for (size_t k = 0; f->rule->yields_to[k] != NULL; k++) {
            if (strcmp(f->rule->yields_to[k], o->rule->id) == 0)
                return true;
        }
    }
    return false;
}

static void drop_redundant(struct findings *out)
{
    bool *drop = xcalloc(out->n ? out->n : 1, sizeof(*drop));
    size_t n = 0;

    /* Decide first, then compact: a dropped finding may still be what another yields to. */
    for (size_t i = 0; i < out->n; i++)
        drop[i] = yields(&out->items[i], out);
    for (size_t i = 0; i < out->n; i++) {
        if (drop[i])
            finding_free(&out->items[i]);
        else
            out->items[n++] = out->items[i];
    }
    out->n = n;
    free(drop);
}

static int cmp_str(const char *a, const char *b)
{
    return strcmp(a ? a : "", b ? b : "");
}

static int cmp_finding(const void *a, const void *b)
{
    const struct finding *x = a, *y = b;
    size_t px, py;

    if (x->severity != y->severity)
        return x->severity > y->severity ? -1 : 1;
    if (x->impact != y->impact)
        return x->impact > y->impact ? -1 : 1;
    px = rule_position(x->rule);
    py = rule_position(y->rule);
    if (px != py)
        return px < py ? -1 : 1;
    if (x->subject.gpu_index != y->subject.gpu_index)
        return x->subject.gpu_index < y->subject.gpu_index ? -1 : 1;
    if (x->subject.pid != y->subject.pid)
        return x->subject.pid < y->subject.pid ? -1 : 1;
    return cmp_str(x->subject.object, y->subject.object);
}

void rules_run(const struct snapshot *s, const struct history *h, const struct rules_config *cfg,
               struct findings *out)
{
    struct history own = { s->samples, s->n_samples };
    struct rule_ctx ctx;

    ctx_build(&ctx, s, h ? h : &own, &cfg->th);
    for (size_t i = 0; i < n_rules; i++) {
        if (cfg->disabled && cfg->disabled[i])
            continue;
        ctx.rule = rule_table[i];
        rule_table[i]->check(&ctx, out);
    }
    ctx_free(&ctx);
    drop_redundant(out);
    if (out->n > 1)
        qsort(out->items, out->n, sizeof(*out->items), cmp_finding);
}

static int cmp_judgement(const void *a, const void *b)
{
    const struct proc_judgement *x = a, *y = b;

    return (x->pid > y->pid) - (x->pid < y->pid);
}

size_t rules_judge_procs(const struct snapshot *s, const struct history *h,
                         const struct thresholds *th, struct proc_judgement **out)
{
    struct history own = { s->samples, s->n_samples };
    struct rule_ctx ctx;
    int64_t idle_ms = s->n_samples ? s->samples[s->n_samples - 1].t_ms : 0;
    size_t n;

    ctx_build(&ctx, s, h ? h : &own, th);
    n = ctx.n_uses;
    *out = xcalloc(n ? n : 1, sizeof(**out));
    for (size_t i = 0; i < n; i++) {
        struct proc_judgement *j = &(*out)[i];

        j->pid = ctx.uses[i].pid;
        j->verdict = rule_proc_verdict(&ctx, j->pid);
        /* CPU use is known over the snapshot's own window only: that is what proves idleness. */
        j->idle_for_ms = -1;
        if (j->verdict == PROC_VERDICT_IDLE || j->verdict == PROC_VERDICT_IDLE_HOLDER ||
            j->verdict == PROC_VERDICT_ORPHANED)
            j->idle_for_ms = idle_ms;
    }
    ctx_free(&ctx);
    qsort(*out, n, sizeof(**out), cmp_judgement); /* uses are by pid already; say so for callers */
    return n;
}

const struct proc_judgement *proc_judgement_find(const struct proc_judgement *j, size_t n,
                                                 int32_t pid)
{
    struct proc_judgement key = { .pid = pid };

    return n ? bsearch(&key, j, n, sizeof(*j), cmp_judgement) : NULL;
}

size_t findings_count(const struct findings *f, enum severity sev)
{
    size_t n = 0;

    for (size_t i = 0; i < f->n; i++)
        n += f->items[i].severity == sev;
    return n;
}

int findings_worst(const struct findings *f)
{
    int worst = -1;

    for (size_t i = 0; i < f->n; i++) {
        if ((int)f->items[i].severity > worst)
            worst = (int)f->items[i].severity;
    }
    return worst;
}

char *rules_cannot_check(const struct snapshot *s, const struct findings *f)
{
    const struct nvml_system *n = &s->nvml;
    const char *why;

    if (s->n_gpus > 0 || findings_worst(f) == SEV_CRITICAL)
        return NULL;
    if (!n->attempted)
        return xstrdup("NVML was not queried, so nothing is known about GPUs.");
    if (n->load_error != 0 && n->load_error != NVML_ERROR_LIBRARY_NOT_FOUND)
        return xasprintf("No GPU could be checked: %s.",
                         n->load_detail ? n->load_detail : "the NVML library cannot be used");
    if (n->load_error != 0)
        return xasprintf("No NVIDIA GPU found: the NVIDIA driver's NVML library (%s) is not "
                         "installed%s.",
                         n->library ? n->library : "libnvidia-ml.so.1",
                         s->pcie.n_gpus == 0 && s->collectors[COLLECTOR_PCIE].state == CS_OK
                             ? " and no NVIDIA GPU is on the PCI bus"
                             : "");
    if (n->init_rc != 0) {
        why = n->init_error ? n->init_error : nvml_rc_name(n->init_rc);
        return xasprintf("NVML could not start (%s), so nothing is known about GPUs.",
                         why ? why : "unknown error");
    }
    return xstrdup("NVML answered but reports no GPU on this machine.");
}

int rules_exit_status(const struct snapshot *s, const struct findings *f)
{
    char *why = rules_cannot_check(s, f);

    if (why != NULL) {
        free(why);
        return 3;
    }
    switch (findings_worst(f)) {
    case SEV_CRITICAL:
        return 2;
    case SEV_WARNING:
        return 1;
    default:
        return 0;
    }
}

char *subject_key(const struct subject *s)
{
    char buf[512];
    size_t len = 0;

    buf[0] = '\0';
    if (s->gpu_index >= 0)
        len += (size_t)snprintf(buf + len, sizeof(buf) - len, "gpu=%d", (int)s->gpu_index);
    if (s->pid >= 0 && len < sizeof(buf))
        len +=
            (size_t)snprintf(buf + len, sizeof(buf) - len, "%spid=%d", len ? " " : "", (int)s->pid);
    if (s->object && len < sizeof(buf))
        len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%sobject=%s", len ? " " : "",
                                s->object);
    return xstrdup(len ? buf : "host");
}
