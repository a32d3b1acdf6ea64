/*
 * Processes for the reap tests to end, each one a case reap must handle:
 *
 *   reap-target ignore-term       ignores SIGTERM: only SIGKILL ends it
 *   reap-target zombie-parent     forks a child that exits at once and never reaps it: the
 *                                 child stays defunct while this parent lives
 *   reap-target zombie-leader     its main thread exits while another thread runs on: the
 *                                 process shows as defunct (Z) but still has a live thread
 *   reap-target subreaper CMD...  runs CMD as a child subreaper (PR_SET_CHILD_SUBREAPER) and
 *                                 reaps every orphan below it, as init would, until CMD ends;
 *                                 exits with CMD's status (a test whose zombies must be reaped
 *                                 by someone it controls runs under it)
 *
 * Each of the first three prints one line when ready: its pid, and for zombie-parent the
 * zombie's pid after it ("4121 4122"), then waits to be ended.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

int main(int argc, char **argv)
{
    pthread_t t;

    if (argc < 2) {
        fprintf(stderr, "usage: reap-target ignore-term|zombie-parent|zombie-leader|"
                        "subreaper CMD...\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (strcmp(argv[1], "subreaper") == 0 && argc > 2)
        return subreaper(argv + 2);
    if (strcmp(argv[1], "ignore-term") == 0) {
        signal(SIGTERM, SIG_IGN);
        printf("%d\n", (int)getpid());
        for (;;)
            pause();
    }
    if (strcmp(argv[1], "zombie-parent") == 0) {
        pid_t child = fork();

        if (child < 0)
            return 1;
        if (child == 0)
            _exit(0);
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
        printf("%d %d\n", (int)getpid(), (int)child);
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
