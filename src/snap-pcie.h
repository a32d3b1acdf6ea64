/*
 * The PCIe part of the snapshot, from sysfs: works with no driver loaded.
 * Filled by collect/pcie.c.
 */
#ifndef GPUDOCTOR_SNAP_PCIE_H
#define GPUDOCTOR_SNAP_PCIE_H

#include "jfield.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pcie_peer {
    char *address; /* "0000:19:00.0" */
    uint32_t vendor_id, device_id, class_code;
    char *kind; /* "network", "nvme", "gpu", "other" */
};

struct pcie_device {
    char *address; /* "0000:18:00.0" */
    uint32_t vendor_id, device_id, class_code;
    char *driver;                              /* bound kernel driver, NULL when none */
    double link_speed_gts, link_speed_max_gts; /* GT/s: 2.5 (gen1) ... 32 (gen5) */
    uint32_t link_gen, link_gen_max;
    uint32_t link_width, link_width_max;
    int32_t numa_node;
    char **upstream; /* bridge chain, nearest first */
    size_t n_upstream;
    struct pcie_peer *peers; /* other high-bandwidth devices under the same upstream switch */
    size_t n_peers;
    bool aer_valid;
    uint64_t aer_correctable, aer_nonfatal, aer_fatal;
    uint64_t valid;
};

struct pcie_info {
    struct pcie_device *gpus; /* every NVIDIA display-class device */
    size_t n_gpus;
    bool nvidia_module_loaded; /* /sys/module/nvidia exists */
};

void pcie_info_free(struct pcie_info *p);
json_t *pcie_info_to_json(const struct pcie_info *p);
int pcie_info_from_json(struct pcie_info *p, const json_t *j, const char *path, struct jerr *err);

#endif
