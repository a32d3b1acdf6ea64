/*
 * The error the user saw (`check --error TEXT`, the snapshot's "reported" section) as evidence:
 * CUDA's "system not yet initialized" on an NVSwitch machine, "busy or unavailable", and any
 * other error, recognised (data/cuda-errors.tsv) or not. "No CUDA-capable device" is judged by
 * proc.cuda-visible-devices (rules-proc-access.c). The text is only read and shown: it was
 * sanitised when it entered the snapshot, and it is never put into a command.
 */
#include "data/cudaerr.h"
#include "nvml/nvml-abi.h"
#include "rules/rule-impl.h"
#include "util/xalloc.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The reported error i's catalogue row (this gpudoctor's), NULL when not recognised. */
static const struct cudaerr_info *reported_match(const struct rule_ctx *ctx, size_t i)
{
    return cudaerr_match(ctx->facts->snap->reported.errors[i].text);
}

ssize_t reported_find(const struct rule_ctx *ctx, enum cudaerr_kind kind,
                      const struct cudaerr_info **row)
{
    for (size_t i = 0; i < ctx->facts->snap->reported.n_errors; i++) {
        const struct cudaerr_info *m = reported_match(ctx, i);

        if (m != NULL && m->kind == kind) {
            if (row != NULL)
                *row = m;
            return (ssize_t)i;
        }
    }
    return -1;
}

void reported_texts(const struct rule_ctx *ctx, struct finding *f, enum cudaerr_kind kind)
{
    const struct snapshot *s = ctx->facts->snap;

    for (size_t i = 0; i < s->reported.n_errors; i++) {
        const struct cudaerr_info *m = reported_match(ctx, i);

        if (m != NULL && m->kind == kind)
            finding_evidence(f, "the error given: \"%s\"", s->reported.errors[i].text);
    }
}

/* A catalogue's meaning for people: data/cuda-errors.tsv's text is translated (po/tsv2pot.py). */
static const char *meaning_l(const char *meaning)
{
    return meaning != NULL && meaning[0] != '\0' ? _(meaning) : meaning; /* _("") is the header */
}

static void evidence_text(struct finding *f, const char *text, const struct cudaerr_info *m)
{
    finding_evidence(f, "the error given: \"%s\"", text);
    if (m != NULL && m->number >= 0)
        finding_evidence_take(f, TWICE("recognised as %s %s (%" PRId32 "): %s",
                                       (m->api, m->name, m->number, m->meaning),
                                       (m->api, m->name, m->number, meaning_l(m->meaning))));
    else if (m != NULL)
        finding_evidence_take(f,
                              TWICE("recognised as %s's \"%s\": %s", (m->api, m->name, m->meaning),
                                    (m->api, m->name, meaning_l(m->meaning))));
}

/*
 * Whether NVML names the GPU a board of the kind HGX and DGX systems join through NVSwitches:
 * H100/H800 SXM ("... HBM3"; the PCIe cards are "H100 PCIe", "H100 NVL"), H200 and H20 (not
 * "NVL"), B200/B300, A100/A800 SXM4.
 */
static bool nvswitch_class(const char *name)
{
    static const char *const models[] = { "H100 SXM", "H800 SXM", "HBM3",      "H200",     "H20 ",
                                          "B200",     "B300",     "A100-SXM4", "A800-SXM4" };

    if (name == NULL || strstr(name, "NVL") != NULL || strstr(name, "PCIe") != NULL)
        return false;
    for (size_t i = 0; i < sizeof(models) / sizeof(models[0]); i++) {
        if (strstr(name, models[i]) != NULL)
            return true;
    }
    return false;
}

/* ---- reported.system-not-ready ---- */

static void fm_evidence(struct finding *f, const struct fabric_info *fb, const char *dv)
{
    if (fb->valid == 0) {
        finding_evidence(f, "Fabric Manager's state was not collected: whether it runs, and its "
                            "version, are unknown here");
        return;
    }
    if (fabric_valid(fb, FABRIC_S_PROCESS))
        finding_evidence(f, fb->fm_running ? "nv-fabricmanager is running"
                                           : "nv-fabricmanager is not running");
    else
        finding_evidence(f, "whether nv-fabricmanager runs is unknown (/proc was not read)");
    if (fabric_valid(fb, FABRIC_S_VERSION) && dv != NULL)
        finding_evidence(f, "Fabric Manager %s, driver %s", fb->fm_version, dv);
    else
        finding_evidence(f, "Fabric Manager's version against the driver's is unknown here");
}

