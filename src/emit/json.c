#include "gcluster/emit.h"

#include <stdlib.h>

void gc_emit_json(const json_t *doc, bool pretty, gc_buf *out)
{
    size_t flags = JSON_ENCODE_ANY | (pretty ? JSON_INDENT(2) : JSON_COMPACT);
    char *text = json_dumps(doc, flags);
    if (text) {
        gc_buf_puts(out, text);
        if (pretty)
            gc_buf_putc(out, '\n');
        free(text);
    }
}
