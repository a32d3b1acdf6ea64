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
#include "util/timeutil.h"

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
    bool sample_nvml;     /* read NVML during the sustained load (sample.c) */
    const char *nvml_lib; /* NULL: $GPUDOCTOR_NVML_LIB, else libnvidia-ml.so.1 */
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

/* ---- NVML during the sustained load (sample.c) ---- */

/* How often the parent reads NVML while the load runs. */
#define BENCH_SAMPLE_INTERVAL_MS 150
/* The most one reading may take before the sampling is given up (and its helper killed). */
#define BENCH_SAMPLE_DEADLINE_MS 5000

/* One GPU's readings so far. */
struct bench_load {
    uint32_t samples; /* readings in which the GPU answered */
    bool sm, mem, temp, reasons_valid;
    uint32_t sm_min, sm_max, mem_min, mem_max, temp_max, power_max, n_power;
    uint64_t power_sum, reasons;
};

/* Adds one reading of a GPU (the dynamic fields NVML gave; invalid ones are left out). */
void bench_load_add(struct bench_load *a, const struct gpu *g);
/* Writes the readings into the GPU's load_* fields (each valid when some reading had it). */
void bench_load_fill(struct bench_gpu *g, const struct bench_load *a);

struct bench_sampler;
/* Opens an NVML session and learns each GPU's PCI address. Never NULL: a sampler that could
 * not start keeps the reason for load_note and takes no readings. */
struct bench_sampler *bench_sampler_open(const char *nvml_lib, int64_t deadline_mono_ms);
/* Whether readings can still be taken. */
bool bench_sampler_live(const struct bench_sampler *sp);
/* One reading of every GPU; a timeout or a dead helper ends the sampling (its reason kept). */
void bench_sampler_take(struct bench_sampler *sp, int64_t deadline_mono_ms);
/* Ends the session; when loaded, fills the load_* fields of b's GPUs that ran the load (matched
 * by PCI address), and load_note with the reason sampling did not run or stopped. Frees sp. */
void bench_sampler_close(struct bench_sampler *sp, struct bench_info *b, bool loaded);

/* ---- the baseline (baseline.c) ---- */

/* The node's baseline file in the state directory (state_dir_resolve). The caller frees it. */
char *bench_baseline_path(const char *state_dir);
/* Writes the snapshot s (with its bench section) as the baseline of the state directory
 * atomically, mode 0600 (it holds every process's command line), creating the directory; one
 * that is not trusted is refused (state_dir_open). 0, or -1 with *cause. */
int bench_baseline_save(const struct snapshot *s, const char *state_dir, char **cause);
/* Reads the bench section of the snapshot at path and fills the baseline_* figures of b's GPUs
 * (matched by PCI address). 0, or -1 with *cause. */
int bench_baseline_compare(struct bench_info *b, const char *path, char **cause);
/* The same with the baseline saved in the state directory, read as its state file is (never
 * through a link, only the user's or root's regular file, in a trusted directory): 1 compared, 0
 * when none is saved, -1 with *cause. */
int bench_baseline_compare_saved(struct bench_info *b, const char *state_dir, char **cause);

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
 * bench result has been kept (no file), -1 with *cause when the file is unusable (unreadable, a
 * link, not a regular file, another user's, in a state directory that is not trusted, not a
 * snapshot, no bench section that ran).
 */
int bench_last_load(const char *state_dir, struct snapshot **out, char **cause);
/* When the bench of s ended, Unix milliseconds: the capture's time plus the bench's own. */
int64_t bench_completed_ms(const struct snapshot *s);

#endif
