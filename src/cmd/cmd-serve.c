/*
 * gpudoctor serve: a Prometheus exporter (/metrics), the findings as JSON (/findings) and a
 * health check (/healthz), answered from the last collection while a background thread collects
 * every --interval. --textfile writes the same metrics for node_exporter; --once collects once,
 * writes and exits. docs/serve.md and docs/prometheus.md describe it.
 */
#include "cmd/cmd.h"
#include "render/metrics.h"
#include "rules/config.h"
#include "serve/serve.h"
#include "util/strutil.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

enum {
    OPT_LISTEN = OPT__COMMON_END,
    OPT_INTERVAL,
    OPT_HISTORY,
    OPT_TOP_PROCESSES,
    OPT_TEXTFILE,
    OPT_ONCE,
    OPT_THREADS,
    OPT_MAX_CONN,
    OPT_CONN_TIMEOUT,
    OPT_SET,
    OPT_DESCRIBE,
};

static void usage(FILE *out)
{
    fputs("Usage: gpudoctor serve [options]\n"
          "\n"
          "Prometheus exporter: collects every --interval in the background and answers\n"
          "  /metrics   the Prometheus text format (docs/prometheus.md lists every metric)\n"
          "  /findings  the findings as JSON, with the age of the data\n"
          "  /healthz   200 when the last collection is recent, 503 otherwise\n"
          "from the last collection, so a scrape never waits for one.\n"
          "\n"
          "Options:\n"
          "  --listen ADDR:PORT\n"
          "                    where to listen (default " SERVE_DEFAULT_LISTEN "; [::1]:9464 for\n"
          "                    IPv6, :9464 for every address; port 0: the system chooses)\n"
          "  --interval DUR    time between collections (default 15s, at least 1s)\n"
          "  --window DUR      sampling window inside each collection (default 2s; 0 = one\n"
          "                    reading; shorter than --interval)\n"
          "  --history DUR     how far back rules look for trends (default 10m)\n"
          "  --top-processes N\n"
          "                    per-process GPU memory series for the N largest (default 20)\n"
          "  --textfile DIR    also write DIR/gpudoctor.prom (atomically) after each\n"
          "                    collection, for node_exporter's textfile collector\n"
          "  --once            collect once, write the metrics (stdout or --textfile), exit\n"
          "  --threads N       HTTP threads (default 2)\n"
          "  --max-connections N\n"
          "                    open connections at most (default 512)\n"
          "  --connection-timeout DUR\n"
          "                    close a connection idle this long (default 10s)\n"
          "  --config FILE     read thresholds from FILE (default /etc/gpudoctor.conf,\n"
          "                    or $GPUDOCTOR_CONFIG, when it exists)\n"
          "  --set KEY=VALUE   override one threshold, or disable=RULE-ID (repeatable)\n"
          "  --describe-metrics\n"
          "                    print the table of metrics (Markdown) and exit\n" COMMON_COLLECT_HELP
          "  -h, --help        show this help\n"
          "\n"
          "Stops cleanly on SIGINT or SIGTERM.\n"
          "Exit status: 0 after a clean stop (--once: the metrics were written), 3 when it\n"
          "could not serve or collect, 64 usage error.\n",
          out);
}

static bool parse_count(const char *opt, const char *arg, uint32_t min, uint32_t max, uint32_t *out)
{
    if (!str_to_u32(arg, 10, out) || *out < min || *out > max) {
        cmd_error("serve", "--%s: '%s' is not a number from %u to %u", opt, arg, (unsigned)min,
                  (unsigned)max);
        return false;
    }
    return true;
}

static bool parse_duration(const char *opt, const char *arg, int64_t min_ms, int64_t max_ms,
                           int64_t *out)
{
    if (!time_parse_duration_ms(arg, out) || *out < min_ms || *out > max_ms) {
        cmd_error("serve", "--%s: '%s' is not a duration from %.1fs to %.0fs", opt, arg,
                  (double)min_ms / 1000.0, (double)max_ms / 1000.0);
        return false;
    }
    return true;
}

/* ---- stopping on a signal: the handler writes to a pipe the main thread waits on ---- */

static int stop_pipe[2] = { -1, -1 };

static void on_signal(int sig)
{
    int saved = errno;
    unsigned char c = (unsigned char)sig;

    if (write(stop_pipe[1], &c, 1) < 0) {
        /* the pipe is full: a stop is already pending */
    }
    errno = saved;
}

