/*
 * The CUDA software stack part of the snapshot: toolkits installed, libraries the dynamic linker
 * knows, and the framework builds GPU processes run. Filled by collect/stack.c.
 */
#ifndef GPUDOCTOR_SNAP_STACK_H
#define GPUDOCTOR_SNAP_STACK_H

#include "jfield.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct stack_toolkit {
    char *path;    /* /usr/local/cuda-12.4 */
    char *version; /* "12.4.131" */
    char *nvcc_version;
};

struct stack_lib {
    char *kind; /* "cudart", "cudnn", ... */
    char *path;
    char *version;
};

/* A framework install found through a GPU process's interpreter. */
struct stack_framework {
    int32_t pid;         /* the process it was found from */
    char *name;          /* "torch", "tensorflow" */
    char *version;       /* "2.3.1+cu121" */
    char *cuda_version;  /* the CUDA it was built for: "12.1" */
    char *cudnn_version; /* when recorded */
    char *site_packages;
};

struct stack_info {
    struct stack_toolkit *toolkits;
    size_t n_toolkits;
    char *cuda_home;        /* $CUDA_HOME of gpudoctor itself, when set */
    char *cudnn_version;    /* from cudnn_version*.h */
    struct stack_lib *libs; /* known to the dynamic linker */
    size_t n_libs;
    struct stack_framework *frameworks;
    size_t n_frameworks;
};

void stack_info_free(struct stack_info *s);
json_t *stack_info_to_json(const struct stack_info *s);
int stack_info_from_json(struct stack_info *s, const json_t *j, const char *path, struct jerr *err);

#endif
