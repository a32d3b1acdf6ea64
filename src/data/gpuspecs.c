/* Lookups in the GPU model table generated from data/gpu-specs.tsv. */
#include "data/gpuspecs.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

extern const struct gpu_spec gpu_spec_rows[];
extern const size_t gpu_spec_n_rows;

const struct gpu_spec *gpu_specs(size_t *n)
{
    *n = gpu_spec_n_rows;
    return gpu_spec_rows;
}

const struct gpu_spec *gpu_spec_find(const char *name)
{
    size_t len;

    if (name == NULL)
        return NULL;
    while (isspace((unsigned char)*name))
        name++;
    len = strlen(name);
    while (len > 0 && isspace((unsigned char)name[len - 1]))
        len--;
    for (size_t i = 0; i < gpu_spec_n_rows; i++) {
        const char *m = gpu_spec_rows[i].model;

        if (strlen(m) == len && strncasecmp(m, name, len) == 0)
            return &gpu_spec_rows[i];
    }
    return NULL;
}
