/*
 * The measurement engine of `gpudoctor bench` (docs/bench.md). The CUDA work runs in a child
 * process (bench_worker) with a deadline, as NVML's does: a wedged GPU or driver becomes a
 * timeout finding naming the step, never a hung gpudoctor. The parent (bench_run) reads the
 * worker's result into the snapshot's bench section; expectations and the baseline are added
 * by bench_expect and bench_baseline_compare.
 */
#ifndef GPUDOCTOR_BENCH_H
#define GPUDOCTOR_BENCH_H

#include "snapshot/snapshot.h"

#include <stdbool.h>
#include <stdint.h>

struct bench_opts {
    bool full;            /* --full: larger transfers, more repetitions */
    double duration_s;    /* --duration: the sustained load per GPU (device seconds) */
    double deadline_s;    /* the worker is killed after this long */
    const char *cuda_lib; /* NULL: $GPUDOCTOR_CUDA_LIB, else libcuda.so.1 */
    double mem_share;     /* the most of a GPU's free memory the bench allocates */
    char **pci_bus_ids;   /* the GPUs to measure, by PCI address; NULL: every one */
    size_t n_pci_bus_ids;
};

/*
 * Runs the bench in a worker process and fills b (state, GPUs, pairs). Returns 0 when the
 * worker finished (b->state BENCH_OK, or BENCH_FAILED with detail), -1 when it did not
 * (BENCH_TIMEOUT with hung_step, or BENCH_FAILED after a crash or an interrupt).
 */
int bench_run(const struct bench_opts *o, struct bench_info *b);

/* The worker's side: does the CUDA work, writes "step ..." lines and one "result {json}" line
 * to fd. Runs in the child; returns the exit status for it. */
int bench_worker(const struct bench_opts *o, int fd);

/* Fills each bench GPU's expectations: the PCIe link of its NVML twin (same PCI address) and
 * the model's figures from data/gpu-specs.tsv. */
void bench_expect(struct bench_info *b, const struct snapshot *s);

/* Two PCI addresses are the same device ("00000000:18:00.0" from NVML, "0000:18:00.0" CUDA). */
bool bench_same_pci(const char *a, const char *b);

/* ---- the baseline (baseline.c) ---- */

/* The node's baseline file in the state directory (state_dir_resolve). The caller frees it. */
char *bench_baseline_path(const char *state_dir);
/* Writes the snapshot s (with its bench section) to path atomically, mode 0600 (it holds every
 * process's command line), creating the state directory. 0, or -1 with *cause. */
int bench_baseline_save(const struct snapshot *s, const char *path, char **cause);
/* Reads the bench section of the snapshot at path and fills the baseline_* figures of b's GPUs
 * (matched by PCI address). 0, or -1 with *cause. */
int bench_baseline_compare(struct bench_info *b, const char *path, char **cause);

/*
 * The node's last result: every bench that ran (state ok) is kept as bench-last.json beside the
 * baseline, atomically with mode 0600 (a whole snapshot), for `serve` (/metrics, --textfile) and
 * `slurm-check` (docs/bench.md). The path: the caller frees it.
 */
char *bench_last_path(const char *state_dir);
/* Keeps s (its bench section in state ok) as the last result. 0, or -1 with *cause. */
int bench_last_save(const struct snapshot *s, const char *state_dir, char **cause);
/*
 * Reads the last result: 1 with *out (a snapshot whose bench section is in state ok), 0 when no
 * bench result has been kept (no file), -1 with *cause when the file is unusable (unreadable,
 * not a snapshot, no bench section that ran).
 */
int bench_last_load(const char *state_dir, struct snapshot **out, char **cause);
/* When the bench of s ended, Unix milliseconds: the capture's time plus the bench's own. */
int64_t bench_completed_ms(const struct snapshot *s);

#endif
