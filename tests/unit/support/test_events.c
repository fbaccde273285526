#include "test_events.h"

#include <string.h>

static void record(void *ctx, gc_event_kind kind, const char *text)
{
    static const char *const names[] = {
        [GC_EVENT_TRACE] = "trace",
        [GC_EVENT_NOTICE] = "notice",
        [GC_EVENT_WARNING] = "warning",
        [GC_EVENT_PROGRESS] = "progress",
        [GC_EVENT_PROGRESS_END] = "progress-end",
    };
    test_events *t = ctx;
    gc_buf_printf(&t->lines, "%s: %s\n", names[kind], text);
}

void test_events_init(test_events *t)
{
    t->events = (gc_events){.emit = record, .ctx = t};
    gc_buf_init(&t->lines);
}

void test_events_free(test_events *t)
{
    gc_buf_free(&t->lines);
}

size_t test_events_count(const test_events *t, const char *needle)
{
    size_t n = 0;
    for (const char *p = t->lines.data; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}
