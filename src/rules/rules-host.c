/*
 * Throughput: the GPU waits for the host. An input pipeline that cannot keep up, a saturated CPU,
 * I/O wait and busy disks, swapping, and full disks.
 */
#include "rules/rule-impl.h"
#include "util/strutil.h"
#include "util/xalloc.h"

#include <inttypes.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static double host_cpu_busy(const struct host_info *h)
{
    return h->cpu_user_pct + h->cpu_system_pct + h->cpu_steal_pct;
}

static bool need_host(const struct rule_ctx *ctx, struct findings *out, enum host_slot slot,
                      const char *what)
{
    if (host_valid(&ctx->facts->snap->host, slot))
        return true;
    if (!need_collector(ctx, out, COLLECTOR_HOST))
        return false;
    if (ctx->facts->snap->window_ms == 0)
        rule_skip_take(ctx, out, -1,
                       TWICE("%s needs a sampling window (--window)", (what), (_(what))));
    else
        rule_skip_take(
            ctx, out, -1,
            TWICE("%s not readable (see the host collector's notes)", (what), (_(what))));
    return false;
}

/* PSI over the window when there was one, else the kernel's 10-second average; -1 unknown. */
static double psi(const struct host_info *h, enum host_slot window, double window_pct,
                  enum host_slot avg, double avg10_pct)
{
    if (host_valid(h, window))
        return window_pct;
    if (host_valid(h, avg))
        return avg10_pct;
    return -1;
}

static void host_cpu_evidence(struct finding *f, const struct host_info *h)
{
    if (host_valid(h, HOST_S_CPU_PCT))
        finding_evidence(f,
                         "host CPU %.0f %% busy (user %.0f, system %.0f, iowait %.0f, steal "
                         "%.0f %%)",
                         host_cpu_busy(h), h->cpu_user_pct, h->cpu_system_pct, h->cpu_iowait_pct,
                         h->cpu_steal_pct);
    if (host_valid(h, HOST_S_LOAD) && host_valid(h, HOST_S_CPUS))
        finding_evidence(f, "load %.1f on %" PRIu32 " CPUs", h->load1, h->cpus);
}

/* ---- perf.input-starved ---- */

static const struct proc *busiest_child(const struct rule_ctx *ctx, const struct proc *p,
                                        size_t *n_busy)
{
    const struct proc *best = NULL;

    *n_busy = 0;
    for (size_t i = 0; i < p->n_children; i++) {
        const struct proc *c = facts_proc_find(ctx->facts, p->children[i]);

        if (!proc_ok(c, PROC_S_CPU_PCT))
            continue;
        if (c->cpu_pct >= th(ctx, TH_STARVED_PROC_CPU_PCT))
            (*n_busy)++;
        if (best == NULL || c->cpu_pct > best->cpu_pct)
            best = c;
    }
    return best;
}

static void check_input_starved(const struct rule_ctx *ctx, struct findings *out)
{
    const struct host_info *hi = &ctx->facts->snap->host;
    bool host_busy =
        host_valid(hi, HOST_S_CPU_PCT) && host_cpu_busy(hi) >= th(ctx, TH_HOST_CPU_BUSY_PCT);
    bool said = false;

    for (size_t i = 0; i < ctx->facts->n_gpus; i++) {
        const struct facts_gpu *v = &ctx->facts->gpus[i];
        const struct proc *job = NULL, *child = NULL;
        size_t n_busy_children = 0;
        bool low, swinging, main_bound = false;
        struct finding *f;
        char label[96];

        if (v->n_compute == 0 || !v->util_valid)
            continue;
        if (!facts_has_window(ctx->facts) || v->util_n < 3) {
            if (!said)
                rule_skip(ctx, out, -1, "utilisation trends need a sampling window (--window)");
            said = true;
            continue;
        }
        if (v->util_max <= th(ctx, TH_GPU_IDLE_UTIL_PCT))
            continue; /* idle is not starved: see mem.full-idle and the holder rules */
        low = v->util_mean < th(ctx, TH_STARVED_UTIL_PCT);
        swinging = v->util_max - v->util_min >= th(ctx, TH_UTIL_SWING_PCT);
        if (!low && !swinging)
            continue;
        /* The job's process tree: the compute holder whose tree uses the most CPU. */
        for (size_t k = 0; k < v->n_holders; k++) {
            const struct proc *p = v->holders[k].p;
            const struct proc *c;
            size_t nb;

            if (!proc_ok(p, PROC_S_CPU_PCT))
                continue;
            c = busiest_child(ctx, p, &nb);
            if (p->cpu_pct >= th(ctx, TH_STARVED_PROC_CPU_PCT) || nb > 0) {
                if (job == NULL || p->cpu_pct > job->cpu_pct) {
                    job = p;
                    child = c;
                    n_busy_children = nb;
                    main_bound = p->cpu_pct >= th(ctx, TH_STARVED_PROC_CPU_PCT);
                }
            }
        }
        if (job == NULL && !host_busy)
            continue;
        if (job == NULL) {
            for (size_t k = 0; k < v->n_holders && job == NULL; k++)
                job = v->holders[k].p;
        }
        f = finding_new(ctx, out, (int32_t)v->g->index, job ? job->pid : -1);
        if (job && main_bound) {
            proc_label(label, sizeof(label), ctx, job->pid);
            finding_title(f,
                          "GPU %" PRIu32 " starved by its input: %.0f%% busy while pid %d "
                          "(%s) saturates a CPU core",
                          v->g->index, v->util_mean, job->pid, label);
        } else if (job && n_busy_children) {
            finding_title(f,
                          "GPU %" PRIu32 " starved by its input: %.0f%% busy while %zu loader "
                          "worker%s of pid %d run flat out",
                          v->g->index, v->util_mean, n_busy_children,
                          n_busy_children == 1 ? "" : "s", job->pid);
        } else {
            finding_title(f,
                          "GPU %" PRIu32 " starved by its input: %.0f%% busy while the host "
                          "CPU is saturated",
                          v->g->index, v->util_mean);
        }
        const char *swing = swinging ? N_(" (swinging: the GPU waits, then catches up)") : "";

        finding_evidence_take(
            f, TWICE("utilisation %.0f %% on average over %zu readings, "
                     "between %.0f and %.0f %%%s",
                     (v->util_mean, v->util_n, v->util_min, v->util_max, swing),
                     (v->util_mean, v->util_n, v->util_min, v->util_max, *swing ? _(swing) : "")));
        if (job && proc_ok(job, PROC_S_CPU_PCT))
            finding_evidence(f,
                             "pid %d uses %.0f %% CPU (100 = one core) with %zu child "
                             "process%s",
                             job->pid, job->cpu_pct, job->n_children,
                             job->n_children == 1 ? "" : "es");
        if (child)
            finding_evidence(f,
                             "busiest worker pid %d: %.0f %% CPU; %zu worker%s at or above "
                             "%.0f %%",
                             child->pid, child->cpu_pct, n_busy_children,
                             n_busy_children == 1 ? "" : "s", th(ctx, TH_STARVED_PROC_CPU_PCT));
        host_cpu_evidence(f, hi);
        if (job && fix_pid_ok(job->pid))
            finding_fix(f,
                        "py-spy top --pid %d   # where the CPU time goes (decode, augment, "
                        "collate)",
                        job->pid);
        finding_fix(f, "# PyTorch: DataLoader(num_workers=<cores per GPU>, pin_memory=True, "
                       "persistent_workers=True, prefetch_factor=4)");
        finding_fix(f, "# decode and augment on the GPU (NVIDIA DALI, torchvision.transforms.v2 "
                       "on CUDA tensors), or preprocess the dataset once");
        f->impact = (100.0 - v->util_mean) / 100.0;
    }
}

const struct rule rule_perf_input_starved = {
    .id = "perf.input-starved",
    .severity = SEV_WARNING,
    .category = CAT_THROUGHPUT,
    .title = N_("GPU starved by its input pipeline"),
    .explanation = N_(
        "The GPU works in bursts and waits in between: utilisation is low, or swings between high "
        "and low, while the job's own processes keep the CPU busy. The input pipeline (reading, "
        "decoding, augmenting, collating batches) cannot feed the GPU as fast as it computes, so "
        "a faster GPU would not help at all. A main process pinned at one core is usually Python "
        "doing the preprocessing itself (the GIL); workers all at 100 % mean too few workers or "
        "too much work per sample. A saturated host CPU starves every GPU the same way."),
    .detection =
        N_("over the sampling window (at least 3 readings), a GPU with compute processes, "
           "not idle (above gpu_idle_util_pct), with mean utilisation below starved_util_pct or "
           "a max-min swing of "
           "util_swing_pct or more, whose process or one of its children uses at least "
           "starved_proc_cpu_pct CPU, or while the host CPU is busy at or above "
           "host_cpu_busy_pct."),
    .fix =
        N_("Profile the job's CPU side (py-spy top --pid PID). More DataLoader workers (up to the "
           "cores available per GPU), pin_memory=True, persistent workers and prefetching; move "
           "decoding and augmentation to the GPU (DALI); preprocess the dataset once; put the data "
           "on fast local storage."),
    .thresholds = THRESHOLDS(TH_STARVED_UTIL_PCT, TH_UTIL_SWING_PCT, TH_STARVED_PROC_CPU_PCT,
                             TH_HOST_CPU_BUSY_PCT, TH_GPU_IDLE_UTIL_PCT),
    .check = check_input_starved,
};

