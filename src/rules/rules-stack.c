/*
 * The software stack: no driver for the GPUs on the bus, kernel module and libraries of
 * different versions, a framework built for a CUDA newer than the driver runs (with minor-version
 * compatibility, data/cuda-driver-compat.tsv), a toolkit that does not match, cuDNN missing or
 * mismatched, and driver releases with known defects.
 */
#include "data/cudacompat.h"
#include "data/cudaerr.h"
#include "nvml/nvml-abi.h"
#include "rules/rule-impl.h"
#include "util/i18n.h"
#include "util/strutil.h"
#include "util/xalloc.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The driver version: what NVML says, else the kernel module's. */
static const char *driver_version(const struct snapshot *s)
{
    if (s->nvml.driver_version && s->nvml.driver_version_rc == 0)
        return s->nvml.driver_version;
    return s->driver.module_version;
}

/* "12.4" from 12040, the CUDA version a driver supports natively. */
static void cuda_of_driver(char *buf, size_t size, int32_t v)
{
    snprintf(buf, size, "%d.%d", (int)NVML_CUDA_DRIVER_VERSION_MAJOR(v),
             (int)NVML_CUDA_DRIVER_VERSION_MINOR(v));
}

static bool has_driver_cuda(const struct snapshot *s)
{
    return s->nvml.cuda_driver_version_rc == 0 && s->nvml.cuda_driver_version > 0;
}

/* ---- stack.no-driver ---- */

/* Inside a container the module and the bus are the host's: so are the commands. */
static void host_side(struct finding *f, const struct snapshot *s)
{
    const char *ctr = host_container(&s->host);

    if (ctr != NULL)
        finding_evidence(f,
                         "gpudoctor runs inside a container (%s): the kernel module is the "
                         "host's, and the commands below are for the host",
                         ctr);
}

/* The running kernel and the fixes for a module that is not loaded while GPUs may need it. */
static void unloaded_module_fixes(struct finding *f, const struct snapshot *s)
{
    if (s->host.kernel_release)
        finding_evidence(f, "running kernel %s: the module must be built for it",
                         s->host.kernel_release);
    finding_fix(f, "lspci -nn -d 10de:   # the NVIDIA GPUs on the bus");
    finding_fix(f, "sudo modprobe nvidia && nvidia-smi   # load it; read the error if it fails");
    finding_fix(f, "find /lib/modules/\"$(uname -r)\" -name 'nvidia*.ko*'   # built for this "
                   "kernel? (dkms status shows what DKMS built)");
    finding_fix(f, "mokutil --sb-state   # Secure Boot refuses unsigned modules");
    finding_fix(f, "sudo dmesg -T | grep -iE 'nvidia|nouveau|NVRM' | tail -20");
    f->impact = 1.0;
}

/*
 * NVML was not asked (an import, a snapshot of the error alone), but the program's own error
 * says it found no driver and the driver collector saw no NVIDIA module loaded: the program
 * needed a GPU whose driver is not running. Information when the bus was read and holds no
 * NVIDIA GPU.
 */
static void check_no_driver_reported(const struct rule_ctx *ctx, struct findings *out)
{
    const struct snapshot *s = ctx->facts->snap;
    const struct driver_info *d = &s->driver;
    bool bus_read = (s->pcie.valid & (UINT64_C(1) << PCIE_I_GPUS)) != 0;
    struct finding *f;

    if (reported_find(ctx, CUDAERR_NO_DRIVER, NULL) < 0 || !driver_valid(d, DRIVER_S_MODULE) ||
        d->module_loaded)
        return;
    f = finding_new(ctx, out, -1, -1);
    reported_texts(ctx, f, CUDAERR_NO_DRIVER);
    finding_evidence(f, "no nvidia kernel module loaded (/sys/module/nvidia absent)");
    host_side(f, s);
    if (bus_read && s->pcie.n_gpus == 0) {
        f->severity = SEV_INFO;
        finding_title(f, "No NVIDIA driver loaded, and no NVIDIA GPU on the PCI bus");
        finding_evidence(f, "the PCI bus was read: no NVIDIA display or 3D controller, so the "
                            "program can only run on the CPU here");
        finding_fix(f, "# run it where there is a GPU; if one is installed here, it is not seen "
                       "on the bus: check its seating and power");
        f->impact = 0;
        return;
    }
    if (bus_read)
        finding_title_take(f, TWICE_N("The NVIDIA driver is not loaded, but %zu NVIDIA GPU is on "
                                      "the PCI bus",
                                      "The NVIDIA driver is not loaded, but %zu NVIDIA GPUs are "
                                      "on the PCI bus",
                                      s->pcie.n_gpus, (s->pcie.n_gpus), (s->pcie.n_gpus)));
    else
        finding_title(f, "The program found no NVIDIA driver: its kernel module is not loaded");
    unloaded_module_fixes(f, s);
}

/*
 * NVML's library is installed (the driver's user-space half) and says the kernel driver is not
 * loaded, while the PCI bus shows no NVIDIA GPU. Read and empty, the bus says nothing needs the
 * driver (a CPU node with the driver package): information. Not read (an import of nvidia-smi's
 * "couldn't communicate with the NVIDIA driver", or --only): the driver was installed for a GPU
 * and is not running, as on a machine whose kernel was updated without the module (critical).
 * Both are the same finding, so knowing less never adds one.
 */
static void check_no_driver_no_bus_gpu(const struct rule_ctx *ctx, struct findings *out)
{
    const struct snapshot *s = ctx->facts->snap;
    const struct driver_info *d = &s->driver;
    bool module_known = (d->valid & (UINT64_C(1) << DRIVER_S_MODULE)) != 0;
    bool bus_read = (s->pcie.valid & (UINT64_C(1) << PCIE_I_GPUS)) != 0;
    struct finding *f;

    if (module_known && d->module_loaded)
        return; /* loaded after all: the library and the module disagree (driver-mismatch) */
    f = finding_new(ctx, out, -1, -1);
    finding_evidence(f, "nvmlInit_v2: DRIVER_NOT_LOADED (nvidia-smi: 'couldn't communicate "
                        "with the NVIDIA driver')");
    host_side(f, s);
    if (module_known)
        finding_evidence(f, "no nvidia kernel module loaded (/sys/module/nvidia absent)");
    if (bus_read) {
        f->severity = SEV_INFO;
        finding_title(f, "NVIDIA driver installed but not loaded; no NVIDIA GPU on the PCI bus");
        finding_evidence(f, "the PCI bus was read: no NVIDIA display or 3D controller");
        finding_fix(f, "# nothing needs the driver here; if a GPU is installed, it is not seen "
                       "on the bus: check its seating and power");
        f->impact = 0;
        return;
    }
    finding_title(f, "NVIDIA driver installed but its kernel module is not loaded");
    finding_evidence(f, "the PCI bus was not read, so the GPUs were not seen; NVML's user-space "
                        "library is installed for them");
    unloaded_module_fixes(f, s);
}

