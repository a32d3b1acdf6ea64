/*
 * What the parts of the process scan share (src/collect/procfs-scan*.c, and only they): the
 * bounds on what one process may make it read, the state of one scan, and the functions one part
 * calls in another. procfs-scan.c says which part is where.
 */
#ifndef GPUDOCTOR_PROCFS_SCAN_INTERNAL_H
#define GPUDOCTOR_PROCFS_SCAN_INTERNAL_H

#include "collect/procfs-scan.h"
#include "collect/procfs.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Bounds on what one process may make us read. */
#define STAT_MAX    2048
#define STATUS_MAX  16384
#define CMDLINE_MAX (256u << 10)
#define ENVIRON_MAX (1u << 20)
#define CGROUP_MAX  (64u << 10)
#define LIMITS_MAX  4096 /* /proc/<pid>/limits: 17 lines of 80 columns */
#define MAPS_MAX    (16u << 20)
#define PASSWD_MAX  (16u << 20)
#define PSTAT_MAX   (16u << 20)
#define DENTS_SIZE  (32u << 10)

/* Every process seen: enough for the parent/child tree. */
struct rec {
    int32_t pid, ppid;
    uint64_t start_ticks;
    bool fds_ok;   /* its fd links were read */
    bool in_table; /* already has a record */
    bool gone;     /* vanished after this was recorded */
};

/* The NVIDIA files one process holds. */
struct held {
    uint32_t *minors;
    size_t n_minors, cap_minors;
    uint32_t n_fds; /* every descriptor listed */
    bool ctl, uvm, other;
};

/* What pass 1 found for one pid, written by whichever thread read it. */
enum slot_state {
    SLOT_OK,
    SLOT_GONE,    /* exited before or while it was read */
    SLOT_GARBLED, /* stat could not be parsed: why says how */
    SLOT_DENIED,  /* stat unreadable: permission denied (hidepid) */
    SLOT_ERROR,   /* stat unreadable: error */
};

struct slot {
    int32_t pid, ppid;
    uint64_t start_ticks;
    enum slot_state state;
    int error;     /* SLOT_ERROR: the errno */
    char *why;     /* SLOT_GARBLED */
    bool fds_ok;   /* the fd links were read */
    int fds_error; /* reading them failed with this errno (0: it did not) */
    struct held held;
};

/* One entry of NVML's lists: a pid on s->gpus[gpu]. */
struct nvml_ref {
    int32_t pid;
    size_t gpu;
    const struct gpu_proc *gp;
};

struct user {
    uint32_t uid;
    char *name; /* NULL: the uid has no name */
};

/* What could not be read, summarised in one note per kind. */
struct failures {
    uint32_t pid_denied, env_denied, maps_denied, link_denied;
    uint32_t env_unknown, maps_truncated;
    uint32_t d_skipped; /* a thread in D: cmdline, environ, maps not read */
    uint32_t other;
    char *garbled_first; /* "pid 7: why" */
    char *other_first;   /* "/proc/7/status: why" */
};

struct scan {
    const struct procfs_scan_opts *o;
    struct snapshot *s;
    struct proc_table *t;
    int proc_fd;
    char *dents; /* the main thread's listing buffer */

    struct rec *recs;
    size_t n_recs, cap_recs;
    struct proc *procs;
    size_t n_procs, cap_procs;
    struct nvml_ref *nvml;
    size_t n_nvml;

    struct user *users;
    size_t n_users, cap_users;
    char *passwd;
    bool passwd_tried;

    struct failures f;
};

static inline bool pscan_is_gone(ssize_t r)
{
    return r == -ENOENT || r == -ESRCH;
}

static inline bool pscan_is_denied(ssize_t r)
{
    return r == -EACCES || r == -EPERM;
}

/* procfs-scan.c: the test hook, failures counted for the notes, stat reads. */
void pscan_hook(const struct scan *sc, int32_t pid, enum procfs_step step);
void pscan_other_failure(struct scan *sc, int32_t pid, const char *file, ssize_t r);
int pscan_same_process(int dirfd, const char *path, uint64_t start_ticks);
int pscan_read_stat_at(int dirfd, const char *path, int32_t pid, struct procfs_stat *st, char *why,
                       size_t why_size);
void pscan_count_stat_failure(struct scan *sc, int32_t pid, int r, const char *why);

/* procfs-scan-pass1.c */
void pscan_pass1_run(struct scan *sc, struct slot *slots, size_t n);
void pscan_merge_slot(struct scan *sc, struct slot *sl);

/* procfs-scan-gpus.c */
bool pscan_held_any(const struct held *h);
int pscan_read_fds(char *dents, int dirfd, const char *path, struct held *h);
/* NVML's lists (s->gpus[].procs) as pid-sorted references. */
void pscan_nvml_collect(struct scan *sc);
const struct nvml_ref *pscan_nvml_find(const struct scan *sc, int32_t pid);
void pscan_proc_add_gpus(struct scan *sc, struct proc *p, const struct held *h);

/* procfs-scan-details.c */
int pscan_make_proc(struct scan *sc, int pidfd, const struct procfs_stat *st, bool fds_ok,
                    const struct held *h, bool light, struct proc *p);
/* Room for one more record at the end of sc->procs (not yet counted in n_procs). */
struct proc *pscan_new_proc(struct scan *sc);

#endif
