/*
 * Measurements judged (docs/bench.md): the bench section of a snapshot, as `gpudoctor bench`
 * fills it. A figure nobody could measure, or an expectation nobody knows, is skipped, never
 * taken as 0. The fractions are gpudoctor's judgement, written here once.
 */
#include "nvml/nvml-abi.h"
#include "rules/rule-impl.h"
#include "snapshot/bench-steps.h"
#include "util/xalloc.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HOST_COPY_MIN_SHARE 0.60 /* of what the negotiated link should carry */
#define MEM_MIN_SHARE       0.70 /* of the model's memory bandwidth */
#define COMPUTE_MIN_SHARE   0.60 /* of the model's FP32 rate */
#define GEMM_MIN_SHARE      0.50 /* of the model's dense Tensor Core rate, per precision */
#define BEHIND_SIBLINGS     0.80 /* of the fastest GPU of the same model */
#define P2P_MIN_SHARE       0.50 /* of the median pair */
#define SUSTAINED_MIN_SHARE 0.85 /* last tenth of the load against the first */
#define BASELINE_MIN_SHARE  0.85 /* of the saved baseline */

#define GB 1e9

static const struct bench_info *bench_of(const struct rule_ctx *ctx)
{
    const struct bench_info *b = &ctx->facts->snap->bench;

    return b->state == BENCH_OK ? b : NULL;
}

static void bench_fix(struct finding *f, const struct bench_gpu *g)
{
    finding_fix(f, "gpudoctor bench --gpus %" PRIu32 " --full   # measure again, longer", g->index);
}

/* ---- bench.failed ---- */

static void check_failed(const struct rule_ctx *ctx, struct findings *out)
{
    const struct bench_info *b = &ctx->facts->snap->bench;
    struct finding *f;

    if (b->state == BENCH_TIMEOUT || b->state == BENCH_FAILED) {
        f = finding_new(ctx, out, -1, -1);
        if (b->state == BENCH_TIMEOUT) {
            char *step_l = i18n_active() ? bench_step_l(b->hung_step) : NULL;
            char *detail_l = i18n_active() ? bench_detail_l(b->detail) : NULL;

            finding_title_take(f,
                               TWICE("The CUDA bench hung: %s", (b->hung_step ? b->hung_step : "?"),
                                     (step_l         ? step_l
                                      : b->hung_step ? b->hung_step
                                                     : "?")));
            if (b->detail)
                finding_evidence_take(f, xstrdup(b->detail), detail_l);
            else
                finding_evidence(f, "deadline passed");
            free(step_l);
            finding_fix(f, "sudo dmesg -T | grep -iE 'NVRM|Xid' | tail   # what the driver said");
            finding_fix(f, "nvidia-smi -q -d PERFORMANCE,ECC   # is the GPU still answering?");
        } else {
            finding_title(f, "The CUDA bench could not run");
            if (b->detail)
                finding_evidence_take(f, xstrdup(b->detail),
                                      i18n_active() ? bench_detail_l(b->detail) : NULL);
            else
                finding_evidence(f, "no detail");
            finding_fix(f, "gpudoctor check   # the driver and stack findings say why");
        }
        f->impact = 1;
        return;
    }
    if (b->state != BENCH_OK)
        return;
    for (size_t i = 0; i < b->n_gpus; i++) {
        const struct bench_gpu *g = &b->gpus[i];

        if (g->error == NULL)
            continue;
        f = finding_new(ctx, out, (int32_t)g->index, -1);
        finding_title(f, "GPU %" PRIu32 " failed the bench: %s", g->index, g->error);
        finding_evidence(f, "%s (%s): %s", g->name ? g->name : "GPU",
                         g->pci_bus_id ? g->pci_bus_id : "?", g->error);
        finding_fix(f, "sudo dmesg -T | grep -iE 'NVRM|Xid' | tail   # errors the driver logged");
        bench_fix(f, g);
        f->impact = 1;
    }
}

const struct rule rule_bench_failed = {
    .id = "bench.failed",
    .severity = SEV_CRITICAL,
    .category = CAT_THROUGHPUT,
    .title = N_("The bench could not measure a GPU"),
    .explanation = N_(
        "gpudoctor bench runs its CUDA work in a worker process with a deadline. A worker that "
        "did not finish in time was stuck in a call into the driver: a wedged GPU or driver, "
        "which every CUDA program on the node will meet too. A CUDA call that returned an error "
        "(out of memory, launch failure, ECC error, device unavailable) means the GPU cannot run "
        "work as it is."),
    .detection = N_("the bench section's state is timeout or failed, or a GPU's error is set: the "
                    "call and its CUresult."),
    .fix = N_("Read the kernel log for XIDs and NVRM messages; a hung GPU usually needs a reset "
              "(nvidia-smi -r) or a reboot; an error that repeats on one GPU is a hardware case."),
    .thresholds = NO_THRESHOLDS,
    .check = check_failed,
};

/* ---- bench.host-copy-slow ---- */

