/*
 * The parent's side of the bench: the worker runs in a child with a deadline, as NVML's helper
 * does (src/collect/nvml-session.c), so a call into a wedged driver costs the deadline, not the
 * node. SIGINT and SIGTERM end the worker too (its CUDA context and memory go with it), and the
 * run reports what it had.
 */
#include "bench/bench.h"
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

/* Takes the complete lines of buf: the last "step" into *last_step, the "result" parsed. */
static int take_lines(char *buf, size_t *len, char **last_step, char **result)
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
    for (;;) {
        struct pollfd p = { fds[0], POLLIN, 0 };
        double left = deadline - now_s();
        ssize_t n;
        int pr;

        if (interrupted)
            break;
        if (left <= 0) {
            timed_out = true;
            break;
        }
        pr = poll(&p, 1, (int)(left * 1000) + 1);
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
        take_lines(buf, &len, &last_step, &result);
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
        b->detail = xasprintf("the CUDA worker did not finish within %.0f s", o->deadline_s);
    } else if (interrupted) {
        b->state = BENCH_FAILED;
        b->detail = xasprintf("interrupted by %s: the CUDA worker was ended",
                              interrupted == SIGINT ? "SIGINT" : "SIGTERM");
    } else if (result == NULL) {
        b->state = BENCH_FAILED;
        b->detail = WIFSIGNALED(status)
                        ? xasprintf("the CUDA worker was killed by signal %d during: %s",
                                    WTERMSIG(status), last_step ? last_step : "start-up")
                        : xasprintf("the CUDA worker ended without a result during: %s",
                                    last_step ? last_step : "start-up");
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
            r = 0;
        }
        b->elapsed_s = elapsed;
        json_decref(j);
    }
restore:
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    free(last_step);
    free(result);
    free(buf);
    return r;
}
