/*
 * serve's parts: the listen address, the history ring across cycles, the reference-counted
 * cache, and the HTTP server itself over real loopback sockets (answers, methods, staleness,
 * keep-alive, malformed and oversized requests); Accept-Encoding and the gzip bodies, inflated
 * here by zlib as a client would.
 */
#include "cmd/cmd.h"
#include "rules/config.h"
#include "serve/serve.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <arpa/inet.h>
#include <jansson.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>
#include <zlib.h>

#include <cmocka.h>

/* ---- listen addresses ---- */

static void test_listen(void **state)
{
    struct sockaddr_storage ss;
    socklen_t len;
    char *cause = NULL;
    char ip[INET6_ADDRSTRLEN];

    (void)state;
    assert_int_equal(serve_parse_listen("127.0.0.1:9464", &ss, &len, &cause), 0);
    assert_int_equal(ss.ss_family, AF_INET);
    assert_int_equal(ntohs(((struct sockaddr_in *)&ss)->sin_port), 9464);
    inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, ip, sizeof(ip));
    assert_string_equal(ip, "127.0.0.1");

    assert_int_equal(serve_parse_listen("[::1]:0", &ss, &len, &cause), 0);
    assert_int_equal(ss.ss_family, AF_INET6);
    assert_int_equal(len, sizeof(struct sockaddr_in6));
    assert_int_equal(ntohs(((struct sockaddr_in6 *)&ss)->sin6_port), 0);

    /* nothing before the colon: every address, IPv6 with IPv4 through the dual stack */
    assert_int_equal(serve_parse_listen(":9100", &ss, &len, &cause), 0);
    assert_int_equal(ss.ss_family, AF_INET6);
    assert_true(IN6_IS_ADDR_UNSPECIFIED(&((struct sockaddr_in6 *)&ss)->sin6_addr));
    assert_int_equal(ntohs(((struct sockaddr_in6 *)&ss)->sin6_port), 9100);

    static const char *const bad[] = { "127.0.0.1",       "127.0.0.1:",   "127.0.0.1:70000",
                                       "127.0.0.1:-1",    "127.0.0.1:9x", "[::1]9464",
                                       "::1:9464",        "[::1:9464",    "no.such.host.invalid:1",
                                       "127.0.0.1: 9464", "[]:9464",      "[127.0.0.1]:9464",
                                       "[localhost]:9464" };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cause = NULL;
        if (serve_parse_listen(bad[i], &ss, &len, &cause) == 0)
            fail_msg("accepted %s", bad[i]);
        assert_non_null(cause);
        assert_non_null(strstr(cause, bad[i])); /* the message names what was wrong */
        free(cause);
    }
}

/* ---- history ---- */

/* A snapshot with samples at the given times, each with one GPU whose power is the time. */
static struct snapshot *with_samples(const int64_t *t, size_t n)
{
    struct snapshot *s = snapshot_new();

    for (size_t i = 0; i < n; i++) {
        struct sample *smp = snapshot_add_sample(s, t[i]);

        smp->n_gpus = 1;
        smp->gpus = xcalloc(1, sizeof(*smp->gpus));
        gpu_init(&smp->gpus[0], 0);
        smp->gpus[0].power_mw = (uint32_t)t[i];
        smp->gpus[0].name = xstrdup("owned"); /* ASan: freed exactly once */
    }
    return s;
}

