/*
 * NVSwitch systems (category fabric): NVSwitches the NVSwitch driver did not take, Fabric Manager
 * not running where NVSwitches need it, its version different from the driver's, errors in its log
 * since it last started, and NVSwitch errors (SXids) in the kernel log. Evidence from the fabric
 * collector (collect/fabric.c: sysfs, /proc/driver/nvidia-nvswitch, dpkg's database, /proc,
 * systemd's unit links, the Fabric Manager log), the kernel-log collector (SXid lines) and NVML
 * (GPU links that end at an NVSwitch).
 */
#include "data/sxid.h"
#include "rules/rule-impl.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What says this machine has NVSwitches: the PCI bus, or GPU links that end at one. */
struct switches {
    size_t on_bus;      /* NVSwitches on the PCI bus */
    const char *first;  /* the first one's address */
    size_t gpus_linked; /* GPUs with an active link to an NVSwitch */
    bool bus_read;      /* the PCI bus was read */
};

static struct switches find_switches(const struct rule_ctx *ctx)
{
    const struct fabric_info *fb = &ctx->facts->snap->fabric;
    struct switches w = { 0 };

    w.bus_read = fabric_valid(fb, FABRIC_S_SWITCHES);
    w.on_bus = fb->n_switches;
    w.first = fb->n_switches > 0 ? fb->switches[0].pci_address : NULL;
    for (size_t i = 0; i < ctx->facts->n_gpus; i++) {
        const struct gpu *g = ctx->facts->gpus[i].g;

        if (g->handle_rc != 0 || !gpu_valid(g, GPU_S_NVLINK))
            continue;
        for (size_t k = 0; k < g->n_nvlinks; k++) {
            const struct gpu_nvlink *l = &g->nvlinks[k];

            if (gpu_nvlink_valid(l, NVL_S_ACTIVE) && l->active &&
                gpu_nvlink_valid(l, NVL_S_REMOTE_TYPE) && l->remote_type == NVL_REMOTE_SWITCH) {
                w.gpus_linked++;
                break;
            }
        }
    }
    return w;
}

static void switch_evidence(struct finding *f, const struct switches *w)
{
    if (w->on_bus > 0)
        finding_evidence(f, "%zu NVSwitch%s on the PCI bus, first %s", w->on_bus,
                         w->on_bus == 1 ? "" : "es", w->first ? w->first : "?");
    if (w->gpus_linked > 0)
        finding_evidence(f, "%zu GPU%s with NVLinks that end at an NVSwitch", w->gpus_linked,
                         w->gpus_linked == 1 ? "" : "s");
}

/*
 * Whether Fabric Manager can be judged here: the collector ran (or the snapshot carries the
 * section) and found NVSwitches on this machine's PCI bus. GPU links that end at NVSwitches the
 * bus does not show (a virtual machine given GPUs of a shared-NVSwitch system, the compute tray
 * of an NVL72 rack) are managed where the switches are: not here. Otherwise records why not, once
 * for the running rule.
 */
static bool fabric_known(const struct rule_ctx *ctx, struct findings *out, struct switches *w)
{
    *w = find_switches(ctx);
    if (ctx->facts->snap->fabric.valid == 0) {
        if (!need_collector(ctx, out, COLLECTOR_FABRIC))
            return false;
        rule_skip(ctx, out, -1, "NVSwitches and Fabric Manager were not read");
        return false;
    }
    if (!w->bus_read) {
        rule_skip(ctx, out, -1, "the PCI bus was not read: whether there are NVSwitches");
        return false;
    }
    if (w->on_bus == 0) {
        if (w->gpus_linked > 0)
            rule_skip(ctx, out, -1,
                      "Fabric Manager: the NVSwitches the GPUs' NVLinks reach are not on this "
                      "machine's PCI bus (a virtual machine, or NVLink switch trays): they are "
                      "managed where they are");
        return false;
    }
    return true;
}

/* The driver's version, as Fabric Manager compares it: the kernel module's, else NVML's. */
static const char *driver_version(const struct snapshot *s)
{
    if (s->driver.module_version)
        return s->driver.module_version;
    if (s->nvml.driver_version && s->nvml.driver_version_rc == 0)
        return s->nvml.driver_version;
    return NULL;
}

/* "550" of "550.54.15" into buf (the package branch), "" when the version has no dot. */
static void driver_branch(char *buf, size_t size, const char *version)
{
    size_t n = strspn(version, "0123456789");

    if (n == 0 || n >= size || version[n] != '.')
        n = 0;
    memcpy(buf, version, n);
    buf[n] = '\0';
}

