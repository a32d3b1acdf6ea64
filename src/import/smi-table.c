/*
 * nvidia-smi's default output, the form most often pasted: the table of GPUs (two rows a GPU
 * before R450, three since, wider from R530 and again from R555), the MIG devices, the process
 * table (with GPU and compute instance columns since R450), cut or not; nvidia-smi -L; and the
 * messages nvidia-smi prints instead when NVML cannot answer ("NVIDIA-SMI has failed ...",
 * "Failed to initialize NVML: ...", "Unable to determine the device handle ...").
 */
#include "import/import-impl.h"
#include "nvml/nvml-abi.h"
#include "util/strutil.h"
#include "util/xalloc.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_CELLS 8

enum part { P_NONE, P_GPUS, P_MIG, P_PROCS };

/* "Unable to determine the device handle for GPU ADDR: WHY" */
struct failed_handle {
    char bus[64], why[128];
    int32_t rc;
    unsigned long line;
};

struct table {
    struct imp *im;
    enum part part;
    bool body;      /* past the "|===" line of the part */
    bool gi_cols;   /* the process table has GPU and compute instance columns */
    int64_t g;      /* the index of the GPU whose rows are being read, or -1 (an index:
                     * struct gpu pointers move as GPUs are added) */
    unsigned row;   /* that GPU's rows read so far */
    uint32_t *gpus; /* the indices of this table's GPUs (pointers move as GPUs are added) */
    size_t n_gpus;
    size_t n_rows;           /* GPUs with rows in the GPU part */
    uint64_t rows_max_index; /* the highest index of those rows */
    bool gpus_complete, procs_open, procs_seen;
    int64_t mig_gpu; /* nvidia-smi -L: the index of the GPU whose MIG devices follow, or -1 */
    uint32_t mig_count;
    struct failed_handle failed[16];
    size_t n_failed;
    int64_t mig_cur; /* the index of the GPU whose MIG devices are being counted, or -1 */
    uint32_t mig_n;
};

/* What NVML's error strings say, for the messages nvidia-smi quotes. */
static const struct {
    const char *text;
    int32_t rc;
} nvml_errors[] = {
    { "Driver/library version mismatch", NVML_ERROR_LIB_RM_VERSION_MISMATCH },
    { "Driver Not Loaded", NVML_ERROR_DRIVER_NOT_LOADED },
    { "Insufficient Permissions", NVML_ERROR_NO_PERMISSION },
    { "GPU access blocked by the operating system", NVML_ERROR_OPERATING_SYSTEM },
    { "GPU is lost", NVML_ERROR_GPU_IS_LOST },
    { "Unable to communicate with GPU because it is insufficiently powered",
      NVML_ERROR_INSUFFICIENT_POWER },
    { "Not Found", NVML_ERROR_NOT_FOUND },
    { "Timeout", NVML_ERROR_TIMEOUT },
    { "Unknown Error", NVML_ERROR_UNKNOWN },
};

static int32_t error_code(const char *text)
{
    for (size_t i = 0; i < ARRAY_SIZE(nvml_errors); i++) {
        if (strncasecmp(text, nvml_errors[i].text, strlen(nvml_errors[i].text)) == 0)
            return nvml_errors[i].rc;
    }
    return NVML_ERROR_UNKNOWN;
}

static void init_failed(struct imp *im, int32_t rc, const char *why, unsigned long line)
{
    struct nvml_system *n = &im->s->nvml;

    imp_touch(im, COLLECTOR_NVML);
    if (n->attempted)
        return; /* another piece already said how NVML answered */
    n->attempted = true;
    n->init_rc = rc;
    n->init_error = str_sanitized(why);
    collector_set(&im->s->collectors[COLLECTOR_NVML], CS_FAILED, "%s", why);
    imp_note(im, COLLECTOR_NVML, line, "nvidia-smi: %s", why);
}

