/*
 * gpudoctor reap: find stale GPU processes (stopped, defunct, orphaned, idle holders) and, with
 * --kill, end them safely. A dry run by default. The selection, the safety checks and the
 * signalling live in src/reap; this file is the command line, the confirmation and the report.
 */
#include "cmd/cmd.h"
#include "reap/reap.h"
#include "render/format.h"
#include "util/strutil.h"
#include "util/timeutil.h"
#include "util/xalloc.h"
#include "watch/recording.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <regex.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEFAULT_WINDOW_MS 2000
#define DEFAULT_GRACE_MS  10000
#define KILL_WAIT_MS      5000
#define FREED_WAIT_MS     3000 /* how long the driver may take to free what ended processes held */

/* Exit statuses of reap (docs/reap.md). */
enum {
    REAP_EXIT_DONE = 0,     /* nothing to do, or everything selected ended */
    REAP_EXIT_FAILED = 1,   /* something could not be reaped (or killing cannot help) */
    REAP_EXIT_REFUSED = 2,  /* something selected was refused for safety */
    REAP_EXIT_NO_CHECK = 3, /* could not collect */
};

enum {
    OPT_STOPPED = OPT__COMMON_END,
    OPT_DEFUNCT,
    OPT_ORPHANED,
    OPT_IDLE,
    OPT_MIN_MEM,
    OPT_NAME,
    OPT_MATCH,
    OPT_USER,
    OPT_PID,
    OPT_GPU,
    OPT_ALL_USERS,
    OPT_KILL,
    OPT_GRACE,
    OPT_HISTORY,
};

/* A --history that ended longer ago than this before the run proves nothing about now. */
#define HISTORY_MAX_GAP_MS 60000

static const struct cmd_option options[] = {
    { NULL, 0, 0, NULL,
      N_("Selection (any of; without one: --defunct, and processes stopped by a signal):") },
    { "stopped", OPT_STOPPED, no_argument, NULL,
      N_("processes stopped by Ctrl-Z, SIGSTOP or a debugger") },
    { "defunct", OPT_DEFUNCT, no_argument, NULL,
      N_("defunct (zombie) processes: signals their parent or the workers that still hold the "
         "GPU; says when nothing helps") },
    { "orphaned", OPT_ORPHANED, no_argument, NULL,
      N_("idle processes whose parent exited (re-parented to init)") },
    { "idle", OPT_IDLE, required_argument, "DUR",
      N_("processes proven idle (no GPU work, CPU near 0) for DUR; the sampling window is the "
         "proof: it defaults to DUR, or to 2s with --history") },
    { "history", OPT_HISTORY, required_argument, "FILE",
      N_("a recording of 'gpudoctor watch --record FILE', still running or ended within 60s: "
         "idleness through it counts toward --idle, for the same processes") },
    { "pid", OPT_PID, required_argument, "PID[,PID]",
      N_("these processes, whatever their state (repeatable)") },
    { NULL, 0, 0, NULL, N_("Filters (all must hold):") },
    { "min-mem", OPT_MIN_MEM, required_argument, "SIZE",
      N_("holding at least SIZE of GPU memory (10G, 512M)") },
    { "name", OPT_NAME, required_argument, "GLOB",
      N_("command name, program or command line matches GLOB (repeatable)") },
    { "match", OPT_MATCH, required_argument, "REGEX",
      N_("command line matches the extended regular expression") },
    { "user", OPT_USER, required_argument, "NAME", N_("owned by NAME (or uid)") },
    { "gpu", OPT_GPU, required_argument, "N[,N]", N_("using GPU N (NVML index; repeatable)") },
    { NULL, 0, 0, NULL, N_("Acting:") },
    { "kill", OPT_KILL, no_argument, NULL, N_("send the signals (default: dry run)") },
    { "interactive", 'i', no_argument, NULL, N_("ask before each process (y/N); implies --kill") },
    { "yes", 'y', no_argument, NULL,
      N_("do not ask (needed with --kill when stdin is not a terminal)") },
    { "grace", OPT_GRACE, required_argument, "DUR",
      N_("wait DUR after SIGTERM before SIGKILL (default 10s)") },
    { "all-users", OPT_ALL_USERS, no_argument, NULL, N_("as root, also other users' processes") },
    { NULL, 0, 0, NULL, N_("Output and collection:") },
    { NULL, 0, 0, NULL, NULL },
};

