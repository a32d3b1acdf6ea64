/*
 * Health: NVML not answering or not starting, GPUs lost or inaccessible or missing, ECC and
 * memory repair, and what the kernel log says (hung tasks in the driver, OOM kills of GPU jobs).
 * XIDs are classified in rules-xid.c.
 */
#include "nvml/nvml-abi.h"
#include "rules/rule-impl.h"
#include "util/strutil.h"
#include "util/xalloc.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- kernel-log helpers, shared with rules-xid.c ---- */

double klog_age_s(const struct rule_ctx *ctx, const struct klog_event *ev)
{
    const struct host_info *h = &ctx->facts->snap->host;

    double up;

    if ((ev->valid & (UINT64_C(1) << KLOG_S_TIME)) && ctx->facts->snap->time_ms > 0 &&
        ev->time_ms <= ctx->facts->snap->time_ms)
        return (double)(ctx->facts->snap->time_ms - ev->time_ms) / 1000.0;
    up = (double)ev->uptime_us / 1e6;
    if ((ev->valid & (UINT64_C(1) << KLOG_S_UPTIME)) && host_valid(h, HOST_S_UPTIME) &&
        h->uptime_s >= up)
        return h->uptime_s - up;
    return -1;
}

bool klog_recent(const struct rule_ctx *ctx, const struct klog_event *ev)
{
    double age = klog_age_s(ctx, ev), max = th(ctx, TH_KLOG_MAX_AGE_H) * 3600.0;

    return max <= 0 || age < 0 || age <= max;
}

/* The GPU a kernel-log PCI address ("0000:3b:00") belongs to. */
const struct facts_gpu *klog_gpu(const struct rule_ctx *ctx, const char *pci)
{
    if (pci == NULL)
        return NULL;
    for (size_t i = 0; i < ctx->facts->n_gpus; i++) {
        const struct gpu *g = ctx->facts->gpus[i].g;

        if (gpu_valid(g, GPU_S_PCI_BUS_ID) && g->pci_bus_id && driver_pci_same(pci, g->pci_bus_id))
            return &ctx->facts->gpus[i];
    }
    return NULL;
}

void klog_when(struct klog_time *w, const struct rule_ctx *ctx, const struct klog_event *ev)
{
    char a[16];
    double age = klog_age_s(ctx, ev);

    if (age < 0) {
        snprintf(w->en, sizeof(w->en), "at an unknown time");
        snprintf(w->l, sizeof(w->l), "%s", _("at an unknown time"));
        return;
    }
    render_duration(a, sizeof(a), age);
    snprintf(w->en, sizeof(w->en), "%s ago", a);
    snprintf(w->l, sizeof(w->l), _("%s ago"), a);
}

bool klog_source_known(const struct rule_ctx *ctx)
{
    return (ctx->facts->snap->driver.valid & (UINT64_C(1) << DRIVER_S_KLOG)) ||
           ctx->facts->snap->driver.n_events > 0;
}

static int32_t klog_pid(const struct klog_event *ev)
{
    return (ev->valid & (UINT64_C(1) << KLOG_S_PID)) ? ev->pid : -1;
}

/* ---- health.nvml-hung ---- */

bool nvml_wedged(const struct rule_ctx *ctx)
{
    return ctx->facts->snap->collectors[COLLECTOR_NVML].state == CS_TIMEOUT ||
           ctx->facts->snap->nvml.hung_call != NULL;
}

static void check_nvml_hung(const struct rule_ctx *ctx, struct findings *out)
{
    const struct collector_status *c = &ctx->facts->snap->collectors[COLLECTOR_NVML];
    const struct nvml_system *n = &ctx->facts->snap->nvml;
    struct finding *f;
    struct klog_time when;

    if (!nvml_wedged(ctx))
        return;
    f = finding_new(ctx, out, -1, -1);
    finding_title(f, "NVML did not answer%s%s: the NVIDIA driver is wedged",
                  n->hung_call ? " in " : "", n->hung_call ? n->hung_call : "");
    if (n->hung_call)
        finding_evidence(f, "%s did not return before the deadline", n->hung_call);
    if (c->detail)
        finding_evidence_take(f,
                              TWICE("NVML collector: %s", (c->detail), (collector_detail_text(c))));
    finding_evidence(f, "nvidia-smi and every CUDA program will hang the same way");
    for (size_t i = 0; i < ctx->facts->snap->driver.n_events; i++) {
        const struct klog_event *ev = &ctx->facts->snap->driver.events[i];

        if ((ev->kind == KLOG_HUNG_TASK || ev->kind == KLOG_XID) && klog_recent(ctx, ev)) {
            klog_when(&when, ctx, ev);
            finding_evidence_take(f, TWICE("kernel log %s: %s",
                                           (when.en, ev->message ? ev->message : "?"),
                                           (when.l, ev->message ? ev->message : "?")));
        }
    }
    finding_fix(f, "sudo dmesg -T | grep -iE 'NVRM|Xid|blocked for more' | tail -40   # what "
                   "the driver said");
    finding_fix(f, "# do not run nvidia-smi in a loop meanwhile: each call hangs too");
    finding_fix(f, "ps -eo pid,stat,wchan:32,args | awk '$2 ~ /D/'   # processes stuck in the "
                   "kernel");
    finding_fix(f, "# a wedged driver rarely recovers: drain, then sudo reboot");
    f->impact =
        ctx->facts->snap->nvml.device_count ? (double)ctx->facts->snap->nvml.device_count : 8.0;
}

const struct rule rule_health_nvml_hung = {
    .id = "health.nvml-hung",
    .severity = SEV_CRITICAL,
    .category = CAT_HEALTH,
    .title = N_("NVML not answering: wedged driver"),
    .explanation = N_(
        "A call into NVML (the library under nvidia-smi) did not return before gpudoctor's "
        "deadline. That happens when the kernel driver is stuck: after a GPU fault, a hung GPU "
        "reset, a GSP firmware timeout (XID 119/120) or a deadlock in the driver. nvidia-smi then "
        "hangs forever, often uninterruptibly, and so does every CUDA program that starts. "
        "gpudoctor ran NVML in a child process, so it could report this instead of hanging."),
    .detection = N_("the NVML collector ended by its deadline (collectors.nvml.state = timeout) or "
                    "recorded the call that hung (nvml.hung_call); XIDs and hung-task messages "
                    "from the kernel log within klog_max_age_h are added as evidence."),
    .fix = N_("Read the kernel log for XIDs and hung tasks; stop polling tools (nvidia-smi loops, "
              "exporters) so they do not pile up; drain the node and reboot. If it recurs, record "
              "nvidia-bug-report.sh output and check the driver version for known problems."),
    .thresholds = THRESHOLDS(TH_KLOG_MAX_AGE_H),
    .check = check_nvml_hung,
};

/* ---- health.nvml-failed ---- */

/* The NVIDIA module is known to be loaded (/proc/driver/nvidia or /sys/module/nvidia). */
static bool module_loaded(const struct snapshot *s)
{
    return (s->driver.valid & (UINT64_C(1) << DRIVER_S_MODULE)) != 0 && s->driver.module_loaded;
}

void dev_files_evidence(struct finding *f, const struct driver_info *d)
{
    uint32_t n = d->dev_gpus;

    if (d->dev_ctl)
        finding_evidence_take(
            f, TWICE_N("/dev/nvidiactl is here, with %" PRIu32 " GPU device file",
                       "/dev/nvidiactl is here, with %" PRIu32 " GPU device files", n, (n), (n)));
    else if (n > 0)
        finding_evidence_take(f, TWICE_N("no /dev/nvidiactl here, but %" PRIu32 " GPU device file",
                                         "no /dev/nvidiactl here, but %" PRIu32 " GPU device files",
                                         n, (n), (n)));
}

bool nvml_unreached(const struct snapshot *s)
{
    const struct nvml_system *n = &s->nvml;

    if (!n->attempted || (n->load_error == 0 && n->init_rc != NVML_ERROR_DRIVER_NOT_LOADED))
        return false;
    if (module_loaded(s))
        return true;
    if (host_container(&s->host) == NULL)
        return false; /* on a host, a module not seen loaded is stack.no-driver's */
    /* In a container: DRIVER_NOT_LOADED says its library is here, for GPUs; a missing library
     * only where the host is seen to have GPUs. */
    return n->init_rc == NVML_ERROR_DRIVER_NOT_LOADED || s->pcie.n_gpus > 0;
}

/*
 * NVML's library missing, or DRIVER_NOT_LOADED, while the driver is there to reach: its module
 * loaded, or gpudoctor in a container (the module and the bus seen there are the host's). In a
 * container it was started without the GPUs: its runtime then mounts neither the device files
 * nor the driver's libraries, and the fix is how it is started. On a host whose module is loaded
 * the library or the device files are missing.
 */
