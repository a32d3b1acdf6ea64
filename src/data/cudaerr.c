/* The reported-error catalogue's matcher (data/cudaerr.h); the rows come from data/cuda-errors.tsv.
 */
#include "data/cudaerr.h"

#include <ctype.h>
#include <stdbool.h>
#include <string.h>

/* Where needle[0..n) first occurs in hay, case-insensitively, or NULL. */
static const char *find_ci(const char *hay, const char *needle, size_t n)
{
    if (n == 0)
        return hay;
    for (; *hay; hay++) {
        size_t k = 0;

        while (k < n && hay[k] &&
               tolower((unsigned char)hay[k]) == tolower((unsigned char)needle[k]))
            k++;
        if (k == n)
            return hay;
    }
    return NULL;
}

/* How many pattern characters match text (parts separated by '*', in order), 0 when none. */
static size_t match_len(const char *text, const char *pattern)
{
    size_t total = 0;

    while (*pattern) {
        const char *star = strchr(pattern, '*');
        size_t n = star ? (size_t)(star - pattern) : strlen(pattern);
        const char *at = find_ci(text, pattern, n);

        if (at == NULL)
            return 0;
        text = at + n;
        total += n;
        pattern += n + (star != NULL);
    }
    return total;
}

const struct cudaerr_info *cudaerr_match(const char *text)
{
    const struct cudaerr_info *best = NULL;
    size_t best_len = 0;

    if (text == NULL)
        return NULL;
    for (size_t i = 0; i < cudaerr_n_rows; i++) {
        const struct cudaerr_info *r = &cudaerr_rows[i];
        size_t n = match_len(text, r->name);

        if (r->pattern != NULL) {
            size_t p = match_len(text, r->pattern);

            if (p > n)
                n = p;
        }
        if (n > best_len) {
            best = r;
            best_len = n;
        }
    }
    return best;
}