static void check_not_ready(const struct rule_ctx *ctx, struct findings *out)
{
    const struct snapshot *s = ctx->facts->snap;
    const struct fabric_info *fb = &s->fabric;
    const char *dv = s->driver.module_version ? s->driver.module_version
                     : s->nvml.driver_version && s->nvml.driver_version_rc == 0
                         ? s->nvml.driver_version
                         : NULL;

    for (size_t i = 0; i < s->reported.n_errors; i++) {
        const struct cudaerr_info *m = reported_match(ctx, i);
        const struct gpu *model = NULL;
        size_t n_class = 0;
        bool switches = fabric_valid(fb, FABRIC_S_SWITCHES) && fb->n_switches > 0;
        struct finding *f;

        if (m == NULL || m->kind != CUDAERR_NOT_READY)
            continue;
        for (size_t k = 0; k < ctx->facts->n_gpus; k++) {
            const struct gpu *g = ctx->facts->gpus[k].g;

            if (gpu_valid(g, GPU_S_NAME) && nvswitch_class(g->name)) {
                n_class++;
                model = model ? model : g;
            }
        }
        f = finding_new(ctx, out, -1, -1);
        if (n_class > 0 || switches) {
            finding_object(f, "nvidia-fabricmanager");
            finding_title(f, "CUDA reports \"system not yet initialized\" on an NVSwitch-class "
                             "machine: the Fabric Manager has not registered the GPUs with the "
                             "NVLink fabric");
        } else {
            finding_title(f, "CUDA reports \"system not yet initialized\": a service CUDA needs "
                             "is not ready");
        }
        evidence_text(f, s->reported.errors[i].text, m);
        if (model != NULL)
            finding_evidence(f,
                             "%zu GPU%s of a model HGX and DGX systems join through NVSwitches "
                             "(GPU %" PRIu32 ": %s)",
                             n_class, n_class == 1 ? "" : "s", model->index, model->name);
        if (switches)
            finding_evidence(f, "%zu NVSwitch%s on the PCI bus", fb->n_switches,
                             fb->n_switches == 1 ? "" : "es");
        else if (!fabric_valid(fb, FABRIC_S_SWITCHES))
            finding_evidence(f, "the PCI bus was not read for NVSwitches: whether there are "
                                "any is unknown here");
        else
            finding_evidence(f, "no NVSwitch on the PCI bus");
        if (n_class == 0 && !switches)
            finding_evidence(f, "no GPU model known here is one NVSwitch systems use: the cause "
                                "may be another service CUDA waits for");
        fm_evidence(f, fb, dv);
        if (n_class == 0 && !switches) {
            finding_fix(f, "systemctl --failed   # a service CUDA waits for that did not start");
            finding_fix(f, "nvidia-smi -q | grep -iE -A3 'Fabric|Confidential'   # each GPU's "
                           "fabric and confidential-computing state");
            finding_fix(f, "# on an NVSwitch system (HGX, DGX): systemctl status "
                           "nvidia-fabricmanager, and nv-fabricmanager --version against the "
                           "driver's");
            f->impact = 1.0;
            continue;
        }
        finding_fix(f, "systemctl status nvidia-fabricmanager   # is it running, and why not");
        finding_fix(f, "nv-fabricmanager --version   # must be exactly the driver's version:");
        finding_fix(f, "nvidia-smi --query-gpu=driver_version --format=csv,noheader");
        finding_fix(f, "nvidia-smi -q | grep -A2 Fabric   # each GPU's fabric state: "
                       "Completed, or In Progress / Not Started");
        f->impact = 1.0;
    }
}