static void nvml_unreached_finding(const struct rule_ctx *ctx, struct findings *out)
{
    const struct snapshot *s = ctx->facts->snap;
    const struct nvml_system *n = &s->nvml;
    const struct driver_info *d = &s->driver;
    const char *ctr = host_container(&s->host);
    bool bus_read = (s->pcie.valid & (UINT64_C(1) << PCIE_I_GPUS)) != 0;
    struct finding *f = finding_new(ctx, out, -1, -1);

    if (ctr == NULL && n->load_error != 0)
        finding_title(f, "NVML cannot reach the loaded NVIDIA driver: its library is missing");
    else if (ctr == NULL)
        finding_title(f, "NVML cannot reach the loaded NVIDIA driver: its device files are "
                         "missing");
    else if (bus_read && s->pcie.n_gpus == 0 && !module_loaded(s))
        finding_title(f,
                      "Inside this container (%s) NVML finds no NVIDIA driver, and the host's "
                      "PCI bus shows no NVIDIA GPU",
                      ctr);
    else
        finding_title(f,
                      "NVML cannot reach the NVIDIA driver from inside this container (%s): it "
                      "was started without the GPUs",
                      ctr);
    if (n->load_error != 0)
        finding_evidence(f, "%s could not be loaded: %s", n->library ? n->library : "NVML",
                         n->load_detail ? n->load_detail : "not found");
    else
        finding_evidence(f, "nvmlInit_v2 returned DRIVER_NOT_LOADED (%d)", (int)n->init_rc);
    if (ctr != NULL)
        finding_evidence(f, "gpudoctor runs inside a container: %s (%s)", ctr,
                         s->host.container_sign ? s->host.container_sign : "?");
    if (d->valid & (UINT64_C(1) << DRIVER_S_DEVICES)) {
        if (!d->dev_ctl && d->dev_gpus == 0)
            finding_evidence(f, "no /dev/nvidiactl and no /dev/nvidiaN here: no GPU device file");
        else
            dev_files_evidence(f, d);
    }
    if (module_loaded(s))
        finding_evidence(f, "the NVIDIA kernel module %s is loaded: the driver runs",
                         d->module_version ? d->module_version : "");
    else if (d->valid & (UINT64_C(1) << DRIVER_S_MODULE))
        finding_evidence(f, "no NVIDIA kernel module is loaded (sysfs shows the host's): "
                            "stack.no-driver");
    else
        finding_evidence(f, "whether the host's NVIDIA kernel module is loaded was not read");
    if (bus_read && s->pcie.n_gpus == 0 && !module_loaded(s)) {
        f->severity = SEV_INFO;
        finding_fix(f, "# nothing to pass in: this host shows no NVIDIA GPU");
        f->impact = 0;
        return;
    }
    if (ctr == NULL) {
        finding_fix(f, "ldconfig -p | grep libnvidia-ml   # the driver's user-space library, "
                       "installed with the same version as the module");
        finding_fix(f, "ls -l /dev/nvidia*   # missing device files: sudo nvidia-modprobe -c 0 "
                       "-u makes them");
        finding_fix(f, "# inside a container gpudoctor could not tell: start the container with "
                       "the GPUs (docker run --gpus all ...)");
        f->impact = 4.0;
        return;
    }
    finding_fix(f, "# on the host, outside the container: nvidia-smi must list the GPUs (if it "
                   "fails there too, the host's driver is the problem)");
    if (strcmp(ctr, "docker") == 0) {
        finding_fix(f, "# start the container with the GPUs: docker run --gpus all ... (NVIDIA "
                       "Container Toolkit; older setups: --runtime=nvidia or nvidia-docker)");
        finding_fix(f, "sudo nvidia-ctk runtime configure --runtime=docker && sudo systemctl "
                       "restart docker   # on the host, when docker refuses --gpus");
    } else if (strcmp(ctr, "podman") == 0) {
        finding_fix(f, "# start the container with the GPUs: podman run --device "
                       "nvidia.com/gpu=all ... (after sudo nvidia-ctk cdi generate --output="
                       "/etc/cdi/nvidia.yaml on the host)");
    } else if (strcmp(ctr, "kubernetes") == 0 || strcmp(ctr, "containerd") == 0 ||
               strcmp(ctr, "cri-o") == 0) {
        finding_fix(f, "# request the GPUs in the pod spec (resources: limits: nvidia.com/gpu: "
                       "1), with NVIDIA's device plugin or GPU Operator running on the node");
    } else {
        finding_fix(f, "# pass /dev/nvidiactl, /dev/nvidia-uvm and the /dev/nvidiaN of the GPUs "
                       "into the container, with the driver's libraries");
    }
    f->impact = 4.0;
}

static void check_nvml_failed(const struct rule_ctx *ctx, struct findings *out)
{
    const struct nvml_system *n = &ctx->facts->snap->nvml;
    const struct collector_status *c = &ctx->facts->snap->collectors[COLLECTOR_NVML];
    const char *name;
    struct finding *f;

    if (nvml_unreached(ctx->facts->snap)) {
        nvml_unreached_finding(ctx, out);
        return;
    }
    if (!n->attempted || n->load_error != 0 || c->state == CS_TIMEOUT || n->hung_call)
        return;
    /* Not asked (evidence that does not say, JF_RC_NOT_COLLECTED) is no failure. */
    if (n->init_rc == JF_RC_NOT_COLLECTED ||
        (n->init_rc == 0 && (n->device_count_rc == 0 || n->device_count_rc == JF_RC_NOT_COLLECTED)))
        return;
    /* Those two have findings of their own (stack.no-driver, stack.driver-mismatch). */
    if (n->init_rc == NVML_ERROR_DRIVER_NOT_LOADED ||
        n->init_rc == NVML_ERROR_LIB_RM_VERSION_MISMATCH)
        return;
    f = finding_new(ctx, out, -1, -1);
    if (n->init_rc != 0) {
        name = nvml_rc_name(n->init_rc);
        finding_title(f, "NVML could not start: %s",
                      n->init_error ? n->init_error
                      : name        ? name
                                    : "unknown error");
        finding_evidence(f, "nvmlInit_v2 returned %s (%d)", name ? name : "?", (int)n->init_rc);
    } else {
        name = nvml_rc_name(n->device_count_rc);
        finding_title(f, "NVML could not count the GPUs: %s", name ? name : "unknown error");
        finding_evidence(f, "nvmlDeviceGetCount_v2 returned %s (%d)", name ? name : "?",
                         (int)n->device_count_rc);
    }
    if (n->library)
        finding_evidence(f, "library %s", n->library);
    if (n->init_rc == NVML_ERROR_NO_PERMISSION) {
        finding_fix(f, "ls -l /dev/nvidia*   # the device files must be readable and writable");
        finding_fix(f, "# run as root, or as a user in the group that owns /dev/nvidiactl; in a "
                       "container, pass the devices (--gpus all)");
    } else {
        finding_fix(f, "sudo dmesg -T | grep -iE 'NVRM|nvidia' | tail -30   # what the driver "
                       "said");
        finding_fix(f, "nvidia-smi   # the same library, for its own message");
    }
    f->impact = 4.0;
}

const struct rule rule_health_nvml_failed = {
    .id = "health.nvml-failed",
    .severity = SEV_CRITICAL,
    .category = CAT_HEALTH,
    .title = N_("NVML could not start or count the GPUs"),
    .explanation = N_(
        "The NVIDIA management library loaded but refused to work: initialisation or the device "
        "count failed. Without it nvidia-smi fails too, and usually CUDA does as well. Common "
        "causes: no permission on /dev/nvidiactl (containers without the devices, device files "
        "with wrong modes), a driver half-loaded after an error, or an internal driver error. The "
        "error name in the evidence says which. Inside a container started without the GPUs "
        "(plain docker run, a pod that requests none) NVML finds neither its library nor the "
        "device files and says the driver is not loaded, although the host's driver runs: the "
        "container's start is the cause, not the driver. On a host whose module is loaded, the "
        "same means the driver's library or its device files are missing. (Driver not loaded "
        "and driver/library mismatch on the host have their own findings.)"),
    .detection = N_(
        "nvmlInit_v2 or nvmlDeviceGetCount_v2 returned an error other than DRIVER_NOT_LOADED and "
        "LIB_RM_VERSION_MISMATCH. NVML's library missing or DRIVER_NOT_LOADED while the driver "
        "collector saw the NVIDIA module loaded, or inside a container (/.dockerenv, "
        "/run/.containerenv, /run/systemd/container, the cgroup path, a Kubernetes service "
        "account): DRIVER_NOT_LOADED, or the library missing where the host's module or NVIDIA "
        "GPUs show. Information when the host's PCI bus was read and shows no NVIDIA GPU. When "
        "sysfs (the host's) shows no NVIDIA module loaded, stack.no-driver comes first and "
        "explains it. The device files present are shown."),
    .fix = N_("Follow the error: permissions on /dev/nvidia* (or pass the devices into the "
              "container), the kernel log for driver errors, nvidia-smi for its own message. In a "
              "container: start it with the GPUs (docker run --gpus all, podman --device "
              "nvidia.com/gpu=all, nvidia.com/gpu in the pod's limits)."),
    .thresholds = NO_THRESHOLDS,
    .check = check_nvml_failed,
};

/* ---- health.gpu-lost ---- */

static bool gpu_any_rc(const struct gpu *g, int32_t rc)
{
    if (g->handle_rc == rc)
        return true;
    for (size_t i = 0; i < GPU_S__COUNT; i++) {
        if (g->rc[i] == rc)
            return true;
    }
    return false;
}

static bool bus_event(const struct klog_event *ev)
{
    return ev->kind == KLOG_FALLEN_OFF_BUS || (ev->kind == KLOG_XID && ev->xid == 79);
}

/*
 * NVIDIA's action for a GPU off the bus (Xid 79) is a reboot: a reset rarely brings it back, and
 * an nvidia-smi -r on it can hang like any query of a lost GPU, so none is offered.
 */
static void lost_fixes(struct finding *f)
{
    finding_fix(f, "# drain the node, then sudo reboot (a cold power cycle if the GPU is still "
                   "missing after it): a GPU reset rarely brings a lost GPU back");
    finding_fix(f, "sudo journalctl -k | grep -iE 'NVRM|AER|pcie' | tail -50   # what happened "
                   "on the bus");
    finding_fix(f, "# check power cables, seating, temperature; if it recurs, contact the vendor "
                   "(RMA)");
}

/*
 * The GPU a bus event is about. A lost GPU has no PCI address left in NVML, so when exactly one
 * GPU is lost that way, the events no other GPU claims are its.
 */
