/*
 * gcluster cluster info [-c CLUSTER -l LOCATION] [-o text|json|yaml]
 */
#include "cli/cli.h"
#include "cli/render.h"
#include "cli/render_cluster.h"

#include <stdio.h>

typedef struct info_args {
    cli_globals g;
    const char *output;
    cli_format format;
} info_args;

static const cli_option info_options[] = {
    CLI_VALUES('o', "output", info_args, output, NULL, &cli_text_formats,
               "output format (default text; README.md describes the fields)"),
    CLI_END,
};

static int info_with(gc_kube *kube, void *ctx, gc_error *err)
{
    info_args *a = ctx;
    gc_cluster_request req = {0}; /* the queues only: no nodes */
    gc_cluster_report report;
    int rc = gc_cluster_describe(kube, &req, &report, err);
    if (rc)
        return rc;
    if (a->format == CLI_FORMAT_TEXT)
        cli_render_cluster_usage(stdout, &report);
    else
        rc = cli_print_document(cli_cluster_json(&report, false, false), a->format, err);
    gc_cluster_report_free(&report);
    return rc;
}

static int info_run(void *args, const cli_parsed *parsed, gc_error *err)
{
    info_args *a = args;
    if (parsed->positional_count)
        return gc_fail(err, GC_EXIT_USAGE,
                       "cluster info takes no arguments (got \"%s\"); name the cluster with "
                       "--cluster and --location",
                       parsed->positional[0]);
    int rc = cli_format_parse(a->output, false, &a->format, err);
    return rc ? rc : cli_with_kube(&a->g, info_with, a, err);
}

const cli_command cmd_cluster_info = {
    .name = "info",
    .summary = "Kueue queue usage: workloads admitted and pending, quota used per flavor",
    .usage = "cluster info [-c CLUSTER -l LOCATION] [-o text|json|yaml]",
    .description = "What xpk's info shows: each ClusterQueue and LocalQueue with its admitted, "
                   "reserving and pending\nworkloads, and each flavor's resources as used/quota.",
    .options = info_options,
    .args_size = sizeof(info_args),
    .run = info_run,
};