/* ---- host.cpu-saturated ---- */

/*
 * The total busy share of the samples (CPU time neither idle nor waiting for I/O), averaged over
 * those that have it: what is left when the user/system/steal split is unknown (an import, an
 * older kernel). False when no sample has it.
 */
static bool samples_cpu_busy(const struct rule_ctx *ctx, double *busy, size_t *n)
{
    const struct history *hist = ctx->facts->hist;
    double sum = 0;

    *n = 0;
    for (size_t i = 0; hist != NULL && i < hist->n; i++) {
        if (hist->samples[i].host.valid & (UINT64_C(1) << HOST_SMP_S_CPU_BUSY)) {
            sum += hist->samples[i].host.cpu_busy_pct;
            (*n)++;
        }
    }
    *busy = *n ? sum / (double)*n : 0;
    return *n > 0;
}

static void check_cpu(const struct rule_ctx *ctx, struct findings *out)
{
    const struct host_info *h = &ctx->facts->snap->host;
    bool split = host_valid(h, HOST_S_CPU_PCT);
    size_t busy_gpus = 0, n_samples = 0;
    double busy = 0;
    struct finding *f;

    if (split)
        busy = host_cpu_busy(h);
    else if (!samples_cpu_busy(ctx, &busy, &n_samples)) {
        need_host(ctx, out, HOST_S_CPU_PCT, N_("host CPU use"));
        return;
    }
    if (busy < th(ctx, TH_HOST_CPU_BUSY_PCT))
        return;
    for (size_t i = 0; i < ctx->facts->n_gpus; i++)
        busy_gpus += ctx->facts->gpus[i].n_compute > 0;
    f = finding_new(ctx, out, -1, -1);
    finding_title(f, "Host CPU saturated: %.0f%% busy%s", busy,
                  split && h->cpu_steal_pct >= 10 ? " (much of it stolen by the hypervisor)" : "");
    if (split)
        host_cpu_evidence(f, h);
    else
        finding_evidence(f,
                         "host CPU %.0f %% busy, the total over %zu sample%s (how it splits into "
                         "user, system and steal time is not known)",
                         busy, n_samples, n_samples == 1 ? "" : "s");
    if (!split && host_valid(h, HOST_S_LOAD) && host_valid(h, HOST_S_CPUS))
        finding_evidence(f, "load %.1f on %" PRIu32 " CPUs", h->load1, h->cpus);
    else if (!split && host_valid(h, HOST_S_CPUS))
        finding_evidence(f, "%" PRIu32 " CPUs", h->cpus);
    if (host_valid(h, HOST_S_PSI_CPU))
        finding_evidence(f, "CPU pressure: tasks waited for a CPU %.0f %% of the last 10 s",
                         h->psi_cpu_some_avg10_pct);
    if (busy_gpus)
        finding_evidence(f, "%zu GPU%s with jobs depend on this CPU for their input", busy_gpus,
                         busy_gpus == 1 ? "" : "s");
    if (split && h->cpu_steal_pct >= 10)
        finding_evidence(f, "steal %.0f %%: the virtual machine's host is short of CPU",
                         h->cpu_steal_pct);
    finding_fix(f, "top -o %%CPU   # what uses the CPU");
    finding_fix(f, "# limit threads per job: OMP_NUM_THREADS=<cores per job>, "
                   "torch.set_num_threads(); loader workers x jobs <= cores");
    finding_fix(f, "# move unrelated CPU work (builds, backups, indexing) off the GPU server");
    f->impact = 0.3 * (double)(busy_gpus ? busy_gpus : 1);
}

const struct rule rule_host_cpu_saturated = {
    .id = "host.cpu-saturated",
    .severity = SEV_WARNING,
    .category = CAT_THROUGHPUT,
    .title = N_("Host CPU saturated"),
    .explanation = N_(
        "Every CPU of the host is busy. GPU jobs need CPU time to launch kernels, load and "
        "augment data and run the framework; when the CPUs are all taken (too many loader workers "
        "across jobs, thread pools sized to the whole machine in every job, unrelated work such as "
        "builds or backups, or a virtual machine whose host steals time) the GPUs wait."),
    .detection =
        N_("user + system + steal time over the window at or above host_cpu_busy_pct of all "
           "CPUs (/proc/stat); where that split is unknown (an import, an older kernel), "
           "the samples' total busy share (time neither idle nor in I/O wait), averaged. "
           "Needs a sampling window."),
    .fix =
        N_("Find the consumers (top). Size thread pools and loader workers to the cores each job "
           "really has (OMP_NUM_THREADS, torch.set_num_threads, num_workers), move unrelated work "
           "elsewhere; in a VM with high steal, ask for dedicated CPUs."),
    .thresholds = THRESHOLDS(TH_HOST_CPU_BUSY_PCT),
    .check = check_cpu,
};

/* ---- host.io-wait ---- */

static void check_iowait(const struct rule_ctx *ctx, struct findings *out)
{
    const struct host_info *h = &ctx->facts->snap->host;
    double io = psi(h, HOST_S_PSI_IO_WINDOW, h->psi_io_some_window_pct, HOST_S_PSI_IO,
                    h->psi_io_some_avg10_pct);
    bool wait = host_valid(h, HOST_S_CPU_PCT) && h->cpu_iowait_pct >= th(ctx, TH_HOST_IOWAIT_PCT);
    struct finding *f;

    if (!host_valid(h, HOST_S_CPU_PCT) && io < 0) {
        need_host(ctx, out, HOST_S_CPU_PCT, N_("I/O wait"));
        return;
    }
    if (!wait && !(io >= th(ctx, TH_HOST_PSI_IO_PCT)))
        return;
    f = finding_new(ctx, out, -1, -1);
    if (wait)
        finding_title(f, "High I/O wait: CPUs idle %.0f%% of the time waiting for storage",
                      h->cpu_iowait_pct);
    else
        finding_title(f, "I/O pressure: tasks stalled on storage %.0f%% of the time", io);
    if (host_valid(h, HOST_S_CPU_PCT))
        finding_evidence(f, "iowait %.0f %% of all CPU time", h->cpu_iowait_pct);
    if (io >= 0)
        finding_evidence(f, "I/O pressure: some task stalled %.0f %% of the time", io);
    for (size_t i = 0; i < h->n_disks; i++) {
        const struct host_disk *d = &h->disks[i];

        if ((d->valid & (UINT64_C(1) << DISK_S_RATES)) && d->util_pct >= 50)
            finding_evidence(f, "disk %s busy %.0f %% (read %.1f MB/s, write %.1f MB/s)",
                             d->name ? d->name : "?", d->util_pct, d->read_bytes_per_s / 1e6,
                             d->write_bytes_per_s / 1e6);
    }
    finding_fix(f, "iostat -x 1 5   # which disk, how busy, how slow");
    finding_fix(f, "sudo iotop -o   # which process does the I/O");
    finding_fix(f, "# datasets on local NVMe or in RAM (/dev/shm), fewer small files (WebDataset, "
                   "TFRecord, LMDB), more loader workers for network storage");
    f->impact = 0.4;
}

const struct rule rule_host_io_wait = {
    .id = "host.io-wait",
    .severity = SEV_WARNING,
    .category = CAT_THROUGHPUT,
    .title = N_("High I/O wait"),
    .explanation = N_(
        "CPUs sit idle waiting for storage, or tasks stall on I/O a large share of the time. Data "
        "loading from slow storage (a spinning disk, an overloaded network file system, millions "
        "of small files) makes loaders wait, and then the GPUs wait for the loaders. When one "
        "disk is clearly saturated, host.disk-busy names it instead."),
    .detection = N_("iowait over the window at or above host_iowait_pct of CPU time, or I/O "
                    "pressure (PSI io some, over the window or the 10 s average) at or above "
                    "host_psi_io_pct."),
    .fix = N_("Find the disk and the process (iostat -x, iotop). Put datasets on local NVMe or in "
              "RAM, pack small files into shards, cache the dataset, add loader workers when "
              "storage is remote and latency-bound."),
    .thresholds = THRESHOLDS(TH_HOST_IOWAIT_PCT, TH_HOST_PSI_IO_PCT),
    .yields_to = YIELDS_TO("host.disk-busy"),
    .check = check_iowait,
};

/* ---- host.disk-busy ---- */

