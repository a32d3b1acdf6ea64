/*
 * Content coding for serve: which coding a request accepts (its Accept-Encoding fields, RFC 9110
 * section 12.5.3), and gzip bodies (RFC 1952) built without compressing anything per request.
 *
 * A published body is compressed once per collection cycle, as raw deflate ended by a sync flush
 * (serve_deflate): its last block is not final and ends on a byte boundary, so more blocks may
 * follow. A request's own few bytes (the data age of /metrics, the staleness of /findings) go
 * around it as stored, uncompressed blocks, and the gzip trailer's CRC-32 is the body's combined
 * with theirs (serve_gzip_frame). One gzip member, valid for every decoder, for the cost of a
 * CRC over a few hundred bytes.
 */
#include "serve/serve.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

/* ---- Accept-Encoding ---- */

void serve_coding_init(struct serve_coding *c)
{
    c->q_gzip = c->q_identity = c->q_any = -1;
}

static bool is_ows(char ch)
{
    return ch == ' ' || ch == '\t';
}

/* RFC 9110 tchar */
static bool is_tchar(char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           (ch != '\0' && strchr("!#$%&'*+-.^_`|~", ch) != NULL);
}

/* A qvalue, "0" to "1" with up to three decimals, in thousandths; -1 if s[0..n) is not one. */
static int parse_qvalue(const char *s, size_t n)
{
    int q, scale = 100;

    if (n == 0 || (s[0] != '0' && s[0] != '1'))
        return -1;
    q = (s[0] - '0') * 1000;
    if (n == 1)
        return q;
    if (s[1] != '.' || n > 5)
        return -1;
    for (size_t i = 2; i < n; i++, scale /= 10) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        q += (s[i] - '0') * scale;
    }
    return q > 1000 ? -1 : q;
}

/*
 * One list element: a coding, then parameters; only q counts. Returns the coding's weight in
 * thousandths (1000 without q), or -1 when the element is malformed. *end is where it ends (the
 * comma that follows, or the end of the value).
 */
static int parse_element(const char *s, const char **name, size_t *name_len, const char **end)
{
    int q = 1000;
    bool bad = false;

    *name = s;
    while (is_tchar(*s))
        s++;
    *name_len = (size_t)(s - *name);
    if (*name_len == 0)
        bad = true;
    for (;;) {
        const char *pname, *val;
        size_t plen, vlen;

        while (is_ows(*s))
            s++;
        if (*s == '\0' || *s == ',')
            break;
        if (*s != ';') {
            bad = true;
            break;
        }
        s++;
        while (is_ows(*s))
            s++;
        pname = s;
        while (is_tchar(*s))
            s++;
        plen = (size_t)(s - pname);
        if (plen == 0 || *s != '=') {
            bad = true;
            break;
        }
        s++;
        val = s;
        if (*s == '"') { /* a quoted string: only ever a parameter we ignore */
            for (s++; *s != '"'; s++) {
                if (*s == '\\' && s[1] != '\0')
                    s++;
                else if (*s == '\0')
                    break;
            }
            if (*s != '"') {
                bad = true;
                break;
            }
            s++;
            if (plen == 1 && (*pname == 'q' || *pname == 'Q'))
                bad = true;
            continue;
        }
        while (is_tchar(*s))
            s++;
        vlen = (size_t)(s - val);
        if (plen == 1 && (*pname == 'q' || *pname == 'Q')) {
            q = parse_qvalue(val, vlen);
            if (q < 0)
                bad = true;
        } else if (vlen == 0) {
            bad = true;
        }
        if (bad)
            break;
    }
    /* What is left of a malformed element is skipped up to the next comma outside quotes. */
    while (*s != '\0' && *s != ',') {
        if (*s == '"') {
            for (s++; *s != '\0' && *s != '"'; s++)
                if (*s == '\\' && s[1] != '\0')
                    s++;
            if (*s == '\0')
                break;
        }
        s++;
    }
    *end = s;
    return bad ? -1 : q;
}

/* A coding named twice keeps its lowest weight: a refusal is never overridden. */
static void rate(int *slot, int q)
{
    if (*slot < 0 || q < *slot)
        *slot = q;
}

static bool name_is(const char *name, size_t len, const char *want)
{
    return len == strlen(want) && strncasecmp(name, want, len) == 0;
}

