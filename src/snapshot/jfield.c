#include "snapshot/jfield.h"
#include "nvml/nvml-abi.h"
#include "util/strutil.h"
#include "util/xalloc.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

json_t *jstring_safe(const char *s)
{
    json_t *j;
    char *clean;

    if (s == NULL)
        return json_null();
    j = json_string(s);
    if (j != NULL)
        return j;
    /* Not UTF-8: keep the bytes visible as \xNN rather than lose the key. */
    clean = str_printable(s);
    j = json_string(clean);
    free(clean);
    return j ? j : json_string("");
}

void jerr_set(struct jerr *e, const char *path, const char *fmt, ...)
{
    char *raw, *shown;
    va_list ap;

    snprintf(e->path, sizeof(e->path), "%s", path ? path : "");
    str_sanitize(e->path);
    /* A message may quote the document (an unknown key, a value): shown escaped, and cut. */
    va_start(ap, fmt);
    raw = xvasprintf(fmt, ap);
    va_end(ap);
    shown = str_excerpt(raw, sizeof(e->msg) - 4);
    snprintf(e->msg, sizeof(e->msg), "%s", shown);
    free(shown);
    free(raw);
}

static void *field_ptr(void *obj, const struct jfield *f)
{
    return (char *)obj + f->offset;
}

static const void *field_cptr(const void *obj, const struct jfield *f)
{
    return (const char *)obj + f->offset;
}

int32_t jfield_rc(const struct jtable *t, const void *obj, int slot)
{
    const int32_t *rc = (const int32_t *)((const char *)obj + t->valid_offset);

    return slot < 0 ? 0 : rc[slot];
}

void jfield_set_rc(const struct jtable *t, void *obj, int slot, int32_t rc)
{
    int32_t *rcs = (int32_t *)((char *)obj + t->valid_offset);

    if (slot >= 0)
        rcs[slot] = rc;
}

bool jfield_valid(const struct jtable *t, const void *obj, const struct jfield *f)
{
    if (f->slot < 0 || t->validity == JT_NONE)
        return true;
    if (t->validity == JT_BITS) {
        const uint64_t *bits = (const uint64_t *)((const char *)obj + t->valid_offset);

        return (*bits >> f->slot) & 1u;
    }
    return jfield_rc(t, obj, f->slot) == 0;
}

void jfield_set_valid(const struct jtable *t, void *obj, const struct jfield *f, bool valid)
{
    if (f->slot < 0 || t->validity == JT_NONE)
        return;
    if (t->validity == JT_BITS) {
        uint64_t *bits = (uint64_t *)((char *)obj + t->valid_offset);

        if (valid)
            *bits |= UINT64_C(1) << f->slot;
        else
            *bits &= ~(UINT64_C(1) << f->slot);
        return;
    }
    jfield_set_rc(t, obj, f->slot, valid ? 0 : JF_RC_NOT_COLLECTED);
}

const struct jfield *jtable_find(const struct jtable *t, const char *name)
{
    for (size_t i = 0; i < t->n_fields; i++) {
        if (strcmp(t->fields[i].name, name) == 0)
            return &t->fields[i];
    }
    return NULL;
}

static size_t enum_count(const char *const *names)
{
    size_t n = 0;

    while (names[n] != NULL)
        n++;
    return n;
}

