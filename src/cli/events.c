/*
 * The terminal end of gc_events: warnings and notices on stderr, request traces as they come,
 * and progress redrawn on one line when stderr is a terminal (nothing when it is not, so piped
 * output stays parseable).
 */
#include "cli/cli.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

typedef struct terminal {
    bool tty;
    bool progress_shown; /* a progress line is on the screen, without its newline */
    char progress[512];  /* what it says, to redraw it after a warning */
} terminal;

/* Control characters from server text must not move the cursor, clear the screen or ring the
 * bell: each is shown as \xNN. */
static void put_safe(FILE *f, const char *text)
{
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
        if (*p < 0x20 || *p == 0x7f)
            fprintf(f, "\\x%02x", *p);
        else
            fputc(*p, f);
    }
}

static void clear_progress(terminal *t)
{
    if (t->progress_shown)
        fputs("\r\033[K", stderr);
}

static void redraw_progress(terminal *t)
{
    if (!t->progress_shown)
        return;
    fputs("\r\033[K", stderr);
    put_safe(stderr, t->progress);
}

static void emit(void *ctx, gc_event_kind kind, const char *text)
{
    terminal *t = ctx;
    switch (kind) {
    case GC_EVENT_PROGRESS:
        if (!t->tty)
            return;
        snprintf(t->progress, sizeof(t->progress), "%.*s", 120, text);
        t->progress_shown = true;
        redraw_progress(t);
        break;
    case GC_EVENT_PROGRESS_END:
        if (t->progress_shown)
            fputc('\n', stderr);
        t->progress_shown = false;
        break;
    default:
        clear_progress(t);
        fputs(kind == GC_EVENT_WARNING  ? "gcluster: warning: "
              : kind == GC_EVENT_NOTICE ? "gcluster: "
                                        : "",
              stderr);
        put_safe(stderr, text);
        fputc('\n', stderr);
        redraw_progress(t);
        break;
    }
    fflush(stderr);
}

const gc_events *cli_events(void)
{
    static terminal t;
    static gc_events events = {.emit = emit, .ctx = &t};
    static bool ready;
    if (!ready) {
        t.tty = isatty(STDERR_FILENO) != 0;
        ready = true;
    }
    return &events;
}
