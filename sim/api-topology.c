/*
 * Exported: the calls between two GPUs, nvmlDeviceGetTopologyCommonAncestor and
 * nvmlDeviceGetP2PStatus. They answer from the first GPU's "peers" list (the snapshot's own
 * format: one entry per other GPU, with its status per value). A GPU without the list answers
 * NOT_SUPPORTED, as does a pair the list leaves out; the same GPU twice, a MIG handle or a handle
 * that is not a GPU is INVALID_ARGUMENT (docs/simulator.md, "Topology and P2P").
 */
#include "sim.h"

/* The peer entry of device2 in the call's GPU list, or the code the call returns. */
static nvmlReturn_t find_peer(struct sim_call *c, nvmlDevice_t device2, const struct gpu_peer **out)
{
    const struct gpu *g = &c->gpu->g;
    struct sim_gpu *other;
    int32_t mig = -1;
    int32_t rc = g->rc[GPU_S_PEERS];

    other = sim_find_handle(c->scn, device2, &mig);
    if (other == NULL || other == c->gpu || mig >= 0)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (rc != 0)
        return rc < 0 ? NVML_ERROR_NOT_SUPPORTED : rc;
    *out = gpu_peer_of(g, other->g.index);
    return *out ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
}

static int level_of(int32_t topology)
{
    static const int levels[] = { NVML_TOPOLOGY_INTERNAL, NVML_TOPOLOGY_SINGLE,
                                  NVML_TOPOLOGY_MULTIPLE, NVML_TOPOLOGY_HOSTBRIDGE,
                                  NVML_TOPOLOGY_NODE,     NVML_TOPOLOGY_SYSTEM };

    return topology >= 0 && topology < (int32_t)(sizeof(levels) / sizeof(levels[0]))
               ? levels[topology]
               : NVML_TOPOLOGY_SYSTEM + 10; /* a level this header does not name */
}

nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t device1, nvmlDevice_t device2,
                                                 int *pathInfo)
{
    struct sim_call c;
    nvmlReturn_t rc = sim_begin_dev(&c, __func__, device1, pathInfo != NULL, false);
    const struct gpu_peer *p = NULL;

    if (rc == NVML_SUCCESS)
        rc = find_peer(&c, device2, &p);
    if (rc == NVML_SUCCESS && p->rc[PEER_S_TOPOLOGY] != 0)
        rc = p->rc[PEER_S_TOPOLOGY] < 0 ? NVML_ERROR_NOT_SUPPORTED : p->rc[PEER_S_TOPOLOGY];
    if (rc == NVML_SUCCESS)
        *pathInfo = level_of(p->topology);
    return sim_end(&c, rc);
}

/* READ and NVLINK answer their own values; WRITE, ATOMICS and PCI the read status (the scenario
 * format has no column for them). */
nvmlReturn_t nvmlDeviceGetP2PStatus(nvmlDevice_t device1, nvmlDevice_t device2, int p2pIndex,
                                    int *p2pStatus)
{
    struct sim_call c;
    nvmlReturn_t rc = sim_begin_dev(&c, __func__, device1,
                                    p2pStatus != NULL && p2pIndex >= NVML_P2P_CAPS_INDEX_READ &&
                                        p2pIndex <= NVML_P2P_CAPS_INDEX_PCI,
                                    false);
    const struct gpu_peer *p = NULL;
    enum gpu_peer_slot slot =
        p2pIndex == NVML_P2P_CAPS_INDEX_NVLINK ? PEER_S_P2P_NVLINK : PEER_S_P2P_READ;

    if (rc == NVML_SUCCESS)
        rc = find_peer(&c, device2, &p);
    if (rc == NVML_SUCCESS && p->rc[slot] != 0)
        rc = p->rc[slot] < 0 ? NVML_ERROR_NOT_SUPPORTED : p->rc[slot];
    if (rc == NVML_SUCCESS)
        *p2pStatus = slot == PEER_S_P2P_NVLINK ? p->p2p_nvlink : p->p2p_read;
    return sim_end(&c, rc);
}
