#include "collect/nvml-session.h"
#include "collect/nvml-query.h"
#include "collect/nvml-wire.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/*
 * The page the helper writes before and after each NVML call, shared with the parent (MAP_SHARED,
 * created before fork). A sequence count, odd while the helper writes, lets the parent read a
 * consistent copy without a lock the helper could die holding.
 */
struct nvml_marker {
    _Atomic uint32_t seq;
    _Atomic int32_t in_call; /* 1 from just before a call until it returns */
    _Atomic int32_t gpu;     /* -1 for system calls */
    char call[64];
};

struct nvml_session {
    pid_t pid;  /* the helper; 0 once it is gone */
    int sock;   /* requests out, answers in (a socketpair: MSG_NOSIGNAL, no SIGPIPE) */
    int err_fd; /* the helper's stdout and stderr, forwarded to ours */
    struct nvml_marker *marker;
    char *lib;
    enum nvml_session_status status;
    char *hung_call, *cause; /* why the session ended, repeated to later requests */
};

/* How long a helper that was sent SIGKILL gets to die before it is left for later reaping. */
#define KILL_REAP_MS 100
/* How long a helper that closed its end of the connection gets to exit, at most. */
#define EXIT_REAP_MS 500

/* The descriptors the helper finds: the connection and, for a helper program, the watched page. */
#define HELPER_SOCK_FD   3
#define HELPER_MARKER_FD 4

/* This program's own executable, to start again as the helper (nvml_session_use_own_program). */
static struct {
    char path[PATH_MAX];
    dev_t dev;
    ino_t ino;
    bool set;
} helper_program;

/* Helpers killed but not reaped yet: stuck in the kernel, where SIGKILL waits for the driver. */
static pid_t stuck[NVML_SESSION_MAX_STUCK];
static size_t n_stuck;

/* ---- the helper process ---- */

static void helper_mark(void *arg, const char *call, int gpu)
{
    struct nvml_marker *m = arg;
    uint32_t seq = atomic_load_explicit(&m->seq, memory_order_relaxed);

    atomic_store_explicit(&m->seq, seq + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    if (call != NULL) {
        snprintf(m->call, sizeof(m->call), "%s", call);
        atomic_store_explicit(&m->gpu, gpu, memory_order_relaxed);
        atomic_store_explicit(&m->in_call, 1, memory_order_relaxed);
    } else {
        atomic_store_explicit(&m->in_call, 0, memory_order_relaxed);
    }
    atomic_store_explicit(&m->seq, seq + 2, memory_order_release);
}

/* The helper inherited the parent's handlers and mask; a library expects the defaults. */
static void helper_signals(void)
{
    struct sigaction sa;
    sigset_t none;

    memset(&sa, 0, sizeof(sa));
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; sig++) {
        if (sig != SIGKILL && sig != SIGSTOP)
            sigaction(sig, &sa, NULL); /* fails harmlessly for the C library's own signals */
    }
    /* A parent that went away shows as a write error, not a death by SIGPIPE. */
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, NULL);
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
}

static void close_from(int first)
{
    long max;

    if (close_range((unsigned int)first, ~0u, 0) == 0)
        return;
    max = sysconf(_SC_OPEN_MAX);
    if (max < 0 || max > 65536)
        max = 65536;
    for (int fd = first; fd < max; fd++)
        close(fd);
}

/*
 * The helper keeps only what it needs: stdin from /dev/null, stdout and stderr into the pipe its
 * parent forwards, the connection as fd 3 and, for a helper program, the watched page as fd 4.
 * Holding the parent's other descriptors would keep them open after the parent exits if the
 * helper is stuck in the kernel: a pipe reader waiting for gpudoctor's output would then wait
 * forever. Only async-signal-safe calls: this runs between fork and execve.
 */
