/*
 * Exported: the NVLink and GPU fabric calls, and nvmlDeviceGetFieldValues. They answer from the
 * GPU's "nvlink" list and "fabric" object (the snapshot's own format, or a scenario's older
 * "nvlinks" booleans made into that list), link values through the timeline so that error
 * counters can grow, and from the scenario's "field_values". Return codes follow the 13.3.29
 * header's documentation of each function (docs/simulator.md, "NVLink and fabric").
 */
#include "sim.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <string.h>

/* Index of link in the GPU's list, or the code the call returns: NOT_SUPPORTED without NVLink,
 * INVALID_ARGUMENT for a link the GPU does not have ("if device or link is invalid"). */
static nvmlReturn_t find_link(const struct sim_call *c, unsigned int link, size_t *li)
{
    const struct gpu *g = &c->gpu->g;
    int32_t rc = g->rc[GPU_S_NVLINK];

    if (rc != 0)
        return rc < 0 ? NVML_ERROR_NOT_SUPPORTED : rc;
    for (size_t i = 0; i < g->n_nvlinks; i++) {
        if (g->nvlinks[i].link == link) {
            *li = i;
            return NVML_SUCCESS;
        }
    }
    return NVML_ERROR_INVALID_ARGUMENT;
}

/* The current value of one link value, or its code. */
static nvmlReturn_t link_value(struct sim_call *c, unsigned int link, enum gpu_nvlink_slot slot,
                               uint64_t *out)
{
    size_t li = 0;
    nvmlReturn_t rc = find_link(c, link, &li);

    if (rc != NVML_SUCCESS)
        return rc;
    return sim_link_value(c->scn, c->gi, li, slot, c->t, out);
}

nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link, int *isActive)
{
    struct sim_call c;
    nvmlReturn_t rc = sim_begin_dev(&c, __func__, device, isActive != NULL, false);
    uint64_t v = 0;

    if (rc == NVML_SUCCESS)
        rc = link_value(&c, link, NVL_S_ACTIVE, &v);
    if (rc == NVML_SUCCESS)
        *isActive = v ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
    return sim_end(&c, rc);
}

nvmlReturn_t nvmlDeviceGetNvLinkVersion(nvmlDevice_t device, unsigned int link,
                                        unsigned int *version)
{
    struct sim_call c;
    nvmlReturn_t rc = sim_begin_dev(&c, __func__, device, version != NULL, false);
    uint64_t v = 0;

    if (rc == NVML_SUCCESS)
        rc = link_value(&c, link, NVL_S_VERSION, &v);
    if (rc == NVML_SUCCESS)
        *version = (unsigned int)v;
    return sim_end(&c, rc);
}

/* "pciSubSystemId is not filled in this function": it stays 0; the device id is that of a GPU of
 * the scenario at that address, else 0. */
nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t device, unsigned int link,
                                                 nvmlPciInfo_t *pci)
{
    struct sim_call c;
    nvmlReturn_t rc = sim_begin_dev(&c, __func__, device, pci != NULL, false);
    size_t li = 0;

    if (rc == NVML_SUCCESS)
        rc = find_link(&c, link, &li);
    if (rc == NVML_SUCCESS && c.gpu->g.nvlinks[li].rc[NVL_S_REMOTE_BUS] != 0) {
        int32_t r = c.gpu->g.nvlinks[li].rc[NVL_S_REMOTE_BUS];

        rc = r < 0 ? NVML_ERROR_NOT_SUPPORTED : r;
    }
    if (rc == NVML_SUCCESS) {
        const uint32_t *a = c.gpu->link_pci[li];

        memset(pci, 0, sizeof(*pci));
        snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), "%04X:%02X:%02X.%X", a[0], a[1], a[2],
                 a[3]);
        snprintf(pci->busId, sizeof(pci->busId), "%08X:%02X:%02X.%X", a[0], a[1], a[2], a[3]);
        pci->domain = a[0];
        pci->bus = a[1];
        pci->device = a[2];
        for (size_t i = 0; i < c.scn->n_gpus; i++) {
            const struct sim_gpu *o = &c.scn->gpus[i];

            if (o->g.handle_rc == 0 && o->g.rc[GPU_S_PCI_BUS_ID] == 0 &&
                o->g.rc[GPU_S_PCI_DEVICE_ID] == 0 && o->pci_domain == a[0] && o->pci_bus == a[1] &&
                o->pci_device == a[2] && o->pci_function == a[3])
                pci->pciDeviceId = o->g.pci_device_id;
        }
    }
    return sim_end(&c, rc);
}

