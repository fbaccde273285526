/*
 * gcluster cluster list [-p PROJECT] [-o text|json|yaml]
 */
#include "cli/cli.h"
#include "cli/render.h"
#include "cli/render_cluster.h"

#include <stdio.h>

typedef struct cluster_list_args {
    cli_globals g;
    const char *output;
} cluster_list_args;

static const cli_option cluster_list_options[] = {
    CLI_VALUES('o', "output", cluster_list_args, output, NULL, &cli_text_formats,
               "output format (default text; README.md describes the fields)"),
    CLI_END,
};

static int cluster_list_run(void *args, const cli_parsed *parsed, gc_error *err)
{
    cluster_list_args *a = args;
    if (parsed->positional_count)
        return gc_fail(err, GC_EXIT_USAGE,
                       "cluster list takes no arguments (got \"%s\"); the project is --project",
                       parsed->positional[0]);
    cli_format format;
    int rc = cli_format_parse(a->output, false, &format, err);
    if (rc)
        return rc;
    cli_apply_stored_defaults(&a->g);
    gc_cluster_list_request r = {.project = a->g.project};
    gc_cluster_list list;
    rc = gc_cluster_list_clusters(&r, &list, err);
    if (rc)
        return rc;
    if (format == CLI_FORMAT_TEXT)
        cli_render_cluster_list(stdout, &list);
    else
        rc = cli_print_document(cli_cluster_list_json(&list), format, err);
    gc_cluster_list_free(&list);
    return rc;
}

const cli_command cmd_cluster_list = {
    .name = "list",
    .summary = "the GKE clusters of the project (--project, else gcloud's configured one)",
    .usage = "cluster list [-p PROJECT] [-o text|json|yaml]",
    .description = "Asks gcloud (container clusters list) with your own credentials.",
    .options = cluster_list_options,
    .args_size = sizeof(cluster_list_args),
    .run = cluster_list_run,
};
