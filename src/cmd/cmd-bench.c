/*
 * gpudoctor bench: measure what the GPUs deliver (host copies, device memory, peer copies,
 * compute, a sustained load, a checksum) against what their link and model should do and this
 * node's baseline, and judge it with the bench.* rules. The CUDA work runs in a worker process
 * with a deadline (src/bench/run.c). docs/bench.md.
 */
#include "bench/bench.h"
#include "cmd/cmd.h"
#include "rules/rules.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum {
    OPT_QUICK = OPT__COMMON_END,
    OPT_FULL,
    OPT_GPUS,
    OPT_DURATION,
    OPT_SAVE,
    OPT_COMPARE,
    OPT_FORCE,
    OPT_CUDA_LIB,
    OPT_DEADLINE
};

struct bench_args {
    bool full, save, force;
    const char *gpus, *compare, *cuda_lib;
    int64_t duration_ms, deadline_ms;
};

static int option(void *ctx, int key, char *arg)
{
    struct bench_args *a = ctx;

    switch (key) {
    case OPT_QUICK:
        a->full = false;
        break;
    case OPT_FULL:
        a->full = true;
        break;
    case OPT_GPUS:
        a->gpus = arg;
        break;
    case OPT_SAVE:
        a->save = true;
        break;
    case OPT_COMPARE:
        a->compare = arg;
        break;
    case OPT_FORCE:
        a->force = true;
        break;
    case OPT_CUDA_LIB:
        a->cuda_lib = arg;
        break;
    case OPT_DURATION:
    case OPT_DEADLINE:
        if (!time_parse_duration_ms(arg, key == OPT_DURATION ? &a->duration_ms : &a->deadline_ms) ||
            (key == OPT_DEADLINE && a->deadline_ms <= 0) || a->duration_ms > 3600000) {
            cmd_error("bench", "--%s: expected a duration (\"30\", \"2m\"), not '%s'",
                      key == OPT_DURATION ? "duration" : "deadline", arg);
            return EXIT_USAGE;
        }
        break;
    }
    return 0;
}

/* --gpus "0,2": NVML indices to PCI addresses; refuses GPUs in use unless --force. */
static int select_gpus(const struct bench_args *a, const struct snapshot *s, struct bench_opts *o,
                       char **refusal)
{
    char *list = a->gpus ? xstrdup(a->gpus) : NULL, *save = NULL;

    o->pci_bus_ids = xcalloc(s->n_gpus + 1, sizeof(char *));
    for (size_t i = 0; i < s->n_gpus; i++) {
        const struct gpu *g = &s->gpus[i];
        bool want = list == NULL;

        if (list != NULL) {
            char *copy = xstrdup(a->gpus);

            for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                char *end;
                long v = strtol(t, &end, 10);

                if (*end == '\0' && end != t && v == (long)g->index)
                    want = true;
            }
            free(copy);
        }
        if (!want || !gpu_valid(g, GPU_S_PCI_BUS_ID))
            continue;
        if (!a->force && g->n_procs > 0) {
            free(*refusal);
            *refusal =
                xasprintf("GPU %u is in use by %zu process%s (pid %u): bench would slow "
                          "them and be slowed; --force measures anyway",
                          g->index, g->n_procs, g->n_procs == 1 ? "" : "es", g->procs[0].pid);
            continue;
        }
        o->pci_bus_ids[o->n_pci_bus_ids++] = g->pci_bus_id;
    }
    if (list != NULL) {
        char *copy = xstrdup(a->gpus);

        for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
            char *end;
            long v = strtol(t, &end, 10);

            if (*end != '\0' || end == t || v < 0 || snapshot_gpu(s, (uint32_t)v) == NULL) {
                cmd_error("bench", "--gpus: no GPU '%s' (NVML indices 0 to %zu)", t,
                          s->n_gpus ? s->n_gpus - 1 : 0);
                free(copy);
                free(list);
                return EXIT_USAGE;
            }
        }
        free(copy);
    }
    free(list);
    /* no NVML: measure whatever CUDA sees (nothing to refuse by) */
    if (s->n_gpus == 0) {
        free(o->pci_bus_ids);
        o->pci_bus_ids = NULL;
    }
    return 0;
}

