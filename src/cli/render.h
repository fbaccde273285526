/*
 * Renderers: what the commands' reports look like as text, JSON and YAML. The JSON shapes are
 * documented in README.md ("JSON output") and stable; YAML is the same document.
 */
#ifndef GCLUSTER_CLI_RENDER_H
#define GCLUSTER_CLI_RENDER_H

#include "gcluster/buf.h"
#include "gcluster/deploy.h"
#include "gcluster/diagnose.h"
#include "gcluster/error.h"
#include "gcluster/job.h"
#include "gcluster/submit.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

typedef enum cli_format {
    CLI_FORMAT_TEXT, /* for people: "text", or "table" for lists */
    CLI_FORMAT_WIDE, /* a table with more columns (job list) */
    CLI_FORMAT_JSON,
    CLI_FORMAT_YAML,
} cli_format;

/* Parses -o: text (or table), json and yaml, and wide where `wide` is allowed; NULL is text.
 * GC_EXIT_USAGE names the choices. */
int cli_format_parse(const char *text, bool wide, cli_format *format, gc_error *err);

/* `doc` as JSON or YAML (as `format` says), appended to `text`; releases it. */
int cli_document_text(json_t *doc, cli_format format, gc_buf *text, gc_error *err);

/* Writes `doc` (JSON or YAML, as `format` says) to stdout and releases it. */
int cli_print_document(json_t *doc, cli_format format, gc_error *err);

/* Writes one line of text that may hold server strings (names, reasons, Kueue and event
 * messages): anything a terminal could act on (escape sequences, bells, carriage returns, newlines)
 * is shown as \xNN, so a server cannot draw on the user's screen or forge lines. Then a newline.
 * Newlines at the start of `fmt` (program text, not outside text) are blank lines before it. */
void cli_line(FILE *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same for `len` bytes already formatted. */
void cli_put_line(FILE *out, const char *text, size_t len);
/* cli_line without the newline: a part of a line that the caller ends. */
void cli_text(FILE *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A JSON string (bytes that are not UTF-8 become '?'), or null for NULL. */
json_t *cli_json_text(const char *s);

/* An array of cli_json_text strings. */
json_t *cli_json_strings(const gc_strings *list);

/* `job inspect`: the summary; with a manifest, the summary as YAML comments, then the YAML. */
/* `all_pods`: a row for every pod; otherwise the slices summed up, with the pods of the slices
 * that have problems. */
int cli_render_inspect_text(FILE *out, const gc_inspect_report *r, bool all_pods, gc_error *err);
json_t *cli_inspect_json(const gc_inspect_report *r);

/* `job list`: the table (NAMESPACE first with -A; QUEUE and REASON when wide). */
void cli_render_list_table(FILE *out, const gc_job_list_result *list, bool wide,
                           bool all_namespaces);
/* -o json / -o yaml: the rows as one array, the same text as the whole document, written a row
 * at a time. */
int cli_print_list(FILE *out, const gc_job_list_result *list, cli_format format, gc_error *err);

/* `job why`: "Cause: ..." and "Fix: ..." (then the evidence lines, with `evidence`); as JSON
 * {state, reason, cause, fix, evidence}, or null for no diagnosis. */
void cli_render_why_text(FILE *out, const gc_diagnosis *d, bool evidence);
json_t *cli_why_json(const gc_diagnosis *d);

/* `job cancel`. */
void cli_render_cancel_text(FILE *out, const gc_cancel_result *r);
json_t *cli_cancel_json(const gc_cancel_result *r);

/* `job submit`: what was created (or accepted by a server dry run) and the next commands; after
 * --await-job-completion, how the job ended and, when it failed or the wait timed out, why
 * (`why`: NULL when there is no diagnosis). */
void cli_render_submit_text(FILE *out, const gc_submit_result *r);
void cli_render_submit_final_text(FILE *out, const gc_submit_result *r, const gc_diagnosis *why);
json_t *cli_submit_json(const gc_submit_result *r, const gc_diagnosis *why);

/* `deploy`: the pipeline's stages in the order they ran, then what each found and did (the
 * Google Cloud steps, the blueprint, the installs, the node pools, the objects). */
void cli_render_deploy_text(FILE *out, FILE *log, const gc_deploy_result *result);
json_t *cli_deploy_json(const gc_deploy_result *result);

/* A deploy or destroy stage's state: as a person reads it (`done_word` for a stage that ran:
 * deploy and destroy say differently what a plan's look found) and as its JSON key. */
const char *cli_stage_word(gc_deploy_stage_state state, const char *done_word);
const char *cli_stage_key(gc_deploy_stage_state state);

/* `job wait`: one line per job ("NAME: STATUS - DETAIL"), or an array of one object per job. */
void cli_render_wait_text(FILE *out, const gc_wait_result *r);
json_t *cli_wait_json(const gc_wait_result *r);

#endif
