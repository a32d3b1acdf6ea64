#include "watch/alert.h"
#include "render/format.h"
#include "util/strutil.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define MIB (1024.0 * 1024.0)

/* Commands running at once, and waiting to run, at most. */
#define MAX_RUNNING 8
#define MAX_QUEUED  64
/* After SIGTERM, a command has this long before SIGKILL. */
#define KILL_GRACE_MS 2000

/* ---- metrics ---- */

#define GET(fn, expr, ...)                                                                         \
    static bool fn(const struct gpu *stat, const struct gpu *dyn, double *out)                     \
    {                                                                                              \
        (void)stat;                                                                                \
        if (!(__VA_ARGS__))                                                                        \
            return false;                                                                          \
        *out = (expr);                                                                             \
        return true;                                                                               \
    }

GET(get_util, dyn->util_gpu_pct, gpu_valid(dyn, GPU_S_UTIL_GPU))
GET(get_util_mem, dyn->util_mem_pct, gpu_valid(dyn, GPU_S_UTIL_MEM))
GET(get_mem_pct, (double)dyn->mem_used_bytes * 100.0 / (double)stat->mem_total_bytes,
    gpu_valid(dyn, GPU_S_MEM_USED) && stat != NULL && gpu_valid(stat, GPU_S_MEM_TOTAL) &&
        stat->mem_total_bytes > 0)
GET(get_mem_mib, (double)dyn->mem_used_bytes / MIB, gpu_valid(dyn, GPU_S_MEM_USED))
GET(get_free_mib, (double)dyn->mem_free_bytes / MIB, gpu_valid(dyn, GPU_S_MEM_FREE))
GET(get_temp, dyn->temp_c, gpu_valid(dyn, GPU_S_TEMP))
GET(get_margin, (double)stat->temp_slowdown_c - (double)dyn->temp_c,
    gpu_valid(dyn, GPU_S_TEMP) && stat != NULL && gpu_valid(stat, GPU_S_TEMP_SLOWDOWN))
GET(get_power, dyn->power_mw / 1000.0, gpu_valid(dyn, GPU_S_POWER))
GET(get_power_pct, (double)dyn->power_mw * 100.0 / (double)stat->power_limit_mw,
    gpu_valid(dyn, GPU_S_POWER) && stat != NULL && gpu_valid(stat, GPU_S_POWER_LIMIT) &&
        stat->power_limit_mw > 0)
GET(get_sm, dyn->clock_sm_mhz, gpu_valid(dyn, GPU_S_CLOCK_SM))
GET(get_memclk, dyn->clock_mem_mhz, gpu_valid(dyn, GPU_S_CLOCK_MEM))
GET(get_fan, dyn->fan_speed_pct, gpu_valid(dyn, GPU_S_FAN))
GET(get_ecc, (double)dyn->ecc_volatile_uncorrected, gpu_valid(dyn, GPU_S_ECC_VOL_UNCORR))
GET(get_replay, dyn->pcie_replay_count, gpu_valid(dyn, GPU_S_PCIE_REPLAY))
#undef GET

const struct alert_metric alert_metrics[] = {
    { "util_gpu_pct", "%", 2, get_util, "GPU utilisation" },
    { "util_mem_pct", "%", 2, get_util_mem, "memory controller utilisation" },
    { "mem_used_pct", "%", 2, get_mem_pct, "GPU memory used, share of the total" },
    { "mem_used_mib", "MiB", 256, get_mem_mib, "GPU memory used" },
    { "mem_free_mib", "MiB", 256, get_free_mib, "GPU memory free" },
    { "temp_c", "°C", 2, get_temp, "GPU temperature" },
    { "temp_margin_c", "°C", 2, get_margin, "degrees below the slowdown temperature" },
    { "power_w", "W", 10, get_power, "power draw" },
    { "power_pct", "%", 2, get_power_pct, "power draw, share of the power limit" },
    { "clock_sm_mhz", "MHz", 50, get_sm, "SM clock" },
    { "clock_mem_mhz", "MHz", 50, get_memclk, "memory clock" },
    { "fan_pct", "%", 5, get_fan, "fan speed" },
    { "ecc_volatile_uncorrected", "errors", 0, get_ecc,
      "uncorrected ECC errors since the driver loaded" },
    { "pcie_replay_count", "replays", 0, get_replay, "PCIe replays since boot" },
};
const size_t n_alert_metrics = ARRAY_SIZE(alert_metrics);

