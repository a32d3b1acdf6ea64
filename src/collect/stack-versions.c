#include "collect/stack-versions.h"
#include "util/strutil.h"
#include "util/xalloc.h"

#include <ctype.h>
#include <jansson.h>
#include <string.h>

bool stackver_is_version(const char *s, int min_parts)
{
    int parts = 0;

    if (s == NULL)
        return false;
    for (;;) {
        if (!isdigit((unsigned char)*s))
            return false;
        while (isdigit((unsigned char)*s))
            s++;
        parts++;
        if (*s == '\0')
            return parts >= min_parts;
        if (*s != '.')
            return false;
        s++;
    }
}

int stackver_parts(const char *s)
{
    int n = 1;

    if (s == NULL || *s == '\0')
        return 0;
    for (; *s; s++)
        n += *s == '.';
    return n;
}

char *stackver_first_version(const char *text)
{
    const char *p = text;
    const char *eol = text + strcspn(text, "\n");

    while (p < eol) {
        size_t n;
        char *tok;

        while (p < eol && isspace((unsigned char)*p))
            p++;
        n = strcspn(p, " \t\n");
        if (n == 0)
            break;
        tok = xstrndup(p, n);
        if (stackver_is_version(tok, 2))
            return tok;
        free(tok);
        p += n;
    }
    return NULL;
}

/*
 * A value read from a file anyone may have written (a user's site-packages) made safe to print:
 * the report runs as root on a terminal, so no control character may pass. Frees s.
 */
static char *printable(char *s)
{
    char *p = str_printable(s);

    free(s);
    return p;
}

/* A Python string literal at *p ('x' or "x", no escapes in these generated files). */
static char *py_string(const char *p)
{
    char q = *p;
    const char *end;

    if (q != '\'' && q != '"')
        return NULL;
    end = p + 1;
    while (*end && *end != q && *end != '\n')
        end++;
    if (*end != q)
        return NULL;
    return printable(xstrndup(p + 1, (size_t)(end - p - 1)));
}

char *stackver_py_assign(const char *text, const char *name, bool *is_none)
{
    size_t n = strlen(name);

    if (is_none != NULL)
        *is_none = false;
    for (const char *line = text; line != NULL && *line;) {
        const char *p = line, *next = strchr(line, '\n');

        line = next ? next + 1 : NULL;
        if (strncmp(p, name, n) != 0)
            continue;
        p += n;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p == ':') {
            /* A type annotation: `cuda: Optional[str] = ...` */
            while (*p && *p != '=' && *p != '\n')
                p++;
        }
        if (*p != '=' || p[1] == '=')
            continue;
        p++;
        while (*p == ' ' || *p == '\t')
            p++;
        if (strncmp(p, "None", 4) == 0 && !isalnum((unsigned char)p[4]) && p[4] != '_') {
            if (is_none != NULL)
                *is_none = true;
            return NULL;
        }
        return py_string(p);
    }
    return NULL;
}

char *stackver_tf_build_info(const char *text, const char *key)
{
    size_t n = strlen(key);
    char *name, *v;

    for (const char *p = text; (p = strstr(p, key)) != NULL; p += n) {
        const char *q;

        if (p == text || (p[-1] != '\'' && p[-1] != '"') || p[n] != p[-1])
            continue;
        q = p + n + 1;
        while (*q == ' ')
            q++;
        if (*q != ',' && *q != ':')
            continue;
        q++;
        while (*q == ' ')
            q++;
        v = py_string(q);
        if (v != NULL)
            return v;
    }
    /* TensorFlow before the dict: cuda_version_number = '10.1' */
    name = xasprintf("%s_number", key);
    v = stackver_py_assign(text, name, NULL);
    free(name);
    return v;
}

/* "#define NAME 9" -> 9; -1 when absent. */
static long header_define(const char *text, const char *name)
{
    size_t n = strlen(name);

    for (const char *line = text; line != NULL && *line;) {
        const char *p = line, *next = strchr(line, '\n');
        char *end;
        long v;

        line = next ? next + 1 : NULL;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p++ != '#')
            continue;
        while (*p == ' ' || *p == '\t')
            p++;
        if (strncmp(p, "define", 6) != 0 || (p[6] != ' ' && p[6] != '\t'))
            continue;
        p += 6;
        while (*p == ' ' || *p == '\t')
            p++;
        if (strncmp(p, name, n) != 0 || (p[n] != ' ' && p[n] != '\t'))
            continue;
        p += n;
        while (*p == ' ' || *p == '\t')
            p++;
        if (!isdigit((unsigned char)*p))
            continue;
        v = strtol(p, &end, 10);
        if (v < 0 || v > 100000)
            continue;
        return v;
    }
    return -1;
}

char *stackver_cudnn_header(const char *text)
{
    long major = header_define(text, "CUDNN_MAJOR");
    long minor = header_define(text, "CUDNN_MINOR");
    long patch = header_define(text, "CUDNN_PATCHLEVEL");

    if (major < 0 || minor < 0 || patch < 0)
        return NULL;
    return xasprintf("%ld.%ld.%ld", major, minor, patch);
}

char *stackver_metadata_version(const char *text)
{
    for (const char *line = text; line != NULL && *line;) {
        const char *p = line, *next = strchr(line, '\n');
        size_t n = next ? (size_t)(next - p) : strlen(p);

        line = next ? next + 1 : NULL;
        if (n == 0 || (n == 1 && *p == '\r'))
            break; /* the headers end at the first blank line; the description follows */
        if (strncmp(p, "Version:", 8) == 0) {
            char *v = xstrndup(p + 8, n - 8);
            char *t = xstrdup(str_ltrim(str_rtrim(v)));

            free(v);
            if (*t == '\0') {
                free(t);
                return NULL;
            }
            return printable(t);
        }
    }
    return NULL;
}