static void check_host_copy(const struct rule_ctx *ctx, struct findings *out)
{
    const struct bench_info *b = bench_of(ctx);

    for (size_t i = 0; b != NULL && i < b->n_gpus; i++) {
        const struct bench_gpu *g = &b->gpus[i];
        double worst;
        struct finding *f;

        if (!bench_gpu_valid(g, BG_PCIE_EXPECTED) || !bench_gpu_valid(g, BG_H2D_PINNED) ||
            !bench_gpu_valid(g, BG_D2H_PINNED)) {
            if (g->error == NULL)
                rule_skip(ctx, out, (int32_t)g->index, "no PCIe link figure or no copy measured");
            continue;
        }
        worst = g->h2d_pinned_bytes_per_s < g->d2h_pinned_bytes_per_s ? g->h2d_pinned_bytes_per_s
                                                                      : g->d2h_pinned_bytes_per_s;
        if (worst >= HOST_COPY_MIN_SHARE * g->pcie_expected_bytes_per_s)
            continue;
        f = finding_new(ctx, out, (int32_t)g->index, -1);
        finding_title(f, "GPU %" PRIu32 " host copies at %.0f %% of what its PCIe link allows",
                      g->index, pct(worst, g->pcie_expected_bytes_per_s));
        finding_evidence(f, "pinned copies: host to device %.1f GB/s, device to host %.1f GB/s",
                         g->h2d_pinned_bytes_per_s / GB, g->d2h_pinned_bytes_per_s / GB);
        finding_evidence(f,
                         "PCIe Gen%" PRIu32 " x%" PRIu32 ": %.1f GB/s expected (%.0f %% of the "
                         "encoded rate)",
                         g->pcie_gen, g->pcie_width, g->pcie_expected_bytes_per_s / GB, 80.0);
        if (bench_gpu_valid(g, BG_HOST_NUMA) && bench_gpu_valid(g, BG_GPU_NUMA) &&
            g->host_numa_node != g->gpu_numa_node)
            finding_evidence(f,
                             "the host buffer was on NUMA node %" PRId32 ", the GPU on node "
                             "%" PRId32 " (remote)",
                             g->host_numa_node, g->gpu_numa_node);
        finding_fix(f, "nvidia-smi topo -m   # which CPU and NUMA node the GPU hangs off");
        /* A placeholder only in a comment: pasted, a command with 'N' in it fails. */
        if (bench_gpu_valid(g, BG_GPU_NUMA) && g->gpu_numa_node >= 0)
            finding_fix(f,
                        "numactl --cpunodebind=%" PRId32 " --membind=%" PRId32
                        " gpudoctor bench --gpus %" PRIu32 "   # on the GPU's node, to rule out "
                        "a remote buffer",
                        g->gpu_numa_node, g->gpu_numa_node, g->index);
        else
            finding_fix(f,
                        "# numactl --cpunodebind=NODE --membind=NODE gpudoctor bench --gpus "
                        "%" PRIu32 "   (NODE: the GPU's node), to rule out a remote buffer",
                        g->index);
        f->impact = 0.5;
    }
}

const struct rule rule_bench_host_copy_slow = {
    .id = "bench.host-copy-slow",
    .severity = SEV_WARNING,
    .category = CAT_THROUGHPUT,
    .title = N_("Host copies far below what the PCIe link allows"),
    .explanation = N_(
        "Copies between pinned host memory and the GPU should reach most of what the negotiated "
        "PCIe link carries. Far less means something between them: a buffer on the remote NUMA "
        "node, an IOMMU in translation mode, a PCIe switch shared with busy NICs or drives, "
        "a link that retrains, or a platform setting (ACS, relaxed ordering, power management)."),
    .detection = /* xgettext:no-c-format */ N_(
        "the slower of the pinned host-to-device and device-to-host copy rates below "
        "60 % of the expected rate: the link's encoded rate (generation and width "
        "reported by NVML) times 0.80."),
    .fix = N_("Bind the program to the GPU's NUMA node, check the IOMMU mode (iommu=pt), the "
              "switch topology and BIOS PCIe settings; measure again."),
    .thresholds = NO_THRESHOLDS,
    .check = check_host_copy,
};

/* ---- bench.mem-bandwidth-low and bench.compute-low: against the model, and the siblings ---- */

static void check_low(const struct rule_ctx *ctx, struct findings *out, bool mem)
{
    const struct bench_info *b = bench_of(ctx);
    enum bench_gpu_slot have = mem ? BG_TRIAD : BG_FMA;
    enum bench_gpu_slot expect = mem ? BG_MEM_EXPECTED : BG_FP32_EXPECTED;

    for (size_t i = 0; b != NULL && i < b->n_gpus; i++) {
        const struct bench_gpu *g = &b->gpus[i];
        double v = mem ? g->triad_bytes_per_s : g->fma_flops, best = 0;
        double e = mem ? g->mem_expected_bytes_per_s : g->fp32_expected_flops;
        const char *unit = mem ? "GB/s" : "TFLOPS";
        const char *what = mem ? N_("memory bandwidth") : N_("compute rate");
        double scale = mem ? GB : 1e12;
        struct finding *f;

        if (!bench_gpu_valid(g, have))
            continue;
        for (size_t k = 0; k < b->n_gpus; k++) {
            const struct bench_gpu *o = &b->gpus[k];
            double ov = mem ? o->triad_bytes_per_s : o->fma_flops;

            if (k != i && bench_gpu_valid(o, have) && o->name && g->name &&
                strcmp(o->name, g->name) == 0 && ov > best)
                best = ov;
        }
        if (bench_gpu_valid(g, expect) && v < (mem ? MEM_MIN_SHARE : COMPUTE_MIN_SHARE) * e) {
            f = finding_new(ctx, out, (int32_t)g->index, -1);
            finding_title_take(f,
                               TWICE("GPU %" PRIu32 " %s at %.0f %% of its model's",
                                     (g->index, what, pct(v, e)), (g->index, _(what), pct(v, e))));
            finding_evidence(f, "measured %.1f %s, the %s should reach %.1f %s", v / scale, unit,
                             g->name ? g->name : "model", e / scale, unit);
        } else if (best > 0 && v < BEHIND_SIBLINGS * best) {
            f = finding_new(ctx, out, (int32_t)g->index, -1);
            finding_title_take(f, TWICE("GPU %" PRIu32 " %s at %.0f %% of its fastest sibling",
                                        (g->index, what, pct(v, best)),
                                        (g->index, _(what), pct(v, best))));
            finding_evidence(f, "measured %.1f %s, the fastest %s here %.1f %s", v / scale, unit,
                             g->name ? g->name : "GPU of this model", best / scale, unit);
        } else {
            continue;
        }
        finding_fix(f,
                    "nvidia-smi -i %" PRIu32 " -q -d CLOCK,PERFORMANCE   # clocks and why "
                    "they are held down",
                    g->index);
        bench_fix(f, g);
        f->impact = 0.5;
    }
}

