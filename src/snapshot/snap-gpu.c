#include "snapshot/snap-gpu.h"
#include "nvml/nvml-abi.h"
#include "snapshot/snap-procs.h"
#include "util/i18n.h"
#include "util/xalloc.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const compute_mode_names[] = { "default", "exclusive_thread", "prohibited",
                                           "exclusive_process", NULL };
/* nvmlBrandType_t in the header's order, as its constants spell them, lower case. */
const char *const gpu_brand_names[] = {
    "unknown",    "quadro",       "tesla",      "nvs",         "grid",       "geforce",
    "titan",      "nvidia_vapps", "nvidia_vpc", "nvidia_vcs",  "nvidia_vws", "nvidia_cloud_gaming",
    "quadro_rtx", "nvidia_rtx",   "nvidia",     "geforce_rtx", "titan_rtx",  NULL
};
const char *const gpu_arch_names[] = { "kepler",    "maxwell", "pascal",  "volta",
                                       "turing",    "ampere",  "ada",     "hopper",
                                       "blackwell", "rubin",   "unknown", NULL };
const char *const gpu_recovery_names[] = { "none",      "gpu_reset",       "node_reboot",
                                           "drain_p2p", "drain_and_reset", "recover_imex_domain",
                                           NULL };

static const uint32_t nvml_archs[] = {
    [GPU_ARCH_KEPLER] = NVML_DEVICE_ARCH_KEPLER,
    [GPU_ARCH_MAXWELL] = NVML_DEVICE_ARCH_MAXWELL,
    [GPU_ARCH_PASCAL] = NVML_DEVICE_ARCH_PASCAL,
    [GPU_ARCH_VOLTA] = NVML_DEVICE_ARCH_VOLTA,
    [GPU_ARCH_TURING] = NVML_DEVICE_ARCH_TURING,
    [GPU_ARCH_AMPERE] = NVML_DEVICE_ARCH_AMPERE,
    [GPU_ARCH_ADA] = NVML_DEVICE_ARCH_ADA,
    [GPU_ARCH_HOPPER] = NVML_DEVICE_ARCH_HOPPER,
    [GPU_ARCH_BLACKWELL] = NVML_DEVICE_ARCH_BLACKWELL,
    [GPU_ARCH_RUBIN] = NVML_DEVICE_ARCH_RUBIN,
    [GPU_ARCH_UNKNOWN] = NVML_DEVICE_ARCH_UNKNOWN,
};

int32_t gpu_arch_of_nvml(uint32_t arch)
{
    for (size_t i = 0; i < ARRAY_SIZE(nvml_archs); i++) {
        if (nvml_archs[i] == arch)
            return (int32_t)i;
    }
    return GPU_ARCH_UNKNOWN;
}

uint32_t gpu_arch_nvml(int32_t arch)
{
    return arch >= 0 && (size_t)arch < ARRAY_SIZE(nvml_archs) ? nvml_archs[arch]
                                                              : NVML_DEVICE_ARCH_UNKNOWN;
}

#define D JF_DYNAMIC
#define F(key, type, member, slot, flags, source, doc)                                             \
    {                                                                                              \
        key, type, offsetof(struct gpu, member), slot, flags, NULL, source, doc                    \
    }