static const char *const op_names[] = {
    [ALERT_GT] = ">", [ALERT_GE] = ">=", [ALERT_LT] = "<", [ALERT_LE] = "<="
};

/* ---- parsing ---- */

/* The executable for name: itself when it has a slash, else the first match in $PATH. */
static char *resolve(const char *name, char **cause)
{
    const char *path = getenv("PATH");
    char *dirs, *save = NULL, *found = NULL;

    if (strchr(name, '/') != NULL) {
        if (access(name, X_OK) != 0) {
            *cause = xasprintf("command '%s': %s", name, strerror(errno));
            return NULL;
        }
        return xstrdup(name);
    }
    dirs = xstrdup(path && *path ? path : "/usr/local/bin:/usr/bin:/bin");
    for (char *d = strtok_r(dirs, ":", &save); d && !found; d = strtok_r(NULL, ":", &save)) {
        char *cand = xasprintf("%s/%s", *d ? d : ".", name);

        if (access(cand, X_OK) == 0)
            found = cand;
        else
            free(cand);
    }
    free(dirs);
    if (found == NULL)
        *cause = xasprintf("command '%s' not found in PATH (give its full path)", name);
    return found;
}

/* Splits a command on blanks (no quoting, no shell). */
static char **split_words(const char *text, size_t *n)
{
    char *copy = xstrdup(text), *save = NULL;
    char **argv = xcalloc(strlen(text) / 2 + 2, sizeof(*argv));

    *n = 0;
    for (char *w = strtok_r(copy, " \t", &save); w; w = strtok_r(NULL, " \t", &save))
        argv[(*n)++] = xstrdup(w);
    free(copy);
    return argv;
}

static void free_words(char **argv)
{
    for (size_t i = 0; argv && argv[i]; i++)
        free(argv[i]);
    free(argv);
}

static bool parse_metric(struct alert_spec *a, const char *cond, char **cause)
{
    size_t name_len = 0;
    char name[64];
    const char *p = cond;

    while (islower((unsigned char)p[name_len]) || isdigit((unsigned char)p[name_len]) ||
           p[name_len] == '_')
        name_len++;
    p += name_len;
    while (*p == ' ' || *p == '\t')
        p++;
    if (name_len == 0 || name_len >= sizeof(name) || (*p != '>' && *p != '<'))
        return false;
    memcpy(name, cond, name_len);
    name[name_len] = '\0';
    a->kind = ALERT_METRIC;
    a->op = *p == '>' ? (p[1] == '=' ? ALERT_GE : ALERT_GT) : (p[1] == '=' ? ALERT_LE : ALERT_LT);
    p += p[1] == '=' ? 2 : 1;
    for (size_t i = 0; i < n_alert_metrics; i++) {
        if (strcmp(alert_metrics[i].name, name) == 0)
            a->metric = &alert_metrics[i];
    }
    if (a->metric == NULL) {
        char list[512];
        size_t len = 0;

        for (size_t i = 0; i < n_alert_metrics && len < sizeof(list); i++)
            len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s", i ? ", " : "",
                                    alert_metrics[i].name);
        *cause = xasprintf("unknown reading '%s' (known: %s)", name, list);
        return true;
    }
    if (!str_to_double(p, &a->value) || !isfinite(a->value))
        *cause = xasprintf("'%s': expected a number after '%s'", cond, op_names[a->op]);
    return true;
}

static void parse_findings(struct alert_spec *a, const char *cond, char **cause)
{
    static const char *const sev[] = {
        [SEV_INFO] = "info", [SEV_WARNING] = "warning", [SEV_CRITICAL] = "critical"
    };
    bool glob = strpbrk(cond, "*?[") != NULL, any = false;

    for (size_t i = 0; i < ARRAY_SIZE(sev); i++) {
        if (strcmp(cond, sev[i]) == 0) {
            a->kind = ALERT_SEVERITY;
            a->min_severity = (enum severity)i;
            return;
        }
    }
    a->kind = ALERT_RULE;
    a->pattern = xstrdup(cond);
    for (size_t i = 0; i < n_rules && !any; i++)
        any =
            glob ? fnmatch(cond, rule_table[i]->id, 0) == 0 : strcmp(cond, rule_table[i]->id) == 0;
    if (!any)
        *cause = xasprintf("'%s' is %s (a rule id from 'gpudoctor explain --list', a glob of "
                           "them, critical, warning, info, or a reading such as "
                           "mem_used_pct>95)",
                           cond, glob ? "a pattern no rule id matches" : "not a known rule");
}

