/*
 * The driver part of the snapshot: kernel module versions (the user-space library's version is
 * nvml.library_version), and the events of the kernel log that gpudoctor reads (XIDs, fallen off
 * the bus, PCI -> UUID lines, hung tasks in the driver, host OOM kills, uncorrected errors in the
 * host's memory).
 * Filled by collect/driver.c (module) and collect/klog.c (kernel log).
 */
#ifndef GPUDOCTOR_SNAP_DRIVER_H
#define GPUDOCTOR_SNAP_DRIVER_H

#include "snapshot/jfield.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum klog_kind {
    KLOG_XID,
    KLOG_FALLEN_OFF_BUS,
    KLOG_GPU_UUID, /* "NVRM: GPU at PCI:...: GPU-..." maps a PCI address to a UUID */
    KLOG_HUNG_TASK,
    KLOG_OOM_KILL,
    KLOG_OTHER_NVRM, /* another driver message worth showing (API mismatch, init failure ...) */
    KLOG_SXID, /* an NVSwitch error: "nvidia-nvswitch3: SXid (PCI:...): 12028, Non-fatal, ..." */
    KLOG_HOST_MEM, /* an uncorrected error in the host's RAM (EDAC, APEI, machine check) */
    KLOG__KIND_COUNT
};

extern const char *const klog_kind_names[]; /* "xid", "fallen_off_bus", ...; NULL-terminated */

/* What the driver says it takes to recover a GPU (Xid 154; NVML's nvmlDeviceGpuRecoveryAction_t,
 * the driver's NV2080_CTRL_GPU_RECOVERY_ACTION): the values are the driver's numbers. */
enum klog_recovery_action {
    KLOG_RA_NONE,
    KLOG_RA_GPU_RESET,
    KLOG_RA_NODE_REBOOT,
    KLOG_RA_DRAIN_P2P,
    KLOG_RA_DRAIN_AND_RESET,
    KLOG_RA_RECOVER_IMEX_DOMAIN,
    KLOG__RA_COUNT
};

/* "none", "gpu_reset", ...: the snapshot's names; NULL-terminated. */
extern const char *const klog_recovery_action_names[];
/* "None", "GPU Reset Required", ...: the driver's words in the Xid 154 line (gpu.c). */
extern const char *const klog_recovery_action_driver_names[];

/* Which kernel code reported a host memory error (KLOG_HOST_MEM). */
enum klog_mem_source {
    KLOG_MEM_EDAC,           /* the EDAC core: "EDAC MC0: 1 UE ... on DIMM_A1 (...)" */
    KLOG_MEM_APEI,           /* the firmware (APEI GHES): "{1}[Hardware Error]: ... memory error" */
    KLOG_MEM_MCE,            /* x86 machine check: "mce: Uncorrected hardware memory error ..." */
    KLOG_MEM_MEMORY_FAILURE, /* the kernel poisoned a page or killed its user: "Memory failure: ..."
                              */
    KLOG__MEM_SOURCE_COUNT
};

extern const char *const klog_mem_source_names[]; /* "edac", "apei", ...; NULL-terminated */

/* Validity bits of struct klog_event. */
enum klog_slot {
    KLOG_S_TIME,         /* time_ms */
    KLOG_S_UPTIME,       /* uptime_us */
    KLOG_S_XID,          /* xid */
    KLOG_S_PID,          /* pid */
    KLOG_S_GPU_INSTANCE, /* gpu_instance */
    KLOG_S_COMPUTE_INSTANCE,
    KLOG_S_CAUSED_BY,     /* caused_by_xid */
    KLOG_S_BLOCKED,       /* blocked_s */
    KLOG_S_RSS,           /* rss_bytes */
    KLOG_S_RECOVERY,      /* recovery_action */
    KLOG_S_RECOVERY_PREV, /* recovery_action_prev */
    KLOG_S_NVLINK,        /* nvlink_fatal, nvlink_link, nvlink_intrinfo, nvlink_error_status */
    KLOG_S_NVLINK_UNIT,   /* nvlink_unit: optional, so older snapshots still read */
    KLOG_S_CONTAINMENT,   /* reset_required, drain_reset_required */
    KLOG_S_SXID,          /* sxid, sxid_fatal, sxid_correctable */
    KLOG_S_SXID_LINK,     /* sxid_link */
    KLOG_S_HOST_MEM,      /* mem_source, mem_count */
    KLOG_S_DIMM,          /* dimm */
};

