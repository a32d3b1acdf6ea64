/* "Did you mean": the closest rule ids and names to a misspelt one. */
#include "rules/suggest.h"
#include "util/xalloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

size_t suggest_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    size_t *row = xcalloc(lb + 1, sizeof(*row)), d;

    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];

        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j], best = diag + (a[i - 1] != b[j - 1]);

            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            diag = up;
            row[j] = best;
        }
    }
    d = row[lb];
    free(row);
    return d;
}

size_t suggest_pick(const char *word, const char *const *names, size_t n_names, const char **out,
                    size_t max)
{
    size_t n = 0, len = strlen(word), limit = len / 4 > 2 ? len / 4 : 2;
    size_t *dist = xcalloc(n_names ? n_names : 1, sizeof(*dist));

    /*
     * Each distance once, and none for a name whose length alone is further than the limit: a
     * config line can hold a key of a megabyte, and distances for every limit from 0 to a
     * quarter of its length would take hours.
     */
    for (size_t i = 0; i < n_names; i++) {
        size_t ln = strlen(names[i]), diff = ln > len ? ln - len : len - ln;

        dist[i] = diff > limit ? SIZE_MAX : suggest_distance(word, names[i]);
    }
    /* Close by spelling first, then names that contain the word (a part of an id). */
    for (size_t d = 0; d <= limit && n < max; d++) {
        for (size_t i = 0; i < n_names && n < max; i++) {
            if (dist[i] == d)
                out[n++] = names[i];
        }
    }
    free(dist);
    for (size_t i = 0; i < n_names && n < max && *word; i++) {
        bool dup = false;

        for (size_t k = 0; k < n; k++)
            dup |= out[k] == names[i];
        if (!dup && strstr(names[i], word))
            out[n++] = names[i];
    }
    return n;
}
