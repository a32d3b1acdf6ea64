/*
 * gpudoctor bench: measure what the GPUs deliver (host copies, device memory, peer copies,
 * compute, a sustained load, a checksum) against what their link and model should do and this
 * node's baseline, and judge it with the bench.* rules. The CUDA work runs in a worker process
 * with a deadline (src/bench/run.c). docs/bench.md.
 */
#include "bench/bench.h"
#include "cmd/cmd.h"
#include "render/format.h"
#include "rules/rules.h"
#include "snapshot/bench-steps.h"
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

/*
 * Why a GPU in use is not measured: in English for the result (--json, the snapshot) when people
 * is false, in the locale's language for the report and the error message when true. One
 * sentence per number (1, more) keeps the English as it was and lets a language without plurals
 * say both alike.
 */
static char *refusal_text(const struct gpu *g, bool people)
{
    if (g->n_procs == 1)
        return xasprintf(L_(people, "GPU %u is in use by %zu process (pid %u): bench would slow "
                                    "them and be slowed; --force measures anyway"),
                         g->index, g->n_procs, g->procs[0].pid);
    return xasprintf(L_(people, "GPU %u is in use by %zu processes (pid %u): bench would slow "
                                "them and be slowed; --force measures anyway"),
                     g->index, g->n_procs, g->procs[0].pid);
}

/* Why nothing was measured though NVML lists GPUs (none has a PCI address to find it by). */
static char *no_pci_text(size_t n_gpus, bool people)
{
    if (n_gpus == 1)
        return xasprintf(L_(people, "no GPU to measure: NVML gives none of its %zu GPU a PCI "
                                    "address to find it by in CUDA"),
                         n_gpus);
    return xasprintf(L_(people, "no GPU to measure: NVML gives none of its %zu GPUs a PCI "
                                "address to find them by in CUDA"),
                     n_gpus);
}

/* Why CUDA measured nothing: none of the selected GPUs is in the driver's list. */
static char *no_cuda_gpu_text(bool people)
{
    return xstrdup(getenv("CUDA_VISIBLE_DEVICES") != NULL
                       ? L_(people, "no GPU to measure: the CUDA driver shows none of the "
                                    "selected GPUs (CUDA_VISIBLE_DEVICES is set: it hides GPUs "
                                    "from the driver API too)")
                       : L_(people, "no GPU to measure: the CUDA driver shows none of the "
                                    "selected GPUs"));
}

/*
 * --gpus "0,2": NVML indices to PCI addresses; refuses GPUs in use unless --force (*refusal in
 * English, *refusal_people in the locale's language).
 */
static int select_gpus(const struct bench_args *a, const struct snapshot *s, struct bench_opts *o,
                       char **refusal, char **refusal_people)
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
            free(*refusal_people);
            *refusal = refusal_text(g, false);
            *refusal_people = refusal_text(g, true);
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

/*
 * The texts of a bench for people that its result keeps in English (--json): the detail and the
 * load note, when this run made them; NULL: the result's own (a collector's note, a CUDA error).
 */
struct bench_people {
    const char *detail, *load_note;
};

/*
 * "  memory        ": a figure's label, indented, padded to the column where the figures start.
 * Padded by display columns (a translated label may hold wide characters), two blanks at least.
 */
static void print_label(const char *label)
{
    enum { LABEL_COLS = 14 };
    size_t w = render_width(label, strlen(label));

    printf("  %s%*s", label, (int)(w + 2 > LABEL_COLS ? 2 : LABEL_COLS - w), "");
}

/* What NVML read during the load: "under load    11 NVML readings, SM 1410-1980 MHz, ..." */
static void print_load(const struct bench_gpu *g)
{
    /* TRANSLATORS: bench's figures: the label of a line, before the figures (any width). */
    print_label(_("under load"));
    printf(_("%u NVML readings"), g->load_samples);
    if (bench_gpu_valid(g, BG_LOAD_CLOCK_SM)) {
        fputs(", ", stdout);
        printf(_("SM %u-%u MHz"), g->load_clock_sm_min_mhz, g->load_clock_sm_max_mhz);
    }
    if (bench_gpu_valid(g, BG_LOAD_CLOCK_MEM)) {
        fputs(", ", stdout);
        printf(_("memory %u-%u MHz"), g->load_clock_mem_min_mhz, g->load_clock_mem_max_mhz);
    }
    if (bench_gpu_valid(g, BG_LOAD_TEMP)) {
        fputs(", ", stdout);
        printf(_("up to %u °C"), g->load_temp_max_c);
    }
    if (bench_gpu_valid(g, BG_LOAD_POWER)) {
        fputs(", ", stdout);
        printf(_("%.0f W mean, %.0f W peak"), g->load_power_mean_mw / 1000.0,
               g->load_power_max_mw / 1000.0);
    }
    if (bench_gpu_valid(g, BG_LOAD_REASONS)) {
        /* the reasons' names as NVML's flags are called (sw_thermal), in every language */
        char names[512] = "";
        size_t n = 0;

        for (size_t i = 0; i < n_clock_reasons; i++) {
            if ((g->load_clocks_event_reasons & clock_reasons[i].bit) && n < sizeof(names))
                n += (size_t)snprintf(names + n, sizeof(names) - n, "%s%s", n ? " " : "",
                                      clock_reasons[i].name);
        }
        fputs(", ", stdout);
        if (n > 0)
            /* TRANSLATORS: %s: NVML's clock event reasons by name ("sw_thermal hw_thermal") */
            printf(_("reasons: %s"), names);
        else
            fputs(_("no clock event reason"), stdout);
    }
    putchar('\n');
}

