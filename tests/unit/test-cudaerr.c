/* The reported-error catalogue (data/cuda-errors.tsv): the texts people paste are recognised as
 * the error they are (number, name, kind), case-insensitively and inside longer lines, the longest
 * match winning; what is not in the catalogue is not recognised. */
#include "data/cudaerr.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

static void expect(const char *text, const char *name, int32_t number, enum cudaerr_kind kind)
{
    const struct cudaerr_info *e = cudaerr_match(text);

    if (e == NULL)
        fail_msg("'%s' not recognised, want %s", text, name);
    if (strcmp(e->name, name) != 0 || e->number != number || e->kind != kind)
        fail_msg("'%s' matched %s %d kind %d, want %s %d kind %d", text, e->name, e->number,
                 (int)e->kind, name, number, (int)kind);
}

static void test_cuda_texts(void **state)
{
    (void)state;
    expect("ggml_cuda_init: failed to initialize CUDA: system not yet initialized",
           "cudaErrorSystemNotReady", 802, CUDAERR_NOT_READY);
    expect("RuntimeError: CUDA error: all CUDA-capable devices are busy or unavailable",
           "cudaErrorDevicesUnavailable", 46, CUDAERR_BUSY);
    expect("CUDA-capable device(s) is/are busy or unavailable", "cudaErrorDevicesUnavailable", 46,
           CUDAERR_BUSY);
    expect("cudaGetDeviceCount returned 100 -> NO CUDA-CAPABLE DEVICE IS DETECTED",
           "cudaErrorNoDevice", 100, CUDAERR_NO_DEVICE);
    expect("CUDA driver version is insufficient for CUDA runtime version",
           "cudaErrorInsufficientDriver", 35, CUDAERR_OTHER);
    expect("forward compatibility was attempted on non supported HW",
           "cudaErrorCompatNotSupportedOnDevice", 804, CUDAERR_OTHER);
    expect("system has unsupported display driver / cuda driver combination",
           "cudaErrorSystemDriverMismatch", 803, CUDAERR_OTHER);
    expect("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
           "cudaErrorMemoryAllocation", 2, CUDAERR_OOM);
    expect("tensorflow.python.framework.errors_impl.ResourceExhaustedError:  OOM when allocating "
           "tensor with shape[32,1024,64,64] and type float on "
           "/job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc",
           "OOM when allocating tensor", -1, CUDAERR_OOM);
    expect(
        "RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`",
        "CUBLAS_STATUS_ALLOC_FAILED", 3, CUDAERR_OOM);
    /* the kernel's OOM killer is host RAM, not CUDA's 2 */
    expect("Out of memory: Killed process 4121 (python) total-vm:81234kB", "kernel OOM kill", -1,
           CUDAERR_OTHER);
    expect("Memory cgroup out of memory: Killed process 629 (onmt_train)", "kernel OOM kill", -1,
           CUDAERR_OTHER);
    expect("CUDA error: no kernel image is available for execution on the device",
           "cudaErrorNoKernelImageForDevice", 209, CUDAERR_NO_KERNEL);
    expect("the provided PTX was compiled with an unsupported toolchain.",
           "cudaErrorUnsupportedPtxVersion", 222, CUDAERR_OTHER);
    expect("CUDA error: invalid device ordinal", "cudaErrorInvalidDevice", 101, CUDAERR_OTHER);
    expect("CUDA error: unknown error", "cudaErrorUnknown", 999, CUDAERR_CUDA_UNKNOWN);
    expect("CUDA initialization error", "cudaErrorInitializationError", 3, CUDAERR_OTHER);
}

static void test_names_and_frameworks(void **state)
{
    (void)state;
    /* the driver API's name, as programs print it */
    expect("cuInit failed: CUDA_ERROR_SYSTEM_NOT_READY", "CUDA_ERROR_SYSTEM_NOT_READY", 802,
           CUDAERR_NOT_READY);
    expect("error 46 (cudaErrorDevicesUnavailable)", "cudaErrorDevicesUnavailable", 46,
           CUDAERR_BUSY);
    expect("torch.cuda.is_available() returns False", "torch.cuda.is_available() False", -1,
           CUDAERR_NO_DEVICE);
    expect("the following returns false `torch.cuda.is_available()`",
           "torch.cuda.is_available() False", -1, CUDAERR_NO_DEVICE);
    expect("RuntimeError: Found no NVIDIA driver on your system. Please check that you have an "
           "NVIDIA GPU",
           "Found no NVIDIA driver", -1, CUDAERR_NO_DRIVER);
    expect("NCCL error in: ProcessGroupNCCL.cpp:1191, unhandled system error (run with "
           "NCCL_DEBUG=INFO for details)",
           "ncclSystemError", 2, CUDAERR_NCCL_FAILED);
}

