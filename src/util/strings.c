/*
 * gc_strings: a list of owned strings (gcluster/buf.h).
 */
#include "gcluster/buf.h"

#include <ctype.h>
#include <stdlib.h>

void gc_strings_push(gc_strings *list, const char *s)
{
    list->items = gc_xrealloc(list->items, (list->count + 1) * sizeof(*list->items));
    list->items[list->count++] = gc_xstrdup(s);
}

void gc_strings_free(gc_strings *list)
{
    for (size_t i = 0; i < list->count; i++)
        free(list->items[i]);
    free(list->items);
    list->items = NULL;
    list->count = 0;
}

void gc_strings_split_words(const char *text, gc_strings *out)
{
    const char *p = text ? text : "";
    while (*p) {
        while (*p && isspace((unsigned char)*p))
            p++;
        size_t n = 0;
        while (p[n] && !isspace((unsigned char)p[n]))
            n++;
        if (n) {
            char *word = gc_xstrndup(p, n);
            gc_strings_push(out, word);
            free(word);
        }
        p += n;
    }
}
