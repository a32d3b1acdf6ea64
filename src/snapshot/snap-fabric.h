/*
 * The NVSwitch and Fabric Manager part of the snapshot: the NVSwitches on the PCI bus and which of
 * them the NVSwitch driver took (its /proc/driver/nvidia-nvswitch view, with their BIOS
 * versions), whether NVIDIA Fabric Manager is installed (package or binary), its version, whether
 * it runs and is enabled, and the errors its log holds since it last started. Filled by
 * collect/fabric.c; docs/fabric.md says what comes from where. SXid lines (NVSwitch errors in the
 * kernel log) are kernel-log events (driver.events, kind "sxid").
 */
#ifndef GPUDOCTOR_SNAP_FABRIC_H
#define GPUDOCTOR_SNAP_FABRIC_H

#include "snapshot/jfield.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FABRIC_MAX_SWITCHES  64 /* an HGX baseboard has 4; a rack has more, none on one node */
#define FABRIC_MAX_LOG_LINES 5  /* the last error lines of the log kept */

/* Validity bits of struct fabric_switch. */
enum fabric_switch_slot {
    FSW_S_DRIVER, /* the driver's view was read: driver_bound */
    FSW_S_BIOS,   /* bios_version: the driver gave one */
};

/* An NVSwitch on the PCI bus. */
struct fabric_switch {
    char *pci_address;  /* "0000:c3:00.0" */
    uint32_t device_id; /* PCI device id (0x22a3 on HGX H100) */
    bool driver_bound;  /* the NVSwitch driver took it: /proc/driver/nvidia-nvswitch/devices/ADDR */
    char *bios_version; /* "96.10.6d.00.01", from that entry's information file */
    uint64_t valid;     /* bits of enum fabric_switch_slot */
};

/* Whether the NVSwitch driver's view, /proc/driver/nvidia-nvswitch, is there. */
enum fabric_nvswitch_proc {
    FABRIC_NVSW_PRESENT,    /* it and its devices/ were read: the driver is loaded */
    FABRIC_NVSW_ABSENT,     /* no such directory: the nvidia module (or its NVSwitch part) is not */
    FABRIC_NVSW_UNREADABLE, /* there, but could not be listed (a collector note says why) */
};
extern const char *const fabric_nvswitch_proc_names[]; /* "present", "absent", "unreadable" */

/* One error line of the Fabric Manager log, sanitised and cut to a line. */
struct fabric_log_line {
    char *text;
};

/* Validity bits of struct fabric_info. */
enum fabric_slot {
    FABRIC_S_SWITCHES, /* the PCI bus was read: switches[] (empty: none) */
    FABRIC_S_BINARY,   /* whether the Fabric Manager binary exists was checked */
    FABRIC_S_PACKAGE,  /* the dpkg status database was read: fm_packaged */
    FABRIC_S_PROCESS,  /* /proc was scanned: fm_running */
    FABRIC_S_PID,      /* fm_pid */
    FABRIC_S_UNIT,     /* systemd's unit directories were read: fm_enabled */
    FABRIC_S_LOG,      /* the log was read: log_errors, log_lines, log_started */
    FABRIC_S_VERSION,  /* fm_version, fm_version_from */
    FABRIC_S_NVSW,     /* /proc/driver/nvidia-nvswitch was looked at: nvswitch_proc */
};

struct fabric_info {
    struct fabric_switch *switches;
    size_t n_switches;
    int32_t nvswitch_proc;    /* enum fabric_nvswitch_proc */
    bool fm_binary;           /* /usr/bin/nv-fabricmanager (or /usr/sbin) exists */
    bool fm_packaged;         /* dpkg lists a Fabric Manager package as installed */
    char *fm_package;         /* "nvidia-fabricmanager-550", NULL when dpkg has none installed */
    char *fm_package_version; /* "550.54.15-1" as dpkg records it */
    char *fm_version;         /* "550.54.15": the package's upstream version, else the log's */
    char *fm_version_from;    /* "dpkg" or "log" */
    bool fm_running;          /* a process named nv-fabricmanager runs */
    int32_t fm_pid;
    bool fm_enabled;     /* systemd starts nvidia-fabricmanager.service at boot */
    char *log_path;      /* the log file read, NULL when none was */
    bool log_started;    /* the log has a start line: errors are counted from the last one */
    uint32_t log_errors; /* error lines since the last start */
    struct fabric_log_line *log_lines; /* the last of them, oldest first */
    size_t n_log_lines;
    uint64_t valid; /* bits of enum fabric_slot */
};

extern const struct jtable fabric_info_table;
extern const struct jtable fabric_switch_table;
extern const struct jtable fabric_log_line_table;

bool fabric_valid(const struct fabric_info *f, int slot);
bool fabric_switch_valid(const struct fabric_switch *sw, int slot);
void fabric_info_free(struct fabric_info *f);
json_t *fabric_info_to_json(const struct fabric_info *f);
int fabric_info_from_json(struct fabric_info *f, const json_t *j, const char *path,
                          struct jerr *err);

#endif
