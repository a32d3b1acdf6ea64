/* Memory: nearly full, full while idle, and memory no visible process accounts for. */
#include "data/cudaerr.h"
#include "rules/oom-parse.h"
#include "rules/rule-impl.h"
#include "util/xalloc.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_holder_bytes(const void *a, const void *b)
{
    const struct facts_holder *x = *(const struct facts_holder *const *)a;
    const struct facts_holder *y = *(const struct facts_holder *const *)b;

    if (x->used_bytes != y->used_bytes)
        return x->used_bytes > y->used_bytes ? -1 : 1;
    return (x->pid > y->pid) - (x->pid < y->pid);
}

/* One evidence line per holder, largest first, at most max of them. */
void rules_holder_evidence(const struct rule_ctx *ctx, struct finding *f, const struct facts_gpu *v,
                           size_t max)
{
    const struct facts_holder **sorted = xcalloc(v->n_holders ? v->n_holders : 1, sizeof(*sorted));

    for (size_t i = 0; i < v->n_holders; i++)
        sorted[i] = &v->holders[i];
    qsort(sorted, v->n_holders, sizeof(*sorted), cmp_holder_bytes);
    for (size_t i = 0; i < v->n_holders && i < max; i++) {
        const struct facts_holder *h = sorted[i];
        char label[160], mem[16] = "?", age[16] = "?", cpu[24] = "", cpu_l[40] = "", state[40] = "",
                         state_l[80] = "";
        const struct proc *p = h->p;

        proc_desc(label, sizeof(label), ctx, (int32_t)h->pid);
        if (h->used_valid)
            render_bytes(mem, sizeof(mem), h->used_bytes);
        if (proc_ok(p, PROC_S_STATE)) {
            snprintf(state, sizeof(state), ", %s", proc_state_name(p->state));
            snprintf(state_l, sizeof(state_l), _(", %s"), _(proc_state_name(p->state)));
        }
        if (proc_ok(p, PROC_S_CPU_PCT)) {
            snprintf(cpu, sizeof(cpu), ", CPU %.0f %%", p->cpu_pct);
            snprintf(cpu_l, sizeof(cpu_l), _(", CPU %.0f %%"), p->cpu_pct);
        }
        if (facts_proc_age_s(ctx->facts, p) >= 0) {
            render_duration(age, sizeof(age), facts_proc_age_s(ctx->facts, p));
            finding_evidence_take(f, TWICE("%s holds %s%s%s, started %s ago",
                                           (label, mem, state, cpu, age),
                                           (label, mem, state_l, cpu_l, age)));
        } else {
            finding_evidence_take(f, TWICE("%s holds %s%s%s", (label, mem, state, cpu),
                                           (label, mem, state_l, cpu_l)));
        }
    }
    if (v->n_holders > max)
        finding_evidence(f, "... and %zu more processes", v->n_holders - max);
    free(sorted);
}

static void util_evidence(const struct rule_ctx *ctx, struct finding *f, const struct facts_gpu *v)
{
    if (!v->util_valid)
        return;
    if (v->util_n > 1)
        finding_evidence(f, "utilisation %.0f %% on average over %zu readings (%.0f-%.0f %%)",
                         v->util_mean, v->util_n, v->util_min, v->util_max);
    else
        finding_evidence(f, "utilisation %.0f %% (one reading; --window gives a trend)",
                         v->util_mean);
    (void)ctx;
}

static void mem_evidence(struct finding *f, const struct gpu *g)
{
    char used[16], total[16];

    render_bytes(used, sizeof(used), g->mem_used_bytes);
    render_bytes(total, sizeof(total), g->mem_total_bytes);
    finding_evidence(f, "memory used %s of %s (%.0f %%)", used, total,
                     pct((double)g->mem_used_bytes, (double)g->mem_total_bytes));
}

/* ---- mem.nearly-full ---- */

