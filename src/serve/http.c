/*
 * The HTTP side of `serve`, on libmicrohttpd: a pool of internal threads on epoll, a connection
 * limit, an idle timeout per connection, and a per-connection memory bound that the request line
 * and headers must fit in (larger requests get 431 and are closed). GET and HEAD only; the only
 * thing a request names is which of three prepared answers it gets. Bodies are never copied:
 * a response points into the published result, whose reference it holds until MHD is done.
 * /metrics and /findings come gzipped when the request's Accept-Encoding allows it, from the
 * body the collection thread compressed (encoding.c): a request compresses nothing.
 */
#include "serve/mhd.h"
#include "serve/serve.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

struct serve_http {
    struct MHD_Daemon *mhd;
    struct serve_cache *cache;
    int64_t stale_ms;
    uint16_t port;
    atomic_uint_fast64_t requests;
};

/* What a response body points into, freed when MHD destroys the response. */
struct body {
    struct serve_result *r;
    char extra[SERVE_GZIP_PART_MAX]; /* the part made for this request: data age, staleness */
    struct serve_gzip_frame gz;      /* for a gzip answer: its header, extra, its trailer */
};

static void body_free(void *cls)
{
    struct body *b = cls;

    serve_result_unref(b->r);
    free(b);
}

/* ---- the listen address ---- */

static int parse_port(const char *s, uint16_t *port)
{
    char *end;
    long v;

    if (*s < '0' || *s > '9')
        return -1;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < 0 || v > 65535)
        return -1;
    *port = (uint16_t)v;
    return 0;
}

int serve_parse_listen(const char *spec, struct sockaddr_storage *ss, socklen_t *len, char **cause)
{
    char host[256];
    const char *colon, *port_s;
    uint16_t port;
    struct addrinfo hints, *ai = NULL;
    int rc;

    memset(ss, 0, sizeof(*ss));
    if (spec[0] == '[') {
        const char *close = strchr(spec, ']');

        /* An IPv6 address: never empty ("[]"), never IPv4 or a name ("[127.0.0.1]"). */
        if (close == NULL || close[1] != ':' || close == spec + 1 ||
            memchr(spec, ':', (size_t)(close - spec)) == NULL ||
            (size_t)(close - spec - 1) >= sizeof(host))
            goto bad;
        memcpy(host, spec + 1, (size_t)(close - spec - 1));
        host[close - spec - 1] = '\0';
        port_s = close + 2;
    } else {
        colon = strrchr(spec, ':');
        if (colon == NULL || (size_t)(colon - spec) >= sizeof(host) ||
            memchr(spec, ':', (size_t)(colon - spec)) != NULL)
            goto bad;
        memcpy(host, spec, (size_t)(colon - spec));
        host[colon - spec] = '\0';
        port_s = colon + 1;
    }
    if (parse_port(port_s, &port) != 0) {
        *cause = xasprintf("--listen %s: '%s' is not a port (0-65535)", spec, port_s);
        return -1;
    }
    if (host[0] == '\0') {
        /* Every address: IPv6 and, through the dual stack, IPv4. */
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;

        a->sin6_family = AF_INET6;
        a->sin6_addr = in6addr_any;
        a->sin6_port = htons(port);
        *len = sizeof(*a);
        return 0;
    }
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_ADDRCONFIG;
    rc = getaddrinfo(host, NULL, &hints, &ai);
    if (rc != 0 || ai == NULL) {
        *cause = xasprintf("--listen %s: cannot resolve '%s': %s", spec, host, gai_strerror(rc));
        if (ai)
            freeaddrinfo(ai);
        return -1;
    }
    memcpy(ss, ai->ai_addr, ai->ai_addrlen);
    *len = ai->ai_addrlen;
    freeaddrinfo(ai);
    if (ss->ss_family == AF_INET)
        ((struct sockaddr_in *)ss)->sin_port = htons(port);
    else if (ss->ss_family == AF_INET6)
        ((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
    else
        goto bad;
    return 0;
bad:
    *cause = xasprintf("--listen %s: expected ADDRESS:PORT (127.0.0.1:9464, [::1]:9464, "
                       ":9464 for every address)",
                       spec);
    return -1;
}

static void format_addr(const struct sockaddr_storage *ss, char *buf, size_t size)
{
    char ip[INET6_ADDRSTRLEN] = "?";

    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)ss;

        inet_ntop(AF_INET, &a->sin_addr, ip, sizeof(ip));
        snprintf(buf, size, "%s:%u", ip, (unsigned)ntohs(a->sin_port));
    } else {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;

        inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof(ip));
        snprintf(buf, size, "[%s]:%u", ip, (unsigned)ntohs(a->sin6_port));
    }
}

