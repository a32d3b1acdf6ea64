/*
 * watch --plain: one line per GPU per interval, for logs and pipes, like `nvidia-smi dmon` plus
 * its NVLinks and the ids of the findings active on that GPU (and those about the whole host),
 * then one line per InfiniBand / RoCE port ("ib" where a GPU line has its index). Each line is
 * flushed as it is written; a closed pipe ends watch quietly. Alerts that fire or clear, and a
 * collection that failed, are comment lines starting with '#'.
 */
#include "nvml/nvml-abi.h"
#include "render/text.h"
#include "util/timeutil.h"
#include "util/xalloc.h"
#include "watch/watch.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define GIB (1024.0 * 1024.0 * 1024.0)

struct plain {
    FILE *out;
    size_t header_gpus;  /* GPUs of the last header; SIZE_MAX before the first */
    size_t header_ports; /* the same for the InfiniBand ports' header */
    int failed;          /* what draw returns once the output failed: -1 gone, -2 not writable */
};

/* The reasons, most serious first; idle is not throttling, shown by the view only. */
static const struct {
    uint64_t bit;
    const char *code;
} reason_codes[] = {
    { NVML_CLOCKS_EVENT_HW_THERMAL, "hwthermal" }, { NVML_CLOCKS_EVENT_HW_POWER_BRAKE, "brake" },
    { NVML_CLOCKS_EVENT_HW_SLOWDOWN, "hwslow" },   { NVML_CLOCKS_EVENT_SW_THERMAL, "thermal" },
    { NVML_CLOCKS_EVENT_SW_POWER_CAP, "pcap" },    { NVML_CLOCKS_EVENT_GPU_IDLE, "idle" },
};

void watch_reason_codes(char *buf, size_t size, const struct gpu *g, bool with_idle)
{
    size_t len = 0;

    buf[0] = '\0';
    if (g->handle_rc != 0) {
        snprintf(buf, size, "lost");
        return;
    }
    if (!gpu_valid(g, GPU_S_EVENT_REASONS)) {
        snprintf(buf, size, "?");
        return;
    }
    for (size_t i = 0; i < ARRAY_SIZE(reason_codes) && len < size; i++) {
        if ((g->clocks_event_reasons & reason_codes[i].bit) &&
            (with_idle || reason_codes[i].bit != NVML_CLOCKS_EVENT_GPU_IDLE))
            len += (size_t)snprintf(buf + len, size - len, "%s%s", len ? "," : "",
                                    reason_codes[i].code);
    }
    if (len == 0)
        snprintf(buf, size, "-");
}

static void now_utc(char *buf, size_t size)
{
    time_t t = (time_t)(time_real_ms() / 1000);
    struct tm tm;

    gmtime_r(&t, &tm);
    strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void header(struct plain *p)
{
    fprintf(p->out, "#%-20s %3s %4s %4s %8s %4s %5s %5s %6s %-17s %6s %7s %6s %s\n", "time", "gpu",
            "util", "mem", "memused", "temp", "power", "smclk", "memclk", "throttle", "nvlink",
            "nvdata", "nverr", "findings");
    fprintf(p->out, "#%-20s %3s %4s %4s %8s %4s %5s %5s %6s %-17s %6s %7s %6s %s\n", "UTC", "idx",
            "%", "%", "GiB", "C", "W", "MHz", "MHz", "reasons", "up/all", "GiB/s", "new", "ids");
}

static void ports_header(struct plain *p)
{
    fprintf(p->out, "#%-20s %3s %-12s %-8s %5s %7s %7s %6s\n", "time", "", "port", "state", "rate",
            "rxdata", "txdata", "errors");
    fprintf(p->out, "#%-20s %3s %-12s %-8s %5s %7s %7s %6s\n", "UTC", "", "device/port", "", "Gb/s",
            "GiB/s", "GiB/s", "new");
}

/* A number with that many decimals, or "-" when the field is not valid. */
static void cell(char *buf, size_t size, bool ok, int decimals, double v)
{
    if (ok)
        snprintf(buf, size, "%.*f", decimals, v);
    else
        snprintf(buf, size, "-");
}

static bool about(const struct finding *x, uint32_t gpu)
{
    return x->subject.gpu_index < 0 || (uint32_t)x->subject.gpu_index == gpu;
}

/*
 * "mem.leak[4121],clock.power-cap": findings about this GPU and those about no GPU, each id once
 * (two XIDs on one GPU are two health.xid findings, one entry here); an acknowledged one
 * (`gpudoctor ack`) is followed by "(ack)", and listed so only when every finding of its entry is.
 */
/* Whether y is listed in the same entry as x on this GPU's line. */
static bool same_entry(const struct finding *y, const struct finding *x, uint32_t gpu)
{
    return about(y, gpu) && y->rule == x->rule && y->subject.pid == x->subject.pid;
}

static void finding_ids(char *buf, size_t size, const struct findings *f, uint32_t gpu)
{
    size_t len = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < f->n && len < size; i++) {
        const struct finding *x = &f->items[i];
        bool seen = false, acked = true;

        if (!about(x, gpu))
            continue;
        for (size_t k = 0; k < i && !seen; k++)
            seen = same_entry(&f->items[k], x, gpu);
        if (seen)
            continue;
        for (size_t k = i; k < f->n; k++)
            acked = acked && (f->items[k].ack != NULL || !same_entry(&f->items[k], x, gpu));
        if (x->subject.pid >= 0)
            len += (size_t)snprintf(buf + len, size - len, "%s%s[%d]%s", len ? "," : "",
                                    x->rule->id, (int)x->subject.pid, acked ? "(ack)" : "");
        else
            len += (size_t)snprintf(buf + len, size - len, "%s%s%s", len ? "," : "", x->rule->id,
                                    acked ? "(ack)" : "");
    }
    if (len == 0)
        snprintf(buf, size, "-");
}

