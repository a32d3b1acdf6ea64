/*
 * gpudoctor serve: a Prometheus exporter (/metrics), the findings as JSON (/findings) and a
 * health check (/healthz), answered from the last collection while a background thread collects
 * every --interval. --textfile writes the same metrics for node_exporter; --once collects once,
 * writes and exits. docs/serve.md and docs/prometheus.md describe it.
 */
#include "cmd/cmd.h"
#include "render/metrics.h"
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
    OPT_DESCRIBE,
};

static const struct cmd_option options[] = {
    { "listen", OPT_LISTEN, required_argument, "ADDR:PORT",
      "where to listen (default " SERVE_DEFAULT_LISTEN "; [::1]:9464 for IPv6, :9464 for every "
      "address; port 0: the system chooses)" },
    { "interval", OPT_INTERVAL, required_argument, "DUR",
      N_("time between collections (default 15s, at least 1s; longer than --window)") },
    { "history", OPT_HISTORY, required_argument, "DUR",
      N_("how far back rules look for trends (default 10m)") },
    { "top-processes", OPT_TOP_PROCESSES, required_argument, "N",
      N_("per-process GPU memory series for the N largest (default 20)") },
    { "textfile", OPT_TEXTFILE, required_argument, "DIR",
      N_("also write DIR/gpudoctor.prom (atomically) after each collection, for node_exporter's "
         "textfile collector") },
    { "once", OPT_ONCE, no_argument, NULL,
      N_("collect once, write the metrics (stdout or --textfile), exit") },
    { "threads", OPT_THREADS, required_argument, "N", N_("HTTP threads (default 2)") },
    { "max-connections", OPT_MAX_CONN, required_argument, "N",
      N_("open connections at most (default 512)") },
    { "connection-timeout", OPT_CONN_TIMEOUT, required_argument, "DUR",
      N_("close a connection idle this long (default 10s)") },
    { "describe-metrics", OPT_DESCRIBE, no_argument, NULL,
      N_("print the table of metrics (Markdown) and exit") },
    { NULL, 0, 0, NULL, NULL },
};

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
    } else {
        fwrite(r->metrics, 1, r->metrics_len, stdout); /* a failure: cmd_finish_stdout says it */
        if (cmd_finish_stdout("serve") != 0)
            rc = EXIT_UNKNOWN;
    }
    if (!r->success)
        rc = EXIT_UNKNOWN;
    serve_record(&st); /* after the metrics are out: a full disk never costs them */
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

/* What serve's own options say. */
struct opts {
    struct serve_opts so;
    struct serve_http_opts ho;
    bool once, describe;
};

static int option(void *ctx, int key, char *arg)
{
    struct opts *o = ctx;
    uint32_t u;
    int64_t ms;

    switch (key) {
    case OPT_LISTEN:
        o->ho.listen = arg;
        return 0;
    case OPT_INTERVAL:
        return parse_duration("interval", arg, 1000, 86400000, &o->so.interval_ms) ? 0 : EXIT_USAGE;
    case OPT_HISTORY:
        return parse_duration("history", arg, 0, 7 * 86400000LL, &o->so.history_ms) ? 0
                                                                                    : EXIT_USAGE;
    case OPT_TOP_PROCESSES:
        if (!parse_count("top-processes", arg, 0, 10000, &u))
            return EXIT_USAGE;
        o->so.metrics.top_processes = u;
        return 0;
    case OPT_TEXTFILE:
        o->so.textfile_dir = arg;
        return 0;
    case OPT_ONCE:
        o->once = true;
        return 0;
    case OPT_THREADS:
        return parse_count("threads", arg, 1, 64, &o->ho.threads) ? 0 : EXIT_USAGE;
    case OPT_MAX_CONN:
        return parse_count("max-connections", arg, 1, 100000, &o->ho.max_connections) ? 0
                                                                                      : EXIT_USAGE;
    case OPT_CONN_TIMEOUT:
        if (!parse_duration("connection-timeout", arg, 1000, 3600000, &ms))
            return EXIT_USAGE;
        o->ho.timeout_s = (unsigned)(ms / 1000);
        return 0;
    case OPT_DESCRIBE:
        o->describe = true;
        return 0;
    }
    return EXIT_USAGE;
}

