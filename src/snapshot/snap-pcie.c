#include "snapshot/snap-pcie.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const pcie_peer_kind_names[] = { "network", "nvme", "gpu", NULL };
const char *const pcie_acs_names[] = { "needs_root", "malformed", "absent", "present", NULL };

#define SYSFS "/sys/bus/pci/devices/ADDR/"

#define ROW(type, key, jtype, member, slot, flags, source, doc)                                    \
    {                                                                                              \
        key, jtype, offsetof(type, member), slot, flags, NULL, source, doc                         \
    }

/* The identity and link rows, the same for a device and a bridge. */
// clang-format off
#define IDENT_AND_LINK_FIELDS(type)                                                                \
    ROW(type, "address", JF_STR, address, -1, JF_ID, "/sys/bus/pci/devices",                       \
        "PCI address, domain:bus:device.function"),                                               \
    ROW(type, "vendor_id", JF_HEX32, vendor_id, -1, 0, SYSFS "vendor",                             \
        "PCI vendor id (0x10de NVIDIA)"),                                                          \
    ROW(type, "device_id", JF_HEX32, device_id, -1, 0, SYSFS "device", "PCI device id"),           \
    ROW(type, "class_code", JF_HEX32, class_code, -1, 0, SYSFS "class",                            \
        "PCI class, subclass and programming interface (0x0302xx: 3D controller)"),                \
    ROW(type, "link_speed_gts", JF_DOUBLE, link.speed_gts, PCIE_S_LINK_SPEED, 0,                   \
        SYSFS "current_link_speed",                                                                \
        "link speed now, GT/s per lane (GPUs slow idle links down: normal)"),                     \
    ROW(type, "link_speed_max_gts", JF_DOUBLE, link.speed_max_gts, PCIE_S_LINK_SPEED_MAX, 0,       \
        SYSFS "max_link_speed", "fastest speed the device supports, GT/s per lane"),              \
    ROW(type, "link_gen", JF_U32, link.gen, PCIE_S_LINK_GEN, 0, SYSFS "current_link_speed",        \
        "PCIe generation of the speed now (8 GT/s: 3, 16: 4)"),                                    \
    ROW(type, "link_gen_max", JF_U32, link.gen_max, PCIE_S_LINK_GEN_MAX, 0,                        \
        SYSFS "max_link_speed", "PCIe generation of the fastest speed"),                          \
    ROW(type, "link_width", JF_U32, link.width, PCIE_S_LINK_WIDTH, 0,                              \
        SYSFS "current_link_width", "lanes in use now"),                                          \
    ROW(type, "link_width_max", JF_U32, link.width_max, PCIE_S_LINK_WIDTH_MAX, 0,                  \
        SYSFS "max_link_width", "lanes the device supports")
// clang-format on

static const struct jfield bridge_fields[] = {
    IDENT_AND_LINK_FIELDS(struct pcie_bridge),
    { "acs", JF_ENUM, offsetof(struct pcie_bridge, acs), PCIE_B_ACS, 0, pcie_acs_names,
      SYSFS "config",
      "a switch's downstream port above a GPU (the one right above it, and each upper switch's "
      "in nested switches), or above a network card up to the lowest switch it shares with each "
      "GPU: its ACS capability is present, absent, or could not be read "
      "(needs_root: unprivileged reads see only the header; malformed)" },
    ROW(struct pcie_bridge, "acs_ctrl", JF_HEX32, acs_ctrl, PCIE_B_ACS_CTRL, 0, SYSFS "config",
        "the ACS control register: 0x4 P2P Request Redirect, 0x8 Completion Redirect, 0x20 "
        "Egress Control send peer-to-peer traffic up to the root complex"),
};

const struct jtable pcie_bridge_table = {
    "PCIe bridge",
    bridge_fields,
    ARRAY_SIZE(bridge_fields),
    JT_BITS,
    offsetof(struct pcie_bridge, valid),
    NULL,
};

#define P(key, jtype, member, source, doc)                                                         \
    ROW(struct pcie_peer, key, jtype, member, -1, 0, source, doc)
static const struct jfield peer_fields[] = {
    P("address", JF_STR, address, "/sys/bus/pci/devices", "PCI address of the peer"),
    P("vendor_id", JF_HEX32, vendor_id, SYSFS "vendor",
      "PCI vendor id (0x15b3 Mellanox/NVIDIA networking)"),
    P("device_id", JF_HEX32, device_id, SYSFS "device", "PCI device id"),
    P("class_code", JF_HEX32, class_code, SYSFS "class", "PCI class code"),
    { "kind", JF_ENUM, offsetof(struct pcie_peer, kind), -1, 0, pcie_peer_kind_names, SYSFS "class",
      "what shares the switch" },
    P("driver", JF_STR, driver, SYSFS "driver", "bound kernel driver, null when none"),
};
#undef P

