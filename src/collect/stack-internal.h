/*
 * What the parts of the stack collector share (src/collect/stack*.c, and only they): the run
 * they fill, reading inside the root (stack-files.c), and each part's entry point. stack.c says
 * which part is where.
 */
#ifndef GPUDOCTOR_STACK_INTERNAL_H
#define GPUDOCTOR_STACK_INTERNAL_H

#include "collect/collect.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#define SMALL_FILE_MAX (1u << 20) /* version files, headers, METADATA */

/* One collection: where it reads and what it fills. */
struct stack_run {
    struct collect_ctx *ctx;
    int rootfd;
    struct snapshot *s;
    struct stack_info *st;
    struct collector_status *c;
    unsigned maps_denied; /* processes whose maps could not be read */
};

/* stack-files.c: paths and files inside the tree; prefix is "" or "proc/PID/root". */
char *stack_path_join(const char *dir, const char *name);
char *stack_path_dirname(const char *path);
const char *stack_path_basename(const char *path);
char *stack_rel_path(const char *prefix, const char *path);
char *stack_resolve(int rootfd, const char *prefix, const char *path);
bool stack_exists_in(int rootfd, const char *prefix, const char *path, mode_t type);
ssize_t stack_slurp_in(int rootfd, const char *prefix, const char *path, size_t max, char **out);
char **stack_list_dir(int rootfd, const char *prefix, const char *path, size_t *n);
void stack_free_list(char **names, size_t n);
char *stack_dist_info_version(int rootfd, const char *prefix, const char *dir, const char *project);
char *stack_site_packages_of(const char *path);

/* stack-toolkits.c */
void stack_collect_toolkits(struct stack_run *r);
void stack_collect_system_cudnn(struct stack_run *r);

/* stack-libs.c */
struct lib_kind;
/* The library kind named kind ("cudart", "cudnn"...), or NULL when gpudoctor does not know it. */
const struct lib_kind *stack_lib_kind(const char *kind);
char *stack_lib_version(struct stack_run *r, const char *prefix, const char *kind_name,
                        const char *path, const char **source);
void stack_collect_libs(struct stack_run *r);

/* stack-frameworks.c */
void stack_collect_frameworks(struct stack_run *r);

#endif
