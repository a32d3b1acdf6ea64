/*
 * Signalling one target without ever hitting another process that got its pid. The pid is
 * pinned with pidfd_open(2): from then on the descriptor names that one process, whatever
 * happens to the number. What the plan selected is then compared with the live process behind
 * it: its /proc entry is read, and the pidfd is asked afterwards whether the process is still
 * alive (so the entry read was its own, not a successor's); the start time must be the planned
 * one and the live facts must still pass reap_check. Signals go through pidfd_send_signal(2),
 * and the exit is awaited by polling the pidfd. The system calls are made directly: older C
 * libraries have no wrappers for them.
 */
#include "reap/reap.h"
#include "util/i18n.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <locale.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434 /* the same number on every architecture */
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif

const char *const reap_outcome_names[] = {
    "exited", "killed", "gone", "changed", "refused", "stuck", "failed", "declined", NULL,
};

bool reap_outcome_ended(enum reap_outcome o)
{
    return o == REAP_OUT_EXITED || o == REAP_OUT_KILLED || o == REAP_OUT_GONE;
}

static int pin(int32_t pid)
{
    return (int)syscall(SYS_pidfd_open, (pid_t)pid, 0u);
}

static int send_sig(int pidfd, int sig)
{
    return (int)syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0u);
}

/* Waits up to ms for the process behind pidfd to exit (the pidfd becomes readable). */
static bool wait_exit(int pidfd, int64_t ms)
{
    int64_t end = time_mono_ms() + ms;

    for (;;) {
        struct pollfd p = { .fd = pidfd, .events = POLLIN };
        int64_t left = end - time_mono_ms();
        int n;

        if (left < 0)
            left = 0;
        n = poll(&p, 1, left > INT32_MAX ? INT32_MAX : (int)left);
        if (n > 0)
            return true;
        if (n == 0)
            return false;
        if (errno != EINTR)
            return send_sig(pidfd, 0) != 0 && errno == ESRCH;
    }
}

/* The pid the pidfd names in our PID namespace, from its fdinfo: -1 once the process is gone. */
static int32_t pidfd_pid(int pidfd)
{
    char path[64], buf[1024], *line;
    ssize_t n;
    int fd;

    snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", pidfd);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    line = strstr(buf, "\nPid:");
    if (line == NULL)
        return 0; /* a kernel that does not say: the start time check stands alone */
    return (int32_t)strtol(line + 5, NULL, 10);
}

/* errno's message in English, whatever LC_MESSAGES says: for the detail --json and the log keep. */
static const char *err_en(int e)
{
    static locale_t c;

    if (c == (locale_t)0)
        c = newlocale(LC_ALL_MASK, "C", (locale_t)0);
    return c != (locale_t)0 ? strerror_l(e, c) : strerror(e);
}

void reap_result_take(struct reap_result *r, char *detail, char *detail_l)
{
    free(r->detail);
    free(r->detail_l);
    r->detail = detail;
    r->detail_l = detail_l;
}

const char *reap_result_text(const struct reap_result *r)
{
    return r->detail_l != NULL ? r->detail_l : r->detail;
}

/* The outcome, with the detail made already (TWICE). */
static void conclude_take(struct reap_result *r, enum reap_outcome o, int sig, int64_t t0,
                          char *detail, char *detail_l)
{
    r->outcome = o;
    if (sig)
        r->last_signal = sig;
    r->elapsed_ms = time_mono_ms() - t0;
    reap_result_take(r, detail, detail_l);
}