static json_t *field_to_json(const struct jfield *f, const void *obj)
{
    const void *p = field_cptr(obj, f);
    char hex[32];

    switch (f->type) {
    case JF_STR: {
        return jstring_safe(*(char *const *)p);
    }
    case JF_U32:
        return json_integer(*(const uint32_t *)p);
    case JF_I32:
        return json_integer(*(const int32_t *)p);
    case JF_U64: {
        uint64_t v = *(const uint64_t *)p;

        return v > INT64_MAX ? json_null() : json_integer((json_int_t)v);
    }
    case JF_LIMIT: {
        uint64_t v = *(const uint64_t *)p;

        if (v == UINT64_MAX)
            return json_string("unlimited");
        return v > INT64_MAX ? json_null() : json_integer((json_int_t)v);
    }
    case JF_I64:
        return json_integer(*(const int64_t *)p);
    case JF_BOOL:
        return json_boolean(*(const bool *)p);
    case JF_DOUBLE:
        return json_real(*(const double *)p);
    case JF_HEX32:
        snprintf(hex, sizeof(hex), "0x%08" PRIx32, *(const uint32_t *)p);
        return json_string(hex);
    case JF_HEX64:
        snprintf(hex, sizeof(hex), "0x%016" PRIx64, *(const uint64_t *)p);
        return json_string(hex);
    case JF_ENUM: {
        int32_t v = *(const int32_t *)p;

        if (v >= 0 && (size_t)v < enum_count(f->enum_names))
            return json_string(f->enum_names[v]);
        return json_integer(v);
    }
    case JF_NONE:
        break;
    }
    fatal("field %s has unknown type %d", f->name, (int)f->type);
}

/* Adds why field f of obj has no value to *status ({field: "ERROR_NAME"}), made when NULL. */
static void add_status(const struct jtable *t, const void *obj, const struct jfield *f,
                       json_t **status)
{
    int32_t rc = jfield_rc(t, obj, f->slot);
    const char *name = rc == JF_RC_NOT_COLLECTED ? "NOT_COLLECTED" : nvml_rc_name(rc);

    if (*status == NULL)
        *status = json_object();
    json_object_set_new(*status, f->name, name ? json_string(name) : json_integer(rc));
}

void jtable_write(const struct jtable *t, const void *obj, json_t *out, unsigned only_flags)
{
    json_t *status = NULL;

    for (size_t i = 0; i < t->n_fields; i++) {
        const struct jfield *f = &t->fields[i];
        bool valid = jfield_valid(t, obj, f);

        if (only_flags && !(f->flags & only_flags))
            continue;
        if (only_flags && !valid)
            continue;
        if (f->type != JF_NONE)
            json_object_set_new(out, f->name, valid ? field_to_json(f, obj) : json_null());
        else if (!valid)
            json_object_set_new(out, f->name, json_null());
        if (!valid && t->validity == JT_RC)
            add_status(t, obj, f, &status);
    }
    if (t->validity == JT_RC && !only_flags)
        json_object_set_new(out, t->status_key, status ? status : json_object());
}

static const char *json_kind(const json_t *j)
{
    switch (json_typeof(j)) {
    case JSON_OBJECT:
        return "an object";
    case JSON_ARRAY:
        return "an array";
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
        return "an integer";
    case JSON_REAL:
        return "a number with a fraction";
    case JSON_TRUE:
    case JSON_FALSE:
        return "a boolean";
    case JSON_NULL:
        return "null";
    }
    return "something else";
}

static int read_unsigned(const json_t *v, const struct jfield *f, uint64_t max, uint64_t *out,
                         const char *path, struct jerr *err)
{
    if (json_is_integer(v)) {
        json_int_t i = json_integer_value(v);

        if (i < 0 || (uint64_t)i > max) {
            jerr_set(err, path, "%lld is out of range (0 to %" PRIu64 ")", (long long)i, max);
            return -1;
        }
        *out = (uint64_t)i;
        return 0;
    }
    if (json_is_string(v) && (f->type == JF_HEX32 || f->type == JF_HEX64)) {
        const char *s = json_string_value(v);
        char *end;
        unsigned long long x;

        if (strncmp(s, "0x", 2) != 0 && strncmp(s, "0X", 2) != 0)
            goto bad;
        x = strtoull(s + 2, &end, 16);
        if (end == s + 2 || *end != '\0' || x > max)
            goto bad;
        *out = x;
        return 0;
    }
bad:
    jerr_set(err, path, "expected %s, got %s",
             (f->type == JF_HEX32 || f->type == JF_HEX64) ? "a hexadecimal string \"0x...\""
                                                          : "a non-negative integer",
             json_kind(v));
    return -1;
}

