/*
 * gcluster job cancel NAME [--wait [--timeout D]] [-o text|json|yaml]
 */
#include "cli/cli.h"
#include "cli/render.h"

#include <stdio.h>

typedef struct cancel_args {
    cli_globals g;
    const char *name;
    gc_cancel_request r;
    const char *output;
    cli_format format;
} cancel_args;

static const cli_option cancel_options[] = {
    CLI_VALUES('n', "name", cancel_args, name, "NAME", &cli_job_names,
               "the job (or give it as an argument)"),
    CLI_BOOL(0, "wait", cancel_args, r.wait, "wait until every pod and the JobSet are gone"),
    CLI_BOOL(0, "force", cancel_args, r.force,
             "cancel a Shared Pathways Service though clients are attached (their proxy jobs "
             "go too)"),
    CLI_STRING(0, "timeout", cancel_args, r.timeout, "DURATION",
               "give up waiting after this long (exit 1); 0 looks once and does not wait"),
    CLI_VALUES('o', "output", cancel_args, output, NULL, &cli_text_formats,
               "output format (default text; README.md describes the fields)"),
    CLI_JOB_GLOBALS,
    CLI_END,
};

static int cancel_with(gc_kube *kube, void *ctx, gc_error *err)
{
    cancel_args *a = ctx;
    gc_cancel_result result;
    int rc = gc_job_cancel(kube, &a->r, cli_events(), &result, err);
    if (rc)
        return rc;
    if (a->format == CLI_FORMAT_TEXT)
        cli_render_cancel_text(stdout, &result);
    else
        rc = cli_print_document(cli_cancel_json(&result), a->format, err);
    gc_cancel_result_free(&result);
    return rc;
}

static int cancel_check(void *args, const cli_parsed *parsed, gc_error *err)
{
    (void)parsed;
    return gc_job_cancel_check(&((cancel_args *)args)->r, err);
}

static const cli_opening cancel_opening = {
    .names = CLI_JOB_ONE,
    .name_flag = offsetof(cancel_args, name),
    .name = offsetof(cancel_args, r.name),
    .output = offsetof(cancel_args, output),
    .format = offsetof(cancel_args, format),
    .check = cancel_check,
    .with = cancel_with,
};

const cli_command cmd_job_cancel = {
    .name = "cancel",
    .summary = "delete a job with its Jobs and pods (foreground deletion)",
    .usage = "job cancel NAME [--wait [--timeout D]] [-o text|json|yaml]",
    .options = cancel_options,
    .args_size = sizeof(cancel_args),
    .opening = &cancel_opening,
};
