/*
 * What the Slurm prolog and epilog (cmd-slurm-prolog.c, cmd-slurm-epilog.c) see: the GPUs of a
 * job, who holds them (this job, another job still running, or a leftover), memory no process
 * accounts for, and the drain reason that names it. Pure functions of a snapshot, so the tests
 * drive them with JSON; slurm-check uses slurm_leftover_cleared to keep such a drain until the
 * leftover is gone.
 */
#include "cmd/cmd.h"
#include "cmd/slurm.h"
#include "render/format.h"
#include "util/strutil.h"
#include "util/xalloc.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

const char *const slurm_holder_kind_names[] = { "this-job", "running-job", "leftover", NULL };

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;

    return (x > y) - (x < y);
}

/* The NVML index of the GPU a SLURM_JOB_GPUS / CUDA_VISIBLE_DEVICES word names, or -1. */
static int32_t gpu_of_word(const struct snapshot *s, const char *w)
{
    uint32_t n;

    if (strncmp(w, "GPU-", 4) == 0) {
        for (size_t i = 0; i < s->n_gpus; i++) {
            if (gpu_valid(&s->gpus[i], GPU_S_UUID) && s->gpus[i].uuid &&
                strcmp(s->gpus[i].uuid, w) == 0)
                return (int32_t)s->gpus[i].index;
        }
        return -1;
    }
    if (!str_to_u32(w, 10, &n))
        return -1;
    /* gres.conf names devices by file (/dev/nvidiaN): the number is the minor, which NVML's
     * index usually equals; a GPU whose minor is unknown is matched by its index. */
    for (size_t i = 0; i < s->n_gpus; i++) {
        const struct gpu *g = &s->gpus[i];
        uint32_t minor = gpu_valid(g, GPU_S_MINOR) ? g->minor_number : g->index;

        if (minor == n)
            return (int32_t)g->index;
    }
    return -1;
}

int slurm_job_gpus(const struct snapshot *s, const char *spec, int32_t **out, size_t *n,
                   char **cause)
{
    char *list = xstrdup(spec), *save = NULL;
    size_t k = 0;

    *out = xcalloc(strlen(spec) + 1, sizeof(**out));
    *n = 0;
    for (char *w = strtok_r(list, ", ", &save); w; w = strtok_r(NULL, ", ", &save)) {
        int32_t idx = gpu_of_word(s, w);

        if (idx < 0) {
            char *shown = str_excerpt(w, 60);

            *cause = xasprintf("'%s' is no GPU of this node", shown);
            free(shown);
            free(list);
            free(*out);
            *out = NULL;
            return -1;
        }
        (*out)[k++] = idx;
    }
    free(list);
    qsort(*out, k, sizeof(**out), cmp_i32);
    /* no GPU twice */
    for (size_t i = 0; i < k; i++) {
        if (*n == 0 || (*out)[*n - 1] != (*out)[i])
            (*out)[(*n)++] = (*out)[i];
    }
    if (*n == 0) {
        *cause = xstrdup("no GPU named");
        free(*out);
        *out = NULL;
        return -1;
    }
    return 0;
}

static bool job_gpu(const int32_t *gpus, size_t n, uint32_t idx)
{
    if (gpus == NULL)
        return true;
    for (size_t i = 0; i < n; i++) {
        if (gpus[i] == (int32_t)idx)
            return true;
    }
    return false;
}

/*
 * Whether p is a Slurm step daemon: root's, named slurmstepd. Its command line says which job
 * it runs; anyone can give their own process that command line, not that owner and name.
 */
static bool step_daemon(const struct proc *p)
{
    return proc_has(p, PROC_S_USER) && p->uid == 0 && proc_has(p, PROC_S_COMM) && p->comm &&
           strcmp(p->comm, "slurmstepd") == 0 && proc_has(p, PROC_S_CMDLINE) && p->cmdline &&
           strncmp(p->cmdline, "slurmstepd: [", 13) == 0;
}

/*
 * The job of the slurmstepd above p ("slurmstepd: [4400.0]", "[4400.batch]", "[4400.extern]"),
 * or NULL when no step daemon is among its ancestors in the snapshot: its job is not running
 * here. Only ancestors count, never p itself. Bounded: a loop in a hostile snapshot's ppids ends.
 */
