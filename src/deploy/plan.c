/*
 * gcloud argvs as data: built word by word (run without a shell) and shown as a line a user can
 * paste.
 */
#include "deploy/internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void deploy_argv_push(deploy_argv *b, char *owned)
{
    b->items = gc_xrealloc(b->items, (b->count + 2) * sizeof(*b->items));
    b->items[b->count++] = owned;
    b->items[b->count] = NULL;
}

void deploy_argv_words(deploy_argv *b, ...)
{
    va_list ap;
    va_start(ap, b);
    for (const char *w = va_arg(ap, const char *); w; w = va_arg(ap, const char *))
        deploy_argv_push(b, gc_xstrdup(w));
    va_end(ap);
}

void deploy_argv_flag(deploy_argv *b, const char *flag, const char *value)
{
    if (value)
        deploy_argv_push(b, gc_xasprintf("--%s=%s", flag, value));
}

void deploy_argv_count(deploy_argv *b, const char *flag, long value)
{
    deploy_argv_push(b, gc_xasprintf("--%s=%ld", flag, value));
}

void deploy_argv_free(char **argv)
{
    for (char **a = argv; a && *a; a++)
        free(*a);
    free(argv);
}

static bool needs_quotes(const char *s)
{
    if (!*s)
        return true;
    return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-") !=
           strlen(s);
}

char *deploy_argv_shell_line(char *const *argv)
{
    gc_buf line;
    gc_buf_init(&line);
    for (char *const *a = argv; *a; a++) {
        if (line.len)
            gc_buf_putc(&line, ' ');
        if (!needs_quotes(*a)) {
            gc_buf_puts(&line, *a);
            continue;
        }
        gc_buf_putc(&line, '\'');
        for (const char *c = *a; *c; c++) {
            if (*c == '\'')
                gc_buf_puts(&line, "'\\''");
            else
                gc_buf_putc(&line, *c);
        }
        gc_buf_putc(&line, '\'');
    }
    return gc_buf_detach(&line);
}

char *deploy_cloud_step_line(const gc_cloud_step *s)
{
    char *line = deploy_argv_shell_line(s->create);
    if (!s->input)
        return line;
    /* printf '%s\n' 'line 1' 'line 2' | gcloud ... */
    gc_buf b;
    gc_buf_init(&b);
    gc_buf_puts(&b, "printf '%s\\n'");
    const char *text = s->input;
    while (*text) {
        size_t len = strcspn(text, "\n");
        char *piece = gc_xstrndup(text, len);
        char *argv[] = {piece, NULL};
        char *quoted = deploy_argv_shell_line(argv);
        gc_buf_printf(&b, " %s", quoted);
        free(quoted);
        free(piece);
        text += len + (text[len] == '\n');
    }
    gc_buf_printf(&b, " | %s", line);
    free(line);
    return gc_buf_detach(&b);
}
