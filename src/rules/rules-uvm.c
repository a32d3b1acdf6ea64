/*
 * CUDA's unified memory module, nvidia_uvm, which every CUDA program needs: CUDA fails to start
 * with its unknown error (999) when the module is not loaded, and after a system suspend that it
 * did not survive. The NVIDIA driver's default suspend path (the kernel driver callback) keeps
 * only the video memory it must and, in the words of the driver README's chapter "Configuring
 * Power Management Support", does not support CUDA's unified memory; the systemd path
 * (nvidia-suspend.service and its siblings, NVreg_PreserveVideoMemoryAllocations=1) or the open
 * modules' kernel suspend notifiers keep it.
 */
#include "data/cudaerr.h"
#include "rules/rule-impl.h"
#include "util/i18n.h"
#include "util/xalloc.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* The NVIDIA module is loaded and nvidia_uvm is known not to be. */
static bool uvm_missing(const struct driver_info *d)
{
    return driver_valid(d, DRIVER_S_MODULE) && d->module_loaded && !d->uvm_loaded;
}

/* ---- stack.uvm-not-loaded ---- */

/*
 * CUDA's unknown error with nvidia_uvm known not loaded, or modprobe's own words that it cannot
 * be loaded (unless the nvidia module itself is known not loaded: stack.no-driver's case).
 */
static void check_uvm_not_loaded(const struct rule_ctx *ctx, struct findings *out)
{
    const struct driver_info *d = &ctx->facts->snap->driver;
    bool module_known = driver_valid(d, DRIVER_S_MODULE);
    bool refused = reported_find(ctx, CUDAERR_UVM_MISSING, NULL) >= 0;
    struct finding *f;

    if (module_known && !d->module_loaded)
        return;
    if (!refused && (reported_find(ctx, CUDAERR_CUDA_UNKNOWN, NULL) < 0 || !uvm_missing(d)))
        return;
    f = finding_new(ctx, out, -1, -1);
    if (refused)
        finding_title(f, "CUDA cannot start: the nvidia_uvm module cannot be loaded");
    else
        finding_title(f, "CUDA cannot start: the nvidia_uvm module is not loaded");
    reported_texts(ctx, f, CUDAERR_CUDA_UNKNOWN);
    reported_texts(ctx, f, CUDAERR_UVM_MISSING);
    if (uvm_missing(d))
        finding_evidence(f, "the NVIDIA kernel module is loaded, nvidia_uvm is not "
                            "(/sys/module/nvidia_uvm): every CUDA program needs it");
    else if (!module_known)
        finding_evidence(f, "which NVIDIA modules are loaded was not read (/sys/module): "
                            "modprobe's words say nvidia_uvm is not");
    finding_fix(f, "sudo modprobe nvidia_uvm   # CUDA starts again");
    finding_fix(f, "find /lib/modules/\"$(uname -r)\" -name 'nvidia*uvm*'   # none: this "
                   "driver's uvm module is missing for this kernel (dkms status; reinstall the "
                   "driver's kernel modules); another name: load that one");
    finding_fix(f, "sudo dmesg -T | grep -iE 'nvidia|NVRM' | tail -20   # why the kernel refused "
                   "it, if it did");
    finding_fix(f, "command -v nvidia-modprobe   # CUDA runs it to load nvidia_uvm for users who "
                   "are not root: install it with the driver if it is missing");
    f->impact = 1.0;
}

