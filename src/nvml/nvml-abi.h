/*
 * The NVML C ABI as far as gpudoctor and its simulator use it.
 *
 * Every number, size and signature here comes from ../shared/reference/nvml-facts.md (NVIDIA's
 * public nvml.h, 13.3 header, and the per-driver history). We declare the ABI ourselves so that
 * nothing links against NVML at build time: the library is dlopen()ed at run time.
 * tests/unit/test-nvml-abi.c checks every size and offset against the reference numbers.
 */
#ifndef GPUDOCTOR_NVML_ABI_H
#define GPUDOCTOR_NVML_ABI_H

#include <stdint.h>

typedef int nvmlReturn_t; /* an enum in nvml.h: 4 bytes, the values below */

#define NVML_SUCCESS                         0
#define NVML_ERROR_UNINITIALIZED             1
#define NVML_ERROR_INVALID_ARGUMENT          2
#define NVML_ERROR_NOT_SUPPORTED             3
#define NVML_ERROR_NO_PERMISSION             4
#define NVML_ERROR_ALREADY_INITIALIZED       5
#define NVML_ERROR_NOT_FOUND                 6
#define NVML_ERROR_INSUFFICIENT_SIZE         7
#define NVML_ERROR_INSUFFICIENT_POWER        8
#define NVML_ERROR_DRIVER_NOT_LOADED         9
#define NVML_ERROR_TIMEOUT                   10
#define NVML_ERROR_IRQ_ISSUE                 11
#define NVML_ERROR_LIBRARY_NOT_FOUND         12
#define NVML_ERROR_FUNCTION_NOT_FOUND        13
#define NVML_ERROR_CORRUPTED_INFOROM         14
#define NVML_ERROR_GPU_IS_LOST               15
#define NVML_ERROR_RESET_REQUIRED            16
#define NVML_ERROR_OPERATING_SYSTEM          17
#define NVML_ERROR_LIB_RM_VERSION_MISMATCH   18
#define NVML_ERROR_IN_USE                    19
#define NVML_ERROR_MEMORY                    20
#define NVML_ERROR_NO_DATA                   21
#define NVML_ERROR_VGPU_ECC_NOT_SUPPORTED    22
#define NVML_ERROR_INSUFFICIENT_RESOURCES    23
#define NVML_ERROR_FREQ_NOT_SUPPORTED        24
#define NVML_ERROR_ARGUMENT_VERSION_MISMATCH 25
#define NVML_ERROR_DEPRECATED                26
#define NVML_ERROR_NOT_READY                 27
#define NVML_ERROR_GPU_NOT_FOUND             28
#define NVML_ERROR_INVALID_STATE             29
#define NVML_ERROR_RESET_TYPE_NOT_SUPPORTED  30
#define NVML_ERROR_UNKNOWN                   999

typedef struct nvmlDevice_st *nvmlDevice_t;

/* Buffer sizes (bytes, including the NUL). */
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE     32
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE  16
#define NVML_DEVICE_UUID_V2_BUFFER_SIZE        96
#define NVML_DEVICE_NAME_V2_BUFFER_SIZE        96
#define NVML_DEVICE_SERIAL_BUFFER_SIZE         30
#define NVML_DEVICE_VBIOS_VERSION_BUFFER_SIZE  32
#define NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE 80
#define NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE   80

#define NVML_STRUCT_VERSION(size, ver) ((unsigned int)(size) | ((unsigned int)(ver) << 24U))

/* nvmlDeviceGetPciInfo_v3: 68 bytes. */
typedef struct {
    char busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE]; /* "%04X:%02X:%02X.0" */
    unsigned int domain;
    unsigned int bus;
    unsigned int device;
    unsigned int pciDeviceId; /* (device id << 16) | vendor id */
    unsigned int pciSubSystemId;
    char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE]; /* "%08X:%02X:%02X.0" */
} nvmlPciInfo_t;

/* Unversioned nvmlDeviceGetPciInfo and _v2: the pre-415 layout, 52 bytes. */
typedef struct {
    char busId[16];
    unsigned int domain;
    unsigned int bus;
    unsigned int device;
    unsigned int pciDeviceId;
    unsigned int pciSubSystemId;
    unsigned int reserved0, reserved1, reserved2, reserved3;
} nvmlPciInfoLegacy_t;

