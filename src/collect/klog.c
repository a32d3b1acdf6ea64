/* Placeholder until this collector lands: it records that it did not run. */
#include "collect/collect.h"

static void *start(struct collect_ctx *ctx, struct snapshot *s)
{
    (void)ctx;
    collector_set(&s->collectors[COLLECTOR_KLOG], CS_NOT_RUN, "not implemented yet");
    return NULL;
}

const struct collector_ops collector_klog = { COLLECTOR_KLOG, start, NULL, NULL };