struct klog_event {
    int32_t kind;          /* enum klog_kind */
    int64_t time_ms;       /* Unix time (from boot time + kernel stamp, or the syslog stamp) */
    int64_t uptime_us;     /* microseconds after boot as the kernel stamped it */
    char *pci;             /* "0000:3b:00", as the driver prints it (no function), lower case */
    char *uuid;            /* "GPU-..." for KLOG_GPU_UUID, and for others when the log mapped it */
    int32_t xid;           /* KLOG_XID */
    uint32_t gpu_instance; /* MIG GPU instance ("GPU-I:") */
    uint32_t compute_instance;    /* MIG compute instance ("GPU-CI:") */
    int32_t caused_by_xid;        /* Xid 45 " caused by previous Xid N" */
    int32_t recovery_action;      /* Xid 154: the enum klog_recovery_action it changed to ... */
    int32_t recovery_action_prev; /* ... and the one before */
    char *nvlink_unit;            /* NVLink5 Xids 144..150: the unit the driver names */
    bool nvlink_fatal;            /* ... "Fatal" rather than "Nonfatal" */
    int32_t nvlink_link;          /* ... the link; -1 when the error is not one link's */
    uint32_t nvlink_intrinfo;     /* ... the first hex word (sub-code in bits 20..25) */
    uint32_t nvlink_error_status; /* ... the second hex word */
    bool reset_required;          /* Xid 94/95 "RST: Yes": the GPU needs a reset */
    bool drain_reset_required;    /* Xid 94/95 "D-RST: Yes": drain the GPU, then reset it */
    int32_t pid;                  /* the process the driver or the OOM killer named */
    char *name;                   /* its name */
    uint32_t blocked_s;           /* KLOG_HUNG_TASK: "blocked for more than N seconds" */
    uint64_t rss_bytes;           /* KLOG_OOM_KILL: anon + file + shmem RSS of the killed process */
    int32_t sxid;                 /* KLOG_SXID: the number; pci is the NVSwitch's address */
    bool sxid_fatal;              /* ... "Fatal" rather than "Non-fatal" */
    bool sxid_correctable;        /* ... "Correctable": the switch corrected it */
    int32_t sxid_link;            /* ... the NVSwitch port ("Link 37") when the line names one */
    int32_t mem_source;           /* KLOG_HOST_MEM: enum klog_mem_source */
    uint32_t mem_count;           /* ... errors the line reports (EDAC's count; else 1) */
    char *dimm;                   /* ... the DIMM the line names (EDAC's label, APEI's location) */
    char *message;                /* the driver's text after the header (KLOG_XID), or the line */
    uint64_t valid;               /* bits of enum klog_slot */
};

/* Validity bits of struct driver_info. */
enum driver_slot {
    DRIVER_S_MODULE,            /* module_loaded, uvm_loaded: the driver collector ran */
    DRIVER_S_KLOG,              /* klog_* counters: the kernel-log collector read a source */
    DRIVER_S_DEVICES,           /* dev_ctl, dev_gpus: /dev was read */
    DRIVER_S_KLOG_MEM,          /* klog_mem_*: the kernel-log reader counted host memory errors */
    DRIVER_S_CTL_CGROUP,        /* ctl_cgroup: cgroup v1's devices.list was read */
    DRIVER_S_PRESERVE_VRAM,     /* preserve_vram: /proc/driver/nvidia/params names it */
    DRIVER_S_SUSPEND_NOTIFIERS, /* suspend_notifiers: ... (newer drivers only) */
};

struct driver_info {
    bool module_loaded;   /* /proc/driver/nvidia or /sys/module/nvidia exists */
    bool uvm_loaded;      /* /sys/module/nvidia_uvm exists: CUDA needs it */
    char *module_version; /* "550.54.14": /proc/driver/nvidia/version, else /sys/module/... */
    char *module_flavor;  /* "open" or "proprietary" */
    char *module_banner;  /* the first line of /proc/driver/nvidia/version */
    char *sysfs_version;  /* /sys/module/nvidia/version as read */
    bool dev_ctl;         /* /dev/nvidiactl exists: NVML and CUDA open it first */
    uint32_t dev_gpus;    /* /dev/nvidiaN files: one per GPU this machine (or container) has */
    char *ctl_cgroup;     /* "allowed" or "denied": may this cgroup read and write /dev/nvidiactl */
    /* How the driver keeps the GPUs' state across a system suspend (its power management). */
    bool preserve_vram;     /* PreserveVideoMemoryAllocations: all video memory is saved */
    bool suspend_notifiers; /* UseKernelSuspendNotifiers: the kernel's own suspend path saves it */

    char *klog_source;             /* "/dev/kmsg", "/var/log/kern.log", ... */
    uint64_t klog_records;         /* log lines (records) read */
    uint64_t klog_events_total;    /* events found, including those dropped */
    uint64_t klog_events_dropped;  /* older events beyond the bound, not kept */
    uint64_t klog_unparsed;        /* driver lines that looked like events but did not parse */
    uint64_t klog_mem_corrected;   /* corrected host memory errors the log reported */
    uint64_t klog_mem_uncorrected; /* uncorrected ones (reports), kept as events or not */
    struct klog_event *events;     /* oldest first */
    size_t n_events;

    uint64_t valid; /* bits of enum driver_slot */
};

extern const struct jtable driver_info_table;
extern const struct jtable klog_event_table;

void klog_event_free(struct klog_event *e);
void driver_info_free(struct driver_info *d);
/* Whether the field (or group) in slot was read. */
bool driver_valid(const struct driver_info *d, enum driver_slot slot);
json_t *driver_info_to_json(const struct driver_info *d);
int driver_info_from_json(struct driver_info *d, const json_t *j, const char *path,
                          struct jerr *err);

/*
 * Whether two PCI addresses name the same device, whatever their spelling: the driver's
 * "0000:3b:00", "0000:3b:00.0", NVML's "00000000:3B:00.0". Function numbers are ignored when
 * either side lacks one.
 */
bool driver_pci_same(const char *a, const char *b);

#endif