static void test_history(void **state)
{
    struct serve_history h;
    struct sample *scratch;
    struct history view;
    int64_t t2[] = { 0, 500 };

    (void)state;
    serve_history_init(&h, 10000, 3);
    for (int64_t base = 0; base <= 5000; base += 1000) {
        struct snapshot *s = with_samples(t2, 2);

        view = serve_history_view(&h, s, base, &scratch);
        /* kept samples first, then this cycle's, on one clock */
        assert_int_equal(view.n, h.n + 2);
        assert_int_equal(view.samples[view.n - 2].t_ms, base);
        assert_int_equal(view.samples[view.n - 1].t_ms, base + 500);
        for (size_t i = 1; i < view.n; i++)
            assert_true(view.samples[i].t_ms > view.samples[i - 1].t_ms);
        free(scratch);
        serve_history_keep(&h, s, base);
        assert_int_equal(s->samples[1].n_gpus, 0); /* moved, not copied */
        snapshot_free(s);
    }
    /* at most 3 kept: the last sample of the last three cycles */
    assert_int_equal(h.n, 3);
    assert_int_equal(h.items[0].t_ms, 3500);
    assert_int_equal(h.items[2].t_ms, 5500);
    assert_int_equal(h.items[2].gpus[0].power_mw, 500);
    serve_history_free(&h);

    /* by age: nothing older than keep_ms behind the newest */
    serve_history_init(&h, 1500, 100);
    for (int64_t base = 0; base <= 5000; base += 1000) {
        struct snapshot *s = with_samples(t2, 2);

        serve_history_keep(&h, s, base);
        snapshot_free(s);
    }
    assert_int_equal(h.n, 2);
    assert_int_equal(h.items[0].t_ms, 4500);
    serve_history_free(&h);

    /* no snapshot (a failed collection): the view is the history alone */
    serve_history_init(&h, 1000, 10);
    view = serve_history_view(&h, NULL, 0, &scratch);
    assert_int_equal(view.n, 0);
    free(scratch);
    serve_history_keep(&h, NULL, 0);
    serve_history_free(&h);
}

/* ---- Accept-Encoding ---- */

static bool gzip_for(const char *const *fields, size_t n)
{
    struct serve_coding c;

    serve_coding_init(&c);
    for (size_t i = 0; i < n; i++)
        serve_coding_parse(&c, fields[i]);
    return serve_coding_gzip(&c);
}

static void test_coding(void **state)
{
    static const struct {
        const char *value;
        bool gzip;
    } cases[] = {
        /* what Prometheus, curl --compressed and browsers send */
        { "gzip", true },
        { "deflate, gzip", true },
        { "gzip, deflate, br", true },
        { "GZIP", true },
        { "x-gzip", true },
        { "gzip;q=1.0, identity; q=0.5, *;q=0", true },
        /* refusals and weights */
        { "gzip;q=0", false },
        { "gzip; q=0.000", false },
        { "gzip;Q=0", false },
        { "gzip;q=0.001", true },
        { "gzip;q=0.5, identity;q=0.8", false },
        { "gzip;q=0.8, identity;q=0.8", true },
        { "identity", false },
        { "", false },
        { "deflate, br", false },
        { "*", true },
        { "*;q=0", false },
        { "*;q=0.5, gzip;q=0.4", false },
        { "*;q=0.1, gzip;q=0.5", true },
        { "*, gzip;q=0", false },
        { "identity;q=0, *", true },
        { "gzip, gzip;q=0", false }, /* named twice: the refusal holds */
        /* white space and empty list elements */
        { " \t gzip \t ; \t q=0.7 \t ", true },
        { ",, ,gzip,,", true },
        /* malformed elements are skipped, the rest still counts */
        { "gzip;q=2", false },
        { "gzip;q=1.001", false },
        { "gzip;q=0.1234", false },
        { "gzip;q=.5", false },
        { "gzip;q=", false },
        { "gzip;q=\"1\"", false },
        { "gzip;q", false },
        { "gzip q=1", false },
        { "gzip;q=abc, br", false },
        { "gzip;q=abc, gzip", true },
        { "br;level=\"a,b\", gzip", true },
        { "br;level=\"a,gzip\"", false },
        { "br;level=\"unterminated, gzip", false },
        { "gzipx", false },
        { "gzi", false },
        { "\"gzip\"", false },
        { "gz\x01ip, gzip;q=0.1", true },
    };

    (void)state;
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        if (gzip_for(&cases[i].value, 1) != cases[i].gzip)
            fail_msg("Accept-Encoding: %s: expected %s", cases[i].value,
                     cases[i].gzip ? "gzip" : "identity");
    }
    /* several fields add up, as one comma-separated list would */
    {
        const char *two[] = { "identity;q=0.5", "gzip" };
        const char *refused[] = { "gzip", "gzip;q=0" };

        assert_true(gzip_for(two, 2));
        assert_false(gzip_for(refused, 2));
        assert_false(gzip_for(NULL, 0)); /* no field at all: identity */
    }
}

/* ---- gzip ---- */