static int status_of(const struct bench_info *b, const struct findings *f)
{
    int worst = -1;

    for (size_t i = 0; i < f->n; i++) {
        if (strncmp(f->items[i].rule->id, "bench.", 6) == 0 && (int)f->items[i].severity > worst)
            worst = (int)f->items[i].severity;
    }
    if (worst == SEV_CRITICAL)
        return EXIT_CRITICAL;
    if (b->state != BENCH_OK)
        return EXIT_UNKNOWN;
    return worst == SEV_WARNING ? EXIT_WARNING : EXIT_HEALTHY;
}

/* What NVML read during the load: "under load    SM 1410-1980 MHz, ..." */
static void print_load(const struct bench_gpu *g)
{
    printf("  under load    %u NVML readings", g->load_samples);
    if (bench_gpu_valid(g, BG_LOAD_CLOCK_SM))
        printf(", SM %u-%u MHz", g->load_clock_sm_min_mhz, g->load_clock_sm_max_mhz);
    if (bench_gpu_valid(g, BG_LOAD_CLOCK_MEM))
        printf(", memory %u-%u MHz", g->load_clock_mem_min_mhz, g->load_clock_mem_max_mhz);
    if (bench_gpu_valid(g, BG_LOAD_TEMP))
        printf(", up to %u °C", g->load_temp_max_c);
    if (bench_gpu_valid(g, BG_LOAD_POWER))
        printf(", %.0f W mean, %.0f W peak", g->load_power_mean_mw / 1000.0,
               g->load_power_max_mw / 1000.0);
    if (bench_gpu_valid(g, BG_LOAD_REASONS)) {
        const char *sep = ", reasons: ";

        for (size_t i = 0; i < n_clock_reasons; i++) {
            if (g->load_clocks_event_reasons & clock_reasons[i].bit) {
                printf("%s%s", sep, clock_reasons[i].name);
                sep = " ";
            }
        }
        if (g->load_clocks_event_reasons == 0)
            printf(", no clock event reason");
    }
    putchar('\n');
}

/* The cuBLASLt GEMMs: one line per precision measured, and why others were not. */
static void print_gemm(const struct bench_gpu *g)
{
    static const char *const labels[BP_N] = { "TF32", "FP16", "BF16", "FP8" };

    for (int p = 0; p < BP_N; p++) {
        if (!bench_gpu_valid(g, (enum bench_gpu_slot)(BG_GEMM + p)))
            continue;
        printf("  GEMM %-4s     %.1f TFLOPS (cuBLASLt, %u x %u)", labels[p],
               g->gemm_flops[p] / 1e12, g->gemm_n, g->gemm_n);
        if (bench_gpu_valid(g, (enum bench_gpu_slot)(BG_GEMM_EXPECTED + p)))
            printf("  model's peak %.1f TFLOPS, %.0f %%", g->tensor_expected_flops[p] / 1e12,
                   100 * g->gemm_flops[p] / g->tensor_expected_flops[p]);
        putchar('\n');
    }
    if (g->gemm_note != NULL)
        printf("  GEMM          %s\n", g->gemm_note);
}

