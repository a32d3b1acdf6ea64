/*
 * gpudoctor slurm-check: a HealthCheckProgram for slurm.conf. Runs the same checks as
 * `gpudoctor check`; on a critical node fault (rule_scope below; the config's slurm_drain can
 * change which) drains this node with the finding as the reason ("gpudoctor: ..."), and resumes
 * a node only when the drain is its own and no node fault remains. scontrol runs through
 * execve with an argument vector, never a shell. docs/slurm.md describes the set-up.
 */
#include "bench/bench.h"
#include "cmd/cmd.h"
#include "cmd/slurm.h"
#include "rules/rules.h"
#include "util/strutil.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <syslog.h>
#include <unistd.h>

#define SLURM_DEFAULT_WINDOW_MS 0
#define SCONTROL_TIMEOUT_MS     30000
#define SCONTROL_MAX_OUTPUT     (64 * 1024)
/* slurm_bench = quick: a short load, and a deadline that keeps the health check bounded */
#define SLURM_BENCH_DURATION_S 1.0
#define SLURM_BENCH_DEADLINE_S 60.0

extern char **environ;

enum { OPT_NODE = OPT__COMMON_END, OPT_SCONTROL, OPT_DRY_RUN };

static const struct cmd_option options[] = {
    { "node", OPT_NODE, required_argument, "NAME",
      N_("Slurm node name (default $SLURMD_NODENAME, else the short host name)") },
    { "scontrol", OPT_SCONTROL, required_argument, "PATH",
      N_("scontrol to run (default: the first in $PATH, /usr/bin, /usr/local/bin)") },
    { "dry-run", OPT_DRY_RUN, no_argument, NULL, N_("say what would be done; change nothing") },
    { NULL, 0, 0, NULL, NULL },
};

/* ---- scontrol show node ---- */

void slurm_node_free(struct slurm_node *n)
{
    free(n->name);
    free(n->state);
    free(n->reason);
    memset(n, 0, sizeof(*n));
}

/* The value of KEY= at the start of text or after a space; NULL when absent. */
static const char *find_key(const char *text, const char *key)
{
    size_t klen = strlen(key);

    for (const char *p = text; (p = strstr(p, key)) != NULL; p += klen) {
        if ((p == text || p[-1] == ' ' || p[-1] == '\n') && p[klen] == '=')
            return p + klen + 1;
    }
    return NULL;
}

/* Length of Slurm's " [user@2024-05-01T10:00:00]" stamp at p, or 0 when p is not one. */
static size_t stamp_len(const char *p)
{
    const char *at, *end;

    if (p[0] != ' ' || p[1] != '[')
        return 0;
    end = strchr(p + 2, ']');
    at = strchr(p + 2, '@');
    if (end == NULL || at == NULL || at > end || at == p + 2)
        return 0;
    for (const char *q = p + 2; q < at; q++) {
        if (*q == ' ')
            return 0;
    }
    /* YYYY-MM-DDTHH:MM:SS */
    if (end - at - 1 < 10 || !isdigit((unsigned char)at[1]) || at[5] != '-')
        return 0;
    if (end[1] != '\0' && end[1] != ' ' && end[1] != '\n')
        return 0;
    return (size_t)(end - p + 1);
}

int slurm_parse_node(const char *text, struct slurm_node *n, char **cause)
{
    const char *name = find_key(text, "NodeName"), *state = find_key(text, "State"),
               *reason = find_key(text, "Reason");

    memset(n, 0, sizeof(*n));
    if (name == NULL || state == NULL) {
        char *shown = str_excerpt(text, 80); /* scontrol's words: printable, one line */

        *cause = xasprintf("scontrol's answer has no %s: '%s'", name == NULL ? "NodeName" : "State",
                           shown);
        free(shown);
        return -1;
    }
    /* Printed in our line: the reason is free text someone else set. */
    n->name = str_sanitize(xstrndup(name, strcspn(name, " \n")));
    n->state = str_sanitize(xstrndup(state, strcspn(state, " \n")));
    if (reason != NULL) {
        size_t len = strcspn(reason, "\n");

        for (size_t i = 0; i < len; i++) {
            if (stamp_len(reason + i) > 0) {
                len = i;
                break;
            }
        }
        if (len > 0 && strncmp(reason, "(null)", len) != 0)
            n->reason = str_sanitize(xstrndup(reason, len));
    }
    /* Flags follow the base state after '+': IDLE+DRAIN, MIXED+DRAIN, DOWN+DRAIN+... */
    for (const char *p = n->state; *p;) {
        size_t len = strcspn(p, "+");

        if ((len == 5 && strncmp(p, "DRAIN", 5) == 0) ||
            (len == 7 && strncmp(p, "DRAINED", 7) == 0) ||
            (len == 8 && strncmp(p, "DRAINING", 8) == 0))
            n->drain = true;
        p += len;
        if (*p == '+')
            p++;
    }
    return 0;
}