/* Unversioned nvmlDeviceGetMemoryInfo: 24 bytes; used = reserved + allocated on R510+. */
typedef struct {
    unsigned long long total, free, used;
} nvmlMemory_t;

/* nvmlDeviceGetMemoryInfo_v2: 40 bytes; version must be nvmlMemory_v2. */
typedef struct {
    unsigned int version;
    unsigned long long total, reserved, free, used;
} nvmlMemory_v2_t;
#define nvmlMemory_v2 NVML_STRUCT_VERSION(sizeof(nvmlMemory_v2_t), 2) /* 0x02000028 */

typedef struct {
    unsigned long long bar1Total, bar1Free, bar1Used;
} nvmlBAR1Memory_t;

typedef struct {
    unsigned int gpu, memory; /* percent */
} nvmlUtilization_t;

/* Process-list records: the stride depends on the symbol and the driver (facts 6a). */
typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t; /* 16 bytes: unversioned symbols */

typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
} nvmlProcessInfo_v2_t; /* 24 bytes: _v2, and _v3 outside 535.43.02-535.86.05 */

typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
    unsigned long long usedGpuCcProtectedMemory;
} nvmlProcessInfo_r535_t; /* 32 bytes: _v3 in drivers 535.43.02 - 535.86.05 only */

typedef struct {
    unsigned int pid;
    unsigned long long timeStamp; /* CPU microseconds */
    unsigned int smUtil, memUtil, encUtil, decUtil;
} nvmlProcessUtilizationSample_t; /* 32 bytes */

typedef struct {
    unsigned int version;
    int sensorType;
    int temperature;
} nvmlTemperature_v1_t;                                                         /* 12 bytes */
#define nvmlTemperature_v1 NVML_STRUCT_VERSION(sizeof(nvmlTemperature_v1_t), 1) /* 0x0100000C */

/* Enumerations (4-byte enums in nvml.h; passed by value as int here). */
#define NVML_TEMPERATURE_GPU                0
#define NVML_TEMPERATURE_THRESHOLD_SHUTDOWN 0
#define NVML_TEMPERATURE_THRESHOLD_SLOWDOWN 1
#define NVML_TEMPERATURE_THRESHOLD_MEM_MAX  2
#define NVML_TEMPERATURE_THRESHOLD_GPU_MAX  3

#define NVML_CLOCK_GRAPHICS 0
#define NVML_CLOCK_SM       1
#define NVML_CLOCK_MEM      2
#define NVML_CLOCK_VIDEO    3

#define NVML_CLOCK_ID_CURRENT            0
#define NVML_CLOCK_ID_APP_CLOCK_TARGET   1
#define NVML_CLOCK_ID_APP_CLOCK_DEFAULT  2
#define NVML_CLOCK_ID_CUSTOMER_BOOST_MAX 3

#define NVML_PCIE_UTIL_TX_BYTES 0
#define NVML_PCIE_UTIL_RX_BYTES 1

#define NVML_COMPUTEMODE_DEFAULT           0
#define NVML_COMPUTEMODE_EXCLUSIVE_THREAD  1
#define NVML_COMPUTEMODE_PROHIBITED        2
#define NVML_COMPUTEMODE_EXCLUSIVE_PROCESS 3

#define NVML_FEATURE_DISABLED 0
#define NVML_FEATURE_ENABLED  1

#define NVML_MEMORY_ERROR_TYPE_CORRECTED   0
#define NVML_MEMORY_ERROR_TYPE_UNCORRECTED 1
#define NVML_VOLATILE_ECC                  0
#define NVML_AGGREGATE_ECC                 1

#define NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS 0
#define NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR           1

#define NVML_PSTATE_UNKNOWN 32

#define NVML_DEVICE_MIG_DISABLE 0
#define NVML_DEVICE_MIG_ENABLE  1

#define NVML_INIT_FLAG_NO_GPUS   1U
#define NVML_INIT_FLAG_NO_ATTACH 2U

#define NVML_VALUE_NOT_AVAILABLE_ULL 0xFFFFFFFFFFFFFFFFULL

/*
 * Brand, architecture and board part number (which the collector reads) and what clients
 * written against NVIDIA's bindings read and the collector does not: the 13.3.29 header
 * (NVIDIA/go-nvml gen/nvml/nvml.h at 2f9e261), unless a line says otherwise.
 */
#define NVML_DEVICE_PART_NUMBER_BUFFER_SIZE 80
#define NVML_NVLINK_MAX_LINKS               36 /* 13.3 header; older headers: 6, 12, 18 */

