#include "import/xml-lib.h"
#include "util/xalloc.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>

#ifndef GPUDOCTOR_XML_SONAME
#define GPUDOCTOR_XML_SONAME "libxml2.so.2"
#endif

struct xml_api xml;

static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;
static void *handle;

static const struct {
    const char *name;
    size_t offset;
} symbols[] = {
    { "xmlNewParserCtxt", offsetof(struct xml_api, new_parser_ctxt) },
    { "xmlCtxtReadMemory", offsetof(struct xml_api, ctxt_read_memory) },
    { "xmlCtxtGetLastError", offsetof(struct xml_api, ctxt_get_last_error) },
    { "xmlFreeDoc", offsetof(struct xml_api, free_doc) },
    { "xmlFreeParserCtxt", offsetof(struct xml_api, free_parser_ctxt) },
    { "xmlDocGetRootElement", offsetof(struct xml_api, doc_get_root_element) },
    { "xmlGetLineNo", offsetof(struct xml_api, get_line_no) },
    { "xmlSetExternalEntityLoader", offsetof(struct xml_api, set_external_entity_loader) },
};

int xml_load(char **cause)
{
    struct xml_api api;
    void *h;
    int rc = -1;

    pthread_mutex_lock(&load_lock);
    if (handle != NULL) {
        rc = 0;
        goto out;
    }
    h = dlopen(GPUDOCTOR_XML_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        *cause = xasprintf("cannot load %s, which reading XML needs (Debian package libxml2): %s",
                           GPUDOCTOR_XML_SONAME, dlerror());
        goto out;
    }
    for (size_t i = 0; i < ARRAY_SIZE(symbols); i++) {
        void *fn = dlsym(h, symbols[i].name);

        if (fn == NULL) {
            *cause = xasprintf("%s has no %s", GPUDOCTOR_XML_SONAME, symbols[i].name);
            dlclose(h);
            goto out;
        }
        /* POSIX guarantees a function's address fits an object pointer for dlsym. */
        *(void **)((char *)&api + symbols[i].offset) = fn;
    }
    xml = api;
    handle = h;
    rc = 0;
out:
    pthread_mutex_unlock(&load_lock);
    return rc;
}
