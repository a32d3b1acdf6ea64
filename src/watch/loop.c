/*
 * The main thread of watch: waits (poll) on signals, the collection thread and the keyboard;
 * for each collection keeps its last reading in the history, judges, records, runs alerts and
 * draws. Signals only write their number to a pipe, so the terminal is restored and the
 * recording finished by the ordinary code path on SIGINT, SIGTERM and SIGHUP.
 */
#include "serve/serve.h"
#include "util/i18n.h"
#include "util/timeutil.h"
#include "util/xalloc.h"
#include "watch/recording.h"
#include "watch/watch.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Alert commands still running at exit get this long. */
#define ALERT_EXIT_GRACE_MS 2000
/* The longest poll sleeps without a reason to wake. */
#define IDLE_POLL_MS 1000

static int signal_pipe[2] = { -1, -1 };

static void on_signal(int sig)
{
    int saved = errno;
    unsigned char b = (unsigned char)sig;

    if (write(signal_pipe[1], &b, 1) < 0) {
        /* full: a signal is already waiting */
    }
    errno = saved;
}

static int signals_setup(void)
{
    static const int handled[] = { SIGINT, SIGTERM, SIGHUP, SIGWINCH };
    struct sigaction sa;

    if (pipe2(signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0)
        return -1;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < ARRAY_SIZE(handled); i++)
        sigaction(handled[i], &sa, NULL);
    /* A closed pipe is an error from write, handled where it happens. */
    signal(SIGPIPE, SIG_IGN);
    return 0;
}

static void signals_restore(void)
{
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    signal(SIGWINCH, SIG_DFL);
    close(signal_pipe[0]);
    close(signal_pipe[1]);
    signal_pipe[0] = signal_pipe[1] = -1;
}

struct core {
    const struct watch_opts *o;
    struct watch_rules wr;
    struct serve_history hist;
    struct history full;
    struct snapshot *snap;
    struct findings findings;
    struct findings trends; /* of the last trend run */
    int64_t trends_ms;      /* when it ran (watch clock), -1: never */
    struct watch_marks marks;
    uint64_t cycles;
    char *problem;

    struct recorder *rec;
    int64_t rec_origin_ms;
    bool rec_started;
    char *record_msg;
    char *record_error; /* why the recording stopped early, NULL while it goes on */

    struct alert_engine *alerts;
    struct alert_runner *runner;
    struct alert_events events; /* of the latest cycle */
    char *alert_msg;
    char *alert_error; /* a problem with a command not yet shown, NULL when none */
    char *shown_error; /* the last one shown */
};

static void set_msg(char **dst, char *msg)
{
    free(*dst);
    *dst = msg;
}

static void record(struct core *c, const struct snapshot *s, const struct sample *last,
                   int64_t base_ms)
{
    char *cause = NULL;

    if (c->rec == NULL)
        return;
    if (!c->rec_started) {
        c->rec_origin_ms = base_ms; /* the context line's time_ms is this cycle's start */
        c->rec_started = true;
    }
    if (recorder_write(c->rec, s, last, last->t_ms - c->rec_origin_ms, &cause) != 0) {
        set_msg(&c->record_error, xstrdup(cause));
        set_msg(&c->record_msg, cause);
        recorder_close(c->rec);
        c->rec = NULL;
        return;
    }
    set_msg(&c->record_msg, xasprintf(_("recording to %s: %" PRIu64 " lines"), c->o->record_path,
                                      recorder_lines(c->rec)));
}

static void alert(struct core *c, const struct snapshot *s, const struct sample *last)
{
    struct alert_runner_stats st;
    const char *err;

    alert_events_free(&c->events);
    if (c->alerts == NULL)
        return;
    alert_engine_eval(c->alerts, s, last, &c->findings, last->t_ms, &c->events);
    for (size_t i = 0; i < c->events.n; i++)
        alert_runner_submit(c->runner, &c->events.items[i], time_mono_ms());
    alert_runner_stats(c->runner, &st);
    err = alert_runner_last_error(c->runner);
    if (err != NULL && (c->shown_error == NULL || strcmp(err, c->shown_error) != 0)) {
        set_msg(&c->alert_error, xstrdup(err));
        set_msg(&c->shown_error, xstrdup(err));
    }
    set_msg(&c->alert_msg,
            xasprintf(_("alerts: %zu firing, %" PRIu64 " fired, %" PRIu64 " cleared%s%s"),
                      alert_engine_firing(c->alerts), st.fired, st.cleared, err ? "; " : "",
                      err ? err : ""));
}

