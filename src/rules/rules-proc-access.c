/*
 * Settings that keep CUDA programs off a GPU, or send them to the wrong one: a compute mode that
 * admits nobody or one process, CUDA_VISIBLE_DEVICES naming a missing or busy GPU, MIG enabled
 * without an instance.
 */
#include "data/cudaerr.h"
#include "nvml/nvml-abi.h"
#include "rules/rule-impl.h"
#include "util/strutil.h"
#include "util/xalloc.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- proc.compute-mode ---- */

/*
 * An exclusive GPU with no compute process in sight but memory in use as a CUDA context takes:
 * the holder is there, invisible from here (another PID namespace, a container, or a process
 * list that was not read), and every new CUDA program gets 'busy or unavailable'.
 */
static bool hidden_holder(const struct rule_ctx *ctx, struct findings *out,
                          const struct facts_gpu *v, const char *mode)
{
    const struct gpu *g = v->g;
    char used[16];
    struct finding *f;

    if (!need_gpu(ctx, out, g, GPU_S_MEM_USED) ||
        (double)g->mem_used_bytes < th(ctx, TH_CONTEXT_MIN_MIB) * MIB)
        return false;
    render_bytes(used, sizeof(used), g->mem_used_bytes);
    f = finding_new(ctx, out, (int32_t)g->index, -1);
    finding_title(f,
                  "GPU %" PRIu32 " is %s and held by a process not visible from here (%s): "
                  "other CUDA programs get 'busy or unavailable'",
                  g->index, mode, used);
    finding_evidence(f, "compute mode: %s (one context at a time)", mode);
    const char *partial = ctx->facts->snap->collectors[COLLECTOR_NVML].state == CS_OK
                              ? ""
                              : N_(" (NVML's process list was not fully read)");
    const char *computing = g->util_gpu_pct > 0 ? N_(": the hidden holder is computing") : "";

    finding_evidence_take(f,
                          TWICE("%s of memory in use (a CUDA context is there: %.0f MiB or "
                                "more) but no compute process is listed%s",
                                (used, th(ctx, TH_CONTEXT_MIN_MIB), partial),
                                (used, th(ctx, TH_CONTEXT_MIN_MIB), *partial ? _(partial) : "")));
    if (gpu_valid(g, GPU_S_UTIL_GPU))
        finding_evidence_take(f, TWICE("utilisation %" PRIu32 " %%%s", (g->util_gpu_pct, computing),
                                       (g->util_gpu_pct, *computing ? _(computing) : "")));
    finding_evidence(f, "the holder runs in another PID namespace (a container, another job's "
                        "namespace) or is a process this snapshot did not list");
    finding_fix(f,
                "sudo fuser -v /dev/nvidia%" PRIu32 "   # on the host, not in a container: "
                "who has the GPU open",
                gpu_dev_minor(g));
    finding_fix(f,
                "nvidia-smi -i %" PRIu32 " --query-compute-apps=pid,used_memory --format=csv   "
                "# on the host: the holder's host pid",
                g->index);
    finding_fix(f, "# map a host pid to its container or job: cat /proc/PID/cgroup");
    finding_fix(f,
                "sudo nvidia-smi -i %" PRIu32 " -c DEFAULT   # or let several processes share "
                "it",
                g->index);
    f->impact = 0.3 + (double)g->mem_used_bytes / (1024.0 * MIB) / 80.0;
    return true;
}

/*
 * Exclusive GPUs on which no holder can be seen (none listed, too little memory in use to show
 * a context), when the user's program was refused a GPU: the refusal is the process the rule
 * waits to see failing. The holder may be the job's own first process (several processes of one
 * job on one exclusive GPU), a process in another PID namespace, or one that has ended since.
 */