static void check_disks(const struct rule_ctx *ctx, struct findings *out)
{
    const struct host_info *h = &ctx->facts->snap->host;
    bool any = false;

    for (size_t i = 0; i < h->n_disks; i++) {
        const struct host_disk *d = &h->disks[i];
        bool rot = (d->valid & (UINT64_C(1) << DISK_S_ROTATIONAL)) && d->rotational;
        struct finding *f;
        char *dev;

        if (!(d->valid & (UINT64_C(1) << DISK_S_RATES)))
            continue;
        any = true;
        if (d->util_pct < th(ctx, TH_DISK_BUSY_PCT) &&
            !(rot && d->util_pct >= th(ctx, TH_DISK_ROTATIONAL_BUSY_PCT)))
            continue;
        f = finding_new(ctx, out, -1, -1);
        finding_object(f, "%s", d->name ? d->name : "?");
        finding_title(f, "Disk %s%s busy %.0f%% of the time (read %.0f MB/s, write %.0f MB/s)",
                      d->name ? d->name : "?", rot ? " (rotational)" : "", d->util_pct,
                      d->read_bytes_per_s / 1e6, d->write_bytes_per_s / 1e6);
        const char *spin = rot ? N_("; a spinning disk: every seek costs milliseconds") : "";

        finding_evidence_take(f, TWICE("busy %.0f %% of the window%s", (d->util_pct, spin),
                                       (d->util_pct, *spin ? _(spin) : "")));
        if (d->valid & (UINT64_C(1) << DISK_S_AWAIT))
            finding_evidence(f, "average wait per I/O %.1f ms", d->await_ms);
        if (host_valid(h, HOST_S_CPU_PCT))
            finding_evidence(f, "host iowait %.0f %%", h->cpu_iowait_pct);
        for (size_t k = 0; k < h->n_fs; k++) {
            const struct host_fs *fs = &h->fs[k];

            if (fs->device && d->name && strstr(fs->device, d->name))
                for (size_t j = 0; j < fs->n_paths; j++)
                    finding_evidence(f, "holds %s (mounted at %s)", fs->paths[j],
                                     fs->mount ? fs->mount : "?");
        }
        dev = fix_arg(f, "disk name", d->name);
        if (dev)
            finding_fix(f, "iostat -x %s 1 5   # confirm: %%util, r_await", dev);
        free(dev);
        finding_fix(f, "sudo iotop -o   # who reads and writes");
        if (rot)
            finding_fix(f, "# move the dataset to NVMe/SSD or RAM; pack small files into shards; "
                           "a spinning disk cannot serve random reads fast enough");
        else
            finding_fix(f, "# move the dataset to NVMe/SSD or RAM; pack small files into shards; "
                           "spread I/O over several disks");
        f->impact = rot ? 0.5 : 0.4;
    }
    if (!any && h->n_disks > 0)
        rule_skip(ctx, out, -1, "disk utilisation needs a sampling window (--window)");
    else if (h->n_disks == 0)
        need_collector(ctx, out, COLLECTOR_HOST);
}

const struct rule rule_host_disk_busy = {
    .id = "host.disk-busy",
    .severity = SEV_WARNING,
    .category = CAT_THROUGHPUT,
    .title = N_("Disk saturated (or a busy rotational disk)"),
    .explanation =
        N_("A disk had requests in flight nearly all the window, so everything reading from it "
           "queues: data loaders stall and the GPUs wait. A mechanical (rotational) disk saturates "
           "far earlier, because random reads of many small files cost a seek each; datasets on "
           "spinning disks are a classic cause of slow training."),
    .detection =
        N_("per disk over the window (/proc/diskstats io_ticks): busy at or above "
           "disk_busy_pct, or a rotational disk busy at or above disk_rotational_busy_pct."),
    .fix = N_("Confirm with iostat -x, find the process with iotop, then move hot data to NVMe/SSD "
              "or RAM, shard small files, and keep backups or other bulk I/O off the dataset disk "
              "while jobs run."),
    .thresholds = THRESHOLDS(TH_DISK_BUSY_PCT, TH_DISK_ROTATIONAL_BUSY_PCT),
    .check = check_disks,
};

/* ---- host.memory-pressure ---- */

static void check_memory(const struct rule_ctx *ctx, struct findings *out)
{
    const struct host_info *h = &ctx->facts->snap->host;
    double rate = -1, avail = -1,
           mem_psi = psi(h, HOST_S_PSI_MEM_WINDOW, h->psi_mem_some_window_pct, HOST_S_PSI_MEM,
                         h->psi_mem_some_avg10_pct);
    bool swapping, low, pressure;
    struct finding *f;
    char a[16], t[16];

    if (host_valid(h, HOST_S_SWAP_RATE))
        rate = h->swap_in_pages_per_s + h->swap_out_pages_per_s;
    if (host_valid(h, HOST_S_MEM) && host_valid(h, HOST_S_MEM_AVAILABLE))
        avail = pct((double)h->mem_available_bytes, (double)h->mem_total_bytes);
    if (rate < 0 && avail < 0 && mem_psi < 0) {
        need_host(ctx, out, HOST_S_MEM_AVAILABLE, N_("host memory"));
        return;
    }
    swapping = rate >= th(ctx, TH_SWAP_PAGES_PER_S);
    low = avail >= 0 && avail < th(ctx, TH_MEM_AVAILABLE_MIN_PCT);
    pressure = mem_psi >= th(ctx, TH_HOST_PSI_MEM_PCT);
    if (!swapping && !low && !pressure)
        return;
    f = finding_new(ctx, out, -1, -1);
    if (avail >= 0) {
        render_bytes(a, sizeof(a), h->mem_available_bytes);
        render_bytes(t, sizeof(t), h->mem_total_bytes);
    }
    if (swapping)
        finding_title(f, "Host swapping: %.0f pages/s in and out of swap", rate);
    else if (low)
        finding_title(f, "Host memory nearly exhausted: %s available of %s", a, t);
    else
        finding_title(f, "Host memory pressure: tasks stalled on memory %.0f%% of the time",
                      mem_psi);
    if (avail >= 0)
        finding_evidence(f, "memory available %s of %s (%.1f %%)", a, t, avail);
    if (rate >= 0)
        finding_evidence(f, "swap-in %.0f, swap-out %.0f pages/s", h->swap_in_pages_per_s,
                         h->swap_out_pages_per_s);
    if (host_valid(h, HOST_S_SWAP) && h->swap_total_bytes) {
        render_bytes(a, sizeof(a), h->swap_total_bytes - h->swap_free_bytes);
        render_bytes(t, sizeof(t), h->swap_total_bytes);
        finding_evidence(f, "swap used %s of %s", a, t);
    }
    if (mem_psi >= 0)
        finding_evidence(f, "memory pressure: some task stalled %.0f %% of the time", mem_psi);
    finding_fix(f, "ps -eo pid,user,rss,args --sort=-rss | head   # the biggest users");
    finding_fix(f, "# fewer DataLoader workers or smaller prefetch (each worker may copy the "
                   "dataset object); memory-map the data");
    finding_fix(f, "# per-job memory limits (Slurm --mem, cgroups), or more RAM");
    f->impact = swapping ? 0.6 : 0.4;
}

const struct rule rule_host_memory_pressure = {
    .id = "host.memory-pressure",
    .severity = SEV_WARNING,
    .category = CAT_THROUGHPUT,
    .title = N_("Host swapping or memory pressure"),
    .explanation =
        N_("The host is short of RAM: it swaps pages out and back in, or tasks stall while the "
           "kernel reclaims memory. Every stall slows the data pipeline and the framework's CPU "
           "side, so the GPUs wait; the next step is the OOM killer ending a job "
           "(health.oom-kill). Training jobs use much host memory: pinned buffers, a dataset copy "
           "per loader worker, several jobs per server."),
    .detection = N_("swap-in plus swap-out at or above swap_pages_per_s over the window; memory "
                    "available below mem_available_min_pct of the total; or memory pressure (PSI "
                    "memory some) at or above host_psi_mem_pct."),
    .fix =
        N_("Find the biggest consumers (ps --sort=-rss). Fewer loader workers, smaller prefetch, "
           "memory-mapped datasets; per-job memory limits; more RAM."),
    .thresholds = THRESHOLDS(TH_SWAP_PAGES_PER_S, TH_MEM_AVAILABLE_MIN_PCT, TH_HOST_PSI_MEM_PCT),
    .check = check_memory,
};

/* ---- host.memory-ecc ---- */

/* "3h12m" for the time the EDAC counters have counted. */
static void since_words(char *buf, size_t size, double s)
{
    if (s >= 86400)
        snprintf(buf, size, "%.0fd", s / 86400);
    else if (s >= 3600)
        snprintf(buf, size, "%.0fh", s / 3600);
    else
        snprintf(buf, size, "%.0fm", s / 60);
}

/* What the kernel log read says about the host's memory, within the lookback. */
struct log_mem {
    size_t reports;                  /* KLOG_HOST_MEM events */
    const struct klog_event *latest; /* the most recent of them */
    char dimms[256];                 /* the DIMMs they name, "A1, B2" */
    bool source[KLOG__MEM_SOURCE_COUNT];
};

static void read_log_mem(const struct rule_ctx *ctx, struct log_mem *m)
{
    const struct driver_info *d = &ctx->facts->snap->driver;

    memset(m, 0, sizeof(*m));
    for (size_t i = 0; i < d->n_events; i++) {
        const struct klog_event *ev = &d->events[i];

        if (ev->kind != KLOG_HOST_MEM || !klog_recent(ctx, ev))
            continue;
        m->reports++;
        m->latest = ev;
        if ((ev->valid & (UINT64_C(1) << KLOG_S_HOST_MEM)) && ev->mem_source >= 0 &&
            ev->mem_source < KLOG__MEM_SOURCE_COUNT)
            m->source[ev->mem_source] = true;
        if ((ev->valid & (UINT64_C(1) << KLOG_S_DIMM)) && ev->dimm != NULL)
            str_list_add_once(m->dimms, sizeof(m->dimms), ev->dimm);
    }
}

