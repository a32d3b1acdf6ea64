/*
 * nvidia-smi topo -m (how GPUs, NICs and CPUs connect) and nvidia-smi nvlink -s / -e (link
 * speeds and error counters). The snapshot has places for a GPU's NUMA node (its PCIe device)
 * and for its name and UUID; what it has no field for (NVLink speeds and counters, which GPU
 * shares a switch with which NIC) is said in notes, so the report still shows it.
 */
#include "import/import-impl.h"
#include "util/strutil.h"
#include "util/xalloc.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_COLS 128

/* ---- topo -m ---- */

static bool topo_header(const char *s)
{
    const char *g = strstr(s, "GPU0");

    return g != NULL && (strstr(s, "CPU Affinity") || strstr(g + 4, "GPU1")) &&
           strstr(s, "GPU0 ") != s && strstr(s, "GPU0\t") != s;
}

static bool topo_detect(const char *text, size_t len)
{
    struct lines l;
    bool header = false;

    lines_init(&l, text, len);
    while (lines_next(&l) && l.no < 20000) {
        const char *s = str_ltrim(l.line);

        if (topo_header(l.line))
            header = true;
        else if (header && strncmp(s, "GPU0", 4) == 0 && isspace((unsigned char)s[4]) &&
                 strstr(s, " X") != NULL)
            return true;
    }
    return false;
}

static size_t split_words(char *s, char **out, size_t max)
{
    size_t n = 0;
    char *save = NULL;

    for (char *w = strtok_r(s, " \t", &save); w && n < max; w = strtok_r(NULL, " \t", &save))
        out[n++] = w;
    return n;
}

static bool gpu_label(const char *w, int *index)
{
    char *end;
    long v;

    if (strncmp(w, "GPU", 3) != 0 || !isdigit((unsigned char)w[3]))
        return false;
    v = strtol(w + 3, &end, 10);
    if (*end != '\0' || v < 0 || v >= IMP_MAX_GPUS)
        return false;
    *index = (int)v;
    return true;
}

static void topo_add(struct import_session *is, int gpu, const char *peer, const char *link)
{
    struct topo_link *t;

    if (is->n_links >= IMP_MAX_TOPO * IMP_MAX_TOPO)
        return;
    xgrow(&is->links, &is->cap_links, is->n_links + 1, sizeof(*is->links));
    t = &is->links[is->n_links++];
    t->gpu = gpu;
    t->peer = xstrdup(peer);
    t->link = xstrdup(link);
}

static void topo_numa(struct import_session *is, int gpu, const char *numa)
{
    struct topo_gpu *t;
    char *end;
    long v = strtol(numa, &end, 10);

    if (*end != '\0' || end == numa || v < 0 || v > 4096)
        return;
    xgrow(&is->topo_gpus, &is->cap_topo_gpus, is->n_topo_gpus + 1, sizeof(*is->topo_gpus));
    t = &is->topo_gpus[is->n_topo_gpus++];
    t->gpu = gpu;
    t->numa_known = true;
    t->numa = (int32_t)v;
}

static void topo_run(struct imp *im, const char *text, size_t len)
{
    char header[IMP_MAX_LINE], *cols[MAX_COLS], *nic_names[MAX_COLS] = { 0 };
    size_t n_cols = 0, n_dev = 0, first_link = im->is->n_links, first_gpu = im->is->n_topo_gpus;
    bool have_header = false, numa_col = false, cpu_col = false;
    char numas[256] = "";
    struct lines l;

    lines_init(&l, text, len);
    while (lines_next(&l)) {
        char row[IMP_MAX_LINE], *w[MAX_COLS + 8];
        const char *s = str_ltrim(l.line);
        size_t n;
        int gpu;

        if (!have_header && topo_header(l.line)) {
            snprintf(header, sizeof(header), "%s", l.line);
            cpu_col = strstr(header, "CPU Affinity") != NULL;
            numa_col = strstr(header, "NUMA Affinity") != NULL;
            /* The device columns come before "CPU Affinity". */
            if (cpu_col)
                *strstr(header, "CPU Affinity") = '\0';
            n_cols = split_words(header, cols, MAX_COLS);
            n_dev = n_cols;
            have_header = n_cols > 0;
            im->found = true;
            imp_touch(im, COLLECTOR_PCIE);
            continue;
        }
        /* "  NIC0: mlx5_0" in the NIC legend */
        if (have_header && strncmp(s, "NIC", 3) == 0 && strchr(s, ':')) {
            int k;
            char name[64];

            if (sscanf(s, "NIC%d: %63s", &k, name) == 2 && k >= 0 && k < MAX_COLS) {
                free(nic_names[k]);
                nic_names[k] = xstrdup(name);
            }
            continue;
        }
        if (!have_header)
            continue;
        snprintf(row, sizeof(row), "%s", s);
        n = split_words(row, w, MAX_COLS + 8);
        if (n < 2 || !gpu_label(w[0], &gpu))
            continue;
        for (size_t c = 0; c < n_dev && c + 1 < n; c++) {
            if (strcmp(cols[c], w[0]) != 0)
                topo_add(im->is, gpu, cols[c], w[c + 1]);
        }
        if (numa_col && n > n_dev + 2)
            topo_numa(im->is, gpu, w[n_dev + 2]);
        else if (numa_col && !cpu_col && n > n_dev + 1)
            topo_numa(im->is, gpu, w[n_dev + 1]);
    }
    /* What the snapshot has no place for, said: GPUs that share a PCIe switch with a NIC. */
    for (size_t i = first_link; i < im->is->n_links; i++) {
        const struct topo_link *t = &im->is->links[i];
        int k, g;

        if (strcmp(t->link, "PIX") != 0 || gpu_label(t->peer, &g))
            continue;
        k = strncmp(t->peer, "NIC", 3) == 0 ? atoi(t->peer + 3) : -1;
        imp_note(im, COLLECTOR_PCIE, 0, "topo -m: GPU %d shares a PCIe switch with %s%s%s%s (PIX)",
                 t->gpu, t->peer, k >= 0 && k < MAX_COLS && nic_names[k] ? " (" : "",
                 k >= 0 && k < MAX_COLS && nic_names[k] ? nic_names[k] : "",
                 k >= 0 && k < MAX_COLS && nic_names[k] ? ")" : "");
    }
    /* Kept on the PCIe devices of GPUs another piece gives the address of (import.c). */
    for (size_t i = first_gpu; i < im->is->n_topo_gpus && strlen(numas) + 24 < sizeof(numas); i++)
        snprintf(numas + strlen(numas), sizeof(numas) - strlen(numas), "%sGPU %d: %d",
                 i > first_gpu ? ", " : "", im->is->topo_gpus[i].gpu, im->is->topo_gpus[i].numa);
    if (numas[0] != '\0')
        imp_note(im, COLLECTOR_PCIE, 0, "topo -m: NUMA affinity %s", numas);
    for (size_t k = 0; k < MAX_COLS; k++)
        free(nic_names[k]);
    if (!have_header)
        imp_fail(im, 1, "no nvidia-smi topo -m matrix (a header \"GPU0 GPU1 ... CPU Affinity\")");
}

