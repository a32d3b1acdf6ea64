/*
 * gpudoctor watch: a live view of the GPUs with history, the findings as they appear and clear,
 * trends (leaks, swings, throttling, heating, idle GPUs holding memory), --record to a file that
 * `check --from` reads, and --alert rules that run a command. src/watch/ does the work;
 * docs/watch.md describes it.
 */
#include "cmd/cmd.h"
#include "rules/config.h"
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
    OPT_ASCII,
    OPT_SET,
};

#define MIN_INTERVAL_MS          100
#define MAX_INTERVAL_MS          3600000
#define DEFAULT_ALERT_TIMEOUT_MS 10000

static void usage(FILE *out)
{
    fputs("Usage: gpudoctor watch [options]\n"
          "\n"
          "Live view: per GPU utilisation, memory, temperature, power, clocks and throttle\n"
          "reasons with history graphs, the GPU processes, and the findings as they appear\n"
          "and clear. Trends over the history: leaks (with slope and time-to-full),\n"
          "utilisation swinging, repeated throttling, temperature climbing, GPUs idle while\n"
          "memory is held.\n"
          "\n"
          "Options:\n"
          "  -n, --interval DUR\n"
          "                    time between readings (default 1s, at least 100ms)\n"
          "  -c, --count N     stop after N readings (default: until q or a signal)\n"
          "  --plain           one line per GPU per interval, for logs and pipes (the\n"
          "                    default when standard output is not a terminal)\n"
          "  --record FILE     also write every reading to FILE as JSON Lines; 'gpudoctor\n"
          "                    check --from FILE' analyses it, trends included\n"
          "  --alert SPEC      run a command when a finding or a reading fires\n"
          "                    (repeatable); SPEC is one of\n"
          "                     RULE-ID|GLOB|critical|warning|info[ for DUR][:COMMAND ARGS]\n"
          "                     READING>VALUE[ for DUR][:COMMAND ARGS]   (> >= < <=)\n"
          "                    e.g. 'mem.leak:/usr/local/bin/page' or\n"
          "                    'mem_used_pct>95 for 60s:/usr/local/bin/page gpu-memory';\n"
          "                    the command runs without a shell, the alert in\n"
          "                    GPUDOCTOR_ALERT_* variables (docs/watch.md)\n"
          "  --alert-timeout DUR\n"
          "                    kill an alert command still running after DUR (default 10s)\n"
          "  --history DUR     how far back the trend rules look (default 30m)\n"
          "  --window DUR      the other rules judge the last DUR of readings (default 10s)\n"
          "  --ascii           graphs in ASCII characters even on a UTF-8 terminal\n"
          "  --no-color        no colours (also: NO_COLOR=1)\n"
          "  --config FILE     read thresholds from FILE (default /etc/gpudoctor.conf,\n"
          "                    or $GPUDOCTOR_CONFIG, when it exists)\n"
          "  --set KEY=VALUE   override one threshold, or disable=RULE-ID "
          "(repeatable)\n" COMMON_COLLECT_HELP "  -h, --help        show this help\n"
          "\n"
          "Keys: q quit, s sort processes, Tab switch list, arrows or j/k select, e or\n"
          "Enter explain the finding, r end the selected process (asks first), ? help.\n"
          "Exit status: 0 after q, --count or a signal; 3 when it could not start or its\n"
          "output (--plain, --record) could not be written; 64 usage error.\n",
          out);
}

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

