/*
 * Loading cuBLASLt (libcublasLt.so) at run time for bench's GEMM figures. Its absence is not an
 * error: bench measures compute with its own FMA kernel instead and says so (docs/bench.md).
 */
#ifndef GPUDOCTOR_CUBLASLT_LIB_H
#define GPUDOCTOR_CUBLASLT_LIB_H

#include "cuda/cublaslt-abi.h"

/* Tried in this order when $GPUDOCTOR_CUBLASLT_LIB does not name one: CUDA 13, 12, 11. */
#define CUBLASLT_DEFAULT_LIBS                                                                      \
    {                                                                                              \
        "libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so.11"                              \
    }

struct cublaslt_lib {
    void *dl;
    char *name;     /* the name or path that was loaded */
    size_t version; /* cublasLtGetVersion: 130100 = 13.1.0 */
#define CUBLASLT_LIB_FIELD(sym, params) sym##_fn *sym;
    CUBLASLT_FUNCTIONS(CUBLASLT_LIB_FIELD)
#undef CUBLASLT_LIB_FIELD
};

/*
 * Loads name (a path or a name for the dynamic loader; NULL or "": $GPUDOCTOR_CUBLASLT_LIB, else
 * the first of CUBLASLT_DEFAULT_LIBS that loads) and resolves every function. Returns 0, or -1
 * with *cause set to a sentence for the report ("cuBLASLt not found (libcublasLt.so.13, .12,
 * .11)", "X is not cuBLASLt: cublasLtMatmul is missing"; the caller frees it).
 */
int cublaslt_lib_open(struct cublaslt_lib *lib, const char *name, char **cause);
void cublaslt_lib_close(struct cublaslt_lib *lib);

/* "CUBLAS_STATUS_NOT_SUPPORTED", or "cublasStatus_t N" for a value we do not declare. */
const char *cublaslt_status_name(cublasStatus_t st, char *buf, size_t size);
/* The value of a name, with or without "CUBLAS_STATUS_", or a number; -1 when neither. */
int cublaslt_status_parse(const char *name);

#endif