/* nvidia-smi's messages when NVML cannot answer (also in -q output). True when line is one. */
static bool error_line(struct table *t, const char *line, unsigned long no)
{
    struct imp *im = t->im;
    const char *p = str_ltrim(line), *at;

    if (imp_starts(p, "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA "
                      "driver")) {
        init_failed(im, NVML_ERROR_DRIVER_NOT_LOADED, "Driver Not Loaded", no);
        return true;
    }
    if (imp_starts(p, "Failed to initialize NVML:")) {
        char why[256];

        snprintf(why, sizeof(why), "%s", str_ltrim(p + strlen("Failed to initialize NVML:")));
        imp_trim(why);
        init_failed(im, error_code(why), why, no);
        return true;
    }
    if (imp_starts(p, "NVML library version:")) {
        struct nvml_system *n = &im->s->nvml;
        char v[64];

        snprintf(v, sizeof(v), "%s", str_ltrim(p + strlen("NVML library version:")));
        imp_trim(v);
        if (n->library_version == NULL && v[0] != '\0')
            n->library_version = str_sanitized(v);
        imp_touch(im, COLLECTOR_NVML);
        return true;
    }
    if (imp_starts(p, "No devices were found")) {
        struct nvml_system *n = &im->s->nvml;

        imp_touch(im, COLLECTOR_NVML);
        if (!n->attempted) {
            n->attempted = true;
            n->init_rc = 0;
            n->device_count = 0;
            n->device_count_rc = 0;
        }
        return true;
    }
    if (imp_starts(p, "Unable to determine the device handle for") &&
        (at = strstr(p, ": ")) != NULL) {
        const char *addr = p + strlen("Unable to determine the device handle for");
        char bus[64];

        addr = str_ltrim(addr);
        if (imp_starts(addr, "GPU"))
            addr = str_ltrim(addr + 3);
        snprintf(bus, sizeof(bus), "%.*s", (int)(at - addr), addr);
        /*
         * A GPU NVML cannot open is known by its failure only (its address in a note). Its index
         * is the first the rest of the output leaves unused: kept for the end of the piece.
         */
        if (t->n_failed < ARRAY_SIZE(t->failed)) {
            struct failed_handle *fh = &t->failed[t->n_failed++];

            snprintf(fh->bus, sizeof(fh->bus), "%s", bus);
            snprintf(fh->why, sizeof(fh->why), "%s", at + 2);
            imp_trim(fh->why);
            fh->rc = error_code(fh->why);
            fh->line = no;
        }
        imp_touch(im, COLLECTOR_NVML);
        return true;
    }
    return false;
}

/* The cells of a table line "| a | b | c |": up to MAX_CELLS, trimmed, in place. */
static size_t cells(char *line, char **out)
{
    char *p = strchr(line, '|');
    size_t n = 0;

    if (p == NULL)
        return 0;
    p++;
    while (n < MAX_CELLS) {
        char *end = strchr(p, '|');

        if (end == NULL) {
            /* a row cut short: what is left of it is its last cell */
            if (*imp_trim(p) != '\0')
                out[n++] = p;
            break;
        }
        *end = '\0';
        out[n++] = imp_trim(p);
        p = end + 1;
    }
    return n;
}

/* Blank-separated words of s, in place: up to max. */
static size_t words(char *s, char **out, size_t max)
{
    size_t n = 0;
    char *save = NULL;

    for (char *w = strtok_r(s, " \t", &save); w && n < max; w = strtok_r(NULL, " \t", &save))
        out[n++] = w;
    return n;
}

static bool is_border(const char *line)
{
    const char *p = str_ltrim(line);

    return (p[0] == '+' || p[0] == '|') && (p[1] == '-' || p[1] == '=');
}

static bool looks_pci(const char *s)
{
    char pci[32], first[40];

    snprintf(first, sizeof(first), "%s", s);
    first[strcspn(first, " ")] = '\0';
    /* nvidia-smi writes the function ("00000000:41:00.0"): a clock ("10:00:00") is not one. */
    return imp_pci_nvml(first, pci, sizeof(pci)) && strchr(first, ':') != NULL &&
           strchr(first, '.') != NULL;
}

