/*
 * The error the user saw, as evidence (`--error TEXT`): the one part of the snapshot that comes
 * from the person running gpudoctor, not from the machine. The text is hostile input: it is
 * bounded, sanitised like every other outside string, matched against the catalogue and never
 * run; rules (rules-reported.c) read what was recognised.
 */
#include "collect/collect.h"
#include "data/cudaerr.h"
#include "util/strutil.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

static void recognise(struct reported_error *e)
{
    const struct cudaerr_info *m = cudaerr_match(e->text);

    free(e->error);
    free(e->api);
    e->api = NULL;
    e->valid = 0;
    e->number = 0;
    if (m == NULL) {
        e->error = xstrdup(REPORTED_UNRECOGNISED);
        return;
    }
    e->error = xstrdup(m->name);
    e->api = xstrdup(m->api);
    if (m->number >= 0) {
        e->number = m->number;
        e->valid |= UINT64_C(1) << REP_S_NUMBER;
    }
}

/*
 * What is kept of a text longer than REPORTED_TEXT_MAX (a whole traceback pasted): its lines the
 * catalogue recognises, in order, joined by spaces while they fit; else its end, where a
 * traceback prints the error, from the first whole line (or character) that fits.
 */
static char *long_text(const char *text, size_t n)
{
    char *kept = xmalloc(REPORTED_TEXT_MAX + 1), *line;
    size_t len = 0;
    const char *p = text, *tail;

    while (p < text + n) {
        size_t ll = strcspn(p, "\n");

        line = xstrndup(p, ll);
        if (cudaerr_match(line) != NULL && len + (len > 0) + ll <= REPORTED_TEXT_MAX) {
            if (len > 0)
                kept[len++] = ' ';
            memcpy(kept + len, line, ll);
            len += ll;
        }
        free(line);
        p += ll + (p[ll] == '\n');
    }
    if (len > 0) {
        kept[len] = '\0';
        return kept;
    }
    tail = text + n - REPORTED_TEXT_MAX;
    if (memchr(tail, '\n', REPORTED_TEXT_MAX) != NULL && tail[-1] != '\n')
        tail = (const char *)memchr(tail, '\n', REPORTED_TEXT_MAX) + 1;
    while (((unsigned char)*tail & 0xC0) == 0x80) /* not inside a UTF-8 sequence */
        tail++;
    memcpy(kept, tail, (size_t)(text + n - tail) + 1);
    return kept;
}

int collect_reported_add(struct snapshot *s, const char *text)
{
    struct reported_info *r = &s->reported;
    struct reported_error *e;
    size_t n = strlen(text);

    if (r->n_errors >= REPORTED_ERRORS_MAX)
        return -1;
    r->errors = xreallocarray(r->errors, r->n_errors + 1, sizeof(*r->errors));
    e = &r->errors[r->n_errors++];
    memset(e, 0, sizeof(*e));
    e->text = str_sanitize(n > REPORTED_TEXT_MAX ? long_text(text, n) : xstrdup(text));
    recognise(e);
    return 0;
}

void collect_reported_recognise(struct snapshot *s)
{
    for (size_t i = 0; i < s->reported.n_errors; i++) {
        str_sanitize(s->reported.errors[i].text);
        recognise(&s->reported.errors[i]);
    }
}
