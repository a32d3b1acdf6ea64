/*
 * Limits a job runs into on the host rather than on the GPU: file descriptors and locked memory.
 * PyTorch sends every tensor a DataLoader worker shares as a descriptor (its default sharing
 * strategy), so a training process with the traditional soft limit of 1024 open files runs out
 * of them. InfiniBand and RDMA pin every buffer they register (ibv_reg_mr), which counts against
 * the locked-memory limit: NCCL's InfiniBand transport fails at its first registration under a
 * container's or a login's default of a few MiB.
 */
#include "data/cudaerr.h"
#include "rules/rule-impl.h"
#include "util/xalloc.h"

#include <inttypes.h>
#include <stddef.h>
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

/* A soft limit as the processes and the host records keep it. */
struct limit_kind {
    enum proc_slot proc_slot;
    size_t proc_member; /* offsetof(struct proc, ...) */
    enum host_slot host_slot;
    size_t host_member; /* offsetof(struct host_info, ...) */
};

static const struct limit_kind nofile = { PROC_S_NOFILE, offsetof(struct proc, open_files_limit),
                                          HOST_S_NOFILE,
                                          offsetof(struct host_info, open_files_limit) };
static const struct limit_kind memlock = { PROC_S_MEMLOCK, offsetof(struct proc, memlock_limit),
                                           HOST_S_MEMLOCK,
                                           offsetof(struct host_info, memlock_limit) };

/* The lowest soft limit of a kind known: a GPU process's, else gpudoctor's own; its pid or 0. */
static bool lowest_limit(const struct rule_ctx *ctx, const struct limit_kind *k, uint64_t *limit,
                         int32_t *pid)
{
    const struct snapshot *s = ctx->facts->snap;
    bool known = false;

    for (size_t i = 0; i < s->procs.n_procs; i++) {
        const struct proc *p = &s->procs.procs[i];
        uint64_t v;

        if (p->n_gpus == 0 || !proc_ok(p, k->proc_slot))
            continue;
        memcpy(&v, (const char *)p + k->proc_member, sizeof(v));
        if (!known || v < *limit) {
            *limit = v;
            *pid = p->pid;
        }
        known = true;
    }
    if (!known && host_valid(&s->host, k->host_slot)) {
        memcpy(limit, (const char *)&s->host + k->host_member, sizeof(*limit));
        *pid = 0;
        known = true;
    }
    return known;
}

static void check_reported(const struct rule_ctx *ctx, struct findings *out)
{
    uint64_t limit = 0;
    int32_t pid = 0;
    bool known = lowest_limit(ctx, &nofile, &limit, &pid);
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

/* ---- proc.memlock-limit ---- */

static void memlock_words(char *buf, size_t size, uint64_t limit)
{
    if (limit == UINT64_MAX)
        snprintf(buf, size, "unlimited");
    else
        render_bytes(buf, size, limit);
}

static void memlock_fixes(struct finding *f, int32_t pid)
{
    finding_fix(f, "ulimit -l   # in the job's shell or container: the soft limit it inherits, in "
                   "KiB");
    if (fix_pid_ok(pid))
        finding_fix(f, "grep 'Max locked memory' /proc/%d/limits   # the running job's", (int)pid);
    finding_fix(f, "# for good: memlock unlimited in /etc/security/limits.conf (soft and hard, "
                   "then a new login), LimitMEMLOCK=infinity in the unit that starts the job "
                   "(slurmd, the docker daemon), docker run --ulimit memlock=-1:-1, or Slurm's "
                   "PropagateResourceLimits");
}

static void check_memlock_limit(const struct rule_ctx *ctx, struct findings *out)
{
    uint64_t limit = 0;
    int32_t pid = 0;
    bool known, finite;
    struct finding *f;
    char l[24];

    if (reported_find(ctx, CUDAERR_MEMLOCK, NULL) < 0)
        return;
    known = lowest_limit(ctx, &memlock, &limit, &pid);
    finite = known && limit != UINT64_MAX;
    /* about no process in particular: the one that failed is gone, the limit is its shell's */
    f = finding_new(ctx, out, -1, -1);
    finding_object(f, "locked memory");
    reported_texts(ctx, f, CUDAERR_MEMLOCK);
    memlock_words(l, sizeof(l), limit);
    if (finite) {
        f->severity = SEV_CRITICAL;
        finding_title(f, "InfiniBand could not register memory: the locked-memory limit is %s", l);
    } else if (known) {
        finding_title(f, "InfiniBand could not register memory, with no locked-memory limit");
    } else {
        finding_title(f, "InfiniBand could not register memory; the locked-memory limit was not "
                         "read here");
    }
    if (known && pid > 0)
        finding_evidence(f, "soft limit on locked memory of GPU process %d: %s (/proc/%d/limits)",
                         (int)pid, l, (int)pid);
    else if (known)
        finding_evidence(f,
                         "soft limit on locked memory where gpudoctor was started: %s (a job "
                         "started from the same shell or container has the same)",
                         l);
    else
        finding_evidence(f, "no locked-memory limit was read: run gpudoctor check --error where "
                            "the job was started, or ulimit -l there");
    if (finite)
        finding_evidence(f, "every buffer registered for InfiniBand or RDMA is pinned and counts "
                            "against it; NCCL registers its buffers when it connects, and RDMA "
                            "guides ask for unlimited");
    else if (known)
        finding_evidence(f, "the limit is not what stopped it: the host may be short of memory, "
                            "or the adapter's driver refused the registration (for GPU memory, "
                            "nvidia-peermem must be loaded)");
    if (!known || finite)
        memlock_fixes(f, pid);
    else
        finding_fix(f, "sudo dmesg -T | grep -iE 'mlx|ib_|peermem' | tail -20   # what the "
                       "adapter's driver said");
    f->impact = finite ? 1.0 : 0.5;
}

const struct rule rule_proc_memlock_limit = {
    .id = "proc.memlock-limit",
    .severity = SEV_WARNING,
    .category = CAT_PROCESS,
    .title = N_("InfiniBand registration over ulimit -l"),
    .explanation = N_(
        "InfiniBand and RDMA pin every buffer they register (ibv_reg_mr) so that the adapter can "
        "reach it, and pinned memory counts against the process's soft limit on locked memory "
        "(ulimit -l, RLIMIT_MEMLOCK). A login's or a container's default is a few MiB, far "
        "less than NCCL's buffers: its InfiniBand transport then fails when it connects, with "
        "'Call to ibv_reg_mr failed with error Cannot allocate memory'. RDMA guides ask for the "
        "limit to be unlimited. Critical when the job's error says so and a finite limit is "
        "known; a warning when the limit was not read, or is unlimited (then something else "
        "refused the registration)."),
    .detection = N_("An error given with --error that the catalogue reads as an InfiniBand "
                    "memory registration that failed for lack of memory (NCCL's 'Call to "
                    "ibv_reg_mr ... failed with error Cannot allocate memory'), judged against "
                    "the lowest soft limit on locked memory of the GPU processes "
                    "(/proc/PID/limits), else gpudoctor's own (/proc/self/limits)."),
    .fix = N_("Raise the locked-memory limit where the job starts to unlimited (limits.conf "
              "memlock, LimitMEMLOCK=infinity in the unit that starts it, docker --ulimit "
              "memlock=-1:-1), then start the job again from there."),
    .thresholds = NO_THRESHOLDS,
    .check = check_memlock_limit,
};
