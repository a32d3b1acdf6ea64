/*
 * nvidia-smi -q (--query), whole or as -q -d subsets, of every driver generation: a header
 * ("==============NVSMI LOG=============="), the top values (time, driver, CUDA, attached
 * GPUs), then one block per GPU ("GPU 00000000:04:00.0") of "Key : Value" lines whose sections
 * nest by four spaces. smi-fields.c maps the paths to snapshot fields.
 */
#include "import/import-impl.h"
#include "util/strutil.h"
#include "util/xalloc.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 12
#define MAX_KEY   96

static bool is_header(const char *line)
{
    const char *p = str_ltrim(line);

    return strncmp(p, "==============NVSMI LOG==============", 37) == 0;
}

/* "GPU 00000000:04:00.0" (or "GPU 0000:04:00.0" before R400): the address, else NULL. */
static const char *gpu_line(const char *line)
{
    char pci[32];

    if (strncmp(line, "GPU ", 4) != 0 || !imp_pci_nvml(str_ltrim(line + 4), pci, sizeof(pci)))
        return NULL;
    return str_ltrim(line + 4);
}

/* Keys only -q prints, for a block pasted without its header (a grep, a cut). */
static const char *const signature_keys[] = {
    "FB Memory Usage",
    "Clocks Throttle Reasons",
    "Clocks Event Reasons",
    "Performance State  ",
    "GPU Current Temp",
    "Product Name  ",
    "SW Power Cap  ",
    "HW Slowdown  ",
    "Applications Clocks Setting :",
    "Power Draw  ",
    "Bus Id   ",
    "GPU UUID  ",
};

static bool detect(const char *text, size_t len)
{
    struct lines l;
    unsigned keys = 0;

    lines_init(&l, text, len);
    while (lines_next(&l) && l.no < 20000) {
        if (is_header(l.line))
            return true;
        /* A block pasted without the header: its GPU line, or keys only -q prints. */
        if (gpu_line(l.line) != NULL)
            return true;
        for (size_t i = 0; i < ARRAY_SIZE(signature_keys); i++) {
            if (strncmp(str_ltrim(l.line), signature_keys[i], strlen(signature_keys[i])) == 0)
                keys++;
        }
        if (keys >= 2)
            return true;
    }
    return false;
}

/* Splits "    Key   : Value" into its indent, key and value (NULL: a section line). */
static bool split(char *line, size_t *indent, char **key, char **value)
{
    char *colon;
    size_t n = 0;

    while (line[n] == ' ' || line[n] == '\t')
        n += 1;
    if (line[n] == '\0')
        return false;
    *indent = 0;
    for (size_t i = 0; i < n; i++)
        *indent += line[i] == '\t' ? 4 : 1;
    *key = line + n;
    /* " : " separates; a key never holds one, a value may ("12:34"). */
    colon = strstr(*key, " : ");
    if (colon == NULL) {
        size_t k = strlen(*key);

        if (k > 0 && (*key)[k - 1] == ':') {
            (*key)[k - 1] = '\0';
            *value = *key + k - 1;
        } else if (k > 2 && strcmp(*key + k - 2, " :") == 0) {
            (*key)[k - 2] = '\0';
            *value = *key + k - 1;
        } else {
            *value = NULL;
        }
    } else {
        *colon = '\0';
        *value = colon + 3;
        imp_trim(*value);
    }
    imp_trim(*key);
    return **key != '\0';
}

struct reader {
    struct imp *im;
    struct smi_gpu *sg;
    struct gpu *g;
    size_t base; /* indent of the GPU block's keys */
    char stack[MAX_DEPTH][MAX_KEY];
    size_t depth;
    size_t n_gpus;
    bool in_log;    /* after a header */
    bool after_sep; /* after grep's "--" between two matches: the next block is another GPU's */
};

/* grep's "--" between the context of two matches. */
static bool is_grep_separator(const char *line)
{
    return strncmp(line, "--", 2) == 0 && line[2 + strspn(line + 2, " \t\r")] == '\0';
}

static void end_gpu(struct reader *r, bool complete)
{
    if (r->sg != NULL)
        smi_gpu_end(r->sg, complete);
    r->sg = NULL;
    r->g = NULL;
}

static void begin_gpu(struct reader *r, const char *bus, unsigned long line)
{
    end_gpu(r, true);
    r->g = imp_gpu_listed(r->im, bus, r->n_gpus, line);
    r->n_gpus++;
    r->depth = 0;
    r->base = 4;
    if (r->g != NULL)
        r->sg = smi_gpu_begin(r->im, r->g);
}

static void gpu_key(struct reader *r, size_t indent, const char *key, const char *value,
                    unsigned long line)
{
    char path[MAX_DEPTH * MAX_KEY];
    size_t depth, len = 0;

    if (indent < r->base)
        indent = r->base;
    depth = (indent - r->base) / 4;
    if (depth >= MAX_DEPTH)
        return;
    if (depth > r->depth)
        depth = r->depth; /* a jump in indentation: taken as the next level */
    snprintf(r->stack[depth], MAX_KEY, "%s", key);
    r->depth = depth + 1;
    path[0] = '\0';
    for (size_t i = 0; i < r->depth; i++)
        len += (size_t)snprintf(path + len, sizeof(path) - len, "%s%s", i ? "/" : "", r->stack[i]);
    if (value != NULL)
        smi_gpu_text(r->sg, path, value, line);
    else
        smi_gpu_section(r->sg, path, false, line);
}