static void refused_without_holder(const struct rule_ctx *ctx, struct findings *out,
                                   const uint32_t *gpus, size_t n, const char *mode)
{
    const struct snapshot *s = ctx->facts->snap;
    const struct cudaerr_info *m = NULL;
    ssize_t r = reported_find(ctx, CUDAERR_BUSY, &m);
    bool thread = mode != NULL && strcmp(mode, "exclusive_thread") == 0;
    const char *who = thread ? N_("one thread at a time") : N_("one process at a time");
    char list[96] = "";
    struct finding *f;

    if (r < 0 || n == 0)
        return;
    for (size_t i = 0, at = 0; i < n && at < sizeof(list); i++)
        at += (size_t)snprintf(list + at, sizeof(list) - at, "%s%" PRIu32, i ? ", " : "", gpus[i]);
    f = finding_new(ctx, out, n == 1 ? (int32_t)gpus[0] : -1, -1);
    if (n == 1)
        finding_title_take(f,
                           TWICE("GPU %s is %s and CUDA refused the program a GPU: %s may use it",
                                 (list, mode, who), (list, mode, _(who))));
    else
        finding_title_take(f, TWICE("GPUs %s are %s and CUDA refused the program a GPU: %s may use "
                                    "each",
                                    (list, mode, who), (list, mode, _(who))));
    finding_evidence(f, "the error given: \"%s\" (%s)", s->reported.errors[r].text, m->name);
    finding_evidence(f, "compute mode: %s (one context at a time)", mode);
    if (thread)
        finding_evidence(f, "no holder is visible here: another thread of the same program is "
                            "enough to hold an exclusive_thread GPU");
    else
        finding_evidence(f, "no holder is visible here: the job's own first process, a process in "
                            "another PID namespace (a container, another job), or one that has "
                            "ended since");
    finding_fix(f, "nvidia-smi --query-compute-apps=pid,gpu_uuid,used_memory --format=csv   # on "
                   "the host: who holds it now");
    if (thread)
        finding_fix(f, "# or use the GPU from one thread of the program only");
    else
        finding_fix(f, "# one GPU per process: start each process with its own "
                       "CUDA_VISIBLE_DEVICES, or use one process per GPU (torchrun "
                       "--nproc_per_node=<GPUs>)");
    if (n == 1)
        finding_fix(f,
                    "sudo nvidia-smi -i %" PRIu32 " -c DEFAULT   # or let several processes "
                    "share it",
                    gpus[0]);
    else
        finding_fix(f, "sudo nvidia-smi -c DEFAULT   # or let several processes share every GPU");
    f->impact = 0.5;
}

static void check_compute_mode(const struct rule_ctx *ctx, struct findings *out)
{
    const struct cudaerr_info *refusal = NULL;
    bool refused = reported_find(ctx, CUDAERR_BUSY, &refusal) >= 0;
    uint32_t unheld[64];
    size_t n_unheld = 0;
    const char *unheld_mode = NULL;

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
            /* Prohibited is how an admin fences a GPU (suspected faulty, kept from the
             * scheduler): opening it blindly may put jobs back on a bad GPU. */
            finding_fix(f,
                        "sudo nvidia-smi -i %" PRIu32 " -c DEFAULT   # only if nobody set it on "
                        "purpose: Prohibited often fences a GPU; ask the admins, check the boot "
                        "scripts",
                        g->index);
            f->impact = 1.0;
            continue;
        }
        if (v->n_compute == 0) {
            /* One finding for them all: the error does not say which GPU refused it. */
            if (!hidden_holder(ctx, out, v, mode) && n_unheld < ARRAY_SIZE(unheld) &&
                (unheld_mode == NULL || strcmp(unheld_mode, mode) == 0)) {
                unheld[n_unheld++] = g->index;
                unheld_mode = mode;
            }
            continue;
        }
        for (size_t k = 0; k < v->n_holders; k++)
            blocked +=
                v->holders[k].np == NULL && v->holders[k].pg && v->holders[k].pg->holds_device;
        f = finding_new(ctx, out, (int32_t)g->index, -1);
        finding_title(f,
                      "GPU %" PRIu32 " is %s and taken: other CUDA programs get 'all "
                      "CUDA-capable devices are busy or unavailable'",
                      g->index, mode);
        if (blocked == 0 && !refused)
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
        if (blocked == 0 && refused)
            finding_evidence(f, "CUDA refused a program a GPU: %s (the error given)",
                             refusal->name);
        finding_fix(f, "# or keep exclusive mode and start other jobs on other GPUs");
        f->impact = 0.3;
    }
    refused_without_holder(ctx, out, unheld, n_unheld, unheld_mode);
}

