/*
 * The GPU part of the snapshot: what NVML says about the system and each GPU.
 * Values are in base units with the unit in the name; each field has a validity slot holding
 * the NVML return code of the call that filled it (0 = valid). Filled by collect/nvml.c,
 * and read by the simulator as its scenario, so a capture can be replayed.
 */
#ifndef GPUDOCTOR_SNAP_GPU_H
#define GPUDOCTOR_SNAP_GPU_H

#include "snapshot/jfield.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Validity slots of struct gpu, one per field (and per list). */
enum gpu_slot {
    GPU_S_NAME,
    GPU_S_UUID,
    GPU_S_SERIAL,
    GPU_S_VBIOS,
    GPU_S_BRAND,       /* nvmlDeviceGetBrand */
    GPU_S_ARCH,        /* nvmlDeviceGetArchitecture */
    GPU_S_PART_NUMBER, /* nvmlDeviceGetBoardPartNumber */
    GPU_S_PCI_BUS_ID,
    GPU_S_PCI_DEVICE_ID,
    GPU_S_PCI_SUBSYSTEM_ID,
    GPU_S_MINOR,
    GPU_S_CC_MAJOR,
    GPU_S_CC_MINOR,
    GPU_S_MEM_TOTAL,
    GPU_S_MEM_RESERVED,
    GPU_S_MEM_USED,
    GPU_S_MEM_FREE,
    GPU_S_BAR1_TOTAL,
    GPU_S_BAR1_USED,
    GPU_S_UTIL_GPU,
    GPU_S_UTIL_MEM,
    GPU_S_UTIL_ENC,
    GPU_S_UTIL_DEC,
    GPU_S_TEMP,
    GPU_S_TEMP_SLOWDOWN,
    GPU_S_TEMP_SHUTDOWN,
    GPU_S_TEMP_GPU_MAX,
    GPU_S_TEMP_MEM_MAX,
    GPU_S_POWER,
    GPU_S_POWER_LIMIT,
    GPU_S_POWER_DEFAULT_LIMIT,
    GPU_S_POWER_ENFORCED_LIMIT,
    GPU_S_POWER_MIN_LIMIT,
    GPU_S_POWER_MAX_LIMIT,
    GPU_S_ENERGY,
    GPU_S_CLOCK_GRAPHICS,
    GPU_S_CLOCK_SM,
    GPU_S_CLOCK_MEM,
    GPU_S_CLOCK_VIDEO,
    GPU_S_CLOCK_GRAPHICS_MAX,
    GPU_S_CLOCK_SM_MAX,
    GPU_S_CLOCK_MEM_MAX,
    GPU_S_CLOCK_SM_APP,
    GPU_S_CLOCK_SM_APP_DEFAULT,
    GPU_S_CLOCK_MEM_APP,
    GPU_S_CLOCK_MEM_APP_DEFAULT,
    GPU_S_EVENT_REASONS,
    GPU_S_EVENT_REASONS_SUPPORTED,
    GPU_S_PSTATE,
    GPU_S_FAN,
    GPU_S_PERSISTENCE,
    GPU_S_ACCOUNTING, /* nvmlDeviceGetAccountingMode */
    GPU_S_COMPUTE_MODE,
    GPU_S_MIG_MODE,
    GPU_S_MIG_MODE_PENDING,
    GPU_S_MIG_DEVICES,
    GPU_S_DISPLAY_MODE,
    GPU_S_DISPLAY_ACTIVE,
    GPU_S_ECC_MODE,
    GPU_S_ECC_MODE_PENDING,
    GPU_S_ECC_VOL_CORR,
    GPU_S_ECC_VOL_UNCORR,
    GPU_S_ECC_AGG_CORR,
    GPU_S_ECC_AGG_UNCORR,
    GPU_S_RETIRED_SBE,
    GPU_S_RETIRED_DBE,
    GPU_S_RETIRED_PENDING,
    GPU_S_REMAP_CORR,
    GPU_S_REMAP_UNCORR,
    GPU_S_REMAP_PENDING,
    GPU_S_REMAP_FAILURE,
    GPU_S_RECOVERY, /* field NVML_FI_DEV_GET_GPU_RECOVERY_ACTION */
    GPU_S_PCIE_GEN,
    GPU_S_PCIE_GEN_MAX,
    GPU_S_PCIE_GEN_GPU_MAX,
    GPU_S_PCIE_WIDTH,
    GPU_S_PCIE_WIDTH_MAX,
    GPU_S_PCIE_TX,
    GPU_S_PCIE_RX,
    GPU_S_PCIE_REPLAY,
    GPU_S_PROCESSES,    /* the running-process lists */
    GPU_S_PROCESS_UTIL, /* nvmlDeviceGetProcessUtilization */
    GPU_S_NVLINK,       /* the NVLink list: nvmlDeviceGetNvLinkState of the links */
    GPU_S_FABRIC,       /* nvmlDeviceGetGpuFabricInfoV (or the unversioned fallback) */
    GPU_S_PEERS,        /* the peer list: the other GPUs, as this one reaches them */
    GPU_S__COUNT
};