/* nvmlBrandType_t */
#define NVML_BRAND_UNKNOWN             0
#define NVML_BRAND_QUADRO              1
#define NVML_BRAND_TESLA               2
#define NVML_BRAND_NVS                 3
#define NVML_BRAND_GRID                4
#define NVML_BRAND_GEFORCE             5
#define NVML_BRAND_TITAN               6
#define NVML_BRAND_NVIDIA_VAPPS        7
#define NVML_BRAND_NVIDIA_VPC          8
#define NVML_BRAND_NVIDIA_VCS          9
#define NVML_BRAND_NVIDIA_VWS          10
#define NVML_BRAND_NVIDIA_CLOUD_GAMING 11
#define NVML_BRAND_QUADRO_RTX          12
#define NVML_BRAND_NVIDIA_RTX          13
#define NVML_BRAND_NVIDIA              14
#define NVML_BRAND_GEFORCE_RTX         15
#define NVML_BRAND_TITAN_RTX           16

/* nvmlDeviceArchitecture_t (an unsigned int) */
#define NVML_DEVICE_ARCH_KEPLER    2
#define NVML_DEVICE_ARCH_MAXWELL   3
#define NVML_DEVICE_ARCH_PASCAL    4
#define NVML_DEVICE_ARCH_VOLTA     5
#define NVML_DEVICE_ARCH_TURING    6
#define NVML_DEVICE_ARCH_AMPERE    7
#define NVML_DEVICE_ARCH_ADA       8
#define NVML_DEVICE_ARCH_HOPPER    9
#define NVML_DEVICE_ARCH_BLACKWELL 10
#define NVML_DEVICE_ARCH_RUBIN     13
#define NVML_DEVICE_ARCH_UNKNOWN   0xffffffffU

/* nvmlDriverModel_t (Windows only: Linux drivers answer NOT_SUPPORTED) */
#define NVML_DRIVER_WDDM 0
#define NVML_DRIVER_WDM  1
#define NVML_DRIVER_MCDM 2

/* nvmlValueType_t */
#define NVML_VALUE_TYPE_DOUBLE             0
#define NVML_VALUE_TYPE_UNSIGNED_INT       1
#define NVML_VALUE_TYPE_UNSIGNED_LONG      2
#define NVML_VALUE_TYPE_UNSIGNED_LONG_LONG 3
#define NVML_VALUE_TYPE_SIGNED_LONG_LONG   4
#define NVML_VALUE_TYPE_SIGNED_INT         5
#define NVML_VALUE_TYPE_UNSIGNED_SHORT     6
#define NVML_VALUE_TYPE_COUNT              7

typedef union {
    double dVal;
    int siVal;
    unsigned int uiVal;
    unsigned long ulVal;
    unsigned long long ullVal;
    signed long long sllVal;
    unsigned short usVal;
} nvmlValue_t; /* 8 bytes */

/* nvmlDeviceGetFieldValues: 40 bytes; the caller fills fieldId (and scopeId) of each. */
typedef struct {
    unsigned int fieldId;
    unsigned int scopeId;  /* e.g. the NVLink for per-link fields */
    long long timestamp;   /* CPU microseconds since 1970 */
    long long latencyUsec; /* how long the value took to update */
    int valueType;         /* nvmlValueType_t */
    nvmlReturn_t nvmlReturn;
    nvmlValue_t value; /* only valid when nvmlReturn is NVML_SUCCESS */
} nvmlFieldValue_t;

/*
 * NVLink and GPU fabric (13.3.29 header, NVIDIA/go-nvml gen/nvml/nvml.h at 2f9e261).
 * Scoped NVLink error counters: "Link ID needs to be specified in the scopeId field"; the header
 * notes them "unsupported for Blackwell+" (the value then fails on its own nvmlReturn).
 */
#define NVML_FI_DEV_NVLINK_ERROR_DL_REPLAY   161
#define NVML_FI_DEV_NVLINK_ERROR_DL_RECOVERY 162
#define NVML_FI_DEV_NVLINK_ERROR_DL_CRC      163

/*
 * What the driver says a GPU needs after an error (nvmlDeviceGpuRecoveryAction_t, an unsigned
 * int value): the field replaces the deprecated RESET_STATUS (226) and DRAIN_AND_RESET_STATUS
 * (227). Drivers without it answer NOT_SUPPORTED in the value's own nvmlReturn.
 */