static bool detect(const char *text, size_t len)
{
    struct lines l;

    lines_init(&l, text, len);
    while (lines_next(&l) && l.no < 20000) {
        const char *p = str_ltrim(l.line);
        char copy[IMP_MAX_LINE], *c[MAX_CELLS];

        if (strstr(p, "NVIDIA-SMI ") && (strstr(p, "Driver Version") || strstr(p, "KMD Version")))
            return true;
        if (strstr(p, "| MIG devices:"))
            return true;
        if (imp_starts(p, "NVIDIA-SMI has failed") || imp_starts(p, "Failed to initialize NVML") ||
            imp_starts(p, "No devices were found") ||
            imp_starts(p, "Unable to determine the device handle"))
            return true;
        if (strncmp(p, "GPU ", 4) == 0 && strstr(p, " (UUID: GPU-"))
            return true;
        snprintf(copy, sizeof(copy), "%s", p);
        if (cells(copy, c) >= 3 && looks_pci(c[1]) && isdigit((unsigned char)c[0][0]))
            return true;
    }
    return false;
}

/* The GPU whose rows are being read, or NULL. */
static struct gpu *cur_gpu(const struct table *t)
{
    return t->g >= 0 ? snapshot_gpu(t->im->s, (uint32_t)t->g) : NULL;
}

static void table_gpu(struct table *t, const struct gpu *g)
{
    for (size_t i = 0; i < t->n_gpus; i++) {
        if (t->gpus[i] == g->index)
            return;
    }
    t->gpus = xreallocarray(t->gpus, t->n_gpus + 1, sizeof(*t->gpus));
    t->gpus[t->n_gpus++] = g->index;
}

/* "|   0  NVIDIA GeForce RTX 3080        Off | 00000000:01:00.0  On |                  N/A |" */
static void gpu_row1(struct table *t, char **c, unsigned long no)
{
    struct imp *im = t->im;
    char *w[64], bus[64], name[256];
    size_t n, nb;
    uint64_t index;
    struct gpu *g;
    char *bw[4];

    snprintf(bus, sizeof(bus), "%s", c[1]);
    nb = words(bus, bw, 4);
    n = words(c[0], w, 64);
    if (n < 2 || !str_to_u64(w[0], 10, &index) || index > 4095 || nb < 1)
        return;
    g = imp_gpu(im, bw[0], (int64_t)index, no);
    t->g = g != NULL ? (int64_t)g->index : -1;
    t->row = 1;
    if (g == NULL)
        return;
    table_gpu(t, g);
    t->n_rows++;
    if (index > t->rows_max_index)
        t->rows_max_index = index;
    /* The name lies between the index and the persistence mode (On/Off; TCC/WDDM on Windows). */
    {
        const char *last = w[n - 1];
        bool mode = strcasecmp(last, "On") == 0 || strcasecmp(last, "Off") == 0 ||
                    strcasecmp(last, "TCC") == 0 || strcasecmp(last, "WDDM") == 0;
        size_t end = mode ? n - 1 : n;

        name[0] = '\0';
        for (size_t i = 1; i < end; i++)
            snprintf(name + strlen(name), sizeof(name) - strlen(name), "%s%s", i > 1 ? " " : "",
                     w[i]);
        if (strcasecmp(last, "On") == 0 || strcasecmp(last, "Off") == 0)
            imp_gpu_set(im, g, "persistence_mode", last, IU_BOOL, no);
        if (name[0] != '\0')
            imp_gpu_set(im, g, "name", name, IU_STR, no);
    }
    if (nb >= 2)
        imp_gpu_set(im, g, "display_active", bw[1], IU_BOOL, no);
    /* Volatile uncorrected ECC: a count when ECC is on, Off when off, N/A when unsupported. */
    if (c[2] == NULL) {
        return; /* cut short */
    } else if (strcasecmp(c[2], "Off") == 0) {
        imp_gpu_set(im, g, "ecc_mode", "Off", IU_BOOL, no);
    } else if (strcasecmp(c[2], "On") == 0) {
        imp_gpu_set(im, g, "ecc_mode", "On", IU_BOOL, no);
    } else if (c[2][0] != '\0') {
        int32_t rc;
        uint64_t x;

        if (imp_status(c[2], &rc)) {
            imp_gpu_set_rc(g, "ecc_mode", rc);
            imp_gpu_set_rc(g, "ecc_volatile_uncorrected", rc);
        } else if (imp_value(c[2], IU_NUM, &x)) {
            imp_gpu_set_u64(g, "ecc_mode", 1);
            imp_gpu_set_u64(g, "ecc_volatile_uncorrected", x);
        }
    }
}

