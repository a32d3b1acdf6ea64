/*
 * Processes: stale holders (stopped, defunct, orphaned, idle), contention (several owners on one
 * GPU, every job on one GPU, desktop programs next to compute), and configuration that keeps
 * CUDA programs off a GPU (compute mode, CUDA_VISIBLE_DEVICES, MIG without instances).
 */
#include "nvml/nvml-abi.h"
#include "rules/rule-impl.h"
#include "util/strutil.h"
#include "util/xalloc.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "GPU 3" or "GPUs 0-3, 5". */
static void gpus_label(char *buf, size_t size, const int32_t *gpus, size_t n)
{
    char list[128];

    render_ranges(list, sizeof(list), gpus, n);
    snprintf(buf, size, "GPU%s %s", n == 1 ? "" : "s", list);
}

static const struct facts_holder *view_holder(const struct facts_gpu *v, int32_t pid)
{
    for (size_t i = 0; v && i < v->n_holders; i++) {
        if (v->holders[i].pid == (uint32_t)pid)
            return &v->holders[i];
    }
    return NULL;
}

/* One line per GPU the process uses: how much it holds there. */
static void use_evidence(const struct rule_ctx *ctx, struct finding *f, const struct facts_use *u)
{
    for (size_t i = 0; i < u->n_gpus; i++) {
        const struct facts_gpu *v = facts_gpu_find(ctx->facts, (uint32_t)u->gpus[i]);
        const struct facts_holder *h = view_holder(v, u->pid);
        char b[16];

        if (h == NULL)
            continue;
        if (h->used_valid && gpu_valid(v->g, GPU_S_MEM_TOTAL)) {
            render_bytes(b, sizeof(b), h->used_bytes);
            finding_evidence(f, "holds %s on GPU %d (%.0f %% of its memory)", b, u->gpus[i],
                             pct((double)h->used_bytes, (double)v->g->mem_total_bytes));
        } else if (h->used_valid) {
            render_bytes(b, sizeof(b), h->used_bytes);
            finding_evidence(f, "holds %s on GPU %d", b, u->gpus[i]);
        } else {
            finding_evidence(f, "has GPU %d open (memory use not reported)", u->gpus[i]);
        }
    }
}

static void age_evidence(const struct rule_ctx *ctx, struct finding *f, const struct proc *p)
{
    double age = facts_proc_age_s(ctx->facts, p);
    char a[16];

    if (age < 0)
        return;
    render_duration(a, sizeof(a), age);
    finding_evidence(f, "started %s ago", a);
}

static void owner_evidence(struct finding *f, const struct proc *p)
{
    char cont[96];

    proc_container(cont, sizeof(cont), p);
    if (cont[0])
        finding_evidence(f, "runs in %s", cont);
}

/* The device file number of the GPU where the process holds the most. */
static uint32_t use_minor(const struct rule_ctx *ctx, const struct facts_use *u)
{
    const struct facts_gpu *v = facts_gpu_find(ctx->facts, (uint32_t)u->top_gpu);

    return v ? gpu_dev_minor(v->g) : (uint32_t)u->top_gpu;
}

/* "71.2 GiB" or "?" for titles. */
static void use_bytes(char *buf, size_t size, const struct facts_use *u)
{
    if (u->used_valid && u->used_bytes > 0)
        render_bytes(buf, size, u->used_bytes);
    else
        snprintf(buf, size, "?");
}

/* The process table is needed to judge any GPU user: say once when it is missing. */
static bool need_procs(const struct rule_ctx *ctx, struct findings *out)
{
    if (ctx->facts->n_uses == 0 || ctx->facts->snap->procs.n_procs > 0)
        return true;
    return need_collector(ctx, out, COLLECTOR_PROCS);
}

static void kill_fixes(struct finding *f, const struct proc *p, int32_t pid)
{
    if (!fix_pid_ok(pid))
        return;
    finding_fix(f, "ps -o pid,ppid,user,stat,etime,pcpu,args -p %d   # confirm what it is", pid);
    finding_fix(f, "kill %d   # once %s confirms it is no longer needed", pid,
                p && p->user ? p->user : "its owner");
}

/* ---- proc.stopped-holder ---- */

static void check_stopped(const struct rule_ctx *ctx, struct findings *out)
{
    if (!need_procs(ctx, out))
        return;
    for (size_t i = 0; i < ctx->facts->n_uses; i++) {
        const struct facts_use *u = &ctx->facts->uses[i];
        char label[96], where[160], b[16];
        struct finding *f;

        const struct facts_use *parent;
        size_t stopped_children = 0;

        if (u->verdict != FACTS_VERDICT_STOPPED)
            continue;
        /* Ctrl-Z stops the whole job: report its top process, and count the rest there. */
        parent = proc_ok(u->p, PROC_S_PPID) ? facts_use_find(ctx->facts, u->p->ppid) : NULL;
        if (parent && parent->verdict == FACTS_VERDICT_STOPPED)
            continue;
        for (size_t k = 0; k < u->p->n_children; k++) {
            const struct facts_use *c = facts_use_find(ctx->facts, u->p->children[k]);

            stopped_children += c && c->verdict == FACTS_VERDICT_STOPPED;
        }
        proc_label(label, sizeof(label), ctx, u->pid);
        gpus_label(where, sizeof(where), u->gpus, u->n_gpus);
        use_bytes(b, sizeof(b), u);
        f = finding_new(ctx, out, u->top_gpu, u->pid);
        finding_title(f, "%s memory (%s) held by stopped process %d (%s)", where, b, u->pid, label);
        finding_evidence(f, "state %c: %s", u->p->state,
                         u->p->state == 't' ? "stopped by a debugger or tracer"
                                            : "stopped (Ctrl-Z in its terminal, or SIGSTOP)");
        use_evidence(ctx, f, u);
        if (stopped_children)
            finding_evidence(f, "%zu of its child processes hold GPU memory and are stopped too",
                             stopped_children);
        age_evidence(ctx, f, u->p);
        owner_evidence(f, u->p);
        if (!fix_pid_ok(u->pid)) {
            /* No command can name it (the table's pid is impossible): advice only. */
        } else if (u->p->state == 't') {
            finding_fix(f,
                        "ps -o pid,args -p $(awk '/TracerPid/ {print $2}' /proc/%d/status)   "
                        "# the debugger holding it",
                        u->pid);
            finding_fix(f, "# detach the debugger (gdb: detach) or end the debugging session");
        } else {
            finding_fix(f, "kill -CONT %d   # resume it (or 'fg' in the shell that stopped it)",
                        u->pid);
        }
        if (fix_pid_ok(u->pid))
            finding_fix(f, "kill %d   # or end it, once %s confirms it is no longer needed", u->pid,
                        u->p->user ? u->p->user : "its owner");
        f->impact = u->used_valid ? (double)u->used_bytes / (1024.0 * MIB) / 80.0 + 1.0 : 1.0;
    }
}

