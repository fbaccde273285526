/*
 * gcluster job inspect NAME [--show] [--pods] [-o text|json|yaml]
 */
#include "cli/cli.h"
#include "cli/render.h"

#include <stdio.h>

typedef struct inspect_args {
    cli_globals g;
    const char *name;
    bool show;
    bool pods;
    const char *output;
    cli_format format;
} inspect_args;

static const cli_option inspect_options[] = {
    CLI_VALUES('n', "name", inspect_args, name, "NAME", &cli_job_names,
               "the job (or give it as an argument)"),
    CLI_BOOL(0, "show", inspect_args, show,
             "also print the stored manifest as YAML (status lines become comments)"),
    CLI_BOOL(0, "pods", inspect_args, pods,
             "list every pod (text; by default the slices are summed up, with the pods of those "
             "with problems; -o json|yaml always carries every pod)"),
    CLI_VALUES('o', "output", inspect_args, output, NULL, &cli_text_formats,
               "output format (default text; README.md describes the fields)"),
    CLI_END,
};

static int inspect_with(gc_kube *kube, void *ctx, gc_error *err)
{
    inspect_args *a = ctx;
    gc_inspect_report report;
    int rc = gc_job_inspect(kube, a->name, a->show, &report, err);
    if (rc)
        return rc;
    if (a->format == CLI_FORMAT_TEXT)
        rc = cli_render_inspect_text(stdout, &report, a->pods, err);
    else
        rc = cli_print_document(cli_inspect_json(&report), a->format, err);
    gc_inspect_report_free(&report);
    return rc;
}

static int inspect_run(void *args, const cli_parsed *parsed, gc_error *err)
{
    inspect_args *a = args;
    int rc = cli_job_name(a->name, parsed, "inspect", &a->name, err);
    if (!rc)
        rc = gc_job_name_check(a->name, err);
    if (!rc)
        rc = cli_format_parse(a->output, false, &a->format, err);
    return rc ? rc : cli_with_kube(&a->g, inspect_with, a, err);
}

const cli_command cmd_job_inspect = {
    .name = "inspect",
    .summary = "status of one job: admission, replicated jobs, slices and their pods, warnings",
    .usage = "job inspect NAME [--show] [--pods] [-o text|json|yaml]",
    .options = inspect_options,
    .args_size = sizeof(inspect_args),
    .run = inspect_run,
    .operands = &cli_job_names,
};
