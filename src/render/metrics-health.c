/*
 * The metric families about the check and the collection: one series per finding and the count
 * by severity, each collector's state and time, and the driver's versions.
 */
#include "render/metrics-internal.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void metrics_findings(struct render *r, const struct metric_family *m)
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
        mbuf_add(&lab, "", 0);
        mbuf_label(&lab, "id", fi->rule->id);
        mbuf_label(&lab, "severity", severity_names[fi->severity]);
        mbuf_label(&lab, "subject", keys[i]);
        metrics_sample_u64(r, m, lab.p, NULL, 1);
        free(lab.p);
    }
    for (size_t i = 0; i < r->f->n; i++)
        free(keys[i]);
    free(keys);
}

/* One series per acknowledged finding (gpudoctor ack), one per rule and subject. */
void metrics_findings_acked(struct render *r, const struct metric_family *m)
{
    for (size_t i = 0; i < r->f->n; i++) {
        const struct finding *fi = &r->f->items[i];
        struct mbuf lab = { 0 };
        char *key;
        bool dup = false;

        if (fi->ack == NULL)
            continue;
        key = subject_key(&fi->subject);
        for (size_t k = 0; k < i && !dup; k++) {
            char *other = r->f->items[k].ack ? subject_key(&r->f->items[k].subject) : NULL;

            dup = other && r->f->items[k].rule == fi->rule && strcmp(other, key) == 0;
            free(other);
        }
        if (!dup) {
            mbuf_add(&lab, "", 0);
            mbuf_label(&lab, "id", fi->rule->id);
            mbuf_label(&lab, "subject", key);
            metrics_sample_u64(r, m, lab.p, NULL, 1);
            free(lab.p);
        }
        free(key);
    }
}

void metrics_findings_count(struct render *r, const struct metric_family *m)
{
    for (int sev = SEV_INFO; sev <= SEV_CRITICAL; sev++) {
        char label[40];

        snprintf(label, sizeof(label), "severity=\"%s\"", severity_names[sev]);
        metrics_sample_u64(r, m, NULL, label, findings_count(r->f, (enum severity)sev));
    }
}

bool metrics_collector_up(enum collector_state st)
{
    return st == CS_OK || st == CS_PARTIAL;
}

void metrics_collectors(struct render *r, const struct metric_family *m, bool seconds)
{
    for (size_t i = 0; i < COLLECTOR__COUNT; i++) {
        const struct collector_status *c = &r->s->collectors[i];
        char label[64];

        if (c->state == CS_NOT_RUN)
            continue;
        snprintf(label, sizeof(label), "collector=\"%s\"", collector_names[i]);
        if (seconds) {
            struct mval v = { false, false, (uint64_t)(c->elapsed_us > 0 ? c->elapsed_us : 0), 0 };

            metrics_sample_begin(r, m, NULL, label);
            mbuf_value(&r->fam, &v, 1, 1000000);
            mbuf_add(&r->fam, "\n", 1);
        } else {
            metrics_sample_u64(r, m, NULL, label, metrics_collector_up(c->state));
        }
    }
}

void metrics_driver_info(struct render *r, const struct metric_family *m)
{
    const struct nvml_system *n = &r->s->nvml;
    struct mbuf lab = { 0 };
    char cuda[32];

    mbuf_add(&lab, "", 0);
    if (n->driver_version_rc == 0 && n->driver_version)
        mbuf_label(&lab, "driver_version", n->driver_version);
    if (n->cuda_driver_version_rc == 0 && n->cuda_driver_version > 0) {
        snprintf(cuda, sizeof(cuda), "%d.%d", (int)(n->cuda_driver_version / 1000),
                 (int)(n->cuda_driver_version % 1000 / 10));
        mbuf_label(&lab, "cuda_version", cuda);
    }
    if ((r->s->driver.valid & (UINT64_C(1) << DRIVER_S_MODULE)) && r->s->driver.module_version)
        mbuf_label(&lab, "module_version", r->s->driver.module_version);
    if (lab.len > 0)
        metrics_sample_u64(r, m, lab.p, NULL, 1);
    free(lab.p);
}