/* One collection: history, judgement, recording, alerts. */
static void cycle(struct core *c, struct snapshot *s, int64_t base_ms, char *cause)
{
    const struct sample *last;
    struct history recent;

    c->cycles++;
    set_msg(&c->problem, cause);
    if (s == NULL)
        return; /* the previous view stays, with the problem */
    serve_history_keep(&c->hist, s, base_ms);
    c->full.samples = c->hist.items;
    c->full.n = c->hist.n;
    if (c->full.n == 0) {
        snapshot_free(s);
        return;
    }
    watch_carry(s, c->snap);
    last = &c->full.samples[c->full.n - 1];
    recent = watch_recent(&c->full, c->o->window_ms);
    if (c->trends_ms < 0 || c->full.n < WATCH_TRENDS_SHORT ||
        last->t_ms - c->trends_ms >= WATCH_TRENDS_EVERY_MS) {
        findings_free(&c->trends);
        watch_trends(s, &c->full, &c->wr, &c->trends);
        c->trends_ms = last->t_ms;
    }
    findings_free(&c->findings);
    watch_judge(s, &recent, &c->trends, &c->wr, &c->findings);
    watch_marks_update(&c->marks, &c->findings, last->t_ms);
    record(c, s, last, base_ms);
    alert(c, s, last);
    snapshot_free(c->snap);
    c->snap = s;
}

static void view_of(const struct core *c, struct watch_view *v, int64_t now_ms)
{
    memset(v, 0, sizeof(*v));
    v->opts = c->o;
    v->snap = c->snap;
    v->hist = &c->full;
    v->findings = &c->findings;
    v->marks = &c->marks;
    v->events = &c->events;
    v->cycles = c->cycles;
    v->now_ms = now_ms;
    v->problem = c->problem;
    v->record_msg = c->record_msg;
    v->alert_msg = c->alert_msg;
    v->alert_error = c->alert_error;
}

static int core_init(struct core *c, const struct watch_opts *o)
{
    char *cause = NULL;
    size_t max = (size_t)(o->history_ms / (o->interval_ms > 0 ? o->interval_ms : 1)) + 2;

    memset(c, 0, sizeof(*c));
    c->o = o;
    c->trends_ms = -1;
    watch_rules_init(&c->wr, o->rules);
    serve_history_init(&c->hist, o->history_ms,
                       max < WATCH_MAX_HISTORY_ITEMS ? max : WATCH_MAX_HISTORY_ITEMS);
    if (o->record_path != NULL) {
        c->rec = recorder_open(o->record_path, &cause);
        if (c->rec == NULL) {
            fprintf(stderr, "gpudoctor watch: %s\n", cause);
            free(cause);
            return -1;
        }
        c->record_msg = xasprintf(_("recording to %s"), o->record_path);
    }
    if (o->n_alerts > 0) {
        char host[256] = "";

        if (gethostname(host, sizeof(host)) != 0)
            host[0] = '\0';
        host[sizeof(host) - 1] = '\0';
        /* An episode clears after a few readings without its condition, never on one. */
        c->alerts = alert_engine_new(o->alerts, o->n_alerts, 3 * o->interval_ms);
        c->runner = alert_runner_new(o->alert_timeout_ms, host);
    }
    return 0;
}

static void core_free(struct core *c)
{
    alert_runner_finish(c->runner, time_mono_ms() + ALERT_EXIT_GRACE_MS);
    alert_engine_free(c->alerts);
    alert_events_free(&c->events);
    recorder_close(c->rec);
    findings_free(&c->findings);
    findings_free(&c->trends);
    watch_marks_free(&c->marks);
    snapshot_free(c->snap);
    serve_history_free(&c->hist);
    watch_rules_free(&c->wr);
    free(c->problem);
    free(c->record_msg);
    free(c->record_error);
    free(c->alert_msg);
    free(c->alert_error);
    free(c->shown_error);
}