static void print_text(const struct bench_info *b, const struct findings *f)
{
    printf("bench (%s): %s%s%s\n", b->mode ? b->mode : "quick", bench_state_names[b->state],
           b->detail ? ": " : "", b->detail ? b->detail : "");
    for (size_t i = 0; i < b->n_gpus; i++) {
        const struct bench_gpu *g = &b->gpus[i];

        printf("GPU %u %s (%s)%s%s\n", g->index, g->name ? g->name : "?",
               g->pci_bus_id ? g->pci_bus_id : "?", g->error ? ": " : "", g->error ? g->error : "");
        if (bench_gpu_valid(g, BG_H2D_PINNED)) {
            printf("  host->device  pinned %7.1f GB/s  pageable %7.1f GB/s",
                   g->h2d_pinned_bytes_per_s / 1e9, g->h2d_pageable_bytes_per_s / 1e9);
            if (bench_gpu_valid(g, BG_PCIE_EXPECTED))
                printf("  expected %.1f GB/s (Gen%u x%u), %.0f %%",
                       g->pcie_expected_bytes_per_s / 1e9, g->pcie_gen, g->pcie_width,
                       100 * g->h2d_pinned_bytes_per_s / g->pcie_expected_bytes_per_s);
            if (bench_gpu_valid(g, BG_BASE_H2D))
                printf("  baseline %.0f %%",
                       100 * g->h2d_pinned_bytes_per_s / g->base_h2d_bytes_per_s);
            printf("\n  device->host  pinned %7.1f GB/s  pageable %7.1f GB/s  both at once %.1f "
                   "GB/s\n",
                   g->d2h_pinned_bytes_per_s / 1e9, g->d2h_pageable_bytes_per_s / 1e9,
                   g->bidir_bytes_per_s / 1e9);
            if (bench_gpu_valid(g, BG_HOST_NUMA))
                printf("  host buffer on NUMA node %d (GPU: %s)\n", g->host_numa_node,
                       bench_gpu_valid(g, BG_GPU_NUMA)
                           ? (g->gpu_numa_node == g->host_numa_node ? "local" : "remote")
                           : "unknown");
        }
        if (bench_gpu_valid(g, BG_TRIAD)) {
            printf("  memory        triad %7.1f GB/s  device copy %7.1f GB/s",
                   g->triad_bytes_per_s / 1e9, g->dtod_bytes_per_s / 1e9);
            if (bench_gpu_valid(g, BG_MEM_EXPECTED))
                printf("  model's peak %.1f GB/s, %.0f %%", g->mem_expected_bytes_per_s / 1e9,
                       100 * g->triad_bytes_per_s / g->mem_expected_bytes_per_s);
            putchar('\n');
        }
        if (bench_gpu_valid(g, BG_FMA)) {
            printf("  compute       %.2f TFLOPS FP32 (FMA kernel)", g->fma_flops / 1e12);
            if (bench_gpu_valid(g, BG_FP32_EXPECTED))
                printf("  model's peak %.1f TFLOPS, %.0f %%", g->fp32_expected_flops / 1e12,
                       100 * g->fma_flops / g->fp32_expected_flops);
            putchar('\n');
        }
        print_gemm(g);
        if (bench_gpu_valid(g, BG_SUSTAINED))
            printf("  sustained     %.2f -> %.2f TFLOPS over %.1f s (%.2f TFLOPS mean), every GPU "
                   "at once\n",
                   g->sustained_first_flops / 1e12, g->sustained_last_flops / 1e12, g->sustained_s,
                   g->sustained_flops / 1e12);
        if (bench_gpu_valid(g, BG_LOAD_SAMPLES))
            print_load(g);
        if (bench_gpu_valid(g, BG_CHECKSUM))
            printf("  checksum      %016llx %s\n", (unsigned long long)g->checksum,
                   g->checksum_ok ? "ok" : "WRONG");
    }
    for (size_t i = 0; i < b->n_pairs; i++)
        printf("peer GPU %u -> GPU %u  %7.1f GB/s  %.1f us%s\n", b->pairs[i].src, b->pairs[i].dst,
               b->pairs[i].bytes_per_s / 1e9, b->pairs[i].latency_us,
               b->pairs[i].peer_access ? "" : "  (no peer access)");
    if (b->load_note != NULL)
        printf("%s\n", b->load_note);
    printf(_("measured %.3f s of device time in %.3f s\n"), b->measured_s, b->elapsed_s);
    for (size_t i = 0; i < f->n; i++) {
        const struct finding *x = &f->items[i];

        if (strncmp(x->rule->id, "bench.", 6) != 0)
            continue;
        printf("%s [%s] %s\n", severity_names[x->severity], x->rule->id, finding_title_text(x));
        for (size_t k = 0; k < x->n_evidence; k++)
            printf("    %s\n", finding_evidence_text(x, k));
        for (size_t k = 0; k < x->n_fix; k++)
            printf(_("    fix: %s\n"), finding_fix_text(x, k));
    }
}

