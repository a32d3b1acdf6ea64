/*
 * The driver part of the snapshot: kernel module and user-space library versions, and the
 * NVIDIA-related events of the kernel log (XIDs, fallen off the bus, hung tasks, OOM kills).
 * Filled by collect/driver.c and collect/klog.c.
 */
#ifndef GPUDOCTOR_SNAP_DRIVER_H
#define GPUDOCTOR_SNAP_DRIVER_H

#include "jfield.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum klog_kind {
    KLOG_XID,
    KLOG_FALLEN_OFF_BUS,
    KLOG_GPU_UUID, /* "NVRM: GPU at PCI:...: GPU-..." maps a PCI address to a UUID */
    KLOG_HUNG_TASK,
    KLOG_OOM_KILL,
    KLOG_OTHER_NVRM,
};

struct klog_event {
    enum klog_kind kind;
    int64_t time_ms; /* Unix time, when known; else 0 */
    double uptime_s; /* seconds after boot as the kernel stamped it; -1 unknown */
    char *pci;       /* "0000:3b:00" as the driver prints it, NULL when not given */
    int32_t xid;     /* KLOG_XID */
    int32_t pid;     /* when given, else -1 */
    char *name;      /* process name when given */
    char *uuid;      /* KLOG_GPU_UUID */
    char *message;   /* the rest of the line */
};

struct driver_info {
    char *module_version; /* /proc/driver/nvidia/version or /sys/module/nvidia/version */
    char *module_flavor;  /* "open" or "proprietary" */
    char *module_banner;  /* the first line of /proc/driver/nvidia/version */
    char *klog_source;    /* "/dev/kmsg", "/var/log/kern.log", ... */
    struct klog_event *events;
    size_t n_events;
    uint64_t valid;
};

void driver_info_free(struct driver_info *d);
json_t *driver_info_to_json(const struct driver_info *d);
int driver_info_from_json(struct driver_info *d, const json_t *j, const char *path,
                          struct jerr *err);

#endif
