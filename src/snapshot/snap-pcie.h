/*
 * The PCIe part of the snapshot, from sysfs: works with no driver loaded, so a GPU the driver
 * cannot see is still found. Filled by collect/pcie.c; docs/pcie.md says what comes from where.
 */
#ifndef GPUDOCTOR_SNAP_PCIE_H
#define GPUDOCTOR_SNAP_PCIE_H

#include "snapshot/jfield.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Validity bits of the link fields (struct pcie_device and struct pcie_bridge). */
enum pcie_link_slot {
    PCIE_S_LINK_SPEED,
    PCIE_S_LINK_SPEED_MAX,
    PCIE_S_LINK_GEN, /* the speed is one a generation defines */
    PCIE_S_LINK_GEN_MAX,
    PCIE_S_LINK_WIDTH,
    PCIE_S_LINK_WIDTH_MAX,
};

/* Validity bits of struct pcie_device beyond the link. */
enum pcie_slot {
    PCIE_S_NUMA = PCIE_S_LINK_WIDTH_MAX + 1,
    PCIE_S_AER,        /* aer_dev_* counters read */
    PCIE_S_AER_WINDOW, /* the counters read again at the end of a window */
    PCIE_S_UPSTREAM,   /* the device's place in the hierarchy was resolved */
    PCIE_S_PEERS,      /* the devices under the same switch were looked for */
    PCIE_S_NUMA_CPUS,  /* numa_cpus: the node's cpulist was read */
    PCIE_S_IOMMU,      /* iommu_domain: the device's IOMMU group was looked at */
};

/* A PCIe link as the device at its lower end sees it. */
struct pcie_link {
    double speed_gts, speed_max_gts; /* GT/s per lane: 2.5 (gen1) ... 64 (gen6) */
    uint32_t gen, gen_max;
    uint32_t width, width_max; /* lanes */
};

/* Validity bits of struct pcie_bridge beyond the link. */
enum pcie_bridge_slot {
    PCIE_B_ACS = PCIE_S_LINK_WIDTH_MAX + 1, /* acs: its config space was read */
    PCIE_B_ACS_CTRL,                        /* acs_ctrl: the ACS capability was found */
};

/* What reading a bridge's ACS capability gave (numa_parse_acs's results, from 0). */
enum pcie_acs {
    PCIE_ACS_NEEDS_ROOT, /* only the config header could be read: ACS needs root */
    PCIE_ACS_MALFORMED,  /* the capability list is broken */
    PCIE_ACS_ABSENT,     /* the bridge has no ACS capability */
    PCIE_ACS_PRESENT,    /* acs_ctrl holds its control register */
};
extern const char *const pcie_acs_names[];

/* One bridge above a GPU: a root port or a switch port. */
struct pcie_bridge {
    char *address; /* "0000:17:00.0" */
    uint32_t vendor_id, device_id, class_code;
    struct pcie_link link; /* the bridge's own upstream link */
    int32_t acs;           /* enum pcie_acs; read for a switch's downstream ports above a GPU */
    uint32_t acs_ctrl;     /* the ACS control register (bits: docs/pcie.md) */
    uint64_t valid;        /* bits of enum pcie_link_slot and enum pcie_bridge_slot */
};

enum pcie_peer_kind {
    PCIE_PEER_NETWORK, /* class 0x02: Ethernet, InfiniBand */
    PCIE_PEER_NVME,    /* class 0x0108 */
    PCIE_PEER_GPU,     /* class 0x03, any vendor */
};
extern const char *const pcie_peer_kind_names[];

/* A high-bandwidth device that shares the GPU's upstream switch (and so its uplink). */
struct pcie_peer {
    char *address; /* "0000:19:00.0" */
    uint32_t vendor_id, device_id, class_code;
    int32_t kind; /* enum pcie_peer_kind */
    char *driver; /* bound kernel driver, NULL when none */
};

