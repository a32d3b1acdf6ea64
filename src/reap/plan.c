/*
 * The plan: which GPU processes a policy selects, and for each, what to signal. Most targets are
 * the stale process itself. A defunct process cannot be signalled (it is already dead): what
 * frees its memory is ending the children that still hold its device, or its parent, so that
 * init reaps it; and when its threads are stuck in the driver, or init itself does not reap it,
 * no signal helps and the plan says what does. Every target passes reap_check first.
 */
#include "reap/reap.h"
#include "render/format.h"
#include "render/procs.h"
#include "util/i18n.h"
#include "util/strutil.h"
#include "util/xalloc.h"

#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const reap_role_names[] = { "self", "parent", "worker", NULL };
const char *const reap_disposition_names[] = { "signal", "refused", "cannot-help", NULL };

static bool ok(const struct proc *p, enum proc_slot slot)
{
    return p != NULL && ((p->valid >> slot) & 1u);
}

/* Appends a line to *lines and its translation (or NULL) to *lines_l, in step. */
static void vadd_line(char ***lines, char ***lines_l, size_t *n, const char *fmt, va_list ap)
    __attribute__((format(printf, 4, 0)));

static void vadd_line(char ***lines, char ***lines_l, size_t *n, const char *fmt, va_list ap)
{
    *lines = xreallocarray(*lines, *n + 1, sizeof(**lines));
    *lines_l = xreallocarray(*lines_l, *n + 1, sizeof(**lines_l));
    (*lines)[*n] = i18n_vformat_both(&(*lines_l)[*n], fmt, ap);
    (*n)++;
}