static int field_from_json(const struct jfield *f, void *obj, const json_t *v, const char *path,
                           struct jerr *err)
{
    void *p = field_ptr(obj, f);
    uint64_t u;

    switch (f->type) {
    case JF_STR:
        if (!json_is_string(v)) {
            jerr_set(err, path, "expected a string, got %s", json_kind(v));
            return -1;
        }
        free(*(char **)p);
        /* Every string read from a document is made safe here, once (str_sanitize). */
        *(char **)p = str_sanitized(json_string_value(v));
        return 0;
    case JF_U32:
    case JF_HEX32:
        if (read_unsigned(v, f, UINT32_MAX, &u, path, err) != 0)
            return -1;
        *(uint32_t *)p = (uint32_t)u;
        return 0;
    case JF_U64:
    case JF_HEX64:
        if (read_unsigned(v, f, f->type == JF_U64 ? INT64_MAX : UINT64_MAX, &u, path, err) != 0)
            return -1;
        *(uint64_t *)p = u;
        return 0;
    case JF_LIMIT:
        if (json_is_string(v) && strcmp(json_string_value(v), "unlimited") == 0) {
            *(uint64_t *)p = UINT64_MAX;
            return 0;
        }
        if (json_is_string(v)) {
            jerr_set(err, path, "expected a non-negative integer or \"unlimited\", got \"%.40s\"",
                     json_string_value(v));
            return -1;
        }
        if (read_unsigned(v, f, INT64_MAX, &u, path, err) != 0)
            return -1;
        *(uint64_t *)p = u;
        return 0;
    case JF_I32:
        if (!json_is_integer(v) || json_integer_value(v) < INT32_MIN ||
            json_integer_value(v) > INT32_MAX) {
            jerr_set(err, path, "expected a 32-bit integer, got %s", json_kind(v));
            return -1;
        }
        *(int32_t *)p = (int32_t)json_integer_value(v);
        return 0;
    case JF_I64:
        if (!json_is_integer(v)) {
            jerr_set(err, path, "expected an integer, got %s", json_kind(v));
            return -1;
        }
        *(int64_t *)p = json_integer_value(v);
        return 0;
    case JF_BOOL:
        if (!json_is_boolean(v)) {
            jerr_set(err, path, "expected true or false, got %s", json_kind(v));
            return -1;
        }
        *(bool *)p = json_is_true(v);
        return 0;
    case JF_DOUBLE:
        if (!json_is_number(v)) {
            jerr_set(err, path, "expected a number, got %s", json_kind(v));
            return -1;
        }
        *(double *)p = json_number_value(v);
        return 0;
    case JF_ENUM: {
        size_t n = enum_count(f->enum_names);

        if (json_is_string(v)) {
            for (size_t i = 0; i < n; i++) {
                if (strcmp(f->enum_names[i], json_string_value(v)) == 0) {
                    *(int32_t *)p = (int32_t)i;
                    return 0;
                }
            }
        } else if (json_is_integer(v) && json_integer_value(v) >= 0 &&
                   json_integer_value(v) <= INT32_MAX) {
            *(int32_t *)p = (int32_t)json_integer_value(v);
            return 0;
        }
        {
            char choices[200] = "";

            for (size_t i = 0; i < n; i++) {
                size_t len = strlen(choices);

                snprintf(choices + len, sizeof(choices) - len, "%s\"%s\"", i ? ", " : "",
                         f->enum_names[i]);
            }
            jerr_set(err, path, "expected one of %s", choices);
        }
        return -1;
    }
    case JF_NONE:
        return 0;
    }
    fatal("field %s has unknown type %d", f->name, (int)f->type);
}

static bool key_allowed(const char *key, const char *const *extra_keys)
{
    for (size_t i = 0; extra_keys && extra_keys[i]; i++) {
        if (strcmp(extra_keys[i], key) == 0)
            return true;
    }
    return false;
}

