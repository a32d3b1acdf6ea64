#include "rules/profile.h"
#include "nvml/nvml-abi.h"
#include "util/i18n.h"
#include "util/strutil.h"
#include "util/xalloc.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* clang-format off */
const struct profile_key_def profile_keys[PK__COUNT] = {
    [PK_GPU_COUNT] = { "gpu_count", PROFILE_INT, PROFILE_EQUAL, 0, 1024, false,
        "profile.gpu-count", NULL, "GPUs",
        "GPUs the node must have (fewer is critical: a GPU is missing)" },
    [PK_GPU_MODEL] = { "gpu_model", PROFILE_TEXT, PROFILE_EQUAL, 0, 0, true,
        "profile.gpu-model", NULL, "",
        "the model of every GPU, as NVML names it ('NVIDIA H100 80GB HBM3')" },
    [PK_GPU_MEMORY_MIB] = { "gpu_memory_mib", PROFILE_INT, PROFILE_NEAR, 1, INT64_C(1) << 40,
        true, "profile.gpu-memory", NULL, "MiB",
        "memory of every GPU in MiB, as NVML reports the total (within 1 %)" },
    [PK_PCIE_GEN] = { "pcie_gen", PROFILE_INT, PROFILE_AT_LEAST, 1, 7, true,
        "profile.pcie", NULL, "",
        "the PCIe generation every GPU's link must reach (GPU and slot together)" },
    [PK_PCIE_WIDTH] = { "pcie_width", PROFILE_INT, PROFILE_AT_LEAST, 1, 32, true,
        "profile.pcie", NULL, "lanes",
        "the PCIe lanes every GPU's link must run" },
    [PK_NVLINK_COUNT] = { "nvlink_count", PROFILE_INT, PROFILE_EQUAL, 0, 64, true,
        "profile.fabric", "nvlink", "links",
        "active NVLink links of every GPU" },
    [PK_IB_PORTS] = { "ib_ports", PROFILE_INT, PROFILE_EQUAL, 0, 256, false,
        "profile.fabric", "ib", "ports",
        "InfiniBand ports that must be up" },
    [PK_IB_RATE_GBPS] = { "ib_rate_gbps", PROFILE_INT, PROFILE_AT_LEAST, 1, 100000, false,
        "profile.fabric", "ib", "Gb/s",
        "the rate every InfiniBand port must run at" },
    [PK_DRIVER_VERSION] = { "driver_version", PROFILE_TEXT, PROFILE_EQUAL, 0, 0, false,
        "profile.versions", NULL, "",
        "the NVIDIA driver version ('550.54.15')" },
    [PK_CUDA_VERSION] = { "cuda_version", PROFILE_TEXT, PROFILE_EQUAL, 0, 0, false,
        "profile.versions", NULL, "",
        "the CUDA version the driver supports, as nvidia-smi shows it ('12.4')" },
    [PK_FABRICMANAGER_VERSION] = { "fabricmanager_version", PROFILE_TEXT, PROFILE_EQUAL, 0, 0,
        false, "profile.versions", "fabric", "",
        "the NVIDIA Fabric Manager version (NVSwitch systems)" },
    [PK_VBIOS_VERSION] = { "vbios_version", PROFILE_TEXT, PROFILE_EQUAL, 0, 0, true,
        "profile.vbios", NULL, "",
        "the VBIOS version of every GPU ('96.00.74.00.0B')" },
};
/* clang-format on */

int profile_key_find(const char *name)
{
    for (int i = 0; i < PK__COUNT; i++) {
        if (strcmp(profile_keys[i].name, name) == 0)
            return i;
    }
    return -1;
}

struct profile *profile_new(void)
{
    return xcalloc(1, sizeof(struct profile));
}

void profile_free(struct profile *p)
{
    if (p == NULL)
        return;
    for (int i = 0; i < PK__COUNT; i++) {
        free(p->text[i]);
        free(p->origin[i]);
    }
    free(p->source);
    free(p);
}