const struct rule rule_stack_uvm_not_loaded = {
    .id = "stack.uvm-not-loaded",
    .severity = SEV_CRITICAL,
    .category = CAT_STACK,
    .title = N_("CUDA's nvidia_uvm module not loaded"),
    .explanation = N_(
        "Every CUDA program needs the NVIDIA driver's unified memory module, nvidia_uvm, besides "
        "the nvidia module that nvidia-smi uses. Without it CUDA fails to start with its unknown "
        "error (999), while nvidia-smi still works. The module is loaded on demand: by "
        "nvidia-modprobe, a setuid helper CUDA runs for users who are not root, or at boot; "
        "without that helper, or when the driver's package lacks the module for the running "
        "kernel, it stays unloaded."),
    .detection = N_("An error given with --error that the catalogue reads as CUDA's unknown "
                    "error (999, or a framework's wording of it) while the NVIDIA kernel module "
                    "is loaded and nvidia_uvm is not (/sys/module), or modprobe's own words that "
                    "nvidia_uvm cannot be loaded ('Module nvidia-uvm not found', 'could not "
                    "insert nvidia_uvm'), unless the nvidia module itself is known not loaded "
                    "(stack.no-driver)."),
    .fix = N_("Load it (modprobe nvidia_uvm); if there is no such module, reinstall the driver's "
              "kernel modules for this kernel; install nvidia-modprobe so that CUDA can load it "
              "for other users."),
    .thresholds = NO_THRESHOLDS,
    .check = check_uvm_not_loaded,
};

/* ---- stack.cuda-after-resume ---- */

/* What the driver keeps across a suspend, as its parameters say. */
static void power_evidence(struct finding *f, const struct driver_info *d)
{
    bool notifiers = driver_valid(d, DRIVER_S_SUSPEND_NOTIFIERS) && d->suspend_notifiers;

    if (notifiers)
        finding_evidence(f, "the driver saves video memory through the kernel's suspend "
                            "notifiers (UseKernelSuspendNotifiers 1), yet CUDA did not come back");
    else if (driver_valid(d, DRIVER_S_PRESERVE_VRAM) && d->preserve_vram)
        finding_evidence(f, "the driver saves all video memory across a suspend "
                            "(PreserveVideoMemoryAllocations 1), yet CUDA did not come back: "
                            "were nvidia-suspend.service and nvidia-resume.service run?");
    else if (driver_valid(d, DRIVER_S_PRESERVE_VRAM))
        finding_evidence(f, "the driver keeps only essential video memory across a suspend "
                            "(PreserveVideoMemoryAllocations 0, /proc/driver/nvidia/params): "
                            "NVIDIA's default suspend path, which does not support CUDA's "
                            "unified memory (nvidia_uvm)");
    else
        finding_evidence(f, "how the driver handles a suspend was not read "
                            "(/proc/driver/nvidia/params)");
}

/* The processes holding /dev/nvidia-uvm, which keep nvidia_uvm from being unloaded. */
static void uvm_holders(const struct rule_ctx *ctx, struct finding *f)
{
    const struct snapshot *s = ctx->facts->snap;
    size_t n = 0;

    for (size_t i = 0; i < s->procs.n_procs; i++) {
        const struct proc *p = &s->procs.procs[i];
        char who[160];

        if (!proc_ok(p, PROC_S_HOLDS_UVM) || !p->holds_uvm)
            continue;
        if (n++ < 5) {
            proc_desc(who, sizeof(who), ctx, p->pid);
            finding_evidence(f,
                             "%s holds /dev/nvidia-uvm: nvidia_uvm cannot be reloaded while it "
                             "runs",
                             who);
        }
    }
    if (n > 5)
        finding_evidence_take(f, TWICE_N("and %zu more process holds /dev/nvidia-uvm",
                                         "and %zu more processes hold /dev/nvidia-uvm", n - 5,
                                         (n - 5), (n - 5)));
}

static void resume_fixes(struct finding *f, const struct driver_info *d)
{
    bool kept = (driver_valid(d, DRIVER_S_PRESERVE_VRAM) && d->preserve_vram) ||
                (driver_valid(d, DRIVER_S_SUSPEND_NOTIFIERS) && d->suspend_notifiers);

    finding_fix(f, "sudo fuser -v /dev/nvidia-uvm   # the programs still holding CUDA's unified "
                   "memory: end them first (they cannot recover)");
    finding_fix(f, "sudo rmmod nvidia_uvm && sudo modprobe nvidia_uvm   # CUDA starts again");
    finding_fix(f, "# if rmmod says the module is in use, or CUDA still fails: reboot");
    if (!kept) {
        finding_fix(f, "sudo systemctl enable nvidia-suspend.service nvidia-hibernate.service "
                       "nvidia-resume.service   # NVIDIA's suspend services, for next time");
        finding_fix(f, "# with them: 'options nvidia NVreg_PreserveVideoMemoryAllocations=1' in a "
                       "file of /etc/modprobe.d/, then rebuild the initramfs and reboot (the "
                       "driver README, \"Configuring Power Management Support\")");
    }
    finding_fix(f, "sudo systemctl mask sleep.target suspend.target hibernate.target "
                   "hybrid-sleep.target   # a GPU server that should never sleep");
}

