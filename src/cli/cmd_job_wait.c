/*
 * gcluster job wait NAME... [--for succeeded|finished|running|admitted] [--timeout D] [-o FORMAT]
 */
#include "cli/cli.h"
#include "cli/render.h"

#include <stdio.h>

typedef struct wait_args {
    cli_globals g;
    gc_wait_request r;
    const char *output;
    cli_format format;
} wait_args;

static const cli_values state_names = {.names = gc_wait_states};

static const cli_option wait_options[] = {
    CLI_VALUES(0, "for", wait_args, r.state, NULL, &state_names,
               "the state to wait for (default succeeded; finished also accepts failed jobs)"),
    CLI_STRING(0, "timeout", wait_args, r.timeout, "DURATION",
               "give up after this long (exit 1); the jobs keep going; 0 looks once and does "
               "not wait"),
    CLI_VALUES('o', "output", wait_args, output, NULL, &cli_text_formats,
               "one line per job (text, the default), or one object per job (README.md)"),
    CLI_JOB_GLOBALS,
    CLI_END,
};

static int wait_with(gc_kube *kube, void *ctx, gc_error *err)
{
    wait_args *a = ctx;
    gc_wait_result result;
    int rc = gc_job_wait(kube, &a->r, cli_events(), &result, err);
    /* Every job's outcome is shown also when a job failed or the time ran out: it says which
     * jobs got there and which did not. */
    if (rc && rc != GC_EXIT_JOB_FAILED && !result.timed_out) {
        gc_wait_result_free(&result);
        return rc;
    }
    gc_error print_err = {0};
    int print_rc = 0;
    if (a->format == CLI_FORMAT_TEXT)
        cli_render_wait_text(stdout, &result);
    else
        print_rc = cli_print_document(cli_wait_json(&result), a->format, &print_err);
    gc_wait_result_free(&result);
    if (!rc && print_rc)
        *err = print_err;
    return rc ? rc : print_rc;
}

static int wait_check(void *args, const cli_parsed *parsed, gc_error *err)
{
    (void)parsed;
    return gc_job_wait_check(&((wait_args *)args)->r, err);
}

static const cli_opening wait_opening = {
    .names = CLI_JOB_MANY,
    .names_at = offsetof(wait_args, r.names),
    .count_at = offsetof(wait_args, r.count),
    .output = offsetof(wait_args, output),
    .format = offsetof(wait_args, format),
    .check = wait_check,
    .with = wait_with,
};

const cli_command cmd_job_wait = {
    .name = "wait",
    .summary = "wait until several jobs are in a state (succeeded, finished, running, admitted)",
    .usage = "job wait NAME... [--for succeeded|finished|running|admitted] [--timeout D] "
             "[-o text|json|yaml]",
    .description =
        "Watches every job at once (one watch, no polling) and shows one progress line per job "
        "on a terminal.\nsucceeded ends at the first job that fails; finished waits for every "
        "job to end, failed or not.\nExit codes: 0 every job is in the state; 3 a job failed or "
        "was cancelled (deleted), so it can\nnever get there (the message names it and says "
        "why); 1 the time ran out, a job does not exist,\nor the API failed; 2 bad input.",
    .options = wait_options,
    .args_size = sizeof(wait_args),
    .opening = &wait_opening,
};
