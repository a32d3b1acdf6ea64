/*
 * Asking NVML: loads the library, initialises it, and fills struct nvml_system and struct gpu,
 * one field status per call. This is the code that may block forever in a wedged driver, so it
 * runs in the NVML helper process (nvml-session.c); nothing here knows about processes or pipes.
 */
#ifndef GPUDOCTOR_NVML_QUERY_H
#define GPUDOCTOR_NVML_QUERY_H

#include "snapshot/snap-gpu.h"

#include <stddef.h>

/*
 * Called just before each NVML call with its name and GPU index (-1 for system calls), and with
 * call == NULL when it returned: what the helper writes into the page its parent watches.
 */
typedef void nvml_mark_fn(void *arg, const char *call, int gpu);

struct nvml_query;

/* lib: path or loader name of the NVML library. mark may be NULL. Loads nothing yet. */
struct nvml_query *nvml_query_new(const char *lib, nvml_mark_fn *mark, void *mark_arg);

/*
 * Everything: loads and initialises the library on first use, then the system values and every
 * field of every GPU. *sys is overwritten (free it with nvml_system_free); *gpus is a new array
 * of *n_gpus GPUs (free each with gpu_free, then the array). Never fails: what could not be
 * read is in the status fields.
 */
void nvml_query_full(struct nvml_query *q, struct nvml_system *sys, struct gpu **gpus,
                     size_t *n_gpus);

/*
 * The fields that change (gpu_table rows flagged JF_DYNAMIC, and the process lists) of the GPUs
 * the last nvml_query_full found. No GPUs before a successful nvml_query_full.
 */
void nvml_query_sample(struct nvml_query *q, struct gpu **gpus, size_t *n_gpus);

/* Shuts NVML down (when it was initialised), unloads it and frees q. */
void nvml_query_free(struct nvml_query *q);

/* The most GPUs one query looks at, whatever nvmlDeviceGetCount says. */
#define NVML_QUERY_MAX_GPUS 1024
/* The most processes one list may hold, whatever the driver says. */
#define NVML_QUERY_MAX_PROCS 65536

#endif