static const struct facts_gpu *bus_event_gpu(const struct rule_ctx *ctx,
                                             const struct klog_event *ev)
{
    const struct facts_gpu *v = klog_gpu(ctx, ev->pci), *lost = NULL;
    size_t n_lost = 0;

    if (v != NULL)
        return v;
    for (size_t i = 0; i < ctx->facts->n_gpus; i++) {
        if (ctx->facts->gpus[i].g->handle_rc == NVML_ERROR_GPU_IS_LOST &&
            !gpu_valid(ctx->facts->gpus[i].g, GPU_S_PCI_BUS_ID)) {
            lost = &ctx->facts->gpus[i];
            n_lost++;
        }
    }
    return n_lost == 1 ? lost : NULL;
}

/*
 * Its handle opened, but its temperature, power, memory and utilisation all failed with UNKNOWN:
 * nvidia-smi's row of "ERR!" and "Unknown Error", what a GPU the driver can no longer reach
 * answers. One failed reading is not enough: all four must have been asked and failed.
 */
static bool readings_fail(const struct gpu *g)
{
    static const int core[] = { GPU_S_TEMP, GPU_S_POWER, GPU_S_MEM_USED, GPU_S_UTIL_GPU };

    if (g->handle_rc != 0)
        return false;
    for (size_t i = 0; i < ARRAY_SIZE(core); i++) {
        if (g->rc[core[i]] != NVML_ERROR_UNKNOWN)
            return false;
    }
    return true;
}

bool gpu_lost_now(const struct rule_ctx *ctx, const struct gpu *g, const char *pci)
{
    const struct driver_info *d = &ctx->facts->snap->driver;

    if (g != NULL && (gpu_any_rc(g, NVML_ERROR_GPU_IS_LOST) || g->handle_rc == NVML_ERROR_UNKNOWN ||
                      readings_fail(g)))
        return true;
    for (size_t k = 0; k < d->n_events; k++) {
        const struct klog_event *ev = &d->events[k];
        const struct facts_gpu *v;

        if (!bus_event(ev) || !klog_recent(ctx, ev))
            continue;
        v = bus_event_gpu(ctx, ev);
        if (g != NULL ? v != NULL && v->g == g
                      : pci != NULL && ev->pci != NULL && driver_pci_same(ev->pci, pci))
            return true;
    }
    return false;
}

/*
 * Whether NVML listed every GPU with its address: only then does "not listed" mean gone. A
 * collection that hung may have stopped before its list was complete.
 */
static bool nvml_list_known(const struct rule_ctx *ctx)
{
    const struct nvml_system *n = &ctx->facts->snap->nvml;

    return n->attempted && n->load_error == 0 && n->init_rc == 0 && n->device_count_rc == 0 &&
           !nvml_wedged(ctx);
}

static void check_gpu_lost(const struct rule_ctx *ctx, struct findings *out)
{
    const struct driver_info *d = &ctx->facts->snap->driver;
    struct klog_time when;

    for (size_t i = 0; i < ctx->facts->n_gpus; i++) {
        const struct gpu *g = ctx->facts->gpus[i].g;
        bool nvml = gpu_any_rc(g, NVML_ERROR_GPU_IS_LOST), log = false;
        /* Counted, but its handle cannot be opened for an unknown reason: nvidia-smi's "Unable to
         * determine the device handle for GPU ...: Unknown Error", what a GPU that dropped off
         * the bus or shut down (overheating, power) leaves behind. */
        bool unopened = !nvml && g->handle_rc == NVML_ERROR_UNKNOWN;
        bool silent = !nvml && !unopened && readings_fail(g);
        struct finding *f;

        for (size_t k = 0; k < d->n_events && !log; k++)
            log = bus_event(&d->events[k]) && klog_recent(ctx, &d->events[k]) &&
                  bus_event_gpu(ctx, &d->events[k]) == &ctx->facts->gpus[i];
        if (!nvml && !log && !unopened && !silent)
            continue;
        f = finding_new(ctx, out, (int32_t)g->index, -1);
        if (silent && !log) {
            finding_title(f, "GPU %" PRIu32 " does not answer: its readings fail (Unknown Error)",
                          g->index);
            finding_evidence(f, "temperature, power, memory and utilisation all returned UNKNOWN "
                                "(nvidia-smi: 'ERR!'): the driver cannot reach the GPU, most "
                                "often off the bus or after a fault");
            if (!klog_source_known(ctx))
                finding_evidence(f, "the kernel log was not read: it says whether the GPU fell "
                                    "off the bus (Xid 79) or reported another fault");
        } else if (unopened && !log) {
            finding_title(f,
                          "GPU %" PRIu32 " lost: NVML counts it but cannot open it (Unknown "
                          "Error)",
                          g->index);
            finding_evidence(f,
                             "nvmlDeviceGetHandleByIndex_v2(%" PRIu32 ") returned UNKNOWN "
                             "(nvidia-smi: 'Unable to determine the device handle for GPU'): "
                             "the driver lost it, most often off the bus, or it shut down "
                             "(overheating, power)",
                             g->index);
            if (!klog_source_known(ctx))
                finding_evidence(f, "the kernel log was not read: it says whether the GPU fell "
                                    "off the bus (Xid 79) or failed to initialise");
        } else {
            finding_title(f, "GPU %" PRIu32 " has fallen off the bus%s", g->index,
                          nvml ? " (NVML: GPU_IS_LOST)" : "");
        }
        if (nvml)
            finding_evidence(f, "NVML answers GPU_IS_LOST for this GPU");
        else if (unopened && log)
            finding_evidence(f, "nvmlDeviceGetHandleByIndex_v2(%" PRIu32 ") returned UNKNOWN",
                             g->index);
        else if (silent && log)
            finding_evidence(f, "temperature, power, memory and utilisation all returned "
                                "UNKNOWN");
        for (size_t k = 0; k < d->n_events; k++) {
            const struct klog_event *ev = &d->events[k];

            if (bus_event(ev) && klog_recent(ctx, ev) &&
                bus_event_gpu(ctx, ev) == &ctx->facts->gpus[i]) {
                klog_when(&when, ctx, ev);
                finding_evidence_take(f, TWICE("kernel log %s: %s",
                                               (when.en, ev->message ? ev->message : "?"),
                                               (when.l, ev->message ? ev->message : "?")));
            }
        }
        lost_fixes(f);
        f->impact = 2.0;
    }
    /* Lost GPUs NVML no longer lists are known only by their PCI address: one finding each. */
    for (size_t k = 0; k < d->n_events; k++) {
        const struct klog_event *ev = &d->events[k];
        struct finding *f;
        bool seen = false;

        if (!bus_event(ev) || !klog_recent(ctx, ev) || ev->pci == NULL ||
            bus_event_gpu(ctx, ev) != NULL)
            continue;
        for (size_t j = 0; j < out->n && !seen; j++)
            seen = out->items[j].rule == ctx->rule && out->items[j].subject.object &&
                   strcmp(out->items[j].subject.object, ev->pci) == 0;
        if (seen)
            continue;
        f = finding_new(ctx, out, -1, -1);
        finding_object(f, "%s", ev->pci);
        finding_title(f, "GPU at PCI %s has fallen off the bus", ev->pci);
        klog_when(&when, ctx, ev);
        finding_evidence_take(f,
                              TWICE("kernel log %s: %s", (when.en, ev->message ? ev->message : "?"),
                                    (when.l, ev->message ? ev->message : "?")));
        if (nvml_list_known(ctx))
            finding_evidence(f, "NVML does not list a GPU at that address any more");
        else
            finding_evidence(f, "NVML's list of GPUs is not known, so the address names no GPU "
                                "index");
        lost_fixes(f);
        f->impact = 2.0;
    }
    if (!klog_source_known(ctx))
        need_collector(ctx, out, COLLECTOR_KLOG);
}

const struct rule rule_health_gpu_lost = {
    .id = "health.gpu-lost",
    .severity = SEV_CRITICAL,
    .category = CAT_HEALTH,
    .title = N_("GPU lost: fallen off the bus"),
    .explanation = N_(
        "The driver can no longer reach the GPU over PCIe ('GPU has fallen off the bus', XID 79). "
        "Every job on it died or hangs, NVML answers GPU_IS_LOST, and the GPU stays unusable until "
        "it is reset, which usually means a reboot. Causes, most likely first: the PCIe link "
        "(seating, risers, a failing slot), power delivery (cables, PSU), overheating, or a "
        "hardware fault of the GPU. If it happens again after a reboot, the card or its slot is "
        "failing."),
    .detection = N_("NVML returns GPU_IS_LOST for the GPU's handle or any of its fields; or it "
                    "counts the GPU but its handle fails with UNKNOWN (nvidia-smi's 'Unable to "
                    "determine the device handle for GPU ...: Unknown Error', left by a GPU that "
                    "dropped off the bus or shut down); or its handle opens but its temperature, "
                    "power, memory and utilisation all fail with UNKNOWN (nvidia-smi's 'ERR!'); "
                    "or the kernel log has 'GPU has fallen off "
                    "the bus' or XID 79 for its PCI address within klog_max_age_h (also for GPUs "
                    "NVML no longer lists)."),
    .fix =
        N_("Drain the node and reboot it (a cold power cycle if the GPU is still missing): a GPU "
           "reset rarely brings a lost GPU back. Read the kernel "
           "log for AER and PCIe errors before the event, check power cables and seating, compare "
           "temperatures. A recurrence means hardware: contact the vendor."),
    .thresholds = THRESHOLDS(TH_KLOG_MAX_AGE_H),
    .explains =
        EXPLAINS({ "health.gpu-missing", LINK_SAME_GPU, NULL,
                   N_("a GPU lost from the bus is missing from NVML's list"), LINK_FIX_OWN },
                 { "health.gpu-inaccessible", LINK_SAME_GPU, NULL,
                   N_("a lost GPU answers no query"), LINK_FIX_OWN },
                 { "health.nvml-hung", LINK_ANY, NULL,
                   N_("the driver waits on the lost GPU, so NVML hangs"), LINK_FIX_OWN },
                 { "health.nvml-failed", LINK_ANY, NULL,
                   N_("with a GPU lost, NVML cannot start or count the GPUs"), LINK_FIX_OWN },
                 { "health.no-gpu-found", LINK_ANY, NULL,
                   N_("the GPU lost from the bus is one NVML cannot find"), LINK_FIX_OWN }),
    .check = check_gpu_lost,
};