const struct rule rule_proc_stopped_holder = {
    .id = "proc.stopped-holder",
    .severity = SEV_CRITICAL,
    .category = CAT_PROCESS,
    .title = "GPU memory held by a stopped process",
    .explanation =
        "A process that holds GPU memory is stopped: someone pressed Ctrl-Z in its terminal, sent "
        "SIGSTOP, or a debugger is holding it. A stopped process never runs again until resumed, "
        "but it keeps every byte of GPU memory and its CUDA contexts, so the GPU looks busy "
        "(memory "
        "full) while doing nothing, and other jobs fail with 'out of memory'. This is the most "
        "common 'zombie GPU memory' that is not a zombie at all.",
    .detection = "the process table's state is T (stopped) or t (traced) for a process that NVML "
                 "lists on a GPU or that has /dev/nvidiaN open.",
    .fix =
        "Resume it with kill -CONT PID (or fg in the shell that stopped it), or end it with kill "
        "PID once its owner confirms it is no longer needed. A traced process: detach the "
        "debugger.",
    .thresholds = NO_THRESHOLDS,
    .check = check_stopped,
};

/* ---- proc.zombie-holder ---- */

static void check_zombie(const struct rule_ctx *ctx, struct findings *out)
{
    if (!need_procs(ctx, out))
        return;
    for (size_t i = 0; i < ctx->facts->n_uses; i++) {
        const struct facts_use *u = &ctx->facts->uses[i];
        const struct proc *parent;
        char label[96], where[160], b[16];
        struct finding *f;
        int32_t ppid;

        if (u->verdict != FACTS_VERDICT_DEFUNCT)
            continue;
        ppid = proc_ok(u->p, PROC_S_PPID) ? u->p->ppid : -1;
        parent = ppid >= 0 ? facts_proc_find(ctx->facts, ppid) : NULL;
        proc_label(label, sizeof(label), ctx, u->pid);
        gpus_label(where, sizeof(where), u->gpus, u->n_gpus);
        use_bytes(b, sizeof(b), u);
        f = finding_new(ctx, out, u->top_gpu, u->pid);
        finding_title(f, "%s memory (%s) held by defunct process %d (%s)", where, b, u->pid, label);
        if (ppid >= 0)
            finding_evidence(f,
                             "state %c: the process has exited but is not yet reaped by its "
                             "parent %d",
                             u->p->state, ppid);
        else
            finding_evidence(f,
                             "state %c: the process has exited but is not yet reaped by its "
                             "parent (its pid is not in the snapshot)",
                             u->p->state);
        if (parent != NULL)
            finding_evidence(f, "parent %d (%s) is %s", parent->pid, proc_command(parent),
                             proc_ok(parent, PROC_S_STATE) ? proc_state_name(parent->state)
                                                           : "in a state not known");
        use_evidence(ctx, f, u);
        for (size_t k = 0; k < u->p->n_children; k++)
            finding_evidence(f, "child %d (%s) outlived it and may still hold the device",
                             u->p->children[k],
                             proc_command(facts_proc_find(ctx->facts, u->p->children[k])));
        finding_fix(f,
                    "sudo fuser -v /dev/nvidia%" PRIu32 "   # who still has the device open "
                    "(workers that outlived it)",
                    use_minor(ctx, u));
        if (fix_pid_ok(ppid))
            finding_fix(f, "ps -o pid,stat,args -p %d   # the parent that has not reaped it", ppid);
        if (fix_pid_ok(ppid) && ppid > 1)
            finding_fix(f,
                        "kill %d   # end the parent (if it is not needed) so init reaps the "
                        "zombie",
                        ppid);
        f->impact = u->used_valid ? (double)u->used_bytes / (1024.0 * MIB) / 80.0 + 1.0 : 1.0;
    }
}

const struct rule rule_proc_zombie_holder = {
    .id = "proc.zombie-holder",
    .severity = SEV_CRITICAL,
    .category = CAT_PROCESS,
    .title = "GPU memory held by a defunct (zombie) process",
    .explanation =
        "A process that the GPU still lists has exited (state Z, 'defunct'). The driver frees a "
        "process's GPU memory only when the last file descriptor on /dev/nvidia* is closed and the "
        "context is torn down; while children that inherited the descriptors (data-loader "
        "workers, forked helpers) live on, or while the exit is stuck, the memory stays held. A "
        "zombie cannot be killed: it is already dead. Its parent must reap it, and the processes "
        "still holding the device must end.",
    .detection = "state Z or X in the process table for a process NVML lists on a GPU or that "
                 "has /dev/nvidiaN open.",
    .fix = "Find who still has the device open (sudo fuser -v /dev/nvidiaN) and end those "
           "processes; make the parent reap the zombie, or end the parent so init does. If the "
           "memory stays held with no process left, reset the GPU (nvidia-smi -r -i N) or reboot.",
    .thresholds = NO_THRESHOLDS,
    .check = check_zombie,
};

/* ---- proc.orphan-holder ---- */

static void window_skip(const struct rule_ctx *ctx, struct findings *out, bool *said)
{
    if (!*said)
        rule_skip(ctx, out, -1, "process CPU use needs a sampling window (--window)");
    *said = true;
}

