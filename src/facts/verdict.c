/*
 * The verdict on a GPU process: defunct, stopped, or, from its CPU and GPU use over the window,
 * active or idle; an idle one that holds enough memory is an idle holder, or orphaned when its
 * parent left it to init. The process rules report exactly these verdicts, `procs` shows them
 * and `reap` selects by them.
 */
#include "facts/facts.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

#define MIB (1024.0 * 1024.0) /* thresholds in MiB against byte counts */

const char *const facts_verdict_names[] = {
    "active",   "idle",        "idle-holder", "stopped", "defunct",
    "orphaned", "not-visible", "unknown",     NULL,
};

static double th(const struct facts *f, enum threshold_id id)
{
    return f->th->v[id];
}

static bool ok(const struct proc *p, enum proc_slot slot)
{
    return p != NULL && proc_has(p, slot);
}

bool facts_proc_in_state(const struct proc *p, const char *states)
{
    return p != NULL && ok(p, PROC_S_STATE) && p->state && strchr(states, p->state);
}

const char *facts_proc_slurm_job(const struct proc *p)
{
    return ok(p, PROC_S_CGROUP) && p->slurm_job_id && *p->slurm_job_id ? p->slurm_job_id : NULL;
}

double facts_tree_cpu_pct(const struct facts *f, const struct proc *p)
{
    double cpu;

    if (!ok(p, PROC_S_CPU_PCT))
        return -1;
    cpu = p->cpu_pct;
    for (size_t i = 0; i < p->n_children; i++) {
        const struct proc *c = facts_proc_find(f, p->children[i]);

        if (ok(c, PROC_S_CPU_PCT))
            cpu += c->cpu_pct;
    }
    return cpu;
}

enum idleness { IDLE_NO, IDLE_YES, IDLE_UNKNOWN };

/*
 * Idle: no CPU to speak of over the window, and no GPU work: its own SM utilisation when the
 * driver samples it, else every GPU it uses idle (or it is the only compute process there).
 */
static enum idleness use_idle(const struct facts *f, const struct facts_use *u)
{
    double cpu = facts_tree_cpu_pct(f, u->p);

    /* Work on the GPU proves activity by itself; idleness needs the CPU over a window too. */
    if (u->sm_util_valid && u->sm_util_pct > th(f, TH_GPU_IDLE_UTIL_PCT))
        return IDLE_NO;
    if (cpu < 0)
        return IDLE_UNKNOWN;
    if (cpu >= th(f, TH_IDLE_HOLDER_CPU_PCT))
        return IDLE_NO;
    if (u->sm_util_valid)
        return IDLE_YES;
    for (size_t i = 0; i < u->n_gpus; i++) {
        const struct facts_gpu *v = facts_gpu_find(f, (uint32_t)u->gpus[i]);

        if (v == NULL || !v->util_valid)
            return IDLE_UNKNOWN;
        if (v->util_max > th(f, TH_GPU_IDLE_UTIL_PCT))
            return v->n_compute <= 1 ? IDLE_NO : IDLE_UNKNOWN;
    }
    return IDLE_YES;
}

bool facts_holds_enough(const struct facts *f, const struct facts_use *u)
{
    return u->used_valid && (double)u->used_bytes >= th(f, TH_HOLDER_MIN_MIB) * MIB;
}

/*
 * Orphaned: re-parented to init from a login session. Daemons (systemd services), containers
 * and batch jobs have init or a shim as parent on purpose, so they are not orphans.
 */
static bool orphaned(const struct proc *p)
{
    /* Without its cgroup a service or container cannot be told from an orphan. */
    if (!ok(p, PROC_S_PPID) || p->ppid != 1 || !ok(p, PROC_S_CGROUP))
        return false;
    if (p->container_id || p->pod_uid || p->slurm_job_id)
        return false;
    if (p->cgroup && strstr(p->cgroup, ".service") && !strstr(p->cgroup, "user@"))
        return false;
    return true;
}

/* What an idle process is: orphaned, an idle holder (old enough, holding enough), or just idle. */
static enum facts_verdict idle_kind(const struct facts *f, const struct facts_use *u)
{
    double age;

