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
    CLI_STRING('n', "name", why_args, name, "NAME", "the job (or give it as an argument)"),
    CLI_BOOL(0, "evidence", why_args, evidence,
             "also print the evidence: which object and field said so (as -v does)"),
    CLI_STRING('o', "output", why_args, output, "FORMAT",
               "text (default), json or yaml (README.md describes the fields)"),
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

static int why_run(void *args, const cli_parsed *parsed, gc_error *err)
{
    why_args *a = args;
    int rc = cli_job_name(a->name, parsed, "why", &a->name, err);
    if (!rc)
        rc = gc_job_name_check(a->name, err);
    if (!rc)
        rc = cli_format_parse(a->output, false, &a->format, err);
    return rc ? rc : cli_with_kube(&a->g, why_with, a, err);
}

const cli_command cmd_job_why = {
    .name = "why",
    .summary = "why a job is not running, or why it ended, and what to do: two lines",
    .usage = "job why NAME [--evidence] [-o text|json|yaml]",
    .description = "Line one is the cause, with the numbers (quota, hosts, exit codes); line two "
                   "the fix, naming\nthe command or flag to use. Exit 0 whenever the job could "
                   "be diagnosed, whatever its state.",
    .options = why_options,
    .args_size = sizeof(why_args),
    .run = why_run,
};
