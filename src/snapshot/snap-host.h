/*
 * The host part of the snapshot: CPU, memory, swap, pressure, disks and free space, kernel.
 * Filled by collect/host.c from /proc and /sys under the root directory; docs/host.md says what
 * comes from where. Rates and percentages over the sampling window are valid only when there was
 * a window: an instant reading has no rate, and never pretends to measure 0.
 */
#ifndef GPUDOCTOR_SNAP_HOST_H
#define GPUDOCTOR_SNAP_HOST_H

#include "snapshot/jfield.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Validity bits of struct host_info. */
enum host_slot {
    HOST_S_CPUS,
    HOST_S_LOAD,
    HOST_S_CPU_PCT, /* needs a window */
    HOST_S_PSI_CPU,
    HOST_S_PSI_MEM,
    HOST_S_PSI_IO,
    HOST_S_PSI_CPU_WINDOW, /* needs a window */
    HOST_S_PSI_MEM_WINDOW,
    HOST_S_PSI_IO_WINDOW,
    HOST_S_MEM,
    HOST_S_MEM_AVAILABLE, /* MemAvailable: kernels since 3.14 */
    HOST_S_SWAP,
    HOST_S_SWAP_RATE, /* needs a window */
    HOST_S_KERNEL,
    HOST_S_UPTIME,
    HOST_S_OOM,   /* the kernel log was read: oom_kills is a count */
    HOST_S_DISKS, /* /proc/diskstats was read: the disk list is complete */
    HOST_S_FS,    /* free space was looked up */
    HOST_S_BOOT_ID,
    HOST_S_CONTAINER,      /* the marks of a container were looked for */
    HOST_S_CONTAINER_SIGN, /* ... and one was found */
    HOST_S_EDAC,           /* /sys/devices/system/edac/mc was read: host memory errors counted */
    HOST_S_EDAC_DIMMS,     /* ... and DIMMs were named with uncorrectable errors */
    HOST_S_SEL,            /* the BMC's event log (IPMI SEL) was read: sel_* are counts */
    HOST_S_SEL_UE_TIME,    /* ... and the latest uncorrectable memory error is dated */
    HOST_S_SEL_UE_DIMMS,   /* ... and the uncorrectable errors name their DIMMs or sensors */
    HOST_S_SHM,            /* /dev/shm where gpudoctor runs: its size and free space */
    HOST_S_NOFILE,         /* gpudoctor's own soft limit on open files */
    HOST_S_SUSPEND,        /* /sys/power/suspend_stats was read: suspend_count is a count */
    HOST_S_MEMLOCK,        /* gpudoctor's own soft limit on locked memory */
    HOST_S_NET,            /* /sys/class/net was read: net_up lists the interfaces that are up */
    HOST_S_SEL_PSU,        /* the BMC's event log was read for power supply faults */
    HOST_S_SEL_PSU_TIME,   /* ... and the newest fault still asserted is dated */
    HOST_S_SEL_PSU_WHAT,   /* ... and the faults still asserted are named */
};

/* Validity bits of struct host_disk. */
enum host_disk_slot {
    DISK_S_ROTATIONAL,
    DISK_S_RATES, /* util and throughput: needs a window */
    DISK_S_AWAIT, /* needs a window with completed I/O */
};

struct host_disk {
    char *name; /* sda, nvme0n1, dm-0 */
    bool rotational;
    double util_pct; /* time the disk had I/O in flight over the window */
    double await_ms; /* average time per completed read or write over the window */
    double read_bytes_per_s, write_bytes_per_s;
    uint64_t valid; /* bits of enum host_disk_slot */
};

/* Validity bits of struct host_fs. */
enum host_fs_slot {
    FS_S_MOUNT,  /* mount, device, fstype: from mountinfo */
    FS_S_SPACE,  /* total_bytes, readonly: from statvfs */
    FS_S_INODES, /* inodes_total, inodes_avail: the filesystem counts inodes */
    FS_S_AVAIL,  /* avail_bytes: from statvfs; known alone from evidence ("No space left") */
};

/* One filesystem that a directory of interest lives on; one entry per filesystem. */
struct host_fs {
    char *mount; /* its mount point, as seen where the path was resolved */
    char *device;
    char *fstype;
    uint64_t total_bytes, avail_bytes; /* avail: what an unprivileged user can still write */
    uint64_t inodes_total, inodes_avail;
    bool readonly;
    char **paths; /* the directories asked about that live here (/, /tmp, jobs' cwds) */
    size_t n_paths;
    uint64_t valid; /* bits of enum host_fs_slot */
};

