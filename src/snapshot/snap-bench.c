/* The bench section's field tables and codec (snap-bench.h). */
#include "snapshot/snap-bench.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

const char *const bench_state_names[] = { "not_run", "ok", "failed", "timeout", "refused", NULL };

#define G(key, type, member, slot, doc)                                                            \
    {                                                                                              \
        key, type, offsetof(struct bench_gpu, member), slot, 0, NULL, NULL, doc                    \
    }
static const struct jfield bench_gpu_fields[] = {
    G("index", JF_U32, index, -1, "CUDA device ordinal"),
    G("name", JF_STR, name, -1, "cuDeviceGetName"),
    G("pci_bus_id", JF_STR, pci_bus_id, -1, "cuDeviceGetPCIBusId"),
    G("error", JF_STR, error, -1, "the CUDA call that failed on this GPU, and its CUresult"),
    G("h2d_pinned_bytes_per_s", JF_DOUBLE, h2d_pinned_bytes_per_s, BG_H2D_PINNED,
      "host to device copy from pinned memory"),
    G("d2h_pinned_bytes_per_s", JF_DOUBLE, d2h_pinned_bytes_per_s, BG_D2H_PINNED,
      "device to host copy into pinned memory"),
    G("h2d_pageable_bytes_per_s", JF_DOUBLE, h2d_pageable_bytes_per_s, BG_H2D_PAGEABLE,
      "host to device copy from pageable memory"),
    G("d2h_pageable_bytes_per_s", JF_DOUBLE, d2h_pageable_bytes_per_s, BG_D2H_PAGEABLE,
      "device to host copy into pageable memory"),
    G("bidir_bytes_per_s", JF_DOUBLE, bidir_bytes_per_s, BG_BIDIR,
      "both directions at once (pinned, two streams), the sum"),
    G("host_numa_node", JF_I32, host_numa_node, BG_HOST_NUMA,
      "NUMA node of the host buffers (move_pages)"),
    G("gpu_numa_node", JF_I32, gpu_numa_node, BG_GPU_NUMA,
      "NUMA node of the GPU (sysfs numa_node); equal to host_numa_node: local"),
    G("dtod_bytes_per_s", JF_DOUBLE, dtod_bytes_per_s, BG_DTOD,
      "device to device copy: bytes read and written per second"),
    G("triad_bytes_per_s", JF_DOUBLE, triad_bytes_per_s, BG_TRIAD,
      "STREAM triad kernel: bytes read and written per second"),
    G("fma_flops", JF_DOUBLE, fma_flops, BG_FMA, "FP32 fused multiply-add rate (2 FLOP per FMA)"),
    G("compute_method", JF_STR, compute_method, -1,
      "\"cublaslt\": the gemm_*_flops were measured through cuBLASLt; \"fma-kernel\": "
      "cuBLASLt was not there or measured nothing, fma_flops (gpudoctor's PTX) is the compute "
      "figure"),
    G("gemm_tf32_flops", JF_DOUBLE, gemm_flops[BP_TF32], BG_GEMM + BP_TF32,
      "cuBLASLt GEMM, FP32 data with TF32 Tensor Cores (compute capability 8.0 on)"),
    G("gemm_fp16_flops", JF_DOUBLE, gemm_flops[BP_FP16], BG_GEMM + BP_FP16,
      "cuBLASLt GEMM, FP16 data, FP32 accumulation (7.0 on)"),
    G("gemm_bf16_flops", JF_DOUBLE, gemm_flops[BP_BF16], BG_GEMM + BP_BF16,
      "cuBLASLt GEMM, BF16 data, FP32 accumulation (8.0 on)"),
    G("gemm_fp8_flops", JF_DOUBLE, gemm_flops[BP_FP8], BG_GEMM + BP_FP8,
      "cuBLASLt GEMM, FP8 E4M3 inputs, BF16 output (8.9 on)"),
    G("gemm_n", JF_U32, gemm_n, BG_GEMM_N,
      "the GEMMs' size n (n x n times n x n), bounded by the memory share"),
    G("gemm_note", JF_STR, gemm_note, -1,
      "why cuBLASLt, or a precision the GPU supports, was not measured"),
    G("sustained_first_flops", JF_DOUBLE, sustained_first_flops, BG_SUSTAINED,
      "FMA rate over the first tenth of the sustained load"),
    G("sustained_last_flops", JF_DOUBLE, sustained_last_flops, BG_SUSTAINED,
      "FMA rate over the last tenth of the sustained load"),
    G("sustained_s", JF_DOUBLE, sustained_s, BG_SUSTAINED, "device seconds of sustained load"),
    G("sustained_flops", JF_DOUBLE, sustained_flops, BG_SUSTAINED,
      "FMA rate over the whole sustained load, which runs on every selected GPU at once"),
    G("load_samples", JF_U32, load_samples, BG_LOAD_SAMPLES,
      "NVML readings taken by the parent during the load (one every 150 ms)"),
    G("load_clock_sm_min_mhz", JF_U32, load_clock_sm_min_mhz, BG_LOAD_CLOCK_SM,
      "lowest SM clock read during the load (nvmlDeviceGetClockInfo SM)"),
    G("load_clock_sm_max_mhz", JF_U32, load_clock_sm_max_mhz, BG_LOAD_CLOCK_SM,
      "highest SM clock read during the load"),
    G("load_clock_mem_min_mhz", JF_U32, load_clock_mem_min_mhz, BG_LOAD_CLOCK_MEM,
      "lowest memory clock read during the load (nvmlDeviceGetClockInfo MEM)"),
    G("load_clock_mem_max_mhz", JF_U32, load_clock_mem_max_mhz, BG_LOAD_CLOCK_MEM,
      "highest memory clock read during the load"),
    G("load_temp_max_c", JF_U32, load_temp_max_c, BG_LOAD_TEMP,
      "highest GPU temperature read during the load (nvmlDeviceGetTemperature)"),
    G("load_power_max_mw", JF_U32, load_power_max_mw, BG_LOAD_POWER,
      "highest power draw read during the load (nvmlDeviceGetPowerUsage)"),
    G("load_power_mean_mw", JF_U32, load_power_mean_mw, BG_LOAD_POWER,
      "mean of the power draws read during the load"),
    G("load_clocks_event_reasons", JF_HEX64, load_clocks_event_reasons, BG_LOAD_REASONS,
      "every clock event reason seen during the load, OR-ed: the bits of "
      "clocks_event_reasons (0x4 sw_power_cap, 0x8 hw_slowdown, 0x20 sw_thermal, 0x40 "
      "hw_thermal, 0x80 hw_power_brake, ...)"),
    G("checksum", JF_HEX64, checksum, BG_CHECKSUM, "checksum of the triad's output, on the GPU"),
    G("checksum_ok", JF_BOOL, checksum_ok, BG_CHECKSUM,
      "the checksum equals the host's computation of the same triad"),
    G("pcie_gen", JF_U32, pcie_gen, BG_PCIE_LINK, "negotiated PCIe generation (NVML)"),
    G("pcie_width", JF_U32, pcie_width, BG_PCIE_LINK, "negotiated PCIe width (NVML)"),
    G("pcie_expected_bytes_per_s", JF_DOUBLE, pcie_expected_bytes_per_s, BG_PCIE_EXPECTED,
      "what a pinned copy should reach on that link, one direction"),
    G("mem_expected_bytes_per_s", JF_DOUBLE, mem_expected_bytes_per_s, BG_MEM_EXPECTED,
      "the model's memory bandwidth (data/gpu-specs.tsv)"),
    G("fp32_expected_flops", JF_DOUBLE, fp32_expected_flops, BG_FP32_EXPECTED,
      "the model's FP32 rate (data/gpu-specs.tsv)"),
    G("tf32_expected_flops", JF_DOUBLE, tensor_expected_flops[BP_TF32], BG_GEMM_EXPECTED + BP_TF32,
      "the model's dense TF32 Tensor Core rate (data/gpu-specs.tsv)"),
    G("fp16_expected_flops", JF_DOUBLE, tensor_expected_flops[BP_FP16], BG_GEMM_EXPECTED + BP_FP16,
      "the model's dense FP16 Tensor Core rate (data/gpu-specs.tsv)"),
    G("bf16_expected_flops", JF_DOUBLE, tensor_expected_flops[BP_BF16], BG_GEMM_EXPECTED + BP_BF16,
      "the model's dense BF16 Tensor Core rate (data/gpu-specs.tsv)"),
    G("fp8_expected_flops", JF_DOUBLE, tensor_expected_flops[BP_FP8], BG_GEMM_EXPECTED + BP_FP8,
      "the model's dense FP8 Tensor Core rate (data/gpu-specs.tsv)"),
    G("baseline_h2d_bytes_per_s", JF_DOUBLE, base_h2d_bytes_per_s, BG_BASE_H2D,
      "h2d_pinned_bytes_per_s of the saved baseline"),
    G("baseline_triad_bytes_per_s", JF_DOUBLE, base_triad_bytes_per_s, BG_BASE_TRIAD,
      "triad_bytes_per_s of the saved baseline"),
    G("baseline_fma_flops", JF_DOUBLE, base_fma_flops, BG_BASE_FMA,
      "fma_flops of the saved baseline"),
};
#undef G

