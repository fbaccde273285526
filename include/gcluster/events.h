/*
 * gc_events: how the library tells its caller what happens while it works.
 *
 * The library never prints. A function that has something to say besides its result (a
 * warning, a notice about something done on the user's behalf, a request trace, the progress
 * of a long wait) takes a `const gc_events *` and reports through it; cli/ supplies one that
 * writes to the terminal, tests supply one that records. A NULL gc_events, or one without a
 * callback, drops everything, so callers that do not care pass NULL.
 *
 * Texts are one line without a trailing newline, except progress, which may hold one line per
 * thing followed (the jobs of `job wait`), separated by '\n'. They may carry server-provided
 * words: the receiver, not the sender, makes them safe for a terminal.
 */
#ifndef GCLUSTER_EVENTS_H
#define GCLUSTER_EVENTS_H

#include <stdarg.h>

typedef enum gc_event_kind {
    GC_EVENT_TRACE,        /* -v: one request or response line, credentials already redacted */
    GC_EVENT_NOTICE,       /* done on the user's behalf: "running gcloud ...", "reconnecting" */
    GC_EVENT_WARNING,      /* the user should know or fix this; the command still goes on */
    GC_EVENT_PROGRESS,     /* the current state of a long operation; replaces the previous one */
    GC_EVENT_PROGRESS_END, /* the long operation is over (text may be empty) */
} gc_event_kind;

typedef struct gc_events {
    void (*emit)(void *ctx, gc_event_kind kind, const char *text);
    void *ctx;
} gc_events;

/* Formats the text and hands it to ev->emit (nothing happens when ev or ev->emit is NULL). */
void gc_event(const gc_events *ev, gc_event_kind kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The same for a caller that has a va_list (a wrapper with its own conditions). */
void gc_eventv(const gc_events *ev, gc_event_kind kind, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

#define gc_warn(ev, ...)     gc_event((ev), GC_EVENT_WARNING, __VA_ARGS__)
#define gc_notice(ev, ...)   gc_event((ev), GC_EVENT_NOTICE, __VA_ARGS__)
#define gc_progress(ev, ...) gc_event((ev), GC_EVENT_PROGRESS, __VA_ARGS__)
#define gc_trace(ev, ...)    gc_event((ev), GC_EVENT_TRACE, __VA_ARGS__)

#endif
