/*
 * gpudoctor watch: a live view of the GPUs with history, the findings as they appear and clear,
 * trends (leaks, swings, throttling, heating, idle GPUs holding memory), --record to a file that
 * `check --from` reads, and --alert rules that run a command. src/watch/ does the work;
 * docs/watch.md describes it.
 */
#include "cmd/cmd.h"
#include "util/strutil.h"
#include "util/timeutil.h"
#include "util/xalloc.h"
#include "watch/watch.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum {
    OPT_PLAIN = OPT__COMMON_END,
    OPT_RECORD,
    OPT_HISTORY,
    OPT_ALERT,
    OPT_ALERT_TIMEOUT,
    OPT_RULES_WINDOW,
};

#define MIN_INTERVAL_MS          100
#define MAX_INTERVAL_MS          3600000
#define DEFAULT_ALERT_TIMEOUT_MS 10000

static const struct cmd_option options[] = {
    { "interval", 'n', required_argument, "DUR",
      N_("time between readings (default 1s, at least 100ms)") },
    { "count", 'c', required_argument, "N",
      N_("stop after N readings (default: until q or a signal)") },
    { "plain", OPT_PLAIN, no_argument, NULL,
      N_("one line per GPU per interval, for logs and pipes (the default when standard output is "
         "not a terminal)") },
    { "record", OPT_RECORD, required_argument, "FILE",
      N_("also write every reading to FILE as JSON Lines; 'gpudoctor check --from FILE' analyses "
         "it, trends included") },
    { "alert", OPT_ALERT, required_argument, "SPEC",
      N_("run a command when a finding or a reading fires (repeatable); SPEC is one of\n"
         " RULE-ID|GLOB|critical|warning|info[ for DUR][:COMMAND ARGS]\n"
         " READING>VALUE[ for DUR][:COMMAND ARGS]   (> >= < <=)\n"
         "e.g. 'mem.leak:/usr/local/bin/page' or 'mem_used_pct>95 for 60s:/usr/local/bin/page "
         "gpu-memory'; the command runs without a shell, the alert in GPUDOCTOR_ALERT_* variables "
         "(docs/watch.md)") },
    { "alert-timeout", OPT_ALERT_TIMEOUT, required_argument, "DUR",
      N_("kill an alert command still running after DUR (default 10s)") },
    { "history", OPT_HISTORY, required_argument, "DUR",
      N_("how far back the trend rules look (default 30m)") },
    { "window", OPT_RULES_WINDOW, required_argument, "DUR",
      N_("the other rules judge the last DUR of readings (default 10s)") },
    { NULL, 0, 0, NULL, NULL },
};

static bool parse_duration(const char *opt, const char *arg, int64_t min_ms, int64_t max_ms,
                           int64_t *out)
{
    if (!time_parse_duration_ms(arg, out) || *out < min_ms || *out > max_ms) {
        cmd_error("watch", "--%s: '%s' is not a duration from %gs to %gs (examples: 1, 500ms, 2s)",
                  opt, arg, (double)min_ms / 1000.0, (double)max_ms / 1000.0);
        return false;
    }
    return true;
}

/* What watch's own options say: watch_opts, and the alerts until they are handed over. */
struct opts {
    struct watch_opts w;
    struct alert_spec *alerts;
    size_t n_alerts;
    bool plain;
};