static const struct jfield gpu_fields[] = {
    { "index", JF_U32, offsetof(struct gpu, index), -1, JF_ID, NULL,
      "nvmlDeviceGetHandleByIndex_v2",
      "NVML index of the GPU (may differ from the CUDA device index)" },
    F("name", JF_STR, name, GPU_S_NAME, 0, "nvmlDeviceGetName", "product name"),
    F("uuid", JF_STR, uuid, GPU_S_UUID, 0, "nvmlDeviceGetUUID", "GPU UUID, \"GPU-...\""),
    F("serial", JF_STR, serial, GPU_S_SERIAL, 0, "nvmlDeviceGetSerial", "board serial number"),
    F("vbios_version", JF_STR, vbios_version, GPU_S_VBIOS, 0, "nvmlDeviceGetVbiosVersion",
      "VBIOS version"),
    { "brand", JF_ENUM, offsetof(struct gpu, brand), GPU_S_BRAND, 0, gpu_brand_names,
      "nvmlDeviceGetBrand",
      "product line: nvidia (data centre, from Hopper), tesla, geforce, nvidia_rtx, ... "
      "(nvmlBrandType_t, lower case; a number for one this build does not name)" },
    { "architecture", JF_ENUM, offsetof(struct gpu, architecture), GPU_S_ARCH, 0, gpu_arch_names,
      "nvmlDeviceGetArchitecture", "kepler ... ampere, ada, hopper, blackwell, rubin, unknown" },
    F("board_part_number", JF_STR, board_part_number, GPU_S_PART_NUMBER, 0,
      "nvmlDeviceGetBoardPartNumber",
      "the board's part number (NOT_SUPPORTED when the VBIOS "
      "does not fill it)"),
    F("pci_bus_id", JF_STR, pci_bus_id, GPU_S_PCI_BUS_ID, 0, "nvmlDeviceGetPciInfo_v3",
      "PCI address, \"00000000:18:00.0\""),
    F("pci_device_id", JF_HEX32, pci_device_id, GPU_S_PCI_DEVICE_ID, 0, "nvmlDeviceGetPciInfo_v3",
      "(PCI device id << 16) | vendor id"),
    F("pci_subsystem_id", JF_HEX32, pci_subsystem_id, GPU_S_PCI_SUBSYSTEM_ID, 0,
      "nvmlDeviceGetPciInfo_v3", "PCI subsystem id"),
    F("minor_number", JF_U32, minor_number, GPU_S_MINOR, 0, "nvmlDeviceGetMinorNumber",
      "N of the device file /dev/nvidiaN"),
    F("compute_capability_major", JF_I32, cc_major, GPU_S_CC_MAJOR, 0,
      "nvmlDeviceGetCudaComputeCapability", "CUDA compute capability, major"),
    F("compute_capability_minor", JF_I32, cc_minor, GPU_S_CC_MINOR, 0,
      "nvmlDeviceGetCudaComputeCapability", "CUDA compute capability, minor"),
    F("mem_total_bytes", JF_U64, mem_total_bytes, GPU_S_MEM_TOTAL, 0, "nvmlDeviceGetMemoryInfo_v2",
      "installed GPU memory"),
    F("mem_reserved_bytes", JF_U64, mem_reserved_bytes, GPU_S_MEM_RESERVED, 0,
      "nvmlDeviceGetMemoryInfo_v2", "memory reserved by the driver and firmware"),
    F("mem_used_bytes", JF_U64, mem_used_bytes, GPU_S_MEM_USED, D, "nvmlDeviceGetMemoryInfo_v2",
      "memory allocated by processes (v2 meaning: reserved memory not included)"),
    F("mem_free_bytes", JF_U64, mem_free_bytes, GPU_S_MEM_FREE, D, "nvmlDeviceGetMemoryInfo_v2",
      "memory free"),
    F("bar1_total_bytes", JF_U64, bar1_total_bytes, GPU_S_BAR1_TOTAL, 0,
      "nvmlDeviceGetBAR1MemoryInfo", "BAR1 aperture size"),
    F("bar1_used_bytes", JF_U64, bar1_used_bytes, GPU_S_BAR1_USED, D, "nvmlDeviceGetBAR1MemoryInfo",
      "BAR1 aperture in use"),
    F("util_gpu_pct", JF_U32, util_gpu_pct, GPU_S_UTIL_GPU, D, "nvmlDeviceGetUtilizationRates",
      "percent of the last sample period a kernel was running"),
    F("util_mem_pct", JF_U32, util_mem_pct, GPU_S_UTIL_MEM, D, "nvmlDeviceGetUtilizationRates",
      "percent of the last sample period memory was read or written"),
    F("util_enc_pct", JF_U32, util_enc_pct, GPU_S_UTIL_ENC, D, "nvmlDeviceGetEncoderUtilization",
      "video encoder utilisation"),
    F("util_dec_pct", JF_U32, util_dec_pct, GPU_S_UTIL_DEC, D, "nvmlDeviceGetDecoderUtilization",
      "video decoder utilisation"),
    F("temp_c", JF_U32, temp_c, GPU_S_TEMP, D, "nvmlDeviceGetTemperature", "GPU core temperature"),
    F("temp_slowdown_c", JF_U32, temp_slowdown_c, GPU_S_TEMP_SLOWDOWN, 0,
      "nvmlDeviceGetTemperatureThreshold", "temperature at which the GPU slows down"),
    F("temp_shutdown_c", JF_U32, temp_shutdown_c, GPU_S_TEMP_SHUTDOWN, 0,
      "nvmlDeviceGetTemperatureThreshold", "temperature at which the GPU shuts down"),
    F("temp_gpu_max_c", JF_U32, temp_gpu_max_c, GPU_S_TEMP_GPU_MAX, 0,
      "nvmlDeviceGetTemperatureThreshold", "maximum operating temperature of the GPU"),
    F("temp_mem_max_c", JF_U32, temp_mem_max_c, GPU_S_TEMP_MEM_MAX, 0,
      "nvmlDeviceGetTemperatureThreshold", "maximum operating temperature of the memory"),
    F("power_mw", JF_U32, power_mw, GPU_S_POWER, D, "nvmlDeviceGetPowerUsage", "power draw"),
    F("power_limit_mw", JF_U32, power_limit_mw, GPU_S_POWER_LIMIT, 0,
      "nvmlDeviceGetPowerManagementLimit", "power limit set"),
    F("power_default_limit_mw", JF_U32, power_default_limit_mw, GPU_S_POWER_DEFAULT_LIMIT, 0,
      "nvmlDeviceGetPowerManagementDefaultLimit", "power limit the board ships with"),
    F("power_enforced_limit_mw", JF_U32, power_enforced_limit_mw, GPU_S_POWER_ENFORCED_LIMIT, 0,
      "nvmlDeviceGetEnforcedPowerLimit", "power limit in force after every limiter"),
    F("power_min_limit_mw", JF_U32, power_min_limit_mw, GPU_S_POWER_MIN_LIMIT, 0,
      "nvmlDeviceGetPowerManagementLimitConstraints", "lowest power limit that can be set"),
    F("power_max_limit_mw", JF_U32, power_max_limit_mw, GPU_S_POWER_MAX_LIMIT, 0,
      "nvmlDeviceGetPowerManagementLimitConstraints", "highest power limit that can be set"),
    F("energy_mj", JF_U64, energy_mj, GPU_S_ENERGY, D, "nvmlDeviceGetTotalEnergyConsumption",
      "energy used since the driver loaded"),
    F("clock_graphics_mhz", JF_U32, clock_graphics_mhz, GPU_S_CLOCK_GRAPHICS, D,
      "nvmlDeviceGetClockInfo", "graphics clock"),
    F("clock_sm_mhz", JF_U32, clock_sm_mhz, GPU_S_CLOCK_SM, D, "nvmlDeviceGetClockInfo",
      "SM clock"),
    F("clock_mem_mhz", JF_U32, clock_mem_mhz, GPU_S_CLOCK_MEM, D, "nvmlDeviceGetClockInfo",
      "memory clock"),
    F("clock_video_mhz", JF_U32, clock_video_mhz, GPU_S_CLOCK_VIDEO, D, "nvmlDeviceGetClockInfo",
      "video clock"),
    F("clock_graphics_max_mhz", JF_U32, clock_graphics_max_mhz, GPU_S_CLOCK_GRAPHICS_MAX, 0,
      "nvmlDeviceGetMaxClockInfo", "maximum graphics clock"),
    F("clock_sm_max_mhz", JF_U32, clock_sm_max_mhz, GPU_S_CLOCK_SM_MAX, 0,
      "nvmlDeviceGetMaxClockInfo", "maximum SM clock"),
    F("clock_mem_max_mhz", JF_U32, clock_mem_max_mhz, GPU_S_CLOCK_MEM_MAX, 0,
      "nvmlDeviceGetMaxClockInfo", "maximum memory clock"),
    F("clock_sm_app_mhz", JF_U32, clock_sm_app_mhz, GPU_S_CLOCK_SM_APP, 0,
      "nvmlDeviceGetApplicationsClock", "application SM clock target"),
    F("clock_sm_app_default_mhz", JF_U32, clock_sm_app_default_mhz, GPU_S_CLOCK_SM_APP_DEFAULT, 0,
      "nvmlDeviceGetDefaultApplicationsClock", "default application SM clock"),
    F("clock_mem_app_mhz", JF_U32, clock_mem_app_mhz, GPU_S_CLOCK_MEM_APP, 0,
      "nvmlDeviceGetApplicationsClock", "application memory clock target"),
    F("clock_mem_app_default_mhz", JF_U32, clock_mem_app_default_mhz, GPU_S_CLOCK_MEM_APP_DEFAULT,
      0, "nvmlDeviceGetDefaultApplicationsClock", "default application memory clock"),
    F("clocks_event_reasons", JF_HEX64, clocks_event_reasons, GPU_S_EVENT_REASONS, D,
      "nvmlDeviceGetCurrentClocksEventReasons", "why clocks are below maximum now (bitmask)"),
    F("clocks_event_reasons_supported", JF_HEX64, clocks_event_reasons_supported,
      GPU_S_EVENT_REASONS_SUPPORTED, 0, "nvmlDeviceGetSupportedClocksEventReasons",
      "reasons this GPU can report (bitmask)"),
    F("pstate", JF_I32, pstate, GPU_S_PSTATE, D, "nvmlDeviceGetPerformanceState",
      "performance state, 0 (fastest) to 15; 32 unknown"),
    F("fan_speed_pct", JF_U32, fan_speed_pct, GPU_S_FAN, D, "nvmlDeviceGetFanSpeed",
      "intended fan speed, percent of maximum (may exceed 100)"),
    F("persistence_mode", JF_BOOL, persistence_mode, GPU_S_PERSISTENCE, 0,
      "nvmlDeviceGetPersistenceMode", "driver kept loaded with no client"),
    F("accounting_mode", JF_BOOL, accounting_mode, GPU_S_ACCOUNTING, 0,
      "nvmlDeviceGetAccountingMode",
      "per-process accounting is on (nvidia-smi -am 1); off by default, always off under MIG"),
    { "compute_mode", JF_ENUM, offsetof(struct gpu, compute_mode), GPU_S_COMPUTE_MODE, 0,
      compute_mode_names, "nvmlDeviceGetComputeMode",
      "default, exclusive_thread, prohibited or exclusive_process" },
    F("mig_mode", JF_BOOL, mig_mode, GPU_S_MIG_MODE, 0, "nvmlDeviceGetMigMode", "MIG enabled"),
    F("mig_mode_pending", JF_BOOL, mig_mode_pending, GPU_S_MIG_MODE_PENDING, 0,
      "nvmlDeviceGetMigMode", "MIG mode after the next GPU reset"),
    F("mig_devices", JF_U32, mig_devices, GPU_S_MIG_DEVICES, 0,
      "nvmlDeviceGetMigDeviceHandleByIndex", "MIG devices that exist"),
    F("display_mode", JF_BOOL, display_mode, GPU_S_DISPLAY_MODE, 0, "nvmlDeviceGetDisplayMode",
      "a display is connected"),
    F("display_active", JF_BOOL, display_active, GPU_S_DISPLAY_ACTIVE, 0,
      "nvmlDeviceGetDisplayActive", "a display is initialised (X or a console on it)"),
    F("ecc_mode", JF_BOOL, ecc_mode, GPU_S_ECC_MODE, 0, "nvmlDeviceGetEccMode", "ECC enabled"),
    F("ecc_mode_pending", JF_BOOL, ecc_mode_pending, GPU_S_ECC_MODE_PENDING, 0,
      "nvmlDeviceGetEccMode", "ECC mode after the next reboot"),
    F("ecc_volatile_corrected", JF_U64, ecc_volatile_corrected, GPU_S_ECC_VOL_CORR, D,
      "nvmlDeviceGetTotalEccErrors", "corrected ECC errors since the driver loaded"),
    F("ecc_volatile_uncorrected", JF_U64, ecc_volatile_uncorrected, GPU_S_ECC_VOL_UNCORR, D,
      "nvmlDeviceGetTotalEccErrors", "uncorrected ECC errors since the driver loaded"),
    F("ecc_aggregate_corrected", JF_U64, ecc_aggregate_corrected, GPU_S_ECC_AGG_CORR, 0,
      "nvmlDeviceGetTotalEccErrors", "corrected ECC errors over the GPU's life"),
    F("ecc_aggregate_uncorrected", JF_U64, ecc_aggregate_uncorrected, GPU_S_ECC_AGG_UNCORR, 0,
      "nvmlDeviceGetTotalEccErrors", "uncorrected ECC errors over the GPU's life"),
    F("retired_pages_sbe", JF_U32, retired_pages_sbe, GPU_S_RETIRED_SBE, 0,
      "nvmlDeviceGetRetiredPages", "pages retired for repeated single-bit errors"),
    F("retired_pages_dbe", JF_U32, retired_pages_dbe, GPU_S_RETIRED_DBE, 0,
      "nvmlDeviceGetRetiredPages", "pages retired for double-bit errors"),
    F("retired_pages_pending", JF_BOOL, retired_pages_pending, GPU_S_RETIRED_PENDING, 0,
      "nvmlDeviceGetRetiredPagesPendingStatus", "a retirement waits for the next reset"),
    F("remapped_rows_correctable", JF_U32, remapped_rows_correctable, GPU_S_REMAP_CORR, 0,
      "nvmlDeviceGetRemappedRows", "rows remapped for correctable errors"),
    F("remapped_rows_uncorrectable", JF_U32, remapped_rows_uncorrectable, GPU_S_REMAP_UNCORR, 0,
      "nvmlDeviceGetRemappedRows", "rows remapped for uncorrectable errors"),
    F("remapped_rows_pending", JF_BOOL, remapped_rows_pending, GPU_S_REMAP_PENDING, 0,
      "nvmlDeviceGetRemappedRows", "a remap waits for the next GPU reset"),
    F("remapped_rows_failure", JF_BOOL, remapped_rows_failure, GPU_S_REMAP_FAILURE, 0,
      "nvmlDeviceGetRemappedRows", "a row remap failed"),
    { "recovery_action", JF_ENUM, offsetof(struct gpu, recovery_action), GPU_S_RECOVERY, D,
      gpu_recovery_names, "nvmlDeviceGetFieldValues",
      "field NVML_FI_DEV_GET_GPU_RECOVERY_ACTION, what the driver says the GPU needs: none, "
      "gpu_reset, node_reboot, drain_p2p, drain_and_reset, recover_imex_domain (NOT_SUPPORTED "
      "on drivers without the field)" },
    F("pcie_gen", JF_U32, pcie_gen, GPU_S_PCIE_GEN, D, "nvmlDeviceGetCurrPcieLinkGeneration",
      "PCIe link generation now"),
    F("pcie_gen_max", JF_U32, pcie_gen_max, GPU_S_PCIE_GEN_MAX, 0,
      "nvmlDeviceGetMaxPcieLinkGeneration", "highest generation this GPU and slot allow"),
    F("pcie_gen_gpu_max", JF_U32, pcie_gen_gpu_max, GPU_S_PCIE_GEN_GPU_MAX, 0,
      "nvmlDeviceGetGpuMaxPcieLinkGeneration", "highest generation the GPU itself supports"),
    F("pcie_width", JF_U32, pcie_width, GPU_S_PCIE_WIDTH, D, "nvmlDeviceGetCurrPcieLinkWidth",
      "PCIe lanes now"),
    F("pcie_width_max", JF_U32, pcie_width_max, GPU_S_PCIE_WIDTH_MAX, 0,
      "nvmlDeviceGetMaxPcieLinkWidth", "most lanes this GPU and slot allow"),
    F("pcie_tx_bytes_per_s", JF_U64, pcie_tx_bytes_per_s, GPU_S_PCIE_TX, D,
      "nvmlDeviceGetPcieThroughput", "PCIe transmit throughput (20 ms sample)"),
    F("pcie_rx_bytes_per_s", JF_U64, pcie_rx_bytes_per_s, GPU_S_PCIE_RX, D,
      "nvmlDeviceGetPcieThroughput", "PCIe receive throughput (20 ms sample)"),
    F("pcie_replay_count", JF_U32, pcie_replay_count, GPU_S_PCIE_REPLAY, D,
      "nvmlDeviceGetPcieReplayCounter", "PCIe replays (link-level retransmissions)"),
    { "processes", JF_NONE, 0, GPU_S_PROCESSES, 0, NULL, "nvmlDeviceGetComputeRunningProcesses_v3",
      "processes with a context on the GPU" },
    { "process_utilization", JF_NONE, 0, GPU_S_PROCESS_UTIL, 0, NULL,
      "nvmlDeviceGetProcessUtilization", "status of the per-process utilisation samples" },
    { "nvlink", JF_NONE, 0, GPU_S_NVLINK, 0, NULL, "nvmlDeviceGetNvLinkState",
      "the GPU's NVLinks (list below); NOT_SUPPORTED: a GPU without NVLink" },
    { "fabric", JF_NONE, 0, GPU_S_FABRIC, 0, NULL, "nvmlDeviceGetGpuFabricInfoV",
      "registration with the NVLink fabric (object below); NOT_SUPPORTED: no fabric" },
    { "peers", JF_NONE, 0, GPU_S_PEERS, 0, NULL, "nvmlDeviceGetTopologyCommonAncestor",
      "the other GPUs as this one reaches them (list below); empty with one GPU" },
};

