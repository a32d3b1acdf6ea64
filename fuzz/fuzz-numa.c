/*
 * The NUMA / NCCL / ACS / IOMMU parsers (collect/numa-parse.c): a config-space walk that ends and
 * stays in bounds, NCCL values that are printable and bounded, cpulists whose count matches the
 * mask, IOMMU fields in range.
 */
#include "collect/numa-parse.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_cstr(data, size);
    struct numa_iommu_cmdline cmd;
    struct numa_nccl_env env;
    uint64_t mask[4];
    uint16_t ctrl;
    int r, n;

    r = numa_parse_acs(data, size, &ctrl);
    FUZZ_ASSERT(r >= NUMA_ACS_NEEDS_ROOT && r <= NUMA_ACS_FOUND, "acs result %d", r);
    numa_parse_cmdline(text, &cmd);
    FUZZ_ASSERT(cmd.intel_iommu >= -1 && cmd.intel_iommu <= 1, "intel_iommu %d", cmd.intel_iommu);
    FUZZ_ASSERT(cmd.amd_iommu >= -1 && cmd.amd_iommu <= 1, "amd_iommu %d", cmd.amd_iommu);
    numa_parse_environ((const char *)data, size, &env);
    for (size_t i = 0; i < NUMA_NCCL_VARS; i++) {
        FUZZ_ASSERT(memchr(env.value[i], '\0', NUMA_NCCL_VALUE_SIZE) != NULL, "unterminated");
        for (const char *p = env.value[i]; *p; p++)
            FUZZ_ASSERT(*p >= 0x20 && *p < 0x7f, "unprintable NCCL value");
    }
    n = numa_parse_cpulist(text, mask, 4);
    if (n >= 0) {
        int bits = 0;
        for (size_t i = 0; i < 4; i++)
            bits += __builtin_popcountll(mask[i]);
        FUZZ_ASSERT(bits == n, "%d cpus counted, %d bits", n, bits);
    }
    free(text);
    return 0;
}