static int exec(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "interval", required_argument, NULL, 'n' },
        { "count", required_argument, NULL, 'c' },
        { "plain", no_argument, NULL, OPT_PLAIN },
        { "record", required_argument, NULL, OPT_RECORD },
        { "history", required_argument, NULL, OPT_HISTORY },
        { "alert", required_argument, NULL, OPT_ALERT },
        { "alert-timeout", required_argument, NULL, OPT_ALERT_TIMEOUT },
        { "ascii", no_argument, NULL, OPT_ASCII },
        { "no-color", no_argument, NULL, OPT_NO_COLOR },
        { "config", required_argument, NULL, OPT_CONFIG },
        { "set", required_argument, NULL, OPT_SET },
        { "help", no_argument, NULL, 'h' },
        COMMON_COLLECT_LONGOPTS,
        { NULL, 0, NULL, 0 },
    };
    struct watch_opts o;
    struct config cfg;
    struct alert_spec *alerts = xcalloc((size_t)argc + 1, sizeof(*alerts));
    char **sets = xcalloc((size_t)argc + 1, sizeof(*sets));
    const char *config_path = NULL;
    size_t n_sets = 0, n_alerts = 0;
    bool plain = false;
    int opt, rc = EXIT_USAGE;

    memset(&o, 0, sizeof(o));
    config_init(&cfg);
    cmd_collect_defaults(&o.collect, 0);
    o.interval_ms = WATCH_DEFAULT_INTERVAL_MS;
    o.window_ms = WATCH_DEFAULT_WINDOW_MS;
    o.history_ms = WATCH_DEFAULT_HISTORY_MS;
    o.alert_timeout_ms = DEFAULT_ALERT_TIMEOUT_MS;
    while ((opt = getopt_long(argc, argv, "n:c:h", longopts, NULL)) != -1) {
        char *cause = NULL;
        uint64_t count;

        switch (opt) {
        case 'n':
            if (!parse_duration("interval", optarg, MIN_INTERVAL_MS, MAX_INTERVAL_MS,
                                &o.interval_ms))
                goto out;
            break;
        case 'c':
            if (!str_to_u64(optarg, 10, &count) || count == 0) {
                cmd_error("watch", "--count: '%s' is not a number of readings (1 or more)", optarg);
                goto out;
            }
            o.count = count;
            break;
        case OPT_PLAIN:
            plain = true;
            break;
        case OPT_RECORD:
            o.record_path = optarg;
            break;
        case OPT_HISTORY:
            if (!parse_duration("history", optarg, 10000, 7 * 86400000LL, &o.history_ms))
                goto out;
            break;
        case OPT_WINDOW:
            if (!parse_duration("window", optarg, 1000, 3600000, &o.window_ms))
                goto out;
            break;
        case OPT_ALERT:
            if (alert_spec_parse(&alerts[n_alerts], optarg, &cause) != 0) {
                cmd_error("watch", "--alert '%s': %s", optarg, cause);
                free(cause);
                goto out;
            }
            n_alerts++;
            break;
        case OPT_ALERT_TIMEOUT:
            if (!parse_duration("alert-timeout", optarg, 100, 3600000, &o.alert_timeout_ms))
                goto out;
            break;
        case OPT_ASCII:
            o.ascii = true;
            break;
        case OPT_NO_COLOR:
            o.no_color = true;
            break;
        case OPT_CONFIG:
            config_path = optarg;
            break;
        case OPT_SET:
            sets[n_sets++] = optarg;
            break;
        case 'h':
            usage(stdout);
            rc = EXIT_HEALTHY;
            goto out;
        default:
            rc = cmd_collect_option("watch", &o.collect, opt, optarg);
            if (rc == 0) {
                rc = cmd_usage_error(&cmd_watch);
                goto out;
            }
            if (rc < 0) {
                rc = EXIT_USAGE;
                goto out;
            }
            rc = EXIT_USAGE;
        }
    }
    if (optind < argc) {
        cmd_error("watch", "unexpected argument '%s'", argv[optind]);
        rc = cmd_usage_error(&cmd_watch);
        goto out;
    }
    if (o.window_ms < o.interval_ms)
        o.window_ms = o.interval_ms; /* at least one reading */
    if (cmd_load_config("watch", &cfg, config_path, sets, n_sets) != 0)
        goto out;
    o.rules = &cfg.rules;
    o.plain = plain || !isatty(STDOUT_FILENO);
    o.alerts = alerts;
    o.n_alerts = n_alerts;
    rc = watch_run(&o);
out:
    for (size_t i = 0; i < n_alerts; i++)
        alert_spec_free(&alerts[i]);
    free(alerts);
    free(sets);
    config_free(&cfg);
    return rc;
}

const struct cmd cmd_watch = {
    "watch", "[options]", "live view with history, trends, findings as they appear, alerts",
    exec,    usage,
};