/* "  model's peak 494.5 TFLOPS, 70 %" after a compute figure */
static void print_peak_flops(double expected, double measured)
{
    fputs("  ", stdout);
    printf(_("model's peak %.1f TFLOPS, %.0f %%"), expected / 1e12, 100 * measured / expected);
}

/* The cuBLASLt GEMMs: one line per precision measured, and why others were not. */
static void print_gemm(const struct bench_gpu *g)
{
    static const char *const labels[BP_N] = { "TF32", "FP16", "BF16", "FP8" };

    for (int p = 0; p < BP_N; p++) {
        char label[32];

        if (!bench_gpu_valid(g, (enum bench_gpu_slot)(BG_GEMM + p)))
            continue;
        snprintf(label, sizeof(label), "GEMM %s", labels[p]);
        print_label(label);
        printf(_("%.1f TFLOPS (cuBLASLt, %u x %u)"), g->gemm_flops[p] / 1e12, g->gemm_n, g->gemm_n);
        if (bench_gpu_valid(g, (enum bench_gpu_slot)(BG_GEMM_EXPECTED + p)))
            print_peak_flops(g->tensor_expected_flops[p], g->gemm_flops[p]);
        putchar('\n');
    }
    if (g->gemm_note != NULL) {
        print_label("GEMM");
        printf("%s\n", g->gemm_note);
    }
}

/* host->device and device->host copies, and where the host's buffer was */
static void print_host_copies(const struct bench_gpu *g)
{
    /* TRANSLATORS: bench's figures: the label of a line, before the figures (any width). */
    print_label(_("host->device"));
    printf(_("pinned %7.1f GB/s  pageable %7.1f GB/s"), g->h2d_pinned_bytes_per_s / 1e9,
           g->h2d_pageable_bytes_per_s / 1e9);
    if (bench_gpu_valid(g, BG_PCIE_EXPECTED)) {
        fputs("  ", stdout);
        printf(_("expected %.1f GB/s (Gen%u x%u), %.0f %%"), g->pcie_expected_bytes_per_s / 1e9,
               g->pcie_gen, g->pcie_width,
               100 * g->h2d_pinned_bytes_per_s / g->pcie_expected_bytes_per_s);
    }
    if (bench_gpu_valid(g, BG_BASE_H2D)) {
        fputs("  ", stdout);
        printf(_("baseline %.0f %%"), 100 * g->h2d_pinned_bytes_per_s / g->base_h2d_bytes_per_s);
    }
    putchar('\n');
    /* TRANSLATORS: bench's figures: the label of a line, before the figures (any width). */
    print_label(_("device->host"));
    printf(_("pinned %7.1f GB/s  pageable %7.1f GB/s"), g->d2h_pinned_bytes_per_s / 1e9,
           g->d2h_pageable_bytes_per_s / 1e9);
    fputs("  ", stdout);
    printf(_("both at once %.1f GB/s"), g->bidir_bytes_per_s / 1e9);
    putchar('\n');
    if (bench_gpu_valid(g, BG_HOST_NUMA)) {
        const char *where = !bench_gpu_valid(g, BG_GPU_NUMA)        ? _("unknown")
                            : g->gpu_numa_node == g->host_numa_node ? _("local")
                                                                    : _("remote");

        fputs("  ", stdout);
        /* TRANSLATORS: %s: "local", "remote" or "unknown" (the GPU's NUMA node to the buffer's) */
        printf(_("host buffer on NUMA node %d (GPU: %s)"), g->host_numa_node, where);
        putchar('\n');
    }
}

