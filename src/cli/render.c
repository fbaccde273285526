/*
 * Output formats shared by the commands' renderers.
 */
#include "cli/render.h"

#include "gcluster/buf.h"
#include "gcluster/emit.h"
#include "gcluster/sys.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int cli_format_parse(const char *text, bool wide, cli_format *format, gc_error *err)
{
    static const struct {
        const char *name;
        cli_format format;
    } names[] = {
        {"text", CLI_FORMAT_TEXT}, {"table", CLI_FORMAT_TEXT}, {"wide", CLI_FORMAT_WIDE},
        {"json", CLI_FORMAT_JSON}, {"yaml", CLI_FORMAT_YAML},
    };
    *format = CLI_FORMAT_TEXT;
    if (!text)
        return 0;
    for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++) {
        if (strcmp(text, names[i].name) != 0 || (names[i].format == CLI_FORMAT_WIDE && !wide))
            continue;
        *format = names[i].format;
        return 0;
    }
    return gc_fail(err, GC_EXIT_USAGE, "-o %s: use %s", text,
                   wide ? "table, wide, json or yaml" : "text, json or yaml");
}

int cli_document_text(json_t *doc, cli_format format, gc_buf *text, gc_error *err)
{
    int rc = 0;
    if (format == CLI_FORMAT_YAML)
        rc = gc_emit_yaml(doc, text, err);
    else
        gc_emit_json(doc, true, text);
    json_decref(doc);
    return rc;
}

int cli_print_document(json_t *doc, cli_format format, gc_error *err)
{
    gc_buf text;
    gc_buf_init(&text);
    int rc = cli_document_text(doc, format, &text, err);
    if (!rc && (fwrite(text.data, 1, text.len, stdout) != text.len || fflush(stdout) != 0))
        rc = gc_fail(err, GC_EXIT_RUNTIME, "cannot write to stdout: %s", strerror(errno));
    gc_buf_free(&text);
    return rc;
}

void cli_put_line(FILE *out, const char *text, size_t len)
{
    gc_buf safe;
    gc_buf_init(&safe);
    gc_text_escape(&safe, text, len, SIZE_MAX);
    gc_buf_putc(&safe, '\n');
    fwrite(safe.data, 1, safe.len, out);
    gc_buf_free(&safe);
}

/* The format is the program's own text: a newline that leads it is layout (a blank line before
 * a heading), never outside text, so it is written as it is. Everything formatted after it is
 * escaped. */
static void put_escaped(FILE *out, const char *fmt, va_list ap, bool newline)
{
    while (*fmt == '\n') {
        fputc('\n', out);
        fmt++;
    }
    gc_buf text, safe;
    gc_buf_init(&text);
    gc_buf_init(&safe);
    gc_buf_vprintf(&text, fmt, ap);
    gc_text_escape(&safe, text.data, text.len, SIZE_MAX);
    if (newline)
        gc_buf_putc(&safe, '\n');
    fwrite(safe.data, 1, safe.len, out);
    gc_buf_free(&safe);
    gc_buf_free(&text);
}

void cli_line(FILE *out, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    put_escaped(out, fmt, ap, true);
    va_end(ap);
}

void cli_text(FILE *out, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    put_escaped(out, fmt, ap, false);
    va_end(ap);
}

json_t *cli_json_text(const char *s)
{
    if (!s)
        return json_null();
    json_t *text = json_string(s);
    if (text)
        return text;
    /* Not UTF-8 (a server message cut mid-character to fit a field): keep the ASCII. */
    char *ascii = gc_xstrdup(s);
    for (char *c = ascii; *c; c++)
        if ((unsigned char)*c >= 0x80)
            *c = '?';
    text = json_string(ascii);
    free(ascii);
    return text;
}

json_t *cli_json_strings(const gc_strings *list)
{
    json_t *array = json_array();
    for (size_t i = 0; i < list->count; i++)
        json_array_append_new(array, cli_json_text(list->items[i]));
    return array;
}
