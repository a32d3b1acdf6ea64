/*
 * gpudoctor slurm-prolog: Slurm's Prolog for GPU nodes. Before a job starts, it refuses the job
 * when one of the job's GPUs is still held by another job's leftover process (or by memory no
 * process accounts for), and says which. Refusing is a non-zero exit status: Slurm then drains
 * the node and requeues the job, so gpudoctor first drains the node itself with a reason that
 * names the leftover, and slurm-check resumes it once the leftover is gone. When gpudoctor
 * cannot look (NVML or /proc unreadable), the job starts: the health check is what judges a
 * broken node, and a prolog that fails for its own reasons would drain every node.
 * docs/slurm.md describes the set-up.
 */
#include "cmd/cmd.h"
#include "cmd/slurm.h"
#include "rules/rules.h"
#include "util/xalloc.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

enum {
    OPT_JOB = OPT__COMMON_END,
    OPT_GPUS,
    OPT_NODE,
    OPT_SCONTROL,
    OPT_DRY_RUN,
    OPT_WARN_ONLY,
};

static const struct cmd_option options[] = {
    { "job", OPT_JOB, required_argument, "ID", N_("the job (default $SLURM_JOB_ID)") },
    { "gpus", OPT_GPUS, required_argument, "LIST",
      N_("the job's GPUs: device numbers (/dev/nvidiaN) or GPU UUIDs, comma-separated (default "
         "$SLURM_JOB_GPUS, else $CUDA_VISIBLE_DEVICES, else every GPU)") },
    { "node", OPT_NODE, required_argument, "NAME",
      N_("Slurm node name (default $SLURMD_NODENAME, else the short host name)") },
    { "scontrol", OPT_SCONTROL, required_argument, "PATH",
      N_("scontrol to run (default: the first in $PATH, /usr/bin, /usr/local/bin)") },
    { "dry-run", OPT_DRY_RUN, no_argument, NULL,
      N_("say what would be done and exit as it would; drain nothing") },
    { "warn-only", OPT_WARN_ONLY, no_argument, NULL,
      N_("report leftovers (stdout, syslog) but let the job start and drain nothing") },
    { NULL, 0, 0, NULL, NULL },
};

static int option(void *ctx, int key, char *arg)
{
    struct slurm_job_opts *o = ctx;

    switch (key) {
    case OPT_JOB:
        o->job = arg;
        return 0;
    case OPT_GPUS:
        o->gpus = arg;
        return 0;
    case OPT_NODE:
        o->node = arg;
        return 0;
    case OPT_SCONTROL:
        o->scontrol = arg;
        return 0;
    case OPT_DRY_RUN:
        o->dry_run = true;
        return 0;
    case OPT_WARN_ONLY:
        o->warn_only = true;
        return 0;
    }
    return EXIT_USAGE;
}

/* Whether the snapshot can tell whose the GPUs' processes are; says why not. */
static bool can_tell(const char *cmd, const struct snapshot *s)
{
    const struct collector_status *nv = &s->collectors[COLLECTOR_NVML];
    const struct collector_status *pr = &s->collectors[COLLECTOR_PROCS];

    if (nv->state != CS_OK && nv->state != CS_PARTIAL) {
        printf("gpudoctor %s: could not check: NVML %s%s%s\n", cmd,
               collector_state_names[nv->state], nv->detail ? ": " : "",
               nv->detail ? nv->detail : "");
        return false;
    }
    if (pr->state != CS_OK && pr->state != CS_PARTIAL) {
        printf("gpudoctor %s: could not check whose the GPU processes are: processes %s%s%s\n", cmd,
               collector_state_names[pr->state], pr->detail ? ": " : "",
               pr->detail ? pr->detail : "");
        return false;
    }
    return true;
}

