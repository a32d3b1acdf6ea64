/*
 * The CUDA software stack collector: toolkits installed, the CUDA libraries the dynamic linker
 * knows, and - the strongest evidence - the framework build each GPU process runs, found from
 * the process itself (its mapped files, else its interpreter), not guessed. Reads files only:
 * nothing from the tree is executed. docs/stack.md describes every source.
 *
 * The parts, one file each: stack-toolkits.c (toolkits and cuDNN headers), stack-libs.c (the
 * libraries the dynamic linker knows), stack-frameworks.c (what each GPU process runs), and what
 * they share: stack-files.c (reading inside the root), stack-internal.h.
 *
 * Paths of a process are read through <root>/proc/PID/root when that is another tree (a process
 * in a container sees its own files), else under <root> itself (host processes, fixture trees).
 */
#include "collect/stack-internal.h"

static void *start(struct collect_ctx *ctx, struct snapshot *s)
{
    struct stack_run r = { ctx, ctx->root.fd, s, &s->stack, &s->collectors[COLLECTOR_STACK], 0 };

    collector_set(r.c, CS_OK, NULL);
    stack_collect_toolkits(&r);
    stack_collect_libs(&r);
    stack_collect_system_cudnn(&r);
    stack_collect_frameworks(&r);
    return NULL;
}

const struct collector_ops collector_stack = { COLLECTOR_STACK, start, NULL, NULL };