/* 216, the container toolkit's timeout and PyTorch's killed workers (added with issue 17's corpus)
 */
static void test_refusals_and_timeouts(void **state)
{
    (void)state;
    expect("cudaErrorDeviceAlreadyInUse: exclusive-thread device already in use by a different "
           "thread",
           "cudaErrorDeviceAlreadyInUse", 216, CUDAERR_BUSY);
    expect("F tensorflow/stream_executor/cuda/cuda_driver.cc:383] Check failed: CUDA_SUCCESS == "
           "dynload::cuCtxSetCurrent(context) (0 vs. 216)",
           "CUDA_ERROR_CONTEXT_ALREADY_IN_USE", 216, CUDAERR_BUSY);
    expect("nvidia-container-cli: initialization error: driver error: timed out\\n",
           "driver error: timed out", -1, CUDAERR_SLOW_INIT);
    expect("nvidia-container-cli: initialization error: driver rpc error: timed out: unknown.",
           "driver error: timed out", -1, CUDAERR_SLOW_INIT);
    /* torch/cuda/__init__.py's warnings about a GPU its build has no code for, as printed */
    expect("NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the "
           "current PyTorch installation.\nThe current PyTorch install supports CUDA "
           "capabilities sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90.",
           "GPU not supported by this build", -1, CUDAERR_NO_KERNEL);
    expect("Found GPU0 GeForce GTX 960M which is of cuda capability 5.0.\n    PyTorch no longer "
           "supports this GPU because it is too old.",
           "GPU too old for this build", -1, CUDAERR_NO_KERNEL);
    expect("Found GPU0 Tesla K80 which is of compute capability (CC) 3.7.\nThe following list "
           "shows the CCs this version of PyTorch was built for and the hardware CCs it supports:",
           "GPU not supported by this build", -1, CUDAERR_NO_KERNEL);
    /* containers: nvidia-smi inside one that lost its GPUs, docker without a GPU runtime */
    expect("Failed to initialize NVML: Unknown Error", "NVML_ERROR_UNKNOWN", 999,
           CUDAERR_NVML_UNKNOWN);
    expect("docker: Error response from daemon: could not select device driver \"\" with "
           "capabilities: [[gpu]].",
           "could not select device driver", -1, CUDAERR_NO_GPU_RUNTIME);
    /* CUDA and cuDNN libraries that cannot load; the driver's own libcuda is no_driver */
    expect("ImportError: libcublas.so.9.1: cannot open shared object file: No such file or "
           "directory",
           "CUDA library not found", -1, CUDAERR_CUDA_LIB_MISSING);
    expect("Could not load dynamic library 'libcudart.so.11.0'; dlerror: libcudart.so.11.0: "
           "cannot open shared object file: No such file or directory",
           "CUDA library not found", -1, CUDAERR_CUDA_LIB_MISSING);
    expect("Could not load dynamic library 'libcudart.so.10.1'", "Could not load dynamic library",
           -1, CUDAERR_CUDA_LIB_MISSING);
    expect("Could not load library libcudnn_cnn_infer.so.8. Error: libcudnn_cnn_infer.so.8: "
           "cannot open shared object file: No such file or directory",
           "cuDNN not found", -1, CUDAERR_CUDNN_MISSING);
    expect("Error: Could not load library libcudnn_cnn_infer.so.8", "Could not load library", -1,
           CUDAERR_CUDNN_MISSING);
    expect("ImportError: libcuda.so.1: cannot open shared object file: No such file or directory",
           "CUDA driver library not found", -1, CUDAERR_NO_DRIVER);
    expect("RuntimeError: DataLoader worker (pid 629) is killed by signal: Killed.",
           "DataLoader worker killed (SIGKILL)", -1, CUDAERR_OTHER);
    expect("DataLoader worker (pid 83641) is killed by signal: Bus error.",
           "DataLoader worker killed (SIGBUS)", -1, CUDAERR_SHM);
    /* shared memory running out, as PyTorch and NCCL say it (host.shm-small) */
    expect("ERROR: Unexpected bus error encountered in worker. This might be caused by "
           "insufficient shared memory (shm).",
           "bus error in a DataLoader worker", -1, CUDAERR_SHM);
    expect("RuntimeError: unable to write to file </torch_169035_1920244589_10>: No space left on "
           "device (28)",
           "shared-memory tensor not written", -1, CUDAERR_SHM);
    expect("node1:8639:8745 [0] include/shm.h:48 NCCL WARN Error while creating shared memory "
           "segment nccl-shm-recv-170206743cd9fd1d-0-1-0 (size 9637888)",
           "shared memory segment not created", -1, CUDAERR_SHM);
    expect("include/shm.h:28 NCCL WARN Call to posix_fallocate failed : No space left on device",
           "shared memory not allocated", -1, CUDAERR_SHM);
    /* a process out of file descriptors (proc.fd-limit) */
    expect("RuntimeError: Too many open files. Communication with the workers is no longer "
           "possible. Please increase the limit using `ulimit -n` in the shell",
           "DataLoader out of file descriptors", -1, CUDAERR_FD_LIMIT);
    expect("RuntimeError: received 0 items of ancdata", "descriptors not received", -1,
           CUDAERR_FD_LIMIT);
    expect("OSError: [Errno 24] Too many open files: '/data/x.jpg'", "EMFILE", 24,
           CUDAERR_FD_LIMIT);
    /* attaching to another's segment fails for other reasons too (separate IPC namespaces) */
    assert_null(cudaerr_match("NCCL WARN Error while attaching to shared memory segment "
                              "/dev/shm/nccl-x (size 4)"));
    /* the driver: nvidia-smi's two best-known failures, and the container toolkit's (not the
     * runtime's 'initialization error', which its text also contains) */
    expect("Failed to initialize NVML: Driver/library version mismatch",
           "NVML_ERROR_LIB_RM_VERSION_MISMATCH", 18, CUDAERR_DRIVER_MISMATCH);
    expect("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make "
           "sure that the latest NVIDIA driver is installed and running.",
           "NVML_ERROR_DRIVER_NOT_LOADED", 9, CUDAERR_NO_DRIVER);
    expect("nvidia-container-cli: initialization error: nvml error: driver not loaded: unknown",
           "nvml error: driver not loaded", -1, CUDAERR_NO_DRIVER);
    /* what a kernel can fail with, by the runtime's words and the driver API's names */
    expect("RuntimeError: CUDA error: an illegal memory access was encountered",
           "cudaErrorIllegalAddress", 700, CUDAERR_OTHER);
    expect("CUDA_ERROR_ILLEGAL_ADDRESS", "CUDA_ERROR_ILLEGAL_ADDRESS", 700, CUDAERR_OTHER);
    expect("RuntimeError: CUDA error: device-side assert triggered", "cudaErrorAssert", 710,
           CUDAERR_OTHER);
    expect("CUDA error: uncorrectable ECC error encountered", "cudaErrorECCUncorrectable", 214,
           CUDAERR_OTHER);
    expect("CUDA error: unspecified launch failure", "cudaErrorLaunchFailure", 719, CUDAERR_OTHER);
    expect("CUDA error: misaligned address", "cudaErrorMisalignedAddress", 716, CUDAERR_OTHER);
    expect("CUDA error: the launch timed out and was terminated", "cudaErrorLaunchTimeout", 702,
           CUDAERR_OTHER);
    expect("CUDA error: an illegal instruction was encountered", "cudaErrorIllegalInstruction", 715,
           CUDAERR_OTHER);
    expect("CUDA error: uncorrectable NVLink error detected during the execution",
           "cudaErrorNvlinkUncorrectable", 220, CUDAERR_OTHER);
    expect("CUDA error: invalid device function", "cudaErrorInvalidDeviceFunction", 98,
           CUDAERR_OTHER);
}