const struct jtable pcie_peer_table = {
    "PCIe peer", peer_fields, ARRAY_SIZE(peer_fields), JT_NONE, 0, NULL,
};

#define N(key, jtype, member, slot, source, doc)                                                   \
    ROW(struct pcie_nic, key, jtype, member, slot, 0, source, doc)
static const struct jfield nic_fields[] = {
    { "address", JF_STR, offsetof(struct pcie_nic, address), -1, JF_ID, NULL,
      "/sys/bus/pci/devices", "PCI address of the network card" },
    N("vendor_id", JF_HEX32, vendor_id, -1, SYSFS "vendor",
      "PCI vendor id (0x15b3 Mellanox/NVIDIA networking)"),
    N("device_id", JF_HEX32, device_id, -1, SYSFS "device", "PCI device id"),
    N("class_code", JF_HEX32, class_code, -1, SYSFS "class",
      "PCI class code (0x0200xx Ethernet, 0x0207xx InfiniBand)"),
    N("driver", JF_STR, driver, -1, SYSFS "driver", "bound kernel driver, null when none"),
    N("name", JF_STR, name, PCIE_N_NAME, SYSFS "infiniband, " SYSFS "net",
      "its RDMA device (mlx5_0), else its network interface; null when it has neither"),
    { "upstream", JF_NONE, 0, PCIE_N_UPSTREAM, 0, NULL, "/sys/bus/pci/devices (link target)",
      "bridges above the card, nearest first; ACS read on its downstream ports up to the "
      "lowest switch it shares with each GPU" },
};
#undef N

const struct jtable pcie_nic_table = {
    "PCIe network card",
    nic_fields,
    ARRAY_SIZE(nic_fields),
    JT_BITS,
    offsetof(struct pcie_nic, valid),
    NULL,
};

#define F(key, type, member, slot, source, doc)                                                    \
    {                                                                                              \
        key, type, offsetof(struct pcie_device, member), slot, 0, NULL, source, doc                \
    }
static const struct jfield device_fields[] = {
    IDENT_AND_LINK_FIELDS(struct pcie_device),
    F("driver", JF_STR, driver, -1, SYSFS "driver",
      "bound kernel driver (nvidia, vfio-pci, nouveau), null when none is bound"),
    F("numa_node", JF_I32, numa_node, PCIE_S_NUMA, SYSFS "numa_node",
      "NUMA node the device is attached to, -1 when the platform gives none"),
    F("numa_cpus", JF_STR, numa_cpus, PCIE_S_NUMA_CPUS, "/sys/devices/system/node/node<N>/cpulist",
      "CPUs of that NUMA node, a cpulist such as \"0-31,64-95\" (\"\" when the node has none; "
      "null when the node is -1 or the file was not read)"),
    F("iommu_domain", JF_STR, iommu_domain, PCIE_S_IOMMU, SYSFS "iommu_group/type",
      "how the IOMMU treats the device's DMA, its group's default domain type: \"DMA\" or "
      "\"DMA-FQ\" (translated), \"identity\" (passthrough), \"unmanaged\", \"blocked\"; "
      "\"none\" when the device is in no IOMMU group (no IOMMU translates it); null when not "
      "read or the kernel says \"unknown\""),
    F("aer_correctable", JF_U64, aer_correctable, PCIE_S_AER, SYSFS "aer_dev_correctable",
      "corrected PCIe errors since boot (TOTAL_ERR_COR)"),
    F("aer_nonfatal", JF_U64, aer_nonfatal, PCIE_S_AER, SYSFS "aer_dev_nonfatal",
      "uncorrectable non-fatal PCIe errors since boot (TOTAL_ERR_NONFATAL)"),
    F("aer_fatal", JF_U64, aer_fatal, PCIE_S_AER, SYSFS "aer_dev_fatal",
      "fatal PCIe errors since boot (TOTAL_ERR_FATAL)"),
    F("aer_correctable_window", JF_U64, aer_correctable_window, PCIE_S_AER_WINDOW,
      SYSFS "aer_dev_correctable", "corrected PCIe errors during the window (needs a window)"),
    F("aer_nonfatal_window", JF_U64, aer_nonfatal_window, PCIE_S_AER_WINDOW,
      SYSFS "aer_dev_nonfatal", "non-fatal PCIe errors during the window"),
    F("aer_fatal_window", JF_U64, aer_fatal_window, PCIE_S_AER_WINDOW, SYSFS "aer_dev_fatal",
      "fatal PCIe errors during the window"),
    F("switch_address", JF_STR, switch_address, -1, "/sys/bus/pci/devices (link target)",
      "upstream port of the PCIe switch above the GPU, null when it hangs off a root port"),
    { "upstream", JF_NONE, 0, PCIE_S_UPSTREAM, 0, NULL, "/sys/bus/pci/devices (link target)",
      "bridges above the device, nearest first: switch ports, then the root port" },
    { "peers", JF_NONE, 0, PCIE_S_PEERS, 0, NULL, "/sys/bus/pci/devices",
      "NICs, NVMe drives and other GPUs under the same switch: they share its uplink" },
};
#undef F

