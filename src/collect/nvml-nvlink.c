#include "collect/nvml-nvlink.h"
#include "nvml/nvml-abi.h"
#include "util/xalloc.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void enter(const struct nvml_nvlink_ctx *c, enum nvml_sym sym, int gpu)
{
    if (c->mark != NULL)
        c->mark(c->mark_arg, nvml_sym_names[sym], gpu);
}

static nvmlReturn_t leave(const struct nvml_nvlink_ctx *c, nvmlReturn_t rc)
{
    if (c->mark != NULL)
        c->mark(c->mark_arg, NULL, -1);
    return rc;
}

/* As nvml-query.c's CALL: a missing symbol is FUNCTION_NOT_FOUND for what it supplies. */
#define CALL(c, gpu, name, ...)                                                                    \
    (!NVML_HAS((c)->lib, name)                                                                     \
         ? NVML_ERROR_FUNCTION_NOT_FOUND                                                           \
         : (enter((c), NVML_SYM_##name, (gpu)), leave((c), NVML_FN((c)->lib, name)(__VA_ARGS__))))

/* NVML strings are ASCII; anything else becomes '?'. */
static char *clean(char *buf, size_t size)
{
    buf[size - 1] = '\0';
    for (char *p = buf; *p; p++) {
        if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e)
            *p = '?';
    }
    return xstrdup(buf);
}

bool nvml_field_as_u64(const nvmlFieldValue_t *v, uint64_t *out)
{
    if (v->nvmlReturn != NVML_SUCCESS)
        return false;
    switch (v->valueType) {
    case NVML_VALUE_TYPE_UNSIGNED_INT:
        *out = v->value.uiVal;
        return true;
    case NVML_VALUE_TYPE_UNSIGNED_LONG:
        *out = v->value.ulVal;
        return true;
    case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG:
        *out = v->value.ullVal;
        return true;
    case NVML_VALUE_TYPE_UNSIGNED_SHORT:
        *out = v->value.usVal;
        return true;
    case NVML_VALUE_TYPE_SIGNED_LONG_LONG:
        if (v->value.sllVal < 0)
            return false;
        *out = (uint64_t)v->value.sllVal;
        return true;
    case NVML_VALUE_TYPE_SIGNED_INT:
        if (v->value.siVal < 0)
            return false;
        *out = (uint64_t)v->value.siVal;
        return true;
    case NVML_VALUE_TYPE_DOUBLE:
        if (!isfinite(v->value.dVal) || v->value.dVal < 0 || v->value.dVal >= 0x1p63)
            return false;
        *out = (uint64_t)v->value.dVal;
        return true;
    default:
        return false;
    }
}

int32_t nvml_nvlink_remote(int type)
{
    switch (type) {
    case NVML_NVLINK_DEVICE_TYPE_GPU:
        return NVL_REMOTE_GPU;
    case NVML_NVLINK_DEVICE_TYPE_IBMNPU:
        return NVL_REMOTE_IBMNPU;
    case NVML_NVLINK_DEVICE_TYPE_SWITCH:
        return NVL_REMOTE_SWITCH;
    default:
        return NVL_REMOTE_UNKNOWN;
    }
}

void nvml_fabric_uuid(const unsigned char *u, char *buf)
{
    size_t n = 0;

    for (size_t i = 0; i < NVML_GPU_FABRIC_UUID_LEN; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            buf[n++] = '-';
        n += (size_t)snprintf(buf + n, 3, "%02x", u[i]);
    }
    buf[n] = '\0';
}

/* "No such link": the header's answers for a link the GPU does not have. */
static bool no_such_link(nvmlReturn_t rc)
{
    return rc == NVML_ERROR_NOT_SUPPORTED || rc == NVML_ERROR_INVALID_ARGUMENT;
}

static void link_details(const struct nvml_nvlink_ctx *c, struct gpu_nvlink *l, int gpu,
                         nvmlDevice_t d)
{
    unsigned int version = 0;
    nvmlPciInfo_t pci;
    int type = NVML_NVLINK_DEVICE_TYPE_UNKNOWN;
    nvmlReturn_t rc;

    rc = CALL(c, gpu, nvmlDeviceGetNvLinkVersion, d, l->link, &version);
    l->version = rc == NVML_SUCCESS ? version : 0;
    l->rc[NVL_S_VERSION] = rc;
    memset(&pci, 0, sizeof(pci));
    rc = CALL(c, gpu, nvmlDeviceGetNvLinkRemotePciInfo_v2, d, l->link, &pci);
    if (rc == NVML_SUCCESS)
        l->remote_pci_bus_id = clean(pci.busId, sizeof(pci.busId));
    l->rc[NVL_S_REMOTE_BUS] = rc;
    rc = CALL(c, gpu, nvmlDeviceGetNvLinkRemoteDeviceType, d, l->link, &type);
    l->remote_type = rc == NVML_SUCCESS ? nvml_nvlink_remote(type) : NVL_REMOTE_UNKNOWN;
    l->rc[NVL_S_REMOTE_TYPE] = rc;
}

/* The scoped counters of every link (errors, data sent and received) in one
 * nvmlDeviceGetFieldValues call; each value has its own return code. */
static void link_counters(const struct nvml_nvlink_ctx *c, struct gpu *g, nvmlDevice_t d)
{
    static const struct {
        unsigned int id;
        enum gpu_nvlink_slot slot;
        size_t offset;
    } counters[] = {
        { NVML_FI_DEV_NVLINK_ERROR_DL_CRC, NVL_S_CRC, offsetof(struct gpu_nvlink, crc_errors) },
        { NVML_FI_DEV_NVLINK_ERROR_DL_REPLAY, NVL_S_REPLAY,
          offsetof(struct gpu_nvlink, replay_errors) },
        { NVML_FI_DEV_NVLINK_ERROR_DL_RECOVERY, NVL_S_RECOVERY,
          offsetof(struct gpu_nvlink, recovery_errors) },
        { NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, NVL_S_TX, offsetof(struct gpu_nvlink, tx_kib) },
        { NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX, NVL_S_RX, offsetof(struct gpu_nvlink, rx_kib) },
    };
    size_t n = g->n_nvlinks * ARRAY_SIZE(counters);
    nvmlFieldValue_t *v = xcalloc(n, sizeof(*v));
    nvmlReturn_t rc;

    for (size_t i = 0; i < g->n_nvlinks; i++) {
        for (size_t k = 0; k < ARRAY_SIZE(counters); k++) {
            nvmlFieldValue_t *fv = &v[i * ARRAY_SIZE(counters) + k];

            fv->fieldId = counters[k].id;
            fv->scopeId = g->nvlinks[i].link;
            fv->nvmlReturn = NVML_ERROR_UNKNOWN; /* a library that skips a value leaves this */
        }
    }
    rc = CALL(c, (int)g->index, nvmlDeviceGetFieldValues, d, (int)n, v);
    for (size_t i = 0; i < g->n_nvlinks; i++) {
        struct gpu_nvlink *l = &g->nvlinks[i];

        for (size_t k = 0; k < ARRAY_SIZE(counters); k++) {
            const nvmlFieldValue_t *fv = &v[i * ARRAY_SIZE(counters) + k];
            uint64_t x = 0;

            if (rc != NVML_SUCCESS) {
                l->rc[counters[k].slot] = rc;
            } else if (fv->nvmlReturn != NVML_SUCCESS) {
                l->rc[counters[k].slot] = fv->nvmlReturn;
            } else if (!nvml_field_as_u64(fv, &x)) {
                l->rc[counters[k].slot] = NVML_ERROR_UNKNOWN; /* not a count we can read */
            } else {
                *(uint64_t *)(void *)((char *)l + counters[k].offset) = x;
                l->rc[counters[k].slot] = 0;
            }
        }
    }
    free(v);
}

void nvml_nvlink_query(const struct nvml_nvlink_ctx *c, struct gpu *g, nvmlDevice_t d,
                       bool sampling, struct nvml_nvlink_seen *seen)
{
    int gpu = (int)g->index;
    nvmlReturn_t first = NVML_ERROR_NOT_SUPPORTED;

    gpu_nvlinks_free(g);
    if (sampling && seen->known && seen->mask == 0) {
        gpu_set_rc(g, GPU_S_NVLINK, seen->rc); /* nothing to sample */
        return;
    }
    if (!NVML_HAS(c->lib, nvmlDeviceGetNvLinkState)) {
        first = NVML_ERROR_FUNCTION_NOT_FOUND;
        goto done;
    }
    for (unsigned int link = 0; link < NVML_NVLINK_MAX_LINKS; link++) {
        int active = 0;
        nvmlReturn_t rc;
        struct gpu_nvlink *l;

        if (sampling && seen->known && !(seen->mask & (UINT64_C(1) << link)))
            continue;
        rc = CALL(c, gpu, nvmlDeviceGetNvLinkState, d, link, &active);
        if (link == 0 && rc == NVML_ERROR_NOT_SUPPORTED && g->n_nvlinks == 0)
            break; /* "the device doesn't support this feature" */
        if (no_such_link(rc))
            continue;
        if (rc != NVML_SUCCESS && g->n_nvlinks == 0 && link == 0) {
            /* GPU_IS_LOST and the like: every link would say the same. */
            first = rc;
            break;
        }
        if (g->nvlinks == NULL)
            g->nvlinks = xcalloc(NVML_NVLINK_MAX_LINKS, sizeof(*g->nvlinks));
        l = &g->nvlinks[g->n_nvlinks++];
        gpu_nvlink_init(l, link);
        l->active = rc == NVML_SUCCESS && active == NVML_FEATURE_ENABLED;
        l->rc[NVL_S_ACTIVE] = rc;
        if (!sampling)
            link_details(c, l, gpu, d);
    }
    if (g->n_nvlinks > 0) {
        link_counters(c, g, d);
        first = NVML_SUCCESS;
    }
done:
    if (g->n_nvlinks == 0)
        gpu_nvlinks_free(g);
    gpu_set_rc(g, GPU_S_NVLINK, first);
    if (!sampling) {
        seen->known = true;
        seen->rc = first;
        seen->mask = 0;
        for (size_t i = 0; i < g->n_nvlinks; i++)
            seen->mask |= UINT64_C(1) << g->nvlinks[i].link;
    }
}

static void set_fabric(struct gpu *g, const unsigned char *uuid, nvmlReturn_t status,
                       unsigned int clique, unsigned char state)
{
    char buf[40];

    g->fabric.state = state <= NVML_GPU_FABRIC_STATE_COMPLETED ? state : GPU_FABRIC_UNKNOWN;
    g->fabric.status = status;
    g->fabric.clique_id = clique;
    nvml_fabric_uuid(uuid, buf);
    free(g->fabric.cluster_uuid);
    g->fabric.cluster_uuid = xstrdup(buf);
    g->fabric.valid |= UINT64_C(1) << FAB_S_INFO;
}

void nvml_fabric_query(const struct nvml_nvlink_ctx *c, struct gpu *g, nvmlDevice_t d)
{
    int gpu = (int)g->index;
    nvmlReturn_t rc = NVML_ERROR_FUNCTION_NOT_FOUND;

    g->fabric.valid = 0;
    if (NVML_HAS(c->lib, nvmlDeviceGetGpuFabricInfoV)) {
        /* v3 first; a driver that only knows v2 refuses it, and v2 is v3's prefix. */
        static const unsigned int versions[] = { nvmlGpuFabricInfo_v3, nvmlGpuFabricInfo_v2 };

        for (size_t i = 0; i < ARRAY_SIZE(versions); i++) {
            nvmlGpuFabricInfo_v3_t f;

            memset(&f, 0, sizeof(f));
            f.version = versions[i];
            rc = CALL(c, gpu, nvmlDeviceGetGpuFabricInfoV, d, &f);
            if (rc == NVML_SUCCESS) {
                set_fabric(g, f.clusterUuid, f.status, f.cliqueId, f.state);
                g->fabric.health_mask = f.healthMask;
                g->fabric.valid |= UINT64_C(1) << FAB_S_HEALTH;
                gpu_set_rc(g, GPU_S_FABRIC, 0);
                return;
            }
            if (rc != NVML_ERROR_ARGUMENT_VERSION_MISMATCH && rc != NVML_ERROR_FUNCTION_NOT_FOUND)
                break;
        }
    }
    if ((rc == NVML_ERROR_ARGUMENT_VERSION_MISMATCH || rc == NVML_ERROR_FUNCTION_NOT_FOUND) &&
        NVML_HAS(c->lib, nvmlDeviceGetGpuFabricInfo)) {
        nvmlGpuFabricInfo_t f;

        memset(&f, 0, sizeof(f));
        rc = CALL(c, gpu, nvmlDeviceGetGpuFabricInfo, d, &f);
        if (rc == NVML_SUCCESS)
            set_fabric(g, f.clusterUuid, f.status, f.cliqueId, f.state);
    }
    gpu_set_rc(g, GPU_S_FABRIC, rc);
}