static void check_nearly_full(const struct rule_ctx *ctx, struct findings *out)
{
    for (size_t i = 0; i < ctx->facts->n_gpus; i++) {
        const struct facts_gpu *v = &ctx->facts->gpus[i];
        const struct gpu *g = v->g;
        double used;
        struct finding *f;
        char u[16], t[16];

        if (!need_gpu(ctx, out, g, GPU_S_MEM_USED) || !need_gpu(ctx, out, g, GPU_S_MEM_TOTAL))
            continue;
        used = pct((double)g->mem_used_bytes, (double)g->mem_total_bytes);
        if (used < th(ctx, TH_MEM_NEARLY_FULL_PCT))
            continue;
        /* On an idle GPU, full memory is mem.full-idle's business: a different cause. */
        if (v->util_valid && v->util_max <= th(ctx, TH_GPU_IDLE_UTIL_PCT))
            continue;
        render_bytes(u, sizeof(u), g->mem_used_bytes);
        render_bytes(t, sizeof(t), g->mem_total_bytes);
        f = finding_new(ctx, out, (int32_t)g->index, -1);
        finding_title(f, "GPU %" PRIu32 " memory %.0f%% full (%s of %s)", g->index, used, u, t);
        mem_evidence(f, g);
        util_evidence(ctx, f, v);
        rules_holder_evidence(ctx, f, v, 4);
        finding_fix(f,
                    "nvidia-smi -i %" PRIu32
                    " --query-compute-apps=pid,used_memory --format=csv   # who holds it",
                    g->index);
        finding_fix(f, "# in the job: smaller batch, mixed precision (torch.autocast), gradient "
                       "accumulation or checkpointing");
        finding_fix(f, "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True   # PyTorch: less "
                       "fragmentation near the limit");
        f->impact = used / 100.0 * 0.5;
    }
}

const struct rule rule_mem_nearly_full = {
    .id = "mem.nearly-full",
    .severity = SEV_WARNING,
    .category = CAT_MEMORY,
    .title = N_("GPU memory nearly full on a working GPU"),
    .explanation = N_(
        "The GPU's memory is almost entirely allocated while it is working. Jobs near the limit "
        "fail with 'CUDA out of memory' as soon as a batch is larger than usual, and even without "
        "an error the framework's allocator spends time freeing, splitting and retrying blocks "
        "(allocator churn), so steps get slower. Several jobs sharing the GPU make it worse: each "
        "one's cache leaves the others too little room."),
    .detection = N_("memory used (nvmlDeviceGetMemoryInfo_v2: allocated, without the driver's "
                    "reserve) divided by total, at or above mem_nearly_full_pct, on a GPU whose "
                    "utilisation rose above gpu_idle_util_pct during the window."),
    .fix =
        N_("Find the holders (the process list shows them). In the job: a smaller batch, mixed "
           "precision (AMP: FP16/BF16 roughly halves activation memory), gradient accumulation, "
           "activation checkpointing, or offloading (DeepSpeed, Accelerate). For PyTorch, "
           "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True reduces fragmentation. Give jobs that "
           "share the GPU a GPU each."),
    .thresholds = THRESHOLDS(TH_MEM_NEARLY_FULL_PCT, TH_GPU_IDLE_UTIL_PCT),
    .explains = EXPLAINS({ "mem.job-oom", LINK_SAME_GPU, NULL,
                           N_("a job that asks for more on a full GPU runs out"), LINK_FIX_OWN }),
    .check = check_nearly_full,
};

/* ---- mem.full-idle ---- */

/* "4121,4187": the holders' pids that a command may name; how many. */
static size_t holder_pids(char *buf, size_t size, const struct facts_gpu *v)
{
    size_t len = 0, n = 0;

    buf[0] = '\0';
    for (size_t k = 0; k < v->n_holders && len + 12 < size; k++) {
        if (!fix_pid_ok(v->holders[k].pid))
            continue;
        len +=
            (size_t)snprintf(buf + len, size - len, "%s%" PRIu32, n ? "," : "", v->holders[k].pid);
        n++;
    }
    return n;
}