/* The GPUs (addresses) each reading of an output lists. */
struct reading {
    size_t start;       /* offset of its header */
    unsigned long line; /* the header's line number */
    char (*bus)[32];    /* the addresses of its GPU blocks, as NVML writes them */
    size_t n_bus;
};

static bool lists(const struct reading *r, const char *bus)
{
    for (size_t i = 0; i < r->n_bus; i++)
        if (strcmp(r->bus[i], bus) == 0)
            return true;
    return false;
}

/*
 * Where the last reading of a repeated output starts (nvidia-smi -q -l, or -q run again and
 * pasted below): when every earlier reading lists only GPUs the last lists too, they are older
 * readings of the same GPUs and only the last is read; 0 otherwise (outputs of other GPUs, -q -i
 * 0 then -q -i 1, are all read). *line: the line before it; *skipped: how many were skipped.
 */
static size_t last_reading(const char *text, size_t len, unsigned long *line, size_t *skipped)
{
    struct reading *rd = NULL;
    size_t n = 0, off = 0, last;
    struct lines l;
    const char *bus;
    bool same = true;

    *skipped = 0;
    lines_init(&l, text, len);
    while (lines_next(&l)) {
        char pci[32];

        if (is_header(l.line)) {
            rd = xreallocarray(rd, n + 1, sizeof(*rd));
            rd[n++] = (struct reading){ l.start, l.no, NULL, 0 };
        } else if (n > 0 && (bus = gpu_line(l.line)) != NULL && rd[n - 1].n_bus < 4096 &&
                   imp_pci_nvml(bus, pci, sizeof(pci))) {
            struct reading *r = &rd[n - 1];

            r->bus = xreallocarray(r->bus, r->n_bus + 1, sizeof(*r->bus));
            memcpy(r->bus[r->n_bus++], pci, sizeof(pci));
        }
    }
    last = n;
    /* the last reading with GPUs (another output, -q --unit, may follow it) */
    while (last > 0 && rd[last - 1].n_bus == 0)
        last--;
    for (size_t i = 0; i + 1 < last && same; i++)
        for (size_t k = 0; k < rd[i].n_bus && same; k++)
            same = lists(&rd[last - 1], rd[i].bus[k]);
    if (last > 1 && same) {
        off = rd[last - 1].start;
        *line = rd[last - 1].line - 1;
        for (size_t i = 0; i + 1 < last; i++)
            *skipped += rd[i].n_bus > 0;
    }
    for (size_t i = 0; i < n; i++)
        free(rd[i].bus);
    free(rd);
    return *skipped > 0 ? off : 0;
}

static void run(struct imp *im, const char *text, size_t len)
{
    struct reader r;
    struct lines l;
    bool blank_after = false;
    unsigned long before = 0;
    size_t skipped, from = last_reading(text, len, &before, &skipped);

    memset(&r, 0, sizeof(r));
    r.im = im;
    lines_init(&l, text, len);
    if (skipped > 0) {
        l.pos = from;
        l.no = before;
        imp_note(im, COLLECTOR_NVML, before + 1,
                 "%zu earlier reading(s) of the same GPUs (nvidia-smi -q -l) skipped: the last, "
                 "from this line, is judged",
                 skipped);
    }
    while (lines_next(&l)) {
        size_t indent;
        char *key, *value;
        const char *bus;

        if (is_header(l.line)) {
            end_gpu(&r, true);
            if (r.in_log)
                smi_top_end(im, r.n_gpus, true, l.no);
            r.in_log = true;
            r.n_gpus = 0;
            im->found = true;
            continue;
        }
        if ((bus = gpu_line(l.line)) != NULL) {
            char copy[64];

            snprintf(copy, sizeof(copy), "%s", bus);
            imp_trim(copy);
            begin_gpu(&r, copy, l.no);
            im->found = true;
            blank_after = false;
            continue;
        }
        if (!r.in_log && is_grep_separator(l.line)) {
            /* grep -A/-B/-C between two matches: what follows is the next GPU's block */
            if (r.g != NULL || r.n_gpus > 0)
                r.after_sep = true;
            end_gpu(&r, true);
            continue;
        }
        if (!split(l.line, &indent, &key, &value)) {
            blank_after = r.sg != NULL;
            continue;
        }
        if (indent == 0 && r.sg == NULL) {
            if (value != NULL)
                smi_top(im, key, value, l.no);
            continue;
        }
        if (indent == 0) {
            /* Something else after the GPU blocks: the -q output ended. */
            end_gpu(&r, blank_after);
            continue;
        }
        if (r.sg == NULL) {
            /* A block pasted without its GPU line: one GPU whose address the paste lacks. */
            if (r.g == NULL && (r.n_gpus == 0 || r.after_sep) && !r.in_log) {
                r.after_sep = false;
                begin_gpu(&r, NULL, l.no);
                r.base = indent;
                im->found = true;
            }
            if (r.sg == NULL)
                continue;
        }
        gpu_key(&r, indent, key, value, l.no);
        blank_after = false;
    }
    end_gpu(&r, blank_after);
    if (r.in_log)
        smi_top_end(im, r.n_gpus, blank_after || r.n_gpus == 0, l.no);
    else if (r.n_gpus > 0)
        smi_listed_end(im, r.n_gpus, false, l.no);
    if (!im->found)
        imp_fail(im, 1,
                 "no nvidia-smi -q output (\"==============NVSMI LOG==============\" or a "
                 "\"GPU 00000000:xx:00.0\" block)");
}

const struct importer importer_smi_query = {
    "nvidia-smi-q",
    "nvidia-smi -q (--query), whole or -q -d subsets",
    detect,
    run,
};