static void check_no_driver(const struct rule_ctx *ctx, struct findings *out)
{
    const struct snapshot *s = ctx->facts->snap;
    const struct nvml_system *n = &s->nvml;
    size_t passthrough = 0, nouveau = 0;
    bool missing;
    struct finding *f;

    if (!n->attempted) {
        check_no_driver_reported(ctx, out);
        return;
    }
    if (n->load_error == 0 && n->init_rc != NVML_ERROR_DRIVER_NOT_LOADED)
        return;
    /* The module loaded, or a container whose host's module is not known absent: NVML cannot
     * reach a driver that is there (health.nvml-failed). */
    if (nvml_unreached(s) &&
        !((s->driver.valid & (UINT64_C(1) << DRIVER_S_MODULE)) && !s->driver.module_loaded))
        return;
    if (s->pcie.n_gpus == 0) {
        /* No GPU on the bus either: nothing to check (exit 3), unless the bus was not read. */
        if (n->load_error != 0) {
            if (!(s->pcie.valid & (UINT64_C(1) << PCIE_I_GPUS)))
                need_collector(ctx, out, COLLECTOR_PCIE);
            return;
        }
        check_no_driver_no_bus_gpu(ctx, out);
        return;
    }
    for (size_t i = 0; i < s->pcie.n_gpus; i++) {
        const char *drv = s->pcie.gpus[i].driver;

        passthrough += drv && strcmp(drv, "vfio-pci") == 0;
        nouveau += drv && strcmp(drv, "nouveau") == 0;
    }
    missing = n->load_error != 0;
    f = finding_new(ctx, out, -1, -1);
    if (passthrough == s->pcie.n_gpus) {
        f->severity = SEV_INFO;
        finding_title(f, "All %zu NVIDIA GPUs are passed through to virtual machines (vfio-pci)",
                      s->pcie.n_gpus);
    } else if (missing) {
        finding_title(f, "No NVIDIA driver installed, but %zu NVIDIA GPU%s on the PCI bus",
                      s->pcie.n_gpus, s->pcie.n_gpus == 1 ? " is" : "s are");
    } else {
        finding_title(f, "NVIDIA driver not loaded, but %zu NVIDIA GPU%s on the PCI bus",
                      s->pcie.n_gpus, s->pcie.n_gpus == 1 ? " is" : "s are");
    }
    if (missing)
        finding_evidence(f, "%s could not be loaded: %s", n->library ? n->library : "NVML",
                         n->load_detail ? n->load_detail : "not found");
    else
        finding_evidence(f, "nvmlInit_v2: DRIVER_NOT_LOADED");
    host_side(f, s);
    for (size_t i = 0; i < s->pcie.n_gpus && i < 8; i++)
        finding_evidence_take(
            f,
            TWICE(
                "GPU %s (device %04" PRIx32 "): kernel driver %s",
                (s->pcie.gpus[i].address ? s->pcie.gpus[i].address : "?", s->pcie.gpus[i].device_id,
                 s->pcie.gpus[i].driver ? s->pcie.gpus[i].driver : "none bound"),
                (s->pcie.gpus[i].address ? s->pcie.gpus[i].address : "?", s->pcie.gpus[i].device_id,
                 s->pcie.gpus[i].driver ? s->pcie.gpus[i].driver : _("none bound"))));
    if (passthrough == s->pcie.n_gpus) {
        finding_fix(f, "# intended for VMs; to use them here, unbind them from vfio-pci");
        f->impact = 0.1;
        return;
    }
    if (nouveau)
        finding_fix(f, "echo 'blacklist nouveau' | sudo tee /etc/modprobe.d/blacklist-nouveau.conf"
                       " && sudo update-initramfs -u   # nouveau holds the GPUs; reboot after");
    if (missing) {
        finding_fix(f, "# install the NVIDIA driver from your distribution (Debian: apt install "
                       "nvidia-driver) or NVIDIA's repository");
    } else {
        finding_fix(f, "sudo modprobe nvidia && nvidia-smi   # load it; read the error if it "
                       "fails");
        finding_fix(f, "dkms status | grep -i nvidia   # is the module built for this kernel "
                       "($(uname -r))?");
        finding_fix(f, "mokutil --sb-state   # Secure Boot refuses unsigned modules");
    }
    finding_fix(f, "sudo dmesg -T | grep -iE 'nvidia|nouveau|NVRM' | tail -20");
    f->impact = (double)s->pcie.n_gpus;
}

const struct rule rule_stack_no_driver = {
    .id = "stack.no-driver",
    .severity = SEV_CRITICAL,
    .category = CAT_STACK,
    .title = N_("No NVIDIA driver loaded with GPUs present"),
    .explanation = N_(
        "NVIDIA GPUs are on the PCI bus but the NVIDIA driver is not installed or not loaded, so "
        "no program can use them and nvidia-smi fails ('NVIDIA-SMI has failed because it couldn't "
        "communicate with the NVIDIA driver'). Usual causes: a kernel update without the module "
        "rebuilt for it (DKMS), Secure Boot refusing the unsigned module, the nouveau driver "
        "holding the GPUs, or a driver that was never installed. GPUs bound to vfio-pci are "
        "passed through to virtual machines (information only)."),
    .detection =
        N_("NVML's library did not load, or nvmlInit_v2 returned DRIVER_NOT_LOADED, while "
           "sysfs lists NVIDIA display-class devices; their bound kernel driver is shown. "
           "When the PCI bus was not read (an import, --only), NVML's library loading and "
           "saying DRIVER_NOT_LOADED is enough: the driver was installed for a GPU and its "
           "module is not running (unless the driver collector saw the module loaded). A "
           "bus that was read and holds no NVIDIA GPU makes it information: nothing needs "
           "the driver. Not when the driver collector saw the module loaded, nor inside a "
           "container unless it saw no NVIDIA module loaded (sysfs shows the host's): NVML then "
           "cannot reach a driver that runs, which health.nvml-failed reports. Without NVML's "
           "answer (an imported error), a program's own words that it found no driver (an "
           "error given with --error) with no NVIDIA module loaded are enough."),
    .fix =
        N_("Load it (modprobe nvidia) and read the error; check that DKMS built it for the running "
           "kernel and that Secure Boot accepts it; blacklist nouveau; install the driver if it is "
           "missing."),
    .thresholds = NO_THRESHOLDS,
    .explains = EXPLAINS({ "health.nvml-failed", LINK_ANY, NULL,
                           N_("without the host's module NVML reaches no driver, in a container "
                              "either"),
                           LINK_FIX_OWN }),
    .check = check_no_driver,
};

/* ---- stack.driver-mismatch ---- */