static char *running_step_job(const struct snapshot *s, const struct proc *p)
{
    for (size_t depth = 0; p != NULL && depth < 64; depth++) {
        if (depth > 0 && step_daemon(p)) {
            const char *id = p->cmdline + 13;
            size_t len = strspn(id, "0123456789");

            if (len > 0)
                return xstrndup(id, len);
        }
        if (!proc_has(p, PROC_S_PPID) || p->ppid <= 1)
            break;
        p = proc_table_find(&s->procs, p->ppid);
    }
    return NULL;
}

size_t slurm_gpu_holders(const struct snapshot *s, const char *job, const int32_t *gpus,
                         size_t n_gpus, struct slurm_holder **out)
{
    size_t n = 0, cap = 0;

    *out = NULL;
    for (size_t i = 0; i < s->n_gpus; i++) {
        const struct gpu *g = &s->gpus[i];

        if (g->handle_rc != 0 || !job_gpu(gpus, n_gpus, g->index))
            continue;
        for (size_t k = 0; k < g->n_procs; k++) {
            const struct gpu_proc *np = &g->procs[k];
            struct slurm_holder *h;
            char *step;

            /* The MPS control daemon's server holds memory for its clients on purpose. */
            if (np->type_mask == GPU_PROC_MPS)
                continue;
            xgrow(out, &cap, n + 1, sizeof(**out));
            h = &(*out)[n++];
            memset(h, 0, sizeof(*h));
            h->pid = (int32_t)np->pid;
            h->gpu = g->index;
            h->p = proc_table_find(&s->procs, (int32_t)np->pid);
            if (facts_proc_pid_foreign(h->p)) /* not NVML's process: nobody's we can name */
                h->p = NULL;
            h->used_valid = (np->valid & (UINT64_C(1) << GPU_PROC_S_USED)) != 0;
            h->used_bytes = np->used_bytes;
            step = running_step_job(s, h->p);
            if (h->p && proc_has(h->p, PROC_S_CGROUP) && h->p->slurm_job_id)
                h->job = xstrdup(h->p->slurm_job_id);
            else if (step)
                h->job = xstrdup(step);
            /* The cgroup, which slurmstepd sets, names another job than the step above it: that
             * step does not make this process's job a running one. */
            if (step && strcmp(step, h->job) != 0) {
                free(step);
                step = NULL;
            }
            if (h->job && job && strcmp(h->job, job) == 0)
                h->kind = SLURM_HOLDER_THIS_JOB;
            else if (step)
                h->kind = SLURM_HOLDER_RUNNING_JOB;
            else
                h->kind = SLURM_HOLDER_LEFTOVER;
            free(step);
        }
    }
    return n;
}

void slurm_holders_free(struct slurm_holder *h, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(h[i].job);
    free(h);
}

void slurm_holders_recall(struct slurm_holder *h, size_t n, const struct snapshot *before,
                          const char *job)
{
    for (size_t i = 0; i < n; i++) {
        const struct proc *now = h[i].p, *then = proc_table_find(&before->procs, h[i].pid);

        if (then == NULL || h[i].kind == SLURM_HOLDER_THIS_JOB)
            continue;
        /* Still in /proc, alive or another process on a reused pid: it says who it is itself.
         * Gone (only NVML lists it) or defunct (its cgroup and command line went with it): the
         * process the first look saw. */
        if (now != NULL && proc_has(now, PROC_S_STATE) &&
            !(now->state == 'Z' && proc_has(now, PROC_S_START_TICKS) &&
              proc_has(then, PROC_S_START_TICKS) && now->start_ticks == then->start_ticks))
            continue;
        h[i].p = then;
        if (h[i].job == NULL && proc_has(then, PROC_S_CGROUP) && then->slurm_job_id)
            h[i].job = xstrdup(then->slurm_job_id);
        if (h[i].job && job && strcmp(h[i].job, job) == 0)
            h[i].kind = SLURM_HOLDER_THIS_JOB;
    }
}

