#include "fleet/http.h"
#include "util/dynlib.h"
#include "util/xalloc.h"

#define CURL_DISABLE_TYPECHECK
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef GPUDOCTOR_CURL_SONAME
#define GPUDOCTOR_CURL_SONAME "libcurl.so.4"
#endif

struct curl_api {
    __typeof__(&curl_global_init) global_init;
    __typeof__(&curl_easy_init) init;
    __typeof__(&curl_easy_setopt) setopt;
    __typeof__(&curl_easy_perform) perform;
    __typeof__(&curl_easy_getinfo) getinfo;
    __typeof__(&curl_easy_cleanup) cleanup;
    __typeof__(&curl_easy_strerror) strerror;
};

static const struct dynlib_sym symbols[] = {
    { "curl_global_init", offsetof(struct curl_api, global_init) },
    { "curl_easy_init", offsetof(struct curl_api, init) },
    { "curl_easy_setopt", offsetof(struct curl_api, setopt) },
    { "curl_easy_perform", offsetof(struct curl_api, perform) },
    { "curl_easy_getinfo", offsetof(struct curl_api, getinfo) },
    { "curl_easy_cleanup", offsetof(struct curl_api, cleanup) },
    { "curl_easy_strerror", offsetof(struct curl_api, strerror) },
};

/* fleet is one thread and loads it once; the handle stays for the process's life. */
static int load(struct curl_api *api, char **cause)
{
    const char *missing, *why;

    if (dynlib_open(GPUDOCTOR_CURL_SONAME, symbols, ARRAY_SIZE(symbols), api, &missing, &why) ==
        NULL) {
        if (missing != NULL)
            *cause = xasprintf("%s has no %s", GPUDOCTOR_CURL_SONAME, missing);
        else
            *cause = xasprintf("cannot load %s, which fleet --prometheus needs (Debian package "
                               "libcurl4): %s",
                               GPUDOCTOR_CURL_SONAME, why);
        return -1;
    }
    if (api->global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        *cause = xasprintf("%s could not start", GPUDOCTOR_CURL_SONAME);
        return -1;
    }
    return 0;
}

struct sink {
    char *buf;
    size_t len, cap, max;
    int too_big;
};

static size_t take(char *data, size_t size, size_t n, void *ctx)
{
    struct sink *s = ctx;
    size_t add = size * n;

    if (s->len + add > s->max) {
        s->too_big = 1;
        return 0; /* libcurl ends the transfer */
    }
    xgrow(&s->buf, &s->cap, s->len + add + 1, 1);
    memcpy(s->buf + s->len, data, add);
    s->len += add;
    s->buf[s->len] = '\0';
    return add;
}

int fleet_http_get(const char *url, int64_t timeout_ms, size_t max, char **body, size_t *len,
                   char **cause)
{
    static struct curl_api api;
    static int loaded;
    struct sink s = { NULL, 0, 0, max, 0 };
    CURL *c;
    CURLcode rc;
    long status = 0;

    *body = NULL;
    *len = 0;
    if (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0) {
        *cause = xstrdup("only http:// and https:// URLs are fetched");
        return -1;
    }
    if (!loaded) {
        if (load(&api, cause) != 0)
            return -1;
        loaded = 1;
    }
    c = api.init();
    if (c == NULL) {
        *cause = xstrdup("libcurl could not start a transfer");
        return -1;
    }
    api.setopt(c, CURLOPT_URL, url);
    api.setopt(c, CURLOPT_PROTOCOLS_STR, "http,https"); /* 7.85; older ones ignore it */
    api.setopt(c, CURLOPT_NOSIGNAL, 1L);
    api.setopt(c, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
    api.setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)timeout_ms);
    api.setopt(c, CURLOPT_USERAGENT, "gpudoctor/" GPUDOCTOR_VERSION);
    api.setopt(c, CURLOPT_ACCEPT_ENCODING, ""); /* whatever libcurl can decode */
    api.setopt(c, CURLOPT_WRITEFUNCTION, take);
    api.setopt(c, CURLOPT_WRITEDATA, &s);
    rc = api.perform(c);
    if (rc == CURLE_OK)
        api.getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    api.cleanup(c);
    if (rc != CURLE_OK) {
        *cause = s.too_big ? xasprintf("the answer is larger than %zu MiB", max >> 20)
                           : xasprintf("%s", api.strerror(rc));
        free(s.buf);
        return -1;
    }
    *body = s.buf ? s.buf : xstrdup("");
    *len = s.len;
    return (int)status;
}

char *fleet_url_shown(const char *url)
{
    const char *scheme_end = strstr(url, "://"), *host, *at = NULL;
    size_t authority;

    if (scheme_end == NULL)
        return xstrdup(url);
    host = scheme_end + 3;
    authority = strcspn(host, "/?#");
    /* The last '@' of the authority ends the userinfo: a password may hold one unescaped. */
    for (size_t i = 0; i < authority; i++) {
        if (host[i] == '@')
            at = host + i;
    }
    if (at == NULL)
        return xstrdup(url);
    return xasprintf("%.*s%s", (int)(host - url), url, at + 1);
}

char *fleet_url_escape(const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    char *out = xmalloc(3 * strlen(s) + 1), *o = out;

    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
            *p == '-' || *p == '_' || *p == '.' || *p == '~') {
            *o++ = (char)*p;
        } else {
            *o++ = '%';
            *o++ = hex[*p >> 4];
            *o++ = hex[*p & 15];
        }
    }
    *o = '\0';
    return out;
}
