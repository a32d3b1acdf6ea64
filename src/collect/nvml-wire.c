#include "collect/nvml-wire.h"
#include "snapshot/snapshot.h"
#include "util/xalloc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const request_lines[] = {
    [NVML_REQ_FULL] = "full\n",
    [NVML_REQ_SAMPLE] = "sample\n",
};

const char *nvml_request_line(enum nvml_request r)
{
    if (r != NVML_REQ_FULL && r != NVML_REQ_SAMPLE)
        fatal("no request line for request %d", (int)r);
    return request_lines[r];
}

enum nvml_request nvml_request_parse(const char *line)
{
    if (strcmp(line, "full") == 0)
        return NVML_REQ_FULL;
    if (strcmp(line, "sample") == 0)
        return NVML_REQ_SAMPLE;
    return NVML_REQ_INVALID;
}

static char *dump_line(json_t *j)
{
    char *text = json_dumps(j, JSON_COMPACT);
    char *out;

    json_decref(j);
    if (text == NULL)
        fatal("out of memory encoding an NVML answer");
    /* Compact JSON escapes every newline inside strings, so the one at the end frames it. */
    out = xasprintf("%s\n", text);
    free(text);
    return out;
}

/*
 * Drops from every object of j the null values its "nvml_status" explains, and an empty
 * "nvml_status": reading an absent key gives the same record (the status sets the value's code
 * either way; no status is no error), and an 8-GPU NVSwitch
 * server's 144 NVLinks with counters a driver does not support are otherwise most of the answer,
 * paid for twice, in encoding and in decoding. A null without a status (not collected) stays:
 * absent, a list would read as valid.
 */
static void drop_explained_nulls(json_t *j)
{
    const json_t *status = json_object_get(j, "nvml_status");
    const char *key;
    json_t *v;
    void *tmp;
    size_t i;

    if (json_is_array(j)) {
        json_array_foreach(j, i, v)
        {
            drop_explained_nulls(v);
        }
        return;
    }
    if (!json_is_object(j))
        return;
    json_object_foreach_safe(j, tmp, key, v)
    {
        if (json_is_null(v) && status != NULL && json_object_get(status, key) != NULL)
            json_object_del(j, key);
        else
            drop_explained_nulls(v);
    }
    /* An empty status reads as an absent one: every value there is valid. */
    if (status != NULL && json_is_object(status) && json_object_size(status) == 0)
        json_object_del(j, "nvml_status");
}

char *nvml_wire_encode(const struct nvml_system *sys, const struct gpu *gpus, size_t n_gpus)
{
    json_t *j = json_object(), *arr = json_array();

    if (sys != NULL)
        json_object_set_new(j, "nvml", nvml_system_to_json(sys));
    for (size_t i = 0; i < n_gpus; i++)
        json_array_append_new(arr, gpu_to_wire(&gpus[i], sys ? 0 : JF_ID | JF_DYNAMIC));
    json_object_set_new(j, "gpus", arr);
    drop_explained_nulls(arr);
    return dump_line(j);
}

char *nvml_wire_encode_error(const char *msg)
{
    return dump_line(json_pack("{ss}", "error", msg));
}

static void free_gpus(struct gpu *gpus, size_t n)
{
    for (size_t i = 0; i < n; i++)
        gpu_free(&gpus[i]);
    free(gpus);
}

int nvml_wire_decode(const char *line, size_t len, bool want_sys, struct nvml_system *sys,
                     struct gpu **gpus, size_t *n_gpus, char **cause)
{
    static const char name[] = "NVML helper answer";
    struct jerr err = { "", "" };
    json_error_t jerror;
    const json_t *arr, *error, *nvml;
    struct gpu *out = NULL;
    size_t n = 0, i;
    const char *key;
    json_t *root, *v;
    int rc = -1;