bool slurm_reason_is_ours(const char *reason)
{
    return reason != NULL && strncmp(reason, SLURM_REASON_PREFIX, strlen(SLURM_REASON_PREFIX)) == 0;
}

/* ---- the policy: which findings drain a node ---- */

/*
 * Every rule, by what its critical findings are about. A node fault drains the node: the next
 * job there would meet it too (hardware, the driver, the fabric, cooling, power, a lost GPU).
 * A job problem does not: it is one user's process or environment, and draining an 8-GPU node
 * because one process is stopped (Ctrl-Z) idles seven GPUs for everyone else. The configuration
 * (slurm_drain) can drain on every critical finding, or add and remove rules.
 */
static const struct {
    const char *id;
    bool node;
} rule_scope[] = {
    /* health: the GPU, its memory, the driver */
    { "health.nvml-hung", true },
    { "health.nvml-failed", true },
    { "health.gpu-lost", true },
    { "health.gpu-inaccessible", true },
    { "health.gpu-missing", true },
    { "health.no-gpu-found", true },
    { "health.xid", true }, /* only hardware and driver Xids are critical; a job's are warnings */
    { "health.ecc-uncorrectable", true },
    { "health.row-remap-failure", true },
    { "health.memory-repair-pending", true },
    { "health.recovery-action", true },
    { "health.driver-hung-task", true },
    { "health.oom-kill", false },             /* a job asked for more host memory than there is */
    { "host.container-lost-devices", false }, /* one container's; the node's GPUs work */
    /* stack: the node's driver against a job's own CUDA, cuDNN, framework */
    { "stack.no-driver", true },
    { "stack.driver-mismatch", true },
    { "stack.known-bad-driver", true },
    { "stack.cuda-too-new", false },
    { "stack.arch-unsupported", false },
    { "stack.container-toolkit-missing", false }, /* only from an error given */
    { "stack.cuda-lib-missing", false },          /* only from an error given */
    { "stack.uvm-not-loaded", true },             /* no CUDA program starts */
    { "stack.cuda-after-resume", true },          /* nothing starts until nvidia_uvm is reloaded */
    { "stack.toolkit-mismatch", false },
    { "stack.cudnn", false },
    /* memory and processes: what jobs hold and do */
    { "mem.nearly-full", false },
    { "mem.full-idle", false },
    { "mem.unaccounted", false },
    { "mem.leak", false },
    { "mem.idle-held", false },
    { "mem.job-oom", false },
    { "proc.stopped-holder", false },
    { "proc.zombie-holder", false },
    { "proc.orphan-holder", false },
    { "proc.idle-holder", false },
    { "proc.shared-gpu", false },
    { "proc.pileup", false },
    { "proc.graphics-on-compute", false },
    { "proc.compute-mode", true },    /* the node's setting keeps jobs off a GPU */
    { "proc.mig-no-instance", true }, /* the node's MIG layout leaves a GPU unusable */
    { "proc.cuda-visible-devices", false },
    { "proc.fd-limit", false },
    { "proc.memlock-limit", false },
    { "proc.nccl-socket-ifname", false },
    /* throughput and the host: load that jobs make */
    { "perf.input-starved", false },
    { "perf.util-swing", false },
    { "perf.collective-stalled", false }, /* one job's ranks wait on each other */
    { "host.cpu-saturated", false },
    { "host.io-wait", false },
    { "host.disk-busy", false },
    { "host.memory-pressure", false },
    { "host.disk-full", false },
    { "host.shm-small", false },
    { "host.memory-ecc", true }, /* a failing DIMM: the node freezes or corrupts jobs */
    { "host.psu-fault", true },  /* a failed supply brakes the GPUs */
    /* clocks: cooling, power delivery, the node's settings */
    { "clock.thermal-slowdown", true },
    { "clock.hw-slowdown", true },
    { "clock.temp-rising", true },
    { "clock.throttle-episodes", true },
    { "clock.power-limit-low", true },
    { "clock.power-cap", false }, /* a busy job at the limit */
    { "clock.app-clocks", true },
    { "clock.low-pstate", true },
    { "clock.persistence-off", true },
    /* PCIe: the slot, the link, the board */
    { "pcie.link-downshift", true },
    { "pcie.width-degraded", true },
    { "pcie.errors", true },
    { "pcie.shared-switch", true },
    { "pcie.p2p-unavailable", true },
    { "pcie.acs-p2p", true },   /* a warning: slower peer traffic, never drains by itself */
    { "pcie.iommu-p2p", true }, /* the same: the node's boot options, a warning */
    /* the node against its expected-hardware profile: what the node is, not what a job does */
    { "profile.gpu-count", true },
    { "profile.gpu-model", true },
    { "profile.gpu-memory", true },
    { "profile.vbios", true },
    { "profile.fabric", true },
    { "profile.versions", true },
    { "profile.pcie", true },
    { "bench.failed", true },              /* measured hardware */
    { "bench.checksum-mismatch", true },   /* measured hardware */
    { "bench.host-copy-slow", true },      /* measured hardware */
    { "bench.mem-bandwidth-low", true },   /* measured hardware */
    { "bench.compute-low", true },         /* measured hardware */
    { "bench.p2p-slow", true },            /* measured hardware */
    { "bench.throttle-under-load", true }, /* measured hardware */
    { "bench.behind-under-load", true },   /* measured hardware */
    { "bench.regression", true },          /* measured hardware */
    /* InfiniBand / RoCE: the node's adapters, cables and modules */
    { "ib.port-down", true },
    { "ib.rate-low", true },
    { "ib.errors", true },
    { "ib.peermem-missing", true },
    /* NVLink and the GPU fabric: links, bridges, NVSwitches, Fabric Manager */
    { "nvlink.down", true },
    { "nvlink.errors", true },
    { "fabric.gpu-not-ready", true },
    { "fabric.switch-not-initialized", true },
    { "fabric.fm-not-running", true },
    { "fabric.fm-version", true },
    { "fabric.fm-errors", true },
    { "fabric.sxid", true },
    /* where a job runs and how its NCCL is set: the job's own doing */
    { "proc.numa-remote", false },
    { "proc.nccl-disabled", false },
    /* an error one user gave with --error (slurm-check takes none): one job's report, which
     * never drains a node by itself; the fabric rules judge the node's own evidence */
    { "reported.system-not-ready", false },
    { "reported.devices-unavailable", false },
    { "reported.error", false },
};