/* "| 30%   37C    P8              20W / 320W |    631MiB / 10240MiB |     36%      Default |" */
static void gpu_row2(struct table *t, char **c, unsigned long no)
{
    struct imp *im = t->im;
    struct gpu *g = cur_gpu(t);
    char *w[16], *m[8], *u[8], mode[64];
    size_t n, nm, nu;
    int slash = -1;

    if (g == NULL)
        return;
    n = words(c[0], w, 16);
    for (size_t i = 0; i < n; i++) {
        if (strcmp(w[i], "/") == 0)
            slash = (int)i;
    }
    if (n >= 3) {
        imp_gpu_set(im, g, "fan_speed_pct", w[0], IU_PCT, no);
        imp_gpu_set(im, g, "temp_c", w[1], IU_C, no);
        imp_gpu_set(im, g, "pstate", w[2], IU_PSTATE, no);
    }
    if (slash >= 1 && (size_t)slash + 1 < n) {
        imp_gpu_set(im, g, "power_mw", w[slash - 1], IU_W, no);
        imp_gpu_set(im, g, "power_limit_mw", w[slash + 1], IU_W, no);
    }
    nm = words(c[1], m, 8);
    if (nm >= 3 && strcmp(m[1], "/") == 0) {
        imp_gpu_set(im, g, "mem_used_bytes", m[0], IU_MIB, no);
        imp_gpu_set(im, g, "mem_total_bytes", m[2], IU_MIB, no);
    } else if (nm >= 1) {
        char cell[64];

        /* The whole cell may be one status: "Unknown Error" when the GPU did not answer. */
        snprintf(cell, sizeof(cell), "%s%s%s", m[0], nm >= 2 ? " " : "", nm >= 2 ? m[1] : "");
        imp_gpu_set(im, g, "mem_used_bytes", cell, IU_MIB, no);
        imp_gpu_set(im, g, "mem_total_bytes", cell, IU_MIB, no);
    }
    nu = c[2] ? words(c[2], u, 8) : 0;
    if (nu >= 1)
        imp_gpu_set(im, g, "util_gpu_pct", u[0], IU_PCT, no);
    if (nu >= 2) {
        mode[0] = '\0';
        for (size_t i = 1; i < nu; i++)
            snprintf(mode + strlen(mode), sizeof(mode) - strlen(mode), "%s%s", i > 1 ? " " : "",
                     u[i]);
        imp_gpu_set(im, g, "compute_mode", mode, IU_COMPUTE, no);
    }
}

/* The third row (R450 on): "MIG M." in the last cell. */
static void gpu_row3(struct table *t, char **c, unsigned long no)
{
    struct gpu *g = cur_gpu(t);

    if (g != NULL && c[2] != NULL && c[2][0] != '\0')
        imp_gpu_set(t->im, g, "mig_mode", c[2], IU_BOOL, no);
}