/* Opens the listening socket ourselves, so that a failure says exactly what went wrong. */
static int listen_socket(const char *spec, uint16_t *port, char **cause)
{
    struct sockaddr_storage ss;
    socklen_t len;
    char where[INET6_ADDRSTRLEN + 16];
    int fd, one = 1, zero = 0;

    if (serve_parse_listen(spec, &ss, &len, cause) != 0)
        return -1;
    format_addr(&ss, where, sizeof(where));
    fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        *cause = xasprintf("cannot listen on %s: %s", where, strerror(errno));
        return -1;
    }
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (ss.ss_family == AF_INET6 &&
        IN6_IS_ADDR_UNSPECIFIED(&((struct sockaddr_in6 *)&ss)->sin6_addr))
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
    if (bind(fd, (struct sockaddr *)&ss, len) != 0 || listen(fd, 1024) != 0) {
        *cause = xasprintf("cannot listen on %s: %s", where, strerror(errno));
        close(fd);
        return -1;
    }
    len = sizeof(ss);
    if (getsockname(fd, (struct sockaddr *)&ss, &len) != 0) {
        *cause = xasprintf("cannot listen on %s: %s", where, strerror(errno));
        close(fd);
        return -1;
    }
    *port = ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
                                          : ((struct sockaddr_in6 *)&ss)->sin6_port);
    return fd;
}

/* ---- requests ---- */

static enum MHD_Result reply_text(struct MHD_Connection *c, unsigned status, const char *text)
{
    struct MHD_Response *resp =
        mhd.create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_MUST_COPY);
    enum MHD_Result rc;

    if (resp == NULL)
        return MHD_NO;
    mhd.add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        mhd.add_response_header(resp, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
    rc = mhd.queue_response(c, status, resp);
    mhd.destroy_response(resp);
    return rc;
}

static enum MHD_Result accept_encoding(void *cls, enum MHD_ValueKind kind, const char *key,
                                       const char *value)
{
    (void)kind;
    if (value != NULL && strcasecmp(key, MHD_HTTP_HEADER_ACCEPT_ENCODING) == 0)
        serve_coding_parse(cls, value);
    return MHD_YES;
}

/* Whether the request's Accept-Encoding fields, all of them, let the answer be gzip. */
static bool wants_gzip(struct MHD_Connection *c)
{
    struct serve_coding coding;

    serve_coding_init(&coding);
    mhd.get_connection_values(c, MHD_HEADER_KIND, accept_encoding, &coding);
    return serve_coding_gzip(&coding);
}

/*
 * A body of two parts: one made for this request (b->extra) and one from the result, in either
 * order; gzip-coded when the request accepts it, with the result's compressed copy (gz).
 */
static enum MHD_Result reply_parts(struct MHD_Connection *c, struct body *b, bool extra_first,
                                   const char *data, size_t len, const struct serve_deflated *gz,
                                   const char *type)
{
    struct MHD_IoVec iov[3];
    struct MHD_Response *resp;
    enum MHD_Result rc;
    size_t extra_len = strlen(b->extra);
    bool gzip = wants_gzip(c);

    if (gzip) {
        serve_gzip_frame(gz, b->extra, extra_first ? extra_len : 0, extra_first ? "" : b->extra,
                         extra_first ? 0 : extra_len, &b->gz);
        iov[0].iov_base = b->gz.head;
        iov[0].iov_len = b->gz.head_len;
        iov[1].iov_base = gz->data;
        iov[1].iov_len = gz->len;
        iov[2].iov_base = b->gz.tail;
        iov[2].iov_len = b->gz.tail_len;
    } else {
        struct MHD_IoVec *shared = &iov[extra_first ? 1 : 0], *own = &iov[extra_first ? 0 : 1];

        shared->iov_base = data;
        shared->iov_len = len;
        own->iov_base = b->extra;
        own->iov_len = extra_len;
    }
    resp = mhd.create_response_from_iovec(iov, gzip ? 3 : 2, body_free, b);
    if (resp == NULL) {
        body_free(b);
        return MHD_NO;
    }
    mhd.add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    mhd.add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    /* Caches between scraper and server must not hand a gzip body to a client without gzip. */
    mhd.add_response_header(resp, MHD_HTTP_HEADER_VARY, MHD_HTTP_HEADER_ACCEPT_ENCODING);
    if (gzip)
        mhd.add_response_header(resp, MHD_HTTP_HEADER_CONTENT_ENCODING, "gzip");
    rc = mhd.queue_response(c, MHD_HTTP_OK, resp);
    mhd.destroy_response(resp);
    return rc;
}

/* Seconds since the result was published, or -1 before the first collection. */
static double data_age_s(const struct serve_result *r)
{
    if (r->completed_mono_ms == 0)
        return -1;
    return (double)(time_mono_ms() - r->completed_mono_ms) / 1000.0;
}

/* For /metrics: the same, and before the first collection the time since the exporter started. */
static double metrics_age_s(const struct serve_result *r)
{
    int64_t from = r->completed_mono_ms ? r->completed_mono_ms : r->age_from_mono_ms;

    if (from == 0)
        return -1;
    return (double)(time_mono_ms() - from) / 1000.0;
}

static enum MHD_Result reply_metrics(struct serve_http *h, struct MHD_Connection *c)
{
    struct body *b = xcalloc(1, sizeof(*b));
    double age;

    b->r = serve_cache_get(h->cache);
    age = metrics_age_s(b->r);
    if (age >= 0)
        metrics_render_age(b->extra, sizeof(b->extra), age);
    return reply_parts(c, b, false, b->r->metrics, b->r->metrics_len, &b->r->metrics_gz,
                       METRICS_CONTENT_TYPE);
}