static void check_orphan(const struct rule_ctx *ctx, struct findings *out)
{
    bool said = false;

    if (!need_procs(ctx, out))
        return;

    for (size_t i = 0; i < ctx->facts->n_uses; i++) {
        const struct facts_use *u = &ctx->facts->uses[i];
        char label[96], where[160], b[16];
        struct finding *f;

        if (facts_proc_in_state(u->p, "SRDI") && proc_ok(u->p, PROC_S_PPID) && u->p->ppid == 1 &&
            !proc_ok(u->p, PROC_S_CGROUP) && facts_holds_enough(ctx->facts, u))
            rule_skip(ctx, out, u->top_gpu,
                      "pid %d has init as its parent, but its cgroup is unknown: a service, a "
                      "container or an orphan",
                      u->pid);
        if (u->verdict == FACTS_VERDICT_UNKNOWN && u->if_idle == FACTS_VERDICT_ORPHANED)
            window_skip(ctx, out, &said);
        if (u->verdict != FACTS_VERDICT_ORPHANED)
            continue;
        proc_label(label, sizeof(label), ctx, u->pid);
        gpus_label(where, sizeof(where), u->gpus, u->n_gpus);
        use_bytes(b, sizeof(b), u);
        f = finding_new(ctx, out, u->top_gpu, u->pid);
        finding_title(f, "%s memory (%s) held by orphaned, idle process %d (%s)", where, b, u->pid,
                      label);
        finding_evidence(f, "its parent exited: it was re-parented to init (ppid 1) from a "
                            "login session");
        finding_evidence(f, "CPU %.1f %% over the window, no GPU work",
                         facts_tree_cpu_pct(ctx->facts, u->p));
        use_evidence(ctx, f, u);
        age_evidence(ctx, f, u->p);
        kill_fixes(f, u->p, u->pid);
        f->impact = (double)u->used_bytes / (1024.0 * MIB) / 80.0 + 0.5;
    }
}

const struct rule rule_proc_orphan_holder = {
    .id = "proc.orphan-holder",
    .severity = SEV_WARNING,
    .category = CAT_PROCESS,
    .title = "GPU memory held by an orphaned, idle process",
    .explanation =
        "A process holding GPU memory lost its parent (the terminal closed, the launcher crashed "
        "or was killed) and now does nothing. Typical: data-loader workers or multiprocessing "
        "children of a training script that was killed, which inherited a CUDA context, or a job "
        "started in a shell that was closed. Nobody is waiting for it, but its memory is "
        "unavailable to everyone else. Jobs started on purpose with nohup keep working and are not "
        "reported: only idle ones are.",
    .detection = "parent pid 1, not a system service, container or batch job (from its cgroup; "
                 "not judged when the cgroup is unknown), "
                 "holding at least holder_min_mib of GPU memory, using less CPU than "
                 "idle_holder_cpu_pct over the window and no GPU time (its own SM utilisation, or "
                 "its GPUs idle), both judged against gpu_idle_util_pct. Needs a sampling window.",
    .fix = "Confirm with ps that it belongs to a finished job, then end it (kill PID). Children of "
           "a killed training script can usually all go: pkill -P is not safe with ppid 1, so kill "
           "them by pid.",
    .thresholds = THRESHOLDS(TH_HOLDER_MIN_MIB, TH_IDLE_HOLDER_CPU_PCT, TH_GPU_IDLE_UTIL_PCT),
    .check = check_orphan,
};

/* ---- proc.idle-holder ---- */

static void check_idle(const struct rule_ctx *ctx, struct findings *out)
{
    bool said = false;

    if (!need_procs(ctx, out))
        return;

    for (size_t i = 0; i < ctx->facts->n_uses; i++) {
        const struct facts_use *u = &ctx->facts->uses[i];
        char label[96], where[160], b[16], a[16];
        double age;
        struct finding *f;

        if (u->verdict == FACTS_VERDICT_UNKNOWN && u->if_idle == FACTS_VERDICT_IDLE_HOLDER)
            window_skip(ctx, out, &said);
        if (u->verdict != FACTS_VERDICT_IDLE_HOLDER)
            continue;
        age = facts_proc_age_s(ctx->facts, u->p);
        proc_label(label, sizeof(label), ctx, u->pid);
        gpus_label(where, sizeof(where), u->gpus, u->n_gpus);
        use_bytes(b, sizeof(b), u);
        render_duration(a, sizeof(a), age);
        f = finding_new(ctx, out, u->top_gpu, u->pid);
        finding_title(f, "%s: %s held by idle process %d (%s), %s old", where, b, u->pid, label, a);
        finding_evidence(f, "CPU %.1f %% over the window, no GPU work",
                         facts_tree_cpu_pct(ctx->facts, u->p));
        use_evidence(ctx, f, u);
        owner_evidence(f, u->p);
        finding_fix(f, "# a notebook: restart its kernel, or del the tensors and call "
                       "torch.cuda.empty_cache()");
        kill_fixes(f, u->p, u->pid);
        f->impact = (double)u->used_bytes / (1024.0 * MIB) / 80.0 + 0.25;
    }
}

const struct rule rule_proc_idle_holder = {
    .id = "proc.idle-holder",
    .severity = SEV_WARNING,
    .category = CAT_PROCESS,
    .title = "GPU memory held by an idle process",
    .explanation =
        "A process has held GPU memory for a long time without using the GPU or the CPU: a "
        "notebook kernel left open after an experiment, an interactive session, a server with "
        "nothing to serve, or a job stuck waiting for something that will not come. Frameworks "
        "keep what they allocated in their cache, so the memory stays held until the process ends "
        "or empties its cache.",
    .detection = "a sleeping process older than idle_holder_min_age_s holding at least "
                 "holder_min_mib of GPU memory, using less CPU than idle_holder_cpu_pct over the "
                 "window and no GPU time (its own SM utilisation, or its GPUs idle, against "
                 "gpu_idle_util_pct). Needs a "
                 "sampling window.",
    .fix = "Ask its owner. A notebook: restart the kernel or free tensors and call "
           "torch.cuda.empty_cache(). A server: is it still needed? A stuck job: find what it "
           "waits on (py-spy dump --pid PID). End it when no longer needed.",
    .thresholds = THRESHOLDS(TH_HOLDER_MIN_MIB, TH_IDLE_HOLDER_MIN_AGE_S, TH_IDLE_HOLDER_CPU_PCT,
                             TH_GPU_IDLE_UTIL_PCT),
    .check = check_idle,
};

