/*
 * The metric families about the GPUs: a table field per GPU (the freshest reading of a dynamic
 * one), whether each GPU answers, its identity, its clock event reasons, the processes NVML
 * lists on it, and the GPU memory of the processes that hold the most (the kernel log's XIDs:
 * metrics-memory.c). A value nobody could read gives no series, never 0.
 */
#include "render/metrics-internal.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The GPU of the last sample with g's index: the freshest dynamic values. */
static const struct gpu *latest_gpu(const struct snapshot *s, const struct gpu *g)
{
    const struct sample *smp;

    if (s->n_samples == 0)
        return NULL;
    smp = &s->samples[s->n_samples - 1];
    for (size_t i = 0; i < smp->n_gpus; i++) {
        if (smp->gpus[i].index == g->index)
            return smp->gpus[i].handle_rc == 0 ? &smp->gpus[i] : NULL;
    }
    return NULL;
}

void metrics_gpu_field(struct render *r, const struct metric_family *m)
{
    const struct jfield *f = jtable_find(&gpu_table, m->field);

    if (f == NULL)
        fatal("metric %s names unknown GPU field %s", m->name, m->field);
    for (size_t i = 0; i < r->s->n_gpus; i++) {
        const struct gpu *g = &r->s->gpus[i], *src = g, *last;
        struct mval v;

        if (g->handle_rc != 0)
            continue;
        last = latest_gpu(r->s, g);
        if ((f->flags & JF_DYNAMIC) && last != NULL && jfield_valid(&gpu_table, last, f))
            src = last;
        if (!jfield_valid(&gpu_table, src, f) || !metrics_field_number(f, src, &v))
            continue;
        if (f->type == JF_ENUM) {
            int32_t e = *(const int32_t *)((const char *)src + f->offset);
            size_t n = 0;
            struct mbuf lab = { 0 };

            while (f->enum_names[n])
                n++;
            if (e < 0 || (size_t)e >= n)
                continue;
            mbuf_add(&lab, "", 0);
            mbuf_label(&lab, m->labels, f->enum_names[e]);
            metrics_sample_u64(r, m, r->gpu_labels[i], lab.p, 1);
            free(lab.p);
            continue;
        }
        metrics_sample_begin(r, m, r->gpu_labels[i], m->labels);
        mbuf_value(&r->fam, &v, m->mul, m->div);
        mbuf_add(&r->fam, "\n", 1);
    }
}

void metrics_gpu_up(struct render *r, const struct metric_family *m)
{
    for (size_t i = 0; i < r->s->n_gpus; i++) {
        const struct gpu *g = &r->s->gpus[i], *last = latest_gpu(r->s, g);
        bool up = g->handle_rc == 0;

        /* A GPU that fell off during the window has no answer in the last sample. */
        if (r->s->n_samples > 0 && last == NULL)
            up = false;
        metrics_sample_u64(r, m, r->gpu_labels[i], NULL, up);
    }
}

void metrics_gpu_info(struct render *r, const struct metric_family *m)
{
    for (size_t i = 0; i < r->s->n_gpus; i++) {
        const struct gpu *g = &r->s->gpus[i];
        struct mbuf lab = { 0 };

        if (g->handle_rc != 0)
            continue;
        mbuf_add(&lab, "", 0);
        if (gpu_valid(g, GPU_S_PCI_BUS_ID) && g->pci_bus_id)
            mbuf_label(&lab, "pci_bus_id", g->pci_bus_id);
        if (gpu_valid(g, GPU_S_SERIAL) && g->serial)
            mbuf_label(&lab, "serial", g->serial);
        if (gpu_valid(g, GPU_S_VBIOS) && g->vbios_version)
            mbuf_label(&lab, "vbios_version", g->vbios_version);
        if (gpu_valid(g, GPU_S_CC_MAJOR) && gpu_valid(g, GPU_S_CC_MINOR)) {
            char cc[32];

            snprintf(cc, sizeof(cc), "%d.%d", (int)g->cc_major, (int)g->cc_minor);
            mbuf_label(&lab, "compute_capability", cc);
        }
        metrics_sample_u64(r, m, r->gpu_labels[i], lab.p, 1);
        free(lab.p);
    }
}

