/*
 * `job list` as a table (kubectl's layout: columns as wide as their widest cell, three spaces
 * apart; wide adds QUEUE and the diagnosis' short REASON) and as a JSON array of rows.
 */
#include "cli/render.h"

#include "gcluster/buf.h"

#include <string.h>
#include <time.h>

#define COLUMNS 9

enum { AGE, COMPLETED_AGE };

static void row_cells(const gc_job_row *r, long long now, char ages[2][16],
                      const char *cells[COLUMNS])
{
    gc_format_age(r->created, now, ages[AGE], 16);
    if (r->completed)
        gc_format_age(r->completed, now, ages[COMPLETED_AGE], 16);
    else
        snprintf(ages[COMPLETED_AGE], 16, "-");
    const char *values[COLUMNS] = {
        r->ns,
        r->name,
        r->status,
        r->compute,
        r->pathways == GC_PATHWAYS_NONE ? "-" : gc_pathways_mode_name(r->pathways),
        ages[AGE],
        ages[COMPLETED_AGE],
        r->queue,
        r->reason,
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
        row_cells(&list->rows[i], now, ages[i], cells);
        for (size_t c = 0; c < COLUMNS; c++)
            if (strlen(cells[c]) > width[c])
                width[c] = strlen(cells[c]);
    }
    size_t first = all_namespaces ? 0 : 1;
    size_t last = wide ? COLUMNS : 7;
    for (size_t c = first; c < last; c++)
        fprintf(out, "%-*s%s", c + 1 < last ? (int)width[c] : 0, headers[c],
                c + 1 < last ? "   " : "\n");
    for (size_t i = 0; i < list->count; i++) {
        const char *cells[COLUMNS];
        row_cells(&list->rows[i], now, ages[i], cells);
        for (size_t c = first; c < last; c++)
            fprintf(out, "%-*s%s", c + 1 < last ? (int)width[c] : 0, cells[c],
                    c + 1 < last ? "   " : "\n");
    }
    free(ages);
}

json_t *cli_list_json(const gc_job_list_result *list)
{
    json_t *rows = json_array();
    for (size_t i = 0; i < list->count; i++) {
        const gc_job_row *r = &list->rows[i];
        json_array_append_new(
            rows, json_pack("{s:o, s:o, s:o, s:s, s:s, s:o, s:o, s:o, s:s, s:o, s:o, s:o}", "name",
                            cli_json_text(r->name), "namespace", cli_json_text(r->ns), "uid",
                            cli_json_text(r->uid), "phase", gc_job_phase_name(r->phase), "status",
                            r->status, "detail", cli_json_text(r->detail), "reason",
                            cli_json_text(r->reason), "compute", cli_json_text(r->compute),
                            "pathways", gc_pathways_mode_name(r->pathways), "queue",
                            cli_json_text(r->queue), "created", cli_json_text(r->created),
                            "completed", cli_json_text(r->completed)));
    }
    return rows;
}