/* Which lists a process appeared in. */
#define GPU_PROC_COMPUTE  0x1u
#define GPU_PROC_GRAPHICS 0x2u
#define GPU_PROC_MPS      0x4u

enum gpu_proc_slot {
    GPU_PROC_S_USED, /* used_bytes: NVML_VALUE_NOT_AVAILABLE leaves it invalid */
    GPU_PROC_S_INSTANCE,
    GPU_PROC_S_UTIL, /* sm/mem/enc/dec utilisation sampled by the driver */
};

/* One process NVML lists on a GPU. */
struct gpu_proc {
    uint32_t pid; /* as NVML reports it: a host PID */
    uint32_t type_mask;
    uint64_t used_bytes;
    uint32_t gpu_instance_id, compute_instance_id; /* MIG; invalid when not MIG */
    uint32_t sm_util_pct, mem_util_pct, enc_util_pct, dec_util_pct;
    uint64_t valid;
};

/* Status slots of one NVLink: 0 valid, else the NVML return code of that value. */
enum gpu_nvlink_slot {
    NVL_S_ACTIVE,      /* nvmlDeviceGetNvLinkState */
    NVL_S_VERSION,     /* nvmlDeviceGetNvLinkVersion */
    NVL_S_REMOTE_BUS,  /* nvmlDeviceGetNvLinkRemotePciInfo_v2 */
    NVL_S_REMOTE_TYPE, /* nvmlDeviceGetNvLinkRemoteDeviceType */
    NVL_S_CRC,         /* field NVML_FI_DEV_NVLINK_ERROR_DL_CRC, scopeId = link */
    NVL_S_REPLAY,      /* field NVML_FI_DEV_NVLINK_ERROR_DL_REPLAY */
    NVL_S_RECOVERY,    /* field NVML_FI_DEV_NVLINK_ERROR_DL_RECOVERY */
    NVL_S_TX,          /* field NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, scopeId = link */
    NVL_S_RX,          /* field NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX */
    NVL_S__COUNT
};

/* What is at the other end of a link (nvmlIntNvLinkDeviceType_t, renumbered). */
enum gpu_nvlink_remote { NVL_REMOTE_GPU, NVL_REMOTE_IBMNPU, NVL_REMOTE_SWITCH, NVL_REMOTE_UNKNOWN };

/* One NVLink of a GPU that NVML answered for (a link it has). */
struct gpu_nvlink {
    uint32_t link; /* 0 .. NVML_NVLINK_MAX_LINKS - 1 */
    bool active;
    uint32_t version;         /* nvmlNvlinkVersion_t: 4 = 3.0, 6 = 4.0, 7 = 5.0 */
    char *remote_pci_bus_id;  /* "00000000:07:00.0" of the remote end, owned */
    int32_t remote_type;      /* enum gpu_nvlink_remote */
    uint64_t crc_errors;      /* data link CRC errors since the driver loaded */
    uint64_t replay_errors;   /* data link replays */
    uint64_t recovery_errors; /* link recoveries */
    uint64_t tx_kib, rx_kib;  /* data sent and received since the driver loaded, KiB */
    int32_t rc[NVL_S__COUNT];
};

/* Status slots of one peer (another GPU): 0 valid, else the NVML return code of that value. */
enum gpu_peer_slot {
    PEER_S_TOPOLOGY,   /* nvmlDeviceGetTopologyCommonAncestor */
    PEER_S_P2P_READ,   /* nvmlDeviceGetP2PStatus(NVML_P2P_CAPS_INDEX_READ) */
    PEER_S_P2P_NVLINK, /* nvmlDeviceGetP2PStatus(NVML_P2P_CAPS_INDEX_NVLINK) */
    PEER_S__COUNT
};

/* The closest common ancestor of two GPUs (nvmlGpuTopologyLevel_t, renumbered; the names are
 * nvidia-smi topo -m's), and one for a value the header does not name. */