/* The fix lines that install Fabric Manager at exactly the driver's version. */
static void fix_install(struct finding *f, const char *version)
{
    char branch[16], pkg[64];
    char *qpkg;

    if (version == NULL) {
        finding_fix(f, "# install the nvidia-fabricmanager package of exactly the driver's "
                       "version (nvidia-smi shows it)");
        return;
    }
    driver_branch(branch, sizeof(branch), version);
    snprintf(pkg, sizeof(pkg), "nvidia-fabricmanager%s%s", *branch ? "-" : "", branch);
    qpkg = fix_arg(f, "package", pkg);
    if (qpkg != NULL)
        finding_fix(
            f, "apt-cache madison %s   # the versions on offer (RHEL: dnf list --showduplicates)",
            qpkg);
    finding_fix(f,
                "# then install the one whose version is the driver's (%s): sudo apt-get "
                "install '%s=VERSION' with VERSION as apt-cache lists it",
                version, pkg);
    free(qpkg);
}

/* ---- fabric.switch-not-initialized ---- */

#define SWITCHES_NAMED 8 /* addresses in a title or an evidence line; the rest are counted */

/* "0000:c6:00.0, 0000:c7:00.0" of the switches whose driver_bound is bound, into buf. */
static void switch_list(char *buf, size_t size, const struct fabric_info *fb, bool bound,
                        bool with_bios)
{
    size_t used = 0, named = 0, more = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < fb->n_switches; i++) {
        const struct fabric_switch *sw = &fb->switches[i];

        if (!fabric_switch_valid(sw, FSW_S_DRIVER) || sw->driver_bound != bound)
            continue;
        if (named == SWITCHES_NAMED || used >= size) {
            more++;
            continue;
        }
        used +=
            (size_t)snprintf(buf + used, size - used, "%s%s", named ? ", " : "", sw->pci_address);
        if (with_bios && used < size)
            used += (size_t)snprintf(
                buf + used, size - used, " (%s)",
                fabric_switch_valid(sw, FSW_S_BIOS) && sw->bios_version ? sw->bios_version : "?");
        named++;
    }
    if (more > 0 && used < size)
        snprintf(buf + used, size - used, " +%zu", more);
}

static void check_switch_driver(const struct rule_ctx *ctx, struct findings *out)
{
    const struct fabric_info *fb = &ctx->facts->snap->fabric;
    size_t missing = 0, bound = 0, unknown = 0;
    const struct fabric_switch *first = NULL;
    char list[256];
    struct switches w;
    struct finding *f;

    if (!fabric_known(ctx, out, &w))
        return;
    if (!fabric_valid(fb, FABRIC_S_NVSW)) {
        rule_skip(ctx, out, -1,
                  "the NVSwitch driver's view (/proc/driver/nvidia-nvswitch) was not read: "
                  "which NVSwitches the driver took");
        return;
    }
    if (fb->nvswitch_proc == FABRIC_NVSW_ABSENT) {
        rule_skip(ctx, out, -1,
                  "no /proc/driver/nvidia-nvswitch (the nvidia module is not loaded, or its "
                  "NVSwitch part did not start): which NVSwitches the driver took");
        return;
    }
    if (fb->nvswitch_proc != FABRIC_NVSW_PRESENT) {
        rule_skip(ctx, out, -1,
                  "/proc/driver/nvidia-nvswitch could not be read: which NVSwitches the driver "
                  "took");
        return;
    }
    for (size_t i = 0; i < fb->n_switches; i++) {
        const struct fabric_switch *sw = &fb->switches[i];

        if (!fabric_switch_valid(sw, FSW_S_DRIVER)) {
            unknown++;
        } else if (sw->driver_bound) {
            bound++;
        } else {
            if (missing++ == 0)
                first = sw;
        }
    }
    if (unknown > 0)
        rule_skip(ctx, out, -1, "whether the NVSwitch driver took %zu of the NVSwitches", unknown);
    if (missing == 0)
        return;
    f = finding_new(ctx, out, -1, -1);
    finding_object(f, "nvidia-nvswitch");
    switch_list(list, sizeof(list), fb, false, false);
    if (missing == 1)
        finding_title(f,
                      "NVSwitch %s was not initialized by its driver: Fabric Manager cannot "
                      "configure the NVLink fabric",
                      first->pci_address);
    else
        finding_title(f,
                      "%zu of %zu NVSwitches were not initialized by their driver (%s): Fabric "
                      "Manager cannot configure the NVLink fabric",
                      missing, fb->n_switches, list);
    for (size_t i = 0, shown = 0; i < fb->n_switches && shown < SWITCHES_NAMED; i++) {
        const struct fabric_switch *sw = &fb->switches[i];

        if (!fabric_switch_valid(sw, FSW_S_DRIVER) || sw->driver_bound)
            continue;
        finding_evidence(f,
                         "NVSwitch %s (device 0x%04" PRIx32 ") is on the PCI bus but has no "
                         "entry in /proc/driver/nvidia-nvswitch/devices: the driver's probe of it "
                         "failed, and no driver is bound to it",
                         sw->pci_address, sw->device_id);
        shown++;
    }
    if (bound > 0) {
        switch_list(list, sizeof(list), fb, true, true);
        finding_evidence(f, "the driver took the others, with the BIOS versions it read: %s", list);
    } else {
        finding_evidence(f, "the driver took none of the NVSwitches: look for a cause they share "
                            "(the driver, the baseboard) before a single switch");
    }
    finding_evidence(f, "why the probe failed is in the kernel log, which gpudoctor does not keep "
                        "for this: the lines of nvidia-nvswitch after \"Probing device\" with "
                        "the address (\"Failed to initialize device\", \"Failed to enable PCI "
                        "device\", \"Failed to map BAR0 region\" and the like)");
    finding_evidence(f, "without all its NVSwitches Fabric Manager cannot configure the NVLink "
                        "fabric: the GPUs are not registered, and CUDA fails with \"system not "
                        "yet initialized\" (cudaErrorSystemNotReady, 802) or sees them as "
                        "unavailable");
    finding_fix(f, "sudo dmesg -T | grep -i 'nvidia-nvswitch'   # the probe of each NVSwitch, and "
                   "why it failed");
    for (size_t i = 0, shown = 0; i < fb->n_switches && shown < SWITCHES_NAMED; i++) {
        const struct fabric_switch *sw = &fb->switches[i];
        char *q;

        if (!fabric_switch_valid(sw, FSW_S_DRIVER) || sw->driver_bound)
            continue;
        q = fix_pci_arg(f, sw->pci_address);
        if (q != NULL)
            finding_fix(f,
                        "lspci -k -s %s   # no \"Kernel driver in use\" line: nothing drives "
                        "the switch",
                        q);
        free(q);
        shown++;
    }
    finding_fix(f, "# stop the jobs on this machine's GPUs and reboot the node (sudo reboot): the "
                   "driver probes every NVSwitch again at load, and Fabric Manager starts on a "
                   "complete fabric");
    finding_fix(f, "# if a switch fails its probe again, report its address and the kernel-log "
                   "lines to your hardware vendor: the baseboard needs service");
    f->impact = 1.0;
}