/* Inflates a whole gzip stream; fails unless it is exactly one member that ends at len. */
static char *gunzip(const unsigned char *data, size_t len, size_t *out_len)
{
    z_stream z;
    size_t cap = 4096;
    char *out = xmalloc(cap);
    int rc;

    memset(&z, 0, sizeof(z));
    assert_int_equal(inflateInit2(&z, 16 + MAX_WBITS), Z_OK); /* gzip only */
    z.next_in = (Bytef *)(uintptr_t)data;
    z.avail_in = (uInt)len;
    for (;;) {
        z.next_out = (Bytef *)out + z.total_out;
        z.avail_out = (uInt)(cap - z.total_out);
        rc = inflate(&z, Z_NO_FLUSH);
        if (rc == Z_STREAM_END)
            break;
        if (rc != Z_OK)
            fail_msg("inflate: %d (%s)", rc, z.msg ? z.msg : "");
        if (z.avail_out == 0)
            out = xrealloc(out, cap *= 2);
        else if (z.avail_in == 0)
            fail_msg("the gzip stream ends before its final block");
    }
    assert_int_equal(z.avail_in, 0); /* nothing after the trailer */
    *out_len = z.total_out;
    inflateEnd(&z);
    return out;
}

/* A frame around body with pre and post, inflated, gives pre, body, post. */
static void check_frame(const char *body, size_t body_len, const char *pre, const char *post)
{
    struct serve_deflated d;
    struct serve_gzip_frame f;
    size_t len, out_len, plen = strlen(pre), qlen = strlen(post);
    unsigned char *whole;
    char *out;

    serve_deflate(body, body_len, &d);
    assert_int_equal(d.body_len, body_len);
    serve_gzip_frame(&d, pre, plen, post, qlen, &f);
    len = f.head_len + d.len + f.tail_len;
    whole = xmalloc(len);
    memcpy(whole, f.head, f.head_len);
    memcpy(whole + f.head_len, d.data, d.len);
    memcpy(whole + f.head_len + d.len, f.tail, f.tail_len);
    out = gunzip(whole, len, &out_len);
    assert_int_equal(out_len, plen + body_len + qlen);
    assert_memory_equal(out, pre, plen);
    assert_memory_equal(out + plen, body, body_len);
    assert_memory_equal(out + plen + body_len, post, qlen);
    free(out);
    free(whole);
    serve_deflated_free(&d);
}

static void test_gzip(void **state)
{
    char big_pre[SERVE_GZIP_PART_MAX + 1];
    size_t n = 0, cap = 200 * 1024;
    char *body = xmalloc(cap);
    struct serve_deflated d;

    (void)state;
    /* an exposition like the 8-GPU one: repetitive text, well over one deflate window */
    while (n + 200 < cap)
        n += (size_t)snprintf(body + n, cap - n,
                              "gpudoctor_gpu_temperature_celsius{gpu=\"%zu\",uuid=\"GPU-%08zx\"} "
                              "%zu\n",
                              n % 8, n * 2654435761u, n % 97);
    check_frame(body, n, "",
                "# HELP gpudoctor_data_age_seconds x\ngpudoctor_data_age_seconds 0.5\n");
    check_frame(body, n, "{\"data_age_seconds\":0.1,\"stale\":false,", "");
    check_frame(body, n, "", "");
    check_frame("", 0, "", "");
    check_frame("", 0, "pre", "post");
    check_frame("x", 1, "", "");
    memset(big_pre, 'p', SERVE_GZIP_PART_MAX);
    big_pre[SERVE_GZIP_PART_MAX] = '\0';
    check_frame("x", 1, big_pre, big_pre);

    /* compressed at all: this text shrinks to a small fraction */
    serve_deflate(body, n, &d);
    assert_true(d.len < n / 4);
    serve_deflated_free(&d);
    free(body);
}

/* ---- the cache ---- */

static void test_cache(void **state)
{
    struct serve_cache c;
    struct serve_result *a = serve_result_new(xstrdup("a"), 1, NULL, 0), *got, *got2;

    (void)state;
    assert_string_equal(a->findings, "");
    serve_cache_init(&c, a);
    got = serve_cache_get(&c);
    assert_ptr_equal(got, a);
    /* replacing it while a request holds it: the request's copy stays valid (ASan) */
    serve_cache_publish(&c, serve_result_new(xstrdup("b"), 1, NULL, 0));
    assert_string_equal(got->metrics, "a");
    serve_result_unref(got);
    got2 = serve_cache_get(&c);
    assert_string_equal(got2->metrics, "b");
    serve_result_unref(got2);
    serve_cache_destroy(&c);
}

