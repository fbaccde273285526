/*
 * Edit distance, for "did you mean ...?" hints on commands, flags and compute types.
 */
#include "gcluster/sys.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

size_t gc_text_edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    /* One row of the dynamic programming table: row[j] is the distance between the first i
     * characters of a and the first j of b. */
    size_t *row = gc_xcalloc(lb + 1, sizeof(*row));
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diagonal = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t above = row[j];
            size_t best =
                diagonal + (tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]));
            if (above + 1 < best)
                best = above + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diagonal = above;
        }
    }
    size_t distance = row[lb];
    free(row);
    return distance;
}