    if (facts_proc_in_state(u->p, "SRDI") && orphaned(u->p) && facts_holds_enough(f, u))
        return FACTS_VERDICT_ORPHANED;
    age = facts_proc_age_s(f, u->p);
    if (facts_proc_in_state(u->p, "SI") && !orphaned(u->p) && facts_holds_enough(f, u) &&
        !(age >= 0 && age < th(f, TH_IDLE_HOLDER_MIN_AGE_S)))
        return FACTS_VERDICT_IDLE_HOLDER;
    return FACTS_VERDICT_IDLE;
}

/*
 * NVML lists pid, but the process this /proc shows under that number has no NVIDIA device open,
 * which a process with a CUDA context, or a graphics client of the GPU, always has: the number
 * is another PID namespace's (NVML gives the host's pids; gpudoctor reads a container's /proc),
 * or the process exited and the number was reused. Only where its fds were read; never for an
 * exited one (its files are closed) nor an MPS client (it works through the MPS server's).
 */
bool facts_proc_pid_foreign(const struct proc *p)
{
    bool listed = false;

    if (!ok(p, PROC_S_HOLDS_CTL) || !ok(p, PROC_S_HOLDS_UVM) || p->holds_ctl || p->holds_uvm ||
        !ok(p, PROC_S_STATE) || facts_proc_in_state(p, "ZX"))
        return false;
    for (size_t i = 0; i < p->n_gpus; i++) {
        if (p->gpus[i].holds_device || (p->gpus[i].type_mask & GPU_PROC_MPS))
            return false;
        listed = listed || p->gpus[i].nvml_listed;
    }
    return listed;
}

/* Whether p used the CPU over the window (unknown without one: a single reading). */
static bool ran_in_window(const struct facts *f, const struct proc *p)
{
    return ok(p, PROC_S_CPU_PCT) && p->cpu_pct >= th(f, TH_IDLE_HOLDER_CPU_PCT);
}

enum facts_verdict facts_verdict_of(const struct facts *f, const struct facts_use *u,
                                    enum facts_verdict *if_idle)
{
    *if_idle = idle_kind(f, u);
    if (!ok(u->p, PROC_S_STATE) || facts_proc_pid_foreign(u->p))
        return FACTS_VERDICT_NOT_VISIBLE;
    if (facts_proc_in_state(u->p, "ZX"))
        return FACTS_VERDICT_DEFUNCT;
    /* Stopped, not caught in a stop it leaves again: a process under strace is in t for each
     * system call, and one resumed during the window used the CPU. */
    if (facts_proc_in_state(u->p, "Tt") && !ran_in_window(f, u->p))
        return FACTS_VERDICT_STOPPED;
    switch (use_idle(f, u)) {
    case IDLE_UNKNOWN:
        return FACTS_VERDICT_UNKNOWN;
    case IDLE_NO:
        return FACTS_VERDICT_ACTIVE;
    default:
        return *if_idle;
    }
}

static int cmp_judgement(const void *a, const void *b)
{
    const struct facts_judgement *x = a, *y = b;

    return (x->pid > y->pid) - (x->pid < y->pid);
}

size_t facts_judge(const struct facts *f, struct facts_judgement **out)
{
    const struct snapshot *s = f->snap;
    int64_t idle_ms = s->n_samples ? s->samples[s->n_samples - 1].t_ms : 0;
    size_t n = f->n_uses;

    *out = xcalloc(n ? n : 1, sizeof(**out));
    for (size_t i = 0; i < n; i++) {
        struct facts_judgement *j = &(*out)[i];

        j->pid = f->uses[i].pid;
        j->verdict = f->uses[i].verdict;
        /* CPU use is known over the snapshot's own window only: that is what proves idleness. */
        j->idle_for_ms = -1;
        if (j->verdict == FACTS_VERDICT_IDLE || j->verdict == FACTS_VERDICT_IDLE_HOLDER ||
            j->verdict == FACTS_VERDICT_ORPHANED)
            j->idle_for_ms = idle_ms;
    }
    qsort(*out, n, sizeof(**out), cmp_judgement); /* uses are by pid already; say so for callers */
    return n;
}

size_t facts_judge_snapshot(const struct snapshot *s, const struct history *h,
                            const struct thresholds *th, struct facts_judgement **out)
{
    struct facts *f = facts_create(s, h, th);
    size_t n = facts_judge(f, out);

    facts_free(f);
    return n;
}

const struct facts_judgement *facts_judgement_find(const struct facts_judgement *j, size_t n,
                                                   int32_t pid)
{
    struct facts_judgement key = { .pid = pid };

    return n ? bsearch(&key, j, n, sizeof(*j), cmp_judgement) : NULL;
}