const struct rule rule_fabric_switch_not_initialized = {
    .id = "fabric.switch-not-initialized",
    .severity = SEV_CRITICAL,
    .category = CAT_FABRIC,
    .title = N_("NVSwitch not initialized by its driver"),
    .explanation = N_(
        "On HGX and DGX machines the nvidia kernel module's NVSwitch driver (nvidia-nvswitch) "
        "probes every NVSwitch on the PCI bus when it loads. A switch whose probe fails (the "
        "device cannot be enabled, its registers cannot be mapped, or its initialisation does "
        "not complete) stays on the bus with no driver. Fabric Manager then cannot configure the "
        "NVLink fabric with all its switches: the GPUs are not registered, and CUDA fails with "
        "\"system not yet initialized\" (cudaErrorSystemNotReady, 802) or sees the GPUs as "
        "unavailable, although nvidia-smi lists them. The kernel log says why the probe failed."),
    .detection = N_("On a machine with NVSwitches on its PCI bus whose NVSwitch driver is loaded "
                    "(/proc/driver/nvidia-nvswitch exists): a switch without an entry "
                    "devices/ADDR there. The driver makes that entry for every switch it "
                    "initialised, one it keeps in its degraded state included. Without the "
                    "driver's view (the module not loaded, an older snapshot) the rule says not "
                    "checked."),
    .fix = N_("Read the driver's probe messages in the kernel log (dmesg | grep nvidia-nvswitch), "
              "stop the jobs and reboot the node so that every switch is probed again; if a "
              "switch fails again, have the baseboard serviced."),
    .thresholds = NO_THRESHOLDS,
    .explains = EXPLAINS({ "fabric.gpu-not-ready", LINK_ANY, NULL,
                           N_("without all its NVSwitches Fabric Manager registers no GPU"),
                           LINK_FIX_IN_CAUSE },
                         { "fabric.fm-errors", LINK_ANY, NULL,
                           N_("Fabric Manager logs the fabric it cannot configure"), LINK_FIX_OWN },
                         { "reported.system-not-ready", LINK_ANY, NULL,
                           N_("without all its NVSwitches the fabric, and so CUDA, is not "
                              "ready"),
                           LINK_FIX_IN_CAUSE }),
    .check = check_switch_driver,
};

/* ---- fabric.fm-not-running ---- */