/* ---- health.gpu-inaccessible ---- */

static void check_gpu_inaccessible(const struct rule_ctx *ctx, struct findings *out)
{
    for (size_t i = 0; i < ctx->facts->n_gpus; i++) {
        const struct gpu *g = ctx->facts->gpus[i].g;
        const char *name;
        struct finding *f;

        /* GPU_IS_LOST and UNKNOWN are health.gpu-lost's. */
        if (g->handle_rc == 0 || g->handle_rc == NVML_ERROR_GPU_IS_LOST ||
            g->handle_rc == NVML_ERROR_UNKNOWN)
            continue;
        name = nvml_rc_name(g->handle_rc);
        f = finding_new(ctx, out, (int32_t)g->index, -1);
        finding_evidence(f, "nvmlDeviceGetHandleByIndex_v2(%" PRIu32 ") returned %s", g->index,
                         name ? name : "an unknown error");
        switch (g->handle_rc) {
        case NVML_ERROR_INSUFFICIENT_POWER:
            finding_title(f,
                          "GPU %" PRIu32 " refuses to start: external power cables not "
                          "properly attached",
                          g->index);
            finding_fix(f, "# power the node off, check and reseat the GPU's power connectors");
            break;
        case NVML_ERROR_NO_PERMISSION:
            f->severity = SEV_WARNING;
            finding_title(f, "GPU %" PRIu32 " is not accessible to this user or container",
                          g->index);
            finding_evidence(f, "cgroup device rules or /dev/nvidia* permissions keep it out of "
                                "reach");
            finding_fix(f, "ls -l /dev/nvidia*   # device file permissions");
            finding_fix(f, "# run gpudoctor as root on the host to see every GPU");
            break;
        case NVML_ERROR_RESET_REQUIRED:
            finding_title(f, "GPU %" PRIu32 " needs a reset before it can be used again", g->index);
            fix_gpu_reset(ctx, f, g, N_("no process may use it"));
            break;
        case NVML_ERROR_IRQ_ISSUE:
            finding_title(f, "GPU %" PRIu32 " unusable: the kernel reports an interrupt problem",
                          g->index);
            finding_fix(f, "sudo dmesg -T | grep -iE 'NVRM|irq|msi' | tail -30");
            break;
        default:
            finding_title(f, "GPU %" PRIu32 " not accessible: %s", g->index,
                          name ? name : "unknown error");
            finding_fix(f, "nvidia-smi -i %" PRIu32 " -q   # the driver's own view", g->index);
            finding_fix(f, "sudo dmesg -T | grep -iE 'NVRM|Xid' | tail -30");
            break;
        }
        f->impact = 1.5;
    }
}

const struct rule rule_health_gpu_inaccessible = {
    .id = "health.gpu-inaccessible",
    .severity = SEV_CRITICAL,
    .category = CAT_HEALTH,
    .title = N_("GPU present but not accessible"),
    .explanation = N_(
        "NVML counts the GPU but cannot open it. The error says why: INSUFFICIENT_POWER (the "
        "board's external power cables are not properly attached), RESET_REQUIRED (a previous "
        "error left it needing a reset), IRQ_ISSUE (the kernel detected an interrupt problem), "
        "NO_PERMISSION (cgroup device rules or device file permissions: normal in a container "
        "given only some GPUs, so a warning) or another driver error. UNKNOWN is what a GPU lost "
        "from the bus leaves: health.gpu-lost reports it."),
    .detection =
        N_("nvmlDeviceGetHandleByIndex_v2 failed for an index below the device count, with "
           "an error other than GPU_IS_LOST or UNKNOWN (those are health.gpu-lost)."),
    .fix = N_("Act on the error: reseat power cables (INSUFFICIENT_POWER), reset the GPU with "
              "nvidia-smi -r -i N (RESET_REQUIRED), check permissions or run on the host "
              "(NO_PERMISSION), read the kernel log (others)."),
    .thresholds = NO_THRESHOLDS,
    .check = check_gpu_inaccessible,
};

/* ---- health.gpu-missing ---- */

static bool init_failure(const struct klog_event *ev);
static bool nvml_has_address(const struct rule_ctx *ctx, const char *address);

/* The minor number a driver line names ("... for device bearing minor number 0"), or -1. */
static long line_minor(const struct klog_event *ev)
{
    const char *at = ev->message ? strstr(ev->message, "minor number ") : NULL;
    char *end;
    long v;

    if (at == NULL)
        return -1;
    at += strlen("minor number ");
    if (*at < '0' || *at > '9')
        return -1;
    v = strtol(at, &end, 10);
    return v >= 0 && v < 4096 ? v : -1;
}

/* Whether NVML lists a GPU of minor number m: 1 yes, 0 no, -1 cannot tell (a number not read). */
static int nvml_has_minor(const struct rule_ctx *ctx, long m)
{
    if (ctx->facts->n_gpus < ctx->facts->snap->nvml.device_count)
        return -1; /* GPUs counted but not read */
    for (size_t i = 0; i < ctx->facts->n_gpus; i++) {
        const struct gpu *g = ctx->facts->gpus[i].g;

        if (!gpu_valid(g, GPU_S_MINOR))
            return -1;
        if ((long)g->minor_number == m)
            return 1;
    }
    return 0;
}

/*
 * No PCI view, but the kernel log has the driver failing to start a GPU (RmInitAdapter) while
 * NVML counts others: that GPU is missing, unless NVML lists it after all (the line names its
 * address or minor number, and a GPU NVML lists has it: a later try succeeded). Without NVML's
 * GPUs to compare with, the failure is said with what could not be compared.
 */
static void init_failed_beside_others(const struct rule_ctx *ctx, struct findings *out)
{
    const struct driver_info *d = &ctx->facts->snap->driver;
    const struct klog_event *first = NULL;
    size_t n_lines = 0, shown = 0;
    long minor = -1;
    const char *addr = NULL, *plural;
    int listed = -1;
    struct klog_time when;
    struct finding *f;
    uint32_t n;

    for (size_t i = 0; i < d->n_events; i++) {
        const struct klog_event *ev = &d->events[i];

        if (!init_failure(ev) || !klog_recent(ctx, ev))
            continue;
        n_lines++;
        if (first == NULL)
            first = ev;
        if (addr == NULL && ev->pci != NULL)
            addr = ev->pci;
        if (minor < 0)
            minor = line_minor(ev);
    }
    if (first == NULL)
        return;
    if (addr != NULL)
        listed = nvml_has_address(ctx, addr) && ctx->facts->n_gpus > 0 ? 1 : 0;
    else if (minor >= 0)
        listed = nvml_has_minor(ctx, minor);
    if (listed == 1)
        return; /* a later try started it */
    n = ctx->facts->snap->nvml.device_count;
    plural = n == 1 ? "" : "s";
    f = finding_new(ctx, out, -1, -1);
    if (addr != NULL) {
        finding_object(f, "%s", addr);
        finding_title(f,
                      "The driver failed to start GPU %s (RmInitAdapter): NVML counts %u GPU%s "
                      "without it",
                      addr, n, plural);
    } else if (minor >= 0) {
        finding_object(f, "/dev/nvidia%ld", minor);
        finding_title(f,
                      "The driver failed to start the GPU of minor number %ld (RmInitAdapter): "
                      "NVML counts %u GPU%s without it",
                      minor, n, plural);
    } else {
        finding_title(f,
                      "The driver failed to start a GPU (RmInitAdapter): NVML counts %u GPU%s "
                      "without it",
                      n, plural);
    }
    for (size_t i = 0; i < d->n_events && shown < 4; i++) {
        const struct klog_event *ev = &d->events[i];

        if (!init_failure(ev) || !klog_recent(ctx, ev))
            continue;
        klog_when(&when, ctx, ev);
        finding_evidence_take(
            f, TWICE("kernel log %s: %s", (when.en, ev->message), (when.l, ev->message)));
        shown++;
    }
    if (n_lines > shown)
        finding_evidence(f, "%zu more such lines: the driver tried again and failed again",
                         n_lines - shown);
    if (listed < 0)
        finding_evidence(f, "NVML's GPUs were not read (or not their minor numbers): whether a "
                            "later try started it could not be compared");
    else
        finding_evidence(f, "none of the GPUs NVML lists is that device");
    finding_evidence(f, "the PCI bus was not read: the GPUs on it were not counted");
    finding_fix(f, "lspci -nn -d 10de:   # the NVIDIA GPUs on the bus: one more than NVML counts");
    finding_fix(f, "sudo dmesg -T | grep -iE 'NVRM|RmInitAdapter|rm_init_adapter' | head -40   # "
                   "the driver's first error is the one to read");
    finding_fix(f, "# drain the node; reboot (a cold power cycle); if the GPU stays missing, "
                   "reseat it and its power cables, then contact the vendor");
    f->impact = 1.5;
}

static bool nvml_has_address(const struct rule_ctx *ctx, const char *address)
{
    if (address == NULL)
        return true; /* cannot tell: do not accuse */
    for (size_t i = 0; i < ctx->facts->n_gpus; i++) {
        const struct gpu *g = ctx->facts->gpus[i].g;

        if (gpu_valid(g, GPU_S_PCI_BUS_ID) && g->pci_bus_id &&
            driver_pci_same(address, g->pci_bus_id))
            return true;
    }
    return false;
}

