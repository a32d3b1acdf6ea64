/* Reads PyTorch's "CUDA out of memory" text (oom-parse.h). */
#include "rules/oom-parse.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

double oom_size(const char *s, const char **end)
{
    static const struct {
        const char *unit;
        double scale;
    } units[] = {
        { "bytes", 1.0 },
        { "KiB", 1024.0 },
        { "MiB", 1024.0 * 1024 },
        { "GiB", 1024.0 * 1024 * 1024 },
        { "TiB", 1024.0 * 1024 * 1024 * 1024 },
    };
    char *num_end;
    double v;

    while (*s == ' ')
        s++;
    if (!isdigit((unsigned char)*s))
        return -1;
    v = strtod(s, &num_end);
    if (num_end == s || v < 0 || v > 1e15)
        return -1;
    s = num_end;
    while (*s == ' ')
        s++;
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        size_t n = strlen(units[i].unit);

        if (strncmp(s, units[i].unit, n) == 0) {
            if (end)
                *end = s + n;
            return v * units[i].scale;
        }
    }
    return -1;
}

/* The size right after key (case-insensitive), or -1. */
static double size_after(const char *text, const char *key)
{
    const char *at = strcasestr(text, key);

    return at ? oom_size(at + strlen(key), NULL) : -1;
}

/* The size right before key: the last size that ends where key starts (" 9.56 GiB already"). */
static double size_before(const char *text, const char *key)
{
    const char *at = strcasestr(text, key), *p;

    if (at == NULL)
        return -1;
    /* back over spaces, the unit, spaces and the number */
    p = at;
    while (p > text && p[-1] == ' ')
        p--;
    while (p > text && isalpha((unsigned char)p[-1]))
        p--;
    while (p > text && p[-1] == ' ')
        p--;
    while (p > text && (isdigit((unsigned char)p[-1]) || p[-1] == '.'))
        p--;
    return oom_size(p, NULL);
}

static int gpu_index(const char *text)
{
    const char *at = strstr(text, "GPU ");
    char *end;
    long v;

    if (at == NULL || !isdigit((unsigned char)at[4]))
        return -1;
    v = strtol(at + 4, &end, 10);
    /* "GPU 0 has a total capacity" or "(GPU 0; ...": not "GPU 0 memory" of something else */
    if (v < 0 || v > 4096 || !(*end == ';' || strncmp(end, " has a total", 12) == 0))
        return -1;
    return (int)v;
}

int oom_parse(const char *text, struct oom_text *o)
{
    int found = 0;

    memset(o, 0, sizeof(*o));
    o->gpu = -1;
    o->tried = o->capacity = o->free = o->this_process = o->allocated = -1;
    o->reserved_unallocated = o->reserved_total = -1;
    if (text == NULL || strcasestr(text, "out of memory") == NULL)
        return 0;
    o->gpu = gpu_index(text);
    o->tried = size_after(text, "Tried to allocate ");
    /* 2.1 and later */
    o->capacity = size_after(text, "has a total capacity of ");
    if (o->capacity >= 0)
        o->free = size_after(text, " of which ");
    o->this_process = size_after(text, "this process has ");
    o->allocated = size_before(text, " is allocated by PyTorch");
    o->reserved_unallocated = size_before(text, " is reserved by PyTorch but unallocated");
    /* earlier */
    if (o->capacity < 0)
        o->capacity = size_before(text, " total capacity");
    if (o->free < 0)
        o->free = size_before(text, " free;");
    if (o->allocated < 0)
        o->allocated = size_before(text, " already allocated");
    o->reserved_total = size_before(text, " reserved in total by PyTorch");
    /* the other processes: "Process 1234 has 1.52 GiB memory in use" */
    for (const char *p = text; (p = strstr(p, "Process ")) != NULL && o->n_pids < OOM_MAX_PROCS;
         p++) {
        char *end;
        long pid = strtol(p + 8, &end, 10);
        double b;

        if (end == p + 8 || pid <= 0 || pid > INT32_MAX || strncmp(end, " has ", 5) != 0)
            continue;
        b = oom_size(end + 5, NULL);
        if (b < 0)
            continue;
        o->pids[o->n_pids] = (int32_t)pid;
        o->pid_bytes[o->n_pids++] = b;
    }
    found = (o->gpu >= 0) + (o->tried >= 0) + (o->capacity >= 0) + (o->free >= 0) +
            (o->this_process >= 0) + (o->allocated >= 0) + (o->reserved_unallocated >= 0) +
            (o->reserved_total >= 0) + (int)o->n_pids;
    return found;
}
