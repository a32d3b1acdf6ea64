/*
 * The CUDA builds of today's PyTorch releases and the compute capabilities each carries code
 * for: which wheel index to install from for a GPU. Generated at build time from
 * data/torch-builds.tsv (the source of truth, with its source) by src/data/tsv2c.c; this header
 * is the only way to read it.
 */
#ifndef GPUDOCTOR_DATA_TORCHBUILDS_H
#define GPUDOCTOR_DATA_TORCHBUILDS_H

#include <stddef.h>

#define TORCH_BUILD_MAX_CCS 7

/* One build. Versions are 10 * major + minor, as in data/cudaarch.h: CUDA 12.8 is 128. */
struct torch_build {
    const char *cuda;                 /* "12.8", as the TSV writes it */
    int version;                      /* 128 */
    const char *index;                /* "cu128": https://download.pytorch.org/whl/cu128 */
    int ccs[TORCH_BUILD_MAX_CCS + 1]; /* the capabilities it carries code for, ascending; 0 ends */
    const char *source;
};

/* The oldest build with code that runs on a GPU of capability cc (data/cudaarch.h says which
 * code runs where), or NULL: none does, or the architecture table does not know cc. */
const struct torch_build *torch_build_for(int cc);

/* Every row, by CUDA version (for tests and docs). */
extern const struct torch_build torch_build_rows[];
extern const size_t torch_build_n_rows;

#endif