#undef F
#undef D

const struct jtable gpu_table = {
    "GPU", gpu_fields, ARRAY_SIZE(gpu_fields), JT_RC, offsetof(struct gpu, rc), "nvml_status",
};

static const char *const gpu_proc_types[] = { "compute", "graphics", "mps", NULL };

#define P(key, type, member, slot, flags, doc)                                                     \
    {                                                                                              \
        key, type, offsetof(struct gpu_proc, member), slot, flags, NULL, NULL, doc                 \
    }
static const struct jfield gpu_proc_fields[] = {
    P("pid", JF_U32, pid, -1, JF_ID, "host process id"),
    P("used_bytes", JF_U64, used_bytes, GPU_PROC_S_USED, JF_DYNAMIC,
      "GPU memory the process holds (unknown under some virtualisation)"),
    P("gpu_instance_id", JF_U32, gpu_instance_id, GPU_PROC_S_INSTANCE, 0, "MIG GPU instance"),
    P("compute_instance_id", JF_U32, compute_instance_id, GPU_PROC_S_INSTANCE, 0,
      "MIG compute instance"),
    P("sm_util_pct", JF_U32, sm_util_pct, GPU_PROC_S_UTIL, JF_DYNAMIC,
      "SM utilisation by this process (driver sample)"),
    P("mem_util_pct", JF_U32, mem_util_pct, GPU_PROC_S_UTIL, JF_DYNAMIC,
      "memory bandwidth utilisation by this process"),
    P("enc_util_pct", JF_U32, enc_util_pct, GPU_PROC_S_UTIL, JF_DYNAMIC, "encoder utilisation"),
    P("dec_util_pct", JF_U32, dec_util_pct, GPU_PROC_S_UTIL, JF_DYNAMIC, "decoder utilisation"),
};
#undef P

