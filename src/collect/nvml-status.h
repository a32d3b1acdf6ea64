/*
 * What each NVML outcome becomes in the collector's status: a state (ok, partial, unavailable,
 * failed) and a plain sentence. Per-field return codes stay data in the GPU's nvml_status; only
 * what stops NVML as a whole, or takes a GPU away, is judged here.
 */
#ifndef GPUDOCTOR_NVML_STATUS_H
#define GPUDOCTOR_NVML_STATUS_H

#include "snapshot/snapshot.h"

#include <stddef.h>

/*
 * Sets c from the answer to a full request: CS_UNAVAILABLE without a library, CS_FAILED when it
 * cannot be used or initialised, CS_PARTIAL (a note per GPU) when a GPU is lost or inaccessible,
 * else CS_OK. Returns true when the GPUs can be sampled.
 */
bool nvml_status_judge(const struct nvml_system *sys, const struct gpu *gpus, size_t n_gpus,
                       struct collector_status *c);

/* The first field of g that answered GPU_IS_LOST, or NULL: the GPU fell off the bus meanwhile. */
const struct jfield *nvml_status_lost_field(const struct gpu *g);

/* A note for a GPU that became lost or inaccessible; NULL if g is fine. The caller frees it. */
char *nvml_status_gpu_note(const struct gpu *g);

#endif