size_t slurm_unaccounted(const struct snapshot *s, const int32_t *gpus, size_t n_gpus,
                         uint64_t min_bytes, struct slurm_gpu_memory **out)
{
    size_t n = 0;

    *out = xcalloc(s->n_gpus ? s->n_gpus : 1, sizeof(**out));
    for (size_t i = 0; i < s->n_gpus; i++) {
        const struct gpu *g = &s->gpus[i];
        uint64_t listed = 0;
        bool known =
            g->handle_rc == 0 && gpu_valid(g, GPU_S_MEM_USED) && gpu_valid(g, GPU_S_PROCESSES);

        if (!known || !job_gpu(gpus, n_gpus, g->index))
            continue;
        for (size_t k = 0; k < g->n_procs; k++) {
            if (!(g->procs[k].valid & (UINT64_C(1) << GPU_PROC_S_USED))) {
                known = false; /* a process whose use NVML does not say: cannot tell */
                break;
            }
            listed += g->procs[k].used_bytes;
        }
        if (!known || g->mem_used_bytes < listed || g->mem_used_bytes - listed < min_bytes)
            continue;
        (*out)[n].gpu = g->index;
        (*out)[n].used_bytes = g->mem_used_bytes;
        (*out)[n].unaccounted_bytes = g->mem_used_bytes - listed;
        n++;
    }
    return n;
}

char *slurm_leftover_reason(const struct snapshot *s, const struct slurm_holder *const *held,
                            size_t n_held, const struct slurm_gpu_memory *mem, size_t n_mem)
{
    size_t more = n_held + n_mem - 1, len;
    char *r, *who = NULL;

    (void)s;
    if (n_held + n_mem == 0)
        return NULL;
    if (n_held > 0) {
        const struct slurm_holder *h = held[0];
        const char *user = h->p && proc_has(h->p, PROC_S_USER_NAME) ? h->p->user : NULL;
        const char *cmd = h->p && proc_has(h->p, PROC_S_CMDLINE) && h->p->cmdline ? h->p->cmdline
                          : h->p && proc_has(h->p, PROC_S_COMM)                   ? h->p->comm
                                                                                  : NULL;

        who = xasprintf("%s%s%s%s%s%s", h->job ? "job " : "", h->job ? h->job : "",
                        h->job && (user || cmd) ? ", " : "", user ? user : "",
                        user && cmd ? ": " : "", cmd ? render_command(cmd) : "");
        r = xasprintf(SLURM_LEFTOVER_PREFIX "%" PRIu32 " held by leftover pid %d%s%s%s", h->gpu,
                      (int)h->pid, *who ? " (" : "", who, *who ? ")" : "");
    } else {
        r = xasprintf(SLURM_LEFTOVER_PREFIX "%" PRIu32 " held by leftover memory: %.1f GiB, no "
                                            "process listed",
                      mem[0].gpu, (double)mem[0].unaccounted_bytes / (1024.0 * 1024 * 1024));
    }
    free(who);
    if (more > 0) {
        char *suffix = xasprintf(" (+%zu more)", more);

        /* the count must survive the cut: shorten the first part instead */
        len = strlen(r);
        if (len + strlen(suffix) > SLURM_REASON_MAX) {
            size_t cut = SLURM_REASON_MAX - strlen(suffix) - 3;

            while (cut > 0 && ((unsigned char)r[cut] & 0xc0) == 0x80)
                cut--;
            memcpy(r + cut, "...", 4);
        }
        who = xasprintf("%s%s", r, suffix);
        free(r);
        free(suffix);
        r = who;
    }
    /* control characters and invalid UTF-8 out (slurmctld keeps them), then the length */
    for (char *q = r; *q; q++) {
        if ((unsigned char)*q < 0x20 || *q == 0x7f)
            *q = ' ';
    }
    str_sanitize(r);
    len = strlen(r);
    if (len > SLURM_REASON_MAX) {
        size_t cut = SLURM_REASON_MAX - 3;

        while (cut > 0 && ((unsigned char)r[cut] & 0xc0) == 0x80)
            cut--;
        memcpy(r + cut, "...", 4);
    }
    return r;
}