static void check_cuda_after_resume(const struct rule_ctx *ctx, struct findings *out)
{
    const struct snapshot *s = ctx->facts->snap;
    const struct driver_info *d = &s->driver;
    uint32_t n = s->host.suspend_count;
    struct finding *f;

    if (reported_find(ctx, CUDAERR_CUDA_UNKNOWN, NULL) < 0 || uvm_missing(d))
        return; /* not loaded at all: stack.uvm-not-loaded */
    if (!host_valid(&s->host, HOST_S_SUSPEND)) {
        rule_skip(ctx, out, -1,
                  "whether the machine was suspended since it booted was not read "
                  "(/sys/power/suspend_stats/success): a resume is a known cause of CUDA's "
                  "unknown error");
        return;
    }
    if (n == 0)
        return; /* never suspended: the error has another cause, reported.error says what */
    f = finding_new(ctx, out, -1, -1);
    f->severity = SEV_CRITICAL;
    finding_title(f, "CUDA cannot start since the machine resumed from a suspend");
    reported_texts(ctx, f, CUDAERR_CUDA_UNKNOWN);
    if (n == 1)
        finding_evidence(f, "the machine was suspended once since it booted "
                            "(/sys/power/suspend_stats/success)");
    else
        finding_evidence(f,
                         "the machine was suspended %" PRIu32 " times since it booted "
                         "(/sys/power/suspend_stats/success)",
                         n);
    power_evidence(f, d);
    uvm_holders(ctx, f);
    resume_fixes(f, d);
    f->impact = 1.0;
}

const struct rule rule_stack_cuda_after_resume = {
    .id = "stack.cuda-after-resume",
    .severity = SEV_CRITICAL,
    .category = CAT_STACK,
    .title = N_("CUDA broken by a system suspend and resume"),
    .explanation =
        N_("When a machine suspends, the NVIDIA driver saves the GPUs' state. Its default way (the "
           "kernel driver callback) keeps only the video memory it must and, in NVIDIA's words, "
           "does not support CUDA's unified memory (the nvidia_uvm module). After a resume, CUDA "
           "programs can then fail to start with CUDA's unknown error (999): PyTorch's 'CUDA "
           "unknown error - this may be due to an incorrectly set up environment', JAX's and "
           "TensorFlow's 'failed call to cuInit: CUDA_ERROR_UNKNOWN'. Nothing starts until "
           "nvidia_uvm is reloaded, once the processes still holding it have ended, or the machine "
           "is rebooted. NVIDIA's suspend services with NVreg_PreserveVideoMemoryAllocations=1 (or "
           "the open modules' kernel suspend notifiers) keep the state."),
    .detection = N_("An error given with --error that the catalogue reads as CUDA's unknown "
                    "error (999, or a framework's wording of it) on a machine suspended at "
                    "least once since it booted (/sys/power/suspend_stats/success). The "
                    "evidence adds the driver's suspend parameters (/proc/driver/nvidia/params) "
                    "and the processes holding /dev/nvidia-uvm. With nvidia_uvm not loaded at "
                    "all, stack.uvm-not-loaded reports it instead."),
    .fix = N_("End the programs holding /dev/nvidia-uvm, then reload the module (rmmod "
              "nvidia_uvm, modprobe nvidia_uvm) or reboot; for next time, enable NVIDIA's "
              "suspend services with video memory preserved, or mask the sleep targets on a "
              "server."),
    .thresholds = NO_THRESHOLDS,
    .check = check_cuda_after_resume,
};