static void gpus_line(struct table *t, char *line, unsigned long no)
{
    char *c[MAX_CELLS] = { NULL };
    size_t n = cells(line, c);

    if (n < 2)
        return;
    /*
     * The row after a GPU's first is its second, whatever its memory cell holds ("Unknown
     * Error" when the GPU does not answer); rows pasted without their first are known by it.
     */
    if (looks_pci(c[1])) {
        gpu_row1(t, c, no);
    } else if (t->row == 1 || strstr(c[1], "MiB") || strstr(c[1], "/")) {
        t->row = 2;
        gpu_row2(t, c, no);
    } else if (n >= 3 && t->g >= 0) {
        t->row = 3;
        gpu_row3(t, c, no);
    }
}

/* The MIG devices counted for one GPU: its rows are over when another GPU's begin. */
static void mig_done(struct table *t)
{
    struct gpu *g = t->mig_cur >= 0 ? snapshot_gpu(t->im->s, (uint32_t)t->mig_cur) : NULL;

    if (g != NULL)
        imp_gpu_set_u64(g, "mig_devices", t->mig_n);
    t->mig_cur = -1;
    t->mig_n = 0;
}

/* "|  0    1   0   0  |  13MiB / 40192MiB | 98  0 |  7   0    5    1    1 |" */
static void mig_line(struct table *t, char *line, unsigned long no)
{
    char *c[MAX_CELLS], *w[8];
    size_t n = cells(line, c);
    uint64_t index;
    struct gpu *g;

    if (n < 2 || words(c[0], w, 8) < 4 || !str_to_u64(w[0], 10, &index) || index > 4095)
        return;
    g = imp_gpu(t->im, NULL, (int64_t)index, no);
    if (g == NULL)
        return;
    t->im->found = true;
    if ((int64_t)g->index != t->mig_cur)
        mig_done(t);
    t->mig_cur = g->index;
    t->mig_n++;
}

/* "|    0   N/A  N/A      1573      G   /usr/lib/xorg/Xorg                            193MiB |" */
static void proc_line(struct table *t, char *line, unsigned long no)
{
    struct imp *im = t->im;
    char copy[IMP_MAX_LINE], *inner, *end, *w[8];
    const char *name_from, *name_to;
    size_t n, first = t->gi_cols ? 3 : 1;
    uint64_t index, pid, used, gi, ci;
    struct gpu_proc *p;
    struct gpu *g;

    inner = strchr(line, '|');
    if (inner == NULL)
        return;
    inner++;
    end = strrchr(inner, '|');
    if (end != NULL)
        *end = '\0';
    if (strstr(inner, "No running processes found") != NULL) {
        t->procs_seen = true;
        return;
    }
    snprintf(copy, sizeof(copy), "%s", inner);
    n = words(copy, w, first + 2);
    if (n < first + 2 || !str_to_u64(w[0], 10, &index) || index > 4095)
        return;
    if (!str_to_u64(w[first], 10, &pid)) {
        imp_note(im, COLLECTOR_NVML, no, "a process row without a pid: left out");
        return;
    }
    /* The name: from after the type to before the memory column (names hold blanks). */
    name_from = inner + (w[first + 1] - copy) + strlen(w[first + 1]);
    name_to = inner + strlen(inner);
    while (name_to > name_from && name_to[-1] == ' ')
        name_to--;
    {
        const char *mem = name_to;
        char memv[32], name[IMP_MAX_LINE];

        while (mem > name_from && mem[-1] != ' ')
            mem--;
        snprintf(memv, sizeof(memv), "%.*s", (int)(name_to - mem), mem);
        snprintf(name, sizeof(name), "%.*s", (int)(mem - name_from), name_from);
        imp_trim(name);
        g = imp_gpu(im, NULL, (int64_t)index, no);
        if (g == NULL)
            return;
        table_gpu(t, g);
        t->procs_seen = true;
        p = imp_gpu_proc(im, g, (uint32_t)(pid > UINT32_MAX ? 0 : pid), no);
        if (p == NULL)
            return;
        p->type_mask = 0;
        for (const char *c = w[first + 1]; *c; c++)
            p->type_mask |= *c == 'C'   ? GPU_PROC_COMPUTE
                            : *c == 'G' ? GPU_PROC_GRAPHICS
                            : *c == 'M' ? GPU_PROC_MPS
                                        : 0;
        if (p->type_mask == 0)
            p->type_mask = GPU_PROC_COMPUTE;
        if (imp_value(memv, IU_MIB, &used)) {
            p->used_bytes = used;
            p->valid |= UINT64_C(1) << GPU_PROC_S_USED;
        }
        if (t->gi_cols && str_to_u64(w[1], 10, &gi) && str_to_u64(w[2], 10, &ci) &&
            gi <= UINT32_MAX && ci <= UINT32_MAX) {
            p->gpu_instance_id = (uint32_t)gi;
            p->compute_instance_id = (uint32_t)ci;
            p->valid |= UINT64_C(1) << GPU_PROC_S_INSTANCE;
        }
        imp_proc_name(im, (uint32_t)pid, name);
    }
}