static void check_not_running(const struct rule_ctx *ctx, struct findings *out)
{
    const struct fabric_info *fb = &ctx->facts->snap->fabric;
    const char *dv = driver_version(ctx->facts->snap);
    bool installed = fb->fm_binary || fb->fm_packaged;
    struct switches w;
    struct finding *f;

    if (!fabric_known(ctx, out, &w))
        return;
    if (!fabric_valid(fb, FABRIC_S_PROCESS)) {
        if (!installed && fabric_valid(fb, FABRIC_S_BINARY)) {
            /* Not installed: then it cannot run either; the collector did not look. */
        } else {
            rule_skip(ctx, out, -1, "/proc was not read: whether Fabric Manager runs");
            return;
        }
    } else if (fb->fm_running) {
        return;
    }
    f = finding_new(ctx, out, -1, -1);
    finding_object(f, "nvidia-fabricmanager");
    if (installed)
        finding_title(f, "Fabric Manager is not running on this NVSwitch system: CUDA cannot use "
                         "the GPUs");
    else
        finding_title(f, "Fabric Manager is not installed on this NVSwitch system: CUDA cannot "
                         "use the GPUs");
    switch_evidence(f, &w);
    if (installed) {
        finding_evidence(f, "no process named nv-fabricmanager in /proc");
        if (fb->fm_package)
            finding_evidence(f, "package %s %s is installed", fb->fm_package,
                             fb->fm_package_version ? fb->fm_package_version : "");
        if (fabric_valid(fb, FABRIC_S_UNIT) && fb->fm_enabled)
            finding_evidence(f, "nvidia-fabricmanager.service is enabled: it started and "
                                "stopped, or failed to start");
        else if (fabric_valid(fb, FABRIC_S_UNIT))
            finding_evidence(f, "nvidia-fabricmanager.service is not enabled: it does not "
                                "start at boot");
    } else {
        finding_evidence(f, "no nv-fabricmanager program and no nvidia-fabricmanager package");
    }
    finding_evidence(f, "without it the GPUs never join the NVLink fabric: CUDA programs fail "
                        "with \"system not yet initialized\" (cudaErrorSystemNotReady, 802)");
    if (!installed) {
        fix_install(f, dv);
        finding_fix(f, "sudo systemctl enable --now nvidia-fabricmanager");
    } else {
        finding_fix(f, "sudo systemctl enable --now nvidia-fabricmanager   # start it, and at "
                       "every boot");
        finding_fix(f, "journalctl -u nvidia-fabricmanager -b --no-pager | tail -n 50   # why "
                       "it stopped, if it does not stay up");
    }
    f->impact = 1.0;
}

const struct rule rule_fabric_fm_not_running = {
    .id = "fabric.fm-not-running",
    .severity = SEV_CRITICAL,
    .category = CAT_FABRIC,
    .title = N_("Fabric Manager not running on an NVSwitch system"),
    .explanation = N_(
        "On HGX and DGX machines whose GPUs are joined by NVSwitches, NVIDIA Fabric Manager "
        "configures the switches and registers every GPU with the NVLink fabric. Until it has, "
        "CUDA cannot use the GPUs: programs fail with \"system not yet initialized\" "
        "(cudaErrorSystemNotReady) or see the GPUs as busy or unavailable, although nvidia-smi "
        "lists them and nothing runs on them. It is a separate package (nvidia-fabricmanager, of "
        "the driver's branch) and service; it is often missing after a driver upgrade or a "
        "fresh install, or stopped because its version differs from the driver's."),
    .detection = N_("NVSwitches on this machine's PCI bus (vendor 0x10de, class 0x0680) and no "
                    "process named nv-fabricmanager in /proc. GPU NVLinks that end at NVSwitches "
                    "the bus does not show (a virtual machine, NVLink switch trays) are said as "
                    "not checked: Fabric Manager runs where the switches are."),
    .fix = N_("Install the nvidia-fabricmanager package of exactly the driver's version if it is "
              "missing, then systemctl enable --now nvidia-fabricmanager, and read its log if "
              "it does not stay up."),
    .thresholds = NO_THRESHOLDS,
    .explains = EXPLAINS({ "fabric.gpu-not-ready", LINK_ANY, NULL,
                           N_("without Fabric Manager no GPU is registered with the fabric"),
                           LINK_FIX_IN_CAUSE },
                         { "reported.system-not-ready", LINK_ANY, NULL,
                           N_("without Fabric Manager CUDA is not ready"), LINK_FIX_IN_CAUSE }),
    .check = check_not_running,
};

/* ---- fabric.fm-version ---- */