static void check_mismatch(const struct rule_ctx *ctx, struct findings *out)
{
    const struct snapshot *s = ctx->facts->snap;
    const char *module = s->driver.module_version, *lib = s->nvml.library_version;
    bool init = s->nvml.attempted && s->nvml.init_rc == NVML_ERROR_LIB_RM_VERSION_MISMATCH;
    bool differ = module && lib && str_version_cmp(module, lib) != 0;
    struct finding *f;

    if (init || differ) {
        f = finding_new(ctx, out, -1, -1);
        if (module && lib && differ)
            finding_title(f, "Driver/library version mismatch: kernel module %s, libraries %s",
                          module, lib);
        else
            finding_title(f, "Driver/library version mismatch: NVML refuses to start");
        reported_texts(ctx, f, CUDAERR_DRIVER_MISMATCH);
        if (init)
            finding_evidence(f, "nvmlInit_v2: LIB_RM_VERSION_MISMATCH (%s)",
                             s->nvml.init_error ? s->nvml.init_error
                                                : "Driver/library version mismatch");
        if (module)
            finding_evidence(f, "kernel module loaded: %s%s%s", module,
                             s->driver.module_flavor ? ", " : "",
                             s->driver.module_flavor ? s->driver.module_flavor : "");
        if (lib)
            finding_evidence(f, "user-space library: %s (%s)", lib,
                             s->nvml.library ? s->nvml.library : "libnvidia-ml");
        finding_evidence(f, "typical after a driver upgrade without a reboot: the old module is "
                            "still loaded");
        finding_fix(f, "# a reboot loads the matching module: sudo reboot");
        /* Every holder of the module must go first (nvidia_peermem depends on nvidia, the
         * daemons keep the GPUs open), and what was stopped must come back: persistence off
         * until the next boot loses the GPUs' settings. */
        finding_fix(f, "# without a reboot, once no process uses the GPUs: stop those of "
                       "nvidia-persistenced nvidia-fabricmanager nvidia-dcgm (nv-hostengine) "
                       "dcgm-exporter that run (sudo systemctl stop ...), and a display manager");
        finding_fix(f, "#   then: sudo modprobe -r nvidia_peermem (if loaded); sudo rmmod "
                       "nvidia_uvm nvidia_drm "
                       "nvidia_modeset nvidia && sudo modprobe nvidia");
        finding_fix(f, "#   then start again what was stopped: sudo systemctl start "
                       "nvidia-persistenced ...");
        f->impact = s->nvml.device_count ? (double)s->nvml.device_count : 4.0;
    }
    /* A process that brought its own libcuda (a container image) of another version. */
    for (size_t i = 0; module && i < s->procs.n_procs; i++) {
        const struct proc *p = &s->procs.procs[i];

        for (size_t k = 0; k < p->n_libs; k++) {
            const struct proc_lib *l = &p->libs[k];
            char label[160];

            if (!l->kind || strcmp(l->kind, "cuda") != 0 || !l->version ||
                !strchr(l->version, '.') || str_version_cmp(l->version, module) == 0)
                continue;
            proc_desc(label, sizeof(label), ctx, p->pid);
            f = finding_new(ctx, out, -1, p->pid);
            finding_title(f, "%s uses libcuda %s, but the kernel module is %s", label, l->version,
                          module);
            finding_evidence(f, "mapped %s", l->path ? l->path : "libcuda");
            finding_evidence(f, "CUDA calls in this process fail (CUDA_ERROR_SYSTEM_DRIVER_"
                                "MISMATCH / 'system has unsupported display driver / cuda "
                                "driver combination')");
            finding_fix(f, "# run containers with the NVIDIA Container Toolkit (--gpus all), "
                           "which mounts the host's own driver libraries; do not ship libcuda "
                           "in the image");
            f->impact = 0.8;
            break;
        }
    }
}

const struct rule rule_stack_driver_mismatch = {
    .id = "stack.driver-mismatch",
    .severity = SEV_CRITICAL,
    .category = CAT_STACK,
    .title = N_("Driver/library version mismatch"),
    .explanation = N_(
        "The NVIDIA kernel module and the user-space driver libraries (libnvidia-ml, libcuda) "
        "must be the same release. After a driver upgrade without a reboot the old module stays "
        "loaded: nvidia-smi says 'Failed to initialize NVML: Driver/library version mismatch' and "
        "CUDA programs fail. The same happens inside a container whose image carries its own "
        "libcuda of another version."),
    .detection = N_("nvmlInit_v2 returned LIB_RM_VERSION_MISMATCH; or the kernel module's version "
                    "(/proc/driver/nvidia/version) differs from the NVML library's; or a process "
                    "maps a libcuda.so.VERSION other than the module's."),
    .fix = N_("Reboot. Or, when no process uses the GPUs: stop what holds the modules "
              "(nvidia-persistenced, nvidia-fabricmanager, DCGM's nv-hostengine, dcgm-exporter, a "
              "display manager), unload them with nvidia_peermem first, load nvidia, and start "
              "again what was stopped. For "
              "containers, use the NVIDIA Container Toolkit, which mounts the host's libraries."),
    .thresholds = NO_THRESHOLDS,
    .check = check_mismatch,
};

/* ---- stack.cuda-too-new ---- */

/*
 * Whether a driver that supports CUDA drv (nvmlSystemGetCudaDriverVersion: 12040 = 12.4) runs a
 * build for CUDA cuda, from that number alone: a newer major cannot run, a newer minor of the
 * same major runs through minor-version compatibility (CUDA 11 on: every driver of the family
 * has the family's minimum, since it supports the family's first release).
 */
static enum cuda_driver_verdict cuda_by_driver_cuda(int32_t drv, const char *cuda)
{
    unsigned long major, minor, dmaj = (unsigned long)NVML_CUDA_DRIVER_VERSION_MAJOR(drv),
                                dmin = (unsigned long)NVML_CUDA_DRIVER_VERSION_MINOR(drv);
    char *end;

    major = strtoul(cuda, &end, 10);
    if (end == cuda || *end != '.')
        return CUDA_DRIVER_UNKNOWN;
    minor = strtoul(end + 1, &end, 10);
    if (major < dmaj || (major == dmaj && minor <= dmin))
        return CUDA_DRIVER_OK;
    return major == dmaj && major >= 11 ? CUDA_DRIVER_MINOR_COMPAT : CUDA_DRIVER_TOO_OLD;
}

/*
 * The verdict on running CUDA cuda: from the driver's version and the compatibility table when
 * the version is known, else from the CUDA version the driver supports. req gets what the table
 * says about cuda either way.
 */
static enum cuda_driver_verdict cuda_verdict(const struct snapshot *s, const char *driver,
                                             const char *cuda, struct cuda_driver_req *req)
{
    enum cuda_driver_verdict v = CUDA_DRIVER_UNKNOWN;
    /* A major alone (a soname's "12") says nothing of the minor it needs: only a driver of an
     * older major is certain not to run it. */
    bool major_only = strchr(cuda, '.') == NULL;

    memset(req, 0, sizeof(*req));
    if (driver != NULL)
        v = cuda_driver_check(driver, cuda, req);
    if ((v == CUDA_DRIVER_UNKNOWN || major_only) && has_driver_cuda(s)) {
        if (driver == NULL && cuda_min_driver(cuda, req) != 0)
            memset(req, 0, sizeof(*req));
        v = major_only ? (strtoul(cuda, NULL, 10) > (unsigned long)NVML_CUDA_DRIVER_VERSION_MAJOR(
                                                        s->nvml.cuda_driver_version)
                              ? CUDA_DRIVER_TOO_OLD
                              : CUDA_DRIVER_UNKNOWN)
                       : cuda_by_driver_cuda(s->nvml.cuda_driver_version, cuda);
    }
    if (major_only && v != CUDA_DRIVER_TOO_OLD)
        v = CUDA_DRIVER_UNKNOWN;
    return v;
}

