#include "render/format.h"
#include "util/i18n.h"
#include "util/xalloc.h"

#include <inttypes.h>
#include <langinfo.h>
#include <stdio.h>
#include <string.h>
#include <wchar.h>

void render_bytes(char *buf, size_t size, uint64_t bytes)
{
    static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
    double v = (double)bytes;
    size_t u = 0;

    while (v >= 1024.0 && u + 1 < ARRAY_SIZE(units)) {
        v /= 1024.0;
        u++;
    }
    if (u == 0)
        snprintf(buf, size, "%" PRIu64 " B", bytes);
    else if (v >= 100.0)
        snprintf(buf, size, "%.0f %s", v, units[u]);
    else
        snprintf(buf, size, "%.1f %s", v, units[u]);
}

void render_duration(char *buf, size_t size, double seconds)
{
    static const struct {
        const char *unit;
        uint64_t s;
    } units[] = { { "d", 86400 }, { "h", 3600 }, { "m", 60 }, { "s", 1 } };
    uint64_t t;

    if (!(seconds >= 0)) {
        snprintf(buf, size, "?");
        return;
    }
    t = (uint64_t)(seconds + 0.5);
    for (size_t i = 0; i < ARRAY_SIZE(units); i++) {
        uint64_t hi = t / units[i].s, lo;

        if (hi == 0 && i + 1 < ARRAY_SIZE(units))
            continue;
        if (i + 1 == ARRAY_SIZE(units)) {
            snprintf(buf, size, "%" PRIu64 "s", t);
            return;
        }
        lo = (t % units[i].s) / units[i + 1].s;
        if (lo == 0 || hi >= 10)
            snprintf(buf, size, "%" PRIu64 "%s", hi, units[i].unit);
        else
            snprintf(buf, size, "%" PRIu64 "%s%" PRIu64 "%s", hi, units[i].unit, lo,
                     units[i + 1].unit);
        return;
    }
}

const char *render_command(const char *cmd)
{
    const char *program = cmd;

    for (const char *c = cmd; *c && *c != ' '; c++) {
        if (*c == '/' && c[1] && c[1] != ' ')
            program = c + 1;
    }
    return program;
}

void render_ranges(char *buf, size_t size, const int32_t *v, size_t n)
{
    static const char more[] = ", ...";
    size_t len = 0;

    if (size == 0)
        return;
    buf[0] = '\0';
    for (size_t i = 0; i < n;) {
        char piece[48];
        size_t j = i, w;

        while (j + 1 < n && v[j + 1] == v[j] + 1)
            j++;
        if (j >= i + 2)
            snprintf(piece, sizeof(piece), "%s%" PRId32 "-%" PRId32, i ? ", " : "", v[i], v[j]);
        else if (j == i + 1)
            snprintf(piece, sizeof(piece), "%s%" PRId32 ", %" PRId32, i ? ", " : "", v[i], v[j]);
        else
            snprintf(piece, sizeof(piece), "%s%" PRId32, i ? ", " : "", v[i]);
        w = strlen(piece);
        /* What does not fit is said to be cut, never dropped without a word: room is kept for
         * ", ..." after every piece but the last. */
        if (len + w + (j + 1 < n ? strlen(more) : 0) >= size) {
            snprintf(buf + len, size - len, "%s", i ? more : more + 2);
            return;
        }
        memcpy(buf + len, piece, w + 1);
        len += w;
        i = j + 1;
    }
}

size_t render_char(const char *s, size_t n, size_t *cols)
{
    mbstate_t st;
    wchar_t wc;
    size_t len;
    int w;

    memset(&st, 0, sizeof(st));
    if ((unsigned char)s[0] < 0x80) {
        *cols = 1;
        return 1;
    }
    len = mbrtowc(&wc, s, n, &st);
    if (len == 0 || len > n) {
        /* Not decodable here (not UTF-8, or the C locale): the lead byte and its continuations
         * count one column, as the ASCII stand-ins do. */
        len = 1;
        while (len < n && ((unsigned char)s[len] & 0xC0) == 0x80)
            len++;
        *cols = 1;
        return len;
    }
    w = wcwidth(wc);
    *cols = w < 0 ? 1 : (size_t)w;
    return len;
}

size_t render_width(const char *s, size_t n)
{
    size_t cols = 0;

    for (size_t i = 0; i < n && s[i];) {
        size_t c;

        i += render_char(s + i, n - i, &c);
        cols += c;
    }
    return cols;
}

void render_cell(FILE *out, const char *text, size_t width, bool right)
{
    size_t w = render_width(text, strlen(text));
    int pad = w < width ? (int)(width - w) : 0;

    if (right)
        fprintf(out, "%*s%s", pad, "", text);
    else
        fprintf(out, "%s%*s", text, pad, "");
}

void render_pad(char *buf, size_t size, const char *text, size_t width, bool right)
{
    size_t w = render_width(text, strlen(text));
    int pad = w < width ? (int)(width - w) : 0;

    if (right)
        snprintf(buf, size, "%*s%s", pad, "", text);
    else
        snprintf(buf, size, "%s%*s", text, pad, "");
}

