/*
 * One process, as `watch` asks when its operator presses "r" on the selected row: the plan of
 * `reap --pid PID` (a defunct process is reached through its parent, or gets advice), the same
 * safety checks, and the same pinned signalling and log.
 */
#include "reap/reap.h"
#include "util/i18n.h"
#include "util/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ONE_KILL_WAIT_MS 5000

/* Line i for people: its translation where there is one, else the English. */
static const char *text(char *const *en, char *const *l, size_t i)
{
    return l != NULL && l[i] != NULL ? l[i] : en[i];
}

/* The targets the plan would signal, in order (pid, start time, role), as one number. */
static uint64_t plan_id(const struct reap_plan *plan)
{
    uint64_t h = UINT64_C(0xcbf29ce484222325);

    for (size_t i = 0; i < plan->n; i++) {
        const struct reap_target *t = &plan->targets[i];
        uint64_t v[4] = { (uint64_t)t->pid, t->start_ticks, (uint64_t)t->role,
                          (uint64_t)t->disposition };

        for (size_t k = 0; k < sizeof(v); k++)
            h = (h ^ ((const unsigned char *)v)[k]) * UINT64_C(0x100000001b3);
    }
    return h;
}

int reap_one(const struct snapshot *s, int32_t pid, uint64_t start_ticks,
             const struct reap_one_opts *o, struct reap_result *r)
{
    const struct proc *p = proc_table_find(&s->procs, pid);
    struct reap_policy pol;
    struct reap_guard g;
    struct reap_plan plan;
    struct facts_judgement *j = NULL;
    struct thresholds th;
    size_t n_j;
    int proc_fd, rc = -1;
    uint64_t id = 0;

    memset(r, 0, sizeof(*r));
    if (p == NULL || !((p->valid >> PROC_S_STAT) & 1u) || p->start_ticks != start_ticks) {
        r->outcome = REAP_OUT_CHANGED;
        reap_result_take(r, TWICE("pid %d is not the process shown (it exited, or the view is old)",
                                  ((int)pid), ((int)pid)));
        return -1;
    }
    memset(&pol, 0, sizeof(pol));
    pol.pids = &pid;
    pol.n_pids = 1;
    thresholds_init(&th);
    n_j = facts_judge_snapshot(s, NULL, &th, &j);
    reap_guard_init(&g, o->all_users);
    /* watch reads the live machine: its /proc is the one to plan against. */
    proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    reap_plan_build(&plan, s, j, n_j, &pol, &g, proc_fd);
    if (proc_fd >= 0)
        close(proc_fd);

    id = plan_id(&plan);
    if (!o->dry_run && o->expect_plan != 0 && id != o->expect_plan) {
        r->outcome = REAP_OUT_CHANGED;
        reap_result_take(r, TWICE("what would be signalled to end pid %d changed since it was "
                                  "shown (the process changed state): nothing signalled; ask again",
                                  ((int)pid), ((int)pid)));
        goto out;
    }
    if (plan.n == 0) {
        r->outcome = REAP_OUT_GONE;
        if (plan.n_notes)
            reap_result_take(r, xstrdup(plan.notes[0]),
                             plan.notes_l[0] ? xstrdup(plan.notes_l[0]) : NULL);
        else
            reap_result_take(r, xstrdup("nothing to signal"),
                             i18n_active() ? xstrdup(_("nothing to signal")) : NULL);
        goto out;
    }
    /* One target for a process (its parent or a worker for a defunct one): end them in order. */
    for (size_t i = 0; i < plan.n; i++) {
        const struct reap_target *t = &plan.targets[i];
        struct reap_exec x = { o->grace_ms, ONE_KILL_WAIT_MS, &g, o->log_stderr };

        reap_result_free(r);
        if (t->disposition == REAP_REFUSED) {
            r->outcome = REAP_OUT_REFUSED;
            reap_result_take(r, TWICE("pid %d: not signalled: %s",
                                      ((int)t->pid, t->n_advice ? t->advice[0] : "refused"),
                                      ((int)t->pid, t->n_advice ? text(t->advice, t->advice_l, 0)
                                                                : _("refused"))));
            goto out;
        }
        if (t->disposition == REAP_CANNOT_HELP) {
            r->outcome = REAP_OUT_REFUSED;
            reap_result_take(r,
                             TWICE("%s; instead: %s",
                                   (t->why ? t->why : "no signal helps",
                                    t->n_advice ? t->advice[0] : "reset the GPU or reboot"),
                                   (t->why ? (t->why_l ? t->why_l : t->why) : _("no signal helps"),
                                    t->n_advice ? text(t->advice, t->advice_l, 0)
                                                : _("reset the GPU or reboot"))));
            goto out;
        }
        if (o->dry_run) {
            r->outcome = REAP_OUT_DECLINED;
            reap_result_take(
                r, TWICE("would send SIGTERM (SIGKILL after %.0f s) to pid %d (%s): %s",
                         ((double)o->grace_ms / 1000.0, (int)t->pid, t->command ? t->command : "?",
                          t->why ? t->why : ""),
                         ((double)o->grace_ms / 1000.0, (int)t->pid, t->command ? t->command : "?",
                          t->why_l ? t->why_l
                          : t->why ? t->why
                                   : "")));
            continue;
        }
        reap_execute(t, &x, r);
        if (!reap_outcome_ended(r->outcome))
            goto out;
    }
    rc = 0;
out:
    r->plan_id = id;
    reap_plan_free(&plan);
    reap_guard_free(&g);
    free(j);
    return rc;
}