bool profile_empty(const struct profile *p)
{
    for (int i = 0; i < PK__COUNT; i++) {
        if (p->set[i])
            return false;
    }
    return true;
}

int profile_set(struct profile *p, int id, const char *value, const char *origin, char **cause)
{
    const struct profile_key_def *k = &profile_keys[id];
    int64_t n;

    if (*value == '\0') {
        *cause = xasprintf(_("%s: no value"), k->name);
        return -1;
    }
    if (k->type == PROFILE_INT) {
        if (!str_to_i64(value, 10, &n) || n < k->min || n > k->max) {
            char *shown = str_excerpt(value, 60);

            *cause = xasprintf(_("%s: '%s' is not a whole number from %" PRId64 " to %" PRId64),
                               k->name, shown, k->min, k->max);
            free(shown);
            return -1;
        }
        p->num[id] = n;
    } else {
        if (!str_is_one_line(value, SIZE_MAX)) {
            char *shown = str_excerpt(value, 60);

            *cause =
                xasprintf(_("%s: '%s' has control characters or is not UTF-8"), k->name, shown);
            free(shown);
            return -1;
        }
        free(p->text[id]);
        p->text[id] = xstrdup(value);
    }
    p->set[id] = true;
    free(p->origin[id]);
    p->origin[id] = origin ? xstrdup(origin) : NULL;
    return 0;
}

void profile_value(const struct profile *p, int id, char *buf, size_t size)
{
    if (!p->set[id])
        snprintf(buf, size, "?");
    else if (profile_keys[id].type == PROFILE_INT)
        snprintf(buf, size, "%" PRId64, p->num[id]);
    else
        snprintf(buf, size, "%s", p->text[id]);
}

char *profile_unquote(const char *value, char **cause)
{
    const char *p = value;
    char *out, *o;

    if (*p != '"')
        return xstrdup(value);
    out = o = xmalloc(strlen(value) + 1);
    for (p++; *p && *p != '"'; p++) {
        if (*p == '\\' && (p[1] == '"' || p[1] == '\\'))
            p++;
        *o++ = *p;
    }
    *o = '\0';
    if (*p != '"') {
        *cause = xstrdup(_("a quote that does not end"));
        free(out);
        return NULL;
    }
    if (*str_ltrim(p + 1) != '\0') {
        char *shown = str_excerpt(str_ltrim(p + 1), 60);

        *cause = xasprintf(_("'%s' after the closing quote"), shown);
        free(shown);
        free(out);
        return NULL;
    }
    return out;
}

char *profile_quote(const char *value)
{
    char *out = xmalloc(2 * strlen(value) + 3), *o = out;

    *o++ = '"';
    for (const char *p = value; *p; p++) {
        if (*p == '"' || *p == '\\')
            *o++ = '\\';
        *o++ = *p;
    }
    *o++ = '"';
    *o = '\0';
    return out;
}

/* ---- facts ---- */

void profile_cuda_text(char *buf, size_t size, int32_t v)
{
    /* NVML's 12040 is 12.4; a patch level (12041) is not shown by nvidia-smi either. */
    snprintf(buf, size, "%d.%d", (int)(v / 1000), (int)((v % 1000) / 10));
}

/*
 * The InfiniBand ports ACTIVE (RoCE ports are Ethernet's and not counted) and the slowest rate
 * among them; each unknown when a port's state, link layer or rate could not be read.
 */
static void ib_facts(struct profile_facts *f, const struct ib_info *ib)
{
    bool known = true, rates = true;
    uint32_t active = 0;
    double slowest = 0;

    for (size_t i = 0; i < ib->n_ports; i++) {
        const struct ib_port *p = &ib->ports[i];

        if (!ib_port_valid(p, IB_S_LINK_LAYER) || !ib_port_valid(p, IB_S_STATE)) {
            known = false;
            continue;
        }
        if (p->link_layer != IB_LL_INFINIBAND || p->state != IB_STATE_ACTIVE)
            continue;
        active++;
        if (!ib_port_valid(p, IB_S_RATE) || p->rate_gbps <= 0)
            rates = false;
        else if (slowest == 0 || p->rate_gbps < slowest)
            slowest = p->rate_gbps;
    }
    f->ib_ports_valid = known;
    f->ib_ports = active;
    f->ib_rate_valid = known && rates && active > 0;
    f->ib_rate_gbps = (uint32_t)slowest;
}

