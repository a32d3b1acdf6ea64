/* "Did you mean": edit distance and the closest names to a misspelt one. */
#ifndef GPUDOCTOR_RULES_SUGGEST_H
#define GPUDOCTOR_RULES_SUGGEST_H

#include <stdbool.h>
#include <stddef.h>

/* Levenshtein distance between a and b. */
size_t suggest_distance(const char *a, const char *b);
/*
 * Up to max of names close to word: by edit distance (at most a quarter of its length, at least
 * 2), then names containing it. Returns how many were put in out.
 */
size_t suggest_pick(const char *word, const char *const *names, size_t n_names, const char **out,
                    size_t max);

#endif
