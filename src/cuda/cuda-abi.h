/*
 * The CUDA driver API (libcuda.so.1) as far as gpudoctor bench and the CUDA simulator use it.
 *
 * Every value and signature here is taken from NVIDIA's public cuda.h of CUDA 13.0
 * (CUDA_VERSION 13000, /usr/local/cuda/include/cuda.h of the 13.0 toolkit); nothing is guessed.
 * We declare the ABI ourselves so that nothing links against CUDA at build time: the driver is
 * dlopen()ed at run time (src/cuda/cuda-lib.c). tests/unit/test-cuda-abi.c asserts the literal
 * values; tests/e2e/cuda-abi-header.sh compiles tests/cuda/cuda-abi-check.c against the
 * real header (when one is installed) so that every constant and signature below is checked by
 * the compiler against NVIDIA's.
 *
 * Versioned entry points. cuda.h maps the plain names to versioned symbols with #defines
 * (cuMemAlloc -> cuMemAlloc_v2, cuEventElapsedTime -> cuEventElapsedTime_v2, ...). A program
 * that dlopens the driver must ask for the versioned symbol itself: the unversioned ones are the
 * old ABI (32-bit sizes and device pointers for cuMemAlloc, cuMemcpy*, cuMemGetInfo). Names here
 * are the symbols the driver exports. CUDA 13 removed cuCtxCreate_v2/_v3 (the 13.0 header maps
 * cuCtxCreate to cuCtxCreate_v4, which takes a CUctxCreateParams); we use the device's primary
 * context (cuDevicePrimaryCtxRetain), which every driver since CUDA 7 has, and avoid the change.
 * cuEventElapsedTime_v2 is new in the 12.x series; older drivers export only the unversioned
 * cuEventElapsedTime with the same signature, so the loader falls back to it.
 */
#ifndef GPUDOCTOR_CUDA_ABI_H
#define GPUDOCTOR_CUDA_ABI_H

/* The version of cuda.h these declarations were taken from. */
#define GPUDOCTOR_CUDA_ABI_HEADER_VERSION 13000

/*
 * Constants, as (name, value). Under GPUDOCTOR_CUDA_ABI_CHECK (the header check, compiled with
 * NVIDIA's cuda.h) only the lists are defined, and each value is asserted against the header.
 */
#define CUDA_ABI_RESULTS(X)                                                                        \
    X(CUDA_SUCCESS, 0)                                                                             \
    X(CUDA_ERROR_INVALID_VALUE, 1)                                                                 \
    X(CUDA_ERROR_OUT_OF_MEMORY, 2)                                                                 \
    X(CUDA_ERROR_NOT_INITIALIZED, 3)                                                               \
    X(CUDA_ERROR_DEINITIALIZED, 4)                                                                 \
    X(CUDA_ERROR_STUB_LIBRARY, 34)                                                                 \
    X(CUDA_ERROR_DEVICE_UNAVAILABLE, 46)                                                           \
    X(CUDA_ERROR_NO_DEVICE, 100)                                                                   \
    X(CUDA_ERROR_INVALID_DEVICE, 101)                                                              \
    X(CUDA_ERROR_INVALID_IMAGE, 200)                                                               \
    X(CUDA_ERROR_INVALID_CONTEXT, 201)                                                             \
    X(CUDA_ERROR_NO_BINARY_FOR_GPU, 209)                                                           \
    X(CUDA_ERROR_ECC_UNCORRECTABLE, 214)                                                           \
    X(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, 217)                                                     \
    X(CUDA_ERROR_INVALID_PTX, 218)                                                                 \
    X(CUDA_ERROR_NVLINK_UNCORRECTABLE, 220)                                                        \
    X(CUDA_ERROR_JIT_COMPILER_NOT_FOUND, 221)                                                      \
    X(CUDA_ERROR_UNSUPPORTED_PTX_VERSION, 222)                                                     \
    X(CUDA_ERROR_INVALID_HANDLE, 400)                                                              \
    X(CUDA_ERROR_NOT_FOUND, 500)                                                                   \
    X(CUDA_ERROR_NOT_READY, 600)                                                                   \
    X(CUDA_ERROR_ILLEGAL_ADDRESS, 700)                                                             \
    X(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, 701)                                                     \
    X(CUDA_ERROR_LAUNCH_TIMEOUT, 702)                                                              \
    X(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, 704)                                                 \
    X(CUDA_ERROR_HARDWARE_STACK_ERROR, 714)                                                        \
    X(CUDA_ERROR_LAUNCH_FAILED, 719)                                                               \
    X(CUDA_ERROR_NOT_PERMITTED, 800)                                                               \
    X(CUDA_ERROR_NOT_SUPPORTED, 801)                                                               \
    X(CUDA_ERROR_SYSTEM_NOT_READY, 802)                                                            \
    X(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, 803)                                                      \
    X(CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE, 804)                                              \
    X(CUDA_ERROR_TIMEOUT, 909)                                                                     \
    X(CUDA_ERROR_UNKNOWN, 999)

