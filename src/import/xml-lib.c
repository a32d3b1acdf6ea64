#include "import/xml-lib.h"
#include "util/dynlib.h"
#include "util/xalloc.h"

#include <pthread.h>
#include <stddef.h>

#ifndef GPUDOCTOR_XML_SONAME
#define GPUDOCTOR_XML_SONAME "libxml2.so.2"
#endif

struct xml_api xml;

static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;
static void *handle;

static const struct dynlib_sym symbols[] = {
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
    const char *missing, *why;
    void *h;
    int rc = -1;

    pthread_mutex_lock(&load_lock);
    if (handle != NULL) {
        rc = 0;
        goto out;
    }
    h = dynlib_open(GPUDOCTOR_XML_SONAME, symbols, ARRAY_SIZE(symbols), &api, &missing, &why);
    if (h == NULL) {
        if (missing != NULL)
            *cause = xasprintf("%s has no %s", GPUDOCTOR_XML_SONAME, missing);
        else
            *cause = xasprintf("cannot load %s, which reading XML needs (Debian package "
                               "libxml2): %s",
                               GPUDOCTOR_XML_SONAME, why);
        goto out;
    }
    xml = api;
    handle = h;
    rc = 0;
out:
    pthread_mutex_unlock(&load_lock);
    return rc;
}