/* Waits for something to do; returns the poll result. */
static int wait_events(struct core *c, struct watch_worker *w, const struct watch_ui *ui,
                       struct pollfd *fds)
{
    int64_t due = c->runner ? alert_runner_due(c->runner) : -1, timeout = IDLE_POLL_MS;
    int n = 0;

    fds[n++] = (struct pollfd){ signal_pipe[0], POLLIN, 0 };
    fds[n++] = (struct pollfd){ watch_worker_fd(w), POLLIN, 0 };
    if (ui->input_fd >= 0)
        fds[n++] = (struct pollfd){ ui->input_fd, POLLIN, 0 };
    if (due >= 0) {
        timeout = due - time_mono_ms();
        timeout = timeout < 10 ? 10 : timeout > IDLE_POLL_MS ? IDLE_POLL_MS : timeout;
    }
    return poll(fds, (nfds_t)n, (int)timeout);
}

int watch_run(const struct watch_opts *o)
{
    struct watch_worker *w = NULL;
    struct watch_ui ui = { -1, NULL, NULL, NULL, NULL, NULL };
    struct watch_view v;
    struct core c;
    int64_t start = time_mono_ms();
    char *cause = NULL;
    bool quit = false;
    int rc = 0, drawn;

    if (core_init(&c, o) != 0) {
        core_free(&c);
        return 3;
    }
    if (signals_setup() != 0) {
        fprintf(stderr, _("gpudoctor watch: cannot create a pipe: %s\n"), strerror(errno));
        core_free(&c);
        return 3;
    }
    if ((o->plain ? watch_plain_start(&ui, o, &cause) : watch_tui_start(&ui, o, &cause)) != 0) {
        fprintf(stderr, "gpudoctor watch: %s\n", cause);
        free(cause);
        signals_restore();
        core_free(&c);
        return 3;
    }
    w = watch_worker_start(&o->collect, o->interval_ms,
                           o->interval_ms / 2 < WATCH_MAX_WINDOW_MS ? o->interval_ms / 2
                                                                    : WATCH_MAX_WINDOW_MS,
                           o->state_dir, &cause);
    if (w == NULL) {
        ui.stop(&ui);
        fprintf(stderr, "gpudoctor watch: %s\n", cause);
        free(cause);
        signals_restore();
        core_free(&c);
        return 3;
    }
    view_of(&c, &v, 0);
    ui.draw(&ui, &v);
    while (!quit) {
        struct pollfd fds[3];
        struct snapshot *s;
        int64_t base;

        if (wait_events(&c, w, &ui, fds) < 0 && errno != EINTR)
            break;
        if (fds[0].revents & POLLIN) {
            unsigned char sig;

            while (read(signal_pipe[0], &sig, 1) == 1) {
                if (sig == SIGWINCH) {
                    view_of(&c, &v, time_mono_ms() - start);
                    ui.resize(&ui, &v);
                } else {
                    quit = true;
                }
            }
        }
        while (!quit && watch_worker_take(w, &s, &base, &cause)) {
            cycle(&c, s, base, cause);
            view_of(&c, &v, time_mono_ms() - start);
            drawn = ui.draw(&ui, &v);
            if (drawn != 0)
                quit = true; /* the output went away (a closed pipe): not an error */
            if (drawn == -2)
                rc = 3;                    /* it could not be written: said already */
            set_msg(&c.alert_error, NULL); /* shown once */
            if (o->count > 0 && c.cycles >= o->count)
                quit = true;
        }
        if (!quit && ui.input_fd >= 0 && (fds[2].revents & (POLLHUP | POLLERR | POLLNVAL)))
            quit = true; /* the terminal went away: nothing will be read from it again */
        else if (!quit && ui.input_fd >= 0 && (fds[2].revents & POLLIN)) {
            view_of(&c, &v, time_mono_ms() - start);
            quit = ui.input(&ui, &v) == WATCH_QUIT;
        }
        if (c.runner)
            alert_runner_poll(c.runner, time_mono_ms());
    }
    /* The terminal first: the user sees the prompt while the rest winds down. */
    ui.stop(&ui);
    watch_worker_stop(w);
    signals_restore();
    /* Watching went on without it; the view showed why, --plain has no place to: say it now. */
    if (c.record_error != NULL) {
        fprintf(stderr, "gpudoctor watch: %s\n", c.record_error);
        rc = 3;
    }
    core_free(&c);
    return rc;
}