/* "EDAC, APEI": who reported them, in words; translated when l. */
static void source_words(char *buf, size_t size, const struct log_mem *m, bool l)
{
    static const char *const words[KLOG__MEM_SOURCE_COUNT] = {
        [KLOG_MEM_EDAC] = N_("EDAC"),
        [KLOG_MEM_APEI] = N_("firmware (APEI)"),
        [KLOG_MEM_MCE] = N_("machine check"),
        [KLOG_MEM_MEMORY_FAILURE] = N_("memory failure"),
    };
    size_t len = 0;

    buf[0] = '\0';
    for (int k = 0; k < KLOG__MEM_SOURCE_COUNT; k++) {
        const char *w = l ? _(words[k]) : words[k];

        if (m->source[k] && len + strlen(w) + 3 < size)
            len += (size_t)snprintf(buf + len, size - len, "%s%s", len ? ", " : "", w);
    }
}

static void log_mem_evidence(const struct rule_ctx *ctx, struct finding *f, const struct log_mem *m)
{
    const struct driver_info *d = &ctx->facts->snap->driver;
    struct klog_time when;
    char who[96], who_l[192];

    source_words(who, sizeof(who), m, false);
    source_words(who_l, sizeof(who_l), m, true);
    klog_when(&when, ctx, m->latest);
    finding_evidence_take(f, TWICE("kernel log: %zu report%s of uncorrected host memory errors "
                                   "(%s), the latest %s: %s",
                                   (m->reports, m->reports == 1 ? "" : "s", who, when.en,
                                    m->latest->message ? m->latest->message : "?"),
                                   (m->reports, m->reports == 1 ? "" : "s", who_l, when.l,
                                    m->latest->message ? m->latest->message : "?")));
    for (size_t i = 0; i < d->n_events; i++) {
        const struct klog_event *ev = &d->events[i];

        if (ev->kind == KLOG_HOST_MEM && klog_recent(ctx, ev) &&
            (ev->valid & (UINT64_C(1) << KLOG_S_PID)) && ev->name != NULL)
            finding_evidence(f, "the kernel killed %s (pid %d) for reading the bad memory (SIGBUS)",
                             ev->name, (int)ev->pid);
    }
    if (m->dimms[0] != '\0')
        finding_evidence(f, "DIMMs the kernel log names: %s", m->dimms);
    if ((d->valid & (UINT64_C(1) << DRIVER_S_KLOG_MEM)) && d->klog_mem_corrected > 0)
        finding_evidence_take(f, TWICE_N("the log read also reports %" PRIu64 " corrected error",
                                         "the log read also reports %" PRIu64 " corrected errors",
                                         d->klog_mem_corrected, (d->klog_mem_corrected),
                                         (d->klog_mem_corrected)));
}

/* The BMC's log holds an uncorrectable memory error within the lookback (or undated). */
static bool sel_ue(const struct rule_ctx *ctx, double *age_s)
{
    const struct host_info *h = &ctx->facts->snap->host;
    double max = th(ctx, TH_KLOG_MAX_AGE_H) * 3600.0;
    int64_t now = ctx->facts->snap->time_ms;

    *age_s = -1;
    if (!host_valid(h, HOST_S_SEL) || h->sel_mem_ue == 0)
        return false;
    if (host_valid(h, HOST_S_SEL_UE_TIME) && now > 0 && h->sel_mem_ue_last_ms <= now)
        *age_s = (double)(now - h->sel_mem_ue_last_ms) / 1000.0;
    return max <= 0 || *age_s < 0 || *age_s <= max;
}

static void sel_evidence(struct finding *f, const struct host_info *h, double age_s)
{
    char age[16];

    if (age_s >= 0) {
        render_duration(age, sizeof(age), age_s);
        finding_evidence_take(f,
                              TWICE_N("the BMC's event log (IPMI SEL): %" PRIu32
                                      " uncorrectable ECC event of the host's memory, %s ago",
                                      "the BMC's event log (IPMI SEL): %" PRIu32
                                      " uncorrectable ECC events of the host's memory, the "
                                      "latest %s ago",
                                      h->sel_mem_ue, (h->sel_mem_ue, age), (h->sel_mem_ue, age)));
    } else if (host_valid(h, HOST_S_SEL_UE_TIME)) {
        char when[32];
        time_t t = (time_t)(h->sel_mem_ue_last_ms / 1000);
        struct tm tm;

        gmtime_r(&t, &tm);
        strftime(when, sizeof(when), "%Y-%m-%d %H:%M UTC", &tm);
        finding_evidence_take(f,
                              TWICE_N("the BMC's event log (IPMI SEL): %" PRIu32
                                      " uncorrectable ECC event of the host's memory, at %s",
                                      "the BMC's event log (IPMI SEL): %" PRIu32
                                      " uncorrectable ECC events of the host's memory, the "
                                      "latest at %s",
                                      h->sel_mem_ue, (h->sel_mem_ue, when), (h->sel_mem_ue, when)));
    } else {
        finding_evidence_take(f, TWICE_N("the BMC's event log (IPMI SEL): %" PRIu32
                                         " uncorrectable ECC event of the host's memory, undated",
                                         "the BMC's event log (IPMI SEL): %" PRIu32
                                         " uncorrectable ECC events of the host's memory, undated",
                                         h->sel_mem_ue, (h->sel_mem_ue), (h->sel_mem_ue)));
    }
    if (host_valid(h, HOST_S_SEL_UE_DIMMS))
        finding_evidence(f, "what the BMC names: %s", h->sel_mem_ue_dimms);
}

static void check_memory_ecc(const struct rule_ctx *ctx, struct findings *out)
{
    const struct host_info *h = &ctx->facts->snap->host;
    bool edac = host_valid(h, HOST_S_EDAC), edac_ue = edac && h->mem_ue_count > 0;
    bool log = klog_source_known(ctx), sel = host_valid(h, HOST_S_SEL);
    double sel_age;
    bool in_sel = sel_ue(ctx, &sel_age);
    struct log_mem m;
    struct finding *f;
    char since[16];

    read_log_mem(ctx, &m);
    if (!edac && !log && !sel) {
        if (need_collector(ctx, out, COLLECTOR_HOST) && need_collector(ctx, out, COLLECTOR_KLOG))
            rule_skip(ctx, out, -1,
                      "host memory errors are not counted without an EDAC driver "
                      "(/sys/devices/system/edac/mc) or the kernel log; the BMC's event log has "
                      "them (ipmitool sel elist)");
        return;
    }
    if (!edac_ue && m.reports == 0 && !in_sel)
        return;
    f = finding_new(ctx, out, -1, -1);
    if (edac_ue && host_valid(h, HOST_S_EDAC_DIMMS))
        finding_title(f, "Host memory: %" PRIu64 " uncorrectable ECC error%s, on %s",
                      h->mem_ue_count, h->mem_ue_count == 1 ? "" : "s", h->mem_ue_dimms);
    else if (edac_ue)
        finding_title(f, "Host memory: %" PRIu64 " uncorrectable ECC error%s", h->mem_ue_count,
                      h->mem_ue_count == 1 ? "" : "s");
    else if (m.reports > 0 && m.dimms[0] != '\0')
        finding_title(f, "Host memory: uncorrectable errors in the kernel log, on %s", m.dimms);
    else if (m.reports > 0)
        finding_title(f, "Host memory: uncorrectable errors in the kernel log");
    else if (host_valid(h, HOST_S_SEL_UE_DIMMS))
        finding_title(f, "Host memory: uncorrectable ECC errors in the BMC's event log, on %s",
                      h->sel_mem_ue_dimms);
    else
        finding_title(f, "Host memory: uncorrectable ECC errors in the BMC's event log");
    if (edac && h->edac_since_s >= 0) {
        since_words(since, sizeof(since), h->edac_since_s);
        finding_evidence_take(
            f, TWICE_N("EDAC, %" PRIu32 " memory controller: %" PRIu64 " uncorrectable and %" PRIu64
                       " corrected in the last %s",
                       "EDAC, %" PRIu32 " memory controllers: %" PRIu64
                       " uncorrectable and %" PRIu64 " corrected in the last %s",
                       h->edac_controllers,
                       (h->edac_controllers, h->mem_ue_count, h->mem_ce_count, since),
                       (h->edac_controllers, h->mem_ue_count, h->mem_ce_count, since)));
    } else if (edac) {
        finding_evidence_take(
            f, TWICE_N("EDAC, %" PRIu32 " memory controller: %" PRIu64 " uncorrectable and %" PRIu64
                       " corrected since the counters were reset",
                       "EDAC, %" PRIu32 " memory controllers: %" PRIu64
                       " uncorrectable and %" PRIu64 " corrected since the counters were reset",
                       h->edac_controllers, (h->edac_controllers, h->mem_ue_count, h->mem_ce_count),
                       (h->edac_controllers, h->mem_ue_count, h->mem_ce_count)));
    } else {
        finding_evidence(f, "EDAC counters: unknown (no EDAC driver here, or not read: "
                            "/sys/devices/system/edac/mc)");
    }
    if (edac_ue && host_valid(h, HOST_S_EDAC_DIMMS))
        finding_evidence(f, "DIMMs with uncorrectable errors: %s", h->mem_ue_dimms);
    else if (edac_ue && m.dimms[0] == '\0')
        finding_evidence(f, "the EDAC driver does not say which DIMM");
    if (m.reports > 0)
        log_mem_evidence(ctx, f, &m);
    if (in_sel)
        sel_evidence(f, h, sel_age);
    finding_evidence(f, "an uncorrectable error in host RAM crashes or freezes the node, or kills "
                        "the process that read it (SIGBUS): GPU jobs here may have stopped or "
                        "computed on corrupted data");
    if (edac)
        finding_fix(f, "grep -H . /sys/devices/system/edac/mc/mc*/*/dimm_label "
                       "/sys/devices/system/edac/mc/mc*/*/dimm_ue_count   # which DIMM");
    finding_fix(f, "sudo dmesg -T | grep -iE 'mce|machine check|hardware error|edac|memory "
                   "failure' | tail -40");
    finding_fix(f, "sudo ipmitool sel elist | grep -iE 'ecc|memory'   # the BMC's record, on "
                   "boards with one");
    finding_fix(f, "# drain the node and have the DIMM named replaced; rerun the jobs it ran");
    f->impact = 3.0;
}

