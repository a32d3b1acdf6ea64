/*
 * Loading the CUDA driver (libcuda.so.1): dlopen at run time, every CUDA_FUNCTIONS symbol
 * resolved by name, versioned ones first. Only the bench's worker process (src/bench/) loads it.
 */
#ifndef GPUDOCTOR_CUDA_LIB_H
#define GPUDOCTOR_CUDA_LIB_H

#include "cuda/cuda-abi.h"

/* The library loaded when neither --cuda-lib nor $GPUDOCTOR_CUDA_LIB says otherwise. */
#define CUDA_DEFAULT_LIB "libcuda.so.1"

struct cuda_lib {
    void *dl;
#define CUDA_LIB_FIELD(name, params) name##_fn *name;
    CUDA_FUNCTIONS(CUDA_LIB_FIELD)
#undef CUDA_LIB_FIELD
};

/* Why a library could not be used. */
enum cuda_lib_error {
    CUDA_LIB_OK = 0,
    CUDA_LIB_NOT_FOUND,  /* no such file: no NVIDIA driver installed */
    CUDA_LIB_UNLOADABLE, /* a file, but dlopen refuses it */
    CUDA_LIB_NOT_CUDA,   /* it loads, and lacks the driver API's functions */
};

/*
 * Loads name (a path or a name for the dynamic loader; NULL: $GPUDOCTOR_CUDA_LIB, else
 * CUDA_DEFAULT_LIB) and resolves every function. Returns CUDA_LIB_OK, or the error with *cause
 * set to a sentence ("libcuda.so.1 not found: no NVIDIA driver is installed", "X is not the CUDA
 * driver: cuInit, ... are missing"; the caller frees it).
 */
enum cuda_lib_error cuda_lib_open(struct cuda_lib *lib, const char *name, char **cause);
void cuda_lib_close(struct cuda_lib *lib);

/* "CUDA_ERROR_OUT_OF_MEMORY" for a code (the driver's own name when it knows it, else ours;
 * "CUresult N" for an unknown one). Writes into buf and returns it. */
const char *cuda_result_name(const struct cuda_lib *lib, CUresult rc, char *buf, size_t size);

/* Our name for a code, NULL for one we do not declare. */
const char *cuda_result_known_name(CUresult rc);
/* The code of a name, with or without "CUDA_ERROR_" ("OUT_OF_MEMORY"), or a number; -1 when
 * neither. */
int cuda_result_parse(const char *name);

#endif