/* ---- proc.shared-gpu ---- */

/* Who a process belongs to: its container or job, else its user; false when unknown. */
static bool owner_key(char *buf, size_t size, const struct proc *p)
{
    proc_container(buf, size, p);
    if (buf[0])
        return true;
    if (proc_ok(p, PROC_S_USER_NAME) && p->user)
        snprintf(buf, size, "%s", p->user);
    else if (proc_ok(p, PROC_S_USER))
        snprintf(buf, size, "uid %" PRIu32, p->uid);
    else
        return false;
    return true;
}

static bool holder_compute(const struct facts_holder *h)
{
    uint32_t mask = h->np ? h->np->type_mask : (h->pg ? h->pg->type_mask : 0);

    return (mask & GPU_PROC_COMPUTE) != 0;
}

static bool holder_mps(const struct facts_holder *h)
{
    uint32_t mask = h->np ? h->np->type_mask : (h->pg ? h->pg->type_mask : 0);

    return (mask & GPU_PROC_MPS) != 0;
}

static void check_shared(const struct rule_ctx *ctx, struct findings *out)
{
    for (size_t i = 0; i < ctx->facts->n_gpus; i++) {
        const struct facts_gpu *v = &ctx->facts->gpus[i];
        char owners[8][64], names[256], b[16];
        size_t n_owners = 0, n_procs = 0, n_unknown = 0, len = 0;
        bool mps = false;
        struct finding *f;

        if (v->util_valid && v->util_max <= th(ctx, TH_GPU_IDLE_UTIL_PCT))
            continue; /* nobody is slowed down on an idle GPU */
        for (size_t k = 0; k < v->n_holders; k++) {
            const struct facts_holder *h = &v->holders[k];
            char key[64];
            size_t o;

            mps |= holder_mps(h);
            if (!holder_compute(h))
                continue;
            n_procs++;
            if (!owner_key(key, sizeof(key), h->p)) {
                n_unknown++;
                continue;
            }
            for (o = 0; o < n_owners && strcmp(owners[o], key) != 0; o++)
                ;
            if (o == n_owners && n_owners < ARRAY_SIZE(owners))
                snprintf(owners[n_owners++], sizeof(owners[0]), "%s", key);
        }
        /* MPS is sharing on purpose, with the scheduling to go with it. */
        if (mps)
            continue;
        if (n_owners < 2 && n_procs >= 2 && n_unknown > 0) {
            rule_skip(ctx, out, (int32_t)v->g->index, "owners of GPU processes unknown (%s)",
                      ctx->facts->procs_known ? "not visible: run as root"
                                              : "processes collector not run");
            continue;
        }
        if (n_owners < 2)
            continue;
        names[0] = '\0';
        for (size_t o = 0; o < n_owners && len < sizeof(names); o++)
            len += (size_t)snprintf(names + len, sizeof(names) - len, "%s%s", o ? ", " : "",
                                    owners[o]);
        f = finding_new(ctx, out, (int32_t)v->g->index, -1);
        finding_title(f, "GPU %" PRIu32 " shared by %zu processes of %zu owners (%s)", v->g->index,
                      n_procs, n_owners, names);
        if (v->util_valid)
            finding_evidence(f, "utilisation %.0f %% on average: the processes take turns",
                             v->util_mean);
        for (size_t k = 0; k < v->n_holders; k++) {
            const struct facts_holder *h = &v->holders[k];
            char label[160], cont[96], util[32] = "";

            if (!holder_compute(h))
                continue;
            proc_desc(label, sizeof(label), ctx, (int32_t)h->pid);
            proc_container(cont, sizeof(cont), h->p);
            snprintf(b, sizeof(b), "?");
            if (h->used_valid)
                render_bytes(b, sizeof(b), h->used_bytes);
            if (h->np && (h->np->valid & (1u << GPU_PROC_S_UTIL)))
                snprintf(util, sizeof(util), ", SM %" PRIu32 " %%", h->np->sm_util_pct);
            finding_evidence(f, "%s%s%s: %s%s", label, cont[0] ? " in " : "", cont, b, util);
        }
        finding_fix(f, "# give each job its own GPU: CUDA_VISIBLE_DEVICES=<free GPU> <command>, "
                       "or the scheduler's GPU allocation");
        finding_fix(f,
                    "sudo nvidia-smi -i %" PRIu32 " -c EXCLUSIVE_PROCESS   # one process per "
                    "GPU from now on",
                    v->g->index);
        finding_fix(f, "# sharing on purpose: use MPS or MIG, which divide the GPU properly");
        f->impact = 0.5 * (double)(n_procs - 1);
    }
}

const struct rule rule_proc_shared_gpu = {
    .id = "proc.shared-gpu",
    .severity = SEV_WARNING,
    .category = CAT_PROCESS,
    .title = "Several users or containers computing on one GPU",
    .explanation =
        "Compute processes of different users, containers or jobs run on the same GPU at the same "
        "time. The GPU time-slices between their contexts, so each runs slower than alone (often "
        "much slower: context switches flush caches), their memory competes, and new jobs fail "
        "with 'out of memory' because of fragmentation. Someone's job is 'stealing' the GPU. With "
        "MPS or MIG, sharing is deliberate and not reported.",
    .detection = "two or more compute processes on one GPU whose owners (container or job, else "
                 "user) differ, on a GPU that was not idle (utilisation above gpu_idle_util_pct) "
                 "and has no MPS process.",
    .fix = "Give each job its own GPU: CUDA_VISIBLE_DEVICES per job, or let the scheduler "
           "allocate GPUs (Slurm --gres=gpu:N, Kubernetes nvidia.com/gpu). Enforce it with "
           "nvidia-smi -i N -c EXCLUSIVE_PROCESS. For intended sharing use MPS or MIG.",
    .thresholds = THRESHOLDS(TH_GPU_IDLE_UTIL_PCT),
    .yields_to = YIELDS_TO("proc.pileup"),
    .check = check_shared,
};

