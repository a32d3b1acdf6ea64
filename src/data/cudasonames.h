/*
 * The sonames of the CUDA libraries and the CUDA releases that ship each: libcudart.so.11.0 ships
 * with CUDA 11.0 to 11.8, libcurand.so.10 with 10.1 and every release since. A soname's version
 * is not the CUDA release. Generated at build time from data/cuda-sonames.tsv (the source of
 * truth, with its sources) by src/data/tsv2c.c; this header is the only way to read it.
 */
#ifndef GPUDOCTOR_DATA_CUDASONAMES_H
#define GPUDOCTOR_DATA_CUDASONAMES_H

#include <stdbool.h>
#include <stddef.h>

/* One soname. Versions are 10 * major + minor, as in data/cudaarch.h: CUDA 11.8 is 118. */
struct cuda_soname {
    const char *soname;  /* "libcudart.so.11.0" */
    const char *lib;     /* "cudart" */
    const char *version; /* "11.0": the soname's own version */
    const char *first;   /* "11.0": the first CUDA release that ships it */
    const char *last;    /* "11.8": the last one; NULL while today's releases still ship it */
    int first_v;         /* 110 */
    int last_v;          /* 118; 0 while today's releases still ship it */
    const char *source;
};

/* The row of libLIB.so.VERSION ("cudart", "11.0"), or NULL when the table does not know it. */
const struct cuda_soname *cuda_soname_find(const char *lib, const char *version);

/*
 * Whether CUDA cuda ("11.8", "11.8.89") ships the row's soname. A bare major ("11") does when
 * every release of it that the table names does (11.0 to 11.8 for libcudart.so.11.0). False for
 * NULL or what is not a version.
 */
bool cuda_soname_ships(const struct cuda_soname *row, const char *cuda);

/* Every row, by library name, then by first (for tests and docs). */
extern const struct cuda_soname cuda_soname_rows[];
extern const size_t cuda_soname_n_rows;

#endif
