/* Interim codec: the owner of this section replaces it with the full field table. */
#include "snap-driver.h"

#include <stdlib.h>
#include <string.h>

json_t *driver_info_to_json(const struct driver_info *x)
{
    (void)x;
    return json_object();
}

int driver_info_from_json(struct driver_info *x, const json_t *j, const char *path,
                          struct jerr *err)
{
    (void)x;
    (void)j;
    (void)path;
    (void)err;
    return 0;
}

void driver_info_free(struct driver_info *x)
{
    memset(x, 0, sizeof(*x));
}
