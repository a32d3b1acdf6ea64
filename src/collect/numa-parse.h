/*
 * Pure parsers for NUMA placement, NCCL settings, PCIe ACS and IOMMU (issue 12): a PCI config
 * space's ACS control register, a kernel command line's IOMMU options, a process environment's
 * NCCL_* settings (only the ones that matter, nothing else kept) and a cpulist ("0-3,8"). Tested
 * on strings (tests/unit/test-numa.c) and fuzzed (fuzz/fuzz-numa.c); collectors do the reading.
 */
#ifndef GPUDOCTOR_NUMA_PARSE_H
#define GPUDOCTOR_NUMA_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ACS control bits (PCIe base spec, ACS Control Register). */
enum {
    NUMA_ACS_SV = 1u << 0, /* Source Validation */
    NUMA_ACS_TB = 1u << 1, /* Translation Blocking */
    NUMA_ACS_RR = 1u << 2, /* P2P Request Redirect */
    NUMA_ACS_CR = 1u << 3, /* P2P Completion Redirect */
    NUMA_ACS_UF = 1u << 4, /* Upstream Forwarding */
    NUMA_ACS_EC = 1u << 5, /* P2P Egress Control */
    NUMA_ACS_DT = 1u << 6, /* Direct Translated P2P */
};

enum numa_acs_result {
    NUMA_ACS_NEEDS_ROOT = -2, /* only the first 64 (or 256) bytes: unprivileged read */
    NUMA_ACS_MALFORMED = -1,  /* a loop, a pointer out of range, a short header */
    NUMA_ACS_ABSENT = 0,      /* the extended capability list holds no ACS */
    NUMA_ACS_FOUND = 1,       /* *ctrl holds the ACS control register */
};

/*
 * config: the bytes of /sys/bus/pci/devices/BDF/config (len of them). Walks the extended
 * capabilities from 0x100 (at most 4096 bytes, at most 1024 steps) for id 0x000D and sets *ctrl
 * to the 16-bit control register at cap+6.
 */
enum numa_acs_result numa_parse_acs(const uint8_t *config, size_t len, uint16_t *ctrl);

/* /proc/cmdline's IOMMU options. */
struct numa_iommu_cmdline {
    bool iommu_pt;   /* iommu=pt */
    bool iommu_off;  /* iommu=off */
    int intel_iommu; /* -1 not given, 0 off, 1 on */
    int amd_iommu;   /* -1 not given, 0 off, 1 on */
};
void numa_parse_cmdline(const char *text, struct numa_iommu_cmdline *out);

/* The NCCL variables kept; every other variable of an environment is dropped unread. */
#define NUMA_NCCL_VARS       10
#define NUMA_NCCL_VALUE_SIZE 64
extern const char *const numa_nccl_names[NUMA_NCCL_VARS];
struct numa_nccl_env {
    bool set[NUMA_NCCL_VARS];
    char value[NUMA_NCCL_VARS][NUMA_NCCL_VALUE_SIZE]; /* printable ASCII, truncated */
};
/* environ: NUL-separated NAME=VALUE entries, len bytes (not NUL-terminated). */
void numa_parse_environ(const char *environ, size_t len, struct numa_nccl_env *out);

/*
 * cpulist ("0-3,8,10-11\n"): sets bit i of mask (nwords 64-bit words) for each CPU i listed.
 * Returns the number of CPUs set, or -1 on malformed text or a CPU beyond the mask.
 */
int numa_parse_cpulist(const char *text, uint64_t *mask, size_t nwords);

/* Words of a mask for the largest machine gpudoctor judges (8192 CPUs, the kernel's NR_CPUS). */
#define NUMA_CPU_WORDS 128

#endif