/* ---- proc.pileup ---- */

static void check_pileup(const struct rule_ctx *ctx, struct findings *out)
{
    int32_t *idle = xcalloc(ctx->facts->n_gpus ? ctx->facts->n_gpus : 1, sizeof(*idle));
    size_t n_idle = 0;

    for (size_t i = 0; i < ctx->facts->n_gpus; i++) {
        const struct facts_gpu *v = &ctx->facts->gpus[i];

        /* "No process" needs NVML's process list: an unknown list is not an empty one. */
        if (v->g->handle_rc == 0 && gpu_valid(v->g, GPU_S_PROCESSES) && v->n_compute == 0 &&
            v->util_valid && v->util_max <= th(ctx, TH_GPU_IDLE_UTIL_PCT) &&
            !(gpu_valid(v->g, GPU_S_MIG_MODE) && v->g->mig_mode))
            idle[n_idle++] = (int32_t)v->g->index;
    }
    if (n_idle == 0) {
        free(idle);
        return;
    }
    for (size_t i = 0; i < ctx->facts->n_gpus; i++) {
        const struct facts_gpu *v = &ctx->facts->gpus[i];
        size_t unset = 0, env_known = 0;
        char list[128];
        struct finding *f;

        if ((double)v->n_compute < th(ctx, TH_PILEUP_MIN_PROCS))
            continue;
        render_ranges(list, sizeof(list), idle, n_idle);
        f = finding_new(ctx, out, (int32_t)v->g->index, -1);
        finding_title(f, "%zu jobs piled on GPU %" PRIu32 " while GPU%s %s idle%s", v->n_compute,
                      v->g->index, n_idle == 1 ? "" : "s", list, n_idle == 1 ? "s" : "");
        for (size_t k = 0; k < v->n_holders; k++) {
            const struct facts_holder *h = &v->holders[k];
            char label[160];

            if (!holder_compute(h))
                continue;
            proc_desc(label, sizeof(label), ctx, (int32_t)h->pid);
            finding_evidence(f, "%s%s", label,
                             proc_ok(h->p, PROC_S_ENV) && !h->p->cuda_visible_devices_set
                                 ? ": CUDA_VISIBLE_DEVICES not set"
                                 : "");
            if (proc_ok(h->p, PROC_S_ENV)) {
                env_known++;
                unset += !h->p->cuda_visible_devices_set;
            }
        }
        finding_evidence(f, "GPU%s %s: no process, idle", n_idle == 1 ? "" : "s", list);
        if (env_known > 0 && unset == env_known)
            finding_evidence(f, "none of them sets CUDA_VISIBLE_DEVICES, so each starts on the "
                                "first GPU");
        finding_fix(f, "# start the next job on an idle GPU: CUDA_VISIBLE_DEVICES=%d <command>",
                    idle[0]);
        finding_fix(f, "# multi-GPU jobs: torchrun --nproc_per_node=N, and "
                       "torch.cuda.set_device(local_rank) in each rank");
        f->impact = (double)(v->n_compute - 1);
    }
    free(idle);
}

const struct rule rule_proc_pileup = {
    .id = "proc.pileup",
    .severity = SEV_WARNING,
    .category = CAT_PROCESS,
    .title = "Jobs piled on one GPU while others idle",
    .explanation =
        "Several compute jobs run on one GPU (usually GPU 0) while other GPUs of the machine have "
        "nothing to do. CUDA programs use the first visible GPU unless told otherwise, so jobs "
        "started without CUDA_VISIBLE_DEVICES (or a scheduler that sets it) all land on GPU 0 and "
        "share it, each running at a fraction of its speed.",
    .detection = "a GPU with at least pileup_min_procs compute processes while at least one other "
                 "GPU has no compute process in NVML's list (a list NVML could not give is not an "
                 "empty one) and stayed at or below gpu_idle_util_pct.",
    .fix = "Start each job on its own GPU (CUDA_VISIBLE_DEVICES=N), or let the scheduler assign "
           "GPUs. Multi-GPU jobs: torchrun with torch.cuda.set_device(local_rank) in every rank.",
    .thresholds = THRESHOLDS(TH_PILEUP_MIN_PROCS, TH_GPU_IDLE_UTIL_PCT),
    .check = check_pileup,
};

/* ---- proc.graphics-on-compute ---- */

static bool display_server(const struct proc *p)
{
    static const char *const names[] = { "Xorg",          "X",        "Xwayland",
                                         "gnome-shell",   "kwin_x11", "kwin_wayland",
                                         "sway",          "weston",   "mutter",
                                         "gdm-x-session", "cinnamon", "xfwm4",
                                         "compiz",        "Hyprland", NULL };
    const char *comm = p && p->comm ? p->comm : NULL;

    if (comm == NULL)
        return false;
    for (size_t i = 0; names[i]; i++) {
        if (strcmp(comm, names[i]) == 0)
            return true;
    }
    return false;
}