#define NVML_FI_DEV_GET_GPU_RECOVERY_ACTION          230
#define NVML_GPU_RECOVERY_ACTION_NONE                0
#define NVML_GPU_RECOVERY_ACTION_GPU_RESET           1
#define NVML_GPU_RECOVERY_ACTION_NODE_REBOOT         2
#define NVML_GPU_RECOVERY_ACTION_DRAIN_P2P           3
#define NVML_GPU_RECOVERY_ACTION_DRAIN_AND_RESET     4
#define NVML_GPU_RECOVERY_ACTION_RECOVER_IMEX_DOMAIN 5
/*
 * NVLink data throughput counters in KiB, payload only (the header's RAW_TX/RX, 140 and 141, add
 * protocol overhead); scopeId = link, UINT_MAX sums every link (same header).
 */
#define NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX 138
#define NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX 139

/* nvmlIntNvLinkDeviceType_t */
#define NVML_NVLINK_DEVICE_TYPE_GPU     0x00
#define NVML_NVLINK_DEVICE_TYPE_IBMNPU  0x01
#define NVML_NVLINK_DEVICE_TYPE_SWITCH  0x02
#define NVML_NVLINK_DEVICE_TYPE_UNKNOWN 0xFF

/* nvmlNvlinkVersion_t: 1 = 1.0, 2 = 2.0, 3 = 2.2, 4 = 3.0, 5 = 3.1, 6 = 4.0, 7 = 5.0, 8 = 6.0 */
#define NVML_NVLINK_VERSION_INVALID 0
#define NVML_NVLINK_VERSION_6_0     8

#define NVML_GPU_FABRIC_UUID_LEN            16
#define NVML_GPU_FABRIC_STATE_NOT_SUPPORTED 0
#define NVML_GPU_FABRIC_STATE_NOT_STARTED   1
#define NVML_GPU_FABRIC_STATE_IN_PROGRESS   2
#define NVML_GPU_FABRIC_STATE_COMPLETED     3

/*
 * Between two GPUs (the same header): nvmlGpuP2PCapsIndex_t, nvmlGpuP2PStatus_t (the header's
 * own spelling of CHIPSET_NOT_SUPPORED kept beside the corrected one) and
 * nvmlGpuTopologyLevel_t, the closest common ancestor of two GPUs as `nvidia-smi topo -m` names
 * it (PIX, PXB, PHB, NODE, SYS; INTERNAL: two GPUs on one board).
 */
#define NVML_P2P_CAPS_INDEX_READ                   0
#define NVML_P2P_CAPS_INDEX_WRITE                  1
#define NVML_P2P_CAPS_INDEX_NVLINK                 2
#define NVML_P2P_CAPS_INDEX_ATOMICS                3
#define NVML_P2P_CAPS_INDEX_PCI                    4
#define NVML_P2P_STATUS_OK                         0
#define NVML_P2P_STATUS_CHIPSET_NOT_SUPPORED       1
#define NVML_P2P_STATUS_CHIPSET_NOT_SUPPORTED      1
#define NVML_P2P_STATUS_GPU_NOT_SUPPORTED          2
#define NVML_P2P_STATUS_IOH_TOPOLOGY_NOT_SUPPORTED 3
#define NVML_P2P_STATUS_DISABLED_BY_REGKEY         4
#define NVML_P2P_STATUS_NOT_SUPPORTED              5
#define NVML_P2P_STATUS_UNKNOWN                    6
#define NVML_TOPOLOGY_INTERNAL                     0
#define NVML_TOPOLOGY_SINGLE                       10
#define NVML_TOPOLOGY_MULTIPLE                     20
#define NVML_TOPOLOGY_HOSTBRIDGE                   30
#define NVML_TOPOLOGY_NODE                         40
#define NVML_TOPOLOGY_SYSTEM                       50

/* nvmlDeviceGetGpuFabricInfo (deprecated in 13.0, kept as the fallback): 28 bytes. */
typedef struct {
    unsigned char clusterUuid[NVML_GPU_FABRIC_UUID_LEN];
    nvmlReturn_t status; /* only meaningful when state is COMPLETED */
    unsigned int cliqueId;
    unsigned char state; /* nvmlGpuFabricState_t, NVML_GPU_FABRIC_STATE_* */
} nvmlGpuFabricInfo_t;