/* ---- one collection cycle ---- */

/* Cycles on a fixture tree (host collector only): results, history, and a failing collection. */
static void test_cycle(void **state)
{
    struct config cfg;
    struct serve_opts o;
    struct serve_state st;
    struct serve_result *r;
    json_t *j;
    json_error_t jerr;
    char *text;

    (void)state;
    config_init(&cfg);
    memset(&o, 0, sizeof(o));
    cmd_collect_defaults(&o.collect, 0);
    o.collect.root = TEST_FIXTURES "/host/server";
    o.collect.only = 1u << COLLECTOR_HOST;
    o.rules = &cfg.rules;
    o.metrics.top_processes = 5;
    o.interval_ms = 1000;
    o.history_ms = 60000;
    serve_state_init(&st, &o);
    for (unsigned i = 1; i <= 3; i++) {
        char want[64];

        r = serve_cycle(&st);
        assert_true(r->success);
        assert_true(r->completed_mono_ms > 0 && r->completed_ms > 0);
        snprintf(want, sizeof(want), "\ngpudoctor_collect_cycles_total %u\n", i);
        assert_non_null(strstr(r->metrics, want));
        assert_non_null(strstr(r->metrics, "\ngpudoctor_collect_success 1\n"));
        assert_non_null(strstr(r->metrics, "\ngpudoctor_collector_up{collector=\"host\"} 1\n"));
        assert_null(strstr(r->metrics, "collector=\"nvml\"")); /* not run: no series */
        assert_int_equal(strlen(r->metrics), r->metrics_len);
        /* the findings are an object's members, ready for the request's own first ones */
        text = xasprintf("{\"x\":1,%s", r->findings);
        j = json_loads(text, 0, &jerr);
        if (j == NULL)
            fail_msg("findings: %s: %s", jerr.text, text);
        assert_string_equal(json_string_value(json_object_get(j, "schema")), SERVE_FINDINGS_SCHEMA);
        assert_true(json_is_array(json_object_get(j, "findings")));
        assert_true(json_is_object(json_object_get(j, "verdict")));
        json_decref(j);
        free(text);
        serve_result_unref(r);
        assert_int_equal(st.hist.n, i); /* the newest sample of each cycle is kept */
    }
    serve_state_free(&st);

    /* a root that cannot be opened: a result that says so, and only the cycle's own health */
    o.collect.root = TEST_FIXTURES "/host/no-such-tree";
    serve_state_init(&st, &o);
    r = serve_cycle(&st);
    assert_false(r->success);
    assert_int_equal(r->check_status, EXIT_UNKNOWN);
    assert_non_null(strstr(r->metrics, "\ngpudoctor_collect_success 0\n"));
    assert_null(strstr(r->metrics, "gpudoctor_collector_up"));
    assert_non_null(strstr(r->findings, "\"error\":"));
    assert_non_null(strstr(r->findings, "no-such-tree"));
    serve_result_unref(r);
    serve_state_free(&st);

    /* the result before any collection */
    r = serve_result_initial();
    assert_int_equal(r->completed_mono_ms, 0);
    assert_non_null(strstr(r->metrics, "gpudoctor_build_info{"));
    assert_non_null(strstr(r->findings, "no collection has completed yet"));
    serve_result_unref(r);
    config_free(&cfg);
}

/* ---- HTTP over loopback ---- */

struct server {
    struct serve_cache cache;
    struct serve_http *http;
    uint16_t port;
};

static struct serve_result *result(const char *metrics, int64_t age_ms)
{
    const char *findings = "\"schema\":\"" SERVE_FINDINGS_SCHEMA "\",\"findings\":[]}";
    struct serve_result *r =
        serve_result_new(xstrdup(metrics), strlen(metrics), xstrdup(findings), strlen(findings));

    r->completed_mono_ms = time_mono_ms() - age_ms;
    r->success = true;
    return r;
}

static int server_up(void **state)
{
    struct server *sv = xcalloc(1, sizeof(*sv));
    struct serve_http_opts o = { "127.0.0.1:0", 2, 16, 2, 60000 };
    char *cause = NULL;

    serve_cache_init(&sv->cache, result("gpudoctor_test_value 42\n", 0));
    sv->http = serve_http_start(&o, &sv->cache, &cause);
    if (sv->http == NULL)
        fail_msg("cannot start: %s", cause);
    sv->port = serve_http_port(sv->http);
    assert_true(sv->port > 0);
    *state = sv;
    return 0;
}