static enum MHD_Result reply_findings(struct serve_http *h, struct MHD_Connection *c)
{
    struct body *b = xcalloc(1, sizeof(*b));
    double age;

    b->r = serve_cache_get(h->cache);
    age = data_age_s(b->r);
    if (age < 0)
        snprintf(b->extra, sizeof(b->extra), "{\"data_age_seconds\":null,\"stale\":true,");
    else
        snprintf(b->extra, sizeof(b->extra), "{\"data_age_seconds\":%.3f,\"stale\":%s,", age,
                 age * 1000.0 > (double)h->stale_ms ? "true" : "false");
    return reply_parts(c, b, true, b->r->findings, b->r->findings_len, &b->r->findings_gz,
                       "application/json; charset=utf-8");
}

static enum MHD_Result reply_health(struct serve_http *h, struct MHD_Connection *c)
{
    struct serve_result *r = serve_cache_get(h->cache);
    double age = data_age_s(r);
    char text[200];
    unsigned status = MHD_HTTP_OK;

    if (age < 0) {
        snprintf(text, sizeof(text), "starting: no collection has completed yet\n");
        status = MHD_HTTP_SERVICE_UNAVAILABLE;
    } else if (age * 1000.0 > (double)h->stale_ms) {
        snprintf(text, sizeof(text),
                 "stale: the last collection completed %.1f s ago (limit %.1f s)\n", age,
                 (double)h->stale_ms / 1000.0);
        status = MHD_HTTP_SERVICE_UNAVAILABLE;
    } else {
        snprintf(text, sizeof(text), "ok: data %.1f s old, %s\n", age,
                 r->success ? "last collection succeeded" : "last collection failed");
    }
    serve_result_unref(r);
    return reply_text(c, status, text);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload_data,
                              size_t *upload_size, void **req_cls)
{
    struct serve_http *h = cls;

    (void)version;
    (void)upload_data;
    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0) {
        /* Answering before the body is read makes MHD close the connection afterwards. */
        atomic_fetch_add_explicit(&h->requests, 1, memory_order_relaxed);
        return reply_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET and HEAD\n");
    }
    /*
     * The first call comes with the headers; answering then would also close the connection.
     * Answer on the call that says the request is complete, so keep-alive works; a body sent
     * with a GET is read and dropped.
     */
    if (*req_cls == NULL) {
        *req_cls = h;
        return MHD_YES;
    }
    if (*upload_size != 0) {
        *upload_size = 0;
        return MHD_YES;
    }
    atomic_fetch_add_explicit(&h->requests, 1, memory_order_relaxed);
    if (strcmp(url, "/metrics") == 0)
        return reply_metrics(h, c);
    if (strcmp(url, "/findings") == 0)
        return reply_findings(h, c);
    if (strcmp(url, "/healthz") == 0)
        return reply_health(h, c);
    if (strcmp(url, "/") == 0)
        return reply_text(c, MHD_HTTP_OK,
                          "gpudoctor serve: /metrics (Prometheus), /findings (JSON), /healthz\n");
    return reply_text(c, MHD_HTTP_NOT_FOUND, "not found: try /metrics, /findings or /healthz\n");
}

struct serve_http *serve_http_start(const struct serve_http_opts *o, struct serve_cache *cache,
                                    char **cause)
{
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ITC;
    struct serve_http *h;
    int fd;

    if (mhd_load(cause) != 0)
        return NULL;
    h = xcalloc(1, sizeof(*h));
    fd = listen_socket(o->listen, &h->port, cause);
    if (fd < 0) {
        free(h);
        return NULL;
    }
    h->cache = cache;
    h->stale_ms = o->stale_ms;
    atomic_init(&h->requests, 0);
    h->mhd = mhd.start_daemon(
        flags, 0, NULL, NULL, handle, h, MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_THREAD_POOL_SIZE,
        (unsigned)(o->threads > 1 ? o->threads : 0), MHD_OPTION_CONNECTION_LIMIT,
        (unsigned)o->max_connections, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)o->timeout_s,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)SERVE_REQUEST_MEMORY, MHD_OPTION_END);
    if (h->mhd == NULL) {
        *cause = xasprintf("cannot start the HTTP server on %s (libmicrohttpd refused; "
                           "threads %u, connections %u)",
                           o->listen, o->threads, o->max_connections);
        close(fd);
        free(h);
        return NULL;
    }
    return h;
}

uint16_t serve_http_port(const struct serve_http *h)
{
    return h->port;
}

uint64_t serve_http_requests(const struct serve_http *h)
{
    return atomic_load(&h->requests);
}

void serve_http_stop(struct serve_http *h)
{
    if (h == NULL)
        return;
    /* Quiescing hands the listening socket back, so it is closed exactly once, here. */
    {
        MHD_socket fd = mhd.quiesce_daemon(h->mhd);

        mhd.stop_daemon(h->mhd);
        if (fd != MHD_INVALID_SOCKET)
            close(fd);
    }
    free(h);
}