const char *render_fit(const char *english, size_t width)
{
    const char *word = _(english);

    return render_width(word, strlen(word)) <= width ? word : english;
}

/* The bytes of text's start that fit in max columns, never inside a character; their columns. */
static size_t fitting(const char *text, size_t max, size_t *cols_out)
{
    size_t len = strlen(text), at = 0, w = 0;

    while (at < len) {
        size_t cols, n = render_char(text + at, len - at, &cols);

        if (w + cols > max)
            break;
        w += cols;
        at += n;
    }
    *cols_out = w;
    return at;
}

void render_cut_cell(FILE *out, const char *text, size_t width)
{
    size_t w, at = fitting(text, width, &w);

    fwrite(text, 1, at, out);
    fprintf(out, "%*s", (int)(width - w), "");
}

void render_cut(FILE *out, const char *text, size_t max, bool mark)
{
    size_t w, at;

    if (render_width(text, strlen(text)) <= max) {
        fputs(text, out);
        return;
    }
    at = fitting(text, mark && max > 0 ? max - 1 : max, &w);
    fwrite(text, 1, at, out);
    if (mark && max > 0)
        fputc('~', out);
}

/* Punctuation that closes a phrase: never the first thing on a line (it stays with the word
 * before). */
static bool no_break_before(const char *p, size_t len)
{
    static const char *const closing[] = { "，", "。", "、", "；", "：", "！", "？", "）",
                                           "」", "』", "》", "”",  "’",  "…",  "—" };

    if (len == 1)
        return strchr(",.;:!?)]}%", *p) != NULL;
    for (size_t i = 0; i < ARRAY_SIZE(closing); i++) {
        if (strlen(closing[i]) == len && memcmp(p, closing[i], len) == 0)
            return true;
    }
    return false;
}

/* Punctuation that opens a phrase: never the last thing on a line. */
static bool no_break_after(const char *p, size_t len)
{
    static const char *const opening[] = { "（", "「", "『", "《", "“", "‘", "【" };

    for (size_t i = 0; i < ARRAY_SIZE(opening); i++) {
        if (strlen(opening[i]) == len && memcmp(p, opening[i], len) == 0)
            return true;
    }
    return false;
}

size_t render_piece(const char *p, size_t *cols)
{
    size_t i = 0, c, len;

    *cols = 0;
    len = render_char(p, strlen(p), &c);
    if (c == 2 && no_break_after(p, len) && p[len] && p[len] != ' ' && p[len] != '\n') {
        /* An opening bracket or quote goes with what it opens. */
        i = len + render_piece(p + len, cols);
        *cols += c;
        return i;
    }
    if (c == 2) {
        i = len;
        *cols = c;
    } else {
        while (p[i] && p[i] != ' ' && p[i] != '\n') {
            len = render_char(p + i, strlen(p + i), &c);
            if (c == 2 && i > 0)
                break;
            i += len;
            *cols += c;
        }
    }
    while (p[i] && p[i] != ' ' && p[i] != '\n') {
        len = render_char(p + i, strlen(p + i), &c);
        if (!no_break_before(p + i, len))
            break;
        i += len;
        *cols += c;
    }
    return i;
}

bool render_locale_utf8(void)
{
    const char *cs = nl_langinfo(CODESET);

    return cs != NULL && (strcmp(cs, "UTF-8") == 0 || strcmp(cs, "utf8") == 0);
}

/* The non-ASCII characters gpudoctor's own texts use, and what stands for each in ASCII. */
static const struct {
    const char *utf8, *ascii;
} ascii_map[] = {
    { "°", "" },  { "—", "-" }, { "–", "-" },  { "…", "..." }, { "→", "->" },
    { "×", "x" }, { "÷", "/" }, { "²", "2" },  { "·", "-" },   { "▶", ">" },
    { "↓", "v" }, { "↑", "^" }, { "↕", "^v" },
};

char *render_asciin(const char *s, size_t n)
{
    /* Every stand-in is at most as long as its character: the copy is never longer. */
    char *out = xmalloc(n + 1);
    size_t len = 0, i = 0;

    while (i < n && s[i]) {
        size_t k;

        if ((unsigned char)s[i] < 0x80) {
            out[len++] = s[i++];
            continue;
        }
        for (k = 0; k < ARRAY_SIZE(ascii_map); k++) {
            size_t m = strlen(ascii_map[k].utf8);

            if (m <= n - i && memcmp(s + i, ascii_map[k].utf8, m) == 0) {
                memcpy(out + len, ascii_map[k].ascii, strlen(ascii_map[k].ascii));
                len += strlen(ascii_map[k].ascii);
                i += m;
                break;
            }
        }
        if (k < ARRAY_SIZE(ascii_map))
            continue;
        /* Another character, or a stray byte: one '?' for the lead byte and what continues it. */
        out[len++] = '?';
        i++;
        while (i < n && ((unsigned char)s[i] & 0xC0) == 0x80)
            i++;
    }
    out[len] = '\0';
    return out;
}

char *render_ascii(const char *s)
{
    return render_asciin(s, strlen(s));
}