static void check_gpu_missing(const struct rule_ctx *ctx, struct findings *out)
{
    const struct snapshot *s = ctx->facts->snap;
    const struct pcie_info *p = &s->pcie;
    size_t unreachable = 0, unmatched = 0;

    if (s->nvml.init_rc != 0 || !s->nvml.attempted || s->nvml.load_error != 0 ||
        s->nvml.device_count_rc != 0 || s->nvml.device_count == 0)
        return; /* other rules say why NVML sees nothing */
    /* Without the bus's device list, the kernel log may still say a GPU did not start. */
    if (p->n_gpus == 0 && !(p->valid & (UINT64_C(1) << PCIE_I_GPUS)) &&
        s->collectors[COLLECTOR_PCIE].state != CS_OK)
        init_failed_beside_others(ctx, out);
    if (s->n_gpus == 0)
        return;
    for (size_t i = 0; i < ctx->facts->n_gpus; i++) {
        const struct gpu *g = ctx->facts->gpus[i].g;

        /* A GPU NVML cannot open has no address: it may be one of the unmatched devices. */
        if (g->handle_rc != 0) {
            unreachable++;
        } else if (!gpu_valid(g, GPU_S_PCI_BUS_ID)) {
            rule_skip_take(ctx, out, (int32_t)g->index,
                           TWICE("pci_bus_id %s", (gpu_status_name(g, GPU_S_PCI_BUS_ID)),
                                 (_(gpu_status_name(g, GPU_S_PCI_BUS_ID)))));
            return;
        }
    }
    /* No device list from sysfs: nothing can be missing from it, and nothing was compared. */
    if (p->n_gpus == 0 && !need_collector(ctx, out, COLLECTOR_PCIE))
        return;
    for (size_t i = 0; i < p->n_gpus; i++)
        unmatched += !nvml_has_address(ctx, p->gpus[i].address);
    if (unmatched <= unreachable)
        return; /* the devices NVML cannot open are those: health.gpu-lost or -inaccessible */
    for (size_t i = 0; i < p->n_gpus; i++) {
        const struct pcie_device *d = &p->gpus[i];
        const char *addr = d->address ? d->address : "?";
        char *pattern, *word;
        struct finding *f;

        if (nvml_has_address(ctx, d->address))
            continue;
        f = finding_new(ctx, out, -1, -1);
        finding_object(f, "%s", addr);
        if (d->driver && strcmp(d->driver, "vfio-pci") == 0) {
            f->severity = SEV_INFO;
            finding_title(f, "GPU %s is passed through to virtual machines (vfio-pci)", addr);
            finding_evidence(f, "bound to vfio-pci, so the host's NVIDIA driver does not use it");
            finding_fix(f, "# intended for VMs; otherwise unbind it from vfio-pci and bind it "
                           "to nvidia");
            f->impact = 0.1;
            continue;
        }
        finding_title(f, "GPU %s is on the PCI bus but the NVIDIA driver does not see it", addr);
        finding_evidence(f, "PCI device %s (device %04" PRIx32 "), kernel driver: %s", addr,
                         d->device_id, d->driver ? d->driver : "none bound");
        finding_evidence(f, "NVML sees %zu GPU%s; the PCI bus has %zu NVIDIA GPU%s",
                         ctx->facts->n_gpus, ctx->facts->n_gpus == 1 ? "" : "s", p->n_gpus,
                         p->n_gpus == 1 ? "" : "s");
        pattern = xasprintf("NVRM|RmInitAdapter|%s", d->address ? d->address : "nvidia");
        word = fix_arg(f, "kernel log pattern", pattern);
        if (word)
            finding_fix(f, "sudo dmesg -T | grep -iE %s   # why the driver skipped it", word);
        free(word);
        free(pattern);
        finding_fix(f, "grep -r NVreg_ExcludedGpus /etc/modprobe.d   # excluded on purpose?");
        finding_fix(f, "# reseat the GPU and its power cables; if it stays missing, contact the "
                       "vendor");
        f->impact = 1.5;
    }
}

const struct rule rule_health_gpu_missing = {
    .id = "health.gpu-missing",
    .severity = SEV_CRITICAL,
    .category = CAT_HEALTH,
    .title = N_("GPU on the PCI bus but not in NVML"),
    .explanation = N_(
        "The PCI bus shows an NVIDIA GPU that NVML does not list: the driver failed to initialise "
        "it (RmInitAdapter failed: power, firmware, hardware), it was excluded by configuration "
        "(NVreg_ExcludedGpus), or it is bound to another driver. Jobs see one GPU fewer than the "
        "machine has. A GPU bound to vfio-pci is passed through to virtual machines and is "
        "reported as information."),
    .detection = N_("NVIDIA display-class devices in sysfs whose PCI address matches no GPU NVML "
                    "lists (NVML must have started and listed its GPUs); without the PCI bus's "
                    "view, an RmInitAdapter/rm_init_adapter failure in the kernel log within "
                    "klog_max_age_h while NVML counts other GPUs, unless a GPU NVML lists has the "
                    "line's address or minor number (a later try started it)."),
    .fix =
        N_("Read the kernel log for the driver's reason (RmInitAdapter), check modprobe options "
           "for exclusions, reseat the card and its power cables. Persisting: contact the vendor."),
    .thresholds = THRESHOLDS(TH_KLOG_MAX_AGE_H),
    .check = check_gpu_missing,
};

/* ---- health.no-gpu-found ---- */

/* A driver line saying a GPU failed to start (RmInitAdapter, the probe, its firmware boot). */
static bool init_failure(const struct klog_event *ev)
{
    static const char *const words[] = { "rminitadapter failed",   "rm_init_adapter failed",
                                         "probe routine failed",   "cannot initialize gsp",
                                         "failed to wait for gfw", "pci i/o region assigned" };

    if (ev->message == NULL || (ev->kind != KLOG_OTHER_NVRM && ev->kind != KLOG_FALLEN_OFF_BUS))
        return false;
    for (size_t k = 0; k < ARRAY_SIZE(words); k++) {
        if (strcasestr(ev->message, words[k]) != NULL)
            return true;
    }
    return false;
}

/* The driver says a BAR could not be mapped: a BIOS setting (Above 4G decoding, Resizable BAR). */
static bool bar_problem(const struct klog_event *ev)
{
    return ev->message && (strstr(ev->message, "BAR") != NULL ||
                           strcasestr(ev->message, "pci i/o region") != NULL);
}

static void check_no_gpu_found(const struct rule_ctx *ctx, struct findings *out)
{
    const struct snapshot *s = ctx->facts->snap;
    const struct pcie_info *p = &s->pcie;
    const struct driver_info *d = &s->driver;
    bool pcie_ok = s->collectors[COLLECTOR_PCIE].state == CS_OK ||
                   (p->valid & (UINT64_C(1) << PCIE_I_GPUS)) != 0;
    size_t n_failed = 0, shown = 0;
    const char *addr = NULL;
    bool bar = false;
    struct finding *f;
    struct klog_time when;

    /* NVML started and counted: zero. (It not starting is stack.no-driver's or nvml-failed's.) */
    if (!s->nvml.attempted || s->nvml.load_error != 0 || s->nvml.init_rc != 0 ||
        s->nvml.device_count_rc != 0 || s->n_gpus > 0 || s->nvml.device_count > 0)
        return;
    for (size_t i = 0; i < d->n_events; i++) {
        if (init_failure(&d->events[i]) && klog_recent(ctx, &d->events[i])) {
            n_failed++;
            bar |= bar_problem(&d->events[i]);
            if (addr == NULL)
                addr = d->events[i].pci;
        }
    }
    if (p->n_gpus == 0 && n_failed == 0) {
        if (!pcie_ok && !klog_source_known(ctx))
            rule_skip(ctx, out, -1,
                      "NVML counts no GPU, and neither the PCI bus (pcie collector) nor the "
                      "kernel log was read to tell whether one failed to start");
        return; /* no NVIDIA GPU on the bus, nor a driver that failed one: nothing to find */
    }
    /* The address the driver's line names (the same with or without the bus view), else the
     * bus's first GPU. */
    if (addr == NULL && p->n_gpus > 0)
        addr = p->gpus[0].address;
    f = finding_new(ctx, out, -1, -1);
    /* Named as the kernel log names it ("0000:2a:00", no function), whichever view gave it. */
    if (addr) {
        const char *dot = strrchr(addr, '.');

        finding_object(f, "%.*s", (int)(dot ? (size_t)(dot - addr) : strlen(addr)), addr);
    }
    if (p->n_gpus > 0)
        finding_title(f,
                      "NVML finds no GPU, but the PCI bus has %zu NVIDIA GPU%s: the driver "
                      "could not start %s",
                      p->n_gpus, p->n_gpus == 1 ? "" : "s", p->n_gpus == 1 ? "it" : "them");
    else
        finding_title(f, "NVML finds no GPU: the driver failed to start %s (RmInitAdapter)",
                      addr ? addr : "a GPU");
    finding_evidence(f, "NVML started and counts 0 GPUs (nvidia-smi: \"No devices were found\")");
    for (size_t i = 0; i < p->n_gpus && i < 8; i++)
        finding_evidence(f,
                         "PCI device %s (NVIDIA, device %04" PRIx32 ", class %06" PRIx32 "), "
                         "kernel driver: %s",
                         p->gpus[i].address ? p->gpus[i].address : "?", p->gpus[i].device_id,
                         p->gpus[i].class_code, p->gpus[i].driver ? p->gpus[i].driver : "none");
    for (size_t i = 0; i < d->n_events && shown < 6; i++) {
        const struct klog_event *ev = &d->events[i];

        if (!klog_recent(ctx, ev) || ev->message == NULL ||
            (!init_failure(ev) && ev->kind != KLOG_OTHER_NVRM))
            continue;
        klog_when(&when, ctx, ev);
        finding_evidence_take(
            f, TWICE("kernel log %s: %s", (when.en, ev->message), (when.l, ev->message)));
        shown++;
    }
    if (n_failed == 0)
        finding_evidence(f, "the kernel log has no driver line about it (or was not read)");
    finding_fix(f, "sudo dmesg -T | grep -iE 'NVRM|RmInitAdapter|rm_init_adapter|fallen off|"
                   "probe' | head -40   # the driver's first error is the one to read");
    finding_fix(f, "lspci -nn -d 10de:   # the NVIDIA devices on the bus");
    finding_fix(f, "# nvidia-smi -r cannot help: the driver holds no GPU it could reset");
    if (bar)
        finding_fix(f, "# the driver could not map the GPU's memory window (BAR): enable Above "
                       "4G Decoding and Resizable BAR in the BIOS");
    finding_fix(f, "# reboot (a cold power cycle, not a warm reset, clears a GPU whose firmware "
                   "did not boot); if it stays, reseat the GPU and its power cables, check the "
                   "PSU, and try it in another slot");
    finding_fix(f, "# after a BIOS change or a new GPU: Above 4G Decoding on; a driver update "
                   "or downgrade if the log names the GSP firmware");
    f->impact = p->n_gpus > 0 ? (double)p->n_gpus : 1.0;
}

