/*
 * cuBLASLt, dlopened: see cublaslt-lib.h. Unlike the driver, a missing library is an ordinary
 * outcome: the caller measures with the FMA kernel and reports the cause.
 */
#include "cuda/cublaslt-lib.h"
#include "util/xalloc.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const struct {
    const char *name;
    cublasStatus_t st;
} statuses[] = {
#define CUBLASLT_STATUS_ROW(name, value) { #name, value },
    CUBLASLT_ABI_STATUSES(CUBLASLT_STATUS_ROW)
#undef CUBLASLT_STATUS_ROW
};

const char *cublaslt_status_name(cublasStatus_t st, char *buf, size_t size)
{
    for (size_t i = 0; i < ARRAY_SIZE(statuses); i++) {
        if (statuses[i].st == st) {
            snprintf(buf, size, "%s", statuses[i].name);
            return buf;
        }
    }
    snprintf(buf, size, "cublasStatus_t %d", st);
    return buf;
}

int cublaslt_status_parse(const char *name)
{
    char *end;
    long n;

    for (size_t i = 0; i < ARRAY_SIZE(statuses); i++) {
        const char *full = statuses[i].name;

        if (strcmp(full, name) == 0 || strcmp(full + strlen("CUBLAS_STATUS_"), name) == 0)
            return statuses[i].st;
    }
    errno = 0;
    n = strtol(name, &end, 10);
    if (errno != 0 || end == name || *end != '\0' || n < 0 || n > 100000)
        return -1;
    return (int)n;
}

void cublaslt_lib_close(struct cublaslt_lib *lib)
{
    if (lib->dl != NULL)
        dlclose(lib->dl);
    free(lib->name);
    memset(lib, 0, sizeof(*lib));
}

/* Resolves every function of the loaded lib->dl: 0, or -1 with *cause. */
static int resolve(struct cublaslt_lib *lib, const char *name, char **cause)
{
    static const char *const symbols[] = {
#define CUBLASLT_LIB_NAME(sym, params) #sym,
        CUBLASLT_FUNCTIONS(CUBLASLT_LIB_NAME)
#undef CUBLASLT_LIB_NAME
    };
    void **slots[] = {
#define CUBLASLT_LIB_SLOT(sym, params) (void **)&lib->sym,
        CUBLASLT_FUNCTIONS(CUBLASLT_LIB_SLOT)
#undef CUBLASLT_LIB_SLOT
    };
    cublasLtGetVersion_fn *version;
    char *missing = NULL;
    size_t n_missing = 0;

    for (size_t i = 0; i < ARRAY_SIZE(symbols); i++) {
        *slots[i] = dlsym(lib->dl, symbols[i]);
        if (*slots[i] == NULL) {
            char *m = xasprintf("%s%s%s", missing ? missing : "", missing ? ", " : "", symbols[i]);

            free(missing);
            missing = m;
            n_missing++;
        }
    }
    *(void **)&version = dlsym(lib->dl, "cublasLtGetVersion");
    if (version == NULL) {
        char *m = xasprintf("%s%scublasLtGetVersion", missing ? missing : "", missing ? ", " : "");

        free(missing);
        missing = m;
        n_missing++;
    }
    if (missing != NULL) {
        *cause = xasprintf("%s is not cuBLASLt: %s %s missing", name, missing,
                           n_missing == 1 ? "is" : "are");
        free(missing);
        return -1;
    }
    lib->version = version();
    return 0;
}

int cublaslt_lib_open(struct cublaslt_lib *lib, const char *name, char **cause)
{
    static const char *const defaults[] = CUBLASLT_DEFAULT_LIBS;
    const char *err = NULL;

    memset(lib, 0, sizeof(*lib));
    if (name == NULL || *name == '\0')
        name = getenv("GPUDOCTOR_CUBLASLT_LIB");
    if (name != NULL && *name != '\0') {
        struct stat st;

        dlerror();
        lib->dl = dlopen(name, RTLD_NOW | RTLD_LOCAL);
        if (lib->dl == NULL) {
            err = dlerror();
            if (strchr(name, '/') != NULL && stat(name, &st) == 0)
                *cause = xasprintf("%s is not a library that can be loaded: %s", name,
                                   err ? err : "dlopen failed");
            else
                *cause = xasprintf("cuBLASLt not found: no %s", name);
            return -1;
        }
    } else {
        for (size_t i = 0; i < ARRAY_SIZE(defaults) && lib->dl == NULL; i++) {
            name = defaults[i];
            lib->dl = dlopen(name, RTLD_NOW | RTLD_LOCAL);
        }
        if (lib->dl == NULL) {
            *cause = xasprintf("cuBLASLt not found (%s, .12 or .11: the CUDA toolkit's "
                               "libcublas package is not installed, or not where the loader looks)",
                               defaults[0]);
            return -1;
        }
    }
    if (resolve(lib, name, cause) != 0) {
        cublaslt_lib_close(lib);
        return -1;
    }
    lib->name = xstrdup(name);
    return 0;
}
