#include "snapshot/snap-ib.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

const char *const ib_counter_files[IB_C__COUNT] = {
    [IB_C_LINK_DOWNED] = "link_downed",
    [IB_C_LINK_ERROR_RECOVERY] = "link_error_recovery",
    [IB_C_SYMBOL_ERROR] = "symbol_error",
    [IB_C_PORT_RCV_ERRORS] = "port_rcv_errors",
    [IB_C_PORT_XMIT_DISCARDS] = "port_xmit_discards",
    [IB_C_EXCESSIVE_BUFFER_OVERRUN] = "excessive_buffer_overrun_errors",
    [IB_C_LOCAL_LINK_INTEGRITY] = "local_link_integrity_errors",
    [IB_C_PORT_RCV_DATA] = "port_rcv_data",
    [IB_C_PORT_XMIT_DATA] = "port_xmit_data",
};

const char *const ib_link_layer_names[] = { "infiniband", "ethernet", NULL };

#define DEV  "/sys/class/infiniband/DEV/"
#define PORT DEV "ports/N/"
#define CNT  PORT "counters/"

#define F(key, type, member, slot, source, doc)                                                    \
    {                                                                                              \
        key, type, offsetof(struct ib_port, member), slot, 0, NULL, source, doc                    \
    }
#define C(c, key, file, doc) F(key, JF_U64, counter[c], IB_S_COUNTER + (c), CNT file, doc)
#define W(c, key, file, doc) F(key, JF_U64, window[c], IB_S_WINDOW + (c), CNT file, doc)

static const struct jfield port_fields[] = {
    { "device", JF_STR, offsetof(struct ib_port, device), -1, JF_ID, NULL, "/sys/class/infiniband",
      "RDMA device name (mlx5_0)" },
    { "port", JF_U32, offsetof(struct ib_port, port), -1, JF_ID, NULL, DEV "ports",
      "port number, from 1" },
    F("pci_address", JF_STR, pci_address, -1, DEV "device (link target)",
      "the device's PCI function, null when it is not a PCI device"),
    F("hca_type", JF_STR, hca_type, -1, DEV "hca_type",
      "adapter type (MT4129: ConnectX-7), null when the driver has none"),
    F("fw_ver", JF_STR, fw_ver, -1, DEV "fw_ver", "adapter firmware version"),
    F("node_desc", JF_STR, node_desc, -1, DEV "node_desc",
      "node description the subnet sees (host name and device)"),
    F("netdev", JF_STR, netdev, -1, DEV "device/net",
      "network interface of the device (ibp12s0, enp65s0f1), null when none"),
    { "link_layer", JF_ENUM, offsetof(struct ib_port, link_layer), IB_S_LINK_LAYER, 0,
      ib_link_layer_names, PORT "link_layer",
      "infiniband, or ethernet for RoCE (RDMA over Converged Ethernet)" },
    F("state", JF_U32, state, IB_S_STATE, PORT "state",
      "logical port state: 1 DOWN, 2 INIT, 3 ARMED, 4 ACTIVE (usable)"),
    F("state_name", JF_STR, state_name, IB_S_STATE, PORT "state",
      "the state as the kernel names it"),
    F("phys_state", JF_U32, phys_state, IB_S_PHYS_STATE, PORT "phys_state",
      "physical state: 2 Polling (no link), 3 Disabled, 4 training, 5 LinkUp, 6 error recovery"),
    F("phys_state_name", JF_STR, phys_state_name, IB_S_PHYS_STATE, PORT "phys_state",
      "the physical state as the kernel names it"),
    F("rate_gbps", JF_DOUBLE, rate_gbps, IB_S_RATE, PORT "rate",
      "signalling rate now, Gb/s (400 for \"400 Gb/sec (4X NDR)\")"),
    F("width", JF_U32, width, IB_S_RATE, PORT "rate", "lanes in use (4 for 4X)"),
    F("speed", JF_STR, speed, IB_S_RATE, PORT "rate",
      "per-lane speed name (SDR ... NDR, XDR); empty when the kernel gives none"),
    C(IB_C_LINK_DOWNED, "link_downed", "link_downed",
      "times the link went down (error recovery failed); saturates at 255"),
    C(IB_C_LINK_ERROR_RECOVERY, "link_error_recovery", "link_error_recovery",
      "link retrains that succeeded; saturates at 255"),
    C(IB_C_SYMBOL_ERROR, "symbol_error", "symbol_error",
      "minor link errors on any lane; saturates at 65535"),
    C(IB_C_PORT_RCV_ERRORS, "port_rcv_errors", "port_rcv_errors",
      "received packets with errors; saturates at 65535"),
    C(IB_C_PORT_XMIT_DISCARDS, "port_xmit_discards", "port_xmit_discards",
      "outbound packets discarded (port down or congestion)"),
    C(IB_C_EXCESSIVE_BUFFER_OVERRUN, "excessive_buffer_overrun_errors",
      "excessive_buffer_overrun_errors", "receive buffer overruns in a row"),
    C(IB_C_LOCAL_LINK_INTEGRITY, "local_link_integrity_errors", "local_link_integrity_errors",
      "times the local physical errors exceeded the link's threshold"),
    C(IB_C_PORT_RCV_DATA, "port_rcv_data", "port_rcv_data",
      "data received, in units of 4 bytes (all lanes)"),
    C(IB_C_PORT_XMIT_DATA, "port_xmit_data", "port_xmit_data",
      "data sent, in units of 4 bytes (all lanes)"),
    W(IB_C_LINK_DOWNED, "link_downed_window", "link_downed",
      "growth of link_downed over the window (needs a window)"),
    W(IB_C_LINK_ERROR_RECOVERY, "link_error_recovery_window", "link_error_recovery",
      "growth of link_error_recovery over the window"),
    W(IB_C_SYMBOL_ERROR, "symbol_error_window", "symbol_error",
      "growth of symbol_error over the window"),
    W(IB_C_PORT_RCV_ERRORS, "port_rcv_errors_window", "port_rcv_errors",
      "growth of port_rcv_errors over the window"),
    W(IB_C_PORT_XMIT_DISCARDS, "port_xmit_discards_window", "port_xmit_discards",
      "growth of port_xmit_discards over the window"),
    W(IB_C_EXCESSIVE_BUFFER_OVERRUN, "excessive_buffer_overrun_errors_window",
      "excessive_buffer_overrun_errors",
      "growth of excessive_buffer_overrun_errors over the window"),
    W(IB_C_LOCAL_LINK_INTEGRITY, "local_link_integrity_errors_window",
      "local_link_integrity_errors", "growth of local_link_integrity_errors over the window"),
    W(IB_C_PORT_RCV_DATA, "port_rcv_data_window", "port_rcv_data",
      "4-byte units received over the window"),
    W(IB_C_PORT_XMIT_DATA, "port_xmit_data_window", "port_xmit_data",
      "4-byte units sent over the window"),
};
#undef W
#undef C
#undef F

