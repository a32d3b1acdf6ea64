/* The driver section's field tables and codec. */
#include "snapshot/snap-driver.h"
#include "util/xalloc.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const klog_kind_names[] = {
    [KLOG_XID] = "xid",           [KLOG_FALLEN_OFF_BUS] = "fallen_off_bus",
    [KLOG_GPU_UUID] = "gpu_uuid", [KLOG_HUNG_TASK] = "hung_task",
    [KLOG_OOM_KILL] = "oom_kill", [KLOG_OTHER_NVRM] = "other_nvrm",
    [KLOG_SXID] = "sxid",         [KLOG_HOST_MEM] = "host_memory_error",
    [KLOG__KIND_COUNT] = NULL,
};

const char *const klog_mem_source_names[] = {
    [KLOG_MEM_EDAC] = "edac",        [KLOG_MEM_APEI] = "apei",
    [KLOG_MEM_MCE] = "mce",          [KLOG_MEM_MEMORY_FAILURE] = "memory_failure",
    [KLOG__MEM_SOURCE_COUNT] = NULL,
};

const char *const klog_recovery_action_names[] = {
    [KLOG_RA_NONE] = "none",
    [KLOG_RA_GPU_RESET] = "gpu_reset",
    [KLOG_RA_NODE_REBOOT] = "node_reboot",
    [KLOG_RA_DRAIN_P2P] = "drain_p2p",
    [KLOG_RA_DRAIN_AND_RESET] = "drain_and_reset",
    [KLOG_RA_RECOVER_IMEX_DOMAIN] = "recover_imex_domain",
    [KLOG__RA_COUNT] = NULL,
};

const char *const klog_recovery_action_driver_names[] = {
    [KLOG_RA_NONE] = "None",
    [KLOG_RA_GPU_RESET] = "GPU Reset Required",
    [KLOG_RA_NODE_REBOOT] = "Node Reboot Required",
    [KLOG_RA_DRAIN_P2P] = "Drain P2P",
    [KLOG_RA_DRAIN_AND_RESET] = "Drain and Reset",
    [KLOG_RA_RECOVER_IMEX_DOMAIN] = "Recover IMEX Domain",
    [KLOG__RA_COUNT] = NULL,
};

#define E(key, type, member, slot, doc)                                                            \
    {                                                                                              \
        key, type, offsetof(struct klog_event, member), slot, 0, NULL, NULL, doc                   \
    }
