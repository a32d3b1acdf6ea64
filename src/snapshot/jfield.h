/*
 * Table-driven JSON for plain structs: one row per field (JSON key, type, offset, validity slot).
 * The snapshot writer and reader, the simulator's scenario reader, the Prometheus metrics and
 * docs/snapshot.md are all loops over these tables, so a field is declared exactly once.
 */
#ifndef GPUDOCTOR_JFIELD_H
#define GPUDOCTOR_JFIELD_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum jf_type {
    JF_STR,    /* char *, owned by the struct */
    JF_U32,    /* uint32_t */
    JF_I32,    /* int32_t */
    JF_U64,    /* uint64_t (must fit in int64 when written) */
    JF_LIMIT,  /* uint64_t resource limit: UINT64_MAX is written as the string "unlimited" */
    JF_I64,    /* int64_t */
    JF_BOOL,   /* bool */
    JF_DOUBLE, /* double */
    JF_HEX32,  /* uint32_t written as "0x%08x" (PCI ids) */
    JF_HEX64,  /* uint64_t written as "0x%016llx" (bitmasks) */
    JF_ENUM,   /* int32_t written as enum_names[value] */
    JF_NONE,   /* no value of its own: a status slot for something the caller reads (a list) */
};

/* Field flags. */
#define JF_DYNAMIC 0x1u /* changes from sample to sample: kept in history samples */
#define JF_ID      0x2u /* identifies the record: always written in samples */

struct jfield {
    const char *name; /* JSON key, with its unit in the name */
    enum jf_type type;
    size_t offset;
    int slot; /* validity slot (bit or rc index), -1 for always valid */
    unsigned flags;
    const char *const *enum_names; /* JF_ENUM only; NULL-terminated */
    const char *source;            /* where the value comes from (NVML call, file) */
    const char *doc;               /* one line for docs/snapshot.md */
};

enum jt_validity {
    JT_NONE, /* every field always valid */
    JT_BITS, /* uint64_t bitmask at valid_offset; bit slot set = valid */
    JT_RC,   /* int32_t array at valid_offset; entry slot 0 = valid, else an NVML return code */
};

/* JT_RC entry for a field nobody tried to collect. */
#define JF_RC_NOT_COLLECTED (-1)

struct jtable {
    const char *name; /* for messages and docs */
    const struct jfield *fields;
    size_t n_fields;
    enum jt_validity validity;
    size_t valid_offset;
    const char *status_key; /* JT_RC: key of the {field: "ERROR_NAME"} object, e.g. "nvml_status" */
};

/*
 * Where a reader failed: a JSON path ("gpus[2].temp_c") and what was wrong. jerr_set shows what
 * the message quotes of the document escaped (str_excerpt), so an error never carries a terminal
 * escape.
 */
struct jerr {
    char path[256];
    char msg[256];
};

void jerr_set(struct jerr *e, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

bool jfield_valid(const struct jtable *t, const void *obj, const struct jfield *f);
void jfield_set_valid(const struct jtable *t, void *obj, const struct jfield *f, bool valid);
/* JT_RC tables: the return code recorded for field slot (0 = valid). */
int32_t jfield_rc(const struct jtable *t, const void *obj, int slot);
void jfield_set_rc(const struct jtable *t, void *obj, int slot, int32_t rc);

/*
 * Appends the fields of obj to the JSON object out. Invalid fields are written as null.
 * With only_flags non-zero, writes only fields having one of those flags (history samples),
 * and nulls are left out.
 */
void jtable_write(const struct jtable *t, const void *obj, json_t *out, unsigned only_flags);

/*
 * Reads the fields of obj from the JSON object in. Strings are made safe for terminals and logs
 * (str_sanitize: control characters and invalid UTF-8 become '?'), as live collection makes them.
 * A missing or null key leaves the field invalid (JT_RC: missing_rc); fields that share a JT_BITS
 * slot are valid only when all of them are there. Unknown keys are an error unless listed in
 * extra_keys (NULL-terminated, may be NULL). path names the object in error messages.
 * Returns 0, or -1 with *err set.
 */
int jtable_read(const struct jtable *t, void *obj, const json_t *in, const char *path,
                int32_t missing_rc, const char *const *extra_keys, struct jerr *err);

/*
 * A record as a row, for the NVML helper's wire, where most of an answer is link records whose keys
 * would outweigh their values: a JSON array of the table's fields in order (null for a value not
 * there, true for a valid list slot) and, when some value has an error, the status object last.
 * Only for JT_RC tables. only_flags as jtable_write. The row is appended to the array out.
 */
void jtable_write_row(const struct jtable *t, const void *obj, json_t *out, unsigned only_flags);
/*
 * Reads a row jtable_write_row wrote: the record jtable_read would read from the same record as an
 * object, with missing_rc JF_RC_NOT_COLLECTED. Returns 0, or -1 with *err set.
 */
int jtable_read_row(const struct jtable *t, void *obj, const json_t *in, const char *path,
                    struct jerr *err);

/*
 * Copies the fields having one of only_flags (JF_DYNAMIC: what a sample holds), values and
 * validity, from src to dst, records of the same table. Identifying fields (JF_ID) stay.
 */
void jtable_copy(const struct jtable *t, void *dst, const void *src, unsigned only_flags);

/* Frees the strings the table's fields own in obj. */
void jtable_free(const struct jtable *t, void *obj);

/* Finds a field by JSON key; NULL if none. */
const struct jfield *jtable_find(const struct jtable *t, const char *name);

/*
 * Finds the line and column (1-based) of the value at path in JSON text, for messages about a
 * document that parsed but held a wrong value. Returns false when the path is not found.
 */
bool jlocate(const char *text, const char *path, int *line, int *column);

/* Reads one element of a list; path names it ("host.disks[2]"). */
typedef int (*jelem_reader)(void *elem, const json_t *j, const char *path, struct jerr *err);

/*
 * Reads the array at key of the object j into a new array *out of elements of size bytes, each
 * read by fn. Returns 1 when the array was there, 0 when absent or null, -1 on error (what was
 * read so far is in *out and *n, for the caller to free).
 */
int jlist_read(const json_t *j, const char *key, const char *path, size_t size, void **out,
               size_t *n, jelem_reader fn, struct jerr *err);
/* The same for plain records: each element read with jtable_read(t, ...). */
int jlist_read_table(const struct jtable *t, const json_t *j, const char *key, const char *path,
                     size_t size, void **out, size_t *n, struct jerr *err);
/* A JSON array of n plain records of size bytes, each written with jtable_write(t, ...). */
json_t *jlist_write_table(const struct jtable *t, const void *items, size_t n, size_t size);

/* A JSON string for s (null for NULL); bytes that are not UTF-8 are written as "\xNN". */
json_t *jstring_safe(const char *s);

/*
 * Typed getters for hand-written readers; each sets *err with the path on a type mismatch.
 * jget_str's string is sanitized, as jtable_read's are.
 */
int jget_str(const json_t *obj, const char *key, const char *path, char **out, struct jerr *err);
int jget_int(const json_t *obj, const char *key, const char *path, int64_t *out, struct jerr *err);

#endif
