/*
 * Processes for the reap tests to end, each one a case reap must handle:
 *
 *   reap-target ignore-term       ignores SIGTERM: only SIGKILL ends it
 *   reap-target zombie-parent     forks a child that exits at once and never reaps it: the
 *                                 child stays defunct while this parent lives
 *   reap-target zombie-parent-2   the same with two such children, 0.2 s apart (their start
 *                                 times differ); prints its pid and both of theirs
 *   reap-target zombie-leader     its main thread exits while another thread runs on: the
 *                                 process shows as defunct (Z) but still has a live thread
 *   reap-target subreaper CMD...  runs CMD as a child subreaper (PR_SET_CHILD_SUBREAPER) and
 *                                 reaps every orphan below it, as init would, until CMD ends;
 *                                 exits with CMD's status (a test whose zombies must be reaped
 *                                 by someone it controls runs under it)
 *   reap-target holder CMD...     runs CMD (exec: the same pid) with /dev/nvidiactl and
 *                                 /dev/nvidia-uvm open (fds 100 and 101), as every CUDA
 *                                 process has them: empty
 *                                 files on a tmpfs over /dev (null, zero, tty... bound back) in
 *                                 a mount namespace of its own (a user namespace too when not
 *                                 root), which gpudoctor, reading
 *                                 /proc/PID/fd from outside, sees by those names. A process NVML
 *                                 lists that holds no NVIDIA device is another one than NVML's.
 *
 * Each of the first four prints one line when ready: its pid, and for zombie-parent the
 * zombie's pid after it ("4121 4122"), then waits to be ended.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

static void *sleeper(void *arg)
{
    (void)arg;
    for (;;)
        pause();
    return NULL;
}

/* Forks a child that exits at once, and returns once it is a zombie (never reaped here). */
static pid_t zombie(void)
{
    pid_t child = fork();

    if (child <= 0) {
        if (child == 0)
            _exit(0);
        return -1;
    }
    /* Wait until the child really is a zombie before saying so. */
    for (int i = 0; i < 200; i++) {
        char path[64], buf[256];
        FILE *f;

        snprintf(path, sizeof(path), "/proc/%d/stat", (int)child);
        f = fopen(path, "r");
        if (f && fgets(buf, sizeof(buf), f) && strstr(buf, ") Z ")) {
            fclose(f);
            break;
        }
        if (f)
            fclose(f);
        usleep(10000);
    }
    return child;
}

static int subreaper(char **argv)
{
    pid_t child, w;
    int status, rc = 127;

    if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
        perror("prctl(PR_SET_CHILD_SUBREAPER)");
        return 127;
    }
    child = fork();
    if (child < 0) {
        perror("fork");
        return 127;
    }
    if (child == 0) {
        execvp(argv[0], argv);
        perror(argv[0]);
        _exit(127);
    }
    /* Reap whatever is re-parented here until the command ends; orphans left then go to init. */
    for (;;) {
        w = waitpid(-1, &status, 0);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            break;
        if (w == child) {
            rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
            break;
        }
    }
    while (waitpid(-1, &status, WNOHANG) > 0)
        ;
    return rc;
}

static int write_file(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? write(fd, text, strlen(text)) : -1;

    if (fd >= 0)
        close(fd);
    return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* A mount namespace of its own: as root directly, else inside a user namespace mapping us. */
static int own_mounts(void)
{
    char map[64];
    uid_t uid = getuid();
    gid_t gid = getgid();

    if (unshare(CLONE_NEWNS) == 0)
        return 0;
    if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0)
        return -1;
    snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)uid, (unsigned)uid);
    if (write_file("/proc/self/setgroups", "deny") != 0 ||
        write_file("/proc/self/uid_map", map) != 0)
        return -1;
    snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)gid, (unsigned)gid);
    return write_file("/proc/self/gid_map", map);
}

#define HOLDER_FD 100

static int holder(char **argv)
{
    static const char *const devs[] = { "/dev/nvidiactl", "/dev/nvidia-uvm" };
    static const char *const kept[] = { "null", "zero", "full", "random", "urandom", "tty" };
    char from[64], to[64];
    int old;

    if (own_mounts() != 0) {
        perror("reap-target holder: a mount namespace of its own");
        return 127;
    }
    /* The /dev below, to bring back what programs expect in it (the test scripts' /dev/null). */
    old = open("/dev", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (old < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
        mount("tmpfs", "/dev", "tmpfs", MS_NOSUID, "size=16k,mode=0755") != 0) {
        perror("reap-target holder: a tmpfs over /dev");
        return 127;
    }
    for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++) {
        int fd;

        snprintf(from, sizeof(from), "/proc/self/fd/%d/%s", old, kept[i]);
        snprintf(to, sizeof(to), "/dev/%s", kept[i]);
        if (access(from, F_OK) != 0)
            continue;
        fd = open(to, O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
        if (fd < 0 || close(fd) != 0 || mount(from, to, NULL, MS_BIND, NULL) != 0) {
            perror(to);
            return 127;
        }
    }
    close(old);
    for (size_t i = 0; i < sizeof(devs) / sizeof(devs[0]); i++) {
        int fd = open(devs[i], O_RDWR | O_CREAT | O_CLOEXEC, 0600);

        /* Left open for CMD at a known number (HOLDER_FD + i), which a script can close in the
         * children it does not want to hold them ("sleep 300 100<&- 101<&- &"). */
        if (fd < 0 || dup2(fd, HOLDER_FD + (int)i) < 0) {
            perror(devs[i]);
            return 127;
        }
        close(fd);
    }
    execvp(argv[0], argv);
    perror(argv[0]);
    return 127;
}

int main(int argc, char **argv)
{
    pthread_t t;

    if (argc < 2) {
        fprintf(stderr, "usage: reap-target ignore-term|zombie-parent[-2]|zombie-leader|"
                        "subreaper CMD...|holder CMD...\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (strcmp(argv[1], "subreaper") == 0 && argc > 2)
        return subreaper(argv + 2);
    if (strcmp(argv[1], "holder") == 0 && argc > 2)
        return holder(argv + 2);
    if (strcmp(argv[1], "ignore-term") == 0) {
        signal(SIGTERM, SIG_IGN);
        printf("%d\n", (int)getpid());
        for (;;)
            pause();
    }
    if (strcmp(argv[1], "zombie-parent") == 0 || strcmp(argv[1], "zombie-parent-2") == 0) {
        pid_t first = zombie(), second = 0;

        if (first < 0)
            return 1;
        if (strcmp(argv[1], "zombie-parent-2") == 0) {
            usleep(200000); /* a later clock tick: the two start times differ */
            if ((second = zombie()) < 0)
                return 1;
            printf("%d %d %d\n", (int)getpid(), (int)first, (int)second);
        } else {
            printf("%d %d\n", (int)getpid(), (int)first);
        }
        for (;;)
            pause();
    }
    if (strcmp(argv[1], "zombie-leader") == 0) {
        if (pthread_create(&t, NULL, sleeper, NULL) != 0)
            return 1;
        printf("%d\n", (int)getpid());
        fflush(stdout);
        pthread_exit(NULL); /* the leader becomes a zombie; the process lives on */
    }
    fprintf(stderr, "reap-target: unknown mode %s\n", argv[1]);
    return 2;
}
