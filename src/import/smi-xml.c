/*
 * nvidia-smi -q -x: the XML form of -q (nvsmi_device_v10.dtd to v13 and on), read with libxml2.
 * The input is hostile: no network, no DTD loaded, no entity substituted, an internal subset
 * refused (billion laughs, XXE), libxml2's limits on depth and sizes kept (no XML_PARSE_HUGE).
 * smi-fields.c maps the tag paths to snapshot fields.
 */
#include "import/import-impl.h"
#include "import/xml-lib.h"
#include "util/strutil.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 12

static bool detect(const char *text, size_t len)
{
    size_t n = len < 4096 ? len : 4096;

    /* The root element, whatever comes before it (the declaration, a DOCTYPE, a prompt). */
    return memmem(text, n, "<nvidia_smi_log", 15) != NULL;
}

/* Loads nothing: the DTD nvidia-smi names, and any other external entity, stay unread. */
static xmlParserInputPtr no_loader(const char *url, const char *id, xmlParserCtxtPtr ctxt)
{
    (void)url;
    (void)id;
    (void)ctxt;
    return NULL;
}

/* The text of an element's own text children (entity references are not followed), trimmed. */
static void text_of(const xmlNode *e, char *out, size_t size)
{
    size_t len = 0;

    out[0] = '\0';
    for (const xmlNode *c = e->children; c != NULL && len + 1 < size; c = c->next) {
        if ((c->type == XML_TEXT_NODE || c->type == XML_CDATA_SECTION_NODE) && c->content) {
            size_t n = strlen((const char *)c->content);

            if (n > size - len - 1)
                n = size - len - 1;
            memcpy(out + len, c->content, n);
            len += n;
            out[len] = '\0';
        }
    }
    /* Values are one line: a newline in one is a blank. */
    for (char *p = out; *p; p++) {
        if (*p == '\n' || *p == '\r' || *p == '\t')
            *p = ' ';
    }
    imp_trim(out);
}

/* An attribute's text (entity references not followed); "" when absent. */
static void attribute(const xmlNode *e, const char *name, char *out, size_t size)
{
    out[0] = '\0';
    for (const xmlAttr *a = e->properties; a != NULL; a = a->next) {
        if (a->name == NULL || strcmp((const char *)a->name, name) != 0)
            continue;
        for (const xmlNode *c = a->children; c != NULL; c = c->next) {
            if (c->type == XML_TEXT_NODE && c->content)
                snprintf(out + strlen(out), size - strlen(out), "%s", (const char *)c->content);
        }
    }
    imp_trim(out);
}

static bool has_elements(const xmlNode *e)
{
    for (const xmlNode *c = e->children; c != NULL; c = c->next) {
        if (c->type == XML_ELEMENT_NODE)
            return true;
    }
    return false;
}

static void walk(struct smi_gpu *sg, const xmlNode *e, char *path, size_t plen, int depth)
{
    char value[IMP_MAX_LINE];

    if (depth > MAX_DEPTH)
        return;
    for (const xmlNode *c = e->children; c != NULL; c = c->next) {
        size_t n;

        if (c->type != XML_ELEMENT_NODE)
            continue;
        n = (size_t)snprintf(path + plen, 512 - plen, "%s%s", plen ? "/" : "",
                             (const char *)c->name);
        if (plen + n >= 512)
            continue;
        if (has_elements(c)) {
            smi_gpu_section(sg, path, true, (unsigned long)xml.get_line_no(c));
            walk(sg, c, path, plen + n, depth + 1);
        } else {
            text_of(c, value, sizeof(value));
            smi_gpu_xml(sg, path, value, (unsigned long)xml.get_line_no(c));
        }
        path[plen] = '\0';
    }
}