static void check_version(const struct rule_ctx *ctx, struct findings *out)
{
    const struct fabric_info *fb = &ctx->facts->snap->fabric;
    const char *dv = driver_version(ctx->facts->snap);
    struct switches w;
    struct finding *f;

    if (!fabric_known(ctx, out, &w))
        return;
    if (!fb->fm_binary && !fb->fm_packaged && !fabric_valid(fb, FABRIC_S_VERSION))
        return; /* not installed: fabric.fm-not-running says so */
    if (!fabric_valid(fb, FABRIC_S_VERSION)) {
        rule_skip(ctx, out, -1,
                  "Fabric Manager's version (no dpkg record, no start line in its "
                  "log)");
        return;
    }
    if (dv == NULL) {
        rule_skip(ctx, out, -1, "the driver's version");
        return;
    }
    if (strcmp(fb->fm_version, dv) == 0)
        return;
    f = finding_new(ctx, out, -1, -1);
    finding_object(f, "nvidia-fabricmanager");
    finding_title(f, "Fabric Manager %s does not match driver %s: it refuses to run",
                  fb->fm_version, dv);
    if (fb->fm_package)
        finding_evidence(f, "Fabric Manager %s (package %s), driver %s", fb->fm_version,
                         fb->fm_package, dv);
    else
        finding_evidence(f,
                         "Fabric Manager %s (the version its log's last start line states), "
                         "driver %s",
                         fb->fm_version, dv);
    finding_evidence(f, "the two must be the same version exactly: Fabric Manager exits at start "
                        "when they differ");
    switch_evidence(f, &w);
    if (fabric_valid(fb, FABRIC_S_PROCESS) && fb->fm_running)
        finding_evidence(f, "nv-fabricmanager runs: it started before the driver changed, and "
                            "will not start again");
    else if (fabric_valid(fb, FABRIC_S_PROCESS))
        finding_evidence(f, "nv-fabricmanager is not running");
    fix_install(f, dv);
    finding_fix(f, "sudo systemctl restart nvidia-fabricmanager");
    finding_fix(f, "# or, when the driver is the one that is wrong, install the driver of "
                   "Fabric Manager's version and reboot");
    f->impact = 1.0;
}

const struct rule rule_fabric_fm_version = {
    .id = "fabric.fm-version",
    .severity = SEV_CRITICAL,
    .category = CAT_FABRIC,
    .title = N_("Fabric Manager version differs from the driver's"),
    .explanation =
        N_("Fabric Manager talks to the driver through an interface that changes with every "
           "release, so NVIDIA requires the two to be the same version exactly (550.54.15 with "
           "550.54.15). When they differ it stops at start with an error in its log, no GPU joins "
           "the NVLink fabric, and CUDA fails with \"system not yet initialized\". The usual cause "
           "is a driver upgraded (by unattended upgrades, or by hand) without its Fabric Manager, "
           "or the other way round."),
    .detection = N_("On a machine with NVSwitches: Fabric Manager's version (its dpkg package's "
                    "upstream version, else the last start line of its log) against the kernel "
                    "module's version (else NVML's)."),
    .fix = N_("Install the nvidia-fabricmanager package of exactly the driver's version (or the "
              "driver of Fabric Manager's), then restart nvidia-fabricmanager. Hold both "
              "packages so that upgrades move them together."),
    .thresholds = NO_THRESHOLDS,
    .explains = EXPLAINS(
        { "fabric.fm-not-running", LINK_ANY, NULL,
          N_("Fabric Manager exits at start when its version is not the "
             "driver's"),
          LINK_FIX_IN_CAUSE },
        { "fabric.gpu-not-ready", LINK_ANY, NULL,
          N_("a Fabric Manager of another version registers no GPU"), LINK_FIX_IN_CAUSE },
        { "fabric.fm-errors", LINK_ANY, NULL, N_("the version mismatch is the error its log shows"),
          LINK_FIX_OWN },
        { "reported.system-not-ready", LINK_ANY, NULL,
          N_("a Fabric Manager of another version leaves CUDA not ready"), LINK_FIX_IN_CAUSE }),
    .check = check_version,
};

/* ---- fabric.fm-errors ---- */

static void check_log(const struct rule_ctx *ctx, struct findings *out)
{
    const struct fabric_info *fb = &ctx->facts->snap->fabric;
    struct switches w;
    struct finding *f;
    char *qpath;

    if (!fabric_known(ctx, out, &w))
        return;
    if (!fabric_valid(fb, FABRIC_S_LOG)) {
        if (fb->fm_binary || fb->fm_packaged)
            rule_skip(ctx, out, -1, "the Fabric Manager log was not read");
        return;
    }
    if (fb->log_errors == 0)
        return;
    if (!fb->log_started) {
        /* Without its start line the errors cannot be told from an earlier run's. */
        rule_skip(ctx, out, -1,
                  "%s has %" PRIu32 " error line%s but no start line (\"Fabric Manager version "
                  "V is running\"): whether they are from the current run",
                  fb->log_path, fb->log_errors, fb->log_errors == 1 ? "" : "s");
        return;
    }
    f = finding_new(ctx, out, -1, -1);
    finding_object(f, "nvidia-fabricmanager");
    finding_title(f, "Fabric Manager logged %" PRIu32 " error%s since it last started",
                  fb->log_errors, fb->log_errors == 1 ? "" : "s");
    finding_evidence(f, "%s: %" PRIu32 " [ERROR] or [FATAL] line%s after its last start line",
                     fb->log_path, fb->log_errors, fb->log_errors == 1 ? "" : "s");
    for (size_t i = 0; i < fb->n_log_lines; i++)
        finding_evidence(f, "%s", fb->log_lines[i].text);
    if (fabric_valid(fb, FABRIC_S_PROCESS) && fb->fm_running)
        finding_evidence(f, "nv-fabricmanager is running");
    else if (fabric_valid(fb, FABRIC_S_PROCESS))
        finding_evidence(f, "nv-fabricmanager is not running");
    qpath = fix_arg(f, "log file", fb->log_path);
    if (qpath != NULL)
        finding_fix(f, "sudo tail -n 100 %s   # the errors in their context", qpath);
    finding_fix(f, "journalctl -u nvidia-fabricmanager -b --no-pager | tail -n 50");
    finding_fix(f, "sudo systemctl restart nvidia-fabricmanager   # once the cause is fixed");
    free(qpath);
    f->impact = fb->fm_running ? 0.4 : 0.8;
}