/* What reap's own options say. */
struct opts {
    struct reap_policy pol;
    regex_t re;
    bool have_re;
    bool kill, interactive, yes, all_users;
    int64_t grace_ms;
    const char *history;
};

static int bad(const char *opt, const char *arg, const char *what)
{
    cmd_error("reap", "%s: '%s' is not %s", opt, arg, what);
    return cmd_usage_error(&cmd_reap);
}

static int option(void *ctx, int key, char *arg)
{
    struct opts *o = ctx;
    int rc;

    switch (key) {
    case OPT_STOPPED:
        o->pol.stopped = true;
        return 0;
    case OPT_DEFUNCT:
        o->pol.defunct = true;
        return 0;
    case OPT_ORPHANED:
        o->pol.orphaned = true;
        return 0;
    case OPT_IDLE:
        if (!time_parse_duration_ms(arg, &o->pol.idle_ms) || o->pol.idle_ms <= 0)
            return bad("--idle", arg, "a duration (30s, 10m, 1h, 1h30m)");
        o->pol.idle = true;
        return 0;
    case OPT_MIN_MEM:
        if (!reap_parse_size(arg, &o->pol.min_mem_bytes))
            return bad("--min-mem", arg, "a size (10G, 512M, 1.5T)");
        o->pol.has_min_mem = true;
        return 0;
    case OPT_NAME:
        o->pol.names = xreallocarray(o->pol.names, o->pol.n_names + 1, sizeof(char *));
        o->pol.names[o->pol.n_names++] = arg;
        return 0;
    case OPT_MATCH:
        if (o->have_re) {
            cmd_error("reap", "--match: give it once (one regular expression can say 'a|b')");
            return cmd_usage_error(&cmd_reap);
        }
        if ((rc = regcomp(&o->re, arg, REG_EXTENDED | REG_NOSUB)) != 0) {
            char msg[128];

            regerror(rc, &o->re, msg, sizeof(msg));
            cmd_error("reap", "--match: '%s': %s", arg, msg);
            return cmd_usage_error(&cmd_reap);
        }
        o->have_re = true;
        o->pol.match = &o->re;
        return 0;
    case OPT_USER:
        o->pol.user = arg;
        return 0;
    case OPT_PID:
        if (!reap_parse_ints(arg, 0, &o->pol.pids, &o->pol.n_pids))
            return bad("--pid", arg, "a pid or a list of pids (4121,4122)");
        return 0;
    case OPT_GPU:
        if (!reap_parse_ints(arg, 0, &o->pol.gpus, &o->pol.n_gpus))
            return bad("--gpu", arg, "a GPU index or a list of them (0,3)");
        return 0;
    case OPT_ALL_USERS:
        o->all_users = true;
        return 0;
    case OPT_KILL:
        o->kill = true;
        return 0;
    case 'i':
        o->interactive = o->kill = true;
        return 0;
    case 'y':
        o->yes = true;
        return 0;
    case OPT_GRACE:
        if (!time_parse_duration_ms(arg, &o->grace_ms) || o->grace_ms > 3600000)
            return bad("--grace", arg, "a duration up to an hour (10s, 500ms)");
        return 0;
    case OPT_HISTORY:
        o->history = arg;
        return 0;
    }
    return EXIT_USAGE;
}

