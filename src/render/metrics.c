#include "render/metrics.h"
#include "util/xalloc.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* clang-format off */
#define G(name, type, field, labels, mul, div, help) \
    { name, type, MSRC_GPU_FIELD, field, labels, mul, div, GPU_LABELS, help }
#define S(name, type, source, label_doc, help) \
    { name, type, source, NULL, NULL, 1, 1, label_doc, help }
/* clang-format on */
#define GPU_LABELS "gpu, uuid, name"
#define GAUGE      METRIC_GAUGE
#define COUNTER    METRIC_COUNTER

/*
 * Rows with the same name must be adjacent (one family, HELP and TYPE once); they differ by
 * their constant labels. tests/unit/test-metrics.c checks that, and that every field exists.
 */
const struct metric_family metric_families[] = {
    S("gpudoctor_build_info", GAUGE, MSRC_BUILD_INFO, "version",
      "always 1; the gpudoctor version in a label"),
    S("gpudoctor_collect_duration_seconds", GAUGE, MSRC_COLLECT_SECONDS, "",
      "time the last collection cycle took (collectors, sampling window and rules)"),
    S("gpudoctor_collect_success", GAUGE, MSRC_COLLECT_SUCCESS, "",
      "1 when the last collection cycle produced a snapshot, else 0"),
    S("gpudoctor_collect_cycles_total", COUNTER, MSRC_COLLECT_CYCLES, "",
      "collection cycles completed since the exporter started"),
    S("gpudoctor_last_collect_timestamp_seconds", GAUGE, MSRC_COLLECT_TIME, "",
      "Unix time the last collection cycle completed (age = time() - this)"),
    S("gpudoctor_data_age_seconds", GAUGE, MSRC_DATA_AGE, "",
      "seconds since the last collection cycle completed, at the time of the scrape "
      "(serve only)"),
    S("gpudoctor_collector_up", GAUGE, MSRC_COLLECTOR_UP, "collector",
      "1 when the collector read everything or part of it, 0 when it failed, timed out or "
      "found nothing to read"),
    S("gpudoctor_collector_duration_seconds", GAUGE, MSRC_COLLECTOR_SECONDS, "collector",
      "time the collector took in the last cycle"),
    S("gpudoctor_nvml_up", GAUGE, MSRC_NVML_UP, "",
      "1 when NVML loaded, initialised and answered before its deadline"),
    S("gpudoctor_nvml_devices", GAUGE, MSRC_NVML_DEVICES, "", "GPUs NVML reports"),
    S("gpudoctor_pci_gpus", GAUGE, MSRC_PCI_GPUS, "",
      "NVIDIA GPUs on the PCI bus, with or without a driver"),
    S("gpudoctor_driver_info", GAUGE, MSRC_DRIVER_INFO,
      "driver_version, cuda_version, module_version",
      "always 1; the NVIDIA driver, the CUDA version it supports, and the kernel module"),
    S("gpudoctor_check_status", GAUGE, MSRC_CHECK_STATUS, "",
      "the verdict as `gpudoctor check` exits: 0 healthy, 1 warning, 2 critical, 3 could not "
      "check"),
    S("gpudoctor_findings", GAUGE, MSRC_FINDINGS, "severity",
      "findings of each severity (info, warning, critical)"),
    S("gpudoctor_finding", GAUGE, MSRC_FINDING, "id, severity, subject",
      "one series, value 1, per finding now (`gpudoctor explain ID` tells what it means); "
      "findings of one rule about one subject (two XIDs on one GPU) are one series, with the "
      "severity of the most serious, while `gpudoctor_findings` counts each"),

    S("gpudoctor_gpu_info", GAUGE, MSRC_GPU_INFO,
      GPU_LABELS ", pci_bus_id, serial, vbios_version, compute_capability",
      "always 1; the GPU's identity in labels (those NVML gave), for inventories and joins"),
    S("gpudoctor_gpu_up", GAUGE, MSRC_GPU_UP, GPU_LABELS,
      "1 when NVML answers for the GPU, 0 when it is lost or inaccessible"),
    G("gpudoctor_gpu_memory_total_bytes", GAUGE, "mem_total_bytes", NULL, 1, 1,
      "installed GPU memory"),
    G("gpudoctor_gpu_memory_reserved_bytes", GAUGE, "mem_reserved_bytes", NULL, 1, 1,
      "GPU memory reserved by the driver and firmware"),
    G("gpudoctor_gpu_memory_used_bytes", GAUGE, "mem_used_bytes", NULL, 1, 1,
      "GPU memory allocated by processes"),
    G("gpudoctor_gpu_memory_free_bytes", GAUGE, "mem_free_bytes", NULL, 1, 1, "GPU memory free"),
    G("gpudoctor_gpu_bar1_total_bytes", GAUGE, "bar1_total_bytes", NULL, 1, 1,
      "BAR1 aperture size"),
    G("gpudoctor_gpu_bar1_used_bytes", GAUGE, "bar1_used_bytes", NULL, 1, 1,
      "BAR1 aperture in use"),
    G("gpudoctor_gpu_utilization_ratio", GAUGE, "util_gpu_pct", NULL, 1, 100,
      "fraction of the last sample period a kernel was running (0-1)"),
    G("gpudoctor_gpu_memory_utilization_ratio", GAUGE, "util_mem_pct", NULL, 1, 100,
      "fraction of the last sample period memory was read or written (0-1)"),
    G("gpudoctor_gpu_encoder_utilization_ratio", GAUGE, "util_enc_pct", NULL, 1, 100,
      "video encoder utilisation (0-1)"),
    G("gpudoctor_gpu_decoder_utilization_ratio", GAUGE, "util_dec_pct", NULL, 1, 100,
      "video decoder utilisation (0-1)"),
    G("gpudoctor_gpu_temperature_celsius", GAUGE, "temp_c", NULL, 1, 1, "GPU core temperature"),
    G("gpudoctor_gpu_temperature_threshold_celsius", GAUGE, "temp_slowdown_c",
      "threshold=\"slowdown\"", 1, 1,
      "temperature thresholds: slowdown, shutdown, gpu_max and memory_max (operating limits)"),
    G("gpudoctor_gpu_temperature_threshold_celsius", GAUGE, "temp_shutdown_c",
      "threshold=\"shutdown\"", 1, 1, NULL),
    G("gpudoctor_gpu_temperature_threshold_celsius", GAUGE, "temp_gpu_max_c",
      "threshold=\"gpu_max\"", 1, 1, NULL),
    G("gpudoctor_gpu_temperature_threshold_celsius", GAUGE, "temp_mem_max_c",
      "threshold=\"memory_max\"", 1, 1, NULL),
    G("gpudoctor_gpu_power_watts", GAUGE, "power_mw", NULL, 1, 1000, "power draw"),
    G("gpudoctor_gpu_power_limit_watts", GAUGE, "power_limit_mw", "limit=\"current\"", 1, 1000,
      "power limits: current (set), default, enforced (after every limiter), min and max "
      "(settable range)"),
    G("gpudoctor_gpu_power_limit_watts", GAUGE, "power_default_limit_mw", "limit=\"default\"", 1,
      1000, NULL),
    G("gpudoctor_gpu_power_limit_watts", GAUGE, "power_enforced_limit_mw", "limit=\"enforced\"", 1,
      1000, NULL),
    G("gpudoctor_gpu_power_limit_watts", GAUGE, "power_min_limit_mw", "limit=\"min\"", 1, 1000,
      NULL),
    G("gpudoctor_gpu_power_limit_watts", GAUGE, "power_max_limit_mw", "limit=\"max\"", 1, 1000,
      NULL),
    G("gpudoctor_gpu_energy_joules_total", COUNTER, "energy_mj", NULL, 1, 1000,
      "energy used since the driver loaded"),
    G("gpudoctor_gpu_clock_hertz", GAUGE, "clock_graphics_mhz", "clock=\"graphics\"", 1000000, 1,
      "current clocks: graphics, sm, memory, video"),
    G("gpudoctor_gpu_clock_hertz", GAUGE, "clock_sm_mhz", "clock=\"sm\"", 1000000, 1, NULL),
    G("gpudoctor_gpu_clock_hertz", GAUGE, "clock_mem_mhz", "clock=\"memory\"", 1000000, 1, NULL),
    G("gpudoctor_gpu_clock_hertz", GAUGE, "clock_video_mhz", "clock=\"video\"", 1000000, 1, NULL),
    G("gpudoctor_gpu_clock_max_hertz", GAUGE, "clock_graphics_max_mhz", "clock=\"graphics\"",
      1000000, 1, "maximum clocks: graphics, sm, memory"),
    G("gpudoctor_gpu_clock_max_hertz", GAUGE, "clock_sm_max_mhz", "clock=\"sm\"", 1000000, 1, NULL),
    G("gpudoctor_gpu_clock_max_hertz", GAUGE, "clock_mem_max_mhz", "clock=\"memory\"", 1000000, 1,
      NULL),
    G("gpudoctor_gpu_clock_application_hertz", GAUGE, "clock_sm_app_mhz", "clock=\"sm\"", 1000000,
      1, "application clock targets: sm, memory"),
    G("gpudoctor_gpu_clock_application_hertz", GAUGE, "clock_mem_app_mhz", "clock=\"memory\"",
      1000000, 1, NULL),
    G("gpudoctor_gpu_clock_application_default_hertz", GAUGE, "clock_sm_app_default_mhz",
      "clock=\"sm\"", 1000000, 1, "default application clocks: sm, memory"),
    G("gpudoctor_gpu_clock_application_default_hertz", GAUGE, "clock_mem_app_default_mhz",
      "clock=\"memory\"", 1000000, 1, NULL),
    S("gpudoctor_gpu_clock_event_reason", GAUGE, MSRC_CLOCK_REASON, GPU_LABELS ", reason",
      "1 while this reason holds the clocks below maximum, 0 when it does not; one series per "
      "reason the GPU can report (gpu_idle, applications_clocks, sw_power_cap, hw_slowdown, "
      "sync_boost, sw_thermal, hw_thermal, hw_power_brake, display_clock)"),
    G("gpudoctor_gpu_performance_state", GAUGE, "pstate", NULL, 1, 1,
      "performance state, 0 (fastest) to 15; 32 unknown"),
    G("gpudoctor_gpu_fan_speed_ratio", GAUGE, "fan_speed_pct", NULL, 1, 100,
      "intended fan speed as a fraction of the maximum (may exceed 1)"),
    G("gpudoctor_gpu_persistence_mode", GAUGE, "persistence_mode", NULL, 1, 1,
      "1 when the driver stays loaded with no client"),
    G("gpudoctor_gpu_compute_mode", GAUGE, "compute_mode", "mode", 1, 1,
      "always 1; the compute mode in the mode label (default, exclusive_thread, prohibited, "
      "exclusive_process)"),
    G("gpudoctor_gpu_mig_mode", GAUGE, "mig_mode", NULL, 1, 1, "1 when MIG is enabled"),
    G("gpudoctor_gpu_mig_devices", GAUGE, "mig_devices", NULL, 1, 1, "MIG devices that exist"),
    G("gpudoctor_gpu_display_active", GAUGE, "display_active", NULL, 1, 1,
      "1 when a display is initialised on the GPU"),
    G("gpudoctor_gpu_ecc_mode", GAUGE, "ecc_mode", NULL, 1, 1, "1 when ECC is enabled"),
    G("gpudoctor_gpu_ecc_errors_total", COUNTER, "ecc_volatile_corrected",
      "type=\"corrected\",scope=\"volatile\"", 1, 1,
      "ECC errors: corrected or uncorrected, since the driver loaded (volatile) or over the "
      "GPU's life (aggregate)"),
    G("gpudoctor_gpu_ecc_errors_total", COUNTER, "ecc_volatile_uncorrected",
      "type=\"uncorrected\",scope=\"volatile\"", 1, 1, NULL),
    G("gpudoctor_gpu_ecc_errors_total", COUNTER, "ecc_aggregate_corrected",
      "type=\"corrected\",scope=\"aggregate\"", 1, 1, NULL),
    G("gpudoctor_gpu_ecc_errors_total", COUNTER, "ecc_aggregate_uncorrected",
      "type=\"uncorrected\",scope=\"aggregate\"", 1, 1, NULL),
    G("gpudoctor_gpu_retired_pages", GAUGE, "retired_pages_sbe", "cause=\"single_bit\"", 1, 1,
      "memory pages retired, by cause: repeated single-bit or double-bit errors"),
    G("gpudoctor_gpu_retired_pages", GAUGE, "retired_pages_dbe", "cause=\"double_bit\"", 1, 1,
      NULL),
    G("gpudoctor_gpu_retired_pages_pending", GAUGE, "retired_pages_pending", NULL, 1, 1,
      "1 when a page retirement waits for the next reset"),
    G("gpudoctor_gpu_remapped_rows", GAUGE, "remapped_rows_correctable", "cause=\"correctable\"", 1,
      1, "memory rows remapped, by the kind of error that caused it"),
    G("gpudoctor_gpu_remapped_rows", GAUGE, "remapped_rows_uncorrectable",
      "cause=\"uncorrectable\"", 1, 1, NULL),
    G("gpudoctor_gpu_remapped_rows_pending", GAUGE, "remapped_rows_pending", NULL, 1, 1,
      "1 when a row remap waits for the next GPU reset"),
    G("gpudoctor_gpu_remapped_rows_failure", GAUGE, "remapped_rows_failure", NULL, 1, 1,
      "1 when a row remap failed (the GPU needs service)"),
    G("gpudoctor_gpu_pcie_link_generation", GAUGE, "pcie_gen", NULL, 1, 1,
      "PCIe link generation now"),
    G("gpudoctor_gpu_pcie_link_generation_max", GAUGE, "pcie_gen_max", NULL, 1, 1,
      "highest PCIe generation the GPU and its slot allow"),
    G("gpudoctor_gpu_pcie_link_generation_gpu_max", GAUGE, "pcie_gen_gpu_max", NULL, 1, 1,
      "highest PCIe generation the GPU itself supports"),
    G("gpudoctor_gpu_pcie_link_width", GAUGE, "pcie_width", NULL, 1, 1, "PCIe lanes now"),
    G("gpudoctor_gpu_pcie_link_width_max", GAUGE, "pcie_width_max", NULL, 1, 1,
      "most PCIe lanes the GPU and its slot allow"),
    G("gpudoctor_gpu_pcie_throughput_bytes_per_second", GAUGE, "pcie_tx_bytes_per_s",
      "direction=\"tx\"", 1, 1, "PCIe throughput over NVML's 20 ms sample, tx and rx"),
    G("gpudoctor_gpu_pcie_throughput_bytes_per_second", GAUGE, "pcie_rx_bytes_per_s",
      "direction=\"rx\"", 1, 1, NULL),
    G("gpudoctor_gpu_pcie_replays_total", COUNTER, "pcie_replay_count", NULL, 1, 1,
      "PCIe replays (link-level retransmissions)"),
    S("gpudoctor_gpu_xid_errors_total", COUNTER, MSRC_XID, GPU_LABELS " (or pci), xid",
      "XID errors of the GPU in the kernel log, by XID code (the log since boot, as far as it "
      "reaches back)"),
    S("gpudoctor_gpu_processes", GAUGE, MSRC_GPU_PROCESSES, GPU_LABELS,
      "processes NVML lists on the GPU (compute, graphics, MPS)"),
    S("gpudoctor_process_gpu_memory_bytes", GAUGE, MSRC_PROC_MEMORY,
      "gpu, uuid, pid, command, user",
      "GPU memory a process holds; only the processes holding the most (serve --top-processes)"),
    S("gpudoctor_process_gpu_memory_omitted", GAUGE, MSRC_PROC_DROPPED, "",
      "GPU processes left out of gpudoctor_process_gpu_memory_bytes by --top-processes"),
};
#undef G
#undef S

