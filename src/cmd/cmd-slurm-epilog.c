/*
 * gpudoctor slurm-epilog: Slurm's Epilog for GPU nodes. After a job ends, it finds the job's own
 * processes that still hold its GPUs (their cgroup names the job) and, with --reap, ends them
 * through the safe reaper (src/reap: pidfd-pinned, start time verified, never PID 1 or a
 * protected process). It then waits a little for the memory to come back; memory that stays
 * held (by the job's leftovers, another ended job's, or no process at all) drains the node with
 * a reason that names it, so the next job does not land on a full GPU. The exit status is 0
 * whenever gpudoctor drained the node itself (or had nothing to do): a failing epilog makes
 * Slurm drain the node with "Epilog error", which names nothing; 1 only when memory stays held
 * and gpudoctor could not drain the node, so that Slurm does.
 */
#include "cmd/cmd.h"
#include "cmd/slurm.h"
#include "reap/reap.h"
#include "rules/rules.h"
#include "util/fileio.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#define DEFAULT_WAIT_MS  10000
#define DEFAULT_GRACE_MS 5000
#define KILL_WAIT_MS     5000
#define POLL_MS          500

enum {
    OPT_JOB = OPT__COMMON_END,
    OPT_GPUS,
    OPT_NODE,
    OPT_SCONTROL,
    OPT_DRY_RUN,
    OPT_WARN_ONLY,
    OPT_REAP,
    OPT_GRACE,
    OPT_WAIT,
};

static const struct cmd_option options[] = {
    { "job", OPT_JOB, required_argument, "ID", N_("the job that ended (default $SLURM_JOB_ID)") },
    { "gpus", OPT_GPUS, required_argument, "LIST",
      N_("the job's GPUs: device numbers (/dev/nvidiaN) or GPU UUIDs, comma-separated (default "
         "$SLURM_JOB_GPUS, else $CUDA_VISIBLE_DEVICES, else every GPU)") },
    { "reap", OPT_REAP, no_argument, NULL,
      N_("end the job's own leftover GPU processes (SIGTERM, then SIGKILL after --grace) with "
         "gpudoctor reap's safety checks") },
    { "grace", OPT_GRACE, required_argument, "DUR",
      N_("with --reap: how long a process has after SIGTERM (default 5s)") },
    { "wait", OPT_WAIT, required_argument, "DUR",
      N_("how long GPU memory may take to come back before the node is drained (default 10s)") },
    { "node", OPT_NODE, required_argument, "NAME",
      N_("Slurm node name (default $SLURMD_NODENAME, else the short host name)") },
    { "scontrol", OPT_SCONTROL, required_argument, "PATH",
      N_("scontrol to run (default: the first in $PATH, /usr/bin, /usr/local/bin)") },
    { "dry-run", OPT_DRY_RUN, no_argument, NULL,
      N_("say what would be done; reap and drain nothing") },
    { "warn-only", OPT_WARN_ONLY, no_argument, NULL,
      N_("report what stays held (stdout, syslog) but drain nothing") },
    { NULL, 0, 0, NULL, NULL },
};

struct opts {
    struct slurm_job_opts job;
    bool reap;
    int64_t grace_ms, wait_ms;
};

static int option(void *ctx, int key, char *arg)
{
    struct opts *o = ctx;
    int64_t *dur = key == OPT_GRACE ? &o->grace_ms : &o->wait_ms;

    switch (key) {
    case OPT_JOB:
        o->job.job = arg;
        return 0;
    case OPT_GPUS:
        o->job.gpus = arg;
        return 0;
    case OPT_NODE:
        o->job.node = arg;
        return 0;
    case OPT_SCONTROL:
        o->job.scontrol = arg;
        return 0;
    case OPT_DRY_RUN:
        o->job.dry_run = true;
        return 0;
    case OPT_WARN_ONLY:
        o->job.warn_only = true;
        return 0;
    case OPT_REAP:
        o->reap = true;
        return 0;
    case OPT_GRACE:
    case OPT_WAIT:
        if (!time_parse_duration_ms(arg, dur) || *dur > 600000) {
            cmd_error("slurm-epilog", "--%s: '%s' is not a duration up to 10 minutes (5s, 500ms)",
                      key == OPT_GRACE ? "grace" : "wait", arg);
            return EXIT_USAGE;
        }
        return 0;
    }
    return EXIT_USAGE;
}

