/*
 * Ending the selected process from the live view, with `gpudoctor reap`'s plan, safety checks and
 * signalling (reap_one): the process must still be the one shown (pid and start time), it is
 * pinned with a pidfd, checked again live, sent SIGTERM, and SIGKILL after a grace period; every
 * action goes to reap's log. The view asks first, showing what reap would do.
 */
#include "reap/reap.h"
#include "util/i18n.h"
#include "util/xalloc.h"
#include "watch/watch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void watch_reap_command(char *buf, size_t size, int32_t pid)
{
    snprintf(buf, size, "kill -TERM %d", (int)pid);
}

static int run(const struct watch_opts *o, const struct snapshot *s, int32_t pid,
               uint64_t start_ticks, bool dry_run, uint64_t *plan_id, char **detail)
{
    struct reap_one_opts ro = { WATCH_REAP_GRACE_MS, false, dry_run, false, *plan_id };
    struct reap_result r;
    int rc;

    /* reap acts on this machine: the processes of a --root tree are not here to signal. */
    if (o->collect.root != NULL && strcmp(o->collect.root, "/") != 0) {
        *detail = xasprintf(_("--root %s is another machine's tree: nothing to signal here"),
                            o->collect.root);
        return -1;
    }
    if (s == NULL) {
        *detail = xstrdup(_("nothing collected yet"));
        return -1;
    }
    rc = reap_one(s, pid, start_ticks, &ro, &r);
    *plan_id = r.plan_id;
    /* For the view's messages: people read them. */
    *detail = r.detail ? xstrdup(reap_result_text(&r))
                       : xstrdup(rc == 0 ? _("done") : _("not signalled"));
    reap_result_free(&r);
    return rc;
}

int watch_reap_plan(const struct watch_opts *o, const struct snapshot *s, int32_t pid,
                    uint64_t start_ticks, uint64_t *plan_id, char **detail)
{
    *plan_id = 0;
    return run(o, s, pid, start_ticks, true, plan_id, detail);
}

int watch_reap(const struct watch_opts *o, const struct snapshot *s, int32_t pid,
               uint64_t start_ticks, uint64_t plan_id, char **detail)
{
    return run(o, s, pid, start_ticks, false, &plan_id, detail);
}
