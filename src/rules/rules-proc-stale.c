/*
 * The stale holders: GPU memory held by a process that is stopped, defunct, orphaned and idle, or
 * idle for long. Each reports a process exactly when the facts' verdict on it is the rule's
 * (src/facts/verdict.c), the verdict `procs` shows and `reap` selects by.
 */
#include "rules/rule-impl.h"
#include "util/xalloc.h"

#include <inttypes.h>
#include <stdio.h>

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

/*
 * What a stale holder causes on its GPU: the memory it keeps is missing for the jobs that work
 * there (they run out of memory), and on an exclusive-process GPU it is the process that keeps
 * new CUDA programs out.
 */
#define STALE_HOLDER_EXPLAINS                                                                      \
    EXPLAINS({ "mem.nearly-full", LINK_SAME_GPU, NULL,                                             \
               N_("the memory the holder keeps is missing for the jobs working there"),            \
               LINK_FIX_OWN },                                                                     \
             { "proc.compute-mode", LINK_SAME_GPU, NULL,                                           \
               N_("on an exclusive-process GPU the holder keeps every new CUDA program out"),      \
               LINK_FIX_OWN },                                                                     \
             { "mem.job-oom", LINK_SAME_GPU, NULL,                                                 \
               N_("the job ran out of the memory the holder keeps"), LINK_FIX_OWN })

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
        const char *how, *slurm;
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
        slurm = u->p->state == 'T' ? facts_proc_slurm_job(u->p) : NULL;
        how = u->p->state == 't' ? N_("stopped by a debugger or tracer")
              : slurm != NULL    ? N_("stopped (SIGSTOP: Ctrl-Z, or Slurm suspending its job)")
                                 : N_("stopped (Ctrl-Z in its terminal, or SIGSTOP)");
        finding_evidence_take(f, TWICE("state %c: %s", (u->p->state, how), (u->p->state, _(how))));
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
        } else if (slurm != NULL) {
            /* Slurm suspends a job with SIGSTOP and keeps it SUSPENDED until it resumes it: a
             * kill -CONT behind its back leaves the job running while Slurm counts it stopped. */
            char *job = fix_arg(f, "Slurm job", slurm);

            if (job != NULL) {
                finding_fix(f,
                            "scontrol show job %s | grep -o 'JobState=[A-Z]*'   # SUSPENDED: "
                            "Slurm stopped it (scontrol suspend, gang scheduling)",
                            job);
                finding_fix(f, "sudo scontrol resume %s   # resume it through Slurm", job);
                finding_fix(f, "scancel %s   # or end the job, once its owner agrees", job);
            }
            free(job);
        } else {
            finding_fix(f, "kill -CONT %d   # resume it (or 'fg' in the shell that stopped it)",
                        u->pid);
        }
        /* A stopped process acts on SIGTERM only once resumed (a handler that saves a
         * checkpoint runs then): the end is a SIGTERM, then a SIGCONT, as reap sends them. */
        if (slurm != NULL && u->p->state == 'T')
            ; /* the job's end is Slurm's: scancel above */
        else if (fix_pid_ok(u->pid) && u->p->state == 't')
            finding_fix(f, "kill %d   # or end it, once %s confirms it is no longer needed", u->pid,
                        u->p->user ? u->p->user : "its owner");
        else if (fix_pid_ok(u->pid))
            finding_fix(f,
                        "kill %d && kill -CONT %d   # or end it, once %s confirms it is no "
                        "longer needed (stopped, it acts on the signal only once resumed)",
                        u->pid, u->pid, u->p->user ? u->p->user : "its owner");
        f->impact = u->used_valid ? (double)u->used_bytes / (1024.0 * MIB) / 80.0 + 1.0 : 1.0;
    }
}

