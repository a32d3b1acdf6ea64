#include "collect/nvml-lib.h"
#include "util/strutil.h"
#include "util/xalloc.h"

#include <ctype.h>
#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *const nvml_sym_names[NVML_SYM__COUNT] = {
#define NVML_SYM_NAME(name, params) [NVML_SYM_##name] = #name,
    NVML_FUNCTIONS(NVML_SYM_NAME)
#undef NVML_SYM_NAME
        [NVML_SYM_nvmlErrorString] = "nvmlErrorString",
};

/*
 * The required tier: each row is satisfied by any one of its symbols (newest first). Everything
 * else is optional and reads as NVML_ERROR_FUNCTION_NOT_FOUND for the fields it supplies.
 */
static const enum nvml_sym required[][2] = {
    { NVML_SYM_nvmlInit_v2, NVML_SYM_nvmlInit },
    { NVML_SYM_nvmlShutdown, NVML_SYM__COUNT },
    { NVML_SYM_nvmlDeviceGetCount_v2, NVML_SYM_nvmlDeviceGetCount },
    { NVML_SYM_nvmlDeviceGetHandleByIndex_v2, NVML_SYM_nvmlDeviceGetHandleByIndex },
    { NVML_SYM_nvmlErrorString, NVML_SYM__COUNT },
};

char *nvml_lib_missing_required(const struct nvml_lib *lib)
{
    char *out = NULL;

    for (size_t i = 0; i < ARRAY_SIZE(required); i++) {
        enum nvml_sym a = required[i][0], b = required[i][1];
        char *next;

        if (lib->sym[a] != NULL || (b != NVML_SYM__COUNT && lib->sym[b] != NULL))
            continue;
        if (b != NVML_SYM__COUNT)
            next = xasprintf("%s%s%s (or %s)", out ? out : "", out ? ", " : "", nvml_sym_names[a],
                             nvml_sym_names[b]);
        else
            next = xasprintf("%s%s%s", out ? out : "", out ? ", " : "", nvml_sym_names[a]);
        free(out);
        out = next;
    }
    return out;
}

/* The path of the file the loader actually mapped, with symbolic links resolved. */
static char *loaded_path(void *dl, const char *name)
{
    struct link_map *map = NULL;
    char real[PATH_MAX];

    if (dlinfo(dl, RTLD_DI_LINKMAP, &map) != 0 || map == NULL || map->l_name == NULL ||
        map->l_name[0] == '\0')
        return xstrdup(name);
    if (realpath(map->l_name, real) == NULL)
        return xstrdup(map->l_name);
    return xstrdup(real);
}

int nvml_lib_open(struct nvml_lib *lib, const char *name, struct nvml_system *sys)
{
    const char *err;
    char *missing;
    size_t exported = 0;

    memset(lib, 0, sizeof(*lib));
    dlerror();
    /* RTLD_LOCAL: NVML's symbols must not satisfy anyone else's references in this process. */
    lib->dl = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (lib->dl == NULL) {
        err = dlerror();
        sys->library = xstrdup(name);
        if (strchr(name, '/') != NULL && access(name, F_OK) == 0) {
            /* There is a file, and it is not a library the loader can use: not "not installed". */
            sys->load_error = NVML_ERROR_UNKNOWN;
            sys->load_detail = xasprintf("%s is not a library that can be loaded: %s", name,
                                         err ? err : "dlopen failed");
        } else {
            sys->load_error = NVML_ERROR_LIBRARY_NOT_FOUND;
            sys->load_detail = xstrdup(err ? err : "dlopen failed");
        }
        return -1;
    }
    sys->library = loaded_path(lib->dl, name);
    sys->library_version = nvml_lib_version_from_path(sys->library);
    for (size_t i = 0; i < NVML_SYM__COUNT; i++) {
        lib->sym[i] = dlsym(lib->dl, nvml_sym_names[i]);
        exported += lib->sym[i] != NULL;
    }
    missing = nvml_lib_missing_required(lib);
    if (missing != NULL) {
        sys->load_error = NVML_ERROR_FUNCTION_NOT_FOUND;
        /* libc.so.6 is a library, just not NVML; an NVML missing a few calls is another story */
        sys->load_detail =
            exported == 0
                ? xasprintf("%s is not NVML: it exports none of NVML's functions", sys->library)
                : xasprintf("%s does not export %s", sys->library, missing);
        free(missing);
        nvml_lib_close(lib);
        return -1;
    }
    return 0;
}

void nvml_lib_close(struct nvml_lib *lib)
{
    if (lib->dl != NULL)
        dlclose(lib->dl);
    memset(lib, 0, sizeof(*lib));
}

/* A dotted numeric version with at least two parts: "550.54.15", "535.104.05". */
static bool is_version(const char *s)
{
    size_t parts = 0;

    if (s == NULL)
        return false;
    for (;;) {
        if (!isdigit((unsigned char)*s))
            return false;
        while (isdigit((unsigned char)*s))
            s++;
        parts++;
        if (*s == '\0')
            return parts >= 2;
        if (*s != '.')
            return false;
        s++;
    }
}

char *nvml_lib_version_from_path(const char *path)
{
    static const char prefix[] = "libnvidia-ml.so.";
    const char *base;

    if (path == NULL)
        return NULL;
    base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (strncmp(base, prefix, sizeof(prefix) - 1) != 0 || !is_version(base + sizeof(prefix) - 1))
        return NULL;
    return xstrdup(base + sizeof(prefix) - 1);
}

bool nvml_version_in_range(const char *version, const char *lo, const char *hi)
{
    if (!is_version(version))
        return false;
    return str_version_cmp(version, lo) >= 0 && str_version_cmp(version, hi) <= 0;
}

uint32_t nvml_process_stride(enum nvml_proc_api api, const char *driver_version)
{
    switch (api) {
    case NVML_PROC_API_V1:
        return (uint32_t)sizeof(nvmlProcessInfo_v1_t);
    case NVML_PROC_API_V2:
        return (uint32_t)sizeof(nvmlProcessInfo_v2_t);
    case NVML_PROC_API_V3:
        /* R535 widened the _v3 record without a version bump, and later drivers undid it. */
        if (nvml_version_in_range(driver_version, NVML_R535_V3_FIRST, NVML_R535_V3_LAST))
            return (uint32_t)sizeof(nvmlProcessInfo_r535_t);
        return (uint32_t)sizeof(nvmlProcessInfo_v2_t);
    }
    return (uint32_t)sizeof(nvmlProcessInfo_v2_t);
}