int slurm_rule_scope(const struct rule *r)
{
    for (size_t i = 0; i < ARRAY_SIZE(rule_scope); i++) {
        if (strcmp(rule_scope[i].id, r->id) == 0)
            return rule_scope[i].node;
    }
    return -1;
}

size_t slurm_rule_scopes(void)
{
    return ARRAY_SIZE(rule_scope);
}

bool slurm_drains(const struct finding *f, const struct slurm_drain_policy *p)
{
    int listed = p && p->rules ? p->rules[rule_position(f->rule)] : 0;

    if (f->severity != SEV_CRITICAL || listed < 0)
        return false;
    /* a rule the table does not know yet drains, as every critical finding used to */
    return listed > 0 || (p && p->every_critical) || slurm_rule_scope(f->rule) != 0;
}

/* ---- the decision ---- */

char *slurm_reason(const struct findings *f, const struct slurm_drain_policy *p)
{
    const struct finding *first = NULL;
    size_t more = 0, len;
    char *r, *title;

    for (size_t i = 0; i < f->n; i++) {
        /* an acknowledged finding never drains: someone knows, and a new event ends the ack */
        if (f->items[i].ack != NULL || !slurm_drains(&f->items[i], p))
            continue;
        if (first == NULL)
            first = &f->items[i];
        else
            more++;
    }
    if (first == NULL)
        return NULL;
    title = xstrdup(first->title ? first->title : first->rule->title);
    for (char *q = title; *q; q++) {
        if ((unsigned char)*q < 0x20 || *q == 0x7f)
            *q = ' ';
    }
    str_sanitize(title); /* C1 controls and invalid UTF-8, which slurmctld would keep */
    r = more ? xasprintf("%s%s (+%zu more)", SLURM_REASON_PREFIX, title, more)
             : xasprintf("%s%s", SLURM_REASON_PREFIX, title);
    free(title);
    len = strlen(r);
    if (len > SLURM_REASON_MAX) {
        /* Cut on a UTF-8 character boundary, then mark the cut. */
        size_t cut = SLURM_REASON_MAX - 3;

        while (cut > 0 && ((unsigned char)r[cut] & 0xc0) == 0x80)
            cut--;
        memcpy(r + cut, "...", 4);
    }
    return r;
}

