/*
 * syslog-sink PATH: a stand-in for the syslog daemon. Binds a datagram socket at PATH (a test
 * puts it at /dev/log inside its own mount namespace) and prints each message it receives on one
 * line of stdout, as sent ("<85>Dec  2 10:00:00 gpudoctor[4121]: reap: ..."), until SIGTERM.
 * Prints "ready" once it listens.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    struct sockaddr_un a;
    char buf[8192];
    int fd;

    if (argc != 2 || strlen(argv[1]) >= sizeof(a.sun_path)) {
        fprintf(stderr, "usage: syslog-sink PATH\n");
        return 2;
    }
    fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        perror("socket");
        return 1;
    }
    memset(&a, 0, sizeof(a));
    a.sun_family = AF_UNIX;
    strcpy(a.sun_path, argv[1]);
    unlink(argv[1]);
    if (bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
        perror(argv[1]);
        return 1;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    puts("ready");
    for (;;) {
        ssize_t n = recv(fd, buf, sizeof(buf) - 1, 0);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return 1;
        buf[n] = '\0';
        while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\0'))
            buf[--n] = '\0';
        puts(buf);
    }
}
