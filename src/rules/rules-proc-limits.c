/*
 * Limits a job runs into on the host rather than on the GPU: file descriptors. PyTorch sends
 * every tensor a DataLoader worker shares as a descriptor (its default sharing strategy), so a
 * training process with the traditional soft limit of 1024 open files runs out of them.
 */
#include "data/cudaerr.h"
#include "rules/rule-impl.h"
#include "util/xalloc.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- proc.fd-limit ---- */

static void limit_words(char *buf, size_t size, uint64_t limit)
{
    if (limit == UINT64_MAX)
        snprintf(buf, size, "unlimited");
    else
        snprintf(buf, size, "%" PRIu64, limit);
}

/* The fixes for a job that runs out of descriptors; pid's own limit can be raised in place. */
static void fd_fixes(struct finding *f, int32_t pid, bool low)
{
    finding_fix(f, "ulimit -n   # in the job's shell or container: the soft limit it inherits");
    if (fix_pid_ok(pid))
        finding_fix(f, "grep 'Max open files' /proc/%d/limits   # the running job's", (int)pid);
    if (low)
        finding_fix(f, "ulimit -n \"$(ulimit -Hn)\"   # raise it to the hard limit, then start the "
                       "job from that shell");
    finding_fix(f, "# for good: LimitNOFILE= in the job's systemd unit, nofile in "
                   "/etc/security/limits.conf, docker run --ulimit nofile=65536:65536, "
                   "or Slurm's PropagateResourceLimits");
    finding_fix(f, "# or have PyTorch share tensors through files instead of descriptors: "
                   "torch.multiprocessing.set_sharing_strategy('file_system') at the start of "
                   "the program; fewer DataLoader workers (num_workers) need fewer");
}

/* The lowest soft limit known: a GPU process's, else gpudoctor's own; its pid or 0. */
static bool lowest_limit(const struct rule_ctx *ctx, uint64_t *limit, int32_t *pid)
{
    const struct snapshot *s = ctx->facts->snap;
    bool known = false;

    for (size_t i = 0; i < s->procs.n_procs; i++) {
        const struct proc *p = &s->procs.procs[i];

        if (p->n_gpus == 0 || !proc_ok(p, PROC_S_NOFILE))
            continue;
        if (!known || p->open_files_limit < *limit) {
            *limit = p->open_files_limit;
            *pid = p->pid;
        }
        known = true;
    }
    if (!known && host_valid(&s->host, HOST_S_NOFILE)) {
        *limit = s->host.open_files_limit;
        *pid = 0;
        known = true;
    }
    return known;
}

static void check_reported(const struct rule_ctx *ctx, struct findings *out)
{
    uint64_t limit = 0;
    int32_t pid = 0;
    bool known = lowest_limit(ctx, &limit, &pid);
    bool low = known && (double)limit <= th(ctx, TH_FD_LIMIT_LOW);
    /* about no process in particular: the one that failed is gone, the limit is its shell's */
    struct finding *f = finding_new(ctx, out, -1, -1);
    char l[24];

    finding_object(f, "open files");
    reported_texts(ctx, f, CUDAERR_FD_LIMIT);
    limit_words(l, sizeof(l), limit);
    if (low) {
        f->severity = SEV_CRITICAL;
        if (pid > 0)
            finding_title(f, "The job ran out of file descriptors: pid %d may open only %s files",
                          (int)pid, l);
        else
            finding_title(f,
                          "The job ran out of file descriptors: the open-files limit here is "
                          "only %s",
                          l);
    } else if (known) {
        finding_title(f, "The job ran out of file descriptors (open-files limit %s)", l);
    } else {
        finding_title(f, "The job ran out of file descriptors; the open-files limit was not read "
                         "here");
    }
    if (known && pid > 0)
        finding_evidence(f, "soft limit on open files of GPU process %d: %s (/proc/%d/limits)",
                         (int)pid, l, (int)pid);
    else if (known)
        finding_evidence(f,
                         "soft limit on open files where gpudoctor was started: %s (a job "
                         "started from the same shell or container has the same)",
                         l);
    else
        finding_evidence(f, "no open-files limit was read: run gpudoctor check --error where the "
                            "job was started, or ulimit -n there");
    if (low)
        finding_evidence(f,
                         "%.0f or less is the traditional default (systemd keeps the soft limit "
                         "at 1024 for old select() programs); PyTorch's workers pass each "
                         "shared tensor as a descriptor",
                         th(ctx, TH_FD_LIMIT_LOW));
    else if (known)
        finding_evidence(f, "a limit this high was still reached: many tensors in flight hold a "
                            "descriptor each (PyTorch's file_descriptor sharing strategy), or the "
                            "program leaks them");
    fd_fixes(f, pid, !known || low);
    f->impact = low ? 1.0 : 0.5;
}