const struct jtable pcie_device_table = {
    "PCIe device",
    device_fields,
    ARRAY_SIZE(device_fields),
    JT_BITS,
    offsetof(struct pcie_device, valid),
    NULL,
};

static const struct jfield info_fields[] = {
    { "nvidia_module_loaded", JF_BOOL, offsetof(struct pcie_info, nvidia_module_loaded),
      PCIE_I_MODULE, 0, NULL, "/sys/module/nvidia",
      "the nvidia kernel module is loaded (false with GPUs present: the driver is missing)" },
    { "devices_scanned", JF_U32, offsetof(struct pcie_info, devices_scanned), PCIE_I_GPUS, 0, NULL,
      "/sys/bus/pci/devices", "PCI functions looked at" },
    { "gpus", JF_NONE, 0, PCIE_I_GPUS, 0, NULL, "/sys/bus/pci/devices",
      "every NVIDIA display-class device (vendor 0x10de, class 0x03xxxx), driver or not" },
    { "iommu_present", JF_BOOL, offsetof(struct pcie_info, iommu_present), PCIE_I_IOMMU, 0, NULL,
      "/sys/class/iommu", "an IOMMU is active (the directory has an entry)" },
    { "iommu_pt", JF_BOOL, offsetof(struct pcie_info, iommu_pt), PCIE_I_CMDLINE, 0, NULL,
      "/proc/cmdline", "iommu=pt: DMA of host devices bypasses translation" },
    { "intel_iommu", JF_I32, offsetof(struct pcie_info, intel_iommu), PCIE_I_CMDLINE, 0, NULL,
      "/proc/cmdline", "intel_iommu=: -1 not given, 0 off, 1 on" },
    { "amd_iommu", JF_I32, offsetof(struct pcie_info, amd_iommu), PCIE_I_CMDLINE, 0, NULL,
      "/proc/cmdline", "amd_iommu=: -1 not given, 0 off, 1 on" },
    { "numa_nodes", JF_U32, offsetof(struct pcie_info, numa_nodes), PCIE_I_NODES, 0, NULL,
      "/sys/devices/system/node", "NUMA nodes of the machine (its node<N> entries)" },
    { "nics", JF_NONE, 0, PCIE_I_NICS, 0, NULL, "/sys/bus/pci/devices",
      "network cards (class 0x02xxxx) under a PCIe switch that a GPU is also under, at any "
      "level: GPUDirect RDMA between them crosses the card's switch ports" },
};

const struct jtable pcie_info_table = {
    "PCIe", info_fields, ARRAY_SIZE(info_fields), JT_BITS, offsetof(struct pcie_info, valid), NULL,
};

#undef IDENT_AND_LINK_FIELDS
#undef ROW
#undef SYSFS

bool pcie_device_valid(const struct pcie_device *d, int slot)
{
    return (d->valid >> slot) & 1u;
}

void pcie_device_free(struct pcie_device *d)
{
    jtable_free(&pcie_device_table, d);
    for (size_t i = 0; i < d->n_upstream; i++)
        jtable_free(&pcie_bridge_table, &d->upstream[i]);
    free(d->upstream);
    for (size_t i = 0; i < d->n_peers; i++)
        jtable_free(&pcie_peer_table, &d->peers[i]);
    free(d->peers);
    memset(d, 0, sizeof(*d));
}

static void nic_free(struct pcie_nic *n)
{
    jtable_free(&pcie_nic_table, n);
    for (size_t i = 0; i < n->n_upstream; i++)
        jtable_free(&pcie_bridge_table, &n->upstream[i]);
    free(n->upstream);
}

void pcie_info_free(struct pcie_info *p)
{
    for (size_t i = 0; i < p->n_gpus; i++)
        pcie_device_free(&p->gpus[i]);
    free(p->gpus);
    for (size_t i = 0; i < p->n_nics; i++)
        nic_free(&p->nics[i]);
    free(p->nics);
    memset(p, 0, sizeof(*p));
}