nvmlReturn_t nvmlDeviceGetNvLinkRemoteDeviceType(nvmlDevice_t device, unsigned int link,
                                                 int *pNvLinkDeviceType)
{
    static const int types[] = { NVML_NVLINK_DEVICE_TYPE_GPU, NVML_NVLINK_DEVICE_TYPE_IBMNPU,
                                 NVML_NVLINK_DEVICE_TYPE_SWITCH, NVML_NVLINK_DEVICE_TYPE_UNKNOWN };
    struct sim_call c;
    nvmlReturn_t rc = sim_begin_dev(&c, __func__, device, pNvLinkDeviceType != NULL, false);
    size_t li = 0;

    if (rc == NVML_SUCCESS)
        rc = find_link(&c, link, &li);
    if (rc == NVML_SUCCESS) {
        const struct gpu_nvlink *l = &c.gpu->g.nvlinks[li];

        if (l->rc[NVL_S_REMOTE_TYPE] != 0)
            rc = l->rc[NVL_S_REMOTE_TYPE] < 0 ? NVML_ERROR_NOT_SUPPORTED : l->rc[NVL_S_REMOTE_TYPE];
        else if (l->remote_type >= 0 && (size_t)l->remote_type < ARRAY_SIZE(types))
            *pNvLinkDeviceType = types[l->remote_type];
        else
            *pNvLinkDeviceType = NVML_NVLINK_DEVICE_TYPE_UNKNOWN;
    }
    return sim_end(&c, rc);
}

/* The scenario's entry for field id at scope, or NULL. */
static const struct sim_field_value *find_field(const struct sim_extra *x, uint32_t id,
                                                uint32_t scope)
{
    for (size_t i = 0; i < x->n_fields; i++) {
        if (x->fields[i].id == id && (x->fields[i].any_scope || x->fields[i].scope == scope))
            return &x->fields[i];
    }
    return NULL;
}

/* The link slot a scoped NVLink counter field (errors, data sent and received) reads, or -1. */
static int counter_slot(uint32_t id)
{
    switch (id) {
    case NVML_FI_DEV_NVLINK_ERROR_DL_CRC:
        return NVL_S_CRC;
    case NVML_FI_DEV_NVLINK_ERROR_DL_REPLAY:
        return NVL_S_REPLAY;
    case NVML_FI_DEV_NVLINK_ERROR_DL_RECOVERY:
        return NVL_S_RECOVERY;
    case NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX:
        return NVL_S_TX;
    case NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX:
        return NVL_S_RX;
    default:
        return -1;
    }
}

/*
 * Each value gets its own return code; the call succeeds once the arguments are good ("you must
 * check the nvmlReturn field of each value"). An entry of the scenario's field_values answers
 * first, so a scenario can make any value fail; then the NVLink counters (errors, data sent and
 * received) of the "nvlink" list (scopeId = link, values that follow the timeline), and the
 * recovery action from the GPU's recovery_action; a field the scenario does not give is
 * NOT_SUPPORTED, as for a GPU without it. A successful value is stamped with the time of the
 * call (CPU microseconds) and a latency of 0; a failed one keeps the caller's value and type.
 */
nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t device, int valuesCount,
                                      nvmlFieldValue_t *values)
{
    struct sim_call c;
    nvmlReturn_t rc =
        sim_begin_dev(&c, __func__, device, values != NULL && valuesCount >= 0, false);
    long long now;

    if (rc != NVML_SUCCESS)
        return sim_end(&c, rc);
    now = (long long)sim_now_real_us();
    for (int i = 0; i < valuesCount; i++) {
        nvmlFieldValue_t *v = &values[i];
        const struct sim_field_value *fv = find_field(&c.gpu->extra, v->fieldId, v->scopeId);
        int slot = counter_slot(v->fieldId);

        if (fv == NULL && slot >= 0) {
            uint64_t x = 0;

            v->nvmlReturn = link_value(&c, v->scopeId, (enum gpu_nvlink_slot)slot, &x);
            if (v->nvmlReturn != NVML_SUCCESS)
                continue;
            v->valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
            v->value.ullVal = x;
        } else if (fv == NULL && v->fieldId == NVML_FI_DEV_GET_GPU_RECOVERY_ACTION) {
            int x = 0;

            v->nvmlReturn = sim_int(&c, GPU_S_RECOVERY, &x);
            if (v->nvmlReturn != NVML_SUCCESS)
                continue;
            v->valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
            v->value.uiVal = (unsigned int)x;
        } else if (fv == NULL || fv->rc != 0) {
            v->nvmlReturn = fv == NULL ? NVML_ERROR_NOT_SUPPORTED : fv->rc;
            continue;
        } else {
            v->nvmlReturn = NVML_SUCCESS;
            v->valueType = fv->type;
            v->value = fv->value;
        }
        v->timestamp = now;
        v->latencyUsec = 0;
    }
    return sim_end(&c, NVML_SUCCESS);
}

