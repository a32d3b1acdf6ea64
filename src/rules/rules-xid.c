/*
 * XIDs: every Xid the kernel log holds for a GPU, classified by meaning and likely cause
 * (data/xid.tsv through src/data/xid.h) with NVIDIA's recommended action. One finding per GPU
 * and code. Xid 79 (fallen off the bus) is health.gpu-lost's.
 */
#include "data/xid.h"
#include "rules/rule-impl.h"
#include "util/xalloc.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define XID_FALLEN_OFF_BUS 79

/* The catalogue's severity for the code (gpudoctor's policy, docs/driver.md); an Xid the
 * catalogue does not know is a warning: something the driver reports that nobody documented. */
static enum severity xid_severity(const struct xid_info *x)
{
    if (x == NULL)
        return SEV_WARNING;
    switch (x->severity) {
    case XID_SEV_INFO:
        return SEV_INFO;
    case XID_SEV_CRITICAL:
        return SEV_CRITICAL;
    default:
        return SEV_WARNING;
    }
}

/* Where an event happened: the GPU by PCI address or UUID, else NULL. */
static const struct gpu_view *event_gpu(const struct rule_ctx *ctx, const struct klog_event *ev)
{
    const struct gpu_view *v = klog_gpu(ctx, ev->pci);

    for (size_t i = 0; v == NULL && ev->uuid && i < ctx->n_gpus; i++) {
        const struct gpu *g = ctx->gpus[i].g;

        if (gpu_valid(g, GPU_S_UUID) && g->uuid && strcmp(g->uuid, ev->uuid) == 0)
            v = &ctx->gpus[i];
    }
    return v;
}

static bool counts(const struct rule_ctx *ctx, const struct klog_event *ev)
{
    return ev->kind == KLOG_XID && (ev->valid & (UINT64_C(1) << KLOG_S_XID)) &&
           ev->xid != XID_FALLEN_OFF_BUS && klog_recent(ctx, ev);
}

static void action_fixes(struct finding *f, const struct xid_info *x, const struct gpu_view *v,
                         const struct klog_event *last)
{
    const char *act = x && x->immediate_action ? x->immediate_action : "";
    bool has_pid = (last->valid & (UINT64_C(1) << KLOG_S_PID)) && last->pid > 0;

    if (strncmp(act, "RESTART_APP", 11) == 0 || (x && x->category == XID_CAT_APPLICATION)) {
        if (has_pid)
            finding_fix(f,
                        "# restart the job that hit it (pid %d, %s) and check it for bugs "
                        "(compute-sanitizer finds bad memory accesses)",
                        (int)last->pid, last->name ? last->name : "?");
        else
            finding_fix(f, "# restart the job that hit it and check it for bugs "
                           "(compute-sanitizer finds bad memory accesses)");
    } else if (strncmp(act, "RESET_GPU", 9) == 0 || strncmp(act, "WORKFLOW_XID_48", 15) == 0) {
        if (v)
            finding_fix(f,
                        "sudo nvidia-smi -r -i %" PRIu32 "   # after draining its jobs: "
                        "reset the GPU",
                        v->g->index);
        else
            finding_fix(f, "# drain the GPU's jobs and reset it (nvidia-smi -r), or reboot");
    } else if (strncmp(act, "RESTART_BM", 10) == 0) {
        finding_fix(f, "sudo reboot   # NVIDIA: restart the node; drain it first");
    }
    if (x && x->investigatory_action && strstr(x->investigatory_action, "CONTACT_SUPPORT"))
        finding_fix(f, "sudo nvidia-bug-report.sh   # if it recurs: the report NVIDIA support "
                       "asks for");
    finding_fix(f, "sudo dmesg -T | grep -E 'NVRM: Xid' | tail -20   # the events, in order");
}

/* A counted Xid event with where it happened, resolved once. */
struct xev {
    size_t i;    /* position in driver.events: the log's order */
    int32_t gpu; /* snapshot GPU position, or -1 */
    const char *pci;
    int32_t xid;
};

