/*
 * gcluster job list [--status S] [--name-contains T] [-A] [-o table|wide|json|yaml]
 */
#include "cli/cli.h"
#include "cli/render.h"

#include <stdio.h>

typedef struct list_args {
    cli_globals g;
    gc_list_request r;
    const char *output;
    cli_format format;
} list_args;

/* The states of gc_job_phase_name, and Google's Pending (queued or admitted); gc_job_list_check
 * accepts them in any case. */
static void generate_statuses(cli_value_fn add, void *ctx)
{
    for (int p = GC_JOB_QUEUED; p <= GC_JOB_TERMINATING; p++)
        add(ctx, gc_job_phase_name((gc_job_phase)p));
    add(ctx, "Pending");
}

static const cli_values statuses = {.open = true, .generate = generate_statuses};

static const cli_option list_options[] = {
    CLI_VALUES(0, "status", list_args, r.status, "STATUS", &statuses,
               "only jobs in this state: Queued, Admitted, Running, Succeeded, Failed, ..."),
    CLI_STRING(0, "name-contains", list_args, r.name_contains, "TEXT",
               "only jobs whose name contains TEXT"),
    CLI_BOOL('A', "all-namespaces", list_args, r.all_namespaces, "jobs of every namespace"),
    CLI_VALUES('o', "output", list_args, output, NULL, &cli_table_formats,
               "output format (default table; README.md describes the fields)"),
    CLI_JOB_GLOBALS,
    CLI_END,
};

static int list_with(gc_kube *kube, void *ctx, gc_error *err)
{
    list_args *a = ctx;
    gc_job_list_result list;
    int rc = gc_job_list(kube, &a->r, &list, err);
    if (rc)
        return rc;
    if (a->format == CLI_FORMAT_JSON || a->format == CLI_FORMAT_YAML)
        rc = cli_print_list(stdout, &list, a->format, err);
    else if (list.count == 0)
        cli_line(stderr, "No jobs found in %s.",
                 a->r.all_namespaces ? "any namespace" : gc_kube_namespace(kube));
    else
        cli_render_list_table(stdout, &list, a->format == CLI_FORMAT_WIDE, a->r.all_namespaces);
    gc_job_list_result_free(&list);
    return rc;
}

static int list_check(void *args, const cli_parsed *parsed, gc_error *err)
{
    (void)parsed;
    list_args *a = args;
    int rc = gc_job_list_check(&a->r, err);
    /* The table leaves out why jobs wait or ended; the other formats (wide: REASON) say it. */
    a->r.queue_reasons = a->format != CLI_FORMAT_TEXT;
    return rc;
}

static const cli_opening list_opening = {
    .names = CLI_JOB_NONE,
    .output = offsetof(list_args, output),
    .format = offsetof(list_args, format),
    .check = list_check,
    .with = list_with,
};

const cli_command cmd_job_list = {
    .name = "list",
    .summary = "table of jobs: name, status, compute, Pathways mode, age, completion",
    .usage = "job list [--status STATUS] [--name-contains TEXT] [-A] [-o table|wide|json|yaml]",
    .options = list_options,
    .args_size = sizeof(list_args),
    .opening = &list_opening,
};
