/*
 * The snapshot's "reported" section: the error texts the user saw and gave with
 * `check --error TEXT` / `snapshot --error TEXT`, and what gpudoctor's catalogue
 * (data/cuda-errors.tsv) recognised in each. Filled by collect/reported.c; rules read it as
 * evidence. Written only when an error was given, so other snapshots stay as they were.
 */
#ifndef GPUDOCTOR_SNAP_REPORTED_H
#define GPUDOCTOR_SNAP_REPORTED_H

#include "snapshot/jfield.h"

#include <stddef.h>
#include <stdint.h>

/* The most one text keeps (bytes; longer ones are cut), and the most texts a snapshot keeps. */
#define REPORTED_TEXT_MAX   1024
#define REPORTED_ERRORS_MAX 16

/* Validity bits of struct reported_error. */
enum reported_error_slot {
    REP_S_NUMBER, /* the recognised error has a number in its api */
};

struct reported_error {
    char *text;     /* as given, sanitised (control characters are '?') and bounded */
    char *error;    /* the recognised error's name, "unrecognised" when none */
    char *api;      /* "cuda-runtime", "cuda-driver", "pytorch", "nccl"; NULL when unrecognised */
    int32_t number; /* its number in that api (valid bit REP_S_NUMBER) */
    uint64_t valid;
};

struct reported_info {
    struct reported_error *errors;
    size_t n_errors;
};

extern const struct jtable reported_error_table;

/* The name recorded for a text the catalogue does not know. */
#define REPORTED_UNRECOGNISED "unrecognised"

void reported_info_free(struct reported_info *r);
json_t *reported_info_to_json(const struct reported_info *r);
int reported_info_from_json(struct reported_info *r, const json_t *j, const char *path,
                            struct jerr *err);

#endif
