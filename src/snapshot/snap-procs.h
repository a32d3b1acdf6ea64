/*
 * The GPU processes part of the snapshot: one record per process that uses a GPU, NVML's lists
 * joined with a scan of /proc/<pid>/fd for open /dev/nvidia* files, plus the direct children of
 * those processes (data-loader workers) and their ancestors up to init (the launcher, the shell,
 * sshd: context for procs --tree, with only stat, status, cgroup and cmdline read). Filled by
 * collect/procs.c (collect/procfs-scan.c does the scan). Identity is (pid, start_ticks), never pid
 * alone. A field is meaningful only when its bit is set in the record's valid mask (p->valid &
 * (1ull << PROC_S_...)).
 */
#ifndef GPUDOCTOR_SNAP_PROCS_H
#define GPUDOCTOR_SNAP_PROCS_H

#include "snapshot/jfield.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The largest pid Linux can give (PID_MAX_LIMIT on 64-bit systems, 2^22). A pid outside
 * 1..PROC_PID_MAX in a snapshot is refused when it is read: "kill -1" or "kill 0" in a fix would
 * signal every process.
 */
#define PROC_PID_MAX 4194304
static inline bool proc_pid_valid(int64_t pid)
{
    return pid > 0 && pid <= PROC_PID_MAX;
}

/*
 * Validity bits of struct proc. A group bit (STAT, FDS, NSPID) says that everything read from
 * one file is known, as the collector sets it; every field of the group also has a bit of its
 * own, so a snapshot that lacks one of them loses that field only. proc_has() tests a field:
 * its own bit, or its group's.
 */
enum proc_slot {
    PROC_S_STAT,       /* group: ppid, state, start_ticks, comm, cpu_time_ms, threads */
    PROC_S_START_TIME, /* start_time_ms: needs stat and the boot time */
    PROC_S_USER,       /* uid */
    PROC_S_USER_NAME,  /* user: the uid has a name */
    PROC_S_CMDLINE,    /* invalid too when the command line is empty (zombie, kernel thread) */
    PROC_S_EXE,
    PROC_S_CWD,
    PROC_S_CPU_PCT, /* needs two readings: only after a sampling window */
    PROC_S_RSS,
    PROC_S_FDS,    /* group: the fd scan succeeded: holds_*, gpus[].holds_device meaningful */
    PROC_S_ENV,    /* environ readable: cuda_visible_devices_set is meaningful */
    PROC_S_CGROUP, /* cgroup read: container_*, pod_uid, slurm_job_id are meaningful */
    PROC_S_NSPID,  /* group: ns_pid, ns_depth */
    PROC_S_MAPS,   /* maps readable: libs is meaningful */
    /* The fields of the groups, one bit each. */
    PROC_S_PPID,
    PROC_S_STATE,
    PROC_S_START_TICKS,
    PROC_S_COMM,
    PROC_S_CPU_TIME,
    PROC_S_THREADS,
    PROC_S_HOLDS_CTL,
    PROC_S_HOLDS_UVM,
    PROC_S_NS_PID,
    PROC_S_NS_DEPTH,
    PROC_S_CPUS,       /* cpus_allowed read from status (Cpus_allowed_list) */
    PROC_S_NCCL,       /* environ read whole: the nccl_* members are meaningful (NULL = unset) */
    PROC_S_SHM,        /* shm_total_bytes: /dev/shm as it sees it (its mount namespace) */
    PROC_S_SHM_AVAIL,  /* shm_avail_bytes: what is free of it */
    PROC_S_OPEN_FILES, /* open_files: the fd scan counted them */
    PROC_S_NOFILE,     /* open_files_limit read from /proc/<pid>/limits */
    PROC_S_MEMLOCK,    /* memlock_limit read from /proc/<pid>/limits */
};

#define PROC_BIT(slot) (UINT64_C(1) << (slot))
#define PROC_STAT_FIELDS                                                                           \
    (PROC_BIT(PROC_S_PPID) | PROC_BIT(PROC_S_STATE) | PROC_BIT(PROC_S_START_TICKS) |               \
     PROC_BIT(PROC_S_COMM) | PROC_BIT(PROC_S_CPU_TIME) | PROC_BIT(PROC_S_THREADS))