static void print_gpu(const struct bench_gpu *g)
{
    printf("GPU %u %s (%s)%s%s\n", g->index, g->name ? g->name : "?",
           g->pci_bus_id ? g->pci_bus_id : "?", g->error ? ": " : "", g->error ? g->error : "");
    if (bench_gpu_valid(g, BG_H2D_PINNED))
        print_host_copies(g);
    if (bench_gpu_valid(g, BG_TRIAD)) {
        /* TRANSLATORS: bench's figures: the label of a line, before the figures (any width). */
        print_label(_("memory"));
        printf(_("triad %7.1f GB/s  device copy %7.1f GB/s"), g->triad_bytes_per_s / 1e9,
               g->dtod_bytes_per_s / 1e9);
        if (bench_gpu_valid(g, BG_MEM_EXPECTED)) {
            fputs("  ", stdout);
            printf(_("model's peak %.1f GB/s, %.0f %%"), g->mem_expected_bytes_per_s / 1e9,
                   100 * g->triad_bytes_per_s / g->mem_expected_bytes_per_s);
        }
        putchar('\n');
    }
    if (bench_gpu_valid(g, BG_FMA)) {
        /* TRANSLATORS: bench's figures: the label of a line, before the figures (any width). */
        print_label(_("compute"));
        printf(_("%.2f TFLOPS FP32 (FMA kernel)"), g->fma_flops / 1e12);
        if (bench_gpu_valid(g, BG_FP32_EXPECTED))
            print_peak_flops(g->fp32_expected_flops, g->fma_flops);
        putchar('\n');
    }
    print_gemm(g);
    if (bench_gpu_valid(g, BG_SUSTAINED)) {
        /* TRANSLATORS: bench's figures: the label of a line, before the figures (any width). */
        print_label(_("sustained"));
        printf(_("%.2f -> %.2f TFLOPS over %.1f s (%.2f TFLOPS mean), every GPU at once"),
               g->sustained_first_flops / 1e12, g->sustained_last_flops / 1e12, g->sustained_s,
               g->sustained_flops / 1e12);
        putchar('\n');
    }
    if (bench_gpu_valid(g, BG_LOAD_SAMPLES))
        print_load(g);
    if (bench_gpu_valid(g, BG_CHECKSUM)) {
        /*
         * TRANSLATORS: after a checksum: it matches the host's computation ("ok", also bench's
         * result in its first line), or it does not
         */
        const char *verdict = g->checksum_ok ? _("ok") : _("WRONG");

        /* TRANSLATORS: bench's figures: the label of a line, before the figures (any width). */
        print_label(_("checksum"));
        printf("%016llx %s\n", (unsigned long long)g->checksum, verdict);
    }
}

