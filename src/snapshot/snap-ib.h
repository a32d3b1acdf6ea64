/*
 * The InfiniBand / RoCE part of the snapshot, from sysfs (/sys/class/infiniband): every port of
 * every RDMA device with its state, rate, link layer and error counters, their growth over the
 * window, and whether the GPUDirect RDMA module (nvidia_peermem) is loaded. Filled by
 * collect/ib.c; docs/fabric.md says what comes from where.
 */
#ifndef GPUDOCTOR_SNAP_IB_H
#define GPUDOCTOR_SNAP_IB_H

#include "snapshot/jfield.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The counters read from ports/N/counters/, in this order. */
enum ib_counter {
    IB_C_LINK_DOWNED,
    IB_C_LINK_ERROR_RECOVERY,
    IB_C_SYMBOL_ERROR,
    IB_C_PORT_RCV_ERRORS,
    IB_C_PORT_XMIT_DISCARDS,
    IB_C_EXCESSIVE_BUFFER_OVERRUN,
    IB_C_LOCAL_LINK_INTEGRITY,
    IB_C_PORT_RCV_DATA, /* in units of 4 bytes */
    IB_C_PORT_XMIT_DATA,
    IB_C__COUNT
};
/* The counter files' names ("link_downed", ...), indexed by enum ib_counter. */
extern const char *const ib_counter_files[IB_C__COUNT];

/* Validity bits of struct ib_port. */
enum ib_port_slot {
    IB_S_STATE,
    IB_S_PHYS_STATE,
    IB_S_RATE,
    IB_S_LINK_LAYER,
    IB_S_COUNTER,                             /* + enum ib_counter: the counter was read */
    IB_S_WINDOW = IB_S_COUNTER + IB_C__COUNT, /* + enum ib_counter: read again at the end */
    IB_S__END = IB_S_WINDOW + IB_C__COUNT,
};

/* Port states (IBTA; sysfs "4: ACTIVE") and physical states ("5: LinkUp"). */
#define IB_STATE_DOWN        1u
#define IB_STATE_INIT        2u
#define IB_STATE_ARMED       3u
#define IB_STATE_ACTIVE      4u
#define IB_PHYS_SLEEP        1u
#define IB_PHYS_POLLING      2u
#define IB_PHYS_DISABLED     3u
#define IB_PHYS_TRAINING     4u
#define IB_PHYS_LINKUP       5u
#define IB_PHYS_ERR_RECOVERY 6u

enum ib_link_layer {
    IB_LL_INFINIBAND,
    IB_LL_ETHERNET, /* RoCE */
};
extern const char *const ib_link_layer_names[]; /* "infiniband", "ethernet" */

/* One port of one RDMA device; the device's own attributes are repeated on each of its ports. */
struct ib_port {
    char *device;       /* "mlx5_0" */
    uint32_t port;      /* 1, 2, ... */
    char *pci_address;  /* the device's PCI function, NULL when not a PCI device */
    char *hca_type;     /* "MT4129", NULL when the driver has none */
    char *fw_ver;       /* "28.39.1002" */
    char *node_desc;    /* "gpu-node-17 mlx5_0" */
    char *netdev;       /* the network interface of the device ("ibp12s0", "eth2"), NULL none */
    int32_t link_layer; /* enum ib_link_layer */
    uint32_t state, phys_state;
    char *state_name, *phys_state_name; /* as the kernel names them: "ACTIVE", "LinkUp" */
    double rate_gbps;                   /* "400 Gb/sec (4X NDR)": 400 */
    uint32_t width;                     /* lanes: 4 */
    char *speed;                        /* "NDR" */
    uint64_t counter[IB_C__COUNT];      /* since the counters were last reset */
    uint64_t window[IB_C__COUNT];       /* growth over the sampling window */
    uint64_t valid;                     /* bits of enum ib_port_slot */
};

/* Validity bits of struct ib_info. */
enum ib_info_slot {
    IB_I_PORTS,   /* /sys/class/infiniband was read (absent: no device, the list is empty) */
    IB_I_MODULES, /* /proc/modules was read */
};

struct ib_info {
    uint32_t devices;     /* RDMA devices found */
    bool peermem_loaded;  /* nvidia_peermem (or the legacy nv_peer_mem) in /proc/modules */
    char *peermem_module; /* which one: "nvidia_peermem", "nv_peer_mem", NULL none */
    struct ib_port *ports;
    size_t n_ports;
    uint64_t valid; /* bits of enum ib_info_slot */
};

extern const struct jtable ib_info_table;
extern const struct jtable ib_port_table;

bool ib_port_valid(const struct ib_port *p, int slot);
void ib_info_free(struct ib_info *ib);
json_t *ib_info_to_json(const struct ib_info *ib);
int ib_info_from_json(struct ib_info *ib, const json_t *j, const char *path, struct jerr *err);

#endif