static void check_full_idle(const struct rule_ctx *ctx, struct findings *out)
{
    for (size_t i = 0; i < ctx->facts->n_gpus; i++) {
        const struct facts_gpu *v = &ctx->facts->gpus[i];
        const struct gpu *g = v->g;
        double used;
        struct finding *f;
        char pids[256];

        if (!gpu_valid(g, GPU_S_MEM_USED) || !gpu_valid(g, GPU_S_MEM_TOTAL))
            continue; /* mem.nearly-full reports the missing field */
        used = pct((double)g->mem_used_bytes, (double)g->mem_total_bytes);
        if (used < th(ctx, TH_MEM_FULL_IDLE_PCT))
            continue;
        if (!v->util_valid) {
            need_gpu(ctx, out, g, GPU_S_UTIL_GPU);
            continue;
        }
        if (v->util_max > th(ctx, TH_GPU_IDLE_UTIL_PCT))
            continue;
        f = finding_new(ctx, out, (int32_t)g->index, -1);
        finding_title(f, "GPU %" PRIu32 " memory %.0f%% full while the GPU is idle (%.0f%%)",
                      g->index, used, v->util_max);
        mem_evidence(f, g);
        util_evidence(ctx, f, v);
        if (v->n_holders == 0 && gpu_valid(g, GPU_S_PROCESSES))
            finding_evidence(f, "no process is listed on this GPU");
        else if (v->n_holders == 0)
            finding_evidence_take(
                f,
                TWICE("the processes on this GPU are not known (%s %s)",
                      (gpu_field_name(GPU_S_PROCESSES), gpu_status_name(g, GPU_S_PROCESSES)),
                      (gpu_field_name(GPU_S_PROCESSES), _(gpu_status_name(g, GPU_S_PROCESSES)))));
        rules_holder_evidence(ctx, f, v, 4);
        if (holder_pids(pids, sizeof(pids), v) > 0)
            finding_fix(f, "ps -o pid,user,stat,etime,pcpu,args -p %s   # still working?", pids);
        else
            finding_fix(f, "sudo fuser -v /dev/nvidia%" PRIu32 "   # who has the device open",
                        gpu_dev_minor(g));
        finding_fix(f, "# a job waiting on its input: see perf.input-starved; a leak: "
                       "torch.cuda.memory_summary() in the job");
        for (size_t k = 0, n = 0; k < v->n_holders && n < 4; k++) {
            const struct facts_holder *h = &v->holders[k];

            if (!fix_pid_ok(h->pid))
                continue;
            finding_fix(f, "kill %" PRIu32 "   # if it is no longer needed: ask %s first", h->pid,
                        proc_ok(h->p, PROC_S_USER_NAME) && h->p->user ? h->p->user : "its owner");
            n++;
        }
        f->impact = used / 100.0;
    }
}

const struct rule rule_mem_full_idle = {
    .id = "mem.full-idle",
    .severity = SEV_WARNING,
    .category = CAT_MEMORY,
    .title = N_("GPU memory full while the GPU is idle"),
    .explanation = N_(
        "Memory is held but nothing runs on the GPU: 'memory 100 %, utilisation 0 %'. This is not "
        "compute load. Either a job is waiting (for its input, a lock, a debugger, another node), "
        "or memory leaked (tensors kept alive, caches never emptied), or the holder is stale: a "
        "finished, stopped or crashed job whose process still exists. New jobs cannot get memory "
        "and the server looks busy while doing nothing. When gpudoctor can name the stale holder "
        "(stopped, defunct, orphaned or idle process), that finding replaces this one."),
    .detection =
        N_("memory used at or above mem_full_idle_pct of total while GPU utilisation stayed "
           "at or below gpu_idle_util_pct at every reading of the window."),
    .fix = N_(
        "Look at each holder: is it still doing anything (CPU time, state, age)? Resume or end "
        "stopped ones, end abandoned ones after asking their owner, restart idle notebook "
        "kernels. For a running job, find what it waits on (input pipeline, network, I/O). For a "
        "leak, torch.cuda.memory_summary() or a profiler in the job."),
    .thresholds = THRESHOLDS(TH_MEM_FULL_IDLE_PCT, TH_GPU_IDLE_UTIL_PCT),
    .yields_to = YIELDS_TO("proc.stopped-holder", "proc.zombie-holder", "proc.orphan-holder",
                           "proc.idle-holder", "mem.unaccounted"),
    .explains =
        EXPLAINS({ "mem.job-oom", LINK_SAME_GPU, NULL,
                   N_("the memory held on the idle GPU is missing for the job"), LINK_FIX_OWN }),
    .check = check_full_idle,
};

/* ---- mem.unaccounted ---- */