static void check_mem_low(const struct rule_ctx *ctx, struct findings *out)
{
    check_low(ctx, out, true);
}

/* One compute figure of a GPU: the FMA kernel's (p = -1) or a GEMM precision's. */
static bool compute_figure(const struct bench_gpu *g, int p, double *v, double *e, bool *known)
{
    if (p < 0) {
        *v = g->fma_flops;
        *e = g->fp32_expected_flops;
        *known = bench_gpu_valid(g, BG_FP32_EXPECTED);
        return bench_gpu_valid(g, BG_FMA);
    }
    *v = g->gemm_flops[p];
    *e = g->tensor_expected_flops[p];
    *known = bench_gpu_valid(g, (enum bench_gpu_slot)(BG_GEMM_EXPECTED + p));
    return bench_gpu_valid(g, (enum bench_gpu_slot)(BG_GEMM + p));
}

/*
 * Each compute figure (the FMA kernel, then every cuBLASLt GEMM precision) against the model's
 * rate when known, else against the fastest GPU of the same name; one finding per GPU, titled
 * by its lowest share, with a line of evidence per figure that is low.
 */
static void check_compute_low(const struct rule_ctx *ctx, struct findings *out)
{
    static const char *const labels[BP_N] = { "TF32", "FP16", "BF16", "FP8" };
    const struct bench_info *b = bench_of(ctx);

    for (size_t i = 0; b != NULL && i < b->n_gpus; i++) {
        const struct bench_gpu *g = &b->gpus[i];
        const char *model = g->name ? g->name : "model";
        const char *model_l = g->name ? g->name : _("model");
        const char *sibling = g->name ? g->name : "GPU of this model";
        const char *sibling_l = g->name ? g->name : _("GPU of this model");
        double worst = 2;
        int worst_p = -1;
        bool worst_model = false;
        const char *ref;
        struct finding *f = NULL;

        for (int p = -1; p < BP_N; p++) {
            double v, e, best = 0, ov, oe, share = p < 0 ? COMPUTE_MIN_SHARE : GEMM_MIN_SHARE;
            bool known, oknown;
            const char *what = p < 0 ? "" : labels[p];

            if (!compute_figure(g, p, &v, &e, &known))
                continue;
            for (size_t k = 0; k < b->n_gpus; k++) {
                const struct bench_gpu *o = &b->gpus[k];

                if (k != i && compute_figure(o, p, &ov, &oe, &oknown) && o->name && g->name &&
                    strcmp(o->name, g->name) == 0 && ov > best)
                    best = ov;
            }
            if (!(known && v < share * e) && !(best > 0 && v < BEHIND_SIBLINGS * best))
                continue;
            /* The title, which names the lowest share, is set once every figure is seen. */
            if (f == NULL)
                f = finding_new(ctx, out, (int32_t)g->index, -1);
            if (known && v < share * e) {
                if (p < 0)
                    finding_evidence_take(
                        f, TWICE("measured %.1f TFLOPS, the %s should reach %.1f TFLOPS",
                                 (v / 1e12, model, e / 1e12), (v / 1e12, model_l, e / 1e12)));
                else
                    finding_evidence_take(
                        f, TWICE("%s GEMM (cuBLASLt): measured %.1f TFLOPS, %.0f %% of the %s's "
                                 "dense Tensor Core %.1f TFLOPS (below %.0f %%)",
                                 (what, v / 1e12, pct(v, e), model, e / 1e12, share * 100),
                                 (what, v / 1e12, pct(v, e), model_l, e / 1e12, share * 100)));
                if (v / e < worst) {
                    worst = v / e;
                    worst_p = p;
                    worst_model = true;
                }
            } else {
                if (p < 0)
                    finding_evidence_take(
                        f, TWICE("measured %.1f TFLOPS, the fastest %s here %.1f TFLOPS",
                                 (v / 1e12, sibling, best / 1e12),
                                 (v / 1e12, sibling_l, best / 1e12)));
                else
                    finding_evidence_take(
                        f, TWICE("%s GEMM (cuBLASLt): measured %.1f TFLOPS, the fastest %s here "
                                 "%.1f TFLOPS",
                                 (what, v / 1e12, sibling, best / 1e12),
                                 (what, v / 1e12, sibling_l, best / 1e12)));
                if (v / best < worst) {
                    worst = v / best;
                    worst_p = p;
                    worst_model = false;
                }
            }
        }
        if (f == NULL)
            continue;
        ref = worst_model ? N_("model's") : N_("fastest sibling");
        if (worst_p < 0)
            finding_title_take(f, TWICE("GPU %" PRIu32 " compute rate at %.0f %% of its %s",
                                        (g->index, worst * 100, ref),
                                        (g->index, worst * 100, _(ref))));
        else
            finding_title_take(f, TWICE("GPU %" PRIu32 " %s GEMM at %.0f %% of its %s",
                                        (g->index, labels[worst_p], worst * 100, ref),
                                        (g->index, labels[worst_p], worst * 100, _(ref))));
        finding_fix(f,
                    "nvidia-smi -i %" PRIu32 " -q -d CLOCK,PERFORMANCE   # clocks and why "
                    "they are held down",
                    g->index);
        bench_fix(f, g);
        f->impact = 0.5;
    }
}