const struct rule rule_host_memory_ecc = {
    .id = "host.memory-ecc",
    .severity = SEV_CRITICAL,
    .category = CAT_HEALTH,
    .title = N_("Uncorrectable errors in the host's memory"),
    .explanation = N_(
        "The host's own RAM (not the GPU's) had uncorrectable ECC errors: a DIMM is failing. Such "
        "an error freezes or reboots the node, or kills the process that read the bad memory "
        "(SIGBUS, 'Memory failure' in the kernel log), and what it does not stop it may corrupt. "
        "GPU nodes under load show it as jobs that hang or die while the GPUs look healthy; the "
        "GPUs are not at fault. Corrected errors alone are counted and shown, not reported: ECC "
        "repaired them."),
    .detection =
        N_("The kernel's EDAC counters (/sys/devices/system/edac/mc/mc*/ue_count, per DIMM "
           "dimm_ue_count and dimm_label): any uncorrectable error since the counters were reset "
           "(when the EDAC driver started, usually at boot). And the kernel log within "
           "klog_max_age_h: the EDAC core's \"EDAC MC0: 1 UE ... on DIMM\" lines, the firmware's "
           "error records on firmware-first servers (APEI: \"[Hardware Error]: event severity: "
           "recoverable\" or fatal, \"section_type: memory error\", \"DIMM location\"), the "
           "machine-check handler's \"Uncorrected hardware memory error\" and the kernel's "
           "\"Memory failure: ...\" lines, which also name a process killed with SIGBUS. Servers "
           "that handle memory errors in firmware often have no EDAC driver: there the log is the "
           "only place the errors show. And the BMC's event log (IPMI SEL) when it is imported "
           "(ipmitool sel elist, docs/import.md): asserted \"Uncorrectable ECC\" events of "
           "memory sensors, the latest within klog_max_age_h or undated; gpudoctor does not read "
           "the BMC itself."),
    .fix = N_("Find the DIMM (dimm_label, the BMC's event log), drain the node and have it "
              "replaced; rerun the jobs that ran here since the errors."),
    .thresholds = THRESHOLDS(TH_KLOG_MAX_AGE_H),
    .check = check_memory_ecc,
};

/* ---- host.psu-fault ---- */

/* The GPUs clock.hw-slowdown finds braked; *known: whether any GPU's clock event reasons were
 * read. */
static size_t braked_gpus(const struct rule_ctx *ctx, int32_t *idx, bool *known)
{
    size_t n = 0;

    *known = false;
    for (size_t i = 0; i < ctx->facts->n_gpus; i++) {
        const struct facts_gpu *v = &ctx->facts->gpus[i];
        bool brake, slow;

        *known = *known || v->reasons_valid;
        if (gpu_hw_braked(v, &brake, &slow))
            idx[n++] = (int32_t)v->g->index;
    }
    return n;
}

/* When the newest open fault was logged: "at 2026-03-01 13:30 UTC (2h ago)". */
static void psu_time_evidence(struct finding *f, const struct rule_ctx *ctx,
                              const struct host_info *h)
{
    int64_t now = ctx->facts->snap->time_ms;
    char when[32], age[16];
    time_t t;
    struct tm tm;

    if (!host_valid(h, HOST_S_SEL_PSU_TIME))
        return;
    t = (time_t)(h->sel_psu_last_ms / 1000);
    gmtime_r(&t, &tm);
    strftime(when, sizeof(when), "%Y-%m-%d %H:%M UTC", &tm);
    if (now > 0 && now - h->sel_psu_last_ms >= 1000) {
        render_duration(age, sizeof(age), (double)(now - h->sel_psu_last_ms) / 1000.0);
        finding_evidence(f, "the newest logged at %s (%s before the snapshot)", when, age);
    } else {
        finding_evidence(f, "the newest logged at %s", when);
    }
}

static void check_psu(const struct rule_ctx *ctx, struct findings *out)
{
    const struct host_info *h = &ctx->facts->snap->host;
    int32_t *idx = xcalloc(ctx->facts->n_gpus + 1, sizeof(*idx));
    bool known;
    size_t n_braked = braked_gpus(ctx, idx, &known);
    char list[256];
    struct finding *f;

    if (!host_valid(h, HOST_S_SEL_PSU)) {
        /* Only where it matters: a GPU braked, and the one log that would say why not read. */
        if (n_braked > 0 && host_valid(h, HOST_S_SEL))
            rule_skip(ctx, out, -1,
                      "whether a power supply failed: the BMC's event log was read for memory "
                      "errors only (Supermicro's pasted lines, or a snapshot from an older "
                      "gpudoctor)");
        else if (n_braked > 0)
            rule_skip(ctx, out, -1,
                      "whether a power supply failed: the BMC's event log was not imported "
                      "(ipmitool sel elist, docs/import.md)");
        goto done;
    }
    if (h->sel_psu_faults == 0) {
        if (n_braked > 0 && h->sel_full)
            rule_skip(ctx, out, -1,
                      "whether a power supply failed: the BMC's event log is full, faults after "
                      "it filled were not logged");
        else if (h->sel_psu_untracked > 0)
            rule_skip(ctx, out, -1,
                      "whether %" PRIu32 " power supply fault events were cleared: more sensors "
                      "than gpudoctor follows at once, or names no ipmitool writes",
                      h->sel_psu_untracked);
        goto done;
    }
    f = finding_new(ctx, out, -1, -1);
    finding_object(f, "PSU");
    if (host_valid(h, HOST_S_SEL_PSU_WHAT))
        finding_title(f, "The BMC logged a power supply fault it has not cleared (%s)",
                      h->sel_psu_what);
    else
        finding_title(f, "The BMC logged a power supply fault it has not cleared");
    finding_evidence_take(f, TWICE_N("the BMC's event log (IPMI SEL): %" PRIu32
                                     " power supply fault asserted and not cleared",
                                     "the BMC's event log (IPMI SEL): %" PRIu32
                                     " power supply faults asserted and not cleared",
                                     h->sel_psu_faults, (h->sel_psu_faults), (h->sel_psu_faults)));
    if (h->sel_psu_untracked > 0)
        finding_evidence_take(f, TWICE_N("%" PRIu32 " more fault event could not be followed "
                                         "(more sensors than gpudoctor follows at once, or a "
                                         "name no ipmitool writes): whether it was cleared is "
                                         "not known",
                                         "%" PRIu32 " more fault events could not be followed "
                                         "(more sensors than gpudoctor follows at once, or names "
                                         "no ipmitool writes): whether they were cleared is not "
                                         "known",
                                         h->sel_psu_untracked, (h->sel_psu_untracked),
                                         (h->sel_psu_untracked)));
    psu_time_evidence(f, ctx, h);
    if (h->sel_psu_stale > 0)
        finding_evidence_take(f, TWICE_N("%" PRIu32 " of them was logged before the server's "
                                         "last power-on in the log and never cleared: a supply "
                                         "that failed before a reboot leaves the same record; "
                                         "the sensors say whether it persists",
                                         "%" PRIu32 " of them were logged before the server's "
                                         "last power-on in the log and never cleared: a supply "
                                         "that failed before a reboot leaves the same record; "
                                         "the sensors say whether they persist",
                                         h->sel_psu_stale, (h->sel_psu_stale), (h->sel_psu_stale)));
    if (h->sel_full)
        finding_evidence(f, "the log is full, or logging disabled: faults and clearings after "
                            "that were not logged");
    if (h->sel_psu_losses > 0 && n_braked > 0) {
        render_ranges(list, sizeof(list), idx, n_braked);
        finding_evidence_take(f, TWICE_N("GPU %s has its clocks cut by the power brake or a "
                                         "hardware slowdown: a server short of supply brakes "
                                         "its GPUs to stay within what the other supplies "
                                         "deliver",
                                         "GPUs %s have their clocks cut by the power brake or a "
                                         "hardware slowdown: a server short of supply brakes "
                                         "its GPUs to stay within what the other supplies "
                                         "deliver",
                                         n_braked, (list), (list)));
        finding_explains(f, "clock.hw-slowdown");
    } else {
        f->severity = SEV_WARNING;
        /* Faults from before the last power-on, or not followed, are said above. */
        if (h->sel_psu_losses > 0 && known)
            finding_evidence(f, "no GPU is braked now: the server runs on its other supplies, "
                                "without redundancy, and one more failure stops it");
        else if (h->sel_psu_losses > 0)
            finding_evidence(f, "whether a GPU is braked is not known (no GPU's clock event "
                                "reasons were read): without redundancy, one more failure "
                                "stops the server");
        else if (h->sel_psu_stale == 0 && h->sel_psu_untracked == 0)
            finding_evidence(f, "none of them removes power (a predicted failure, AC out of "
                                "range, a configuration error): the supplies still deliver; "
                                "replace the one named before it fails");
    }
    finding_fix(f, "sudo ipmitool sdr type 'Power Supply'   # each supply's state now");
    finding_fix(f, "sudo ipmitool sdr type 'Power Unit'   # the supplies' redundancy, on boards "
                   "that report it there");
    finding_fix(f, "sudo ipmitool sel elist | grep -iE 'power (supply|unit)'   # the events, in "
                   "order");
    finding_fix(f, "# check the supply named: its power cord, the PDU or circuit feeding it, its "
                   "LED; reseat or replace a failed supply");
    f->impact = f->severity == SEV_CRITICAL ? (double)n_braked : 0.5;
done:
    free(idx);
}