static void check_unaccounted(const struct rule_ctx *ctx, struct findings *out)
{
    for (size_t i = 0; i < ctx->facts->n_gpus; i++) {
        const struct facts_gpu *v = &ctx->facts->gpus[i];
        const struct gpu *g = v->g;
        uint64_t listed = 0, hidden = 0, missing, held;
        size_t n_hidden = 0;
        bool unknown = false;
        struct finding *f;
        char m[16], u[16], l[16];

        if (!gpu_valid(g, GPU_S_MEM_USED) || !gpu_valid(g, GPU_S_MEM_TOTAL) ||
            !need_gpu(ctx, out, g, GPU_S_PROCESSES))
            continue;
        if (gpu_valid(g, GPU_S_MIG_MODE) && g->mig_mode) {
            rule_skip(ctx, out, (int32_t)g->index,
                      "MIG is enabled: per-process memory is per instance");
            continue;
        }
        for (size_t k = 0; k < v->n_holders; k++) {
            const struct facts_holder *h = &v->holders[k];
            bool invisible = h->p == NULL && ctx->facts->procs_known;

            if (h->np == NULL)
                continue; /* only NVML's records carry memory */
            n_hidden += invisible;
            if (!h->used_valid) {
                unknown = true;
                continue;
            }
            listed += h->used_bytes;
            if (invisible)
                hidden += h->used_bytes;
        }
        /* Without per-process memory the share is unknown, but a holder /proc does not have is
         * still a fact worth reporting while the GPU's memory is in use. */
        missing = unknown ? 0 : (g->mem_used_bytes > listed ? g->mem_used_bytes - listed : 0);
        held = unknown ? g->mem_used_bytes : missing + hidden;
        if (unknown && n_hidden == 0) {
            rule_skip(ctx, out, (int32_t)g->index,
                      "NVML does not report per-process memory (NOT_AVAILABLE)");
            continue;
        }
        if (held < th(ctx, TH_MEM_UNACCOUNTED_MIB) * MIB ||
            pct((double)held, (double)g->mem_total_bytes) < th(ctx, TH_MEM_UNACCOUNTED_PCT))
            continue;
        render_bytes(m, sizeof(m), held);
        render_bytes(u, sizeof(u), g->mem_used_bytes);
        render_bytes(l, sizeof(l), listed - hidden);
        f = finding_new(ctx, out, (int32_t)g->index, -1);
        if (unknown)
            finding_title(f, "GPU %" PRIu32 ": %s in use, %zu holder%s not visible here", g->index,
                          m, n_hidden, n_hidden == 1 ? "" : "s");
        else if (missing >= hidden)
            finding_title(f, "GPU %" PRIu32 ": %s of memory used by no visible process", g->index,
                          m);
        else
            finding_title(f, "GPU %" PRIu32 ": %s held by %zu process%s not visible here", g->index,
                          m, n_hidden, n_hidden == 1 ? "" : "es");
        if (unknown)
            finding_evidence(f,
                             "memory used %s; NVML does not say how much of it each process "
                             "holds (NOT_AVAILABLE)",
                             u);
        else
            finding_evidence(f, "memory used %s; processes gpudoctor can see account for %s", u, l);
        if (missing > 0) {
            render_bytes(m, sizeof(m), missing);
            finding_evidence(f,
                             "%s is used by no process NVML lists (a leaked context, or a "
                             "process in another container or VM)",
                             m);
        }
        for (size_t k = 0; k < v->n_holders; k++) {
            const struct facts_holder *h = &v->holders[k];

            if (h->np == NULL || h->p != NULL || !ctx->facts->procs_known)
                continue;
            if (h->used_valid)
                render_bytes(m, sizeof(m), h->used_bytes);
            else
                snprintf(m, sizeof(m), "memory");
            finding_evidence(f,
                             "NVML lists pid %" PRIu32 " holding %s, but /proc has no such "
                             "process: it runs in another PID namespace (a container) or "
                             "exited",
                             h->pid, m);
        }
        if (n_hidden > 0 && host_container(&ctx->facts->snap->host) != NULL)
            finding_evidence(f,
                             "gpudoctor runs inside a container (%s): NVML names the host's "
                             "pids, which this container does not show; run gpudoctor on the "
                             "host to see the holders",
                             host_container(&ctx->facts->snap->host));
        finding_fix(f,
                    "sudo fuser -v /dev/nvidia%" PRIu32 "   # every process with the device "
                    "open, on the host",
                    gpu_dev_minor(g));
        finding_fix(f,
                    "nvidia-smi -i %" PRIu32 " --query-compute-apps=pid,used_memory "
                    "--format=csv   # run on the host, not in a container",
                    g->index);
        /* A reset only for a GPU known to compute nothing: memory on a busy GPU, or held by a
         * process NVML lists, is a running job's (another container's, another tenant's). */
        if (n_hidden == 0 && gpu_valid(g, GPU_S_UTIL_GPU) && g->util_gpu_pct == 0)
            fix_gpu_reset(ctx, f, g, N_("nothing computes on it: a reset frees the memory"));
        else if (gpu_valid(g, GPU_S_UTIL_GPU) && g->util_gpu_pct > 0)
            finding_fix(f,
                        "# GPU %" PRIu32 " is computing (%" PRIu32 " %% busy): the memory is a "
                        "running job's; find its owner before anything else (the host pid's "
                        "/proc/PID/cgroup names its container)",
                        g->index, g->util_gpu_pct);
        f->impact = (double)held / (double)g->mem_total_bytes;
    }
}