const struct rule rule_bench_mem_bandwidth_low = {
    .id = "bench.mem-bandwidth-low",
    .severity = SEV_WARNING,
    .category = CAT_THROUGHPUT,
    .title = N_("Memory bandwidth below the model or siblings"),
    .explanation = N_(
        "The STREAM-style triad kernel reads two arrays and writes one; its rate is what memory-"
        "bound work gets. Far below the model's figure, or below the other GPUs of the same model "
        "in this node, means a memory clock held down, ECC retirement, a power or thermal "
        "limit, or a GPU that needs service."),
    .detection = /* xgettext:no-c-format */ N_(
        "triad_bytes_per_s below 70 % of the model's memory bandwidth when it is "
        "known, else below 80 % of the fastest GPU of the same name."),
    .fix =
        N_("Check the memory clock and clock-event reasons, ECC and remapped rows; compare after "
           "a reset; a GPU that stays behind is a hardware case."),
    .thresholds = NO_THRESHOLDS,
    .check = check_mem_low,
};

const struct rule rule_bench_compute_low = {
    .id = "bench.compute-low",
    .severity = SEV_WARNING,
    .category = CAT_THROUGHPUT,
    .title = N_("Compute rate below the model's or its siblings'"),
    .explanation = N_(
        "The FMA kernel keeps every SM busy with independent fused multiply-adds; its rate follows "
        "the SM clock. The cuBLASLt GEMMs (when cuBLASLt is installed) load the Tensor Cores in "
        "each precision the GPU supports. Below the model's figure or behind the same model's "
        "siblings means clocks held down (power cap, thermal, application clocks) or a GPU that "
        "falls behind."),
    .detection =
        /* xgettext:no-c-format */ N_(
            "fma_flops below 60 % of the model's FP32 rate, or a gemm_*_flops below 50 % of "
            "the model's dense Tensor Core rate in that precision, when known; else below "
            "80 % of the fastest GPU of the same name."),
    .fix = N_("Check clocks, power limit and clock-event reasons while loaded (gpudoctor check "
              "during a bench), cooling and power delivery."),
    .thresholds = NO_THRESHOLDS,
    .check = check_compute_low,
};

/* ---- bench.p2p-slow ---- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

static void check_p2p(const struct rule_ctx *ctx, struct findings *out)
{
    const struct bench_info *b = bench_of(ctx);
    double *v, median;

    if (b == NULL || b->n_pairs < 3)
        return;
    v = xcalloc(b->n_pairs, sizeof(*v));
    for (size_t i = 0; i < b->n_pairs; i++)
        v[i] = b->pairs[i].bytes_per_s;
    qsort(v, b->n_pairs, sizeof(*v), cmp_double);
    median = v[b->n_pairs / 2];
    free(v);
    for (size_t i = 0; i < b->n_pairs; i++) {
        const struct bench_pair *p = &b->pairs[i];
        const char *how;
        struct finding *f;

        if (p->bytes_per_s >= P2P_MIN_SHARE * median)
            continue;
        f = finding_new(ctx, out, (int32_t)p->src, -1);
        finding_object(f, "GPU %" PRIu32 " -> GPU %" PRIu32, p->src, p->dst);
        finding_title(f,
                      "Peer copies GPU %" PRIu32 " -> GPU %" PRIu32 " at %.0f %% of the other "
                      "pairs",
                      p->src, p->dst, pct(p->bytes_per_s, median));
        finding_evidence(f, "%.1f GB/s, latency %.1f us; the median pair %.1f GB/s",
                         p->bytes_per_s / GB, p->latency_us, median / GB);
        how = p->peer_access ? N_("direct") : N_("not possible: staged through host memory");
        finding_evidence_take(f, TWICE("peer access %s", (how), (_(how))));
        finding_fix(f, "nvidia-smi topo -m   # NVLink, PCIe switch or the CPU between the two");
        finding_fix(f, "nvidia-smi nvlink --status -i %" PRIu32 "   # links down or degraded",
                    p->src);
        f->impact = 0.3;
    }
}

const struct rule rule_bench_p2p_slow = {
    .id = "bench.p2p-slow",
    .severity = SEV_WARNING,
    .category = CAT_THROUGHPUT,
    .title = N_("A GPU pair's peer copies far slower than others"),
    .explanation = N_(
        "Collective communication (NCCL all-reduce) runs at the speed of the slowest link. A pair "
        "much slower than the rest has an NVLink down, crosses the CPU interconnect instead of a "
        "switch, or lost peer-to-peer access (ACS, IOMMU)."),
    .detection = /* xgettext:no-c-format */ N_(
        "with three or more pairs measured, a pair below 50 % of the median pair's "
        "cuMemcpyPeerAsync rate."),
    .fix = N_("Check nvidia-smi topo -m and the NVLink status; ACS and IOMMU settings for PCIe "
              "peer-to-peer; reseat or service the NVLink bridge or baseboard."),
    .thresholds = NO_THRESHOLDS,
    .check = check_p2p,
};