int alert_spec_parse(struct alert_spec *a, const char *spec, char **cause)
{
    const char *colon = strchr(spec, ':');
    char *cond = colon ? xstrndup(spec, (size_t)(colon - spec)) : xstrdup(spec);
    char *end;
    size_t n_words = 0;

    memset(a, 0, sizeof(a[0]));
    *cause = NULL;
    str_rtrim(cond);
    memmove(cond, str_ltrim(cond), strlen(str_ltrim(cond)) + 1);
    /* "... for DURATION": the last word is the duration, the one before it "for". */
    end = strrchr(cond, ' ');
    if (end != NULL) {
        char *dur = end + 1, *before = end;

        while (before > cond && before[-1] == ' ')
            before--;
        if (before - cond >= 4 && strncmp(before - 4, " for", 4) == 0) {
            if (!time_parse_duration_ms(dur, &a->for_ms) || a->for_ms < 0) {
                *cause = xasprintf("'%s' is not a duration (examples: 60s, 5m, 1.5)", dur);
                goto fail;
            }
            before -= 4;
            *before = '\0';
            str_rtrim(cond);
        }
    }
    if (*cond == '\0') {
        *cause = xstrdup("no condition before the command");
        goto fail;
    }
    a->text = xstrdup(cond);
    if (!parse_metric(a, cond, cause))
        parse_findings(a, cond, cause);
    if (*cause)
        goto fail;
    if (colon != NULL) {
        a->argv = split_words(colon + 1, &n_words);
        if (n_words == 0) {
            *cause = xstrdup("nothing after ':' (give a command, or leave the ':' out)");
            goto fail;
        }
        a->path = resolve(a->argv[0], cause);
        if (a->path == NULL)
            goto fail;
    }
    free(cond);
    return 0;
fail:
    free(cond);
    alert_spec_free(a);
    return -1;
}

void alert_spec_free(struct alert_spec *a)
{
    free(a->text);
    free(a->pattern);
    free_words(a->argv);
    free(a->path);
    memset(a, 0, sizeof(*a));
}

/* ---- the engine ---- */

enum ep_state { EP_PENDING, EP_FIRING, EP_CLEARING };

struct episode {
    size_t spec;
    char *key;
    enum ep_state state;
    int64_t since_ms; /* when it entered its state */
    bool seen;        /* its condition held in this evaluation */
    /* What the last reading said, for the events. */
    char *id, *severity, *subject, *title, *value;
    int32_t gpu, pid;
};

struct alert_engine {
    const struct alert_spec *specs;
    size_t n_specs;
    int64_t clear_min_ms;
    struct episode *eps;
    size_t n_eps, cap_eps;
};

struct alert_engine *alert_engine_new(const struct alert_spec *specs, size_t n,
                                      int64_t clear_min_ms)
{
    struct alert_engine *e = xcalloc(1, sizeof(*e));

    e->specs = specs;
    e->n_specs = n;
    e->clear_min_ms = clear_min_ms;
    return e;
}

static void episode_free(struct episode *ep)
{
    free(ep->key);
    free(ep->id);
    free(ep->severity);
    free(ep->subject);
    free(ep->title);
    free(ep->value);
}

void alert_engine_free(struct alert_engine *e)
{
    if (e == NULL)
        return;
    for (size_t i = 0; i < e->n_eps; i++)
        episode_free(&e->eps[i]);
    free(e->eps);
    free(e);
}

static struct episode *episode_find(struct alert_engine *e, size_t spec, const char *key)
{
    for (size_t i = 0; i < e->n_eps; i++) {
        if (e->eps[i].spec == spec && strcmp(e->eps[i].key, key) == 0)
            return &e->eps[i];
    }
    return NULL;
}