struct pcie_device {
    char *address; /* "0000:18:00.0" */
    uint32_t vendor_id, device_id, class_code;
    char *driver; /* bound kernel driver, NULL when none */
    struct pcie_link link;
    int32_t numa_node;  /* -1: the platform has no NUMA affinity for it */
    char *numa_cpus;    /* that node's CPUs, a cpulist ("0-31,64-95"); "" none */
    char *iommu_domain; /* its IOMMU group's default domain type ("DMA", "DMA-FQ", "identity",
                           ...), or "none": no IOMMU group, DMA is not translated */
    struct pcie_bridge *upstream; /* bridge chain, nearest first, root port last */
    size_t n_upstream;
    char *switch_address;    /* the switch upstream port the peers share, NULL when none */
    struct pcie_peer *peers; /* other high-bandwidth devices under the same upstream switch */
    size_t n_peers;
    uint64_t aer_correctable, aer_nonfatal, aer_fatal;                      /* since boot */
    uint64_t aer_correctable_window, aer_nonfatal_window, aer_fatal_window; /* over the window */
    uint64_t valid; /* bits of enum pcie_link_slot and enum pcie_slot */
};

/* Validity bits of struct pcie_info. */
enum pcie_info_slot {
    PCIE_I_MODULE,  /* /sys/module was looked at */
    PCIE_I_GPUS,    /* /sys/bus/pci/devices was read: the list of GPUs is complete */
    PCIE_I_IOMMU,   /* /sys/class/iommu was looked at */
    PCIE_I_CMDLINE, /* /proc/cmdline was read for IOMMU options */
    PCIE_I_NODES,   /* /sys/devices/system/node was read: numa_nodes */
    PCIE_I_NICS,    /* the network cards sharing a switch with a GPU were looked for */
};

/* Validity bits of struct pcie_nic. */
enum pcie_nic_slot {
    PCIE_N_NAME,     /* name: an RDMA device or network interface was found */
    PCIE_N_UPSTREAM, /* the card's place in the hierarchy was resolved */
};

/*
 * A network card under a PCIe switch that a GPU also sits under (at any level): GPUDirect RDMA
 * between them enters the switch through the card's downstream ports, whose ACS is read up to
 * the lowest switch it shares with each GPU.
 */
struct pcie_nic {
    char *address; /* "0000:05:00.0" */
    uint32_t vendor_id, device_id, class_code;
    char *driver;                 /* bound kernel driver, NULL when none */
    char *name;                   /* its RDMA device ("mlx5_0"), else its interface ("eth2") */
    struct pcie_bridge *upstream; /* bridge chain, nearest first, root port last */
    size_t n_upstream;
    uint64_t valid; /* bits of enum pcie_nic_slot */
};

struct pcie_info {
    bool nvidia_module_loaded; /* /sys/module/nvidia exists */
    uint32_t devices_scanned;  /* PCI functions looked at */
    struct pcie_device *gpus;  /* every NVIDIA display-class device */
    size_t n_gpus;
    bool iommu_present;    /* /sys/class/iommu has an entry: an IOMMU is active */
    bool iommu_pt;         /* iommu=pt on the kernel command line (passthrough for the host) */
    int32_t intel_iommu;   /* intel_iommu= on the command line: -1 not given, 0 off, 1 on */
    int32_t amd_iommu;     /* amd_iommu= on the command line: -1 not given, 0 off, 1 on */
    uint32_t numa_nodes;   /* NUMA nodes of the machine (node<N> entries) */
    struct pcie_nic *nics; /* network cards that share a switch with a GPU */
    size_t n_nics;
    uint64_t valid; /* bits of enum pcie_info_slot */
};

extern const struct jtable pcie_info_table;
extern const struct jtable pcie_device_table;
extern const struct jtable pcie_bridge_table;
extern const struct jtable pcie_peer_table;
extern const struct jtable pcie_nic_table;

bool pcie_device_valid(const struct pcie_device *d, int slot);

void pcie_device_free(struct pcie_device *d);
void pcie_info_free(struct pcie_info *p);
json_t *pcie_info_to_json(const struct pcie_info *p);
int pcie_info_from_json(struct pcie_info *p, const json_t *j, const char *path, struct jerr *err);

#endif
