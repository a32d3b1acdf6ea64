/*
 * Libraries loaded at run time by the one command that needs them (libmicrohttpd for serve,
 * libxml2 for the XML importer, libcurl for fleet --prometheus): open a library and fill a
 * table of function pointers from it, so the other commands never load it.
 */
#ifndef GPUDOCTOR_UTIL_DYNLIB_H
#define GPUDOCTOR_UTIL_DYNLIB_H

#include <stddef.h>

/* One function to resolve: its name, and where its pointer goes in the caller's api struct. */
struct dynlib_sym {
    const char *name;
    size_t offset;
};

/*
 * Opens soname (RTLD_NOW | RTLD_LOCAL) and stores every symbol of syms[0..n) into api. Returns
 * the handle; NULL when the library cannot be opened (*missing = NULL, *why: dlerror's text) or
 * lacks a symbol (*missing: its name, the library closed again, api possibly half filled).
 */
void *dynlib_open(const char *soname, const struct dynlib_sym *syms, size_t n, void *api,
                  const char **missing, const char **why);

#endif