/* CUDA that cannot start: its unknown error, nvidia_uvm that modprobe cannot load, no driver. */
static void test_cuda_start(void **state)
{
    (void)state;
    expect("UserWarning: CUDA initialization: CUDA unknown error - this may be due to an "
           "incorrectly set up environment, e.g. changing env variable CUDA_VISIBLE_DEVICES after "
           "program start. Setting the available devices to be zero.",
           "CUDA unknown error", -1, CUDAERR_CUDA_UNKNOWN);
    expect("E external/xla/xla/stream_executor/cuda/cuda_driver.cc:268] failed call to cuInit: "
           "CUDA_ERROR_UNKNOWN: unknown error",
           "CUDA_ERROR_UNKNOWN", 999, CUDAERR_CUDA_UNKNOWN);
    /* PyCUDA: its own short words before CUDA 6, cuGetErrorString's after */
    expect("pycuda._driver.Error: cuInit failed: unknown", "cuInit failed: unknown", 999,
           CUDAERR_CUDA_UNKNOWN);
    expect("pycuda._driver.RuntimeError: cuInit failed: unknown error", "cuInit failed: unknown",
           999, CUDAERR_CUDA_UNKNOWN);
    expect("pycuda._driver.LogicError: cuInit failed: no device", "cuInit failed: no device", 100,
           CUDAERR_NO_DEVICE);
    expect("pycuda._driver.LogicError: cuInit failed: no CUDA-capable device is detected",
           "cudaErrorNoDevice", 100, CUDAERR_NO_DEVICE);
    expect("modprobe: FATAL: Module nvidia-uvm not found.", "nvidia-uvm module not found", -1,
           CUDAERR_UVM_MISSING);
    expect("modprobe: FATAL: Module nvidia_uvm not found in directory /lib/modules/6.1.0-28-amd64",
           "nvidia_uvm module not found", -1, CUDAERR_UVM_MISSING);
    expect("modprobe: ERROR: could not insert 'nvidia_331_updates_uvm': No such device",
           "nvidia_uvm not inserted", -1, CUDAERR_UVM_MISSING);
    expect("modprobe: ERROR: could not insert 'nvidia_uvm': Unknown symbol in module",
           "nvidia_uvm not inserted", -1, CUDAERR_UVM_MISSING);
    /* TensorFlow's diagnostic is longer than the cuInit line before it: no driver wins */
    expect("E tensorflow/stream_executor/cuda/cuda_driver.cc:491] failed call to cuInit: "
           "CUDA_ERROR_UNKNOWN\nI tensorflow/stream_executor/cuda/cuda_diagnostics.cc:140] kernel "
           "driver does not appear to be running on this host (node7): "
           "/proc/driver/nvidia/version does not exist",
           "kernel driver not running", -1, CUDAERR_NO_DRIVER);
    /* a container image the toolkit refused, whatever its condition */
    expect("nvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.2, please "
           "update your driver to a newer version, or use an earlier cuda container: unknown.",
           "requirement error", -1, CUDAERR_IMAGE_REQUIREMENT);
    expect("stderr: nvidia-container-cli: requirement error: invalid expression\\\\n\\\"\"",
           "requirement error", -1, CUDAERR_IMAGE_REQUIREMENT);
    /* NCCL's InfiniBand registration refused for lack of lockable memory */
    expect("misc/ibvwrap.cc:278 NCCL WARN Call to ibv_reg_mr_iova2 failed with error Cannot "
           "allocate memory",
           "ibv_reg_mr failed: Cannot allocate memory", -1, CUDAERR_MEMLOCK);
    expect("NCCL WARN Call to ibv_reg_mr failed with error Cannot allocate memory",
           "ibv_reg_mr failed: Cannot allocate memory", -1, CUDAERR_MEMLOCK);
    /* NCCL without a network interface, and its bare internal error */
    expect("NCCL INFO Bootstrap : no socket interface found", "no socket interface", -1,
           CUDAERR_NCCL_SOCKET);
    expect("misc/socket.cc:50 NCCL WARN NET/Socket : No usable listening interface found",
           "no listening interface", -1, CUDAERR_NCCL_SOCKET);
    expect("ncclSocketInit: connecting to address  with family 59936 is neither AF_INET(2) nor "
           "AF_INET6(10)",
           "socket address without a family", -1, CUDAERR_NCCL_SOCKET);
    expect("Test NCCL failure common.cu:959 'internal error - please report this issue to the "
           "NCCL developers / '",
           "ncclInternalError", 3, CUDAERR_NCCL_FAILED);
    /* another module's refusal is not nvidia_uvm's */
    assert_null(cudaerr_match(
        "modprobe: ERROR: could not insert 'nvidia_drm': Key was rejected by service"));
}

static void test_not_recognised(void **state)
{
    (void)state;
    assert_null(cudaerr_match(""));
    assert_null(cudaerr_match(NULL));
    assert_null(cudaerr_match("Segmentation fault (core dumped)"));
    assert_null(cudaerr_match("is_available() True")); /* no False: nothing to say */
    assert_null(cudaerr_match("system not yet"));      /* a part of a pattern is not the pattern */
    assert_null(cudaerr_match("Check failed: CUDA_SUCCESS == cuInit(0) (0 vs. 2160)"));
    assert_null(cudaerr_match("(0 vs. 216)")); /* without glog's "CUDA_SUCCESS ==" */
    assert_null(cudaerr_match("DataLoader worker (pid 1) is killed by signal: Aborted."));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cuda_texts),
        cmocka_unit_test(test_names_and_frameworks),
        cmocka_unit_test(test_refusals_and_timeouts),
        cmocka_unit_test(test_cuda_start),
        cmocka_unit_test(test_not_recognised),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
