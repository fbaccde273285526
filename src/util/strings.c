/*
 * gc_strings: a list of owned strings (gcluster/buf.h).
 */
#include "gcluster/buf.h"

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