const struct jtable gpu_proc_table = {
    "GPU process",
    gpu_proc_fields,
    ARRAY_SIZE(gpu_proc_fields),
    JT_BITS,
    offsetof(struct gpu_proc, valid),
    NULL,
};

const char *const gpu_nvlink_remote_names[] = { "gpu", "ibmnpu", "switch", "unknown", NULL };

#define L(key, type, member, slot, flags, names, source, doc)                                      \
    {                                                                                              \
        key, type, offsetof(struct gpu_nvlink, member), slot, flags, names, source, doc            \
    }
static const struct jfield gpu_nvlink_fields[] = {
    L("link", JF_U32, link, -1, JF_ID, NULL, NULL, "link number, 0 to 35"),
    L("active", JF_BOOL, active, NVL_S_ACTIVE, JF_DYNAMIC, NULL, "nvmlDeviceGetNvLinkState",
      "the link is up"),
    L("version", JF_U32, version, NVL_S_VERSION, 0, NULL, "nvmlDeviceGetNvLinkVersion",
      "nvmlNvlinkVersion_t: 4 = NVLink 3.0, 5 = 3.1, 6 = 4.0, 7 = 5.0, 8 = 6.0"),
    L("remote_pci_bus_id", JF_STR, remote_pci_bus_id, NVL_S_REMOTE_BUS, 0, NULL,
      "nvmlDeviceGetNvLinkRemotePciInfo_v2", "PCI address of the device at the other end"),
    L("remote_type", JF_ENUM, remote_type, NVL_S_REMOTE_TYPE, 0, gpu_nvlink_remote_names,
      "nvmlDeviceGetNvLinkRemoteDeviceType", "what is at the other end"),
    L("crc_errors", JF_U64, crc_errors, NVL_S_CRC, JF_DYNAMIC, NULL,
      "nvmlDeviceGetFieldValues(NVML_FI_DEV_NVLINK_ERROR_DL_CRC)",
      "data link CRC errors since the driver loaded (scopeId = link)"),
    L("replay_errors", JF_U64, replay_errors, NVL_S_REPLAY, JF_DYNAMIC, NULL,
      "nvmlDeviceGetFieldValues(NVML_FI_DEV_NVLINK_ERROR_DL_REPLAY)", "data link replays"),
    L("recovery_errors", JF_U64, recovery_errors, NVL_S_RECOVERY, JF_DYNAMIC, NULL,
      "nvmlDeviceGetFieldValues(NVML_FI_DEV_NVLINK_ERROR_DL_RECOVERY)", "link recoveries"),
    L("tx_kib", JF_U64, tx_kib, NVL_S_TX, JF_DYNAMIC, NULL,
      "nvmlDeviceGetFieldValues(NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX)",
      "data sent over the link since the driver loaded, KiB (payload, without protocol "
      "overhead); its rate over the window is the link's traffic"),
    L("rx_kib", JF_U64, rx_kib, NVL_S_RX, JF_DYNAMIC, NULL,
      "nvmlDeviceGetFieldValues(NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX)",
      "data received over the link since the driver loaded, KiB"),
};
#undef L

const struct jtable gpu_nvlink_table = {
    "GPU NVLink",
    gpu_nvlink_fields,
    ARRAY_SIZE(gpu_nvlink_fields),
    JT_RC,
    offsetof(struct gpu_nvlink, rc),
    "nvml_status",
};

const char *const gpu_fabric_state_names[] = { "not_supported", "not_started", "in_progress",
                                               "completed",     "unknown",     NULL };

