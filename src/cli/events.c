/*
 * The terminal end of gc_events: warnings and notices on stderr, request traces as they come,
 * and progress redrawn in place when stderr is a terminal (nothing when it is not, so piped
 * output stays parseable). A progress text of several lines (one per job of `job wait`) is
 * redrawn as a block.
 */
#include "cli/cli.h"

#include "gcluster/sys.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

typedef struct terminal {
    bool tty;
    size_t lines_shown;  /* lines of progress on the screen; the cursor ends the last one */
    char progress[8192]; /* what they say, to redraw them after a warning */
} terminal;

/* Control characters from server text must not move the cursor, clear the screen or ring the
 * bell: each (C1 controls and bytes that are not UTF-8 too) is shown as \xNN. Writes at most
 * `columns` columns of the `len` bytes. */
static void put_safe(FILE *f, const char *text, size_t len, size_t columns)
{
    size_t used = 0;
    for (size_t i = 0; i < len;) {
        size_t n = gc_text_printable_char(text + i, len - i);
        size_t width = n ? 1 : 4;
        if (used + width > columns)
            break;
        used += width;
        if (n)
            fwrite(text + i, 1, n, f);
        else
            fprintf(f, "\\x%02x", (unsigned char)text[i]);
        i += n ? n : 1;
    }
}

static void put_line(FILE *f, const char *text)
{
    put_safe(f, text, strlen(text), (size_t)-1);
}

static void screen_size(size_t *columns, size_t *rows)
{
    struct winsize ws;
    bool known = ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 && ws.ws_row > 0;
    *columns = known ? ws.ws_col : 120;
    *rows = known ? ws.ws_row : 24;
}

/* Erases the progress lines and leaves the cursor where the first one started. */
static void clear_progress(terminal *t)
{
    if (!t->lines_shown)
        return;
    fputs("\r\033[K", stderr);
    for (size_t i = 1; i < t->lines_shown; i++)
        fputs("\033[A\r\033[K", stderr);
}

/* Draws the progress lines, each cut to the screen's width so that none wraps (the cursor moves
 * back up by lines), and no more than fit on the screen. */
static void draw_progress(terminal *t)
{
    size_t columns, rows;
    screen_size(&columns, &rows);
    size_t total = 1;
    for (const char *p = t->progress; *p; p++)
        total += *p == '\n';
    size_t fit = rows > 2 ? rows - 1 : 1;
    size_t shown = total <= fit ? total : fit - 1;
    const char *line = t->progress;
    for (size_t i = 0; i < shown; i++) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        if (i)
            fputc('\n', stderr);
        put_safe(stderr, line, len, columns - 1);
        line = end ? end + 1 : line + len;
    }
    if (shown < total)
        fprintf(stderr, "%s(%zu more)", shown ? "\n" : "", total - shown);
    t->lines_shown = shown + (shown < total);
}

static void emit(void *ctx, gc_event_kind kind, const char *text)
{
    terminal *t = ctx;
    switch (kind) {
    case GC_EVENT_PROGRESS:
        if (!t->tty)
            return;
        clear_progress(t);
        snprintf(t->progress, sizeof(t->progress), "%s", text);
        draw_progress(t);
        break;
    case GC_EVENT_PROGRESS_END:
        if (t->lines_shown)
            fputc('\n', stderr);
        t->lines_shown = 0;
        break;
    default: {
        bool redraw = t->lines_shown > 0;
        clear_progress(t);
        t->lines_shown = 0;
        fputs(kind == GC_EVENT_WARNING  ? "gcluster: warning: "
              : kind == GC_EVENT_NOTICE ? "gcluster: "
                                        : "",
              stderr);
        put_line(stderr, text);
        fputc('\n', stderr);
        if (redraw)
            draw_progress(t);
        break;
    }
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