static int cmp_xev(const void *a, const void *b)
{
    const struct xev *x = a, *y = b;
    int c;

    if (x->gpu != y->gpu)
        return x->gpu < y->gpu ? -1 : 1;
    if (x->gpu < 0 && (c = strcmp(x->pci ? x->pci : "", y->pci ? y->pci : "")) != 0)
        return c;
    if (x->xid != y->xid)
        return x->xid < y->xid ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

static bool same_group(const struct xev *a, const struct xev *b)
{
    return a->gpu == b->gpu && a->xid == b->xid &&
           (a->gpu >= 0 || strcmp(a->pci ? a->pci : "", b->pci ? b->pci : "") == 0);
}

/* One finding for the events evs[0..n) of one GPU and code, in log order. */
static void xid_finding(const struct rule_ctx *ctx, struct findings *out, const struct xev *evs,
                        size_t n)
{
    const struct klog_event *first = &ctx->snap->driver.events[evs[0].i];
    const struct klog_event *last = &ctx->snap->driver.events[evs[n - 1].i];
    const struct gpu_view *v = evs[0].gpu >= 0 ? &ctx->gpus[evs[0].gpu] : NULL;
    const struct xid_info *x = xid_lookup(first->xid);
    char when[32], times[32] = "";
    struct finding *f;

    f = finding_new(ctx, out, v ? (int32_t)v->g->index : -1, -1);
    if (v == NULL)
        finding_object(f, "%s", first->pci ? first->pci : "unknown GPU");
    f->severity = xid_severity(x);
    klog_when(when, sizeof(when), ctx, last);
    if (n > 1)
        snprintf(times, sizeof(times), " %zu times", n);
    if (v)
        finding_title(f, "GPU %" PRIu32 ": Xid %d (%s)%s, last %s", v->g->index, (int)first->xid,
                      x ? x->meaning : "not in the catalogue", times, when);
    else
        finding_title(f, "GPU at PCI %s: Xid %d (%s)%s, last %s", first->pci ? first->pci : "?",
                      (int)first->xid, x ? x->meaning : "not in the catalogue", times, when);
    if (x) {
        finding_evidence(f, "likely cause: %s (%s)", xid_category_label(x->category),
                         x->typical_cause);
        finding_evidence(f, "NVIDIA's action: %s", x->action);
    } else {
        finding_evidence(f,
                         "gpudoctor's catalogue does not list Xid %d: see NVIDIA's Xid "
                         "catalogue",
                         (int)first->xid);
    }
    for (size_t k = n > 3 ? n - 3 : 0; k < n; k++) { /* the latest three */
        const struct klog_event *e = &ctx->snap->driver.events[evs[k].i];

        klog_when(when, sizeof(when), ctx, e);
        finding_evidence(f, "kernel log %s: Xid %d%s%s%s%s", when, (int)e->xid, e->name ? ", " : "",
                         e->name ? e->name : "", e->message ? ": " : "",
                         e->message ? e->message : "");
    }
    action_fixes(f, x, v, last);
    f->impact = (f->severity == SEV_CRITICAL ? 1.0 : 0.3) + 0.01 * (double)n;
}

static void check_xid(const struct rule_ctx *ctx, struct findings *out)
{
    const struct driver_info *d = &ctx->snap->driver;
    struct xev *evs = xcalloc(d->n_events ? d->n_events : 1, sizeof(*evs));
    size_t n = 0;

    /* Where each event happened is resolved once; sorting groups them by GPU and code. */
    for (size_t i = 0; i < d->n_events; i++) {
        const struct gpu_view *v;

        if (!counts(ctx, &d->events[i]))
            continue;
        v = event_gpu(ctx, &d->events[i]);
        evs[n].i = i;
        evs[n].gpu = v ? (int32_t)(v - ctx->gpus) : -1;
        evs[n].pci = d->events[i].pci;
        evs[n].xid = d->events[i].xid;
        n++;
    }
    if (n > 1)
        qsort(evs, n, sizeof(*evs), cmp_xev);
    for (size_t start = 0, end; start < n; start = end) {
        for (end = start + 1; end < n && same_group(&evs[start], &evs[end]); end++)
            ;
        xid_finding(ctx, out, &evs[start], end - start);
    }
    free(evs);
    if (!(d->valid & (UINT64_C(1) << DRIVER_S_KLOG)) && d->n_events == 0)
        need_collector(ctx, out, COLLECTOR_KLOG);
}

const struct rule rule_health_xid = {
    .id = "health.xid",
    .severity = SEV_CRITICAL,
    .category = CAT_HEALTH,
    .title = "Xid errors in the kernel log",
    .explanation =
        "The NVIDIA driver reports GPU errors to the kernel log as 'NVRM: Xid (PCI:...): N, ...'. "
        "Each code has a meaning and a most likely cause: the application (13 graphics engine "
        "exception, 31 memory page fault: a bug or a killed job, the GPU is fine), the driver or "
        "firmware (119/120 GSP timeouts), GPU memory (48 double-bit ECC, 94/95 contained and "
        "uncontained errors, 63/64 retirement and remapping), the bus (32, 79), NVLink (74), or a "
        "consequence of an earlier error (45). The severity follows NVIDIA's recommended "
        "immediate action: restarting the application is a warning, resetting the GPU or "
        "rebooting is critical, codes NVIDIA says to ignore are information.",
    .detection = "kernel-log Xid events within klog_max_age_h, grouped by GPU (PCI address or "
                 "UUID) and code, looked up in the Xid catalogue (data/xid.tsv: NVIDIA's catalogue "
                 "and Xid listing). Xid 79 is reported by health.gpu-lost.",
    .fix = "Follow NVIDIA's action for the code (in the evidence): restart and debug the "
           "application for application errors; drain and reset the GPU (nvidia-smi -r) or "
           "reboot for driver, memory and bus errors; collect nvidia-bug-report.sh and contact "
           "support when they recur.",
    .thresholds = THRESHOLDS(TH_KLOG_MAX_AGE_H),
    .check = check_xid,
};