/* ---- bench.throttle-under-load ---- */

/* Reasons that slow a GPU down because something is wrong or at its limit (not idle, not a
 * setting, not the display). */
#define LOAD_THERMAL (NVML_CLOCKS_EVENT_SW_THERMAL | NVML_CLOCKS_EVENT_HW_THERMAL)
#define LOAD_HW      (NVML_CLOCKS_EVENT_HW_SLOWDOWN | NVML_CLOCKS_EVENT_HW_POWER_BRAKE)
#define LOAD_POWER   NVML_CLOCKS_EVENT_SW_POWER_CAP

/* "software thermal slowdown, hardware slowdown" for the bits of mask; people: translated. */
static void reason_labels(char *buf, size_t size, uint64_t mask, bool people)
{
    size_t used = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < n_clock_reasons && used < size; i++) {
        if (mask & clock_reasons[i].bit)
            used += (size_t)snprintf(buf + used, size - used, "%s%s", used ? L_(people, ", ") : "",
                                     L_(people, clock_reasons[i].label));
    }
}

/* The NVML GPU at the bench GPU's PCI address, NULL when the snapshot has none. */
static const struct gpu *nvml_twin(const struct rule_ctx *ctx, const struct bench_gpu *g)
{
    const struct snapshot *s = ctx->facts->snap;

    for (size_t i = 0; g->pci_bus_id != NULL && i < s->n_gpus; i++) {
        if (gpu_valid(&s->gpus[i], GPU_S_PCI_BUS_ID) &&
            driver_pci_same(s->gpus[i].pci_bus_id, g->pci_bus_id))
            return &s->gpus[i];
    }
    return NULL;
}

/* What NVML read during the load, as evidence. */
static void load_evidence(struct finding *f, const struct bench_gpu *g)
{
    char buf[256] = "";
    size_t used = 0;

    if (!bench_gpu_valid(g, BG_LOAD_SAMPLES) || g->load_samples == 0)
        return;
    if (bench_gpu_valid(g, BG_LOAD_CLOCK_SM))
        used +=
            (size_t)snprintf(buf + used, sizeof(buf) - used, "SM clock %" PRIu32 "-%" PRIu32 " MHz",
                             g->load_clock_sm_min_mhz, g->load_clock_sm_max_mhz);
    if (bench_gpu_valid(g, BG_LOAD_TEMP) && used < sizeof(buf))
        used += (size_t)snprintf(buf + used, sizeof(buf) - used, "%sup to %" PRIu32 " °C",
                                 used ? ", " : "", g->load_temp_max_c);
    if (bench_gpu_valid(g, BG_LOAD_POWER) && used < sizeof(buf))
        used += (size_t)snprintf(buf + used, sizeof(buf) - used, "%s%.0f W mean, %.0f W peak",
                                 used ? ", " : "", g->load_power_mean_mw / 1000.0,
                                 g->load_power_max_mw / 1000.0);
    finding_evidence(f, "during the load (%" PRIu32 " NVML readings): %s", g->load_samples,
                     used ? buf : "no clock, temperature or power figure");
}