static void run(struct imp *im, const char *text, size_t len)
{
    xmlParserCtxtPtr ctxt;
    xmlDocPtr doc;
    xmlNodePtr root;
    size_t n_gpus = 0;
    const char *start = memmem(text, len, "<", 1);

    if (start == NULL) {
        imp_fail(im, 1, "no XML (nvidia-smi -q -x output starts with <?xml or <nvidia_smi_log>)");
        return;
    }
    /* A prompt or a command line pasted before the document is skipped, its lines counted. */
    if (start > text && memmem(text, (size_t)(start - text), "\n", 1) != NULL) {
        const char *decl = memmem(text, len, "<?xml", 5);
        const char *log = memmem(text, len, "<nvidia_smi_log", 15);

        start = decl && (!log || decl < log) ? decl : log ? log : start;
        for (const char *p = text; p < start; p++)
            im->line0 += *p == '\n';
        /* the document's line 1 is the line it starts on */
        while (start > text && start[-1] != '\n')
            start--;
    }
    {
        char *why = NULL;

        if (xml_load(&why) != 0) {
            imp_fail(im, 1, "%s", why);
            free(why);
            return;
        }
    }
    xml.set_external_entity_loader(no_loader);
    ctxt = xml.new_parser_ctxt();
    if (ctxt == NULL)
        fatal("out of memory creating an XML parser");
    doc = xml.ctxt_read_memory(
        ctxt, start,
        (int)((size_t)(text + len - start) > INT32_MAX ? INT32_MAX : (size_t)(text + len - start)),
        im->name, NULL,
        XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING | XML_PARSE_NOCDATA);
    if (doc == NULL) {
        const xmlError *e = xml.ctxt_get_last_error(ctxt);
        char what[160], *msg;
        size_t m;

        snprintf(what, sizeof(what), "%s", e && e->message ? e->message : "not well-formed");
        m = strlen(what);
        while (m > 0 && (what[m - 1] == '\n' || what[m - 1] == ' '))
            what[--m] = '\0';
        msg = str_excerpt(what, 120);
        imp_fail(im, e && e->line > 0 ? (unsigned long)e->line : 1, "not well-formed XML: %s", msg);
        free(msg);
        xml.free_parser_ctxt(ctxt);
        return;
    }
    root = xml.doc_get_root_element(doc);
    if (doc->intSubset != NULL && doc->intSubset->children != NULL) {
        imp_fail(im, 1,
                 "an XML document with its own declarations (entities): nvidia-smi never "
                 "writes one; not read");
    } else if (root == NULL || strcmp((const char *)root->name, "nvidia_smi_log") != 0) {
        imp_fail(im, root ? (unsigned long)xml.get_line_no(root) : 1,
                 "not nvidia-smi's XML: the root element is <%s>, not <nvidia_smi_log>",
                 root ? (const char *)root->name : "?");
    } else {
        char value[IMP_MAX_LINE];

        im->found = true;
        imp_touch(im, COLLECTOR_NVML);
        for (const xmlNode *c = root->children; c != NULL; c = c->next) {
            unsigned long line;

            if (c->type != XML_ELEMENT_NODE)
                continue;
            line = (unsigned long)xml.get_line_no(c);
            if (strcmp((const char *)c->name, "gpu") == 0) {
                char id[64], path[512] = "";
                struct gpu *g;

                attribute(c, "id", id, sizeof(id));
                g = imp_gpu_listed(im, id[0] ? id : NULL, n_gpus, line);
                n_gpus++;
                if (g != NULL) {
                    struct smi_gpu *sg = smi_gpu_begin(im, g);

                    walk(sg, c, path, 0, 0);
                    smi_gpu_end(sg, true);
                }
            } else if (!has_elements(c)) {
                text_of(c, value, sizeof(value));
                smi_top(im, (const char *)c->name, value, line);
            }
        }
        smi_top_end(im, n_gpus, true, 0);
    }
    xml.free_doc(doc);
    xml.free_parser_ctxt(ctxt);
}

const struct importer importer_smi_xml = {
    "nvidia-smi-xml",
    "nvidia-smi -q -x (XML)",
    detect,
    run,
};