const struct rule rule_proc_compute_mode = {
    .id = "proc.compute-mode",
    .severity = SEV_WARNING,
    .category = CAT_PROCESS,
    .title = N_("Compute mode keeps CUDA programs off a GPU"),
    .explanation = N_(
        "A GPU's compute mode limits who may create a CUDA context on it. 'Prohibited' allows "
        "nobody; 'exclusive process' allows one process at a time. Any other program then fails "
        "at start-up with 'all CUDA-capable devices are busy or unavailable' "
        "(cudaErrorDevicesUnavailable), "
        "which looks like a broken GPU but is a setting. Clusters set exclusive mode on purpose; "
        "it is a warning when a process is seen failing to get the GPU (a process with the "
        "device open but no context, or the error given with --error), information otherwise. "
        "When no process holding the GPU can be seen but its memory is in use, the holder is in "
        "another PID namespace (a container, another job) or was not listed: new programs fail "
        "while nothing seems to use the GPU, so that is a warning, with how to find the holder. "
        "So is an exclusive GPU with no holder in sight when the error given says CUDA refused "
        "a GPU: often the job's own processes share one exclusive GPU, and every one after the "
        "first is refused."),
    .detection =
        N_("compute mode prohibited; or exclusive_process / exclusive_thread with a compute "
           "process on the GPU (a warning when another process has /dev/nvidiaN open "
           "without a context, or when --error gave a refusal: CUDA 46 or 216); or exclusive "
           "with no compute process visible and memory used at or above context_min_mib (a "
           "warning); or exclusive with no holder visible and --error giving a refusal (one "
           "warning for all such GPUs)."),
    .fix = N_("sudo nvidia-smi -i N -c DEFAULT allows sharing again; it lasts until reboot (and, "
              "without persistence mode, until the GPU is next de-initialised), so a mode that "
              "comes back is set by a boot script or the scheduler. Prohibited is often set on "
              "purpose to fence a GPU: ask the admins and check the boot scripts before opening "
              "it. Or keep the mode and send other jobs to other GPUs."),
    .thresholds = THRESHOLDS(TH_CONTEXT_MIN_MIB),
    .explains = EXPLAINS({ "reported.devices-unavailable", LINK_ANY, NULL,
                           N_("an exclusive GPU held by another process is \"busy or "
                              "unavailable\""),
                           LINK_FIX_OWN }),
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
    bool known = rules_owner_key(mine, sizeof(mine), p);
    size_t n = 0;

    for (size_t k = 0; k < v->n_holders; k++) {
        const struct facts_holder *h = &v->holders[k];

        if (!holder_compute(h) || h->pid == (uint32_t)p->pid)
            continue;
        /* An owner we cannot see counts as someone else. */
        n += !known || !rules_owner_key(theirs, sizeof(theirs), h->p) || strcmp(mine, theirs) != 0;
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

/*
 * Whether the process may read CUDA_VISIBLE_DEVICES against other indices than NVML's: inside a
 * container or a Slurm job with constrained devices, index 0 is the first GPU it was given.
 */
static bool cvd_relative(const struct proc *p)
{
    if (proc_ok(p, PROC_S_CGROUP) && (p->container_id || p->slurm_job_id || p->pod_uid))
        return true;
    return proc_ok(p, PROC_S_NS_DEPTH) && p->ns_depth > 0;
}

/*
 * The GPUs (NVML indices) the process uses, when CUDA_VISIBLE_DEVICES names only indices of GPUs
 * that exist and the process uses none of them: CUDA numbered the GPUs otherwise than nvidia-smi
 * (fastest first unless CUDA_DEVICE_ORDER=PCI_BUS_ID). Returns how many it uses there, 0 when the
 * pattern does not hold.
 */
static size_t cvd_elsewhere(const struct rule_ctx *ctx, const struct proc *p, int32_t *used,
                            size_t cap)
{
    char *list = xstrdup(p->cuda_visible_devices), *save = NULL;
    uint64_t named = 0;
    size_t n = 0;
    bool ok = true;

    for (char *tok = strtok_r(list, ",", &save); tok && ok; tok = strtok_r(NULL, ",", &save)) {
        uint32_t idx;

        tok = (char *)str_ltrim(str_rtrim(tok));
        ok = str_to_u32(tok, 10, &idx) && idx < 64 && facts_gpu_find(ctx->facts, idx);
        if (ok)
            named |= UINT64_C(1) << idx;
    }
    free(list);
    if (!ok || named == 0 || cvd_relative(p))
        return 0;
    for (size_t k = 0; k < p->n_gpus; k++) {
        const struct proc_gpu *pg = &p->gpus[k];

        if (!(pg->valid & (UINT64_C(1) << PROC_GPU_S_INDEX)) ||
            !(pg->holds_device || pg->nvml_listed))
            continue;
        if (pg->gpu_index < 64 && (named & (UINT64_C(1) << pg->gpu_index)))
            return 0; /* it does use a GPU it names */
        if (n < cap)
            used[n++] = (int32_t)pg->gpu_index;
    }
    return n;
}

static void report_elsewhere(const struct rule_ctx *ctx, struct findings *out, const struct proc *p,
                             const char *label, const int32_t *used, size_t n)
{
    struct finding *f = finding_new(ctx, out, used[0], p->pid);

    finding_title(f,
                  "pid %d (%s): CUDA_VISIBLE_DEVICES=%s, but it runs on GPU %" PRId32
                  "%s: CUDA numbers GPUs otherwise",
                  p->pid, label, p->cuda_visible_devices, used[0], n > 1 ? " and others" : "");
    for (size_t k = 0; k < n; k++) {
        const struct facts_gpu *v = facts_gpu_find(ctx->facts, (uint32_t)used[k]);

        finding_evidence(f,
                         "it has GPU %" PRId32 " open, which its CUDA_VISIBLE_DEVICES does "
                         "not name",
                         used[k]);
        if (v && others_on(v, p) > 0)
            rules_holder_evidence(ctx, f, v, 4);
    }
    finding_evidence(f, "CUDA numbers GPUs fastest first unless CUDA_DEVICE_ORDER=PCI_BUS_ID; "
                        "nvidia-smi and NVML number them by PCI address, so an index can mean "
                        "another GPU (and another user's)");
    finding_fix(f, "nvidia-smi -L   # the GPUs and their UUIDs");
    finding_fix(f, "# restart it as CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=<index>, "
                   "or name the GPU by UUID");
    f->impact = 0.5;
}

/*
 * An error given with --error that says CUDA (or PyTorch) found no GPU, on a machine whose GPUs
 * NVML lists: the job's CUDA_VISIBLE_DEVICES most likely names none of them. The job's
 * environment is not seen, so the finding says "probably" and what else it could be.
 */
static void reported_no_device(const struct rule_ctx *ctx, struct findings *out)
{
    const struct snapshot *s = ctx->facts->snap;
    size_t n = ctx->facts->n_gpus;

    for (size_t i = 0; i < s->reported.n_errors && n > 0; i++) {
        const struct cudaerr_info *m = cudaerr_match(s->reported.errors[i].text);
        struct finding *f;

        if (m == NULL || m->kind != CUDAERR_NO_DEVICE)
            continue;
        f = finding_new(ctx, out, -1, -1);
        finding_title(f,
                      "CUDA found no GPU where NVML lists %zu: the job's CUDA_VISIBLE_DEVICES "
                      "probably names GPUs that do not exist here",
                      n);
        finding_evidence(f, "the error given: \"%s\" (%s)", s->reported.errors[i].text, m->name);
        if (n == 1)
            finding_evidence(f, "this machine has 1 GPU (NVML index 0): an index "
                                "CUDA_VISIBLE_DEVICES names must be 0, or the GPU's UUID");
        else
            finding_evidence(f,
                             "this machine has %zu GPUs (NVML indices 0-%zu): an index "
                             "CUDA_VISIBLE_DEVICES names must be one of them, or a GPU's UUID",
                             n, n - 1);
        finding_evidence(f, "the job's environment was not seen here: other causes are a "
                            "container started without GPUs, or CUDA_VISIBLE_DEVICES empty or -1");
        finding_fix(f, "nvidia-smi -L   # the GPUs and UUIDs that exist");
        finding_fix(f, "# in the job's shell: echo \"$CUDA_VISIBLE_DEVICES\"; start it with an "
                       "index of the list above (CUDA_VISIBLE_DEVICES=0) or a UUID");
        f->impact = 0.5;
    }
}

static void check_cvd(const struct rule_ctx *ctx, struct findings *out)
{
    reported_no_device(ctx, out);
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
        proc_label(label, sizeof(label), ctx, p->pid);
        {
            int32_t used[8];
            size_t n = cvd_elsewhere(ctx, p, used, sizeof(used) / sizeof(used[0]));

            if (n > 0) {
                report_elsewhere(ctx, out, p, label, used, n);
                continue;
            }
        }
        list = xstrdup(p->cuda_visible_devices);
        for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
            const struct facts_gpu *v;
            struct finding *f;

            tok = (char *)str_ltrim(str_rtrim(tok));
            if (*tok == '\0' || strcmp(tok, "-1") == 0 || str_starts(tok, "MIG-"))
                break; /* hides every GPU on purpose, or names a MIG device we do not map */
            if (cvd_relative(p) && str_to_u32(tok, 10, &(uint32_t){ 0 }))
                break; /* an index among the GPUs the container or job was given */
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
    .title = N_("CUDA_VISIBLE_DEVICES names a missing or busy GPU"),
    .explanation = N_(
        "A process's CUDA_VISIBLE_DEVICES names a GPU that does not exist (a copied job script, a "
        "GPU that fell off the bus, an index from another machine) or one that other people's jobs "
        "keep busy. CUDA ignores an invalid entry and all entries after it, so the job silently "
        "gets fewer GPUs or none and runs on the CPU, or it shares a GPU with someone else. CUDA "
        "also numbers GPUs fastest-first by default while nvidia-smi numbers them by PCI address, "
        "so an index can mean a different GPU than the one in nvidia-smi."),
    .detection =
        N_("each process's environment (readable for own processes, or as root): an entry "
           "that matches no GPU index or UUID prefix, when NVML listed every GPU (and, for a UUID, "
           "every GPU's UUID); or a GPU it names that the process does not use yet, busy at or "
           "above gpu_busy_util_pct with compute processes of other owners; or a process outside "
           "containers and Slurm jobs whose entries are all existing indices while every GPU it "
           "has open is another one (CUDA's fastest-first numbering). Indices inside a "
           "container or a Slurm job count among the GPUs it was given and are not judged. "
           "Also: an error given with --error that says CUDA or PyTorch found no GPU (100, "
           "\"no CUDA-capable device\", torch.cuda.is_available() False) while NVML lists "
           "GPUs."),
    .fix = N_("List GPUs with nvidia-smi -L, pick an existing idle one, and start the job with "
              "CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=N (or a UUID, which never changes "
              "meaning)."),
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
            fix_gpu_reset(ctx, f, g, N_("reset (no process may use it), or reboot"));
            f->impact = 0.1;
        }
    }
}

const struct rule rule_proc_mig_no_instance = {
    .id = "proc.mig-no-instance",
    .severity = SEV_WARNING,
    .category = CAT_PROCESS,
    .title = N_("MIG enabled with no usable instance"),
    .explanation = N_(
        "Multi-Instance GPU (MIG) splits an A100/H100-class GPU into isolated instances. With MIG "
        "mode on, CUDA can only run inside a MIG instance; if none has been created, the GPU is "
        "unusable for jobs although nvidia-smi shows it healthy and empty. MIG mode changes also "
        "wait for a GPU reset, which is easy to forget (reported as information)."),
    .detection =
        N_("MIG mode enabled and no MIG device exists (nvmlDeviceGetMigDeviceHandleByIndex "
           "finds none); or a pending MIG mode that differs from the current one."),
    .fix = N_("Create instances (nvidia-smi mig -i N -cgi PROFILES -C) — usually from the "
              "scheduler's or a boot-time MIG configuration (nvidia-mig-parted) — or turn MIG off "
              "(nvidia-smi -i N -mig 0, then reset the GPU)."),
    .thresholds = NO_THRESHOLDS,
    .check = check_mig,
};