void metrics_clock_reasons(struct render *r, const struct metric_family *m)
{
    for (size_t i = 0; i < r->s->n_gpus; i++) {
        const struct gpu *g = &r->s->gpus[i], *src = g, *last = latest_gpu(r->s, g);
        bool supported;

        if (g->handle_rc != 0)
            continue;
        if (last != NULL && gpu_valid(last, GPU_S_EVENT_REASONS))
            src = last;
        if (!gpu_valid(src, GPU_S_EVENT_REASONS))
            continue;
        supported = gpu_valid(g, GPU_S_EVENT_REASONS_SUPPORTED);
        for (size_t k = 0; k < n_clock_reasons; k++) {
            uint64_t bit = clock_reasons[k].bit;
            bool on = (src->clocks_event_reasons & bit) != 0;
            char label[64];

            if (supported && !(g->clocks_event_reasons_supported & bit) && !on)
                continue;
            snprintf(label, sizeof(label), "reason=\"%s\"", clock_reasons[k].name);
            metrics_sample_u64(r, m, r->gpu_labels[i], label, on);
        }
    }
}

void metrics_gpu_processes(struct render *r, const struct metric_family *m)
{
    for (size_t i = 0; i < r->s->n_gpus; i++) {
        const struct gpu *g = &r->s->gpus[i];

        if (gpu_valid(g, GPU_S_PROCESSES))
            metrics_sample_u64(r, m, r->gpu_labels[i], NULL, g->n_procs);
    }
}

struct proc_mem {
    size_t gpu; /* position in s->gpus */
    const struct gpu_proc *p;
};

static int cmp_proc_mem(const void *a, const void *b)
{
    const struct proc_mem *x = a, *y = b;

    if (x->p->used_bytes != y->p->used_bytes)
        return x->p->used_bytes < y->p->used_bytes ? 1 : -1;
    if (x->gpu != y->gpu)
        return x->gpu < y->gpu ? -1 : 1;
    return (x->p->pid > y->p->pid) - (x->p->pid < y->p->pid);
}

/* Every (GPU, process) with a known memory figure, largest first; *n set. */
static struct proc_mem *proc_mem_list(const struct snapshot *s, size_t *n)
{
    struct proc_mem *list = NULL;
    size_t cap = 0;

    *n = 0;
    for (size_t i = 0; i < s->n_gpus; i++) {
        const struct gpu *g = &s->gpus[i];

        if (!gpu_valid(g, GPU_S_PROCESSES))
            continue;
        for (size_t k = 0; k < g->n_procs; k++) {
            if (!(g->procs[k].valid & (UINT64_C(1) << GPU_PROC_S_USED)))
                continue;
            xgrow(&list, &cap, *n + 1, sizeof(*list));
            list[(*n)++] = (struct proc_mem){ i, &g->procs[k] };
        }
    }
    if (*n > 1)
        qsort(list, *n, sizeof(*list), cmp_proc_mem);
    return list;
}

void metrics_proc_memory(struct render *r, const struct metric_family *m, bool dropped)
{
    size_t n, top = r->o->top_processes;
    struct proc_mem *list = proc_mem_list(r->s, &n);

    if (dropped) {
        metrics_sample_u64(r, m, NULL, NULL, n > top ? n - top : 0);
        free(list);
        return;
    }
    for (size_t k = 0; k < n && k < top; k++) {
        const struct gpu *g = &r->s->gpus[list[k].gpu];
        const struct proc *p = proc_table_find(&r->s->procs, (int32_t)list[k].p->pid);
        struct mbuf lab = { 0 };
        char pid[16];

        mbuf_add(&lab, "", 0);
        mbuf_printf(&lab, "gpu=\"%u\"", (unsigned)g->index);
        if (gpu_valid(g, GPU_S_UUID) && g->uuid)
            mbuf_label(&lab, "uuid", g->uuid);
        snprintf(pid, sizeof(pid), "%u", (unsigned)list[k].p->pid);
        mbuf_label(&lab, "pid", pid);
        if (p && proc_has(p, PROC_S_COMM) && p->comm)
            mbuf_label(&lab, "command", p->comm);
        if (p && (p->valid & (UINT64_C(1) << PROC_S_USER_NAME)) && p->user)
            mbuf_label(&lab, "user", p->user);
        metrics_sample_u64(r, m, lab.p, NULL, list[k].p->used_bytes);
        free(lab.p);
    }
    free(list);
}
