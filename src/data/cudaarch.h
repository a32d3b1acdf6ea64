/*
 * GPU architectures and the CUDA toolkits that build code for them: which compute capabilities
 * a toolkit can compile for, and which capabilities the code of another runs on. Generated at
 * build time from data/cuda-arch.tsv (the source of truth, with its sources) by
 * src/data/tsv2c.c; this header is the only way to read it.
 */
#ifndef GPUDOCTOR_DATA_CUDAARCH_H
#define GPUDOCTOR_DATA_CUDAARCH_H

#include <stdbool.h>
#include <stddef.h>

/* One compute capability of the table. Versions are 10 * major + minor: 86 for 8.6, and CUDA
 * 12.8 as 128 (removed 0: still supported). */
struct cuda_arch {
    int cc;
    const char *arch; /* "Ampere" */
    int first;        /* the first toolkit that compiles for it */
    int removed;      /* the first toolkit that no longer does; 0: none yet */
    bool tegra;       /* integrated (Jetson): its code runs on this capability only */
    const char *source;
};

/* The row of capability cc (86), or NULL when the table does not know it. */
const struct cuda_arch *cuda_arch_find(int cc);
/*
 * A CUDA release as 10 * major + minor: 128 from "12.8" or "12.8.93"; 120 with *major_only from
 * "12"; -1 when s is not such a version ("12abc", "64_101", a minor past 9). Shared with the
 * soname table (cudasonames.c).
 */
int cuda_release_value(const char *s, bool *major_only);

/* Whether code built for capability code runs on a GPU of capability gpu (both known rows). */
bool cuda_arch_runs_on(const struct cuda_arch *code, const struct cuda_arch *gpu);

enum cuda_arch_verdict {
    CUDA_ARCH_OK,      /* the toolkit compiles code that runs on the GPU */
    CUDA_ARCH_TOO_NEW, /* the GPU is newer than anything the toolkit compiles for */
    CUDA_ARCH_TOO_OLD, /* the toolkit no longer compiles for the GPU or any it runs */
    CUDA_ARCH_UNKNOWN, /* the table does not know the capability or the toolkit's version */
};

/*
 * Whether a build of CUDA cuda ("12.4", "12.4.127", "11") can hold code for a GPU of capability
 * gpu_cc (86). A major alone is judged only where every minor of it gives the same answer.
 * first_needed gets the oldest toolkit that could (0 when none), for the evidence.
 */
enum cuda_arch_verdict cuda_arch_check(const char *cuda, int gpu_cc, int *first_needed);

/* Every row, by capability (for tests and docs). */
extern const struct cuda_arch cuda_arch_rows[];
extern const size_t cuda_arch_n_rows;

#endif
