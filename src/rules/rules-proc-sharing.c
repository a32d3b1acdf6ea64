/*
 * Sharing a GPU: compute processes of several owners on one GPU, every job piled on one GPU while
 * others idle, desktop programs next to compute jobs.
 */
#include "nvml/nvml-abi.h"
#include "rules/rule-impl.h"
#include "util/strutil.h"
#include "util/xalloc.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- proc.shared-gpu ---- */

bool rules_owner_key(char *buf, size_t size, const struct proc *p)
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
    str_utf8_trim(buf); /* a name longer than buf: cut on a character */
    return true;
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

            mps |= (h->type_mask & GPU_PROC_MPS) != 0;
            if (!holder_compute(h))
                continue;
            n_procs++;
            if (!rules_owner_key(key, sizeof(key), h->p)) {
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
            const char *why = ctx->facts->procs_known ? N_("not visible: run as root")
                                                      : N_("processes collector not run");

            rule_skip_take(ctx, out, (int32_t)v->g->index,
                           TWICE("owners of GPU processes unknown (%s)", (why), (_(why))));
            continue;
        }
        if (n_owners < 2)
            continue;
        names[0] = '\0';
        for (size_t o = 0; o < n_owners && len < sizeof(names); o++)
            len += (size_t)snprintf(names + len, sizeof(names) - len, "%s%s", o ? ", " : "",
                                    owners[o]);
        str_utf8_trim(names);
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
    .title = N_("Several users or containers computing on one GPU"),
    .explanation = N_(
        "Compute processes of different users, containers or jobs run on the same GPU at the same "
        "time. The GPU time-slices between their contexts, so each runs slower than alone (often "
        "much slower: context switches flush caches), their memory competes, and new jobs fail "
        "with 'out of memory' because of fragmentation. Someone's job is 'stealing' the GPU. With "
        "MPS or MIG, sharing is deliberate and not reported."),
    .detection =
        N_("two or more compute processes on one GPU whose owners (container or job, else "
           "user) differ, on a GPU that was not idle (utilisation above gpu_idle_util_pct) "
           "and has no MPS process."),
    .fix = N_("Give each job its own GPU: CUDA_VISIBLE_DEVICES per job, or let the scheduler "
              "allocate GPUs (Slurm --gres=gpu:N, Kubernetes nvidia.com/gpu). Enforce it with "
              "nvidia-smi -i N -c EXCLUSIVE_PROCESS. For intended sharing use MPS or MIG."),
    .thresholds = THRESHOLDS(TH_GPU_IDLE_UTIL_PCT),
    .yields_to = YIELDS_TO("proc.pileup"),
    .explains =
        EXPLAINS({ "mem.job-oom", LINK_SAME_GPU, NULL,
                   N_("the other jobs on the GPU hold the memory it needed"), LINK_FIX_OWN }),
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
    .title = N_("Jobs piled on one GPU while others idle"),
    .explanation = N_(
        "Several compute jobs run on one GPU (usually GPU 0) while other GPUs of the machine have "
        "nothing to do. CUDA programs use the first visible GPU unless told otherwise, so jobs "
        "started without CUDA_VISIBLE_DEVICES (or a scheduler that sets it) all land on GPU 0 and "
        "share it, each running at a fraction of its speed."),
    .detection =
        N_("a GPU with at least pileup_min_procs compute processes while at least one other "
           "GPU has no compute process in NVML's list (a list NVML could not give is not an "
           "empty one) and stayed at or below gpu_idle_util_pct."),
    .fix =
        N_("Start each job on its own GPU (CUDA_VISIBLE_DEVICES=N), or let the scheduler assign "
           "GPUs. Multi-GPU jobs: torchrun with torch.cuda.set_device(local_rank) in every rank."),
    .thresholds = THRESHOLDS(TH_PILEUP_MIN_PROCS, TH_GPU_IDLE_UTIL_PCT),
    .check = check_pileup,
};

/* ---- proc.graphics-on-compute ---- */

static bool display_server(const struct proc *p)
{
    static const char *const names[] = {
        "Xorg",        "X",      "Xwayland", "gnome-shell", "kwin_x11",      "kwin_wayland",
        "plasmashell", "sway",   "weston",   "mutter",      "gdm-x-session", "cinnamon",
        "xfwm4",       "compiz", "Hyprland", NULL
    };
    const char *comm = p && p->comm ? p->comm : NULL;

    if (comm == NULL)
        return false;
    for (size_t i = 0; names[i]; i++) {
        if (strcmp(comm, names[i]) == 0)
            return true;
    }
    return false;
}