enum gpu_topology {
    GPU_TOPO_INTERNAL,   /* the same board */
    GPU_TOPO_SINGLE,     /* PIX: one PCIe switch */
    GPU_TOPO_MULTIPLE,   /* PXB: several PCIe switches, no host bridge */
    GPU_TOPO_HOSTBRIDGE, /* PHB: the CPU's PCIe host bridge */
    GPU_TOPO_NODE,       /* NODE: host bridges of one NUMA node */
    GPU_TOPO_SYSTEM,     /* SYS: the interconnect between NUMA nodes */
    GPU_TOPO_UNKNOWN,
};

/* What P2P between two GPUs is (nvmlGpuP2PStatus_t, in the header's order). */
enum gpu_p2p {
    GPU_P2P_OK,
    GPU_P2P_CHIPSET_NOT_SUPPORTED,
    GPU_P2P_GPU_NOT_SUPPORTED,
    GPU_P2P_TOPOLOGY_NOT_SUPPORTED,
    GPU_P2P_DISABLED_BY_REGKEY,
    GPU_P2P_NOT_SUPPORTED,
    GPU_P2P_UNKNOWN,
};

/* The most peers a GPU lists (NVML_QUERY_MAX_GPUS - 1). */
#define GPU_MAX_PEERS 63

/* Another GPU as this one reaches it: through what, and whether peer-to-peer works. */
struct gpu_peer {
    uint32_t gpu;       /* the other GPU's index */
    int32_t topology;   /* enum gpu_topology */
    int32_t p2p_read;   /* enum gpu_p2p */
    int32_t p2p_nvlink; /* enum gpu_p2p */
    int32_t rc[PEER_S__COUNT];
};

/* Fabric probe states (NVML_GPU_FABRIC_STATE_*), and one for a value the header does not name. */
enum gpu_fabric_state {
    GPU_FABRIC_NOT_SUPPORTED,
    GPU_FABRIC_NOT_STARTED,
    GPU_FABRIC_IN_PROGRESS,
    GPU_FABRIC_COMPLETED,
    GPU_FABRIC_UNKNOWN,
};

enum gpu_fabric_slot { FAB_S_INFO, FAB_S_HEALTH };

/* The GPU's registration with the NVLink fabric (Fabric Manager / NVSwitch systems). */
struct gpu_fabric {
    int32_t state;  /* enum gpu_fabric_state */
    int32_t status; /* nvmlReturn_t of the probe: meaningful when state is completed */
    uint32_t clique_id;
    char *cluster_uuid;   /* 16 bytes as 8-4-4-4-12 hex, owned */
    uint32_t health_mask; /* NVML_GPU_FABRIC_HEALTH_MASK_* fields (v2 and later) */
    uint64_t valid;       /* bits of enum gpu_fabric_slot */
};

/* nvmlDeviceArchitecture_t, renumbered (the header's values have gaps); names: gpu_arch_names. */
enum gpu_arch {
    GPU_ARCH_KEPLER,
    GPU_ARCH_MAXWELL,
    GPU_ARCH_PASCAL,
    GPU_ARCH_VOLTA,
    GPU_ARCH_TURING,
    GPU_ARCH_AMPERE,
    GPU_ARCH_ADA,
    GPU_ARCH_HOPPER,
    GPU_ARCH_BLACKWELL,
    GPU_ARCH_RUBIN,
    GPU_ARCH_UNKNOWN, /* NVML_DEVICE_ARCH_UNKNOWN, or a value this build does not name */
};

/* What the driver says the GPU needs (nvmlDeviceGpuRecoveryAction_t, in the header's order). */
enum gpu_recovery {
    GPU_RECOVERY_NONE,
    GPU_RECOVERY_GPU_RESET,
    GPU_RECOVERY_NODE_REBOOT,
    GPU_RECOVERY_DRAIN_P2P,
    GPU_RECOVERY_DRAIN_AND_RESET,
    GPU_RECOVERY_RECOVER_IMEX_DOMAIN,
};

struct gpu {
    uint32_t index; /* NVML index */
    /* Imported evidence only: index is the GPU's place among the blocks of a partial nvidia-smi
     * -q (one GPU's, or some of them), not NVML's index, which the evidence does not give. */
    bool index_by_order;
    char *name, *uuid, *serial, *vbios_version;
    int32_t brand;           /* nvmlBrandType_t: gpu_brand_names */
    int32_t architecture;    /* enum gpu_arch */
    char *board_part_number; /* "699-2G520-0200-000" */
    char *pci_bus_id;        /* "00000000:18:00.0" as NVML writes it */
    uint32_t pci_device_id, pci_subsystem_id;
    uint32_t minor_number; /* /dev/nvidiaN */
    int32_t cc_major, cc_minor;