static int helper_fds(int sock, int err_w, int marker_fd)
{
    int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    int s = fcntl(sock, F_DUPFD_CLOEXEC, 10);
    int e = fcntl(err_w, F_DUPFD_CLOEXEC, 10);
    int m = marker_fd >= 0 ? fcntl(marker_fd, F_DUPFD_CLOEXEC, 10) : -1;

    if (s < 0 || e < 0 || (marker_fd >= 0 && m < 0))
        return -1;
    if (devnull >= 0)
        dup2(devnull, 0);
    else
        close(0);
    dup2(e, 1);
    dup2(e, 2);
    if (dup2(s, HELPER_SOCK_FD) != HELPER_SOCK_FD)
        return -1;
    if (m >= 0 && dup2(m, HELPER_MARKER_FD) != HELPER_MARKER_FD)
        return -1;
    close_from(m >= 0 ? HELPER_MARKER_FD + 1 : HELPER_SOCK_FD + 1);
    /* A parent that is not reading must not block the library in a write to stderr. */
    fcntl(2, F_SETFL, fcntl(2, F_GETFL) | O_NONBLOCK);
    return HELPER_SOCK_FD;
}

static void send_all(int fd, const char *p, size_t len)
{
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            _exit(1); /* the parent is gone or gave up on us */
        p += n;
        len -= (size_t)n;
    }
}

static void free_gpus(struct gpu *gpus, size_t n)
{
    for (size_t i = 0; i < n; i++)
        gpu_free(&gpus[i]);
    free(gpus);
}

static void helper_answer(struct nvml_query *q, int fd, enum nvml_request req)
{
    struct nvml_system sys;
    struct gpu *gpus = NULL;
    size_t n = 0;
    char *text;

    switch (req) {
    case NVML_REQ_FULL:
        nvml_query_full(q, &sys, &gpus, &n);
        text = nvml_wire_encode(&sys, gpus, n);
        nvml_system_free(&sys);
        break;
    case NVML_REQ_SAMPLE:
        nvml_query_sample(q, &gpus, &n);
        text = nvml_wire_encode(NULL, gpus, n);
        break;
    default:
        text = nvml_wire_encode_error("unknown request");
        break;
    }
    free_gpus(gpus, n);
    send_all(fd, text, strlen(text));
    free(text);
}

/* Answers requests until the parent closes the connection; ends with _exit, so the parent's
 * atexit handlers and stdio buffers are never run twice. */
static _Noreturn void helper_serve(const char *lib, int fd, struct nvml_marker *m)
{
    struct nvml_linebuf in;
    struct nvml_query *q;

    prctl(PR_SET_NAME, "gpudoctor-nvml");
    q = nvml_query_new(lib, helper_mark, m);
    nvml_linebuf_init(&in, NVML_WIRE_MAX_REQUEST);
    for (;;) {
        ssize_t len = nvml_linebuf_line(&in);
        char buf[NVML_WIRE_MAX_REQUEST];
        ssize_t n;

        if (len >= 0) {
            enum nvml_request req = nvml_request_parse(in.data);

            nvml_linebuf_consume(&in, (size_t)len + 1);
            helper_answer(q, fd, req);
            continue;
        }
        n = read(fd, buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break; /* the parent closed the connection: the normal way to end */
        if (nvml_linebuf_append(&in, buf, (size_t)n) != 0) {
            char *text = nvml_wire_encode_error("request line too long");

            send_all(fd, text, strlen(text));
            _exit(1);
        }
    }
    nvml_query_free(q); /* nvmlShutdown, marked like every call */
    _exit(0);
}

/*
 * The child of fork. With a helper program (argv prepared by the parent) it makes only
 * async-signal-safe calls until execve: the parent may have other threads, and a lock one of them
 * held at fork time (the allocator's, the loader's) would never be released in the copy. Without
 * one it becomes the helper itself, which is safe only in a process with one thread.
 */
static _Noreturn void helper_child(const char *lib, int sock, int err_w, struct nvml_marker *m,
                                   int marker_fd, const char *program, char *const *argv,
                                   pid_t parent)
{
    static const char failed[] = "gpudoctor: cannot start the NVML helper program\n";
    int fd;

    /* Die with the parent, even if it is killed before it can close the connection. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(1);
    helper_signals();
    fd = helper_fds(sock, err_w, program != NULL ? marker_fd : -1);
    if (fd < 0)
        _exit(1);
    if (program == NULL)
        helper_serve(lib, fd, m);
    execve(program, argv, environ);
    if (write(STDERR_FILENO, failed, sizeof(failed) - 1) < 0) {
        /* the parent reports the helper's exit status either way */
    }
    _exit(127);
}