const struct rule rule_fabric_fm_errors = {
    .id = "fabric.fm-errors",
    .severity = SEV_WARNING,
    .category = CAT_FABRIC,
    .title = N_("errors in the Fabric Manager log"),
    .explanation = N_(
        "Fabric Manager writes what goes wrong while it configures NVSwitches and registers GPUs "
        "to its log (/var/log/fabricmanager.log by default): a version mismatch with the driver, "
        "an NVSwitch or NVLink that failed to train, a GPU it could not register, a fatal "
        "NVSwitch error that made it abort. Those lines are often the only place that says why "
        "CUDA reports the GPUs unavailable. Only errors since its last start count: older runs "
        "are history."),
    .detection = N_("On a machine with NVSwitches: lines with [ERROR] or [FATAL] after the last "
                    "\"Fabric Manager version ... is running\" line in the last 4 MiB of the log "
                    "(LOG_FILE_NAME of fabricmanager.cfg). A log without that line is not judged: "
                    "its errors could be an earlier run's."),
    .fix = N_("Read the lines around the errors and the service's journal, fix what they name, "
              "then restart nvidia-fabricmanager."),
    .thresholds = NO_THRESHOLDS,
    .check = check_log,
};

/* ---- fabric.sxid ---- */

#define SXID_CODES_SHOWN 6
#define HAS(ev, slot)    (((ev)->valid >> (slot)) & 1u)

/* The SXids of one NVSwitch: counts, the distinct numbers, the newest event. */
struct sxid_switch {
    const char *pci;
    size_t fatal, nonfatal;
    int32_t codes[SXID_CODES_SHOWN];
    size_t n_codes, more_codes;
    const struct klog_event *last, *last_fatal;
    const struct sxid_info *worst; /* the catalogue row of the worst class among its SXids */
    bool all_corrected;            /* every SXid is one the guide says the hardware corrects */
};

static bool counts_sxid(const struct rule_ctx *ctx, const struct klog_event *ev)
{
    return ev->kind == KLOG_SXID && HAS(ev, KLOG_S_SXID) && ev->pci != NULL && klog_recent(ctx, ev);
}

static void add_code(struct sxid_switch *sw, int32_t code)
{
    for (size_t i = 0; i < sw->n_codes; i++)
        if (sw->codes[i] == code)
            return;
    if (sw->n_codes < SXID_CODES_SHOWN)
        sw->codes[sw->n_codes++] = code;
    else
        sw->more_codes++;
}

/* What NVIDIA's Fabric Manager guide says of the SXid (data/sxid.tsv), as evidence. */
static void catalogue_evidence(struct finding *f, int32_t sxid)
{
    const struct sxid_info *x = sxid_lookup(sxid);

    if (x == NULL) {
        finding_evidence(f, "SXid %" PRId32 " is not in NVIDIA's Fabric Manager guide's tables",
                         sxid);
        return;
    }
    switch (x->cls) {
    case SXID_CLASS_CORRECTED:
        finding_evidence(f,
                         "SXid %" PRId32 " is \"%s\" in NVIDIA's Fabric Manager guide: the "
                         "NVSwitch corrects it, no impact",
                         sxid, x->name);
        break;
    case SXID_CLASS_NONFATAL:
        finding_evidence(f,
                         "SXid %" PRId32 " is \"%s\" in NVIDIA's Fabric Manager guide: "
                         "non-fatal",
                         sxid, x->name);
        break;
    case SXID_CLASS_FATAL:
        finding_evidence(f,
                         "SXid %" PRId32 " is \"%s\" in NVIDIA's Fabric Manager guide: "
                         "potentially fatal, the traffic through the port stops",
                         sxid, x->name);
        break;
    default:
        finding_evidence(f,
                         "SXid %" PRId32 " is \"%s\" in NVIDIA's Fabric Manager guide: "
                         "always fatal to the whole NVLink fabric",
                         sxid, x->name);
        break;
    }
}

/* The BIOS version the NVSwitch driver read for the switch at pci ("0000:c7:00"), NULL if none. */
static const char *switch_bios(const struct fabric_info *fb, const char *pci)
{
    for (size_t i = 0; i < fb->n_switches; i++) {
        const struct fabric_switch *sw = &fb->switches[i];

        if (fabric_switch_valid(sw, FSW_S_BIOS) && sw->bios_version != NULL &&
            driver_pci_same(sw->pci_address, pci))
            return sw->bios_version;
    }
    return NULL;
}