/* "| NVIDIA-SMI 535.104.05   Driver Version: 535.104.05   CUDA Version: 12.2     |" */
static void header(struct table *t, const char *line, unsigned long no)
{
    struct nvml_system *n = &t->im->s->nvml;
    const char *p;
    char v[64];
    int32_t cuda, rc;

    imp_touch(t->im, COLLECTOR_NVML);
    if (!n->attempted) {
        n->attempted = true;
        n->init_rc = 0;
    }
    /* R610 renamed them: "KMD Version" (the kernel module's) and "CUDA UMD Version". */
    /* p: just after the key, whichever name it has. */
    if ((p = strstr(line, "Driver Version:")) != NULL)
        p += strlen("Driver Version:");
    else if ((p = strstr(line, "KMD Version:")) != NULL)
        p += strlen("KMD Version:");
    if (p != NULL && sscanf(p, "%63s", v) == 1 && n->driver_version == NULL &&
        strcmp(v, "|") != 0) {
        n->driver_version = str_sanitized(v);
        n->driver_version_rc = 0;
    }
    if ((p = strstr(line, "CUDA Version:")) != NULL)
        p += strlen("CUDA Version:");
    else if ((p = strstr(line, "CUDA UMD Version:")) != NULL)
        p += strlen("CUDA UMD Version:");
    if (p != NULL && sscanf(p, "%63s", v) == 1 && n->cuda_driver_version_rc != 0) {
        if (imp_cuda_version(v, &cuda)) {
            n->cuda_driver_version = cuda;
            n->cuda_driver_version_rc = 0;
        } else if (imp_status(v, &rc)) {
            /* "N/A": not supported; "Not Found" (a -d subset): not asked, left unknown */
            if (rc == NVML_ERROR_NOT_SUPPORTED)
                n->cuda_driver_version_rc = rc;
        } else {
            imp_note(t->im, COLLECTOR_NVML, no, "CUDA version \"%.20s\" not read", v);
        }
    }
}

/* "Every 2.0s: nvidia-smi     host: Wed Apr 27 22:35:00 2022", or a time stamp alone. */
static bool time_line(struct table *t, const char *line)
{
    const char *p = str_ltrim(line);
    int64_t ms;

    if (imp_starts(p, "Every ") && strstr(p, "nvidia-smi")) {
        const char *colon = strrchr(p, ':');

        /* the time is the last 24 characters; the host precedes it */
        if (strlen(p) >= 24 && colon != NULL && (ms = imp_time_ctime(p + strlen(p) - 24)) > 0) {
            imp_time(t->im, ms);
            return true;
        }
        return false;
    }
    if (strlen(p) >= 24 && strlen(p) <= 40 && (ms = imp_time_ctime(p)) > 0) {
        imp_time(t->im, ms);
        return true;
    }
    return false;
}