static void set_str(char **dst, const char *src)
{
    free(*dst);
    *dst = xstrdup(src ? src : "");
}

/* What an event carries about its episode. */
struct ep_info {
    const char *id, *severity, *subject, *title, *value;
    int32_t gpu, pid;
};

static void episode_update(struct episode *ep, const struct ep_info *in)
{
    set_str(&ep->id, in->id);
    set_str(&ep->severity, in->severity);
    set_str(&ep->subject, in->subject);
    set_str(&ep->title, in->title);
    set_str(&ep->value, in->value);
    ep->gpu = in->gpu;
    ep->pid = in->pid;
}

static void emit(struct alert_events *ev, const struct alert_spec *spec, const struct episode *ep,
                 bool firing)
{
    struct alert_event *x;

    xgrow(&ev->items, &ev->cap, ev->n + 1, sizeof(*ev->items));
    x = &ev->items[ev->n++];
    x->spec = spec;
    x->firing = firing;
    x->id = xstrdup(ep->id);
    x->severity = xstrdup(ep->severity);
    x->subject = xstrdup(ep->subject);
    x->title = xstrdup(ep->title);
    x->value = xstrdup(ep->value);
    x->gpu = ep->gpu;
    x->pid = ep->pid;
}

/* The condition of spec holds for key now: start, continue or resume its episode. */
static void hold(struct alert_engine *e, size_t spec, const char *key, const struct ep_info *in,
                 int64_t now, struct alert_events *ev)
{
    struct episode *ep = episode_find(e, spec, key);

    if (ep == NULL) {
        xgrow(&e->eps, &e->cap_eps, e->n_eps + 1, sizeof(*e->eps));
        ep = &e->eps[e->n_eps++];
        memset(ep, 0, sizeof(*ep));
        ep->spec = spec;
        ep->key = xstrdup(key);
        ep->state = EP_PENDING;
        ep->since_ms = now;
    }
    episode_update(ep, in);
    ep->seen = true;
    if (ep->state == EP_CLEARING) {
        ep->state = EP_FIRING; /* back before it cleared: the same episode */
    } else if (ep->state == EP_PENDING && now - ep->since_ms >= e->specs[spec].for_ms) {
        ep->state = EP_FIRING;
        ep->since_ms = now;
        emit(ev, &e->specs[spec], ep, true);
    }
}

static bool finding_matches(const struct alert_spec *a, const struct finding *f)
{
    if (a->kind == ALERT_SEVERITY)
        return f->severity >= a->min_severity;
    return fnmatch(a->pattern, f->rule->id, 0) == 0;
}

static bool compare(enum alert_op op, double v, double limit)
{
    switch (op) {
    case ALERT_GT:
        return v > limit;
    case ALERT_GE:
        return v >= limit;
    case ALERT_LT:
        return v < limit;
    case ALERT_LE:
        return v <= limit;
    }
    return false;
}

static void eval_metric(struct alert_engine *e, size_t si, const struct snapshot *s,
                        const struct sample *latest, int64_t now, struct alert_events *ev)
{
    const struct alert_spec *a = &e->specs[si];

    for (size_t i = 0; latest && i < latest->n_gpus; i++) {
        const struct gpu *dyn = &latest->gpus[i];
        const struct gpu *stat = s ? snapshot_gpu(s, dyn->index) : NULL;
        char key[32], value[32], title[256], subject[32], dur[16];
        struct episode *ep;
        struct ep_info in;
        double v, limit = a->value;
        bool up = a->op == ALERT_GT || a->op == ALERT_GE, on;

        if (dyn->handle_rc != 0 || !a->metric->get(stat, dyn, &v))
            continue;
        snprintf(key, sizeof(key), "gpu=%" PRIu32, dyn->index);
        ep = episode_find(e, si, key);
        /* Hysteresis: once firing, the reading must move back past the band to clear. */
        if (ep != NULL && ep->state != EP_PENDING)
            limit += up ? -a->metric->band : a->metric->band;
        on = compare(a->op, v, limit);
        snprintf(value, sizeof(value), "%.6g", v);
        snprintf(subject, sizeof(subject), "gpu=%" PRIu32, dyn->index);
        if (on && a->for_ms > 0) {
            render_duration(dur, sizeof(dur), (double)a->for_ms / 1000.0);
            snprintf(title, sizeof(title), "GPU %" PRIu32 " %s %.4g %s %s %.4g for %s", dyn->index,
                     a->metric->name, v, a->metric->unit, op_names[a->op], a->value, dur);
        } else if (on) {
            snprintf(title, sizeof(title), "GPU %" PRIu32 " %s %.4g %s %s %.4g", dyn->index,
                     a->metric->name, v, a->metric->unit, op_names[a->op], a->value);
        } else {
            snprintf(title, sizeof(title), "GPU %" PRIu32 " %s back to %.4g %s", dyn->index,
                     a->metric->name, v, a->metric->unit);
        }
        in = (struct ep_info){ a->metric->name, "warning",           subject, title,
                               value,           (int32_t)dyn->index, -1 };
        if (on)
            hold(e, si, key, &in, now, ev);
        else if (ep != NULL)
            episode_update(ep, &in); /* a clear reports the reading that ended it */
    }
}