/* Graphics work on a GPU: every process NVML lists there as graphics (graphics-only or C+G). */
static bool holder_graphics(const struct facts_holder *h)
{
    return (h->type_mask & GPU_PROC_GRAPHICS) != 0;
}

/* What the graphics work on one GPU takes, as far as it is known. */
struct graphics_take {
    size_t n, n_mem_unknown, n_sm_unknown, n_servers;
    uint64_t bytes;   /* summed over the processes whose memory is known */
    uint32_t sm_pct;  /* summed over the processes with a per-process sample */
    bool share_valid; /* the GPU's memory size is known */
    double share_pct; /* bytes against the GPU's memory */
    const struct facts_holder *largest;
    char unknown[96]; /* pids whose memory NVML did not give */
};

static void graphics_take(const struct facts_gpu *v, struct graphics_take *t)
{
    size_t len = 0;

    memset(t, 0, sizeof(*t));
    for (size_t k = 0; k < v->n_holders; k++) {
        const struct facts_holder *h = &v->holders[k];

        if (!holder_graphics(h))
            continue;
        t->n++;
        t->n_servers += display_server(h->p);
        if (h->used_valid) {
            t->bytes += h->used_bytes;
            if (t->largest == NULL || h->used_bytes > t->largest->used_bytes)
                t->largest = h;
        } else {
            t->n_mem_unknown++;
            if (len < sizeof(t->unknown))
                len += (size_t)snprintf(t->unknown + len, sizeof(t->unknown) - len, "%s%" PRIu32,
                                        len ? ", " : "", h->pid);
        }
        if (h->np && (h->np->valid & (1u << GPU_PROC_S_UTIL)))
            t->sm_pct += h->np->sm_util_pct;
        else
            t->n_sm_unknown++;
    }
    if (gpu_valid(v->g, GPU_S_MEM_TOTAL) && v->g->mem_total_bytes > 0) {
        t->share_valid = true;
        t->share_pct = 100.0 * (double)t->bytes / (double)v->g->mem_total_bytes;
    }
}

/* Whether holder a (at index ia) comes before b (at ib): more memory, known before unknown. */
static bool graphics_before(const struct facts_holder *a, size_t ia, const struct facts_holder *b,
                            size_t ib)
{
    if (a->used_valid != b->used_valid)
        return a->used_valid;
    if (a->used_valid && a->used_bytes != b->used_bytes)
        return a->used_bytes > b->used_bytes;
    return ia < ib;
}

/* A GPU with no graphics process that runs jobs instead, or -1. */
static int32_t graphics_free_gpu(const struct rule_ctx *ctx, const struct facts_gpu *self)
{
    for (size_t i = 0; i < ctx->facts->n_gpus; i++) {
        const struct facts_gpu *v = &ctx->facts->gpus[i];
        bool graphics = false;

        if (v == self || v->g->handle_rc != 0 || !gpu_valid(v->g, GPU_S_PROCESSES))
            continue;
        for (size_t k = 0; k < v->n_holders; k++)
            graphics |= holder_graphics(&v->holders[k]);
        if (!graphics)
            return (int32_t)v->g->index;
    }
    return -1;
}