#define SXID_FATAL_WHEN N_("an SXid is fatal (printed Fatal, or always fatal by NVIDIA's guide)")

static void sxid_finding(const struct rule_ctx *ctx, struct findings *out,
                         const struct sxid_switch *sw)
{
    const struct klog_event *ev = sw->last_fatal ? sw->last_fatal : sw->last;
    const char *bios;
    bool always = sw->worst != NULL && sw->worst->cls == SXID_CLASS_ALWAYS_FATAL;
    char codes[96] = "";
    struct klog_time when;
    size_t used = 0;
    struct finding *f;

    for (size_t i = 0; i < sw->n_codes && used < sizeof(codes); i++)
        used += (size_t)snprintf(codes + used, sizeof(codes) - used, "%s%" PRId32, i ? ", " : "",
                                 sw->codes[i]);
    if (sw->more_codes > 0 && used < sizeof(codes))
        snprintf(codes + used, sizeof(codes) - used, " +%zu", sw->more_codes);
    klog_when(&when, ctx, ev);
    f = finding_new(ctx, out, -1, -1);
    finding_object(f, "NVSwitch %s", sw->pci);
    if (sw->fatal > 0) {
        finding_title(f, "NVSwitch %s reported %zu fatal error%s (SXid %s)", sw->pci, sw->fatal,
                      sw->fatal == 1 ? "" : "s", codes);
    } else if (always) {
        finding_title(f, "NVSwitch %s reported an error NVIDIA classes always fatal (SXid %s)",
                      sw->pci, codes);
    } else {
        f->severity = sw->all_corrected ? SEV_INFO : SEV_WARNING;
        finding_title(f, "NVSwitch %s reported %zu non-fatal error%s (SXid %s)", sw->pci,
                      sw->nonfatal, sw->nonfatal == 1 ? "" : "s", codes);
    }
    finding_evidence(f, "%zu fatal and %zu non-fatal SXid line%s in the kernel log", sw->fatal,
                     sw->nonfatal, sw->fatal + sw->nonfatal == 1 ? "" : "s");
    if (ev->sxid_fatal)
        finding_evidence_take(f, TWICE("%s: fatal SXid %" PRId32 ": %s",
                                       (when.en, ev->sxid, ev->message ? ev->message : ""),
                                       (when.l, ev->sxid, ev->message ? ev->message : "")));
    else
        finding_evidence_take(f, TWICE("%s: non-fatal SXid %" PRId32 ": %s",
                                       (when.en, ev->sxid, ev->message ? ev->message : ""),
                                       (when.l, ev->sxid, ev->message ? ev->message : "")));
    catalogue_evidence(f, ev->sxid);
    if (sw->worst != NULL && sw->worst->sxid != ev->sxid && sw->worst->cls > SXID_CLASS_NONFATAL)
        catalogue_evidence(f, sw->worst->sxid);
    if (HAS(ev, KLOG_S_SXID_LINK))
        finding_evidence(f, "the error names NVSwitch port (link) %" PRId32, ev->sxid_link);
    bios = switch_bios(&ctx->facts->snap->fabric, sw->pci);
    if (bios != NULL)
        finding_evidence(f,
                         "the switch's BIOS version is %s (read by its driver): give it with the "
                         "SXids when you report them",
                         bios);
    if (always) {
        finding_evidence(f, "an always-fatal NVSwitch error leaves the whole NVLink fabric "
                            "unusable until every GPU and NVSwitch of the host is reset");
        finding_fix(f, "sudo dmesg -T | grep -E 'SXid|Xid'   # every SXid, and the GPU Xids that "
                       "came with them");
        finding_fix(f, "# stop the jobs on this machine's GPUs and reboot the host (sudo reboot): "
                       "NVIDIA's recovery for an always-fatal SXid; report it to your hardware "
                       "vendor if it comes back");
    } else if (sw->fatal > 0) {
        finding_evidence(f, "a fatal NVSwitch error stops the NVLink traffic through that "
                            "switch: the jobs that use it fail or hang, and it stays unusable "
                            "until the GPUs and NVSwitches are reset");
        finding_fix(f, "sudo dmesg -T | grep -E 'SXid|Xid'   # every SXid, and the GPU Xids that "
                       "came with them");
        finding_fix(f, "# stop the jobs on this machine's GPUs, then reset the GPUs and "
                       "NVSwitches together by rebooting the node (sudo reboot); report the SXids "
                       "to your hardware vendor if they come back");
    } else if (sw->all_corrected) {
        finding_evidence(f, "single-bit ECC errors the NVSwitch corrected: nothing was lost");
        finding_fix(f, "# nothing to do now; if they keep growing on the same switch, report it "
                       "to your hardware vendor at the next maintenance");
    } else {
        finding_evidence(f, "non-fatal NVSwitch errors are corrected or contained; traffic goes "
                            "on, but a port that keeps reporting them is degrading");
        finding_fix(f, "sudo dmesg -T | grep SXid   # whether they keep coming, and on which "
                       "ports");
        finding_fix(f, "# if they repeat on the same port, have the baseboard or the NVLink "
                       "cabling checked at the next maintenance");
    }
    if (sw->fatal > 0 || always) {
        finding_explains(f, "health.recovery-action");
        finding_explains(f, "fabric.fm-errors");
    }
    f->impact = sw->fatal > 0 || always ? 1.0 : sw->all_corrected ? 0.05 : 0.3;
}

