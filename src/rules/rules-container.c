/*
 * GPUs and containers: a running container that has lost its GPUs ("Failed to initialize NVML:
 * Unknown Error" inside it), and a docker daemon that cannot give containers GPUs at all (docker's
 * 'could not select device driver "" with capabilities: [[gpu]]'). Starting a container without
 * the GPUs is health.nvml-failed's (rules-health.c).
 */
#include "data/cudaerr.h"
#include "nvml/nvml-abi.h"
#include "rules/rule-impl.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* ---- host.container-lost-devices ---- */

static bool devices_read(const struct driver_info *d)
{
    return (d->valid & (UINT64_C(1) << DRIVER_S_DEVICES)) != 0;
}

static void lost_fixes(struct finding *f, const char *ctr)
{
    finding_fix(f, "cat /sys/fs/cgroup/devices/devices.list   # inside the container, cgroup v1: "
                   "the GPUs need 'c 195:N rw' lines; 'c 195:* m' alone means they were taken");
    if (ctr != NULL && strcmp(ctr, "kubernetes") == 0)
        finding_fix(f, "# the container cannot get them back while it runs: delete the pod, its "
                       "controller starts a new one with the GPUs");
    else
        finding_fix(f, "# the container cannot get them back while it runs: recreate it (docker "
                       "rm -f, then run it again; on Kubernetes, delete the pod)");
    finding_fix(f, "sudo nvidia-ctk system create-dev-char-symlinks --create-all   # on the host: "
                   "the /dev/char links runc needs to keep the GPUs through a daemon-reload");
    finding_fix(f, "# lasting fix on the host: NVIDIA Container Toolkit 1.18 or newer injects the "
                   "GPUs through CDI by default, which keeps them (or pass each /dev/nvidia* with "
                   "--device, or use the cgroupfs cgroup driver)");
}

/* The device cgroup's verdict on /dev/nvidiactl: 1 denied, 0 allowed, -1 not read. */
static int ctl_denied(const struct driver_info *d)
{
    if ((d->valid & (UINT64_C(1) << DRIVER_S_CTL_CGROUP)) == 0 || d->ctl_cgroup == NULL)
        return -1;
    return strcmp(d->ctl_cgroup, "denied") == 0 ? 1 : 0;
}