int nvml_session_helper_main(int argc, char **argv)
{
    struct nvml_marker *m;
    struct stat st;
    char *end;
    long parent;

    if (argc != 4) {
        fprintf(stderr,
                "gpudoctor: %s is how gpudoctor starts its own NVML helper; "
                "it is not a command\n",
                NVML_SESSION_HELPER_ARG);
        return 64;
    }
    errno = 0;
    parent = strtol(argv[2], &end, 10);
    /* Started by hand, or orphaned between fork and here: no parent to answer. */
    if (errno != 0 || *end != '\0' || parent <= 1 || getppid() != (pid_t)parent) {
        fprintf(stderr, "gpudoctor: %s: not started by gpudoctor (parent %s)\n",
                NVML_SESSION_HELPER_ARG, argv[2]);
        return 64;
    }
    if (fstat(HELPER_SOCK_FD, &st) != 0 || !S_ISSOCK(st.st_mode)) {
        fprintf(stderr, "gpudoctor: %s: descriptor %d is not the connection to gpudoctor\n",
                NVML_SESSION_HELPER_ARG, HELPER_SOCK_FD);
        return 64;
    }
    m = mmap(NULL, sizeof(*m), PROT_READ | PROT_WRITE, MAP_SHARED, HELPER_MARKER_FD, 0);
    if (m == MAP_FAILED) {
        fprintf(stderr, "gpudoctor: %s: the watched page (descriptor %d): %s\n",
                NVML_SESSION_HELPER_ARG, HELPER_MARKER_FD, strerror(errno));
        return 64;
    }
    close(HELPER_MARKER_FD);
    helper_serve(argv[3], HELPER_SOCK_FD, m);
}

/* ---- the parent ---- */

static bool try_reap(pid_t pid, int *status)
{
    for (;;) {
        pid_t r = waitpid(pid, status, WNOHANG);

        if (r == pid)
            return true;
        if (r == 0)
            return false;
        if (errno == EINTR)
            continue;
        /* ECHILD: someone else reaped it (SIGCHLD ignored, or a broad waitpid). */
        if (status != NULL)
            *status = -1;
        return true;
    }
}

size_t nvml_session_reap(void)
{
    size_t kept = 0;

    for (size_t i = 0; i < n_stuck; i++) {
        if (!try_reap(stuck[i], NULL))
            stuck[kept++] = stuck[i];
    }
    n_stuck = kept;
    return n_stuck;
}

static void remember_stuck(pid_t pid)
{
    /* Beyond the list the zombie is left to init when we exit; open() refuses before that. */
    if (n_stuck < NVML_SESSION_MAX_STUCK)
        stuck[n_stuck++] = pid;
}

static void close_fds(struct nvml_session *ss)
{
    if (ss->sock >= 0)
        close(ss->sock);
    if (ss->err_fd >= 0)
        close(ss->err_fd);
    ss->sock = ss->err_fd = -1;
}

/* SIGKILL, then a short reap; a helper stuck in the kernel is remembered, never waited for. */
static void kill_helper(struct nvml_session *ss)
{
    bool reaped = false;

    if (ss->pid > 0) {
        kill(ss->pid, SIGKILL);
        for (int i = 0; i < KILL_REAP_MS && !(reaped = try_reap(ss->pid, NULL)); i++)
            time_sleep_ms(1);
        if (!reaped)
            remember_stuck(ss->pid);
        ss->pid = 0;
    }
    close_fds(ss);
}

/*
 * Best effort, and never at the cost of the deadline: nothing is written when our stderr could
 * block (a pipe nobody reads), and a reader that went away is not a SIGPIPE, whatever the
 * program's disposition of it.
 */