const struct rule rule_reported_system_not_ready = {
    .id = "reported.system-not-ready",
    .severity = SEV_CRITICAL,
    .category = CAT_FABRIC,
    .title = N_("CUDA 802 reported: system not yet initialized"),
    .explanation = N_(
        "CUDA's \"system not yet initialized\" (cudaErrorSystemNotReady, 802) means a service "
        "CUDA needs is not running or not done. On HGX and DGX machines whose GPUs are joined by "
        "NVSwitches (H100, H200, B200 and A100 SXM boards) that service is NVIDIA Fabric Manager: "
        "until it has registered every GPU with the NVLink fabric, CUDA refuses to start, while "
        "nvidia-smi lists the GPUs as usual. It is usually stopped, missing, or of another "
        "version than the driver. When gpudoctor read the Fabric Manager's state, "
        "fabric.fm-not-running or fabric.fm-version names the cause; otherwise this finding says "
        "what was not read."),
    .detection = N_("An error given with --error that the catalogue (data/cuda-errors.tsv) "
                    "recognises as 802 (\"system not yet initialized\", "
                    "CUDA_ERROR_SYSTEM_NOT_READY). Critical on any machine: CUDA refuses every "
                    "program until the service is ready. The Fabric Manager is named as the "
                    "service when a GPU's model is one NVSwitch systems use or NVSwitches are on "
                    "the PCI bus; otherwise the finding says the service is not known here."),
    .fix = N_("systemctl status nvidia-fabricmanager; compare nv-fabricmanager --version with "
              "the driver's version (they must be the same); nvidia-smi -q | grep -A2 Fabric "
              "shows each GPU's registration. Install the Fabric Manager of the driver's "
              "version and start it."),
    .thresholds = NO_THRESHOLDS,
    .check = check_not_ready,
};

/* ---- reported.devices-unavailable ---- */

static void check_unavailable(const struct rule_ctx *ctx, struct findings *out)
{
    const struct snapshot *s = ctx->facts->snap;

    for (size_t i = 0; i < s->reported.n_errors; i++) {
        const struct cudaerr_info *m = reported_match(ctx, i);
        size_t exclusive = 0, known = 0;
        struct finding *f;

        if (m == NULL || m->kind != CUDAERR_BUSY)
            continue;
        f = finding_new(ctx, out, -1, -1);
        evidence_text(f, s->reported.errors[i].text, m);
        for (size_t k = 0; k < ctx->facts->n_gpus; k++) {
            const struct gpu *g = ctx->facts->gpus[k].g;

            if (!gpu_valid(g, GPU_S_COMPUTE_MODE))
                continue;
            known++;
            if (g->compute_mode == NVML_COMPUTEMODE_DEFAULT)
                continue;
            exclusive++;
            finding_evidence(f, "GPU %" PRIu32 " compute mode: %s", g->index,
                             g->compute_mode >= 0 && g->compute_mode <= 3
                                 ? compute_mode_names[g->compute_mode]
                                 : "unknown");
        }
        if (exclusive > 0 && m->number == 216) {
            finding_title(f,
                          "CUDA reports a GPU \"already in use\" by another thread: %zu GPU%s in "
                          "an exclusive or prohibited compute mode",
                          exclusive, exclusive == 1 ? "" : "s");
            finding_evidence(f, "one thread at a time (exclusive_thread) may use such a GPU: "
                                "proc.compute-mode says more");
        } else if (exclusive > 0) {
            finding_title(f,
                          "CUDA reports the GPUs \"busy or unavailable\": %zu GPU%s in an "
                          "exclusive or prohibited compute mode",
                          exclusive, exclusive == 1 ? "" : "s");
            finding_evidence(f, "one process at a time (exclusive) or none (prohibited) may use "
                                "such a GPU: proc.compute-mode says who holds it");
        } else {
            f->severity = SEV_INFO;
            if (m->number == 216)
                finding_title(f, "CUDA reports a GPU \"already in use\" by another thread; no "
                                 "compute mode here explains it");
            else
                finding_title(f, "CUDA reports the GPUs \"busy or unavailable\"; no compute mode "
                                 "here explains it");
            if (known == 0)
                finding_evidence(f, "the GPUs' compute modes were not read: whether one is "
                                    "exclusive is unknown here");
            else
                finding_evidence(f, "every GPU whose compute mode was read is in the default "
                                    "(shared) mode");
            finding_evidence(f, "other causes: a GPU whose memory is full, a job's "
                                "CUDA_VISIBLE_DEVICES, a container without the GPU, a GPU in "
                                "an error state (the other findings show what was seen)");
        }
        finding_fix(f, "nvidia-smi --query-gpu=index,compute_mode,memory.used,memory.total "
                       "--format=csv");
        finding_fix(f, "nvidia-smi --query-compute-apps=pid,gpu_uuid,used_memory --format=csv   "
                       "# who holds the GPUs");
        f->impact = 0.6;
    }
}