static int read_status(const struct jtable *t, void *obj, const json_t *status, const char *path,
                       struct jerr *err)
{
    const char *key;
    json_t *v;

    if (!json_is_object(status)) {
        jerr_set(err, path, "%s: expected an object, got %s", t->status_key, json_kind(status));
        return -1;
    }
    json_object_foreach((json_t *)status, key, v)
    {
        const struct jfield *f = jtable_find(t, key);
        int32_t rc;

        if (f == NULL || f->slot < 0) {
            jerr_set(err, path, "%s: unknown field \"%s\"", t->status_key, key);
            return -1;
        }
        if (json_is_string(v) && strcmp(json_string_value(v), "NOT_COLLECTED") == 0)
            rc = JF_RC_NOT_COLLECTED;
        else if (json_is_string(v) && nvml_rc_from_name(json_string_value(v)) > 0)
            rc = nvml_rc_from_name(json_string_value(v));
        else if (json_is_integer(v) && json_integer_value(v) > 0 &&
                 json_integer_value(v) <= INT32_MAX)
            rc = (int32_t)json_integer_value(v);
        else {
            jerr_set(err, path, "%s.%s: expected an NVML error name such as \"NOT_SUPPORTED\"",
                     t->status_key, key);
            return -1;
        }
        /* A list field is valid when its key is absent, so a status may stand alone for it. */
        if (f->type != JF_NONE && jfield_valid(t, obj, f)) {
            jerr_set(err, path, "%s.%s: the field has a value and an error", t->status_key, key);
            return -1;
        }
        jfield_set_rc(t, obj, f->slot, rc);
    }
    return 0;
}

/* Names the first key of in that is neither a field, an extra key nor the status key. */
static bool report_unknown_key(const struct jtable *t, const json_t *in, const char *path,
                               const char *const *extra_keys, struct jerr *err)
{
    const char *key;
    json_t *v;

    json_object_foreach((json_t *)in, key, v)
    {
        if (jtable_find(t, key) == NULL && !key_allowed(key, extra_keys) &&
            !(t->validity == JT_RC && strcmp(key, t->status_key) == 0)) {
            jerr_set(err, path, "unknown key \"%s\" in %s", key, t->name);
            return true;
        }
    }
    return false; /* counted twice: an extra key that is also a field */
}

/*
 * Reads field f of obj from v: its value, NULL when the record lacks it (missing_rc), JSON null
 * when it was not collected. *missing gathers the JT_BITS slots a field lacks. Returns 0, or -1
 * with *err set.
 */
static int read_field(const struct jtable *t, const struct jfield *f, void *obj, const json_t *v,
                      const char *path, int32_t missing_rc, uint64_t *missing, struct jerr *err)
{
    if (f->type == JF_NONE) {
        /* Written only when invalid (null plus a status); the caller reads the content. */
        if (t->validity == JT_RC)
            jfield_set_rc(t, obj, f->slot, v != NULL && json_is_null(v) ? JF_RC_NOT_COLLECTED : 0);
        return 0;
    }
    if (v == NULL || json_is_null(v)) {
        if (f->slot < 0 && v == NULL && t->validity != JT_NONE) {
            jerr_set(err, path, "missing required key \"%s\"", f->name);
            return -1;
        }
        if (t->validity == JT_RC)
            jfield_set_rc(t, obj, f->slot, v == NULL ? missing_rc : JF_RC_NOT_COLLECTED);
        else
            jfield_set_valid(t, obj, f, false);
        if (f->slot >= 0 && f->slot < 64)
            *missing |= UINT64_C(1) << f->slot;
        return 0;
    }
    if (field_from_json(f, obj, v, path, err) != 0) {
        snprintf(err->path, sizeof(err->path), "%s%s%s", path, *path ? "." : "", f->name);
        return -1;
    }
    /* Fields that share a bit are known together: one that is missing keeps the bit clear, so its
     * value never reads as a valid 0. */
    jfield_set_valid(t, obj, f,
                     t->validity != JT_BITS || f->slot < 0 || f->slot >= 64 ||
                         !(*missing & (UINT64_C(1) << f->slot)));
    return 0;
}