static void check_lost_devices(const struct rule_ctx *ctx, struct findings *out)
{
    const struct snapshot *s = ctx->facts->snap;
    const struct nvml_system *n = &s->nvml;
    const struct driver_info *d = &s->driver;
    const char *ctr = host_container(&s->host);
    const struct cudaerr_info *m = NULL;
    ssize_t rep = reported_find(ctx, CUDAERR_NVML_UNKNOWN, &m);
    bool nvml_tried = n->attempted && n->load_error == 0 && n->init_rc != JF_RC_NOT_COLLECTED;
    bool nvml_unknown = nvml_tried && n->init_rc == NVML_ERROR_UNKNOWN;
    bool nvml_ok = nvml_tried && n->init_rc == 0 && n->device_count_rc == 0;
    /* the failures a refused open gives; not loaded and mismatch have rules of their own */
    bool nvml_refused = nvml_unknown || (nvml_tried && n->init_rc == NVML_ERROR_NO_PERMISSION);
    bool no_files = devices_read(d) && !d->dev_ctl && d->dev_gpus == 0;
    int denied = ctl_denied(d);
    struct finding *f;

    if (rep < 0 && !(ctr != NULL && (nvml_unknown || (denied == 1 && nvml_refused))))
        return;
    f = finding_new(ctx, out, -1, -1);
    if (rep >= 0 && nvml_ok) {
        finding_title(f, "The error given is NVML's Unknown Error, which a container that has "
                         "lost its GPUs prints; NVML works here");
        finding_evidence_take(f, TWICE_N("NVML started here and counts %" PRIu32 " GPU: run "
                                         "where the error came from (inside the container) to "
                                         "see it fail",
                                         "NVML started here and counts %" PRIu32 " GPUs: run "
                                         "where the error came from (inside the container) to "
                                         "see it fail",
                                         n->device_count, (n->device_count), (n->device_count)));
    } else if (ctr != NULL && !no_files && denied != 0) {
        if (denied == 1)
            finding_title(f,
                          "Inside this container (%s) the device cgroup no longer lets NVML "
                          "open the GPUs: the container has lost access to them",
                          ctr);
        else
            finding_title(f,
                          "Inside this container (%s) NVML fails with Unknown Error: the "
                          "container has most likely lost access to the GPUs' device files",
                          ctr);
        if (nvml_refused) {
            finding_evidence(f, "nvmlInit_v2 returned %s (%d)", nvml_rc_name(n->init_rc),
                             (int)n->init_rc);
            finding_explains(f, "health.nvml-failed");
        }
        finding_evidence(f, "gpudoctor runs inside a container: %s (%s)", ctr,
                         s->host.container_sign ? s->host.container_sign : "?");
    } else if (ctr != NULL && !no_files) {
        f->severity = SEV_INFO;
        finding_title(f, "NVML fails with Unknown Error in this container, whose device cgroup "
                         "still lets it open the GPUs: not a container that lost them");
        if (nvml_unknown)
            finding_evidence(f, "nvmlInit_v2 returned UNKNOWN (%d)", (int)n->init_rc);
    } else if (ctr != NULL && no_files) {
        f->severity = SEV_INFO;
        finding_title(f, "NVML's Unknown Error in a container started without the GPUs: not one "
                         "that lost them");
        finding_evidence(f, "no NVIDIA device file in this container: it was started without the "
                            "GPUs (health.nvml-failed), not deprived of them");
    } else if (ctr != NULL) {
        f->severity = SEV_INFO;
        finding_title(f,
                      "The error given is NVML's Unknown Error, but NVML here fails with %s: "
                      "not a container that lost its GPUs",
                      nvml_rc_name(n->init_rc) ? nvml_rc_name(n->init_rc) : "another error");
    } else {
        f->severity = SEV_WARNING;
        finding_title(f, "NVML fails with Unknown Error: inside a container, the sign that it "
                         "has lost its GPUs");
        if (nvml_unknown)
            finding_evidence(f, "nvmlInit_v2 returned UNKNOWN (%d)", (int)n->init_rc);
        finding_evidence(f, "whether this runs inside a container is not known here (no "
                            "container mark was seen or recorded); on a host, Unknown Error "
                            "is a driver fault: see the kernel log");
    }
    reported_texts(ctx, f, CUDAERR_NVML_UNKNOWN);
    if (devices_read(d) && d->dev_ctl)
        dev_files_evidence(f, d);
    else if (!devices_read(d))
        finding_evidence(f, "whether the NVIDIA device files are present here was not read");
    if (denied == 1)
        finding_evidence(f, "this process's device cgroup (cgroup v1 devices.list) allows no "
                            "reading and writing of /dev/nvidiactl (195:255)");
    else if (denied == 0)
        finding_evidence(f, "this process's device cgroup (cgroup v1 devices.list) allows "
                            "reading and writing /dev/nvidiactl (195:255)");
    else
        finding_evidence(f, "the device cgroup was not read (cgroup v2 keeps the device rules "
                            "in an eBPF program): the refusal is not confirmed here");
    if (f->severity == SEV_INFO) {
        finding_fix(f, "sudo dmesg -T | grep -iE 'NVRM|nvidia' | tail -30   # on the host: what "
                       "the driver said");
        f->impact = 0.1;
        return;
    }
    finding_evidence(f, "NVIDIA (nvidia-container-toolkit#48): GPUs given to a container by the "
                        "NVIDIA Container Runtime Hook "
                        "(docker --gpus, the nvidia runtime in legacy mode) are lost when the "
                        "container is updated behind the runtime's back, as when systemd "
                        "reloads its units (systemctl daemon-reload) with the systemd cgroup "
                        "driver, or the kubelet's static CPU manager updates the container");
    lost_fixes(f, ctr);
    f->impact = f->severity == SEV_WARNING ? 1.0 : 4.5;
}