/* The fabric of the call's GPU, or the code that stands for it. */
static nvmlReturn_t fabric_rc(const struct sim_call *c)
{
    const struct gpu *g = &c->gpu->g;
    int32_t rc = g->rc[GPU_S_FABRIC];

    if (rc != 0)
        return rc < 0 ? NVML_ERROR_NOT_SUPPORTED : rc;
    if (!(g->fabric.valid & (UINT64_C(1) << FAB_S_INFO)))
        return NVML_ERROR_NOT_SUPPORTED;
    return NVML_SUCCESS;
}

static unsigned char fabric_state(const struct gpu_fabric *f)
{
    /* "unknown" in a snapshot stands for a value the header does not name: 255 */
    return f->state >= 0 && f->state <= NVML_GPU_FABRIC_STATE_COMPLETED ? (unsigned char)f->state
                                                                        : 255;
}

/* Accepts nvmlGpuFabricInfo_v3 and _v2 (v2 has no healthSummary); any other version is
 * ARGUMENT_VERSION_MISMATCH, as for the versioned calls of drivers newer than 520. */
nvmlReturn_t nvmlDeviceGetGpuFabricInfoV(nvmlDevice_t device, nvmlGpuFabricInfo_v3_t *gpuFabricInfo)
{
    struct sim_call c;
    nvmlReturn_t rc = sim_begin_dev(&c, __func__, device, gpuFabricInfo != NULL, false);
    unsigned int version = 0;

    if (rc == NVML_SUCCESS) {
        version = gpuFabricInfo->version;
        if (version != nvmlGpuFabricInfo_v3 && version != nvmlGpuFabricInfo_v2)
            rc = NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    }
    if (rc == NVML_SUCCESS)
        rc = fabric_rc(&c);
    if (rc == NVML_SUCCESS) {
        const struct gpu_fabric *f = &c.gpu->g.fabric;

        memset(gpuFabricInfo, 0,
               version == nvmlGpuFabricInfo_v3 ? sizeof(*gpuFabricInfo)
                                               : NVML_GPU_FABRIC_INFO_V2_SIZE);
        gpuFabricInfo->version = version;
        memcpy(gpuFabricInfo->clusterUuid, c.gpu->fabric_uuid, NVML_GPU_FABRIC_UUID_LEN);
        gpuFabricInfo->status = f->status;
        gpuFabricInfo->cliqueId = f->clique_id;
        gpuFabricInfo->state = fabric_state(f);
        if (f->valid & (UINT64_C(1) << FAB_S_HEALTH))
            gpuFabricInfo->healthMask = f->health_mask;
    }
    return sim_end(&c, rc);
}

nvmlReturn_t nvmlDeviceGetGpuFabricInfo(nvmlDevice_t device, nvmlGpuFabricInfo_t *gpuFabricInfo)
{
    struct sim_call c;
    nvmlReturn_t rc = sim_begin_dev(&c, __func__, device, gpuFabricInfo != NULL, false);

    if (rc == NVML_SUCCESS)
        rc = fabric_rc(&c);
    if (rc == NVML_SUCCESS) {
        const struct gpu_fabric *f = &c.gpu->g.fabric;

        memset(gpuFabricInfo, 0, sizeof(*gpuFabricInfo));
        memcpy(gpuFabricInfo->clusterUuid, c.gpu->fabric_uuid, NVML_GPU_FABRIC_UUID_LEN);
        gpuFabricInfo->status = f->status;
        gpuFabricInfo->cliqueId = f->clique_id;
        gpuFabricInfo->state = fabric_state(f);
    }
    return sim_end(&c, rc);
}