int jtable_read(const struct jtable *t, void *obj, const json_t *in, const char *path,
                int32_t missing_rc, const char *const *extra_keys, struct jerr *err)
{
    size_t known = 0;
    uint64_t missing = 0; /* JT_BITS slots a field of this object lacks */
    json_t *v;

    if (!json_is_object(in)) {
        jerr_set(err, path, "expected an object, got %s", json_kind(in));
        return -1;
    }
    for (size_t i = 0; i < t->n_fields; i++) {
        v = json_object_get(in, t->fields[i].name);
        known += v != NULL;
        if (read_field(t, &t->fields[i], obj, v, path, missing_rc, &missing, err) != 0)
            return -1;
    }
    /* Every key is a field, an extra key or the status key: counting spares a lookup per key. */
    for (size_t i = 0; extra_keys && extra_keys[i]; i++)
        known += json_object_get(in, extra_keys[i]) != NULL;
    if (t->validity == JT_RC)
        known += json_object_get(in, t->status_key) != NULL;
    if (known != json_object_size(in) && report_unknown_key(t, in, path, extra_keys, err))
        return -1;
    if (t->validity == JT_RC) {
        v = json_object_get(in, t->status_key);
        if (v != NULL && read_status(t, obj, v, path, err) != 0)
            return -1;
    }
    return 0;
}

void jtable_write_row(const struct jtable *t, const void *obj, json_t *out, unsigned only_flags)
{
    json_t *row = json_array(), *status = NULL;

    if (t->validity != JT_RC)
        fatal("%s: rows are for tables with NVML statuses", t->name);
    for (size_t i = 0; i < t->n_fields; i++) {
        const struct jfield *f = &t->fields[i];
        bool valid = jfield_valid(t, obj, f);

        if (only_flags && !(f->flags & only_flags)) {
            json_array_append_new(row, json_null());
            continue;
        }
        if (valid) {
            /* A list's slot has no value of its own: true stands for "valid". */
            json_array_append_new(row, f->type == JF_NONE ? json_true() : field_to_json(f, obj));
            continue;
        }
        json_array_append_new(row, json_null());
        /* As in jtable_write: a sample leaves out why a value is missing. */
        if (!only_flags)
            add_status(t, obj, f, &status);
    }
    if (status != NULL)
        json_array_append_new(row, status);
    json_array_append_new(out, row);
}

int jtable_read_row(const struct jtable *t, void *obj, const json_t *in, const char *path,
                    struct jerr *err)
{
    uint64_t missing = 0;
    size_t n = json_array_size(in);

    if (t->validity != JT_RC)
        fatal("%s: rows are for tables with NVML statuses", t->name);
    if (!json_is_array(in) || (n != t->n_fields && n != t->n_fields + 1) ||
        (n == t->n_fields + 1 && !json_is_object(json_array_get(in, t->n_fields)))) {
        jerr_set(err, path, "expected a %s row: %zu values and perhaps their statuses", t->name,
                 t->n_fields);
        return -1;
    }
    for (size_t i = 0; i < t->n_fields; i++) {
        if (read_field(t, &t->fields[i], obj, json_array_get(in, i), path, JF_RC_NOT_COLLECTED,
                       &missing, err) != 0)
            return -1;
    }
    if (n == t->n_fields + 1 &&
        read_status(t, obj, json_array_get(in, t->n_fields), path, err) != 0)
        return -1;
    return 0;
}

