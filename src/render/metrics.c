/*
 * The Prometheus renderer's course (metrics.h says what it renders): for each row of
 * metric_families[] (metrics-table.c), its samples from the source the row names, the GPU ones
 * in metrics-gpu.c, the check's and collection's in metrics-health.c, the kernel log's XID and
 * SXid counters and the GPUs' labels in metrics-memory.c (what an exporter remembers between
 * collections), gpudoctor's own cycle here; each family's HELP and TYPE once, before its samples.
 * The text itself: metrics-text.c.
 */
#include "render/metrics-internal.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Starts a sample line of the current family: name{base labels, extra labels}. */
void metrics_sample_begin(struct render *r, const struct metric_family *m, const char *base,
                          const char *extra)
{
    mbuf_str(&r->fam, m->name);
    if ((base == NULL || !*base) && (extra == NULL || !*extra)) {
        mbuf_add(&r->fam, " ", 1);
        return;
    }
    mbuf_add(&r->fam, "{", 1);
    if (base && *base)
        mbuf_str(&r->fam, base);
    if (extra && *extra) {
        if (base && *base)
            mbuf_add(&r->fam, ",", 1);
        mbuf_str(&r->fam, extra);
    }
    mbuf_add(&r->fam, "} ", 2);
}

void metrics_sample_u64(struct render *r, const struct metric_family *m, const char *base,
                        const char *extra, uint64_t v)
{
    metrics_sample_begin(r, m, base, extra);
    mbuf_u64(&r->fam, v);
    mbuf_add(&r->fam, "\n", 1);
}