static int exec(int argc, char **argv)
{
    struct slurm_job_opts o = { 0 };
    struct slurm_job_run r = { 0 };
    struct cmd_front f;
    struct snapshot *s = NULL;
    struct slurm_holder *h = NULL;
    const struct slurm_holder **left = NULL;
    struct slurm_gpu_memory *mem = NULL;
    size_t n_h = 0, n_left = 0, n_mem = 0;
    char gpus[160], line[512], *reason = NULL;
    int rc;

    rc = cmd_front_parse(&f, &cmd_slurm_prolog, argc, argv, option, &o);
    if (rc != CMD_GO)
        goto out;
    i18n_off(); /* Slurm's log and reasons read English */
    rc = slurm_job_begin(&r, "slurm-prolog", &o);
    if (rc != 0)
        goto out;
    rc = EXIT_HEALTHY; /* whatever goes wrong below, the job starts */
    f.no_progress = true;
    f.collect.only = (1u << COLLECTOR_NVML) | (1u << COLLECTOR_PROCS);
    s = cmd_front_snapshot(&f);
    if (s == NULL || !can_tell("slurm-prolog", s))
        goto done;
    slurm_job_gpus_of(&r, s, &o);
    slurm_job_gpu_text(&r, gpus, sizeof(gpus));
    n_h = slurm_gpu_holders(s, r.job, r.gpus, r.n_gpus, &h);
    left = xcalloc(n_h ? n_h : 1, sizeof(*left));
    for (size_t i = 0; i < n_h; i++) {
        if (h[i].kind == SLURM_HOLDER_LEFTOVER)
            left[n_left++] = &h[i];
    }
    n_mem = slurm_unaccounted(s, r.gpus, r.n_gpus,
                              (uint64_t)(f.config.rules.th.v[TH_MEM_UNACCOUNTED_MIB] * 1048576.0),
                              &mem);
    if (n_left == 0 && n_mem == 0) {
        printf("gpudoctor slurm-prolog: job %s: %s free of leftovers: start\n", r.job, gpus);
        goto done;
    }
    for (size_t i = 0; i < n_left; i++) {
        slurm_holder_line(line, sizeof(line), left[i]);
        printf("gpudoctor slurm-prolog: job %s: %s: left over\n", r.job, line);
    }
    for (size_t i = 0; i < n_mem; i++)
        printf("gpudoctor slurm-prolog: job %s: GPU %u: %.1f GiB held by no listed process\n",
               r.job, (unsigned)mem[i].gpu,
               (double)mem[i].unaccounted_bytes / (1024.0 * 1024 * 1024));
    reason = slurm_leftover_reason(s, left, n_left, mem, n_mem);
    openlog("gpudoctor", LOG_PID, LOG_DAEMON);
    syslog(LOG_WARNING, "slurm-prolog: job %s: %s%s", r.job, reason,
           o.warn_only ? " (warn only: the job starts)" : ": job refused");
    closelog();
    if (o.warn_only) {
        printf("gpudoctor slurm-prolog: job %s: warn only: starts anyway\n", r.job);
        goto done;
    }
    printf("gpudoctor slurm-prolog: job %s: refused: %s\n", r.job, reason);
    slurm_job_drain(&r, &o, reason); /* Slurm drains it anyway; ours names the leftover */
    rc = EXIT_WARNING;
done:
    /* Output that cannot be written is said on stderr; the verdict stands (slurmd keeps the
     * status, not the text). */
    cmd_finish_stdout("slurm-prolog");
out:
    free(reason);
    free(left);
    free(mem);
    slurm_holders_free(h, n_h);
    snapshot_free(s);
    slurm_job_end(&r);
    cmd_front_free(&f);
    return rc;
}

const struct cmd cmd_slurm_prolog = {
    .name = "slurm-prolog",
    .synopsis = "[options]",
    .summary = N_("Slurm Prolog: refuse a job whose GPU a leftover holds"),
    .about = "Slurm Prolog for GPU nodes: before job $SLURM_JOB_ID starts, looks at its GPUs\n"
             "($SLURM_JOB_GPUS). A process NVML lists there that belongs to no running job (an\n"
             "ended job's leftover, or a process outside Slurm), or memory no process accounts\n"
             "for, refuses the job: the node is drained with a reason naming it\n"
             "(\"" SLURM_LEFTOVER_PREFIX "3 held by leftover pid ...\"), and the exit status 1\n"
             "makes Slurm requeue the job. slurm-check resumes the node once the leftover is\n"
             "gone. When gpudoctor cannot look, the job starts.\n"
             "In slurm.conf: Prolog=/usr/local/sbin/gpudoctor-slurm-prolog (docs/slurm.md).\n",
    .options = options,
    .groups = CMD_G_COLLECT | CMD_G_CONFIG,
    .window_ms = 0,
    .epilogue =
        N_("Exit status: 0 the job may start (also when gpudoctor could not look, and with\n"
           "--warn-only), 1 refused: a leftover holds one of its GPUs (Slurm drains the node\n"
           "and requeues the job, held unless SchedulerParameters has\n"
           "nohold_on_prolog_fail), 64 usage error.\n"),
    .exec = exec,
};
