/*
 * What a PCIe link can carry: the raw data rate of its negotiated generation and width after
 * line encoding, and the share of it a host copy can use (docs/bench.md, "Expected figures").
 * Shared by the bench (expectations) and the CUDA simulator (its copy rates), so the two agree.
 */
#ifndef GPUDOCTOR_BENCH_PCIE_H
#define GPUDOCTOR_BENCH_PCIE_H

#include <stdint.h>

/*
 * The share of the encoded link rate a pinned host copy is expected to reach: transaction
 * headers, flow control and DMA set-up take the rest. A planning figure of gpudoctor's, not an
 * NVIDIA specification (docs/bench.md says so).
 */
#define BENCH_PCIE_USABLE_SHARE 0.80

/*
 * Bytes per second one direction of a link of generation gen (1..6) and width lanes carries
 * after encoding: per lane Gen1 2.5 GT/s and Gen2 5 GT/s with 8b/10b, Gen3 8, Gen4 16, Gen5 32
 * GT/s with 128b/130b, Gen6 64 GT/s in 256-byte flits of which 242 carry data and link layer.
 * 0 when gen or width is unknown (0 or out of range).
 */
double bench_pcie_link_bps(uint32_t gen, uint32_t width);

#endif