const struct rule rule_proc_stopped_holder = {
    .id = "proc.stopped-holder",
    .severity = SEV_CRITICAL,
    .category = CAT_PROCESS,
    .title = N_("GPU memory held by a stopped process"),
    .explanation = N_(
        "A process that holds GPU memory is stopped: someone pressed Ctrl-Z in its terminal, sent "
        "SIGSTOP, or a debugger is holding it. A stopped process never runs again until resumed, "
        "but it keeps every byte of GPU memory and its CUDA contexts, so the GPU looks busy "
        "(memory "
        "full) while doing nothing, and other jobs fail with 'out of memory'. This is the most "
        "common 'zombie GPU memory' that is not a zombie at all."),
    .detection =
        N_("the process table's state is T (stopped) or t (traced) for a process that NVML "
           "lists on a GPU or that has /dev/nvidiaN open, and that used no CPU over the "
           "sampling window (one strace stops at each system call runs between the stops)."),
    .fix = N_(
        "Resume it with kill -CONT PID (or fg in the shell that stopped it), or end it with kill "
        "PID once its owner confirms it is no longer needed. A traced process: detach the "
        "debugger."),
    .thresholds = NO_THRESHOLDS,
    .explains = STALE_HOLDER_EXPLAINS,
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
        if (parent != NULL) {
            const char *word = proc_ok(parent, PROC_S_STATE) ? proc_state_name(parent->state)
                                                             : N_("in a state not known");

            finding_evidence_take(f, TWICE("parent %d (%s) is %s",
                                           (parent->pid, proc_command(parent), word),
                                           (parent->pid, proc_command(parent), _(word))));
        }
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
    .title = N_("GPU memory held by a defunct (zombie) process"),
    .explanation = N_(
        "A process that the GPU still lists has exited (state Z, 'defunct'). The driver frees a "
        "process's GPU memory only when the last file descriptor on /dev/nvidia* is closed and the "
        "context is torn down; while children that inherited the descriptors (data-loader "
        "workers, forked helpers) live on, or while the exit is stuck, the memory stays held. A "
        "zombie cannot be killed: it is already dead. Its parent must reap it, and the processes "
        "still holding the device must end."),
    .detection = N_("state Z or X in the process table for a process NVML lists on a GPU or that "
                    "has /dev/nvidiaN open."),
    .fix =
        N_("Find who still has the device open (sudo fuser -v /dev/nvidiaN) and end those "
           "processes; make the parent reap the zombie, or end the parent so init does. If the "
           "memory stays held with no process left, reset the GPU (nvidia-smi -r -i N) or reboot."),
    .thresholds = NO_THRESHOLDS,
    .explains = STALE_HOLDER_EXPLAINS,
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
    .title = N_("GPU memory held by an orphaned, idle process"),
    .explanation = N_(
        "A process holding GPU memory lost its parent (the terminal closed, the launcher crashed "
        "or was killed) and now does nothing. Typical: data-loader workers or multiprocessing "
        "children of a training script that was killed, which inherited a CUDA context, or a job "
        "started in a shell that was closed. Nobody is waiting for it, but its memory is "
        "unavailable to everyone else. Jobs started on purpose with nohup keep working and are not "
        "reported: only idle ones are."),
    .detection =
        N_("parent pid 1, not a system service, container or batch job (from its cgroup; "
           "not judged when the cgroup is unknown), "
           "holding at least holder_min_mib of GPU memory, using less CPU than "
           "idle_holder_cpu_pct over the window and no GPU time (its own SM utilisation, or "
           "its GPUs idle), both judged against gpu_idle_util_pct. Needs a sampling window."),
    .fix =
        N_("Confirm with ps that it belongs to a finished job, then end it (kill PID). Children of "
           "a killed training script can usually all go: pkill -P is not safe with ppid 1, so kill "
           "them by pid."),
    .thresholds = THRESHOLDS(TH_HOLDER_MIN_MIB, TH_IDLE_HOLDER_CPU_PCT, TH_GPU_IDLE_UTIL_PCT),
    .explains = STALE_HOLDER_EXPLAINS,
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
    .title = N_("GPU memory held by an idle process"),
    .explanation = N_(
        "A process has held GPU memory for a long time without using the GPU or the CPU: a "
        "notebook kernel left open after an experiment, an interactive session, a server with "
        "nothing to serve, or a job stuck waiting for something that will not come. Frameworks "
        "keep what they allocated in their cache, so the memory stays held until the process ends "
        "or empties its cache."),
    .detection =
        N_("a sleeping process older than idle_holder_min_age_s holding at least "
           "holder_min_mib of GPU memory, using less CPU than idle_holder_cpu_pct over the "
           "window and no GPU time (its own SM utilisation, or its GPUs idle, against "
           "gpu_idle_util_pct). Needs a "
           "sampling window."),
    .fix = N_("Ask its owner. A notebook: restart the kernel or free tensors and call "
              "torch.cuda.empty_cache(). A server: is it still needed? A stuck job: find what it "
              "waits on (py-spy dump --pid PID). End it when no longer needed."),
    .thresholds = THRESHOLDS(TH_HOLDER_MIN_MIB, TH_IDLE_HOLDER_MIN_AGE_S, TH_IDLE_HOLDER_CPU_PCT,
                             TH_GPU_IDLE_UTIL_PCT),
    .explains = STALE_HOLDER_EXPLAINS,
    .check = check_idle,
};