static void check_graphics(const struct rule_ctx *ctx, struct findings *out)
{
    for (size_t i = 0; i < ctx->facts->n_gpus; i++) {
        const struct facts_gpu *v = &ctx->facts->gpus[i];
        size_t n_apps = 0, n_servers = 0;
        uint64_t bytes = 0;
        char b[16], names[160];
        size_t len = 0;
        struct finding *f;

        if (v->n_compute == 0)
            continue;
        names[0] = '\0';
        for (size_t k = 0; k < v->n_holders; k++) {
            const struct facts_holder *h = &v->holders[k];
            const struct facts_use *u = facts_use_find(ctx->facts, (int32_t)h->pid);

            if (u == NULL || !u->graphics_only)
                continue;
            if (display_server(h->p)) {
                n_servers++;
                continue;
            }
            n_apps++;
            bytes += h->used_valid ? h->used_bytes : 0;
            if (len < sizeof(names))
                len += (size_t)snprintf(names + len, sizeof(names) - len, "%s%s", len ? ", " : "",
                                        h->p && h->p->comm ? h->p->comm : "?");
        }
        if (n_apps == 0 && n_servers == 0)
            continue;
        f = finding_new(ctx, out, (int32_t)v->g->index, -1);
        render_bytes(b, sizeof(b), bytes);
        if (n_apps > 0) {
            finding_title(f, "GPU %" PRIu32 " runs desktop programs (%s, %s) next to compute jobs",
                          v->g->index, names, b);
        } else {
            f->severity = SEV_INFO;
            finding_title(f, "GPU %" PRIu32 " drives the display and runs compute jobs",
                          v->g->index);
        }
        for (size_t k = 0; k < v->n_holders; k++) {
            const struct facts_holder *h = &v->holders[k];
            const struct facts_use *u = facts_use_find(ctx->facts, (int32_t)h->pid);
            char label[160];

            if (u == NULL || !u->graphics_only)
                continue;
            proc_desc(label, sizeof(label), ctx, (int32_t)h->pid);
            snprintf(b, sizeof(b), "?");
            if (h->used_valid)
                render_bytes(b, sizeof(b), h->used_bytes);
            finding_evidence(f, "graphics %s holds %s%s", label, b,
                             display_server(h->p) ? " (display server)" : "");
        }
        finding_evidence(f, "%zu compute process%s on the same GPU", v->n_compute,
                         v->n_compute == 1 ? "" : "es");
        finding_fix(f, "# browsers, IDEs, video players: turn off hardware acceleration, or close "
                       "them while jobs run");
        finding_fix(f, "# run the display on another GPU (or the integrated one) and hide this "
                       "one from it; or run jobs on another GPU: CUDA_VISIBLE_DEVICES=<other>");
        f->impact = 0.2;
    }
}

const struct rule rule_proc_graphics_on_compute = {
    .id = "proc.graphics-on-compute",
    .severity = SEV_WARNING,
    .category = CAT_PROCESS,
    .title = "Desktop programs on a GPU that runs compute jobs",
    .explanation =
        "Graphics programs (a browser with hardware acceleration, an IDE, a video player, a file "
        "indexer's thumbnails) use the same GPU as compute jobs. They take memory and time slices, "
        "and the display stutters while the jobs run. A display server alone on the GPU is "
        "normal on a workstation (reported as information); other desktop programs are worth "
        "moving off the GPU a job needs. A desktop with no compute job is not reported.",
    .detection = "a GPU with compute processes that NVML also lists graphics-only processes on; "
                 "known display servers and compositors (Xorg, Xwayland, gnome-shell, kwin, ...) "
                 "alone make it information.",
    .fix = "Disable hardware acceleration in browsers and editors or close them during jobs; move "
           "the display to another GPU (or the integrated one); or run the jobs on a GPU without a "
           "display (CUDA_VISIBLE_DEVICES).",
    .thresholds = NO_THRESHOLDS,
    .check = check_graphics,
};

/* ---- proc.compute-mode ---- */

static void check_compute_mode(const struct rule_ctx *ctx, struct findings *out)
{
    for (size_t i = 0; i < ctx->facts->n_gpus; i++) {
        const struct facts_gpu *v = &ctx->facts->gpus[i];
        const struct gpu *g = v->g;
        const char *mode;
        struct finding *f;
        size_t blocked = 0;

        if (!need_gpu(ctx, out, g, GPU_S_COMPUTE_MODE) ||
            g->compute_mode == NVML_COMPUTEMODE_DEFAULT)
            continue;
        mode = g->compute_mode >= 0 && g->compute_mode <= 3 ? compute_mode_names[g->compute_mode]
                                                            : "unknown";
        if (g->compute_mode == NVML_COMPUTEMODE_PROHIBITED) {
            f = finding_new(ctx, out, (int32_t)g->index, -1);
            finding_title(f,
                          "GPU %" PRIu32 " compute mode is 'prohibited': no CUDA program can "
                          "use it",
                          g->index);
            finding_evidence(f, "compute mode: prohibited (nvidia-smi: Prohibited)");
            finding_evidence(f, "CUDA programs see 'all CUDA-capable devices are busy or "
                                "unavailable' on this GPU");
            finding_fix(f, "sudo nvidia-smi -i %" PRIu32 " -c DEFAULT", g->index);
            f->impact = 1.0;
            continue;
        }
        if (v->n_compute == 0)
            continue;
        for (size_t k = 0; k < v->n_holders; k++)
            blocked +=
                v->holders[k].np == NULL && v->holders[k].pg && v->holders[k].pg->holds_device;
        f = finding_new(ctx, out, (int32_t)g->index, -1);
        finding_title(f,
                      "GPU %" PRIu32 " is %s and taken: other CUDA programs get 'all "
                      "CUDA-capable devices are busy or unavailable'",
                      g->index, mode);
        if (blocked == 0)
            f->severity = SEV_INFO;
        finding_evidence(f, "compute mode: %s (one context at a time)", mode);
        for (size_t k = 0; k < v->n_holders; k++) {
            const struct facts_holder *h = &v->holders[k];
            char label[160];

            proc_desc(label, sizeof(label), ctx, (int32_t)h->pid);
            if (holder_compute(h))
                finding_evidence(f, "held by %s", label);
            else if (h->np == NULL && h->pg && h->pg->holds_device)
                finding_evidence(f,
                                 "%s has /dev/nvidia%" PRIu32 " open but no context: it is "
                                 "likely failing to start",
                                 label, gpu_dev_minor(g));
        }
        finding_fix(f,
                    "sudo nvidia-smi -i %" PRIu32 " -c DEFAULT   # let several processes "
                    "share it",
                    g->index);
        finding_fix(f, "# or keep exclusive mode and start other jobs on other GPUs");
        f->impact = 0.3;
    }
}