/* nvmlDeviceGetGpuFabricInfoV with version nvmlGpuFabricInfo_v3: 40 bytes. */
typedef struct {
    unsigned int version;
    unsigned char clusterUuid[NVML_GPU_FABRIC_UUID_LEN];
    nvmlReturn_t status;
    unsigned int cliqueId;
    unsigned char state;
    unsigned int healthMask;     /* NVML_GPU_FABRIC_HEALTH_MASK_* fields */
    unsigned char healthSummary; /* NVML_GPU_FABRIC_HEALTH_SUMMARY_* */
} nvmlGpuFabricInfo_v3_t;
/* 0x03000028 */
#define nvmlGpuFabricInfo_v3 NVML_STRUCT_VERSION(sizeof(nvmlGpuFabricInfo_v3_t), 3)
/* The v2 layout is v3 without healthSummary: 36 bytes. */
#define NVML_GPU_FABRIC_INFO_V2_SIZE 36
#define nvmlGpuFabricInfo_v2         NVML_STRUCT_VERSION(NVML_GPU_FABRIC_INFO_V2_SIZE, 2) /* 0x02000024 */

/* Clock event ("throttle") reason bits. */
#define NVML_CLOCKS_EVENT_GPU_IDLE           0x0000000000000001ULL
#define NVML_CLOCKS_EVENT_APP_CLOCKS_SETTING 0x0000000000000002ULL
#define NVML_CLOCKS_EVENT_SW_POWER_CAP       0x0000000000000004ULL
#define NVML_CLOCKS_EVENT_HW_SLOWDOWN        0x0000000000000008ULL
#define NVML_CLOCKS_EVENT_SYNC_BOOST         0x0000000000000010ULL
#define NVML_CLOCKS_EVENT_SW_THERMAL         0x0000000000000020ULL
#define NVML_CLOCKS_EVENT_HW_THERMAL         0x0000000000000040ULL
#define NVML_CLOCKS_EVENT_HW_POWER_BRAKE     0x0000000000000080ULL
#define NVML_CLOCKS_EVENT_DISPLAY_CLOCK      0x0000000000000100ULL
#define NVML_CLOCKS_EVENT_ALL                0x00000000000001FFULL

/*
 * Every NVML function gpudoctor or the simulator uses: X(name, parameter list).
 * All return nvmlReturn_t except nvmlErrorString, declared separately.
 * The collector builds its dlsym table from this list; the simulator's definitions are checked
 * against the same prototypes, so the two cannot disagree on a signature.
 */