static int option(void *ctx, int key, char *arg)
{
    struct opts *o = ctx;
    char *cause = NULL;
    uint64_t count;

    switch (key) {
    case 'n':
        return parse_duration("interval", arg, MIN_INTERVAL_MS, MAX_INTERVAL_MS, &o->w.interval_ms)
                   ? 0
                   : EXIT_USAGE;
    case 'c':
        if (!str_to_u64(arg, 10, &count) || count == 0) {
            cmd_error("watch", "--count: '%s' is not a number of readings (1 or more)", arg);
            return EXIT_USAGE;
        }
        o->w.count = count;
        return 0;
    case OPT_PLAIN:
        o->plain = true;
        return 0;
    case OPT_RECORD:
        o->w.record_path = arg;
        return 0;
    case OPT_HISTORY:
        return parse_duration("history", arg, 10000, 7 * 86400000LL, &o->w.history_ms) ? 0
                                                                                       : EXIT_USAGE;
    case OPT_RULES_WINDOW:
        return parse_duration("window", arg, 1000, 3600000, &o->w.window_ms) ? 0 : EXIT_USAGE;
    case OPT_ALERT:
        o->alerts = xreallocarray(o->alerts, o->n_alerts + 1, sizeof(*o->alerts));
        if (alert_spec_parse(&o->alerts[o->n_alerts], arg, &cause) != 0) {
            cmd_error("watch", "--alert '%s': %s", arg, cause);
            free(cause);
            return EXIT_USAGE;
        }
        o->n_alerts++;
        return 0;
    case OPT_ALERT_TIMEOUT:
        return parse_duration("alert-timeout", arg, 100, 3600000, &o->w.alert_timeout_ms)
                   ? 0
                   : EXIT_USAGE;
    }
    return EXIT_USAGE;
}

static int exec(int argc, char **argv)
{
    struct opts o;
    struct cmd_front f;
    int rc;

    memset(&o, 0, sizeof(o));
    o.w.interval_ms = WATCH_DEFAULT_INTERVAL_MS;
    o.w.window_ms = WATCH_DEFAULT_WINDOW_MS;
    o.w.history_ms = WATCH_DEFAULT_HISTORY_MS;
    o.w.alert_timeout_ms = DEFAULT_ALERT_TIMEOUT_MS;
    rc = cmd_front_parse(&f, &cmd_watch, argc, argv, option, &o);
    if (rc != CMD_GO)
        goto out;
    if (o.w.window_ms < o.w.interval_ms)
        o.w.window_ms = o.w.interval_ms; /* at least one reading */
    o.w.collect = f.collect;
    o.w.rules = &f.config.rules;
    o.w.state_dir = f.state_dir;
    o.w.plain = o.plain || !isatty(STDOUT_FILENO);
    if (o.w.plain)
        i18n_off(); /* log lines */
    o.w.no_color = f.color == RENDER_NEVER;
    o.w.ascii = f.ascii == RENDER_ALWAYS;
    o.w.alerts = o.alerts;
    o.w.n_alerts = o.n_alerts;
    rc = watch_run(&o.w);
out:
    for (size_t i = 0; i < o.n_alerts; i++)
        alert_spec_free(&o.alerts[i]);
    free(o.alerts);
    cmd_front_free(&f);
    return rc;
}

const struct cmd cmd_watch = {
    .name = "watch",
    .synopsis = "[options]",
    .summary = N_("live view with history, trends, findings as they appear, alerts"),
    .about = N_("Live view: per GPU utilisation, memory, temperature, power, clocks and throttle\n"
                "reasons with history graphs, the GPU processes, and the findings as they appear\n"
                "and clear. Trends over the history: leaks (with slope and time-to-full),\n"
                "utilisation swinging, repeated throttling, temperature climbing, GPUs idle while\n"
                "memory is held.\n"),
    .options = options,
    .groups = CMD_G_COLLECT | CMD_G_ONLY | CMD_G_CONFIG | CMD_G_COLOR | CMD_G_ASCII | CMD_G_STATE,
    .window_ms = 0, /* each reading is one instant; --window is the rules' */
    .epilogue = N_("Keys: q quit, s sort processes, Tab switch list, arrows or j/k select, e or\n"
                   "Enter explain the finding, r end the selected process (asks first), ? help.\n"
                   "Exit status: 0 after q, --count or a signal; 3 when it could not start or its\n"
                   "output (--plain, --record) could not be written; 64 usage error.\n"),
    .exec = exec,
};