/* fw: the framework record judged, or NULL for the CUDA runtime process pid maps. */
static void cuda_finding(const struct rule_ctx *ctx, struct findings *out, const char *driver,
                         const struct stack_framework *fw, int32_t pid, const char *what,
                         const char *cuda)
{
    struct cuda_driver_req req;
    enum cuda_driver_verdict v = cuda_verdict(ctx->facts->snap, driver, cuda, &req);
    char have[16] = "?", label[160], name[48];
    struct finding *f;

    if (v == CUDA_DRIVER_OK || v == CUDA_DRIVER_UNKNOWN)
        return;
    if (has_driver_cuda(ctx->facts->snap))
        cuda_of_driver(have, sizeof(have), ctx->facts->snap->nvml.cuda_driver_version);
    /* "driver 470.256.02", or "the driver" when only the CUDA it supports is known. */
    snprintf(name, sizeof(name), "%s%s", driver ? "driver " : "the driver", driver ? driver : "");
    f = finding_new(ctx, out, -1, pid);
    if (v == CUDA_DRIVER_TOO_OLD) {
        finding_title(f, "%s needs CUDA %s; %s supports CUDA %s", what, cuda, name, have);
    } else {
        f->severity = SEV_INFO;
        finding_title(f, "%s (CUDA %s) runs on %s only through minor-version compatibility", what,
                      cuda, name);
    }
    if (fw != NULL) {
        fw_found_evidence(f, ctx, fw);
    } else {
        proc_desc(label, sizeof(label), ctx, pid);
        finding_evidence(f, "found in %s", label);
    }
    if (driver == NULL)
        finding_evidence(f,
                         "the driver supports CUDA %s (nvmlSystemGetCudaDriverVersion); its "
                         "version string is not known",
                         have);
    if (req.min_driver)
        finding_evidence_take(
            f, TWICE("CUDA %s needs driver %s or newer%s%s",
                     (cuda, req.min_driver,
                      req.min_driver_compat ? "; with minor-version compatibility " : "",
                      req.min_driver_compat ? req.min_driver_compat : ""),
                     (cuda, req.min_driver,
                      req.min_driver_compat ? _("; with minor-version compatibility ") : "",
                      req.min_driver_compat ? req.min_driver_compat : "")));
    else if (req.min_driver_compat)
        finding_evidence(f, "CUDA %lu.x needs driver %s or newer (minor-version compatibility)",
                         str_version_major(cuda), req.min_driver_compat);
    if (v == CUDA_DRIVER_TOO_OLD) {
        finding_evidence(f, "the job fails with 'CUDA driver version is insufficient for CUDA "
                            "runtime version' or finds no GPU");
        finding_fix(f,
                    "# upgrade the driver to %s or newer, or install a build of the "
                    "framework for CUDA %s or older (e.g. pip install torch --index-url "
                    "https://download.pytorch.org/whl/cuXYZ)",
                    req.min_driver ? req.min_driver : "the current release", have);
    } else {
        finding_evidence(f, "kernels shipped only as PTX for a newer CUDA cannot be compiled "
                            "by this driver (cudaErrorUnsupportedPtxVersion)");
        finding_fix(f, "# upgrade the driver to %s or newer to run it natively",
                    req.min_driver ? req.min_driver : "a newer release");
    }
    f->impact = v == CUDA_DRIVER_TOO_OLD ? 1.0 : 0.05;
}

/* Whether a GPU process maps a CUDA runtime of a known version. */
static bool proc_maps_cudart(const struct snapshot *s)
{
    for (size_t i = 0; i < s->procs.n_procs; i++) {
        for (size_t k = 0; k < s->procs.procs[i].n_libs; k++) {
            const struct proc_lib *l = &s->procs.procs[i].libs[k];

            if (l->kind && strcmp(l->kind, "cudart") == 0 && l->version)
                return true;
        }
    }
    return false;
}

/* What nvidia-container-cli's words say of a container image's requirement. */
struct image_req {
    bool unmet;    /* "unsatisfied condition: ..." (else it could not evaluate it) */
    char cond[48]; /* that condition, spaces taken out: "cuda>=12.2", "brand=tesla" */
    char cuda[16]; /* the CUDA the image asks for: the condition's, else its --require=cuda>= */
};

/* "12.2" from "12.2, please ..." into out; false when no major.minor starts s. */
static bool cuda_at(const char *s, char *out, size_t size)
{
    size_t n = strspn(s, "0123456789.");

    if (n == 0 || n >= size || s[0] == '.' || memchr(s, '.', n) == NULL)
        return false;
    memcpy(out, s, n);
    out[n] = '\0';
    return true;
}

static bool image_requirement(const char *text, struct image_req *r)
{
    const char *p = strstr(text, "unsatisfied condition:"), *q;
    size_t n = 0;

    memset(r, 0, sizeof(*r));
    if (p != NULL) {
        r->unmet = true;
        for (p += strlen("unsatisfied condition:"); *p && !strchr(",:\n\"\\", *p); p++)
            if (*p != ' ' && *p != '\t' && n + 1 < sizeof(r->cond))
                r->cond[n++] = *p;
        r->cond[n] = '\0';
    }
    if (strncmp(r->cond, "cuda>=", 6) != 0 || !cuda_at(r->cond + 6, r->cuda, sizeof(r->cuda))) {
        q = strstr(text, "--require=cuda>=");
        if (q == NULL || !cuda_at(q + strlen("--require=cuda>="), r->cuda, sizeof(r->cuda)))
            r->cuda[0] = '\0';
    }
    return r->unmet || r->cuda[0] != '\0';
}

/*
 * nvidia-container-cli refused to start a container: the image's NVIDIA_REQUIRE_CUDA asks for a
 * driver that supports a newer CUDA than this one does. The toolkit compares the CUDA version the
 * driver supports with the image's, without minor-version compatibility.
 */
