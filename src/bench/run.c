/*
 * The parent's side of the bench: the worker runs in a child with a deadline, as NVML's helper
 * does (src/collect/nvml-session.c), so a call into a wedged driver costs the deadline, not the
 * node. SIGINT and SIGTERM end the worker too (its CUDA context and memory go with it), and the
 * run reports what it had.
 */
#include "bench/bench.h"
#include "snapshot/bench-steps.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
    interrupted = sig;
}

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* An NVML request's deadline: the worker's, at most most_ms from now. */
static int64_t nvml_deadline(double worker_deadline, int64_t most_ms)
{
    int64_t now = time_mono_ms();
    int64_t d = now + (int64_t)((worker_deadline - now_s()) * 1000);

    return d < now + most_ms ? d : now + most_ms;
}

bool bench_same_pci(const char *a, const char *b)
{
    unsigned long long da, db;
    unsigned ba, bb, va, vb, fa, fb;

    if (a == NULL || b == NULL)
        return false;
    if (sscanf(a, "%llx:%x:%x.%x", &da, &ba, &va, &fa) != 4 ||
        sscanf(b, "%llx:%x:%x.%x", &db, &bb, &vb, &fb) != 4)
        return false;
    return da == db && ba == bb && va == vb && fa == fb;
}

enum load_phase { LOAD_BEFORE, LOAD_RUNNING, LOAD_DONE };

/* Takes the complete lines of buf: the last "step" into *last_step, the "result" parsed,
 * "load start" and "load end" into *phase. */
static int take_lines(char *buf, size_t *len, char **last_step, char **result,
                      enum load_phase *phase)
{
    char *start = buf, *nl;

    while ((nl = memchr(start, '\n', *len - (size_t)(start - buf))) != NULL) {
        *nl = '\0';
        if (strncmp(start, "step ", 5) == 0) {
            free(*last_step);
            *last_step = xstrdup(start + 5);
        } else if (strncmp(start, "result ", 7) == 0) {
            free(*result);
            *result = xstrdup(start + 7);
        } else if (strcmp(start, "load start") == 0 && *phase == LOAD_BEFORE) {
            *phase = LOAD_RUNNING;
        } else if (strcmp(start, "load end") == 0 && *phase == LOAD_RUNNING) {
            *phase = LOAD_DONE;
        }
        start = nl + 1;
    }
    *len -= (size_t)(start - buf);
    memmove(buf, start, *len);
    return 0;
}

int bench_run(const struct bench_opts *o, struct bench_info *b)
{
    struct sigaction sa = { 0 }, old_int, old_term;
    double start = now_s(), deadline = start + o->deadline_s;
    char *last_step = NULL, *result = NULL;
    size_t cap = 1 << 16, len = 0;
    char *buf = xmalloc(cap);
    int fds[2], status = 0, r = -1;
    bool timed_out = false;
    enum load_phase phase = LOAD_BEFORE;
    struct bench_sampler *sampler = NULL;
    int64_t next_sample = 0;
    pid_t pid;

    if (pipe2(fds, O_CLOEXEC) != 0) {
        b->state = BENCH_FAILED;
        b->detail = xasprintf("cannot create a pipe: %s", strerror(errno));
        free(buf);
        return -1;
    }
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    fflush(NULL);
    pid = fork();
    if (pid < 0) {
        b->state = BENCH_FAILED;
        b->detail = xasprintf("cannot start the CUDA worker: %s", strerror(errno));
        close(fds[0]);
        close(fds[1]);
        goto restore;
    }
    if (pid == 0) {
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        close(fds[0]);
        _exit(bench_worker(o, fds[1]));
    }
    close(fds[1]);
    /* NVML's session starts while the worker measures the GPUs one by one, ready for the load */
    if (o->sample_nvml)
        sampler =
            bench_sampler_open(o->nvml_lib, nvml_deadline(deadline, 2 * BENCH_SAMPLE_DEADLINE_MS));
    for (;;) {
        struct pollfd p = { fds[0], POLLIN, 0 };
        double left = deadline - now_s();
        int wait_ms = (int)(left * 1000) + 1;
        ssize_t n;
        int pr;

        if (interrupted)
            break;
        if (left <= 0) {
            timed_out = true;
            break;
        }
        if (phase == LOAD_RUNNING && bench_sampler_live(sampler)) {
            int64_t t = time_mono_ms();

            if (next_sample == 0)
                next_sample = t + BENCH_SAMPLE_INTERVAL_MS;
            if (t >= next_sample) {
                bench_sampler_take(sampler, nvml_deadline(deadline, BENCH_SAMPLE_DEADLINE_MS));
                t = time_mono_ms();
                next_sample += BENCH_SAMPLE_INTERVAL_MS;
                if (next_sample <= t)
                    next_sample = t + BENCH_SAMPLE_INTERVAL_MS;
            }
            if (next_sample - t < wait_ms)
                wait_ms = (int)(next_sample - t);
        }
        pr = poll(&p, 1, wait_ms);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr <= 0)
            continue;
        if (len + 4096 > cap) {
            cap *= 2;
            buf = xrealloc(buf, cap);
        }
        n = read(fds[0], buf + len, cap - len - 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
        take_lines(buf, &len, &last_step, &result, &phase);
    }
    if (timed_out || interrupted)
        kill(pid, SIGKILL);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    close(fds[0]);
    b->elapsed_s = now_s() - start;
    if (timed_out) {
        b->state = BENCH_TIMEOUT;
        b->hung_step = last_step;
        last_step = NULL;
        b->detail = xasprintf(BENCH_DETAIL_TIMEOUT, o->deadline_s);
    } else if (interrupted) {
        b->state = BENCH_FAILED;
        b->detail =
            xasprintf(BENCH_DETAIL_INTERRUPTED, interrupted == SIGINT ? "SIGINT" : "SIGTERM");
    } else if (result == NULL) {
        b->state = BENCH_FAILED;
        b->detail = WIFSIGNALED(status)
                        ? xasprintf(BENCH_DETAIL_KILLED, WTERMSIG(status),
                                    last_step ? last_step : BENCH_STEP_STARTUP)
                        : xasprintf(BENCH_DETAIL_ENDED, last_step ? last_step : BENCH_STEP_STARTUP);
    } else {
        json_error_t je;
        json_t *j = json_loads(result, 0, &je);
        struct jerr err = { "", "" };
        double elapsed = b->elapsed_s;

        if (j == NULL || bench_info_from_json(b, j, "bench", &err) != 0) {
            bench_info_free(b);
            b->state = BENCH_FAILED;
            b->detail = xasprintf("the CUDA worker's result is unreadable: %s",
                                  j == NULL ? je.text : err.msg);
        } else {
            bench_sampler_close(sampler, b, phase != LOAD_BEFORE);
            sampler = NULL;
            r = 0;
        }
        b->elapsed_s = elapsed;
        json_decref(j);
    }
    bench_sampler_close(sampler, NULL, false);
restore:
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    free(last_step);
    free(result);
    free(buf);
    return r;
}