#define NVML_FUNCTIONS(X)                                                                          \
    X(nvmlInit, (void))                                                                            \
    X(nvmlInit_v2, (void))                                                                         \
    X(nvmlInitWithFlags, (unsigned int flags))                                                     \
    X(nvmlShutdown, (void))                                                                        \
    X(nvmlSystemGetDriverVersion, (char *version, unsigned int length))                            \
    X(nvmlSystemGetNVMLVersion, (char *version, unsigned int length))                              \
    X(nvmlSystemGetCudaDriverVersion, (int *cudaDriverVersion))                                    \
    X(nvmlSystemGetCudaDriverVersion_v2, (int *cudaDriverVersion))                                 \
    X(nvmlSystemGetProcessName, (unsigned int pid, char *name, unsigned int length))               \
    X(nvmlDeviceGetCount, (unsigned int *deviceCount))                                             \
    X(nvmlDeviceGetCount_v2, (unsigned int *deviceCount))                                          \
    X(nvmlDeviceGetHandleByIndex, (unsigned int index, nvmlDevice_t *device))                      \
    X(nvmlDeviceGetHandleByIndex_v2, (unsigned int index, nvmlDevice_t *device))                   \
    X(nvmlDeviceGetHandleByUUID, (const char *uuid, nvmlDevice_t *device))                         \
    X(nvmlDeviceGetHandleByPciBusId_v2, (const char *pciBusId, nvmlDevice_t *device))              \
    X(nvmlDeviceGetIndex, (nvmlDevice_t device, unsigned int *index))                              \
    X(nvmlDeviceGetName, (nvmlDevice_t device, char *name, unsigned int length))                   \
    X(nvmlDeviceGetUUID, (nvmlDevice_t device, char *uuid, unsigned int length))                   \
    X(nvmlDeviceGetSerial, (nvmlDevice_t device, char *serial, unsigned int length))               \
    X(nvmlDeviceGetVbiosVersion, (nvmlDevice_t device, char *version, unsigned int length))        \
    X(nvmlDeviceGetMinorNumber, (nvmlDevice_t device, unsigned int *minorNumber))                  \
    X(nvmlDeviceGetPciInfo, (nvmlDevice_t device, nvmlPciInfoLegacy_t * pci))                      \
    X(nvmlDeviceGetPciInfo_v2, (nvmlDevice_t device, nvmlPciInfoLegacy_t * pci))                   \
    X(nvmlDeviceGetPciInfo_v3, (nvmlDevice_t device, nvmlPciInfo_t * pci))                         \
    X(nvmlDeviceGetCudaComputeCapability, (nvmlDevice_t device, int *major, int *minor))           \
    X(nvmlDeviceGetMemoryInfo, (nvmlDevice_t device, nvmlMemory_t * memory))                       \
    X(nvmlDeviceGetMemoryInfo_v2, (nvmlDevice_t device, nvmlMemory_v2_t * memory))                 \
    X(nvmlDeviceGetBAR1MemoryInfo, (nvmlDevice_t device, nvmlBAR1Memory_t * bar1Memory))           \
    X(nvmlDeviceGetUtilizationRates, (nvmlDevice_t device, nvmlUtilization_t * utilization))       \
    X(nvmlDeviceGetEncoderUtilization,                                                             \
      (nvmlDevice_t device, unsigned int *utilization, unsigned int *samplingPeriodUs))            \
    X(nvmlDeviceGetDecoderUtilization,                                                             \
      (nvmlDevice_t device, unsigned int *utilization, unsigned int *samplingPeriodUs))            \
    X(nvmlDeviceGetTemperature, (nvmlDevice_t device, int sensorType, unsigned int *temp))         \
    X(nvmlDeviceGetTemperatureV, (nvmlDevice_t device, nvmlTemperature_v1_t * temperature))        \
    X(nvmlDeviceGetTemperatureThreshold,                                                           \
      (nvmlDevice_t device, int thresholdType, unsigned int *temp))                                \
    X(nvmlDeviceGetPowerUsage, (nvmlDevice_t device, unsigned int *power))                         \
    X(nvmlDeviceGetPowerManagementLimit, (nvmlDevice_t device, unsigned int *limit))               \
    X(nvmlDeviceGetPowerManagementDefaultLimit, (nvmlDevice_t device, unsigned int *defaultLimit)) \
    X(nvmlDeviceGetPowerManagementLimitConstraints,                                                \
      (nvmlDevice_t device, unsigned int *minLimit, unsigned int *maxLimit))                       \
    X(nvmlDeviceGetEnforcedPowerLimit, (nvmlDevice_t device, unsigned int *limit))                 \
    X(nvmlDeviceGetTotalEnergyConsumption, (nvmlDevice_t device, unsigned long long *energy))      \
    X(nvmlDeviceGetClockInfo, (nvmlDevice_t device, int type, unsigned int *clock))                \
    X(nvmlDeviceGetMaxClockInfo, (nvmlDevice_t device, int type, unsigned int *clock))             \
    X(nvmlDeviceGetClock,                                                                          \
      (nvmlDevice_t device, int clockType, int clockId, unsigned int *clockMHz))                   \
    X(nvmlDeviceGetApplicationsClock,                                                              \
      (nvmlDevice_t device, int clockType, unsigned int *clockMHz))                                \
    X(nvmlDeviceGetDefaultApplicationsClock,                                                       \
      (nvmlDevice_t device, int clockType, unsigned int *clockMHz))                                \
    X(nvmlDeviceGetCurrentClocksEventReasons, (nvmlDevice_t device, unsigned long long *reasons))  \
    X(nvmlDeviceGetCurrentClocksThrottleReasons,                                                   \
      (nvmlDevice_t device, unsigned long long *reasons))                                          \
    X(nvmlDeviceGetSupportedClocksEventReasons,                                                    \
      (nvmlDevice_t device, unsigned long long *reasons))                                          \
    X(nvmlDeviceGetSupportedClocksThrottleReasons,                                                 \
      (nvmlDevice_t device, unsigned long long *reasons))                                          \
    X(nvmlDeviceGetPerformanceState, (nvmlDevice_t device, int *pState))                           \
    X(nvmlDeviceGetPowerState, (nvmlDevice_t device, int *pState))                                 \
    X(nvmlDeviceGetFanSpeed, (nvmlDevice_t device, unsigned int *speed))                           \
    X(nvmlDeviceGetFanSpeed_v2, (nvmlDevice_t device, unsigned int fan, unsigned int *speed))      \
    X(nvmlDeviceGetNumFans, (nvmlDevice_t device, unsigned int *numFans))                          \
    X(nvmlDeviceGetPersistenceMode, (nvmlDevice_t device, int *mode))                              \
    X(nvmlDeviceGetComputeMode, (nvmlDevice_t device, int *mode))                                  \
    X(nvmlDeviceGetDisplayMode, (nvmlDevice_t device, int *display))                               \
    X(nvmlDeviceGetDisplayActive, (nvmlDevice_t device, int *isActive))                            \
    X(nvmlDeviceGetMigMode,                                                                        \
      (nvmlDevice_t device, unsigned int *currentMode, unsigned int *pendingMode))                 \
    X(nvmlDeviceGetMaxMigDeviceCount, (nvmlDevice_t device, unsigned int *count))                  \
    X(nvmlDeviceGetMigDeviceHandleByIndex,                                                         \
      (nvmlDevice_t device, unsigned int index, nvmlDevice_t *migDevice))                          \
    X(nvmlDeviceGetEccMode, (nvmlDevice_t device, int *current, int *pending))                     \
    X(nvmlDeviceGetTotalEccErrors,                                                                 \
      (nvmlDevice_t device, int errorType, int counterType, unsigned long long *eccCounts))        \
    X(nvmlDeviceGetRetiredPages,                                                                   \
      (nvmlDevice_t device, int cause, unsigned int *pageCount, unsigned long long *addresses))    \
    X(nvmlDeviceGetRetiredPages_v2,                                                                \
      (nvmlDevice_t device, int cause, unsigned int *pageCount, unsigned long long *addresses,     \
       unsigned long long *timestamps))                                                            \
    X(nvmlDeviceGetRetiredPagesPendingStatus, (nvmlDevice_t device, int *isPending))               \
    X(nvmlDeviceGetRemappedRows,                                                                   \
      (nvmlDevice_t device, unsigned int *corrRows, unsigned int *uncRows,                         \
       unsigned int *isPending, unsigned int *failureOccurred))                                    \
    X(nvmlDeviceGetCurrPcieLinkGeneration, (nvmlDevice_t device, unsigned int *currLinkGen))       \
    X(nvmlDeviceGetMaxPcieLinkGeneration, (nvmlDevice_t device, unsigned int *maxLinkGen))         \
    X(nvmlDeviceGetGpuMaxPcieLinkGeneration,                                                       \
      (nvmlDevice_t device, unsigned int *maxLinkGenDevice))                                       \
    X(nvmlDeviceGetCurrPcieLinkWidth, (nvmlDevice_t device, unsigned int *currLinkWidth))          \
    X(nvmlDeviceGetMaxPcieLinkWidth, (nvmlDevice_t device, unsigned int *maxLinkWidth))            \
    X(nvmlDeviceGetPcieThroughput, (nvmlDevice_t device, int counter, unsigned int *value))        \
    X(nvmlDeviceGetPcieReplayCounter, (nvmlDevice_t device, unsigned int *value))                  \
    X(nvmlDeviceGetComputeRunningProcesses,                                                        \
      (nvmlDevice_t device, unsigned int *infoCount, nvmlProcessInfo_v1_t *infos))                 \
    X(nvmlDeviceGetComputeRunningProcesses_v2,                                                     \
      (nvmlDevice_t device, unsigned int *infoCount, nvmlProcessInfo_v2_t *infos))                 \
    X(nvmlDeviceGetComputeRunningProcesses_v3,                                                     \
      (nvmlDevice_t device, unsigned int *infoCount, void *infos))                                 \
    X(nvmlDeviceGetGraphicsRunningProcesses,                                                       \
      (nvmlDevice_t device, unsigned int *infoCount, nvmlProcessInfo_v1_t *infos))                 \
    X(nvmlDeviceGetGraphicsRunningProcesses_v2,                                                    \
      (nvmlDevice_t device, unsigned int *infoCount, nvmlProcessInfo_v2_t *infos))                 \
    X(nvmlDeviceGetGraphicsRunningProcesses_v3,                                                    \
      (nvmlDevice_t device, unsigned int *infoCount, void *infos))                                 \
    X(nvmlDeviceGetMPSComputeRunningProcesses_v3,                                                  \
      (nvmlDevice_t device, unsigned int *infoCount, void *infos))                                 \
    X(nvmlDeviceGetProcessUtilization,                                                             \
      (nvmlDevice_t device, nvmlProcessUtilizationSample_t * utilization,                          \
       unsigned int *processSamplesCount, unsigned long long lastSeenTimeStamp))                   \
    X(nvmlDeviceGetNvLinkState, (nvmlDevice_t device, unsigned int link, int *isActive))           \
    X(nvmlDeviceGetNvLinkVersion, (nvmlDevice_t device, unsigned int link, unsigned int *version)) \
    X(nvmlDeviceGetNvLinkRemotePciInfo_v2,                                                         \
      (nvmlDevice_t device, unsigned int link, nvmlPciInfo_t *pci))                                \
    X(nvmlDeviceGetNvLinkRemoteDeviceType,                                                         \
      (nvmlDevice_t device, unsigned int link, int *pNvLinkDeviceType))                            \
    X(nvmlDeviceGetFieldValues, (nvmlDevice_t device, int valuesCount, nvmlFieldValue_t *values))  \
    X(nvmlDeviceGetGpuFabricInfoV, (nvmlDevice_t device, nvmlGpuFabricInfo_v3_t * gpuFabricInfo))  \
    X(nvmlDeviceGetGpuFabricInfo, (nvmlDevice_t device, nvmlGpuFabricInfo_t * gpuFabricInfo))      \
    X(nvmlDeviceGetTopologyCommonAncestor,                                                         \
      (nvmlDevice_t device1, nvmlDevice_t device2, int *pathInfo))                                 \
    X(nvmlDeviceGetP2PStatus,                                                                      \
      (nvmlDevice_t device1, nvmlDevice_t device2, int p2pIndex, int *p2pStatus))                  \
    X(nvmlDeviceGetBrand, (nvmlDevice_t device, int *type))                                        \
    X(nvmlDeviceGetArchitecture, (nvmlDevice_t device, unsigned int *arch))                        \
    X(nvmlDeviceGetBoardPartNumber, (nvmlDevice_t device, char *partNumber, unsigned int length))  \
    X(nvmlDeviceGetAccountingMode, (nvmlDevice_t device, int *mode))