#define PROC_FDS_FIELDS   (PROC_BIT(PROC_S_HOLDS_CTL) | PROC_BIT(PROC_S_HOLDS_UVM))
#define PROC_NSPID_FIELDS (PROC_BIT(PROC_S_NS_PID) | PROC_BIT(PROC_S_NS_DEPTH))

/* Validity bits of struct proc_gpu. */
enum proc_gpu_slot {
    PROC_GPU_S_INDEX, /* gpu_index known (NVML answered) */
    PROC_GPU_S_MINOR, /* minor known */
    PROC_GPU_S_USED,  /* used_bytes: NVML gave a value */
    PROC_GPU_S_UTIL,  /* sm_util_pct: NVML had a sample */
};

/* One GPU a process uses. */
struct proc_gpu {
    uint32_t gpu_index;   /* NVML index; UINT32_MAX when known only by device minor */
    uint32_t minor;       /* N of /dev/nvidiaN; UINT32_MAX when unknown */
    bool holds_device;    /* has /dev/nvidiaN open */
    bool nvml_listed;     /* NVML lists the process on this GPU */
    uint32_t type_mask;   /* GPU_PROC_* from NVML (1 compute, 2 graphics, 4 MPS) */
    uint64_t used_bytes;  /* GPU memory held on this GPU (NVML) */
    uint32_t sm_util_pct; /* per-process SM utilisation (NVML) */
    uint64_t valid;       /* bits of enum proc_gpu_slot */
};

/* A GPU library mapped into the process (from /proc/<pid>/maps). */
struct proc_lib {
    char *kind; /* "cuda", "nvml", "cudart", "cudnn", "nccl", "cublas", "torch", "tensorflow" */
    char *path;
    char *version; /* from the file name ("12.4.127"), NULL when it has none */
};

struct proc {
    int32_t pid, ppid;
    uint64_t start_ticks;  /* /proc/<pid>/stat field 22: with pid, the process identity */
    int64_t start_time_ms; /* Unix time it started; age = snapshot time_ms - this */
    char state;            /* R S D Z T t X I, as in /proc/<pid>/stat */
    uint32_t uid;          /* effective uid, as ps shows it */
    char *user;
    char *comm, *cmdline, *exe, *cwd;
    uint64_t cpu_time_ms; /* user + system, when the scan read it */
    double cpu_pct;       /* over the sampling window; 100 = one core */
    uint64_t rss_bytes;
    uint32_t threads;

    struct proc_gpu *gpus; /* sorted by gpu_index, then minor */
    size_t n_gpus;
    bool holds_ctl; /* /dev/nvidiactl open */
    bool holds_uvm; /* /dev/nvidia-uvm open */

    int32_t *children; /* pids of direct children (data-loader workers), ascending */
    size_t n_children;

    bool cuda_visible_devices_set; /* the variable is in the environment (see PROC_S_ENV) */
    char *cuda_visible_devices;    /* its value; NULL when unset or unknown */

    char *cgroup;            /* the process's cgroup path (the one naming the container) */
    char *container_runtime; /* "docker", "containerd", "cri-o", "podman"; NULL when unknown */
    char *container_id;      /* NULL on the host: the test for "in a container" */
    char *pod_uid;           /* Kubernetes */
    char *slurm_job_id;      /* Slurm */
    int32_t ns_pid;          /* pid in its own (innermost) PID namespace */
    uint32_t ns_depth;       /* 0 = the PID namespace of the /proc that was read */

    struct proc_lib *libs;
    size_t n_libs;

    char *cpus_allowed; /* the CPUs it may run on, a cpulist ("0-15,32-47"), as status says */
    /*
     * The NCCL settings of its environment that matter (see PROC_S_NCCL), in the order of
     * PROC_NCCL_NAMES; NULL when unset. No other variable is ever kept.
     */
    char *nccl_p2p_disable, *nccl_ib_disable, *nccl_shm_disable, *nccl_socket_ifname;
    char *nccl_net_gdr_level, *nccl_p2p_level, *nccl_ib_hca, *nccl_algo, *nccl_proto, *nccl_debug;
    /* Its POSIX shared memory (/dev/shm in its mount namespace): size and what is free. */
    uint64_t shm_total_bytes, shm_avail_bytes;
    /* File descriptors it has open, and its soft limit on them (UINT64_MAX: unlimited). */
    uint32_t open_files;
    uint64_t open_files_limit;
    /* Its soft limit on locked memory in bytes (UINT64_MAX: unlimited): RDMA pins buffers. */
    uint64_t memlock_limit;

