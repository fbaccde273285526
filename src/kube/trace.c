/*
 * What the client says besides its answers, through the caller's gc_events: -v lines about its
 * own decisions (retries, relists, credentials obtained; the request lines themselves come from
 * sys/'s HTTP layer) and the API server's Warning headers.
 */
#include "kube/internal.h"

#include <stdarg.h>
#include <string.h>

#define WARNING_MAX 1000 /* characters of one Warning header's text */

void kube_trace(const gc_kube *k, const char *fmt, ...)
{
    if (k->trace.verbose < 1)
        return;
    va_list ap;
    va_start(ap, fmt);
    gc_eventv(k->trace.events, GC_EVENT_TRACE, fmt, ap);
    va_end(ap);
}

/* Each warning is shown once per client, as kubectl does: a paged list of a deprecated API
 * would otherwise repeat it on every page. */
static void warn_once(gc_kube *k, const char *text)
{
    gc_buf *seen = &k->warnings_seen;
    for (const char *p = seen->data; p && p < seen->data + seen->len; p += strlen(p) + 1)
        if (!strcmp(p, text))
            return;
    if (seen->len < 16384)
        gc_buf_append(seen, text, strlen(text) + 1);
    gc_warn(k->trace.events, "%s", text);
}

/* A Warning header is `299 - "text"`; several warnings may share one header, comma-separated,
 * and each may be followed by a date in quotes. */
void kube_notice_warning(gc_kube *k, const char *value)
{
    const char *end = value + strlen(value);
    for (const char *p = value; p < end;) {
        const char *open = memchr(p, '"', (size_t)(end - p));
        if (!open)
            break;
        gc_buf text;
        gc_buf_init(&text);
        const char *q = open + 1;
        for (; q < end && *q != '"'; q++) {
            if (*q == '\\' && q + 1 < end)
                q++;
            gc_buf_putc(&text, *q);
        }
        gc_buf shown;
        gc_buf_init(&shown);
        kube_safe_text(k, &shown, text.data, text.len, WARNING_MAX);
        warn_once(k, shown.data);
        gc_buf_free(&shown);
        gc_buf_free(&text);
        p = q + 1;
        while (p < end && *p == ' ')
            p++;
        if (p < end && *p == '"') {
            const char *close = memchr(p + 1, '"', (size_t)(end - p - 1));
            p = close ? close + 1 : end;
        }
    }
}