    uint64_t mem_total_bytes, mem_reserved_bytes, mem_used_bytes, mem_free_bytes;
    uint64_t bar1_total_bytes, bar1_used_bytes;
    uint32_t util_gpu_pct, util_mem_pct, util_enc_pct, util_dec_pct;

    uint32_t temp_c, temp_slowdown_c, temp_shutdown_c, temp_gpu_max_c, temp_mem_max_c;
    uint32_t power_mw, power_limit_mw, power_default_limit_mw, power_enforced_limit_mw;
    uint32_t power_min_limit_mw, power_max_limit_mw;
    uint64_t energy_mj;

    uint32_t clock_graphics_mhz, clock_sm_mhz, clock_mem_mhz, clock_video_mhz;
    uint32_t clock_graphics_max_mhz, clock_sm_max_mhz, clock_mem_max_mhz;
    uint32_t clock_sm_app_mhz, clock_sm_app_default_mhz, clock_mem_app_mhz,
        clock_mem_app_default_mhz;
    uint64_t clocks_event_reasons, clocks_event_reasons_supported; /* NVML_CLOCKS_EVENT_* */
    int32_t pstate;                                                /* 0..15, 32 unknown */
    uint32_t fan_speed_pct;

    bool persistence_mode;
    bool accounting_mode; /* per-process accounting (nvidia-smi -am) */
    int32_t compute_mode; /* NVML_COMPUTEMODE_* */
    bool mig_mode, mig_mode_pending;
    uint32_t mig_devices; /* MIG devices (instances) that exist now */
    bool display_mode, display_active;

    bool ecc_mode, ecc_mode_pending;
    uint64_t ecc_volatile_corrected, ecc_volatile_uncorrected;
    uint64_t ecc_aggregate_corrected, ecc_aggregate_uncorrected;
    uint32_t retired_pages_sbe, retired_pages_dbe;
    bool retired_pages_pending;
    uint32_t remapped_rows_correctable, remapped_rows_uncorrectable;
    bool remapped_rows_pending, remapped_rows_failure;
    int32_t recovery_action; /* enum gpu_recovery: what the driver asks for */

    uint32_t pcie_gen, pcie_gen_max, pcie_gen_gpu_max, pcie_width, pcie_width_max;
    uint64_t pcie_tx_bytes_per_s, pcie_rx_bytes_per_s;
    uint32_t pcie_replay_count;

    int32_t handle_rc; /* nvmlDeviceGetHandleByIndex: when not 0, nothing else is known */
    int32_t rc[GPU_S__COUNT];

    struct gpu_proc *procs;
    size_t n_procs;

    struct gpu_nvlink *nvlinks; /* valid with GPU_S_NVLINK; only links the GPU has */
    size_t n_nvlinks;
    struct gpu_fabric fabric; /* valid with GPU_S_FABRIC */
    struct gpu_peer *peers;   /* valid with GPU_S_PEERS; every other GPU NVML answered for */
    size_t n_peers;
};

/* What NVML says of the system, and how talking to it went. */
struct nvml_system {
    bool attempted;        /* false when --from a snapshot without NVML, or NVML skipped */
    char *library;         /* path of the library loaded, or the name tried */
    char *library_version; /* from the loaded file's name (libnvidia-ml.so.550.54.15) */
    int32_t load_error;    /* 0, or NVML_ERROR_LIBRARY_NOT_FOUND when dlopen failed */
    char *load_detail;     /* dlerror() text */
    int32_t init_rc;       /* nvmlInit_v2 */
    char *init_error;      /* nvmlErrorString(init_rc) */
    char *driver_version, *nvml_version;
    int32_t cuda_driver_version; /* 12040 = 12.4 */
    int32_t driver_version_rc, nvml_version_rc, cuda_driver_version_rc;
    uint32_t device_count;
    int32_t device_count_rc;
    char *hung_call;         /* the NVML call that did not answer before the deadline */
    int64_t elapsed_us;      /* time the collection took */
    uint32_t process_stride; /* bytes per record of the process list used (16, 24 or 32) */
};