enum slurm_action slurm_decide(const struct slurm_node *n, int status, const char *reason,
                               const char **why)
{
    bool ours = n->drain && slurm_reason_is_ours(n->reason);

    if (status == EXIT_CRITICAL && reason != NULL) {
        if (!n->drain) {
            *why = "critical node fault";
            return SLURM_DRAIN;
        }
        if (!ours) {
            *why = "critical node fault, but the node is already drained by someone else";
            return SLURM_NOTHING;
        }
        if (strcmp(n->reason, reason) != 0) {
            *why = "critical node fault changed";
            return SLURM_DRAIN;
        }
        *why = "critical node fault, already drained for it";
        return SLURM_NOTHING;
    }
    if (status == EXIT_UNKNOWN) {
        *why = "could not check: node left as it is";
        return SLURM_NOTHING;
    }
    if (ours) {
        *why = status == EXIT_CRITICAL
                   ? "no node fault any more (critical findings about jobs only), and the drain "
                     "was gpudoctor's"
                   : "nothing critical any more, and the drain was gpudoctor's";
        return SLURM_RESUME;
    }
    if (status == EXIT_CRITICAL)
        *why = n->drain ? "critical findings about jobs only, not node faults; drained by someone "
                          "else, left drained"
                        : "critical findings about jobs only, not node faults: not drained";
    else
        *why = n->drain ? "nothing critical; drained by someone else, left drained"
                        : "nothing critical";
    return SLURM_NOTHING;
}

/* ---- running scontrol ---- */

char *slurm_find_scontrol(void)
{
    const char *path = getenv("PATH");
    char *dirs = xasprintf("%s:/usr/bin:/usr/local/bin", path && *path ? path : "");
    char *save = NULL, *found = NULL;

    for (char *d = strtok_r(dirs, ":", &save); d && !found; d = strtok_r(NULL, ":", &save)) {
        char *cand;

        if (d[0] != '/')
            continue; /* a relative $PATH entry would depend on the working directory */
        cand = xasprintf("%s/scontrol", d);
        if (access(cand, X_OK) == 0)
            found = cand;
        else
            free(cand);
    }
    free(dirs);
    return found;
}

static void child(const char *const argv[], int out_fd)
{
    int null = open("/dev/null", O_RDONLY);

    if (null < 0 || dup2(null, STDIN_FILENO) < 0 || dup2(out_fd, STDOUT_FILENO) < 0 ||
        dup2(out_fd, STDERR_FILENO) < 0)
        _exit(126);
    execve(argv[0], (char *const *)argv, environ); /* execve does not change them */
    _exit(127);
}