void alert_engine_eval(struct alert_engine *e, const struct snapshot *s,
                       const struct sample *latest, const struct findings *f, int64_t now_ms,
                       struct alert_events *ev)
{
    size_t k = 0;

    for (size_t i = 0; i < e->n_eps; i++)
        e->eps[i].seen = false;
    for (size_t si = 0; si < e->n_specs; si++) {
        const struct alert_spec *a = &e->specs[si];

        if (a->kind == ALERT_METRIC) {
            eval_metric(e, si, s, latest, now_ms, ev);
            continue;
        }
        for (size_t i = 0; f && i < f->n; i++) {
            const struct finding *x = &f->items[i];
            char *subject, *key;
            struct ep_info in;

            if (x->ack != NULL || !finding_matches(a, x))
                continue; /* an acknowledged finding is silenced: no alert fires for it */
            subject = subject_key(&x->subject);
            key = xasprintf("%s %s", x->rule->id, subject);
            in = (struct ep_info){ x->rule->id,
                                   severity_names[x->severity],
                                   subject,
                                   x->title ? x->title : x->rule->title,
                                   "",
                                   x->subject.gpu_index,
                                   x->subject.pid };
            hold(e, si, key, &in, now_ms, ev);
            free(key);
            free(subject);
        }
    }
    /* Episodes whose condition did not hold: forgotten, or on their way to clearing. */
    for (size_t i = 0; i < e->n_eps; i++) {
        struct episode *ep = &e->eps[i];
        const struct alert_spec *a = &e->specs[ep->spec];
        int64_t delay = a->for_ms > e->clear_min_ms ? a->for_ms : e->clear_min_ms;
        bool drop = false;

        if (!ep->seen) {
            if (ep->state == EP_PENDING) {
                drop = true;
            } else {
                if (ep->state == EP_FIRING) {
                    ep->state = EP_CLEARING;
                    ep->since_ms = now_ms;
                }
                if (now_ms - ep->since_ms >= delay) {
                    emit(ev, a, ep, false);
                    drop = true;
                }
            }
        }
        if (drop)
            episode_free(ep);
        else
            e->eps[k++] = *ep;
    }
    e->n_eps = k;
}

size_t alert_engine_firing(const struct alert_engine *e)
{
    size_t n = 0;

    for (size_t i = 0; i < e->n_eps; i++)
        n += e->eps[i].state != EP_PENDING;
    return n;
}

void alert_events_free(struct alert_events *ev)
{
    for (size_t i = 0; i < ev->n; i++) {
        struct alert_event *x = &ev->items[i];

        free(x->id);
        free(x->severity);
        free(x->subject);
        free(x->title);
        free(x->value);
    }
    free(ev->items);
    memset(ev, 0, sizeof(*ev));
}

/* ---- running commands ---- */

#define ENV_PREFIX "GPUDOCTOR_ALERT_"