static bool collected(const struct snapshot *s)
{
    const struct collector_status *nv = &s->collectors[COLLECTOR_NVML];
    const struct collector_status *pr = &s->collectors[COLLECTOR_PROCS];

    if (nv->state != CS_OK && nv->state != CS_PARTIAL) {
        printf("gpudoctor slurm-epilog: could not check: NVML %s%s%s\n",
               collector_state_names[nv->state], nv->detail ? ": " : "",
               nv->detail ? nv->detail : "");
        return false;
    }
    if (pr->state != CS_OK && pr->state != CS_PARTIAL) {
        printf("gpudoctor slurm-epilog: could not check whose the GPU processes are: processes "
               "%s\n",
               collector_state_names[pr->state]);
        return false;
    }
    return true;
}

/* What holds the job's GPUs in s: this job's and leftover processes, unaccounted memory. */
struct held {
    struct slurm_holder *h;
    size_t n_h;
    const struct slurm_holder **list; /* this job's and leftovers */
    size_t n;
    struct slurm_gpu_memory *mem;
    size_t n_mem;
};

static void held_free(struct held *x)
{
    slurm_holders_free(x->h, x->n_h);
    free(x->list);
    free(x->mem);
    memset(x, 0, sizeof(*x));
}

/* first: the epilog's first look, which describes a holder that has ended since (NULL: s is it) */
static void held_find(struct held *x, const struct snapshot *s, const struct snapshot *first,
                      const struct slurm_job_run *r, uint64_t min_bytes)
{
    memset(x, 0, sizeof(*x));
    x->n_h = slurm_gpu_holders(s, r->job, r->gpus, r->n_gpus, &x->h);
    if (first != NULL)
        slurm_holders_recall(x->h, x->n_h, first, r->job);
    x->list = xcalloc(x->n_h ? x->n_h : 1, sizeof(*x->list));
    for (size_t i = 0; i < x->n_h; i++) {
        if (x->h[i].kind != SLURM_HOLDER_RUNNING_JOB)
            x->list[x->n++] = &x->h[i];
    }
    x->n_mem = slurm_unaccounted(s, r->gpus, r->n_gpus, min_bytes, &x->mem);
}

/*
 * The job's own processes that use a GPU: NVML lists them on one of its GPUs, or they have a GPU
 * device open (a worker, a process NVML does not list), and their cgroup names the job.
 */
static size_t own_pids(const struct snapshot *s, const struct slurm_job_run *r,
                       const struct held *x, int32_t **out)
{
    size_t n = 0;

    *out = xcalloc(x->n_h + s->procs.n_procs + 1, sizeof(**out));
    for (size_t i = 0; i < x->n_h; i++) {
        if (x->h[i].kind == SLURM_HOLDER_THIS_JOB)
            (*out)[n++] = x->h[i].pid;
    }
    for (size_t i = 0; i < s->procs.n_procs; i++) {
        const struct proc *p = &s->procs.procs[i];
        bool device = false, dup = false;

        if (!proc_has(p, PROC_S_CGROUP) || p->slurm_job_id == NULL ||
            strcmp(p->slurm_job_id, r->job) != 0)
            continue;
        for (size_t k = 0; k < p->n_gpus; k++)
            device |= p->gpus[k].holds_device || p->gpus[k].nvml_listed;
        for (size_t k = 0; k < n; k++)
            dup |= (*out)[k] == p->pid;
        if (device && !dup)
            (*out)[n++] = p->pid;
    }
    return n;
}