const struct rule rule_host_psu_fault = {
    .id = "host.psu-fault",
    .severity = SEV_CRITICAL,
    .category = CAT_HEALTH,
    .title = N_("A power supply failed"),
    .explanation =
        N_("The BMC logged a fault of a power supply (failed, lost its AC input, predicted to "
           "fail) or the loss of the supplies' redundancy, and did not log it cleared afterwards. "
           "A GPU server draws close to what all its supplies deliver together: with one gone, the "
           "BMC asserts the power brake, and the GPUs cut their clocks by half or more ('HW Power "
           "Brake Slowdown' in nvidia-smi), so jobs run at a fraction of their speed, often on one "
           "node only. Without a braked GPU it is a warning: the server runs without redundancy, "
           "and one more failure stops it."),
    .detection = N_("The BMC's event log (IPMI SEL) when it is imported (ipmitool sel list or "
                    "elist, docs/import.md): a power supply or power unit sensor's failure, AC "
                    "loss, AC out of range, predicted failure or configuration error asserted "
                    "and not deasserted later, a supply whose presence was deasserted after the "
                    "log saw it present, or a redundancy state other than \"Fully Redundant\" "
                    "holding at the log's end. Critical when one of them removes power or "
                    "redundancy, was logged after the last power-on the log records, and a GPU's "
                    "clock event reasons show the power brake or a hardware slowdown "
                    "(clock.hw-slowdown's test); a warning otherwise. gpudoctor does not read the "
                    "BMC itself: without an imported log it says so where a GPU is braked."),
    .fix = N_("Check the supply the BMC names: its cord, the PDU or circuit feeding it, its LED "
              "(ipmitool sdr type 'Power Supply'); reseat or replace it. The brake releases once "
              "the supplies deliver enough again."),
    .thresholds = NO_THRESHOLDS,
    .explains =
        EXPLAINS({ "clock.hw-slowdown", LINK_ANY,
                   N_("a GPU's clocks are cut by the power brake or a hardware slowdown"),
                   N_("a failed power supply makes the server brake the GPUs"), LINK_FIX_OWN }),
    .check = check_psu,
};

/* ---- host.disk-full ---- */

static void check_fs(const struct rule_ctx *ctx, struct findings *out)
{
    const struct host_info *h = &ctx->facts->snap->host;

    if (!host_valid(h, HOST_S_FS) && h->n_fs == 0) {
        need_host(ctx, out, HOST_S_FS, N_("free disk space"));
        return;
    }
    for (size_t i = 0; i < h->n_fs; i++) {
        const struct host_fs *fs = &h->fs[i];
        bool total = (fs->valid & (UINT64_C(1) << FS_S_SPACE)) && fs->total_bytes > 0;
        double used = 0;
        char a[16], t[16], paths[160], *dir;
        size_t len = 0;
        struct finding *f;

        /* The free space alone says "full" (none left) and "nearly full" (under the floor); the
         * share used needs the size too. */
        if (!(fs->valid & (UINT64_C(1) << FS_S_AVAIL)))
            continue;
        if (total)
            used = 100.0 - pct((double)fs->avail_bytes, (double)fs->total_bytes);
        if ((!total || used < th(ctx, TH_FS_FULL_PCT)) &&
            (double)fs->avail_bytes >= th(ctx, TH_FS_MIN_FREE_MIB) * MIB)
            continue;
        paths[0] = '\0';
        for (size_t k = 0; k < fs->n_paths && len < sizeof(paths); k++)
            len += (size_t)snprintf(paths + len, sizeof(paths) - len, "%s%s", k ? ", " : "",
                                    fs->paths[k]);
        render_bytes(a, sizeof(a), fs->avail_bytes);
        f = finding_new(ctx, out, -1, -1);
        finding_object(f, "%s", fs->mount ? fs->mount : (fs->n_paths ? fs->paths[0] : "?"));
        if (fs->avail_bytes == 0 || used >= 99.5)
            f->severity = SEV_CRITICAL;
        if (total) {
            render_bytes(t, sizeof(t), fs->total_bytes);
            finding_title(f, "%s nearly full: %.0f%% used, %s free",
                          paths[0] ? paths : (fs->mount ? fs->mount : "?"), used, a);
            finding_evidence(f, "file system %s (%s) mounted at %s: %s free of %s",
                             fs->device ? fs->device : "?", fs->fstype ? fs->fstype : "?",
                             fs->mount ? fs->mount : "?", a, t);
        } else {
            finding_title(f, "%s %s: %s free", paths[0] ? paths : (fs->mount ? fs->mount : "?"),
                          fs->avail_bytes == 0 ? "full" : "nearly full", a);
            if (fs->mount)
                finding_evidence(f, "file system %s (%s) mounted at %s: %s free, size unknown",
                                 fs->device ? fs->device : "?", fs->fstype ? fs->fstype : "?",
                                 fs->mount, a);
            else
                finding_evidence(f, "its file system: %s free (its mount and size unknown)", a);
        }
        if (paths[0])
            finding_evidence(f, "holds %s", paths);
        if ((fs->valid & (UINT64_C(1) << FS_S_INODES)) && fs->inodes_total)
            finding_evidence(f, "inodes: %" PRIu64 " free of %" PRIu64, fs->inodes_avail,
                             fs->inodes_total);
        finding_evidence(f, "a full disk makes checkpoints, logs, caches and temporary files "
                            "fail, and jobs crash or stall");
        /* Any path on the file system will do for du -x: the mount point, else what it holds. */
        dir =
            fix_arg(f, "mount point", fs->mount ? fs->mount : (fs->n_paths ? fs->paths[0] : NULL));
        if (dir)
            finding_fix(f,
                        "sudo du -xh --max-depth=2 %s 2>/dev/null | sort -h | tail -15   # what "
                        "fills it",
                        dir);
        free(dir);
        if (fs->n_paths && strcmp(fs->paths[0], "/tmp") == 0)
            finding_fix(f, "find /tmp -xdev -type f -mtime +7 -size +10M -ls   # old large files "
                           "(check before deleting)");
        finding_fix(f, "# old checkpoints, framework caches (~/.cache/torch, ~/.cache/"
                       "huggingface), container images (docker system df)");
        f->impact = f->severity == SEV_CRITICAL ? 1.0 : 0.3;
    }
}

const struct rule rule_host_disk_full = {
    .id = "host.disk-full",
    .severity = SEV_WARNING,
    .category = CAT_THROUGHPUT,
    .title = N_("/tmp or the job's disk nearly full"),
    .explanation = N_(
        "A file system that jobs write to (/, /tmp, a GPU process's working directory) is nearly "
        "full. Checkpoints fail to save, caches and compiled kernels cannot be written, temporary "
        "files fill /tmp and data loading stalls; some programs hang instead of failing. Critical "
        "when it is (practically) full."),
    .detection =
        /* xgettext:no-c-format */ N_(
            "free space (statvfs, what an unprivileged user may still write) of the file "
            "systems holding /, /tmp and the GPU processes' working directories: used at or "
            "above fs_full_pct, or less than fs_min_free_mib free (judged alone when the "
            "size is unknown); critical at 99.5 % or no space left."),
    .fix = N_("Find what fills it (du -xh | sort -h), clean old checkpoints, caches and temporary "
              "files (ask owners), prune container images; put checkpoints and scratch on a larger "
              "volume."),
    .thresholds = THRESHOLDS(TH_FS_FULL_PCT, TH_FS_MIN_FREE_MIB),
    .check = check_fs,
};

/* ---- host.shm-small ---- */

#define SHM_DOCKER_DEFAULT (64.0 * MIB) /* docker's and a Kubernetes pod's /dev/shm */
#define SHM_MAX_PIDS       8

/*
 * Where a /dev/shm is, as far as the snapshot tells: a container's grows only when the container is
 * started again, the host's with a remount. A view or a finding may be in several places at once.
 */
