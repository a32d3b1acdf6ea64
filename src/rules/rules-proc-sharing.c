/*
 * Sharing a GPU: compute processes of several owners on one GPU, every job piled on one GPU while
 * others idle, desktop programs next to compute jobs.
 */
#include "nvml/nvml-abi.h"
#include "rules/rule-impl.h"
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

        size_t n_jobs = 0;

        /*
         * Compute jobs: processes NVML lists as compute only. One listed as compute and graphics
         * (C+G: a browser, an Electron or Node desktop app) is desktop work itself.
         */
        for (size_t k = 0; k < v->n_holders; k++)
            n_jobs +=
                holder_compute(&v->holders[k]) && !(v->holders[k].type_mask & GPU_PROC_GRAPHICS);
        if (n_jobs == 0)
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
        finding_evidence(f, "%zu compute process%s on the same GPU", n_jobs,
                         n_jobs == 1 ? "" : "es");
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
    .detection = "a GPU with compute jobs (processes NVML lists as compute only: one listed as "
                 "compute and graphics is a desktop app itself) that NVML also lists "
                 "graphics-only processes on; known display servers and compositors (Xorg, "
                 "Xwayland, gnome-shell, kwin, ...) alone make it information.",
    .fix = "Disable hardware acceleration in browsers and editors or close them during jobs; move "
           "the display to another GPU (or the integrated one); or run the jobs on a GPU without a "
           "display (CUDA_VISIBLE_DEVICES).",
    .thresholds = NO_THRESHOLDS,
    .check = check_graphics,
};
