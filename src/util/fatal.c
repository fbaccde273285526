#include "gcluster/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/* Process-wide on purpose: it is installed once by main() before anything runs, and the
 * failures it serves happen where no caller's context is at hand. */
static gc_fatal_fn fatal_handler;

void gc_fatal_set_handler(gc_fatal_fn handler)
{
    fatal_handler = handler;
}

void gc_fatal(const char *fmt, ...)
{
    /* No allocation here: out-of-memory is one of the reasons to be here. */
    char message[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof(message), fmt, ap);
    va_end(ap);
    if (fatal_handler)
        fatal_handler(message);
    abort();
}