const struct jtable bench_gpu_table = {
    "bench GPU",
    bench_gpu_fields,
    ARRAY_SIZE(bench_gpu_fields),
    JT_BITS,
    offsetof(struct bench_gpu, valid),
    NULL,
};

#define P(key, type, member, doc)                                                                  \
    {                                                                                              \
        key, type, offsetof(struct bench_pair, member), -1, 0, NULL, NULL, doc                     \
    }
static const struct jfield bench_pair_fields[] = {
    P("src", JF_U32, src, "the GPU copied from"),
    P("dst", JF_U32, dst, "the GPU copied to"),
    P("bytes_per_s", JF_DOUBLE, bytes_per_s, "cuMemcpyPeerAsync bandwidth"),
    P("latency_us", JF_DOUBLE, latency_us, "time of a 4-byte peer copy"),
    P("peer_access", JF_BOOL, peer_access,
      "cuDeviceCanAccessPeer: direct access (NVLink or "
      "PCIe peer-to-peer), else staged through the host"),
};
#undef P

const struct jtable bench_pair_table = {
    "bench pair", bench_pair_fields, ARRAY_SIZE(bench_pair_fields), JT_NONE, 0, NULL,
};

#define B(key, type, member, doc)                                                                  \
    {                                                                                              \
        key, type, offsetof(struct bench_info, member), -1, 0, NULL, NULL, doc                     \
    }