/* The outcome, and its detail in English and for people from the same values. */
static void conclude(struct reap_result *r, enum reap_outcome o, int sig, int64_t t0,
                     const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void conclude(struct reap_result *r, enum reap_outcome o, int sig, int64_t t0,
                     const char *fmt, ...)
{
    va_list ap;
    char *detail, *detail_l;

    va_start(ap, fmt);
    detail = i18n_vformat_both(&detail_l, fmt, ap);
    va_end(ap);
    conclude_take(r, o, sig, t0, detail, detail_l);
}

/* What a target that is not to be signalled is, for people (reap_disposition_names for JSON). */
static const char *disposition_words(enum reap_disposition d)
{
    switch (d) {
    case REAP_SIGNAL:
        return N_("to be signalled");
    case REAP_REFUSED:
        return N_("refused");
    case REAP_CANNOT_HELP:
        return N_("killing cannot help");
    }
    return "?";
}

/*
 * A parent is signalled for the defunct children it does not reap: only while one of them is
 * still there, the same one (start time), defunct, and still its child. They may have been
 * reaped during a confirmation or while earlier targets were ended; the parent, pinned and alive,
 * is then not signalled, and that is not counted as ended. (A worker is signalled for what it
 * holds itself, the device it inherited: that stays held whatever became of the defunct process.)
 */
static bool still_defunct(const struct reap_target *t, struct reap_result *r, int64_t t0)
{
    char list[160] = "";
    size_t len = 0;
    int proc_fd, err = 0;
    int32_t err_pid = 0;
    bool same = false;

    if (t->role != REAP_ROLE_PARENT)
        return true;
    proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (proc_fd < 0) {
        err = errno;
        err_pid = t->gpu_pid;
    }
    for (size_t i = 0; proc_fd >= 0 && !same && i < t->n_defunct; i++) {
        const struct reap_child *c = &t->defunct[i];
        struct reap_facts z;
        int rc = reap_facts_read(proc_fd, c->pid, &z, NULL);

        if (rc == 0) {
            same = z.start_ticks == c->start_ticks && (z.state == 'Z' || z.state == 'X') &&
                   z.ppid == t->pid;
            reap_facts_free(&z);
        } else if (rc != -ESRCH && err == 0) {
            err = -rc;
            err_pid = c->pid;
        }
        if (len < sizeof(list))
            len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%d", i ? ", " : "",
                                    (int)c->pid);
    }
    if (proc_fd >= 0)
        close(proc_fd);
    if (same)
        return true;
    if (err != 0)
        conclude_take(r, REAP_OUT_FAILED, 0, t0,
                      TWICE("cannot read /proc/%d: %s", ((int)err_pid, err_en(err)),
                            ((int)err_pid, strerror(err))));
    else if (t->n_defunct == 1)
        conclude(r, REAP_OUT_CHANGED, 0, t0,
                 "defunct process %s is no longer there as it was selected (reaped, or another "
                 "parent's now): pid %d is not signalled",
                 list, (int)t->pid);
    else
        conclude(r, REAP_OUT_CHANGED, 0, t0,
                 "defunct processes %s are no longer there as they were selected (reaped, or "
                 "another parent's now): pid %d is not signalled",
                 list[0] ? list : "(none recorded)", (int)t->pid);
    return false;
}

/* Pins and verifies; returns the pidfd, or -1 with *r and the log saying why not. */
static int pin_verified(const struct reap_target *t, const struct reap_exec *x,
                        struct reap_result *r, int64_t t0, char *state)
{
    struct reap_facts live;
    char why[320], why_l[320], *cause = NULL;
    int pidfd = pin(t->pid), proc_fd, rc, e = errno;
    int32_t named_pid;
    bool alive;

    if (pidfd < 0) {
        if (e == ESRCH)
            conclude(r, REAP_OUT_GONE, 0, t0, "pid %d had already exited", (int)t->pid);
        else if (e == ENOSYS)
            conclude(r, REAP_OUT_FAILED, 0, t0,
                     "this kernel has no pidfd_open (Linux 5.3 or later): without it a reused "
                     "pid could be hit, so nothing is signalled");
        else
            conclude_take(
                r, REAP_OUT_FAILED, 0, t0,
                TWICE("pidfd_open(%d): %s", ((int)t->pid, err_en(e)), ((int)t->pid, strerror(e))));
        goto fail;
    }
    proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    rc = proc_fd >= 0 ? reap_facts_read(proc_fd, t->pid, &live, &cause) : -errno;
    if (proc_fd >= 0)
        close(proc_fd);
    /* Asked after the read: alive now, the entry read was this process's own. */
    alive = send_sig(pidfd, 0) == 0 || errno != ESRCH;
    if (!alive || rc == -ESRCH) {
        conclude(r, REAP_OUT_GONE, 0, t0, "pid %d exited before it was signalled", (int)t->pid);
        if (rc == 0)
            reap_facts_free(&live);
        goto fail_fd;
    }
    if (rc != 0) {
        conclude_take(r, REAP_OUT_FAILED, 0, t0,
                      TWICE("cannot read /proc/%d: %s", ((int)t->pid, cause ? cause : err_en(-rc)),
                            ((int)t->pid, cause ? cause : strerror(-rc))));
        free(cause);
        goto fail_fd;
    }
    named_pid = pidfd_pid(pidfd);
    if (named_pid == -1) { /* exited between the read and now */
        conclude(r, REAP_OUT_GONE, 0, t0, "pid %d exited before it was signalled", (int)t->pid);
        reap_facts_free(&live);
        goto fail_fd;
    }
    if (live.start_ticks != t->start_ticks || (named_pid != 0 && named_pid != t->pid)) {
        conclude(r, REAP_OUT_CHANGED, 0, t0,
                 "pid %d is another process now (start time %" PRIu64 ", the one selected: %" PRIu64
                 "): not signalled",
                 (int)t->pid, live.start_ticks, t->start_ticks);
        reap_facts_free(&live);
        goto fail_fd;
    }
    if (reap_check(x->guard, &live, t->named, why, why_l, sizeof(why)) != REAP_ALLOWED) {
        conclude_take(r, REAP_OUT_REFUSED, 0, t0,
                      TWICE("not signalled: %s", (why), (why_l[0] ? why_l : why)));
        reap_facts_free(&live);
        goto fail_fd;
    }
    if (!still_defunct(t, r, t0)) {
        reap_facts_free(&live);
        goto fail_fd;
    }
    /* Chosen for being stopped, and not named: it must still be (resumed since, it is in use). */
    if (t->role == REAP_ROLE_SELF && t->verdict == FACTS_VERDICT_STOPPED && !t->named &&
        live.state != 'T' && live.state != 't') {
        conclude(r, REAP_OUT_CHANGED, 0, t0,
                 "pid %d is no longer stopped (state %c): not signalled; run reap again",
                 (int)t->pid, live.state ? live.state : '?');
        reap_facts_free(&live);
        goto fail_fd;
    }
    *state = live.state;
    reap_facts_free(&live);
    return pidfd;

fail_fd:
    close(pidfd);
fail:
    reap_log(t, 0, r->detail, r->outcome != REAP_OUT_GONE, x->log_stderr);
    return -1;
}

