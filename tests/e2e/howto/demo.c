/*
 * The demo collector: fills host.demo_answer with 42. The example collector of
 * docs/architecture.md ("How to add a collector"); tests/e2e/howto.sh adds it to a copy of the
 * tree.
 */
#include "collect/collect.h"

#include <stddef.h>

static void *start(struct collect_ctx *ctx, struct snapshot *s)
{
    (void)ctx;
    s->host.demo_answer = 42;
    host_set_valid(&s->host, HOST_S_DEMO_ANSWER);
    collector_set(&s->collectors[COLLECTOR_DEMO], CS_OK, NULL);
    return NULL;
}

const struct collector_ops collector_demo = {
    .id = COLLECTOR_DEMO,
    .start = start,
};