static int exec(int argc, char **argv)
{
    struct opts o = { .ho = { SERVE_DEFAULT_LISTEN, SERVE_DEFAULT_THREADS, SERVE_DEFAULT_MAX_CONN,
                              SERVE_DEFAULT_CONN_TIMEOUT_S, 0 } };
    struct serve_opts *so = &o.so;
    struct cmd_front f;
    struct sockaddr_storage addr;
    socklen_t addr_len;
    char *cause = NULL;
    int rc;

    so->interval_ms = SERVE_DEFAULT_INTERVAL;
    so->history_ms = SERVE_DEFAULT_HISTORY;
    so->metrics.top_processes = METRICS_DEFAULT_TOP_PROCESSES;
    rc = cmd_front_parse(&f, &cmd_serve, argc, argv, option, &o);
    if (rc != CMD_GO)
        goto out;
    if (o.describe) {
        metrics_describe(stdout);
        rc = cmd_finish_stdout("serve") == 0 ? EXIT_HEALTHY : EXIT_UNKNOWN;
        goto out;
    }
    rc = EXIT_USAGE;
    so->collect = f.collect;
    if (serve_parse_listen(o.ho.listen, &addr, &addr_len, &cause) != 0) {
        cmd_error("serve", "%s", cause);
        free(cause);
        goto out;
    }
    if (!o.once && so->collect.window_ms >= so->interval_ms) {
        cmd_error("serve", "--window (%.1fs) must be shorter than --interval (%.1fs)",
                  (double)so->collect.window_ms / 1000.0, (double)so->interval_ms / 1000.0);
        goto out;
    }
    if (so->collect.window_ms >= so->collect.timeout_ms)
        cmd_error("serve", "--timeout (%.1fs) will cut every --window (%.1fs) short",
                  (double)so->collect.timeout_ms / 1000.0, (double)so->collect.window_ms / 1000.0);
    if (so->textfile_dir != NULL && access(so->textfile_dir, W_OK) != 0) {
        cmd_error("serve", "--textfile %s: %s", so->textfile_dir, strerror(errno));
        rc = EXIT_UNKNOWN; /* the option is right; the machine does not let it be used */
        goto out;
    }
    so->rules = &f.config.rules;
    so->state_dir = f.state_dir;
    /* Old data is worse than missing data only once a whole cycle more than expected is lost. */
    o.ho.stale_ms = 2 * so->interval_ms + so->collect.window_ms + so->collect.timeout_ms;
    i18n_off(); /* what it prints from here is its log */
    rc = o.once ? run_once(so) : run_server(so, &o.ho);
out:
    cmd_front_free(&f);
    return rc;
}

const struct cmd cmd_serve = {
    .name = "serve",
    .synopsis = "[options]",
    .summary = N_("Prometheus exporter: /metrics, /findings, /healthz"),
    .about = N_("Prometheus exporter: collects every --interval in the background and answers\n"
                "  /metrics   the Prometheus text format (docs/prometheus.md lists every metric)\n"
                "  /findings  the findings as JSON, with the age of the data\n"
                "  /healthz   200 when the last collection is recent, 503 otherwise\n"
                "from the last collection, so a scrape never waits for one.\n"),
    .options = options,
    .groups = CMD_G_COLLECT | CMD_G_ONLY | CMD_G_CONFIG | CMD_G_STATE,
    .window_ms = SERVE_DEFAULT_WINDOW,
    .epilogue =
        N_("Stops cleanly on SIGINT or SIGTERM.\n"
           "Exit status: 0 after a clean stop (--once: the metrics were written), 3 when it\n"
           "could not serve or collect, 64 usage error.\n"),
    .exec = exec,
};
