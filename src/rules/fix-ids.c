/*
 * Fix lines for GPUs whose NVML index the evidence does not give. A partial nvidia-smi -q
 * (`nvidia-smi -q -i 3`, a grep of one block) numbers its GPUs in the order it lists them
 * (gpu.index_by_order): its only GPU is "GPU 0" here, but `sudo nvidia-smi -i 0 -r` would reset
 * another GPU of the machine. nvidia-smi and its subcommands take a UUID or a PCI address
 * wherever they take an index, so `-i N` of such a GPU becomes its UUID (else its address); a
 * line about a GPU that has neither becomes a comment.
 */
#include "rules/rule-impl.h"
#include "util/i18n.h"
#include "util/xalloc.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* "GPU-" and hex digits and dashes: a word the shell leaves alone. */
static bool plain_uuid(const char *s)
{
    size_t n = 0;

    if (s == NULL || strncmp(s, "GPU-", 4) != 0)
        return false;
    for (s += 4; *s; s++, n++)
        if (!isxdigit((unsigned char)*s) && *s != '-')
            return false;
    return n >= 8;
}

/* DOMAIN:BUS:DEVICE.FUNCTION in hex, as NVML writes it. */
static bool plain_pci(const char *s)
{
    size_t n = 0;

    if (s == NULL)
        return false;
    for (; isxdigit((unsigned char)s[n]); n++)
        ;
    if (n < 4 || n > 8 || s[n] != ':' || !isxdigit((unsigned char)s[n + 1]) ||
        !isxdigit((unsigned char)s[n + 2]) || s[n + 3] != ':' ||
        !isxdigit((unsigned char)s[n + 4]) || !isxdigit((unsigned char)s[n + 5]) ||
        s[n + 6] != '.' || s[n + 7] < '0' || s[n + 7] > '7')
        return false;
    return s[n + 8] == '\0';
}

static const struct gpu *gpu_at(const struct snapshot *s, unsigned long index)
{
    for (size_t i = 0; i < s->n_gpus; i++)
        if (s->gpus[i].index == index)
            return &s->gpus[i];
    return NULL;
}

struct text {
    char *p;
    size_t len, cap;
};

static void put(struct text *t, const char *s, size_t n)
{
    xgrow(&t->p, &t->cap, t->len + n + 1, 1);
    memcpy(t->p + t->len, s, n);
    t->len += n;
    t->p[t->len] = '\0';
}

/*
 * line with each `-i N` after "nvidia-smi" naming a GPU numbered by order rewritten; NULL when
 * nothing changed. *unnamed set when such a GPU has no UUID or address to name it by.
 */
static char *named(const struct snapshot *s, const char *line, bool *unnamed)
{
    const char *smi = strstr(line, "nvidia-smi"), *p = line;
    struct text out = { 0 };
    bool changed = false;

    if (smi == NULL)
        return NULL;
    while (*p) {
        const char *d = p + 4, *id = NULL;
        const struct gpu *g = NULL;
        char *e = NULL;

        if (p > smi && strncmp(p, " -i ", 4) == 0 && isdigit((unsigned char)*d)) {
            unsigned long index = strtoul(d, &e, 10);

            if (*e == ' ' || *e == '\0')
                g = gpu_at(s, index);
        }
        if (g == NULL || !g->index_by_order) {
            put(&out, p++, 1);
            continue;
        }
        if (gpu_valid(g, GPU_S_UUID) && plain_uuid(g->uuid))
            id = g->uuid;
        else if (gpu_valid(g, GPU_S_PCI_BUS_ID) && plain_pci(g->pci_bus_id))
            id = g->pci_bus_id;
        if (id == NULL) {
            *unnamed = true;
            put(&out, p++, 1);
            continue;
        }
        put(&out, " -i ", 4);
        put(&out, id, strlen(id));
        p = e;
        changed = true;
    }
    if (!changed) {
        free(out.p);
        return NULL;
    }
    return out.p;
}

/* A fix line with its GPU named by UUID or address; a comment when it cannot be named. */
static void rename_line(const struct snapshot *s, char **line, bool people)
{
    bool unnamed = false;
    char *l;

    if (*line == NULL || **line == '#')
        return;
    l = named(s, *line, &unnamed);
    if (unnamed) {
        free(l);
        l = xasprintf("# %s   # %s", *line,
                      L_(people, "which GPU: its index is not in the evidence, name it by UUID"));
    }
    if (l != NULL) {
        free(*line);
        *line = l;
    }
}

void findings_name_gpus_by_id(const struct snapshot *s, struct findings *out)
{
    bool any = false;

    for (size_t i = 0; i < s->n_gpus && !any; i++)
        any = s->gpus[i].index_by_order;
    if (!any)
        return;
    for (size_t i = 0; i < out->n; i++) {
        struct finding *f = &out->items[i];

        for (size_t k = 0; k < f->n_fix; k++) {
            rename_line(s, &f->fix[k], false);
            if (f->fix_l != NULL)
                rename_line(s, &f->fix_l[k], true);
        }
    }
}