/* What the options say together. Returns 0, or the exit status to end with after saying why. */
static int settle(struct opts *o, struct cmd_front *f)
{
    if (f->from && o->kill) {
        cmd_error("reap", "--from plans only: signals need this machine's processes, collected "
                          "now (drop --from)");
        return EXIT_USAGE;
    }
    if (f->from && o->history) {
        cmd_error("reap", "--history adds to a live run's proof; with --from, give the recording "
                          "to --from instead");
        return EXIT_USAGE;
    }
    if (o->all_users && geteuid() != 0) {
        cmd_error("reap", "--all-users needs root: only root may end other users' processes");
        return EXIT_USAGE;
    }
    if (o->kill && !o->yes && !o->interactive && !isatty(STDIN_FILENO)) {
        cmd_error("reap", "--kill with stdin not a terminal needs --yes (or --interactive to "
                          "answer per process)");
        return EXIT_USAGE;
    }
    if (o->pol.idle) {
        /*
         * Idleness is proven over the window: the window is the proof --idle asks for, unless a
         * history gives it (checked per process once both are read).
         */
        if (!cmd_front_given(f, OPT_WINDOW) && !o->history)
            f->collect.window_ms = o->pol.idle_ms;
        if (f->collect.window_ms < o->pol.idle_ms && !f->from && !o->history) {
            char w[16], d[16];

            render_duration(w, sizeof(w), (double)f->collect.window_ms / 1000.0);
            render_duration(d, sizeof(d), (double)o->pol.idle_ms / 1000.0);
            cmd_error("reap",
                      "--idle %s needs a sampling window at least that long to prove it (--window "
                      "%s is shorter)",
                      d, w);
            return EXIT_USAGE;
        }
        if (f->collect.window_ms > MAX_WINDOW_MS) {
            cmd_error("reap", "--idle: at most 1h can be proven in one run (the longest window)");
            return EXIT_USAGE;
        }
        if (!cmd_front_given(f, OPT_TIMEOUT))
            f->collect.timeout_ms = f->collect.window_ms + DEFAULT_TIMEOUT_MS;
    }
    return 0;
}

static bool proc_started(const struct proc *p)
{
    return p != NULL && (p->valid & (UINT64_C(1) << PROC_S_STAT)) != 0;
}

/*
 * --history: a watch recording proves idleness before this run. A process idle at every reading
 * of the recording and over this run's window, and the same process in both (pid and start
 * time), has been idle for both spans together, less what they overlap (the recording may still
 * be running). Returns 0, or -1 after saying why the history cannot be used.
 */
static int apply_history(const char *path, const struct snapshot *s, struct facts_judgement *j,
                         size_t n_j, const struct thresholds *th)
{
    struct facts_judgement *hj = NULL;
    struct snapshot *h;
    char *cause = NULL, ago[16];
    int64_t gap_ms;
    size_t n_hj;

    h = recording_load(path, &cause);
    if (h == NULL) {
        cmd_error("reap", "--history: %s", cause);
        free(cause);
        return -1;
    }
    gap_ms = s->time_ms - h->time_ms; /* from the end of the recording to this run's start */
    if (h->n_samples == 0 || gap_ms > HISTORY_MAX_GAP_MS) {
        render_duration(ago, sizeof(ago), (double)gap_ms / 1000.0);
        if (h->n_samples == 0)
            cmd_error("reap", "--history %s: no readings in it", path);
        else
            cmd_error("reap",
                      "--history %s: it ended %s before this run, and proves nothing about "
                      "the time since (at most %ds; is 'gpudoctor watch --record' running?)",
                      path, ago, HISTORY_MAX_GAP_MS / 1000);
        snapshot_free(h);
        return -1;
    }
    n_hj = facts_judge_snapshot(h, NULL, th, &hj);
    for (size_t i = 0; i < n_j; i++) {
        const struct facts_judgement *was = facts_judgement_find(hj, n_hj, j[i].pid);
        const struct proc *now = proc_table_find(&s->procs, j[i].pid);
        const struct proc *then = proc_table_find(&h->procs, j[i].pid);
        int64_t overlap = gap_ms < 0 ? -gap_ms : 0;

        if (was == NULL || was->idle_for_ms < 0 || j[i].idle_for_ms < 0 || !proc_started(now) ||
            !proc_started(then) || now->start_ticks != then->start_ticks)
            continue;
        if (overlap > j[i].idle_for_ms)
            overlap = j[i].idle_for_ms;
        j[i].idle_for_ms += was->idle_for_ms - overlap;
    }
    free(hj);
    snapshot_free(h);
    return 0;
}