/* Ends the job's own GPU processes through the reaper; says what happened. */
static void reap_own(struct cmd_front *f, const struct opts *o, const struct snapshot *s,
                     int32_t *pids, size_t n_pids)
{
    struct reap_policy pol = { 0 };
    struct reap_guard g;
    struct reap_plan plan = { 0 };
    struct facts_judgement *j = NULL;
    struct sysroot root = { -1, NULL };
    char *cause = NULL;
    size_t n_j;
    int proc_fd = -1;

    if (sysroot_open(&root, f->collect.root, &cause) != 0) {
        cmd_error("slurm-epilog", "%s", cause);
        free(cause);
        return;
    }
    proc_fd = openat(root.fd, "proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (proc_fd < 0) {
        cmd_error("slurm-epilog", "%s/proc: %s", f->collect.root, strerror(errno));
        sysroot_close(&root);
        return;
    }
    /* The job's user is another user: the epilog runs as root and is asked explicitly. */
    reap_guard_init(&g, true);
    pol.pids = pids;
    pol.n_pids = n_pids;
    pol.keep_protected = true; /* the job's processes, not named one by one by an operator */
    n_j = facts_judge_snapshot(s, NULL, &f->config.rules.th, &j);
    reap_plan_build(&plan, s, j, n_j, &pol, &g, proc_fd);
    for (size_t i = 0; i < plan.n; i++) {
        const struct reap_target *t = &plan.targets[i];
        struct reap_exec x = { o->grace_ms, KILL_WAIT_MS, &g, true };
        struct reap_result res = { 0 };

        if (o->job.dry_run) {
            printf("gpudoctor slurm-epilog: dry run: would %s pid %d (%s)\n",
                   t->disposition == REAP_SIGNAL ? "end" : "not touch", (int)t->pid,
                   t->why ? t->why : "");
            continue;
        }
        reap_execute(t, &x, &res);
        printf("gpudoctor slurm-epilog: pid %d: %s%s%s\n", (int)t->pid,
               reap_outcome_names[res.outcome], res.detail ? ": " : "",
               res.detail ? res.detail : "");
        reap_result_free(&res);
    }
    reap_plan_free(&plan);
    free(j);
    reap_guard_free(&g);
    close(proc_fd);
    sysroot_close(&root);
}

