/*
 * What NVIDIA says each GPU model delivers: peak memory bandwidth and compute rates.
 * Generated at build time from data/gpu-specs.tsv (the source of truth, with a source per row) by
 * src/data/tsv2c.c.
 */
#ifndef GPUDOCTOR_DATA_GPUSPECS_H
#define GPUDOCTOR_DATA_GPUSPECS_H

#include <stddef.h>

/* One model. Every figure is 0 where the table gives none (unknown). */
struct gpu_spec {
    const char *model;      /* as NVML and CUDA name it: "NVIDIA H100 80GB HBM3" */
    double mem_bytes_per_s; /* peak memory bandwidth */
    double fp32_flops;      /* FP32 without Tensor Cores */
    double tf32_flops;      /* dense Tensor Core rates */
    double fp16_flops;
    double bf16_flops;
    double fp8_flops;
    const char *source;
};

/* The row of a model named name (whole name, case-insensitive, surrounding blanks ignored);
 * NULL when the table does not know it. */
const struct gpu_spec *gpu_spec_find(const char *name);

/* The whole table, in the TSV's order. */
const struct gpu_spec *gpu_specs(size_t *n);

#endif