static void check_graphics(const struct rule_ctx *ctx, struct findings *out)
{
    for (size_t i = 0; i < ctx->facts->n_gpus; i++) {
        const struct facts_gpu *v = &ctx->facts->gpus[i];
        const double floor_mib = th(ctx, TH_GRAPHICS_MEM_MIN_MIB);
        const double mem_pct = th(ctx, TH_GRAPHICS_MEM_PCT), sm_pct = th(ctx, TH_GRAPHICS_SM_PCT);
        struct graphics_take t;
        size_t n_jobs = 0, len = 0;
        bool mem_big, mem_small, sm_big;
        char b[16], total[16], names[160], sm[48] = "";
        int32_t other;
        struct finding *f;

        /*
         * Compute jobs: processes NVML lists as compute only. One listed as compute and graphics
         * (C+G: a browser, an Electron or Node desktop app, a 3D program) is graphics work itself.
         */
        for (size_t k = 0; k < v->n_holders; k++)
            n_jobs += holder_compute(&v->holders[k]) && !holder_graphics(&v->holders[k]);
        if (n_jobs == 0)
            continue;
        graphics_take(v, &t);
        if (t.n == 0)
            continue;
        /*
         * Judged by what the graphics take, not by their presence: memory past both the share
         * and the floor, or SM time past its share. What is known can prove a large take; only
         * the whole can prove a small one.
         */
        mem_big = t.share_valid && (double)t.bytes >= floor_mib * MIB && t.share_pct >= mem_pct;
        mem_small = t.n_mem_unknown == 0 &&
                    ((double)t.bytes < floor_mib * MIB || (t.share_valid && t.share_pct < mem_pct));
        sm_big = t.n_sm_unknown < t.n && (double)t.sm_pct >= sm_pct;
        if (!mem_big && !sm_big && !mem_small) {
            rule_skip(ctx, out, (int32_t)v->g->index,
                      "%s%s%s%s%s: what the graphics take beside the compute jobs is not known",
                      t.n_mem_unknown ? "GPU memory of graphics pid " : "",
                      t.n_mem_unknown ? t.unknown : "",
                      t.n_mem_unknown ? " not reported by NVML" : "",
                      t.n_mem_unknown && !t.share_valid ? ", " : "",
                      t.share_valid ? "" : "mem_total_bytes unknown");
            continue;
        }
        /* The graphics processes by the memory they hold, largest first (unknown last). */
        names[0] = '\0';
        for (size_t m = 0; m < t.n && len < sizeof(names); m++) {
            const struct facts_holder *next = NULL;
            size_t rank = 0;

            for (size_t k = 0; k < v->n_holders; k++) {
                const struct facts_holder *h = &v->holders[k];
                size_t bigger = 0;

                if (!holder_graphics(h))
                    continue;
                for (size_t o = 0; o < v->n_holders; o++)
                    bigger += o != k && holder_graphics(&v->holders[o]) &&
                              graphics_before(&v->holders[o], o, h, k);
                if (bigger == m)
                    next = h;
                rank += bigger == m;
            }
            if (next == NULL || rank != 1)
                break;
            len += (size_t)snprintf(names + len, sizeof(names) - len, "%s%s", len ? ", " : "",
                                    next->p && next->p->comm ? next->p->comm : "?");
        }
        str_utf8_trim(names);
        render_bytes(b, sizeof(b), t.bytes);
        if (t.n_sm_unknown < t.n)
            snprintf(sm, sizeof(sm), ", SM %" PRIu32 " %%", t.sm_pct);
        f = finding_new(ctx, out, (int32_t)v->g->index, -1);
        if (mem_big || sm_big) {
            if (mem_big)
                finding_title(f,
                              "Graphics on GPU %" PRIu32 " take %s (%.0f %% of its memory)%s "
                              "beside compute jobs (%s)",
                              v->g->index, b, t.share_pct, sm, names);
            else
                finding_title(f,
                              "Graphics on GPU %" PRIu32 " take SM %" PRIu32 " %% beside compute "
                              "jobs (%s, %s)",
                              v->g->index, t.sm_pct, names, b);
            f->impact = 0.2 + (mem_big ? t.share_pct / 100.0 : 0) + (sm_big ? t.sm_pct / 100.0 : 0);
        } else {
            f->severity = SEV_INFO;
            finding_title(f,
                          "GPU %" PRIu32 " also drives the desktop (%s): %s%s beside compute jobs",
                          v->g->index, names, b, sm);
            f->impact = 0;
        }
        for (size_t k = 0; k < v->n_holders; k++) {
            const struct facts_holder *h = &v->holders[k];
            char label[160], util[32] = "", held[24] = "memory not reported";

            if (!holder_graphics(h))
                continue;
            proc_desc(label, sizeof(label), ctx, (int32_t)h->pid);
            if (h->used_valid)
                render_bytes(held, sizeof(held), h->used_bytes);
            if (h->np && (h->np->valid & (1u << GPU_PROC_S_UTIL)))
                snprintf(util, sizeof(util), ", SM %" PRIu32 " %%", h->np->sm_util_pct);
            const char *both = holder_compute(h) ? N_(" (compute and graphics)") : "";
            const char *ds = display_server(h->p) ? N_(" (display server)") : "";

            finding_evidence_take(
                f, TWICE("graphics %s: %s%s%s%s", (label, held, util, both, ds),
                         (label, held, util, *both ? _(both) : "", *ds ? _(ds) : "")));
        }
        render_bytes(b, sizeof(b), t.bytes);
        if (t.share_valid) {
            render_bytes(total, sizeof(total), v->g->mem_total_bytes);
            finding_evidence(f,
                             "graphics hold %s%s of %s (%.1f %%); a meaningful share is %g %% "
                             "and at least %g MiB (graphics_mem_pct, graphics_mem_min_mib)",
                             t.n_mem_unknown ? "at least " : "", b, total, t.share_pct, mem_pct,
                             floor_mib);
        }
        if (t.n_sm_unknown == t.n)
            finding_evidence(f, "no per-process SM samples: the graphics' share of GPU time is "
                                "not known");
        else
            finding_evidence(f, "graphics SM %s%" PRIu32 " %% (graphics_sm_pct %g %%)",
                             t.n_sm_unknown ? "at least " : "", t.sm_pct, sm_pct);
        finding_evidence(f, "%zu compute process%s on the same GPU", n_jobs,
                         n_jobs == 1 ? "" : "es");
        if (f->severity == SEV_INFO) {
            finding_fix(f, "# nothing to do for its memory: a display and desktop this size are "
                           "normal on a workstation GPU that also computes");
            if (t.n_sm_unknown > 0)
                finding_fix(f,
                            "nvidia-smi pmon -i %" PRIu32 " -c 1   # its SM share: graphics "
                            "rows (type G) should stay at a few %%",
                            v->g->index);
            continue;
        }
        if (t.largest && display_server(t.largest->p) && t.largest->used_bytes >= floor_mib * MIB)
            finding_fix(f, "# the display server or compositor itself holds the most: log out and "
                           "in (or restart the session) to release it; one that keeps growing "
                           "leaks");
        finding_fix(f, "# 3D programs, browsers, video players: close them, or turn off their "
                       "hardware acceleration, while jobs run");
        other = graphics_free_gpu(ctx, v);
        if (other >= 0)
            finding_fix(f,
                        "# or run the jobs on GPU %d, which has no graphics work: "
                        "CUDA_VISIBLE_DEVICES=%d <command>",
                        other, other);
        finding_fix(f, "# run the display on another GPU (or the integrated one) and keep this "
                       "one for compute");
        if (t.n_sm_unknown == t.n)
            finding_fix(f,
                        "nvidia-smi pmon -i %" PRIu32 " -c 1   # SM share of every process, "
                        "graphics included",
                        v->g->index);
    }
}

