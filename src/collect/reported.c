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

int collect_reported_add(struct snapshot *s, const char *text)
{
    struct reported_info *r = &s->reported;
    struct reported_error *e;
    size_t n = strlen(text);

    if (r->n_errors >= REPORTED_ERRORS_MAX)
        return -1;
    if (n > REPORTED_TEXT_MAX)
        n = REPORTED_TEXT_MAX; /* a cut UTF-8 sequence becomes '?' below */
    r->errors = xreallocarray(r->errors, r->n_errors + 1, sizeof(*r->errors));
    e = &r->errors[r->n_errors++];
    memset(e, 0, sizeof(*e));
    e->text = str_sanitize(xstrndup(text, n));
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
