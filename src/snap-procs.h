/*
 * The GPU processes part of the snapshot: one record per process that uses a GPU, NVML's lists
 * joined with a scan of /proc/<pid>/fd for open /dev/nvidia* files. Filled by
 * collect/procs.c. Identity is (pid, start_ticks), never pid alone.
 */
#ifndef GPUDOCTOR_SNAP_PROCS_H
#define GPUDOCTOR_SNAP_PROCS_H

#include "jfield.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Validity bits of struct proc. */
enum proc_slot {
    PROC_S_STAT, /* ppid, state, start_ticks, start_time_ms, cpu_time_ms, threads, comm */
    PROC_S_USER, /* uid, user */
    PROC_S_CMDLINE,
    PROC_S_EXE,
    PROC_S_CWD,
    PROC_S_CPU_PCT, /* needs two readings: only after a sampling window */
    PROC_S_RSS,
    PROC_S_FDS, /* the fd scan succeeded: holds_* and gpus[].holds_device are meaningful */
    PROC_S_ENV, /* environ readable: cuda_visible_devices is meaningful (may be NULL = unset) */
    PROC_S_CGROUP,
    PROC_S_NSPID,
    PROC_S_MAPS,
};

/* One GPU a process uses. */
struct proc_gpu {
    uint32_t gpu_index; /* NVML index; UINT32_MAX when known only by device minor */
    uint32_t minor;     /* N of /dev/nvidiaN; UINT32_MAX when unknown */
    bool holds_device;  /* has /dev/nvidiaN open */
    bool nvml_listed;   /* NVML lists the process on this GPU */
    uint32_t type_mask; /* GPU_PROC_* from NVML */
    bool used_valid;
    uint64_t used_bytes; /* GPU memory held on this GPU (NVML) */
    bool util_valid;
    uint32_t sm_util_pct; /* per-process SM utilisation (NVML) */
};

/* A GPU library mapped into the process (from /proc/<pid>/maps). */
struct proc_lib {
    char *kind; /* "cudart", "cudnn", "nccl", "cublas", "cuda", "nvml", "torch", ... */
    char *path;
    char *version; /* from the file name or the library itself, NULL when unknown */
};

struct proc {
    int32_t pid, ppid;
    uint64_t start_ticks;  /* /proc/<pid>/stat field 22: with pid, the process identity */
    int64_t start_time_ms; /* Unix time it started */
    char state;            /* R S D Z T t X I, as in /proc/<pid>/stat */
    uint32_t uid;
    char *user;
    char *comm, *cmdline, *exe, *cwd;
    uint64_t cpu_time_ms; /* user + system */
    double cpu_pct;       /* over the sampling window; 100 = one core */
    uint64_t rss_bytes;
    uint32_t threads;

    struct proc_gpu *gpus;
    size_t n_gpus;
    bool holds_ctl; /* /dev/nvidiactl open */
    bool holds_uvm; /* /dev/nvidia-uvm open */

    int32_t *children; /* pids of direct children (data-loader workers) */
    size_t n_children;

    char *cuda_visible_devices; /* NULL when unset (see PROC_S_ENV) */

    char *cgroup;            /* the process's cgroup path */
    char *container_runtime; /* "docker", "containerd", "cri-o", "podman", NULL on the host */
    char *container_id;
    char *pod_uid;      /* Kubernetes */
    char *slurm_job_id; /* Slurm */
    int32_t ns_pid;     /* pid in its own (innermost) PID namespace */
    uint32_t ns_depth;  /* 0 = host namespace */

    struct proc_lib *libs;
    size_t n_libs;

    uint64_t valid; /* bits of enum proc_slot */
};

struct proc_table {
    struct proc *procs;
    size_t n_procs;
    uint32_t scanned;     /* /proc entries looked at */
    uint32_t vanished;    /* exited during the scan: skipped */
    uint32_t fd_denied;   /* processes whose fds we could not read (no permission) */
    uint32_t clk_tck;     /* sysconf(_SC_CLK_TCK) */
    int64_t boot_time_ms; /* Unix time of boot, for start times */
};

/* What changes between samples for one process. */
struct proc_sample {
    int32_t pid;
    uint64_t start_ticks;
    uint64_t cpu_time_ms;
};

void proc_free(struct proc *p);
void proc_table_free(struct proc_table *t);
/* The process with this pid, or NULL. */
struct proc *proc_table_find(const struct proc_table *t, int32_t pid);

json_t *proc_table_to_json(const struct proc_table *t);
int proc_table_from_json(struct proc_table *t, const json_t *j, const char *path, struct jerr *err);
json_t *proc_sample_to_json(const struct proc_sample *s);
int proc_sample_from_json(struct proc_sample *s, const json_t *j, const char *path,
                          struct jerr *err);

#endif