char **alert_environment(const struct alert_event *ev, const char *hostname, int64_t now_real_ms)
{
    size_t n = 0, k = 0;
    char **env, iso[40], gpu[16] = "", pid[16] = "";

    while (environ && environ[n])
        n++;
    env = xcalloc(n + 16, sizeof(*env));
    for (size_t i = 0; i < n; i++) {
        if (strncmp(environ[i], ENV_PREFIX, strlen(ENV_PREFIX)) != 0)
            env[k++] = xstrdup(environ[i]);
    }
    if (ev->gpu >= 0)
        snprintf(gpu, sizeof(gpu), "%d", (int)ev->gpu);
    if (ev->pid >= 0)
        snprintf(pid, sizeof(pid), "%d", (int)ev->pid);
    time_format_iso(now_real_ms, iso, sizeof(iso));
    env[k++] = xasprintf(ENV_PREFIX "ID=%s", ev->id);
    env[k++] = xasprintf(ENV_PREFIX "STATE=%s", ev->firing ? "firing" : "cleared");
    env[k++] = xasprintf(ENV_PREFIX "SEVERITY=%s", ev->severity);
    env[k++] = xasprintf(ENV_PREFIX "GPU=%s", gpu);
    env[k++] = xasprintf(ENV_PREFIX "PID=%s", pid);
    env[k++] = xasprintf(ENV_PREFIX "TITLE=%s", ev->title);
    env[k++] = xasprintf(ENV_PREFIX "VALUE=%s", ev->value);
    env[k++] = xasprintf(ENV_PREFIX "SUBJECT=%s", ev->subject);
    env[k++] = xasprintf(ENV_PREFIX "SPEC=%s", ev->spec->text);
    env[k++] = xasprintf(ENV_PREFIX "HOST=%s", hostname ? hostname : "");
    env[k++] = xasprintf(ENV_PREFIX "TIME=%s", iso);
    env[k] = NULL;
    return env;
}

void alert_environment_free(char **env)
{
    free_words(env);
}

struct child {
    pid_t pid;
    int64_t deadline_ms;
    bool terminated; /* SIGTERM sent; deadline_ms is now the SIGKILL's */
    char *what;
};

struct queued {
    const struct alert_spec *spec;
    char **env;
    char *what;
};

struct alert_runner {
    int64_t timeout_ms;
    char *hostname;
    int devnull;
    struct child running[MAX_RUNNING];
    size_t n_running;
    struct queued queue[MAX_QUEUED];
    size_t n_queued;
    struct alert_runner_stats st;
    char *last_error;
};

struct alert_runner *alert_runner_new(int64_t timeout_ms, const char *hostname)
{
    struct alert_runner *r = xcalloc(1, sizeof(*r));

    r->timeout_ms = timeout_ms;
    r->hostname = xstrdup(hostname ? hostname : "");
    r->devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    return r;
}