static int wait_for_stop(void)
{
    struct sigaction sa;
    unsigned char c = 0;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    for (;;) {
        ssize_t n = read(stop_pipe[0], &c, 1);

        if (n == 1)
            return c;
        if (n < 0 && errno == EINTR)
            continue;
        return 0;
    }
}

/* Enough descriptors for the connection limit, as far as the hard limit allows. */
static void raise_fd_limit(unsigned max_connections)
{
    struct rlimit rl;
    rlim_t want = (rlim_t)max_connections + 64;

    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= want)
        return;
    rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > want ? want : rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
}

static int run_once(struct serve_opts *so)
{
    struct serve_state st;
    struct serve_result *r;
    char *cause = NULL;
    int rc = EXIT_HEALTHY;

    serve_state_init(&st, so);
    r = serve_cycle(&st);
    if (so->textfile_dir != NULL) {
        if (serve_write_textfile(so->textfile_dir, r, &cause) != 0) {
            cmd_error("serve", "--textfile: %s", cause);
            free(cause);
            rc = EXIT_UNKNOWN;
        }
    } else if (fwrite(r->metrics, 1, r->metrics_len, stdout) != r->metrics_len) {
        cmd_error("serve", "cannot write to standard output: %s", strerror(errno));
        rc = EXIT_UNKNOWN;
    } else if (cmd_finish_stdout("serve") != 0) {
        rc = EXIT_UNKNOWN;
    }
    if (!r->success)
        rc = EXIT_UNKNOWN;
    serve_result_unref(r);
    serve_state_free(&st);
    return rc;
}

static int run_server(struct serve_opts *so, struct serve_http_opts *ho)
{
    struct serve_cache cache;
    struct serve_state st;
    struct serve_http *http;
    struct serve_worker *w;
    char *cause = NULL;
    int sig;

    if (pipe2(stop_pipe, O_CLOEXEC) != 0) {
        cmd_error("serve", "cannot create a pipe: %s", strerror(errno));
        return EXIT_UNKNOWN;
    }
    raise_fd_limit(ho->max_connections);
    serve_cache_init(&cache, serve_result_initial());
    serve_state_init(&st, so);
    http = serve_http_start(ho, &cache, &cause);
    if (http == NULL) {
        cmd_error("serve", "%s", cause);
        free(cause);
        serve_state_free(&st);
        serve_cache_destroy(&cache);
        return EXIT_UNKNOWN;
    }
    w = serve_worker_start(&st, &cache, &cause);
    if (w == NULL) {
        cmd_error("serve", "%s", cause);
        free(cause);
        serve_http_stop(http);
        serve_state_free(&st);
        serve_cache_destroy(&cache);
        return EXIT_UNKNOWN;
    }
    fprintf(stderr, "gpudoctor serve: listening on %s (port %u): /metrics /findings /healthz\n",
            ho->listen, (unsigned)serve_http_port(http));
    fflush(stderr);
    sig = wait_for_stop();
    fprintf(stderr, "gpudoctor serve: %s, stopping after %llu requests\n",
            sig == SIGINT ? "interrupted" : "terminated",
            (unsigned long long)serve_http_requests(http));
    serve_http_stop(http);
    serve_worker_stop(w);
    serve_state_free(&st);
    serve_cache_destroy(&cache);
    close(stop_pipe[0]);
    close(stop_pipe[1]);
    return EXIT_HEALTHY;
}