void profile_facts_from_snapshot(struct profile_facts *f, const struct snapshot *s)
{
    const struct nvml_system *n = &s->nvml;
    bool nvml_ok = n->attempted && n->load_error == 0 && n->init_rc == 0;

    memset(f, 0, sizeof(*f));
    if (s->collectors[COLLECTOR_PCIE].state == CS_OK ||
        (s->pcie.valid & (UINT64_C(1) << PCIE_I_GPUS))) {
        f->pci_valid = true;
        f->pci_gpus = (uint32_t)s->pcie.n_gpus;
    }
    if (nvml_ok && n->device_count_rc == 0) {
        f->count_valid = true;
        f->gpu_count = n->device_count;
        f->count_source = xstrdup("NVML");
    } else if (nvml_ok) {
        f->count_valid = true;
        f->gpu_count = (uint32_t)s->n_gpus;
        f->count_source = xstrdup("NVML");
    } else if (f->pci_valid) {
        /* No NVML: what is on the bus is all there is to count. */
        f->count_valid = true;
        f->gpu_count = f->pci_gpus;
        f->count_source = xstrdup("the PCI bus");
    }
    f->gpus = xcalloc(s->n_gpus ? s->n_gpus : 1, sizeof(*f->gpus));
    for (size_t i = 0; i < s->n_gpus; i++) {
        const struct gpu *g = &s->gpus[i];
        struct profile_gpu_facts *pg = &f->gpus[f->n_gpus++];

        pg->index = (int32_t)g->index;
        if (g->handle_rc != 0)
            continue;
        if (gpu_valid(g, GPU_S_NAME) && g->name && *g->name)
            pg->model = xstrdup(g->name);
        if (gpu_valid(g, GPU_S_MEM_TOTAL)) {
            pg->mem_valid = true;
            pg->mem_mib = g->mem_total_bytes >> 20;
        }
        if (gpu_valid(g, GPU_S_PCIE_GEN_MAX) && g->pcie_gen_max > 0) {
            pg->gen_valid = true;
            pg->pcie_gen = g->pcie_gen_max;
        }
        if (gpu_valid(g, GPU_S_PCIE_WIDTH) && g->pcie_width > 0) {
            pg->width_valid = true;
            pg->pcie_width = g->pcie_width;
        }
        if (gpu_valid(g, GPU_S_VBIOS) && g->vbios_version && *g->vbios_version)
            pg->vbios = xstrdup(g->vbios_version);
        if (gpu_valid(g, GPU_S_NVLINK)) {
            pg->nvlink_valid = true;
            pg->nvlinks = gpu_nvlinks_active(g, NULL);
        } else if (g->rc[GPU_S_NVLINK] == NVML_ERROR_NOT_SUPPORTED) {
            pg->nvlink_valid = true; /* a GPU without NVLink has none */
        }
    }
    if (nvml_ok && n->driver_version_rc == 0 && n->driver_version && *n->driver_version)
        f->driver_version = xstrdup(n->driver_version);
    else if (s->driver.module_version && *s->driver.module_version)
        f->driver_version = xstrdup(s->driver.module_version);
    if (nvml_ok && n->cuda_driver_version_rc == 0 && n->cuda_driver_version > 0) {
        char buf[32];

        profile_cuda_text(buf, sizeof(buf), n->cuda_driver_version);
        f->cuda_version = xstrdup(buf);
    }
    /* Sections every snapshot has; NVLink, InfiniBand and Fabric Manager where they were
     * collected (older snapshots and Prometheus lack them). */
    for (int k = 0; k < PK__COUNT; k++)
        f->has_section[k] = profile_keys[k].section == NULL;
    for (size_t i = 0; i < s->n_gpus; i++)
        f->has_section[PK_NVLINK_COUNT] |=
            s->gpus[i].handle_rc == 0 && s->gpus[i].rc[GPU_S_NVLINK] != JF_RC_NOT_COLLECTED;
    if (s->collectors[COLLECTOR_IB].state == CS_OK ||
        s->collectors[COLLECTOR_IB].state == CS_PARTIAL) {
        f->has_section[PK_IB_PORTS] = f->has_section[PK_IB_RATE_GBPS] = true;
        ib_facts(f, &s->ib);
    }
    if (s->collectors[COLLECTOR_FABRIC].state == CS_OK ||
        s->collectors[COLLECTOR_FABRIC].state == CS_PARTIAL) {
        f->has_section[PK_FABRICMANAGER_VERSION] = true;
        if (fabric_valid(&s->fabric, FABRIC_S_VERSION) && s->fabric.fm_version)
            f->fabricmanager_version = xstrdup(s->fabric.fm_version);
    }
}