static void check_image_requirement(const struct rule_ctx *ctx, struct findings *out,
                                    const char *driver)
{
    const struct snapshot *s = ctx->facts->snap;
    ssize_t k = reported_find(ctx, CUDAERR_IMAGE_REQUIREMENT, NULL);
    char have[16] = "", name[48];
    struct cuda_driver_req req = { 0 };
    struct image_req r;
    bool older = false, known = false;
    struct finding *f;

    if (k < 0 || !image_requirement(s->reported.errors[k].text, &r))
        return;
    if (has_driver_cuda(s))
        cuda_of_driver(have, sizeof(have), s->nvml.cuda_driver_version);
    snprintf(name, sizeof(name), "%s%s", driver ? "driver " : "the driver", driver ? driver : "");
    if (r.cuda[0] != '\0') {
        if (cuda_min_driver(r.cuda, &req) != 0)
            memset(&req, 0, sizeof(req));
        if (has_driver_cuda(s)) {
            known = true;
            older = cuda_by_driver_cuda(s->nvml.cuda_driver_version, r.cuda) != CUDA_DRIVER_OK;
        } else if (driver != NULL && req.min_driver != NULL) {
            known = true;
            older = str_version_cmp(driver, req.min_driver) < 0;
        }
    }
    f = finding_new(ctx, out, -1, -1);
    finding_object(f, "container image");
    reported_texts(ctx, f, CUDAERR_IMAGE_REQUIREMENT);
    if (r.cuda[0] == '\0') {
        finding_title(f, "The container image's requirement is not met by this host: %s", r.cond);
        finding_evidence(f,
                         "the image's NVIDIA_REQUIRE_* variables state what the host's driver "
                         "and GPUs must be; nvidia-container-cli found \"%s\" unmet",
                         r.cond);
        finding_fix(f, "# the image's conditions: its NVIDIA_REQUIRE_* variables (docker image "
                       "inspect shows them under Config.Env)");
        finding_fix(f, "# use an image whose conditions this host meets; NVIDIA_DISABLE_REQUIRE=1 "
                       "skips the check, at the risk of a program that cannot run here");
        f->impact = 1.0;
        return;
    }
    if (known && !older) {
        f->severity = SEV_WARNING;
        finding_title(f,
                      "The container image needs CUDA %s, which %s supports: the error came "
                      "from another host or driver",
                      r.cuda, name);
    } else if (!known && !r.unmet) {
        f->severity = SEV_WARNING;
        finding_title(f,
                      "The container image needs CUDA %s; the toolkit could not check it and "
                      "this driver's CUDA is not known here",
                      r.cuda);
    } else if (have[0] != '\0') {
        finding_title(f, "The container image needs CUDA %s; %s supports CUDA %s", r.cuda, name,
                      have);
    } else if (known) {
        finding_title(f, "The container image needs CUDA %s; %s is older than CUDA %s needs",
                      r.cuda, name, r.cuda);
    } else {
        finding_title(f,
                      "The container image needs CUDA %s, newer than this host's driver "
                      "supports",
                      r.cuda);
    }
    if (r.unmet && strncmp(r.cond, "cuda>=", 6) != 0)
        finding_evidence(f,
                         "the condition it named unmet: %s; the image's CUDA is in its "
                         "--require=cuda>=%s",
                         r.cond, r.cuda);
    if (driver == NULL && have[0] == '\0')
        finding_evidence(f, "the driver's version and the CUDA version it supports were not read "
                            "here: nvidia-container-cli's words are the evidence");
    else if (have[0] != '\0')
        finding_evidence(f, "%s supports CUDA %s (nvidia-smi's 'CUDA Version')", name, have);
    if (req.min_driver)
        finding_evidence(f, "CUDA %s needs driver %s or newer", r.cuda, req.min_driver);
    finding_evidence(f, "nvidia-container-cli compares the image's NVIDIA_REQUIRE_CUDA with the "
                        "CUDA version the driver supports, without minor-version compatibility");
    finding_fix(f, "# upgrade the host's driver to %s or newer",
                req.min_driver ? req.min_driver : "one that supports it");
    if (have[0] != '\0')
        finding_fix(f,
                    "# or use an image built for CUDA %s or older (its tag names its CUDA, as "
                    "nvidia/cuda:%s.0-... does)",
                    have, have);
    else
        finding_fix(f, "# or use an image built for an older CUDA (its tag names its CUDA)");
    if (req.min_driver_compat && have[0] != '\0' &&
        strtoul(have, NULL, 10) == strtoul(r.cuda, NULL, 10))
        finding_fix(f,
                    "# same CUDA major: docker run -e NVIDIA_DISABLE_REQUIRE=1 starts it "
                    "anyway, and its programs run through minor-version compatibility (driver "
                    "%s or newer) unless they need a newer driver's features",
                    req.min_driver_compat);
    f->impact = 1.0;
}

static void check_cuda(const struct rule_ctx *ctx, struct findings *out)
{
    const struct snapshot *s = ctx->facts->snap;
    const char *driver = driver_version(s);

    check_image_requirement(ctx, out, driver);

    /* The CUDA version the driver supports is enough on its own. */
    if (driver == NULL && !has_driver_cuda(s)) {
        if (s->stack.n_frameworks > 0 || proc_maps_cudart(s))
            rule_skip(ctx, out, -1, "driver version and the CUDA version it supports unknown");
        return;
    }
    for (size_t i = 0; i < s->stack.n_frameworks; i++) {
        const struct stack_framework *fw = &s->stack.frameworks[i];
        char what[96];

        if (fw->cuda_version == NULL)
            continue; /* a CPU or ROCm build */
        snprintf(what, sizeof(what), "%s %s", fw->name ? fw->name : "a framework",
                 fw->version ? fw->version : "");
        cuda_finding(ctx, out, driver, fw, fw_pid(fw), what, fw->cuda_version);
    }
    /* GPU processes without a framework record: the CUDA runtime they mapped. */
    for (size_t i = 0; i < s->procs.n_procs; i++) {
        const struct proc *p = &s->procs.procs[i];
        bool known = false;

        for (size_t k = 0; k < s->stack.n_frameworks; k++)
            known |= s->stack.frameworks[k].pid == p->pid;
        for (size_t k = 0; k < p->n_libs && !known; k++) {
            const struct proc_lib *l = &p->libs[k];

            if (l->kind && strcmp(l->kind, "cudart") == 0 && l->version) {
                cuda_finding(ctx, out, driver, NULL, p->pid, "its CUDA runtime", l->version);
                break;
            }
        }
    }
}

const struct rule rule_stack_cuda_too_new = {
    .id = "stack.cuda-too-new",
    .severity = SEV_CRITICAL,
    .category = CAT_STACK,
    .title = N_("Framework's CUDA newer than the driver supports"),
    .explanation = N_(
        "Every CUDA release needs a minimum driver. A framework (PyTorch, TensorFlow) built for a "
        "newer CUDA than the installed driver supports fails with 'CUDA driver version is "
        "insufficient for CUDA runtime version', or silently finds no GPU and runs on the CPU. "
        "Since CUDA 11, minor-version compatibility lets an application built for 12.x run on "
        "any 12.x driver (from 525.60.13) with limits: PTX for a newer CUDA cannot be compiled. "
        "That case is information; a driver below the family's minimum is critical. A container "
        "image states the CUDA it needs (NVIDIA_REQUIRE_CUDA), and the NVIDIA Container Toolkit "
        "refuses to start it on a driver that supports an older CUDA ('requirement error: "
        "unsatisfied condition: cuda>=12.2'), minor-version compatibility or not."),
    .detection =
        N_("each framework found in GPU processes or in the Python environment gpudoctor was "
           "started in ($VIRTUAL_ENV, $CONDA_PREFIX) (its CUDA build version), or the CUDA "
           "runtime a GPU process maps, checked against the driver version with the "
           "toolkit-to-driver table (data/cuda-driver-compat.tsv), minor-version "
           "compatibility included; without the driver's version, against the CUDA version "
           "the driver supports (nvmlSystemGetCudaDriverVersion, nvidia-smi's 'CUDA "
           "Version'): a newer major cannot run, a newer minor of the same major runs "
           "through minor-version compatibility. An error given with --error in which "
           "nvidia-container-cli names an unmet condition: its cuda>= version against the CUDA "
           "version the driver supports, or the driver's version and the table."),
    .fix = N_("Upgrade the driver to the version the evidence names, or install a framework build "
              "(or a container image) for an older CUDA (PyTorch: the cuXYZ wheel index matching "
              "the driver's CUDA)."),
    .thresholds = NO_THRESHOLDS,
    .check = check_cuda,
};

/* ---- stack.toolkit-mismatch ---- */

static const struct stack_toolkit *main_toolkit(const struct stack_info *st)
{
    for (size_t i = 0; i < st->n_toolkits; i++) {
        if (st->toolkits[i].is_cuda_home)
            return &st->toolkits[i];
    }
    for (size_t i = 0; i < st->n_toolkits; i++) {
        if (st->toolkits[i].is_default)
            return &st->toolkits[i];
    }
    return st->n_toolkits == 1 ? &st->toolkits[0] : NULL;
}