static int exec(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "listen", required_argument, NULL, OPT_LISTEN },
        { "interval", required_argument, NULL, OPT_INTERVAL },
        { "history", required_argument, NULL, OPT_HISTORY },
        { "top-processes", required_argument, NULL, OPT_TOP_PROCESSES },
        { "textfile", required_argument, NULL, OPT_TEXTFILE },
        { "once", no_argument, NULL, OPT_ONCE },
        { "threads", required_argument, NULL, OPT_THREADS },
        { "max-connections", required_argument, NULL, OPT_MAX_CONN },
        { "connection-timeout", required_argument, NULL, OPT_CONN_TIMEOUT },
        { "config", required_argument, NULL, OPT_CONFIG },
        { "set", required_argument, NULL, OPT_SET },
        { "describe-metrics", no_argument, NULL, OPT_DESCRIBE },
        { "help", no_argument, NULL, 'h' },
        COMMON_COLLECT_LONGOPTS,
        { NULL, 0, NULL, 0 },
    };
    struct serve_opts so;
    struct serve_http_opts ho = { SERVE_DEFAULT_LISTEN, SERVE_DEFAULT_THREADS,
                                  SERVE_DEFAULT_MAX_CONN, SERVE_DEFAULT_CONN_TIMEOUT_S, 0 };
    struct config cfg;
    const char *config_path = NULL;
    char **sets = xcalloc((size_t)argc + 1, sizeof(*sets));
    size_t n_sets = 0;
    bool once = false;
    struct sockaddr_storage addr;
    socklen_t addr_len;
    char *cause = NULL;
    uint32_t u;
    int64_t ms;
    int opt, rc = EXIT_USAGE;

    config_init(&cfg);
    memset(&so, 0, sizeof(so));
    cmd_collect_defaults(&so.collect, SERVE_DEFAULT_WINDOW);
    so.interval_ms = SERVE_DEFAULT_INTERVAL;
    so.history_ms = SERVE_DEFAULT_HISTORY;
    so.metrics.top_processes = METRICS_DEFAULT_TOP_PROCESSES;
    while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (opt) {
        case OPT_LISTEN:
            ho.listen = optarg;
            break;
        case OPT_INTERVAL:
            if (!parse_duration("interval", optarg, 1000, 86400000, &so.interval_ms))
                goto out;
            break;
        case OPT_HISTORY:
            if (!parse_duration("history", optarg, 0, 7 * 86400000LL, &so.history_ms))
                goto out;
            break;
        case OPT_TOP_PROCESSES:
            if (!parse_count("top-processes", optarg, 0, 10000, &u))
                goto out;
            so.metrics.top_processes = u;
            break;
        case OPT_TEXTFILE:
            so.textfile_dir = optarg;
            break;
        case OPT_ONCE:
            once = true;
            break;
        case OPT_THREADS:
            if (!parse_count("threads", optarg, 1, 64, &ho.threads))
                goto out;
            break;
        case OPT_MAX_CONN:
            if (!parse_count("max-connections", optarg, 1, 100000, &ho.max_connections))
                goto out;
            break;
        case OPT_CONN_TIMEOUT:
            if (!parse_duration("connection-timeout", optarg, 1000, 3600000, &ms))
                goto out;
            ho.timeout_s = (unsigned)(ms / 1000);
            break;
        case OPT_CONFIG:
            config_path = optarg;
            break;
        case OPT_SET:
            sets[n_sets++] = optarg;
            break;
        case OPT_DESCRIBE:
            metrics_describe(stdout);
            rc = fflush(stdout) == 0 ? EXIT_HEALTHY : EXIT_UNKNOWN;
            goto out;
        case 'h':
            usage(stdout);
            rc = EXIT_HEALTHY;
            goto out;
        default:
            rc = cmd_collect_option("serve", &so.collect, opt, optarg);
            if (rc == 0) {
                rc = cmd_usage_error(&cmd_serve);
                goto out;
            }
            if (rc < 0) {
                rc = EXIT_USAGE;
                goto out;
            }
        }
    }
    rc = EXIT_USAGE;
    if (optind < argc) {
        cmd_error("serve", "unexpected argument '%s'", argv[optind]);
        rc = cmd_usage_error(&cmd_serve);
        goto out;
    }
    if (serve_parse_listen(ho.listen, &addr, &addr_len, &cause) != 0) {
        cmd_error("serve", "%s", cause);
        free(cause);
        goto out;
    }
    if (!once && so.collect.window_ms >= so.interval_ms) {
        cmd_error("serve", "--window (%.1fs) must be shorter than --interval (%.1fs)",
                  (double)so.collect.window_ms / 1000.0, (double)so.interval_ms / 1000.0);
        goto out;
    }
    if (so.textfile_dir != NULL && access(so.textfile_dir, W_OK) != 0) {
        cmd_error("serve", "--textfile %s: %s", so.textfile_dir, strerror(errno));
        goto out;
    }
    if (cmd_load_config("serve", &cfg, config_path, sets, n_sets) != 0)
        goto out;
    so.rules = &cfg.rules;
    /* Old data is worse than missing data only once a whole cycle more than expected is lost. */
    ho.stale_ms = 2 * so.interval_ms + so.collect.window_ms + so.collect.timeout_ms;
    rc = once ? run_once(&so) : run_server(&so, &ho);
out:
    config_free(&cfg);
    free(sets);
    return rc;
}

const struct cmd cmd_serve = {
    "serve", "[options]", "Prometheus exporter: /metrics, /findings, /healthz", exec, usage,
};