static void advice(struct reap_target *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void advice(struct reap_target *t, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vadd_line(&t->advice, &t->advice_l, &t->n_advice, fmt, ap);
    va_end(ap);
}

static void clear_advice(struct reap_target *t)
{
    for (size_t i = 0; i < t->n_advice; i++) {
        free(t->advice[i]);
        free(t->advice_l[i]);
    }
    t->n_advice = 0;
}

static void note(struct reap_plan *plan, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void note(struct reap_plan *plan, const char *fmt, ...)
{
    va_list ap;
    size_t n = plan->n_notes;

    va_start(ap, fmt);
    vadd_line(&plan->notes, &plan->notes_l, &n, fmt, ap);
    va_end(ap);
    plan->n_notes = plan->cap_notes = n;
}

/* ---- what a GPU process uses ---- */

struct use {
    int32_t *gpus; /* every GPU it uses, however many a snapshot claims */
    size_t n_gpus, cap_gpus;
    bool used_valid;
    uint64_t used_bytes;
    char where[160];   /* "71.2 GiB on GPU 3", "GPU 1 (memory use not reported)" */
    char where_l[320]; /* the same for people: translated where a translation is in use */
};

static void add_gpu(struct use *u, int32_t g)
{
    for (size_t i = 0; i < u->n_gpus; i++) {
        if (u->gpus[i] == g)
            return;
    }
    xgrow(&u->gpus, &u->cap_gpus, u->n_gpus + 1, sizeof(*u->gpus));
    u->gpus[u->n_gpus++] = g;
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;

    return (x > y) - (x < y);
}

/* From the process's record; a pid the table lacks, from NVML's lists. */
static void use_of(struct use *u, const struct snapshot *s, const struct proc *p, int32_t pid)
{
    char list[96], b[16];

    memset(u, 0, sizeof(*u));
    if (p != NULL) {
        for (size_t i = 0; i < p->n_gpus; i++) {
            const struct proc_gpu *g = &p->gpus[i];

            if ((g->valid >> PROC_GPU_S_INDEX) & 1u)
                add_gpu(u, (int32_t)g->gpu_index);
            else if ((g->valid >> PROC_GPU_S_MINOR) & 1u)
                add_gpu(u, (int32_t)g->minor);
            if ((g->valid >> PROC_GPU_S_USED) & 1u) {
                u->used_valid = true;
                u->used_bytes += g->used_bytes;
            }
        }
    } else {
        for (size_t i = 0; i < s->n_gpus; i++) {
            for (size_t k = 0; k < s->gpus[i].n_procs; k++) {
                const struct gpu_proc *np = &s->gpus[i].procs[k];

                if (np->pid != (uint32_t)pid)
                    continue;
                add_gpu(u, (int32_t)s->gpus[i].index);
                if ((np->valid >> GPU_PROC_S_USED) & 1u) {
                    u->used_valid = true;
                    u->used_bytes += np->used_bytes;
                }
            }
        }
    }
    if (u->n_gpus > 1) /* qsort must not get the NULL of an empty list */
        qsort(u->gpus, u->n_gpus, sizeof(*u->gpus), cmp_i32);
    render_ranges(list, sizeof(list), u->gpus, u->n_gpus);
    if (u->n_gpus == 0) {
        snprintf(u->where, sizeof(u->where), "no GPU memory reported");
        snprintf(u->where_l, sizeof(u->where_l), "%s", _("no GPU memory reported"));
    } else if (u->used_valid && u->n_gpus == 1) {
        render_bytes(b, sizeof(b), u->used_bytes);
        snprintf(u->where, sizeof(u->where), "%s on GPU %s", b, list);
        snprintf(u->where_l, sizeof(u->where_l), _("%s on GPU %s"), b, list);
    } else if (u->used_valid) {
        render_bytes(b, sizeof(b), u->used_bytes);
        snprintf(u->where, sizeof(u->where), "%s on GPUs %s", b, list);
        snprintf(u->where_l, sizeof(u->where_l), _("%s on GPUs %s"), b, list);
    } else if (u->n_gpus == 1) {
        snprintf(u->where, sizeof(u->where), "GPU %s (memory use not reported)", list);
        snprintf(u->where_l, sizeof(u->where_l), _("GPU %s (memory use not reported)"), list);
    } else {
        snprintf(u->where, sizeof(u->where), "GPUs %s (memory use not reported)", list);
        snprintf(u->where_l, sizeof(u->where_l), _("GPUs %s (memory use not reported)"), list);
    }
}

/* ---- filters ---- */

static const char *base(const char *path)
{
    const char *slash = path ? strrchr(path, '/') : NULL;

    return slash ? slash + 1 : path;
}

static bool name_match(const char *glob, const struct proc *p)
{
    char argv0[256];

    if (p == NULL)
        return false;
    if (ok(p, PROC_S_STAT) && p->comm && fnmatch(glob, p->comm, 0) == 0)
        return true;
    if (ok(p, PROC_S_EXE) && p->exe && fnmatch(glob, base(p->exe), 0) == 0)
        return true;
    if (ok(p, PROC_S_CMDLINE) && p->cmdline) {
        snprintf(argv0, sizeof(argv0), "%s", p->cmdline);
        argv0[strcspn(argv0, " ")] = '\0';
        if (fnmatch(glob, base(argv0), 0) == 0 || fnmatch(glob, p->cmdline, 0) == 0)
            return true;
    }
    return false;
}

static bool user_match(const char *want, const struct proc *p)
{
    uint32_t uid;

    if (ok(p, PROC_S_USER_NAME) && p->user && strcmp(p->user, want) == 0)
        return true;
    return ok(p, PROC_S_USER) && str_to_u32(want, 10, &uid) && uid == p->uid;
}

/* Whether the GPU process passes every filter; when not, why says which one. */
static bool passes(const struct reap_policy *pol, const struct proc *p, const struct use *u,
                   char *why, size_t size)
{
    char a[16], b[16];

    if (pol->has_min_mem && (!u->used_valid || u->used_bytes < pol->min_mem_bytes)) {
        render_bytes(b, sizeof(b), pol->min_mem_bytes);
        if (u->used_valid) {
            render_bytes(a, sizeof(a), u->used_bytes);
            snprintf(why, size, "holds %s, less than --min-mem %s", a, b);
        } else {
            snprintf(why, size, "its GPU memory use is not reported (--min-mem %s)", b);
        }
        return false;
    }
    if (pol->n_gpus) {
        bool any = false;

        for (size_t i = 0; i < u->n_gpus; i++) {
            for (size_t k = 0; k < pol->n_gpus; k++)
                any |= u->gpus[i] == pol->gpus[k];
        }
        if (!any) {
            snprintf(why, size, "uses none of the GPUs --gpu names");
            return false;
        }
    }
    if (pol->user && !user_match(pol->user, p)) {
        snprintf(why, size, "does not belong to %s", pol->user);
        return false;
    }
    if (pol->n_names) {
        bool any = false;

        for (size_t i = 0; i < pol->n_names; i++)
            any |= name_match(pol->names[i], p);
        if (!any) {
            snprintf(why, size, "its name matches no --name");
            return false;
        }
    }
    if (pol->match) {
        const char *cmd = ok(p, PROC_S_CMDLINE) && p->cmdline ? p->cmdline
                          : p && p->comm                      ? p->comm
                                                              : NULL;

        if (cmd == NULL || regexec(pol->match, cmd, 0, NULL, 0) != 0) {
            snprintf(why, size, "its command line does not match --match");
            return false;
        }
    }
    return true;
}

/* ---- targets ---- */

static bool named(const struct reap_policy *pol, int32_t pid)
{
    for (size_t i = 0; i < pol->n_pids; i++) {
        if (pol->pids[i] == pid)
            return true;
    }
    return false;
}

/* Whether pid is named and that lifts the protected list (reap --pid, watch; not the epilog). */
static bool lifts(const struct reap_policy *pol, int32_t pid)
{
    return !pol->keep_protected && named(pol, pid);
}

static struct reap_target *find_target(struct reap_plan *plan, int32_t pid)
{
    for (size_t i = 0; i < plan->n; i++) {
        if (plan->targets[i].pid == pid)
            return &plan->targets[i];
    }
    return NULL;
}

/* Reads the facts of pid: fresh from proc_fd, else (--from) the snapshot's record. */
static int facts_of(struct reap_plan *plan, int proc_fd, int32_t pid, const struct proc *p,
                    struct reap_facts *f)
{
    char *cause = NULL;
    int rc;

    if (proc_fd < 0) {
        if (p == NULL)
            return -ENOENT;
        reap_facts_from_proc(p, f);
        return 0;
    }
    rc = reap_facts_read(proc_fd, pid, f, &cause);
    if (rc == -ESRCH) {
        note(plan, "pid %d: exited since the scan", (int)pid);
    } else if (rc != 0) {
        note(plan, "pid %d: %s", (int)pid, cause ? cause : strerror(-rc));
    } else if (ok(p, PROC_S_STAT) && f->start_ticks != p->start_ticks) {
        /* The pid was reused since the scan: what was judged is gone. */
        note(plan,
             "pid %d: another process than the one scanned (start time %" PRIu64 ", was %" PRIu64
             "): left alone",
             (int)pid, f->start_ticks, p->start_ticks);
        reap_facts_free(f);
        rc = -ESRCH;
    }
    free(cause);
    return rc;
}

static char *user_name(uint32_t uid)
{
    struct passwd pw, *found = NULL;
    char buf[4096];

    if (getpwuid_r(uid, &pw, buf, sizeof(buf), &found) == 0 && found)
        return xstrdup(found->pw_name);
    return xasprintf("uid %u", (unsigned)uid);
}

/* "300 ms", "2s", "10m": the window CPU use was measured over. */
static void window_label(char *buf, size_t size, int64_t ms)
{
    if (ms < 1000)
        snprintf(buf, size, "%d ms", (int)ms);
    else
        render_duration(buf, size, (double)ms / 1000.0);
}

/*
 * Adds a target for pid (or returns the one the plan has: a parent of two defunct processes is
 * one target), filled from its facts and record, and checked.
 */
static struct reap_target *add_target(struct reap_plan *plan, const struct snapshot *s,
                                      const struct reap_guard *g, const struct reap_facts *f,
                                      const struct proc *p, enum reap_role role, bool is_named,
                                      const struct use *u, int32_t gpu_pid, enum facts_verdict v)
{
    struct reap_target *t = find_target(plan, f->pid);
    char why[320], why_l[320];

    if (t != NULL)
        return t;
    xgrow(&plan->targets, &plan->cap, plan->n + 1, sizeof(*plan->targets));
    t = &plan->targets[plan->n++];
    memset(t, 0, sizeof(*t));
    t->pid = f->pid;
    t->start_ticks = f->start_ticks;
    t->start_time_ms = -1;
    if (ok(p, PROC_S_START_TIME) && p->start_ticks == f->start_ticks)
        t->start_time_ms = p->start_time_ms;
    else if ((s->procs.valid >> PROC_TABLE_S_BOOT_TIME) & 1u && s->procs.clk_tck > 0 &&
             f->start_ticks > 0)
        t->start_time_ms =
            s->procs.boot_time_ms + (int64_t)(f->start_ticks * 1000 / s->procs.clk_tck);
    t->role = role;
    t->gpu_pid = gpu_pid;
    t->verdict = v;
    t->named = is_named;
    t->state = f->state;
    t->have_uid = f->have_uid;
    t->uid = f->uid;
    if (ok(p, PROC_S_USER_NAME) && p->user && f->have_uid && p->uid == f->uid)
        t->user = xstrdup(p->user);
    else if (f->have_uid && s->root && strcmp(s->root, "/") == 0)
        t->user = user_name(f->uid); /* not in the snapshot (a parent): this machine's name */
    else if (f->have_uid)
        t->user = xasprintf("uid %u", (unsigned)f->uid);
    else
        t->user = xstrdup("?");
    t->command = xstrdup(f->cmdline                            ? f->cmdline
                         : ok(p, PROC_S_CMDLINE) && p->cmdline ? p->cmdline
                         : f->comm[0]                          ? f->comm
                                                               : "?");
    t->n_gpus = u->n_gpus;
    t->gpus = xcalloc(u->n_gpus ? u->n_gpus : 1, sizeof(*t->gpus));
    if (u->n_gpus > 0)
        memcpy(t->gpus, u->gpus, u->n_gpus * sizeof(*t->gpus));
    t->used_valid = u->used_valid;
    t->used_bytes = u->used_bytes;
    {
        struct reap_facts named_f = *f; /* the owner's name, for the refusal's sentence */

        if (ok(p, PROC_S_USER_NAME) && p->user && f->have_uid && p->uid == f->uid)
            named_f.user = p->user;
        t->refusal = reap_check(g, &named_f, is_named, why, why_l, sizeof(why));
    }
    t->disposition = t->refusal == REAP_ALLOWED ? REAP_SIGNAL : REAP_REFUSED;
    if (t->refusal != REAP_ALLOWED) {
        t->advice = xreallocarray(t->advice, t->n_advice + 1, sizeof(*t->advice));
        t->advice_l = xreallocarray(t->advice_l, t->n_advice + 1, sizeof(*t->advice_l));
        t->advice[t->n_advice] = xstrdup(why);
        t->advice_l[t->n_advice++] = why_l[0] ? xstrdup(why_l) : NULL;
    }
    return t;
}

/* Adds what u holds to a target that frees it too (a parent of a second defunct process). */
static void target_add_use(struct reap_target *t, const struct use *u)
{
    for (size_t i = 0; i < u->n_gpus; i++) {
        bool seen = false;

        for (size_t k = 0; k < t->n_gpus; k++)
            seen |= t->gpus[k] == u->gpus[i];
        if (seen)
            continue;
        t->gpus = xreallocarray(t->gpus, t->n_gpus + 1, sizeof(*t->gpus));
        t->gpus[t->n_gpus++] = u->gpus[i];
    }
    t->used_valid = t->used_valid && u->used_valid;
    t->used_bytes += u->used_bytes;
}

static void set_why(struct reap_target *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void set_why(struct reap_target *t, const char *fmt, ...)
{
    va_list ap;

    if (t->why != NULL) /* a second reason for the same target (a parent of two) */
        return;
    va_start(ap, fmt);
    t->why = i18n_vformat_both(&t->why_l, fmt, ap);
    va_end(ap);
}

/* set_why with the two texts made already (TWICE): the English, and the text for people or NULL. */
static void set_why_take(struct reap_target *t, char *why, char *why_l)
{
    if (t->why != NULL) {
        free(why);
        free(why_l);
        return;
    }
    t->why = why;
    t->why_l = why_l;
}

static void evidence(struct reap_target *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void evidence(struct reap_target *t, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vadd_line(&t->evidence, &t->evidence_l, &t->n_evidence, fmt, ap);
    va_end(ap);
}

/* Age, CPU and container lines every target of a GPU process gets. */
static void common_evidence(struct reap_target *t, const struct snapshot *s, const struct proc *p,
                            int64_t window_ms)
{
    char a[16], job[96];
    int64_t age = p && s->time_ms > 0 ? proc_age_ms(p, s->time_ms) : -1;

    if (age >= 0) {
        render_duration(a, sizeof(a), (double)age / 1000.0);
        evidence(t, "started %s ago", a);
    }
    if (ok(p, PROC_S_CPU_PCT)) {
        window_label(a, sizeof(a), window_ms);
        evidence(t, "CPU %.1f %% over the %s window", p->cpu_pct, a);
    }
    procs_job_label(job, sizeof(job), p);
    if (job[0])
        evidence(t, "runs in %s", job);
}

static const char *verdict_words(enum facts_verdict v, const struct proc *p)
{
    switch (v) {
    case FACTS_VERDICT_STOPPED:
        return p && p->state == 't' ? N_("stopped by a debugger or tracer (state t)")
                                    : N_("stopped (state T: Ctrl-Z or SIGSTOP)");
    case FACTS_VERDICT_ORPHANED:
        return N_("orphaned (its parent exited; re-parented to init) and idle");
    case FACTS_VERDICT_IDLE_HOLDER:
        return N_("an idle holder (no GPU work, CPU near 0, old enough)");
    case FACTS_VERDICT_IDLE:
        return N_("idle");
    case FACTS_VERDICT_DEFUNCT:
        return N_("defunct (exited, not reaped)");
    case FACTS_VERDICT_ACTIVE:
        return N_("active");
    case FACTS_VERDICT_NOT_VISIBLE:
        return N_("not visible from this PID namespace");
    case FACTS_VERDICT_UNKNOWN:
        return N_("not judged (no sampling window)");
    }
    return "?";
}

static void reset_advice(struct reap_target *t, const struct use *u)
{
    for (size_t i = 0; i < u->n_gpus; i++)
        advice(t,
               "sudo nvidia-smi --gpu-reset -i %d   # only once no other process uses GPU %d "
               "(gpudoctor procs --gpu %d)",
               (int)u->gpus[i], (int)u->gpus[i], (int)u->gpus[i]);
    advice(t, "# refused with 'In use by another client'? stop what keeps it open "
              "(nvidia-persistenced, DCGM: nv-hostengine, dcgm-exporter), reset, then start them "
              "again");
    /* Never a reboot command: pasted as a block, it would run before the node is drained. */
    advice(t, "# when the reset fails or cannot wait: drain the node, then sudo reboot");
}

/* A target that stands only for advice: nothing is signalled. */
static struct reap_target *advice_target(struct reap_plan *plan, const struct snapshot *s,
                                         const struct reap_guard *g, const struct proc *p,
                                         int32_t pid, const struct use *u, enum facts_verdict v,
                                         bool is_named)
{
    struct reap_facts f;
    struct reap_target *t;

    if (p != NULL) {
        reap_facts_from_proc(p, &f);
    } else {
        memset(&f, 0, sizeof(f));
        f.pid = pid;
    }
    t = add_target(plan, s, g, &f, p, REAP_ROLE_SELF, is_named, u, pid, v);
    reap_facts_free(&f);
    /* Whatever the checks said of it, nothing will be sent: the advice is what there is. */
    clear_advice(t);
    t->disposition = REAP_CANNOT_HELP;
    t->refusal = REAP_ALLOWED;
    return t;
}

static bool holds_device(const struct proc *c)
{
    for (size_t i = 0; c && i < c->n_gpus; i++) {
        if (c->gpus[i].holds_device)
            return true;
    }
    return false;
}

/*
 * A defunct GPU process: its threads stuck in the driver (nothing helps but a reset), threads
 * still running (end the process), workers still holding its device, and the parent that does
 * not reap it.
 */
static void plan_defunct(struct reap_plan *plan, const struct snapshot *s,
                         const struct reap_guard *g, const struct reap_policy *pol, int proc_fd,
                         const struct proc *p, const struct use *u, bool is_named)
{
    struct reap_facts zf, pf;
    struct reap_target *t;
    bool have_z = proc_fd >= 0 && facts_of(plan, proc_fd, p->pid, p, &zf) == 0;
    int32_t ppid = p->ppid;

    if (proc_fd >= 0 && !have_z)
        return; /* gone since the scan: facts_of said so */
    if (have_z)
        ppid = zf.ppid; /* its parent now, not as scanned */
    if (have_z && zf.tasks_d > 0) {
        t = advice_target(plan, s, g, p, p->pid, u, FACTS_VERDICT_DEFUNCT, is_named);
        set_why_take(
            t, TWICE("defunct, holding %s, with %u thread%s stuck in the kernel (state D, most "
                     "likely in the driver): no signal reaches them",
                     (u->where, (unsigned)zf.tasks_d, zf.tasks_d == 1 ? "" : "s"),
                     (u->where_l, (unsigned)zf.tasks_d, zf.tasks_d == 1 ? "" : "s")));
        evidence(t, "its memory is freed only when those threads leave the driver");
        reset_advice(t, u);
        reap_facts_free(&zf);
        return;
    }
    if (have_z && zf.tasks_live > 0) {
        /* The main thread exited; the others still run and keep the process and its GPU. */
        t = add_target(plan, s, g, &zf, p, REAP_ROLE_SELF, lifts(pol, p->pid), u, p->pid,
                       FACTS_VERDICT_DEFUNCT);
        set_why_take(t,
                     TWICE("its main thread exited but %u other thread%s, holding %s: ending the "
                           "process frees it",
                           ((unsigned)zf.tasks_live,
                            zf.tasks_live == 1 ? " still runs" : "s still run", u->where),
                           ((unsigned)zf.tasks_live,
                            zf.tasks_live == 1 ? " still runs" : "s still run", u->where_l)));
        common_evidence(t, s, p, plan->window_ms);
        reap_facts_free(&zf);
        return;
    }
    if (have_z)
        reap_facts_free(&zf);
    else
        note(plan,
             "pid %d: thread states unknown (no /proc to read): a stuck exit cannot be "
             "ruled out",
             (int)p->pid);

    /* Children that inherited the device keep the memory (data-loader workers). */
    for (size_t i = 0; i < p->n_children; i++) {
        const struct proc *c = proc_table_find(&s->procs, p->children[i]);
        struct reap_facts cf;

        if (!holds_device(c) || facts_of(plan, proc_fd, c->pid, c, &cf) != 0)
            continue;
        t = add_target(plan, s, g, &cf, c, REAP_ROLE_WORKER, lifts(pol, c->pid), u, p->pid,
                       FACTS_VERDICT_DEFUNCT);
        set_why_take(
            t, TWICE("child of defunct process %d, still has its GPU device open: ending it frees "
                     "the %s the defunct process holds",
                     ((int)p->pid, u->where), ((int)p->pid, u->where_l)));
        common_evidence(t, s, c, plan->window_ms);
        reap_facts_free(&cf);
    }

    if (ppid <= 1) {
        t = advice_target(plan, s, g, p, p->pid, u, FACTS_VERDICT_DEFUNCT, is_named);
        set_why_take(
            t, TWICE("defunct, holding %s; its parent is init, which reaps at once: its exit is "
                     "stuck (in the driver) and no signal helps",
                     (u->where), (u->where_l)));
        evidence(t, "dmesg may show an Xid error or a hung task for it");
        reset_advice(t, u);
        return;
    }
    {
        const struct proc *pp = proc_table_find(&s->procs, ppid);
        bool unchecked = false;

        if (facts_of(plan, proc_fd, ppid, pp, &pf) != 0) {
            if (proc_fd >= 0) /* the parent went away: init reaps the zombie now */
                return;
            /* --from, and the parent is not in the snapshot: nothing to check it against yet */
            memset(&pf, 0, sizeof(pf));
            pf.pid = ppid;
            unchecked = true;
        }
        t = add_target(plan, s, g, &pf, pp, REAP_ROLE_PARENT, lifts(pol, ppid), u, p->pid,
                       FACTS_VERDICT_DEFUNCT);
        /* A parent of several is one target: it stays worth signalling while any is there, and
         * ending it frees what they all hold. */
        if (t->role == REAP_ROLE_PARENT) {
            if (t->n_defunct > 0) {
                target_add_use(t, u);
                evidence(t, "also the parent of defunct process %d, holding %s", (int)p->pid,
                         u->where);
            }
            t->defunct = xreallocarray(t->defunct, t->n_defunct + 1, sizeof(*t->defunct));
            t->defunct[t->n_defunct].pid = p->pid;
            t->defunct[t->n_defunct++].start_ticks = p->start_ticks;
        }
        set_why_take(
            t, TWICE("parent of defunct process %d (holding %s), which it does not reap: ending it "
                     "lets init reap %d and free the memory",
                     ((int)p->pid, u->where, (int)p->pid), ((int)p->pid, u->where_l, (int)p->pid)));
        if (unchecked && t->refusal == REAP_REFUSE_OWNER_UNKNOWN) {
            clear_advice(t);
            t->refusal = REAP_ALLOWED;
            t->disposition = REAP_SIGNAL;
            evidence(t, "the parent is not in the snapshot: its checks run on the live process "
                        "when it is signalled");
        } else {
            evidence(t, "%d is in state %c; its parent %d (%s) is in state %c", (int)p->pid,
                     p->state, (int)ppid, pf.comm[0] ? pf.comm : "?", pf.state ? pf.state : '?');
        }
        if (t->disposition == REAP_REFUSED)
            advice(t,
                   "ps -o pid,stat,args -p %d   # the parent: ask its owner to end or restart "
                   "it, or wait for it to exit",
                   (int)ppid);
        reap_facts_free(&pf);
    }
}

/* ---- the plan ---- */

static bool idle_verdict(enum facts_verdict v)
{
    return v == FACTS_VERDICT_IDLE || v == FACTS_VERDICT_IDLE_HOLDER || v == FACTS_VERDICT_ORPHANED;
}

/* Whether pol selects nothing by itself: no selection and no pid named (the default's kinds). */
static bool policy_default(const struct reap_policy *pol)
{
    return !(pol->stopped || pol->defunct || pol->orphaned || pol->idle) && pol->n_pids == 0;
}

/*
 * Whether the policy selects a GPU process with this judgement (named pids aside). Without a
 * selection, only what is stale beyond doubt: a process stopped by a signal (T; one stopped by a
 * debugger, t, is someone's session; one in a Slurm job may be suspended by Slurm) and a defunct
 * one. An orphan is not: a job started with nohup or in a closed tmux pane is re-parented to init
 * and may be between two bursts of work.
 */
static bool selects(const struct reap_policy *pol, const struct snapshot *s,
                    const struct facts_judgement *j)
{
    bool by_default = policy_default(pol);
    const struct proc *p;

    switch (j->verdict) {
    case FACTS_VERDICT_STOPPED:
        p = proc_table_find(&s->procs, j->pid);
        return pol->stopped ||
               (by_default && p != NULL && p->state == 'T' && !facts_proc_slurm_job(p));
    case FACTS_VERDICT_DEFUNCT:
        return pol->defunct || by_default;
    case FACTS_VERDICT_ORPHANED:
        if (pol->orphaned)
            return true;
        break;
    default:
        break;
    }
    return pol->idle && idle_verdict(j->verdict) && j->idle_for_ms >= pol->idle_ms;
}

/*
 * A named process that uses no GPU but is in the table: a worker of a GPU process (its child,
 * or listed among its children), or the parent of one. False for anything else there (an
 * ancestor further up: a launcher, a shell, a multiplexer, a container's shim).
 */
static bool related_why(struct reap_target *t, const struct snapshot *s, const struct proc *p)
{
    const struct proc_table *tb = &s->procs;

    for (size_t i = 0; i < tb->n_procs; i++) {
        const struct proc *q = &tb->procs[i];

        for (size_t k = 0; q->n_gpus > 0 && k < q->n_children; k++) {
            if (q->children[k] == p->pid) {
                set_why(t, "named by --pid: a worker of GPU process %d", (int)q->pid);
                return true;
            }
        }
    }
    for (size_t k = 0; k < p->n_children; k++) {
        const struct proc *c = proc_table_find(tb, p->children[k]);

        if (c != NULL && c->n_gpus > 0) {
            set_why(t, "named by --pid: the parent of GPU process %d", (int)c->pid);
            return true;
        }
    }
    for (size_t i = 0; i < tb->n_procs; i++) {
        if (tb->procs[i].ppid == p->pid && tb->procs[i].n_gpus > 0) {
            set_why(t, "named by --pid: the parent of GPU process %d", (int)tb->procs[i].pid);
            return true;
        }
    }
    return false;
}

/* One GPU process the policy selected, or a pid named by --pid. */
static void plan_use(struct reap_plan *plan, const struct snapshot *s, const struct reap_guard *g,
                     const struct reap_policy *pol, int proc_fd, int32_t pid,
                     const struct facts_judgement *j, struct use *use)
{
    const struct proc *p = proc_table_find(&s->procs, pid);
    bool is_named = named(pol, pid);
    enum facts_verdict v = j ? j->verdict : FACTS_VERDICT_UNKNOWN;
    struct reap_facts f;
    struct reap_target *t;
    char why[256];

    use_of(use, s, p, pid);
    if (!passes(pol, p, use, why, sizeof(why))) {
        if (is_named)
            note(plan, "pid %d (named by --pid): not selected: %s", (int)pid, why);
        return;
    }
    if (j == NULL && p == NULL) {
        /* Named, but not a process gpudoctor saw using a GPU: what /proc says of it now names it
         * in the report (its owner, its command), if it is there. */
        if (proc_fd < 0 || reap_facts_read(proc_fd, pid, &f, NULL) != 0) {
            memset(&f, 0, sizeof(f));
            f.pid = pid;
        }
        t = add_target(plan, s, g, &f, NULL, REAP_ROLE_SELF, lifts(pol, pid), use, pid, v);
        reap_facts_free(&f);
        if (t->refusal == REAP_ALLOWED || t->refusal == REAP_REFUSE_OWNER_UNKNOWN) {
            clear_advice(t);
            t->refusal = REAP_REFUSE_NOT_GPU;
            t->disposition = REAP_REFUSED;
            advice(t, "not a GPU process (nor a worker of one): reap ends only those; use kill");
        }
        set_why(t, "named by --pid");
        return;
    }
    if (v == FACTS_VERDICT_NOT_VISIBLE && j != NULL && facts_proc_pid_foreign(p)) {
        /* A process here has the number: what never may be touched says so first (init, this
         * gpudoctor, its ancestors); else it is refused as not NVML's process. */
        if (facts_of(plan, proc_fd, pid, p, &f) != 0)
            return;
        t = add_target(plan, s, g, &f, p, REAP_ROLE_SELF, lifts(pol, pid), use, pid, v);
        reap_facts_free(&f);
        set_why_take(t, TWICE("NVML lists pid %d (%s), but the process with that pid here has no "
                              "NVIDIA device open: it is not NVML's process",
                              ((int)pid, use->where), ((int)pid, use->where_l)));
        if (t->refusal == REAP_ALLOWED || t->refusal == REAP_REFUSE_OTHER_USER ||
            t->refusal == REAP_REFUSE_OWNER_UNKNOWN || t->refusal == REAP_REFUSE_PROTECTED) {
            clear_advice(t);
            t->disposition = REAP_REFUSED;
            t->refusal = REAP_REFUSE_NOT_VISIBLE;
            advice(t, "NVML gives the host's pids: inside a container (another PID namespace) the "
                      "number is another process's, or the process exited and the number was "
                      "reused; run gpudoctor reap on the host, or in a container started with "
                      "--pid=host");
        }
        return;
    }
    if (v == FACTS_VERDICT_NOT_VISIBLE && j != NULL) {
        t = advice_target(plan, s, g, p, pid, use, v, is_named);
        t->disposition = REAP_REFUSED;
        t->refusal = REAP_REFUSE_NOT_VISIBLE;
        set_why_take(t, TWICE("NVML lists it (%s), but /proc here does not show it", (use->where),
                              (use->where_l)));
        advice(t, "another PID namespace (a container?) or it exited: run gpudoctor reap on the "
                  "host, or in a container started with --pid=host");
        return;
    }
    if (v == FACTS_VERDICT_DEFUNCT) {
        plan_defunct(plan, s, g, pol, proc_fd, p, use, is_named);
        return;
    }
    if (facts_of(plan, proc_fd, pid, p, &f) != 0)
        return;
    t = add_target(plan, s, g, &f, p, REAP_ROLE_SELF, lifts(pol, pid), use, pid, v);
    if (j != NULL) {
        set_why_take(t, TWICE("%s, holding %s", (verdict_words(v, p), use->where),
                              (_(verdict_words(v, p)), use->where_l)));
    } else if (related_why(t, s, p)) {
        /* a worker or the parent of a GPU process: why says which */
    } else if (holds_device(p) || (ok(p, PROC_S_HOLDS_CTL) && p->holds_ctl) ||
               (ok(p, PROC_S_HOLDS_UVM) && p->holds_uvm)) {
        /* NVML did not judge it (down, or its GPU lost), but it has the GPU's files open. */
        set_why(t, "named by --pid: has NVIDIA device files open, which NVML does not list");
    } else {
        set_why(t, "named by --pid: in the process table, using no GPU");
        if (t->disposition == REAP_SIGNAL) {
            clear_advice(t);
            t->refusal = REAP_REFUSE_NOT_GPU;
            t->disposition = REAP_REFUSED;
            advice(t, "not a GPU process (nor a worker or the parent of one): reap ends only "
                      "those; use kill");
        }
    }
    if (is_named && j != NULL && !idle_verdict(v) && v != FACTS_VERDICT_STOPPED) {
        evidence(t, "named by --pid: it is %s, not stale", verdict_words(v, p));
        if (t->evidence_l[t->n_evidence - 1] != NULL) {
            free(t->evidence_l[t->n_evidence - 1]);
            t->evidence_l[t->n_evidence - 1] =
                xasprintf(_("named by --pid: it is %s, not stale"), _(verdict_words(v, p)));
        }
    }
    if (f.state == 'D')
        evidence(t, "state D: in the kernel now; a signal acts when it leaves");
    common_evidence(t, s, p, plan->window_ms);
    if (j != NULL && j->idle_for_ms > plan->window_ms) {
        char d[16];

        render_duration(d, sizeof(d), (double)j->idle_for_ms / 1000.0);
        evidence(t, "idle for at least %s: through the history and this window", d);
    }
    reap_facts_free(&f);
}

static void plan_one(struct reap_plan *plan, const struct snapshot *s, const struct reap_guard *g,
                     const struct reap_policy *pol, int proc_fd, int32_t pid,
                     const struct facts_judgement *j)
{
    struct use u;

    plan_use(plan, s, g, pol, proc_fd, pid, j, &u);
    free(u.gpus);
}

/* Children of a target that are not targets themselves are not signalled: say so. */
static void children_evidence(struct reap_plan *plan, const struct snapshot *s)
{
    for (size_t i = 0; i < plan->n; i++) {
        struct reap_target *t = &plan->targets[i];
        const struct proc *p = proc_table_find(&s->procs, t->pid);
        char list[160];
        size_t len = 0, n = 0;

        if (t->role != REAP_ROLE_SELF || t->disposition != REAP_SIGNAL || p == NULL ||
            !ok(p, PROC_S_STAT) || p->start_ticks != t->start_ticks)
            continue;
        list[0] = '\0';
        for (size_t k = 0; k < p->n_children; k++) {
            if (find_target(plan, p->children[k]) != NULL || len >= sizeof(list))
                continue;
            len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%d", n ? ", " : "",
                                    (int)p->children[k]);
            n++;
        }
        if (n > 0)
            evidence(t,
                     "its child%s %s %s not signalled (data-loader workers usually end with "
                     "their parent)",
                     n == 1 ? "" : "ren", list, n == 1 ? "is" : "are");
    }
}

void reap_plan_build(struct reap_plan *plan, const struct snapshot *s,
                     const struct facts_judgement *j, size_t n_j, const struct reap_policy *pol,
                     const struct reap_guard *g, int proc_fd)
{
    char w[16], d[16];

    memset(plan, 0, sizeof(*plan));
    plan->window_ms = s->n_samples ? s->samples[s->n_samples - 1].t_ms : 0;
    for (size_t i = 0; i < n_j; i++) {
        bool is_named = named(pol, j[i].pid);

        if (pol->n_pids > 0 && !is_named &&
            !(pol->stopped || pol->defunct || pol->orphaned || pol->idle))
            continue;
        if (is_named || selects(pol, s, &j[i])) {
            plan_one(plan, s, g, pol, proc_fd, j[i].pid, &j[i]);
        } else if (!pol->idle && j[i].verdict == FACTS_VERDICT_IDLE_HOLDER) {
            note(plan, "pid %d: an idle holder, not selected: --idle DUR selects idle processes",
                 (int)j[i].pid);
        } else if (!pol->idle && j[i].verdict == FACTS_VERDICT_ORPHANED) {
            note(plan,
                 "pid %d: orphaned and idle, not selected: --orphaned or --idle DUR selects it",
                 (int)j[i].pid);
        } else if (j[i].verdict == FACTS_VERDICT_STOPPED && policy_default(pol)) {
            const struct proc *p = proc_table_find(&s->procs, j[i].pid);

            if (p != NULL && p->state == 'T' && facts_proc_slurm_job(p))
                note(plan,
                     "pid %d: stopped in Slurm job %s, which Slurm may have suspended (scontrol "
                     "suspend, gang scheduling), not selected: scontrol resume or scancel the "
                     "job, or --stopped selects it",
                     (int)j[i].pid, facts_proc_slurm_job(p));
            else
                note(plan,
                     "pid %d: stopped by a debugger or tracer (state t), not selected: "
                     "--stopped selects it",
                     (int)j[i].pid);
        } else if (pol->idle && j[i].verdict == FACTS_VERDICT_UNKNOWN) {
            note(plan,
                 "pid %d: idleness unknown (no sampling window, or its GPUs' use is not "
                 "reported)",
                 (int)j[i].pid);
        } else if (pol->idle && idle_verdict(j[i].verdict) && j[i].idle_for_ms < pol->idle_ms) {
            window_label(w, sizeof(w), j[i].idle_for_ms);
            render_duration(d, sizeof(d), (double)pol->idle_ms / 1000.0);
            note(plan,
                 "pid %d: idle over the %s window, less than the %s --idle asks for (a "
                 "longer --window, or a --history, proves more)",
                 (int)j[i].pid, w, d);
        }
    }
    /* Named pids that are not GPU processes: workers in the table, or something else. */
    for (size_t i = 0; i < pol->n_pids; i++) {
        if (facts_judgement_find(j, n_j, pol->pids[i]) == NULL &&
            find_target(plan, pol->pids[i]) == NULL)
            plan_one(plan, s, g, pol, proc_fd, pol->pids[i], NULL);
    }
    children_evidence(plan, s);
}

void reap_plan_free(struct reap_plan *plan)
{
    for (size_t i = 0; i < plan->n; i++) {
        struct reap_target *t = &plan->targets[i];

        free(t->user);
        free(t->command);
        free(t->gpus);
        free(t->defunct);
        free(t->why);
        free(t->why_l);
        for (size_t k = 0; k < t->n_evidence; k++) {
            free(t->evidence[k]);
            free(t->evidence_l[k]);
        }
        free(t->evidence);
        free(t->evidence_l);
        for (size_t k = 0; k < t->n_advice; k++) {
            free(t->advice[k]);
            free(t->advice_l[k]);
        }
        free(t->advice);
        free(t->advice_l);
    }
    free(plan->targets);
    for (size_t i = 0; i < plan->n_notes; i++) {
        free(plan->notes[i]);
        free(plan->notes_l[i]);
    }
    free(plan->notes);
    free(plan->notes_l);
    memset(plan, 0, sizeof(*plan));
}

size_t reap_plan_count(const struct reap_plan *plan, enum reap_disposition d)
{
    size_t n = 0;

    for (size_t i = 0; i < plan->n; i++)
        n += plan->targets[i].disposition == d;
    return n;
}