    uint64_t valid; /* bits of enum proc_slot */
};

/* The NCCL variables a record keeps, and the member that holds each (i from 0 to 9). */
#define PROC_NCCL_VARS      10
#define PROC_NCCL_VALUE_MAX 63 /* bytes of a value kept */
char **proc_nccl_value(struct proc *p, size_t i);
const char *proc_nccl_get(const struct proc *p, size_t i);
extern const char *const proc_nccl_names[PROC_NCCL_VARS];

/* Validity bits of struct proc_table. */
enum proc_table_slot {
    PROC_TABLE_S_SCAN,      /* the scan ran: counters and clk_tck are meaningful */
    PROC_TABLE_S_BOOT_TIME, /* boot_time_ms read from /proc/stat */
};

struct proc_table {
    struct proc *procs; /* sorted by pid */
    size_t n_procs;
    uint32_t scanned;     /* /proc entries looked at */
    uint32_t vanished;    /* exited during the scan: skipped */
    uint32_t fd_denied;   /* processes whose fds we could not read (no permission) */
    uint32_t garbled;     /* processes whose stat could not be parsed: skipped */
    uint32_t clk_tck;     /* sysconf(_SC_CLK_TCK) */
    int64_t boot_time_ms; /* Unix time of boot, for start times */
    uint64_t valid;       /* bits of enum proc_table_slot */
};

/* What changes between samples for one process. */
struct proc_sample {
    int32_t pid;
    uint64_t start_ticks;
    uint64_t cpu_time_ms;
};

/* The field tables: the codec, docs/snapshot.md and metrics are loops over these. */
extern const struct jtable proc_jtable;
extern const struct jtable proc_gpu_jtable;
extern const struct jtable proc_lib_jtable;
extern const struct jtable proc_table_jtable;
extern const struct jtable proc_sample_jtable;

/* Whether the field (or group) of slot is known: its own bit, or the bit of its group. */
static inline bool proc_has(const struct proc *p, enum proc_slot slot)
{
    uint64_t bit = PROC_BIT(slot);

    return (p->valid & bit) || ((PROC_STAT_FIELDS & bit) && (p->valid & PROC_BIT(PROC_S_STAT))) ||
           ((PROC_FDS_FIELDS & bit) && (p->valid & PROC_BIT(PROC_S_FDS))) ||
           ((PROC_NSPID_FIELDS & bit) && (p->valid & PROC_BIT(PROC_S_NSPID)));
}

/*
 * Checks a process id read from a snapshot: 1..PROC_PID_MAX, or 0 too with zero_ok (a ppid:
 * init's parent). Returns 0, or -1 with *err naming path.key.
 */
int proc_pid_check(int64_t pid, bool zero_ok, const char *path, const char *key, struct jerr *err);

/* Milliseconds the process has run at now_ms (Unix time), or -1 when its start is unknown. */
int64_t proc_age_ms(const struct proc *p, int64_t now_ms);

void proc_free(struct proc *p);
void proc_table_free(struct proc_table *t);
/* The process with this pid, or NULL. */
struct proc *proc_table_find(const struct proc_table *t, int32_t pid);
/*
 * Whether p is in the table only as context, an ancestor kept for the tree: it uses no GPU, has
 * children in the table, and is no GPU process's child (not a worker). What is asked of GPU
 * processes and their workers skips it.
 */
bool proc_table_context_only(const struct proc_table *t, const struct proc *p);

json_t *proc_table_to_json(const struct proc_table *t);
int proc_table_from_json(struct proc_table *t, const json_t *j, const char *path, struct jerr *err);
/* One element of the table's "processes" into a zeroed *p (the snapshot's streaming reader). */
int proc_from_json(struct proc *p, const json_t *j, const char *path, struct jerr *err);
json_t *proc_sample_to_json(const struct proc_sample *s);
int proc_sample_from_json(struct proc_sample *s, const json_t *j, const char *path,
                          struct jerr *err);

#endif
