/*
 * Parsers for the PCI attributes of sysfs (/sys/bus/pci/devices/ADDR/...): link speed and
 * width, AER counters, and a device's place in the hierarchy from the path its
 * /sys/bus/pci/devices link points to. Pure functions on text, tested on strings.
 */
#ifndef GPUDOCTOR_SYSFS_PCI_H
#define GPUDOCTOR_SYSFS_PCI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SYSFS_PCI_ADDR_SIZE 16 /* "0000:00:00.0" and its NUL, with room for 5-digit domains */

#define PCI_VENDOR_NVIDIA    0x10deu
#define PCI_CLASS_DISPLAY    0x03u   /* base class: VGA, 3D controller, ... */
#define PCI_CLASS_NETWORK    0x02u   /* base class: Ethernet, InfiniBand, ... */
#define PCI_CLASS_NVME       0x0108u /* base class and subclass: NVM Express controller */
#define PCI_CLASS_PCI_BRIDGE 0x0604u
#define PCI_CLASS_BASE(c)    (((c) >> 16) & 0xffu)
#define PCI_CLASS_BASESUB(c) (((c) >> 8) & 0xffffu)

enum sysfs_speed {
    SYSFS_SPEED_OK,
    SYSFS_SPEED_UNKNOWN,   /* the kernel says "Unknown": link down, or a speed it cannot name */
    SYSFS_SPEED_MALFORMED, /* not a speed at all */
};

/*
 * current_link_speed / max_link_speed: "16.0 GT/s PCIe" (Linux 5.x and later), "8 GT/s" and
 * "2.5 GT/s" (older), "Unknown" or "Unknown speed". Sets *gts on SYSFS_SPEED_OK.
 */
enum sysfs_speed sysfs_pci_parse_speed(const char *text, double *gts);

/* The PCIe generation whose speed gts is (2.5 → 1, 5 → 2, 8 → 3, 16 → 4, 32 → 5, 64 → 6); 0 none.
 */
uint32_t sysfs_pci_speed_gen(double gts);

/* current_link_width / max_link_width: lanes, 1 to 32. 0 (link down) and garbage are errors. */
bool sysfs_pci_parse_width(const char *text, uint32_t *lanes);

/*
 * aer_dev_correctable / aer_dev_nonfatal / aer_dev_fatal: one "NAME COUNT" line per error type
 * and a total line (total_key: "TOTAL_ERR_COR", "TOTAL_ERR_NONFATAL", "TOTAL_ERR_FATAL").
 * Returns 0 with *total set, or -1 with *cause (the caller frees it).
 */
int sysfs_pci_parse_aer(const char *text, const char *total_key, uint64_t *total, char **cause);

/* Whether s is a PCI address as sysfs names devices: "0000:3b:00.0" (domain:bus:device.fn). */
bool sysfs_pci_is_address(const char *s);

/*
 * The PCI addresses along a device's sysfs path, root first, the device itself last:
 * "../../../devices/pci0000:00/0000:00:01.0/0000:01:00.0" gives 0000:00:01.0, 0000:01:00.0.
 * Components that are not PCI addresses (the host bridge pci0000:00, platform nodes) are left
 * out. Returns how many were found (at most max) or -1 when there are more than max.
 */
int sysfs_pci_path_chain(const char *path, char (*addrs)[SYSFS_PCI_ADDR_SIZE], size_t max);

#endif
