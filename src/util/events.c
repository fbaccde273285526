#include "gcluster/events.h"

#include "gcluster/buf.h"

#include <stdarg.h>

void gc_event(const gc_events *ev, gc_event_kind kind, const char *fmt, ...)
{
    if (!ev || !ev->emit)
        return;
    gc_buf text;
    gc_buf_init(&text);
    va_list ap;
    va_start(ap, fmt);
    gc_buf_vprintf(&text, fmt, ap);
    va_end(ap);
    ev->emit(ev->ctx, kind, text.data);
    gc_buf_free(&text);
}
