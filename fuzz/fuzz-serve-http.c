/*
 * serve's HTTP request handling, end to end: the input is sent as raw bytes over a real TCP
 * connection to serve's HTTP server (libmicrohttpd loaded as serve loads it, our request handler,
 * a published result to answer from), then the connection is half-closed and the answer read to
 * its end. libmicrohttpd parses the request; our handler picks the answer. Coverage feedback
 * reaches our code only (the system libmicrohttpd is not instrumented), so this harness finds
 * crashes, leaks and hangs in the handler and in how we drive the library, not new paths inside
 * it. Checks: what comes back is an HTTP/1.x response, and it never trickles on for 5 s; at
 * start, a plain scrape gets 200 (so silence is not mistaken for the harness working).
 */
#include "fuzz.h"
#include "serve/serve.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

static struct serve_cache cache;
static struct serve_http *http;
static uint16_t port;

static size_t exchange(const uint8_t *data, size_t size, char *head, size_t head_size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    static const char metrics[] = "# HELP gpudoctor_up 1\n# TYPE gpudoctor_up gauge\n"
                                  "gpudoctor_up 1\n";
    static const char findings[] = "\"schema\":\"gpudoctor.findings/1\",\"findings\":[]}";
    struct serve_http_opts o = {
        .listen = "127.0.0.1:0",
        .threads = 2,
        .max_connections = 64,
        .timeout_s = 2,
        .stale_ms = 60000,
    };
    struct serve_result *r;
    char *cause = NULL;

    (void)argc;
    (void)argv;
    r = serve_result_new(xstrdup(metrics), sizeof(metrics) - 1, xstrdup(findings),
                         sizeof(findings) - 1);
    r->completed_mono_ms = time_mono_ms();
    r->completed_ms = 1764660000000;
    r->success = true;
    serve_cache_init(&cache, r);
    http = serve_http_start(&o, &cache, &cause);
    FUZZ_ASSERT(http != NULL, "serve's HTTP server does not start: %s", cause);
    port = serve_http_port(http);
    {
        /* The harness is wired right: a scrape gets the published metrics. */
        static const char scrape[] = "GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n";
        char head[16];
        size_t got = exchange((const uint8_t *)scrape, sizeof(scrape) - 1, head, sizeof(head));

        FUZZ_ASSERT(got >= 12 && memcmp(head, "HTTP/1.1 200", 12) == 0, "a scrape fails");
    }
    return 0;
}

/*
 * Sends data and an empty line on a new connection, half-closes it and reads what comes back
 * into head (its first head_size bytes), until 30 ms pass without a byte: an answer is written
 * at once, and libmicrohttpd holds a connection it has answered, or whose request is not
 * complete, until its idle timeout rather than closing it on the client's half-close. Returns
 * the bytes received.
 */
static size_t exchange(const uint8_t *data, size_t size, char *head, size_t head_size)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
    int64_t deadline;
    char buf[16384];
    size_t got = 0, sent = 0;
    int fd;

    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    FUZZ_ASSERT(fd >= 0, "socket");
    FUZZ_ASSERT(connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0, "connect to serve");
    while (sent < size) {
        ssize_t n = send(fd, data + sent, size - sent, MSG_NOSIGNAL);

        if (n <= 0)
            break; /* the server may close before reading everything (431, a bad request) */
        sent += (size_t)n;
    }
    /* An empty line after the input ends the headers of most inputs, so they reach the handler. */
    (void)send(fd, "\r\n\r\n", 4, MSG_NOSIGNAL);
    shutdown(fd, SHUT_WR);
    deadline = time_mono_ms() + 5000;
    for (;;) {
        struct pollfd p = { .fd = fd, .events = POLLIN };
        ssize_t n;

        FUZZ_ASSERT(time_mono_ms() < deadline, "an answer still coming after 5 s");
        if (poll(&p, 1, 30) <= 0)
            break;
        n = recv(fd, buf, sizeof(buf), 0);
        if (n <= 0)
            break;
        if (got < head_size)
            memcpy(head + got, buf, (size_t)n < head_size - got ? (size_t)n : head_size - got);
        got += (size_t)n;
    }
    close(fd);
    return got;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char head[8];
    size_t got = exchange(data, size, head, sizeof(head));

    if (got > 0)
        FUZZ_ASSERT(got >= 7 && memcmp(head, "HTTP/1.", 7) == 0, "not an HTTP response: %.*s",
                    (int)(got < sizeof(head) ? got : sizeof(head)), head);
    return 0;
}