void serve_coding_parse(struct serve_coding *c, const char *value)
{
    const char *s = value;

    while (*s != '\0') {
        const char *name, *end;
        size_t len;
        int q;

        while (is_ows(*s) || *s == ',')
            s++;
        if (*s == '\0')
            break;
        q = parse_element(s, &name, &len, &end);
        s = end;
        if (q < 0)
            continue;
        /* "x-gzip" is an alias of gzip (RFC 9110 section 8.4.1.3). */
        if (name_is(name, len, "gzip") || name_is(name, len, "x-gzip"))
            rate(&c->q_gzip, q);
        else if (name_is(name, len, "identity"))
            rate(&c->q_identity, q);
        else if (name_is(name, len, "*"))
            rate(&c->q_any, q);
    }
}

bool serve_coding_gzip(const struct serve_coding *c)
{
    int gzip = c->q_gzip >= 0 ? c->q_gzip : c->q_any;
    int identity = c->q_identity >= 0 ? c->q_identity : c->q_any;

    /* Unnamed identity has no weight: it is acceptable, not preferred. */
    return gzip > 0 && (identity < 0 || gzip >= identity);
}

/* ---- gzip ---- */

void serve_deflate(const char *body, size_t len, struct serve_deflated *out)
{
    z_stream z;
    size_t cap;
    int rc;

    memset(&z, 0, sizeof(z));
    /* Raw deflate (negative window bits): the gzip header and trailer are made per request. */
    rc = deflateInit2(&z, SERVE_GZIP_LEVEL, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
    if (rc != Z_OK)
        fatal("cannot start deflate: %s", rc == Z_MEM_ERROR ? "out of memory" : zError(rc));
    /* The bound of a finished stream, and room for the sync flush's empty stored block. */
    cap = deflateBound(&z, (uLong)len) + 16;
    out->data = xmalloc(cap);
    z.next_in = (Bytef *)(uintptr_t)body;
    z.avail_in = (uInt)len;
    z.next_out = out->data;
    z.avail_out = (uInt)cap;
    /* With room to spare, one call consumes everything; the loop is for the impossible case. */
    while ((rc = deflate(&z, Z_SYNC_FLUSH)) == Z_OK && (z.avail_in > 0 || z.avail_out == 0)) {
        size_t used = cap - z.avail_out;

        cap *= 2;
        out->data = xrealloc(out->data, cap);
        z.next_out = out->data + used;
        z.avail_out = (uInt)(cap - used);
    }
    if (rc != Z_OK)
        fatal("deflate failed: %s", zError(rc));
    out->len = cap - z.avail_out;
    deflateEnd(&z);
    out->crc = (uint32_t)crc32(0, (const Bytef *)body, (uInt)len);
    out->body_len = len;
}

void serve_deflated_free(struct serve_deflated *d)
{
    free(d->data);
    d->data = NULL;
    d->len = 0;
}

static void put_le32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
    p[2] = (unsigned char)(v >> 16);
    p[3] = (unsigned char)(v >> 24);
}

/* A stored block holding data[0..n): one header byte (BFINAL, BTYPE 00), LEN, NLEN, the bytes. */
static size_t put_stored(unsigned char *p, bool final, const char *data, size_t n)
{
    p[0] = final ? 1 : 0;
    p[1] = (unsigned char)n;
    p[2] = (unsigned char)(n >> 8);
    p[3] = (unsigned char)~n;
    p[4] = (unsigned char)(~n >> 8);
    if (n > 0)
        memcpy(p + 5, data, n);
    return 5 + n;
}

void serve_gzip_frame(const struct serve_deflated *d, const char *pre, size_t pre_len,
                      const char *post, size_t post_len, struct serve_gzip_frame *f)
{
    /* ID1 ID2, deflate, no flags, no modification time, no extra flags, OS Unix. */
    static const unsigned char header[10] = { 0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3 };
    uLong crc;

    if (pre_len > SERVE_GZIP_PART_MAX || post_len > SERVE_GZIP_PART_MAX)
        fatal("a gzip frame's own part is %zu bytes, more than %d",
              pre_len > post_len ? pre_len : post_len, SERVE_GZIP_PART_MAX);
    memcpy(f->head, header, sizeof(header));
    f->head_len = sizeof(header);
    if (pre_len > 0)
        f->head_len += put_stored(f->head + f->head_len, false, pre, pre_len);
    /* The final block: stored, possibly empty, so the stream ends whatever came before. */
    f->tail_len = put_stored(f->tail, true, post, post_len);

    crc = crc32(0, (const Bytef *)pre, (uInt)pre_len);
    crc = crc32_combine(crc, d->crc, (z_off_t)d->body_len);
    crc = crc32(crc, (const Bytef *)post, (uInt)post_len);
    put_le32(f->tail + f->tail_len, (uint32_t)crc);
    /* ISIZE: the uncompressed length modulo 2^32. */
    put_le32(f->tail + f->tail_len + 4, (uint32_t)(pre_len + d->body_len + post_len));
    f->tail_len += 8;
}