const struct rule rule_proc_graphics_on_compute = {
    .id = "proc.graphics-on-compute",
    .severity = SEV_WARNING,
    .category = CAT_PROCESS,
    .title = N_("Graphics taking a large share of a compute GPU"),
    .explanation =
        N_("Graphics programs (a display server or compositor, a 3D program, a browser with "
           "hardware acceleration, a video player) use the same GPU as compute jobs. A "
           "workstation's display and desktop holding a few hundred MiB is normal and reported as "
           "information only. When the graphics take a meaningful share (several GiB of memory a "
           "job could use, or a share of the SM time the jobs are sliced with), the jobs run "
           "slower or run out of memory and the display stutters. A desktop with no compute job "
           "is not reported."),
    .detection = N_("a GPU with compute jobs (processes NVML lists as compute only) on which NVML "
                    "also lists graphics processes (graphics-only, or compute and graphics): a "
                    "warning when they hold at least graphics_mem_pct of the GPU's memory and at "
                    "least graphics_mem_min_mib, or their per-process SM samples add up to "
                    "graphics_sm_pct; information otherwise. A graphics process whose memory NVML "
                    "does not report (or a GPU whose memory size is unknown) leaves a small take "
                    "unproven: the rule says what it could not judge instead."),
    .fix = N_("Close 3D programs and browsers, or turn off their hardware acceleration, while jobs "
              "run; restart a compositor that has grown; move the display to another GPU (or the "
              "integrated one); or run the jobs on a GPU without graphics work "
              "(CUDA_VISIBLE_DEVICES)."),
    .thresholds = THRESHOLDS(TH_GRAPHICS_MEM_PCT, TH_GRAPHICS_MEM_MIN_MIB, TH_GRAPHICS_SM_PCT),
    .explains = EXPLAINS({ "mem.job-oom", LINK_SAME_GPU, NULL,
                           N_("the graphics hold memory the job needed"), LINK_FIX_OWN }),
    .check = check_graphics,
};