const struct rule rule_reported_devices_unavailable = {
    .id = "reported.devices-unavailable",
    .severity = SEV_WARNING,
    .category = CAT_PROCESS,
    .title = N_("CUDA 46 reported: GPUs busy or unavailable"),
    .explanation = N_(
        "CUDA's \"busy or unavailable\" (cudaErrorDevicesUnavailable, 46) most often means the "
        "GPUs are in exclusive-process (or prohibited) compute mode and another process holds "
        "them; it can also mean a GPU without memory left for a new context. gpudoctor shows the "
        "compute modes it read; a warning when a GPU is exclusive or prohibited (proc.compute-mode "
        "then names the holder), information with what to check otherwise."),
    .detection = N_("An error given with --error that the catalogue recognises as 46 "
                    "(\"busy or unavailable\", CUDA_ERROR_DEVICE_UNAVAILABLE) or 216 (an "
                    "exclusive-thread GPU already in use), against each GPU's compute mode from "
                    "NVML."),
    .fix = N_("Find the holder (nvidia-smi --query-compute-apps), wait for it or end it, or set "
              "the GPU back to the default compute mode (sudo nvidia-smi -i N -c DEFAULT)."),
    .thresholds = NO_THRESHOLDS,
    .check = check_unavailable,
};

/* ---- reported.error ---- */

/* The rule that judges errors of a kind (and always reports them), NULL for those it shows. */
static const char *kind_owner(enum cudaerr_kind kind)
{
    switch (kind) {
    case CUDAERR_NOT_READY:
        return "reported.system-not-ready";
    case CUDAERR_BUSY:
        return "reported.devices-unavailable";
    case CUDAERR_NO_DEVICE:
        return "proc.cuda-visible-devices";
    case CUDAERR_NO_KERNEL:
        return "stack.arch-unsupported";
    case CUDAERR_NVML_UNKNOWN:
        return "host.container-lost-devices";
    case CUDAERR_NO_GPU_RUNTIME:
        return "stack.container-toolkit-missing";
    case CUDAERR_CUDA_LIB_MISSING:
        return "stack.cuda-lib-missing";
    case CUDAERR_CUDNN_MISSING:
        return "stack.cudnn";
    case CUDAERR_DRIVER_MISMATCH:
        return "stack.driver-mismatch";
    case CUDAERR_SHM:
        return "host.shm-small";
    case CUDAERR_FD_LIMIT:
        return "proc.fd-limit";
    case CUDAERR_OOM:
        return "mem.job-oom";
    case CUDAERR_CUDA_UNKNOWN:
        return "stack.cuda-after-resume"; /* or stack.uvm-not-loaded, which shows it too */
    case CUDAERR_UVM_MISSING:
        return "stack.uvm-not-loaded";
    case CUDAERR_IMAGE_REQUIREMENT:
        return "stack.cuda-too-new";
    case CUDAERR_MEMLOCK:
        return "proc.memlock-limit";
    case CUDAERR_NCCL_SOCKET:
    case CUDAERR_NCCL_FAILED:
        return "proc.nccl-socket-ifname";
    case CUDAERR_NO_DRIVER:
        return "stack.no-driver";
    case CUDAERR_SLOW_INIT:
    case CUDAERR_OTHER:
    case CUDAERR__COUNT:
        break;
    }
    return NULL;
}

/*
 * Whether a finding already shows the error text (an evidence line quotes it). A kind's own rule
 * may find nothing to say (no GPU, the rule disabled): the error is then reported here, never
 * dropped.
 */