const struct rule rule_proc_compute_mode = {
    .id = "proc.compute-mode",
    .severity = SEV_WARNING,
    .category = CAT_PROCESS,
    .title = "Compute mode keeps CUDA programs off a GPU",
    .explanation =
        "A GPU's compute mode limits who may create a CUDA context on it. 'Prohibited' allows "
        "nobody; 'exclusive process' allows one process at a time. Any other program then fails "
        "at start-up with 'all CUDA-capable devices are busy or unavailable' "
        "(cudaErrorDevicesUnavailable), "
        "which looks like a broken GPU but is a setting. Clusters set exclusive mode on purpose; "
        "it is a warning when a process is seen failing to get the GPU, information otherwise.",
    .detection = "compute mode prohibited; or exclusive_process / exclusive_thread with a compute "
                 "process on the GPU (a warning when another process has /dev/nvidiaN open "
                 "without a context).",
    .fix = "sudo nvidia-smi -i N -c DEFAULT allows sharing again (it resets at reboot unless "
           "persistence mode or a boot script sets it). Or keep the mode and send other jobs to "
           "other GPUs.",
    .thresholds = NO_THRESHOLDS,
    .check = check_compute_mode,
};

/* ---- proc.cuda-visible-devices ---- */

/* The GPU an entry of CUDA_VISIBLE_DEVICES names: an index or a (prefix of a) UUID. */
static const struct facts_gpu *resolve_cvd(const struct rule_ctx *ctx, const char *tok)
{
    uint32_t idx;

    if (str_to_u32(tok, 10, &idx))
        return facts_gpu_find(ctx->facts, idx);
    if (str_starts(tok, "GPU-") || str_starts(tok, "MIG-")) {
        for (size_t i = 0; i < ctx->facts->n_gpus; i++) {
            const struct gpu *g = ctx->facts->gpus[i].g;

            if (gpu_valid(g, GPU_S_UUID) && g->uuid && str_starts(g->uuid, tok))
                return &ctx->facts->gpus[i];
        }
    }
    return NULL;
}

static bool use_on(const struct facts_use *u, int32_t gpu)
{
    for (size_t i = 0; u && i < u->n_gpus; i++) {
        if (u->gpus[i] == gpu)
            return true;
    }
    return false;
}

/* Other owners' compute processes on the GPU. */
static size_t others_on(const struct facts_gpu *v, const struct proc *p)
{
    char mine[64], theirs[64];
    bool known = owner_key(mine, sizeof(mine), p);
    size_t n = 0;

    for (size_t k = 0; k < v->n_holders; k++) {
        const struct facts_holder *h = &v->holders[k];

        if (!holder_compute(h) || h->pid == (uint32_t)p->pid)
            continue;
        /* An owner we cannot see counts as someone else. */
        n += !known || !owner_key(theirs, sizeof(theirs), h->p) || strcmp(mine, theirs) != 0;
    }
    return n;
}

/*
 * Whether the GPUs NVML lists are all the GPUs there are, each with its UUID: only then may an
 * entry that matches none be called missing.
 */
static bool gpus_complete(const struct rule_ctx *ctx, bool uuids)
{
    const struct snapshot *s = ctx->facts->snap;

    if (!s->nvml.attempted || s->nvml.init_rc != 0 || s->nvml.device_count_rc != 0 ||
        s->nvml.device_count != ctx->facts->n_gpus)
        return false;
    for (size_t i = 0; uuids && i < ctx->facts->n_gpus; i++) {
        if (!gpu_valid(ctx->facts->gpus[i].g, GPU_S_UUID))
            return false;
    }
    return true;
}

static void check_cvd(const struct rule_ctx *ctx, struct findings *out)
{
    for (size_t i = 0; i < ctx->facts->snap->procs.n_procs; i++) {
        const struct proc *p = &ctx->facts->snap->procs.procs[i];
        char *list, *save = NULL, label[96];
        const struct facts_use *u;

        const struct proc *parent;

        if (!proc_ok(p, PROC_S_ENV) || !p->cuda_visible_devices_set || !p->cuda_visible_devices)
            continue;
        /* Workers inherit the job's environment: judge the job once, at its top process. */
        parent = proc_ok(p, PROC_S_PPID) ? facts_proc_find(ctx->facts, p->ppid) : NULL;
        if (parent && proc_ok(parent, PROC_S_ENV) && parent->cuda_visible_devices &&
            strcmp(parent->cuda_visible_devices, p->cuda_visible_devices) == 0)
            continue;
        u = facts_use_find(ctx->facts, p->pid);
        list = xstrdup(p->cuda_visible_devices);
        proc_label(label, sizeof(label), ctx, p->pid);
        for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
            const struct facts_gpu *v;
            struct finding *f;

            tok = (char *)str_ltrim(str_rtrim(tok));
            if (*tok == '\0' || strcmp(tok, "-1") == 0 || str_starts(tok, "MIG-"))
                break; /* hides every GPU on purpose, or names a MIG device we do not map */
            v = resolve_cvd(ctx, tok);
            if (v == NULL && !gpus_complete(ctx, !str_to_u32(tok, 10, &(uint32_t){ 0 }))) {
                rule_skip(ctx, out, -1,
                          "the GPUs CUDA_VISIBLE_DEVICES names are not all known "
                          "(NVML's list incomplete)");
                break;
            }
            if (v == NULL) {
                f = finding_new(ctx, out, -1, p->pid);
                finding_title(f,
                              "pid %d (%s): CUDA_VISIBLE_DEVICES=%s names GPU '%s', which "
                              "does not exist",
                              p->pid, label, p->cuda_visible_devices, tok);
                finding_evidence(f, "this machine has %zu GPU%s (NVML indices 0-%zu)",
                                 ctx->facts->n_gpus, ctx->facts->n_gpus == 1 ? "" : "s",
                                 ctx->facts->n_gpus ? ctx->facts->n_gpus - 1 : 0);
                finding_evidence(f, "CUDA drops that entry and every entry after it; with none "
                                    "left the job fails or runs on the CPU");
                finding_fix(f, "nvidia-smi -L   # the GPUs and UUIDs that exist");
                finding_fix(f, "# start the job with CUDA_VISIBLE_DEVICES set to an existing "
                               "index or UUID");
                f->impact = 0.5;
                break;
            }
            if (use_on(u, (int32_t)v->g->index) || !v->util_valid ||
                v->util_mean < th(ctx, TH_GPU_BUSY_UTIL_PCT) || others_on(v, p) == 0)
                continue;
            f = finding_new(ctx, out, (int32_t)v->g->index, p->pid);
            finding_title(f,
                          "pid %d (%s): CUDA_VISIBLE_DEVICES=%s points at GPU %" PRIu32
                          ", busy with other jobs (%.0f%%)",
                          p->pid, label, p->cuda_visible_devices, v->g->index, v->util_mean);
            rules_holder_evidence(ctx, f, v, 4);
            finding_evidence(f, "CUDA numbers GPUs fastest first unless "
                                "CUDA_DEVICE_ORDER=PCI_BUS_ID; nvidia-smi numbers them by PCI "
                                "address");
            finding_fix(f, "nvidia-smi --query-gpu=index,uuid,utilization.gpu,memory.used "
                           "--format=csv   # pick a free GPU");
            finding_fix(f, "# then start it as CUDA_DEVICE_ORDER=PCI_BUS_ID "
                           "CUDA_VISIBLE_DEVICES=<free GPU> <command>");
            f->impact = 0.5;
        }
        free(list);
    }
}