const size_t n_metric_families = ARRAY_SIZE(metric_families);

/* ---- a growable text buffer ---- */

struct mbuf {
    char *p;
    size_t len, cap;
};

static void mb_add(struct mbuf *b, const char *s, size_t n)
{
    xgrow(&b->p, &b->cap, b->len + n + 1, 1);
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void mb_str(struct mbuf *b, const char *s)
{
    mb_add(b, s, strlen(s));
}

__attribute__((format(printf, 2, 3))) static void mb_printf(struct mbuf *b, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        fatal("vsnprintf failed");
    xgrow(&b->p, &b->cap, b->len + (size_t)n + 1, 1);
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

/* ---- label values ---- */

/* Length of the valid UTF-8 sequence at s (1-4), or 0 when it is not one. */
static size_t utf8_len(const unsigned char *s)
{
    if (s[0] < 0x80)
        return 1;
    if (s[0] >= 0xc2 && s[0] <= 0xdf)
        return (s[1] & 0xc0) == 0x80 ? 2 : 0;
    if (s[0] >= 0xe0 && s[0] <= 0xef) {
        if ((s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80)
            return 0;
        if ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0))
            return 0; /* overlong, or a UTF-16 surrogate */
        return 3;
    }
    if (s[0] >= 0xf0 && s[0] <= 0xf4) {
        if ((s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80 || (s[3] & 0xc0) != 0x80)
            return 0;
        if ((s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] >= 0x90))
            return 0;
        return 4;
    }
    return 0;
}

static void mb_escaped(struct mbuf *b, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;

    while (*p) {
        size_t n = utf8_len(p);

        if (*p == '\\')
            mb_add(b, "\\\\", 2);
        else if (*p == '"')
            mb_add(b, "\\\"", 2);
        else if (*p == '\n')
            mb_add(b, "\\n", 2);
        else if (n == 0)
            mb_add(b, "\xef\xbf\xbd", 3); /* U+FFFD for a byte that is not UTF-8 */
        else
            mb_add(b, (const char *)p, n);
        p += n ? n : 1;
    }
}

char *metrics_label_escape(const char *s)
{
    struct mbuf b = { 0 };

    mb_add(&b, "", 0);
    mb_escaped(&b, s);
    return b.p;
}

/* Appends `,key="value"` (or without the comma at the start of a label set). */
static void mb_label(struct mbuf *b, const char *key, const char *value)
{
    if (b->len > 0 && b->p[b->len - 1] != '{')
        mb_add(b, ",", 1);
    mb_str(b, key);
    mb_add(b, "=\"", 2);
    mb_escaped(b, value);
    mb_add(b, "\"", 1);
}

/* ---- values ---- */

/* A field's value as sign and magnitude, or a double; false when the type has no number. */
struct mval {
    bool neg, is_double;
    uint64_t mag;
    double d;
};

static bool field_number(const struct jfield *f, const void *obj, struct mval *v)
{
    const char *p = (const char *)obj + f->offset;
    int64_t i = 0;

    memset(v, 0, sizeof(*v));
    switch (f->type) {
    case JF_U32:
    case JF_HEX32:
        v->mag = *(const uint32_t *)p;
        return true;
    case JF_U64:
    case JF_HEX64:
        v->mag = *(const uint64_t *)p;
        return true;
    case JF_I32:
    case JF_ENUM:
        i = *(const int32_t *)p;
        break;
    case JF_I64:
        i = *(const int64_t *)p;
        break;
    case JF_BOOL:
        v->mag = *(const bool *)p ? 1 : 0;
        return true;
    case JF_DOUBLE:
        v->is_double = true;
        v->d = *(const double *)p;
        return true;
    default:
        return false;
    }
    v->neg = i < 0;
    v->mag = i < 0 ? (uint64_t)(-(i + 1)) + 1 : (uint64_t)i;
    return true;
}

/* Appends v * mul / div exactly: div is a power of ten, so the result is a finite decimal. */
static void mb_value(struct mbuf *b, const struct mval *v, uint32_t mul, uint32_t div)
{
    uint64_t m = v->mag, q, r;
    unsigned digits = 0;
    char frac[24];

    if (v->is_double || (mul > 1 && m > UINT64_MAX / mul)) {
        double d = v->is_double ? v->d : (double)m * (v->neg ? -1 : 1);

        mb_printf(b, "%.17g", d * mul / div);
        return;
    }
    m *= mul;
    q = m / div;
    r = m % div;
    for (uint32_t d = div; d > 1; d /= 10)
        digits++;
    mb_printf(b, "%s%" PRIu64, v->neg && m ? "-" : "", q);
    if (r == 0)
        return;
    snprintf(frac, sizeof(frac), "%0*" PRIu64, (int)digits, r);
    for (size_t n = strlen(frac); n > 0 && frac[n - 1] == '0'; n--)
        frac[n - 1] = '\0';
    mb_printf(b, ".%s", frac);
}

static void mb_u64(struct mbuf *b, uint64_t v)
{
    mb_printf(b, "%" PRIu64, v);
}

/* Seconds with millisecond precision (durations, ages, timestamps). */
static void mb_seconds_ms(struct mbuf *b, int64_t ms)
{
    struct mval v = { ms < 0, false, ms < 0 ? (uint64_t)(-ms) : (uint64_t)ms, 0 };

    mb_value(b, &v, 1, 1000);
}

/* ---- rendering ---- */

struct render {
    const struct snapshot *s;
    const struct findings *f;
    const struct metrics_cycle *cyc;
    const struct metrics_opts *o;
    char **gpu_labels; /* per GPU of s: gpu="0",uuid="...",name="..." */
    struct mbuf out;   /* the whole exposition */
    struct mbuf fam;   /* the samples of the family being rendered */
};

/* Starts a sample line of the current family: name{base labels, extra labels}. */
static void sample_begin(struct render *r, const struct metric_family *m, const char *base,
                         const char *extra)
{
    mb_str(&r->fam, m->name);
    if ((base == NULL || !*base) && (extra == NULL || !*extra)) {
        mb_add(&r->fam, " ", 1);
        return;
    }
    mb_add(&r->fam, "{", 1);
    if (base && *base)
        mb_str(&r->fam, base);
    if (extra && *extra) {
        if (base && *base)
            mb_add(&r->fam, ",", 1);
        mb_str(&r->fam, extra);
    }
    mb_add(&r->fam, "} ", 2);
}

static void sample_u64(struct render *r, const struct metric_family *m, const char *base,
                       const char *extra, uint64_t v)
{
    sample_begin(r, m, base, extra);
    mb_u64(&r->fam, v);
    mb_add(&r->fam, "\n", 1);
}

/* The GPU of the last sample with g's index: the freshest dynamic values. */
static const struct gpu *latest_gpu(const struct snapshot *s, const struct gpu *g)
{
    const struct sample *smp;

    if (s->n_samples == 0)
        return NULL;
    smp = &s->samples[s->n_samples - 1];
    for (size_t i = 0; i < smp->n_gpus; i++) {
        if (smp->gpus[i].index == g->index)
            return smp->gpus[i].handle_rc == 0 ? &smp->gpus[i] : NULL;
    }
    return NULL;
}

static void render_gpu_field(struct render *r, const struct metric_family *m)
{
    const struct jfield *f = jtable_find(&gpu_table, m->field);

    if (f == NULL)
        fatal("metric %s names unknown GPU field %s", m->name, m->field);
    for (size_t i = 0; i < r->s->n_gpus; i++) {
        const struct gpu *g = &r->s->gpus[i], *src = g, *last;
        struct mval v;

        if (g->handle_rc != 0)
            continue;
        last = latest_gpu(r->s, g);
        if ((f->flags & JF_DYNAMIC) && last != NULL && jfield_valid(&gpu_table, last, f))
            src = last;
        if (!jfield_valid(&gpu_table, src, f) || !field_number(f, src, &v))
            continue;
        if (f->type == JF_ENUM) {
            int32_t e = *(const int32_t *)((const char *)src + f->offset);
            size_t n = 0;
            struct mbuf lab = { 0 };

            while (f->enum_names[n])
                n++;
            if (e < 0 || (size_t)e >= n)
                continue;
            mb_add(&lab, "", 0);
            mb_label(&lab, m->labels, f->enum_names[e]);
            sample_u64(r, m, r->gpu_labels[i], lab.p, 1);
            free(lab.p);
            continue;
        }
        sample_begin(r, m, r->gpu_labels[i], m->labels);
        mb_value(&r->fam, &v, m->mul, m->div);
        mb_add(&r->fam, "\n", 1);
    }
}

static void render_gpu_up(struct render *r, const struct metric_family *m)
{
    for (size_t i = 0; i < r->s->n_gpus; i++) {
        const struct gpu *g = &r->s->gpus[i], *last = latest_gpu(r->s, g);
        bool up = g->handle_rc == 0;

        /* A GPU that fell off during the window has no answer in the last sample. */
        if (r->s->n_samples > 0 && last == NULL)
            up = false;
        sample_u64(r, m, r->gpu_labels[i], NULL, up);
    }
}

static void render_gpu_info(struct render *r, const struct metric_family *m)
{
    for (size_t i = 0; i < r->s->n_gpus; i++) {
        const struct gpu *g = &r->s->gpus[i];
        struct mbuf lab = { 0 };

        if (g->handle_rc != 0)
            continue;
        mb_add(&lab, "", 0);
        if (gpu_valid(g, GPU_S_PCI_BUS_ID) && g->pci_bus_id)
            mb_label(&lab, "pci_bus_id", g->pci_bus_id);
        if (gpu_valid(g, GPU_S_SERIAL) && g->serial)
            mb_label(&lab, "serial", g->serial);
        if (gpu_valid(g, GPU_S_VBIOS) && g->vbios_version)
            mb_label(&lab, "vbios_version", g->vbios_version);
        if (gpu_valid(g, GPU_S_CC_MAJOR) && gpu_valid(g, GPU_S_CC_MINOR)) {
            char cc[32];

            snprintf(cc, sizeof(cc), "%d.%d", (int)g->cc_major, (int)g->cc_minor);
            mb_label(&lab, "compute_capability", cc);
        }
        sample_u64(r, m, r->gpu_labels[i], lab.p, 1);
        free(lab.p);
    }
}

static void render_clock_reasons(struct render *r, const struct metric_family *m)
{
    for (size_t i = 0; i < r->s->n_gpus; i++) {
        const struct gpu *g = &r->s->gpus[i], *src = g, *last = latest_gpu(r->s, g);
        bool supported;

        if (g->handle_rc != 0)
            continue;
        if (last != NULL && gpu_valid(last, GPU_S_EVENT_REASONS))
            src = last;
        if (!gpu_valid(src, GPU_S_EVENT_REASONS))
            continue;
        supported = gpu_valid(g, GPU_S_EVENT_REASONS_SUPPORTED);
        for (size_t k = 0; k < n_clock_reasons; k++) {
            uint64_t bit = clock_reasons[k].bit;
            bool on = (src->clocks_event_reasons & bit) != 0;
            char label[64];

            if (supported && !(g->clocks_event_reasons_supported & bit) && !on)
                continue;
            snprintf(label, sizeof(label), "reason=\"%s\"", clock_reasons[k].name);
            sample_u64(r, m, r->gpu_labels[i], label, on);
        }
    }
}

static void render_gpu_processes(struct render *r, const struct metric_family *m)
{
    for (size_t i = 0; i < r->s->n_gpus; i++) {
        const struct gpu *g = &r->s->gpus[i];

        if (gpu_valid(g, GPU_S_PROCESSES))
            sample_u64(r, m, r->gpu_labels[i], NULL, g->n_procs);
    }
}

/* ---- XIDs by GPU and code ---- */

struct xid_count {
    long gpu; /* position in s->gpus, -1 when the address matches no GPU */
    const char *pci;
    int32_t xid;
    uint64_t n;
};

static long gpu_of_event(const struct snapshot *s, const struct klog_event *e)
{
    for (size_t i = 0; i < s->n_gpus; i++) {
        const struct gpu *g = &s->gpus[i];

        if (e->uuid && gpu_valid(g, GPU_S_UUID) && g->uuid && strcmp(e->uuid, g->uuid) == 0)
            return (long)i;
        if (e->pci && gpu_valid(g, GPU_S_PCI_BUS_ID) && g->pci_bus_id &&
            driver_pci_same(e->pci, g->pci_bus_id))
            return (long)i;
    }
    return -1;
}

static int cmp_xid(const void *a, const void *b)
{
    const struct xid_count *x = a, *y = b;
    int c;

    if (x->gpu != y->gpu)
        return x->gpu < 0 ? 1 : y->gpu < 0 ? -1 : (x->gpu > y->gpu) - (x->gpu < y->gpu);
    if (x->gpu < 0 && (c = strcmp(x->pci ? x->pci : "", y->pci ? y->pci : "")) != 0)
        return c;
    return (x->xid > y->xid) - (x->xid < y->xid);
}

static void render_xids(struct render *r, const struct metric_family *m)
{
    const struct driver_info *d = &r->s->driver;
    struct xid_count *c = NULL;
    size_t n = 0, cap = 0;

    for (size_t i = 0; i < d->n_events; i++) {
        const struct klog_event *e = &d->events[i];
        long gpu;
        size_t k;

        if (e->kind != KLOG_XID || !(e->valid & (UINT64_C(1) << KLOG_S_XID)))
            continue;
        gpu = gpu_of_event(r->s, e);
        if (gpu < 0 && e->pci == NULL)
            continue; /* nothing to label it with */
        for (k = 0; k < n; k++) {
            if (c[k].gpu == gpu && c[k].xid == e->xid &&
                (gpu >= 0 || strcmp(c[k].pci, e->pci) == 0))
                break;
        }
        if (k == n) {
            xgrow(&c, &cap, n + 1, sizeof(*c));
            c[n++] = (struct xid_count){ gpu, e->pci, e->xid, 0 };
        }
        c[k].n++;
    }
    if (n > 1)
        qsort(c, n, sizeof(*c), cmp_xid);
    for (size_t k = 0; k < n; k++) {
        struct mbuf lab = { 0 };

        mb_add(&lab, "", 0);
        if (c[k].gpu < 0)
            mb_label(&lab, "pci", c[k].pci);
        mb_printf(&lab, "%sxid=\"%d\"", lab.len ? "," : "", (int)c[k].xid);
        sample_u64(r, m, c[k].gpu >= 0 ? r->gpu_labels[c[k].gpu] : NULL, lab.p, c[k].n);
        free(lab.p);
    }
    free(c);
}

/* ---- per-process GPU memory, bounded ---- */

struct proc_mem {
    size_t gpu; /* position in s->gpus */
    const struct gpu_proc *p;
};

static int cmp_proc_mem(const void *a, const void *b)
{
    const struct proc_mem *x = a, *y = b;

    if (x->p->used_bytes != y->p->used_bytes)
        return x->p->used_bytes < y->p->used_bytes ? 1 : -1;
    if (x->gpu != y->gpu)
        return x->gpu < y->gpu ? -1 : 1;
    return (x->p->pid > y->p->pid) - (x->p->pid < y->p->pid);
}

/* Every (GPU, process) with a known memory figure, largest first; *n set. */
static struct proc_mem *proc_mem_list(const struct snapshot *s, size_t *n)
{
    struct proc_mem *list = NULL;
    size_t cap = 0;

    *n = 0;
    for (size_t i = 0; i < s->n_gpus; i++) {
        const struct gpu *g = &s->gpus[i];

        if (!gpu_valid(g, GPU_S_PROCESSES))
            continue;
        for (size_t k = 0; k < g->n_procs; k++) {
            if (!(g->procs[k].valid & (UINT64_C(1) << GPU_PROC_S_USED)))
                continue;
            xgrow(&list, &cap, *n + 1, sizeof(*list));
            list[(*n)++] = (struct proc_mem){ i, &g->procs[k] };
        }
    }
    if (*n > 1)
        qsort(list, *n, sizeof(*list), cmp_proc_mem);
    return list;
}

static void render_proc_memory(struct render *r, const struct metric_family *m, bool dropped)
{
    size_t n, top = r->o->top_processes;
    struct proc_mem *list = proc_mem_list(r->s, &n);

    if (dropped) {
        sample_u64(r, m, NULL, NULL, n > top ? n - top : 0);
        free(list);
        return;
    }
    for (size_t k = 0; k < n && k < top; k++) {
        const struct gpu *g = &r->s->gpus[list[k].gpu];
        const struct proc *p = proc_table_find(&r->s->procs, (int32_t)list[k].p->pid);
        struct mbuf lab = { 0 };
        char pid[16];

        mb_add(&lab, "", 0);
        mb_printf(&lab, "gpu=\"%u\"", (unsigned)g->index);
        if (gpu_valid(g, GPU_S_UUID) && g->uuid)
            mb_label(&lab, "uuid", g->uuid);
        snprintf(pid, sizeof(pid), "%u", (unsigned)list[k].p->pid);
        mb_label(&lab, "pid", pid);
        if (p && proc_has(p, PROC_S_COMM) && p->comm)
            mb_label(&lab, "command", p->comm);
        if (p && (p->valid & (UINT64_C(1) << PROC_S_USER_NAME)) && p->user)
            mb_label(&lab, "user", p->user);
        sample_u64(r, m, lab.p, NULL, list[k].p->used_bytes);
        free(lab.p);
    }
    free(list);
}

/* ---- findings ---- */

static void render_findings(struct render *r, const struct metric_family *m)
{
    char **keys = xcalloc(r->f->n + 1, sizeof(*keys));

    for (size_t i = 0; i < r->f->n; i++) {
        const struct finding *fi = &r->f->items[i];
        struct mbuf lab = { 0 };
        bool dup = false;

        keys[i] = subject_key(&fi->subject);
        /* Two findings of one rule about one subject would be one series twice. */
        for (size_t k = 0; k < i && !dup; k++)
            dup = r->f->items[k].rule == fi->rule && strcmp(keys[k], keys[i]) == 0;
        if (dup)
            continue;
        mb_add(&lab, "", 0);
        mb_label(&lab, "id", fi->rule->id);
        mb_label(&lab, "severity", severity_names[fi->severity]);
        mb_label(&lab, "subject", keys[i]);
        sample_u64(r, m, lab.p, NULL, 1);
        free(lab.p);
    }
    for (size_t i = 0; i < r->f->n; i++)
        free(keys[i]);
    free(keys);
}

static void render_findings_count(struct render *r, const struct metric_family *m)
{
    for (int sev = SEV_INFO; sev <= SEV_CRITICAL; sev++) {
        char label[40];

        snprintf(label, sizeof(label), "severity=\"%s\"", severity_names[sev]);
        sample_u64(r, m, NULL, label, findings_count(r->f, (enum severity)sev));
    }
}

/* ---- collection health ---- */

static bool collector_up(enum collector_state st)
{
    return st == CS_OK || st == CS_PARTIAL;
}

static void render_collectors(struct render *r, const struct metric_family *m, bool seconds)
{
    for (size_t i = 0; i < COLLECTOR__COUNT; i++) {
        const struct collector_status *c = &r->s->collectors[i];
        char label[64];

        if (c->state == CS_NOT_RUN)
            continue;
        snprintf(label, sizeof(label), "collector=\"%s\"", collector_names[i]);
        if (seconds) {
            struct mval v = { false, false, (uint64_t)(c->elapsed_us > 0 ? c->elapsed_us : 0), 0 };

            sample_begin(r, m, NULL, label);
            mb_value(&r->fam, &v, 1, 1000000);
            mb_add(&r->fam, "\n", 1);
        } else {
            sample_u64(r, m, NULL, label, collector_up(c->state));
        }
    }
}

static void render_driver_info(struct render *r, const struct metric_family *m)
{
    const struct nvml_system *n = &r->s->nvml;
    struct mbuf lab = { 0 };
    char cuda[32];

    mb_add(&lab, "", 0);
    if (n->driver_version_rc == 0 && n->driver_version)
        mb_label(&lab, "driver_version", n->driver_version);
    if (n->cuda_driver_version_rc == 0 && n->cuda_driver_version > 0) {
        snprintf(cuda, sizeof(cuda), "%d.%d", (int)(n->cuda_driver_version / 1000),
                 (int)(n->cuda_driver_version % 1000 / 10));
        mb_label(&lab, "cuda_version", cuda);
    }
    if ((r->s->driver.valid & (UINT64_C(1) << DRIVER_S_MODULE)) && r->s->driver.module_version)
        mb_label(&lab, "module_version", r->s->driver.module_version);
    if (lab.len > 0)
        sample_u64(r, m, lab.p, NULL, 1);
    free(lab.p);
}

static void render_family(struct render *r, const struct metric_family *m)
{
    const struct snapshot *s = r->s;
    const struct metrics_cycle *c = r->cyc;

    switch (m->source) {
    case MSRC_BUILD_INFO:
        sample_u64(r, m, "version=\"" GPUDOCTOR_VERSION "\"", NULL, 1);
        return;
    case MSRC_COLLECT_SECONDS:
        sample_begin(r, m, NULL, NULL);
        mb_seconds_ms(&r->fam, (int64_t)(c->duration_s * 1000.0 + 0.5));
        mb_add(&r->fam, "\n", 1);
        return;
    case MSRC_COLLECT_SUCCESS:
        sample_u64(r, m, NULL, NULL, c->success);
        return;
    case MSRC_COLLECT_CYCLES:
        sample_u64(r, m, NULL, NULL, c->cycles);
        return;
    case MSRC_COLLECT_TIME:
        if (c->completed_ms > 0) {
            sample_begin(r, m, NULL, NULL);
            mb_seconds_ms(&r->fam, c->completed_ms);
            mb_add(&r->fam, "\n", 1);
        }
        return;
    case MSRC_DATA_AGE:
        return; /* metrics_render_age(), at each scrape */
    default:
        break;
    }
    if (s == NULL)
        return; /* the collection failed: only its own health */
    switch (m->source) {
    case MSRC_COLLECTOR_UP:
        render_collectors(r, m, false);
        break;
    case MSRC_COLLECTOR_SECONDS:
        render_collectors(r, m, true);
        break;
    case MSRC_NVML_UP:
        if (s->nvml.attempted)
            sample_u64(r, m, NULL, NULL,
                       s->nvml.load_error == 0 && s->nvml.init_rc == 0 &&
                           collector_up(s->collectors[COLLECTOR_NVML].state));
        break;
    case MSRC_NVML_DEVICES:
        if (s->nvml.attempted && s->nvml.init_rc == 0 && s->nvml.load_error == 0 &&
            s->nvml.device_count_rc == 0)
            sample_u64(r, m, NULL, NULL, s->nvml.device_count);
        break;
    case MSRC_PCI_GPUS:
        if (s->pcie.valid & (UINT64_C(1) << PCIE_I_GPUS))
            sample_u64(r, m, NULL, NULL, s->pcie.n_gpus);
        break;
    case MSRC_DRIVER_INFO:
        render_driver_info(r, m);
        break;
    case MSRC_CHECK_STATUS:
        if (r->f)
            sample_u64(r, m, NULL, NULL, (uint64_t)c->check_status);
        break;
    case MSRC_FINDINGS:
        if (r->f)
            render_findings_count(r, m);
        break;
    case MSRC_FINDING:
        if (r->f)
            render_findings(r, m);
        break;
    case MSRC_GPU_FIELD:
        render_gpu_field(r, m);
        break;
    case MSRC_GPU_UP:
        render_gpu_up(r, m);
        break;
    case MSRC_GPU_INFO:
        render_gpu_info(r, m);
        break;
    case MSRC_CLOCK_REASON:
        render_clock_reasons(r, m);
        break;
    case MSRC_GPU_PROCESSES:
        render_gpu_processes(r, m);
        break;
    case MSRC_XID:
        render_xids(r, m);
        break;
    case MSRC_PROC_MEMORY:
        render_proc_memory(r, m, false);
        break;
    case MSRC_PROC_DROPPED:
        render_proc_memory(r, m, true);
        break;
    default:
        break;
    }
}

static const char *type_name(enum metric_type t)
{
    return t == METRIC_COUNTER ? "counter" : "gauge";
}

/* HELP text: backslash and newline escaped. */
static void mb_help(struct mbuf *b, const char *s)
{
    for (; *s; s++) {
        if (*s == '\\')
            mb_add(b, "\\\\", 2);
        else if (*s == '\n')
            mb_add(b, "\\n", 2);
        else
            mb_add(b, s, 1);
    }
}

/* Writes the family's header and samples to the output, when it has any. */
static void flush_family(struct render *r, const struct metric_family *head)
{
    if (r->fam.len == 0)
        return;
    mb_printf(&r->out, "# HELP %s ", head->name);
    mb_help(&r->out, head->help);
    mb_printf(&r->out, "\n# TYPE %s %s\n", head->name, type_name(head->type));
    mb_add(&r->out, r->fam.p, r->fam.len);
    r->fam.len = 0;
}

static char *gpu_labels(const struct gpu *g)
{
    struct mbuf b = { 0 };

    mb_printf(&b, "gpu=\"%u\"", (unsigned)g->index);
    if (g->handle_rc == 0 && gpu_valid(g, GPU_S_UUID) && g->uuid)
        mb_label(&b, "uuid", g->uuid);
    if (g->handle_rc == 0 && gpu_valid(g, GPU_S_NAME) && g->name)
        mb_label(&b, "name", g->name);
    return b.p;
}

char *metrics_render(const struct snapshot *s, const struct findings *f,
                     const struct metrics_cycle *cyc, const struct metrics_opts *o, size_t *len)
{
    struct render r = { .s = s, .f = f, .cyc = cyc, .o = o };
    const struct metric_family *head = NULL;
    size_t n_gpus = s ? s->n_gpus : 0;

    r.gpu_labels = xcalloc(n_gpus + 1, sizeof(*r.gpu_labels));
    for (size_t i = 0; i < n_gpus; i++)
        r.gpu_labels[i] = gpu_labels(&s->gpus[i]);
    mb_add(&r.out, "", 0);
    for (size_t i = 0; i < n_metric_families; i++) {
        const struct metric_family *m = &metric_families[i];

        if (head != NULL && strcmp(head->name, m->name) != 0) {
            flush_family(&r, head);
            head = NULL;
        }
        if (head == NULL)
            head = m;
        render_family(&r, m);
    }
    if (head != NULL)
        flush_family(&r, head);
    for (size_t i = 0; i < n_gpus; i++)
        free(r.gpu_labels[i]);
    free(r.gpu_labels);
    free(r.fam.p);
    if (len)
        *len = r.out.len;
    return r.out.p;
}

size_t metrics_render_age(char *buf, size_t size, double age_s)
{
    const struct metric_family *m = NULL;
    int n;

    for (size_t i = 0; i < n_metric_families && m == NULL; i++) {
        if (metric_families[i].source == MSRC_DATA_AGE)
            m = &metric_families[i];
    }
    if (m == NULL)
        fatal("no data age metric in the table");
    if (age_s < 0)
        age_s = 0;
    /* The table's HELP has no backslash or newline to escape. */
    n = snprintf(buf, size, "# HELP %s %s\n# TYPE %s gauge\n%s %.3f\n", m->name, m->help, m->name,
                 m->name, age_s);
    if (n < 0)
        return 0;
    return (size_t)n < size ? (size_t)n : size ? size - 1 : 0;
}

void metrics_describe(FILE *out)
{
    fputs("| metric | type | labels | meaning | source |\n|---|---|---|---|---|\n", out);
    for (size_t i = 0; i < n_metric_families; i++) {
        const struct metric_family *m = &metric_families[i];
        const struct jfield *f;

        if (i > 0 && strcmp(metric_families[i - 1].name, m->name) == 0)
            continue; /* one row per family */
        fprintf(out, "| `%s` | %s | %s | %s | ", m->name, type_name(m->type),
                m->label_doc && *m->label_doc ? m->label_doc : "", m->help);
        if (m->source != MSRC_GPU_FIELD) {
            fputs("|\n", out);
            continue;
        }
        /* Every field of the family, with its conversion. */
        for (size_t k = i; k < n_metric_families && strcmp(metric_families[k].name, m->name) == 0;
             k++) {
            const struct metric_family *row = &metric_families[k];

            f = jtable_find(&gpu_table, row->field);
            fprintf(out, "%s`%s`", k > i ? "; " : "", row->field);
            if (row->labels && f && f->type != JF_ENUM)
                fprintf(out, " (%s)", row->labels);
            if (row->mul != 1)
                fprintf(out, " ×%u", (unsigned)row->mul);
            if (row->div != 1)
                fprintf(out, " ÷%u", (unsigned)row->div);
            if (k == i && f && f->source)
                fprintf(out, " from %s", f->source);
        }
        fputs(" |\n", out);
    }
}