static void check_throttle(const struct rule_ctx *ctx, struct findings *out)
{
    const struct bench_info *b = bench_of(ctx);

    for (size_t i = 0; b != NULL && i < b->n_gpus; i++) {
        const struct bench_gpu *g = &b->gpus[i];
        const struct gpu *nv = nvml_twin(ctx, g);
        uint64_t seen = bench_gpu_valid(g, BG_LOAD_REASONS) ? g->load_clocks_event_reasons : 0;
        uint64_t bad = seen & (LOAD_THERMAL | LOAD_HW | LOAD_POWER);
        bool slowed = bench_gpu_valid(g, BG_SUSTAINED) &&
                      g->sustained_last_flops < SUSTAINED_MIN_SHARE * g->sustained_first_flops;
        char labels[256], labels_l[512];
        struct finding *f;

        /* at the power limit under a full load is how GPUs run: only with a slowdown */
        if (!slowed && !(bad & (LOAD_THERMAL | LOAD_HW)))
            continue;
        f = finding_new(ctx, out, (int32_t)g->index, -1);
        reason_labels(labels, sizeof(labels), bad, false);
        reason_labels(labels_l, sizeof(labels_l), bad, true);
        if (slowed && bad)
            finding_title_take(
                f, TWICE("GPU %" PRIu32 " slowed to %.0f %% under load: %s",
                         (g->index, pct(g->sustained_last_flops, g->sustained_first_flops), labels),
                         (g->index, pct(g->sustained_last_flops, g->sustained_first_flops),
                          labels_l)));
        else if (slowed)
            finding_title(f, "GPU %" PRIu32 " slowed to %.0f %% under sustained load", g->index,
                          pct(g->sustained_last_flops, g->sustained_first_flops));
        else
            finding_title_take(f, TWICE("GPU %" PRIu32 " throttled under load: %s",
                                        (g->index, labels), (g->index, labels_l)));
        if (bench_gpu_valid(g, BG_SUSTAINED))
            finding_evidence(f,
                             "FMA rate %.1f TFLOPS in the first tenth, %.1f TFLOPS in the last "
                             "of %.1f s",
                             g->sustained_first_flops / 1e12, g->sustained_last_flops / 1e12,
                             g->sustained_s);
        if (bad)
            finding_evidence_take(
                f, TWICE("clock event reasons seen during the load: %s (0x%" PRIx64 ")",
                         (labels, seen), (labels_l, seen)));
        else if (bench_gpu_valid(g, BG_LOAD_REASONS))
            finding_evidence(f, "no thermal, power or hardware clock event reason was seen "
                                "during the load");
        else
            finding_evidence(f, "%s",
                             b->load_note ? b->load_note
                                          : "the clock event reasons were not read during "
                                            "the load");
        load_evidence(f, g);
        if (bad & LOAD_THERMAL) {
            finding_fix(f,
                        "nvidia-smi -i %" PRIu32 " -q -d TEMPERATURE   # slowdown and "
                        "maximum operating temperatures",
                        g->index);
            finding_fix(f, "# thermal: check the fans, air flow, blanking panels and the "
                           "inlet temperature (ipmitool sdr type Temperature)");
        }
        if (bad & LOAD_HW) {
            finding_fix(f, "sudo ipmitool sel list | tail -30   # BMC events: PSU faults, power "
                           "capping, brake assertions");
            finding_fix(f, "# hardware slowdown or power brake: check the GPU's power cables, "
                           "connectors and the PSUs");
        }
        if (bad & LOAD_POWER) {
            finding_fix(f,
                        "nvidia-smi -i %" PRIu32 " -q -d POWER   # the power limit against "
                        "the default and the maximum",
                        g->index);
            if (nv != NULL && gpu_valid(nv, GPU_S_POWER_LIMIT) &&
                gpu_valid(nv, GPU_S_POWER_DEFAULT_LIMIT) &&
                nv->power_limit_mw < nv->power_default_limit_mw)
                finding_fix(f,
                            "sudo nvidia-smi -i %" PRIu32 " -pl %" PRIu32 "   # back to the "
                            "default limit, if the power budget allows",
                            nv->index, nv->power_default_limit_mw / 1000);
        }
        if (!bad)
            finding_fix(f,
                        "nvidia-smi -i %" PRIu32 " -q -d TEMPERATURE,POWER,PERFORMANCE   # "
                        "clock event reasons while a load runs",
                        g->index);
        f->impact = (bad & (LOAD_THERMAL | LOAD_HW)) ? 1.0 : 0.5;
    }
}

const struct rule rule_bench_throttle_under_load = {
    .id = "bench.throttle-under-load",
    .severity = SEV_WARNING,
    .category = CAT_THROUGHPUT,
    .title = N_("Throttling that appears only under load"),
    .explanation = N_(
        "A GPU that starts fast and slows down as the load goes on, or whose clocks are cut by "
        "heat or its power delivery while every GPU of the node is loaded, is hitting a limit it "
        "does not reach when idle: failing fans, blocked air flow, a neighbour's exhaust, a power "
        "supply or cap too low. Short jobs do not see it; long training runs do. The clock event "
        "reasons NVML reported during the load say which limit it was."),
    .detection =
        /* xgettext:no-c-format */ N_(
            "over the sustained load (--duration, every selected GPU at once), the FMA rate "
            "of the last tenth below 85 % of the first tenth's, or a thermal or hardware "
            "clock event reason (sw_thermal, hw_thermal, hw_slowdown, hw_power_brake) in "
            "NVML's readings during the load. The software power cap alone is not a "
            "finding: a GPU at its power limit under a full load works as designed; with a "
            "slowdown it is named as its reason."),
    .fix =
        N_("Follow the reason: thermal, the cooling (fans, air flow, inlet temperature); hardware "
           "slowdown or power brake, the power supply, cables and BMC events; power cap, the "
           "power limit against the default."),
    .thresholds = NO_THRESHOLDS,
    .check = check_throttle,
};

/* ---- bench.behind-under-load ---- */