void profile_facts_free(struct profile_facts *f)
{
    for (size_t i = 0; i < f->n_gpus; i++) {
        free(f->gpus[i].model);
        free(f->gpus[i].vbios);
    }
    free(f->gpus);
    free(f->count_source);
    free(f->driver_version);
    free(f->cuda_version);
    free(f->fabricmanager_version);
    memset(f, 0, sizeof(*f));
}

/* ---- comparison ---- */

static void add(struct profile_deviation **out, size_t *n, size_t *cap, int key, int32_t gpu,
                enum profile_outcome o, bool fewer, const char *expected, const char *found)
{
    struct profile_deviation *d;

    xgrow(out, cap, *n + 1, sizeof(**out));
    d = &(*out)[(*n)++];
    d->key = key;
    d->gpu = gpu;
    d->outcome = o;
    d->fewer = fewer;
    d->expected = xstrdup(expected);
    d->found = found ? xstrdup(found) : NULL;
}

/* A per-GPU number: valid, value. */
static bool gpu_number(const struct profile_gpu_facts *g, int key, int64_t *v)
{
    switch (key) {
    case PK_GPU_MEMORY_MIB:
        *v = (int64_t)g->mem_mib;
        return g->mem_valid;
    case PK_PCIE_GEN:
        *v = g->pcie_gen;
        return g->gen_valid;
    case PK_PCIE_WIDTH:
        *v = g->pcie_width;
        return g->width_valid;
    case PK_NVLINK_COUNT:
        *v = g->nvlinks;
        return g->nvlink_valid;
    }
    return false;
}

/* A node-wide number: valid, value. */
static bool node_number(const struct profile_facts *f, int key, int64_t *v)
{
    switch (key) {
    case PK_IB_PORTS:
        *v = f->ib_ports;
        return f->ib_ports_valid;
    case PK_IB_RATE_GBPS:
        *v = f->ib_rate_gbps;
        return f->ib_rate_valid;
    }
    return false;
}

static const char *gpu_text(const struct profile_gpu_facts *g, int key)
{
    return key == PK_GPU_MODEL ? g->model : key == PK_VBIOS_VERSION ? g->vbios : NULL;
}

static const char *node_text(const struct profile_facts *f, int key)
{
    return key == PK_DRIVER_VERSION          ? f->driver_version
           : key == PK_CUDA_VERSION          ? f->cuda_version
           : key == PK_FABRICMANAGER_VERSION ? f->fabricmanager_version
                                             : NULL;
}

/* Whether have is acceptable for want under the key's comparison; *fewer when it is less. */
static bool number_ok(int key, int64_t want, int64_t have, bool *fewer)
{
    *fewer = have < want;
    switch (profile_keys[key].cmp) {
    case PROFILE_AT_LEAST:
        return have >= want;
    case PROFILE_NEAR:
        return fabs((double)have - (double)want) <= (double)want * PROFILE_NEAR_PCT / 100.0;
    case PROFILE_EQUAL:
        break;
    }
    return have == want;
}

