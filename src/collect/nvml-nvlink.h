/*
 * NVLink links and GPU fabric registration of one GPU, asked of NVML inside the helper process
 * (nvml-query.c calls these for every GPU). Missing symbols are FUNCTION_NOT_FOUND for the
 * values they supply, never a failure.
 */
#ifndef GPUDOCTOR_NVML_NVLINK_H
#define GPUDOCTOR_NVML_NVLINK_H

#include "collect/nvml-lib.h"
#include "collect/nvml-query.h"
#include "snapshot/snap-gpu.h"

#include <stdbool.h>

struct nvml_nvlink_ctx {
    const struct nvml_lib *lib;
    nvml_mark_fn *mark; /* may be NULL */
    void *mark_arg;
};

/* What the full query found of a GPU's links, so that a sample asks only for those. */
struct nvml_nvlink_seen {
    bool known;    /* a full query ran */
    int32_t rc;    /* its GPU_S_NVLINK status */
    uint64_t mask; /* bit n: link n answered */
};

/*
 * Fills g->nvlinks and the GPU_S_NVLINK status: every link 0 .. NVML_NVLINK_MAX_LINKS - 1 that
 * nvmlDeviceGetNvLinkState answers for (NOT_SUPPORTED or INVALID_ARGUMENT: no such link;
 * NOT_SUPPORTED for link 0: a GPU without NVLink, nothing more is asked), and its error counters.
 * A full query (sampling false) records what it found in *seen; a sample asks only for the state
 * and the counters of the links *seen holds.
 */
void nvml_nvlink_query(const struct nvml_nvlink_ctx *c, struct gpu *g, nvmlDevice_t d,
                       bool sampling, struct nvml_nvlink_seen *seen);

/* Fills g->fabric and the GPU_S_FABRIC status: nvmlDeviceGetGpuFabricInfoV (v3, then v2), else
 * the unversioned nvmlDeviceGetGpuFabricInfo. */
void nvml_fabric_query(const struct nvml_nvlink_ctx *c, struct gpu *g, nvmlDevice_t d);

/* A field value as a counter: false when it failed or its type cannot hold a count. */
bool nvml_field_as_u64(const nvmlFieldValue_t *v, uint64_t *out);

/* nvmlIntNvLinkDeviceType_t as enum gpu_nvlink_remote. */
int32_t nvml_nvlink_remote(int type);

/* The 16 bytes of a fabric cluster UUID as 8-4-4-4-12 lower-case hex (buf of 37 bytes). */
void nvml_fabric_uuid(const unsigned char *uuid, char *buf);

#endif
