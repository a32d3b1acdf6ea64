/*
 * libxml2, loaded with dlopen when an XML file is imported. Linking it would load ICU (a 30 MB
 * data library), libstdc++ and liblzma into every command, which `check` is budgeted not to
 * spend (docs/architecture.md, "What every command loads"). The types come from libxml2's
 * headers; each pointer has the exact type of the function it stands for.
 */
#ifndef GPUDOCTOR_IMPORT_XML_LIB_H
#define GPUDOCTOR_IMPORT_XML_LIB_H

#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlerror.h>

struct xml_api {
    __typeof__(&xmlNewParserCtxt) new_parser_ctxt;
    __typeof__(&xmlCtxtReadMemory) ctxt_read_memory;
    __typeof__(&xmlCtxtGetLastError) ctxt_get_last_error;
    __typeof__(&xmlFreeDoc) free_doc;
    __typeof__(&xmlFreeParserCtxt) free_parser_ctxt;
    __typeof__(&xmlDocGetRootElement) doc_get_root_element;
    __typeof__(&xmlGetLineNo) get_line_no;
    __typeof__(&xmlSetExternalEntityLoader) set_external_entity_loader;
};

/* Filled by xml_load(); process-wide, like the library it describes. */
extern struct xml_api xml;

/*
 * Loads the library once (later calls return at once). Returns 0, or -1 with *cause saying what
 * is missing and which package provides it (the caller frees it).
 */
int xml_load(char **cause);

#endif
