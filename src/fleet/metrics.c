/*
 * The figures nodes are compared on: one row each, with how to read it from a snapshot and from
 * Prometheus. A per-GPU figure becomes the node's worst GPU (the lowest clock, the hottest GPU),
 * and the row remembers which GPU that was; the bench rows read the snapshot's bench section
 * (a `gpudoctor bench` snapshot, or bench-last.json), when it has one that ran. Rows whose
 * section snapshots do not have yet read nothing: their figures are "not in the evidence" until
 * the section lands and the row gets its reader.
 */
#include "bench/bench.h"
#include "fleet/fleet.h"
#include "util/xalloc.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* A usable GPU: NVML answered for it. */
static bool usable(const struct gpu *g)
{
    return g->handle_rc == 0;
}

/* The worst of the GPUs' values that get() gives (lowest when low, else highest). */
static void worst_gpu(const struct fleet_evidence *e, struct fleet_value *v, bool low,
                      bool (*get)(const struct fleet_evidence *e, const struct gpu *g, double *x))
{
    for (size_t i = 0; i < e->snap->n_gpus; i++) {
        const struct gpu *g = &e->snap->gpus[i];
        double x;

        if (!usable(g) || !get(e, g, &x))
            continue;
        if (!v->known || (low ? x < v->num : x > v->num)) {
            v->known = true;
            v->num = x;
            v->gpu = (int32_t)g->index;
        }
    }
}