const struct rule rule_mem_unaccounted = {
    .id = "mem.unaccounted",
    .severity = SEV_WARNING,
    .category = CAT_MEMORY,
    .title = N_("GPU memory no visible process accounts for"),
    .explanation = N_(
        "Part of the GPU's memory is in use, but the processes gpudoctor can see do not hold it. "
        "Usual causes: the holder runs in another PID namespace (a container without the host's "
        "PIDs, so NVML's pid means nothing here, or gpudoctor itself runs in a container); a "
        "context leaked by a process that exited uncleanly, which the driver frees only when "
        "every file descriptor on /dev/nvidiaN is closed; or a process of another user that "
        "cannot be seen without root. nvidia-smi shows the memory as used with no process, which "
        "is what makes people reboot."),
    .detection = N_("memory used minus the memory of every process NVML lists on the GPU, plus the "
                    "memory of listed pids that /proc does not show, at or above both "
                    "mem_unaccounted_mib and mem_unaccounted_pct of total. Where NVML does not "
                    "report per-process memory, a listed pid that /proc does not show is reported "
                    "while the GPU's memory use is at or above both thresholds; without such a pid "
                    "the rule is skipped there. Skipped on MIG GPUs."),
    .fix = N_("On the host (not inside a container) find who has the device open: sudo fuser -v "
              "/dev/nvidiaN or sudo lsof /dev/nvidiaN. End the holder, or stop its container. When "
              "nothing has it open any more, the memory returns; if it does not, reset the GPU "
              "(nvidia-smi -r -i N) or reboot."),
    .thresholds = THRESHOLDS(TH_MEM_UNACCOUNTED_MIB, TH_MEM_UNACCOUNTED_PCT),
    /* An exclusive GPU's hidden holder: proc.compute-mode says it, with why programs fail. */
    .yields_to = YIELDS_TO("proc.compute-mode"),
    .explains = EXPLAINS({ "mem.job-oom", LINK_SAME_GPU, NULL,
                           N_("memory held by processes not visible here is missing for the "
                              "job"),
                           LINK_FIX_OWN }),
    .check = check_unaccounted,
};

/* ---- mem.job-oom ---- */

/*
 * The GPU a job ran out of memory on, as NVML numbers it: the machine's one GPU, or the only one
 * whose memory other processes still hold (the job's own went with it). -1 when it cannot be
 * told; *how says why it is that one.
 */
static int32_t oom_gpu(const struct rule_ctx *ctx, const char **how)
{
    int32_t found = -1;
    size_t n = 0;

    *how = NULL;
    if (ctx->facts->n_gpus == 1) {
        *how = N_("the machine's one GPU");
        return (int32_t)ctx->facts->gpus[0].g->index;
    }
    for (size_t i = 0; i < ctx->facts->n_gpus; i++) {
        const struct gpu *g = ctx->facts->gpus[i].g;

        if (!gpu_valid(g, GPU_S_MEM_USED) || !gpu_valid(g, GPU_S_MEM_TOTAL) ||
            pct((double)g->mem_used_bytes, (double)g->mem_total_bytes) < 50.0)
            continue;
        found = (int32_t)g->index;
        n++;
    }
    if (n != 1)
        return -1;
    *how = N_("the only GPU whose memory others still hold");
    return found;
}