/* Whether the leftover the reason names (GPU N held by leftover pid P, or memory) is gone. */
static int named_leftover_cleared(const struct snapshot *s, const char *reason, uint64_t min_bytes)
{
    const char *p;
    uint32_t gpu;
    int32_t pid;
    int used = 0;

    if (reason == NULL || strncmp(reason, SLURM_LEFTOVER_PREFIX, strlen(SLURM_LEFTOVER_PREFIX)))
        return -1;
    p = reason + strlen(SLURM_LEFTOVER_PREFIX);
    if (sscanf(p, "%" SCNu32 " held by leftover pid %" SCNd32 "%n", &gpu, &pid, &used) == 2 &&
        used > 0) {
        const struct gpu *g = snapshot_gpu(s, gpu);

        if (g == NULL || g->handle_rc != 0 || !gpu_valid(g, GPU_S_PROCESSES))
            return 0; /* cannot see it: not cleared */
        for (size_t k = 0; k < g->n_procs; k++) {
            if ((int32_t)g->procs[k].pid == pid)
                return 0;
        }
        return 1;
    }
    used = 0;
    if (sscanf(p, "%" SCNu32 " held by leftover memory%n", &gpu, &used) == 1 && used > 0) {
        struct slurm_gpu_memory *m;
        int32_t one = (int32_t)gpu;
        const struct gpu *g = snapshot_gpu(s, gpu);
        size_t n;

        if (g == NULL || g->handle_rc != 0 || !gpu_valid(g, GPU_S_MEM_USED))
            return 0;
        n = slurm_unaccounted(s, &one, 1, min_bytes, &m);
        free(m);
        return n == 0;
    }
    return -1;
}

/*
 * Whether no GPU of the node is held by a leftover (a process of no running job) or by memory
 * no listed process accounts for: what a reason that named only the first of several ("(+N
 * more)") needs before the drain is lifted. A GPU whose processes NVML did not give is not seen
 * clear.
 */
static bool nothing_left_over(const struct snapshot *s, uint64_t min_bytes)
{
    struct slurm_gpu_memory *m;
    struct slurm_holder *h;
    size_t n;
    bool clear = true;

    for (size_t i = 0; i < s->n_gpus; i++) {
        if (s->gpus[i].handle_rc != 0 || !gpu_valid(&s->gpus[i], GPU_S_PROCESSES))
            return false;
    }
    n = slurm_gpu_holders(s, NULL, NULL, 0, &h);
    for (size_t i = 0; i < n; i++) {
        if (h[i].kind == SLURM_HOLDER_LEFTOVER)
            clear = false;
    }
    slurm_holders_free(h, n);
    if (slurm_unaccounted(s, NULL, 0, min_bytes, &m) > 0)
        clear = false;
    free(m);
    return clear;
}

int slurm_leftover_cleared(const struct snapshot *s, const char *reason, uint64_t min_bytes)
{
    int named = named_leftover_cleared(s, reason, min_bytes);

    if (named != 1 || strstr(reason, " more)") == NULL)
        return named;
    return nothing_left_over(s, min_bytes) ? 1 : 0;
}

/* ---- what the prolog and the epilog share ---- */

int slurm_job_begin(struct slurm_job_run *r, const char *cmd, const struct slurm_job_opts *o)
{
    const char *job = o->job ? o->job : getenv("SLURM_JOB_ID");

    memset(r, 0, sizeof(*r));
    r->cmd = cmd;
    if (job == NULL || *job == '\0' || strspn(job, "0123456789") != strlen(job)) {
        if (job == NULL || *job == '\0')
            cmd_error(cmd, "no job: SLURM_JOB_ID is not set (slurmd sets it for a prolog or "
                           "epilog); give --job ID");
        else
            cmd_error(cmd, "job '%s' is not a Slurm job id (a number)", job);
        return EXIT_USAGE;
    }
    r->job = xstrdup(job);
    return 0;
}