const struct rule rule_health_no_gpu_found = {
    .id = "health.no-gpu-found",
    .severity = SEV_CRITICAL,
    .category = CAT_HEALTH,
    .title = N_("NVML finds no GPU though one is there"),
    .explanation = N_(
        "NVML starts but counts zero GPUs (nvidia-smi: 'No devices were found') while NVIDIA GPUs "
        "sit on the PCI bus, or the kernel log shows the driver failing to start one "
        "(RmInitAdapter failed, the probe routine failed, the GPU's firmware did not boot). The "
        "driver is loaded but holds no GPU: on a single-GPU machine nothing can use the GPU at "
        "all. Causes: a GPU whose firmware or GSP did not boot, power (cables, PSU), a GPU not "
        "seated, a BIOS without Above 4G decoding or Resizable BAR for a GPU with a large memory "
        "window, or a driver too old for the GPU."),
    .detection = N_("NVML started (nvmlInit_v2 and nvmlDeviceGetCount_v2 succeeded) and counted 0 "
                    "GPUs, while the PCIe collector lists NVIDIA display-class devices (vendor "
                    "0x10de, class 0x03xx) or the kernel log within klog_max_age_h has an "
                    "RmInitAdapter/rm_init_adapter failure, a failed probe or a firmware boot "
                    "failure. Without either view it is not checked."),
    .fix = N_("Read the driver's first error in the kernel log. A reset through nvidia-smi is "
              "impossible (the driver holds no GPU): cold-boot the machine; if the GPU stays "
              "missing, reseat it and its power cables and check the power supply; where the log "
              "says a BAR could not be mapped, enable Above 4G Decoding and Resizable BAR in the "
              "BIOS; for firmware (GSP) failures try another driver version."),
    .thresholds = THRESHOLDS(TH_KLOG_MAX_AGE_H),
    .check = check_no_gpu_found,
};

/* ---- memory faults that return after a reboot (the state file, docs/state.md) ---- */

/*
 * A memory fault of g (f, its title set) that the state file remembers in earlier epochs (boots, or
 * before a GPU reset): the evidence, and the escalation policy of past_escalate, its words appended
 * to the title. Nothing when the past is unknown or clean.
 */
static void memory_past(const struct rule_ctx *ctx, struct finding *f, const struct gpu *g,
                        enum state_event_kind kind, const char *what)
{
    struct text2 suffix = { 0 };
    struct past p;

    if (!past_find(ctx, g, kind, 0, &p))
        return;
    past_said(f, ctx, what, &p);
    f->severity = past_escalate(f, g, &p, f->severity, &suffix);
    finding_title_take(f, xasprintf("%s%s", f->title, suffix.en),
                       i18n_active() ? xasprintf("%s%s", finding_title_text(f), suffix.l) : NULL);
    text2_free(&suffix);
}

/* ---- health.ecc-uncorrectable ---- */

static void check_ecc(const struct rule_ctx *ctx, struct findings *out)
{
    for (size_t i = 0; i < ctx->facts->n_gpus; i++) {
        const struct gpu *g = ctx->facts->gpus[i].g;
        bool vol, agg;
        struct finding *f;

        if (!need_gpu(ctx, out, g, GPU_S_ECC_MODE) || !g->ecc_mode)
            continue;
        vol = gpu_valid(g, GPU_S_ECC_VOL_UNCORR) && g->ecc_volatile_uncorrected > 0;
        agg = gpu_valid(g, GPU_S_ECC_AGG_UNCORR) && g->ecc_aggregate_uncorrected > 0;
        if (!gpu_valid(g, GPU_S_ECC_VOL_UNCORR) && !gpu_valid(g, GPU_S_ECC_AGG_UNCORR)) {
            need_gpu(ctx, out, g, GPU_S_ECC_VOL_UNCORR);
            continue;
        }
        if (!vol && !agg)
            continue;
        f = finding_new(ctx, out, (int32_t)g->index, -1);
        if (vol) {
            finding_title(f,
                          "GPU %" PRIu32 " had %" PRIu64 " uncorrectable ECC error%s since "
                          "the driver loaded",
                          g->index, g->ecc_volatile_uncorrected,
                          g->ecc_volatile_uncorrected == 1 ? "" : "s");
        } else {
            f->severity = SEV_WARNING;
            finding_title(f,
                          "GPU %" PRIu32 " has %" PRIu64 " uncorrectable ECC error%s in its "
                          "lifetime",
                          g->index, g->ecc_aggregate_uncorrected,
                          g->ecc_aggregate_uncorrected == 1 ? "" : "s");
        }
        if (gpu_valid(g, GPU_S_ECC_VOL_UNCORR) && gpu_valid(g, GPU_S_ECC_VOL_CORR))
            finding_evidence(f, "uncorrectable since driver load: %" PRIu64 ", corrected: %" PRIu64,
                             g->ecc_volatile_uncorrected, g->ecc_volatile_corrected);
        else if (gpu_valid(g, GPU_S_ECC_VOL_UNCORR))
            finding_evidence(f, "uncorrectable since driver load: %" PRIu64,
                             g->ecc_volatile_uncorrected);
        if (gpu_valid(g, GPU_S_ECC_AGG_UNCORR))
            finding_evidence(f, "uncorrectable over its life: %" PRIu64,
                             g->ecc_aggregate_uncorrected);
        if (gpu_valid(g, GPU_S_RETIRED_DBE))
            finding_evidence(f, "pages retired for double-bit errors: %" PRIu32,
                             g->retired_pages_dbe);
        if (gpu_valid(g, GPU_S_REMAP_UNCORR))
            finding_evidence(f, "rows remapped for uncorrectable errors: %" PRIu32,
                             g->remapped_rows_uncorrectable);
        if (vol) {
            finding_fix(f,
                        "# jobs that ran on GPU %" PRIu32 " may have failed or produced wrong "
                        "results: rerun them",
                        g->index);
            fix_gpu_reset(ctx, f, g,
                          N_("after draining it: reset retires or remaps the bad memory"));
            finding_fix(f,
                        "sudo dcgmi diag -r 3 -i %" PRIu32 "   # memory diagnostics of this GPU "
                        "only, after the reset, if DCGM is installed",
                        g->index);
        } else {
            finding_fix(f,
                        "nvidia-smi -i %" PRIu32 " -q -d ECC,PAGE_RETIREMENT,ROW_REMAPPER   "
                        "# watch whether the counts grow",
                        g->index);
        }
        finding_fix(f, "# errors that keep coming after a reset: contact the vendor (RMA)");
        if (vol)
            memory_past(ctx, f, g, STATE_EV_ECC_VOL, N_("uncorrectable ECC errors"));
        f->impact = vol ? 1.0 : 0.2;
    }
}

const struct rule rule_health_ecc_uncorrectable = {
    .id = "health.ecc-uncorrectable",
    .severity = SEV_CRITICAL,
    .category = CAT_HEALTH,
    .title = N_("Uncorrectable ECC errors"),
    .explanation = N_(
        "The GPU's memory returned data that ECC could detect but not correct (a double-bit "
        "error). The job that read it was killed or got wrong data (XID 48, or 94/95 on A100 and "
        "newer). The driver retires the page or remaps the row, which takes effect after a GPU "
        "reset. Errors since the driver loaded are critical; errors only in the lifetime count "
        "are history worth watching (a warning)."),
    .detection =
        N_("ECC enabled and nvmlDeviceGetTotalEccErrors(UNCORRECTED) above zero: volatile "
           "(since driver load) is critical, aggregate (lifetime) alone a warning. The "
           "state file (docs/state.md) adds the past: volatile errors on the same GPU (by "
           "serial, else UUID) in earlier boots (boot ids), or before a GPU reset detected "
           "in this boot, mean the fault returned after a reboot or reset, which resets the "
           "GPU: inspect or replace the GPU."),
    .fix = N_("Drain the GPU, rerun the jobs that ran on it, reset it (nvidia-smi -r -i N) so the "
              "retirement or remap takes effect, run memory diagnostics (dcgmi diag -r 3). Errors "
              "that return after a reset: contact the vendor."),
    .thresholds = NO_THRESHOLDS,
    .check = check_ecc,
};

/* ---- health.row-remap-failure ---- */