static void runner_error(struct alert_runner *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void runner_error(struct alert_runner *r, const char *fmt, ...)
{
    va_list ap;

    free(r->last_error);
    va_start(ap, fmt);
    r->last_error = xvasprintf(fmt, ap);
    va_end(ap);
}

/*
 * Starts one command. Everything the child needs is ready before fork: between fork and execve
 * the child, a copy of a threaded process, makes only async-signal-safe calls.
 */
static bool launch(struct alert_runner *r, struct queued *q, int64_t now)
{
    static const char failed[] = "gpudoctor watch: cannot run the alert command\n";
    struct child *c;
    sigset_t none;
    pid_t pid;

    sigemptyset(&none);
    pid = fork();
    if (pid < 0) {
        runner_error(r, "%s: fork: %s", q->what, strerror(errno));
        return false;
    }
    if (pid == 0) {
        /* Its own process group, so a timeout kills what it started too. */
        setpgid(0, 0);
        signal(SIGPIPE, SIG_DFL);
        sigprocmask(SIG_SETMASK, &none, NULL);
        if (r->devnull >= 0)
            dup2(r->devnull, STDIN_FILENO);
        dup2(STDERR_FILENO, STDOUT_FILENO); /* never into the view or the --plain stream */
        close_range(3, ~0u, 0);
        execve(q->spec->path, q->spec->argv, q->env);
        if (write(STDERR_FILENO, failed, sizeof(failed) - 1) < 0) {
            /* nothing more to say */
        }
        _exit(127);
    }
    setpgid(pid, pid); /* also here: the child may not have run yet when we kill the group */
    c = &r->running[r->n_running++];
    c->pid = pid;
    c->deadline_ms = now + r->timeout_ms;
    c->terminated = false;
    c->what = q->what;
    q->what = NULL;
    r->st.started++;
    return true;
}

static void queued_free(struct queued *q)
{
    alert_environment_free(q->env);
    free(q->what);
    memset(q, 0, sizeof(*q));
}

void alert_runner_submit(struct alert_runner *r, const struct alert_event *ev, int64_t now_ms)
{
    struct queued q;

    if (ev->firing)
        r->st.fired++;
    else
        r->st.cleared++;
    if (ev->spec->argv == NULL)
        return;
    if (r->n_queued == MAX_QUEUED) {
        r->st.dropped++;
        runner_error(r, "alert %s: %zu commands already waiting, this one dropped", ev->id,
                     (size_t)MAX_QUEUED);
        return;
    }
    q.spec = ev->spec;
    q.env = alert_environment(ev, r->hostname, time_real_ms());
    q.what =
        xasprintf("alert %s (%s) %s", ev->id, ev->firing ? "firing" : "cleared", ev->spec->path);
    r->queue[r->n_queued++] = q;
    alert_runner_poll(r, now_ms);
}

static void reaped(struct alert_runner *r, const struct child *c, int status)
{
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return;
    r->st.failed++;
    if (WIFEXITED(status))
        runner_error(r, "%s exited with status %d%s", c->what, WEXITSTATUS(status),
                     WEXITSTATUS(status) == 127 ? " (could not be run)" : "");
    else if (WIFSIGNALED(status))
        runner_error(r, "%s %s by signal %d (%s)", c->what,
                     c->terminated ? "ran too long and was killed" : "was killed", WTERMSIG(status),
                     strsignal(WTERMSIG(status)));
}

void alert_runner_poll(struct alert_runner *r, int64_t now_ms)
{
    size_t k = 0;

    for (size_t i = 0; i < r->n_running; i++) {
        struct child *c = &r->running[i];
        int status;
        pid_t got = waitpid(c->pid, &status, WNOHANG);

        if (got == c->pid || (got < 0 && errno == ECHILD)) {
            if (got == c->pid)
                reaped(r, c, status);
            free(c->what);
            continue;
        }
        if (now_ms >= c->deadline_ms) {
            kill(-c->pid, c->terminated ? SIGKILL : SIGTERM);
            if (!c->terminated)
                c->deadline_ms = now_ms + KILL_GRACE_MS;
            c->terminated = true;
        }
        r->running[k++] = *c;
    }
    r->n_running = k;
    while (r->n_queued > 0 && r->n_running < MAX_RUNNING) {
        struct queued q = r->queue[0];

        memmove(r->queue, r->queue + 1, (r->n_queued - 1) * sizeof(*r->queue));
        r->n_queued--;
        if (!launch(r, &q, now_ms))
            r->st.dropped++;
        queued_free(&q);
    }
}

int64_t alert_runner_due(const struct alert_runner *r)
{
    int64_t due = -1;

    for (size_t i = 0; i < r->n_running; i++) {
        if (due < 0 || r->running[i].deadline_ms < due)
            due = r->running[i].deadline_ms;
    }
    return due;
}

void alert_runner_stats(const struct alert_runner *r, struct alert_runner_stats *out)
{
    *out = r->st;
    out->running = r->n_running;
}

const char *alert_runner_last_error(const struct alert_runner *r)
{
    return r->last_error;
}

void alert_runner_finish(struct alert_runner *r, int64_t grace_ms)
{
    if (r == NULL)
        return;
    for (size_t i = 0; i < r->n_queued; i++) {
        r->st.dropped++;
        queued_free(&r->queue[i]);
    }
    r->n_queued = 0;
    while (r->n_running > 0 && time_mono_ms() < grace_ms) {
        alert_runner_poll(r, time_mono_ms());
        if (r->n_running > 0)
            time_sleep_ms(20);
    }
    for (size_t i = 0; i < r->n_running; i++) {
        kill(-r->running[i].pid, SIGKILL);
        waitpid(r->running[i].pid, NULL, 0);
        free(r->running[i].what);
    }
    if (r->devnull >= 0)
        close(r->devnull);
    free(r->last_error);
    free(r->hostname);
    free(r);
}