static void render_family(struct render *r, const struct metric_family *m)
{
    const struct snapshot *s = r->s;
    const struct metrics_cycle *c = r->cyc;

    switch (m->source) {
    case MSRC_BUILD_INFO:
        metrics_sample_u64(r, m, "version=\"" GPUDOCTOR_VERSION "\"", NULL, 1);
        return;
    case MSRC_COLLECT_SECONDS:
        if (c->cycles == 0)
            return; /* before the first collection: none was timed */
        metrics_sample_begin(r, m, NULL, NULL);
        mbuf_seconds_ms(&r->fam, (int64_t)(c->duration_s * 1000.0 + 0.5));
        mbuf_add(&r->fam, "\n", 1);
        return;
    case MSRC_COLLECT_SUCCESS:
        if (c->cycles > 0) /* before the first collection none failed */
            metrics_sample_u64(r, m, NULL, NULL, c->success);
        return;
    case MSRC_COLLECT_CYCLES:
        metrics_sample_u64(r, m, NULL, NULL, c->cycles);
        return;
    case MSRC_COLLECT_TIME:
        if (c->completed_ms > 0) {
            metrics_sample_begin(r, m, NULL, NULL);
            mbuf_seconds_ms(&r->fam, c->completed_ms);
            mbuf_add(&r->fam, "\n", 1);
        }
        return;
    case MSRC_DATA_AGE:
        return; /* metrics_render_age(), at each scrape */
    case MSRC_BENCH_READ:
    case MSRC_BENCH_TIME:
    case MSRC_BENCH_HOST_COPY:
    case MSRC_BENCH_MEMORY:
    case MSRC_BENCH_FMA:
    case MSRC_BENCH_CHECKSUM:
    case MSRC_BENCH_P2P:
    case MSRC_BENCH_P2P_LATENCY:
        metrics_bench(r, m); /* a file of its own: shown even when the collection failed */
        return;
    default:
        break;
    }
    if (s == NULL)
        return; /* the collection failed: only its own health */
    switch (m->source) {
    case MSRC_COLLECTOR_UP:
        metrics_collectors(r, m, false);
        break;
    case MSRC_COLLECTOR_SECONDS:
        metrics_collectors(r, m, true);
        break;
    case MSRC_NVML_UP:
        if (s->nvml.attempted)
            metrics_sample_u64(r, m, NULL, NULL,
                               s->nvml.load_error == 0 && s->nvml.init_rc == 0 &&
                                   metrics_collector_up(s->collectors[COLLECTOR_NVML].state));
        break;
    case MSRC_NVML_DEVICES:
        if (s->nvml.attempted && s->nvml.init_rc == 0 && s->nvml.load_error == 0 &&
            s->nvml.device_count_rc == 0)
            metrics_sample_u64(r, m, NULL, NULL, s->nvml.device_count);
        break;
    case MSRC_PCI_GPUS:
        if (s->pcie.valid & (UINT64_C(1) << PCIE_I_GPUS))
            metrics_sample_u64(r, m, NULL, NULL, s->pcie.n_gpus);
        break;
    case MSRC_HOST_MEM_ERRORS:
        if (s->host.valid & (UINT64_C(1) << HOST_S_EDAC)) {
            metrics_sample_u64(r, m, NULL, "type=\"uncorrectable\"", s->host.mem_ue_count);
            metrics_sample_u64(r, m, NULL, "type=\"corrected\"", s->host.mem_ce_count);
        }
        break;
    case MSRC_DRIVER_INFO:
        metrics_driver_info(r, m);
        break;
    case MSRC_CHECK_STATUS:
        if (r->f)
            metrics_sample_u64(r, m, NULL, NULL, (uint64_t)c->check_status);
        break;
    case MSRC_FINDINGS:
        if (r->f)
            metrics_findings_count(r, m);
        break;
    case MSRC_FINDING:
        if (r->f)
            metrics_findings(r, m);
        break;
    case MSRC_FINDING_ACK:
        if (r->f)
            metrics_findings_acked(r, m);
        break;
    case MSRC_GPU_FIELD:
        metrics_gpu_field(r, m);
        break;
    case MSRC_GPU_UP:
        metrics_gpu_up(r, m);
        break;
    case MSRC_GPU_INFO:
        metrics_gpu_info(r, m);
        break;
    case MSRC_CLOCK_REASON:
        metrics_clock_reasons(r, m);
        break;
    case MSRC_GPU_PROCESSES:
        metrics_gpu_processes(r, m);
        break;
    case MSRC_XID:
        metrics_log_counts(r, m, METRICS_LOG_XID);
        break;
    case MSRC_PROC_MEMORY:
        metrics_proc_memory(r, m, false);
        break;
    case MSRC_PROC_DROPPED:
        metrics_proc_memory(r, m, true);
        break;
    case MSRC_IB_PORT_ACTIVE:
    case MSRC_IB_PORT_RATE:
    case MSRC_IB_PORT_ERRORS:
    case MSRC_IB_PORT_RCV_BYTES:
    case MSRC_IB_PORT_XMIT_BYTES:
    case MSRC_IB_PEERMEM:
        metrics_ib(r, m);
        break;
    case MSRC_NVLINK_LINKS_ACTIVE:
    case MSRC_NVLINK_ACTIVE:
    case MSRC_NVLINK_ERRORS:
    case MSRC_NVLINK_DATA:
        metrics_nvlink(r, m);
        break;
    case MSRC_NVSWITCHES:
    case MSRC_NVSWITCH_BOUND:
    case MSRC_FM_RUNNING:
    case MSRC_FM_INFO:
    case MSRC_FM_LOG_ERRORS:
    case MSRC_SXID:
        metrics_fabric(r, m);
        break;
    default:
        break;
    }
}

static const char *type_name(enum metric_type t)
{
    return t == METRIC_COUNTER ? "counter" : "gauge";
}

/* Writes the family's header and samples to the output, when it has any. */
static void flush_family(struct render *r, const struct metric_family *head)
{
    if (r->fam.len == 0)
        return;
    mbuf_printf(&r->out, "# HELP %s ", head->name);
    mbuf_help(&r->out, head->help);
    mbuf_printf(&r->out, "\n# TYPE %s %s\n", head->name, type_name(head->type));
    mbuf_add(&r->out, r->fam.p, r->fam.len);
    r->fam.len = 0;
}

char *metrics_render(const struct snapshot *s, const struct findings *f,
                     const struct metrics_cycle *cyc, const struct metrics_opts *o, size_t *len)
{
    struct render r = { .s = s, .f = f, .cyc = cyc, .o = o, .mem = cyc->memory };
    struct metrics_memory once = { 0 };
    const struct metric_family *head = NULL;
    size_t n_gpus = s ? s->n_gpus : 0;

    if (r.mem == NULL) {
        metrics_memory_update(&once, s);
        r.mem = &once;
    }
    r.gpu_labels = xcalloc(n_gpus + 1, sizeof(*r.gpu_labels));
    for (size_t i = 0; i < n_gpus; i++)
        r.gpu_labels[i] = metrics_gpu_labels(&s->gpus[i], r.mem);
    mbuf_add(&r.out, "", 0);
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
    metrics_memory_free(&once);
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