static void check_sxid(const struct rule_ctx *ctx, struct findings *out)
{
    const struct driver_info *d = &ctx->facts->snap->driver;
    struct sxid_switch sws[FABRIC_MAX_SWITCHES];
    size_t n = 0, dropped = 0;

    if (!(d->valid & (UINT64_C(1) << DRIVER_S_KLOG)) && d->n_events == 0) {
        need_collector(ctx, out, COLLECTOR_KLOG);
        return;
    }
    for (size_t i = 0; i < d->n_events; i++) {
        const struct klog_event *ev = &d->events[i];
        struct sxid_switch *sw = NULL;

        if (!counts_sxid(ctx, ev))
            continue;
        for (size_t k = 0; k < n && sw == NULL; k++)
            if (strcmp(sws[k].pci, ev->pci) == 0)
                sw = &sws[k];
        if (sw == NULL) {
            if (n == FABRIC_MAX_SWITCHES) {
                dropped++;
                continue;
            }
            sw = &sws[n++];
            memset(sw, 0, sizeof(*sw));
            sw->pci = ev->pci;
            sw->all_corrected = true;
        }
        {
            const struct sxid_info *x = sxid_lookup(ev->sxid);

            if (x != NULL && (sw->worst == NULL || x->cls > sw->worst->cls))
                sw->worst = x;
            if (ev->sxid_fatal ||
                (!ev->sxid_correctable && (x == NULL || x->cls != SXID_CLASS_CORRECTED)))
                sw->all_corrected = false;
        }
        if (ev->sxid_fatal) {
            sw->fatal++;
            sw->last_fatal = ev;
        } else {
            sw->nonfatal++;
        }
        sw->last = ev;
        add_code(sw, ev->sxid);
    }
    for (size_t k = 0; k < n; k++)
        sxid_finding(ctx, out, &sws[k]);
    if (dropped > 0)
        rule_skip(ctx, out, -1, "SXids of more than %d NVSwitches", FABRIC_MAX_SWITCHES);
}

const struct rule rule_fabric_sxid = {
    .id = "fabric.sxid",
    .severity = SEV_CRITICAL,
    .category = CAT_FABRIC,
    .title = N_("NVSwitch errors (SXid) in the kernel log"),
    .explanation = N_(
        "NVSwitches report their errors in the kernel log as SXids (\"nvidia-nvswitch3: SXid "
        "(PCI:0000:c3:00.0): 12028, Non-fatal, Link 37 ...\"), the NVSwitch counterpart of a "
        "GPU's Xids. A fatal SXid stops the traffic through the switch: the jobs that use it "
        "fail or hang and the switch stays unusable until the GPUs and NVSwitches are reset. "
        "Non-fatal ones were corrected or contained, but the same port reporting them again and "
        "again points to a failing link, cable or baseboard. Some numbers the guide calls always "
        "fatal: the whole fabric must be reset, which takes a reboot of the host."),
    .detection = N_("kernel-log lines \"nvidia-nvswitchN: SXid (PCI:ADDR): NUMBER, Fatal|Non-fatal"
                    ", ...\" within klog_max_age_h, grouped by NVSwitch, each number looked up in "
                    "the catalogue of NVIDIA's Fabric Manager guide (data/sxid.tsv): critical "
                    "with any line the driver printed Fatal or any number the guide calls always "
                    "fatal, information when every one is a single-bit ECC error the switch "
                    "corrected, a warning otherwise."),
    .fix = N_("For fatal SXids: stop the jobs, reset the GPUs and NVSwitches (reboot the node), "
              "and report repeats to the vendor. For non-fatal ones: watch whether they repeat on "
              "the same port and have it serviced if they do."),
    .thresholds = THRESHOLDS(TH_KLOG_MAX_AGE_H),
    .explains = EXPLAINS({ "health.recovery-action", LINK_ANY, SXID_FATAL_WHEN,
                           N_("the GPUs behind a switch that failed need a drain or a reset, "
                              "which their driver records"),
                           LINK_FIX_OWN },
                         { "fabric.fm-errors", LINK_ANY, SXID_FATAL_WHEN,
                           N_("Fabric Manager logs the switch's fatal error and the reset it "
                              "needs"),
                           LINK_FIX_OWN }),
    .check = check_sxid,
};