/* -L's MIG devices of the GPU before, counted. */
static void list_migs(struct table *t)
{
    struct gpu *g = t->mig_gpu >= 0 ? snapshot_gpu(t->im->s, (uint32_t)t->mig_gpu) : NULL;

    if (g != NULL && t->mig_count > 0)
        imp_gpu_set_u64(g, "mig_devices", t->mig_count);
    t->mig_gpu = -1;
    t->mig_count = 0;
}

/* nvidia-smi -L: "GPU 0: Tesla K80 (UUID: GPU-...)", then "  MIG 1g.5gb Device 0: (UUID: ...)" */
static bool list_line(struct table *t, const char *line, unsigned long no)
{
    const char *p = str_ltrim(line), *u;
    uint64_t index;
    char idx[16], name[256], uuid[128];
    struct gpu *g;

    if (strncmp(p, "MIG ", 4) == 0 && strstr(p, "(UUID: MIG-") != NULL) {
        if (t->mig_gpu >= 0)
            t->mig_count++;
        return true;
    }
    if (strncmp(p, "GPU ", 4) != 0 || (u = strstr(p, " (UUID: ")) == NULL)
        return false;
    if (sscanf(p + 4, "%15[0-9]:", idx) != 1 || !str_to_u64(idx, 10, &index) || index > 4095)
        return false;
    list_migs(t);
    g = imp_gpu(t->im, NULL, (int64_t)index, no);
    if (g == NULL)
        return true;
    snprintf(name, sizeof(name), "%.*s", (int)(u - (p + 4 + strlen(idx) + 1)),
             p + 4 + strlen(idx) + 1);
    imp_trim(name);
    if (sscanf(u + 8, "%127[^)]", uuid) == 1 && strncmp(imp_trim(uuid), "GPU-", 4) == 0)
        imp_gpu_set(t->im, g, "uuid", uuid, IU_STR, no);
    imp_gpu_set(t->im, g, "name", name, IU_STR, no);
    t->mig_gpu = g->index;
    return true;
}

