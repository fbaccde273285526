#include "gcluster/events.h"

#include "gcluster/buf.h"

#include <stdarg.h>

void gc_eventv(const gc_events *ev, gc_event_kind kind, const char *fmt, va_list ap)
{
    if (!ev || !ev->emit)
        return;
    gc_buf text;
    gc_buf_init(&text);
    gc_buf_vprintf(&text, fmt, ap);
    ev->emit(ev->ctx, kind, text.data);
    gc_buf_free(&text);
}

void gc_event(const gc_events *ev, gc_event_kind kind, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    gc_eventv(ev, kind, fmt, ap);
    va_end(ap);
}