const struct jtable ib_port_table = {
    "InfiniBand port",
    port_fields,
    ARRAY_SIZE(port_fields),
    JT_BITS,
    offsetof(struct ib_port, valid),
    NULL,
};

static const struct jfield info_fields[] = {
    { "devices", JF_U32, offsetof(struct ib_info, devices), IB_I_PORTS, 0, NULL,
      "/sys/class/infiniband", "RDMA devices found (0 when the directory is absent)" },
    { "peermem_loaded", JF_BOOL, offsetof(struct ib_info, peermem_loaded), IB_I_MODULES, 0, NULL,
      "/proc/modules",
      "the GPUDirect RDMA module is loaded (nvidia_peermem, or the legacy nv_peer_mem)" },
    { "peermem_module", JF_STR, offsetof(struct ib_info, peermem_module), -1, 0, NULL,
      "/proc/modules", "which of the two is loaded, null when none" },
    { "ports", JF_NONE, 0, IB_I_PORTS, 0, NULL, "/sys/class/infiniband/DEV/ports",
      "every port of every RDMA device, by device then port" },
};

const struct jtable ib_info_table = {
    "InfiniBand", info_fields, ARRAY_SIZE(info_fields), JT_BITS, offsetof(struct ib_info, valid),
    NULL,
};

#undef CNT
#undef PORT
#undef DEV

bool ib_port_valid(const struct ib_port *p, int slot)
{
    return (p->valid >> slot) & 1u;
}

void ib_info_free(struct ib_info *ib)
{
    for (size_t i = 0; i < ib->n_ports; i++)
        jtable_free(&ib_port_table, &ib->ports[i]);
    free(ib->ports);
    jtable_free(&ib_info_table, ib);
    memset(ib, 0, sizeof(*ib));
}

json_t *ib_info_to_json(const struct ib_info *ib)
{
    json_t *j = json_object();

    jtable_write(&ib_info_table, ib, j, 0);
    if ((ib->valid >> IB_I_PORTS) & 1u)
        json_object_set_new(
            j, "ports",
            jlist_write_table(&ib_port_table, ib->ports, ib->n_ports, sizeof(*ib->ports)));
    return j;
}

int ib_info_from_json(struct ib_info *ib, const json_t *j, const char *path, struct jerr *err)
{
    void *items = NULL;
    int r;

    if (jtable_read(&ib_info_table, ib, j, path, 0, NULL, err) != 0)
        return -1;
    r = jlist_read_table(&ib_port_table, j, "ports", path, sizeof(*ib->ports), &items, &ib->n_ports,
                         err);
    ib->ports = items;
    if (r < 0)
        return -1;
    if (r > 0)
        ib->valid |= UINT64_C(1) << IB_I_PORTS;
    return 0;
}