static int server_down(void **state)
{
    struct server *sv = *state;

    serve_http_stop(sv->http);
    serve_cache_destroy(&sv->cache);
    free(sv);
    return 0;
}

static int connect_to(uint16_t port)
{
    struct sockaddr_in a = { 0 };
    struct timeval tv = { 5, 0 };
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    assert_true(fd >= 0);
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    return fd;
}

static void send_all(int fd, const char *data, size_t len)
{
    while (len > 0) {
        ssize_t n = send(fd, data, len, MSG_NOSIGNAL);

        if (n <= 0)
            return; /* the server may close early on a bad request: that is allowed */
        data += n;
        len -= (size_t)n;
    }
}

/*
 * Sends raw bytes, reads until the server closes; returns what came back (caller frees), its
 * length in *got_len when not NULL.
 */
static char *exchange_n(uint16_t port, const char *req, size_t len, size_t *got_len)
{
    int fd = connect_to(port);
    size_t cap = 1 << 16, got = 0;
    char *buf = xmalloc(cap);
    ssize_t n;

    send_all(fd, req, len);
    while ((n = recv(fd, buf + got, cap - got - 1, 0)) > 0) {
        got += (size_t)n;
        if (got + 1 == cap)
            buf = xrealloc(buf, cap *= 2);
    }
    close(fd);
    buf[got] = '\0';
    if (got_len != NULL)
        *got_len = got;
    return buf;
}

static char *exchange(uint16_t port, const char *req, size_t len)
{
    return exchange_n(port, req, len, NULL);
}

static char *request(uint16_t port, const char *method, const char *path)
{
    char req[512];

    snprintf(req, sizeof(req), "%s %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", method,
             path);
    return exchange(port, req, strlen(req));
}

static const char *body_of(const char *resp)
{
    const char *b = strstr(resp, "\r\n\r\n");

    assert_non_null(b);
    return b + 4;
}

static void test_http_answers(void **state)
{
    struct server *sv = *state;
    char *r;
    json_t *j;
    json_error_t jerr;

    r = request(sv->port, "GET", "/metrics");
    assert_true(strncmp(r, "HTTP/1.1 200", 12) == 0);
    assert_non_null(strstr(r, "Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"));
    assert_true(
        strncmp(body_of(r), "gpudoctor_test_value 42\n# HELP gpudoctor_data_age_seconds", 57) == 0);
    assert_non_null(strstr(body_of(r), "\ngpudoctor_data_age_seconds 0."));
    free(r);

    r = request(sv->port, "HEAD", "/metrics");
    assert_true(strncmp(r, "HTTP/1.1 200", 12) == 0);
    assert_string_equal(body_of(r), "");
    free(r);

    r = request(sv->port, "GET", "/findings");
    assert_true(strncmp(r, "HTTP/1.1 200", 12) == 0);
    j = json_loads(body_of(r), 0, &jerr);
    if (j == NULL)
        fail_msg("/findings is not JSON: %s: %s", jerr.text, body_of(r));
    assert_string_equal(json_string_value(json_object_get(j, "schema")), SERVE_FINDINGS_SCHEMA);
    assert_true(json_is_false(json_object_get(j, "stale")));
    assert_true(json_real_value(json_object_get(j, "data_age_seconds")) < 5.0);
    json_decref(j);
    free(r);

    r = request(sv->port, "GET", "/healthz");
    assert_true(strncmp(r, "HTTP/1.1 200", 12) == 0);
    free(r);

    r = request(sv->port, "POST", "/metrics");
    assert_true(strncmp(r, "HTTP/1.1 405", 12) == 0);
    assert_non_null(strstr(r, "Allow: GET, HEAD\r\n"));
    free(r);

    r = request(sv->port, "GET", "/../../etc/passwd");
    assert_true(strncmp(r, "HTTP/1.1 404", 12) == 0);
    free(r);

    /* a query string does not change the answer */
    r = request(sv->port, "GET", "/metrics?name[]=x");
    assert_true(strncmp(r, "HTTP/1.1 200", 12) == 0);
    free(r);
}