/* "+3", or "-" when not known. */
static void new_count(char *buf, size_t size, bool known, uint64_t n)
{
    if (known)
        snprintf(buf, size, "+%" PRIu64, n);
    else
        snprintf(buf, size, "-");
}

static void gpu_line(struct plain *p, const char *when, const struct watch_view *v,
                     const struct gpu *g)
{
    const struct gpu *st = snapshot_gpu(v->snap, g->index);
    char util[16], mem[16], used[16], temp[16], power[16], sm[16], memclk[16], thr[64];
    char links[32] = "-", data[24] = "-", errs[24] = "-", ids[1024];
    bool total = st && gpu_valid(st, GPU_S_MEM_TOTAL) && st->mem_total_bytes > 0;
    struct watch_nvlink nv;

    cell(util, sizeof(util), gpu_valid(g, GPU_S_UTIL_GPU), 0, g->util_gpu_pct);
    cell(mem, sizeof(mem), total && gpu_valid(g, GPU_S_MEM_USED), 0,
         total ? (double)g->mem_used_bytes * 100.0 / (double)st->mem_total_bytes : 0);
    cell(used, sizeof(used), gpu_valid(g, GPU_S_MEM_USED), 1,
         (double)g->mem_used_bytes / (1024.0 * 1024.0 * 1024.0));
    cell(temp, sizeof(temp), gpu_valid(g, GPU_S_TEMP), 0, g->temp_c);
    cell(power, sizeof(power), gpu_valid(g, GPU_S_POWER), 0, g->power_mw / 1000.0);
    cell(sm, sizeof(sm), gpu_valid(g, GPU_S_CLOCK_SM), 0, g->clock_sm_mhz);
    cell(memclk, sizeof(memclk), gpu_valid(g, GPU_S_CLOCK_MEM), 0, g->clock_mem_mhz);
    watch_reason_codes(thr, sizeof(thr), g, false);
    if (watch_nvlink_of(v->hist, g->index, &nv)) {
        snprintf(links, sizeof(links), "%zu/%zu", nv.up, nv.known);
        cell(data, sizeof(data), nv.traffic_known, 1, nv.bytes_per_s / GIB);
        new_count(errs, sizeof(errs), nv.errors_known, nv.errors);
    }
    finding_ids(ids, sizeof(ids), v->findings, g->index);
    fprintf(p->out, " %-20s %3" PRIu32 " %4s %4s %8s %4s %5s %5s %6s %-17s %6s %7s %6s %s\n", when,
            g->index, util, mem, used, temp, power, sm, memclk, thr, links, data, errs, ids);
}

