/* PCIe link rates: see bench-pcie.h. */
#include "bench/bench-pcie.h"

double bench_pcie_link_bps(uint32_t gen, uint32_t width)
{
    /* giga-transfers per second per lane, and the share of bits that are data */
    static const struct {
        double gts, encoding;
    } gens[] = {
        { 0, 0 },
        { 2.5, 8.0 / 10.0 },
        { 5.0, 8.0 / 10.0 },
        { 8.0, 128.0 / 130.0 },
        { 16.0, 128.0 / 130.0 },
        { 32.0, 128.0 / 130.0 },
        { 64.0, 242.0 / 256.0 },
    };

    if (gen == 0 || gen >= sizeof(gens) / sizeof(gens[0]) || width == 0 || width > 32)
        return 0;
    return gens[gen].gts * 1e9 * gens[gen].encoding / 8.0 * width;
}