/* Compares a project name with a prefix, '-', '_' and '.' alike, case-insensitively; returns
 * the characters of name matched, 0 when it does not start with prefix. */
static size_t name_prefix(const char *name, size_t len, const char *prefix)
{
    size_t i;

    for (i = 0; prefix[i]; i++) {
        char a, b;

        if (i >= len)
            return 0;
        a = (char)tolower((unsigned char)name[i]);
        b = (char)tolower((unsigned char)prefix[i]);
        if (a == '-' || a == '.')
            a = '_';
        if (b == '-' || b == '.')
            b = '_';
        if (a != b)
            return 0;
    }
    return i;
}

/* name[0..len) is prefix, or prefix + "_cu" + digits (the CUDA-major wheels). */
static bool name_matches(const char *name, size_t len, const char *prefix)
{
    size_t n = name_prefix(name, len, prefix);

    if (n == 0)
        return false;
    if (n == len)
        return true;
    if (len - n < 4 || (name[n] != '_' && name[n] != '-') ||
        tolower((unsigned char)name[n + 1]) != 'c' || tolower((unsigned char)name[n + 2]) != 'u')
        return false;
    for (size_t i = n + 3; i < len; i++) {
        if (!isdigit((unsigned char)name[i]))
            return false;
    }
    return true;
}

char *stackver_metadata_pin(const char *text, const char *dist_prefix)
{
    for (const char *line = text; line != NULL && *line;) {
        const char *p = line, *next = strchr(line, '\n');
        size_t n;

        line = next ? next + 1 : NULL;
        if (strncmp(p, "Requires-Dist:", 14) != 0)
            continue;
        p = str_ltrim(p + 14);
        n = strcspn(p, " =<>!~;([\n");
        if (!name_matches(p, n, dist_prefix))
            continue;
        p = str_ltrim(p + n);
        if (*p == '(') /* older metadata: "name (==1.2.3)" */
            p = str_ltrim(p + 1);
        if (strncmp(p, "==", 2) != 0)
            continue;
        p = str_ltrim(p + 2);
        n = strspn(p, "0123456789.");
        if (n > 0)
            return xstrndup(p, n);
    }
    return NULL;
}

char *stackver_version_txt(const char *text)
{
    const char *p = strstr(text, "CUDA Version ");
    size_t n;

    if (p == NULL)
        return NULL;
    p += strlen("CUDA Version ");
    n = strspn(p, "0123456789.");
    if (n == 0)
        return NULL;
    {
        char *v = xstrndup(p, n);

        if (!stackver_is_version(v, 2)) {
            free(v);
            return NULL;
        }
        return v;
    }
}

static char *json_component(json_t *root, const char *key)
{
    json_t *o = json_object_get(root, key);
    json_t *v = json_is_object(o) ? json_object_get(o, "version") : NULL;

    if (!json_is_string(v) || !stackver_is_version(json_string_value(v), 2))
        return NULL;
    return xstrdup(json_string_value(v));
}

int stackver_version_json(const char *text, size_t len, char **sdk, char **cudart, char **nvcc)
{
    json_t *root = json_loadb(text, len, 0, NULL);

    *sdk = *cudart = *nvcc = NULL;
    if (!json_is_object(root)) {
        json_decref(root);
        return -1;
    }
    *sdk = json_component(root, "cuda");
    *cudart = json_component(root, "cuda_cudart");
    *nvcc = json_component(root, "cuda_nvcc");
    json_decref(root);
    return 0;
}

char *stackver_nvcc_banner(const char *buf, size_t len)
{
    static const char banner[] = "Cuda compilation tools, release ";
    const char *p = memmem(buf, len, banner, sizeof(banner) - 1);
    const char *end = buf + len, *v;
    size_t n;

    if (p == NULL)
        return NULL;
    p += sizeof(banner) - 1;
    /* "13.0, V13.0.88": the full version follows ", V". */
    v = p;
    while (v < end && v < p + 16 && *v != ',')
        v++;
    if (end - v < 4 || v[0] != ',' || v[1] != ' ' || v[2] != 'V')
        return NULL;
    v += 3;
    for (n = 0; v + n < end && (isdigit((unsigned char)v[n]) || v[n] == '.'); n++)
        ;
    if (n == 0 || n > 32)
        return NULL;
    {
        char *s = xstrndup(v, n);

        if (!stackver_is_version(s, 2)) {
            free(s);
            return NULL;
        }
        return s;
    }
}

char *stackver_lib_suffix(const char *file_name, const char *stem)
{
    size_t n = strlen(stem);

    if (strncmp(file_name, stem, n) != 0 || file_name[n] != '.' ||
        !stackver_is_version(file_name + n + 1, 1))
        return NULL;
    return xstrdup(file_name + n + 1);
}

bool stackver_dist_info(const char *dir_name, const char *prefix, char **version)
{
    const char *dash = strchr(dir_name, '-');
    size_t len = strlen(dir_name);

    *version = NULL;
    if (dash == NULL || !str_ends(dir_name, ".dist-info") ||
        (size_t)(dash - dir_name) + 1 + strlen(".dist-info") >= len)
        return false;
    if (!name_matches(dir_name, (size_t)(dash - dir_name), prefix))
        return false;
    *version =
        printable(xstrndup(dash + 1, len - strlen(".dist-info") - (size_t)(dash - dir_name) - 1));
    return true;
}
