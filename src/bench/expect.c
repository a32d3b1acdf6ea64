/*
 * What each measured GPU should deliver. The host link: the negotiated PCIe generation and width
 * NVML reports for the same PCI address, times the usable share (bench-pcie.h). The model's
 * peak memory bandwidth, FP32 rate and dense Tensor Core rates (TF32, FP16, BF16, FP8, for the
 * cuBLASLt GEMMs): data/gpu-specs.tsv's row for the name CUDA reports, when the table has one
 * and gives the figure (else unknown, and the rules compare with siblings).
 * These are peaks: the rules judge a measurement against a minimum share of them.
 */
#include "bench/bench-pcie.h"
#include "bench/bench.h"
#include "data/gpuspecs.h"

void bench_expect(struct bench_info *b, const struct snapshot *s)
{
    for (size_t i = 0; i < b->n_gpus; i++) {
        struct bench_gpu *bg = &b->gpus[i];
        const struct gpu_spec *spec = gpu_spec_find(bg->name);

        if (spec != NULL && spec->mem_bytes_per_s > 0) {
            bg->mem_expected_bytes_per_s = spec->mem_bytes_per_s;
            bench_gpu_set(bg, BG_MEM_EXPECTED);
        }
        if (spec != NULL && spec->fp32_flops > 0) {
            bg->fp32_expected_flops = spec->fp32_flops;
            bench_gpu_set(bg, BG_FP32_EXPECTED);
        }
        if (spec != NULL) {
            const double tensor[BP_N] = {
                [BP_TF32] = spec->tf32_flops,
                [BP_FP16] = spec->fp16_flops,
                [BP_BF16] = spec->bf16_flops,
                [BP_FP8] = spec->fp8_flops,
            };

            for (int p = 0; p < BP_N; p++) {
                if (tensor[p] > 0) {
                    bg->tensor_expected_flops[p] = tensor[p];
                    bench_gpu_set(bg, (enum bench_gpu_slot)(BG_GEMM_EXPECTED + p));
                }
            }
        }
        for (size_t k = 0; k < s->n_gpus; k++) {
            const struct gpu *g = &s->gpus[k];
            double link;

            if (!gpu_valid(g, GPU_S_PCI_BUS_ID) || !bench_same_pci(g->pci_bus_id, bg->pci_bus_id))
                continue;
            if (!gpu_valid(g, GPU_S_PCIE_GEN) || !gpu_valid(g, GPU_S_PCIE_WIDTH))
                break;
            bg->pcie_gen = g->pcie_gen;
            bg->pcie_width = g->pcie_width;
            bench_gpu_set(bg, BG_PCIE_LINK);
            link = bench_pcie_link_bps(g->pcie_gen, g->pcie_width);
            if (link > 0) {
                bg->pcie_expected_bytes_per_s = link * BENCH_PCIE_USABLE_SHARE;
                bench_gpu_set(bg, BG_PCIE_EXPECTED);
            }
            break;
        }
    }
}