#define B(key, type, member, slot, names, doc)                                                     \
    {                                                                                              \
        key, type, offsetof(struct gpu_fabric, member), slot, 0, names,                            \
            "nvmlDeviceGetGpuFabricInfoV", doc                                                     \
    }
static const struct jfield gpu_fabric_fields[] = {
    B("state", JF_ENUM, state, FAB_S_INFO, gpu_fabric_state_names,
      "registration state (unknown: a value the header does not name)"),
    B("status", JF_I32, status, FAB_S_INFO, NULL,
      "nvmlReturn_t of the registration, 0 = SUCCESS; meaningful once completed"),
    B("clique_id", JF_U32, clique_id, FAB_S_INFO, NULL, "fabric clique of the GPU"),
    B("cluster_uuid", JF_STR, cluster_uuid, FAB_S_INFO, NULL, "cluster the GPU belongs to"),
    B("health_mask", JF_HEX32, health_mask, FAB_S_HEALTH, NULL,
      "NVML_GPU_FABRIC_HEALTH_MASK_* fields (struct v2 and later)"),
};
#undef B

const struct jtable gpu_fabric_table = {
    "GPU fabric",
    gpu_fabric_fields,
    ARRAY_SIZE(gpu_fabric_fields),
    JT_BITS,
    offsetof(struct gpu_fabric, valid),
    NULL,
};

const char *const gpu_topology_names[] = { "internal", "single", "multiple", "hostbridge",
                                           "node",     "system", "unknown",  NULL };
/* nvidia-smi topo -m's names of the same levels. */
const char *const gpu_topology_short[] = { "on one board", "PIX", "PXB",     "PHB",
                                           "NODE",         "SYS", "unknown", NULL };
const char *const gpu_p2p_names[] = { "ok",
                                      "chipset_not_supported",
                                      "gpu_not_supported",
                                      "topology_not_supported",
                                      "disabled_by_regkey",
                                      "not_supported",
                                      "unknown",
                                      NULL };

#define R(key, type, member, slot, flags, names, source, doc)                                      \
    {                                                                                              \
        key, type, offsetof(struct gpu_peer, member), slot, flags, names, source, doc              \
    }
static const struct jfield gpu_peer_fields[] = {
    R("gpu", JF_U32, gpu, -1, JF_ID, NULL, NULL, "the other GPU's index"),
    R("topology", JF_ENUM, topology, PEER_S_TOPOLOGY, 0, gpu_topology_names,
      "nvmlDeviceGetTopologyCommonAncestor",
      "their closest common ancestor: internal (one board), single (PIX: one PCIe switch), "
      "multiple (PXB: PCIe switches), hostbridge (PHB: a CPU's host bridge), node (NODE: host "
      "bridges of one NUMA node), system (SYS: across NUMA nodes)"),
    R("p2p_read", JF_ENUM, p2p_read, PEER_S_P2P_READ, 0, gpu_p2p_names,
      "nvmlDeviceGetP2PStatus(NVML_P2P_CAPS_INDEX_READ)",
      "whether CUDA peer-to-peer reads work between them (nvmlGpuP2PStatus_t)"),
    R("p2p_nvlink", JF_ENUM, p2p_nvlink, PEER_S_P2P_NVLINK, 0, gpu_p2p_names,
      "nvmlDeviceGetP2PStatus(NVML_P2P_CAPS_INDEX_NVLINK)",
      "whether peer-to-peer goes over NVLink between them"),
};
#undef R

const struct jtable gpu_peer_table = {
    "GPU peer",
    gpu_peer_fields,
    ARRAY_SIZE(gpu_peer_fields),
    JT_RC,
    offsetof(struct gpu_peer, rc),
    "nvml_status",
};

const struct clock_reason clock_reasons[] = {
    { NVML_CLOCKS_EVENT_GPU_IDLE, "gpu_idle", N_("GPU idle") },
    { NVML_CLOCKS_EVENT_APP_CLOCKS_SETTING, "applications_clocks",
      N_("application clocks setting") },
    { NVML_CLOCKS_EVENT_SW_POWER_CAP, "sw_power_cap", N_("software power cap") },
    { NVML_CLOCKS_EVENT_HW_SLOWDOWN, "hw_slowdown", N_("hardware slowdown") },
    { NVML_CLOCKS_EVENT_SYNC_BOOST, "sync_boost", N_("sync boost") },
    { NVML_CLOCKS_EVENT_SW_THERMAL, "sw_thermal", N_("software thermal slowdown") },
    { NVML_CLOCKS_EVENT_HW_THERMAL, "hw_thermal", N_("hardware thermal slowdown") },
    { NVML_CLOCKS_EVENT_HW_POWER_BRAKE, "hw_power_brake", N_("hardware power brake") },
    { NVML_CLOCKS_EVENT_DISPLAY_CLOCK, "display_clock", N_("display clock setting") },
};
const size_t n_clock_reasons = ARRAY_SIZE(clock_reasons);

void gpu_init(struct gpu *g, uint32_t index)
{
    memset(g, 0, sizeof(*g));
    g->index = index;
    for (size_t i = 0; i < GPU_S__COUNT; i++)
        g->rc[i] = JF_RC_NOT_COLLECTED;
}

void gpu_nvlink_init(struct gpu_nvlink *l, uint32_t link)
{
    memset(l, 0, sizeof(*l));
    l->link = link;
    for (size_t i = 0; i < NVL_S__COUNT; i++)
        l->rc[i] = JF_RC_NOT_COLLECTED;
}

bool gpu_nvlink_valid(const struct gpu_nvlink *l, enum gpu_nvlink_slot slot)
{
    return l->rc[slot] == 0;
}

size_t gpu_nvlinks_active(const struct gpu *g, size_t *unknown)
{
    size_t n = 0, unread = 0;

    for (size_t i = 0; i < g->n_nvlinks; i++) {
        if (!gpu_nvlink_valid(&g->nvlinks[i], NVL_S_ACTIVE))
            unread++;
        else
            n += g->nvlinks[i].active;
    }
    if (unknown != NULL)
        *unknown = unread;
    return n;
}

const struct gpu_nvlink *gpu_nvlink_find(const struct gpu *g, uint32_t link)
{
    for (size_t i = 0; i < g->n_nvlinks; i++) {
        if (g->nvlinks[i].link == link)
            return &g->nvlinks[i];
    }
    return NULL;
}

uint64_t counter_growth(uint64_t a, uint64_t b)
{
    return b >= a ? b - a : b;
}