/* Old data: /healthz 503, /findings stale; and before any collection. */
static void test_http_stale(void **state)
{
    struct server *sv = *state;
    char *r;

    serve_cache_publish(&sv->cache, result("gpudoctor_test_value 1\n", 120000));
    r = request(sv->port, "GET", "/healthz");
    assert_true(strncmp(r, "HTTP/1.1 503", 12) == 0);
    assert_non_null(strstr(body_of(r), "stale"));
    free(r);
    r = request(sv->port, "GET", "/findings");
    assert_non_null(strstr(body_of(r), "\"stale\":true"));
    free(r);
    r = request(sv->port, "GET", "/metrics");
    assert_non_null(strstr(body_of(r), "\ngpudoctor_data_age_seconds 12"));
    free(r);

    serve_cache_publish(&sv->cache, serve_result_initial());
    r = request(sv->port, "GET", "/healthz");
    assert_true(strncmp(r, "HTTP/1.1 503", 12) == 0);
    assert_non_null(strstr(body_of(r), "no collection"));
    free(r);
    /* Before the first collection the data is as old as the exporter (an alert on staleness
     * then fires when no collection ever completes), and no collection is said to have failed. */
    r = request(sv->port, "GET", "/metrics");
    assert_true(strncmp(r, "HTTP/1.1 200", 12) == 0);
    assert_non_null(strstr(r, "\ngpudoctor_data_age_seconds 0."));
    assert_null(strstr(r, "gpudoctor_collect_success"));
    assert_non_null(strstr(r, "gpudoctor_build_info{"));
    free(r);
}

/*
 * GET path with an Accept-Encoding field (NULL: none); returns the whole response, its length in
 * *len, and where its body starts in *body.
 */
static char *request_coded(uint16_t port, const char *path, const char *accept, size_t *len,
                           size_t *body)
{
    char req[512];
    char *r;
    const char *b;

    snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: x\r\n%s%s%sConnection: close\r\n\r\n",
             path, accept ? "Accept-Encoding: " : "", accept ? accept : "", accept ? "\r\n" : "");
    r = exchange_n(port, req, strlen(req), len);
    assert_true(strncmp(r, "HTTP/1.1 200", 12) == 0);
    b = strstr(r, "\r\n\r\n");
    assert_non_null(b);
    *body = (size_t)(b + 4 - r);
    return r;
}

/* gzip when asked, identity otherwise, the same text either way; Vary on both. */
static void test_http_gzip(void **state)
{
    struct server *sv = *state;
    size_t len, body, plain_len, plain_body, out_len;
    char *r, *plain, *out;
    json_t *j;

    plain = request_coded(sv->port, "/metrics", NULL, &plain_len, &plain_body);
    assert_null(strstr(plain, "Content-Encoding"));
    assert_non_null(strstr(plain, "\r\nVary: Accept-Encoding\r\n"));

    r = request_coded(sv->port, "/metrics", "gzip", &len, &body);
    assert_non_null(strstr(r, "\r\nContent-Encoding: gzip\r\n"));
    assert_non_null(strstr(r, "\r\nVary: Accept-Encoding\r\n"));
    out = gunzip((unsigned char *)r + body, len - body, &out_len);
    /* the same exposition, the data age included (its value moves on between the two) */
    assert_true(out_len > 60);
    assert_memory_equal(out, "gpudoctor_test_value 42\n# HELP gpudoctor_data_age_seconds", 57);
    assert_memory_equal(out, plain + plain_body, 57);
    assert_non_null(strstr(out, "\ngpudoctor_data_age_seconds 0."));
    assert_true(out[out_len - 1] == '\n');
    free(out);
    free(r);
    free(plain);

    /* refused, or not preferred: identity */
    r = request_coded(sv->port, "/metrics", "gzip;q=0", &len, &body);
    assert_null(strstr(r, "Content-Encoding"));
    assert_true(strncmp(r + body, "gpudoctor_test_value 42\n", 24) == 0);
    free(r);
    r = request_coded(sv->port, "/metrics", "identity, gzip;q=0.5", &len, &body);
    assert_null(strstr(r, "Content-Encoding"));
    free(r);

    /* /findings: the request's own members first, then the published ones */
    r = request_coded(sv->port, "/findings", "*", &len, &body);
    assert_non_null(strstr(r, "\r\nContent-Encoding: gzip\r\n"));
    out = gunzip((unsigned char *)r + body, len - body, &out_len);
    out = xrealloc(out, out_len + 1);
    out[out_len] = '\0';
    j = json_loads(out, 0, NULL);
    if (j == NULL)
        fail_msg("gzipped /findings is not JSON: %s", out);
    assert_string_equal(json_string_value(json_object_get(j, "schema")), SERVE_FINDINGS_SCHEMA);
    assert_true(json_is_false(json_object_get(j, "stale")));
    json_decref(j);
    free(out);
    free(r);

    /* /healthz is not coded */
    r = request_coded(sv->port, "/healthz", "gzip", &len, &body);
    assert_null(strstr(r, "Content-Encoding"));
    free(r);
}

