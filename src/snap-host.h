/*
 * The host part of the snapshot: CPU, memory, swap, pressure, disks and free space, kernel.
 * Filled by collect/host.c from /proc and /sys under the root directory.
 */
#ifndef GPUDOCTOR_SNAP_HOST_H
#define GPUDOCTOR_SNAP_HOST_H

#include "jfield.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum host_slot {
    HOST_S_CPUS,
    HOST_S_LOAD,
    HOST_S_CPU_PCT, /* needs a window */
    HOST_S_PSI_CPU,
    HOST_S_PSI_MEM,
    HOST_S_PSI_IO,
    HOST_S_MEM,
    HOST_S_SWAP,
    HOST_S_SWAP_RATE, /* needs a window */
    HOST_S_KERNEL,
    HOST_S_UPTIME,
};

struct host_disk {
    char *name; /* sda, nvme0n1 */
    bool rotational;
    double util_pct; /* busy time over the window */
    double await_ms; /* average time per completed I/O over the window */
    double read_bytes_per_s, write_bytes_per_s;
    uint64_t valid;
};

struct host_fs {
    char *path;  /* the directory asked about (/, /tmp, a job's working directory) */
    char *mount; /* its mount point */
    char *device;
    uint64_t total_bytes, avail_bytes;
    uint64_t valid;
};

struct host_info {
    uint32_t cpus;
    double load1, load5, load15;
    double cpu_user_pct, cpu_system_pct, cpu_iowait_pct, cpu_steal_pct, cpu_idle_pct;
    double psi_cpu_some_avg10;
    double psi_mem_some_avg10, psi_mem_full_avg10;
    double psi_io_some_avg10, psi_io_full_avg10;
    uint64_t mem_total_bytes, mem_available_bytes;
    uint64_t swap_total_bytes, swap_free_bytes;
    double swap_in_pages_per_s, swap_out_pages_per_s;
    char *kernel_release;
    double uptime_s;

    struct host_disk *disks;
    size_t n_disks;
    struct host_fs *fs;
    size_t n_fs;

    uint64_t valid; /* bits of enum host_slot */
};

/* What changes between samples on the host. */
struct host_sample {
    bool valid;
    double cpu_busy_pct, cpu_iowait_pct;
};

void host_info_free(struct host_info *h);
json_t *host_info_to_json(const struct host_info *h);
int host_info_from_json(struct host_info *h, const json_t *j, const char *path, struct jerr *err);
json_t *host_sample_to_json(const struct host_sample *s);
int host_sample_from_json(struct host_sample *s, const json_t *j, const char *path,
                          struct jerr *err);

#endif