static void print_text(const struct bench_info *b, const struct findings *f,
                       const struct bench_people *people)
{
    /* TRANSLATORS: bench's modes (--quick, --full), in its report's first line */
    static const char *const modes[] = { N_("quick"), N_("full") };
    /*
     * TRANSLATORS: bench's results in its report's first line ("ok" also follows a checksum that
     * matches); --json keeps them in English
     */
    static const char *const states[] = { N_("not_run"), N_("ok"), N_("failed"), N_("timeout"),
                                          N_("refused") };
    /* TRANSLATORS: a finding's severity, before its rule id: "warning [bench.regression] ..." */
    static const char *const severities[] = { N_("info"), N_("warning"), N_("critical") };
    const char *mode = b->mode == NULL || strcmp(b->mode, "quick") == 0 ? _(modes[0])
                       : strcmp(b->mode, "full") == 0                   ? _(modes[1])
                                                                        : b->mode;
    const char *state = _(states[b->state]);
    const char *detail = people->detail != NULL ? people->detail : b->detail;
    const char *note = people->load_note != NULL ? people->load_note : b->load_note;

    if (detail != NULL)
        /* TRANSLATORS: bench's first line: "bench (quick): refused: GPU 0 is in use ..." */
        printf(_("bench (%s): %s: %s\n"), mode, state, detail);
    else
        printf(_("bench (%s): %s\n"), mode, state);
    for (size_t i = 0; i < b->n_gpus; i++)
        print_gpu(&b->gpus[i]);
    for (size_t i = 0; i < b->n_pairs; i++) {
        printf(_("peer GPU %u -> GPU %u  %7.1f GB/s  %.1f us"), b->pairs[i].src, b->pairs[i].dst,
               b->pairs[i].bytes_per_s / 1e9, b->pairs[i].latency_us);
        if (!b->pairs[i].peer_access)
            printf("  %s", _("(no peer access)"));
        putchar('\n');
    }
    if (note != NULL)
        printf("%s\n", note);
    printf(_("measured %.3f s of device time in %.3f s\n"), b->measured_s, b->elapsed_s);
    for (size_t i = 0; i < f->n; i++) {
        const struct finding *x = &f->items[i];

        if (strncmp(x->rule->id, "bench.", 6) != 0)
            continue;
        printf("%s [%s] %s\n", _(severities[x->severity]), x->rule->id, finding_title_text(x));
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
        json_object_set_new(o, "title", jstring_safe(x->title));
        for (size_t k = 0; k < x->n_evidence; k++)
            json_array_append_new(ev, jstring_safe(x->evidence[k]));
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
    char *refusal = NULL, *refusal_people = NULL, *cause = NULL, *saved = NULL;
    char *detail_people = NULL, *note_people = NULL;
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
    rc = select_gpus(&a, s, &o, &refusal, &refusal_people);
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
        detail_people = xstrdup(refusal_people);
    } else if (o.pci_bus_ids != NULL && o.n_pci_bus_ids == 0) {
        /* NVML lists GPUs, none with a PCI address to find it by in CUDA */
        s->bench.state = BENCH_NOT_RUN;
        s->bench.detail = no_pci_text(s->n_gpus, false);
        detail_people = no_pci_text(s->n_gpus, true);
    } else {
        bench_run(&o, &s->bench);
        if (!o.sample_nvml && s->bench.state == BENCH_OK && s->bench.load_note == NULL) {
            s->bench.load_note = xstrdup("NVML was not sampled during the load: NVML gave "
                                         "no GPU (see gpudoctor check)");
            note_people = xstrdup(_("NVML was not sampled during the load: NVML gave no GPU "
                                    "(see gpudoctor check)"));
        }
        if (s->bench.state == BENCH_OK && s->bench.n_gpus == 0) {
            s->bench.state = BENCH_NOT_RUN;
            s->bench.detail = no_cuda_gpu_text(false);
            detail_people = no_cuda_gpu_text(true);
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
        } else if (!a.save && saved != NULL &&
                   bench_baseline_compare_saved(&s->bench, f.state_dir, &cause) < 0) {
            cmd_error("bench", "the saved baseline is unusable: %s", cause);
            free(cause);
            cause = NULL;
        }
    }
    rules_run(s, NULL, &f.config.rules, &findings);
    rc = status_of(&s->bench, &findings);
    if (refusal != NULL)
        cmd_error("bench", "%s", refusal_people);
    if (f.json) {
        print_json(&s->bench, &findings, rc);
    } else {
        struct bench_people people;

        if (detail_people == NULL && i18n_active())
            detail_people = bench_detail_l(s->bench.detail); /* a deadline's, else NULL */
        people = (struct bench_people){ detail_people, note_people };

        print_text(&s->bench, &findings, &people);
    }
    if (a.save && s->bench.state == BENCH_OK && saved == NULL) {
        cmd_error("bench", "--save: the state is off (--no-state, or state_dir 'off'): "
                           "no baseline saved");
        rc = EXIT_UNKNOWN;
    } else if (a.save && s->bench.state == BENCH_OK) {
        if (bench_baseline_save(s, f.state_dir, &cause) != 0) {
            cmd_error("bench", "--save: %s", cause);
            rc = EXIT_UNKNOWN;
        } else if (!f.json) {
            printf(_("saved as this node's baseline: %s\n"), saved);
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
    free(refusal_people);
    free(detail_people);
    free(note_people);
    free(cause);
    free(saved);
    findings_free(&findings);
    snapshot_free(s);
    cmd_front_free(&f);
    return rc;
}

static const struct cmd_option options[] = {
    { "quick", OPT_QUICK, no_argument, NULL, N_("short transfers and a 2 s load (default)") },
    { "full", OPT_FULL, no_argument, NULL, N_("larger transfers, more repetitions, a 30 s load") },
    { "gpus", OPT_GPUS, required_argument, "LIST",
      N_("measure these GPUs (NVML indices, \"0,2\")") },
    { "duration", OPT_DURATION, required_argument, "DUR",
      N_("sustained load on every GPU at once, in device time (\"10\", \"2m\")") },
    { "save", OPT_SAVE, no_argument, NULL,
      N_("keep the result as this node's baseline (docs/bench.md says where)") },
    { "compare", OPT_COMPARE, required_argument, "FILE",
      N_("compare with this baseline instead of the saved one") },
    { "force", OPT_FORCE, no_argument, NULL, N_("measure GPUs that other processes use too") },
    { "cuda-lib", OPT_CUDA_LIB, required_argument, "PATH",
      N_("CUDA driver library to load instead of libcuda.so.1") },
    { "deadline", OPT_DEADLINE, required_argument, "DUR",
      N_("end the CUDA worker after this long (a hang becomes a finding)") },
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
