/*
 * Compiled (never run) by tests/e2e/cuda-abi-header.sh against NVIDIA's cuda.h: every constant
 * and every signature of src/cuda/cuda-abi.h must equal the header's, or this does not compile.
 */
#include <cuda.h>

#define GPUDOCTOR_CUDA_ABI_CHECK
#include "cuda/cuda-abi.h"

#define CHECK_VALUE(name, value) _Static_assert((long long)(name) == (value), #name " differs");
CUDA_ABI_RESULTS(CHECK_VALUE)
CUDA_ABI_ATTRIBUTES(CHECK_VALUE)
CUDA_ABI_FLAGS(CHECK_VALUE)

#define CHECK_FN(name, params)                                                                     \
    _Static_assert(__builtin_types_compatible_p(__typeof__(&name), CUresult(CUDAAPI *) params),    \
                   #name " has another signature");
CUDA_FUNCTIONS(CHECK_FN)
CUDA_OPTIONAL_FUNCTIONS(CHECK_FN)

_Static_assert(sizeof(CUdeviceptr) == 8, "CUdeviceptr is 64 bits on a 64-bit host");
_Static_assert(sizeof(CUresult) == 4, "CUresult is an int-sized enum");
_Static_assert(CUDA_VERSION == GPUDOCTOR_CUDA_ABI_HEADER_VERSION || CUDA_VERSION > 0,
               "any header version is compared");

int cuda_abi_check_unused(void);
int cuda_abi_check_unused(void)
{
    return 0;
}
