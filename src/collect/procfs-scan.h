/*
 * The process scan behind the processes collector: one pass over /proc that reads every
 * process's stat (for the parent/child tree) and its fd links (for /dev/nvidia* holders), then
 * the expensive files only for GPU processes and their direct children, joined with the lists
 * NVML gave (s->gpus[].procs, host pids). The ancestors of GPU processes up to init are kept
 * too, with their status, cgroup and command line only (context for procs --tree).
 */
#ifndef GPUDOCTOR_PROCFS_SCAN_H
#define GPUDOCTOR_PROCFS_SCAN_H

#include "snapshot/snapshot.h"

#include <stdbool.h>
#include <stdint.h>

/* Points of the scan where a test may step in (to make a process vanish there). */
enum procfs_step {
    PROCFS_STEP_OPEN,    /* before /proc/<pid> is opened */
    PROCFS_STEP_FDS,     /* stat read, before the fd links are read */
    PROCFS_STEP_DETAILS, /* a GPU process: before status, cmdline, environ, ... are read */
    PROCFS_STEP_CHILD,   /* a child of a GPU process: before it is opened again */
    PROCFS_STEP_PARENT,  /* an ancestor of a GPU process: before it is opened again */
};

struct procfs_scan_opts {
    int root_fd;      /* directory holding proc/ (and etc/passwd when not live) */
    bool live;        /* root is "/": user names from the system's user database */
    unsigned threads; /* for the first pass: 0 picks by the number of processes and CPUs */
    /* A test seam, NULL in the program: called with the pid at each step (then one thread). */
    void (*hook)(int32_t pid, enum procfs_step step, void *arg);
    void *hook_arg;
};

/*
 * Fills s->procs and records what could not be read in *cs (notes, state). Returns 0, or -errno
 * when <root>/proc cannot be read at all (then *cs says why).
 */
int procfs_scan(const struct procfs_scan_opts *o, struct snapshot *s, struct collector_status *cs);

#endif