static bool text_shown(const struct findings *out, const char *text)
{
    for (size_t i = 0; i < out->n; i++) {
        for (size_t k = 0; k < out->items[i].n_evidence; k++) {
            if (strstr(out->items[i].evidence[k], text) != NULL)
                return true;
        }
    }
    return false;
}

/*
 * The part of an error text a log search can match: its longest run without a '?' (what
 * str_sanitize put for a newline or a control character, which no log line holds), trimmed, of
 * 8 to 200 bytes. False when there is none.
 */
static bool grep_part(const char *text, char *buf, size_t size)
{
    const char *best = NULL, *p = text;
    size_t best_n = 0;

    while (*p != '\0') {
        size_t n = strcspn(p, "?");
        const char *a = p, *b = p + n;

        while (a < b && *a == ' ')
            a++;
        while (b > a && b[-1] == ' ')
            b--;
        if ((size_t)(b - a) > best_n) {
            best = a;
            best_n = (size_t)(b - a);
        }
        p += n + (p[n] == '?');
    }
    if (best == NULL || best_n < 8 || best_n > 200 || best_n >= size)
        return false;
    memcpy(buf, best, best_n);
    buf[best_n] = '\0';
    return true;
}

static void check_error(const struct rule_ctx *ctx, struct findings *out)
{
    const struct snapshot *s = ctx->facts->snap;

    for (size_t i = 0; i < s->reported.n_errors; i++) {
        const char *text = s->reported.errors[i].text;
        const struct cudaerr_info *m = reported_match(ctx, i);
        char ran[256] = "", part[256];
        struct finding *f;

        if (m != NULL && kind_owner(m->kind) != NULL && text_shown(out, text))
            continue; /* a rule of its own judged it, and shows it */
        for (size_t c = 0; c < COLLECTOR__COUNT; c++) {
            size_t n = strlen(ran);

            if (s->collectors[c].state != CS_NOT_RUN && n + 32 < sizeof(ran))
                snprintf(ran + n, sizeof(ran) - n, "%s%s", n ? ", " : "", collector_names[c]);
        }
        f = finding_new(ctx, out, -1, -1);
        if (m == NULL) {
            finding_title(f, "The error given is not one gpudoctor recognises");
            finding_evidence(f, "the error given: \"%s\"", text);
            finding_evidence(f, "it matches no error of gpudoctor's catalogue (CUDA, PyTorch, "
                                "NCCL, the NVIDIA container toolkit): what it means is unknown "
                                "here");
        } else if (m->number >= 0) {
            finding_title(f, "The error given is %s %s (%" PRId32 ")", m->api, m->name, m->number);
            evidence_text(f, text, m);
        } else {
            finding_title(f, "The error given is %s's \"%s\"", m->api, m->name);
            evidence_text(f, text, m);
        }
        finding_evidence(f,
                         "gpudoctor checked this machine anyway (%s): the other findings "
                         "are what it saw",
                         *ran ? ran : "nothing collected");
        if (m == NULL && grep_part(text, part, sizeof(part))) {
            char *q = fix_arg(f, "error text", part);

            if (q != NULL)
                finding_fix(f,
                            "journalctl -b --no-pager | grep -F -- %s   # where else it was "
                            "logged",
                            q);
            free(q);
        }
        f->impact = 0.3; /* the user's own error: first among the notes */
    }
}

const struct rule rule_reported_error = {
    .id = "reported.error",
    .severity = SEV_INFO,
    .category = CAT_STACK,
    .title = N_("The error reported: its meaning, or unknown"),
    .explanation =
        N_("An error given with --error that no other rule judges: its name, number and meaning "
           "when gpudoctor's catalogue (data/cuda-errors.tsv: CUDA runtime and driver errors, "
           "PyTorch's and NCCL's words) knows it, or that it is not recognised. Either way "
           "gpudoctor checked the machine as usual; the other findings are what it saw, and the "
           "error is never taken to say more than it does."),
    .detection = N_("An error given with --error, matched case-insensitively against the "
                    "catalogue, that is not 802, 46 or a \"no CUDA device\" error (those have "
                    "rules of their own)."),
    .fix = N_("Read what the error means, and the other findings of the report."),
    .thresholds = NO_THRESHOLDS,
    .check = check_error,
};