struct host_info {
    uint32_t cpus; /* online CPUs */
    double load1, load5, load15;
    /* Shares of all CPUs' time over the window: 100 = every CPU. */
    double cpu_user_pct, cpu_system_pct, cpu_iowait_pct, cpu_steal_pct, cpu_idle_pct;
    /* Pressure stall information: percent of time some (or all: full) tasks stalled. */
    double psi_cpu_some_avg10_pct, psi_cpu_some_avg60_pct;
    double psi_mem_some_avg10_pct, psi_mem_some_avg60_pct;
    double psi_mem_full_avg10_pct, psi_mem_full_avg60_pct;
    double psi_io_some_avg10_pct, psi_io_some_avg60_pct;
    double psi_io_full_avg10_pct, psi_io_full_avg60_pct;
    double psi_cpu_some_window_pct;
    double psi_mem_some_window_pct, psi_mem_full_window_pct;
    double psi_io_some_window_pct, psi_io_full_window_pct;
    uint64_t mem_total_bytes, mem_available_bytes;
    uint64_t swap_total_bytes, swap_free_bytes;
    double swap_in_pages_per_s, swap_out_pages_per_s;
    char *kernel_release;
    double uptime_s;
    char *boot_id;        /* this boot's random id: tells one boot from the next */
    uint32_t oom_kills;   /* OOM-killer kills among the kernel-log events (driver.events) */
    char *container;      /* the container gpudoctor runs in ("docker"), or "none" */
    char *container_sign; /* the mark it was known by ("/.dockerenv"); NULL with "none" */
    /* Host memory (EDAC): errors since each memory controller's counters were reset (boot). */
    uint32_t edac_controllers;
    uint64_t mem_ue_count, mem_ce_count;
    char *mem_ue_dimms;  /* "P2-DIMMF1 (2), ...": the DIMMs with uncorrectable errors */
    double edac_since_s; /* the shortest time since a controller's counters were reset */
    /* The BMC's event log (IPMI SEL): memory ECC events, asserted, over the whole log read. */
    uint32_t sel_entries;       /* entries read */
    uint32_t sel_mem_ue;        /* "Uncorrectable ECC" assertions of memory sensors */
    uint32_t sel_mem_ce;        /* "Correctable ECC" (and its logging limit) assertions */
    int64_t sel_mem_ue_last_ms; /* Unix time of the latest uncorrectable one */
    char *sel_mem_ue_dimms;     /* "P2-DIMMF1, ...": what they name (a DIMM, else the sensor) */
    /* ... and power supply faults: a sensor's fault event asserted and not cleared later. */
    uint32_t sel_psu_faults;    /* open at the log's end (at least: see sel_psu_untracked) */
    uint32_t sel_psu_losses;    /* ... of them power or redundancy lost since the last power-on */
    uint32_t sel_psu_stale;     /* ... of them logged before the last power-on the log records */
    uint32_t sel_psu_untracked; /* ... of them that could not be followed (counted as open) */
    bool sel_full;              /* the log was full, or logging disabled, at its end */
    int64_t sel_psu_last_ms;    /* Unix time of the newest of them */
    char *sel_psu_what; /* "Power Supply PS2 Status: Failure detected, ...": sensor, event */
    /* POSIX shared memory (/dev/shm, a tmpfs) where gpudoctor runs: a container has its own. */
    uint64_t shm_total_bytes, shm_avail_bytes;
    uint64_t open_files_limit; /* gpudoctor's own soft RLIMIT_NOFILE; UINT64_MAX: unlimited */
    uint32_t suspend_count;    /* successful system suspends since boot (to RAM or idle) */
    uint64_t memlock_limit;    /* gpudoctor's own soft RLIMIT_MEMLOCK in bytes; UINT64_MAX: none */
    char *net_up;              /* "bond0 eth0 ib0": network interfaces up, lo left out ("" none) */

    struct host_disk *disks;
    size_t n_disks;
    struct host_fs *fs;
    size_t n_fs;

    uint64_t valid; /* bits of enum host_slot */
};

/* Validity bits of struct host_sample. */
enum host_sample_slot {
    HOST_SMP_S_CPU, /* iowait and steal: since the previous sample */
    HOST_SMP_S_MEM,
    HOST_SMP_S_CPU_BUSY, /* the total busy share, known alone where the split is not */
};

/* What changes between samples on the host. */
struct host_sample {
    double cpu_busy_pct, cpu_iowait_pct, cpu_steal_pct; /* since the previous sample */
    uint64_t mem_available_bytes;
    uint64_t valid; /* bits of enum host_sample_slot */
};

extern const struct jtable host_info_table;
extern const struct jtable host_disk_table;
extern const struct jtable host_fs_table;
extern const struct jtable host_sample_table;

bool host_valid(const struct host_info *h, enum host_slot slot);
/* The container gpudoctor ran in ("docker", "podman", ...); NULL when none was seen or unknown. */
const char *host_container(const struct host_info *h);
void host_set_valid(struct host_info *h, enum host_slot slot);

void host_disk_free(struct host_disk *d);
void host_fs_free(struct host_fs *f);
void host_info_free(struct host_info *h);
json_t *host_info_to_json(const struct host_info *h);
int host_info_from_json(struct host_info *h, const json_t *j, const char *path, struct jerr *err);
json_t *host_sample_to_json(const struct host_sample *s);
int host_sample_from_json(struct host_sample *s, const json_t *j, const char *path,
                          struct jerr *err);

#endif