/* One InfiniBand / RoCE port: its state, rate, traffic and new errors over the window. */
static void port_line(struct plain *p, const char *when, const struct snapshot *s,
                      const struct ib_port *port)
{
    char name[160], rate[16], rx[24], tx[24], errs[24];
    struct watch_ib ib;

    watch_ib_port(s, port, &ib);
    /* The device name is the kernel's; a space in it would shift every column after it. */
    snprintf(name, sizeof(name), "%s/%" PRIu32, port->device ? port->device : "?", port->port);
    for (char *c = name; *c; c++)
        *c = (*c <= ' ' || *c == 0x7f) ? '_' : *c;
    cell(rate, sizeof(rate), ib_port_valid(port, IB_S_RATE), 0, port->rate_gbps);
    cell(rx, sizeof(rx), ib.traffic_known, 1, ib.rx_bytes_per_s / GIB);
    cell(tx, sizeof(tx), ib.traffic_known, 1, ib.tx_bytes_per_s / GIB);
    new_count(errs, sizeof(errs), ib.errors_known, ib.errors);
    fprintf(p->out, " %-20s %3s %-12s %-8s %5s %7s %7s %6s\n", when, "ib", name,
            ib_port_valid(port, IB_S_STATE) && port->state_name ? port->state_name : "?", rate, rx,
            tx, errs);
}

static int finish(struct plain *p)
{
    if (fflush(p->out) == 0 && !ferror(p->out))
        return 0;
    /* A reader that went away (| head) is the normal end of a pipe, not an error. */
    if (errno == EPIPE)
        return p->failed = -1;
    fprintf(stderr, "gpudoctor watch: cannot write to standard output: %s\n", strerror(errno));
    return p->failed = -2;
}

static int draw(struct watch_ui *ui, const struct watch_view *v)
{
    struct plain *p = ui->state;
    const struct sample *last;
    char when[32];

    if (p->failed)
        return p->failed;
    now_utc(when, sizeof(when));
    if (v->problem != NULL)
        fprintf(p->out, "# %s collection failed: %s\n", when, v->problem);
    for (size_t i = 0; v->events && i < v->events->n; i++) {
        const struct alert_event *e = &v->events->items[i];

        fprintf(p->out, "# %s alert %s %s %s: %s\n", when, e->firing ? "firing" : "cleared", e->id,
                e->subject, e->title);
    }
    if (v->alert_error != NULL)
        fprintf(p->out, "# %s alert command: %s\n", when, v->alert_error);
    if (v->snap == NULL || v->hist->n == 0)
        return finish(p);
    last = &v->hist->samples[v->hist->n - 1];
    if (last->n_gpus == 0) {
        char *verdict = render_verdict(v->snap, v->findings, true);

        fprintf(p->out, "# %s no GPU: %s\n", when, verdict);
        free(verdict);
        return finish(p);
    }
    if (p->header_gpus != last->n_gpus) {
        header(p);
        p->header_gpus = last->n_gpus;
    }
    /* Each line flushed as written: a reader (tail -f, a log shipper) sees whole lines now. */
    for (size_t i = 0; i < last->n_gpus; i++) {
        gpu_line(p, when, v, &last->gpus[i]);
        if (finish(p) != 0)
            return p->failed;
    }
    if (v->snap->ib.n_ports > 0 && p->header_ports != v->snap->ib.n_ports) {
        ports_header(p);
        p->header_ports = v->snap->ib.n_ports;
    }
    for (size_t i = 0; i < v->snap->ib.n_ports; i++) {
        port_line(p, when, v->snap, &v->snap->ib.ports[i]);
        if (finish(p) != 0)
            return p->failed;
    }
    return 0;
}

static enum watch_input input(struct watch_ui *ui, const struct watch_view *v)
{
    (void)ui;
    (void)v;
    return WATCH_CONTINUE;
}

static void resize(struct watch_ui *ui, const struct watch_view *v)
{
    (void)ui;
    (void)v;
}

static void stop(struct watch_ui *ui)
{
    free(ui->state);
    ui->state = NULL;
}

int watch_plain_start(struct watch_ui *ui, const struct watch_opts *o, char **cause)
{
    struct plain *p = xcalloc(1, sizeof(*p));

    (void)o;
    (void)cause;
    p->out = stdout;
    p->header_gpus = SIZE_MAX;
    p->header_ports = SIZE_MAX;
    ui->input_fd = -1;
    ui->state = p;
    ui->draw = draw;
    ui->input = input;
    ui->resize = resize;
    ui->stop = stop;
    return 0;
}