static void check_remap_failure(const struct rule_ctx *ctx, struct findings *out)
{
    for (size_t i = 0; i < ctx->facts->n_gpus; i++) {
        const struct gpu *g = ctx->facts->gpus[i].g;
        struct finding *f;

        if (!gpu_valid(g, GPU_S_REMAP_FAILURE) || !g->remapped_rows_failure)
            continue;
        f = finding_new(ctx, out, (int32_t)g->index, -1);
        finding_title(f, "GPU %" PRIu32 " failed to remap a bad memory row", g->index);
        finding_evidence(f, "row remapping failure reported by nvmlDeviceGetRemappedRows");
        if (gpu_valid(g, GPU_S_REMAP_UNCORR) && gpu_valid(g, GPU_S_REMAP_CORR))
            finding_evidence(f, "rows remapped: %" PRIu32 " uncorrectable, %" PRIu32 " correctable",
                             g->remapped_rows_uncorrectable, g->remapped_rows_correctable);
        else if (gpu_valid(g, GPU_S_REMAP_UNCORR))
            finding_evidence(f, "rows remapped: %" PRIu32 " uncorrectable",
                             g->remapped_rows_uncorrectable);
        finding_fix(f, "# drain GPU %" PRIu32 ": it cannot repair its memory any more", g->index);
        finding_fix(f, "nvidia-smi -i %" PRIu32 " -q -d ROW_REMAPPER", g->index);
        finding_fix(f, "# contact the vendor: a remapping failure is an RMA condition");
        memory_past(ctx, f, g, STATE_EV_REMAP_FAIL, N_("a row remapping failure"));
        f->impact = 1.0;
    }
}

const struct rule rule_health_row_remap_failure = {
    .id = "health.row-remap-failure",
    .severity = SEV_CRITICAL,
    .category = CAT_HEALTH,
    .title = N_("Memory row remapping failed"),
    .explanation = N_(
        "On A100 and newer GPUs, memory rows with errors are replaced by spare rows. A remapping "
        "failure means the GPU could not do that (no spare rows left in the bank, or the InfoROM "
        "could not record it, XID 64): the bad memory stays in use and errors will recur. NVIDIA "
        "treats this as a reason to replace the GPU."),
    .detection =
        N_("nvmlDeviceGetRemappedRows reports isFailureOccurred. The state file "
           "(docs/state.md) adds the past: a failure reported on the same GPU (by serial, "
           "else UUID) in earlier boots (boot ids) or before a GPU reset detected in a boot "
           "is named, the reboots and resets it survived counted."),
    .fix = N_("Drain the GPU and contact the vendor for a replacement."),
    .thresholds = NO_THRESHOLDS,
    .check = check_remap_failure,
};

/* ---- health.recovery-action ---- */

static void check_recovery_action(const struct rule_ctx *ctx, struct findings *out)
{
    for (size_t i = 0; i < ctx->facts->n_gpus; i++) {
        const struct gpu *g = ctx->facts->gpus[i].g;
        struct finding *f;

        if (!need_gpu(ctx, out, g, GPU_S_RECOVERY) || g->recovery_action == GPU_RECOVERY_NONE)
            continue;
        f = finding_new(ctx, out, (int32_t)g->index, -1);
        switch (g->recovery_action) {
        case GPU_RECOVERY_GPU_RESET:
            finding_title(f, "GPU %" PRIu32 " needs a reset: its driver asks for one", g->index);
            finding_fix(f, "# drain GPU %" PRIu32 " (no new jobs), let or make its jobs end, then:",
                        g->index);
            fix_gpu_reset(ctx, f, g, NULL);
            finding_fix(f, "# a reset that fails or does not clear it: reboot the node");
            f->impact = 1.0;
            break;
        case GPU_RECOVERY_NODE_REBOOT:
            finding_title(f, "GPU %" PRIu32 " needs the node rebooted: its driver asks for it",
                          g->index);
            finding_fix(f, "# drain the node (Slurm: scontrol update NodeName=... State=DRAIN; "
                           "Kubernetes: kubectl drain), then reboot it: a GPU reset is not "
                           "enough");
            f->impact = 1.0;
            break;
        case GPU_RECOVERY_DRAIN_P2P:
            f->severity = SEV_WARNING;
            finding_title(f,
                          "GPU %" PRIu32 ": its driver asks to drain peer-to-peer (NVLink) "
                          "traffic",
                          g->index);
            finding_fix(f,
                        "# let the jobs that use GPU %" PRIu32 " with its peers (NCCL, P2P) end "
                        "and start no new ones there; the driver may then ask for a reset",
                        g->index);
            f->impact = 0.5;
            break;
        case GPU_RECOVERY_DRAIN_AND_RESET:
            finding_title(f,
                          "GPU %" PRIu32 " needs its peer-to-peer traffic drained, then a "
                          "reset",
                          g->index);
            finding_fix(f,
                        "# drain GPU %" PRIu32 ": let the jobs that use it and its peers end, "
                        "start no new ones, then:",
                        g->index);
            fix_gpu_reset(ctx, f, g, NULL);
            f->impact = 1.0;
            break;
        case GPU_RECOVERY_RECOVER_IMEX_DOMAIN:
            finding_title(f,
                          "GPU %" PRIu32 ": its driver asks to recover the multi-node NVLink "
                          "(IMEX) domain",
                          g->index);
            finding_fix(f, "# the IMEX domain spans nodes: recover it as NVIDIA's IMEX guide "
                           "says, on every node of the domain (nvidia-imex-ctl shows its state)");
            f->impact = 1.0;
            break;
        default:
            finding_title(f, "GPU %" PRIu32 ": its driver asks for recovery action %" PRId32,
                          g->index, g->recovery_action);
            finding_fix(f,
                        "# this driver names an action gpudoctor does not know: see "
                        "nvidia-smi -q -i %" PRIu32 " and NVIDIA's documentation of "
                        "NVML_FI_DEV_GET_GPU_RECOVERY_ACTION",
                        g->index);
            f->impact = 1.0;
            break;
        }
        finding_evidence(
            f,
            "NVML's recovery action for the GPU (NVML_FI_DEV_GET_GPU_RECOVERY_ACTION): "
            "%s",
            g->recovery_action >= 0 && g->recovery_action <= GPU_RECOVERY_RECOVER_IMEX_DOMAIN
                ? gpu_recovery_names[g->recovery_action]
                : "a value this build does not name");
        finding_evidence(f, "the driver sets it after an error it cannot clear by itself (often "
                            "with an XID in the kernel log); jobs on the GPU may fail until then");
    }
}

const struct rule rule_health_recovery_action = {
    .id = "health.recovery-action",
    .severity = SEV_CRITICAL,
    .category = CAT_HEALTH,
    .title = N_("The driver asks for a GPU reset or reboot"),
    .explanation =
        N_("After an error it cannot clear by itself, the NVIDIA driver records what the GPU needs "
           "to be usable again: a GPU reset, a reboot of the node, draining its peer-to-peer "
           "(NVLink) traffic, both, or the recovery of a multi-node NVLink (IMEX) domain. Until "
           "that is done, jobs on the GPU can fail or hang. This is the driver's own instruction, "
           "more exact than reading it from an XID."),
    .detection = N_(
        "nvmlDeviceGetFieldValues with NVML_FI_DEV_GET_GPU_RECOVERY_ACTION (drivers that have "
        "the field; it replaces the deprecated RESET_STATUS and DRAIN_AND_RESET_STATUS): any value "
        "but NONE. Draining peer-to-peer traffic alone is a warning, the others critical. A "
        "driver without the field: not checked."),
    .fix = N_("Do what the driver asks: drain the GPU (or the node), then reset the GPU "
              "(nvidia-smi -r -i N) or reboot the node. An action that keeps coming back after "
              "it was done means hardware: run dcgmi diag and contact the vendor."),
    .thresholds = NO_THRESHOLDS,
    .check = check_recovery_action,
};

/* ---- health.memory-repair-pending ---- */

static void check_repair_pending(const struct rule_ctx *ctx, struct findings *out)
{
    for (size_t i = 0; i < ctx->facts->n_gpus; i++) {
        const struct gpu *g = ctx->facts->gpus[i].g;
        bool retire = gpu_valid(g, GPU_S_RETIRED_PENDING) && g->retired_pages_pending;
        bool remap = gpu_valid(g, GPU_S_REMAP_PENDING) && g->remapped_rows_pending;
        struct finding *f;

        if (!retire && !remap)
            continue;
        f = finding_new(ctx, out, (int32_t)g->index, -1);
        finding_title(f, "GPU %" PRIu32 " needs a reset to %s bad memory", g->index,
                      remap ? "remap" : "retire");
        if (retire && gpu_valid(g, GPU_S_RETIRED_SBE) && gpu_valid(g, GPU_S_RETIRED_DBE))
            finding_evidence(f,
                             "a page retirement is pending (sbe %" PRIu32 ", dbe %" PRIu32
                             " pages retired so far)",
                             g->retired_pages_sbe, g->retired_pages_dbe);
        else if (retire)
            finding_evidence(f, "a page retirement is pending");
        if (remap)
            finding_evidence(f, "a row remap is pending");
        finding_evidence(f, "until then the faulty memory can still be handed to jobs");
        fix_gpu_reset(ctx, f, g, N_("when no job uses it (or reboot)"));
        memory_past(ctx, f, g, STATE_EV_REPAIR, N_("a memory repair pending a reset"));
        f->impact = 0.5;
    }
}