bool gpu_nvlink_traffic(const struct gpu *a, const struct gpu *b, double secs, double *bytes_per_s)
{
    uint64_t kib = 0;
    bool any = false;

    if (a == NULL || b == NULL || secs <= 0)
        return false;
    for (size_t i = 0; i < b->n_nvlinks; i++) {
        const struct gpu_nvlink *lb = &b->nvlinks[i], *la = gpu_nvlink_find(a, lb->link);

        if (la == NULL || !gpu_nvlink_valid(la, NVL_S_TX) || !gpu_nvlink_valid(la, NVL_S_RX) ||
            !gpu_nvlink_valid(lb, NVL_S_TX) || !gpu_nvlink_valid(lb, NVL_S_RX))
            continue;
        kib += counter_growth(la->tx_kib, lb->tx_kib) + counter_growth(la->rx_kib, lb->rx_kib);
        any = true;
    }
    if (any)
        *bytes_per_s = (double)kib * 1024.0 / secs;
    return any;
}

void gpu_nvlinks_free(struct gpu *g)
{
    for (size_t i = 0; i < g->n_nvlinks; i++)
        jtable_free(&gpu_nvlink_table, &g->nvlinks[i]);
    free(g->nvlinks);
    g->nvlinks = NULL;
    g->n_nvlinks = 0;
}

void gpu_peer_init(struct gpu_peer *p, uint32_t gpu)
{
    memset(p, 0, sizeof(*p));
    p->gpu = gpu;
    for (size_t i = 0; i < PEER_S__COUNT; i++)
        p->rc[i] = JF_RC_NOT_COLLECTED;
}

bool gpu_peer_valid(const struct gpu_peer *p, enum gpu_peer_slot slot)
{
    return p->rc[slot] == 0;
}

const struct gpu_peer *gpu_peer_of(const struct gpu *g, uint32_t other)
{
    if (!gpu_valid(g, GPU_S_PEERS))
        return NULL;
    for (size_t i = 0; i < g->n_peers; i++) {
        if (g->peers[i].gpu == other)
            return &g->peers[i];
    }
    return NULL;
}

void gpu_free(struct gpu *g)
{
    jtable_free(&gpu_table, g);
    free(g->procs);
    g->procs = NULL;
    g->n_procs = 0;
    gpu_nvlinks_free(g);
    jtable_free(&gpu_fabric_table, &g->fabric);
    memset(&g->fabric, 0, sizeof(g->fabric));
    free(g->peers); /* no strings */
    g->peers = NULL;
    g->n_peers = 0;
}

void gpu_copy(struct gpu *dst, const struct gpu *src)
{
    *dst = *src;
    for (size_t i = 0; i < gpu_table.n_fields; i++) {
        const struct jfield *f = &gpu_table.fields[i];

        if (f->type == JF_STR) {
            char **p = (char **)((char *)dst + f->offset);

            if (*p != NULL)
                *p = xstrdup(*p);
        }
    }
    if (src->n_procs > 0) {
        dst->procs = xreallocarray(NULL, src->n_procs, sizeof(*dst->procs));
        memcpy(dst->procs, src->procs, src->n_procs * sizeof(*dst->procs));
    } else {
        dst->procs = NULL;
    }
    dst->nvlinks = NULL;
    if (src->n_nvlinks > 0) {
        dst->nvlinks = xreallocarray(NULL, src->n_nvlinks, sizeof(*dst->nvlinks));
        memcpy(dst->nvlinks, src->nvlinks, src->n_nvlinks * sizeof(*dst->nvlinks));
        for (size_t i = 0; i < src->n_nvlinks; i++) {
            if (src->nvlinks[i].remote_pci_bus_id != NULL)
                dst->nvlinks[i].remote_pci_bus_id = xstrdup(src->nvlinks[i].remote_pci_bus_id);
        }
    }
    if (src->fabric.cluster_uuid != NULL)
        dst->fabric.cluster_uuid = xstrdup(src->fabric.cluster_uuid);
    dst->peers = NULL;
    if (src->n_peers > 0) {
        dst->peers = xreallocarray(NULL, src->n_peers, sizeof(*dst->peers));
        memcpy(dst->peers, src->peers, src->n_peers * sizeof(*dst->peers));
    }
}

bool gpu_valid(const struct gpu *g, enum gpu_slot slot)
{
    return g->handle_rc == 0 && g->rc[slot] == 0;
}

void gpu_set_rc(struct gpu *g, enum gpu_slot slot, int32_t rc)
{
    g->rc[slot] = rc;
}

void nvml_system_free(struct nvml_system *s)
{
    free(s->library);
    free(s->library_version);
    free(s->load_detail);
    free(s->init_error);
    free(s->driver_version);
    free(s->nvml_version);
    free(s->hung_call);
    memset(s, 0, sizeof(*s));
}

static json_t *proc_type_json(uint32_t mask)
{
    json_t *a = json_array();

    for (size_t i = 0; gpu_proc_types[i] != NULL; i++) {
        if (mask & (1u << i))
            json_array_append_new(a, json_string(gpu_proc_types[i]));
    }
    return a;
}

/* rows: links and peers as rows (jtable_write_row), the NVML helper's wire. */
static json_t *encode(const struct gpu *g, unsigned only_flags, bool rows)
{
    json_t *j = json_object();

    if (g->handle_rc != 0) {
        const char *name = nvml_rc_name(g->handle_rc);

        json_object_set_new(j, "index", json_integer(g->index));
        json_object_set_new(j, "handle_status",
                            name ? json_string(name) : json_integer(g->handle_rc));
        return j;
    }
    jtable_write(&gpu_table, g, j, only_flags);
    if (g->index_by_order && !only_flags)
        json_object_set_new(j, "index_by_order", json_true());
    if (gpu_valid(g, GPU_S_PROCESSES) && (!only_flags || g->n_procs > 0)) {
        json_t *procs = json_array();

        for (size_t i = 0; i < g->n_procs; i++) {
            json_t *p = json_object();

            jtable_write(&gpu_proc_table, &g->procs[i], p, only_flags ? JF_ID | JF_DYNAMIC : 0);
            if (!only_flags)
                json_object_set_new(p, "type", proc_type_json(g->procs[i].type_mask));
            json_array_append_new(procs, p);
        }
        json_object_set_new(j, "processes", procs);
    }
    /* Samples carry the links' counters and states; the fabric does not change that fast. */
    if (gpu_valid(g, GPU_S_NVLINK) && (!only_flags || g->n_nvlinks > 0)) {
        json_t *links = json_array();

        for (size_t i = 0; i < g->n_nvlinks; i++) {
            unsigned flags = only_flags ? JF_ID | JF_DYNAMIC : 0;
            json_t *l;

            if (rows) {
                jtable_write_row(&gpu_nvlink_table, &g->nvlinks[i], links, flags);
                continue;
            }
            l = json_object();
            jtable_write(&gpu_nvlink_table, &g->nvlinks[i], l, flags);
            json_array_append_new(links, l);
        }
        json_object_set_new(j, "nvlink", links);
    }
    if (gpu_valid(g, GPU_S_FABRIC) && !only_flags) {
        json_t *fab = json_object();

        jtable_write(&gpu_fabric_table, &g->fabric, fab, 0);
        json_object_set_new(j, "fabric", fab);
    }
    /* The topology does not change during a window: the snapshot has it, samples do not. */
    if (gpu_valid(g, GPU_S_PEERS) && !only_flags) {
        json_t *peers = json_array();

        for (size_t i = 0; i < g->n_peers; i++) {
            json_t *p;

            if (rows) {
                jtable_write_row(&gpu_peer_table, &g->peers[i], peers, 0);
                continue;
            }
            p = json_object();
            jtable_write(&gpu_peer_table, &g->peers[i], p, 0);
            json_array_append_new(peers, p);
        }
        json_object_set_new(j, "peers", peers);
    }
    return j;
}

