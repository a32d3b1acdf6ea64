/*
 * The benchmarks' process spawner: forks N children, each opening one file and waiting, so that
 * gpudoctor scans a realistic process table without a driver.
 *   spawn N K HELD OTHER   N children, K of them (spread evenly) holding HELD open, the rest OTHER;
 *                          prints how many it made, then waits to be killed (with its children)
 *   spawn cost             the cost of one null system call here, in microseconds
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc == 2) { /* the cost of one null system call here, for context */
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        for (int i = 0; i < 200000; i++)
            syscall(SYS_getppid);
        clock_gettime(CLOCK_MONOTONIC, &b);
        printf("%.2f\n", ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / 200000 / 1000);
        return 0;
    }
    if (argc != 5)
        return 64;
    long n = atol(argv[1]), k = atol(argv[2]), every = k > 0 ? n / k : n + 1, made = 0;
    for (long i = 0; i < n; i++) {
        pid_t p = fork();
        if (p < 0) {
            perror("fork");
            break;
        }
        if (p == 0) {
            int fd = open(i % every == 0 && i / every < k ? argv[3] : argv[4], O_RDONLY);
            (void)fd;
            for (;;)
                pause();
        }
        made++;
    }
    printf("%ld\n", made);
    fflush(stdout);
    for (;;)
        pause();
}
