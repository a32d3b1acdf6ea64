/*
 * A small HTTP GET for `fleet --prometheus`, through libcurl loaded with dlopen when fleet first
 * asks (src/fleet/http.c): other commands do not load it, nor the TLS libraries behind it. The
 * types come from <curl/curl.h>; each pointer has the type of the function it stands for.
 */
#ifndef GPUDOCTOR_FLEET_HTTP_H
#define GPUDOCTOR_FLEET_HTTP_H

#include <stddef.h>
#include <stdint.h>

/*
 * GETs url (http:// or https:// only), waiting at most timeout_ms, keeping at most max bytes of
 * the body (NUL-terminated) in *body. Returns the HTTP status, or -1 with *cause set (libcurl
 * missing, no connection, a timeout, a body over max).
 */
int fleet_http_get(const char *url, int64_t timeout_ms, size_t max, char **body, size_t *len,
                   char **cause);

/*
 * url as it may be shown (a report, a page that is shared, standard error): without the userinfo
 * of its authority ("http://user:password@host/" is "http://host/"), which libcurl still gets.
 * Text without "://" is returned as it is. Caller frees.
 */
char *fleet_url_shown(const char *url);

/* s percent-encoded for a query string (RFC 3986 unreserved characters kept). Caller frees. */
char *fleet_url_escape(const char *s);

#endif