static const struct jfield klog_event_fields[] = {
    { "kind", JF_ENUM, offsetof(struct klog_event, kind), -1, JF_ID, klog_kind_names, NULL,
      "what the line reports" },
    E("time_ms", JF_I64, time_ms, KLOG_S_TIME,
      "Unix time in milliseconds: boot time plus the kernel's stamp, or the syslog stamp"),
    E("uptime_us", JF_I64, uptime_us, KLOG_S_UPTIME,
      "microseconds after boot, as the kernel stamped the line"),
    E("pci", JF_STR, pci, -1,
      "PCI address as the driver prints it, \"0000:3b:00\" (domain:bus:device, no function)"),
    E("uuid", JF_STR, uuid, -1,
      "GPU UUID: from the line itself (gpu_uuid), or from an earlier \"GPU at PCI\" line"),
    E("xid", JF_I32, xid, KLOG_S_XID, "the Xid number (see docs/driver.md for the catalogue)"),
    E("gpu_instance", JF_U32, gpu_instance, KLOG_S_GPU_INSTANCE, "MIG GPU instance (GPU-I:)"),
    E("compute_instance", JF_U32, compute_instance, KLOG_S_COMPUTE_INSTANCE,
      "MIG compute instance (GPU-CI:)"),
    E("caused_by_xid", JF_I32, caused_by_xid, KLOG_S_CAUSED_BY,
      "for Xid 45: the earlier Xid the driver names as its cause (\"caused by previous Xid N\", "
      "drivers from 570.124.04)"),
    { "recovery_action", JF_ENUM, offsetof(struct klog_event, recovery_action), KLOG_S_RECOVERY, 0,
      klog_recovery_action_names, NULL,
      "Xid 154: what the driver now says it takes to recover the GPU (the driver's number when "
      "it is newer than these)" },
    { "recovery_action_prev", JF_ENUM, offsetof(struct klog_event, recovery_action_prev),
      KLOG_S_RECOVERY_PREV, 0, klog_recovery_action_names, NULL,
      "Xid 154: the recovery action before the change" },
    E("nvlink_unit", JF_STR, nvlink_unit, KLOG_S_NVLINK_UNIT,
      "NVLink5 Xids 144-150: the unit the driver names (\"NETIR_LINK_EVT\", \"RLW_RXPIPE\")"),
    E("nvlink_fatal", JF_BOOL, nvlink_fatal, KLOG_S_NVLINK,
      "NVLink5 Xids: the driver printed Fatal (true) or Nonfatal (false)"),
    E("nvlink_link", JF_I32, nvlink_link, KLOG_S_NVLINK,
      "NVLink5 Xids: the link number; -1 for an error of no single link"),
    E("nvlink_intrinfo", JF_HEX32, nvlink_intrinfo, KLOG_S_NVLINK,
      "NVLink5 Xids: the first hex word; bits 20-25 are the sub-code (docs/driver.md)"),
    E("nvlink_error_status", JF_HEX32, nvlink_error_status, KLOG_S_NVLINK,
      "NVLink5 Xids: the second hex word, the unit's error status"),
    E("reset_required", JF_BOOL, reset_required, KLOG_S_CONTAINMENT,
      "Xid 94/95: \"RST: Yes\", the GPU must be reset"),
    E("drain_reset_required", JF_BOOL, drain_reset_required, KLOG_S_CONTAINMENT,
      "Xid 94/95: \"D-RST: Yes\", drain the GPU's work, then reset it"),
    E("pid", JF_I32, pid, KLOG_S_PID, "process the line names (Xid pid=, OOM victim, hung task)"),
    E("name", JF_STR, name, -1, "that process's name"),
    E("blocked_s", JF_U32, blocked_s, KLOG_S_BLOCKED,
      "hung_task: the task was blocked for more than this many seconds"),
    E("rss_bytes", JF_U64, rss_bytes, KLOG_S_RSS,
      "oom_kill: resident memory of the killed process (anon + file + shmem)"),
    E("sxid", JF_I32, sxid, KLOG_S_SXID,
      "sxid: the NVSwitch error number (docs/fabric.md); pci is the NVSwitch's address"),
    E("sxid_correctable", JF_BOOL, sxid_correctable, KLOG_S_SXID,
      "sxid: the driver printed Correctable (the switch corrected it)"),
    E("sxid_fatal", JF_BOOL, sxid_fatal, KLOG_S_SXID,
      "sxid: the driver printed Fatal (true) or Non-fatal (false)"),
    E("sxid_link", JF_I32, sxid_link, KLOG_S_SXID_LINK,
      "sxid: the NVSwitch port the line names (\"Link 37\")"),
    { "mem_source", JF_ENUM, offsetof(struct klog_event, mem_source), KLOG_S_HOST_MEM, 0,
      klog_mem_source_names, NULL,
      "host_memory_error: what reported it: edac (the EDAC core), apei (the firmware, GHES), mce "
      "(x86 machine check), memory_failure (the kernel poisoned a page or killed its user)" },
    E("mem_count", JF_U32, mem_count, KLOG_S_HOST_MEM,
      "host_memory_error: errors the line reports (EDAC's count; 1 for the others)"),
    E("dimm", JF_STR, dimm, KLOG_S_DIMM,
      "host_memory_error: the DIMM the line names (EDAC's label, APEI's \"DIMM location\")"),
    E("message", JF_STR, message, -1,
      "the driver's text after the Xid or SXid header, or the whole line"),
};
#undef E

const struct jtable klog_event_table = {
    "kernel log event",
    klog_event_fields,
    ARRAY_SIZE(klog_event_fields),
    JT_BITS,
    offsetof(struct klog_event, valid),
    NULL,
};

#define D(key, type, member, slot, source, doc)                                                    \
    {                                                                                              \
        key, type, offsetof(struct driver_info, member), slot, 0, NULL, source, doc                \
    }
