/*
 * Loading NVML: dlopen at run time, symbols resolved by name from the NVML_FUNCTIONS list, and
 * the facts about the loaded file that decide struct layouts (its driver version).
 * Only the NVML helper process (nvml-session.c) loads the library; the parent never does.
 */
#ifndef GPUDOCTOR_NVML_LIB_H
#define GPUDOCTOR_NVML_LIB_H

#include "nvml/nvml-abi.h"
#include "snapshot/snap-gpu.h"

#include <stdbool.h>
#include <stdint.h>

/* One index per symbol gpudoctor may resolve: every NVML_FUNCTIONS entry, then nvmlErrorString. */
enum nvml_sym {
#define NVML_SYM_ENUM(name, params) NVML_SYM_##name,
    NVML_FUNCTIONS(NVML_SYM_ENUM)
#undef NVML_SYM_ENUM
        NVML_SYM_nvmlErrorString,
    NVML_SYM__COUNT
};

extern const char *const nvml_sym_names[NVML_SYM__COUNT];

struct nvml_lib {
    void *dl;
    void *sym[NVML_SYM__COUNT]; /* NULL: the library does not export it */
};

/* Whether the library exports name, and the typed function pointer (check NVML_HAS first). */
#define NVML_HAS(lib, name) ((lib)->sym[NVML_SYM_##name] != NULL)
#define NVML_FN(lib, name)  ((name##_fn *)(lib)->sym[NVML_SYM_##name])

/* The library name used when neither --nvml-lib nor $GPUDOCTOR_NVML_LIB says otherwise. */
#define NVML_DEFAULT_LIB "libnvidia-ml.so.1"

/*
 * Loads the library name (a path or a name for the dynamic loader) and resolves every symbol.
 * Fills sys->library (the real path of the file loaded, else name), library_version,
 * load_error and load_detail. Returns 0, or -1 when the library cannot be used: load_error is
 * then NVML_ERROR_LIBRARY_NOT_FOUND (no such library: not installed),
 * NVML_ERROR_UNKNOWN (a file is there, but dlopen cannot load it) or
 * NVML_ERROR_FUNCTION_NOT_FOUND (a required symbol is missing; load_detail says "is not NVML"
 * when it exports no NVML function at all, as libc.so.6).
 */
int nvml_lib_open(struct nvml_lib *lib, const char *name, struct nvml_system *sys);
void nvml_lib_close(struct nvml_lib *lib);

/*
 * The required tier: the symbols without which nothing can be asked. Returns NULL when all are
 * there, else a list such as "nvmlInit_v2 (or nvmlInit), nvmlShutdown" (the caller frees it).
 */
char *nvml_lib_missing_required(const struct nvml_lib *lib);

/*
 * The driver version a library file name carries: "550.54.15" for
 * ".../libnvidia-ml.so.550.54.15". NULL when the name has none (libnvidia-ml.so.1 is a soname,
 * not a version). The caller frees the result.
 */
char *nvml_lib_version_from_path(const char *path);

/* Whether a dotted numeric version lies in [lo, hi]; false for NULL or a non-version. */
bool nvml_version_in_range(const char *version, const char *lo, const char *hi);

/* The three generations of the running-process list calls. */
enum nvml_proc_api {
    NVML_PROC_API_V1, /* unversioned symbol: nvmlProcessInfo_v1_t */
    NVML_PROC_API_V2, /* _v2: nvmlProcessInfo_v2_t */
    NVML_PROC_API_V3, /* _v3: 24 bytes, except in the R535 window */
};

/* Drivers whose _v3 process lists write 32-byte records (reference/nvml-facts.md 6a). */
#define NVML_R535_V3_FIRST "535.43.02"
#define NVML_R535_V3_LAST  "535.86.05"

/*
 * Bytes per record the process-list call of generation api writes with a driver of that version
 * (NULL when unknown: the 24-byte layout every other driver uses).
 */
uint32_t nvml_process_stride(enum nvml_proc_api api, const char *driver_version);

#endif