static void check_behind(const struct rule_ctx *ctx, struct findings *out)
{
    const struct bench_info *b = bench_of(ctx);

    for (size_t i = 0; b != NULL && i < b->n_gpus; i++) {
        const struct bench_gpu *g = &b->gpus[i], *best = NULL, *best_burst = NULL;
        struct finding *f;

        if (!bench_gpu_valid(g, BG_SUSTAINED) || g->name == NULL)
            continue;
        for (size_t k = 0; k < b->n_gpus; k++) {
            const struct bench_gpu *o = &b->gpus[k];

            if (k == i || o->name == NULL || strcmp(o->name, g->name) != 0)
                continue;
            if (bench_gpu_valid(o, BG_SUSTAINED) &&
                (best == NULL || o->sustained_flops > best->sustained_flops))
                best = o;
            if (bench_gpu_valid(o, BG_FMA) &&
                (best_burst == NULL || o->fma_flops > best_burst->fma_flops))
                best_burst = o;
        }
        if (best == NULL || g->sustained_flops >= BEHIND_SIBLINGS * best->sustained_flops)
            continue;
        /* behind already when measured alone: that is bench.compute-low's finding */
        if (bench_gpu_valid(g, BG_FMA) && best_burst != NULL &&
            g->fma_flops < BEHIND_SIBLINGS * best_burst->fma_flops)
            continue;
        f = finding_new(ctx, out, (int32_t)g->index, -1);
        finding_title(
            f, "GPU %" PRIu32 " fell behind its siblings under load: %.0f %% of GPU %" PRIu32,
            g->index, pct(g->sustained_flops, best->sustained_flops), best->index);
        finding_evidence(f,
                         "every GPU ran the same load at once for %.1f s: %.1f TFLOPS here, "
                         "%.1f TFLOPS on GPU %" PRIu32 " (%s)",
                         g->sustained_s, g->sustained_flops / 1e12, best->sustained_flops / 1e12,
                         best->index, g->name);
        if (bench_gpu_valid(g, BG_FMA) && best_burst != NULL)
            finding_evidence(f, "alone it kept up: %.1f TFLOPS against %.1f TFLOPS",
                             g->fma_flops / 1e12, best_burst->fma_flops / 1e12);
        load_evidence(f, g);
        if (bench_gpu_valid(best, BG_LOAD_CLOCK_SM) && bench_gpu_valid(g, BG_LOAD_CLOCK_SM))
            finding_evidence(
                f, "GPU %" PRIu32 " held its SM clock at %" PRIu32 "-%" PRIu32 " MHz meanwhile",
                best->index, best->load_clock_sm_min_mhz, best->load_clock_sm_max_mhz);
        if (bench_gpu_valid(best, BG_LOAD_TEMP) && bench_gpu_valid(g, BG_LOAD_TEMP))
            finding_evidence(
                f, "top temperatures: %" PRIu32 " °C here, %" PRIu32 " °C on GPU %" PRIu32,
                g->load_temp_max_c, best->load_temp_max_c, best->index);
        finding_fix(f, "nvidia-smi -q -d TEMPERATURE,POWER,PERFORMANCE   # every GPU side by side, "
                       "while a load runs");
        finding_fix(f, "# a GPU that falls behind only when its neighbours run too shares their "
                       "heat or power: check its slot's air flow and the PSU that feeds it");
        bench_fix(f, g);
        f->impact = 0.5;
    }
}

const struct rule rule_bench_behind_under_load = {
    .id = "bench.behind-under-load",
    .severity = SEV_WARNING,
    .category = CAT_THROUGHPUT,
    .title = N_("A GPU fell behind its siblings under load"),
    .explanation =
        N_("bench runs the same sustained load on every selected GPU at the same time. A GPU that "
           "kept up with the others when measured alone but falls behind when they all run is "
           "limited by what it shares with them: the air its neighbours heat, a power supply or "
           "power budget, a slot with less cooling. Data-parallel training runs at the pace of its "
           "slowest GPU, so the whole job slows with it."),
    .detection = /* xgettext:no-c-format */ N_(
        "the FMA rate over the whole simultaneous load below 80 % of the fastest GPU "
        "of the same name, while its rate measured alone (fma_flops) was within 80 % "
        "of the fastest sibling's (else bench.compute-low reports it)."),
    .fix =
        N_("Compare temperatures, power and clocks of the GPUs during a load; fix the cooling "
           "or power of the slow GPU's position; swap it with a sibling to tell the GPU from the "
           "slot."),
    .thresholds = NO_THRESHOLDS,
    .check = check_behind,
};

/* ---- bench.checksum-mismatch ---- */

static void check_checksum(const struct rule_ctx *ctx, struct findings *out)
{
    const struct bench_info *b = bench_of(ctx);
    size_t measured = 0, wrong = 0, agree_first = 0;
    const struct bench_gpu *first = NULL;
    struct finding *f;

    for (size_t i = 0; b != NULL && i < b->n_gpus; i++) {
        const struct bench_gpu *g = &b->gpus[i];

        if (!bench_gpu_valid(g, BG_CHECKSUM))
            continue;
        if (first == NULL)
            first = g;
        measured++;
        wrong += !g->checksum_ok;
        agree_first += g->checksum == first->checksum;
    }
    /* Every GPU gives the same result and the host another: corruption that struck every GPU
     * alike is far less likely than the host and the driver's compiled kernel rounding the
     * triad differently. Still said, milder, so that it is looked into. */
    if (measured >= 2 && wrong == measured && agree_first == measured) {
        f = finding_new(ctx, out, -1, -1);
        f->severity = SEV_WARNING;
        finding_title(f, "Every GPU computed checksum 0x%016" PRIx64 ", the host another",
                      first->checksum);
        finding_evidence(f,
                         "the %zu GPUs agree with each other on the triad: the same fault on "
                         "every GPU at once is unlikely; the driver's compiled kernel may round "
                         "differently from the host",
                         measured);
        finding_fix(f, "gpudoctor bench --full   # measure again");
        finding_fix(f, "# if other nodes with this driver show the same, it is the driver's "
                       "arithmetic, not the GPUs: report it with the driver version");
        f->impact = 0.5;
        return;
    }
    for (size_t i = 0; b != NULL && i < b->n_gpus; i++) {
        const struct bench_gpu *g = &b->gpus[i];
        size_t right = 0, others = 0, same = 0;

        if (!bench_gpu_valid(g, BG_CHECKSUM) || g->checksum_ok)
            continue;
        for (size_t k = 0; k < b->n_gpus; k++) {
            const struct bench_gpu *o = &b->gpus[k];

            if (k == i || !bench_gpu_valid(o, BG_CHECKSUM))
                continue;
            others++;
            right += o->checksum_ok;
            same += o->checksum == g->checksum;
        }
        f = finding_new(ctx, out, (int32_t)g->index, -1);
        finding_title(f, "GPU %" PRIu32 " computed a wrong result (silent data corruption)",
                      g->index);
        finding_evidence(f,
                         "triad checksum 0x%016" PRIx64 " differs from the host's computation "
                         "of the same data",
                         g->checksum);
        if (others > 0)
            finding_evidence(f,
                             "%zu of the %zu other GPUs computed the host's result; %zu "
                             "computed the same as this one",
                             right, others, same);
        finding_fix(f, "nvidia-smi -i %" PRIu32 " -q -d ECC,ROW_REMAPPER   # memory errors",
                    g->index);
        finding_fix(f, "# take the GPU out of service (drain the node) until it passes a "
                       "vendor diagnostic (dcgmi diag -r 3)");
        f->impact = 2;
    }
}