/* Two requests on one connection: keep-alive works. */
static void test_http_keepalive(void **state)
{
    struct server *sv = *state;
    const char *two = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
                      "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    char *r = exchange(sv->port, two, strlen(two));
    const char *second = strstr(r + 1, "HTTP/1.1 200");

    assert_true(strncmp(r, "HTTP/1.1 200", 12) == 0);
    assert_non_null(second);
    assert_non_null(strstr(second, "gpudoctor_test_value"));
    free(r);
}

/* Garbage and oversized requests are refused; the server goes on answering. */
static void test_http_malformed(void **state)
{
    struct server *sv = *state;
    size_t big = 64 * 1024;
    char *req = xmalloc(big + 64), *r;

    r = exchange(sv->port, "\x16\x03\x01\x02\x00garbage\r\n\r\n", 17);
    assert_true(r[0] == '\0' || strncmp(r, "HTTP/1.1 400", 12) == 0);
    free(r);

    r = exchange(sv->port, "GET /metrics HTTP/9.9\r\n\r\n", 25);
    assert_true(r[0] == '\0' || strncmp(r, "HTTP/1.1 505", 12) == 0 ||
                strncmp(r, "HTTP/1.1 400", 12) == 0);
    free(r);

    /* a header larger than the per-connection memory */
    memcpy(req, "GET /metrics HTTP/1.1\r\nX-Big: ", 30);
    memset(req + 30, 'a', big);
    memcpy(req + 30 + big, "\r\n\r\n", 5);
    r = exchange(sv->port, req, 30 + big + 4);
    assert_true(r[0] == '\0' || strncmp(r, "HTTP/1.1 431", 12) == 0 ||
                strncmp(r, "HTTP/1.1 413", 12) == 0);
    assert_null(strstr(r, "gpudoctor_test_value"));
    free(r);

    /* a GET with a body: the body is read and dropped */
    r = exchange(
        sv->port,
        "GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nConnection: close\r\n\r\n"
        "hello",
        78);
    assert_true(strncmp(r, "HTTP/1.1 200", 12) == 0);
    free(r);

    r = request(sv->port, "GET", "/metrics");
    assert_true(strncmp(r, "HTTP/1.1 200", 12) == 0);
    free(r);
    free(req);
}

/* Slow clients holding connections open do not keep others from being answered. */
static void test_http_idle_connections(void **state)
{
    struct server *sv = *state;
    int fds[8];
    char *r;

    for (size_t i = 0; i < 8; i++) {
        fds[i] = connect_to(sv->port);
        send_all(fds[i], "GET /met", 8); /* a slow client: half a request line */
    }
    r = request(sv->port, "GET", "/metrics");
    assert_true(strncmp(r, "HTTP/1.1 200", 12) == 0);
    free(r);
    for (size_t i = 0; i < 8; i++)
        close(fds[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_listen),
        cmocka_unit_test(test_history),
        cmocka_unit_test(test_coding),
        cmocka_unit_test(test_gzip),
        cmocka_unit_test(test_cache),
        cmocka_unit_test(test_cycle),
        cmocka_unit_test_setup_teardown(test_http_answers, server_up, server_down),
        cmocka_unit_test_setup_teardown(test_http_stale, server_up, server_down),
        cmocka_unit_test_setup_teardown(test_http_gzip, server_up, server_down),
        cmocka_unit_test_setup_teardown(test_http_keepalive, server_up, server_down),
        cmocka_unit_test_setup_teardown(test_http_malformed, server_up, server_down),
        cmocka_unit_test_setup_teardown(test_http_idle_connections, server_up, server_down),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
