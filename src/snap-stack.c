/* Interim codec: the owner of this section replaces it with the full field table. */
#include "snap-stack.h"

#include <stdlib.h>
#include <string.h>

json_t *stack_info_to_json(const struct stack_info *x)
{
    (void)x;
    return json_object();
}

int stack_info_from_json(struct stack_info *x, const json_t *j, const char *path, struct jerr *err)
{
    (void)x;
    (void)j;
    (void)path;
    (void)err;
    return 0;
}

void stack_info_free(struct stack_info *x)
{
    memset(x, 0, sizeof(*x));
}