extern const struct jtable gpu_table;
extern const struct jtable gpu_proc_table;
extern const struct jtable nvml_system_table;
extern const struct jtable gpu_nvlink_table;
extern const struct jtable gpu_fabric_table;
extern const struct jtable gpu_peer_table;
extern const char *const gpu_topology_names[];
extern const char *const gpu_topology_short[];
extern const char *const gpu_p2p_names[];
extern const char *const gpu_nvlink_remote_names[];
extern const char *const gpu_fabric_state_names[];
extern const char *const compute_mode_names[];
extern const char *const gpu_brand_names[];
extern const char *const gpu_arch_names[];
extern const char *const gpu_recovery_names[];
/* enum gpu_arch of an nvmlDeviceArchitecture_t value (GPU_ARCH_UNKNOWN for one without a name),
 * and back (NVML_DEVICE_ARCH_UNKNOWN for GPU_ARCH_UNKNOWN). */
int32_t gpu_arch_of_nvml(uint32_t arch);
uint32_t gpu_arch_nvml(int32_t arch);

void gpu_init(struct gpu *g, uint32_t index);
void gpu_free(struct gpu *g);
void gpu_copy(struct gpu *dst, const struct gpu *src);
bool gpu_valid(const struct gpu *g, enum gpu_slot slot);
/* Whether value slot of link l was read (the link list itself must be valid). */
bool gpu_nvlink_valid(const struct gpu_nvlink *l, enum gpu_nvlink_slot slot);
/*
 * How many of g's links are active, of those whose state was read; *unknown (when not NULL) is
 * set to how many were not. A list that was not read holds no link, so both are 0 then: the
 * caller tells "no NVLink" from "not read" by gpu_valid(g, GPU_S_NVLINK) and its status.
 */
size_t gpu_nvlinks_active(const struct gpu *g, size_t *unknown);
/* Growth of a counter read as a, then b; one that went backwards was reset, and counts from 0. */
uint64_t counter_growth(uint64_t a, uint64_t b);
/* Link number link of g, or NULL when g has no record of it. */
const struct gpu_nvlink *gpu_nvlink_find(const struct gpu *g, uint32_t link);
/*
 * The NVLink data a GPU moved from reading a to reading b, secs apart, in bytes per second, both
 * directions and every link together: the links whose sent and received counters both readings
 * have (a counter that went backwards was reset: counted from the reset). False when no link has
 * them (no NVLink, a driver or GPU without the counters, a or b NULL, secs not positive).
 */
bool gpu_nvlink_traffic(const struct gpu *a, const struct gpu *b, double secs, double *bytes_per_s);
/* A new link record: every status JF_RC_NOT_COLLECTED. */
void gpu_nvlink_init(struct gpu_nvlink *l, uint32_t link);
/* Frees the links of g and forgets them. */
void gpu_nvlinks_free(struct gpu *g);
/* Whether value slot of peer p was read (the peer list itself must be valid). */
bool gpu_peer_valid(const struct gpu_peer *p, enum gpu_peer_slot slot);
/* A new peer record for GPU index gpu: every status JF_RC_NOT_COLLECTED. */
void gpu_peer_init(struct gpu_peer *p, uint32_t gpu);
/* The peer record of GPU index other, or NULL. */
const struct gpu_peer *gpu_peer_of(const struct gpu *g, uint32_t other);
/* Sets a field's status: 0 valid, or the NVML return code that left it unknown. */
void gpu_set_rc(struct gpu *g, enum gpu_slot slot, int32_t rc);

void nvml_system_free(struct nvml_system *s);

json_t *gpu_to_json(const struct gpu *g, unsigned only_flags);
int gpu_from_json(struct gpu *g, const json_t *j, const char *path, int32_t missing_rc,
                  const char *const *extra_keys, struct jerr *err);
/*
 * The NVML helper's wire form of a GPU: gpu_to_json's object, with its links and peers as rows
 * (jtable_write_row) instead of objects; read back with missing_rc JF_RC_NOT_COLLECTED.
 */
json_t *gpu_to_wire(const struct gpu *g, unsigned only_flags);
int gpu_from_wire(struct gpu *g, const json_t *j, const char *path, struct jerr *err);
/*
 * A snapshot's GPU process pids must be possible process ids (1..PROC_PID_MAX): 0 or -1 in a fix
 * would name every process. The simulator's scenarios, which may hold any value NVML can return,
 * are not checked. Returns 0, or -1 with *err naming the pid.
 */
int gpu_pids_check(const struct gpu *g, const char *path, struct jerr *err);
json_t *nvml_system_to_json(const struct nvml_system *s);
int nvml_system_from_json(struct nvml_system *s, const json_t *j, const char *path,
                          struct jerr *err);

/* Clock event reason bits with their short names ("sw_thermal"), for renderers and metrics. */
struct clock_reason {
    uint64_t bit;
    const char *name;
    const char *label;
};
extern const struct clock_reason clock_reasons[];
extern const size_t n_clock_reasons;

#endif