size_t profile_compare(const struct profile *p, const struct profile_facts *f,
                       struct profile_deviation **out)
{
    size_t n = 0, cap = 0;

    *out = NULL;
    for (int k = 0; k < PK__COUNT; k++) {
        const struct profile_key_def *def = &profile_keys[k];
        char want[256], have[64];
        bool fewer;

        if (!p->set[k])
            continue;
        profile_value(p, k, want, sizeof(want));
        if (!f->has_section[k]) {
            add(out, &n, &cap, k, -1, PROFILE_NOT_IN_EVIDENCE, false, want, NULL);
            continue;
        }
        if (k == PK_GPU_COUNT) {
            if (!f->count_valid) {
                add(out, &n, &cap, k, -1, PROFILE_UNKNOWN, false, want, NULL);
            } else if (!number_ok(k, p->num[k], f->gpu_count, &fewer)) {
                snprintf(have, sizeof(have), "%" PRIu32, f->gpu_count);
                add(out, &n, &cap, k, -1, PROFILE_DEVIATES, fewer, want, have);
            }
            continue;
        }
        if (!def->per_gpu && def->type == PROFILE_INT) {
            int64_t v;

            if (!node_number(f, k, &v)) {
                add(out, &n, &cap, k, -1, PROFILE_UNKNOWN, false, want, NULL);
            } else if (!number_ok(k, p->num[k], v, &fewer)) {
                snprintf(have, sizeof(have), "%" PRId64, v);
                add(out, &n, &cap, k, -1, PROFILE_DEVIATES, fewer, want, have);
            }
            continue;
        }
        if (!def->per_gpu) {
            const char *v = node_text(f, k);

            if (v == NULL)
                add(out, &n, &cap, k, -1, PROFILE_UNKNOWN, false, want, NULL);
            else if (strcmp(v, p->text[k]) != 0)
                add(out, &n, &cap, k, -1, PROFILE_DEVIATES, false, want, v);
            continue;
        }
        for (size_t i = 0; i < f->n_gpus; i++) {
            const struct profile_gpu_facts *g = &f->gpus[i];
            int64_t v;

            if (def->type == PROFILE_TEXT) {
                const char *t = gpu_text(g, k);

                if (t == NULL)
                    add(out, &n, &cap, k, g->index, PROFILE_UNKNOWN, false, want, NULL);
                else if (strcmp(t, p->text[k]) != 0)
                    add(out, &n, &cap, k, g->index, PROFILE_DEVIATES, false, want, t);
            } else if (!gpu_number(g, k, &v)) {
                add(out, &n, &cap, k, g->index, PROFILE_UNKNOWN, false, want, NULL);
            } else if (!number_ok(k, p->num[k], v, &fewer)) {
                snprintf(have, sizeof(have), "%" PRId64, v);
                add(out, &n, &cap, k, g->index, PROFILE_DEVIATES, fewer, want, have);
            }
        }
    }
    return n;
}

void profile_deviations_free(struct profile_deviation *d, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(d[i].expected);
        free(d[i].found);
    }
    free(d);
}

/* ---- a profile from a node ---- */

/* The most common of n strings (NULLs skipped), and whether they all agree. */
static const char *most_common(const char *const *v, size_t n, bool *all_same)
{
    const char *best = NULL;
    size_t best_n = 0, known = 0;

    for (size_t i = 0; i < n; i++) {
        size_t c = 0;

        if (v[i] == NULL)
            continue;
        known++;
        for (size_t j = 0; j < n; j++)
            c += v[j] && strcmp(v[i], v[j]) == 0;
        if (c > best_n) {
            best = v[i];
            best_n = c;
        }
    }
    *all_same = best_n == known;
    return best;
}