static const struct jfield bench_info_fields[] = {
    { "state", JF_ENUM, offsetof(struct bench_info, state), -1, 0, bench_state_names, NULL,
      "not_run, ok, failed, timeout (the CUDA worker passed its deadline), refused" },
    B("detail", JF_STR, detail, "why it failed, timed out or was refused"),
    B("hung_step", JF_STR, hung_step, "timeout: what the worker was doing"),
    B("mode", JF_STR, mode, "\"quick\" or \"full\""),
    B("library", JF_STR, library, "the CUDA driver library loaded"),
    B("cublaslt_library", JF_STR, cublaslt_library,
      "the cuBLASLt library loaded for the GEMMs; null: none (compute_method \"fma-kernel\")"),
    B("cublaslt_version", JF_U32, cublaslt_version,
      "cublasLtGetVersion (130100 = 13.1.0); 0: none loaded"),
    B("driver_version", JF_I32, driver_version, "cuDriverGetVersion (13000 = 13.0)"),
    B("elapsed_s", JF_DOUBLE, elapsed_s, "wall time of the bench"),
    B("measured_s", JF_DOUBLE, measured_s, "device time inside the measurements (events)"),
    B("load_elapsed_s", JF_DOUBLE, load_elapsed_s,
      "wall time of the sustained load, which runs on every selected GPU at once"),
    B("baseline", JF_STR, baseline, "the baseline file compared with"),
    B("load_note", JF_STR, load_note,
      "why NVML was not sampled during the load, or stopped being sampled"),
    B("gpus", JF_NONE, gpus, "per GPU (below)"),
    B("pairs", JF_NONE, pairs, "per ordered pair of GPUs (below)"),
};
#undef B

const struct jtable bench_info_table = {
    "bench", bench_info_fields, ARRAY_SIZE(bench_info_fields), JT_NONE, 0, NULL,
};

bool bench_gpu_valid(const struct bench_gpu *g, enum bench_gpu_slot slot)
{
    return (g->valid >> slot) & 1u;
}

void bench_gpu_set(struct bench_gpu *g, enum bench_gpu_slot slot)
{
    g->valid |= 1ull << slot;
}

void bench_info_free(struct bench_info *b)
{
    for (size_t i = 0; i < b->n_gpus; i++)
        jtable_free(&bench_gpu_table, &b->gpus[i]);
    free(b->gpus);
    free(b->pairs);
    jtable_free(&bench_info_table, b);
    memset(b, 0, sizeof(*b));
}

json_t *bench_info_to_json(const struct bench_info *b)
{
    json_t *j = json_object();

    jtable_write(&bench_info_table, b, j, 0);
    json_object_set_new(j, "gpus",
                        jlist_write_table(&bench_gpu_table, b->gpus, b->n_gpus, sizeof(*b->gpus)));
    json_object_set_new(
        j, "pairs", jlist_write_table(&bench_pair_table, b->pairs, b->n_pairs, sizeof(*b->pairs)));
    return j;
}

int bench_info_from_json(struct bench_info *b, const json_t *j, const char *path, struct jerr *err)
{
    void *gpus = NULL, *pairs = NULL;
    int r;

    if (jtable_read(&bench_info_table, b, j, path, 0, NULL, err) != 0)
        return -1;
    r = jlist_read_table(&bench_gpu_table, j, "gpus", path, sizeof(*b->gpus), &gpus, &b->n_gpus,
                         err);
    b->gpus = gpus;
    if (r < 0)
        return -1;
    r = jlist_read_table(&bench_pair_table, j, "pairs", path, sizeof(*b->pairs), &pairs,
                         &b->n_pairs, err);
    b->pairs = pairs;
    return r < 0 ? -1 : 0;
}