void jtable_copy(const struct jtable *t, void *dst, const void *src, unsigned only_flags)
{
    for (size_t i = 0; i < t->n_fields; i++) {
        const struct jfield *f = &t->fields[i];
        const void *from = (const char *)src + f->offset;
        void *to = field_ptr(dst, f);
        size_t size = 0;

        if (!(f->flags & only_flags) || (f->flags & JF_ID) || f->type == JF_NONE)
            continue;
        switch (f->type) {
        case JF_STR:
            free(*(char **)to);
            *(char **)to = *(char *const *)from ? xstrdup(*(char *const *)from) : NULL;
            break;
        case JF_U32:
        case JF_I32:
        case JF_HEX32:
        case JF_ENUM:
            size = sizeof(uint32_t);
            break;
        case JF_U64:
        case JF_LIMIT:
        case JF_I64:
        case JF_HEX64:
            size = sizeof(uint64_t);
            break;
        case JF_BOOL:
            size = sizeof(bool);
            break;
        case JF_DOUBLE:
            size = sizeof(double);
            break;
        case JF_NONE:
            break;
        }
        if (size > 0)
            memcpy(to, from, size);
        if (t->validity == JT_RC)
            jfield_set_rc(t, dst, f->slot, jfield_rc(t, src, f->slot));
        else
            jfield_set_valid(t, dst, f, jfield_valid(t, src, f));
    }
}

void jtable_free(const struct jtable *t, void *obj)
{
    for (size_t i = 0; i < t->n_fields; i++) {
        const struct jfield *f = &t->fields[i];

        if (f->type == JF_STR) {
            char **p = field_ptr(obj, f);

            free(*p);
            *p = NULL;
        }
    }
}

int jlist_read(const json_t *j, const char *key, const char *path, size_t size, void **out,
               size_t *n, jelem_reader fn, struct jerr *err)
{
    const json_t *a = json_object_get(j, key);
    size_t i;
    json_t *v;

    if (a == NULL || json_is_null(a))
        return 0;
    if (!json_is_array(a)) {
        jerr_set(err, path, "%s: expected an array", key);
        return -1;
    }
    *out = xcalloc(json_array_size(a) + 1, size);
    json_array_foreach(a, i, v)
    {
        char p[300];

        snprintf(p, sizeof(p), "%s%s%s[%zu]", path, *path ? "." : "", key, i);
        *n = i + 1;
        if (fn((char *)*out + i * size, v, p, err) != 0)
            return -1;
    }
    return 1;
}

int jlist_read_table(const struct jtable *t, const json_t *j, const char *key, const char *path,
                     size_t size, void **out, size_t *n, struct jerr *err)
{
    const json_t *a = json_object_get(j, key);
    size_t i;
    json_t *v;

    if (a == NULL || json_is_null(a))
        return 0;
    if (!json_is_array(a)) {
        jerr_set(err, path, "%s: expected an array", key);
        return -1;
    }
    *out = xcalloc(json_array_size(a) + 1, size);
    json_array_foreach(a, i, v)
    {
        char p[300];

        snprintf(p, sizeof(p), "%s%s%s[%zu]", path, *path ? "." : "", key, i);
        *n = i + 1;
        if (jtable_read(t, (char *)*out + i * size, v, p, 0, NULL, err) != 0)
            return -1;
    }
    return 1;
}

json_t *jlist_write_table(const struct jtable *t, const void *items, size_t n, size_t size)
{
    json_t *a = json_array();

    for (size_t i = 0; i < n; i++) {
        json_t *o = json_object();

        jtable_write(t, (const char *)items + i * size, o, 0);
        json_array_append_new(a, o);
    }
    return a;
}

int jget_str(const json_t *obj, const char *key, const char *path, char **out, struct jerr *err)
{
    const json_t *v = json_object_get(obj, key);

    *out = NULL;
    if (v == NULL || json_is_null(v))
        return 0;
    if (!json_is_string(v)) {
        jerr_set(err, path, "%s: expected a string, got %s", key, json_kind(v));
        return -1;
    }
    *out = str_sanitized(json_string_value(v));
    return 0;
}

