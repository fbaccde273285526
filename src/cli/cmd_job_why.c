/*
 * gcluster job why NAME [--evidence] [-o text|json|yaml]
 */
#include "cli/cli.h"
#include "cli/render.h"

#include "gcluster/diagnose.h"

#include <stdio.h>

typedef struct why_args {
    cli_globals g;
    const char *name;
    bool evidence;
    const char *output;
    cli_format format;
} why_args;

static const cli_option why_options[] = {
    CLI_VALUES('n', "name", why_args, name, "NAME", &cli_job_names,
               "the job (or give it as an argument)"),
    CLI_BOOL(0, "evidence", why_args, evidence,
             "also print the evidence: which object and field said so (as -v does)"),
    CLI_VALUES('o', "output", why_args, output, NULL, &cli_text_formats,
               "output format (default text; README.md describes the fields)"),
    CLI_JOB_GLOBALS,
    CLI_END,
};

static int why_with(gc_kube *kube, void *ctx, gc_error *err)
{
    why_args *a = ctx;
    gc_diagnosis d;
    int rc = gc_job_why(kube, a->name, &d, err);
    if (rc)
        return rc;
    if (a->format == CLI_FORMAT_TEXT) {
        cli_render_why_text(stdout, &d, a->evidence || a->g.verbose > 0);
        return 0;
    }
    return cli_print_document(cli_why_json(&d), a->format, err);
}

static const cli_opening why_opening = {
    .names = CLI_JOB_ONE,
    .name_flag = offsetof(why_args, name),
    .name = offsetof(why_args, name),
    .output = offsetof(why_args, output),
    .format = offsetof(why_args, format),
    .with = why_with,
};

const cli_command cmd_job_why = {
    .name = "why",
    .summary = "why a job is not running, or why it ended, and what to do: two lines",
    .usage = "job why NAME [--evidence] [-o text|json|yaml]",
    .description = "Line one is the cause, with the numbers (quota, hosts, exit codes); line two "
                   "the fix, naming\nthe command or flag to use. Exit 0 whenever the job could "
                   "be diagnosed, whatever its state.",
    .options = why_options,
    .args_size = sizeof(why_args),
    .opening = &why_opening,
};