static void write_stderr(const char *buf, size_t n)
{
    struct pollfd p = { STDERR_FILENO, POLLOUT, 0 };
    sigset_t pipe_set, old, pending;
    bool was_pending;

    if (poll(&p, 1, 0) != 1 || !(p.revents & POLLOUT))
        return;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
    sigpending(&pending);
    was_pending = sigismember(&pending, SIGPIPE) == 1;
    if (write(STDERR_FILENO, buf, n) < 0 && errno == EPIPE && !was_pending) {
        struct timespec zero = { 0, 0 };

        sigtimedwait(&pipe_set, NULL, &zero); /* consume the SIGPIPE our write raised */
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* Copies what the helper's stdout and stderr said to ours; closes the pipe at its end. */
static void forward_output(struct nvml_session *ss)
{
    /* A pipe page: POLLOUT on a pipe promises room for at least this much. */
    char buf[4096];

    while (ss->err_fd >= 0) {
        ssize_t n = read(ss->err_fd, buf, sizeof(buf));

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (n <= 0) {
            close(ss->err_fd);
            ss->err_fd = -1;
            return;
        }
        write_stderr(buf, (size_t)n);
    }
}

/* What the helper was doing, from the shared page: "nvmlDeviceGetPowerUsage on GPU 3". */
static char *describe_call(const struct nvml_session *ss, bool *in_call)
{
    const struct nvml_marker *m = ss->marker;
    char call[sizeof(m->call)];
    int32_t gpu = -1, busy = 0;
    uint32_t seq = 0;

    call[0] = '\0';
    for (int tries = 0; tries < 1000; tries++) {
        uint32_t again;

        seq = atomic_load_explicit(&m->seq, memory_order_acquire);
        if (seq & 1u)
            continue;
        memcpy(call, m->call, sizeof(call));
        gpu = atomic_load_explicit(&m->gpu, memory_order_relaxed);
        busy = atomic_load_explicit(&m->in_call, memory_order_relaxed);
        atomic_thread_fence(memory_order_acquire);
        again = atomic_load_explicit(&m->seq, memory_order_relaxed);
        if (again == seq)
            break;
    }
    call[sizeof(call) - 1] = '\0';
    *in_call = busy != 0;
    if (seq == 0)
        return xstrdup("the NVML helper, before its first NVML call");
    if (strcmp(call, "dlopen") == 0)
        return busy ? xasprintf("loading %s", ss->lib)
                    : xasprintf("the NVML helper, after loading %s", ss->lib);
    if (!busy)
        return gpu >= 0 ? xasprintf("the NVML helper, after %s on GPU %d", call, (int)gpu)
                        : xasprintf("the NVML helper, after %s", call);
    return gpu >= 0 ? xasprintf("%s on GPU %d", call, (int)gpu) : xstrdup(call);
}

static enum nvml_session_status
end_session(struct nvml_session *ss, enum nvml_session_status status, char *hung_call, char *cause)
{
    ss->status = status;
    ss->hung_call = hung_call;
    ss->cause = cause;
    return status;
}

static enum nvml_session_status timed_out(struct nvml_session *ss, int64_t budget_ms)
{
    bool in_call;
    char *call = describe_call(ss, &in_call);

    kill_helper(ss);
    return end_session(
        ss, NVML_SESSION_TIMEOUT, call,
        xasprintf("%s did not answer within %.1f s", call, (double)budget_ms / 1000.0));
}

/* The helper closed the connection or could not be written to: it died, or is dying. */
static enum nvml_session_status helper_died(struct nvml_session *ss, int64_t deadline_mono_ms)
{
    int64_t until = time_mono_ms() + EXIT_REAP_MS;
    bool in_call, reaped = false;
    char *call = describe_call(ss, &in_call);
    char *during = in_call ? xasprintf(" during %s", call) : xstrdup("");
    char *cause;
    int status = -1;

    if (until > deadline_mono_ms)
        until = deadline_mono_ms;
    while (!(reaped = try_reap(ss->pid, &status)) && time_mono_ms() < until)
        time_sleep_ms(2);
    forward_output(ss);
    if (reaped)
        ss->pid = 0;
    if (reaped && status != -1 && WIFSIGNALED(status))
        cause = xasprintf("the NVML helper process was killed by signal %d (%s)%s",
                          WTERMSIG(status), strsignal(WTERMSIG(status)), during);
    else if (reaped && status != -1 && WIFEXITED(status))
        cause = xasprintf("the NVML helper process exited with status %d%s", WEXITSTATUS(status),
                          during);
    else
        cause = xasprintf("the NVML helper process closed its connection%s", during);
    kill_helper(ss);
    free(during);
    free(call);
    return end_session(ss, NVML_SESSION_FAILED, NULL, cause);
}

static enum nvml_session_status bad_answer(struct nvml_session *ss, char *why)
{
    char *cause = xasprintf("the NVML helper sent a malformed answer: %s", why);

    free(why);
    kill_helper(ss);
    return end_session(ss, NVML_SESSION_FAILED, NULL, cause);
}

static int poll_ms(int64_t left)
{
    return left > INT_MAX ? INT_MAX : left < 0 ? 0 : (int)left;
}

/* Sends one request and reads one answer line into ans, or ends the session. */
static enum nvml_session_status transact(struct nvml_session *ss, enum nvml_request req,
                                         int64_t deadline_mono_ms, struct nvml_linebuf *ans)
{
    const char *line = nvml_request_line(req);
    int64_t start = time_mono_ms();
    ssize_t n;

    /* A few bytes into an empty socket buffer: never blocks, even if the helper is stuck. */
    do
        n = send(ss->sock, line, strlen(line), MSG_NOSIGNAL | MSG_DONTWAIT);
    while (n < 0 && errno == EINTR);
    if (n != (ssize_t)strlen(line))
        return helper_died(ss, deadline_mono_ms);
    for (;;) {
        struct pollfd p[2] = { { ss->sock, POLLIN, 0 }, { ss->err_fd, POLLIN, 0 } };
        int64_t left = deadline_mono_ms - time_mono_ms();
        char buf[65536];
        ssize_t len;
        int r;

        if (left <= 0)
            return timed_out(ss, deadline_mono_ms - start);
        r = poll(p, ss->err_fd >= 0 ? 2 : 1, poll_ms(left));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return bad_answer(ss, xasprintf("poll: %s", strerror(errno)));
        if (ss->err_fd >= 0 && p[1].revents != 0)
            forward_output(ss);
        if (p[0].revents == 0)
            continue;
        n = read(ss->sock, buf, sizeof(buf));
        if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
            continue;
        if (n <= 0)
            return helper_died(ss, deadline_mono_ms);
        if (nvml_linebuf_append(ans, buf, (size_t)n) != 0)
            return bad_answer(
                ss, xasprintf("an answer longer than %u bytes", (unsigned)NVML_WIRE_MAX_ANSWER));
        len = nvml_linebuf_line(ans);
        if (len < 0)
            continue;
        if ((size_t)len + 1 != ans->len)
            return bad_answer(ss, xstrdup("more than one line for one request"));
        return NVML_SESSION_OK;
    }
}

static void clear_outputs(char **hung_call, char **cause)
{
    *hung_call = NULL;
    *cause = NULL;
}

static enum nvml_session_status repeat_end(const struct nvml_session *ss, char **hung_call,
                                           char **cause)
{
    *hung_call = ss->hung_call ? xstrdup(ss->hung_call) : NULL;
    *cause = xstrdup(ss->cause ? ss->cause : "the NVML session has ended");
    return ss->status;
}

static enum nvml_session_status request(struct nvml_session *ss, enum nvml_request req,
                                        int64_t deadline_mono_ms, struct nvml_system *sys,
                                        struct gpu **gpus, size_t *n_gpus, char **hung_call,
                                        char **cause)
{
    struct nvml_linebuf ans;
    enum nvml_session_status st;
    char *why = NULL;

    *gpus = NULL;
    *n_gpus = 0;
    clear_outputs(hung_call, cause);
    if (ss->status != NVML_SESSION_OK)
        return repeat_end(ss, hung_call, cause);
    nvml_linebuf_init(&ans, NVML_WIRE_MAX_ANSWER);
    st = transact(ss, req, deadline_mono_ms, &ans);
    if (st == NVML_SESSION_OK &&
        nvml_wire_decode(ans.data, ans.len - 1, sys != NULL, sys, gpus, n_gpus, &why) != 0) {
        if (sys != NULL) {
            nvml_system_free(sys);
            memset(sys, 0, sizeof(*sys));
        }
        st = bad_answer(ss, why);
    }
    nvml_linebuf_free(&ans);
    if (st != NVML_SESSION_OK)
        return repeat_end(ss, hung_call, cause);
    return st;
}

enum nvml_session_status nvml_session_full(struct nvml_session *ss, int64_t deadline_mono_ms,
                                           struct nvml_system *sys, struct gpu **gpus,
                                           size_t *n_gpus, char **hung_call, char **cause)
{
    memset(sys, 0, sizeof(*sys));
    return request(ss, NVML_REQ_FULL, deadline_mono_ms, sys, gpus, n_gpus, hung_call, cause);
}

enum nvml_session_status nvml_session_sample(struct nvml_session *ss, int64_t deadline_mono_ms,
                                             struct gpu **gpus, size_t *n_gpus, char **hung_call,
                                             char **cause)
{
    return request(ss, NVML_REQ_SAMPLE, deadline_mono_ms, NULL, gpus, n_gpus, hung_call, cause);
}

pid_t nvml_session_pid(const struct nvml_session *ss)
{
    return ss->pid;
}

void nvml_session_use_own_program(void)
{
    struct stat st;
    ssize_t n = readlink("/proc/self/exe", helper_program.path, sizeof(helper_program.path));

    helper_program.set = false;
    /* Under valgrind the link names the program valgrind runs, not valgrind: exec follows it. */
    if (n <= 0 || (size_t)n >= sizeof(helper_program.path))
        return;
    helper_program.path[n] = '\0';
    if (stat(helper_program.path, &st) != 0 || !S_ISREG(st.st_mode))
        return; /* already deleted: no helper program, the fork is the helper */
    helper_program.dev = st.st_dev;
    helper_program.ino = st.st_ino;
    helper_program.set = true;
}

/* Whether this process has other threads: /proc/self/status says; unreadable counts as yes. */
static bool has_threads(void)
{
    char buf[4096], *p;
    ssize_t n;
    int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return true;
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return true;
    buf[n] = '\0';
    p = strstr(buf, "\nThreads:");
    return p == NULL || strtol(p + strlen("\nThreads:"), NULL, 10) != 1;
}

/*
 * The file to execute as the helper, or NULL to let the fork be the helper: a process with one
 * thread (check, snapshot) may safely continue in its fork, which saves loading the program
 * again (about 3 ms, a tenth of a check); only this thread could start another before fork.
 */
static const char *program_to_run(void)
{
    struct stat st;

    if (!helper_program.set || !has_threads())
        return NULL;
    /* Replaced since we started (a package upgrade): run the same file we are, not the new one,
     * whose answers could differ. /proc/self/exe still opens it, deleted or not. */
    if (stat(helper_program.path, &st) != 0 || st.st_dev != helper_program.dev ||
        st.st_ino != helper_program.ino)
        return "/proc/self/exe";
    return helper_program.path;
}

/* The watched page: in a memory file a helper program maps again (*fd), else anonymous (-1). */
static struct nvml_marker *map_marker(bool for_program, int *fd, char **cause)
{
    struct nvml_marker *m;

    *fd = for_program ? memfd_create("gpudoctor-nvml", MFD_CLOEXEC) : -1;
    if (*fd >= 0 && ftruncate(*fd, sizeof(*m)) != 0) {
        close(*fd);
        *fd = -1;
    }
    m = mmap(NULL, sizeof(*m), PROT_READ | PROT_WRITE, MAP_SHARED | (*fd >= 0 ? 0 : MAP_ANONYMOUS),
             *fd, 0);
    if (m == MAP_FAILED) {
        *cause = xasprintf("mmap: %s", strerror(errno));
        if (*fd >= 0)
            close(*fd);
        return NULL;
    }
    return m;
}

struct nvml_session *nvml_session_open(const char *lib, char **cause)
{
    struct nvml_session *ss;
    struct nvml_marker *m;
    const char *program = program_to_run();
    char name_arg[] = "gpudoctor-nvml", helper_arg[] = NVML_SESSION_HELPER_ARG, parent_arg[24];
    char *argv[] = { name_arg, helper_arg, parent_arg, (char *)lib, NULL };
    int sv[2], ep[2], marker_fd;
    pid_t parent = getpid(), pid;

    if (nvml_session_reap() >= NVML_SESSION_MAX_STUCK) {
        *cause = xasprintf("%d earlier NVML helper processes are still stuck in the driver; "
                           "not starting another",
                           NVML_SESSION_MAX_STUCK);
        return NULL;
    }
    m = map_marker(program != NULL, &marker_fd, cause);
    if (m == NULL)
        return NULL;
    if (marker_fd < 0)
        program = NULL; /* no memory file (a kernel before 3.17): the fork is the helper */
    snprintf(parent_arg, sizeof(parent_arg), "%ld", (long)parent);
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
        *cause = xasprintf("socketpair: %s", strerror(errno));
        sv[0] = sv[1] = -1;
    } else if (pipe2(ep, O_CLOEXEC) != 0) {
        *cause = xasprintf("pipe: %s", strerror(errno));
        close(sv[0]);
        close(sv[1]);
        sv[0] = sv[1] = -1;
    }
    if (sv[0] < 0) {
        if (marker_fd >= 0)
            close(marker_fd);
        munmap(m, sizeof(*m));
        return NULL;
    }
    /* Unwritten output would otherwise sit in both processes' buffers. */
    fflush(NULL);
    pid = fork();
    if (pid == 0) {
        close(sv[0]);
        close(ep[0]);
        helper_child(lib, sv[1], ep[1], m, marker_fd, program, argv, parent);
    }
    close(sv[1]);
    close(ep[1]);
    if (marker_fd >= 0)
        close(marker_fd);
    if (pid < 0) {
        *cause = xasprintf("fork: %s", strerror(errno));
        close(sv[0]);
        close(ep[0]);
        munmap(m, sizeof(*m));
        return NULL;
    }
    fcntl(ep[0], F_SETFL, fcntl(ep[0], F_GETFL) | O_NONBLOCK);
    fcntl(sv[0], F_SETFL, fcntl(sv[0], F_GETFL) | O_NONBLOCK);
    ss = xcalloc(1, sizeof(*ss));
    ss->pid = pid;
    ss->sock = sv[0];
    ss->err_fd = ep[0];
    ss->marker = m;
    ss->lib = xstrdup(lib);
    ss->status = NVML_SESSION_OK;
    return ss;
}

void nvml_session_close(struct nvml_session *ss, int64_t deadline_mono_ms)
{
    if (ss == NULL)
        return;
    if (ss->pid > 0) {
        bool reaped;

        /* End of requests: the helper shuts NVML down and exits. */
        shutdown(ss->sock, SHUT_WR);
        while (!(reaped = try_reap(ss->pid, NULL))) {
            struct pollfd p = { ss->err_fd, POLLIN, 0 };
            int64_t left = deadline_mono_ms - time_mono_ms();

            if (left <= 0)
                break;
            /* Short polls: the exit itself is noticed by waitpid, not by a descriptor. */
            if (poll(&p, ss->err_fd >= 0 ? 1 : 0, poll_ms(left < 5 ? left : 5)) > 0)
                forward_output(ss);
        }
        if (reaped)
            ss->pid = 0;
        else
            kill_helper(ss);
    }
    forward_output(ss);
    close_fds(ss);
    munmap(ss->marker, sizeof(*ss->marker));
    free(ss->lib);
    free(ss->hung_call);
    free(ss->cause);
    free(ss);
    nvml_session_reap();
}