int slurm_run(const char *const argv[], int64_t timeout_ms, char **out, char **cause)
{
    int fds[2], status = 0;
    size_t len = 0, cap = 4096;
    char *buf = xmalloc(cap);
    int64_t deadline = time_mono_ms() + timeout_ms;
    bool timed_out = false;
    pid_t pid;

    *out = NULL;
    /* A SIGCHLD ignored by whoever started us (exec keeps it) reaps the child unseen: its exit
     * status would read as 0. */
    signal(SIGCHLD, SIG_DFL);
    if (pipe2(fds, O_CLOEXEC) != 0) {
        *cause = xasprintf("cannot create a pipe: %s", strerror(errno));
        free(buf);
        return -1;
    }
    pid = fork();
    if (pid < 0) {
        *cause = xasprintf("cannot fork: %s", strerror(errno));
        close(fds[0]);
        close(fds[1]);
        free(buf);
        return -1;
    }
    if (pid == 0)
        child(argv, fds[1]);
    close(fds[1]);
    for (;;) {
        struct pollfd pfd = { fds[0], POLLIN, 0 };
        int64_t left = deadline - time_mono_ms();
        char chunk[4096];
        ssize_t n;
        int rc;

        if (left <= 0) {
            timed_out = true;
            break;
        }
        rc = poll(&pfd, 1, (int)(left > 1000 ? 1000 : left));
        if (rc < 0 && errno == EINTR)
            continue;
        if (rc <= 0)
            continue;
        n = read(fds[0], chunk, sizeof(chunk));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        if (len + (size_t)n + 1 > SCONTROL_MAX_OUTPUT)
            n = (ssize_t)(SCONTROL_MAX_OUTPUT - 1 - len); /* keep the start, drop the rest */
        if (n > 0) {
            xgrow(&buf, &cap, len + (size_t)n + 1, 1);
            memcpy(buf + len, chunk, (size_t)n);
            len += (size_t)n;
        }
    }
    close(fds[0]);
    buf[len] = '\0';
    /* Its output closed is not its end (a child that closed it and lives on): the deadline
     * holds for the exit too. */
    while (!timed_out) {
        pid_t w = waitpid(pid, &status, WNOHANG);

        if (w == pid || (w < 0 && errno != EINTR))
            break;
        if (w == 0 && time_mono_ms() >= deadline)
            timed_out = true;
        else if (w == 0)
            usleep(10000);
    }
    if (timed_out) {
        kill(pid, SIGKILL);
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
    }
    if (timed_out) {
        *cause = xasprintf("%s did not finish within %.0f s", argv[0], (double)timeout_ms / 1000);
        free(buf);
        return -1;
    }
    if (WIFSIGNALED(status)) {
        *cause = xasprintf("%s was killed by signal %d", argv[0], WTERMSIG(status));
        free(buf);
        return -1;
    }
    if (WEXITSTATUS(status) == 127 || WEXITSTATUS(status) == 126) {
        *cause = xasprintf("cannot run %s", argv[0]);
        free(buf);
        return -1;
    }
    *out = buf;
    return WEXITSTATUS(status);
}

/* ---- the command ---- */

char *slurm_node_name(const char *given)
{
    const char *env = getenv("SLURMD_NODENAME");
    char host[256];

    if (given != NULL)
        return xstrdup(given);
    if (env != NULL && *env)
        return xstrdup(env);
    if (gethostname(host, sizeof(host)) != 0)
        return NULL;
    host[sizeof(host) - 1] = '\0';
    host[strcspn(host, ".")] = '\0';
    return host[0] ? xstrdup(host) : NULL;
}

/* "scontrol WHAT failed (exit N)", then what it printed, on one line, when it printed anything. */
static void scontrol_failed(const char *cmd, const char *what, int rc, char *out)
{
    size_t len = out ? strlen(out) : 0;

    while (len > 0 && (out[len - 1] == '\n' || out[len - 1] == '\r' || out[len - 1] == ' '))
        out[--len] = '\0';
    for (size_t i = 0; i < len; i++) {
        if ((unsigned char)out[i] < 0x20 || out[i] == 0x7f)
            out[i] = ' ';
    }
    if (len > 0)
        str_sanitize(out);
    cmd_error(cmd, "scontrol %s failed (exit %d)%s%s", what, rc, len > 0 ? ": " : "",
              len > 0 ? out : "");
}