static void check_toolkit(const struct rule_ctx *ctx, struct findings *out)
{
    const struct snapshot *s = ctx->facts->snap;
    const struct stack_toolkit *tk = main_toolkit(&s->stack);
    const char *driver = driver_version(s), *tkv;
    struct cuda_driver_req req;
    struct finding *f;

    if (tk == NULL)
        return;
    tkv = tk->nvcc_version ? tk->nvcc_version : tk->version;
    if (tkv == NULL)
        return;
    if (driver == NULL && !has_driver_cuda(s)) {
        rule_skip(ctx, out, -1, "driver version and the CUDA version it supports unknown");
    } else if (cuda_verdict(s, driver, tkv, &req) == CUDA_DRIVER_TOO_OLD) {
        char have[16] = "?";

        if (has_driver_cuda(s))
            cuda_of_driver(have, sizeof(have), s->nvml.cuda_driver_version);
        f = finding_new(ctx, out, -1, -1);
        finding_object(f, "%s", tk->path ? tk->path : "CUDA toolkit");
        if (driver)
            finding_title(f, "CUDA toolkit %s (%s) is newer than driver %s supports", tkv,
                          tk->path ? tk->path : "?", driver);
        else
            finding_title(f, "CUDA toolkit %s (%s) is newer than the driver supports (CUDA %s)",
                          tkv, tk->path ? tk->path : "?", have);
        if (req.min_driver)
            finding_evidence(f, "CUDA %s needs driver %s or newer", tkv, req.min_driver);
        finding_evidence(f, "programs built with this nvcc fail to start: 'CUDA driver version "
                            "is insufficient for CUDA runtime version'");
        finding_fix(f, "# upgrade the driver, or use a toolkit the driver supports (nvidia-smi "
                       "shows the highest CUDA version it runs)");
        f->impact = 0.5;
    }
    if (tk->nvcc_version == NULL)
        return;
    for (size_t i = 0; i < s->stack.n_frameworks; i++) {
        const struct stack_framework *fw = &s->stack.frameworks[i];

        if (fw->cuda_version == NULL ||
            str_version_major(fw->cuda_version) == str_version_major(tk->nvcc_version))
            continue;
        f = finding_new(ctx, out, -1, fw_pid(fw));
        finding_object(f, "%s", tk->path ? tk->path : "CUDA toolkit");
        finding_title(f, "nvcc %s (%s) does not match %s %s, built for CUDA %s", tk->nvcc_version,
                      tk->path ? tk->path : "?", fw->name ? fw->name : "the framework",
                      fw->version ? fw->version : "", fw->cuda_version);
        fw_found_evidence(f, ctx, fw);
        finding_evidence(f, "CUDA extensions compiled here (pip installs that build CUDA code, "
                            "torch.utils.cpp_extension, apex, flash-attn) fail to build or to "
                            "load");
        finding_fix(f,
                    "# install the toolkit matching the framework (CUDA %s) and point "
                    "CUDA_HOME at it, or use the framework build for CUDA %lu",
                    fw->cuda_version, str_version_major(tk->nvcc_version));
        f->impact = 0.2;
    }
}

const struct rule rule_stack_toolkit_mismatch = {
    .id = "stack.toolkit-mismatch",
    .severity = SEV_WARNING,
    .category = CAT_STACK,
    .title = N_("CUDA toolkit mismatches the driver or framework"),
    .explanation = N_(
        "The CUDA toolkit (nvcc, the headers and libraries under /usr/local/cuda) is newer than "
        "the driver supports, so programs built with it do not start; or its major version "
        "differs from the CUDA the framework was built for, so CUDA extensions compiled on this "
        "machine (custom kernels, flash-attn, apex, any pip install that compiles CUDA code) fail "
        "to build or to load. The framework itself ships its own CUDA runtime and is not "
        "affected."),
    .detection = N_("the toolkit CUDA_HOME names, else /usr/local/cuda's, else the only one: its "
                    "version checked against the driver (data/cuda-driver-compat.tsv; without the "
                    "driver's version, against the CUDA version the driver supports), and its nvcc "
                    "major version compared with each framework's CUDA build."),
    .fix = N_("Install the toolkit matching the framework and point CUDA_HOME at it (toolkits "
              "install side by side under /usr/local/cuda-X.Y), or upgrade the driver."),
    .thresholds = NO_THRESHOLDS,
    .check = check_toolkit,
};

/* ---- stack.cudnn ---- */

/*
 * The cuDNN a framework's process maps: its version ("" when the file name has none), NULL when
 * it maps none. *known is false when that cannot be told: the process or its maps are not in
 * the snapshot.
 */
static const char *proc_cudnn(const struct snapshot *s, int32_t pid, bool *known)
{
    const struct proc *p = proc_table_find(&s->procs, pid);

    *known = false;
    if (p == NULL)
        return NULL;
    for (size_t k = 0; k < p->n_libs; k++) {
        const struct proc_lib *l = &p->libs[k];

        if (l->kind && strcmp(l->kind, "cudnn") == 0) {
            *known = true;
            return l->version ? l->version : "";
        }
    }
    *known = proc_has(p, PROC_S_MAPS);
    return NULL;
}

/* "9.1.0" -> 9 and 1; minor -1 when the version has none (TensorFlow records the major only). */
static bool cudnn_parts(const char *v, long *major, long *minor)
{
    char *end;

    *major = strtol(v, &end, 10);
    *minor = -1;
    if (end == v || *major < 0)
        return false;
    if (*end == '.' && end[1] >= '0' && end[1] <= '9')
        *minor = strtol(end + 1, NULL, 10);
    return true;
}

/*
 * Why (N_() text) a cuDNN loaded at run time does not serve a framework built for want, or NULL
 * when it does (or the versions do not say). Another major is another API. Before cuDNN 8 the minor
 * must match too (PyTorch refuses 7.1 for a 7.3 build); from 8 on, a release runs what was built
 * for the same or an earlier minor (minor-version compatibility), not for a later one.
 */
static const char *cudnn_conflict(const char *want, const char *loaded)
{
    long wmaj, wmin, lmaj, lmin;

    if (!cudnn_parts(want, &wmaj, &wmin) || !cudnn_parts(loaded, &lmaj, &lmin))
        return NULL;
    if (wmaj != lmaj)
        return N_("a cuDNN of another major version has a different API: layers fail, or the "
                  "framework falls back to slow kernels");
    if (wmin < 0 || lmin < 0 || wmin == lmin)
        return NULL;
    if (wmaj < 8)
        return N_("before cuDNN 8 the minor version must match too: the framework refuses to use "
                  "cuDNN ('cuDNN version incompatibility')");
    if (lmin < wmin)
        return N_("cuDNN runs what was built for the same or an earlier minor version, not a later "
                  "one: functions the build uses may be missing");
    return NULL;
}

/*
 * The cuDNN major a framework release was built with, for a framework that records none: 0 when
 * not known. TensorFlow's tested build configurations (tensorflow.org/install/source): cuDNN 8
 * from 2.4 to 2.17, 9 from 2.18. PyTorch's wheels pin nvidia-cudnn: 8 up to 2.3, 9 from 2.4.
 */
static unsigned long cudnn_major_built(const struct stack_framework *fw)
{
    if (fw->name == NULL || str_version_major(fw->version) == 0)
        return 0;
    if (strcmp(fw->name, "tensorflow") == 0)
        return str_version_cmp(fw->version, "2.18") >= 0  ? 9
               : str_version_cmp(fw->version, "2.4") >= 0 ? 8
                                                          : 0;
    if (strcmp(fw->name, "torch") == 0)
        return str_version_cmp(fw->version, "2.4") >= 0   ? 9
               : str_version_cmp(fw->version, "1.8") >= 0 ? 8
                                                          : 0;
    return 0;
}

