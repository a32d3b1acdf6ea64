/*
 * runstat: runs a command N times and prints wall time and peak RSS statistics, for make bench.
 *   runstat [-n RUNS] [-w WARMUP] -- command args...
 * Output (one line, key=value): runs, wall_ms_min, wall_ms_median, wall_ms_p95, rss_kib_max, rc.
 * Uses wait4() for the child's own peak RSS, so the measurement includes nothing of runstat.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

static int run_once(char **argv, double *wall_ms, long *rss_kib)
{
    struct rusage ru;
    double t0 = now_ms();
    int status;
    pid_t pid = fork();

    if (pid < 0)
        return -1;
    if (pid == 0) {
        if (freopen("/dev/null", "w", stdout) == NULL)
            _exit(127);
        execvp(argv[0], argv);
        _exit(127);
    }
    while (wait4(pid, &status, 0, &ru) < 0) {
        if (errno != EINTR)
            return -1;
    }
    *wall_ms = now_ms() - t0;
    *rss_kib = ru.ru_maxrss;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int main(int argc, char **argv)
{
    int runs = 20, warmup = 2, opt, rc = 0;
    long rss_max = 0;
    double *walls;

    while ((opt = getopt(argc, argv, "+n:w:")) != -1) {
        if (opt == 'n')
            runs = atoi(optarg);
        else if (opt == 'w')
            warmup = atoi(optarg);
        else
            return 64;
    }
    if (optind >= argc || runs < 1) {
        fprintf(stderr, "usage: runstat [-n RUNS] [-w WARMUP] -- command args...\n");
        return 64;
    }
    walls = calloc((size_t)runs, sizeof(*walls));
    if (walls == NULL)
        return 1;
    for (int i = 0; i < warmup + runs; i++) {
        double wall;
        long rss;

        rc = run_once(argv + optind, &wall, &rss);
        if (rc < 0) {
            perror("runstat");
            return 1;
        }
        if (i < warmup)
            continue;
        walls[i - warmup] = wall;
        if (rss > rss_max)
            rss_max = rss;
    }
    qsort(walls, (size_t)runs, sizeof(*walls), cmp_double);
    printf("runs=%d wall_ms_min=%.2f wall_ms_median=%.2f wall_ms_p95=%.2f rss_kib_max=%ld rc=%d\n",
           runs, walls[0], walls[runs / 2], walls[(runs * 95 + 99) / 100 - 1], rss_max, rc);
    free(walls);
    return 0;
}
