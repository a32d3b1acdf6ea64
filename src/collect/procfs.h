/*
 * Parsers for the files of /proc/<pid> (stat, status, cmdline, environ, cgroup, maps, fd links)
 * and the few host files the process scan needs (/proc/stat, etc/passwd). Every parser takes the
 * text a bounded reader returned, checks every number, and never trusts the input: a garbled or
 * truncated file gives an error naming what was wrong, never a crash.
 */
#ifndef GPUDOCTOR_PROCFS_H
#define GPUDOCTOR_PROCFS_H

#include "snapshot/snap-procs.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Longer command names are cut (the kernel's are 15 bytes, kernel workers' a little longer). */
#define PROCFS_COMM_MAX 64

/* A longer Cpus_allowed_list (thousands of scattered CPUs) is not kept. */
#define PROCFS_CPULIST_MAX 512

/* Flag of stat field 9: a kernel thread, which holds no files. */
#define PROCFS_PF_KTHREAD 0x00200000u

struct procfs_stat {
    int32_t pid;
    char comm[PROCFS_COMM_MAX];
    char state;
    int32_t ppid;
    uint32_t flags;
    uint64_t utime_ticks, stime_ticks;
    uint32_t threads;
    uint64_t start_ticks;
    uint64_t rss_pages;
};

/*
 * Parses /proc/<pid>/stat. The command name may hold spaces and ')': it runs from the first '('
 * to the last ')'. Returns 0, or -EINVAL with why (why_size bytes) saying what was wrong.
 */
int procfs_parse_stat(const char *text, struct procfs_stat *st, char *why, size_t why_size);

struct procfs_status {
    bool have_uid;
    uint32_t uid; /* effective */
    bool have_nspid;
    int32_t ns_pid;    /* the last NSpid value: the pid in the innermost namespace */
    uint32_t ns_depth; /* number of NSpid values - 1 */
    bool have_rss;
    uint64_t rss_bytes;
    bool have_cpus;
    char cpus_allowed[PROCFS_CPULIST_MAX]; /* Cpus_allowed_list, checked as a cpulist */
};

/* Parses /proc/<pid>/status; lines that are missing or malformed leave their have_* false. */
void procfs_parse_status(const char *text, struct procfs_status *st);

/*
 * A soft limit from /proc/<pid>/limits: the line starting with key ("Max open files  1024
 * 1048576  files"). Returns 1 with *soft set (UINT64_MAX for "unlimited"), 0 when the line is
 * missing or malformed.
 */
int procfs_parse_limit(const char *text, const char *key, uint64_t *soft);
/* The soft limit on open files ("Max open files"). */
int procfs_parse_nofile(const char *text, uint64_t *soft);
/* The soft limit on locked memory, in bytes ("Max locked memory"). */
int procfs_parse_memlock(const char *text, uint64_t *soft);

/*
 * Joins the NUL-separated arguments of /proc/<pid>/cmdline with spaces. Returns a new string,
 * made safe for a terminal and for JSON (str_sanitize), or NULL when there is none.
 */
char *procfs_cmdline_join(const char *buf, size_t len);

/*
 * Looks name up in the NUL-separated /proc/<pid>/environ. Returns 1 and a new string in *value
 * (sanitized) when found, 0 when not.
 */
int procfs_environ_find(const char *buf, size_t len, const char *name, char **value);

/* What a cgroup path says about containers and jobs; strings are owned, NULL when unknown. */
struct procfs_cgroup {
    char *path;
    char *runtime; /* "docker", "containerd", "cri-o", "podman" */
    char *container_id;
    char *pod_uid; /* with dashes, as Kubernetes writes it */
    char *slurm_job_id;
};

/*
 * Parses /proc/<pid>/cgroup (v1 "N:controllers:/path" lines, the v2 "0::/path" line, or both).
 * Returns 0, or -EINVAL when no line has the form.
 */
int procfs_parse_cgroup(const char *text, struct procfs_cgroup *cg);
void procfs_cgroup_free(struct procfs_cgroup *cg);

/*
 * Adds the GPU libraries mapped in /proc/<pid>/maps to *libs (one record per kind and path).
 * A last line without its newline (a truncated read) is ignored.
 */
void procfs_parse_maps(const char *text, struct proc_lib **libs, size_t *n_libs);

/* What an fd's link text names. */
enum procfs_dev {
    PROCFS_DEV_NONE,  /* not an NVIDIA device file */
    PROCFS_DEV_GPU,   /* /dev/nvidiaN: *minor = N */
    PROCFS_DEV_CTL,   /* /dev/nvidiactl */
    PROCFS_DEV_UVM,   /* /dev/nvidia-uvm, /dev/nvidia-uvm-tools */
    PROCFS_DEV_OTHER, /* /dev/nvidia-modeset, -caps/..., -nvswitchN, ...: a driver client */
};

enum procfs_dev procfs_classify_link(const char *link, uint32_t *minor);

/* The "btime" line of /proc/stat: boot time in Unix seconds. Returns 0 or -EINVAL. */
int procfs_parse_btime(const char *text, int64_t *btime_s);

/* The name of uid in passwd-format text, as a new string, or NULL when it has none. */
char *procfs_passwd_lookup(const char *text, uint32_t uid);

/*
 * The bounded reader for /proc/<pid> files whose size has no fixed bound (cmdline, environ,
 * maps): reads name relative to dirfd, at most max bytes, into a new NUL-terminated buffer.
 * *truncated says whether the file was longer. Returns the length read, or -errno.
 */
ssize_t procfs_read_bounded(int dirfd, const char *name, size_t max, char **out, bool *truncated);

/*
 * The reader for the small one-line-or-few files read for every process (stat): like
 * file_read_at, but it stops after a short read that ends a line instead of asking again for the
 * end of the file, since /proc gives such a file in one read. One syscall less for each of
 * thousands of processes. Returns the length, -EFBIG when it does not fit in size - 1, or -errno.
 */
ssize_t procfs_read_small(int dirfd, const char *path, char *buf, size_t size);

/*
 * The states of the threads of the process whose /proc directory is dirfd (task/<tid>/stat),
 * looking at up to max of them: *in_d gets how many are in uninterruptible sleep (D: stuck in the
 * kernel, perhaps holding the memory-map lock that reading cmdline, environ or maps takes), *live
 * how many have not exited (a state other than Z and X). Returns true when a thread was read; a
 * thread that exits while it is looked at is not counted.
 */
bool procfs_task_states(int dirfd, size_t max, uint32_t *in_d, uint32_t *live);

#endif
