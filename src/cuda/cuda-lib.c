/*
 * The CUDA driver, dlopened: see cuda-lib.h. Versioned symbols are asked for by their own names
 * (cuMemAlloc_v2, not cuMemAlloc: the unversioned one is the 32-bit ABI); cuEventElapsedTime_v2
 * is preferred where the driver has it (CUDA_OPTIONAL_FUNCTIONS).
 */
#include "cuda/cuda-lib.h"
#include "util/xalloc.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const struct {
    const char *name;
    CUresult rc;
} results[] = {
#define CUDA_RESULT_ROW(name, value) { #name, value },
    CUDA_ABI_RESULTS(CUDA_RESULT_ROW)
#undef CUDA_RESULT_ROW
};

const char *cuda_result_known_name(CUresult rc)
{
    for (size_t i = 0; i < ARRAY_SIZE(results); i++) {
        if (results[i].rc == rc)
            return results[i].name;
    }
    return NULL;
}

int cuda_result_parse(const char *name)
{
    char *end;
    long n;

    for (size_t i = 0; i < ARRAY_SIZE(results); i++) {
        const char *full = results[i].name;

        if (strcmp(full, name) == 0 ||
            (strncmp(full, "CUDA_ERROR_", 11) == 0 && strcmp(full + 11, name) == 0))
            return results[i].rc;
    }
    errno = 0;
    n = strtol(name, &end, 10);
    if (errno != 0 || end == name || *end != '\0' || n < 0 || n > 100000)
        return -1;
    return (int)n;
}

const char *cuda_result_name(const struct cuda_lib *lib, CUresult rc, char *buf, size_t size)
{
    const char *s = NULL;

    if (lib != NULL && lib->cuGetErrorName != NULL && lib->cuGetErrorName(rc, &s) == CUDA_SUCCESS &&
        s != NULL) {
        snprintf(buf, size, "%s", s);
    } else if ((s = cuda_result_known_name(rc)) != NULL) {
        snprintf(buf, size, "%s", s);
    } else {
        snprintf(buf, size, "CUresult %d", rc);
    }
    return buf;
}

void cuda_lib_close(struct cuda_lib *lib)
{
    if (lib->dl != NULL)
        dlclose(lib->dl);
    memset(lib, 0, sizeof(*lib));
}

enum cuda_lib_error cuda_lib_open(struct cuda_lib *lib, const char *name, char **cause)
{
    static const char *const symbols[] = {
#define CUDA_LIB_NAME(sym, params) #sym,
        CUDA_FUNCTIONS(CUDA_LIB_NAME)
#undef CUDA_LIB_NAME
    };
    void **slots[] = {
#define CUDA_LIB_SLOT(sym, params) (void **)&lib->sym,
        CUDA_FUNCTIONS(CUDA_LIB_SLOT)
#undef CUDA_LIB_SLOT
    };
    char *missing = NULL;
    size_t n_missing = 0;
    const char *err;
    void *v2;

    memset(lib, 0, sizeof(*lib));
    if (name == NULL || *name == '\0')
        name = getenv("GPUDOCTOR_CUDA_LIB");
    if (name == NULL || *name == '\0')
        name = CUDA_DEFAULT_LIB;
    dlerror();
    lib->dl = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (lib->dl == NULL) {
        struct stat st;

        err = dlerror();
        /* A path that names a file that will not load is not "no driver". */
        if (strchr(name, '/') != NULL && stat(name, &st) == 0) {
            *cause = xasprintf("%s is not a library that can be loaded: %s", name,
                               err ? err : "dlopen failed");
            return CUDA_LIB_UNLOADABLE;
        }
        *cause = xasprintf("%s not found: no NVIDIA driver is installed (or not where the "
                           "loader looks)",
                           name);
        return CUDA_LIB_NOT_FOUND;
    }
    for (size_t i = 0; i < ARRAY_SIZE(symbols); i++) {
        *slots[i] = dlsym(lib->dl, symbols[i]);
        if (*slots[i] == NULL) {
            char *m = xasprintf("%s%s%s", missing ? missing : "", missing ? ", " : "", symbols[i]);

            free(missing);
            missing = m;
            n_missing++;
        }
    }
    v2 = dlsym(lib->dl, "cuEventElapsedTime_v2");
    if (v2 != NULL)
        *(void **)&lib->cuEventElapsedTime = v2;
    if (missing != NULL) {
        *cause =
            n_missing == ARRAY_SIZE(symbols)
                ? xasprintf("%s is not the CUDA driver: it exports none of its functions", name)
                : xasprintf("%s is not the CUDA driver gpudoctor needs: %s %s missing", name,
                            missing, n_missing == 1 ? "is" : "are");
        free(missing);
        cuda_lib_close(lib);
        return CUDA_LIB_NOT_CUDA;
    }
    return CUDA_LIB_OK;
}
