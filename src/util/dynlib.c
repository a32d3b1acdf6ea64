/* Opening a library at run time and filling its function table (util/dynlib.h). */
#include "util/dynlib.h"

#include <dlfcn.h>

void *dynlib_open(const char *soname, const struct dynlib_sym *syms, size_t n, void *api,
                  const char **missing, const char **why)
{
    void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);

    *missing = NULL;
    *why = NULL;
    if (h == NULL) {
        *why = dlerror();
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        void *fn = dlsym(h, syms[i].name);

        if (fn == NULL) {
            *missing = syms[i].name;
            dlclose(h);
            return NULL;
        }
        /* POSIX guarantees a function's address fits an object pointer for dlsym. */
        *(void **)((char *)api + syms[i].offset) = fn;
    }
    return h;
}