int slurm_show_node(const char *cmd, const char *scontrol, const char *node, struct slurm_node *n)
{
    const char *argv[] = { scontrol, "show", "node", "-o", node, NULL };
    char *out = NULL, *cause = NULL;
    int rc = slurm_run(argv, SCONTROL_TIMEOUT_MS, &out, &cause);

    if (rc < 0) {
        cmd_error(cmd, "%s", cause);
        free(cause);
        return -1;
    }
    if (rc != 0) {
        char *what = xasprintf("show node -o %s", node);

        scontrol_failed(cmd, what, rc, out);
        free(what);
        free(out);
        return -1;
    }
    rc = slurm_parse_node(out, n, &cause);
    free(out);
    if (rc != 0) {
        cmd_error(cmd, "%s", cause);
        free(cause);
        return -1;
    }
    return 0;
}

int slurm_update_node(const char *cmd, const char *scontrol, const char *node,
                      enum slurm_action act, const char *reason)
{
    char *name_arg = xasprintf("NodeName=%s", node);
    char *reason_arg = reason ? xasprintf("Reason=%s", reason) : NULL;
    const char *argv[] = { scontrol,
                           "update",
                           name_arg,
                           act == SLURM_DRAIN ? "State=DRAIN" : "State=RESUME",
                           act == SLURM_DRAIN ? reason_arg : NULL,
                           NULL };
    char *out = NULL, *cause = NULL;
    int rc = slurm_run(argv, SCONTROL_TIMEOUT_MS, &out, &cause);

    if (rc < 0) {
        cmd_error(cmd, "%s", cause);
        free(cause);
    } else if (rc != 0) {
        char *what = xasprintf("update %s", name_arg);

        scontrol_failed(cmd, what, rc, out);
        free(what);
    }
    free(out);
    free(name_arg);
    free(reason_arg);
    return rc == 0 ? 0 : -1;
}

/* ---- slurm_bench: the node's last bench, or a quick one ---- */

/*
 * Fills s->bench for the rules (docs/slurm.md, "A quick bench"): the last result when it is
 * younger than slurm_bench_max_age, else a quick bench of the GPUs no process uses (bench refuses
 * busy GPUs; a job's GPU is never loaded), kept as the new last result. Returns what was done, for
 * the output (the caller frees it).
 */
static char *slurm_bench(const struct cmd_front *f, struct snapshot *s, bool dry_run)
{
    struct bench_opts o = { 0 };
    struct snapshot *last = NULL;
    char *cause = NULL, *note;
    int64_t now = time_real_ms(), age;
    size_t busy = 0;

    if (f->state_dir == NULL)
        return xstrdup("not run: the state is off (slurm_bench keeps its result there)");
    if (bench_last_load(f->state_dir, &last, &cause) > 0) {
        age = now - bench_completed_ms(last);
        if (age >= 0 && age < f->config.slurm_bench_max_age_ms) {
            bench_info_free(&s->bench);
            s->bench = last->bench; /* moved: last's section is left empty */
            memset(&last->bench, 0, sizeof(last->bench));
            snapshot_free(last);
            return xasprintf("the last result, %.0f min old", (double)age / 60000.0);
        }
        snapshot_free(last);
    }
    o.pci_bus_ids = xcalloc(s->n_gpus + 1, sizeof(char *));
    for (size_t i = 0; i < s->n_gpus; i++) {
        const struct gpu *g = &s->gpus[i];

        if (!gpu_valid(g, GPU_S_PCI_BUS_ID) || g->handle_rc != 0)
            continue;
        if (g->n_procs > 0 || !gpu_valid(g, GPU_S_PROCESSES)) {
            busy++; /* in use, or nobody could tell: not loaded */
            continue;
        }
        o.pci_bus_ids[o.n_pci_bus_ids++] = g->pci_bus_id;
    }
    if (o.n_pci_bus_ids == 0) {
        free(o.pci_bus_ids);
        note = cause != NULL ? xasprintf("not run: no idle GPU to measure (%zu in use); the last "
                                         "result is unusable: %s",
                                         busy, cause)
                             : xasprintf("not run: no idle GPU to measure (%zu in use)", busy);
        free(cause);
        return note;
    }
    free(cause);
    cause = NULL;
    o.duration_s = SLURM_BENCH_DURATION_S;
    o.deadline_s = SLURM_BENCH_DEADLINE_S;
    o.mem_share = 0.25;
    bench_info_free(&s->bench);
    bench_run(&o, &s->bench);
    free(o.pci_bus_ids);
    s->bench.mode = xstrdup("quick");
    s->bench.library =
        xstrdup(getenv("GPUDOCTOR_CUDA_LIB") ? getenv("GPUDOCTOR_CUDA_LIB") : "libcuda.so.1");
    if (s->bench.state == BENCH_OK && s->bench.n_gpus == 0) {
        s->bench.state = BENCH_NOT_RUN; /* CUDA shows none of them: nothing measured */
        return xstrdup("not run: the CUDA driver shows none of the idle GPUs");
    }
    if (s->bench.state != BENCH_OK)
        return xasprintf("a quick bench of %zu idle GPU%s: %s", o.n_pci_bus_ids,
                         o.n_pci_bus_ids == 1 ? "" : "s", bench_state_names[s->bench.state]);
    bench_expect(&s->bench, s);
    if (bench_baseline_compare_saved(&s->bench, f->state_dir, &cause) < 0) {
        cmd_error("slurm-check", "note: the saved bench baseline is unusable: %s", cause);
        free(cause);
        cause = NULL;
    }
    if (!dry_run && bench_last_save(s, f->state_dir, &cause) != 0) {
        cmd_error("slurm-check", "note: the bench result was not kept: %s", cause);
        free(cause);
    }
    return xasprintf("a quick bench of %zu idle GPU%s%s%s", o.n_pci_bus_ids,
                     o.n_pci_bus_ids == 1 ? "" : "s", busy ? " (the others are in use)" : "",
                     dry_run ? " (a dry run: not kept)" : "");
}