#define SHM_AT_HOST      (1u << 0)
#define SHM_AT_CONTAINER (1u << 1)
#define SHM_AT_UNKNOWN   (1u << 2)

/* One /dev/shm: gpudoctor's own, or the one a group of GPU processes sees (their container's). */
struct shm_view {
    uint64_t total, avail;
    char where[64];             /* "container docker 3f2a..."; "" on the host */
    unsigned place;             /* SHM_AT_*: of gpudoctor, or of the processes that see it */
    int32_t pids[SHM_MAX_PIDS]; /* the GPU processes that see it; none for gpudoctor's own */
    size_t n_pids, n_seen;      /* pids kept, GPU processes that see it */
    bool workers;               /* one of them has child processes: data-loader workers */
    bool own;
};

static double shm_used_pct(const struct shm_view *v)
{
    return v->total ? 100.0 - pct((double)v->avail, (double)v->total) : 0;
}

static bool shm_small(const struct rule_ctx *ctx, const struct shm_view *v)
{
    return (double)v->total < th(ctx, TH_SHM_MIN_MIB) * MIB;
}

static bool shm_full(const struct rule_ctx *ctx, const struct shm_view *v)
{
    return v->total && shm_used_pct(v) >= th(ctx, TH_SHM_FULL_PCT);
}

/* Small or full: what a job that failed on shared memory ran into. */
static bool shm_short(const struct rule_ctx *ctx, const struct shm_view *v)
{
    return shm_small(ctx, v) || shm_full(ctx, v);
}

/*
 * Where a GPU process runs: a container when its cgroup names one or it has a PID namespace of its
 * own; the host when its cgroup names none, unless gpudoctor runs in a container itself (then the
 * process may share gpudoctor's container, whose cgroup path it sees as "/").
 */
static unsigned shm_proc_place(const struct snapshot *s, const struct proc *p)
{
    if (proc_ok(p, PROC_S_CGROUP) && (p->container_id || p->pod_uid))
        return SHM_AT_CONTAINER;
    if (proc_ok(p, PROC_S_NS_DEPTH) && p->ns_depth > 0)
        return SHM_AT_CONTAINER;
    if (!proc_ok(p, PROC_S_CGROUP) || host_container(&s->host) != NULL)
        return SHM_AT_UNKNOWN;
    return SHM_AT_HOST;
}

/* gpudoctor's own /dev/shm first, then one view per container the GPU processes run in. */
static size_t shm_views(const struct rule_ctx *ctx, struct shm_view *views, size_t max)
{
    const struct snapshot *s = ctx->facts->snap;
    const char *ctr = host_container(&s->host);
    size_t n = 0;

    if (host_valid(&s->host, HOST_S_SHM) && n < max) {
        memset(&views[n], 0, sizeof(views[n]));
        views[n].total = s->host.shm_total_bytes;
        views[n].avail = s->host.shm_avail_bytes;
        if (ctr)
            snprintf(views[n].where, sizeof(views[n].where), "%s", ctr);
        if (!host_valid(&s->host, HOST_S_CONTAINER))
            views[n].place = SHM_AT_UNKNOWN;
        else
            views[n].place = ctr ? SHM_AT_CONTAINER : SHM_AT_HOST;
        views[n++].own = true;
    }
    for (size_t i = 0; i < s->procs.n_procs; i++) {
        const struct proc *p = &s->procs.procs[i];
        char where[64];
        size_t k;

        if (p->n_gpus == 0 || !proc_ok(p, PROC_S_SHM) || !proc_ok(p, PROC_S_SHM_AVAIL))
            continue;
        proc_container(where, sizeof(where), p);
        for (k = 0; k < n; k++) {
            if (!views[k].own && views[k].total == p->shm_total_bytes &&
                views[k].avail == p->shm_avail_bytes && strcmp(views[k].where, where) == 0)
                break;
        }
        if (k == n) {
            if (n == max)
                continue;
            memset(&views[n], 0, sizeof(views[n]));
            views[n].total = p->shm_total_bytes;
            views[n].avail = p->shm_avail_bytes;
            snprintf(views[n].where, sizeof(views[n].where), "%s", where);
            n++;
        }
        if (views[k].n_pids < SHM_MAX_PIDS)
            views[k].pids[views[k].n_pids++] = p->pid;
        views[k].n_seen++;
        views[k].workers |= p->n_children > 0;
        views[k].place |= shm_proc_place(s, p);
    }
    return n;
}

/*
 * Whose /dev/shm: "here", "in this docker container", "of pid 48211 (docker 3f2a...)", in
 * English or for people; the caller frees.
 */
static char *shm_whose(const struct shm_view *v, bool people)
{
    if (v->own && v->where[0])
        return people ? xasprintf(_("in this %s container"), v->where)
                      : xasprintf("in this %s container", v->where);
    if (v->own)
        return xstrdup(people ? _("here") : "here");
    if (v->n_seen == 1 && v->where[0])
        return people ? xasprintf(_("of pid %d (%s)"), (int)v->pids[0], v->where)
                      : xasprintf("of pid %d (%s)", (int)v->pids[0], v->where);
    if (v->n_seen == 1)
        return people ? xasprintf(_("of pid %d"), (int)v->pids[0])
                      : xasprintf("of pid %d", (int)v->pids[0]);
    if (v->where[0])
        return people ? xasprintf(_("of %zu GPU processes (%s)"), v->n_seen, v->where)
                      : xasprintf("of %zu GPU processes (%s)", v->n_seen, v->where);
    return people ? xasprintf(_("of %zu GPU processes"), v->n_seen)
                  : xasprintf("of %zu GPU processes", v->n_seen);
}

static void shm_evidence(const struct rule_ctx *ctx, struct finding *f, const struct shm_view *v)
{
    char t[16], a[16], pids[SHM_MAX_PIDS * 12 + 32] = "";
    size_t len = 0;

    render_bytes(t, sizeof(t), v->total);
    render_bytes(a, sizeof(a), v->avail);
    for (size_t i = 0; i < v->n_pids; i++)
        len += (size_t)snprintf(pids + len, sizeof(pids) - len, "%s%d", i ? ", " : "",
                                (int)v->pids[i]);
    if (v->n_seen > v->n_pids)
        snprintf(pids + len, sizeof(pids) - len, " and %zu more", v->n_seen - v->n_pids);
    if (v->own && v->where[0])
        finding_evidence(f, "/dev/shm here, in a %s container: %s, %s free (%.0f %% used)",
                         v->where, t, a, shm_used_pct(v));
    else if (v->own)
        finding_evidence(f, "/dev/shm here: %s, %s free (%.0f %% used)", t, a, shm_used_pct(v));
    else if (v->where[0])
        finding_evidence(f, "/dev/shm of GPU process%s %s, in %s: %s, %s free (%.0f %% used)",
                         v->n_seen == 1 ? "" : "es", pids, v->where, t, a, shm_used_pct(v));
    else
        finding_evidence(f, "/dev/shm of GPU process%s %s: %s, %s free (%.0f %% used)",
                         v->n_seen == 1 ? "" : "es", pids, t, a, shm_used_pct(v));
    if ((double)v->total <= SHM_DOCKER_DEFAULT)
        finding_evidence(f, "64 MiB is what docker and Kubernetes give a container unless told "
                            "otherwise; NVIDIA's containers warn that it may be insufficient");
    else if (shm_small(ctx, v))
        finding_evidence(f, "below shm_min_mib (%.0f MiB)", th(ctx, TH_SHM_MIN_MIB));
    if (v->workers)
        finding_evidence(f, "a GPU process there has child processes (data-loader workers): "
                            "each worker passes its batches through /dev/shm");
}

/* A container's /dev/shm: the container must be started again with more. */
static void shm_fix_container(struct finding *f)
{
    finding_fix(f, "# restart the container with more: docker run --ipc=host (the host's "
                   "/dev/shm, NVIDIA's advice for its containers) or --shm-size=8g; Kubernetes: "
                   "an emptyDir with medium: Memory mounted at /dev/shm");
}

/* The host's /dev/shm: a remount, which /etc/fstab must repeat at boot. */
static void shm_fix_host(struct finding *f)
{
    finding_fix(f, "sudo mount -o remount,size=50%% /dev/shm   # on the host, until reboot; "
                   "to keep it, edit /etc/fstab's /dev/shm line (or add one: tmpfs /dev/shm tmpfs "
                   "defaults,size=50%% 0 0)");
}

/*
 * Whether the host's /dev/shm, of total bytes, is already half the RAM or more: tmpfs's default
 * size, which a remount with size=50% would not grow (and cannot shrink below what is used).
 */
static bool shm_half_ram(const struct rule_ctx *ctx, uint64_t total)
{
    const struct host_info *h = &ctx->facts->snap->host;

    return total != 0 && host_valid(h, HOST_S_MEM) && h->mem_total_bytes != 0 &&
           (double)total >= 0.49 * (double)h->mem_total_bytes;
}

/*
 * The fixes for a /dev/shm in the places given (SHM_AT_*): only the container's where the processes
 * run in containers, only the host's where they run on the host; where that is not known or they
 * run in both, both, the container's first (docker's 64 MiB is the usual cause) unless host_first.
 */