/* Whether the collection saw the GPU processes; says why not. */
static bool collected(const struct snapshot *s)
{
    const struct collector_status *nv = &s->collectors[COLLECTOR_NVML];
    const struct collector_status *pr = &s->collectors[COLLECTOR_PROCS];

    if (pr->state == CS_OK || pr->state == CS_PARTIAL)
        return true;
    cmd_error("reap", "could not read the processes: %s%s%s", _(collector_state_words[pr->state]),
              pr->detail ? ": " : "", pr->detail ? pr->detail : "");
    if (nv->state != CS_OK)
        cmd_error("reap", "NVML: %s%s%s", _(collector_state_words[nv->state]),
                  nv->detail ? ": " : "", nv->detail ? nv->detail : "");
    return false;
}

/* "y" or "yes" on stdin; anything else (end of input too) is no. The question is translated. */
static bool confirm(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static bool confirm(const char *fmt, ...)
{
    char line[64];
    va_list ap;

    va_start(ap, fmt);
    vfprintf(stderr, _(fmt), ap);
    va_end(ap);
    fputs(" [y/N] ", stderr);
    fflush(stderr);
    if (fgets(line, sizeof(line), stdin) == NULL) {
        fputc('\n', stderr);
        return false;
    }
    str_rtrim(line);
    if (!isatty(STDIN_FILENO)) /* answered by a script: show the answer where it was asked */
        fprintf(stderr, "%s\n", line);
    return strcmp(line, "y") == 0 || strcmp(line, "Y") == 0 || strcmp(line, "yes") == 0;
}

/* NVML again, until what the ended processes held is off its lists (or a few seconds pass). */
static struct snapshot *recollect(const struct collect_opts *co, const struct reap_plan *plan,
                                  const struct reap_result *res)
{
    struct collect_opts c = *co;
    int64_t end = time_mono_ms() + FREED_WAIT_MS;
    char *cause = NULL;

    c.window_ms = 0;
    c.only = 1u << COLLECTOR_NVML;
    c.progress = false;
    c.timeout_ms = DEFAULT_TIMEOUT_MS;
    for (;;) {
        struct snapshot *s = collect_snapshot(&c, &cause);
        bool listed = false;

        if (s == NULL) {
            cmd_error("reap", "cannot read GPU memory again: %s", cause);
            free(cause);
            return NULL;
        }
        for (size_t i = 0; i < plan->n; i++) {
            const struct reap_target *t = &plan->targets[i];

            if (!reap_outcome_ended(res[i].outcome))
                continue;
            for (size_t g = 0; g < s->n_gpus; g++) {
                for (size_t k = 0; k < s->gpus[g].n_procs; k++) {
                    uint32_t pid = s->gpus[g].procs[k].pid;

                    listed |= pid == (uint32_t)t->gpu_pid;
                    for (size_t d = 0; d < t->n_defunct; d++) /* a parent's: each of them */
                        listed |= pid == (uint32_t)t->defunct[d].pid;
                }
            }
        }
        if (!listed || time_mono_ms() >= end)
            return s;
        snapshot_free(s);
        time_sleep_ms(250);
    }
}

static int status_of(const struct reap_plan *plan, const struct reap_result *res)
{
    bool failed = reap_plan_count(plan, REAP_CANNOT_HELP) > 0;
    bool refused = reap_plan_count(plan, REAP_REFUSED) > 0;

    for (size_t i = 0; res && i < plan->n; i++) {
        if (plan->targets[i].disposition != REAP_SIGNAL)
            continue;
        failed |= res[i].outcome == REAP_OUT_STUCK || res[i].outcome == REAP_OUT_FAILED;
        refused |= res[i].outcome == REAP_OUT_CHANGED || res[i].outcome == REAP_OUT_REFUSED;
    }
    return failed ? REAP_EXIT_FAILED : refused ? REAP_EXIT_REFUSED : REAP_EXIT_DONE;
}

static void print_results(const struct reap_plan *plan, const struct reap_result *res,
                          const struct reap_freed *freed, size_t n_freed)
{
    char line[160];

    fputs(_("\nResult:\n"), stdout);
    for (size_t i = 0; i < plan->n; i++) {
        if (plan->targets[i].disposition == REAP_SIGNAL)
            printf("  pid %d: %s\n", (int)plan->targets[i].pid, reap_result_text(&res[i]));
    }
    if (n_freed > 0)
        fputs(_("\nGPU memory used, before and after:\n"), stdout);
    for (size_t i = 0; i < n_freed; i++) {
        reap_freed_line(line, sizeof(line), &freed[i]);
        printf("  %s\n", line);
    }
}

static void print_json(const struct reap_plan *plan, const struct reap_result *res,
                       const struct reap_freed *freed, size_t n_freed, bool dry_run, int status)
{
    json_t *j = reap_plan_json(plan, res, freed, n_freed, dry_run, status);
    char *text = json_dumps(j, JSON_INDENT(2));

    json_decref(j);
    if (text == NULL)
        fatal("out of memory serialising the plan");
    puts(text); /* a failure is in stdout's error flag: cmd_finish_stdout says it */
    free(text);
}

/* Runs the plan: asks as told, signals, re-reads GPU memory. Fills res (plan->n entries). */
static void act(const struct opts *o, const struct collect_opts *co, const struct snapshot *s,
                const struct reap_plan *plan, const struct reap_guard *g, struct reap_result *res,
                struct reap_freed **freed, size_t *n_freed)
{
    struct reap_exec x = { o->grace_ms, KILL_WAIT_MS, g, true };
    size_t n_sig = reap_plan_count(plan, REAP_SIGNAL);
    bool all = o->yes;
    struct snapshot *after;

    if (n_sig > 0 && !o->yes && !o->interactive)
        all = confirm("Signal %zu process%s?", n_sig, n_sig == 1 ? "" : "es");
    for (size_t i = 0; i < plan->n; i++) {
        const struct reap_target *t = &plan->targets[i];
        bool go = all;

        if (t->disposition != REAP_SIGNAL) {
            reap_execute(t, &x, &res[i]); /* records why not; sends nothing */
            continue;
        }
        if (o->interactive && !o->yes)
            go = confirm("Signal pid %d (%s) %s?", (int)t->pid, t->user ? t->user : "?",
                         render_command(t->command ? t->command : "?"));
        if (!go) {
            res[i].outcome = REAP_OUT_DECLINED;
            reap_result_take(&res[i], xstrdup("not signalled: declined"),
                             i18n_active() ? xstrdup(_("not signalled: declined")) : NULL);
            continue;
        }
        reap_execute(t, &x, &res[i]);
    }
    *n_freed = 0;
    for (size_t i = 0; i < plan->n; i++) {
        if (reap_outcome_ended(res[i].outcome)) {
            after = recollect(co, plan, res);
            *n_freed = reap_freed_compute(s, after, plan, res, freed);
            snapshot_free(after);
            break;
        }
    }
}

static int exec(int argc, char **argv)
{
    struct opts o;
    struct cmd_front f;
    struct reap_guard g;
    struct reap_plan plan;
    struct reap_result *res = NULL;
    struct reap_freed *freed = NULL;
    struct facts_judgement *j = NULL;
    struct snapshot *s = NULL;
    struct sysroot root = { -1, NULL };
    size_t n_j, n_freed = 0;
    char *cause = NULL;
    int rc, proc_fd = -1;

    memset(&o, 0, sizeof(o));
    memset(&plan, 0, sizeof(plan));
    memset(&g, 0, sizeof(g));
    o.grace_ms = DEFAULT_GRACE_MS;
    rc = cmd_front_parse(&f, &cmd_reap, argc, argv, option, &o);
    if (rc == CMD_GO && settle(&o, &f) != 0)
        rc = EXIT_USAGE;
    if (rc != CMD_GO)
        goto out;
    reap_guard_init(&g, o.all_users);

    rc = REAP_EXIT_NO_CHECK;
    f.collect.only = (1u << COLLECTOR_NVML) | (1u << COLLECTOR_PROCS);
    s = cmd_front_snapshot(&f);
    if (s == NULL)
        goto out;
    if (!f.from && !collected(s))
        goto out;
    if (!f.from && s->collectors[COLLECTOR_NVML].state != CS_OK) {
        const struct collector_status *nv = &s->collectors[COLLECTOR_NVML];

        /* Holders of /dev/nvidia* are still found; what they hold is not known. */
        cmd_error("reap",
                  "NVML %s%s%s: GPU memory is not known, and only processes with a GPU "
                  "device open are seen",
                  _(collector_state_words[nv->state]), nv->detail ? ": " : "",
                  nv->detail ? nv->detail : "");
    }
    if (!f.from) {
        if (sysroot_open(&root, f.collect.root, &cause) != 0) {
            cmd_error("reap", "%s", cause);
            free(cause);
            goto out;
        }
        proc_fd = openat(root.fd, "proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (proc_fd < 0) {
            cmd_error("reap", "%s/proc: %s", f.collect.root, strerror(errno));
            goto out;
        }
    }

    n_j = facts_judge_snapshot(s, NULL, &f.config.rules.th, &j);
    if (o.history && apply_history(o.history, s, j, n_j, &f.config.rules.th) != 0) {
        rc = REAP_EXIT_NO_CHECK;
        goto out;
    }
    reap_plan_build(&plan, s, j, n_j, &o.pol, &g, proc_fd);
    res = xcalloc(plan.n ? plan.n : 1, sizeof(*res));
    {
        struct reap_exec x = { o.grace_ms, KILL_WAIT_MS, &g, true };

        if (!f.json) {
            reap_plan_print(stdout, &plan, &x, !o.kill);
            fflush(stdout);
        } else if (o.kill && !o.yes && reap_plan_count(&plan, REAP_SIGNAL) > 0) {
            /* The JSON goes to a pipe or a file: the question must not come without the plan. */
            reap_plan_print(stderr, &plan, &x, false);
        }
    }
    if (o.kill)
        act(&o, &f.collect, s, &plan, &g, res, &freed, &n_freed);
    rc = status_of(&plan, o.kill ? res : NULL);
    if (f.json)
        print_json(&plan, o.kill ? res : NULL, freed, n_freed, !o.kill, rc);
    else if (o.kill && reap_plan_count(&plan, REAP_SIGNAL) > 0)
        print_results(&plan, res, freed, n_freed);
    if (cmd_finish_stdout("reap") != 0)
        rc = REAP_EXIT_NO_CHECK;
out:
    for (size_t i = 0; res && i < plan.n; i++)
        reap_result_free(&res[i]);
    free(res);
    free(freed);
    reap_plan_free(&plan);
    free(j);
    if (proc_fd >= 0)
        close(proc_fd);
    sysroot_close(&root);
    snapshot_free(s);
    reap_guard_free(&g);
    cmd_front_free(&f);
    if (o.have_re)
        regfree(&o.re);
    free(o.pol.names);
    free(o.pol.pids);
    free(o.pol.gpus);
    return rc;
}

const struct cmd cmd_reap = {
    .name = "reap",
    .synopsis = "[selection] [--kill [--yes | --interactive]] [options]",
    .summary = N_("find stale GPU processes, end them safely (dry run by default)"),
    .about = N_("Find stale GPU processes and, with --kill, end them safely: SIGTERM, then\n"
                "SIGKILL after a grace period. Without --kill it is a dry run that shows exactly\n"
                "what would be signalled and why. Afterwards it reports the GPU memory freed.\n"),
    .options = options,
    .groups = CMD_G_COLLECT | CMD_G_FROM | CMD_G_CONFIG | CMD_G_JSON,
    .window_ms = DEFAULT_WINDOW_MS,
    .epilogue =
        N_("Never signalled: PID 1, kernel threads, gpudoctor and its ancestors, other\n"
           "users' processes (unless root with --all-users), and protected programs\n"
           "(display servers, nvidia-persistenced, DCGM, fabric manager, MPS, sshd,\n"
           "container runtimes, Slurm) unless named with --pid. Each target is pinned with\n"
           "pidfd_open and its start time checked before any signal. Every action is\n"
           "logged to syslog (authpriv) and stderr. With --root, /proc is read there and\n"
           "signals still go to this machine's pids, after their start time is checked;\n"
           "--from plans only. docs/reap.md has the details.\n"
           "\n"
           "Exit status: 0 nothing to do or all done, 1 something could not be reaped,\n"
           "2 something was refused for safety, 3 could not collect or write, 64 usage\n"
           "error.\n"),
    .exec = exec,
};