static void print_json(const struct bench_info *b, const struct findings *f, int status)
{
    json_t *j = json_object(), *list = json_array();
    char *text;

    json_object_set_new(j, "schema", json_string("gpudoctor.bench/1"));
    json_object_set_new(j, "status", json_integer(status));
    json_object_set_new(j, "bench", bench_info_to_json(b));
    for (size_t i = 0; i < f->n; i++) {
        const struct finding *x = &f->items[i];
        json_t *o, *ev;

        if (strncmp(x->rule->id, "bench.", 6) != 0)
            continue;
        o = json_object();
        ev = json_array();
        json_object_set_new(o, "id", json_string(x->rule->id));
        json_object_set_new(o, "severity", json_string(severity_names[x->severity]));
        json_object_set_new(
            o, "gpu", x->subject.gpu_index >= 0 ? json_integer(x->subject.gpu_index) : json_null());
        json_object_set_new(o, "title", json_string(x->title));
        for (size_t k = 0; k < x->n_evidence; k++)
            json_array_append_new(ev, json_string(x->evidence[k]));
        json_object_set_new(o, "evidence", ev);
        json_array_append_new(list, o);
    }
    json_object_set_new(j, "findings", list);
    text = json_dumps(j, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
    json_decref(j);
    if (text == NULL)
        fatal("out of memory serialising the bench");
    puts(text);
    free(text);
}

static int exec(int argc, char **argv)
{
    struct bench_args a = { .duration_ms = -1 };
    struct bench_opts o = { 0 };
    struct findings findings = { 0 };
    struct cmd_front f;
    struct snapshot *s = NULL;
    char *refusal = NULL, *cause = NULL, *saved = NULL;
    int rc;

    rc = cmd_front_parse(&f, &cmd_bench, argc, argv, option, &a);
    if (rc != CMD_GO)
        goto out;
    f.no_progress = true;
    s = cmd_front_snapshot(&f);
    if (s == NULL) {
        rc = EXIT_UNKNOWN;
        goto out;
    }
    rc = select_gpus(&a, s, &o, &refusal);
    if (rc != 0)
        goto out;
    o.full = a.full;
    o.duration_s = a.duration_ms >= 0 ? (double)a.duration_ms / 1e3 : (a.full ? 30 : 2);
    o.deadline_s =
        a.deadline_ms > 0 ? (double)a.deadline_ms / 1e3 : (a.full ? 600 : 120) + o.duration_s * 4;
    o.cuda_lib = a.cuda_lib;
    o.mem_share = 0.25;
    o.nvml_lib = f.collect.nvml_lib;
    o.sample_nvml =
        s->nvml.attempted && s->nvml.load_error == 0 && s->nvml.init_rc == 0 && s->n_gpus > 0;
    if (refusal != NULL && o.pci_bus_ids != NULL && o.n_pci_bus_ids == 0) {
        s->bench.state = BENCH_REFUSED;
        s->bench.detail = refusal;
        refusal = NULL;
    } else if (o.pci_bus_ids != NULL && o.n_pci_bus_ids == 0) {
        /* NVML lists GPUs, none with a PCI address to find it by in CUDA */
        s->bench.state = BENCH_NOT_RUN;
        s->bench.detail =
            xasprintf("no GPU to measure: NVML gives none of its %zu GPU%s a PCI "
                      "address to find %s by in CUDA",
                      s->n_gpus, s->n_gpus == 1 ? "" : "s", s->n_gpus == 1 ? "it" : "them");
    } else {
        bench_run(&o, &s->bench);
        if (!o.sample_nvml && s->bench.state == BENCH_OK && s->bench.load_note == NULL)
            s->bench.load_note = xstrdup("NVML was not sampled during the load: NVML gave "
                                         "no GPU (see gpudoctor check)");
        if (s->bench.state == BENCH_OK && s->bench.n_gpus == 0) {
            s->bench.state = BENCH_NOT_RUN;
            s->bench.detail =
                xstrdup(getenv("CUDA_VISIBLE_DEVICES") != NULL
                            ? "no GPU to measure: the CUDA driver shows none of the selected GPUs "
                              "(CUDA_VISIBLE_DEVICES is set: it hides GPUs from the driver API too)"
                            : "no GPU to measure: the CUDA driver shows none of the selected GPUs");
        }
    }
    free(s->bench.mode);
    s->bench.mode = xstrdup(a.full ? "full" : "quick");
    free(s->bench.library);
    s->bench.library = xstrdup(a.cuda_lib                     ? a.cuda_lib
                               : getenv("GPUDOCTOR_CUDA_LIB") ? getenv("GPUDOCTOR_CUDA_LIB")
                                                              : "libcuda.so.1");
    if (s->bench.state == BENCH_OK) {
        bench_expect(&s->bench, s);
        saved = f.state_dir != NULL ? bench_baseline_path(f.state_dir) : NULL;
        if (a.compare != NULL) {
            if (bench_baseline_compare(&s->bench, a.compare, &cause) != 0) {
                cmd_error("bench", "--compare: %s", cause);
                rc = EXIT_UNKNOWN;
                goto out;
            }
        } else if (!a.save && saved != NULL && access(saved, R_OK) == 0 &&
                   bench_baseline_compare(&s->bench, saved, &cause) != 0) {
            cmd_error("bench", "the saved baseline is unusable: %s", cause);
            free(cause);
            cause = NULL;
        }
    }
    rules_run(s, NULL, &f.config.rules, &findings);
    rc = status_of(&s->bench, &findings);
    if (refusal != NULL)
        cmd_error("bench", "%s", refusal);
    if (f.json)
        print_json(&s->bench, &findings, rc);
    else
        print_text(&s->bench, &findings);
    if (a.save && s->bench.state == BENCH_OK && saved == NULL) {
        cmd_error("bench", "--save: the state is off (--no-state, or state_dir 'off'): "
                           "no baseline saved");
        rc = EXIT_UNKNOWN;
    } else if (a.save && s->bench.state == BENCH_OK) {
        if (bench_baseline_save(s, saved, &cause) != 0) {
            cmd_error("bench", "--save: %s", cause);
            rc = EXIT_UNKNOWN;
        } else if (!f.json) {
            printf("saved as this node's baseline: %s\n", saved);
        }
    }
    /* Every bench that ran is the node's last result, for serve and slurm-check. */
    if (s->bench.state == BENCH_OK && f.state_dir != NULL) {
        char *why = NULL;

        if (bench_last_save(s, f.state_dir, &why) != 0)
            cmd_error("bench", "note: the result was not kept as the last one: %s", why);
        free(why);
    }
    if (cmd_finish_stdout("bench") != 0)
        rc = EXIT_UNKNOWN;
out:
    free(o.pci_bus_ids);
    free(refusal);
    free(cause);
    free(saved);
    findings_free(&findings);
    snapshot_free(s);
    cmd_front_free(&f);
    return rc;
}

static const struct cmd_option options[] = {
    { "quick", OPT_QUICK, no_argument, NULL, N_("Short transfers and a 2 s load (default).") },
    { "full", OPT_FULL, no_argument, NULL, N_("Larger transfers, more repetitions, a 30 s load.") },
    { "gpus", OPT_GPUS, required_argument, "LIST",
      N_("Measure these GPUs (NVML indices, \"0,2\").") },
    { "duration", OPT_DURATION, required_argument, "DUR",
      N_("Sustained load on every GPU at once, in device time (\"10\", \"2m\").") },
    { "save", OPT_SAVE, no_argument, NULL,
      N_("Keep the result as this node's baseline (docs/bench.md says where).") },
    { "compare", OPT_COMPARE, required_argument, "FILE",
      N_("Compare with this baseline instead of the saved one.") },
    { "force", OPT_FORCE, no_argument, NULL, N_("Measure GPUs that other processes use too.") },
    { "cuda-lib", OPT_CUDA_LIB, required_argument, "PATH",
      N_("CUDA driver library to load instead of libcuda.so.1.") },
    { "deadline", OPT_DEADLINE, required_argument, "DUR",
      N_("End the CUDA worker after this long (a hang becomes a finding).") },
    { NULL, 0, 0, NULL, NULL },
};

const struct cmd cmd_bench = {
    .name = "bench",
    .synopsis = "[--quick | --full] [--save] [--compare FILE] [options]",
    .summary = N_("measure what the GPUs deliver against what they should"),
    .about = N_("Measure host copies, device memory, peer copies, compute, a sustained load\n"
                "(every GPU at once, NVML read while it runs) and a checksum on each GPU, next to\n"
                "what its PCIe link should carry and this node's saved baseline, and judge them\n"
                "with the bench.* rules. The CUDA work runs in a worker process with a deadline.\n"
                "GPUs other processes use are refused unless --force.\n"),
    .options = options,
    .groups = CMD_G_COLLECT | CMD_G_CONFIG | CMD_G_JSON | CMD_G_STATE,
    .window_ms = 0,
    .epilogue = N_("Exit status: 0 healthy, 1 warning, 2 critical, 3 could not measure, 64 usage\n"
                   "error. Environment: GPUDOCTOR_CUDA_LIB, GPUDOCTOR_CUBLASLT_LIB (cuBLASLt for\n"
                   "the GEMMs; default libcublasLt.so.13, .12, .11), GPUDOCTOR_STATE_DIR.\n"
                   "docs/bench.md.\n"),
    .exec = exec,
};
