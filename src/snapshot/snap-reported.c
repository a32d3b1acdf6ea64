#include "snapshot/snap-reported.h"
#include "util/strutil.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

static const struct jfield error_fields[] = {
    { "text", JF_STR, offsetof(struct reported_error, text), -1, 0, NULL, "--error TEXT",
      "the error text as given, control characters replaced by '?', at most 1024 bytes (of a "
      "longer text, its recognised lines, else its end)" },
    { "error", JF_STR, offsetof(struct reported_error, error), -1, 0, NULL, "data/cuda-errors.tsv",
      "the error recognised in it (\"cudaErrorSystemNotReady\"), or \"unrecognised\"" },
    { "api", JF_STR, offsetof(struct reported_error, api), -1, 0, NULL, "data/cuda-errors.tsv",
      "whose error: cuda-runtime, cuda-driver, pytorch or nccl; null when unrecognised" },
    { "number", JF_I32, offsetof(struct reported_error, number), REP_S_NUMBER, 0, NULL,
      "data/cuda-errors.tsv", "its number in that api (802), null when it has none" },
};

const struct jtable reported_error_table = {
    "reported error",
    error_fields,
    ARRAY_SIZE(error_fields),
    JT_BITS,
    offsetof(struct reported_error, valid),
    NULL,
};

void reported_info_free(struct reported_info *r)
{
    for (size_t i = 0; i < r->n_errors; i++)
        jtable_free(&reported_error_table, &r->errors[i]);
    free(r->errors);
    memset(r, 0, sizeof(*r));
}

json_t *reported_info_to_json(const struct reported_info *r)
{
    json_t *j = json_object();

    json_object_set_new(
        j, "errors",
        jlist_write_table(&reported_error_table, r->errors, r->n_errors, sizeof(*r->errors)));
    return j;
}

int reported_info_from_json(struct reported_info *r, const json_t *j, const char *path,
                            struct jerr *err)
{
    void *items = NULL;
    int rc;

    rc = jlist_read_table(&reported_error_table, j, "errors", path, sizeof(*r->errors), &items,
                          &r->n_errors, err);
    r->errors = items;
    if (rc < 0)
        return -1;
    if (r->n_errors > REPORTED_ERRORS_MAX) {
        jerr_set(err, path, "%zu errors: at most %d", r->n_errors, REPORTED_ERRORS_MAX);
        return -1;
    }
    for (size_t i = 0; i < r->n_errors; i++) {
        struct reported_error *e = &r->errors[i];

        if (e->text == NULL) {
            jerr_set(err, path, "errors[%zu].text: missing", i);
            return -1;
        }
        if (strlen(e->text) > REPORTED_TEXT_MAX) { /* as collect/reported.c cuts what it keeps */
            e->text[REPORTED_TEXT_MAX] = '\0';
            str_sanitize(e->text); /* a UTF-8 sequence cut in two becomes '?' */
        }
    }
    return 0;
}