/* The sum of the GPUs' values; gpu: the one with the most. */
static void sum_gpu(const struct fleet_evidence *e, struct fleet_value *v,
                    bool (*get)(const struct fleet_evidence *e, const struct gpu *g, double *x))
{
    double most = -1;

    for (size_t i = 0; i < e->snap->n_gpus; i++) {
        const struct gpu *g = &e->snap->gpus[i];
        double x;

        if (!usable(g) || !get(e, g, &x))
            continue;
        v->num = v->known ? v->num + x : x;
        v->known = true;
        if (x > most) {
            most = x;
            v->gpu = x > 0 ? (int32_t)g->index : -1;
        }
    }
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The distinct values of the GPUs' strings, sorted, joined by ", ". */
static void distinct_gpu(const struct fleet_evidence *e, struct fleet_value *v,
                         const char *(*get)(const struct gpu *g))
{
    const char **s = xcalloc(e->snap->n_gpus + 1, sizeof(*s));
    size_t n = 0, len = 0, k = 0;

    for (size_t i = 0; i < e->snap->n_gpus; i++) {
        const char *t = usable(&e->snap->gpus[i]) ? get(&e->snap->gpus[i]) : NULL;

        if (t && *t)
            s[n++] = t;
    }
    if (n == 0) {
        free(s);
        return;
    }
    qsort(s, n, sizeof(*s), cmp_str);
    for (size_t i = 0; i < n; i++) {
        if (i == 0 || strcmp(s[i], s[k - 1]) != 0)
            s[k++] = s[i];
    }
    for (size_t i = 0; i < k; i++)
        len += strlen(s[i]) + 2;
    v->text = xmalloc(len + 1);
    v->text[0] = '\0';
    for (size_t i = 0; i < k; i++) {
        if (i)
            strcat(v->text, ", ");
        strcat(v->text, s[i]);
    }
    v->known = true;
    free(s);
}

/* ---- readers ---- */

static void get_count(const struct fleet_evidence *e, struct fleet_value *v)
{
    v->known = e->facts->count_valid;
    v->num = e->facts->gpu_count;
}

static bool mem_mib(const struct fleet_evidence *e, const struct gpu *g, double *x)
{
    (void)e;
    *x = (double)(g->mem_total_bytes >> 20);
    return gpu_valid(g, GPU_S_MEM_TOTAL);
}

static void get_memory(const struct fleet_evidence *e, struct fleet_value *v)
{
    worst_gpu(e, v, true, mem_mib);
}

static bool gen_max(const struct fleet_evidence *e, const struct gpu *g, double *x)
{
    (void)e;
    *x = g->pcie_gen_max;
    return gpu_valid(g, GPU_S_PCIE_GEN_MAX) && g->pcie_gen_max > 0;
}

static void get_gen(const struct fleet_evidence *e, struct fleet_value *v)
{
    worst_gpu(e, v, true, gen_max);
}

static bool width(const struct fleet_evidence *e, const struct gpu *g, double *x)
{
    (void)e;
    *x = g->pcie_width;
    return gpu_valid(g, GPU_S_PCIE_WIDTH) && g->pcie_width > 0;
}

static void get_width(const struct fleet_evidence *e, struct fleet_value *v)
{
    worst_gpu(e, v, true, width);
}

static bool power_limit(const struct fleet_evidence *e, const struct gpu *g, double *x)
{
    (void)e;
    *x = g->power_limit_mw / 1000.0;
    return gpu_valid(g, GPU_S_POWER_LIMIT);
}

static void get_power_limit(const struct fleet_evidence *e, struct fleet_value *v)
{
    worst_gpu(e, v, true, power_limit);
}

static bool busy(const struct fleet_evidence *e, const struct gpu *g)
{
    return gpu_valid(g, GPU_S_UTIL_GPU) && g->util_gpu_pct >= e->th->v[TH_GPU_BUSY_UTIL_PCT];
}

static bool idle(const struct fleet_evidence *e, const struct gpu *g)
{
    return gpu_valid(g, GPU_S_UTIL_GPU) && g->util_gpu_pct <= e->th->v[TH_GPU_IDLE_UTIL_PCT];
}

static bool busy_clock(const struct fleet_evidence *e, const struct gpu *g, double *x)
{
    *x = g->clock_sm_mhz;
    return busy(e, g) && gpu_valid(g, GPU_S_CLOCK_SM);
}

static void get_busy_clock(const struct fleet_evidence *e, struct fleet_value *v)
{
    worst_gpu(e, v, true, busy_clock);
}

static bool busy_temp(const struct fleet_evidence *e, const struct gpu *g, double *x)
{
    *x = g->temp_c;
    return busy(e, g) && gpu_valid(g, GPU_S_TEMP);
}

static void get_busy_temp(const struct fleet_evidence *e, struct fleet_value *v)
{
    worst_gpu(e, v, false, busy_temp);
}

static bool idle_temp(const struct fleet_evidence *e, const struct gpu *g, double *x)
{
    *x = g->temp_c;
    return idle(e, g) && gpu_valid(g, GPU_S_TEMP);
}

static void get_idle_temp(const struct fleet_evidence *e, struct fleet_value *v)
{
    worst_gpu(e, v, false, idle_temp);
}

static bool replays(const struct fleet_evidence *e, const struct gpu *g, double *x)
{
    (void)e;
    *x = g->pcie_replay_count;
    return gpu_valid(g, GPU_S_PCIE_REPLAY);
}

static void get_replays(const struct fleet_evidence *e, struct fleet_value *v)
{
    worst_gpu(e, v, false, replays);
}

static bool ecc_uncorrected(const struct fleet_evidence *e, const struct gpu *g, double *x)
{
    (void)e;
    *x = (double)g->ecc_volatile_uncorrected;
    return gpu_valid(g, GPU_S_ECC_VOL_UNCORR);
}

static void get_ecc(const struct fleet_evidence *e, struct fleet_value *v)
{
    sum_gpu(e, v, ecc_uncorrected);
}

static bool remapped(const struct fleet_evidence *e, const struct gpu *g, double *x)
{
    (void)e;
    *x = (double)g->remapped_rows_correctable + (double)g->remapped_rows_uncorrectable;
    return gpu_valid(g, GPU_S_REMAP_CORR) && gpu_valid(g, GPU_S_REMAP_UNCORR);
}

static void get_remapped(const struct fleet_evidence *e, struct fleet_value *v)
{
    sum_gpu(e, v, remapped);
}

/* The host's EDAC counters; a node without an EDAC driver has none to compare. */
static void host_mem(const struct fleet_evidence *e, struct fleet_value *v, bool uncorrectable)
{
    const struct host_info *h = &e->snap->host;

    if (!(h->valid & (UINT64_C(1) << HOST_S_EDAC)))
        return;
    v->known = true;
    v->num = (double)(uncorrectable ? h->mem_ue_count : h->mem_ce_count);
}

static void get_host_ue(const struct fleet_evidence *e, struct fleet_value *v)
{
    host_mem(e, v, true);
}

static void get_host_ce(const struct fleet_evidence *e, struct fleet_value *v)
{
    host_mem(e, v, false);
}

/* XIDs of the kernel log within klog_max_age_h of the snapshot, as the rules count them. */
static void get_xids(const struct fleet_evidence *e, struct fleet_value *v)
{
    const struct driver_info *d = &e->snap->driver;
    double max_age_ms = e->th->v[TH_KLOG_MAX_AGE_H] * 3600e3;

    if (!(d->valid & (UINT64_C(1) << DRIVER_S_KLOG)))
        return;
    v->known = true;
    v->num = 0;
    for (size_t i = 0; i < d->n_events; i++) {
        const struct klog_event *ev = &d->events[i];

        if (ev->kind != KLOG_XID)
            continue;
        if (max_age_ms > 0 && (ev->valid & (UINT64_C(1) << KLOG_S_TIME)) && e->snap->time_ms > 0 &&
            (double)(e->snap->time_ms - ev->time_ms) > max_age_ms)
            continue;
        v->num++;
    }
}

static void get_driver(const struct fleet_evidence *e, struct fleet_value *v)
{
    if (e->facts->driver_version) {
        v->known = true;
        v->text = xstrdup(e->facts->driver_version);
    }
}

/* Fabric Manager's version; a node without one (no NVSwitch) has none to compare. */
static void get_fm(const struct fleet_evidence *e, struct fleet_value *v)
{
    if (e->facts->fabricmanager_version) {
        v->known = true;
        v->text = xstrdup(e->facts->fabricmanager_version);
    }
}

static void get_cuda(const struct fleet_evidence *e, struct fleet_value *v)
{
    if (e->facts->cuda_version) {
        v->known = true;
        v->text = xstrdup(e->facts->cuda_version);
    }
}

/* The GPU with the fewest active NVLink links (a GPU without NVLink has none). */
static void get_nvlink(const struct fleet_evidence *e, struct fleet_value *v)
{
    for (size_t i = 0; i < e->facts->n_gpus; i++) {
        const struct profile_gpu_facts *g = &e->facts->gpus[i];

        if (!g->nvlink_valid || (v->known && g->nvlinks >= v->num))
            continue;
        v->known = true;
        v->num = g->nvlinks;
        v->gpu = g->index;
    }
}

/* InfiniBand ports ACTIVE, and the slowest of their rates (the profile's facts: RoCE ports are
 * Ethernet's and not counted). */
static void get_ib_ports(const struct fleet_evidence *e, struct fleet_value *v)
{
    if (e->facts->has_section[PK_IB_PORTS] && e->facts->ib_ports_valid) {
        v->known = true;
        v->num = e->facts->ib_ports;
    }
}

static void get_ib_rate(const struct fleet_evidence *e, struct fleet_value *v)
{
    if (e->facts->has_section[PK_IB_RATE_GBPS] && e->facts->ib_rate_valid) {
        v->known = true;
        v->num = e->facts->ib_rate_gbps;
    }
}

static const char *vbios(const struct gpu *g)
{
    return gpu_valid(g, GPU_S_VBIOS) ? g->vbios_version : NULL;
}

static void get_vbios(const struct fleet_evidence *e, struct fleet_value *v)
{
    distinct_gpu(e, v, vbios);
}

static const char *model(const struct gpu *g)
{
    return gpu_valid(g, GPU_S_NAME) ? g->name : NULL;
}

static void get_models(const struct fleet_evidence *e, struct fleet_value *v)
{
    distinct_gpu(e, v, model);
}

/* ---- the bench section (gpudoctor bench's snapshot, or bench-last.json) ---- */

/* The NVML index of the GPU at the bench GPU's PCI address, else the bench's own ordinal. */
static int32_t bench_gpu_index(const struct snapshot *s, const struct bench_gpu *g)
{
    for (size_t i = 0; i < s->n_gpus; i++) {
        if (gpu_valid(&s->gpus[i], GPU_S_PCI_BUS_ID) &&
            bench_same_pci(s->gpus[i].pci_bus_id, g->pci_bus_id))
            return (int32_t)s->gpus[i].index;
    }
    return (int32_t)g->index;
}

/* The slowest bench GPU's figure (slot valid), scaled by 1/unit; nothing when no bench ran. */
static void bench_lowest(const struct fleet_evidence *e, struct fleet_value *v,
                         enum bench_gpu_slot slot, size_t offset, double unit)
{
    const struct bench_info *b = &e->snap->bench;

    if (b->state != BENCH_OK)
        return;
    for (size_t i = 0; i < b->n_gpus; i++) {
        const struct bench_gpu *g = &b->gpus[i];
        double x;

        if (!bench_gpu_valid(g, slot))
            continue;
        x = *(const double *)((const char *)g + offset) / unit;
        if (!v->known || x < v->num) {
            v->known = true;
            v->num = x;
            v->gpu = bench_gpu_index(e->snap, g);
        }
    }
}

static void get_bench_h2d(const struct fleet_evidence *e, struct fleet_value *v)
{
    bench_lowest(e, v, BG_H2D_PINNED, offsetof(struct bench_gpu, h2d_pinned_bytes_per_s), 1e9);
}

static void get_bench_d2h(const struct fleet_evidence *e, struct fleet_value *v)
{
    bench_lowest(e, v, BG_D2H_PINNED, offsetof(struct bench_gpu, d2h_pinned_bytes_per_s), 1e9);
}

static void get_bench_triad(const struct fleet_evidence *e, struct fleet_value *v)
{
    bench_lowest(e, v, BG_TRIAD, offsetof(struct bench_gpu, triad_bytes_per_s), 1e9);
}

static void get_bench_fma(const struct fleet_evidence *e, struct fleet_value *v)
{
    bench_lowest(e, v, BG_FMA, offsetof(struct bench_gpu, fma_flops), 1e12);
}

/*
 * The table. In PromQL, {busy} and {idle} stand for gpu_busy_util_pct and gpu_idle_util_pct as
 * ratios; docs/fleet.md shows the queries with the defaults.
 */
/* clang-format off */
const struct fleet_metric fleet_metrics[] = {
    { "gpu_count", "GPUs", "", FLEET_LEVEL, FLEET_BAD_LOW, 1, true, NULL, get_count,
      "gpudoctor_nvml_devices", FOLD_MAX, NULL,
      "GPUs NVML reports (the PCI bus's when NVML cannot be used)" },
    { "gpu_models", "GPU models", "", FLEET_TEXT, FLEET_BAD_ANY, 0, false, NULL, get_models,
      "gpudoctor_gpu_info", FOLD_LABELS, "name",
      "the distinct models of the node's GPUs (one, unless a GPU is of another model)" },
    { "gpu_memory_mib", "memory per GPU", "MiB", FLEET_LEVEL, FLEET_BAD_LOW, 1, false, NULL,
      get_memory, "gpudoctor_gpu_memory_total_bytes / 1048576", FOLD_MIN, NULL,
      "total memory of the node's smallest GPU" },
    { "pcie_gen_max", "PCIe generation", "", FLEET_LEVEL, FLEET_BAD_LOW, 1, false, NULL, get_gen,
      "gpudoctor_gpu_pcie_link_generation_max", FOLD_MIN, NULL,
      "the highest PCIe generation GPU and slot allow, of the node's slowest GPU" },
    { "pcie_width", "PCIe width", "lanes", FLEET_LEVEL, FLEET_BAD_LOW, 1, false, NULL, get_width,
      "gpudoctor_gpu_pcie_link_width", FOLD_MIN, NULL,
      "PCIe lanes of the node's narrowest link now" },
    { "power_limit_w", "power limit", "W", FLEET_NUMBER, FLEET_BAD_LOW, 10, false, NULL,
      get_power_limit, "gpudoctor_gpu_power_limit_watts{limit=\"current\"}", FOLD_MIN, NULL,
      "the lowest power limit set on the node's GPUs" },
    { "clock_sm_busy_mhz", "SM clock of busy GPUs", "MHz", FLEET_NUMBER, FLEET_BAD_LOW, 50,
      false, NULL, get_busy_clock,
      "gpudoctor_gpu_clock_hertz{clock=\"sm\"} / 1e6 and on(instance, gpu) "
      "gpudoctor_gpu_utilization_ratio >= {busy}", FOLD_MIN, NULL,
      "the lowest SM clock among the GPUs at or above gpu_busy_util_pct (idle GPUs clock down)" },
    { "temp_busy_c", "temperature of busy GPUs", "°C", FLEET_NUMBER, FLEET_BAD_HIGH, 5, false,
      NULL, get_busy_temp,
      "gpudoctor_gpu_temperature_celsius and on(instance, gpu) "
      "gpudoctor_gpu_utilization_ratio >= {busy}", FOLD_MAX, NULL,
      "the hottest of the GPUs at or above gpu_busy_util_pct: temperature at equal load" },
    { "temp_idle_c", "temperature of idle GPUs", "°C", FLEET_NUMBER, FLEET_BAD_HIGH, 5, false,
      NULL, get_idle_temp,
      "gpudoctor_gpu_temperature_celsius and on(instance, gpu) "
      "gpudoctor_gpu_utilization_ratio <= {idle}", FOLD_MAX, NULL,
      "the hottest of the GPUs at or below gpu_idle_util_pct: cooling with no load" },
    { "pcie_replays", "PCIe replays", "", FLEET_NUMBER, FLEET_BAD_HIGH, 100, false, NULL,
      get_replays, "gpudoctor_gpu_pcie_replays_total", FOLD_MAX, NULL,
      "the highest PCIe replay counter of the node's GPUs" },
    { "xid_events", "XID events", "", FLEET_NUMBER, FLEET_BAD_HIGH, 1, false, NULL, get_xids,
      "gpudoctor_gpu_xid_errors_total", FOLD_SUM, NULL,
      "XIDs in the kernel log (within klog_max_age_h; from Prometheus: since boot)" },
    { "ecc_uncorrected", "uncorrected ECC errors", "", FLEET_NUMBER, FLEET_BAD_HIGH, 1, false,
      NULL, get_ecc,
      "gpudoctor_gpu_ecc_errors_total{type=\"uncorrected\",scope=\"volatile\"}", FOLD_SUM, NULL,
      "uncorrected ECC errors since the driver loaded, over the node's GPUs" },
    { "remapped_rows", "remapped memory rows", "", FLEET_NUMBER, FLEET_BAD_HIGH, 1, false, NULL,
      get_remapped, "gpudoctor_gpu_remapped_rows", FOLD_SUM, NULL,
      "memory rows remapped, over the node's GPUs" },
    { "host_mem_uncorrected", "host memory uncorrected errors", "", FLEET_NUMBER, FLEET_BAD_HIGH,
      1, false, NULL, get_host_ue, "gpudoctor_host_memory_errors_total{type=\"uncorrectable\"}",
      FOLD_SUM, NULL,
      "uncorrectable ECC errors of the host's own memory since the EDAC counters were reset "
      "(nodes without an EDAC driver are not compared)" },
    { "host_mem_corrected", "host memory corrected errors", "", FLEET_NUMBER, FLEET_BAD_HIGH, 100,
      false, NULL, get_host_ce, "gpudoctor_host_memory_errors_total{type=\"corrected\"}",
      FOLD_SUM, NULL,
      "corrected ECC errors of the host's own memory since the EDAC counters were reset: a DIMM "
      "that corrects many more than its peers' is failing (nodes without an EDAC driver are not "
      "compared)" },
    { "driver_version", "driver", "", FLEET_TEXT, FLEET_BAD_ANY, 0, false, NULL, get_driver,
      "gpudoctor_driver_info", FOLD_LABELS, "driver_version",
      "the NVIDIA driver version" },
    { "cuda_version", "CUDA (driver)", "", FLEET_TEXT, FLEET_BAD_ANY, 0, false, NULL, get_cuda,
      "gpudoctor_driver_info", FOLD_LABELS, "cuda_version",
      "the CUDA version the driver supports" },
    { "vbios_version", "VBIOS", "", FLEET_TEXT, FLEET_BAD_ANY, 0, false, NULL, get_vbios,
      "gpudoctor_gpu_info", FOLD_LABELS, "vbios_version",
      "the distinct VBIOS versions of the node's GPUs" },
    { "fabricmanager_version", "Fabric Manager", "", FLEET_TEXT, FLEET_BAD_ANY, 0, false, NULL,
      get_fm, "gpudoctor_fabric_manager_info", FOLD_LABELS, "version",
      "the NVIDIA Fabric Manager version (NVSwitch systems; nodes without one are not compared)" },
    { "nvlink_active", "active NVLink links", "links", FLEET_LEVEL, FLEET_BAD_LOW, 1, false,
      NULL, get_nvlink, "gpudoctor_gpu_nvlink_links_active", FOLD_MIN, NULL,
      "active NVLink links of the node's GPU with the fewest (0: no NVLink)" },
    { "ib_ports_up", "InfiniBand ports up", "ports", FLEET_LEVEL, FLEET_BAD_LOW, 1, false,
      NULL, get_ib_ports, "gpudoctor_ib_port_active{link_layer=\"infiniband\"}", FOLD_SUM, NULL,
      "InfiniBand ports in state Active (RoCE ports are Ethernet's: not counted)" },
    { "ib_rate_gbps", "InfiniBand rate", "Gb/s", FLEET_LEVEL, FLEET_BAD_LOW, 1, false, NULL,
      get_ib_rate,
      "(gpudoctor_ib_port_rate_bytes_per_second{link_layer=\"infiniband\"} and on(instance, "
      "device, port) gpudoctor_ib_port_active == 1) * 8 / 1e9", FOLD_MIN, NULL,
      "the rate of the node's slowest active InfiniBand port" },
    { "bench_h2d_gbps", "host-to-GPU copy", "GB/s", FLEET_NUMBER, FLEET_BAD_LOW, 1, false, NULL,
      get_bench_h2d,
      "gpudoctor_bench_host_copy_bytes_per_second{direction=\"h2d\",memory=\"pinned\"} / 1e9",
      FOLD_MIN, NULL,
      "the last bench's pinned host-to-GPU copy bandwidth, of the slowest GPU" },
    { "bench_d2h_gbps", "GPU-to-host copy", "GB/s", FLEET_NUMBER, FLEET_BAD_LOW, 1, false, NULL,
      get_bench_d2h,
      "gpudoctor_bench_host_copy_bytes_per_second{direction=\"d2h\",memory=\"pinned\"} / 1e9",
      FOLD_MIN, NULL,
      "the last bench's pinned GPU-to-host copy bandwidth, of the slowest GPU" },
    { "bench_triad_gbps", "memory bandwidth (triad)", "GB/s", FLEET_NUMBER, FLEET_BAD_LOW, 50,
      false, NULL, get_bench_triad,
      "gpudoctor_bench_memory_bytes_per_second{method=\"triad\"} / 1e9", FOLD_MIN, NULL,
      "the last bench's device memory bandwidth (STREAM triad), of the slowest GPU" },
    { "bench_tflops", "compute (FP32 FMA)", "TFLOP/s", FLEET_NUMBER, FLEET_BAD_LOW, 1, false,
      NULL, get_bench_fma, "gpudoctor_bench_compute_flops / 1e12", FOLD_MIN, NULL,
      "the last bench's FP32 rate of the FMA kernel, of the slowest GPU" },
};
/* clang-format on */

const size_t fleet_n_metrics = ARRAY_SIZE(fleet_metrics);

int fleet_metric_find(const char *name)
{
    for (size_t i = 0; i < fleet_n_metrics; i++) {
        if (strcmp(fleet_metrics[i].name, name) == 0)
            return (int)i;
    }
    return -1;
}