struct opts {
    const char *node, *scontrol;
    bool dry_run;
};

static int option(void *ctx, int key, char *arg)
{
    struct opts *o = ctx;

    switch (key) {
    case OPT_NODE:
        o->node = arg;
        return 0;
    case OPT_SCONTROL:
        o->scontrol = arg;
        return 0;
    case OPT_DRY_RUN:
        o->dry_run = true;
        return 0;
    }
    return EXIT_USAGE;
}

static int exec(int argc, char **argv)
{
    struct opts o = { NULL, NULL, false };
    struct cmd_front f;
    struct findings findings = { 0 };
    struct slurm_node node = { 0 };
    const char *why = "";
    char *scontrol = NULL, *name = NULL, *reason = NULL, *bench_note = NULL;
    struct snapshot *s = NULL;
    enum slurm_action act;
    int status, rc;

    rc = cmd_front_parse(&f, &cmd_slurm_check, argc, argv, option, &o);
    if (rc != CMD_GO)
        goto out;
    i18n_off(); /* Slurm's log and reasons read English */
    rc = EXIT_UNKNOWN;
    name = slurm_node_name(o.node);
    if (name == NULL) {
        cmd_error("slurm-check", "no node name: give --node");
        goto out;
    }
    scontrol = o.scontrol ? xstrdup(o.scontrol) : slurm_find_scontrol();
    if (scontrol == NULL) {
        cmd_error("slurm-check", "scontrol not found in $PATH, /usr/bin or /usr/local/bin: "
                                 "give --scontrol");
        goto out;
    }
    if (scontrol[0] != '/') {
        cmd_error("slurm-check", "--scontrol %s: give an absolute path", scontrol);
        rc = EXIT_USAGE;
        goto out;
    }

    f.no_progress = true; /* slurmd runs it */
    s = cmd_front_snapshot(&f);
    if (s == NULL)
        goto out;
    if (f.config.slurm_bench)
        bench_note = slurm_bench(&f, s, o.dry_run);
    rules_run(s, NULL, &f.config.rules, &findings);
    status = rules_exit_status(s, &findings);
    reason = slurm_reason(&findings, &f.config.slurm_drain);

    if (slurm_show_node("slurm-check", scontrol, name, &node) != 0) {
        /* --dry-run still says what the findings call for: a preview needs no Slurm. */
        if (o.dry_run) {
            if (reason != NULL)
                printf("gpudoctor slurm-check: node %s (its Slurm state unknown): a node fault: "
                       "would drain with reason: %s\n",
                       name, reason);
            else
                printf("gpudoctor slurm-check: node %s (its Slurm state unknown): no node fault: "
                       "would not drain\n",
                       name);
            rc = cmd_finish_stdout("slurm-check") == 0 ? status : EXIT_UNKNOWN;
        }
        goto out;
    }
    act = slurm_decide(&node, status, reason, &why);
    /* A drain of the prolog or epilog names a leftover holding a GPU: a job's problem in
     * rule_scope's terms, but the node stays drained until that leftover is gone. */
    if (act == SLURM_RESUME &&
        slurm_leftover_cleared(
            s, node.reason, (uint64_t)(f.config.rules.th.v[TH_MEM_UNACCOUNTED_MIB] * 1048576.0)) ==
            0) {
        act = SLURM_NOTHING;
        why = "drained for a GPU a leftover held, and it is still held";
    }
    if (bench_note != NULL)
        printf("gpudoctor slurm-check: bench: %s\n", bench_note);
    printf("gpudoctor slurm-check: node %s (%s%s%s): %s: %s%s%s%s\n", name, node.state,
           node.reason ? ", reason: " : "", node.reason ? node.reason : "", why,
           o.dry_run && act != SLURM_NOTHING ? "would " : "",
           act == SLURM_DRAIN    ? "drain"
           : act == SLURM_RESUME ? "resume"
                                 : "no change",
           act == SLURM_DRAIN ? " with reason: " : "", act == SLURM_DRAIN ? reason : "");
    /* The line is for a person (slurmd discards it): one that cannot be written is said on
     * stderr, and the node is still drained or resumed. */
    rc = cmd_finish_stdout("slurm-check") == 0 ? status : EXIT_UNKNOWN;
    if (o.dry_run) /* the state (events, history) as well: a dry run changes nothing */
        goto out;
    cmd_front_record_state(&f, s);
    if (act == SLURM_NOTHING)
        goto out;
    if (slurm_update_node("slurm-check", scontrol, name, act, reason) != 0) {
        rc = EXIT_UNKNOWN;
        goto out;
    }
    /* slurmd discards a health check's output: leave a trace of what was changed. */
    openlog("gpudoctor", LOG_PID, LOG_DAEMON);
    if (act == SLURM_DRAIN)
        syslog(LOG_WARNING, "drained Slurm node %s: %s", name, reason);
    else
        syslog(LOG_NOTICE, "resumed Slurm node %s (was: %s)", name, node.reason);
    closelog();
out:
    slurm_node_free(&node);
    findings_free(&findings);
    snapshot_free(s);
    cmd_front_free(&f);
    free(reason);
    free(bench_note);
    free(name);
    free(scontrol);
    return rc;
}

