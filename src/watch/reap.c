/*
 * Ending the selected process from the live view. Until `gpudoctor reap` (issue 5) brings its
 * own safety checks, this is the one place that signals a process: SIGTERM only, after the user
 * confirmed, to a process pinned with a pidfd and verified by (pid, start time), so a pid reused
 * since the view was drawn is never hit. reap can replace this function whole.
 */
#include "collect/procfs.h"
#include "util/fileio.h"
#include "util/xalloc.h"
#include "watch/watch.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

void watch_reap_command(char *buf, size_t size, const struct proc *p)
{
    snprintf(buf, size, "kill -TERM %d", (int)p->pid);
}

static int pidfd_open_(pid_t pid)
{
#ifdef SYS_pidfd_open
    return (int)syscall(SYS_pidfd_open, pid, 0);
#else
    (void)pid;
    errno = ENOSYS;
    return -1;
#endif
}

static int pidfd_kill(int fd, int sig)
{
#ifdef SYS_pidfd_send_signal
    return (int)syscall(SYS_pidfd_send_signal, fd, sig, NULL, 0);
#else
    (void)fd;
    (void)sig;
    errno = ENOSYS;
    return -1;
#endif
}

/* Whether /proc/<pid> is still the process that started at start_ticks. */
static int same_process(const struct proc *p, char **cause)
{
    char path[64], buf[2048], why[64];
    struct procfs_stat st;
    ssize_t n;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)p->pid);
    n = file_read_at(AT_FDCWD, path, buf, sizeof(buf));
    if (n < 0) {
        *cause = xasprintf("pid %d has already exited", (int)p->pid);
        return -1;
    }
    if (procfs_parse_stat(buf, &st, why, sizeof(why)) != 0) {
        *cause = xasprintf("pid %d: %s: %s", (int)p->pid, path, why);
        return -1;
    }
    if (st.start_ticks != p->start_ticks) {
        *cause = xasprintf("pid %d is now another process (it started at a different time): "
                           "nothing sent",
                           (int)p->pid);
        return -1;
    }
    if (st.state == 'Z') {
        *cause = xasprintf("pid %d is a zombie: it has ended, its parent (pid %d) must reap it",
                           (int)p->pid, (int)st.ppid);
        return -1;
    }
    return 0;
}

int watch_reap(const char *root, const struct proc *p, char **cause)
{
    int fd, rc;

    if (root != NULL && strcmp(root, "/") != 0) {
        *cause = xasprintf("--root %s is another machine's tree: nothing to signal here", root);
        return -1;
    }
    if (p->pid <= 1 || p->pid == getpid() || p->pid == getppid()) {
        *cause = xasprintf("pid %d is not one gpudoctor ends", (int)p->pid);
        return -1;
    }
    if (!(p->valid & (UINT64_C(1) << PROC_S_STAT))) {
        *cause =
            xasprintf("pid %d: its start time is unknown, so it cannot be verified", (int)p->pid);
        return -1;
    }
    /* Pin first, then verify: the pidfd stays that process whatever happens to the pid. */
    fd = pidfd_open_(p->pid);
    if (fd < 0 && errno != ENOSYS) {
        *cause = xasprintf("pid %d: %s", (int)p->pid,
                           errno == ESRCH ? "has already exited" : strerror(errno));
        return -1;
    }
    if (same_process(p, cause) != 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    /* Without pidfds (kernels before 5.3) the check above is as close as it gets. */
    rc = fd >= 0 ? pidfd_kill(fd, SIGTERM) : kill(p->pid, SIGTERM);
    if (rc != 0)
        *cause = xasprintf("pid %d: SIGTERM: %s", (int)p->pid,
                           errno == EPERM ? "not permitted (another user's process: run as root "
                                            "or ask its owner)"
                                          : strerror(errno));
    if (fd >= 0)
        close(fd);
    return rc == 0 ? 0 : -1;
}
