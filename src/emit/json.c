#include "gcluster/emit.h"

#include <stdlib.h>

void gc_emit_json(const json_t *doc, bool pretty, gc_buf *out)
{
    size_t flags = JSON_ENCODE_ANY | (pretty ? JSON_INDENT(2) : JSON_COMPACT);
    char *text = json_dumps(doc, flags);
    if (text) {
        /* jansson writes C1 controls (U+0080..U+009F) as raw UTF-8, and a terminal acts on
         * some of them (U+009B starts an escape sequence); written as \u00XX instead, the JSON
         * means the same. Outside strings JSON is ASCII, so every such pair is in a string. */
        const char *run = text, *p = text;
        for (; *p; p++) {
            if ((unsigned char)p[0] == 0xc2 && (unsigned char)p[1] >= 0x80 &&
                (unsigned char)p[1] < 0xa0) {
                gc_buf_append(out, run, (size_t)(p - run));
                gc_buf_printf(out, "\\u%04x", (unsigned char)*++p);
                run = p + 1;
            }
        }
        gc_buf_append(out, run, (size_t)(p - run));
        if (pretty)
            gc_buf_putc(out, '\n');
        free(text);
    }
}
