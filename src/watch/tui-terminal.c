/*
 * The live view leaves the terminal as it found it, whatever happens: a crash handler writes the
 * saved reset sequence and termios with async-signal-safe calls, then passes the signal on; while
 * the view is up, standard error goes to an unlinked temporary file (a message would tear the
 * screen) and is shown after, the last CAPTURE_SHOW_MAX bytes of it.
 */
#include "util/xalloc.h"
#include "watch/tui-internal.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <term.h>
#include <termios.h>
#include <unistd.h>

/* Standard error written while the view was up, shown after it: the last this many bytes. */
#define CAPTURE_SHOW_MAX 65536

/* Set up before the view starts and read by the crash handler: not scratch, the handler's state. */
static volatile sig_atomic_t crash_armed;
static struct termios crash_tio;
static char crash_reset[256];
static size_t crash_reset_len;
static int crash_stderr = -1, crash_capture = -1;
static const int crash_signals[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGQUIT };
static struct sigaction crash_old[ARRAY_SIZE(crash_signals)];

static void copy_capture(int from, int to)
{
    char buf[4096];
    off_t end;
    ssize_t n;

    if (from < 0 || (end = lseek(from, 0, SEEK_END)) < 0)
        return;
    lseek(from, end > CAPTURE_SHOW_MAX ? end - CAPTURE_SHOW_MAX : 0, SEEK_SET);
    while ((n = read(from, buf, sizeof(buf))) > 0) {
        if (write(to, buf, (size_t)n) != n)
            break;
    }
}

static void on_crash(int sig)
{
    if (crash_armed) {
        crash_armed = 0;
        if (write(STDOUT_FILENO, crash_reset, crash_reset_len) < 0) {
            /* nothing else to try */
        }
        tcsetattr(STDIN_FILENO, TCSANOW, &crash_tio);
        if (crash_stderr >= 0) {
            dup2(crash_stderr, STDERR_FILENO);
            copy_capture(crash_capture, STDERR_FILENO);
        }
    }
    /* Hand the signal to whoever had it before (a sanitizer, or the default: a core dump). */
    for (size_t i = 0; i < ARRAY_SIZE(crash_signals); i++) {
        if (crash_signals[i] == sig)
            sigaction(sig, &crash_old[i], NULL);
    }
    raise(sig);
}

static void add_cap(const char *name)
{
    const char *s = tigetstr(name);
    size_t n;

    if (s == NULL || s == (const char *)-1)
        return;
    n = strlen(s);
    if (crash_reset_len + n < sizeof(crash_reset)) {
        memcpy(crash_reset + crash_reset_len, s, n);
        crash_reset_len += n;
    }
}

void tui_crash_arm(void)
{
    struct sigaction sa;

    crash_reset_len = 0;
    add_cap("sgr0");
    add_cap("cnorm");
    add_cap("rmkx");
    add_cap("rmcup");
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_crash;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < ARRAY_SIZE(crash_signals); i++)
        sigaction(crash_signals[i], &sa, &crash_old[i]);
    crash_armed = 1;
}

void tui_crash_disarm(void)
{
    crash_armed = 0;
    for (size_t i = 0; i < ARRAY_SIZE(crash_signals); i++)
        sigaction(crash_signals[i], &crash_old[i], NULL);
}

/* Saves the terminal's settings for the crash handler to restore. Returns 0, or -1 (errno). */
int tui_save_termios(void)
{
    return tcgetattr(STDIN_FILENO, &crash_tio);
}

/* Standard error into an unlinked temporary file while the view is up. */
void tui_capture_stderr(struct tui *t)
{
    char path[] = "/tmp/gpudoctor-watch-XXXXXX";
    int fd = open("/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);

    if (fd < 0) {
        fd = mkostemp(path, O_CLOEXEC);
        if (fd >= 0)
            unlink(path);
    }
    t->saved_stderr = fd >= 0 ? fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3) : -1;
    if (fd < 0 || t->saved_stderr < 0 || dup2(fd, STDERR_FILENO) < 0) {
        if (fd >= 0)
            close(fd);
        if (t->saved_stderr >= 0)
            close(t->saved_stderr);
        t->saved_stderr = t->capture_fd = -1;
        return;
    }
    t->capture_fd = fd;
    crash_stderr = t->saved_stderr;
    crash_capture = fd;
}

/* Standard error back to where it was, and what was written to it meanwhile shown there. */
void tui_release_stderr(struct tui *t)
{
    if (t->saved_stderr < 0)
        return;
    fflush(stderr);
    dup2(t->saved_stderr, STDERR_FILENO);
    close(t->saved_stderr);
    copy_capture(t->capture_fd, STDERR_FILENO);
    close(t->capture_fd);
    crash_stderr = crash_capture = -1;
}