static void oom_figures(struct finding *f, const struct oom_text *o)
{
    char a[16], b[16], c[16];

    if (o->tried >= 0 && o->capacity >= 0 && o->free >= 0) {
        render_bytes(a, sizeof(a), (uint64_t)o->tried);
        render_bytes(b, sizeof(b), (uint64_t)o->capacity);
        render_bytes(c, sizeof(c), (uint64_t)o->free);
        finding_evidence(f, "it asked for %s more on a GPU of %s with %s free (from the error)", a,
                         b, c);
    }
    if (o->this_process >= 0) {
        render_bytes(a, sizeof(a), (uint64_t)o->this_process);
        finding_evidence(f, "the failing process itself held %s (from the error)", a);
    }
    if (o->allocated >= 0 && o->reserved_unallocated >= 0) {
        render_bytes(a, sizeof(a), (uint64_t)o->allocated);
        render_bytes(b, sizeof(b), (uint64_t)o->reserved_unallocated);
        finding_evidence(f, "PyTorch had %s allocated and %s reserved but unallocated", a, b);
    } else if (o->allocated >= 0 && o->reserved_total >= 0) {
        render_bytes(a, sizeof(a), (uint64_t)o->allocated);
        render_bytes(b, sizeof(b), (uint64_t)o->reserved_total);
        finding_evidence(f, "PyTorch had %s allocated of %s reserved", a, b);
    }
    if (o->tried >= 0 && o->free >= 0 && o->free >= o->tried)
        finding_evidence(f, "more was free than it asked for: the allocation failed for another "
                            "reason (no block that large in one piece, a per-process memory "
                            "fraction, or another process taking it at that moment)");
    for (size_t i = 0; i < o->n_pids; i++) {
        render_bytes(a, sizeof(a), (uint64_t)o->pid_bytes[i]);
        finding_evidence(f, "process %d held %s on that GPU (from the error)", (int)o->pids[i], a);
    }
}