const struct rule rule_host_container_lost_devices = {
    .id = "host.container-lost-devices",
    .severity = SEV_CRITICAL,
    .category = CAT_HEALTH,
    .title = N_("A container has lost access to its GPUs"),
    .explanation = N_(
        "A container that had its GPUs can lose them while it runs: nvidia-smi and every CUDA "
        "program in it then fail with 'Failed to initialize NVML: Unknown Error', while the host "
        "works. NVIDIA's Container Runtime Hook (docker --gpus, or the nvidia runtime in legacy "
        "mode) grants the container its device files without the low-level runtime knowing, so "
        "any update of the container's cgroup takes them away again: systemd rewriting its "
        "device rules on systemctl daemon-reload (with the systemd cgroup driver; package "
        "installs run it), or the kubelet's static CPU manager updating the container. The "
        "device files are still there; opening them is refused (EPERM). The container cannot "
        "get them back: it must be recreated. On the host, NVIDIA's /dev/char links, CDI "
        "injection (the default from NVIDIA Container Toolkit 1.18) or passing each device "
        "explicitly keep it from happening again."),
    .detection =
        N_("Inside a container (host.container), nvmlInit_v2 returned UNKNOWN (or NO_PERMISSION "
           "with the device cgroup denying it), or the error given with --error is NVML's 'Unknown "
           "Error', and the container's NVIDIA device files are not known to be absent (absent: "
           "started without the GPUs, health.nvml-failed). The device cgroup (cgroup v1's "
           "devices.list of gpudoctor's own cgroup) confirms it when it allows no read and write "
           "of /dev/nvidiactl; when it allows them, the finding is information: another cause. "
           "Under cgroup v2 the rules cannot be read and the finding says so. With the error given "
           "on a host whose NVML works, the error is taken to come from a container; a warning "
           "when where it ran is unknown."),
    .fix = N_("Recreate the container (on Kubernetes, delete the pod). On the host: sudo "
              "nvidia-ctk system create-dev-char-symlinks --create-all, or move to CDI injection "
              "(NVIDIA Container Toolkit 1.18 or newer), or pass the devices with --device."),
    .thresholds = NO_THRESHOLDS,
    .explains =
        EXPLAINS({ "health.nvml-failed", LINK_ANY, N_("NVML's Unknown Error in a container"),
                   N_("NVML fails because the container may no longer open the GPUs' "
                      "device files"),
                   LINK_FIX_IN_CAUSE }),
    .check = check_lost_devices,
};

/* ---- stack.container-toolkit-missing ---- */

static void check_toolkit_missing(const struct rule_ctx *ctx, struct findings *out)
{
    const struct snapshot *s = ctx->facts->snap;
    const struct cudaerr_info *m = NULL;
    ssize_t rep = reported_find(ctx, CUDAERR_NO_GPU_RUNTIME, &m);
    const char *ctr = host_container(&s->host);
    struct finding *f;

    if (rep < 0)
        return;
    f = finding_new(ctx, out, -1, -1);
    finding_object(f, "nvidia-container-toolkit");
    finding_title(f, "Docker cannot give containers GPUs: the NVIDIA Container Toolkit is not "
                     "installed, or not registered with the docker daemon");
    reported_texts(ctx, f, CUDAERR_NO_GPU_RUNTIME);
    finding_evidence(f, "docker run --gpus asks the daemon for a device driver with the 'gpu' "
                        "capability; the NVIDIA Container Toolkit provides it, and the daemon "
                        "knows it only after a restart");
    if (ctr != NULL)
        finding_evidence(f,
                         "gpudoctor runs inside a container (%s): the commands below are "
                         "for the host",
                         ctr);
    finding_evidence(f, "whether the toolkit is installed on the host was not checked here");
    finding_fix(f, "nvidia-ctk --version   # on the host: is the NVIDIA Container Toolkit "
                   "installed");
    finding_fix(f, "# install it from NVIDIA's repository: sudo apt-get install -y "
                   "nvidia-container-toolkit (docs.nvidia.com/datacenter/cloud-native/"
                   "container-toolkit/latest/install-guide.html)");
    finding_fix(f, "sudo nvidia-ctk runtime configure --runtime=docker && sudo systemctl restart "
                   "docker   # register it with docker and restart the daemon");
    f->impact = 4.0;
}

const struct rule rule_stack_container_toolkit_missing = {
    .id = "stack.container-toolkit-missing",
    .severity = SEV_CRITICAL,
    .category = CAT_STACK,
    .title = N_("Docker has no GPU runtime: no container toolkit"),
    .explanation =
        N_("docker run --gpus fails with 'could not select device driver \"\" with capabilities: "
           "[[gpu]]' when the docker daemon has no device driver for GPUs: the NVIDIA Container "
           "Toolkit is not installed on the host, or it was installed and not registered with "
           "docker (nvidia-ctk runtime configure) or the daemon not restarted since. No container "
           "gets a GPU until it is."),
    .detection = N_("An error given with --error that the catalogue recognises as docker's "
                    "'could not select device driver ... with capabilities: [[gpu]]'."),
    .fix = N_("Install the NVIDIA Container Toolkit on the host, run sudo nvidia-ctk runtime "
              "configure --runtime=docker and restart docker."),
    .thresholds = NO_THRESHOLDS,
    .check = check_toolkit_missing,
};