/* Which framework it is: "tensorflow", "torch", or NULL for another or an unnamed one. */
static bool fw_is(const struct stack_framework *fw, const char *name)
{
    return fw->name != NULL && strcmp(fw->name, name) == 0;
}

/*
 * The line that installs, in the job's environment, the cuDNN a framework was built with: the major
 * it records, or else the one its release was built with; the wheel's suffix is the CUDA major it
 * was built for (nvidia-cudnn-cu11, -cu12). What is not known is said in a comment, with how to
 * find it, rather than left to an unpinned install, which brings the newest major.
 */
static void cudnn_install_fix(struct finding *f, const struct stack_framework *fw)
{
    unsigned long cuda = str_version_major(fw->cuda_version), major = 0;
    long rec_major, rec_minor;

    if (fw->cudnn_version && cudnn_parts(fw->cudnn_version, &rec_major, &rec_minor))
        major = (unsigned long)rec_major;
    else
        major = cudnn_major_built(fw);
    if (major != 0 && major < 8) {
        finding_fix(f,
                    "# install cuDNN %s in the job's environment (before cuDNN 8 the minor "
                    "version must match too): the distribution's package or NVIDIA's cuDNN "
                    "archive",
                    fw->cudnn_version);
        return;
    }
    if (major != 0 && cuda != 0) {
        finding_fix(f,
                    "pip install 'nvidia-cudnn-cu%lu==%lu.*'   # the cuDNN major it was built "
                    "with, in the job's environment (or the distribution's cuDNN %lu)",
                    cuda, major, major);
        return;
    }
    if (major != 0) {
        /* The wheel's suffix is the CUDA major of the build, which the framework tells. */
        if (fw_is(fw, "tensorflow"))
            finding_fix(f, "python -c 'import tensorflow as tf; "
                           "print(tf.sysconfig.get_build_info().get(\"cuda_version\"))'   # the "
                           "CUDA version it was built for");
        else if (fw_is(fw, "torch"))
            finding_fix(f, "python -c 'import torch; print(torch.version.cuda)'   # the CUDA "
                           "version it was built for");
        finding_fix(f,
                    "# in the job's environment: pip install 'nvidia-cudnn-cuXX==%lu.*', XX "
                    "being the major of the CUDA version the framework was built for (12 for "
                    "CUDA 12.4), or the distribution's cuDNN %lu",
                    major, major);
        return;
    }
    /* The release is not known: the rule that gives the major, and where to read the release. */
    if (fw_is(fw, "tensorflow"))
        finding_fix(f, "# TensorFlow 2.4 to 2.17 is built with cuDNN 8, 2.18 and later with 9 "
                       "(pip show tensorflow gives the release): install that major, pinned");
    else if (fw_is(fw, "torch"))
        finding_fix(f, "# PyTorch 1.8 to 2.3 is built with cuDNN 8, 2.4 and later with 9 (pip "
                       "show torch gives the release): install that major, pinned");
    else
        finding_fix(f, "# install the cuDNN major the framework was built with, pinned (its build "
                       "information or release notes say which; TensorFlow 2.4 to 2.17 and "
                       "PyTorch 1.8 to 2.3 use 8, later releases 9)");
    if (cuda != 0)
        finding_fix(f,
                    "# in the job's environment: pip install 'nvidia-cudnn-cu%lu==MAJOR.*', or "
                    "the distribution's package",
                    cuda);
    else
        finding_fix(f, "# in the job's environment: pip install 'nvidia-cudnn-cuXX==MAJOR.*', XX "
                       "being the major of the CUDA version the framework was built for (12 for "
                       "CUDA 12.4), or the distribution's package");
}

/*
 * A framework whose process is not in the snapshot (it died at start, or an import holds only
 * its build record): what it loads is not known, and without a cuDNN of its own in its
 * environment it loads the system's. A system cuDNN it refuses is then the likely reason it
 * stopped. (Live, a framework is found from its running process, whose maps say what it loads.)
 */
static void cudnn_system_conflict(const struct rule_ctx *ctx, struct findings *out,
                                  const struct stack_framework *fw, const char *system,
                                  const char *why)
{
    const struct snapshot *s = ctx->facts->snap;
    const char *name = fw->name ? fw->name : "framework";
    struct finding *f = finding_new(ctx, out, -1, fw_pid(fw));

    finding_title(f, "%s %s was built for cuDNN %s, the system's cuDNN is %s", name,
                  fw->version ? fw->version : "", fw->cudnn_version, system);
    finding_evidence_take(f, xstrdup(why), i18n_active() ? xstrdup(_(why)) : NULL);
    finding_evidence_take(
        f,
        TWICE("system cuDNN %s from %s",
              (system, s->stack.cudnn_source ? s->stack.cudnn_source : "the stack collector"),
              (system, s->stack.cudnn_source ? s->stack.cudnn_source : _("the stack collector"))));
    finding_evidence(f, "no process of it runs here, so what it loads is not known: without a "
                        "cuDNN of its own in its environment it loads the system's");
    /* The newest release of the major it was built with runs it (minor-version compatibility). */
    cudnn_install_fix(f, fw);
    if (fw->cuda_version == NULL)
        finding_fix(f, "# or a %s build for cuDNN %s", name, system);
    f->impact = 0.4;
}