static void check_job_oom(const struct rule_ctx *ctx, struct findings *out)
{
    const struct snapshot *s = ctx->facts->snap;
    ssize_t rep = reported_find(ctx, CUDAERR_OOM, NULL);
    const struct facts_gpu *v = NULL;
    struct oom_text o;
    const char *how;
    struct finding *f;
    double others_text = 0, others_now = 0, others, capacity;
    int32_t gpu;
    char a[16], b[16];

    if (rep < 0)
        return;
    /* TensorFlow's allocator on the CPU device: host RAM, not the GPU's (reported.error says) */
    if (strstr(s->reported.errors[rep].text, "device:CPU:") != NULL)
        return;
    oom_parse(s->reported.errors[rep].text, &o);
    gpu = oom_gpu(ctx, &how);
    if (gpu >= 0)
        v = facts_gpu_find(ctx->facts, (uint32_t)gpu);
    for (size_t i = 0; i < o.n_pids; i++)
        others_text += o.pid_bytes[i];
    /* What the GPU had that was neither free nor the failing process's was others'. */
    if (o.capacity >= 0 && o.free >= 0 && o.this_process >= 0 &&
        o.capacity - o.free - o.this_process > others_text)
        others_text = o.capacity - o.free - o.this_process;
    /* Older wordings give what PyTorch reserved in all, and what of it was allocated. */
    if (o.reserved_unallocated < 0 && o.reserved_total >= 0 && o.allocated >= 0 &&
        o.reserved_total >= o.allocated)
        o.reserved_unallocated = o.reserved_total - o.allocated;
    if (v != NULL && gpu_valid(v->g, GPU_S_MEM_USED))
        others_now = (double)v->g->mem_used_bytes; /* the failed job's memory is free again */
    capacity = o.capacity >= 0                                 ? o.capacity
               : v != NULL && gpu_valid(v->g, GPU_S_MEM_TOTAL) ? (double)v->g->mem_total_bytes
                                                               : -1;

    f = finding_new(ctx, out, gpu, -1);
    finding_object(f, "GPU memory");
    /* The error's own figures when it has them (the job may still run and hold its part);
     * otherwise what is held now, the failed job's memory having gone with it. */
    others = o.this_process >= 0 || o.n_pids > 0 ? others_text : others_now;
    if (capacity > 0 && others >= 0.1 * capacity) {
        render_bytes(a, sizeof(a), (uint64_t)others);
        render_bytes(b, sizeof(b), (uint64_t)capacity);
        if (gpu >= 0)
            finding_title(f, "The job ran out of memory on GPU %d: other processes hold %s of %s",
                          (int)gpu, a, b);
        else
            finding_title(f, "The job ran out of GPU memory: other processes held %s of %s", a, b);
    } else if (o.reserved_unallocated >= 0 && o.tried >= 0 && o.reserved_unallocated >= o.tried) {
        render_bytes(a, sizeof(a), (uint64_t)o.reserved_unallocated);
        render_bytes(b, sizeof(b), (uint64_t)o.tried);
        finding_title(f,
                      "The job ran out of GPU memory with %s reserved but unallocated: "
                      "fragmentation (it asked for %s)",
                      a, b);
    } else if (capacity > 0 && o.this_process >= 0.8 * capacity) {
        render_bytes(a, sizeof(a), (uint64_t)o.this_process);
        render_bytes(b, sizeof(b), (uint64_t)capacity);
        finding_title(f, "The job ran out of GPU memory: it alone used %s of %s", a, b);
    } else {
        finding_title(f, "The job ran out of GPU memory");
    }
    reported_texts(ctx, f, CUDAERR_OOM);
    oom_figures(f, &o);
    if (o.gpu >= 0 && ctx->facts->n_gpus > 1)
        finding_evidence(f,
                         "the error's GPU %d is CUDA's numbering in the job, which "
                         "CUDA_VISIBLE_DEVICES may have changed",
                         (int)o.gpu);
    if (gpu >= 0 && how != NULL && ctx->facts->n_gpus > 1)
        finding_evidence_take(f, TWICE("GPU %d: %s", ((int)gpu, how), ((int)gpu, _(how))));
    if (v != NULL) {
        mem_evidence(f, v->g);
        rules_holder_evidence(ctx, f, v, 4);
    } else if (s->n_gpus > 0) {
        finding_evidence(f, "which GPU it was is not known here: the error names none that "
                            "NVML's numbering can be trusted for");
    }
    if (gpu >= 0)
        finding_fix(f,
                    "nvidia-smi -i %d --query-compute-apps=pid,used_memory --format=csv   # who "
                    "holds it",
                    (int)gpu);
    else
        finding_fix(f, "nvidia-smi --query-compute-apps=gpu_uuid,pid,used_memory --format=csv   "
                       "# who holds which GPU");
    finding_fix(f, "# other processes on it: run on a free GPU (CUDA_VISIBLE_DEVICES), or end "
                   "those no longer needed");
    if (o.reserved_unallocated >= 0)
        finding_fix(f, "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True   # PyTorch's advice "
                       "when reserved but unallocated memory is large");
    finding_fix(f, "# the job itself: smaller batch, mixed precision (torch.autocast), gradient "
                   "accumulation or checkpointing");
    f->impact = 0.6;
}

const struct rule rule_mem_job_oom = {
    .id = "mem.job-oom",
    .severity = SEV_WARNING,
    .category = CAT_MEMORY,
    .title = N_("A job ran out of GPU memory"),
    .explanation = N_(
        "The job failed with 'CUDA out of memory' (TensorFlow: 'OOM when allocating tensor' on a "
        "GPU device; cuBLAS: CUBLAS_STATUS_ALLOC_FAILED). PyTorch's message says how much it asked "
        "for, "
        "what the GPU had free, what the process held and what its caching allocator kept "
        "reserved but unallocated, and (since 2.1) which other processes held memory on that "
        "GPU. Three causes: other processes hold part of the GPU (another user's job, a stopped "
        "or idle holder), fragmentation (reserved but unallocated memory larger than the request: "
        "PyTorch advises expandable_segments), or the job alone needs more than the GPU has. A "
        "finding about the memory's holder on the same GPU explains it and comes first."),
    .detection = N_(
        "An error given with --error that the catalogue reads as CUDA running out of memory, its "
        "figures read from PyTorch's wording; the GPU is the machine's only one, or the only one "
        "whose memory is still held at half or more (the failed job's own is free again); NVML's "
        "memory use and process list of that GPU."),
    .fix = N_("Move the job to a GPU no one else uses or end the processes holding memory there; "
              "with much reserved-but-unallocated memory set "
              "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True; otherwise a smaller batch, "
              "mixed precision or gradient checkpointing."),
    .thresholds = NO_THRESHOLDS,
    .check = check_job_oom,
};