static void shm_fixes(const struct rule_ctx *ctx, struct finding *f, bool full, unsigned place,
                      bool host_first, uint64_t host_total)
{
    bool ctr = place & (SHM_AT_CONTAINER | SHM_AT_UNKNOWN);
    bool host = place & (SHM_AT_HOST | SHM_AT_UNKNOWN);

    if (ctr && host)
        finding_fix(f, "df -h /dev/shm   # where the job runs, in its container if it has one: "
                       "its size and use");
    else if (ctr)
        finding_fix(f, "df -h /dev/shm   # in the job's container: its size and use");
    else
        finding_fix(f, "df -h /dev/shm   # on the host: its size and use");
    if (full)
        finding_fix(f, "ls -la /dev/shm   # segments left by jobs that ended (torch_*, nccl-*, "
                       "psm_*): remove only those of jobs that are gone");
    if (host && shm_half_ram(ctx, host_total)) {
        finding_fix(f, "# the host's /dev/shm is already half its RAM or more (tmpfs's default): "
                       "a remount with size=50%% would not grow it; free what jobs that ended "
                       "left there");
        host = false;
    }
    if (host && host_first)
        shm_fix_host(f);
    if (ctr)
        shm_fix_container(f);
    if (host && !host_first)
        shm_fix_host(f);
    finding_fix(f, "# meanwhile: fewer data-loader workers (num_workers) or smaller batches; "
                   "NCCL_SHM_DISABLE=1 keeps NCCL out of /dev/shm (slower)");
}

/* The job's error says shared memory ran out: every /dev/shm read that is small or full is suspect.
 */
static void shm_reported(const struct rule_ctx *ctx, struct findings *out,
                         const struct shm_view *views, size_t n)
{
    struct finding *f = finding_new(ctx, out, -1, -1);
    bool any_short = false, any_full = false, host_first = false;
    unsigned place = 0;
    uint64_t host_total = 0;

    finding_object(f, "/dev/shm");
    reported_texts(ctx, f, CUDAERR_SHM);
    for (size_t i = 0; i < n; i++)
        any_short |= shm_short(ctx, &views[i]);
    if (n == 0) {
        f->severity = SEV_WARNING;
        finding_title(f, "The job ran out of shared memory (/dev/shm), whose size was not "
                         "read here");
        finding_evidence(f, "the size of /dev/shm where the job ran was not read: run "
                            "gpudoctor check --error where it ran (in its container if it had "
                            "one), or df -h /dev/shm there");
        shm_fixes(ctx, f, false, SHM_AT_UNKNOWN, false, 0);
        f->impact = 0.5;
        return;
    }
    if (!any_short) {
        /* Large and free wherever it was read: not the cause here, but a job that ran in a
         * container of its own had its own /dev/shm. */
        char *we = shm_whose(&views[0], false), *wl = shm_whose(&views[0], true), a[16];

        f->severity = SEV_INFO;
        render_bytes(a, sizeof(a), views[0].avail);
        finding_title_take(f, TWICE("The job's error blames shared memory, but /dev/shm %s "
                                    "has %s free",
                                    (we, a), (wl, a)));
        free(we);
        free(wl);
        for (size_t i = 0; i < n; i++)
            shm_evidence(ctx, f, &views[i]);
        if (views[0].own && views[0].where[0])
            finding_evidence(f, "a job that ran in another container had a /dev/shm of its "
                                "own (64 MiB unless started with --shm-size or --ipc=host): "
                                "read it there");
        else
            finding_evidence(f, "a job that ran in a container had a /dev/shm of its own (64 "
                                "MiB unless started with --shm-size or --ipc=host): read it "
                                "there");
        /* every /dev/shm read is large: the one the job ran out of was a container's own */
        shm_fixes(ctx, f, false, SHM_AT_CONTAINER, false, 0);
        f->impact = 0.3; /* explains the user's own error: first among the notes */
        return;
    }
    f->severity = SEV_CRITICAL;
    for (size_t i = 0; i < n; i++) {
        const struct shm_view *v = &views[i];

        if (!shm_short(ctx, v))
            continue;
        any_full |= shm_full(ctx, v);
        place |= v->place;
        if ((v->place & SHM_AT_HOST) && v->total > host_total)
            host_total = v->total;
        if (f->title == NULL) {
            host_first = v->place == SHM_AT_HOST; /* the title's first */
            char *we = shm_whose(v, false), *wl = shm_whose(v, true), t[16];

            render_bytes(t, sizeof(t), v->total);
            if (shm_small(ctx, v))
                finding_title_take(f, TWICE("The job ran out of shared memory: /dev/shm %s is only "
                                            "%s",
                                            (we, t), (wl, t)));
            else
                finding_title_take(f, TWICE("The job ran out of shared memory: /dev/shm %s is "
                                            "%.0f %% full",
                                            (we, shm_used_pct(v)), (wl, shm_used_pct(v))));
            free(we);
            free(wl);
        }
        shm_evidence(ctx, f, v);
    }
    shm_fixes(ctx, f, any_full, place, host_first, host_total);
    f->impact = 1.0;
}

static void check_shm(const struct rule_ctx *ctx, struct findings *out)
{
    struct shm_view views[16];
    size_t n = shm_views(ctx, views, ARRAY_SIZE(views));

    if (reported_find(ctx, CUDAERR_SHM, NULL) >= 0) {
        shm_reported(ctx, out, views, n);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const struct shm_view *v = &views[i];
        bool full = shm_full(ctx, v), shared = shm_small(ctx, v) && (v->n_seen > 1 || v->workers);
        char t[16], a[16], *we, *wl;
        struct finding *f;

        /* Without an error, only what GPU jobs see is judged: gpudoctor's own serves nobody. */
        if (v->own || (!full && !shared && (double)v->total > SHM_DOCKER_DEFAULT))
            continue;
        f = finding_new(ctx, out, -1, v->pids[0]);
        finding_object(f, "/dev/shm");
        render_bytes(t, sizeof(t), v->total);
        render_bytes(a, sizeof(a), v->avail);
        we = shm_whose(v, false);
        wl = shm_whose(v, true);
        if (full)
            finding_title_take(f, TWICE("Shared memory /dev/shm %s nearly full: %.0f %% used, %s "
                                        "free",
                                        (we, shm_used_pct(v), a), (wl, shm_used_pct(v), a)));
        else
            finding_title_take(f, TWICE("Shared memory /dev/shm %s is only %s", (we, t), (wl, t)));
        free(we);
        free(wl);
        if (!full && !shared)
            f->severity = SEV_INFO;
        shm_evidence(ctx, f, v);
        finding_evidence(f, "data-loader workers, torch multiprocessing and NCCL's "
                            "shared-memory transport need room there; when it runs out, workers "
                            "die of a bus error and NCCL fails to create its segments");
        shm_fixes(ctx, f, full, v->place, v->place == SHM_AT_HOST,
                  v->place & SHM_AT_HOST ? v->total : 0);
        f->impact = f->severity == SEV_INFO ? 0.0 : 0.5;
    }
}

const struct rule rule_host_shm_small = {
    .id = "host.shm-small",
    .severity = SEV_WARNING,
    .category = CAT_THROUGHPUT,
    .title = N_("/dev/shm too small or full for the job"),
    .explanation =
        N_("PyTorch's data-loader workers pass every batch to the training process through POSIX "
           "shared memory (/dev/shm), torch multiprocessing shares tensors there, and NCCL's "
           "shared-memory transport puts its buffers there. A container gets its own /dev/shm of "
           "64 MiB unless told otherwise (docker --shm-size or --ipc=host, a Kubernetes emptyDir "
           "of medium Memory), which PyTorch's README and NVIDIA's containers call insufficient. "
           "When it runs out, a worker dies of a bus error, a tensor cannot be written (No space "
           "left on device) or NCCL cannot create its segment, and the job fails. Critical when "
           "the job's error says it ran out and /dev/shm is small or full; a warning when its size "
           "could not be read; information when every /dev/shm read is large and free (the job may "
           "have had a container's own); without an error, a warning for a GPU job's /dev/shm that "
           "is nearly "
           "full, or small and used by several GPU processes or data-loader workers, information "
           "for 64 MiB alone."),
    .detection =
        /* xgettext:no-c-format */ N_(
            "statvfs of /dev/shm where gpudoctor runs and as each GPU process sees it (in its "
            "mount namespace, /proc/PID/root/dev/shm): smaller than shm_min_mib, or used at or "
            "above shm_full_pct; with an error given by --error that the catalogue reads as "
            "shared memory running out (PyTorch's bus error in a DataLoader worker, 'unable to "
            "write to file </torch_...>', NCCL's 'Error while creating shared memory segment')."),
    .fix = N_("Give the job's container more shared memory (docker run --ipc=host or "
              "--shm-size; a Memory emptyDir at /dev/shm in Kubernetes), or, for a job on the "
              "host, remount the host's /dev/shm larger and edit its /etc/fstab line to keep it; "
              "remove segments left in a full /dev/shm by jobs that ended; meanwhile fewer "
              "data-loader workers."),
    .thresholds = THRESHOLDS(TH_SHM_MIN_MIB, TH_SHM_FULL_PCT),
    .check = check_shm,
};