const struct cmd cmd_slurm_check = {
    .name = "slurm-check",
    .synopsis = "[options]",
    .summary = N_("Slurm health check: drain on a node fault, resume after"),
    .about = "Slurm health check: diagnoses this node as 'gpudoctor check' does; on a critical\n"
             "node fault (hardware, driver, fabric, cooling, a lost GPU) drains it with the\n"
             "finding as reason (\"" SLURM_REASON_PREFIX "...\"). A job's problem (a\n"
             "stopped or leaking process, a job's own CUDA) does not drain it unless the\n"
             "config's slurm_drain says so (docs/slurm.md lists which rule is which). When no\n"
             "node fault remains, resumes the node only if the drain is gpudoctor's own.\n"
             "In slurm.conf: HealthCheckProgram=/usr/local/sbin/gpudoctor-slurm-check (the\n"
             "wrapper 'make install' puts there; docs/slurm.md).\n",
    .options = options,
    .groups = CMD_G_COLLECT | CMD_G_ONLY | CMD_G_CONFIG | CMD_G_STATE,
    .window_ms = SLURM_DEFAULT_WINDOW_MS,
    .epilogue =
        N_("Exit status: the check's (0 healthy, 1 warning, 2 critical, 3 could not check),\n"
           "3 also when scontrol failed; 64 usage error.\n"),
    .exec = exec,
};