static void note(char ***notes, size_t *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void note(char ***notes, size_t *n, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    *notes = xreallocarray(*notes, *n + 1, sizeof(**notes));
    (*notes)[(*n)++] = xvasprintf(fmt, ap);
    va_end(ap);
}

struct profile *profile_from_facts(const struct profile_facts *f, char ***notes, size_t *n_notes)
{
    struct profile *p = profile_new();
    const char **v = xcalloc(f->n_gpus ? f->n_gpus : 1, sizeof(*v));
    char(*nums)[24] = xcalloc(f->n_gpus ? f->n_gpus : 1, sizeof(*nums));
    char *cause = NULL;
    bool any = false;

    *notes = NULL;
    *n_notes = 0;
    if (f->count_valid) {
        char buf[24];

        snprintf(buf, sizeof(buf), "%" PRIu32, f->gpu_count);
        profile_set(p, PK_GPU_COUNT, buf, NULL, &cause);
    }
    for (int k = 0; k < PK__COUNT; k++)
        p->absent[k] = !f->has_section[k];
    for (int k = 0; k < PK__COUNT; k++) {
        const char *best;
        bool same;

        if (!profile_keys[k].per_gpu || !f->has_section[k])
            continue;
        for (size_t i = 0; i < f->n_gpus; i++) {
            int64_t x;

            if (profile_keys[k].type == PROFILE_TEXT) {
                v[i] = gpu_text(&f->gpus[i], k);
            } else if (gpu_number(&f->gpus[i], k, &x)) {
                snprintf(nums[i], sizeof(nums[i]), "%" PRId64, x);
                v[i] = nums[i];
            } else {
                v[i] = NULL;
            }
        }
        best = most_common(v, f->n_gpus, &same);
        if (best == NULL)
            continue;
        any = true;
        if (!same)
            note(notes, n_notes, _("%s: the GPUs differ; the most common value, %s, is saved"),
                 profile_keys[k].name, best);
        if (profile_set(p, k, best, NULL, &cause) != 0) {
            note(notes, n_notes, _("%s: not saved: %s"), profile_keys[k].name, cause);
            free(cause);
            cause = NULL;
        }
    }
    for (int k = PK_IB_PORTS; k <= PK_IB_RATE_GBPS; k++) {
        int64_t x;
        char buf[24];

        if (!f->has_section[k] || !node_number(f, k, &x))
            continue;
        snprintf(buf, sizeof(buf), "%" PRId64, x);
        if (profile_set(p, k, buf, NULL, &cause) != 0) {
            note(notes, n_notes, _("%s: not saved: %s"), profile_keys[k].name, cause);
            free(cause);
            cause = NULL;
        }
    }
    for (int k = PK_DRIVER_VERSION; k <= PK_FABRICMANAGER_VERSION; k++) {
        const char *t = node_text(f, k);

        if (t != NULL && profile_set(p, k, t, NULL, &cause) != 0) {
            note(notes, n_notes, _("%s: not saved: %s"), profile_keys[k].name, cause);
            free(cause);
            cause = NULL;
        }
    }
    free(v);
    free(nums);
    if (!any && !f->count_valid) {
        profile_free(p);
        return NULL;
    }
    return p;
}

char *profile_format(const struct profile *p, const char *header)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);

    if (out == NULL)
        fatal("out of memory formatting a profile");
    if (header)
        fputs(header, out);
    fputs("[profile]\n", out);
    for (int k = 0; k < PK__COUNT; k++) {
        const struct profile_key_def *def = &profile_keys[k];

        if (p->set[k] && def->type == PROFILE_INT) {
            fprintf(out, "%s = %" PRId64 "\n", def->name, p->num[k]);
        } else if (p->set[k]) {
            char *q = profile_quote(p->text[k]);

            fprintf(out, "%s = %s\n", def->name, q);
            free(q);
        } else if (p->absent[k] && def->section != NULL) {
            fprintf(out, "# %s = ?   (not in the evidence: this snapshot has no %s section)\n",
                    def->name, def->section);
        } else {
            fprintf(out, "# %s = ?   (not known on this node)\n", def->name);
        }
    }
    if (fclose(out) != 0)
        fatal("out of memory formatting a profile");
    return buf;
}