static void check_fd_limit(const struct rule_ctx *ctx, struct findings *out)
{
    const struct snapshot *s = ctx->facts->snap;

    if (reported_find(ctx, CUDAERR_FD_LIMIT, NULL) >= 0) {
        check_reported(ctx, out);
        return;
    }
    for (size_t i = 0; i < s->procs.n_procs; i++) {
        const struct proc *p = &s->procs.procs[i];
        struct finding *f;
        char l[24];

        if (p->n_gpus == 0 || !proc_ok(p, PROC_S_NOFILE) || !proc_ok(p, PROC_S_OPEN_FILES) ||
            p->open_files_limit == UINT64_MAX || p->open_files_limit == 0 ||
            pct((double)p->open_files, (double)p->open_files_limit) < th(ctx, TH_FD_FULL_PCT))
            continue;
        limit_words(l, sizeof(l), p->open_files_limit);
        f = finding_new(ctx, out, -1, p->pid);
        finding_object(f, "open files");
        finding_title(f, "pid %d has %" PRIu32 " of its %s file descriptors open", (int)p->pid,
                      p->open_files, l);
        finding_evidence(f,
                         "%" PRIu32 " descriptors open (/proc/%d/fd), soft limit %s "
                         "(/proc/%d/limits): %.0f %%",
                         p->open_files, (int)p->pid, l, (int)p->pid,
                         pct((double)p->open_files, (double)p->open_files_limit));
        finding_evidence(f, "at the limit, opening a file, socket or shared tensor fails with "
                            "\"Too many open files\": PyTorch's DataLoader then stops");
        fd_fixes(f, p->pid, (double)p->open_files_limit <= th(ctx, TH_FD_LIMIT_LOW));
        f->impact = 0.5;
    }
}

const struct rule rule_proc_fd_limit = {
    .id = "proc.fd-limit",
    .severity = SEV_WARNING,
    .category = CAT_PROCESS,
    .title = N_("Job out of file descriptors (ulimit -n)"),
    .explanation = N_(
        "Every process may keep only so many files, sockets and pipes open at once: its soft "
        "limit on open files (ulimit -n, RLIMIT_NOFILE), 1024 by tradition. PyTorch passes every "
        "tensor a DataLoader worker shares to the training process as a file descriptor (its "
        "default sharing strategy on Linux), so a loader with many workers or large prefetching "
        "runs out: 'Too many open files. Communication with the workers is no longer possible', "
        "'received 0 items of ancdata'. Critical when the job's error says so and the limit is "
        "at the traditional default or lower; a warning when the limit is higher or was not "
        "read, and for a GPU process close to its limit without an error."),
    .detection =
        /* xgettext:no-c-format */ N_(
            "An error given with --error that the catalogue reads as running out of file "
            "descriptors, judged against the lowest soft limit on open files of the GPU "
            "processes (/proc/PID/limits), else gpudoctor's own (/proc/self/limits): critical at "
            "or below fd_limit_low. Without an error: a GPU process with open descriptors "
            "(/proc/PID/fd) at or above fd_full_pct of its limit."),
    .fix = N_("Raise the soft limit where the job starts (ulimit -n up to the hard limit; "
              "LimitNOFILE=, limits.conf or docker --ulimit nofile for good), or call "
              "torch.multiprocessing.set_sharing_strategy('file_system')."),
    .thresholds = THRESHOLDS(TH_FD_LIMIT_LOW, TH_FD_FULL_PCT),
    .check = check_fd_limit,
};
