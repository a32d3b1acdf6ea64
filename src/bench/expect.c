/*
 * What each measured GPU should deliver. The host link: the negotiated PCIe generation and width
 * NVML reports for the same PCI address, times the usable share (bench-pcie.h). The model's
 * memory bandwidth and compute rate would come from a table of NVIDIA's figures; none is
 * compiled in yet, so those expectations stay unknown (docs/bench.md).
 */
#include "bench/bench-pcie.h"
#include "bench/bench.h"

void bench_expect(struct bench_info *b, const struct snapshot *s)
{
    for (size_t i = 0; i < b->n_gpus; i++) {
        struct bench_gpu *bg = &b->gpus[i];

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