const struct rule rule_bench_checksum_mismatch = {
    .id = "bench.checksum-mismatch",
    .severity = SEV_CRITICAL,
    .category = CAT_THROUGHPUT,
    .title = N_("A GPU computed a wrong result"),
    .explanation =
        N_("Every GPU runs the same triad on the same data; the host computes the expected result "
           "too. A GPU whose checksum differs corrupted data silently: bad memory cells, a failing "
           "chip, or an unstable clock. Work run on it gives wrong answers without any error."),
    .detection = N_("the checksum of the triad's output on the GPU differs from the host's "
                    "computation of the same triad; the checksums are compared across GPUs too. "
                    "When two or more GPUs all agree with each other and not with the host, one "
                    "warning (not critical) says so: the same fault on every GPU is unlikely."),
    .fix = N_("Drain the GPU, check ECC and remapped rows, run NVIDIA's diagnostic (dcgmi diag); "
              "a GPU that miscomputes is a hardware case."),
    .thresholds = NO_THRESHOLDS,
    .check = check_checksum,
};

/* ---- bench.regression ---- */

static void regression(const struct rule_ctx *ctx, struct findings *out, const struct bench_gpu *g,
                       const char *what, double now, double base, double scale, const char *unit)
{
    struct finding *f;

    if (now >= BASELINE_MIN_SHARE * base)
        return;
    f = finding_new(ctx, out, (int32_t)g->index, -1);
    finding_object_word(f, what);
    finding_title_take(f, TWICE("GPU %" PRIu32 " %s at %.0f %% of this node's baseline",
                                (g->index, what, pct(now, base)),
                                (g->index, _(what), pct(now, base))));
    finding_evidence(f, "now %.1f %s, baseline %.1f %s (%s)", now / scale, unit, base / scale, unit,
                     ctx->facts->snap->bench.baseline ? ctx->facts->snap->bench.baseline
                                                      : "baseline");
    bench_fix(f, g);
    f->impact = 0.4;
}

static void check_regression(const struct rule_ctx *ctx, struct findings *out)
{
    const struct bench_info *b = bench_of(ctx);

    for (size_t i = 0; b != NULL && i < b->n_gpus; i++) {
        const struct bench_gpu *g = &b->gpus[i];

        if (bench_gpu_valid(g, BG_BASE_H2D) && bench_gpu_valid(g, BG_H2D_PINNED))
            regression(ctx, out, g, N_("host-to-device copy"), g->h2d_pinned_bytes_per_s,
                       g->base_h2d_bytes_per_s, GB, "GB/s");
        if (bench_gpu_valid(g, BG_BASE_TRIAD) && bench_gpu_valid(g, BG_TRIAD))
            regression(ctx, out, g, N_("memory bandwidth"), g->triad_bytes_per_s,
                       g->base_triad_bytes_per_s, GB, "GB/s");
        if (bench_gpu_valid(g, BG_BASE_FMA) && bench_gpu_valid(g, BG_FMA))
            regression(ctx, out, g, N_("compute rate"), g->fma_flops, g->base_fma_flops, 1e12,
                       "TFLOPS");
    }
}

const struct rule rule_bench_regression = {
    .id = "bench.regression",
    .severity = SEV_WARNING,
    .category = CAT_THROUGHPUT,
    .title = N_("A figure fell below this node's saved baseline"),
    .explanation =
        N_("The node's own past is the best yardstick: a figure well below what the same GPU "
           "measured when the baseline was saved (gpudoctor bench --save) is a regression, from a "
           "driver or firmware update, a BIOS setting, a hardware fault or cooling that degrades."),
    .detection = /* xgettext:no-c-format */ N_(
        "with a baseline (the saved one, or --compare FILE), a GPU's host-to-device "
        "copy, triad bandwidth or FMA rate below 85 % of the baseline's figure for the "
        "GPU at the same PCI address."),
    .fix = N_("Find what changed since the baseline (driver, firmware, BIOS, cooling) and measure "
              "again; save a new baseline only for a change you accept."),
    .thresholds = NO_THRESHOLDS,
    .check = check_regression,
};