    *gpus = NULL;
    *n_gpus = 0;
    *cause = NULL;
    root = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerror);
    if (root == NULL) {
        *cause = xasprintf("%s:%d:%d: %s", name, jerror.line, jerror.column, jerror.text);
        return -1;
    }
    if (!json_is_object(root)) {
        jerr_set(&err, "", "expected an object");
        goto out;
    }
    json_object_foreach(root, key, v)
    {
        if (strcmp(key, "nvml") != 0 && strcmp(key, "gpus") != 0 && strcmp(key, "error") != 0) {
            jerr_set(&err, "", "unknown key \"%s\"", key);
            goto out;
        }
    }
    error = json_object_get(root, "error");
    if (error != NULL) {
        *cause = xasprintf("the NVML helper refused the request: %s",
                           json_is_string(error) ? json_string_value(error) : "(no reason)");
        goto out;
    }
    nvml = json_object_get(root, "nvml");
    if (want_sys && nvml == NULL) {
        jerr_set(&err, "", "missing \"nvml\"");
        goto out;
    }
    if (want_sys && nvml_system_from_json(sys, nvml, "nvml", &err) != 0)
        goto out;
    arr = json_object_get(root, "gpus");
    if (!json_is_array(arr)) {
        jerr_set(&err, "gpus", "expected an array");
        goto out;
    }
    out = xcalloc(json_array_size(arr) ? json_array_size(arr) : 1, sizeof(*out));
    json_array_foreach(arr, i, v)
    {
        char path[64];

        snprintf(path, sizeof(path), "gpus[%zu]", i);
        gpu_init(&out[i], (uint32_t)i);
        n = i + 1;
        if (gpu_from_wire(&out[i], v, path, &err) != 0)
            goto out;
    }
    *gpus = out;
    *n_gpus = n;
    out = NULL;
    n = 0;
    rc = 0;
out:
    if (rc != 0 && *cause == NULL)
        *cause = jerr_format(&err, line, name);
    free_gpus(out, n);
    json_decref(root);
    return rc;
}

int nvml_wire_sample_of(const struct gpu *full, size_t n_full, struct gpu **gpus, size_t *n_gpus,
                        char **cause)
{
    struct jerr err = { "", "" };
    struct gpu *out;
    size_t n = 0;

    *gpus = NULL;
    *n_gpus = 0;
    *cause = NULL;
    out = xcalloc(n_full ? n_full : 1, sizeof(*out));
    for (size_t i = 0; i < n_full; i++) {
        /* The same encoding as a sample answer's, read back the same way: the one definition of
         * what a sample holds stays the encoder's. */
        json_t *j = gpu_to_wire(&full[i], JF_ID | JF_DYNAMIC);
        char path[64];
        int rc;

        snprintf(path, sizeof(path), "gpus[%zu]", i);
        gpu_init(&out[i], (uint32_t)i);
        n = i + 1;
        drop_explained_nulls(j);
        rc = gpu_from_wire(&out[i], j, path, &err);
        json_decref(j);
        if (rc != 0) {
            *cause = xasprintf("the full NVML reading does not make a sample: %s: %s", err.path,
                               err.msg);
            free_gpus(out, n);
            return -1;
        }
    }
    *gpus = out;
    *n_gpus = n;
    return 0;
}

void nvml_linebuf_init(struct nvml_linebuf *b, size_t max)
{
    memset(b, 0, sizeof(*b));
    b->max = max;
}

int nvml_linebuf_append(struct nvml_linebuf *b, const char *p, size_t n)
{
    /* One line and its newline is all a reader ever needs to hold. */
    if (n > b->max + 1 - b->len)
        return -EMSGSIZE;
    xgrow(&b->data, &b->cap, b->len + n + 1, 1);
    memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

ssize_t nvml_linebuf_line(struct nvml_linebuf *b)
{
    char *nl;

    if (b->len == 0)
        return -1;
    nl = memchr(b->data, '\n', b->len);
    if (nl == NULL)
        return -1;
    *nl = '\0';
    return nl - b->data;
}

void nvml_linebuf_consume(struct nvml_linebuf *b, size_t n)
{
    if (n >= b->len) {
        b->len = 0;
    } else {
        memmove(b->data, b->data + n, b->len - n);
        b->len -= n;
    }
    if (b->data != NULL)
        b->data[b->len] = '\0';
}

void nvml_linebuf_free(struct nvml_linebuf *b)
{
    free(b->data);
    memset(b, 0, sizeof(*b));
}
