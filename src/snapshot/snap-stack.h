/*
 * The CUDA software stack part of the snapshot: toolkits installed, libraries the dynamic linker
 * knows, and the framework builds GPU processes run (found from each process, not guessed).
 * Filled by collect/stack.c. A string is NULL (null in JSON) when it could not be found.
 */
#ifndef GPUDOCTOR_SNAP_STACK_H
#define GPUDOCTOR_SNAP_STACK_H

#include "snapshot/jfield.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct stack_toolkit {
    char *path;           /* /usr/local/cuda-12.4 */
    char *version;        /* "12.4.1"; see version_source for what the number is */
    char *version_source; /* "version.json", "version.txt", "dist-info", "nvcc" */
    char *cudart_version; /* CUDA runtime component: "12.4.127" */
    char *nvcc_version;   /* compiler component: "12.4.131" */
    char *cudnn_version;  /* cuDNN installed into the toolkit: "9.1.0" */
    bool is_default;      /* /usr/local/cuda points here */
    bool is_cuda_home;    /* $CUDA_HOME names it */
};

/* A CUDA library known to the dynamic linker. */
struct stack_lib {
    char *kind;   /* "cudart", "cudnn", "nccl", "cublas", "cuda" (driver API), "nvml" */
    char *soname; /* "libcudart.so.12" */
    char *path;   /* where the linker finds it */
    char *version;
    char *version_source; /* "file name", "dist-info", "toolkit", "soname" (major only) */
};

/* A framework install found through a GPU process's interpreter. */
struct stack_framework {
    int32_t pid;          /* the first process it was found from; 0: gpudoctor's environment */
    uint32_t processes;   /* GPU processes running this install */
    char *name;           /* "torch", "tensorflow" */
    char *version;        /* "2.3.1+cu121" */
    char *cuda_version;   /* the CUDA it was built for: "12.1"; NULL for CPU/ROCm builds */
    char *hip_version;    /* torch ROCm builds */
    char *cudnn_version;  /* cuDNN it uses: loaded library, pip wheel, or build record */
    char *cudart_version; /* CUDA runtime it uses: loaded library or pip wheel */
    char *nccl_version;
    char *site_packages;
    char *python;     /* the interpreter (the process's executable) */
    char *found_from; /* how site_packages was found: "maps", "interpreter", "environment" */
};

struct stack_info {
    char *cuda_home;      /* $CUDA_HOME of gpudoctor itself, when set */
    char *python_env;     /* $VIRTUAL_ENV, else $CONDA_PREFIX, of gpudoctor itself */
    char *python_env_var; /* which of the two: "VIRTUAL_ENV" or "CONDA_PREFIX" */
    char *cudnn_version;  /* system cuDNN: "9.1.0" */
    char *cudnn_source;   /* the header or library it was read from */
    char *ld_source;      /* "/etc/ld.so.cache", or "/etc/ld.so.conf" when the cache is unusable */
    struct stack_toolkit *toolkits;
    size_t n_toolkits;
    struct stack_lib *libs; /* known to the dynamic linker */
    size_t n_libs;
    struct stack_framework *frameworks;
    size_t n_frameworks;
};

extern const struct jtable stack_info_table;
extern const struct jtable stack_toolkit_table;
extern const struct jtable stack_lib_table;
extern const struct jtable stack_framework_table;

void stack_info_free(struct stack_info *s);
json_t *stack_info_to_json(const struct stack_info *s);
int stack_info_from_json(struct stack_info *s, const json_t *j, const char *path, struct jerr *err);

#endif