const struct importer importer_topo = {
    "topo",
    "nvidia-smi topo -m (GPU, NIC and CPU affinity, NUMA)",
    topo_detect,
    topo_run,
};

/* ---- nvlink -s / -e ---- */

/* "\t Link 0: 25 GB/s", "\t Link 1: <inactive>", "\t Link 0: Replay Errors: 0" */
static bool link_line(const char *s, int *link, const char **rest)
{
    int n = 0;

    s = str_ltrim(s);
    if (sscanf(s, "Link %d:%n", link, &n) != 1 || n == 0 || *link < 0 || *link > 63)
        return false;
    *rest = str_ltrim(s + n);
    return true;
}

static bool nvlink_detect(const char *text, size_t len)
{
    struct lines l;

    lines_init(&l, text, len);
    while (lines_next(&l) && l.no < 20000) {
        int link;
        const char *rest;

        if (link_line(l.line, &link, &rest) &&
            (strstr(rest, "GB/s") || strstr(rest, "<inactive>") || strstr(rest, "Errors:")))
            return true;
    }
    return false;
}

static void nvlink_run(struct imp *im, const char *text, size_t len)
{
    struct lines l;
    struct gpu *g = NULL;
    int index = -1;
    unsigned active = 0, inactive = 0, links = 0;

#define GPU_DONE()                                                                                 \
    do {                                                                                           \
        if (index >= 0 && inactive > 0)                                                            \
            imp_note(im, COLLECTOR_NVML, 0, "nvlink -s: GPU %d: %u of %u NVLinks inactive", index, \
                     inactive, active + inactive);                                                 \
        active = inactive = 0;                                                                     \
    } while (0)

    lines_init(&l, text, len);
    while (lines_next(&l)) {
        const char *s = str_ltrim(l.line), *rest, *u;
        int link;
        unsigned long long count;

        if (strncmp(s, "GPU ", 4) == 0 && (u = strstr(s, " (UUID: ")) != NULL) {
            char name[256], uuid[128];
            int k = 0;

            GPU_DONE();
            if (sscanf(s + 4, "%d:%n", &index, &k) != 1 || k == 0 || index < 0 ||
                index >= IMP_MAX_GPUS) {
                index = -1;
                continue;
            }
            g = imp_gpu(im, NULL, index, l.no);
            if (g != NULL) {
                snprintf(name, sizeof(name), "%.*s", (int)(u - (s + 4 + k)), s + 4 + k);
                imp_gpu_set(im, g, "name", imp_trim(name), IU_STR, l.no);
                /* a paste may hide it ("UUID: ..."): only a real one is kept */
                if (sscanf(u + 8, "%127[^)]", uuid) == 1 && strncmp(imp_trim(uuid), "GPU-", 4) == 0)
                    imp_gpu_set(im, g, "uuid", uuid, IU_STR, l.no);
            }
            continue;
        }
        if (index < 0 || !link_line(s, &link, &rest))
            continue;
        links++;
        im->found = true;
        imp_touch(im, COLLECTOR_NVML);
        if (strstr(rest, "<inactive>"))
            inactive++;
        else if (strstr(rest, "GB/s"))
            active++;
        else if ((u = strstr(rest, "Errors:")) != NULL && sscanf(u + 7, "%llu", &count) == 1 &&
                 count > 0)
            imp_note(im, COLLECTOR_NVML, l.no, "nvlink -e: GPU %d link %d: %.*s %llu", index, link,
                     (int)(u + 6 - rest), rest, count);
    }
    GPU_DONE();
#undef GPU_DONE
    if (links == 0)
        imp_fail(im, 1,
                 "no nvidia-smi nvlink output (\"GPU 0: ... (UUID: ...)\" then "
                 "\"Link 0: ...\")");
}

const struct importer importer_nvlink = {
    "nvlink",
    "nvidia-smi nvlink -s (link speeds) and -e (error counters)",
    nvlink_detect,
    nvlink_run,
};