void slurm_job_gpus_of(struct slurm_job_run *r, const struct snapshot *s,
                       const struct slurm_job_opts *o)
{
    static const char *const vars[] = { "SLURM_JOB_GPUS", "CUDA_VISIBLE_DEVICES" };
    const char *spec = o->gpus, *from = "--gpus";
    char *cause = NULL;

    free(r->gpus);
    r->gpus = NULL;
    r->n_gpus = 0;
    r->gpus_from = NULL;
    for (size_t i = 0; spec == NULL && i < ARRAY_SIZE(vars); i++) {
        const char *v = getenv(vars[i]);

        if (v && *v) {
            spec = v;
            from = vars[i];
        }
    }
    if (spec == NULL || *spec == '\0')
        return; /* a job without GPUs named: every GPU is looked at */
    if (slurm_job_gpus(s, spec, &r->gpus, &r->n_gpus, &cause) != 0) {
        char *shown = str_excerpt(spec, 80);

        cmd_error(r->cmd, "%s=%s: %s; every GPU is looked at", from, shown, cause);
        free(shown);
        free(cause);
        return;
    }
    r->gpus_from = from;
}

void slurm_job_end(struct slurm_job_run *r)
{
    free(r->job);
    free(r->gpus);
    memset(r, 0, sizeof(*r));
}

void slurm_job_gpu_text(const struct slurm_job_run *r, char *buf, size_t size)
{
    char list[128];

    if (r->gpus == NULL) {
        snprintf(buf, size, "every GPU");
        return;
    }
    render_ranges(list, sizeof(list), r->gpus, r->n_gpus);
    snprintf(buf, size, "GPU%s %s", r->n_gpus == 1 ? "" : "s", list);
}

void slurm_holder_line(char *buf, size_t size, const struct slurm_holder *h)
{
    const struct proc *p = h->p;
    const char *user = p && proc_has(p, PROC_S_USER_NAME) ? p->user : NULL;
    const char *cmd = p && proc_has(p, PROC_S_CMDLINE) && p->cmdline ? p->cmdline
                      : p && proc_has(p, PROC_S_COMM)                ? p->comm
                                                                     : NULL;
    char mem[32] = "";

    if (h->used_valid)
        snprintf(mem, sizeof(mem), ", %.1f GiB", (double)h->used_bytes / (1024.0 * 1024 * 1024));
    snprintf(buf, size, "GPU %" PRIu32 ": pid %d (%s%s%s%s%s%s)%s", h->gpu, (int)h->pid,
             h->job ? "job " : "no job", h->job ? h->job : "", user ? ", " : "", user ? user : "",
             cmd ? ": " : "", cmd ? render_command(cmd) : "", mem);
}

int slurm_job_drain(const struct slurm_job_run *r, const struct slurm_job_opts *o,
                    const char *reason)
{
    struct slurm_node node = { 0 };
    char *name = slurm_node_name(o->node), *scontrol = NULL;
    int rc = -1;

    if (name == NULL) {
        cmd_error(r->cmd, "no node name: give --node");
        return -1;
    }
    if (o->dry_run) {
        printf("gpudoctor %s: node %s: dry run: would drain with reason: %s\n", r->cmd, name,
               reason);
        free(name);
        return 0;
    }
    scontrol = o->scontrol ? xstrdup(o->scontrol) : slurm_find_scontrol();
    if (scontrol == NULL || scontrol[0] != '/') {
        cmd_error(r->cmd,
                  scontrol ? "--scontrol %s: give an absolute path"
                           : "scontrol not found in $PATH, /usr/bin or /usr/local/bin%s",
                  scontrol ? scontrol : "");
        goto out;
    }
    if (slurm_show_node(r->cmd, scontrol, name, &node) != 0)
        goto out;
    if (node.drain && !slurm_reason_is_ours(node.reason)) {
        printf("gpudoctor %s: node %s (%s, reason: %s): already drained by someone else, left "
               "as it is\n",
               r->cmd, name, node.state, node.reason ? node.reason : "none");
        rc = 0;
        goto out;
    }
    if (node.drain && node.reason && strcmp(node.reason, reason) == 0) {
        rc = 0;
        goto out;
    }
    if (slurm_update_node(r->cmd, scontrol, name, SLURM_DRAIN, reason) != 0)
        goto out;
    printf("gpudoctor %s: node %s: drained with reason: %s\n", r->cmd, name, reason);
    openlog("gpudoctor", LOG_PID, LOG_DAEMON);
    syslog(LOG_WARNING, "%s: drained Slurm node %s: %s", r->cmd, name, reason);
    closelog();
    rc = 0;
out:
    slurm_node_free(&node);
    free(scontrol);
    free(name);
    return rc;
}
