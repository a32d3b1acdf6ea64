/*
 * The facts about one process that the safety checks need, read fresh from a /proc: its stat
 * (identity, state, parent, kernel-thread flag), its owner, its program and command line, and
 * the state of each of its threads (a defunct process whose threads are stuck in the driver
 * cannot be helped by a signal).
 */
#include "collect/procfs.h"
#include "reap/reap.h"
#include "util/fileio.h"
#include "util/strutil.h"
#include "util/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define STAT_MAX    2048
#define STATUS_MAX  16384
#define CMDLINE_MAX 65536
#define TASKS_MAX   65536 /* threads looked at; a process has far fewer */

/* Counts the threads in state D and those still alive, from task/<tid>/stat. */
static void read_tasks(int dirfd, struct reap_facts *f)
{
    f->have_tasks = procfs_task_states(dirfd, TASKS_MAX, &f->tasks_d, &f->tasks_live);
}

static void read_cmdline(int dirfd, struct reap_facts *f)
{
    char *buf = NULL, *sp;
    bool truncated;
    ssize_t n = procfs_read_bounded(dirfd, "cmdline", CMDLINE_MAX, &buf, &truncated);

    if (n > 0 && buf[0] != '\0') {
        f->argv0 = str_sanitize(xstrdup(buf));
        f->cmdline = procfs_cmdline_join(buf, (size_t)n);
        if ((sp = strchr(f->argv0, ' ')) != NULL) /* "python train.py" in one argument */
            *sp = '\0';
    }
    free(buf);
}

int reap_facts_read(int proc_fd, int32_t pid, struct reap_facts *f, char **cause)
{
    char name[16], buf[STAT_MAX], why[128], link[4096];
    char *status = NULL;
    struct procfs_stat st;
    struct procfs_status ps;
    bool truncated;
    ssize_t n;
    int dirfd, rc = 0;

    memset(f, 0, sizeof(*f));
    f->pid = pid;
    snprintf(name, sizeof(name), "%d", (int)pid);
    dirfd = openat(proc_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dirfd < 0)
        return errno == ENOENT ? -ESRCH : -errno;
    n = procfs_read_small(dirfd, "stat", buf, sizeof(buf));
    if (n < 0) {
        rc = n == -ENOENT ? -ESRCH : (int)n;
        goto out;
    }
    why[0] = '\0';
    if (procfs_parse_stat(buf, &st, why, sizeof(why)) != 0 || st.pid != pid) {
        if (cause)
            *cause = xasprintf("/proc/%d/stat: %s", (int)pid, why[0] ? why : "another pid inside");
        rc = -EINVAL;
        goto out;
    }
    f->ppid = st.ppid;
    f->start_ticks = st.start_ticks;
    f->state = st.state;
    f->flags = st.flags;
    f->have_flags = true;
    snprintf(f->comm, sizeof(f->comm), "%s", st.comm);
    if (procfs_read_bounded(dirfd, "status", STATUS_MAX, &status, &truncated) > 0) {
        procfs_parse_status(status, &ps);
        f->have_uid = ps.have_uid;
        f->uid = ps.uid;
        f->have_nspid = ps.have_nspid;
        f->ns_pid = ps.ns_pid;
        f->ns_depth = ps.ns_depth;
    }
    free(status);
    if (file_readlink_at(dirfd, "exe", link, sizeof(link)) > 0)
        f->exe = str_sanitize(xstrdup(link));
    /* Reading cmdline takes the target's memory-map lock: behind a thread in D it can block. */
    read_tasks(dirfd, f);
    if (f->state != 'D' && f->tasks_d == 0)
        read_cmdline(dirfd, f);
out:
    close(dirfd);
    return rc;
}

void reap_facts_from_proc(const struct proc *p, struct reap_facts *f)
{
    memset(f, 0, sizeof(*f));
    f->pid = p->pid;
    if (p->valid & (UINT64_C(1) << PROC_S_STAT)) {
        f->ppid = p->ppid;
        f->start_ticks = p->start_ticks;
        f->state = p->state;
        snprintf(f->comm, sizeof(f->comm), "%s", p->comm ? p->comm : "");
    }
    if (p->valid & (UINT64_C(1) << PROC_S_USER)) {
        f->have_uid = true;
        f->uid = p->uid;
    }
    if (p->valid & (UINT64_C(1) << PROC_S_NSPID)) {
        f->have_nspid = true;
        f->ns_pid = p->ns_pid;
        f->ns_depth = p->ns_depth;
    }
    if ((p->valid & (UINT64_C(1) << PROC_S_EXE)) && p->exe)
        f->exe = xstrdup(p->exe);
    if ((p->valid & (UINT64_C(1) << PROC_S_CMDLINE)) && p->cmdline) {
        char *sp;

        f->cmdline = xstrdup(p->cmdline);
        f->argv0 = xstrdup(p->cmdline);
        if ((sp = strchr(f->argv0, ' ')) != NULL)
            *sp = '\0';
    }
}

void reap_facts_free(struct reap_facts *f)
{
    free(f->exe);
    free(f->argv0);
    free(f->cmdline);
    memset(f, 0, sizeof(*f));
}