static void check_cudnn(const struct rule_ctx *ctx, struct findings *out)
{
    const struct snapshot *s = ctx->facts->snap;
    const struct collector_status *stack = &s->collectors[COLLECTOR_STACK];
    /* The system's cuDNN was looked for when the stack collector ran at all. */
    bool system_known = stack->state == CS_OK || stack->state == CS_PARTIAL;

    cudnn_reported(ctx, out);
    for (size_t i = 0; i < s->stack.n_frameworks; i++) {
        const struct stack_framework *fw = &s->stack.frameworks[i];
        const char *want = fw->cudnn_version, *loaded, *why;
        char label[160];
        bool maps_known;
        struct finding *f;

        /* A recorded cuDNN makes it a CUDA build even where its CUDA version is unknown. */
        if (fw->cuda_version == NULL && want == NULL)
            continue;
        if (fw_from_env(fw)) {
            /* Its own site-packages may hold the cuDNN it loads (a wheel): nothing is known of
             * what it loads until it runs. */
            continue;
        }
        loaded = proc_cudnn(s, fw->pid, &maps_known);
        proc_desc(label, sizeof(label), ctx, fw->pid);
        if (want && proc_table_find(&s->procs, fw->pid) == NULL && system_known &&
            s->stack.cudnn_version && (why = cudnn_conflict(want, s->stack.cudnn_version))) {
            cudnn_system_conflict(ctx, out, fw, s->stack.cudnn_version, why);
            continue;
        }
        if (fw->cuda_version == NULL)
            continue;
        if (want && loaded && *loaded && (why = cudnn_conflict(want, loaded)) != NULL) {
            f = finding_new(ctx, out, -1, fw->pid);
            finding_title(f, "%s %s expects cuDNN %s but %s loads cuDNN %s",
                          fw->name ? fw->name : "framework", fw->version ? fw->version : "", want,
                          label, loaded);
            finding_evidence_take(f, xstrdup(why), i18n_active() ? xstrdup(_(why)) : NULL);
            finding_fix(f,
                        "# install the cuDNN the framework was built for (pip: "
                        "nvidia-cudnn-cu%lu==%s.*), and remove other cuDNN directories from "
                        "LD_LIBRARY_PATH",
                        str_version_major(fw->cuda_version), want);
            f->impact = 0.4;
            continue;
        }
        if (want != NULL || loaded != NULL || (system_known && s->stack.cudnn_version != NULL))
            continue; /* some cuDNN is there */
        /* "None anywhere" needs every place looked at: unknown is not absent. */
        if (!system_known) {
            rule_skip_take(ctx, out, -1,
                           TWICE("system cuDNN not collected (stack collector %s)",
                                 (collector_state_names[stack->state]),
                                 (_(collector_state_words[stack->state]))));
            continue;
        }
        if (!maps_known) {
            rule_skip(ctx, out, -1, "libraries pid %d maps unknown (its maps not read)",
                      (int)fw->pid);
            continue;
        }
        f = finding_new(ctx, out, -1, fw->pid);
        finding_title(f, "No cuDNN found for %s %s (CUDA %s build)",
                      fw->name ? fw->name : "framework", fw->version ? fw->version : "",
                      fw->cuda_version);
        finding_evidence(f,
                         "%s has no libcudnn mapped, the framework records no cuDNN "
                         "version and none is installed system-wide",
                         label);
        finding_evidence(f, "without cuDNN, convolutions and RNNs fail to load or run much "
                            "slower (TensorFlow silently uses the CPU)");
        /* Unpinned, pip installs the newest cuDNN, whose major the framework may not load. */
        cudnn_install_fix(f, fw);
        if (fw->name && strcmp(fw->name, "tensorflow") == 0)
            finding_fix(f, "python -c 'import tensorflow as tf; "
                           "print(tf.sysconfig.get_build_info().get(\"cudnn_version\"), "
                           "tf.config.list_physical_devices(\"GPU\"))'   # TensorFlow: confirm");
        else if (fw->name && strcmp(fw->name, "torch") == 0)
            finding_fix(f, "python -c 'import torch; print(torch.backends.cudnn.is_available(), "
                           "torch.backends.cudnn.version())'   # PyTorch: confirm");
        f->impact = 0.4;
    }
}

const struct rule rule_stack_cudnn = {
    .id = "stack.cudnn",
    .severity = SEV_WARNING,
    .category = CAT_STACK,
    .title = N_("cuDNN missing or of the wrong version"),
    .explanation =
        N_("Deep-learning frameworks use cuDNN for convolutions, RNNs and attention. When the "
           "framework finds no cuDNN it either fails to load those layers or falls back to much "
           "slower kernels (TensorFlow silently runs on the CPU). A cuDNN of another major version "
           "than the framework was built for has a different API and breaks the same way; before "
           "cuDNN 8 another minor version does too, and from 8 on an older minor than the build's "
           "may lack what it calls. These are classic 'the GPU is slow' causes after an "
           "environment change."),
    .detection =
        N_("for each CUDA build of a framework found in a GPU process: the cuDNN it records "
           "(build info or pip wheel) compared with the libcudnn its process maps: another "
           "major version; before cuDNN 8 another minor version; from 8 on an older minor "
           "than recorded. A framework whose process is not in the snapshot (it died at "
           "start; an import of its build record): its recorded cuDNN compared the same way "
           "with the system's, which it loads without one of its own. Or no cuDNN at all: "
           "none mapped, none recorded and none "
           "installed, each of them looked at (a stack collector that did not run, or maps "
           "that were not read, leave it not checked)."),
    .fix = N_("Install the cuDNN the framework expects, pinned to the major version it was built "
              "with (for pip frameworks, the nvidia-cudnn-cuXX wheel: unpinned, pip installs the "
              "newest major), and keep other cuDNN directories out of LD_LIBRARY_PATH."),
    .thresholds = NO_THRESHOLDS,
    .check = check_cudnn,
};

/* ---- stack.known-bad-driver ---- */

/*
 * Driver releases with a documented defect that affects what operators see (N_() text: the
 * report translates it, --json keeps the English). Only defects with a public source belong here
 * (see ../shared/reference/nvml-facts.md).
 */
static const struct bad_driver {
    const char *first, *last; /* inclusive range of release versions */
    const char *defect;
    const char *effect;
    const char *fix;
} bad_drivers[] = {
    { "535.43.02", "535.86.05",
      N_("nvmlDeviceGetComputeRunningProcesses_v3 writes 32-byte process records without a "
         "version change (an ABI break fixed in 535.104.05)"),
      N_("monitoring tools built against other NVML headers (nvitop, gpustat, pynvml, exporters) "
         "show wrong process ids and memory, or only the first process"),
      N_("upgrade to 535.104.05 or later in the 535 branch") },
    { "535.98", "535.98",
      N_("the process-list v3 entry points (nvmlDeviceGetComputeRunningProcesses_v3 and its "
         "siblings) that 535.43.02 to 535.86.05 had are gone (re-added in 535.104.05)"),
      N_("monitoring tools that call them (nvitop, gpustat, pynvml) show no processes at all"),
      N_("upgrade to 535.104.05 or later in the 535 branch") },
};

static void check_known_bad(const struct rule_ctx *ctx, struct findings *out)
{
    const char *driver = driver_version(ctx->facts->snap);

    if (driver == NULL) {
        /* A driver runs (GPUs answer) but nobody read its version: not checked, not healthy. */
        if (ctx->facts->snap->n_gpus > 0)
            rule_skip(ctx, out, -1, "driver version unknown");
        return;
    }
    for (size_t i = 0; i < ARRAY_SIZE(bad_drivers); i++) {
        const struct bad_driver *b = &bad_drivers[i];
        struct finding *f;

        if (str_version_cmp(driver, b->first) < 0 || str_version_cmp(driver, b->last) > 0)
            continue;
        f = finding_new(ctx, out, -1, -1);
        finding_object(f, "driver %s", driver);
        finding_title_take(f, TWICE("Driver %s has a known defect: %s", (driver, b->effect),
                                    (driver, _(b->effect))));
        finding_evidence_take(f, TWICE("affected releases %s to %s: %s",
                                       (b->first, b->last, b->defect),
                                       (b->first, b->last, _(b->defect))));
        finding_fix_take(f, xasprintf("# %s", b->fix),
                         i18n_active() ? xasprintf("# %s", _(b->fix)) : NULL);
        f->impact = 0.1;
    }
}

const struct rule rule_stack_known_bad_driver = {
    .id = "stack.known-bad-driver",
    .severity = SEV_WARNING,
    .category = CAT_STACK,
    .title = N_("Driver release with a known defect"),
    .explanation =
        N_("Some driver releases have documented defects that change what the operator sees or "
           "gets: for example 535.43.02 to 535.86.05 changed the layout of NVML's process list "
           "without a version bump, so monitoring tools show wrong processes, and 535.98 dropped "
           "those calls, so they show none. gpudoctor lists only "
           "defects with a public source; a newer release of the same branch fixes them."),
    .detection = N_("the driver version (NVML, else the kernel module) within a range of the "
                    "known-defect table in src/rules/rules-stack.c."),
    .fix = N_("Upgrade to the fixed release the finding names, within the same branch if you need "
              "to stay on it."),
    .thresholds = NO_THRESHOLDS,
    .check = check_known_bad,
};