/* ---- writing ---- */

static json_t *device_to_json(const struct pcie_device *d)
{
    json_t *j = json_object();

    /* The list fields come last in the table, so the key order does not depend on validity. */
    jtable_write(&pcie_device_table, d, j, 0);
    if (pcie_device_valid(d, PCIE_S_UPSTREAM))
        json_object_set_new(j, "upstream",
                            jlist_write_table(&pcie_bridge_table, d->upstream, d->n_upstream,
                                              sizeof(*d->upstream)));
    if (pcie_device_valid(d, PCIE_S_PEERS))
        json_object_set_new(
            j, "peers",
            jlist_write_table(&pcie_peer_table, d->peers, d->n_peers, sizeof(*d->peers)));
    return j;
}

json_t *pcie_info_to_json(const struct pcie_info *p)
{
    json_t *j = json_object();

    jtable_write(&pcie_info_table, p, j, 0);
    if ((p->valid >> PCIE_I_GPUS) & 1u) {
        json_t *a = json_array();

        for (size_t i = 0; i < p->n_gpus; i++)
            json_array_append_new(a, device_to_json(&p->gpus[i]));
        json_object_set_new(j, "gpus", a);
    }
    if ((p->valid >> PCIE_I_NICS) & 1u) {
        json_t *a = json_array();

        for (size_t i = 0; i < p->n_nics; i++) {
            const struct pcie_nic *n = &p->nics[i];
            json_t *o = json_object();

            jtable_write(&pcie_nic_table, n, o, 0);
            if ((n->valid >> PCIE_N_UPSTREAM) & 1u)
                json_object_set_new(o, "upstream",
                                    jlist_write_table(&pcie_bridge_table, n->upstream,
                                                      n->n_upstream, sizeof(*n->upstream)));
            json_array_append_new(a, o);
        }
        json_object_set_new(j, "nics", a);
    }
    return j;
}

/* ---- reading ---- */

static int read_bridge(void *obj, const json_t *j, const char *path, struct jerr *err)
{
    return jtable_read(&pcie_bridge_table, obj, j, path, 0, NULL, err);
}

static int read_peer(void *obj, const json_t *j, const char *path, struct jerr *err)
{
    return jtable_read(&pcie_peer_table, obj, j, path, 0, NULL, err);
}

static int read_device(void *obj, const json_t *j, const char *path, struct jerr *err)
{
    struct pcie_device *d = obj;
    void *items = NULL;
    int r;

    if (jtable_read(&pcie_device_table, d, j, path, 0, NULL, err) != 0)
        return -1;
    r = jlist_read(j, "upstream", path, sizeof(*d->upstream), &items, &d->n_upstream, read_bridge,
                   err);
    d->upstream = items;
    if (r < 0)
        return -1;
    if (r > 0)
        d->valid |= UINT64_C(1) << PCIE_S_UPSTREAM;
    items = NULL;
    r = jlist_read(j, "peers", path, sizeof(*d->peers), &items, &d->n_peers, read_peer, err);
    d->peers = items;
    if (r < 0)
        return -1;
    if (r > 0)
        d->valid |= UINT64_C(1) << PCIE_S_PEERS;
    return 0;
}

static int read_nic(void *obj, const json_t *j, const char *path, struct jerr *err)
{
    struct pcie_nic *n = obj;
    void *items = NULL;
    int r;

    if (jtable_read(&pcie_nic_table, n, j, path, 0, NULL, err) != 0)
        return -1;
    r = jlist_read(j, "upstream", path, sizeof(*n->upstream), &items, &n->n_upstream, read_bridge,
                   err);
    n->upstream = items;
    if (r < 0)
        return -1;
    if (r > 0)
        n->valid |= UINT64_C(1) << PCIE_N_UPSTREAM;
    return 0;
}

int pcie_info_from_json(struct pcie_info *p, const json_t *j, const char *path, struct jerr *err)
{
    void *items = NULL;
    int r;

    if (jtable_read(&pcie_info_table, p, j, path, 0, NULL, err) != 0)
        return -1;
    r = jlist_read(j, "gpus", path, sizeof(*p->gpus), &items, &p->n_gpus, read_device, err);
    p->gpus = items;
    if (r < 0)
        return -1;
    if (r > 0)
        p->valid |= UINT64_C(1) << PCIE_I_GPUS;
    items = NULL;
    r = jlist_read(j, "nics", path, sizeof(*p->nics), &items, &p->n_nics, read_nic, err);
    p->nics = items;
    if (r < 0)
        return -1;
    if (r > 0)
        p->valid |= UINT64_C(1) << PCIE_I_NICS;
    return 0;
}