#define CUDA_ABI_ATTRIBUTES(X)                                                                     \
    X(CU_DEVICE_ATTRIBUTE_CLOCK_RATE, 13)                                                          \
    X(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 16)                                                \
    X(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, 33)                                                          \
    X(CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, 34)                                                       \
    X(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, 36)                                                   \
    X(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, 37)                                             \
    X(CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT, 40)                                                  \
    X(CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 41)                                                  \
    X(CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, 50)                                                       \
    X(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 75)                                            \
    X(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 76)

/* Flags (#defines or enum values in cuda.h). */
#define CUDA_ABI_FLAGS(X)                                                                          \
    X(CU_STREAM_DEFAULT, 0x0)                                                                      \
    X(CU_STREAM_NON_BLOCKING, 0x1)                                                                 \
    X(CU_EVENT_DEFAULT, 0x0)                                                                       \
    X(CU_EVENT_BLOCKING_SYNC, 0x1)                                                                 \
    X(CU_MEMHOSTALLOC_PORTABLE, 0x01)                                                              \
    X(CU_JIT_INFO_LOG_BUFFER, 3)                                                                   \
    X(CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, 4)                                                        \
    X(CU_JIT_ERROR_LOG_BUFFER, 5)                                                                  \
    X(CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, 6)

#ifndef GPUDOCTOR_CUDA_ABI_CHECK

#include <stddef.h>

typedef int CUresult; /* an enum in cuda.h: 4 bytes, CUDA_ABI_RESULTS */
typedef int CUdevice; /* CUdevice_v1 */
typedef int CUdevice_attribute;
typedef int CUjit_option;
typedef unsigned long long CUdeviceptr; /* CUdeviceptr_v2 on 64-bit hosts */
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;

#define GPUDOCTOR_CUDA_DEFINE(name, value) enum { name = (value) };
CUDA_ABI_RESULTS(GPUDOCTOR_CUDA_DEFINE)
CUDA_ABI_ATTRIBUTES(GPUDOCTOR_CUDA_DEFINE)
CUDA_ABI_FLAGS(GPUDOCTOR_CUDA_DEFINE)
#undef GPUDOCTOR_CUDA_DEFINE

#endif /* GPUDOCTOR_CUDA_ABI_CHECK */

/*
 * The entry points, as (symbol, parameters); every one returns CUresult. The loader resolves
 * them all (CUDA_OPTIONAL_FUNCTIONS may be missing: a fallback is named beside each), and the
 * simulator defines exactly these.
 */
