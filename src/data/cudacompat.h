/*
 * CUDA toolkit -> minimum NVIDIA driver, with and without minor-version compatibility.
 * Generated at build time from data/cuda-driver-compat.tsv (the source of truth) by
 * src/data/tsv2c.c.
 */
#ifndef GPUDOCTOR_DATA_CUDACOMPAT_H
#define GPUDOCTOR_DATA_CUDACOMPAT_H

#include <stdbool.h>
#include <stddef.h>

/* One toolkit release of the table. */
struct cuda_release {
    const char *toolkit;      /* "CUDA 12.4 Update 1" */
    const char *version;      /* "12.4.1" */
    const char *linux_min;    /* the driver the toolkit shipped with: "550.54.15" */
    const char *windows_min;  /* NULL where NVIDIA gives none (CUDA 13 on) */
    const char *compat_min;   /* lowest Linux driver via minor-version compatibility, NULL: none */
    const char *compat_below; /* that range ends below this driver branch ("580"); NULL: open */
    bool secondary;           /* the row comes from a secondary source, not NVIDIA's page */
    const char *source;
};

struct cuda_driver_req {
    /* The release matched: the exact one, else the first of that major.minor (its GA). NULL when
     * the major is known but not that minor (a newer minor than the table knows). */
    const struct cuda_release *release;
    bool exact;                    /* the version asked named a release of the table */
    const char *min_driver;        /* without minor-version compatibility; NULL when unknown */
    const char *min_driver_compat; /* with minor-version compatibility; NULL when the family has
                                      none (CUDA 10 and older) */
    const char *compat_below;      /* the compatibility range ends below this branch; NULL: open */
};

/*
 * The minimum driver for a CUDA version: "12.4" (the 12.4 GA release), "12.4.1" (that update),
 * or a component version such as "12.4.127" (taken as 12.4). Returns 0 with *out filled,
 * -EINVAL when cuda is not a version, -ENOENT when the table knows nothing of its major.
 */
int cuda_min_driver(const char *cuda, struct cuda_driver_req *out);

enum cuda_driver_verdict {
    CUDA_DRIVER_OK,           /* the driver is at least the toolkit's own */
    CUDA_DRIVER_MINOR_COMPAT, /* runs through minor-version compatibility, with limits (PTX JIT) */
    CUDA_DRIVER_TOO_OLD,      /* will not run: "CUDA driver version is insufficient" */
    CUDA_DRIVER_UNKNOWN,      /* the table cannot say (unknown CUDA major, or a bad version) */
};

/* Whether a Linux driver ("550.54.15") runs CUDA cuda ("12.4"). req may be NULL. */
enum cuda_driver_verdict cuda_driver_check(const char *driver, const char *cuda,
                                           struct cuda_driver_req *req);

/* The whole table, newest first as in the TSV. */
const struct cuda_release *cuda_releases(size_t *n);

#endif
