/*
 * `job list` as a table (kubectl's layout: columns as wide as their widest cell, three spaces
 * apart; wide adds QUEUE and the diagnosis' short REASON) and as a JSON or YAML array of rows,
 * written a row at a time: the whole document as a JSON tree would take several times the
 * memory of the rows (a million rows: 2.6 GB).
 */
#include "cli/render.h"

#include "gcluster/buf.h"
#include "gcluster/diagnose.h"
#include "gcluster/emit.h"
#include "gcluster/manifest.h"
#include "gcluster/sys.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define COLUMNS  9
#define FLUSH_AT (64 * 1024)

enum { AGE, COMPLETED_AGE };

static void row_cells(const gc_job_row *r, long long now, char ages[2][16], char sps[48],
                      const char *cells[COLUMNS])
{
    /* A service: how many clients it serves and the slices they hold. */
    if (r->pathways == GC_PATHWAYS_SPS && r->sps_clients >= 0)
        snprintf(sps, 48, "sps: %d client%s, %d held", r->sps_clients,
                 r->sps_clients == 1 ? "" : "s", r->sps_held);
    else
        snprintf(sps, 48, "%s",
                 r->pathways == GC_PATHWAYS_NONE ? "-" : gc_pathways_mode_name(r->pathways));
    gc_clock_format_age(r->created, now, ages[AGE], 16);
    if (r->completed)
        gc_clock_format_age(r->completed, now, ages[COMPLETED_AGE], 16);
    else
        snprintf(ages[COMPLETED_AGE], 16, "-");
    const char *values[COLUMNS] = {
        r->ns,    r->name,   r->status, r->compute, sps, ages[AGE], ages[COMPLETED_AGE],
        r->queue, r->reason,
    };
    for (size_t c = 0; c < COLUMNS; c++)
        cells[c] = values[c] ? values[c] : "-";
}

void cli_render_list_table(FILE *out, const gc_job_list_result *list, bool wide,
                           bool all_namespaces)
{
    static const char *const headers[COLUMNS] = {"NAMESPACE", "NAME",     "STATUS",
                                                 "COMPUTE",   "PATHWAYS", "AGE",
                                                 "COMPLETED", "QUEUE",    "REASON"};
    size_t width[COLUMNS];
    for (size_t c = 0; c < COLUMNS; c++)
        width[c] = strlen(headers[c]);
    char(*ages)[2][16] = gc_xcalloc(list->count ? list->count : 1, sizeof(*ages));
    long long now = (long long)time(NULL);
    for (size_t i = 0; i < list->count; i++) {
        const char *cells[COLUMNS];
        char sps[48];
        row_cells(&list->rows[i], now, ages[i], sps, cells);
        for (size_t c = 0; c < COLUMNS; c++)
            if (strlen(cells[c]) > width[c])
                width[c] = strlen(cells[c]);
    }
    size_t first = all_namespaces ? 0 : 1;
    size_t last = wide ? COLUMNS : 7;
    gc_buf line;
    gc_buf_init(&line);
    for (size_t c = first; c < last; c++)
        gc_buf_printf(&line, "%-*s%s", c + 1 < last ? (int)width[c] : 0, headers[c],
                      c + 1 < last ? "   " : "");
    cli_put_line(out, line.data, line.len);
    for (size_t i = 0; i < list->count; i++) {
        const char *cells[COLUMNS];
        char sps[48];
        row_cells(&list->rows[i], now, ages[i], sps, cells);
        gc_buf_reset(&line);
        for (size_t c = first; c < last; c++)
            gc_buf_printf(&line, "%-*s%s", c + 1 < last ? (int)width[c] : 0, cells[c],
                          c + 1 < last ? "   " : "");
        cli_put_line(out, line.data, line.len);
    }
    gc_buf_free(&line);
    free(ages);
}

static json_t *row_json(const gc_job_row *r)
{
    json_t *row =
        json_pack("{s:o, s:o, s:o, s:s, s:o, s:o, s:o, s:o, s:s, s:o, s:o, s:o}", "name",
                  cli_json_text(r->name), "namespace", cli_json_text(r->ns), "uid",
                  cli_json_text(r->uid), "phase", gc_job_phase_name(r->phase), "status",
                  cli_json_text(r->status), "detail", cli_json_text(r->detail), "reason",
                  cli_json_text(r->reason), "compute", cli_json_text(r->compute), "pathways",
                  gc_pathways_mode_name(r->pathways), "queue", cli_json_text(r->queue), "created",
                  cli_json_text(r->created), "completed", cli_json_text(r->completed));
    if (row && r->pathways == GC_PATHWAYS_SPS && r->sps_clients >= 0) {
        char *rm = gc_sps_resource_manager_address(r->name ? r->name : "");
        json_object_set_new(row, "sps",
                            json_pack("{s:s, s:i, s:i}", "resource_manager", rm, "clients",
                                      r->sps_clients, "held", r->sps_held));
        free(rm);
    }
    return row;
}

/* Appends `text` with every line indented by two spaces, as it sits inside the JSON array. */
static void indent_lines(gc_buf *out, const char *text)
{
    for (const char *line = text; *line;) {
        size_t len = strcspn(line, "\n");
        gc_buf_puts(out, "  ");
        gc_buf_append(out, line, len);
        line += len;
        if (*line == '\n')
            gc_buf_putc(out, *line++);
    }
}

/* One row as it appears in the whole document: in JSON an element of the pretty-printed array,
 * in YAML a one-element block sequence ("- name: ..."), which is how it reads in the whole one. */
static int row_text(const gc_job_row *r, cli_format format, bool first, gc_buf *out, gc_error *err)
{
    json_t *row = row_json(r);
    int rc = 0;
    if (format == CLI_FORMAT_YAML) {
        json_t *one = json_pack("[O]", row);
        rc = gc_emit_yaml(one, out, err);
        json_decref(one);
    } else {
        gc_buf text;
        gc_buf_init(&text);
        gc_emit_json(row, true, &text);
        text.data[--text.len] = '\0'; /* its final newline: the array's text adds its own */
        gc_buf_puts(out, first ? "[\n" : ",\n");
        indent_lines(out, text.data);
        gc_buf_free(&text);
    }
    json_decref(row);
    return rc;
}

static int flush_text(FILE *out, gc_buf *text, gc_error *err)
{
    bool written = fwrite(text->data, 1, text->len, out) == text->len && fflush(out) == 0;
    gc_buf_reset(text);
    return written ? 0
                   : gc_fail(err, GC_EXIT_RUNTIME, "cannot write to stdout: %s", strerror(errno));
}

int cli_print_list(FILE *out, const gc_job_list_result *list, cli_format format, gc_error *err)
{
    gc_buf text;
    gc_buf_init(&text);
    int rc = 0;
    if (!list->count)
        gc_buf_puts(&text, "[]\n");
    for (size_t i = 0; !rc && i < list->count; i++) {
        rc = row_text(&list->rows[i], format, i == 0, &text, err);
        if (!rc && i + 1 == list->count && format != CLI_FORMAT_YAML)
            gc_buf_puts(&text, "\n]\n");
        if (!rc && text.len >= FLUSH_AT)
            rc = flush_text(out, &text, err);
    }
    if (!rc)
        rc = flush_text(out, &text, err);
    gc_buf_free(&text);
    return rc;
}