static void run(struct imp *im, const char *text, size_t len)
{
    struct table t;
    struct lines l;

    memset(&t, 0, sizeof(t));
    t.im = im;
    t.g = t.mig_gpu = t.mig_cur = -1;
    lines_init(&l, text, len);
    while (lines_next(&l)) {
        char *line = l.line;
        const char *p = str_ltrim(line);

        if (error_line(&t, line, l.no) || list_line(&t, line, l.no)) {
            im->found = true;
            continue;
        }
        if (time_line(&t, line))
            continue;
        if (strstr(p, "NVIDIA-SMI ") && (strstr(p, "Driver Version") || strstr(p, "KMD Version"))) {
            header(&t, p, l.no);
            t.part = P_GPUS;
            t.body = false;
            im->found = true;
            continue;
        }
        if (t.part == P_MIG && (strstr(p, "| Processes:") || p[0] == '\0'))
            mig_done(&t);
        if (strstr(p, "| Processes:") || strncmp(p, "Processes:", 10) == 0) {
            if (t.part == P_GPUS && t.n_rows > 0)
                t.gpus_complete = true;
            t.part = P_PROCS;
            t.body = false;
            t.procs_open = true;
            im->found = true;
            continue;
        }
        if (strstr(p, "| MIG devices:")) {
            if (t.part == P_GPUS && t.n_rows > 0)
                t.gpus_complete = true;
            t.part = P_MIG;
            t.body = false;
            continue;
        }
        if (t.part == P_NONE) {
            /* GPU rows without the header (a paste of some rows) are read too. */
            char copy[IMP_MAX_LINE], *c[MAX_CELLS];

            snprintf(copy, sizeof(copy), "%s", line);
            if (cells(copy, c) >= 3 && looks_pci(c[1]) && isdigit((unsigned char)c[0][0])) {
                t.part = P_GPUS;
                t.body = true;
                im->found = true;
                imp_touch(im, COLLECTOR_NVML);
                if (!im->s->nvml.attempted) {
                    im->s->nvml.attempted = true;
                    im->s->nvml.init_rc = 0;
                }
            } else {
                continue;
            }
        }
        if (strncmp(p, "|=", 2) == 0) {
            t.body = true;
            continue;
        }
        if (t.part == P_PROCS && !t.body && strstr(p, " GI ") != NULL)
            t.gi_cols = true;
        if (is_border(p)) {
            if (t.part == P_PROCS && t.body) {
                /* The process table ended: every GPU of this table has its whole list. */
                for (size_t i = 0; t.procs_open && i < t.n_gpus; i++) {
                    struct gpu *g = snapshot_gpu(im->s, t.gpus[i]);

                    if (g != NULL)
                        imp_gpu_procs_known(im, g);
                }
                t.procs_open = false;
                t.part = P_NONE;
            }
            if (t.part == P_GPUS) {
                t.g = -1;
                t.row = 0;
            }
            continue;
        }
        if (p[0] != '|')
            continue;
        /* Rows pasted without the lines around them: a GPU's first row starts the body. */
        if (!t.body && t.part == P_GPUS) {
            char copy[IMP_MAX_LINE], *c[MAX_CELLS];

            snprintf(copy, sizeof(copy), "%s", line);
            t.body = cells(copy, c) >= 3 && looks_pci(c[1]);
        }
        if (!t.body)
            continue;
        if (t.part == P_GPUS)
            gpus_line(&t, line, l.no);
        else if (t.part == P_MIG)
            mig_line(&t, line, l.no);
        else if (t.part == P_PROCS)
            proc_line(&t, line, l.no);
    }
    list_migs(&t);
    /* A MIG table cut short: the last GPU's count may be short too. */
    if (t.part == P_MIG && t.mig_cur >= 0)
        imp_note(im, COLLECTOR_NVML, 0,
                 "the MIG device table is cut short: GPU %lld's MIG devices stay unknown",
                 (long long)t.mig_cur);
    else
        mig_done(&t);
    for (size_t i = 0; i < t.n_failed; i++) {
        struct gpu *g = imp_gpu(im, t.failed[i].bus, -1, t.failed[i].line);

        if (g == NULL)
            continue;
        g->handle_rc = t.failed[i].rc;
        imp_note(im, COLLECTOR_NVML, t.failed[i].line,
                 "GPU %s: %s (its index is not printed: taken as %u, the first unused)",
                 t.failed[i].bus, t.failed[i].why, g->index);
    }
    if (t.procs_open && t.procs_seen)
        imp_note(im, COLLECTOR_NVML, 0,
                 "the process table is cut short: the GPUs' process lists stay unknown");
    /* Every GPU nvidia-smi found is in a table that goes on to its process part, unless its
     * indices skip some (nvidia-smi -i 3, -i 0,2: the others exist but are not shown). */
    if (t.gpus_complete && t.n_rows > 0 && t.rows_max_index + 1 != t.n_rows) {
        imp_note(im, COLLECTOR_NVML, 0,
                 "the GPU table shows %zu GPU(s) up to GPU %" PRIu64
                 " (nvidia-smi -i): the number of GPUs stays unknown",
                 t.n_rows, t.rows_max_index);
    } else if (t.gpus_complete && im->s->nvml.device_count_rc != 0 && im->s->nvml.init_rc == 0) {
        im->s->nvml.device_count = (uint32_t)t.n_rows;
        im->s->nvml.device_count_rc = 0;
    } else if (t.n_rows > 0 && !t.gpus_complete) {
        imp_note(im, COLLECTOR_NVML, 0,
                 "the GPU table may be cut short: the number of GPUs stays unknown");
    }
    free(t.gpus);
    if (!im->found)
        imp_fail(im, 1,
                 "no nvidia-smi table (\"| NVIDIA-SMI ... Driver Version: ...\"), "
                 "nvidia-smi -L line or nvidia-smi error message");
}

const struct importer importer_smi_table = {
    "nvidia-smi",
    "nvidia-smi's table, nvidia-smi -L, and the messages nvidia-smi prints when NVML fails",
    detect,
    run,
};