const struct rule rule_health_memory_repair_pending = {
    .id = "health.memory-repair-pending",
    .severity = SEV_WARNING,
    .category = CAT_HEALTH,
    .title = N_("Retired pages or remapped rows pending a reset"),
    .explanation = N_(
        "The GPU found bad memory and scheduled it to be retired (pages, before A100) or remapped "
        "(rows, A100 and newer), but that only takes effect at the next GPU reset or reboot "
        "(XID 63 announces it). Until then jobs can be given the faulty memory again and hit "
        "more ECC errors."),
    .detection =
        N_("nvmlDeviceGetRetiredPagesPendingStatus or the pending flag of "
           "nvmlDeviceGetRemappedRows set. The state file (docs/state.md) adds the past: "
           "a repair pending on the same GPU (by serial, else UUID) in earlier boots (boot "
           "ids) or before a GPU reset detected in a boot, each cleared by that reset, "
           "means the GPU keeps finding bad memory: a warning after one reboot or reset, "
           "critical after two (inspect or replace the GPU). A pending repair seen cleared "
           "within a boot is itself recorded as a reset."),
    .fix = N_("Reset the GPU when it is free (nvidia-smi -r -i N), or reboot at the next "
              "opportunity; drain it first if it keeps getting errors."),
    .thresholds = NO_THRESHOLDS,
    .check = check_repair_pending,
};

/* ---- health.driver-hung-task ---- */

static bool gpu_comm(const struct rule_ctx *ctx, const char *name)
{
    for (size_t i = 0; name && i < ctx->facts->n_uses; i++) {
        const struct proc *p = ctx->facts->uses[i].p;

        if (p && p->comm && strcmp(p->comm, name) == 0)
            return true;
    }
    return false;
}

static bool mentions_driver(const char *msg)
{
    return msg && (strstr(msg, "nvidia") || strstr(msg, "NVRM") || strstr(msg, "nv_") ||
                   strstr(msg, "uvm"));
}

static void check_hung_task(const struct rule_ctx *ctx, struct findings *out)
{
    const struct driver_info *d = &ctx->facts->snap->driver;
    struct finding *f = NULL;
    struct klog_time when;
    size_t n = 0;

    for (size_t i = 0; i < d->n_events; i++) {
        const struct klog_event *ev = &d->events[i];

        if (ev->kind != KLOG_HUNG_TASK || !klog_recent(ctx, ev) ||
            !(mentions_driver(ev->message) || gpu_comm(ctx, ev->name) ||
              (klog_pid(ev) > 0 && facts_use_find(ctx->facts, klog_pid(ev)))))
            continue;
        if (f == NULL)
            f = finding_new(ctx, out, -1,
                            facts_proc_find(ctx->facts, klog_pid(ev)) ? klog_pid(ev) : -1);
        n++;
        klog_when(&when, ctx, ev);
        finding_evidence_take(f,
                              TWICE("kernel log %s: %s", (when.en, ev->message ? ev->message : "?"),
                                    (when.l, ev->message ? ev->message : "?")));
        finding_title(f,
                      "%zu task%s blocked in the kernel while using the GPU (latest: %s, "
                      "pid %d)",
                      n, n == 1 ? "" : "s", ev->name ? ev->name : "?", (int)klog_pid(ev));
    }
    if (!klog_source_known(ctx))
        need_collector(ctx, out, COLLECTOR_KLOG);
    if (f == NULL)
        return;
    finding_fix(f, "ps -eo pid,stat,wchan:32,args | awk '$2 ~ /D/'   # who is stuck now");
    finding_fix(f, "sudo dmesg -T | grep -iE 'NVRM|Xid|blocked for more' | tail -40");
    finding_fix(f, "# stuck tasks in the driver usually need a reboot; record "
                   "nvidia-bug-report.sh first");
    f->impact = 0.8;
}

const struct rule rule_health_driver_hung_task = {
    .id = "health.driver-hung-task",
    .severity = SEV_WARNING,
    .category = CAT_HEALTH,
    .title = N_("Tasks blocked in the kernel while using the GPU"),
    .explanation =
        N_("The kernel's hung-task detector reported a GPU process (or a task inside the NVIDIA "
           "driver) blocked for minutes in uninterruptible sleep. Such a task cannot be killed. It "
           "usually follows a GPU fault (see XIDs) or a driver deadlock, and often precedes NVML "
           "hanging altogether."),
    .detection = N_("kernel-log hung-task events within klog_max_age_h whose task is a GPU process "
                    "or whose message mentions the NVIDIA driver."),
    .fix = N_("Find the stuck processes (state D), read the kernel log for the XID or error before "
              "it, collect nvidia-bug-report.sh and plan a reboot."),
    .thresholds = THRESHOLDS(TH_KLOG_MAX_AGE_H),
    .check = check_hung_task,
};

/* ---- health.oom-kill ---- */

static bool gpu_job_name(const struct rule_ctx *ctx, const char *name)
{
    static const char *const names[] = {
        "pt_main_thread", "torchrun", "deepspeed",   "tritonserver",     "ollama",
        "llama-server",   "julia",    "jupyter-lab", "jupyter-notebook", NULL
    };

    if (name == NULL)
        return false;
    if (gpu_comm(ctx, name) || str_starts(name, "python"))
        return true;
    for (size_t i = 0; names[i]; i++) {
        if (strcmp(names[i], name) == 0)
            return true;
    }
    return false;
}

/*
 * Whether an error given with --error names process pid ("pid 629", "pid=629", "(pid: 629)"):
 * PyTorch's "DataLoader worker (pid 629) is killed by signal: Killed" says the job the user ran
 * lost that process, whatever its name.
 */
static bool reported_names_pid(const struct rule_ctx *ctx, int pid)
{
    const struct snapshot *s = ctx->facts->snap;

    for (size_t i = 0; i < s->reported.n_errors && pid > 0; i++) {
        for (const char *p = s->reported.errors[i].text; (p = strstr(p, "pid")) != NULL;) {
            char *end;
            long v;

            p += 3;
            while (*p == ' ' || *p == '=' || *p == ':')
                p++;
            if (*p < '0' || *p > '9')
                continue;
            v = strtol(p, &end, 10);
            if (v == pid)
                return true;
            p = end;
        }
    }
    return false;
}

static void check_oom(const struct rule_ctx *ctx, struct findings *out)
{
    const struct driver_info *d = &ctx->facts->snap->driver;
    const struct klog_event *latest = NULL;
    struct finding *f = NULL;
    struct klog_time when;
    size_t n = 0;

    for (size_t i = 0; i < d->n_events; i++) {
        const struct klog_event *ev = &d->events[i];

        bool named;

        if (ev->kind != KLOG_OOM_KILL || !klog_recent(ctx, ev))
            continue;
        named = reported_names_pid(ctx, (int)klog_pid(ev));
        if (!named && !gpu_job_name(ctx, ev->name))
            continue;
        if (f == NULL)
            f = finding_new(ctx, out, -1, -1);
        n++;
        latest = ev;
        klog_when(&when, ctx, ev);
        if (named)
            finding_evidence(f, "the error given names pid %d: the killed %s was the job's",
                             (int)klog_pid(ev), ev->name);
        if (ev->valid & (UINT64_C(1) << KLOG_S_RSS)) {
            char rss[16];

            render_bytes(rss, sizeof(rss), ev->rss_bytes);
            finding_evidence_take(f, TWICE("%s: %s (pid %d) killed, it used %s of host memory",
                                           (when.en, ev->name, (int)klog_pid(ev), rss),
                                           (when.l, ev->name, (int)klog_pid(ev), rss)));
        } else {
            finding_evidence_take(f, TWICE("%s: %s (pid %d) killed",
                                           (when.en, ev->name, (int)klog_pid(ev)),
                                           (when.l, ev->name, (int)klog_pid(ev))));
        }
    }
    if (!klog_source_known(ctx))
        need_collector(ctx, out, COLLECTOR_KLOG);
    if (f == NULL)
        return;
    klog_when(&when, ctx, latest);
    finding_title_take(
        f, TWICE("Host out of memory: the kernel killed %zu GPU job%s (latest %s, pid %d, %s)",
                 (n, n == 1 ? "" : "s", latest->name, (int)klog_pid(latest), when.en),
                 (n, n == 1 ? "" : "s", latest->name, (int)klog_pid(latest), when.l)));
    if (host_valid(&ctx->facts->snap->host, HOST_S_MEM_AVAILABLE)) {
        char a[16], t[16];

        render_bytes(a, sizeof(a), ctx->facts->snap->host.mem_available_bytes);
        render_bytes(t, sizeof(t), ctx->facts->snap->host.mem_total_bytes);
        finding_evidence(f, "host memory now: %s available of %s", a, t);
    }
    finding_fix(f, "sudo journalctl -k | grep -iE 'out of memory|oom-kill' | tail   # what was "
                   "killed, and how big it was");
    finding_fix(f, "# fewer DataLoader workers (each may copy the dataset), smaller prefetch, "
                   "memory-mapped datasets");
    finding_fix(f, "# set memory limits per job (Slurm --mem, cgroups) so one job cannot take "
                   "the host down");
    f->impact = 0.8;
}

const struct rule rule_health_oom_kill = {
    .id = "health.oom-kill",
    .severity = SEV_WARNING,
    .category = CAT_HEALTH,
    .title = N_("Host OOM killer ended GPU jobs"),
    .explanation = N_(
        "The host (not the GPU) ran out of memory and the kernel killed a GPU job to recover. The "
        "job simply disappears, sometimes leaving its GPU memory held by surviving workers. "
        "Training jobs use a lot of host memory: every DataLoader worker can hold a copy of the "
        "dataset object, pinned-memory buffers cannot be swapped, and several jobs on one server "
        "add up."),
    .detection = N_("kernel-log OOM-kill events within klog_max_age_h for processes that are GPU "
                    "jobs: named like a GPU process now running, or python, torchrun, tritonserver "
                    "and similar, or named by pid in the error given with --error (PyTorch's "
                    "\"DataLoader worker (pid N) is killed by signal: Killed\")."),
    .fix = N_("Read what was killed and its size in the kernel log. Reduce host memory per job "
              "(fewer loader workers, smaller prefetch, memory-mapped data), set per-job memory "
              "limits, or add memory."),
    .thresholds = THRESHOLDS(TH_KLOG_MAX_AGE_H),
    .check = check_oom,
};