static const struct jfield driver_info_fields[] = {
    D("module_loaded", JF_BOOL, module_loaded, DRIVER_S_MODULE, "/proc/driver/nvidia, /sys/module",
      "an NVIDIA kernel module is loaded"),
    D("uvm_loaded", JF_BOOL, uvm_loaded, DRIVER_S_MODULE, "/sys/module/nvidia_uvm",
      "nvidia_uvm is loaded (CUDA cannot run without it)"),
    D("module_version", JF_STR, module_version, -1, "/proc/driver/nvidia/version",
      "kernel module version, \"550.54.14\" (from /sys/module/nvidia/version when /proc lacks it)"),
    D("module_flavor", JF_STR, module_flavor, -1, "/proc/driver/nvidia/version",
      "\"open\" (open kernel modules) or \"proprietary\""),
    D("module_banner", JF_STR, module_banner, -1, "/proc/driver/nvidia/version",
      "the first line of that file, as written"),
    D("sysfs_version", JF_STR, sysfs_version, -1, "/sys/module/nvidia/version",
      "version the loaded module reports in sysfs"),
    D("dev_ctl", JF_BOOL, dev_ctl, DRIVER_S_DEVICES, "/dev/nvidiactl",
      "the driver's control device exists (NVML and CUDA open it first; a container started "
      "without the GPUs lacks it)"),
    D("dev_gpus", JF_U32, dev_gpus, DRIVER_S_DEVICES, "/dev/nvidia[0-9]*",
      "GPU device files present (one per GPU the driver or the container runtime made)"),
    D("ctl_cgroup", JF_STR, ctl_cgroup, DRIVER_S_CTL_CGROUP,
      "/proc/self/cgroup, /sys/fs/cgroup/devices/.../devices.list",
      "\"allowed\" or \"denied\": whether this process's device cgroup (cgroup v1) lets it read "
      "and write /dev/nvidiactl (195:255); absent under cgroup v2, whose device rules cannot be "
      "read"),
    D("preserve_vram", JF_BOOL, preserve_vram, DRIVER_S_PRESERVE_VRAM,
      "/proc/driver/nvidia/params PreserveVideoMemoryAllocations",
      "the driver saves all video memory across a system suspend (NVreg_PreserveVideoMemory"
      "Allocations=1, used with nvidia-suspend.service and its siblings); without it the default "
      "path keeps only what is essential and does not support CUDA's unified memory (UVM)"),
    D("suspend_notifiers", JF_BOOL, suspend_notifiers, DRIVER_S_SUSPEND_NOTIFIERS,
      "/proc/driver/nvidia/params UseKernelSuspendNotifiers",
      "the open kernel modules save video memory through the kernel's own suspend notifiers "
      "(NVreg_UseKernelSuspendNotifiers=1; older drivers do not have the parameter)"),
    D("klog_source", JF_STR, klog_source, -1, "/dev/kmsg, /var/log/{kern.log,messages,syslog}",
      "the kernel log read"),
    D("klog_records", JF_U64, klog_records, DRIVER_S_KLOG, NULL, "log records (lines) read"),
    D("klog_events_total", JF_U64, klog_events_total, DRIVER_S_KLOG, NULL,
      "events found, including those not kept"),
    D("klog_events_dropped", JF_U64, klog_events_dropped, DRIVER_S_KLOG, NULL,
      "oldest events not kept: only the most recent are"),
    D("klog_unparsed", JF_U64, klog_unparsed, DRIVER_S_KLOG, NULL,
      "driver lines that looked like events but could not be parsed"),
    D("klog_mem_corrected", JF_U64, klog_mem_corrected, DRIVER_S_KLOG_MEM, NULL,
      "corrected errors in the host's memory the log reported (EDAC's counts, APEI records)"),
    D("klog_mem_uncorrected", JF_U64, klog_mem_uncorrected, DRIVER_S_KLOG_MEM, NULL,
      "lines reporting uncorrected host memory errors, kept as events or not"),
    D("events", JF_NONE, valid, -1, NULL, "the kernel-log events read, oldest first (below)"),
};
#undef D

const struct jtable driver_info_table = {
    "driver",
    driver_info_fields,
    ARRAY_SIZE(driver_info_fields),
    JT_BITS,
    offsetof(struct driver_info, valid),
    NULL,
};

json_t *driver_info_to_json(const struct driver_info *d)
{
    json_t *j = json_object();

    jtable_write(&driver_info_table, d, j, 0);
    json_object_set_new(
        j, "events",
        jlist_write_table(&klog_event_table, d->events, d->n_events, sizeof(*d->events)));
    return j;
}

int driver_info_from_json(struct driver_info *d, const json_t *j, const char *path,
                          struct jerr *err)
{
    void *events = NULL;
    int r;

    if (jtable_read(&driver_info_table, d, j, path, 0, NULL, err) != 0)
        return -1;
    r = jlist_read_table(&klog_event_table, j, "events", path, sizeof(*d->events), &events,
                         &d->n_events, err);
    d->events = events;
    return r < 0 ? -1 : 0;
}

void klog_event_free(struct klog_event *e)
{
    jtable_free(&klog_event_table, e);
}

bool driver_valid(const struct driver_info *d, enum driver_slot slot)
{
    return (d->valid >> slot) & 1u;
}

void driver_info_free(struct driver_info *d)
{
    for (size_t i = 0; i < d->n_events; i++)
        klog_event_free(&d->events[i]);
    free(d->events);
    jtable_free(&driver_info_table, d);
    memset(d, 0, sizeof(*d));
}

/* Parses "[PCI:]DOMAIN:BUS:DEV[.FN]" (hex); fn = -1 when absent. */
static bool parse_pci(const char *s, unsigned long *dom, unsigned long *bus, unsigned long *dev,
                      long *fn)
{
    char *end;

    if (s == NULL)
        return false;
    if (strncmp(s, "PCI:", 4) == 0)
        s += 4;
    if (!isxdigit((unsigned char)*s))
        return false;
    *dom = strtoul(s, &end, 16);
    if (*end != ':' || !isxdigit((unsigned char)end[1]))
        return false;
    *bus = strtoul(end + 1, &end, 16);
    if (*end != ':' || !isxdigit((unsigned char)end[1]))
        return false;
    *dev = strtoul(end + 1, &end, 16);
    *fn = -1;
    if (*end == '.' && isxdigit((unsigned char)end[1]))
        *fn = strtol(end + 1, &end, 16);
    return *end == '\0';
}

bool driver_pci_same(const char *a, const char *b)
{
    unsigned long da, ba, va, db, bb, vb;
    long fa, fb;

    if (!parse_pci(a, &da, &ba, &va, &fa) || !parse_pci(b, &db, &bb, &vb, &fb))
        return false;
    return da == db && ba == bb && va == vb && (fa < 0 || fb < 0 || fa == fb);
}