int jget_int(const json_t *obj, const char *key, const char *path, int64_t *out, struct jerr *err)
{
    const json_t *v = json_object_get(obj, key);

    if (v == NULL || json_is_null(v))
        return 0;
    if (!json_is_integer(v)) {
        jerr_set(err, path, "%s: expected an integer, got %s", key, json_kind(v));
        return -1;
    }
    *out = json_integer_value(v);
    return 0;
}

/*
 * jlocate: a small scanner over JSON text that follows a path ("a.b[3].c") and reports the
 * position of the value found there. It trusts that the text already parsed.
 */
struct scan {
    const char *p;
};

static void skip_ws(struct scan *s)
{
    while (*s->p && isspace((unsigned char)*s->p))
        s->p++;
}

static void skip_string(struct scan *s)
{
    if (*s->p != '"')
        return;
    s->p++;
    while (*s->p && *s->p != '"') {
        if (*s->p == '\\' && s->p[1])
            s->p++;
        s->p++;
    }
    if (*s->p == '"')
        s->p++;
}

static void skip_value(struct scan *s)
{
    int depth = 0;

    skip_ws(s);
    while (*s->p) {
        char c = *s->p;

        if (c == '"') {
            skip_string(s);
            if (depth == 0)
                return;
            continue;
        }
        if (c == '{' || c == '[') {
            depth++;
        } else if (c == '}' || c == ']') {
            if (depth == 0)
                return;
            if (--depth == 0) {
                s->p++;
                return;
            }
        } else if (depth == 0 && (c == ',' || isspace((unsigned char)c))) {
            return;
        }
        s->p++;
    }
}

/* Compares the JSON string at s->p (escapes taken literally but for \" and \\) with key. */
static bool string_is(struct scan *s, const char *key, size_t keylen)
{
    const char *q = s->p + 1;
    size_t i = 0;

    while (*q && *q != '"') {
        char c = *q;

        if (c == '\\' && q[1]) {
            q++;
            c = *q;
        }
        if (i >= keylen || key[i] != c)
            return false;
        i++;
        q++;
    }
    return i == keylen;
}

static bool find_key(struct scan *s, const char *key, size_t keylen)
{
    skip_ws(s);
    if (*s->p != '{')
        return false;
    s->p++;
    for (;;) {
        bool match;

        skip_ws(s);
        if (*s->p != '"')
            return false;
        match = string_is(s, key, keylen);
        skip_string(s);
        skip_ws(s);
        if (*s->p != ':')
            return false;
        s->p++;
        skip_ws(s);
        if (match)
            return true;
        skip_value(s);
        skip_ws(s);
        if (*s->p != ',')
            return false;
        s->p++;
    }
}

static bool find_index(struct scan *s, long index)
{
    skip_ws(s);
    if (*s->p != '[')
        return false;
    s->p++;
    for (long i = 0;; i++) {
        skip_ws(s);
        if (*s->p == ']' || *s->p == '\0')
            return false;
        if (i == index)
            return true;
        skip_value(s);
        skip_ws(s);
        if (*s->p != ',')
            return false;
        s->p++;
    }
}

bool jlocate(const char *text, const char *path, int *line, int *column)
{
    struct scan s = { text };
    const char *q = path;

    while (*q) {
        if (*q == '.') {
            q++;
            continue;
        }
        if (*q == '[') {
            char *end;
            long index = strtol(q + 1, &end, 10);

            if (*end != ']' || !find_index(&s, index))
                return false;
            q = end + 1;
            continue;
        }
        {
            size_t n = strcspn(q, ".[");

            if (!find_key(&s, q, n))
                return false;
            q += n;
        }
    }
    skip_ws(&s);
    *line = 1;
    *column = 1;
    for (const char *c = text; c < s.p; c++) {
        if (*c == '\n') {
            (*line)++;
            *column = 1;
        } else {
            (*column)++;
        }
    }
    return true;
}