json_t *gpu_to_json(const struct gpu *g, unsigned only_flags)
{
    return encode(g, only_flags, false);
}

json_t *gpu_to_wire(const struct gpu *g, unsigned only_flags)
{
    return encode(g, only_flags, true);
}

/* Peers are listed once each, never the GPU itself; at most NVML_QUERY_MAX_GPUS - 1 of them. */
static int peers_from_json(struct gpu *g, const json_t *peers, const char *path, int32_t missing_rc,
                           bool rows, struct jerr *err)
{
    size_t i;
    json_t *p;

    if (!json_is_array(peers)) {
        jerr_set(err, path, "peers: expected an array of GPUs");
        return -1;
    }
    if (json_array_size(peers) > GPU_MAX_PEERS) {
        jerr_set(err, path, "peers: more than %d GPUs", GPU_MAX_PEERS);
        return -1;
    }
    g->peers = xcalloc(json_array_size(peers) + 1, sizeof(*g->peers));
    json_array_foreach(peers, i, p)
    {
        char ppath[256];
        struct gpu_peer *gp = &g->peers[i];

        snprintf(ppath, sizeof(ppath), "%s.peers[%zu]", path, i);
        gpu_peer_init(gp, 0);
        g->n_peers = i + 1;
        if (rows) {
            if (jtable_read_row(&gpu_peer_table, gp, p, ppath, err) != 0)
                return -1;
        } else if (!json_is_object(p) || !json_is_integer(json_object_get(p, "gpu"))) {
            jerr_set(err, ppath, "expected a peer object with \"gpu\": its index");
            return -1;
        } else if (jtable_read(&gpu_peer_table, gp, p, ppath, missing_rc, NULL, err) != 0) {
            return -1;
        }
        if (gp->gpu == g->index) {
            jerr_set(err, ppath, "gpu: a GPU is not its own peer");
            return -1;
        }
        for (size_t k = 0; k < i; k++) {
            if (g->peers[k].gpu == gp->gpu) {
                jerr_set(err, ppath, "GPU %" PRIu32 " is listed twice", gp->gpu);
                return -1;
            }
        }
    }
    return 0;
}

/* Links are listed once each, in the range the header allows. */
static int nvlinks_from_json(struct gpu *g, const json_t *links, const char *path,
                             int32_t missing_rc, bool rows, struct jerr *err)
{
    size_t i;
    json_t *l;

    if (!json_is_array(links)) {
        jerr_set(err, path, "nvlink: expected an array of links");
        return -1;
    }
    if (json_array_size(links) > NVML_NVLINK_MAX_LINKS) {
        jerr_set(err, path, "nvlink: more than %d links", NVML_NVLINK_MAX_LINKS);
        return -1;
    }
    g->nvlinks = xcalloc(json_array_size(links) + 1, sizeof(*g->nvlinks));
    json_array_foreach(links, i, l)
    {
        char lpath[256];
        struct gpu_nvlink *gl = &g->nvlinks[i];

        snprintf(lpath, sizeof(lpath), "%s.nvlink[%zu]", path, i);
        gpu_nvlink_init(gl, 0);
        g->n_nvlinks = i + 1;
        if (rows) {
            if (jtable_read_row(&gpu_nvlink_table, gl, l, lpath, err) != 0)
                return -1;
        } else if (!json_is_object(l) || !json_is_integer(json_object_get(l, "link"))) {
            jerr_set(err, lpath, "expected a link object with \"link\": its number");
            return -1;
        } else if (jtable_read(&gpu_nvlink_table, gl, l, lpath, missing_rc, NULL, err) != 0) {
            return -1;
        }
        if (gl->link >= NVML_NVLINK_MAX_LINKS) {
            jerr_set(err, lpath, "link: expected 0 to %d", NVML_NVLINK_MAX_LINKS - 1);
            return -1;
        }
        for (size_t k = 0; k < i; k++) {
            if (g->nvlinks[k].link == gl->link) {
                jerr_set(err, lpath, "link %" PRIu32 " is listed twice", gl->link);
                return -1;
            }
        }
    }
    return 0;
}

static int proc_type_from_json(const json_t *v, uint32_t *mask, const char *path, struct jerr *err)
{
    size_t i;
    json_t *t;

    *mask = 0;
    if (v == NULL) {
        *mask = GPU_PROC_COMPUTE;
        return 0;
    }
    if (json_is_string(v)) {
        json_t *a = json_pack("[O]", v);
        int r = proc_type_from_json(a, mask, path, err);

        json_decref(a);
        return r;
    }
    if (!json_is_array(v))
        goto bad;
    json_array_foreach(v, i, t)
    {
        size_t k;

        for (k = 0; gpu_proc_types[k] != NULL; k++) {
            if (json_is_string(t) && strcmp(json_string_value(t), gpu_proc_types[k]) == 0)
                break;
        }
        if (gpu_proc_types[k] == NULL)
            goto bad;
        *mask |= 1u << k;
    }
    return 0;
bad:
    jerr_set(err, path, "type: expected \"compute\", \"graphics\", \"mps\" or a list of them");
    return -1;
}

static const char *const gpu_proc_extra[] = { "type", NULL };