/*
 * Functions the simulator exports for clients written against NVIDIA's bindings (nvitop,
 * pynvml, go-nvml users) that gpudoctor's collector does not call. A list apart on purpose:
 * the collector resolves every NVML_FUNCTIONS entry and its fault-injection test expects it to
 * call each one; a function the collector starts to read moves to NVML_FUNCTIONS.
 */
#define NVML_CLIENT_FUNCTIONS(X)                                                                   \
    X(nvmlDeviceGetDriverModel, (nvmlDevice_t device, int *current, int *pending))                 \
    X(nvmlDeviceGetDriverModel_v2, (nvmlDevice_t device, int *current, int *pending))              \
    X(nvmlDeviceGetMPSComputeRunningProcesses,                                                     \
      (nvmlDevice_t device, unsigned int *infoCount, nvmlProcessInfo_v1_t *infos))                 \
    X(nvmlDeviceGetMPSComputeRunningProcesses_v2,                                                  \
      (nvmlDevice_t device, unsigned int *infoCount, nvmlProcessInfo_v2_t *infos))

/* The one NVML function that does not return nvmlReturn_t. */
typedef const char *nvmlErrorString_fn(nvmlReturn_t result);

#define NVML_DECLARE_FN_TYPE(name, params) typedef nvmlReturn_t name##_fn params;
NVML_FUNCTIONS(NVML_DECLARE_FN_TYPE)
NVML_CLIENT_FUNCTIONS(NVML_DECLARE_FN_TYPE)
#undef NVML_DECLARE_FN_TYPE

/* The name of a return code ("GPU_IS_LOST"), or NULL for an unknown one. */
const char *nvml_rc_name(nvmlReturn_t rc);
/* The return code of a name, as nvml_rc_name gives it (also accepts "NVML_ERROR_..."); -1 if none.
 */
nvmlReturn_t nvml_rc_from_name(const char *name);

/* CUDA driver version encoding: 12040 = 12.4. */
#define NVML_CUDA_DRIVER_VERSION_MAJOR(v) ((v) / 1000)
#define NVML_CUDA_DRIVER_VERSION_MINOR(v) (((v) % 1000) / 10)

#endif