void reap_execute(const struct reap_target *t, const struct reap_exec *x, struct reap_result *r)
{
    int64_t t0 = time_mono_ms();
    char state = '\0', what[160];
    int pidfd, e;

    memset(r, 0, sizeof(*r));
    if (t->disposition != REAP_SIGNAL) {
        conclude_take(r, REAP_OUT_REFUSED, 0, t0,
                      TWICE("not signalled: %s",
                            (t->n_advice ? t->advice[0] : reap_disposition_names[t->disposition]),
                            (t->n_advice ? (t->advice_l[0] ? t->advice_l[0] : t->advice[0])
                                         : _(disposition_words(t->disposition)))));
        return;
    }
    pidfd = pin_verified(t, x, r, t0, &state);
    if (pidfd < 0)
        return;

    if (send_sig(pidfd, SIGTERM) != 0) {
        e = errno;
        if (e == ESRCH)
            conclude(r, REAP_OUT_GONE, 0, t0, "exited before SIGTERM reached it");
        else
            conclude_take(r, REAP_OUT_FAILED, 0, t0,
                          TWICE("SIGTERM: %s", (err_en(e)), (strerror(e))));
        reap_log(t, SIGTERM, r->detail, r->outcome != REAP_OUT_GONE, x->log_stderr);
        close(pidfd);
        return;
    }
    /* A stopped process acts on SIGTERM only once it runs again. */
    if (state == 'T')
        send_sig(pidfd, SIGCONT);
    if (wait_exit(pidfd, x->grace_ms)) {
        conclude(r, REAP_OUT_EXITED, SIGTERM, t0, "exited after SIGTERM (%.1f s)",
                 (double)(time_mono_ms() - t0) / 1000.0);
        reap_log(t, SIGTERM, r->detail, false, x->log_stderr);
        close(pidfd);
        return;
    }
    snprintf(what, sizeof(what), "still running %.1f s after SIGTERM%s",
             (double)(time_mono_ms() - t0) / 1000.0, state == 'T' ? " and SIGCONT" : "");
    reap_log(t, SIGTERM, what, false, x->log_stderr);

    if (send_sig(pidfd, SIGKILL) != 0 && (e = errno) != ESRCH) {
        conclude_take(r, REAP_OUT_FAILED, SIGTERM, t0,
                      TWICE("SIGKILL: %s", (err_en(e)), (strerror(e))));
        reap_log(t, SIGKILL, r->detail, true, x->log_stderr);
        close(pidfd);
        return;
    }
    if (wait_exit(pidfd, x->kill_wait_ms)) {
        conclude(r, REAP_OUT_KILLED, SIGKILL, t0, "killed: it ignored SIGTERM for %.1f s",
                 (double)x->grace_ms / 1000.0);
        reap_log(t, SIGKILL, "exited", false, x->log_stderr);
    } else {
        struct reap_facts live;
        int proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        uint32_t stuck = 0;

        if (proc_fd >= 0 && reap_facts_read(proc_fd, t->pid, &live, NULL) == 0) {
            stuck = live.tasks_d;
            reap_facts_free(&live);
        }
        if (proc_fd >= 0)
            close(proc_fd);
        conclude(r, REAP_OUT_STUCK, SIGKILL, t0,
                 "still there %.1f s after SIGKILL: %u thread%s in state D (stuck in the kernel, "
                 "most likely the driver); it ends when they return, else a GPU reset or a "
                 "reboot frees its memory",
                 (double)x->kill_wait_ms / 1000.0, (unsigned)stuck, stuck == 1 ? "" : "s");
        reap_log(t, SIGKILL, r->detail, true, x->log_stderr);
    }
    close(pidfd);
}

void reap_result_free(struct reap_result *r)
{
    free(r->detail);
    free(r->detail_l);
    memset(r, 0, sizeof(*r));
}