static int decode(struct gpu *g, const json_t *j, const char *path, int32_t missing_rc,
                  const char *const *extra_keys, bool rows, struct jerr *err)
{
    static const char *const base_extra[] = { "handle_status", "index_by_order", NULL };
    const char *extra[32];
    const json_t *procs, *hs, *links, *fab, *st, *peers, *ibo;
    size_t n = 0;

    for (size_t i = 0; base_extra[i] != NULL; i++)
        extra[n++] = base_extra[i];
    for (size_t i = 0; extra_keys && extra_keys[i] != NULL && n < ARRAY_SIZE(extra) - 1; i++)
        extra[n++] = extra_keys[i];
    extra[n] = NULL;

    hs = json_object_get(j, "handle_status");
    if (hs != NULL && !json_is_null(hs)) {
        int64_t index = 0;

        if (!json_is_string(hs) || nvml_rc_from_name(json_string_value(hs)) <= 0) {
            jerr_set(err, path, "handle_status: expected an NVML error name");
            return -1;
        }
        g->handle_rc = nvml_rc_from_name(json_string_value(hs));
        if (jget_int(j, "index", path, &index, err) != 0)
            return -1;
        g->index = (uint32_t)index;
        return 0;
    }
    if (jtable_read(&gpu_table, g, j, path, missing_rc, extra, err) != 0)
        return -1;
    ibo = json_object_get(j, "index_by_order");
    if (ibo != NULL && !json_is_null(ibo) && !json_is_boolean(ibo)) {
        jerr_set(err, path, "index_by_order: expected true or false");
        return -1;
    }
    g->index_by_order = json_is_true(ibo);
    procs = json_object_get(j, "processes");
    if (procs != NULL && !json_is_null(procs)) {
        size_t i;
        json_t *p;

        if (!json_is_array(procs)) {
            jerr_set(err, path, "processes: expected an array");
            return -1;
        }
        g->procs = xcalloc(json_array_size(procs) ? json_array_size(procs) : 1, sizeof(*g->procs));
        json_array_foreach(procs, i, p)
        {
            char ppath[256];
            struct gpu_proc *gp = &g->procs[i];

            snprintf(ppath, sizeof(ppath), "%s.processes[%zu]", path, i);
            if (jtable_read(&gpu_proc_table, gp, p, ppath, 0, gpu_proc_extra, err) != 0 ||
                proc_type_from_json(json_object_get(p, "type"), &gp->type_mask, ppath, err) != 0)
                return -1;
            g->n_procs = i + 1;
        }
        g->rc[GPU_S_PROCESSES] = 0;
    }
    /* A document from before these keys existed knows nothing of them: not "no links". */
    st = json_object_get(j, "nvml_status");
    if (json_object_get(j, "nvlink") == NULL && json_object_get(st, "nvlink") == NULL)
        g->rc[GPU_S_NVLINK] = missing_rc;
    if (json_object_get(j, "fabric") == NULL && json_object_get(st, "fabric") == NULL)
        g->rc[GPU_S_FABRIC] = missing_rc;
    if (json_object_get(j, "peers") == NULL && json_object_get(st, "peers") == NULL)
        g->rc[GPU_S_PEERS] = missing_rc;
    links = json_object_get(j, "nvlink");
    if (links != NULL && !json_is_null(links)) {
        if (nvlinks_from_json(g, links, path, missing_rc, rows, err) != 0)
            return -1;
        g->rc[GPU_S_NVLINK] = 0;
    }
    fab = json_object_get(j, "fabric");
    if (fab != NULL && !json_is_null(fab)) {
        char fpath[256];

        snprintf(fpath, sizeof(fpath), "%s.fabric", path);
        if (!json_is_object(fab)) {
            jerr_set(err, fpath, "expected an object");
            return -1;
        }
        if (jtable_read(&gpu_fabric_table, &g->fabric, fab, fpath, missing_rc, NULL, err) != 0)
            return -1;
        g->rc[GPU_S_FABRIC] = 0;
    }
    peers = json_object_get(j, "peers");
    if (peers != NULL && !json_is_null(peers)) {
        if (peers_from_json(g, peers, path, missing_rc, rows, err) != 0)
            return -1;
        g->rc[GPU_S_PEERS] = 0;
    }
    return 0;
}

int gpu_from_json(struct gpu *g, const json_t *j, const char *path, int32_t missing_rc,
                  const char *const *extra_keys, struct jerr *err)
{
    return decode(g, j, path, missing_rc, extra_keys, false, err);
}

int gpu_from_wire(struct gpu *g, const json_t *j, const char *path, struct jerr *err)
{
    return decode(g, j, path, JF_RC_NOT_COLLECTED, NULL, true, err);
}

int gpu_pids_check(const struct gpu *g, const char *path, struct jerr *err)
{
    for (size_t i = 0; i < g->n_procs; i++) {
        char ppath[256];

        snprintf(ppath, sizeof(ppath), "%s.processes[%zu]", path, i);
        if (proc_pid_check(g->procs[i].pid, false, ppath, "pid", err) != 0)
            return -1;
    }
    return 0;
}

#define S(key, type, member, doc)                                                                  \
    {                                                                                              \
        key, type, offsetof(struct nvml_system, member), -1, 0, NULL, NULL, doc                    \
    }
static const struct jfield nvml_system_fields[] = {
    S("attempted", JF_BOOL, attempted, "whether NVML was queried at all"),
    S("library", JF_STR, library, "the NVML library loaded (or tried)"),
    S("library_version", JF_STR, library_version,
      "driver version in the library's file name (libnvidia-ml.so.VERSION)"),
    S("load_error", JF_I32, load_error,
      "12 (LIBRARY_NOT_FOUND) when the library did not load, 13 (FUNCTION_NOT_FOUND) when it lacks "
      "required NVML functions"),
    S("load_detail", JF_STR, load_detail, "the dynamic loader's message"),
    S("init_rc", JF_I32, init_rc,
      "return code of nvmlInit_v2; -1 when not attempted (as for every _rc field)"),
    S("init_error", JF_STR, init_error, "nvmlErrorString of init_rc"),
    S("driver_version", JF_STR, driver_version, "nvmlSystemGetDriverVersion"),
    S("driver_version_rc", JF_I32, driver_version_rc, "its return code"),
    S("nvml_version", JF_STR, nvml_version, "nvmlSystemGetNVMLVersion"),
    S("nvml_version_rc", JF_I32, nvml_version_rc, "its return code"),
    S("cuda_driver_version", JF_I32, cuda_driver_version,
      "nvmlSystemGetCudaDriverVersion_v2, 12040 = CUDA 12.4"),
    S("cuda_driver_version_rc", JF_I32, cuda_driver_version_rc, "its return code"),
    S("device_count", JF_U32, device_count, "nvmlDeviceGetCount_v2"),
    S("device_count_rc", JF_I32, device_count_rc, "its return code"),
    S("hung_call", JF_STR, hung_call, "the NVML call that did not answer before the deadline"),
    S("elapsed_us", JF_I64, elapsed_us, "how long NVML collection took"),
    S("process_stride", JF_U32, process_stride,
      "bytes per process record in the process-list call used (16, 24 or 32)"),
};
#undef S

const struct jtable nvml_system_table = {
    "NVML system", nvml_system_fields, ARRAY_SIZE(nvml_system_fields), JT_NONE, 0, NULL,
};

json_t *nvml_system_to_json(const struct nvml_system *s)
{
    json_t *j = json_object();

    jtable_write(&nvml_system_table, s, j, 0);
    return j;
}

int nvml_system_from_json(struct nvml_system *s, const json_t *j, const char *path,
                          struct jerr *err)
{
    return jtable_read(&nvml_system_table, s, j, path, 0, NULL, err);
}