const struct rule rule_proc_cuda_visible_devices = {
    .id = "proc.cuda-visible-devices",
    .severity = SEV_WARNING,
    .category = CAT_PROCESS,
    .title = "CUDA_VISIBLE_DEVICES names a missing or busy GPU",
    .explanation =
        "A process's CUDA_VISIBLE_DEVICES names a GPU that does not exist (a copied job script, a "
        "GPU that fell off the bus, an index from another machine) or one that other people's jobs "
        "keep busy. CUDA ignores an invalid entry and all entries after it, so the job silently "
        "gets fewer GPUs or none and runs on the CPU, or it shares a GPU with someone else. CUDA "
        "also numbers GPUs fastest-first by default while nvidia-smi numbers them by PCI address, "
        "so an index can mean a different GPU than the one in nvidia-smi.",
    .detection =
        "each process's environment (readable for own processes, or as root): an entry "
        "that matches no GPU index or UUID prefix, when NVML listed every GPU (and, for a UUID, "
        "every GPU's UUID); or a GPU it names that the process does not use yet, busy at or "
        "above gpu_busy_util_pct with compute processes of other owners.",
    .fix = "List GPUs with nvidia-smi -L, pick an existing idle one, and start the job with "
           "CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=N (or a UUID, which never changes "
           "meaning).",
    .thresholds = THRESHOLDS(TH_GPU_BUSY_UTIL_PCT),
    .check = check_cvd,
};

/* ---- proc.mig-no-instance ---- */

static void check_mig(const struct rule_ctx *ctx, struct findings *out)
{
    for (size_t i = 0; i < ctx->facts->n_gpus; i++) {
        const struct gpu *g = ctx->facts->gpus[i].g;
        struct finding *f;

        if (!gpu_valid(g, GPU_S_MIG_MODE))
            continue; /* NOT_SUPPORTED before Ampere: nothing to check */
        if (g->mig_mode && gpu_valid(g, GPU_S_MIG_DEVICES) && g->mig_devices == 0) {
            f = finding_new(ctx, out, (int32_t)g->index, -1);
            finding_title(f,
                          "GPU %" PRIu32 " has MIG enabled but no MIG instance: CUDA cannot "
                          "use it",
                          g->index);
            finding_evidence(f, "MIG mode enabled, 0 MIG devices");
            finding_evidence(f, "with MIG on, CUDA runs only inside instances: jobs see no GPU "
                                "here");
            finding_fix(f,
                        "sudo nvidia-smi mig -i %" PRIu32 " -lgip   # the instance profiles "
                        "this GPU offers",
                        g->index);
            finding_fix(f,
                        "# create GPU and compute instances: sudo nvidia-smi mig -i %" PRIu32
                        " -cgi <profile,...> -C",
                        g->index);
            finding_fix(f,
                        "sudo nvidia-smi -i %" PRIu32 " -mig 0   # or turn MIG off (takes "
                        "effect after a GPU reset)",
                        g->index);
            f->impact = 1.0;
        } else if (gpu_valid(g, GPU_S_MIG_MODE_PENDING) && g->mig_mode_pending != g->mig_mode) {
            f = finding_new(ctx, out, (int32_t)g->index, -1);
            f->severity = SEV_INFO;
            finding_title(f, "GPU %" PRIu32 " MIG mode change to %s waits for a GPU reset",
                          g->index, g->mig_mode_pending ? "enabled" : "disabled");
            finding_evidence(f, "MIG mode now %s, pending %s", g->mig_mode ? "on" : "off",
                             g->mig_mode_pending ? "on" : "off");
            finding_fix(f,
                        "sudo nvidia-smi -r -i %" PRIu32 "   # reset (no process may use it), "
                        "or reboot",
                        g->index);
            f->impact = 0.1;
        }
    }
}

const struct rule rule_proc_mig_no_instance = {
    .id = "proc.mig-no-instance",
    .severity = SEV_WARNING,
    .category = CAT_PROCESS,
    .title = "MIG enabled with no usable instance",
    .explanation =
        "Multi-Instance GPU (MIG) splits an A100/H100-class GPU into isolated instances. With MIG "
        "mode on, CUDA can only run inside a MIG instance; if none has been created, the GPU is "
        "unusable for jobs although nvidia-smi shows it healthy and empty. MIG mode changes also "
        "wait for a GPU reset, which is easy to forget (reported as information).",
    .detection = "MIG mode enabled and no MIG device exists (nvmlDeviceGetMigDeviceHandleByIndex "
                 "finds none); or a pending MIG mode that differs from the current one.",
    .fix = "Create instances (nvidia-smi mig -i N -cgi PROFILES -C) — usually from the "
           "scheduler's or a boot-time MIG configuration (nvidia-mig-parted) — or turn MIG off "
           "(nvidia-smi -i N -mig 0, then reset the GPU).",
    .thresholds = NO_THRESHOLDS,
    .check = check_mig,
};