static int exec(int argc, char **argv)
{
    struct opts o = { .grace_ms = DEFAULT_GRACE_MS, .wait_ms = DEFAULT_WAIT_MS };
    struct slurm_job_run r = { 0 };
    struct cmd_front f;
    struct snapshot *s = NULL, *first = NULL;
    struct held x = { 0 };
    char gpus[160], line[512], *reason = NULL, *cause = NULL;
    uint64_t min_bytes;
    int64_t deadline;
    int rc;

    rc = cmd_front_parse(&f, &cmd_slurm_epilog, argc, argv, option, &o);
    if (rc != CMD_GO)
        goto out;
    i18n_off(); /* Slurm's log and reasons read English */
    rc = slurm_job_begin(&r, "slurm-epilog", &o.job);
    if (rc != 0)
        goto out;
    rc = EXIT_HEALTHY;
    f.no_progress = true;
    f.collect.only = (1u << COLLECTOR_NVML) | (1u << COLLECTOR_PROCS);
    min_bytes = (uint64_t)(f.config.rules.th.v[TH_MEM_UNACCOUNTED_MIB] * 1048576.0);
    s = cmd_front_snapshot(&f);
    if (s == NULL || !collected(s))
        goto done;
    slurm_job_gpus_of(&r, s, &o.job);
    slurm_job_gpu_text(&r, gpus, sizeof(gpus));
    held_find(&x, s, NULL, &r, min_bytes);
    if (o.reap) {
        int32_t *pids;
        size_t n = own_pids(s, &r, &x, &pids);

        if (n > 0)
            reap_own(&f, &o, s, pids, n);
        free(pids);
    }
    /* Memory comes back a moment after a process ends: look again until it has, or the wait
     * is over. */
    deadline = time_mono_ms() + o.wait_ms;
    while ((x.n > 0 || x.n_mem > 0) && !o.job.dry_run && time_mono_ms() < deadline) {
        struct snapshot *again;

        time_sleep_ms(POLL_MS);
        again = collect_snapshot(&f.collect, &cause);
        if (again == NULL) {
            cmd_error("slurm-epilog", "%s", cause);
            free(cause);
            cause = NULL;
            break;
        }
        if (first == NULL)
            first = s; /* kept: it knew the processes that have ended since */
        else
            snapshot_free(s);
        s = again;
        held_free(&x);
        if (!collected(s))
            goto done;
        held_find(&x, s, first, &r, min_bytes);
    }
    if (x.n == 0 && x.n_mem == 0) {
        printf("gpudoctor slurm-epilog: job %s: %s free\n", r.job, gpus);
        goto done;
    }
    for (size_t i = 0; i < x.n; i++) {
        slurm_holder_line(line, sizeof(line), x.list[i]);
        printf("gpudoctor slurm-epilog: job %s: %s: %s\n", r.job, line,
               x.list[i]->kind == SLURM_HOLDER_THIS_JOB ? "the job's own, still there"
                                                        : "left over");
    }
    for (size_t i = 0; i < x.n_mem; i++)
        printf("gpudoctor slurm-epilog: job %s: GPU %u: %.1f GiB held by no listed process\n",
               r.job, (unsigned)x.mem[i].gpu,
               (double)x.mem[i].unaccounted_bytes / (1024.0 * 1024 * 1024));
    reason = slurm_leftover_reason(s, x.list, x.n, x.mem, x.n_mem);
    openlog("gpudoctor", LOG_PID, LOG_DAEMON);
    syslog(LOG_WARNING, "slurm-epilog: job %s: %s", r.job, reason);
    closelog();
    if (o.job.warn_only) {
        printf("gpudoctor slurm-epilog: job %s: warn only: node not drained\n", r.job);
        goto done;
    }
    if (slurm_job_drain(&r, &o.job, reason) != 0)
        rc = EXIT_WARNING; /* then Slurm drains it for the failed epilog */
done:
    cmd_finish_stdout("slurm-epilog");
out:
    free(reason);
    held_free(&x);
    snapshot_free(s);
    snapshot_free(first);
    slurm_job_end(&r);
    cmd_front_free(&f);
    return rc;
}

const struct cmd cmd_slurm_epilog = {
    .name = "slurm-epilog",
    .synopsis = "[--reap] [options]",
    .summary = N_("Slurm Epilog: reap a job's leftovers, drain if memory stays held"),
    .about = N_("Slurm Epilog for GPU nodes: after job $SLURM_JOB_ID ends, finds its own\n"
                "processes (their cgroup names the job) still holding its GPUs ($SLURM_JOB_GPUS)\n"
                "and, with --reap, ends them with gpudoctor reap's safety checks (pinned with\n"
                "pidfd, never PID 1 or a protected process). Memory that stays held after --wait\n"
                "(the job's leftovers, another ended job's, or memory no process accounts for)\n"
                "drains the node with a reason naming it; slurm-check resumes it once it is free.\n"
                "In slurm.conf: Epilog=/usr/local/sbin/gpudoctor-slurm-epilog (docs/slurm.md).\n"),
    .options = options,
    .groups = CMD_G_COLLECT | CMD_G_CONFIG,
    .window_ms = 0,
    .epilogue =
        N_("Exit status: 0 the GPUs are free, or gpudoctor drained the node itself (also\n"
           "when it could not look); 1 memory stays held and the node could not be drained\n"
           "(Slurm then drains it for the failed epilog); 64 usage error.\n"),
    .exec = exec,
};