#define CUDA_FUNCTIONS(X)                                                                          \
    X(cuInit, (unsigned int Flags))                                                                \
    X(cuDriverGetVersion, (int *driverVersion))                                                    \
    X(cuDeviceGetCount, (int *count))                                                              \
    X(cuDeviceGet, (CUdevice * device, int ordinal))                                               \
    X(cuDeviceGetName, (char *name, int len, CUdevice dev))                                        \
    X(cuDeviceGetAttribute, (int *pi, CUdevice_attribute attrib, CUdevice dev))                    \
    X(cuDeviceGetPCIBusId, (char *pciBusId, int len, CUdevice dev))                                \
    X(cuDeviceTotalMem_v2, (size_t * bytes, CUdevice dev))                                         \
    X(cuDeviceCanAccessPeer, (int *canAccessPeer, CUdevice dev, CUdevice peerDev))                 \
    X(cuDevicePrimaryCtxRetain, (CUcontext * pctx, CUdevice dev))                                  \
    X(cuDevicePrimaryCtxRelease_v2, (CUdevice dev))                                                \
    X(cuCtxSetCurrent, (CUcontext ctx))                                                            \
    X(cuCtxSynchronize, (void))                                                                    \
    X(cuCtxEnablePeerAccess, (CUcontext peerContext, unsigned int Flags))                          \
    X(cuMemGetInfo_v2, (size_t * free, size_t * total))                                            \
    X(cuMemAlloc_v2, (CUdeviceptr * dptr, size_t bytesize))                                        \
    X(cuMemFree_v2, (CUdeviceptr dptr))                                                            \
    X(cuMemHostAlloc, (void **pp, size_t bytesize, unsigned int Flags))                            \
    X(cuMemFreeHost, (void *p))                                                                    \
    X(cuMemcpyHtoD_v2, (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount))             \
    X(cuMemcpyDtoH_v2, (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount))                   \
    X(cuMemcpyDtoD_v2, (CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount))           \
    X(cuMemcpyHtoDAsync_v2,                                                                        \
      (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream))            \
    X(cuMemcpyDtoHAsync_v2,                                                                        \
      (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream))                  \
    X(cuMemcpyPeer, (CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,           \
                     CUcontext srcContext, size_t ByteCount))                                      \
    X(cuMemcpyPeerAsync, (CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,      \
                          CUcontext srcContext, size_t ByteCount, CUstream hStream))               \
    X(cuStreamCreate, (CUstream * phStream, unsigned int Flags))                                   \
    X(cuStreamSynchronize, (CUstream hStream))                                                     \
    X(cuStreamDestroy_v2, (CUstream hStream))                                                      \
    X(cuEventCreate, (CUevent * phEvent, unsigned int Flags))                                      \
    X(cuEventRecord, (CUevent hEvent, CUstream hStream))                                           \
    X(cuEventSynchronize, (CUevent hEvent))                                                        \
    X(cuEventElapsedTime, (float *pMilliseconds, CUevent hStart, CUevent hEnd))                    \
    X(cuEventDestroy_v2, (CUevent hEvent))                                                         \
    X(cuModuleLoadDataEx, (CUmodule * module, const void *image, unsigned int numOptions,          \
                           CUjit_option *options, void **optionValues))                            \
    X(cuModuleGetFunction, (CUfunction * hfunc, CUmodule hmod, const char *name))                  \
    X(cuModuleUnload, (CUmodule hmod))                                                             \
    X(cuLaunchKernel,                                                                              \
      (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,          \
       unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,                     \
       unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra))          \
    X(cuGetErrorName, (CUresult error, const char **pStr))                                         \
    X(cuGetErrorString, (CUresult error, const char **pStr))

/* Asked for first when the driver has them; the loader falls back to the CUDA_FUNCTIONS entry of
 * the same signature (cuEventElapsedTime_v2 -> cuEventElapsedTime). */
#define CUDA_OPTIONAL_FUNCTIONS(X)                                                                 \
    X(cuEventElapsedTime_v2, (float *pMilliseconds, CUevent hStart, CUevent hEnd))

#ifndef GPUDOCTOR_CUDA_ABI_CHECK
#define GPUDOCTOR_CUDA_FN_TYPE(name, params) typedef CUresult name##_fn params;
CUDA_FUNCTIONS(GPUDOCTOR_CUDA_FN_TYPE)
CUDA_OPTIONAL_FUNCTIONS(GPUDOCTOR_CUDA_FN_TYPE)
#undef GPUDOCTOR_CUDA_FN_TYPE
#endif

#endif
